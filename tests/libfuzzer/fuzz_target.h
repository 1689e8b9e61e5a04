// What reprokit's libFuzzer targets share (tests/libfuzzer/README.md).
//
// The answer the CLI turns into exit 2 (a UserError naming the file, malformed JSON, a filesystem
// error) is the expected outcome for hostile bytes. Anything else escapes the target, and libFuzzer
// reports it as a crash: the CLI would have exited 3 or died. Properties a target checks on inputs
// it accepts (a round trip that must be a fixed point) fail through fail(), which aborts.
#pragma once
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reprokit/campaign/graph_generator.h"
#include "reprokit/support/errors.h"

#ifndef REPROKIT_SOURCE_DIR
#define REPROKIT_SOURCE_DIR "."
#endif

namespace reprokit::fuzz {

namespace fs = std::filesystem;

template <class Body> void refusals_are_fine(Body&& body) {
  try {
    body();
  } catch (const UserError&) {
  } catch (const nlohmann::json::exception&) {
  } catch (const fs::filesystem_error&) {}
}

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "\n*** property violated: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline std::string_view as_text(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

inline std::string read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_whole(const fs::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The round trip of a reader and its writer: `printed` (the writer's output for an accepted input)
// must read back, and write again to the same text.
template <class Read, class Write> void check_fixed_point(const std::string& printed, Read read, Write write, const std::string& what) {
  std::string again;
  try {
    again = write(read(printed));
  } catch (const UserError& e) { fail(what + ": the written form does not read back: " + e.what() + "\n--- written ---\n" + printed); }
  if (again != printed) fail(what + ": writing what was read back differs from the first writing\n--- written ---\n" + printed);
}

// The first case the generator gives (seeds 1, 2, ...): the graph and inputs of the real bundle
// the file-reading targets load their inputs against.
inline GeneratedCase first_generated_case(int max_nodes) {
  GeneratorOptions o;
  o.max_nodes = max_nodes;
  for (uint64_t seed = 1; seed < 100; ++seed)
    if (auto c = generate_case(seed, o)) return *c;
  fail("the generator gave no case for the seed bundle");
}

// A private directory for the targets that read files, removed at exit. The exit handler is
// registered once `dir` is constructed, so it runs before `dir` is destroyed: registered from
// inside dir's initializer it ran after, removed nothing, and every fuzzing run left one behind.
inline const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    std::string templ = (fs::temp_directory_path() / "rk-libfuzzer-XXXXXX").string();
    if (!::mkdtemp(templ.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    return fs::path(templ);
  }();
  static const bool removed_at_exit = std::atexit([] {
                                        std::error_code ec;
                                        fs::remove_all(dir, ec);
                                      }) == 0;
  (void)removed_at_exit;
  return dir;
}

// LLVMFuzzerInitialize's helper: every corpus directory named on the command line that is empty
// (or missing) gets the target's seeds, so `target CORPUS_DIR` starts from valid inputs.
inline void seed_empty_corpora(int argc, char** argv, const std::vector<std::pair<std::string, std::string>>& seeds) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.empty() || a[0] == '-') continue;
    std::error_code ec;
    fs::path dir(a);
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) continue;  // a single input to run
    if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) continue;
    fs::create_directories(dir, ec);
    for (const auto& [name, bytes] : seeds) write_whole(dir / name, bytes);
  }
}

// The files below the source tree's `rel` whose names end with `suffix`, as (flattened name, bytes).
inline std::vector<std::pair<std::string, std::string>> source_files(const std::string& rel, const std::string& suffix) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  fs::path root = fs::path(REPROKIT_SOURCE_DIR) / rel;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!it->is_regular_file() || name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::string flat = fs::relative(it->path(), root).string();
    for (char& c : flat)
      if (c == '/') c = '_';
    out.emplace_back(flat, read_whole(it->path()));
  }
  return out;
}

}  // namespace reprokit::fuzz
