"""The inductor backend's worker: one Python interpreter that imports torch once, then compiles and
runs graphs with torch.compile(backend="inductor") as reprokit asks, one request per line.

Request (one JSON line on stdin):
  {"source": "def run_g(v_x): ...", "entry": "run_g",
   "inputs": [{"file": ".../in0.npy", "dtype": "f32", "shape": [8, 16]}, ...],
   "outputs": "DIR", "config": {"cpp.simdlen": 8, ...}, "relu_bug": "accuracy" | null}
Reply (one JSON line on the protocol stream):
  {"ok": true} with DIR/out<k>.npy written, or
  {"ok": false, "kind": "compile_error" | "runtime_error" | "bad_request", "message": "..."}

`source` is the PyTorch function reprokit's own emitter wrote for a verified graph (the same
function as a bundle's repro_torch.py); `config` names torch._inductor.config options, each
checked to exist and set to a JSON scalar, never evaluated. A fault that kills the interpreter
(a segfault in generated code, an abort) ends the worker: reprokit sees a crash.
"""
import json
import os
import sys
import traceback

from reprokit.worker_protocol import first_line, protocol_stream


# reprokit's dtype names -> torch's.
_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64",
           "bool": "bool", "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16"}


def _dtype(torch, name):
    if name not in _DTYPES:
        raise ValueError(f"unknown dtype {name!r}")
    return getattr(torch, _DTYPES[name])


def _load(torch, spec):
    from reprokit.npy import load_npy

    t = load_npy(spec["file"], _dtype(torch, spec["dtype"]))
    if list(t.shape) != list(spec["shape"]):
        raise ValueError(f"{spec['file']}: shape {list(t.shape)}, expected {spec['shape']}")
    return t


def inductor_config_patch(torch, config):
    """Validated {option: value} for torch._inductor.config.patch: known options, scalar values."""
    import torch._inductor.config as ic

    known = ic.get_config_copy()
    patch = {}
    for key, value in (config or {}).items():
        if key not in known:
            raise ValueError(f"torch._inductor.config has no option {key!r} (torch {torch.__version__})")
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise ValueError(f"option {key!r}: only numbers, strings, booleans and null are applied")
        patch[key] = value
    return patch


def serve(inp, out):
    import torch
    import torch.nn.functional as F
    import torch._dynamo

    from reprokit.npy import save_npy

    out.write(json.dumps({"ready": True, "torch": torch.__version__}) + "\n")
    last_source = None
    for line in inp:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            patch = inductor_config_patch(torch, req.get("config"))
            bug = req.get("relu_bug")
            if bug is not None:
                patch["cpp.inject_relu_bug_TESTING_ONLY"] = bug
            inputs = [_load(torch, s) for s in req["inputs"]]
            namespace = {"torch": torch, "F": F, "_dt": lambda d: d}
            exec(compile(req["source"], "<reprokit graph>", "exec"), namespace)  # noqa: S102 (reprokit's emitted code)
            fn = namespace[req["entry"]]
        except Exception as e:  # a request reprokit should not have sent
            out.write(json.dumps({"ok": False, "kind": "bad_request", "message": first_line(e)}) + "\n")
            continue
        if req["source"] != last_source:
            torch._dynamo.reset()  # forget the previous graph's compiled code
            last_source = req["source"]
        reply = {"ok": True}
        with torch._inductor.config.patch(patch), torch.no_grad():
            compiled = torch.compile(fn, backend="inductor", fullgraph=True, dynamic=False)
            try:
                outs = compiled(*inputs)
            except torch._dynamo.exc.BackendCompilerFailed as e:
                reply = {"ok": False, "kind": "compile_error", "message": first_line(e.inner_exception)}
            except torch._dynamo.exc.TorchDynamoException as e:
                reply = {"ok": False, "kind": "compile_error", "message": first_line(e)}
            except Exception as e:
                reply = {"ok": False, "kind": "runtime_error", "message": first_line(e)}
                traceback.print_exc(file=sys.stderr)
        if reply["ok"]:
            try:
                for k, t in enumerate(outs):
                    save_npy(os.path.join(req["outputs"], f"out{k}.npy"), t)
            except Exception as e:
                reply = {"ok": False, "kind": "runtime_error", "message": "cannot save an output: " + first_line(e)}
        out.write(json.dumps(reply) + "\n")


def main():
    out = protocol_stream()
    serve(sys.stdin, out)


if __name__ == "__main__":
    main()
