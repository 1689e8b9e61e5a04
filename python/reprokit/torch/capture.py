"""An FX graph (what Dynamo or AOTAutograd hands a backend) and its real inputs -> a reprokit
graph in .rk text, with the inputs to save beside it.

Dynamo's graph is in torch-level calls; it is first traced to ATen by make_fx (the ops as the
dispatcher sees them, with only the decompositions of aten_table.decompositions() applied), and
each ATen node becomes the reprokit op of the same meaning. AOTAutograd's graphs are ATen already.
"""
import operator
import os
import re


import torch
import torch.fx

from ..npy import save_npy
from . import aten_table
from .aten_table import Unusable
from .rk_text import Names, UnsupportedGraph, literal, tensor_type


class Ref:
    """A value of the reprokit graph being written."""

    def __init__(self, name):
        self.name = name


class Captured:
    def __init__(self, name, text, inputs, input_names, outputs, output_slots, output_names):
        self.name = name                  # the graph's name
        self.text = text                  # the .rk text
        self.inputs = inputs              # real input tensors, in the graph's order
        self.input_names = input_names    # their .rk names
        self.outputs = outputs            # the FX graph's outputs, computed on those inputs (eager)
        self.output_slots = output_slots  # for each .rk output, its position among the FX outputs
        self.output_names = output_names  # for each .rk output, its value's name
        self.notes = []                   # what was left out
        self.device = "cpu"               # where the program ran it: "cpu" or "cuda" (the graph itself is device-free)

    def write(self, directory, with_outputs=False):
        """DIR/<graph>.rk and DIR/inputs/<input>.npy (and DIR/outputs/<output>.npy: PyTorch's eager
        values); returns the model's path."""
        os.makedirs(os.path.join(directory, "inputs"), exist_ok=True)
        model = os.path.join(directory, self.name + ".rk")
        with open(model, "w") as f:
            f.write(self.text)
        for name, t in zip(self.input_names, self.inputs):
            save_npy(os.path.join(directory, "inputs", name + ".npy"), t)
        if with_outputs:
            os.makedirs(os.path.join(directory, "outputs"), exist_ok=True)
            for name, slot in zip(self.output_names, self.output_slots):
                save_npy(os.path.join(directory, "outputs", name + ".npy"), self.outputs[slot])
        return model


_SOURCE_LINE = re.compile(r'File "([^"]+)", line (\d+)')


def source_line(node):
    """'file.py:12' for the innermost frame of the user's program Dynamo recorded for a node."""
    trace = node.meta.get("stack_trace") or ""
    frames = _SOURCE_LINE.findall(trace)
    for path, line in reversed(frames):
        if "/torch/" not in path:
            return f"{path}:{line}"
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else ""


