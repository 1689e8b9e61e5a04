// Where the reprokit binary is, for the children that must be reprokit itself (minify workers,
// repro reruns, ONNX's checker). A program that is not reprokit (a test, a benchmark, a program
// on the library) names it with REPROKIT_EXE.
#pragma once
#include <string>

namespace reprokit {

// The reprokit binary children run: $REPROKIT_EXE, else this process when it is reprokit (its
// file named reprokit, or any name once reprokit's main has said so), else "reprokit" (looked up
// in PATH).
std::string self_executable();

// Called by reprokit's own main: this process is reprokit, whatever its file is called (an
// installed `reprokit-1.4`, a copy kept beside a rebuild).
void this_process_is_reprokit();

}  // namespace reprokit
