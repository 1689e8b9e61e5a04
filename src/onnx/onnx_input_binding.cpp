// Input binding of the ONNX importer: the model's real inputs get their shapes (from the model,
// --shape, or the values the user gives) and become the graph's first inputs; initializers become
// constants. The bound shapes are written back into the model, so ONNX's shape inference sees them.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <set>

#include "handler_util.h"
#include "import_context.h"
#include "proto_util.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/shape_check.h"
#include "reprokit/onnx/onnx_tensor.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/escape_controls.h"

namespace reprokit::onnx_detail {

namespace {

// The shape --shape gives for an input, by its ONNX name `a` or its mapped name `b`.
std::optional<Shape> find_shape(const std::map<std::string, Shape>& shapes, const std::string& a, const std::string& b) {
  auto it = shapes.find(a);
  if (it == shapes.end()) it = shapes.find(b);
  if (it == shapes.end()) return std::nullopt;
  return it->second;
}

}  // namespace

void Importer::bind_inputs() {
  const auto& g = model.graph();
  std::set<std::string> init_names;
  for (const auto& t : g.initializer()) init_names.insert(t.name());
  onnx_inputs = init_names;
  for (const auto& vi : g.input()) onnx_inputs.insert(vi.name());
  if (g.sparse_initializer_size()) throw UserError(fmt::format("{}: sparse initializers are not supported", file));
  std::set<std::string> known_shape_names;
  std::vector<std::string> input_names;
  for (const auto& vi : g.input())
    if (!init_names.count(vi.name())) {
      known_shape_names.insert(vi.name());
      known_shape_names.insert(foreign.map(vi.name()));
      input_names.push_back(printable(vi.name()));
    }
  for (const auto& [name, shape] : opts.shapes)
    if (!known_shape_names.count(name))
      throw UserError(
          fmt::format("{}: --shape {}: the model has no input of that name (inputs: {})", file, printable(name), fmt::join(input_names, ", ")));
  for (int i = 0; i < g.input_size(); ++i) {
    auto* vi = model.mutable_graph()->mutable_input(i);
    if (init_names.count(vi->name())) continue;  // an initializer with a default: a constant here
    const std::string& name = vi->name();
    const std::string& mapped = foreign.map(name);
    if (!vi->type().has_tensor_type())
      throw UserError(fmt::format("{}: input '{}' is not a tensor (sequence, map and optional inputs are not supported)", file, printable(name)));
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    auto dt = dtype_from_onnx(tt->elem_type());
    if (!dt)
      throw UserError(fmt::format("{}: input '{}' has element type {}, which reprokit does not support (f16 bf16 f32 f64 i8 u8 i16 u16 i32 i64 bool)",
                                  file, printable(name), onnx_elem_type_name(tt->elem_type())));
    std::optional<Shape> given = find_shape(opts.shapes, name, mapped);
    std::string given_by = fmt::format("--shape {}", printable(name));
    // No --shape for an input whose size the model leaves open: the values the user gives decide it.
    bool open = !tt->has_shape();
    for (int d = 0; !open && d < tt->shape().dim_size(); ++d) open = !tt->shape().dim(d).has_dim_value();
    if (!given && open && opts.shape_of_given_values)
      if (auto hint = opts.shape_of_given_values(name, mapped, onnx_inputs)) {
        given = hint->first;
        given_by = escape_controls(hint->second);  // a path named after the input: as raw as its name
      }
    Shape shape;
    if (given) {
      if (tt->has_shape()) {
        std::string model_dims;
        for (int d = 0; d < tt->shape().dim_size(); ++d) {
          const auto& dim = tt->shape().dim(d);
          model_dims +=
              (d ? ", " : "") + (dim.has_dim_value() ? std::to_string(dim.dim_value()) : printable(dim.dim_param().empty() ? "?" : dim.dim_param()));
        }
        if (tt->shape().dim_size() != static_cast<int>(given->size()))
          throw UserError(
              fmt::format("{}: {}: input '{}' is [{}] in the model, not {}", file, given_by, printable(name), model_dims, shape_str(*given)));
        for (int d = 0; d < tt->shape().dim_size(); ++d) {
          const auto& dim = tt->shape().dim(d);
          if (dim.has_dim_value() && dim.dim_value() != (*given)[static_cast<size_t>(d)])
            throw UserError(fmt::format("{}: {}: input '{}' is [{}] in the model, not {} (dimension {} differs)", file, given_by, printable(name),
                                        model_dims, shape_str(*given), d));
        }
      }
      shape = *given;
    } else {
      if (!tt->has_shape())
        throw UserError(fmt::format("{}: input '{}' has no shape in the model; give it with --shape {}:[d0,d1,...]", file, printable(name), mapped));
      for (int d = 0; d < tt->shape().dim_size(); ++d) {
        const auto& dim = tt->shape().dim(d);
        if (dim.has_dim_value() && dim.dim_value() < 0)  // a size, not a placeholder: --shape would not be the fix
          throw UserError(fmt::format("{}: input '{}': dimension {} is negative ({})", file, printable(name), d, dim.dim_value()));
        if (!dim.has_dim_value())
          throw UserError(
              fmt::format("{}: input '{}' has a dynamic dimension {} ('{}'); give its size with --shape {}:[d0,d1,...], or its "
                          "values as {}.npy in --inputs DIR",
                          file, printable(name), d, printable(dim.dim_param()), mapped, mapped));
        shape.push_back(dim.dim_value());
      }
    }
    if (shape.size() > 64)
      throw UserError(fmt::format("{}: input '{}' has {} dimensions (at most 64 are supported)", file, printable(name), shape.size()));
    for (int64_t d : shape)
      if (d < 0) throw UserError(fmt::format("{}: input '{}': negative dimension {}", file, printable(name), d));
    try {
      check_shape(shape, "the input");
    } catch (const UserError& e) { throw UserError(fmt::format("{}: input '{}': {}", file, printable(name), e.what())); }
    // ONNX's shape inference then sees the bound shape.
    tt->mutable_shape()->clear_dim();
    for (int64_t d : shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
    if (values.count(name)) throw UserError(fmt::format("{}: input '{}' is declared twice", file, printable(name)));
    Value v;
    v.kind = Kind::real_input;
    v.type = TensorType{*dt, shape, {}, Device::cpu, false};
    v.rk = mapped;
    main.add_input(mapped, v.type);
    values[name] = std::move(v);
    real_inputs_.push_back(name);
  }
  for (const auto& t : g.initializer()) {
    const std::string& name = t.name();
    if (values.count(name)) throw UserError(fmt::format("{}: initializer '{}' is defined twice", file, printable(name)));
    foreign.map(name);
    Value v;
    v.kind = Kind::initializer;
    v.constant = tensor_from_proto(t, fmt::format("{}: initializer '{}'", file, printable(name)));
    v.type = TensorType{v.constant->dtype(), v.constant->shape(), {}, Device::cpu, false};
    values[name] = std::move(v);
    initializers_.push_back(name);
  }
}

}  // namespace reprokit::onnx_detail
