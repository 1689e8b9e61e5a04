// NumPy .npy read/write (format 1.0, little-endian, C order; bf16 as uint16 bit patterns).
#pragma once
#include <string>

#include "reprokit/runtime/tensor.h"

namespace reprokit {

// Writes a contiguous copy of t. Throws UserError naming the path on I/O failure.
void write_npy(const std::string& path, const Tensor& t);
// Reads a .npy file. `expect` (optional) gives the dtype to read uint16 data as (bf16 vs f16 is not
// distinguishable from the file alone: '<u2' is read as bf16, '<f2' as f16). Throws UserError naming
// the path and what is wrong (missing, bad magic, unsupported dtype, Fortran order, truncated).
Tensor read_npy(const std::string& path);

}  // namespace reprokit
