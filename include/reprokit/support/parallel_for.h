// Items [0, n) side by side on the machine's cores with plain threads, each taking the next item
// as it finishes one (dynamic scheduling); the first exception stops the others after their
// current item and is rethrown. reprokit's own code uses this rather than OpenMP (the reference
// conv2d, the cpp toolchain's unit compiles), so its binaries do not start libgomp before main:
// the generated code's loops and GEMMs share libgomp's one pool (cpp_prelude.h), configured as
// the user's OMP_* variables say when the first generated library loads it.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace reprokit {

template <class F> void parallel_for(int64_t n, bool worth_it, F f) {
  const int64_t width = worth_it ? std::min<int64_t>(n, std::max(1u, std::thread::hardware_concurrency())) : 1;
  if (width <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    try {
      for (int64_t i; (i = next.fetch_add(1)) < n;) f(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = n;  // the others stop after their current item
    }
  };
  std::vector<std::thread> threads;
  for (int64_t t = 1; t < width; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace reprokit
