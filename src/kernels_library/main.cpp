// reprokit_kernels DIR: builds the kernels library (cpp_toolchain.h) into DIR, as the build does
// into build/kernels, so that a fresh compile cache links the prelude's kernels instead of
// compiling them. Units already there intact are kept; what no key reaches any more is removed.
// What the compiler printed for the units it compiled goes to DIR/compiler_output.txt as well
// (empty when none warned: a test checks that every kernels unit compiles cleanly).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "../codegen/cpp_toolchain.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/support/errors.h"

int main(int argc, char** argv) {
  const char* usage =
      "usage: reprokit_kernels DIR\ncompiles the cpp backend's kernels units and precompiled prelude into DIR (see REPRO_KERNELS_LIBRARY)\n";
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    fmt::print("{}", usage);
    return 0;
  }
  if (argc != 2 || argv[1][0] == '-' || argv[1][0] == '\0') {  // an option is not a directory to create
    fmt::print(stderr, "{}", usage);
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const int compiled = reprokit::build_kernels_library(argv[1]);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("kernels library {}: {} of {} units compiled ({:.1f} s)\n", argv[1], compiled, reprokit::cpp_kernels_units().size(), s);
    const std::string warnings = reprokit::last_compiler_output();
    if (compiled > 0) std::ofstream(std::string(argv[1]) + "/compiler_output.txt", std::ios::trunc) << warnings;
    if (!warnings.empty()) fmt::print("{}", warnings);
    return 0;
  } catch (const reprokit::UserError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
