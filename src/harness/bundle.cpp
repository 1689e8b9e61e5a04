// Bundle writing and loading (see bundle.h).
#include "reprokit/harness/bundle.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "reprokit/ir/errors.h"
#include "reprokit/ir/json_format.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/npy.h"
#include "template_text.h"

namespace reprokit {

namespace fs = std::filesystem;
using nlohmann::json;

std::string file_checksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("cannot read '{}'", path));
  uint64_t h = 1469598103934665603ULL;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ULL;
    if (!in) break;
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

static std::string first_line_of_command(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return "";
  char buf[512] = {0};
  std::string s = fgets(buf, sizeof buf, p) ? buf : "";
  pclose(p);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

json environment_info() {
  static const json env = [] {
    json e;
    e["reprokit_version"] = REPROKIT_VERSION;
    e["reprokit_commit"] = REPROKIT_GIT_COMMIT;
    e["compiler"] = first_line_of_command("c++ --version");
    std::ifstream cv("/usr/local/cuda/version.json");
    if (cv) {
      try {
        json v = json::parse(cv);
        e["cuda"] = v.value("cuda", json::object()).value("version", "unknown");
      } catch (...) {
        e["cuda"] = "unreadable /usr/local/cuda/version.json";
      }
    } else {
      e["cuda"] = "not installed";
    }
    std::string gpus = first_line_of_command("nvidia-smi --query-gpu=name --format=csv,noheader");
    e["gpus"] = gpus.empty() ? "none" : gpus;
    e["os"] = first_line_of_command("uname -srm");
    return e;
  }();
  return env;
}

static void write_text(const fs::path& p, const std::string& text, bool executable = false) {
  std::ofstream out(p);
  out << text;
  if (!out) throw UserError(fmt::format("cannot write '{}'", p.string()));
  out.close();
  if (executable) fs::permissions(p, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
}

static std::string self_executable() {
  if (const char* e = std::getenv("REPROKIT_EXE"); e && *e) return e;
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && p.filename() == "reprokit") return p.string();
  return "reprokit";
}

std::string write_bundle(const std::string& root, const Graph& g, const std::vector<Tensor>& inputs, const ReproSpec& spec, int level,
                         uint64_t seed) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw UserError(fmt::format("cannot create REPRO_DIR '{}': {}", root, ec.message()));
  auto stamp = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string kind = spec.expected.failed() ? spec.expected.kind : "pending";
  fs::path dir;
  for (int n = 0;; ++n) {  // mkdir is atomic: an existing directory is never reused
    dir = fs::path(root) / fmt::format("{}-{}-{}-{}-{}{}", g.name, spec.stage, kind, stamp, ::getpid(), n ? fmt::format("-{}", n) : "");
    if (::mkdir(dir.c_str(), 0755) == 0) break;
    if (errno != EEXIST) throw UserError(fmt::format("cannot create bundle directory '{}': {}", dir.string(), strerror(errno)));
  }
  fs::create_directories(dir / "inputs");
  json ins = json::array();
  for (int i = 0; i < g.num_inputs(); ++i) {
    std::string file = "inputs/" + g.node(i).name + ".npy";
    write_npy((dir / file).string(), inputs.at(static_cast<size_t>(i)));
    ins.push_back({{"name", g.node(i).name}, {"file", file}, {"checksum", file_checksum((dir / file).string())}});
  }
  json manifest = {{"format_version", kBundleFormatVersion},
                   {"tool", "reprokit"},
                   {"graph", graph_to_json(g)},
                   {"graph_text", print_graph(g)},
                   {"level", level},
                   {"spec", spec.to_json()},
                   {"failure", spec.expected.to_json()},
                   {"inputs", ins},
                   {"seed", seed},
                   {"environment", environment_info()},
                   {"created_unix_ms", stamp}};
  write_text(dir / "manifest.json", manifest.dump(2) + "\n");
  std::string launcher = render_template("minifier_launcher", {{"REPROKIT", self_executable()}, {"GRAPH", g.name}});
  write_text(dir / "minifier_launcher", launcher, true);
  return dir.string();
}

