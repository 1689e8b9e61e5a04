"""The hook on torch.compile: each graph the program's compile hands Inductor is captured as a
reprokit graph with its real inputs, and what REPRO_LEVEL asks is done with reprokit's own
harness: `reprokit run model.rk --backend inductor` replays the graph through Inductor in a worker
and writes the bundle, the minifier launcher and, at level 4, judges the outputs against float64.

REPRO_AFTER=dynamo wraps each graph Dynamo hands the backend; REPRO_AFTER=aot wraps the forward
and backward graphs AOTAutograd hands Inductor's inner compiler.
  level 1, 2  compiled as the program asked; on an exception (compiling or running), the graph is
              captured and replayed: the bundle (level 2: and its minifier launcher) is written,
              then the program's exception goes on.
  level 3     before compiling, the graph is replayed in a separate process with the bundle
              written first, so a crash still leaves it.
  level 4     as 3, and the outputs are judged against float64 (reprokit's rule, its noise floor).
  At 3 and 4 a failure stops the program with ReproFailure naming the bundle.
"""
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import torch

from .. import executable
from .capture import capture
from .rk_text import UnsupportedGraph

_installed = False
_graph_counter = itertools.count()
_compiled = [0]


class ReproFailure(RuntimeError):
    """A graph failed under REPRO_LEVEL 3 or 4; `bundle` is where reprokit wrote it."""

    def __init__(self, message, bundle=""):
        super().__init__(message)
        self.bundle = bundle


class Config:
    def __init__(self, env):
        self.after = env.get("REPRO_AFTER", "")
        level = env.get("REPRO_LEVEL", "2")
        if self.after not in ("", "dynamo", "aot"):
            raise ValueError(f"REPRO_AFTER={self.after!r}: expected dynamo or aot")
        if level not in ("1", "2", "3", "4"):
            raise ValueError(f"REPRO_LEVEL={level!r}: expected 1, 2, 3 or 4")
        self.level = int(level)
        self.dir = os.path.abspath(env.get("REPRO_DIR") or "reprokit_out")

    @property
    def enabled(self):
        return self.after != ""


_config = None


def installed_config():
    return _config


def compiled_graphs():
    return _compiled[0]


def _say(msg):
    print(f"reprokit.torch: {msg}", file=sys.stderr, flush=True)


def install():
    """Installs the hook on torch.compile (once). Bad REPRO_* values end the program (exit 2)."""
    global _installed, _config
    if _installed:
        return
    try:
        _config = Config(os.environ)
    except ValueError as e:
        _say(str(e))
        raise SystemExit(2)
    _installed = True
    if not _config.enabled:
        return
    if _config.after == "aot":
        # A graph AOTAutograd finds in its cache never reaches Inductor's inner compiler, so it
        # could not be wrapped.
        from torch._functorch import config as functorch_config

        functorch_config.enable_autograd_cache = False
    real_compile = torch.compile

    def compile(model=None, *, backend="inductor", mode=None, options=None, dynamic=None, **kwargs):
        wrapped = _wrap_backend(backend, mode, options, dynamic)
        if wrapped is None:
            return real_compile(model, backend=backend, mode=mode, options=options, dynamic=dynamic, **kwargs) if model is not None else \
                real_compile(backend=backend, mode=mode, options=options, dynamic=dynamic, **kwargs)
        if model is None:
            return real_compile(backend=wrapped, dynamic=dynamic, **kwargs)
        return real_compile(model, backend=wrapped, dynamic=dynamic, **kwargs)

    compile.__doc__ = real_compile.__doc__
    compile.__wrapped__ = real_compile
    torch.compile = compile


def _wrap_backend(backend, mode, options, dynamic):
    if backend != "inductor":
        name = backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)
        _say(f"backend {name!r} is not Inductor: reprokit replays graphs through Inductor only, so its graphs run unwrapped")
        return None
    inductor = torch._TorchCompileInductorWrapper(mode, options, dynamic)
    patches = dict(inductor.config)

    def reprokit_inductor(gm, example_inputs):
        _compiled[0] += 1
        if _config.after == "aot":
            from torch._inductor.compile_fx import compile_fx, compile_fx_inner

            def inner(gm2, inputs2, **kw):
                stage = "backward" if kw.get("is_backward") else "forward"
                return _guard(gm2, inputs2, lambda: compile_fx_inner(gm2, inputs2, **kw), patches, stage, aten=True)

            return compile_fx(gm, example_inputs, inner_compile=inner, config_patches=patches)
        return _guard(gm, example_inputs, lambda: inductor(gm, example_inputs), patches, "dynamo", aten=False)

    return reprokit_inductor


# ---- the inductor options a replay needs

def inductor_options(patches):
    """torch._inductor.config values that differ from the defaults, and the compile's own options,
    as --backend-option KEY=JSON; options that are not plain values are said and left out."""
    import torch._inductor.config as ic

    current = ic.get_config_copy()
    changed = {}
    for key, entry in ic._config.items():
        if key in current and current[key] != entry.default and not key.startswith("_"):
            changed[key] = current[key]
    changed.update(patches or {})
    changed.pop("cpp.inject_relu_bug_TESTING_ONLY", None)  # replayed as --inject relu:KIND
    changed.pop("triton.inject_relu_bug_TESTING_ONLY", None)
    options, skipped = [], []
    for key, value in sorted(changed.items()):
        if value is None or isinstance(value, (bool, int, str)) or (isinstance(value, float) and math.isfinite(value)):
            options.append(f"{key}={json.dumps(value)}")
        else:
            skipped.append(key)
    if skipped:
        _say(f"Inductor options not replayed (not plain values): {', '.join(skipped)}")
    return options


