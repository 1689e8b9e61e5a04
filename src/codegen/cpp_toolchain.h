// The cpp backend's toolchain: compiles generated source to a shared object through a persistent
// cache, and loads it. Each unit of the source compiles to an object kept by the hash of its text
// and the flags (units/ in the cache), shared by every graph that holds the same kernels; the
// library links them with the entry point and is kept by the hash of the whole.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "cpp_codegen.h"
#include "reprokit/codegen/compiler.h"

namespace reprokit {

struct CompiledLibrary {
  void* handle = nullptr;
  void* entry = nullptr;           // rk_graph_run
  int64_t workspace_bytes = 0;     // rk_graph_workspace_bytes(): the workspace rk_graph_run needs
  int64_t kept_bytes = 0;          // rk_graph_kept_bytes(): its last bytes, zeroed before the first run
  void* profile = nullptr;         // rk_graph_profile
  int64_t kernels = 0;             // rk_graph_kernel_count(): the seconds rk_graph_profile adds to
  int (*threads)() = nullptr;      // rk_graph_threads: the threads a run of the calling thread uses
  void (*one_thread)() = nullptr;  // rk_graph_one_thread: the calling thread's runs use it alone
  std::string path;
  bool cache_hit = false;
};

// Throws CompileFailure{"compile_error"} with the compiler's output when it fails.
CompiledLibrary build_shared_object(const CppSource& source, const std::string& cache_dir);
// How many times this process invoked the system compiler (the cache test counts these).
// Makes the cache directory, its units/ and its tmp/ (where the compiler writes its temporary
// files) with mode 0700 where missing, and refuses (UserError) one that is a symlink, not this
// user's, or writable by group or others: its code gets loaded.
void open_cache_dir(const std::string& cache_dir);

// The kernels library: every kernels unit (cpp_kernels_units) compiled when reprokit was built,
// laid out as a compile cache (<dir>/units/u_<key>.o with digests) under the same keys, so that a
// fresh cache links the prelude's kernels instead of compiling them (they are most of a model's
// cold compile). A key holds the compiler, its version, the flags and the CPU, so a library built
// by another compiler or on another machine is never used: its units are compiled as before.
// Where it is: REPRO_KERNELS_LIBRARY (a directory, or "off" for none), else the build's own
// (build/kernels). Empty when there is none or it cannot be trusted: it must be a directory (not a
// link) of this user's or root's that no one else can write, as must its units/; one named in
// REPRO_KERNELS_LIBRARY that is not is refused (UserError), the build's own is just not used.
std::filesystem::path kernels_library_dir();
// Compiles into `dir` every kernels unit it does not hold intact and removes what no key reaches
// any more; returns how many units it compiled. CompileFailure when the compiler rejects one.
int build_kernels_library(const std::string& dir);

}  // namespace reprokit
