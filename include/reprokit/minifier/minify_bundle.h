// `reprokit minify`: minifies a saved failure with subprocess oracles, keeps the best repro on
// disk after every success, verifies the final repro in a fresh process and writes report.json.
#pragma once
#include <string>

#include "reprokit/minifier/session.h"

namespace reprokit {

struct MinifyCommandOptions {
  std::string bundle_dir;
  std::string reprokit_exe;
  SessionOptions
      session;  // --jobs, --timeout, --only/--skip, --flaky-checks (default 8), --worker-prefix, --work-dir (default BUNDLE/minify_work), --resume
  long memory_limit_mb = 0;
  bool any_accuracy = false;
};

// Returns the exit status: 0 minified and verified; 1 the original does not fail, or the final
// repro does not reproduce. Throws UserError for a bad bundle.
int minify_bundle(const MinifyCommandOptions& options);

}  // namespace reprokit
