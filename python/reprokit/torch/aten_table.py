"""ATen ops -> reprokit ops: one row per ATen overload packet, each a small function that emits
the reprokit node (or the few nodes) computing the same value.

A row gets the translator `g`, the FX node and its arguments with tensors replaced by the values
already emitted; it returns the value (or a tuple for an op with several results). Results an op
has but reprokit cannot compute (a batch norm's saved statistics, max pooling's indices) are
`Unusable`: reaching one from the graph's outputs refuses the capture, naming the op.
"""
import torch

from .rk_text import UnsupportedGraph

aten = torch.ops.aten


class Unusable:
    def __init__(self, what):
        self.what = what


def _unary(op):
    return lambda g, n, a, k: g.emit(op, [a[0]])


def _binary(op):
    return lambda g, n, a, k: g.emit(op, [a[0], a[1]])


def _alpha(g, a, k):
    alpha = k.get("alpha", 1)
    return a[1] if alpha == 1 else g.emit("mul", [a[1], alpha])


def _add(g, n, a, k):
    return g.emit("add", [a[0], _alpha(g, a, k)])


def _sub(g, n, a, k):
    return g.emit("sub", [a[0], _alpha(g, a, k)])


def _rsub(g, n, a, k):  # other - alpha * self
    return g.emit("sub", [a[1], g.emit("mul", [a[0], k["alpha"]]) if k.get("alpha", 1) != 1 else a[0]])


def _div(g, n, a, k):
    if k.get("rounding_mode") is not None:
        raise g.unsupported(n, f"division with rounding_mode={k['rounding_mode']!r}")
    return g.emit("div", [a[0], a[1]])


def _gelu(g, n, a, k):
    return g.emit("gelu", [a[0]], approximate=k.get("approximate", "none"))


def _clamp(g, n, a, k):
    lo = a[1] if len(a) > 1 else k.get("min")
    hi = a[2] if len(a) > 2 else k.get("max")
    attrs = {}
    if lo is not None:
        attrs["min"] = lo
    if hi is not None:
        attrs["max"] = hi
    return g.emit("clamp", [a[0]], **attrs)


def _hardtanh(g, n, a, k):
    lo = a[1] if len(a) > 1 else k.get("min_val", -1.0)
    hi = a[2] if len(a) > 2 else k.get("max_val", 1.0)
    return g.emit("clamp", [a[0]], min=float(lo), max=float(hi))


def _to_copy(g, n, a, k):
    dtype = k.get("dtype")
    if dtype is None or dtype == g.dtype_of(n.args[0]):
        return g.emit("clone", [a[0]])
    return g.emit("to", [a[0]], dtype=dtype)


def _to_dtype(g, n, a, k):
    dtype = a[1] if len(a) > 1 else k["dtype"]
    return g.emit("to", [a[0]], dtype=dtype)


def _same(g, n, a, k):
    return a[0]


def _reduce(op):
    def row(g, n, a, k):
        dims = a[1] if len(a) > 1 else k.get("dim")
        keepdim = a[2] if len(a) > 2 else k.get("keepdim", False)
        if k.get("dtype") is not None and k["dtype"] != g.dtype_of(n.args[0]):
            raise g.unsupported(n, f"{op} with dtype={k['dtype']}")
        attrs = {"keepdim": bool(keepdim)}
        if dims is not None and len(dims) > 0:
            attrs["dims"] = list(dims)
        return g.emit(op, [a[0]], **attrs)

    return row


def _var(g, n, a, k):
    dims = a[1] if len(a) > 1 else k.get("dim")
    correction = k.get("correction", 1)
    attrs = {"keepdim": bool(k.get("keepdim", False)), "correction": int(1 if correction is None else correction)}
    if dims is not None and len(dims) > 0:
        attrs["dims"] = list(dims)
    return g.emit("var", [a[0]], **attrs)


def _var_mean(g, n, a, k):  # var_mean.correction(x, dim=None, correction=1, keepdim=False) -> (var, mean)
    dims = a[1] if len(a) > 1 else k.get("dim")
    keepdim = bool(k.get("keepdim", False))
    attrs = {"keepdim": keepdim}
    if dims is not None and len(dims) > 0:
        attrs["dims"] = list(dims)
    correction = k.get("correction", 1)
    var = g.emit("var", [a[0]], correction=int(1 if correction is None else correction), **attrs)
    return (var, g.emit("mean", [a[0]], **attrs))


def _argmax(g, n, a, k):
    dim = a[1] if len(a) > 1 else k.get("dim")
    keepdim = a[2] if len(a) > 2 else k.get("keepdim", False)
    attrs = {"keepdim": bool(keepdim)}
    if dim is not None:
        attrs["dim"] = int(dim)
    return g.emit("argmax", [a[0]], **attrs)


