// The op types an ONNX model holds, in node order ("Pad", "AveragePool"; a domain other than the
// default one as "com.microsoft.QuickGelu"): a repro named in the compiler's own ops, as triage
// groups foreign compilers' findings.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "reprokit/ir/graph.h"

namespace reprokit {

// Of a serialized ModelProto; UserError naming `where` when it does not parse.
std::vector<std::string> onnx_op_types(std::string_view model_bytes, const std::string& where);
// Of the model export_onnx writes for g.
std::vector<std::string> onnx_op_types(const Graph& g);

}  // namespace reprokit
