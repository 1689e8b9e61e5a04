"""Arrays as the ONNX worker reads and writes them: reprokit's .npy files as numpy arrays, without
torch; bfloat16 travels as its uint16 bit pattern and is ml_dtypes.bfloat16 in between."""
import numpy as np

# reprokit's dtype names -> numpy's (bf16 is handled on its own).
_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "u8": np.uint8, "i16": np.int16,
           "u16": np.uint16, "i32": np.int32, "i64": np.int64, "bool": np.bool_}


def load_input(path, dtype, shape):
    """The array in `path`, checked to be of reprokit's `dtype` and `shape` (no pickled objects)."""
    a = np.load(path, allow_pickle=False)
    if dtype == "bf16":
        import ml_dtypes

        if a.dtype != np.uint16:
            raise ValueError(f"{path}: {a.dtype} where bf16 bits (uint16) were expected")
        a = a.view(ml_dtypes.bfloat16)
    elif dtype not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}")
    elif a.dtype != _DTYPES[dtype]:
        raise ValueError(f"{path}: {a.dtype} where {dtype} was expected")
    if list(a.shape) != list(shape):
        raise ValueError(f"{path}: shape {list(a.shape)}, expected {list(shape)}")
    return np.ascontiguousarray(a) if a.ndim else a


def save_output(path, a):
    """An output as reprokit reads it back; its dtype is checked there, against the graph's."""
    a = np.asarray(a)
    if a.dtype.name == "bfloat16":
        a = a.view(np.uint16)
    np.save(path, a)