def _softmax(op):
    def row(g, n, a, k):
        if len(a) > 2 and a[2] and g.dtype_of(n.args[0]) != torch.float32:
            raise g.unsupported(n, f"{op} with half_to_float")
        return g.emit(op, [a[0]], dim=int(a[1]))

    return row


def _layer_norm(g, n, a, k):  # native_layer_norm(x, normalized_shape, weight, bias, eps)
    operands = [a[0]] + ([a[2]] if a[2] is not None else [])
    if a[3] is not None:
        if a[2] is None:
            raise g.unsupported(n, "layer norm with a bias and no weight")
        operands.append(a[3])
    y = g.emit("layer_norm", operands, normalized_shape=list(a[1]), eps=float(a[4]))
    return (y, Unusable("the mean a layer norm saves"), Unusable("the inverse deviation a layer norm saves"))


def _batch_norm_inference(g, x, w, b, mean, var, eps, n):
    operands = [x, mean, var] + ([w] if w is not None else [])
    if b is not None:
        if w is None:
            raise g.unsupported(n, "batch norm with a bias and no weight")
        operands.append(b)
    return g.emit("batch_norm", operands, eps=float(eps))


def _bn_no_training(g, n, a, k):  # (x, weight, bias, running_mean, running_var, momentum, eps)
    y = _batch_norm_inference(g, a[0], a[1], a[2], a[3], a[4], a[6], n)
    return (y, Unusable("a batch norm's saved mean"), Unusable("a batch norm's saved inverse deviation"))


def _affine_operands(g, n, x, w, b, what):
    operands = [x] + ([w] if w is not None else [])
    if b is not None:
        if w is None:
            raise g.unsupported(n, f"{what} with a bias and no weight")
        operands.append(b)
    return operands


def _batch_statistics_norm(g, n, x, w, b, eps):
    """Batch norm with the batch's statistics and no running statistics to update: each channel of
    [N, C, ...] normalized over N and the spatial dims, as instance_norm does on [1, C, N, ...].
    PyTorch's instance_norm reaches the dispatcher as this, on the input viewed as [1, N * C, ...]."""
    shape = g.shape_of(n.args[0])
    if len(shape) >= 3 and shape[0] == 1:
        return g.emit("instance_norm", _affine_operands(g, n, x, w, b, "batch norm"), eps=float(eps))
    moved = g.emit("unsqueeze", [g.emit("transpose", [x], dim0=0, dim1=1)], dim=0)
    y = g.emit("instance_norm", _affine_operands(g, n, moved, w, b, "batch norm"), eps=float(eps))
    return g.emit("transpose", [g.emit("squeeze", [y], dim=0)], dim0=0, dim1=1)


def _native_batch_norm(g, n, a, k):  # (x, weight, bias, running_mean, running_var, training, momentum, eps)
    if a[5]:
        if a[3] is not None or a[4] is not None:
            raise g.unsupported(n, "batch norm in training mode (statistics of the batch, running statistics updated)")
        y = _batch_statistics_norm(g, n, a[0], a[1], a[2], a[7])
    else:
        y = _batch_norm_inference(g, a[0], a[1], a[2], a[3], a[4], a[7], n)
    return (y, Unusable("a batch norm's saved mean"), Unusable("a batch norm's saved inverse deviation"))


def _bn_legit(g, n, a, k):  # _native_batch_norm_legit(x, weight, bias, [running_mean, running_var,] training, momentum, eps)
    if len(a) == 8:
        return _native_batch_norm(g, n, a, k)
    if not a[3]:
        raise g.unsupported(n, "batch norm in inference mode without running statistics")
    y = _batch_statistics_norm(g, n, a[0], a[1], a[2], a[5])
    return (y, Unusable("a batch norm's saved mean"), Unusable("a batch norm's saved inverse deviation"))


def _group_norm(g, n, a, k):  # native_group_norm(x, weight, bias, N, C, HxW, group, eps)
    y = g.emit("group_norm", _affine_operands(g, n, a[0], a[1], a[2], "group norm"), num_groups=int(a[6]), eps=float(a[7]))
    return (y, Unusable("the mean a group norm saves"), Unusable("the inverse deviation a group norm saves"))


def _instance_norm(g, n, a, k):  # instance_norm(x, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn)
    if a[5]:
        return g.emit("instance_norm", _affine_operands(g, n, a[0], a[1], a[2], "instance norm"), eps=float(a[7]))
    if a[3] is None or a[4] is None:
        raise g.unsupported(n, "instance norm without input statistics or running statistics")
    return _batch_norm_inference(g, a[0], a[1], a[2], a[3], a[4], a[7], n)  # the running statistics, per channel


