// ONNX's checker and shape inference in a reprokit child (see onnx_checker.h): the importer's call
// (check_and_infer_in_child) and the child's side (onnx_check_in_this_process).
#include "reprokit/onnx/onnx_checker.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <new>
#include <stdexcept>

#include "import_context.h"
#include "proto_util.h"
#include "reprokit/ir/names.h"
#include "reprokit/process/child_end.h"
#include "reprokit/process/self_executable.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

constexpr double kCheckTimeoutS = 60;
// The child's address space beyond what it maps once it holds the model: room for ONNX's copy of
// the model that shape inference works on, and no more than a malformed one should need.
constexpr long long kExtraMemoryBytes = 4LL << 30;

// Caps this process's address space (RLIMIT_AS) at what it maps now plus `extra` bytes. Relative
// to now, so what a sanitizer reserved at start (its shadow memory) stays mapped.
void cap_address_space(long long extra) {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  if (pages <= 0) return;
  const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + static_cast<rlim_t>(extra);
  rlimit rl{limit, limit};
  ::setrlimit(RLIMIT_AS, &rl);
}

}  // namespace

OnnxCheckAnswer onnx_check_in_this_process(std::string_view bytes) {
  onnx::ModelProto model;
  if (bytes.size() > onnx_detail::kMaxModelBytes || !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw UserError("stdin: not an ONNX model (the protobuf does not parse)");
  cap_address_space(kExtraMemoryBytes);
  char stage = 'C';
  std::string message;
  try {
    onnx::checker::check_model(model);
    stage = 'I';
    onnx::shape_inference::InferShapes(model);
    onnx::GraphProto types;
    for (const auto& vi : model.graph().value_info()) *types.add_value_info() = vi;
    for (const auto& vi : model.graph().output()) *types.add_output() = vi;
    return {"OK" + types.SerializeAsString(), ""};
  } catch (const std::bad_alloc&) {
    stage = 'I';
    message = "out of memory";
  } catch (const std::exception& e) { message = e.what(); }
  const std::string shown = utf8_safe(message, 2000);
  return {std::string("E") + stage + message, stage == 'C' ? "not a valid ONNX model: " + shown : "ONNX shape inference failed: " + shown};
}

namespace onnx_detail {

std::unordered_map<std::string, onnx::TypeProto> check_and_infer_in_child(const onnx::ModelProto& model, const std::string& file) {
  ProcessSpec ps;
  ps.argv = {self_executable(), "onnx-check"};
  ps.stdin_text = model.SerializeAsString();
  ps.timeout_s = kCheckTimeoutS;
  ps.max_output_bytes = kMaxModelBytes;  // the inferred types, all of them
  ProcessResult r;
  try {
    r = run_process(ps);
  } catch (const std::runtime_error& e) {
    throw UserError(fmt::format("{}: ONNX's checker runs in a reprokit child, which cannot be started: {} (set REPROKIT_EXE to the reprokit binary)",
                                file, e.what()));
  }
  const ChildEnd end = child_end(r);
  if (end.how == ChildEnd::How::timed_out)
    throw UserError(fmt::format("{}: ONNX's checker and shape inference did not finish in {:g} s on this model", file, kCheckTimeoutS));
  if (end.how == ChildEnd::How::signalled)
    throw UserError(fmt::format("{}: ONNX's checker or shape inference crashed on this model (signal {}): the model is malformed", file, end.signal));
  const std::string_view tag = std::string_view(r.out).substr(0, 2);
  if (end.refused() && tag == "EC") throw UserError(fmt::format("{}: not a valid ONNX model: {}", file, utf8_safe(r.out.substr(2), 2000)));
  if (end.refused() && tag == "EI") throw UserError(fmt::format("{}: ONNX shape inference failed: {}", file, utf8_safe(r.out.substr(2), 2000)));
  if (!end.exited_with(0) || tag != "OK")
    throw UserError(fmt::format("{}: ONNX's checker and shape inference ended without a result (out of memory?)", file));
  onnx::GraphProto types;
  if (!types.ParseFromArray(r.out.data() + 2, static_cast<int>(r.out.size() - 2))) throw InternalError("malformed result of ONNX shape inference");
  std::unordered_map<std::string, onnx::TypeProto> inferred;
  for (const auto& vi : types.value_info()) inferred[vi.name()] = vi.type();
  for (const auto& vi : types.output()) inferred.emplace(vi.name(), vi.type());
  return inferred;
}

}  // namespace onnx_detail

}  // namespace reprokit
