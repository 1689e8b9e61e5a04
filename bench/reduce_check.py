"""The interestingness check that bench/polygraphy_vs_reprokit.py gives both `polygraphy debug
reduce --check` and `reprokit reduce --check`: one program, the model's path as its last argument.

  python bench/reduce_check.py session-error REGEX MODEL.onnx
      failing when ONNX Runtime (CPU, all graph optimisations) cannot create a session for MODEL
      and its message matches REGEX (Python's re.search)
  python bench/reduce_check.py sin-mul MODEL.onnx
      failing when a Sin node's output is an input of a Mul node
  python bench/reduce_check.py output-above T MODEL.onnx
      failing when an output of MODEL, run in ONNX Runtime on the check's own inputs, holds a value
      whose magnitude is above T. The inputs are made here from the model's input shapes (a dynamic
      dimension is 1) with numpy's default_rng(0): floats uniform in [-1, 1], integers 0, booleans
      False; files beside the model (reprokit's inputs/) are not read, so both tools' candidates
      are judged on the same terms.

Exit status: 1 failing (interesting), 0 not failing, including a model that fails some other way
(another message, an invalid model): only the failure named counts. The first line printed says
which, in words that do not depend on the candidate beyond its numbers.

With REDUCE_CHECK_COUNTER set, each run first appends one line to that file, so a caller can count
the checks a tool ran without trusting the tool's own count.
"""
import os
import re
import sys
import time


def count(argv):
    path = os.environ.get("REDUCE_CHECK_COUNTER")
    if path:
        with open(path, "a") as f:
            f.write(f"{time.time():.3f} {os.getpid()} {argv[-1] if argv else ''}\n")


def session(model):
    import tempfile
    import onnxruntime as ort
    # ONNX Runtime's Python package leaves an empty mat-debug-<pid>.log in the temporary
    # directory each time it is imported; a reduction runs this check hundreds of times.
    log = os.path.join(tempfile.gettempdir(), f"mat-debug-{os.getpid()}.log")
    if os.path.isfile(log) and os.path.getsize(log) == 0:
        os.remove(log)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def session_error(regex, model):
    try:
        session(model)
    except Exception as e:  # ORT raises its own exception types for every load failure
        msg = " ".join(str(e).split())
        if re.search(regex, msg):
            print(f"FAILING: session creation: {msg[:300]}")
            return 1
        print(f"not failing: session creation fails another way: {msg[:300]}")
        return 0
    print("not failing: the session was created")
    return 0


def sin_mul(model):
    import onnx
    try:
        g = onnx.load(model).graph
    except Exception as e:
        print(f"not failing: cannot load the model: {e}")
        return 0
    made_by = {o: n for n in g.node for o in n.output}
    for n in g.node:
        if n.op_type == "Mul" and any(i in made_by and made_by[i].op_type == "Sin" for i in n.input):
            print("FAILING: a Sin feeds a Mul")
            return 1
    print("not failing: no Sin feeds a Mul")
    return 0


NUMPY_OF_ORT = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int8)": "int8",
    "tensor(uint8)": "uint8", "tensor(bool)": "bool",
}


def output_above(threshold, model):
    import numpy as np
    try:
        s = session(model)
    except Exception as e:
        print(f"not failing: session creation fails: {' '.join(str(e).split())[:300]}")
        return 0
    rng = np.random.default_rng(0)
    feeds = {}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) and d >= 0 else 1 for d in i.shape]
        dtype = NUMPY_OF_ORT.get(i.type)
        if dtype is None:
            print(f"not failing: input {i.name} of type {i.type} is not handled")
            return 0
        if dtype.startswith("float"):
            feeds[i.name] = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
        else:
            feeds[i.name] = np.zeros(shape, dtype=dtype)
    try:
        outs = s.run(None, feeds)
    except Exception as e:
        print(f"not failing: the run fails: {' '.join(str(e).split())[:300]}")
        return 0
    for o, v in zip(s.get_outputs(), outs):
        v = np.asarray(v)
        if v.dtype.kind == "f" and v.size and np.nanmax(np.abs(v)) > threshold:
            print(f"FAILING: an output holds a value above {threshold:g}: {float(np.nanmax(np.abs(v))):.6g}")
            return 1
    print(f"not failing: every output is within {threshold:g}")
    return 0


def main(argv):
    count(argv)
    if len(argv) == 3 and argv[0] == "session-error":
        return session_error(argv[1], argv[2])
    if len(argv) == 2 and argv[0] == "sin-mul":
        return sin_mul(argv[1])
    if len(argv) == 3 and argv[0] == "output-above":
        return output_above(float(argv[1]), argv[2])
    print(__doc__, file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
