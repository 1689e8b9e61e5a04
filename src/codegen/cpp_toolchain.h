// The cpp backend's toolchain: compiles generated source to a shared object through a persistent
// cache keyed by a hash of the source and flags, and loads it.
#pragma once
#include <string>

namespace reprokit {

struct CompiledLibrary {
  void* handle = nullptr;
  void* entry = nullptr;  // rk_graph_run
  std::string path;
  bool cache_hit = false;
};

// Throws CompileFailure{"compile_error"} with the compiler's output when it fails.
CompiledLibrary build_shared_object(const std::string& source, const std::string& cache_dir);
// How many times this process invoked the system compiler (the cache test counts these).
int compiler_invocations();
std::string default_cache_dir(const std::string& configured);

}  // namespace reprokit