def _relu_bug(device):
    """Inductor's planted relu fault for the code it generates on `device` (C++ on the CPU, Triton
    on a GPU)."""
    import torch._inductor.config as ic

    return ic.triton.inject_relu_bug_TESTING_ONLY if device == "cuda" else ic.cpp.inject_relu_bug_TESTING_ONLY


# ---- levels

def _guard(gm, inputs, compile_real, patches, stage, aten):
    name = f"{stage}_{next(_graph_counter)}"
    if _config.level >= 3 and not aten:
        # Dynamo's example inputs are the real ones: replay before compiling.
        _replay_or_stop(gm, inputs, name, patches, stage, aten)
        return compile_real()
    try:
        compiled = compile_real()
    except Exception:
        _on_failure(gm, _materialize(inputs), name, patches, stage, aten)
        raise
    state = {"done": False}

    def run(*args):
        # AOTAutograd calls its inner compiler's result with one list, which the callee empties.
        flat = list(args[0]) if len(args) == 1 and isinstance(args[0], list) else list(args)
        if not state["done"] and _config.level >= 3:
            # AOTAutograd's graphs get their real inputs (saved activations, gradients) only now.
            state["done"] = True
            _replay_or_stop(gm, flat, name, patches, stage, aten)
        try:
            return compiled(*args)
        except Exception:
            if not state["done"]:
                state["done"] = True
                _on_failure(gm, flat, name, patches, stage, aten)
            raise

    if getattr(compiled, "_boxed_call", False):
        run._boxed_call = True
    return run


def _replay_or_stop(gm, inputs, name, patches, stage, aten):
    captured = _capture_or_say(gm, inputs, name, aten)
    if captured is not None:
        rc, bundle = _replay(captured, patches, stage)
        if rc == 1:
            raise ReproFailure(f"reprokit: graph {name} fails under Inductor; bundle: {bundle or _config.dir}", bundle)


def _on_failure(gm, inputs, name, patches, stage, aten):
    captured = _capture_or_say(gm, inputs, name, aten)
    if captured is None:
        return
    rc, bundle = _replay(captured, patches, stage)
    if rc == 0:
        _say(f"graph {name} failed in this program but not when reprokit replayed it through Inductor: nothing was written")


def _materialize(inputs):
    """Real tensors for the inputs: the values themselves, or (for AOTAutograd's fake tensors at
    compile time) random values of the same shape, dtype and strides, as PyTorch's own repro does."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        return _materialize_real(inputs)


def _materialize_real(inputs):
    out = []
    gen = torch.Generator().manual_seed(0)
    for t in inputs:
        if isinstance(t, torch.Tensor) and isinstance(t, torch._subclasses.fake_tensor.FakeTensor):
            shape, stride, dtype = list(t.shape), list(t.stride()), t.dtype
            size = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if all(s > 0 for s in shape) else 0
            if dtype.is_floating_point:
                base = torch.randn(size, generator=gen, dtype=torch.float32).to(dtype)
            else:
                base = torch.zeros(size, dtype=dtype)
            out.append(torch.as_strided(base, shape, stride))
        else:
            out.append(t)
    return out


def _capture_or_say(gm, inputs, name, aten):
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    try:
        with unset_fake_temporarily():  # AOTAutograd compiles under a fake-tensor mode; the capture runs for real
            captured = capture(gm, inputs, name, already_aten=aten)
        for note in captured.notes:
            _say(f"graph {name}: {note}")
        return captured
    except UnsupportedGraph as e:
        where = f" at {e.where}" if e.where else ""
        op = f" ({e.op})" if e.op else ""
        _say(f"graph {name} not captured: {e}{op}{where}; it runs without reprokit's harness")
        return None
    except Exception as e:  # the capture must never break the program it watches
        _say(f"graph {name} not captured: the capture failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
             "it runs without reprokit's harness")
        return None


def _replay(captured, patches, stage):
    """Writes the captured graph and its inputs, and runs it through `reprokit run --backend
    inductor` under the harness at this level. Returns (exit status, bundle directory or "")."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        return _replay_real(captured, patches, stage)


def _replay_real(captured, patches, stage):
    os.makedirs(_config.dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f"captured-{captured.name}-", dir=_config.dir)
    try:
        model = captured.write(work)
        inputs = os.path.join(work, "inputs")
        argv = [executable(), "run", model, "--backend", "inductor", "--inputs", inputs]
        for opt in inductor_options(patches):
            argv += ["--backend-option", opt]
        if captured.device != "cpu":
            argv += ["--backend-option", f"device={json.dumps(captured.device)}"]
        bug = _relu_bug(captured.device)
        if bug:
            argv += ["--inject", f"relu:{bug}"]
        env = dict(os.environ, REPRO_AFTER="dynamo", REPRO_LEVEL=str(_config.level), REPRO_DIR=_config.dir)
        # The replay compiles with this program's own interpreter and torch, and finds this package.
        env.setdefault("REPROKIT_PYTHON", sys.executable)
        package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["REPROKIT_TORCH_STAGE"] = stage
        r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sys.stderr.write(r.stderr)
        bundle = ""
        for line in r.stderr.splitlines():
            if line.startswith("reprokit: wrote "):
                bundle = line[len("reprokit: wrote "):].rstrip("/").split(" ")[0].rstrip("/")
        if r.returncode not in (0, 1):
            _say(f"reprokit could not replay graph {captured.name} (exit {r.returncode})")
        return r.returncode, bundle
    finally:
        shutil.rmtree(work, ignore_errors=True)
