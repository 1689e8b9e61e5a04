// Emits PyTorch code for a graph: one Python line per node, a table of spellings per op.
#include "reprokit/runtime/torch_emitter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "reprokit/ir/errors.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit {

namespace {

std::string py_name(const std::string& n) {
  std::string s = "v_";
  for (char c : n) s += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return s;
}

const char* torch_dtype(DType t) {
  switch (t) {
    case DType::f16: return "torch.float16";
    case DType::bf16: return "torch.bfloat16";
    case DType::f32: return "torch.float32";
    case DType::f64: return "torch.float64";
    case DType::i32: return "torch.int32";
    case DType::i64: return "torch.int64";
    case DType::boolean: return "torch.bool";
  }
  return "?";
}

std::string py_value(const AttrValue& v) {
  if (v.is_bool()) return v.as_bool() ? "True" : "False";
  if (v.is_float()) {
    double d = v.as_float();
    if (std::isnan(d)) return "float('nan')";
    if (std::isinf(d)) return d > 0 ? "float('inf')" : "float('-inf')";
  }
  if (v.is_dtype()) return torch_dtype(v.as_dtype());
  if (v.is_list()) {
    std::vector<std::string> parts;
    for (auto& e : v.as_list()) parts.push_back(py_value(e));
    return fmt::format("[{}]", fmt::join(parts, ", "));
  }
  return v.str();
}

std::string ints(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

std::string emit_node(const Graph& g, const Node& n) {
  std::vector<std::string> a;
  for (auto& o : n.operands) a.push_back(o.is_value() ? py_name(g.node(o.value).name) : py_value(o.literal));
  static const std::map<std::string, std::string, std::less<>> unary = {
      {"neg", "torch.neg"}, {"abs", "torch.abs"}, {"exp", "torch.exp"}, {"log", "torch.log"}, {"sqrt", "torch.sqrt"},
      {"rsqrt", "torch.rsqrt"}, {"reciprocal", "torch.reciprocal"}, {"sin", "torch.sin"}, {"cos", "torch.cos"},
      {"tanh", "torch.tanh"}, {"sigmoid", "torch.sigmoid"}, {"relu", "torch.relu"}, {"silu", "F.silu"}, {"erf", "torch.erf"},
      {"clone", "torch.clone"}};
  static const std::map<std::string, std::string, std::less<>> binary = {
      {"add", "torch.add"}, {"sub", "torch.sub"}, {"mul", "torch.mul"}, {"div", "torch.div"}, {"pow", "torch.pow"},
      {"maximum", "torch.maximum"}, {"minimum", "torch.minimum"}, {"eq", "torch.eq"}, {"ne", "torch.ne"},
      {"lt", "torch.lt"}, {"le", "torch.le"}, {"gt", "torch.gt"}, {"ge", "torch.ge"}};
  const std::string& op = n.op;
  if (auto it = unary.find(op); it != unary.end()) return fmt::format("{}({})", it->second, a[0]);
  if (auto it = binary.find(op); it != binary.end()) {
    // torch.maximum etc. need tensors: wrap scalar operands as 0-d tensors of the other's dtype.
    bool a_scalar = !n.operands[0].is_value(), b_scalar = !n.operands[1].is_value();
    if (a_scalar && (op == "maximum" || op == "minimum" || op == "pow"))
      a[0] = fmt::format("torch.tensor({}, dtype={})", a[0], a[1] + ".dtype");
    if (b_scalar && (op == "maximum" || op == "minimum"))
      a[1] = fmt::format("torch.tensor({}, dtype={})", a[1], a[0] + ".dtype");
    if (a_scalar && op != "pow" && op != "maximum" && op != "minimum") {
      // Python scalars on the left: use the reflected Python operator so torch keeps the dtype.
      static const std::map<std::string, std::string, std::less<>> pyop = {{"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"},
          {"eq", "=="}, {"ne", "!="}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}};
      return fmt::format("({} {} {})", a[0], pyop.at(op), a[1]);
    }
    return fmt::format("{}({}, {})", it->second, a[0], a[1]);
  }
  if (op == "gelu") return fmt::format("F.gelu({}, approximate='{}')", a[0], attr(n, "approximate").as_string());
  if (op == "where") return fmt::format("torch.where({}, {}, {})", a[0], a[1], a[2]);
  if (op == "to") return fmt::format("{}.to(_dt({}))", a[0], torch_dtype(attr(n, "dtype").as_dtype()));
  if (op == "contiguous") return fmt::format("{}.contiguous()", a[0]);
  if (op == "sum" || op == "mean" || op == "amax" || op == "amin" || op == "var") {
    std::string dims = attr_opt(n, "dims") ? ints(attr_ints(n, "dims")) : "None";
    bool keep = attr_bool(n, "keepdim");
    std::string dim_arg = dims == "None" ? (op == "amax" || op == "amin" ? "dim=list(range(" + a[0] + ".dim()))" : "dim=None") : "dim=" + dims;
    if (op == "var") return fmt::format("torch.var({}, {}, correction={}, keepdim={})", a[0], dim_arg, attr_int(n, "correction"), keep ? "True" : "False");
    if (dims == "None" && !keep && (op == "sum" || op == "mean")) return fmt::format("torch.{}({})", op, a[0]);
    return fmt::format("torch.{}({}, {}, keepdim={})", op, a[0], dim_arg, keep ? "True" : "False");
  }
  if (op == "argmax") {
    if (auto d = attr_opt(n, "dim")) return fmt::format("torch.argmax({}, dim={}, keepdim={})", a[0], d->as_int(), attr_bool(n, "keepdim") ? "True" : "False");
    return fmt::format("torch.argmax({}, keepdim={})", a[0], attr_bool(n, "keepdim") ? "True" : "False");
  }
  if (op == "softmax" || op == "log_softmax") return fmt::format("torch.{}({}, dim={})", op, a[0], attr_int(n, "dim"));
  if (op == "layer_norm")
    return fmt::format("F.layer_norm({}, {}, {}, {}, eps={})", a[0], ints(attr_ints(n, "normalized_shape")),
                       a.size() > 1 ? a[1] : "None", a.size() > 2 ? a[2] : "None", py_value(AttrValue(attr_float(n, "eps"))));
  if (op == "matmul") return fmt::format("torch.matmul({}, {})", a[0], a[1]);
  if (op == "linear") return fmt::format("F.linear({}, {}, {})", a[0], a[1], a.size() > 2 ? a[2] : "None");
  if (op == "reshape") return fmt::format("torch.reshape({}, {})", a[0], ints(attr_ints(n, "shape")));
  if (op == "permute") return fmt::format("{}.permute({})", a[0], ints(attr_ints(n, "dims")));
  if (op == "transpose") return fmt::format("torch.transpose({}, {}, {})", a[0], attr_int(n, "dim0"), attr_int(n, "dim1"));
  if (op == "expand") return fmt::format("{}.expand({})", a[0], ints(attr_ints(n, "shape")));
  if (op == "slice") {
    int64_t dim = normalize_dim(attr_int(n, "dim"), g.node(n.operands[0].value).type.rank());
    std::string lead;
    for (int64_t i = 0; i < dim; ++i) lead += ":, ";
    return fmt::format("{}[{}{}:{}:{}]", a[0], lead, attr_int(n, "start"), attr_int(n, "end"), attr_int(n, "step"));
  }
  if (op == "cat") return fmt::format("torch.cat([{}], dim={})", fmt::join(a, ", "), attr_int(n, "dim"));
  if (op == "squeeze") return fmt::format("torch.squeeze({}, {})", a[0], attr_int(n, "dim"));
  if (op == "unsqueeze") return fmt::format("torch.unsqueeze({}, {})", a[0], attr_int(n, "dim"));
  if (op == "embedding") return fmt::format("F.embedding({}, {})", a[1], a[0]);
  if (op == "gather") return fmt::format("torch.gather({}, {}, {}.long())", a[0], attr_int(n, "dim"), a[1]);
  if (op == "full")
    return fmt::format("torch.full({}, {}, dtype=_dt({}))", ints(attr_ints(n, "shape")), py_value(attr(n, "value")), torch_dtype(attr(n, "dtype").as_dtype()));
  throw InternalError(fmt::format("torch emitter: no spelling for op '{}'", op));
}

}  // namespace

