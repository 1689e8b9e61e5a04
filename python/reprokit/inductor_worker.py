"""The inductor backend's worker: one Python interpreter that imports torch once, then compiles and
runs graphs with torch.compile(backend="inductor") as reprokit asks, one request per line.

Request (one JSON line on stdin):
  {"source": "def run_g(v_x): ...", "entry": "run_g",
   "inputs": [{"file": ".../in0.npy", "dtype": "f32", "shape": [8, 16]}, ...],
   "outputs": "DIR", "config": {"cpp.simdlen": 8, ...}, "relu_bug": "accuracy" | null}
Reply (one JSON line on the protocol stream):
  {"ok": true} with DIR/out<k>.npy written, or
  {"ok": false, "kind": "compile_error" | "runtime_error" | "bad_request", "message": "..."}

Optional request fields, for bisecting Inductor's own optimisations (reprokit bisect):
  "compile_backend": "eager" | "aot_eager" | "aot_eager_decomp_partition" | "inductor" (the default),
      torch.compile's backend: how far down PyTorch's compile stack the graph goes;
  "disabled": ["post_grad_passes", "lowerings:relu[aten.relu.default]", "fallback_random", ...], the
      optimisations to turn off: a subsystem of PyTorch's CompilerBisector (every application of it),
      one application of it (as "applied" names it), or one of its config changes;
  "device": "cpu" (the default) or "cuda": where the graph is compiled and run (Inductor's Triton
      code on a GPU), its inputs moved there;
  "record": true, the reply then also carries "applied", the subsystem applications the compile
      went through in order ("post_grad_passes:remove_noop_ops", "lowerings:relu[aten.relu.default]").
Version request: {"version": true} -> {"ok": true, "torch": "2.13.0+cpu"}.
A reply with "worker_ends": true is the worker's last (CUDA's context is lost to it).

`source` is the PyTorch function reprokit's own emitter wrote for a verified graph (the same
function as a bundle's repro_torch.py); `config` names torch._inductor.config options, each
checked to exist and set to a JSON scalar, never evaluated. Each request is served by a child forked
after torch's import; a fault that kills it (a segfault in generated code, an abort) is answered
{"ok": false, "kind": "worker_died", "signal": N} and the next request goes to a fresh fork, so
reprokit sees a crash without paying for another interpreter and another `import torch`.
"""
import json
import os
import re
import sys
import traceback

from reprokit.worker_protocol import first_line, protocol_stream, serve_in_forked_children


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


# torch.compile's backends from least to most of PyTorch's compile stack (CompilerBisector's ladder).
COMPILE_BACKENDS = ("eager", "aot_eager", "aot_eager_decomp_partition", "inductor")

# CompilerBisector's config changes: turning the optimisation off is setting the option so.
_CONFIG_CHANGES = {"fallback_random": ("fallback_random", True), "emulate_precision_casts": ("emulate_precision_casts", True),
                   "layout_optimization": ("layout_optimization", False), "comprehensive_padding": ("comprehensive_padding", False),
                   "cse": ("cse", False)}


_OP_REPR = re.compile(r"<OpOverload\(op='([\w.]+)', overload='(\w+)'\)>")


class SubsystemSwitch:
    """Stands in for CompilerBisector.disable_subsystem, which every pass, lowering and decomposition
    of PyTorch's compile stack asks before it applies: records what applied and turns off what the
    request names."""

    def __init__(self):
        self.disabled = set()
        self.applied = []

    def name_of(self, subsystem, debug_info):
        item = ""
        if subsystem == "lowerings":
            from torch._inductor.virtualized import V

            node = V.get_current_node() if hasattr(V, "get_current_node") else None
            item = f"{node.name}[{node.target}]" if node is not None else (debug_info() if debug_info else "")
        elif debug_info is not None:
            item = debug_info()
            op = _OP_REPR.fullmatch(str(item))  # a decomposition names its op as "<OpOverload(op='aten.silu', overload='default')>"
            if op:
                item = f"{op.group(1)}.{op.group(2)}"
        item = str(item).replace(",", ";").replace("\n", " ")[:200]
        return f"{subsystem}:{item}" if item else subsystem

    def __call__(self, backend, subsystem, debug_info=None):
        name = self.name_of(subsystem, debug_info)
        off = subsystem in self.disabled or name in self.disabled
        if not off:
            self.applied.append(name)
        return off


