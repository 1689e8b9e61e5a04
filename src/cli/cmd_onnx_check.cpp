// The hidden `reprokit onnx-check` the ONNX importer runs ONNX's checker in (onnx_checker.h): the
// model on stdin, the answer on stdout; a model the checker refuses exits 2 with the reason.
#include <cstdio>
#include <string>

#include "command.h"
#include "reprokit/onnx/onnx_checker.h"
#include "reprokit/support/errors.h"

namespace reprokit::cli {

static int run_onnx_check(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  if (!args.positional().empty()) throw UsageError("expected no arguments: the model comes on stdin");
  std::string model;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, stdin)) > 0;) model.append(buf, n);
  OnnxCheckAnswer a = onnx_check_in_this_process(model);
  if (std::fwrite(a.out.data(), 1, a.out.size(), stdout) != a.out.size() || std::fflush(stdout) != 0)
    throw UserError("cannot write the answer to stdout");
  if (!a.refusal.empty()) throw UserError(a.refusal);
  return 0;
}

static CommandRegistration reg({"onnx-check", "reprokit onnx-check < MODEL.onnx",
                                "ONNX's checker and shape inference on the model on stdin (internal)", "", run_onnx_check, true});

}  // namespace reprokit::cli
