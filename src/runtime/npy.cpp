// NumPy .npy files: the format tensors use to cross process boundaries (DESIGN.md).
#include "reprokit/runtime/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <filesystem>

#include "reprokit/support/errors.h"
#include "reprokit/support/escape_controls.h"
#include "reprokit/ir/shape_check.h"
#include "reprokit/support/files.h"
#include "reprokit/runtime/memory_budget.h"

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
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::i16: return "<i2";
    case DType::u16: return "<u2";  // as bf16: the declared type tells them apart (read_npy_as)
  }
  return "?";
}

std::optional<DType> dtype_of(std::string_view d) {
  for (DType t : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean, DType::i8, DType::u8, DType::i16})
    if (d == descr_of(t)) return t;
  if (d == "<b1") return DType::boolean;
  return std::nullopt;
}

// The value of 'key' in the header dict: the text after "'key':" up to the matching end.
std::string_view header_value(std::string_view header, std::string_view key, const std::string& where) {
  std::string pattern = fmt::format("'{}':", key);
  size_t p = header.find(pattern);
  if (p == std::string_view::npos) throw UserError(fmt::format("'{}' is not a valid .npy file: the header has no '{}'", escape_controls(where), key));
  // A key given twice is malformed: readers disagree on which value counts (NumPy takes the last).
  if (header.find(pattern, p + pattern.size()) != std::string_view::npos)
    throw UserError(fmt::format("'{}' is not a valid .npy file: the header gives '{}' twice", escape_controls(where), key));
  std::string_view rest = header.substr(p + pattern.size());
  size_t start = rest.find_first_not_of(' ');
  return start == std::string_view::npos ? std::string_view{} : rest.substr(start);
}

// A shape tuple "(2, 3)", "(5,)" or "()": non-negative integers only.
Shape parse_shape(std::string_view v, const std::string& where) {
  auto bad = [&](const std::string& why) { return UserError(fmt::format("'{}' is not a valid .npy file: shape {}", escape_controls(where), why)); };
  if (v.empty() || v[0] != '(') throw bad("is not a tuple");
  size_t close = v.find(')');
  if (close == std::string_view::npos) throw bad("is not a closed tuple");
  std::string_view body = v.substr(1, close - 1);
  Shape shape;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t comma = body.find(',', pos);
    std::string_view item = body.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    size_t a = item.find_first_not_of(' '), b = item.find_last_not_of(' ');
    if (a != std::string_view::npos) {
      item = item.substr(a, b - a + 1);
      int64_t d = 0;
      for (char c : item) {
        if (c < '0' || c > '9') throw bad(fmt::format("holds '{}', not a non-negative integer", item));
        if (__builtin_mul_overflow(d, 10, &d) || __builtin_add_overflow(d, c - '0', &d))
          throw bad(fmt::format("dimension {} does not fit 64 bits", item));
      }
      shape.push_back(d);
    } else if (comma != std::string_view::npos) {
      throw bad("has an empty dimension");
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  try {
    check_shape(shape, "the array");
  } catch (const VerifyError& e) { throw bad(e.what()); }
  return shape;
}

}  // namespace

std::string encode_npy(const Tensor& t) {
  check_room_for(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()), "a value's .npy bytes need");  // a copy beside the tensor
  Tensor c = t.contiguous();
  std::string shape;
  for (size_t i = 0; i < c.shape().size(); ++i) shape += fmt::format("{}, ", c.shape()[i]);
  if (c.shape().size() > 1) shape.resize(shape.size() - 2);
  else if (c.shape().size() == 1) shape.resize(shape.size() - 1);
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr_of(c.dtype()), shape);
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(c.data()), static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  return out;
}

Tensor parse_npy(std::string_view bytes, const std::string& where) {
  auto bad = [&](const std::string& why) { return UserError(fmt::format("'{}' is not a valid .npy file: {}", escape_controls(where), why)); };
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6)) throw bad("bad magic (expected \\x93NUMPY)");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw bad("truncated header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + static_cast<size_t>(i)])) << (8 * i);
    hstart = 12;
  } else {
    throw bad(fmt::format("unsupported format version {}", major));
  }
  if (hlen > (size_t{1} << 20)) throw bad(fmt::format("header of {} bytes (reprokit reads headers up to 1 MiB)", hlen));
  if (bytes.size() < hstart + hlen) throw bad("truncated header");
  std::string_view header = bytes.substr(hstart, hlen);
  std::string_view descr = header_value(header, "descr", where);
  if (descr.size() < 2 || descr[0] != '\'') throw bad("'descr' is not a string");
  descr = descr.substr(1, descr.find('\'', 1) == std::string_view::npos ? 0 : descr.find('\'', 1) - 1);
  auto dt = dtype_of(descr);
  if (!dt) throw bad(fmt::format("unsupported dtype '{}' (reprokit reads <f2 <u2(bf16 or u16) <f4 <f8 |i1 |u1 <i2 <i4 <i8 |b1)", descr));
  std::string_view order = header_value(header, "fortran_order", where);
  if (order.substr(0, 4) == "True") throw bad("Fortran order is not supported; save with C order");
  if (order.substr(0, 5) != "False") throw bad("'fortran_order' is neither True nor False");
  Shape shape = parse_shape(header_value(header, "shape", where), where);
  size_t nbytes = static_cast<size_t>(numel(shape)) * dtype_size(*dt);
  size_t have = bytes.size() - hstart - hlen;
  if (have < nbytes)
    throw bad(fmt::format("truncated data: {} bytes for shape [{}] of {}, expected {}", have, fmt::join(shape, ", "), dtype_name(*dt), nbytes));
  // Bytes past the array are no part of it: a file cut from another or written wrongly.
  if (have > nbytes)
    throw bad(fmt::format("{} bytes of data for shape [{}] of {}, expected {}: {} trailing bytes", have, fmt::join(shape, ", "), dtype_name(*dt),
                          nbytes, have - nbytes));
  Tensor t = Tensor::zeros(*dt, shape);
  if (nbytes > 0) std::memcpy(t.data(), bytes.data() + hstart + hlen, nbytes);  // an empty tensor has no buffer
  return t;
}

Tensor read_npy(const std::string& path) {
  // The file's bytes and then the tensor: both are held at once, so both are weighed first (a
  // sparse 3 GB .npy was read whole before any check).
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) check_room_for(static_cast<size_t>(size) * 2, "reading a .npy file and its tensor need");
  return parse_npy(read_file(path, kMaxDataFileBytes), path);
}

Tensor read_npy_as(const std::string& path, DType declared) {
  Tensor t = read_npy(path);
  if (t.dtype() == DType::bf16 && declared == DType::u16) {
    Tensor u = Tensor::zeros(DType::u16, t.shape());
    std::memcpy(u.data(), t.contiguous().data(), static_cast<size_t>(t.numel()) * 2);
    return u;
  }
  if (t.dtype() == DType::u8 && declared == DType::boolean) {
    for (int64_t v : t.to_int64s())
      if (v != 0 && v != 1) return t;
    return t.to(DType::boolean);
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::filesystem::path p(path);
  std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  Dir::open(dir).write(p.filename().string(), encode_npy(t));
}

}  // namespace reprokit
