// .npy round trips for every dtype and layout, .npy error messages, and seeded input generation.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/npy.h"
#include "../scratch_dir.h"

using namespace reprokit;
namespace fs = std::filesystem;

static fs::path temp_dir(const char* name) { return reprokit::testing::scratch_dir("rk_runtime_", name); }

TEST(Npy, RoundTripsEveryDtype) {
  auto dir = temp_dir("npy");
  for (DType t : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean}) {
    Tensor x = Tensor::from_doubles(t, {2, 3}, {1, 0, -2, 3.5, 100, -0.25});
    std::string path = (dir / (std::string(dtype_name(t)) + ".npy")).string();
    write_npy(path, x);
    Tensor y = read_npy(path);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(y.shape(), (Shape{2, 3}));
    EXPECT_EQ(y.to_doubles(), x.to_doubles()) << dtype_name(t);
  }
}

TEST(Npy, StridedTensorsAreSavedInLogicalOrder) {
  auto dir = temp_dir("strided");
  Tensor x = Tensor::empty_strided(DType::f32, {2, 3}, {1, 2});  // column-major layout
  for (int i = 0; i < 6; ++i) x.set(i, i);
  write_npy((dir / "x.npy").string(), x);
  EXPECT_EQ(read_npy((dir / "x.npy").string()).to_doubles(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(Npy, ZeroDimAndEmpty) {
  auto dir = temp_dir("zero");
  write_npy((dir / "s.npy").string(), Tensor::from_doubles(DType::f64, {}, {3.25}));
  Tensor s = read_npy((dir / "s.npy").string());
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.get(0), 3.25);
  write_npy((dir / "e.npy").string(), Tensor::zeros(DType::f32, {0, 4}));
  EXPECT_EQ(read_npy((dir / "e.npy").string()).shape(), (Shape{0, 4}));
}

static std::string error_of(const std::string& path) {
  try {
    read_npy(path);
  } catch (const UserError& e) { return e.what(); }
  return "no error";
}

TEST(Npy, ErrorsNameThePathAndTheProblem) {
  auto dir = temp_dir("bad");
  EXPECT_NE(error_of((dir / "missing.npy").string()).find("missing.npy': no such file"), std::string::npos);
  std::ofstream((dir / "magic.npy").string()) << "hello world, not numpy";
  EXPECT_NE(error_of((dir / "magic.npy").string()).find("bad magic"), std::string::npos);
  write_npy((dir / "t.npy").string(), Tensor::zeros(DType::f32, {100}));
  fs::resize_file(dir / "t.npy", 200);
  EXPECT_NE(error_of((dir / "t.npy").string()).find("truncated data"), std::string::npos) << error_of((dir / "t.npy").string());
  std::string header = "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }";
  std::ofstream c((dir / "complex.npy").string(), std::ios::binary);
  c << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size()) << '\x00' << header << std::string(8, '\0');
  c.close();
  EXPECT_NE(error_of((dir / "complex.npy").string()).find("unsupported dtype '<c8'"), std::string::npos);
}

// An empty array whose other dims multiply past the size limit is refused: its contiguous strides
// would overflow (signed overflow under UBSan; found by tests/libfuzzer/npy_fuzzer).
TEST(Npy, EmptyArrayWithHugeOtherDimsIsRefused) {
  auto npy = [](const std::string& shape) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  };
  try {
    parse_npy(npy("(0, 90, 999999999, 9995, 90)"), "empty.npy");
    ADD_FAILURE() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("empty.npy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("size limit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_npy(npy("(0, 1024, 1024)"), "fine.npy").shape(), (Shape{0, 1024, 1024}));
}

TEST(InputGen, DeterministicHonoursStridesAndIndexRanges) {
  Graph g =
      parse_graph(R"(graph g(%x: f32[4, 3] strides=[1, 4], %w: f32[7, 2], %i: i64[5, 6], %n: i32[3], %b: bool[10], %s: f32[2, 9], %j: i64[2, 4]) {
  %e = embedding(%w, %i)
  %h = gather(%s, %j, dim=1)
  return (%e, %h, %x, %n, %b)
})");
  auto a = generate_inputs(g, 7), b = generate_inputs(g, 7), c = generate_inputs(g, 8);
  EXPECT_EQ(a[0].strides(), (Shape{1, 4}));
  for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k].to_doubles(), b[k].to_doubles());
  EXPECT_NE(a[0].to_doubles(), c[0].to_doubles());
  bool nonzero = false;
  for (double v : a[2].to_doubles()) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 7);  // embedding rows
    nonzero |= v != 0;
  }
  EXPECT_TRUE(nonzero);
  for (double v : a[6].to_doubles()) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 9);  // gather along dim 1 of [2, 9]
  }
  for (double v : a[3].to_doubles()) EXPECT_LE(std::fabs(v), 8);
}

