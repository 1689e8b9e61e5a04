// The workspace planner (see buffer_plan.h): a sweep over kernel positions with a free list.
// At each buffer's first position, buffers last read strictly before it are released (merged
// with free neighbours), and the buffer takes the smallest free block that fits, or extends the
// workspace's end. Greedy best fit is what ONNX Runtime's and TFLite's arena planners also do
// in their simple modes; it is not optimal, but it keeps the largest live set close to the sum
// of what is live at the peak.
#include "buffer_plan.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <queue>
#include <set>

namespace reprokit::codegen_detail {

namespace {

constexpr int64_t kAlign = 64;

int64_t aligned(int64_t bytes) { return (std::max<int64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign; }

}  // namespace

BufferPlan plan_buffers(const std::vector<BufferLife>& lives) {
  BufferPlan plan;
  plan.offsets.assign(lives.size(), 0);
  std::vector<size_t> order(lives.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lives[a].first < lives[b].first; });
  std::map<int64_t, int64_t> free_blocks;         // offset -> size, disjoint, never adjacent
  std::set<std::pair<int64_t, int64_t>> by_size;  // the same blocks as (size, offset): best fit
  auto add_block = [&](int64_t off, int64_t size) {
    free_blocks[off] = size;
    by_size.emplace(size, off);
  };
  auto drop_block = [&](std::map<int64_t, int64_t>::iterator it) {
    by_size.erase({it->second, it->first});
    return free_blocks.erase(it);
  };
  using Pending = std::pair<int, size_t>;  // (last position, life) of a placed buffer
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> live;
  auto release = [&](int64_t off, int64_t size) {
    auto next = free_blocks.lower_bound(off);
    if (next != free_blocks.end() && off + size == next->first) {  // merge with the block after
      size += next->second;
      next = drop_block(next);
    }
    if (next != free_blocks.begin()) {  // and with the block before
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        off = prev->first;
        size += prev->second;
        drop_block(prev);
      }
    }
    add_block(off, size);
  };
  for (size_t i : order) {
    const int64_t need = aligned(lives[i].bytes);
    while (!live.empty() && live.top().first < lives[i].first) {
      size_t done = live.top().second;
      live.pop();
      release(plan.offsets[done], aligned(lives[done].bytes));
    }
    auto best = by_size.lower_bound({need, INT64_MIN});
    if (best != by_size.end()) {
      const auto [size, off] = *best;
      plan.offsets[i] = off;
      drop_block(free_blocks.find(off));
      if (size > need) add_block(off + need, size - need);
    } else if (!free_blocks.empty() && free_blocks.rbegin()->first + free_blocks.rbegin()->second == plan.bytes) {
      // The block at the end is too small: the buffer starts there and the workspace grows.
      plan.offsets[i] = free_blocks.rbegin()->first;
      drop_block(std::prev(free_blocks.end()));
      plan.bytes = plan.offsets[i] + need;
    } else {
      plan.offsets[i] = plan.bytes;
      plan.bytes += need;
    }
    live.emplace(std::max(lives[i].last, lives[i].first), i);
  }
  return plan;
}

}  // namespace reprokit::codegen_detail