def _repeat(g, n, a, k):  # repeat(x, repeats): each dim tiled, as expand over a new dim before it, then reshape
    reps = [int(r) for r in a[1]]
    shape = [1] * (len(reps) - g.rank_of(n.args[0])) + [int(d) for d in g.shape_of(n.args[0])]
    x = g.emit("reshape", [a[0]], shape=shape) if len(shape) != g.rank_of(n.args[0]) else a[0]
    interleaved = [d for s in shape for d in (1, s)]
    tiled = [d for r, s in zip(reps, shape) for d in (r, s)]
    x = g.emit("expand", [g.emit("reshape", [x], shape=interleaved)], shape=tiled)
    return g.emit("reshape", [x], shape=[int(d) for d in g.shape_of(n)])


_SAMPLE_MODES = ("bilinear", "nearest")  # aten's interpolation_mode 0 and 1; 2 (bicubic) is refused
_SAMPLE_PADDINGS = ("zeros", "border", "reflection")  # aten's padding_mode 0, 1, 2


def _grid_sampler(g, n, a, k):  # grid_sampler_2d(x, grid, interpolation_mode, padding_mode, align_corners)
    if int(a[2]) >= len(_SAMPLE_MODES):
        raise g.unsupported(n, "grid_sample with mode bicubic")
    return g.emit("grid_sample", [a[0], a[1]], mode=_SAMPLE_MODES[int(a[2])], padding_mode=_SAMPLE_PADDINGS[int(a[3])],
                  align_corners=bool(a[4]))


def _affine_grid(g, n, a, k):  # affine_grid_generator(theta, size, align_corners)
    if len(a[1]) != 4:
        raise g.unsupported(n, "affine_grid of a 3-D size")
    return g.emit("affine_grid", [a[0]], size=[int(d) for d in a[1]], align_corners=bool(a[2]))


def _addmm(g, n, a, k):  # beta * bias + alpha * (x @ w)
    if k.get("beta", 1) != 1 or k.get("alpha", 1) != 1:
        raise g.unsupported(n, "addmm with beta or alpha other than 1")
    w = n.args[2]
    if getattr(w, "target", None) is aten.t.default and g.rank_of(n.args[0]) == 1:
        # addmm(b, x, t(W)) is what F.linear(x, W, b) becomes: written as linear, it becomes that again.
        return g.emit("linear", [a[1], g.values[w.args[0]], a[0]])
    return g.emit("add", [g.emit("matmul", [a[1], a[2]]), a[0]])


def _linear(g, n, a, k):
    return g.emit("linear", [a[0], a[1]] + ([a[2]] if len(a) > 2 and a[2] is not None else []))


def _t(g, n, a, k):
    if g.rank_of(n.args[0]) < 2:
        return a[0]
    return g.emit("transpose", [a[0]], dim0=0, dim1=1)


def _transpose(g, n, a, k):
    return g.emit("transpose", [a[0]], dim0=int(a[1]), dim1=int(a[2]))


def _permute(g, n, a, k):
    return g.emit("permute", [a[0]], dims=[int(d) for d in a[1]])


def _reshape(g, n, a, k):
    return g.emit("reshape", [a[0]], shape=[int(d) for d in g.shape_of(n)])


def _expand(g, n, a, k):
    return g.emit("expand", [a[0]], shape=[int(d) for d in g.shape_of(n)])


def _slice(g, n, a, k):  # slice.Tensor(x, dim=0, start=None, end=None, step=1)
    dim = int(a[1]) if len(a) > 1 else 0
    size = g.shape_of(n.args[0])[dim]
    start = a[2] if len(a) > 2 and a[2] is not None else 0
    end = a[3] if len(a) > 3 and a[3] is not None else size
    step = int(a[4]) if len(a) > 4 else 1
    start, end, _ = slice(start, end).indices(size)  # Python's clamping, as ATen's
    end = max(end, start)
    return g.emit("slice", [a[0]], dim=dim, start=start, end=end, step=step)


def _select(g, n, a, k):
    dim, index = int(a[1]), int(a[2])
    size = g.shape_of(n.args[0])[dim]
    index = index + size if index < 0 else index
    s = g.emit("slice", [a[0]], dim=dim, start=index, end=index + 1, step=1)
    return g.emit("squeeze", [s], dim=dim)


def _split(g, n, a, k):  # split.Tensor(x, size, dim) / split_with_sizes(x, sizes, dim)
    dim = int(a[2]) if len(a) > 2 else int(k.get("dim", 0))
    total = g.shape_of(n.args[0])[dim]
    sizes = a[1] if isinstance(a[1], (list, tuple)) else [min(a[1], total - s) for s in range(0, total, a[1])]
    parts, start = [], 0
    for s in sizes:
        parts.append(g.emit("slice", [a[0]], dim=dim, start=start, end=start + int(s), step=1))
        start += int(s)
    return tuple(parts)


