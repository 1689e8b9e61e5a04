// libFuzzer target: the directories `reprokit triage` walks (bundles, reduce outputs, campaign
// findings). Each input is a small tree of files — entries "path\0content\0", paths of
// [a-z0-9_./-] with no ".." — written into a fresh directory; triage's walk, its reader of each
// repro and its grouping run over it. A repro is read or skipped with a reason; nothing else.
#include "fuzz_target.h"
#include "reprokit/campaign/triage.h"

using namespace reprokit;
using namespace reprokit::fuzz;

namespace {

fs::path g_root;

bool plain_relative_path(std::string_view p) {
  if (p.empty() || p.size() > 120 || p.front() == '/' || p.find("..") != std::string_view::npos) return false;
  for (char c : p)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '/' || c == '-')) return false;
  return true;
}

// Writes the entries of `bytes` under g_root (at most 64 files).
void write_tree(std::string_view bytes) {
  std::error_code ec;
  fs::remove_all(g_root, ec);
  fs::create_directories(g_root);
  for (int files = 0; files < 64 && !bytes.empty(); ++files) {
    const size_t end_path = bytes.find('\0');
    if (end_path == std::string_view::npos) return;
    const std::string_view path = bytes.substr(0, end_path);
    bytes.remove_prefix(end_path + 1);
    const size_t end_content = bytes.find('\0');
    const std::string_view content = bytes.substr(0, end_content);
    bytes.remove_prefix(end_content == std::string_view::npos ? bytes.size() : end_content + 1);
    if (!plain_relative_path(path)) continue;
    const fs::path file = g_root / std::string(path);
    fs::create_directories(file.parent_path(), ec);
    if (!ec && !fs::is_directory(file, ec)) write_whole(file, content);
  }
}

std::string entry(const std::string& path, const std::string& content) { return path + '\0' + content + '\0'; }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  g_root = scratch_dir() / "campaign";
  const std::string graph = "graph g(%x: f32[2]) {\n  %y = exp(%x)\n  return (%y)\n}\n";
  const std::string spec =
      "#! spec {\"backend\":\"cpp\",\"stage\":\"aot_forward\",\"expected\":{\"kind\":\"accuracy\",\"message\":\"output %y\","
      "\"signature\":\"accuracy\",\"signal\":0}}\n";
  seed_empty_corpora(*argc, *argv,
                     {{"reduced", entry("out/repro.rk", graph) + entry("out/report.json", R"({"check":"x {}","final_ops":1})")},
                      {"finding", entry("findings/0001-cpp-forward/model.rk", graph) +
                                      entry("findings/0001-cpp-forward/finding.json", R"({"kind":"crash","backend":"cpp","stage":"dynamo"})")},
                      {"bundle", entry("b/repro.rk", spec + graph) + entry("b/manifest.json", R"({"graph":"g"})")},
                      {"deep", entry("a/b/c/d/e/f/g/h/i/j/repro.rk", graph)}});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_tree(as_text(data, size));
  refusals_are_fine([&] {
    TooDeep too_deep;
    std::vector<ReproRecord> records;
    for (const std::string& dir : find_repro_dirs(g_root.string(), &too_deep)) {
      std::string why;
      if (auto r = read_repro(dir, &why)) records.push_back(std::move(*r));
      else if (why.empty()) fail("a repro directory was skipped without a reason: " + dir);
    }
    for (const BugGroup& g : group_repros(std::move(records)))
      if (g.members.empty()) fail("an empty group");
  });
  return 0;
}