def _gpu_context_lost(message):
    """Whether a run-time error is one after which CUDA refuses everything in this process."""
    return "CUDA error" in message or "AcceleratorError" in message or "device-side assert" in message


def install_subsystem_switch():
    from torch._inductor.compiler_bisector import CompilerBisector

    switch = SubsystemSwitch()
    CompilerBisector.disable_subsystem = staticmethod(switch)
    return switch


def load():
    """Imports what every request needs, before the first fork; the worker's ready line."""
    import torch
    import torch._dynamo
    import torch._inductor.compile_fx  # noqa: F401 (Inductor's lowering and code generation)
    import torch._inductor.compiler_bisector  # noqa: F401

    return {"ready": True, "torch": torch.__version__}


def serve(inp, out):
    import torch
    import torch.nn.functional as F
    import torch._dynamo

    from reprokit.npy import save_npy

    switch = install_subsystem_switch()
    last_key = None
    for line in inp:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req.get("version"):
                out.write(json.dumps({"ok": True, "torch": torch.__version__}) + "\n")
                continue
            patch = inductor_config_patch(torch, req.get("config"))
            device = req.get("device") or "cpu"
            if device not in ("cpu", "cuda"):
                raise ValueError(f"device {device!r} is not cpu or cuda")
            if device == "cuda" and not torch.cuda.is_available():
                raise ValueError(f"device 'cuda': torch {torch.__version__} here has no CUDA device (the graph was captured on a GPU)")
            bug = req.get("relu_bug")
            if bug is not None:  # Inductor's planted fault, in the code it generates for the device
                patch["triton.inject_relu_bug_TESTING_ONLY" if device == "cuda" else "cpp.inject_relu_bug_TESTING_ONLY"] = bug
            backend = req.get("compile_backend") or "inductor"
            if backend not in COMPILE_BACKENDS:
                raise ValueError(f"compile_backend {backend!r} is not one of {', '.join(COMPILE_BACKENDS)}")
            disabled = req.get("disabled") or []
            if not isinstance(disabled, list) or not all(isinstance(d, str) for d in disabled):
                raise ValueError("disabled must be a list of names")
            for d in disabled:
                if d in _CONFIG_CHANGES:
                    key, value = _CONFIG_CHANGES[d]
                    patch[key] = value
            switch.disabled = set(disabled)
            switch.applied = []
            bisecting = bool(req.get("record") or disabled)
            if bisecting:
                # A cached compile runs no pass and no lowering: it would record nothing and turn
                # nothing off (the caches' keys know nothing of the switch).
                patch["fx_graph_cache"] = False
                patch["fx_graph_remote_cache"] = False
            inputs = [_load(torch, s).to(device) for s in req["inputs"]]
            namespace = {"torch": torch, "F": F, "_dt": lambda d: d}
            exec(compile(req["source"], "<reprokit graph>", "exec"), namespace)  # noqa: S102 (reprokit's emitted code)
            fn = namespace[req["entry"]]
        except Exception as e:  # a request reprokit should not have sent
            out.write(json.dumps({"ok": False, "kind": "bad_request", "message": first_line(e)}) + "\n")
            continue
        key = (req["source"], backend, device, tuple(sorted(disabled)), json.dumps(patch, sort_keys=True))
        if req.get("record") or key != last_key:
            torch._dynamo.reset()  # forget the previous graph's compiled code
            last_key = key
        reply = {"ok": True}
        import torch._functorch.config as fc

        # On a GPU the graph's own tensors (full, arange) are made there too, as the program's were.
        with torch._inductor.config.patch(patch), fc.patch(enable_autograd_cache=not bisecting), torch.no_grad(), torch.device(device):
            compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)
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
        if req.get("record"):
            reply["applied"] = switch.applied
        # A device-side assert or fault leaves CUDA's context unusable for the rest of the process:
        # every later graph would fail the same way. This worker says so and ends after its answer,
        # and reprokit starts a fresh one for the next graph (as the cuda backend's workers do).
        lost = device == "cuda" and reply.get("kind") == "runtime_error" and _gpu_context_lost(reply["message"])
        if lost:
            reply["worker_ends"] = True
        out.write(json.dumps(reply) + "\n")
        if lost:
            out.flush()
            os._exit(0)


def main():
    out = protocol_stream()
    serve_in_forked_children(load(), serve, sys.stdin, out)


if __name__ == "__main__":
    main()
