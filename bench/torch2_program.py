"""A torch.compile program for bench/torch2_minifier_vs_pytorch.py: MODEL is relu_chain (the
function of PyTorch's own minifier tests), resnet18 or gpt2_block (python/tests/models.py; the
block's MLP activation is relu here, where Inductor's planted fault lives). RELU_BUG plants
torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY.

  python bench/torch2_program.py MODEL
"""
import os
import sys

import torch
import torch._inductor.config
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))

if os.environ.get("RELU_BUG"):
    torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = os.environ["RELU_BUG"]


def relu_chain(x):
    x = torch.sin(x)
    x = torch.relu(x)
    x = torch.cos(x)
    x = torch.relu(x)
    return x


def model(name):
    from models import MODELS, GPT2Block

    torch.manual_seed(0)
    if name == "relu_chain":
        return relu_chain, (torch.randn(20, 20),)
    if name == "gpt2_block":
        block = GPT2Block().eval()
        block.forward = lambda x: x + block.out(F.relu(block.fc(block.ln2(x + block.attn(block.ln1(x))))))
        return block, (torch.randn(2, 12, 64),)
    return MODELS[name]()


def main():
    fn, inputs = model(sys.argv[1])
    with torch.no_grad():
        out = torch.compile(fn)(*inputs)
        ref = fn(*inputs)
    print(f"max |compiled - eager| = {(out - ref).abs().max().item():.3g}")


if __name__ == "__main__":
    main()
