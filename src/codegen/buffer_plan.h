// Where each intermediate buffer of a compiled graph lives in its workspace. Kernels run in order;
// a buffer is live from the kernel that writes it to the last kernel that reads it (through any
// view of it). Buffers whose lives are disjoint share bytes, so the workspace is about the
// largest set of values live at once rather than the sum of all of them: it stays in cache, and it
// is allocated once per compiled graph, not per run.
#pragma once
#include <cstdint>
#include <vector>

namespace reprokit::codegen_detail {

struct BufferLife {
  int64_t bytes = 0;
  int first = 0;  // the position of the kernel that writes it
  int last = 0;   // the position of the last kernel that reads it (>= first)
};

struct BufferPlan {
  std::vector<int64_t> offsets;  // per life, 64-byte aligned
  int64_t bytes = 0;             // the workspace they need
};

// Offsets such that two buffers share no byte when their lives overlap, including a buffer
// written by the kernel that last reads another (a kernel reads its operands while it writes).
// Deterministic; about n log n in the number of buffers.
BufferPlan plan_buffers(const std::vector<BufferLife>& lives);

}  // namespace reprokit::codegen_detail