def _unbind(g, n, a, k):
    dim = int(a[1]) if len(a) > 1 else 0
    parts = []
    for i in range(g.shape_of(n.args[0])[dim]):
        s = g.emit("slice", [a[0]], dim=dim, start=i, end=i + 1, step=1)
        parts.append(g.emit("squeeze", [s], dim=dim))
    return tuple(parts)


def _cat(g, n, a, k):
    dim = int(a[1]) if len(a) > 1 else int(k.get("dim", 0))
    tensors = [t for t, src in zip(a[0], n.args[0]) if g.numel_of(src) > 0 or len(a[0]) == 1]
    return g.emit("cat", tensors, dim=dim)


def _stack(g, n, a, k):
    dim = int(a[1]) if len(a) > 1 else int(k.get("dim", 0))
    return g.emit("cat", [g.emit("unsqueeze", [t], dim=dim) for t in a[0]], dim=dim)


def _squeeze(g, n, a, k):
    dims = a[1] if len(a) > 1 else None
    if dims is None:
        dims = [d for d, s in enumerate(g.shape_of(n.args[0])) if s == 1]
    if isinstance(dims, int):
        dims = [dims]
    rank = g.rank_of(n.args[0])
    dims = sorted({d % rank for d in dims if g.shape_of(n.args[0])[d] == 1}, reverse=True)
    v = a[0]
    for d in dims:
        v = g.emit("squeeze", [v], dim=d)
    return v


def _unsqueeze(g, n, a, k):
    return g.emit("unsqueeze", [a[0]], dim=int(a[1]))


def _spatial(g, n, x, what):
    """The number of spatial dims of x (2 for NCHW, 3 for NCDHW); refuses other ranks."""
    r = g.rank_of(x) - 2
    if r not in (2, 3):
        raise g.unsupported(n, f"{what} of a tensor that is not 4-D or 5-D")
    return r


def _conv(g, n, a, k):  # convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)
    r = g.rank_of(n.args[0]) - 2
    if r not in (2, 3):
        raise g.unsupported(n, f"a {r}-D convolution (reprokit has 2-D and 3-D)")
    operands = [a[0], a[1]] + ([a[2]] if a[2] is not None else [])
    if a[6]:
        return g.emit(f"conv_transpose{r}d", operands, stride=_dims(a[3], r), padding=_dims(a[4], r), output_padding=_dims(a[7], r),
                      dilation=_dims(a[5], r), groups=int(a[8]))
    return g.emit(f"conv{r}d", operands, stride=_dims(a[3], r), padding=_dims(a[4], r), dilation=_dims(a[5], r), groups=int(a[8]))


def _conv_backward(g, n, a, k):
    """convolution_backward(grad, x, weight, bias_sizes, stride, padding, dilation, transposed,
    output_padding, groups, output_mask) -> (grad of x, of the weight, of the bias): the first two as
    reprokit's conv*_input_grad and conv*_weight_grad, the bias's as the sum over all but channels."""
    import operator

    r = _spatial(g, n, n.args[1], "convolution backward")
    if a[7]:
        raise g.unsupported(n, "the backward of a transposed convolution")
    mask = list(a[10])
    read = set()
    for u in n.users:
        if u.target is not operator.getitem:
            read = {0, 1, 2}
            break
        if u.users:
            read.add(u.args[1])
    attrs = dict(stride=_dims(a[4], r), padding=_dims(a[5], r), dilation=_dims(a[6], r), groups=int(a[9]))
    ops = (f"conv{r}d_input_grad", f"conv{r}d_weight_grad")
    out = [g.emit(ops[i], [a[0], a[1], a[2]], **attrs) if mask[i] and i in read else Unusable("a gradient not asked for")
           for i in range(2)]
    bias = Unusable("a gradient not asked for")
    if mask[2] and 2 in read:
        bias = g.emit("sum", [a[0]], dims=[0] + list(range(2, r + 2)), keepdim=False)
    return tuple(out) + (bias,)


def _conv_transpose(g, n, a, k):  # conv_transpose2d / 3d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)
    r = _spatial(g, n, n.args[0], "transposed convolution")

    def arg(i, d):
        return _dims(a[i] if len(a) > i and a[i] is not None else d, r)

    if isinstance(a[4] if len(a) > 4 else 0, str):
        raise g.unsupported(n, "convolution with padding given as a string")
    operands = [a[0], a[1]] + ([a[2]] if len(a) > 2 and a[2] is not None else [])
    return g.emit(f"conv_transpose{r}d", operands, stride=arg(3, 1), padding=arg(4, 0), output_padding=arg(5, 0),
                  groups=int(a[6]) if len(a) > 6 else 1, dilation=arg(7, 1))


