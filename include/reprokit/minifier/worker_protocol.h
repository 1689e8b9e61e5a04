// The line protocol between the minifier and its `reprokit minify-worker` processes: one query
// (a candidate as JSON) per line on the worker's stdin; the worker answers "BEGIN" when it has
// read it and starts running it, then the verdict line (child_run.h). Time before BEGIN is the
// launcher's (a Slurm job waiting for a node, a worker loading its bundle) and never counts
// against the candidate; a worker that ends before BEGIN never ran it. End of input ends the worker.
#pragma once
#include <string_view>

namespace reprokit {

inline constexpr std::string_view kBeginLine = "BEGIN";

}  // namespace reprokit