class _Translator:
    def __init__(self, graph_name):
        self.graph_name = graph_name
        self.names = Names()
        self.lines = []
        self.values = {}   # fx node -> Ref, tuple, scalar or Unusable
        self.real = {}     # fx node -> the tensor it computed on the real inputs
        self.notes = []    # what the capture left out, said to the user
        self._current = None

    # ---- what rows ask
    def value_of(self, node):
        return self.real[node]

    def shape_of(self, node):
        return list(self.real[node].shape)

    def rank_of(self, node):
        return self.real[node].dim()

    def numel_of(self, node):
        return self.real[node].numel()

    def dtype_of(self, node):
        return self.real[node].dtype

    def unsupported(self, node, what):
        return UnsupportedGraph(what, op=str(node.target), where=source_line(node))

    def emit(self, op, operands, **attrs):
        parts = []
        for o in operands:
            if isinstance(o, Ref):
                parts.append("%" + o.name)
            elif isinstance(o, Unusable):
                raise UnsupportedGraph(f"{o.what} is used (reprokit does not compute it)", op=str(self._current.target),
                                       where=source_line(self._current))
            elif isinstance(o, (bool, int, float)):
                parts.append(literal(o))
            else:
                raise UnsupportedGraph(f"operand {o!r} of {op} is not a tensor or a number", op=str(self._current.target),
                                       where=source_line(self._current))
        parts += [f"{k}={literal(v)}" for k, v in attrs.items()]
        name = self.names.make(self._current.name if self._current is not None else op)
        self.lines.append(f"  %{name} = {op}({', '.join(parts)})")
        return Ref(name)

    # ---- the walk
    def translate(self, gm, inputs, wanted_names=None):
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(inputs):
            raise UnsupportedGraph(f"the graph takes {len(placeholders)} inputs, {len(inputs)} were given")
        # The real value of every node, by running the graph once (shapes, dtypes, sizes rows need).
        real = {}

        class Recorder(torch.fx.Interpreter):
            def run_node(self, n):
                r = super().run_node(n)
                real[n] = r
                return r

        with torch.no_grad():
            outs = Recorder(gm).run(*inputs)
        self.real = real
        decls, kept_inputs, input_names = [], [], []
        for k, (node, t) in enumerate(zip(placeholders, inputs)):
            if not isinstance(t, torch.Tensor):
                raise UnsupportedGraph(f"input {node.name} is a {type(t).__name__}, not a tensor (dynamic shapes or a scalar argument)",
                                       op="placeholder")
            name = self.names.make(wanted_names[k] if wanted_names else node.name)
            self.values[node] = Ref(name)
            strides = "" if t.is_contiguous() else f" strides=[{', '.join(str(s) for s in t.stride())}]"
            decls.append(f"%{name}: {tensor_type(t)}{strides}")
            kept_inputs.append(t.detach())
            input_names.append(name)
        output_node = next(n for n in gm.graph.nodes if n.op == "output")
        needed = _needed_by(output_node)
        input_dependent = _depending_on(placeholders, gm)
        folded = set()
        for node in gm.graph.nodes:
            if node.op == "placeholder" or node not in needed:
                continue  # what the outputs do not depend on (a batch norm's unused buffers) is left out
            if node.op == "output":
                break
            if node.op != "call_function":
                raise UnsupportedGraph(f"FX node {node.name} is a {node.op} (only calls of ATen ops are captured)", op=str(node.target),
                                       where=source_line(node))
            row = aten_table.row_for(node.target)
            if node not in input_dependent and (row is None or any(i in folded for i in node.all_input_nodes)):
                # Computed from no input, by an op reprokit lacks (a causal mask from arange and
                # tril): the value where it meets the rest of the graph becomes an input.
                folded.add(node)
                if any(u in input_dependent or u.op == "output" for u in node.users) and isinstance(real.get(node), torch.Tensor):
                    self.values[node] = self._constant_input(node, real[node], decls, kept_inputs, input_names)
                continue
            if row is None and aten_table.out_of_place_row(node.target) and self._mutates_a_dead_value(node, gm):
                row = aten_table.out_of_place_row(node.target)  # x.add_(y) where x is not read again: add(x, y)
            if row is None:
                raise UnsupportedGraph(f"{node.target} is not in reprokit's op set", op=str(node.target), where=source_line(node))
            self._current = node
            args = [self._resolve(a) for a in node.args]
            kwargs = {k: self._resolve(v) for k, v in node.kwargs.items()}
            self.values[node] = row(self, node, args, kwargs)
        results = output_node.args[0]
        flat = list(results) if isinstance(results, (list, tuple)) else [results]
        returned, slots = [], []
        for i, r in enumerate(flat):
            if r is None:
                continue  # a gradient AOTAutograd does not compute
            v = self.values.get(r)
            if isinstance(v, Unusable):
                # A result only the backward graph reads (max pooling's offsets): the rest is captured.
                self.notes.append(f"output {i} ({v.what}) is left out")
                continue
            if not isinstance(v, Ref):
                raise UnsupportedGraph(f"output {i} is not a tensor ({type(v).__name__})", op="output")
            returned.append("%" + v.name)
            slots.append(i)
        if not returned:
            raise UnsupportedGraph("the graph returns no tensor", op="output")
        header = f"graph {self.graph_name}({', '.join(decls)}) {{"
        text = "\n".join([f"# Captured from PyTorch {torch.__version__} by reprokit.torch", header] + self.lines +
                         [f"  return ({', '.join(returned)})", "}", ""])
        flat_outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        c = Captured(self.graph_name, text, kept_inputs, input_names, flat_outs, slots, [r[1:] for r in returned])
        c.notes = self.notes
        return c

    @staticmethod
    def _mutates_a_dead_value(node, gm):
        """Whether an in-place op's target is read by nothing after it (so its new value can be a new one)."""
        target = node.args[0] if node.args else None
        if not isinstance(target, torch.fx.Node) or target.op == "placeholder":
            return False
        order = {n: i for i, n in enumerate(gm.graph.nodes)}
        return all(order[u] <= order[node] for u in target.users)

    def _constant_input(self, node, value, decls, kept_inputs, input_names):
        name = self.names.make(node.name)
        decls.append(f"%{name}: {tensor_type(value)}")
        kept_inputs.append(value.detach().contiguous())
        input_names.append(name)
        return Ref(name)

    def _resolve(self, a):
        if isinstance(a, torch.fx.Node):
            if a not in self.values:
                raise UnsupportedGraph(f"{a.name} is used before it is computed", op=str(a.target))
            return self.values[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self._resolve(e) for e in a)
        if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise UnsupportedGraph("a symbolic size (dynamic shapes)", op=str(self._current.target), where=source_line(self._current))
        return a


