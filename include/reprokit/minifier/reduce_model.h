// `reprokit reduce`: the minifier for anyone's compiler. A model (.rk or .onnx) is reduced by the
// same engine and strategies as `reprokit minify`, but a user's check command decides which
// candidates are interesting (see check_oracle.h). The best repro so far is on disk after every
// success; the final one is checked again in a fresh run; report.json says how it went.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "reprokit/ir/tensor_type.h"
#include "reprokit/minifier/session.h"

namespace reprokit {

struct ReduceCommandOptions {
  std::string model;                    // .rk or .onnx
  std::map<std::string, Shape> shapes;  // --shape for an ONNX model's dynamic dimensions
  std::string inputs_dir;               // <input>.npy values (else an ONNX model's weights, else random)
  uint64_t seed = 0;
  std::string out_dir;             // empty: <model stem>.reduced
  std::string format;              // "rk" or "onnx"; empty: the model's
  std::vector<std::string> check;  // argv words
  // --jobs, --timeout (0: from the original's slowest check), --only/--skip, --flaky-checks
  // (default 3), --worker-prefix, --work-dir (candidates; default OUT/reduce_work), --resume
  SessionOptions session;
  std::string fail_regex;
  bool hang_is_interesting = false;
  bool keep_candidates = false;
  bool allow_drift = false;  // any failure of the check counts, not only the original's
};

// Exit status: 0 reduced (and verified); 1 the original is not interesting or the final repro is
// not. UserError for bad input (a model, inputs, a check that cannot start, an OUT in the way).
int reduce_model(const ReduceCommandOptions& options);

}  // namespace reprokit
