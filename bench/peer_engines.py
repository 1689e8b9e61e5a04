"""Times a peer engine for bench_models, the way bench_models times every engine: the same .npy
inputs, WARMUPS untimed runs, then the median of ITERS runs timed one by one, with THREADS threads.

usage: python peer_engines.py ENGINE MODEL INPUTS_DIR WARMUPS ITERS THREADS OUTPUTS_DIR

  inductor  MODEL is PROGRAM:FUNCTION, a program emit_torch_program wrote and the graph's
            function in it, compiled by torch.compile (default mode, CPU) and run under
            torch.no_grad(). The compile time is the first call (Dynamo's trace, Inductor's code
            generation and C++ build, one run): cold when TORCHINDUCTOR_CACHE_DIR names an empty
            directory and the FX graph cache is off, as bench_models runs it.
  openvino  MODEL is an .onnx file; read_model + compile_model(model, "CPU") with
            INFERENCE_NUM_THREADS=THREADS and f32 inference precision (a CPU with bf16 units would
            otherwise compute the f32 models in bf16), then an infer request whose input tensors
            are set once (inputs named after the ONNX inputs: INPUTS_DIR/<name>.npy).

The first run's outputs are written as OUTPUTS_DIR/out<k>.npy, for bench_models to check against
its own before it reports a time. Prints one JSON line: {"engine", "version", "median_us",
"compile_ms"}. Exit 2 with {"unavailable": why} when the engine's package cannot be imported,
1 (a traceback on stderr) when the engine fails on the model.
"""
import importlib.util
import json
import os
import sys
import time


def median_us(f, warmups, iters):
    for _ in range(warmups):
        f()
    runs = []
    for _ in range(iters):
        t0 = time.perf_counter()
        f()
        runs.append(time.perf_counter() - t0)
    return sorted(runs)[len(runs) // 2] * 1e6


def save_outputs(out_dir, arrays):
    import numpy as np

    os.makedirs(out_dir, exist_ok=True)
    for k, a in enumerate(arrays):
        np.save(os.path.join(out_dir, f"out{k}.npy"), a)


def inductor(model, in_dir, warmups, iters, threads, out_dir):
    import torch

    torch.set_num_threads(threads)  # also the OpenMP width of the kernels Inductor generates
    path, _, function = model.rpartition(":")
    spec = importlib.util.spec_from_file_location("prog", path)
    prog = importlib.util.module_from_spec(spec)
    sys.argv = ["prog"]
    spec.loader.exec_module(prog)
    args = prog.load_inputs(in_dir, False)
    fn = torch.compile(getattr(prog, function))
    with torch.no_grad():
        t0 = time.perf_counter()
        outs = fn(*args)
        compile_ms = (time.perf_counter() - t0) * 1e3
        # bf16 as its bits, as reprokit writes it (numpy has no bfloat16)
        save_outputs(out_dir, [(o.view(torch.int16) if o.dtype == torch.bfloat16 else o).detach().contiguous().numpy() for o in outs])
        us = median_us(lambda: fn(*args), warmups, iters)
    return torch.__version__, us, compile_ms


def openvino(model, in_dir, warmups, iters, threads, out_dir):
    import numpy as np
    import openvino as ov

    core = ov.Core()
    t0 = time.perf_counter()
    compiled = core.compile_model(core.read_model(model), "CPU", {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32"})
    compile_ms = (time.perf_counter() - t0) * 1e3
    request = compiled.create_infer_request()
    for port in compiled.inputs:
        name = port.get_any_name()
        request.set_tensor(port, ov.Tensor(np.ascontiguousarray(np.load(os.path.join(in_dir, name + ".npy"), allow_pickle=False))))
    request.infer()
    save_outputs(out_dir, [np.array(request.get_tensor(port).data) for port in compiled.outputs])
    us = median_us(request.infer, warmups, iters)
    return ov.__version__, us, compile_ms


ENGINES = {"inductor": inductor, "openvino": openvino}


def missing(engine):
    """Why this Python cannot run `engine`, or None."""
    package = "torch" if engine == "inductor" else "openvino"
    if importlib.util.find_spec(package) is None:
        return f"{sys.executable} cannot import {package} (pip install {package})"
    if engine == "inductor":
        import torch

        if not hasattr(torch, "compile"):
            return f"{sys.executable} has torch {torch.__version__}, without torch.compile (torch 2 needed)"
    return None


def main(argv):
    if len(argv) != 7 or argv[0] not in ENGINES:
        print(__doc__, file=sys.stderr)
        return 3
    engine, model, in_dir, out_dir = argv[0], argv[1], argv[2], argv[6]
    warmups, iters, threads = (int(a) for a in argv[3:6])
    why = missing(engine)
    if why:
        print(json.dumps({"engine": engine, "unavailable": why}))
        return 2
    version, us, compile_ms = ENGINES[engine](model, in_dir, warmups, iters, threads, out_dir)
    print(json.dumps({"engine": engine, "version": version, "median_us": us, "compile_ms": compile_ms}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
