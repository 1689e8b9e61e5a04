// The oracle worker of `reprokit minify`: runs candidates of one bundle in this process, as the
// subprocess oracle asks (worker_protocol.h).
#pragma once
#include <string>

namespace reprokit {

// The worker loop of `reprokit minify-worker BUNDLE`: one JSON candidate per stdin line, one
// "VERDICT {failure json}" line per answer. With query_file, answers that one query and exits.
int run_minify_worker(const std::string& bundle_dir, const std::string& query_file);

}  // namespace reprokit
