// Loading a model file as the CLI reads it: an ONNX model imported (its bytes parsed, then the
// importer of onnx_import.cpp), or a .rk module; and the --shape specs that size ONNX inputs.
#include <fmt/format.h>

#include "import_context.h"
#include "proto_util.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"

namespace reprokit {

ImportedModel import_onnx_bytes(std::string_view bytes, const std::string& where, const ImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.size() > onnx_detail::kMaxModelBytes || !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw UserError(fmt::format("{}: not an ONNX model (the protobuf does not parse)", where));
  onnx_detail::Importer imp(model, where, options);
  return imp.run();
}

ImportedModel import_onnx(const std::string& path, const ImportOptions& options) {
  return import_onnx_bytes(read_file(path, onnx_detail::kMaxModelBytes), path, options);
}

ImportedModel import_onnx(const std::string& path, const std::map<std::string, Shape>& shapes) {
  ImportOptions o;
  o.shapes = shapes;
  return import_onnx(path, o);
}

std::pair<std::string, Shape> parse_shape_spec(const std::string& spec) {
  auto bad = [&] { return UserError(fmt::format("--shape '{}': expected NAME:[d0,d1,...]", printable(spec))); };
  size_t colon = spec.rfind(":[");
  if (colon == std::string::npos || colon == 0 || spec.back() != ']') throw bad();
  std::string name = spec.substr(0, colon);
  std::string body = spec.substr(colon + 2, spec.size() - colon - 3);
  Shape shape;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find(',', pos);
    if (end == std::string::npos) end = body.size();
    std::string tok = body.substr(pos, end - pos);
    tok.erase(0, tok.find_first_not_of(' '));
    tok.erase(tok.find_last_not_of(' ') + 1);
    if (tok.empty() || tok.size() > 12 || tok.find_first_not_of("0123456789") != std::string::npos) throw bad();
    shape.push_back(std::stoll(tok));
    pos = end + 1;
    if (end == body.size()) break;
    if (pos == body.size()) throw bad();  // trailing comma
  }
  return {name, shape};
}

std::map<std::string, Shape> parse_shape_specs(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> out;
  for (const auto& spec : specs) {
    auto [name, shape] = parse_shape_spec(spec);
    if (!out.emplace(name, shape).second) throw UserError(fmt::format("--shape {} is given twice", printable(name)));
  }
  return out;
}

bool is_onnx_path(const std::string& path) { return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0; }

Module load_model(const std::string& path, const std::map<std::string, Shape>& shapes, std::map<std::string, Tensor>* values) {
  GivenInputs none;
  return load_model(path, shapes, values, none);
}

Module load_model(const std::string& path, const std::map<std::string, Shape>& shapes, std::map<std::string, Tensor>* values, GivenInputs& given,
                  OnnxOrigins* origins) {
  Module m;
  if (is_onnx_path(path)) {
    ImportOptions o;
    o.shapes = shapes;
    o.keep_original_nodes = origins != nullptr;
    if (!given.dir.empty()) {
      using OnnxNames = ImportOptions::OnnxNames;
      o.shape_of_given_values = [&](const std::string& onnx_name, const std::string& mapped,
                                    const OnnxNames& onnx_inputs) -> std::optional<std::pair<Shape, std::string>> {
        auto f = input_file(given.dir, mapped, onnx_name, onnx_inputs);
        if (!f) return std::nullopt;
        return std::make_pair(read_npy(*f).shape(), *f);
      };
      o.given_value = [&](const std::string& onnx_name, const std::string& mapped,
                          const OnnxNames& onnx_inputs) -> std::optional<std::pair<Tensor, std::string>> {
        auto f = input_file(given.dir, mapped, onnx_name, onnx_inputs);
        if (!f) return std::nullopt;
        given.specialised.insert(*f);
        given.onnx_names.insert(onnx_name);  // its file stays its own once it is specialised away
        return std::make_pair(read_npy(*f), *f);
      };
    }
    ImportedModel im = import_onnx(path, o);
    for (int i = 0; i < im.graph.num_inputs() && i < static_cast<int>(im.input_sources.size()); ++i) {
      given.sources[im.graph.node(i).name] = im.input_sources[static_cast<size_t>(i)];
      given.onnx_names.insert(im.input_sources[static_cast<size_t>(i)]);
    }
    m.graphs.push_back(std::move(im.graph));
    if (values) *values = std::move(im.values);
    if (origins) *origins = std::move(im.origins);
    return m;
  }
  if (!shapes.empty()) throw UserError("--shape applies to ONNX models (.onnx) only");
  return load_module_file(path);
}

}  // namespace reprokit
