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
