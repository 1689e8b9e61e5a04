// The op types an ONNX model holds, in node order ("Pad", "AveragePool"; a domain other than the
// default one as "com.microsoft.QuickGelu"): a repro named in the compiler's own ops, as triage
// groups foreign compilers' findings.
#pragma once
#include <string>
#include <vector>

#include "reprokit/ir/graph.h"

namespace reprokit {

// Of the ONNX model file at `path`; UserError naming it when it cannot be read or does not parse.
std::vector<std::string> onnx_op_types_in_file(const std::string& path);
// Of the model export_onnx writes for g.
std::vector<std::string> onnx_op_types(const Graph& g);

}  // namespace reprokit
