// Bundle writing and loading (see bundle.h).
#include "reprokit/harness/bundle.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../codegen/python_worker.h"

#include "reprokit/process/self_executable.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/json_format.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/templates.h"
#include "reprokit/support/files.h"
#include "reprokit/support/hash.h"

namespace reprokit {

using nlohmann::json;

std::string checksum(std::string_view bytes) { return fmt::format("fnv1a64:{:016x}", fnv1a64(bytes)); }

namespace {

// The first line a program prints, or "" when it cannot run (argv, never a shell).
std::string first_line_of(const std::vector<std::string>& argv) {
  try {
    ProcessSpec ps;
    ps.argv = argv;
    ps.timeout_s = 10;
    ProcessResult r = run_process(ps);
    if (r.exit_code != 0) return "";
    return utf8_safe(r.out.substr(0, r.out.find('\n')), 300);
  } catch (const std::exception&) { return ""; }
}

// The CPU's model name as the kernel reports it: what a compiler's maintainer asks first (which
// vector units its kernels took). "unknown" where /proc/cpuinfo says none.
// (procfs gives its files no size, so it is read line by line rather than with read_file.)
std::string cpu_model() {
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) != 0 || line.find(':') == std::string::npos) continue;
    const size_t value = line.find_first_not_of(' ', line.find(':') + 1);
    if (value != std::string::npos) return utf8_safe(line.substr(value), 200);
  }
  return "unknown";
}

// A string safe inside single quotes in a POSIX shell script.
std::string shell_single_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string input_file(const Node& input) { return "inputs/" + input.name + ".npy"; }

json read_manifest(const Dir& d) {
  if (!d.exists("manifest.json")) throw UserError(fmt::format("'{}' is not a bundle: {} is missing", d.path(), d.path("manifest.json")));
  std::string text = d.read("manifest.json", kMaxTextFileBytes);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) { throw UserError(fmt::format("{}: invalid JSON: {}", d.path("manifest.json"), e.what())); }
}

Dir open_bundle(const std::string& dir) {
  if (!std::filesystem::exists(dir)) throw UserError(fmt::format("'{}' is not a bundle directory (it does not exist)", dir));
  return Dir::open(dir);
}

}  // namespace

json environment_info() {
  static const json env = [] {
    json e;
    e["reprokit_version"] = REPROKIT_VERSION;
    e["reprokit_commit"] = REPROKIT_GIT_COMMIT;
    e["compiler"] = first_line_of({"c++", "--version"});
    try {
      json v = json::parse(read_file("/usr/local/cuda/version.json", 1 << 20));
      e["cuda"] = v.value("cuda", json::object()).value("version", "unknown");
    } catch (const std::exception&) { e["cuda"] = "not installed"; }
    std::string gpus = first_line_of({"nvidia-smi", "--query-gpu=name", "--format=csv,noheader"});
    e["gpus"] = gpus.empty() ? "none" : gpus;
    e["os"] = first_line_of({"uname", "-srm"});
    e["cpu"] = cpu_model();
    e["cpu_threads"] = std::thread::hardware_concurrency();
    // The interpreter the Python-side backends and reproducers run under (inductor, openvino, tvm, iree).
    const std::string python = python_interpreter(), version = first_line_of({python, "--version"});
    e["python"] = version.empty() ? "none" : fmt::format("{} ({})", version, python);
    return e;
  }();
  return env;
}

std::string write_bundle(const std::string& root, const Graph& g, const std::vector<Tensor>& inputs, const ReproSpec& spec, int level,
                         uint64_t seed) {
  Dir out = Dir::create(root);
  auto stamp = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string kind = spec.expected.failed() ? std::string(spec.expected.kind_name()) : "pending";
  std::string name;
  for (int n = 0;; ++n) {  // mkdir is atomic: an existing directory is never reused
    name = fmt::format("{}-{}-{}-{}-{}{}", g.name, spec.stage, kind, stamp, ::getpid(), n ? fmt::format("-{}", n) : "");
    if (out.make_new_dir(name)) break;
  }
  Dir bundle = out.sub(name);
  Dir in_dir = bundle.sub("inputs", true);
  json ins = json::array();
  for (int i = 0; i < g.num_inputs(); ++i) {
    std::string bytes = encode_npy(inputs.at(static_cast<size_t>(i)));
    in_dir.write(g.node(i).name + ".npy", bytes);
    ins.push_back({{"name", g.node(i).name}, {"file", input_file(g.node(i))}, {"checksum", checksum(bytes)}});
  }
  json manifest = {{"format_version", kBundleFormatVersion}, {"tool", "reprokit"},      {"graph", graph_to_json(g)},
                   {"graph_text", print_graph(g)},           {"level", level},          {"spec", spec.to_json()},
                   {"failure", spec.expected.to_json()},     {"inputs", ins},           {"seed", seed},
                   {"environment", environment_info()},      {"created_unix_ms", stamp}};
  bundle.write("manifest.json", manifest.dump(2) + "\n");
  std::string launcher = render_template("minifier_launcher", {{"REPROKIT", shell_single_quoted(self_executable())}, {"GRAPH", g.name}});
  bundle.write("minifier_launcher", launcher, true);
  return bundle.path();
}