static json read_manifest(const std::string& dir) {
  fs::path p = fs::path(dir) / "manifest.json";
  if (!fs::is_directory(dir)) throw UserError(fmt::format("'{}' is not a bundle directory (it does not exist)", dir));
  std::ifstream in(p);
  if (!in) throw UserError(fmt::format("'{}' is not a bundle: {} is missing", dir, p.string()));
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw UserError(fmt::format("{}: invalid JSON: {}", p.string(), e.what()));
  }
}

void update_bundle_failure(const std::string& dir, const Failure& failure) {
  json m = read_manifest(dir);
  m["failure"] = failure.to_json();
  m["spec"]["expected"] = failure.to_json();
  fs::path tmp = fs::path(dir) / "manifest.json.tmp";
  write_text(tmp, m.dump(2) + "\n");
  fs::rename(tmp, fs::path(dir) / "manifest.json");
}

Bundle load_bundle(const std::string& dir) {
  json m = read_manifest(dir);
  std::string where = (fs::path(dir) / "manifest.json").string();
  Bundle b;
  b.dir = dir;
  try {
    b.format_version = m.at("format_version").get<int>();
  } catch (const json::exception&) {
    throw UserError(fmt::format("{}: no format_version", where));
  }
  if (b.format_version != kBundleFormatVersion)
    throw UserError(fmt::format("{}: unknown manifest format version {} (this reprokit reads version {})", where, b.format_version, kBundleFormatVersion));
  try {
    b.graph = graph_from_json(m.at("graph"));
    b.spec = ReproSpec::from_json(m.at("spec"));
    // A level-3 bundle whose process crashed: the crash recorder left the failure beside it.
    fs::path crash = fs::path(dir) / "crash.json";
    if (!b.spec.expected.failed() && fs::exists(crash)) {
      std::ifstream cin(crash);
      try {
        b.spec.expected = Failure::from_json(json::parse(cin));
      } catch (const json::exception& e) {
        throw UserError(fmt::format("{}: unreadable crash record: {}", crash.string(), e.what()));
      }
    }
    b.level = m.value("level", 2);
    b.seed = m.value("seed", uint64_t{0});
    b.environment = m.value("environment", json::object());
    auto ins = m.at("inputs");
    if (!ins.is_array() || static_cast<int>(ins.size()) != b.graph.num_inputs())
      throw UserError(fmt::format("{}: lists {} inputs, the graph takes {}", where, ins.is_array() ? ins.size() : 0, b.graph.num_inputs()));
    for (int i = 0; i < b.graph.num_inputs(); ++i) {
      const json& in = ins[static_cast<size_t>(i)];
      std::string file = (fs::path(dir) / in.at("file").get<std::string>()).string();
      if (!fs::exists(file)) throw UserError(fmt::format("{}: input file {} is missing", where, file));
      std::string sum = file_checksum(file);
      if (sum != in.at("checksum").get<std::string>())
        throw UserError(fmt::format("{}: checksum mismatch for {} (manifest {}, file {}): the input was modified or truncated", where, file,
                                    in.at("checksum").get<std::string>(), sum));
      Tensor t = read_npy(file);
      const TensorType& decl = b.graph.node(i).type;
      if (t.dtype() != decl.dtype || t.shape() != decl.shape)
        throw UserError(fmt::format("{}: input {} does not match its declaration {}", where, file, decl.str()));
      b.inputs.push_back(t);
    }
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: malformed manifest: {}", where, e.what()));
  } catch (const ParseError& e) {
    throw;
  } catch (const VerifyError& e) {
    throw UserError(fmt::format("{}: the graph is invalid: {}", where, e.what()));
  }
  return b;
}

}  // namespace reprokit
