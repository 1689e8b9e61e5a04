// Malformed or truncated bundles and repro files: a clear message naming the file, exit 2.
#include <gtest/gtest.h>

#include "cli_util.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

fs::path make_bundle(const std::string& name) {
  auto dir = fresh_dir(name);
  auto r = reprokit_cli({"run", example("mlp"), "--inject", "gelu:runtime_error"}, dir, {{"REPRO_AFTER", "dynamo"}, {"REPRO_DIR", "out"}});
  auto b = bundles_in(dir / "out");
  EXPECT_EQ(b.size(), 1u) << r.err;
  return b.at(0);
}

void expect_bad(const std::vector<std::string>& args, const fs::path& cwd, const std::string& message) {
  auto r = reprokit_cli(args, cwd);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err << "\nexpected: " << message;
}

void edit_manifest(const fs::path& b, const std::function<void(nlohmann::json&)>& f) {
  auto m = read_json(b / "manifest.json");
  f(m);
  std::ofstream(b / "manifest.json") << m.dump(2);
}

}  // namespace

TEST(BundleErrors, MissingInputFile) {
  auto b = make_bundle("missing_input");
  fs::remove(b / "inputs" / "w1.npy");
  expect_bad({"minify", b.string()}, b, "w1.npy is missing");
}

TEST(BundleErrors, ChecksumMismatch) {
  auto b = make_bundle("checksum");
  std::ofstream(b / "inputs" / "x.npy", std::ios::app) << "tampered";
  expect_bad({"minify", b.string()}, b, "checksum mismatch for");
}

TEST(BundleErrors, UnknownManifestVersion) {
  auto b = make_bundle("version");
  edit_manifest(b, [](nlohmann::json& m) { m["format_version"] = 99; });
  expect_bad({"minify", b.string()}, b, "unknown manifest format version 99");
}

TEST(BundleErrors, BadJsonAndMissingManifest) {
  auto b = make_bundle("badjson");
  std::ofstream(b / "manifest.json") << "{ not json";
  expect_bad({"minify", b.string()}, b, "manifest.json: invalid JSON");
  fs::remove(b / "manifest.json");
  expect_bad({"minify", b.string()}, b, "manifest.json is missing");
  expect_bad({"minify", (b / "nope").string()}, b, "is not a bundle directory");
}

// A rewrite limit past int64 (2^64, which JSON readers take for a double) is reported as out of
// range with its value, not wrapped into "a negative limit"; one in range is not refused.
TEST(BundleErrors, APassLimitOutOfRangeIsNamedWithItsValue) {
  auto b = make_bundle("pass_limit_range");
  const std::string manifest = read_text(b / "manifest.json");
  const std::string empty = "\"pass_limits\": {}";
  ASSERT_NE(manifest.find(empty), std::string::npos) << manifest;
  auto with_limit = [&](const std::string& value) {
    std::string m = manifest;
    m.replace(m.find(empty), empty.size(), "\"pass_limits\": {\"cse\": " + value + "}");
    std::ofstream(b / "manifest.json") << m;
  };
  with_limit("18446744073709551616");
  expect_bad({"minify", b.string()}, b, "the rewrite limit of cse is 18446744073709551616, out of range");
  with_limit("18446744073709551615");
  expect_bad({"minify", b.string()}, b, "the rewrite limit of cse is 18446744073709551615, out of range");
  with_limit("-1");
  expect_bad({"minify", b.string()}, b, "the rewrite limit of cse is -1, negative");
  with_limit("2.5");
  expect_bad({"minify", b.string()}, b, "the rewrite limit of cse is 2.5, not an integer");
}

TEST(BundleErrors, TruncatedInputIsNamed) {
  auto b = make_bundle("truncated");
  fs::resize_file(b / "inputs" / "x.npy", 100);
  expect_bad({"minify", b.string()}, b, "checksum mismatch");
}

TEST(ReproErrors, MissingInputAndBadDirective) {
  auto b = make_bundle("repro_errors");
  fs::path repro = b / "original" / "repro.rk";
  fs::remove(b / "original" / "repro_inputs" / "x.npy");
  expect_bad({"repro", repro.string()}, b, "repro_inputs/x.npy is missing");
  std::ofstream(b / "plain.rk") << "graph g(%x: f32[2]) {\n  %y = neg(%x)\n  return (%y)\n}\n";
  expect_bad({"repro", (b / "plain.rk").string()}, b, "not a reprokit repro: no '#! spec' directive");
  std::ofstream(b / "badspec.rk") << "#! spec {\"stage\": 3\n graph g(%x: f32[2]) {\n  return (%x)\n}\n";
  expect_bad({"repro", (b / "badspec.rk").string()}, b, "badspec.rk:1: bad '#! spec' directive");
}
