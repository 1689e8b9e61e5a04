// ONNX's checker and shape inference, which the importer runs on every model before reading it.
// They are ONNX's code, not hardened against hostile models (an out-of-range attribute crashes
// some inference functions, a huge shape input makes them build huge shapes), so they run in a
// reprokit child of their own, `reprokit onnx-check` (a hidden command): a fresh reprokit started
// from argv, under a time and a memory limit, whose crash, hang or exhausted memory is a refusal
// of the model, never the importer's end.
#pragma once
#include <string>
#include <string_view>

namespace reprokit {

// What `reprokit onnx-check` writes to stdout, and why it refuses the model (empty: it does not).
struct OnnxCheckAnswer {
  // "OK" and the inferred value types (a serialized GraphProto of value_info and outputs), "EC"
  // and the checker's message, or "EI" and shape inference's.
  std::string out;
  std::string refusal;  // "not a valid ONNX model: ..." / "ONNX shape inference failed: ..."
};

// The child's side: `model` is a serialized ModelProto (the importer's, with its inputs' shapes
// bound). Caps this process's address space at what it maps once the model is read plus 4 GiB,
// then runs the checker and shape inference. UserError when `model` does not parse.
OnnxCheckAnswer onnx_check_in_this_process(std::string_view model);

}  // namespace reprokit
