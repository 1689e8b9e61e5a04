// The op types of an ONNX model (see onnx_op_types.h).
#include "reprokit/onnx/onnx_op_types.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "proto_util.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace {

std::vector<std::string> op_types(std::string_view model_bytes, const std::string& where) {
  onnx::ModelProto model;
  if (model_bytes.size() > onnx_detail::kMaxModelBytes || !model.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size())))
    throw UserError(fmt::format("{}: not an ONNX model (the protobuf does not parse)", where));
  std::vector<std::string> types;
  for (const onnx::NodeProto& n : model.graph().node())
    types.push_back(n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "." + n.op_type());
  return types;
}

}  // namespace

std::vector<std::string> onnx_op_types_in_file(const std::string& path) { return op_types(read_file(path, onnx_detail::kMaxModelBytes), path); }

std::vector<std::string> onnx_op_types(const Graph& g) { return op_types(export_onnx(g), "graph " + g.name); }

}  // namespace reprokit
