// NumPy .npy files: the format tensors use to cross process boundaries (DESIGN.md).
#include "reprokit/runtime/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "reprokit/ir/errors.h"

namespace reprokit {

namespace {

const char* descr_of(DType t) {
  switch (t) {
    case DType::f16: return "<f2";
    case DType::bf16: return "<u2";  // bit pattern: NumPy has no bfloat16
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::boolean: return "|b1";
  }
  return "?";
}

std::optional<DType> dtype_of(const std::string& d) {
  for (DType t : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean})
    if (d == descr_of(t)) return t;
  if (d == "|u1" || d == "<b1") return DType::boolean;
  return std::nullopt;
}

}  // namespace

void write_npy(const std::string& path, const Tensor& t) {
  Tensor c = t.contiguous();
  std::string shape;
  for (size_t i = 0; i < c.shape().size(); ++i) shape += fmt::format("{}, ", c.shape()[i]);
  if (c.shape().size() > 1) shape.resize(shape.size() - 2);
  else if (c.shape().size() == 1) shape.resize(shape.size() - 1);
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr_of(c.dtype()), shape);
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError(fmt::format("cannot write '{}'", path));
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(c.data()), static_cast<std::streamsize>(c.numel() * static_cast<int64_t>(dtype_size(c.dtype()))));
  if (!out) throw UserError(fmt::format("cannot write '{}' (disk full?)", path));
}

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("cannot read '{}': no such file or not readable", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  auto bad = [&](const std::string& why) { return UserError(fmt::format("'{}' is not a valid .npy file: {}", path, why)); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw bad("bad magic (expected \\x93NUMPY)");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw bad("truncated header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    throw bad(fmt::format("unsupported format version {}", major));
  }
  if (bytes.size() < hstart + hlen) throw bad("truncated header");
  std::string header = bytes.substr(hstart, hlen);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']*)'"))) throw bad("header has no 'descr'");
  std::string descr = m[1];
  auto dt = dtype_of(descr);
  if (!dt) throw bad(fmt::format("unsupported dtype '{}' (reprokit reads <f2 <u2(bf16) <f4 <f8 <i4 <i8 |b1)", descr));
  if (std::regex_search(header, m, std::regex("'fortran_order':\\s*True"))) throw bad("Fortran order is not supported; save with C order");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) throw bad("header has no 'shape'");
  Shape shape;
  std::string dims = m[1];
  std::regex num("\\d+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) shape.push_back(std::stoll(it->str()));
  Tensor t = Tensor::zeros(*dt, shape);
  size_t nbytes = static_cast<size_t>(t.numel()) * dtype_size(*dt);
  if (bytes.size() - hstart - hlen < nbytes)
    throw bad(fmt::format("truncated data: {} bytes for shape [{}] of {}, expected {}", bytes.size() - hstart - hlen,
                          fmt::join(shape, ", "), dtype_name(*dt), nbytes));
  std::memcpy(t.data(), bytes.data() + hstart + hlen, nbytes);
  return t;
}

}  // namespace reprokit
