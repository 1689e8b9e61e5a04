"""The worker of the backends that hand reprokit's exported ONNX model to another compiler (openvino,
tvm, iree): one Python interpreter that imports the compiler once, then compiles and runs models
as reprokit asks, one request per line.

  python -m reprokit.onnx_worker COMPILER        (COMPILER: openvino, tvm or iree)

Request (one JSON line on stdin):
  {"model": ".../model.onnx", "inputs": [{"file": ".../x.npy", "dtype": "f32", "shape": [8, 16]}, ...],
   "outputs": "DIR", "options": {...}}
Reply (one JSON line on the protocol stream):
  {"ok": true} with DIR/out<k>.npy written, or
  {"ok": false, "kind": "compile_error" | "runtime_error" | "unsupported" | "bad_request", "message": "..."}

"options" (may be absent): the compiler's own optimisation switches, among its module's OPTIONS,
validated by reprokit before they are sent. Two more requests:
  {"changed": true, "model": "...", "options": {...}}  ->  {"ok": true, "changed": [NAME, ...]}: the
      optimisers that changed the model, as the compiler says (its module's changed())
  {"version": true}  ->  {"ok": true, "version": "..."}

"unsupported": the compiler said, in its own words, that it lacks an op or a type of the model
(each compiler module's UNSUPPORTED pattern): a limitation, never a finding. A fault that kills
the interpreter (a segfault in generated code, an abort) ends the worker: reprokit sees a crash.
"""
import hashlib
import importlib
import json
import os
import sys

from reprokit.worker_protocol import first_line, protocol_stream

# The compilers this worker can drive: NAME -> python/reprokit/onnx_compilers/NAME_cpu.py.
COMPILERS = ("openvino", "tvm", "iree")


def classify(compiler, stage, e):
    """The reply for exception `e` raised while the compiler compiled (stage "compile") or ran."""
    said = getattr(compiler, "message", lambda e: None)(e)
    message = f"{type(e).__name__}: {said}" if said else first_line(e)
    full = f"{type(e).__name__}: {e}"
    match = compiler.UNSUPPORTED.search(full)
    if match:
        # The compiler's words that say so, even when they are not on the exception's first lines.
        said = match.group(0).strip()
        if said not in message:
            message = f"{message} ... {said}"
        return {"ok": False, "kind": "unsupported", "message": message}
    return {"ok": False, "kind": "compile_error" if stage == "compile" else "runtime_error", "message": message}


class Worker:
    """One compiler, and the model it compiled last (the harness runs one graph several times)."""

    def __init__(self, compiler, version=None):
        self.compiler = compiler
        self.version = version
        self.key = None
        self.compiled = None

    def options_of(self, req):
        """The request's options, each one the compiler's module declares (OPTIONS)."""
        options = req.get("options") or {}
        if not isinstance(options, dict):
            raise ValueError("options is not an object")
        for name in options:
            if name not in getattr(self.compiler, "OPTIONS", ()):
                raise ValueError(f"{self.compiler.NAME} takes no option {name!r}")
        return options

    def answer(self, req):
        from reprokit.onnx_npy import load_input, save_output

        if req.get("version"):
            return {"ok": True, "version": self.version}
        if req.get("changed"):
            return self.changed(req)
        try:
            with open(req["model"], "rb") as f:
                model = f.read()
            path = req["model"]
            options = self.options_of(req)
            inputs = [load_input(s["file"], s["dtype"], s["shape"]) for s in req["inputs"]]
            outputs = req["outputs"]
        except Exception as e:  # a request reprokit should not have sent
            return {"ok": False, "kind": "bad_request", "message": first_line(e)}
        # The same model under other switches is another compile.
        key = hashlib.sha256(model + json.dumps(options, sort_keys=True).encode()).hexdigest()
        if key != self.key:
            self.key, self.compiled = None, None
            try:
                self.compiled = self.compiler.compile(path, **options)
            except Exception as e:
                return classify(self.compiler, "compile", e)
            self.key = key
        try:
            results = self.compiler.run(self.compiled, inputs)
        except Exception as e:
            return classify(self.compiler, "run", e)
        try:
            for k, a in enumerate(results):
                save_output(os.path.join(outputs, f"out{k}.npy"), a)
        except Exception as e:
            return {"ok": False, "kind": "runtime_error", "message": "cannot save an output: " + first_line(e)}
        return {"ok": True}

    def changed(self, req):
        try:
            path = req["model"]
            options = self.options_of(req)
            if not hasattr(self.compiler, "changed"):
                raise ValueError(f"{self.compiler.NAME} cannot say which optimisers changed a model")
        except Exception as e:
            return {"ok": False, "kind": "bad_request", "message": first_line(e)}
        try:
            return {"ok": True, "changed": list(self.compiler.changed(path, **options))}
        except Exception as e:
            return classify(self.compiler, "compile", e)


def serve(compiler, inp, out):
    version = compiler.load()
    out.write(json.dumps({"ready": True, "compiler": compiler.NAME, "version": version}) + "\n")
    worker = Worker(compiler, version)
    for line in inp:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            reply = {"ok": False, "kind": "bad_request", "message": first_line(e)}
        else:
            reply = worker.answer(req)
        out.write(json.dumps(reply) + "\n")


def main(argv):
    if len(argv) != 1 or argv[0] not in COMPILERS:
        print(f"usage: python -m reprokit.onnx_worker {'|'.join(COMPILERS)}", file=sys.stderr)
        return 2
    out = protocol_stream()
    compiler = importlib.import_module(f"reprokit.onnx_compilers.{argv[0]}_cpu")
    serve(compiler, sys.stdin, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
