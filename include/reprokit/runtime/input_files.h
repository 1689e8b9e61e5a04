// The files of `--inputs DIR` and the input each one holds (`reprokit run`, `reprokit reduce`).
//
// A model's input %x is DIR/x.npy. An input imported from ONNX has two names: its ONNX name, which
// an ONNX runtime knows it by and a user names its file after, and reprokit's name for it, made a
// valid name and unique (ONNX inputs "1x" and "v_1x" become %v_1x and %v_1x_1). Its file is
// DIR/<ONNX name>.npy, else DIR/<reprokit name>.npy. A file named after an ONNX input is that
// input's alone: v_1x.npy holds ONNX input "v_1x", never %v_1x. An input without a file of its
// ONNX name whose reprokit name is another input's ONNX name could be meant by that file too:
// reprokit refuses rather than guess.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>

namespace reprokit {

// What `--inputs DIR` tells the model loader, and what it learns back (onnx_import.h's load_model).
struct GivenInputs {
  std::string dir;                             // DIR: files named by input
  std::map<std::string, std::string> sources;  // out: per graph input, the ONNX value it stands for
  std::set<std::string> onnx_names;            // out: those ONNX names, and those of the inputs specialised away
  std::set<std::string> specialised;           // out: files whose values became constants of the graph
};

// The file in `dir` that holds the values of the input reprokit calls `name`, imported from the
// ONNX value `source` ("" when not imported), or nullopt when there is none. `onnx_names`: the
// ONNX names whose files are their own (GivenInputs::onnx_names). UserError naming both inputs
// and the file when only DIR/<name>.npy is there and `name` is another input's ONNX name.
std::optional<std::string> input_file(const std::string& dir, const std::string& name, const std::string& source,
                                      const std::set<std::string>& onnx_names);

}  // namespace reprokit
