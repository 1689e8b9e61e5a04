// Linked into every test and benchmark program: they are not the reprokit binary, so the children
// that must be reprokit (ONNX's checker, onnx_checker.h) find the one built beside them through
// REPROKIT_EXE, unless the environment names another.
#include <cstdlib>

namespace {

const bool reprokit_exe_set = [] { return ::setenv("REPROKIT_EXE", REPROKIT_EXE, 0) == 0; }();

}  // namespace