def _conv2d(g, n, a, k):  # conv2d / conv3d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1)
    r = _spatial(g, n, n.args[0], "convolution")

    def dims(v, d):
        return _dims(d if v is None else v, r)

    if isinstance(a[4] if len(a) > 4 else 0, str):
        raise g.unsupported(n, "convolution with padding given as a string")
    operands = [a[0], a[1]] + ([a[2]] if len(a) > 2 and a[2] is not None else [])
    return g.emit(f"conv{r}d", operands, stride=dims(a[3] if len(a) > 3 else 1, 1), padding=dims(a[4] if len(a) > 4 else 0, 0),
                  dilation=dims(a[5] if len(a) > 5 else 1, 1), groups=int(a[6]) if len(a) > 6 else 1)


def _dims(v, r):
    """An int or a list of ints as one value per spatial dim (a single value stands for all)."""
    if isinstance(v, int):
        return [int(v)] * r
    v = [int(e) for e in v]
    return v * r if len(v) == 1 else v


def _max_pool(g, n, a, k):  # (x, kernel, stride=[], padding=0, dilation=1, ceil_mode=False)
    r = _spatial(g, n, n.args[0], "max pooling")
    attrs = {"kernel": _dims(a[1], r)}
    if len(a) > 2 and len(a[2]):
        attrs["stride"] = _dims(a[2], r)
    attrs["padding"] = _dims(a[3], r) if len(a) > 3 else [0] * r
    attrs["dilation"] = _dims(a[4], r) if len(a) > 4 else [1] * r
    attrs["ceil_mode"] = bool(a[5]) if len(a) > 5 else False
    y = g.emit(f"max_pool{r}d", [a[0]], **attrs)
    with_indices = "with_indices" in str(n.target) or "with_offsets" in str(n.target)
    return (y, Unusable("the indices max pooling returns")) if with_indices else y


def _max_pool_backward(g, n, a, k):  # (grad, x, kernel, stride, padding, dilation, ceil_mode, indices)
    # reprokit's max pool backward ops find each window's maximum in x again: the indices are not read.
    r = _spatial(g, n, n.args[1], "max pooling backward")
    attrs = {"kernel": _dims(a[2], r)}
    if len(a[3]):
        attrs["stride"] = _dims(a[3], r)
    attrs.update(padding=_dims(a[4], r), dilation=_dims(a[5], r), ceil_mode=bool(a[6]))
    return g.emit(f"max_pool{r}d_backward", [a[0], a[1]], **attrs)


def _avg_pool(g, n, a, k):  # (x, kernel, stride=[], padding=0, ceil_mode, count_include_pad, divisor_override)
    r = _spatial(g, n, n.args[0], "average pooling")
    if len(a) > 6 and a[6] is not None:
        raise g.unsupported(n, "average pooling with divisor_override")
    attrs = {"kernel": _dims(a[1], r)}
    if len(a) > 2 and len(a[2]):
        attrs["stride"] = _dims(a[2], r)
    attrs["padding"] = _dims(a[3], r) if len(a) > 3 else [0] * r
    attrs["ceil_mode"] = bool(a[4]) if len(a) > 4 else False
    attrs["count_include_pad"] = bool(a[5]) if len(a) > 5 else True
    return g.emit(f"avg_pool{r}d", [a[0]], **attrs)


def _adaptive_avg_pool(g, n, a, k):
    if g.rank_of(n.args[0]) != 4:
        raise g.unsupported(n, "adaptive average pooling of a tensor that is not 4-D")
    return g.emit("adaptive_avg_pool2d", [a[0]], output_size=[int(d) for d in g.shape_of(n)[2:]])


def _embedding(g, n, a, k):
    return g.emit("embedding", [a[0], a[1]])


def _gather(g, n, a, k):
    return g.emit("gather", [a[0], a[2]], dim=int(a[1]))


def _scatter_add(g, n, a, k):  # scatter_add(x, dim, index, src)
    return g.emit("scatter_add", [a[0], a[2], a[3]], dim=int(a[1]))


def _arange(g, length, scale):
    """0, scale, 2 * scale, ... (length values, i64) from ops reprokit has: a cumsum of a constant."""
    return g.emit("cumsum", [g.emit("full", [], shape=[int(length)], value=int(scale), dtype=torch.int64)], dim=0) if length else None


