#!/usr/bin/python3
"""Models a user exports, end to end: each is exported by tests/models/export_models.py (random
weights, no downloads), run by `reprokit run MODEL.onnx --inputs DIR` on eager and cpp, and its
output compared with PyTorch's (expected.npy). Prints one row per model: import status, the max
abs error against PyTorch on each backend, and the cpp backend's cold compile + run time (a fresh
compile cache per model).

Usage: /usr/bin/python3 bench/model_zoo.py [--reprokit build/reprokit] [--work DIR] [--only a,b]
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import export_models  # noqa: E402

# The 24 models of a first trial and those added since: classification CNNs, transformers,
# recurrent layers, a Loop, segmentation (Resize), a quantised MLP.
DEFAULT = [
    "resnet18", "mobilenet_v2", "squeezenet1_0", "vit_small", "transformer_encoder", "densenet121",
    "efficientnet_b0", "gpt2_block", "inception_v3", "googlenet", "regnet_y_400mf", "convnext_tiny",
    "shufflenet_v2_x1_0", "mobilenet_v3_small", "mnasnet0_5", "resnext50_32x4d", "vit_b_16", "mha",
    "decoder_layer", "swin_t", "lraspp_mobilenet_v3_large", "fcn_resnet50", "lstm", "gru",
    "embedding_bag", "fake_quant_mlp",
]


def run(reprokit, model_dir, backend, out, cache):
    env = dict(os.environ, REPRO_CACHE_DIR=cache)
    t0 = time.monotonic()
    r = subprocess.run([reprokit, "run", os.path.join(model_dir, "model.onnx"), "--backend", backend,
                        "--inputs", model_dir, "--save-outputs", out], capture_output=True, text=True, env=env)
    seconds = time.monotonic() - t0
    if r.returncode != 0:
        return None, seconds, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    got = np.load(os.path.join(out, "output.npy"))
    want = np.load(os.path.join(model_dir, "expected.npy"))
    return float(np.abs(got.astype(np.float64) - want).max()), seconds, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reprokit", default=os.path.join(ROOT, "build", "reprokit"))
    ap.add_argument("--work", default=None, help="where models are exported (default: a temporary directory)")
    ap.add_argument("--only", help="comma-separated model names")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else DEFAULT
    known = {**export_models.MODELS, **export_models.EXTRA_MODELS}
    work = args.work or tempfile.mkdtemp(prefix="rk_zoo_")
    print(f"| model | ONNX ops | eager vs PyTorch | cpp vs PyTorch | cpp cold compile + run (s) |")
    print(f"|---|---|---|---|---|")
    for name in names:
        make, shape, keep_bn = known[name]
        d = os.path.join(work, name)
        try:
            if not os.path.exists(os.path.join(d, "expected.npy")):
                with contextlib.redirect_stdout(sys.stderr):  # the table alone on stdout
                    export_models.export_one(name, make, shape, keep_bn, work)
        except Exception as e:  # a model PyTorch cannot export is reported, not fatal
            print(f"| {name} | export failed: {type(e).__name__} | | | |", flush=True)
            continue
        ops = len(json.load(open(os.path.join(d, "info.json")))["onnx_ops"])
        cells = []
        cold = None
        for backend in ("eager", "cpp"):
            with tempfile.TemporaryDirectory(prefix="rk_zoo_") as t:  # a cold cache; reprokit never overwrites outputs
                err, seconds, why = run(args.reprokit, d, backend, os.path.join(t, "out"), os.path.join(t, "cache"))
            cells.append(f"{err:.1e}" if err is not None else f"refused: {why[:90]}")
            if backend == "cpp":
                cold = seconds
        print(f"| {name} | {ops} | {cells[0]} | {cells[1]} | {cold:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
