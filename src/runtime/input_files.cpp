// Which file of an --inputs directory holds which input (see input_files.h).
#include "reprokit/runtime/input_files.h"

#include <fmt/core.h>

#include <filesystem>

#include "reprokit/support/errors.h"
#include "reprokit/support/escape_controls.h"

namespace reprokit {

namespace {

namespace fs = std::filesystem;

// Whether `stem` + ".npy" is one file name (an ONNX name may hold '/' or NUL, or be "..").
bool plain_stem(const std::string& stem) {
  return !stem.empty() && stem != "." && stem != ".." && stem.find('/') == std::string::npos && stem.find('\0') == std::string::npos;
}

std::optional<std::string> existing_file(const std::string& dir, const std::string& stem) {
  if (!plain_stem(stem)) return std::nullopt;
  const fs::path f = fs::path(dir) / (stem + ".npy");
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(f, ec))) return std::nullopt;
  return f.string();
}

// `file` is DIR/<name>.npy: ONNX input `name`'s file, and the only file input %name (ONNX input
// `source`) could have.
[[noreturn]] void refuse_shared_file(const std::string& file, const std::string& name, const std::string& source) {
  const std::string own = plain_stem(source) ? fmt::format("give '{}' its own file, {}.npy", escape_controls(source), escape_controls(source))
                                             : std::string("rename one of the two inputs in the model");
  throw UserError(
      fmt::format("--inputs: {} could hold ONNX input '{}' (its name) or ONNX input '{}' (which reprokit calls %{}); "
                  "reprokit does not guess: {}",
                  escape_controls(file), escape_controls(name), escape_controls(source), name, own));
}

}  // namespace

std::optional<std::string> input_file(const std::string& dir, const std::string& name, const std::string& source,
                                      const std::set<std::string>& onnx_names) {
  if (source.empty() || source == name) return existing_file(dir, name);
  if (auto f = existing_file(dir, source)) return f;
  auto f = existing_file(dir, name);
  if (f && onnx_names.count(name)) refuse_shared_file(*f, name, source);
  return f;
}

}  // namespace reprokit