def _offsets_to_indices(g, n, a, k):
    """Inductor's max pooling keeps each window's maximum as an offset inside the window; its
    backward turns the offsets into indices into the input's flattened spatial dims:
    sum over d of (out_d * stride_d - padding_d + k_d * dilation_d) * (the input's stride along d),
    where k is the offset unflattened over the kernel. The part of the kernel position is a table
    over the offsets (a gather); the part of the output position a constant added."""
    off, kernel, size, stride, padding, dilation = a[0], list(a[1]), list(a[2]), list(a[3]), list(a[4]), list(a[5])
    r = len(kernel)
    shape = [int(d) for d in g.shape_of(n.args[0])]
    rank = len(shape)
    plane = [1] * r  # the input's strides within its spatial dims
    for d in range(r - 2, -1, -1):
        plane[d] = plane[d + 1] * int(size[d + 1])

    def grid(lengths, scales):  # sum over d of (arange(lengths[d]) * scales[d]) along dim d of an r-D grid
        total = None
        for d in range(r):
            line = g.emit("sub", [_arange(g, lengths[d], scales[d]), int(scales[d])])  # 0, s, 2s, ...
            view = [1] * r
            view[d] = int(lengths[d])
            line = g.emit("reshape", [line], shape=view)
            total = line if total is None else g.emit("add", [total, line])
        return total

    taps = 1
    for kd in kernel:
        taps *= int(kd)
    table = g.emit("reshape", [grid(kernel, [int(dilation[d]) * plane[d] for d in range(r)])], shape=[1] * rank + [taps])
    table = g.emit("expand", [table], shape=shape + [taps])
    which = g.emit("unsqueeze", [g.emit("to", [off], dtype=torch.int64)], dim=rank)
    inside = g.emit("squeeze", [g.emit("gather", [table, which], dim=rank)], dim=rank)
    base = grid(shape[rank - r:], [int(stride[d]) * plane[d] for d in range(r)])
    shift = sum(int(padding[d]) * plane[d] for d in range(r))
    return g.emit("add", [inside, g.emit("sub", [base, shift])])


def _cumulative(op):
    def row(g, n, a, k):  # cumsum / cumprod(x, dim, *, dtype=None): a dtype casts x first, as torch
        dim = a[1] if len(a) > 1 else k["dim"]
        x = a[0]
        if k.get("dtype") is not None and k["dtype"] != g.dtype_of(n.args[0]):
            x = g.emit("to", [x], dtype=k["dtype"])
        return g.emit(op, [x], dim=int(dim))

    return row


def _sort_attrs(n, a, k):  # sort / argsort(x, dim=-1, descending=False), the .stable overloads keyword-only
    dim = a[1] if len(a) > 1 else k.get("dim", -1)
    descending = a[2] if len(a) > 2 else k.get("descending", False)
    return {"dim": int(dim), "descending": bool(descending)}


def _pair_of_ops(g, n, values_op, indices_op, operands, attrs):
    """(values, indices) of an aten op with both results, as two reprokit ops: each emitted only
    when a getitem reads it (argsort alone is sort's indices)."""
    import operator

    read = set()
    for u in n.users:
        if u.target is not operator.getitem:
            read = {0, 1}
            break
        if u.users:  # a getitem nothing reads is dead
            read.add(u.args[1])
    return tuple(g.emit(op, operands, **attrs) if i in read else Unusable("a result nothing reads")
                 for i, op in enumerate((values_op, indices_op)))


def _sort(g, n, a, k):  # (values, indices): reprokit's sort is stable, as stable=True asks
    return _pair_of_ops(g, n, "sort", "argsort", [a[0]], _sort_attrs(n, a, k))


def _argsort(g, n, a, k):
    return g.emit("argsort", [a[0]], **_sort_attrs(n, a, k))


def _topk(g, n, a, k):  # topk(x, k, dim=-1, largest=True, sorted=True) -> (values, indices)
    attrs = {"k": int(a[1]), "dim": int(a[2] if len(a) > 2 else k.get("dim", -1)),
             "largest": bool(a[3] if len(a) > 3 else k.get("largest", True)),
             "sorted": bool(a[4] if len(a) > 4 else k.get("sorted", True))}
    return _pair_of_ops(g, n, "topk", "topk_indices", [a[0]], attrs)


def _pad(g, n, a, k):  # constant_pad_nd(x, pad, value=0)
    return g.emit("pad", [a[0]], pads=[int(p) for p in a[1]], value=float(a[2]) if len(a) > 2 else 0.0)


def _full_like_node(g, n, value):
    t = g.value_of(n)
    return g.emit("full", [], shape=[int(d) for d in t.shape], value=value, dtype=t.dtype)


def _full(g, n, a, k):
    return _full_like_node(g, n, a[1])


def _fill_with(value):
    return lambda g, n, a, k: _full_like_node(g, n, value)


def _scalar_tensor(g, n, a, k):
    return _full_like_node(g, n, a[0])


def _where(g, n, a, k):
    return g.emit("where", [a[0], a[1], a[2]])


def _dropout(g, n, a, k):  # native_dropout(x, p, train) / dropout(x, p, train)
    train = a[2] if len(a) > 2 else k.get("train")
    if train:
        raise g.unsupported(n, "dropout in training mode (random)")
    return (a[0], Unusable("dropout's mask")) if "native_dropout" in str(n.target) else a[0]


