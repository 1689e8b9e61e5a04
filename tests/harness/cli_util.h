// Helpers of the end-to-end tests: run the built `reprokit` binary in a temp dir.
#pragma once
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reprokit/process/subprocess.h"
#include "reprokit/support/escape_controls.h"
#include "../scratch_dir.h"

namespace reprokit::testing {

namespace fs = std::filesystem;

// An empty directory for one test's files, removed with the others when the test process exits.
inline fs::path fresh_dir(const std::string& name) { return scratch_dir("rk_e2e_", name); }

inline ProcessResult reprokit_cli(const std::vector<std::string>& args, const fs::path& cwd, std::map<std::string, std::string> env = {},
                                  double timeout_s = 300) {
  ProcessSpec s;
  s.argv = {REPROKIT_EXE};
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  s.cwd = cwd.string();
  env.emplace("REPRO_CACHE_DIR", std::string(REPROKIT_BINARY_DIR) + "/test-cache");
  s.env_set = env;
  s.env_unset = {"REPRO_AFTER", "REPRO_LEVEL", "REPRO_DIR", "REPRO_MINIFY", "REPRO_TOLERANCE", "REPRO_TIMEOUT", "REPRO_INJECT", "REPRO_INJECT_PASS"};
  s.timeout_s = timeout_s;
  return run_process(s);
}

inline std::vector<fs::path> bundles_in(const fs::path& root) {
  std::vector<fs::path> out;
  if (fs::exists(root))
    for (auto& e : fs::directory_iterator(root))
      if (e.is_directory()) out.push_back(e.path());
  return out;
}

inline nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes `text` to p, creating its directory.
inline void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// Output that quotes names, paths and messages from files holds nothing a terminal acts on (ESC,
// BEL, CSI) and no line that starts with `forged` (a newline inside a quoted name would start one).
inline void expect_inert_output(const std::string& text, const std::string& forged) {
  const std::string shown = escape_controls_keep_newlines(text);
  for (const char* control : {"\x1b", "\x07", "\xc2\x9b"}) EXPECT_EQ(text.find(control), std::string::npos) << shown;
  EXPECT_NE(text.rfind(forged, 0), 0u) << shown;
  EXPECT_EQ(text.find("\n" + forged), std::string::npos) << shown;
}

inline std::string example(const std::string& name) { return std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk"; }

}  // namespace reprokit::testing