std::string emit_torch_function(const Graph& g) {
  std::vector<std::string> params;
  for (int i = 0; i < g.num_inputs(); ++i) params.push_back(py_name(g.node(i).name));
  std::string s = fmt::format("def {}({}):\n", py_name(g.name).substr(2), fmt::join(params, ", "));
  for (int i = g.num_inputs(); i < g.size(); ++i) {
    const Node& n = g.node(i);
    s += fmt::format("    {} = {}  # {}\n", py_name(n.name), emit_node(g, n), n.op);
  }
  std::vector<std::string> outs;
  for (int o : g.outputs) outs.push_back(py_name(g.node(o).name));
  s += fmt::format("    return ({},)\n", fmt::join(outs, ", "));
  return s;
}

std::string emit_torch_program(const Graph& g) {
  std::string s =
      "#!/usr/bin/env python3\n"
      "# Generated by reprokit: graph " + g.name + " as a PyTorch program.\n"
      "# usage: python3 THIS.py [INPUT_DIR [OUTPUT_DIR]] [--f64]   (default: ./repro_inputs, ./torch_outputs)\n"
      "import os, sys\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\n\n"
      "F64 = '--f64' in sys.argv[3:]\n\n"
      "def _dt(dtype):\n"
      "    # In float64 mode every floating value stays float64, as reprokit's reference does.\n"
      "    return torch.float64 if F64 and dtype.is_floating_point else dtype\n\n"
      "def load(path, dtype):\n"
      "    a = np.load(path)\n"
      "    if dtype == torch.bfloat16:\n"
      "        return torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16)\n"
      "    return torch.from_numpy(np.ascontiguousarray(a)).to(dtype)\n\n"
      "def save(path, t):\n"
      "    t = t.detach().cpu().contiguous()\n"
      "    if t.dtype == torch.bfloat16:\n"
      "        np.save(path, t.view(torch.int16).numpy().astype(np.uint16))\n"
      "    else:\n"
      "        np.save(path, t.numpy())\n\n";
  s += emit_torch_function(g);
  s += "\nINPUTS = [";
  for (int i = 0; i < g.num_inputs(); ++i) {
    const TensorType& t = g.node(i).type;
    s += fmt::format("{}('{}', {}, {}, {})", i ? ", " : "", g.node(i).name, torch_dtype(t.dtype), ints(t.shape),
                     t.strides.empty() ? "None" : ints(t.strides));
  }
  s += "]\nOUTPUTS = [";
  for (size_t i = 0; i < g.outputs.size(); ++i) s += fmt::format("{}'{}'", i ? ", " : "", g.node(g.outputs[i]).name);
  s += "]\n\n";
  s +=
      "def main():\n"
      "    here = os.path.dirname(os.path.abspath(__file__))\n"
      "    args_ = [a for a in sys.argv[1:] if not a.startswith('--')]\n"
      "    in_dir = args_[0] if len(args_) > 0 else os.path.join(here, 'repro_inputs')\n"
      "    out_dir = args_[1] if len(args_) > 1 else os.path.join(here, 'torch_outputs')\n"

      "    args = []\n"
      "    for name, dtype, shape, strides in INPUTS:\n"
      "        t = load(os.path.join(in_dir, name + '.npy'), dtype)\n"
      "        assert list(t.shape) == shape, f'{name}: expected shape {shape}, got {list(t.shape)}'\n"
      "        if strides is not None:  # the declared layout, as the graph states it\n"
      "            t = torch.empty_strided(shape, strides, dtype=dtype).copy_(t)\n"
      "        if F64 and t.is_floating_point():\n"
      "            t = t.double()\n"
      "        args.append(t)\n"
      "    with torch.no_grad():\n"
      "        outs = " + py_name(g.name).substr(2) + "(*args)\n"
      "    os.makedirs(out_dir, exist_ok=True)\n"
      "    for name, t in zip(OUTPUTS, outs):\n"
      "        save(os.path.join(out_dir, name + '.npy'), t)\n"
      "        print(f'{name}: {tuple(t.shape)} {t.dtype} sum={t.double().sum().item():.6g}')\n\n"
      "if __name__ == '__main__':\n"
      "    main()\n";
  return s;
}

}  // namespace reprokit
