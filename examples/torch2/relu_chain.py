"""A small program using torch.compile, with one of Inductor's planted testing faults switched on
by RELU_BUG=compile_error|runtime_error|accuracy (torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY,
or triton.inject_relu_bug_TESTING_ONLY with DEVICE=cuda, where it runs on a GPU).

  REPRO_AFTER=dynamo REPRO_LEVEL=4 RELU_BUG=accuracy python -m reprokit.torch examples/torch2/relu_chain.py
"""
import os

import torch
import torch._inductor.config

DEVICE = os.environ.get("DEVICE", "cpu")
if os.environ.get("RELU_BUG"):
    if DEVICE == "cuda":
        torch._inductor.config.triton.inject_relu_bug_TESTING_ONLY = os.environ["RELU_BUG"]
    else:
        torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = os.environ["RELU_BUG"]


def inner(x):
    x = torch.sin(x)
    x = torch.relu(x)
    x = torch.cos(x)
    x = torch.relu(x)
    return x * 2 + 1


def main():
    torch.manual_seed(0)
    x = torch.randn(20, 20, device=DEVICE)
    compiled = torch.compile(inner)
    out = compiled(x)
    print(f"max |compiled - eager| = {(out - inner(x)).abs().max().item():.3g}")


if __name__ == "__main__":
    main()