def _needed_by(output_node):
    """The nodes the graph's outputs depend on (through the arguments rows read)."""
    needed, stack = set(), [output_node]
    while stack:
        n = stack.pop()
        if n in needed:
            continue
        needed.add(n)
        unread = aten_table.UNREAD_ARGS.get(getattr(n.target, "overloadpacket", None), ())
        for i, arg in enumerate(n.args):
            if i not in unread:
                torch.fx.node.map_arg(arg, stack.append)
        for arg in n.kwargs.values():
            torch.fx.node.map_arg(arg, stack.append)
    return needed


def _depending_on(placeholders, gm):
    """The nodes whose value depends on an input."""
    dependent = set(placeholders)
    for n in gm.graph.nodes:
        if any(i in dependent for i in n.all_input_nodes):
            dependent.add(n)
    return dependent


def to_aten(gm, inputs):
    """Dynamo's graph traced to ATen, with the stack traces of the user's program kept per node."""
    from torch.fx.experimental.proxy_tensor import make_fx
    import torch.fx.traceback as fx_traceback

    # Without oneDNN, RNN decompositions take the portable path (matmuls and pointwise ops) instead
    # of mkldnn_rnn_layer.
    mkldnn_was = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        with fx_traceback.preserve_node_meta(), torch.no_grad():
            # functionalize: in-place ops (an RNN decomposition's add_) become their out-of-place forms.
            run = torch.func.functionalize(torch.fx.Interpreter(gm).run, remove="mutations")
            return make_fx(run, decomposition_table=aten_table.decompositions(), tracing_mode="real")(*inputs)
    finally:
        torch._C._set_mkldnn_enabled(mkldnn_was)


def capture(gm, inputs, graph_name, already_aten=False):
    """The reprokit graph of `gm` on `inputs`. Raises UnsupportedGraph naming what it cannot express."""
    devices = {t.device.type for t in inputs if isinstance(t, torch.Tensor)}
    if not devices <= {"cpu", "cuda"} or len(devices) > 1:
        where = ", ".join(sorted(str(t.device) for t in inputs if isinstance(t, torch.Tensor) and t.device.type != "cpu"))
        raise UnsupportedGraph(f"inputs live on {where} (reprokit.torch captures graphs on the CPU or on one CUDA device)", op="placeholder")
    names = [readable_input_name(n.name) for n in gm.graph.nodes if n.op == "placeholder"]
    if already_aten:
        inputs = _as_traced(gm, inputs)
    aten_gm = gm if already_aten else to_aten(gm, inputs)
    captured = _Translator(graph_name).translate(aten_gm, list(inputs), names)
    captured.device = "cuda" if devices == {"cuda"} else "cpu"
    return captured


def _as_traced(gm, inputs):
    """Inputs laid out with the strides the graph was traced with: a compiled forward may hand its
    backward tensors in another layout, where the graph's views would not apply."""
    out = []
    for node, t in zip([n for n in gm.graph.nodes if n.op == "placeholder"], inputs):
        traced = node.meta.get("val")
        if isinstance(t, torch.Tensor) and isinstance(traced, torch.Tensor) and tuple(t.shape) == tuple(traced.shape) \
                and t.stride() != traced.stride():
            try:
                t = torch.empty_strided(t.shape, [int(s) for s in traced.stride()], dtype=t.dtype).copy_(t)
            except (RuntimeError, TypeError):
                pass
        out.append(t)
    return out


def readable_input_name(fx_name):
    """Dynamo's placeholder names as the program spells them: L_self_modules_fc_parameters_weight_
    -> self.fc.weight, L_x_ -> x."""
    name = re.sub(r"^[Ll]_", "", fx_name)
    name = re.sub(r"_(modules|parameters|buffers)_", ".", name)
    return name.strip("_") or fx_name


def is_getitem(node):
    return node.op == "call_function" and node.target is operator.getitem
