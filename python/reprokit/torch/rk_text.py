"""Writing reprokit's graph text format (.rk): names, literals, attributes, dtypes."""
import math
import re

import torch

# Names in .rk: [A-Za-z_][A-Za-z0-9_.]*, at most 200 characters.
_NAME_OK = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
MAX_NAME = 200

DTYPES = {
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "bool",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.int16: "i16",
}


class UnsupportedGraph(Exception):
    """The graph holds something reprokit's op set cannot express. `op` names it and `where` is
    the user's source line, when Dynamo recorded one."""

    def __init__(self, what, op="", where=""):
        super().__init__(what)
        self.op = op
        self.where = where


def dtype_name(dtype):
    if dtype not in DTYPES:
        raise UnsupportedGraph(f"dtype {dtype} has no counterpart in reprokit", op=str(dtype))
    return DTYPES[dtype]


class Names:
    """Maps foreign names (FX node names, Dynamo's placeholders) into the .rk name pattern,
    deterministically and without collisions."""

    def __init__(self):
        self._used = set()

    def make(self, raw):
        base = re.sub(r"[^A-Za-z0-9_.]", "_", str(raw)) or "v"
        if not re.match(r"[A-Za-z_]", base):
            base = "v_" + base
        base = base[: MAX_NAME - 8]
        name, k = base, 1
        while name in self._used:
            name = f"{base}_{k}"
            k += 1
        assert _NAME_OK.match(name)
        self._used.add(name)
        return name


def literal(v):
    """A scalar operand or attribute value as .rk text."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        text = repr(v)
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, torch.dtype):
        return dtype_name(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(literal(e) for e in v) + "]"
    raise UnsupportedGraph(f"value {v!r} of type {type(v).__name__} cannot be written in .rk")


def tensor_type(t):
    shape = ", ".join(str(int(d)) for d in t.shape)
    return f"{dtype_name(t.dtype)}[{shape}]"
