#!/usr/bin/env python3
"""PyTorch's own graph minifier (functorch.compile.minifier, torch 1.13) on the chain benchmarks
reprokit's bench_minifier runs: a chain of N unary ops with an in-process oracle; one culprit op
(N = 1000, 5000) and a pair (an op feeding another N/4 later, failing only when both are present).
Prints one line per case: name, queries, ops left, seconds."""
import sys
import time

import torch
import torch.fx as fx
from functorch.compile import minifier

OPS = [torch.neg, torch.relu, torch.abs, torch.sin, torch.cos, torch.tanh]


def chain(n):
    g = fx.Graph()
    x = g.placeholder("x")
    v = x
    for i in range(n):
        v = g.call_function(OPS[i % 6], (v,))
        v.name = f"n{i}"
    g.output(v)
    return fx.GraphModule(torch.nn.Module(), g)


def has(gm, name):
    return any(n.op == "call_function" and n.name == name for n in gm.graph.nodes)


def run(label, n, culprits):
    calls = [0]
    def fails(gm, inps):
        calls[0] += 1
        return all(has(gm, c) for c in culprits)
    gm = chain(n)
    t0 = time.time()
    left = [None]
    def dump(gm, inps):
        left[0] = sum(1 for node in gm.graph.nodes if node.op == "call_function")
    minifier(gm, [torch.randn(4)], fails, dump_state=dump)
    ops = left[0]
    print(f"{label}\tqueries={calls[0]}\tops_left={ops}\tseconds={time.time() - t0:.2f}", flush=True)


if __name__ == "__main__":
    run("one culprit, N=1000", 1000, ["n333"])
    run("one culprit, N=5000", 5000, ["n1666"])
    run("pair, N=1000", 1000, ["n300", "n550"])
