// The memory budget: how many bytes of tensor storage one reprokit process may hold at once. A
// graph whose values would not fit is refused with a clear error (UserError: exit 2) instead of
// meeting the OOM killer: a 168-byte model can ask for a 2^31-element tensor, and the harness holds
// several copies of each value (inputs, eager, the float64 reference, the compiled outputs).
//
// REPRO_MEMORY_BUDGET=MB sets it; the default is three quarters of the machine's physical memory.
// It counts the storage of every Tensor (runtime/tensor.h) and the working copies the reference
// interpreter makes for each node (its operands and result as doubles). What the count cannot see
// (a value's copy as doubles for a comparison, a file read whole, a compiled kernel's buffers) is
// seen through the process's resident memory: a large request is judged against the larger of
// the count and what the process has grown by since it started.
#pragma once
#include <cstddef>

namespace reprokit {

// The budget in bytes (read from REPRO_MEMORY_BUDGET once; UserError naming the variable for a
// value that is not a positive number of MB).
size_t memory_budget_bytes();

// Reserves `bytes` for a new tensor storage; UserError when the budget would be exceeded (the
// message gives the request, what is held, the budget and how to raise it).
void reserve_tensor_bytes(size_t bytes);
void release_tensor_bytes(size_t bytes) noexcept;

// UserError (as reserve_tensor_bytes) unless `bytes` more fit beside what is held now: for a
// buffer that is not a tensor (a copy as doubles, a file's bytes), asked before it is made.
// `what` says what it is, with its verb ("a value's copy as doubles needs"), for the message.
void check_room_for(size_t bytes, const char* what);

// Bytes reserved for as long as it lives (a kernel's working copies).
class ScopedBytes {
 public:
  explicit ScopedBytes(size_t bytes) : bytes_(bytes) { reserve_tensor_bytes(bytes); }
  ~ScopedBytes() { release_tensor_bytes(bytes_); }
  ScopedBytes(const ScopedBytes&) = delete;
  ScopedBytes& operator=(const ScopedBytes&) = delete;

 private:
  size_t bytes_;
};

}  // namespace reprokit
