// The memory budget (memory_budget.h): an atomic count of tensor storage against a limit.
#include "reprokit/runtime/memory_budget.h"

#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>

#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

std::atomic<size_t> g_in_use{0};

constexpr double kMiB = 1024.0 * 1024.0;

size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : size_t{8} << 30;
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

size_t tensor_bytes_in_use() { return g_in_use.load(); }

void reserve_tensor_bytes(size_t bytes) {
  const size_t budget = memory_budget_bytes();
  const size_t before = g_in_use.fetch_add(bytes);
  if (before + bytes > budget || before + bytes < before) {
    g_in_use.fetch_sub(bytes);
    throw UserError(fmt::format(
        "the model's values need {:.0f} MB more, which would take what reprokit holds at once to {:.0f} MB, past its memory budget of {:.0f} MB "
        "(REPRO_MEMORY_BUDGET, in MB; the default is 3/4 of this machine's {:.0f} MB): the model is too large to check here",
        static_cast<double>(bytes) / kMiB, static_cast<double>(before + bytes) / kMiB, static_cast<double>(budget) / kMiB,
        static_cast<double>(physical_memory_bytes()) / kMiB));
  }
}

void release_tensor_bytes(size_t bytes) noexcept { g_in_use.fetch_sub(bytes); }

}  // namespace reprokit
