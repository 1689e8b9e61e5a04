// The memory budget (memory_budget.h): an atomic count of tensor storage against a limit.
#include "reprokit/runtime/memory_budget.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>

#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

std::atomic<size_t> g_in_use{0};

constexpr double kMiB = 1024.0 * 1024.0;

size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : size_t{8} << 30;
}

// Requests this small are judged by the count alone: reading the resident size costs a system call.
constexpr size_t kResidentCheckBytes = size_t{1} << 20;

// Resident bytes of this process now (0 when /proc cannot say).
size_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long total = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &total, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// What the process held before any value: the program, its libraries, the runtime's own heap.
size_t resident_at_start() {
  static const size_t at_start = resident_bytes();
  return at_start;
}

// What is held now: the count, or the growth of the resident size when that is larger (a buffer
// the count does not see).
size_t held_now(size_t counted, size_t request) {
  if (request < kResidentCheckBytes) return counted;
  const size_t resident = resident_bytes(), base = resident_at_start();
  return std::max(counted, resident > base ? resident - base : 0);
}

[[noreturn]] void refuse(size_t bytes, size_t held, size_t budget, const char* what) {
  throw UserError(
      fmt::format("{} {:.0f} MB more, which would take what reprokit holds at once to {:.0f} MB, past its memory budget of {:.0f} MB "
                  "(REPRO_MEMORY_BUDGET, in MB; the default is 3/4 of this machine's {:.0f} MB): the model is too large to check here",
                  what, static_cast<double>(bytes) / kMiB, static_cast<double>(held + bytes) / kMiB, static_cast<double>(budget) / kMiB,
                  static_cast<double>(physical_memory_bytes()) / kMiB));
}

size_t read_budget() {
  const char* v = std::getenv("REPRO_MEMORY_BUDGET");
  if (!v || !*v) return physical_memory_bytes() / 4 * 3;
  char* end = nullptr;
  const double mb = std::strtod(v, &end);
  if (end == v || *end != '\0' || !std::isfinite(mb) || mb <= 0 || mb > 1e12)
    throw UserError(fmt::format("REPRO_MEMORY_BUDGET={} is not a positive number of MB", std::string(v).substr(0, 64)));
  return static_cast<size_t>(mb * kMiB);
}

}  // namespace

size_t memory_budget_bytes() {
  static const size_t budget = read_budget();
  return budget;
}

void reserve_tensor_bytes(size_t bytes) {
  const size_t budget = memory_budget_bytes();
  resident_at_start();
  const size_t before = g_in_use.fetch_add(bytes);
  const size_t held = held_now(before, bytes);
  if (held + bytes > budget || held + bytes < held) {
    g_in_use.fetch_sub(bytes);
    refuse(bytes, held, budget, "the model's values need");
  }
}

void check_room_for(size_t bytes, const char* what) {
  const size_t budget = memory_budget_bytes();
  const size_t held = held_now(g_in_use.load(), bytes);
  if (held + bytes > budget || held + bytes < held) refuse(bytes, held, budget, what);
}

void release_tensor_bytes(size_t bytes) noexcept { g_in_use.fetch_sub(bytes); }

}  // namespace reprokit