def _getitem(g, n, a, k):
    v = a[0][a[1]]
    if isinstance(v, Unusable):
        return v
    return v


prims = torch.ops.prims

# ATen overload packet -> row. Every overload of the packet goes through the same row; a row reads
# the arguments the overloads share and refuses what it cannot express.
TABLE = {
    aten.relu: _unary("relu"), aten.neg: _unary("neg"), aten.abs: _unary("abs"), aten.exp: _unary("exp"),
    aten.log: _unary("log"), aten.sqrt: _unary("sqrt"), aten.rsqrt: _unary("rsqrt"),
    aten.reciprocal: _unary("reciprocal"), aten.sin: _unary("sin"), aten.cos: _unary("cos"),
    aten.tanh: _unary("tanh"), aten.sigmoid: _unary("sigmoid"), aten.erf: _unary("erf"), aten.silu: _unary("silu"),
    aten.gelu: _gelu,
    aten.add: _add, aten.sub: _sub, aten.rsub: _rsub, aten.mul: _binary("mul"), aten.div: _div,
    aten.pow: _binary("pow"), aten.maximum: _binary("maximum"), aten.minimum: _binary("minimum"),
    aten.eq: _binary("eq"), aten.ne: _binary("ne"), aten.lt: _binary("lt"), aten.le: _binary("le"),
    aten.gt: _binary("gt"), aten.ge: _binary("ge"),
    aten.where: _where, aten.clamp: _clamp, aten.hardtanh: _hardtanh,
    aten.clamp_min: lambda g, n, a, k: g.emit("clamp", [a[0]], min=a[1]),
    aten.clamp_max: lambda g, n, a, k: g.emit("clamp", [a[0]], max=a[1]),
    aten._to_copy: _to_copy, aten.to: _to_dtype, aten.clone: lambda g, n, a, k: g.emit("clone", [a[0]]),
    aten.contiguous: lambda g, n, a, k: g.emit("contiguous", [a[0]]),
    aten.alias: _same, aten.detach: _same, aten.lift_fresh_copy: _same,
    aten.sum: _reduce("sum"), aten.mean: _reduce("mean"), aten.amax: _reduce("amax"), aten.amin: _reduce("amin"),
    aten.var: _var, aten.var_mean: _var_mean, aten.argmax: _argmax,
    aten._softmax: _softmax("softmax"), aten.softmax: _softmax("softmax"),
    aten._log_softmax: _softmax("log_softmax"), aten.log_softmax: _softmax("log_softmax"),
    aten.native_layer_norm: _layer_norm,
    aten._native_batch_norm_legit_no_training: _bn_no_training, aten.native_batch_norm: _native_batch_norm,
    aten._native_batch_norm_legit: _bn_legit, aten.native_group_norm: _group_norm, aten.instance_norm: _instance_norm,
    aten.addmm: _addmm, aten.mm: _binary("matmul"), aten.bmm: _binary("matmul"), aten.matmul: _binary("matmul"),
    aten.linear: _linear,
    aten.t: _t, aten.transpose: _transpose, aten.permute: _permute,
    aten.view: _reshape, aten.reshape: _reshape, aten._unsafe_view: _reshape, aten.expand: _expand,
    aten.slice: _slice, aten.select: _select, aten.split: _split, aten.split_with_sizes: _split, aten.unbind: _unbind,
    aten.unsafe_split: _split, aten.unsafe_split_with_sizes: _split,
    aten.pixel_shuffle: lambda g, n, a, k: g.emit("pixel_shuffle", [a[0]], upscale_factor=int(a[1])),
    aten.pixel_unshuffle: lambda g, n, a, k: g.emit("pixel_unshuffle", [a[0]], downscale_factor=int(a[1])),
    aten.cat: _cat, aten.stack: _stack, aten.repeat: _repeat, aten.squeeze: _squeeze, aten.unsqueeze: _unsqueeze,
    aten.convolution: _conv, aten.convolution_backward: _conv_backward, aten.conv2d: _conv2d, aten.conv3d: _conv2d,
    aten.conv_transpose2d: _conv_transpose, aten.conv_transpose3d: _conv_transpose,
    aten.max_pool2d_with_indices: _max_pool, aten.max_pool2d: _max_pool, aten.avg_pool2d: _avg_pool,
    aten.max_pool3d_with_indices: _max_pool, aten.max_pool3d: _max_pool, aten.avg_pool3d: _avg_pool,
    aten._adaptive_avg_pool2d: _adaptive_avg_pool, aten.adaptive_avg_pool2d: _adaptive_avg_pool,
    aten.embedding: _embedding, aten.gather: _gather, aten.constant_pad_nd: _pad,
    aten.grid_sampler_2d: _grid_sampler, aten.grid_sampler: _grid_sampler, aten.affine_grid_generator: _affine_grid,
    aten.cumsum: _cumulative("cumsum"), aten.cumprod: _cumulative("cumprod"),
    aten.sort: _sort, aten.argsort: _argsort, aten.topk: _topk,
    aten.full: _full, aten.scalar_tensor: _scalar_tensor,
    aten.zeros: _fill_with(0), aten.ones: _fill_with(1), aten.zeros_like: _fill_with(0), aten.ones_like: _fill_with(1),
    aten.native_dropout: _dropout, aten.dropout: _dropout,
    aten.max_pool2d_with_indices_backward: _max_pool_backward, aten.max_pool3d_with_indices_backward: _max_pool_backward,
    prims.convert_element_type: _to_dtype,
    aten.scatter_add: _scatter_add,
}