// A header that gives a key twice is malformed (which value counts differs between readers):
// refused, naming the file and the key.
TEST(Npy, AHeaderKeyGivenTwiceIsRefused) {
  auto npy = [](const std::string& dict) {
    const std::string header = dict + std::string(64 - (10 + dict.size() + 1) % 64, ' ') + "\n";
    return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header + std::string(8, '\0');
  };
  for (const std::string key : {"descr", "shape", "fortran_order"}) {
    const std::string dict = key == "descr"   ? "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (1,), }"
                             : key == "shape" ? "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'shape': (1,), }"
                                              : "{'descr': '<f8', 'fortran_order': True, 'fortran_order': False, 'shape': (1,), }";
    try {
      parse_npy(npy(dict), "twice.npy");
      ADD_FAILURE() << key << " twice was accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("'twice.npy' is not a valid .npy file: the header gives '" + key + "' twice"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }"), "once.npy").shape(), (Shape{1}));
}

// Bytes after the array's data are refused, with the sizes, rather than ignored.
TEST(Npy, TrailingBytesAfterTheDataAreRefused) {
  auto dir = temp_dir("trailing");
  write_npy((dir / "t.npy").string(), Tensor::zeros(DType::f32, {100}));
  std::ofstream((dir / "t.npy").string(), std::ios::app | std::ios::binary) << "extra";
  const std::string e = error_of((dir / "t.npy").string());
  EXPECT_NE(e.find("t.npy' is not a valid .npy file"), std::string::npos) << e;
  EXPECT_NE(e.find("405 bytes of data for shape [100] of f32, expected 400: 5 trailing bytes"), std::string::npos) << e;
}

// input_files.h: an input's file is the one named after its ONNX name, else after reprokit's name
// for it; a file named after one ONNX input is never read for another (ONNX inputs "1x" and
// "v_1x", which reprokit calls %v_1x and %v_1x_1).
TEST(InputFiles, AFileNamedAfterAnOnnxInputIsThatInputsAlone) {
  auto dir = temp_dir("input_files");
  const std::string d = dir.string();
  const std::set<std::string> onnx_names{"1x", "v_1x"};
  auto one = Tensor::from_doubles(DType::f32, {1}, {1});
  write_npy((dir / "v_1x.npy").string(), one);
  EXPECT_EQ(input_file(d, "v_1x_1", "v_1x", onnx_names), (dir / "v_1x.npy").string());
  try {  // %v_1x has no 1x.npy, and v_1x.npy is ONNX input v_1x's
    input_file(d, "v_1x", "1x", onnx_names);
    ADD_FAILURE() << "v_1x.npy was read for ONNX input 1x";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("v_1x.npy could hold ONNX input 'v_1x' (its name) or ONNX input '1x' (which reprokit calls %v_1x)"),
              std::string::npos)
        << e.what();
  }
  write_npy((dir / "1x.npy").string(), one);
  EXPECT_EQ(input_file(d, "v_1x", "1x", onnx_names), (dir / "1x.npy").string());
  // Without ONNX names (a .rk model), and for a name that no ONNX input has, reprokit's name's file.
  EXPECT_EQ(input_file(d, "v_1x", "", {}), (dir / "v_1x.npy").string());
  EXPECT_EQ(input_file(d, "v_1x", "a/b", {"a/b"}), (dir / "v_1x.npy").string());
  EXPECT_EQ(input_file(d, "missing", "", {}), std::nullopt);
}