void update_bundle_failure(const std::string& dir, const ReproSpec& spec) {
  Dir d = open_bundle(dir);
  json m = read_manifest(d);
  m["failure"] = spec.expected.to_json();
  m["spec"] = spec.to_json();
  d.write("manifest.json", m.dump(2) + "\n");
}

Bundle load_bundle(const std::string& dir) {
  Dir d = open_bundle(dir);
  json m = read_manifest(d);
  std::string where = d.path("manifest.json");
  Bundle b;
  b.dir = dir;
  try {
    if (!m.is_object() || !m.contains("format_version") || !m.at("format_version").is_number_integer())
      throw UserError(fmt::format("{}: no format_version", where));
    b.format_version = m.at("format_version").get<int>();
    if (b.format_version != kBundleFormatVersion)
      throw UserError(
          fmt::format("{}: unknown manifest format version {} (this reprokit reads version {})", where, b.format_version, kBundleFormatVersion));
    b.graph = graph_from_json(m.at("graph"));
    b.spec = ReproSpec::from_json(m.at("spec"));
    // A level-3 bundle whose process crashed: the crash recorder left the failure beside it.
    if (!b.spec.expected.failed() && d.exists("crash.json")) {
      try {
        b.spec.expected = Failure::from_json(json::parse(d.read("crash.json", 1 << 20)));
      } catch (const json::exception& e) { throw UserError(fmt::format("{}: unreadable crash record: {}", d.path("crash.json"), e.what())); }
    }
    if (m.contains("level")) {
      const json& level = m.at("level");
      if (!level.is_number_integer() || level.get<int64_t>() < 1 || level.get<int64_t>() > 4)
        throw UserError(fmt::format("{}: level {} is not one of 1, 2, 3, 4", where, printable(level.dump())));
      b.level = level.get<int>();
    }
    if (m.contains("seed") && !m.at("seed").is_number_unsigned())
      throw UserError(fmt::format("{}: seed {} is not a non-negative integer", where, printable(m.at("seed").dump())));
    b.seed = m.value("seed", uint64_t{0});
    b.environment = m.value("environment", json::object());
    const json& ins = m.at("inputs");
    if (!ins.is_array() || static_cast<int>(ins.size()) != b.graph.num_inputs())
      throw UserError(fmt::format("{}: lists {} inputs, the graph takes {}", where, ins.is_array() ? ins.size() : 0, b.graph.num_inputs()));
    for (int i = 0; i < b.graph.num_inputs(); ++i) {
      const json& in = ins[static_cast<size_t>(i)];
      const Node& decl_node = b.graph.node(i);
      // Input files are named after the input, never taken from the manifest as a path.
      std::string file = input_file(decl_node);
      if (in.at("file").get<std::string>() != file)
        throw UserError(fmt::format("{}: input %{} is stored as '{}'; reprokit reads inputs only from {}", where, decl_node.name,
                                    printable(in.at("file").get<std::string>()), file));
      if (!d.is_dir("inputs") || !d.sub("inputs").exists(decl_node.name + ".npy"))
        throw UserError(fmt::format("{}: input file {} is missing", where, d.path(file)));
      std::string bytes = d.read(file, kMaxDataFileBytes);
      std::string sum = checksum(bytes), want = in.at("checksum").get<std::string>();
      if (sum != want)
        throw UserError(fmt::format("{}: checksum mismatch for {} (manifest {}, file {}): the input was modified or truncated", where, d.path(file),
                                    printable(want), sum));
      Tensor t = parse_npy(bytes, d.path(file));
      const TensorType& decl = decl_node.type;
      if (t.dtype() != decl.dtype || t.shape() != decl.shape)
        throw UserError(fmt::format("{}: input {} does not match its declaration {}", where, d.path(file), decl.str()));
      b.inputs.push_back(t);
    }
  } catch (const json::exception& e) { throw UserError(fmt::format("{}: malformed manifest: {}", where, e.what())); } catch (const ParseError&) {
    throw;
  } catch (const VerifyError& e) { throw UserError(fmt::format("{}: the graph is invalid: {}", where, e.what())); }
  return b;
}

}  // namespace reprokit