def _inductor_prims():
    """Inductor's own primitives, in the graphs AOTAutograd hands it (registered when Inductor is imported)."""
    import torch._inductor.inductor_prims  # noqa: F401 (registers them)

    return {prims._low_memory_max_pool_with_offsets: _max_pool, prims._low_memory_max_pool_offsets_to_indices: _offsets_to_indices}


TABLE.update(_inductor_prims())

# Arguments a row never reads (so what computes them need not be captured): max pooling's backward
# recomputes the indices from the forward input.
UNREAD_ARGS = {aten.max_pool2d_with_indices_backward: {7}, aten.max_pool3d_with_indices_backward: {7}}


def row_for(target):
    import operator

    if target is operator.getitem:
        return _getitem
    packet = getattr(target, "overloadpacket", None)
    return TABLE.get(packet)


def out_of_place_row(target):
    """The row of an in-place op's out-of-place form (add_ -> add), or None."""
    packet = getattr(target, "overloadpacket", None)
    name = getattr(packet, "__name__", "")
    if not name.endswith("_") or name.startswith("_"):
        return None
    base = getattr(aten, name[:-1], None)
    return TABLE.get(base)


def _encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps,
                       norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2,
                       mask=None, mask_type=None):
    """nn.TransformerEncoderLayer's fused inference kernel (its "fast path", taken in eval mode
    without gradients) in the layer's own terms, batch first, as the module computes it otherwise.
    With a mask it stays the fused op (and the capture names it)."""
    import math

    import torch.nn.functional as F

    if mask is not None:
        return NotImplemented
    b, t, e = src.shape
    d = e // num_heads

    def attention(x):
        q, k, v = F.linear(x, qkv_weight, qkv_bias).split(e, dim=-1)
        q, k, v = (z.reshape(b, t, num_heads, d).transpose(1, 2) for z in (q, k, v))
        weights = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d)), dim=-1)
        return F.linear((weights @ v).transpose(1, 2).reshape(b, t, e), proj_weight, proj_bias)

    def feed_forward(x):
        h = F.linear(x, ffn_weight_1, ffn_bias_1)
        return F.linear(F.gelu(h) if use_gelu else F.relu(h), ffn_weight_2, ffn_bias_2)

    if norm_first:
        x = src + attention(F.layer_norm(src, (e,), norm_weight_1, norm_bias_1, eps))
        return x + feed_forward(F.layer_norm(x, (e,), norm_weight_2, norm_bias_2, eps))
    x = F.layer_norm(src + attention(src), (e,), norm_weight_1, norm_bias_1, eps)
    return F.layer_norm(x + feed_forward(x), (e,), norm_weight_2, norm_bias_2, eps)


def decompositions():
    """ATen ops reprokit has no op for, but whose PyTorch decompositions land in ops it has
    (attention, RNN cells, ...): make_fx applies these while it traces."""
    from torch._decomp import decomposition_table

    wanted = [
        "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_attention_math", "scaled_dot_product_attention",
        "lstm", "gru", "rnn_tanh", "rnn_relu", "_transformer_encoder_layer_fwd", "_native_multi_head_attention",
        "native_group_norm_backward", "silu_backward", "hardswish", "hardsigmoid", "leaky_relu", "elu", "softplus",
        "mish", "logsumexp", "baddbmm", "addcmul", "addcdiv", "lerp", "square", "mv", "dot", "erfc",
        "masked_fill", "new_zeros", "new_ones", "new_full", "full_like", "fill", "index_select", "tril", "triu",
        "std", "var_mean", "std_mean", "_log_softmax_backward_data", "_softmax_backward_data", "sigmoid_backward",
        "tanh_backward", "threshold_backward", "gelu_backward", "native_layer_norm_backward", "flatten", "unflatten", "logical_not",
        "bitwise_not",
    ]
    table = {}
    for op, fn in decomposition_table.items():
        if op.__name__.split(".")[0] in wanted:
            table[op] = fn
    table[aten._transformer_encoder_layer_fwd.default] = _encoder_layer_fwd
    return table
