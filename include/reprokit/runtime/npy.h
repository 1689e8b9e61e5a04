// NumPy .npy read/write (format 1.0 written; 1.0-3.0 read; little-endian, C order; bf16 as uint16
// bit patterns). Files are untrusted input: the header is checked (dtype, order, shape, size
// limit) before anything is allocated.
#pragma once
#include <string>
#include <string_view>

#include "reprokit/runtime/tensor.h"

namespace reprokit {

// The .npy bytes of a contiguous copy of t.
std::string encode_npy(const Tensor& t);
// Parses .npy bytes; `where` names the file in messages. UserError naming it and what is wrong
// (bad magic, unsupported dtype, Fortran order, malformed or too large shape, truncated data).
// '<u2' is read as bf16 (NumPy has no bfloat16), '<f2' as f16; read_npy_as decides it is u16.
Tensor parse_npy(std::string_view bytes, const std::string& where);

// A regular file at `path` (see files.h), parsed.
Tensor read_npy(const std::string& path);
// The same, for a value declared `declared`: '<u2' holds the bits of bf16 or u16, and a file of
// 0/1 bytes ('|u1') is accepted for bool; the result then has the declared dtype. Any other
// mismatch is left to the caller (the tensor keeps the file's dtype).
Tensor read_npy_as(const std::string& path, DType declared);
// Writes atomically (a temporary file in the same directory, renamed). UserError naming the path.
void write_npy(const std::string& path, const Tensor& t);

}  // namespace reprokit
