// ONNX's backend test suite (libonnx-testdata) as a conformance check of the importer and two
// backends: each model test (model.onnx + test_data_set_*/input_*.pb, output_*.pb) is imported,
// run through the reference interpreter (eager) and the cpp backend, and compared with the stored
// outputs using onnx.backend.test's tolerances (rtol 1e-3, atol 1e-7).
//
//   onnx_conformance --data DIR [--expected FILE] [--json OUT] [--cache-dir DIR] [--jobs N]
//                    [--timeout S] [--suites a,b] [--filter SUBSTR] [--write-expected FILE] [--list-failures]
//
// Every case runs in a child process (this program with --case), so a crash or hang of one case
// is that case's failure. Exit status: 0, or 1 when a case listed in --expected (lines
// "suite/name backend") does not pass; 77 when the test data is not installed.
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "reprokit/codegen/compiler.h"
#include "reprokit/support/errors.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/onnx/onnx_tensor.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/support/files.h"

namespace fs = std::filesystem;
using namespace reprokit;
using nlohmann::json;

namespace {

constexpr double kRtol = 1e-3, kAtol = 1e-7;
// The op set the import was first specified for (the list); the summary also gives the pass
// rate on the cases whose ops all belong to it.
const std::set<std::string> kCoreOps = {"Gemm",
                                        "MatMul",
                                        "Add",
                                        "Sub",
                                        "Mul",
                                        "Div",
                                        "Pow",
                                        "Neg",
                                        "Abs",
                                        "Exp",
                                        "Log",
                                        "Sqrt",
                                        "Reciprocal",
                                        "Sin",
                                        "Cos",
                                        "Tanh",
                                        "Sigmoid",
                                        "Relu",
                                        "Erf",
                                        "Max",
                                        "Min",
                                        "Equal",
                                        "Less",
                                        "LessOrEqual",
                                        "Greater",
                                        "GreaterOrEqual",
                                        "Not",
                                        "Where",
                                        "Cast",
                                        "Identity",
                                        "Softmax",
                                        "LogSoftmax",
                                        "LayerNormalization",
                                        "Reshape",
                                        "Expand",
                                        "Slice",
                                        "Gather",
                                        "Squeeze",
                                        "Unsqueeze",
                                        "Transpose",
                                        "Concat",
                                        "Flatten",
                                        "ReduceSum",
                                        "ReduceMean",
                                        "ReduceMax",
                                        "ReduceMin",
                                        "ArgMax",
                                        "Constant",
                                        "Shape",
                                        "ConstantOfShape"};
const char* kBackends[] = {"eager", "cpp"};

// ---- child: one case

struct DataSet {
  std::vector<Tensor> inputs, outputs;
};

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// "" when equal within tolerance, else what differs.
std::string compare(const Tensor& expected, const Tensor& got, size_t k) {
  if (expected.dtype() != got.dtype())
    return fmt::format("output {}: dtype {} (expected {})", k, dtype_name(got.dtype()), dtype_name(expected.dtype()));
  if (expected.shape() != got.shape())
    return fmt::format("output {}: shape {} (expected {})", k, shape_str(got.shape()), shape_str(expected.shape()));
  const int64_t n = expected.numel();
  int64_t bad = 0, worst = -1;
  double worst_err = -1;
  for (int64_t i = 0; i < n; ++i) {
    double e = expected.get(i), g = got.get(i);
    bool ok;
    if (std::isnan(e) || std::isnan(g)) ok = std::isnan(e) && std::isnan(g);
    else if (std::isinf(e) || std::isinf(g)) ok = e == g;
    else ok = std::fabs(g - e) <= kAtol + kRtol * std::fabs(e);
    if (!ok) {
      ++bad;
      double err = std::isfinite(g - e) ? std::fabs(g - e) : INFINITY;
      if (err > worst_err || worst < 0) worst_err = err, worst = i;
    }
  }
  if (!bad) return "";
  return fmt::format("output {}: {} of {} elements differ beyond rtol {} atol {}; worst at flat index {}: got {:.9g}, expected {:.9g}", k, bad, n,
                     kRtol, kAtol, worst, got.get(worst), expected.get(worst));
}

std::vector<std::string> data_sets(const fs::path& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// NumPy has no bfloat16: ONNX's test data stores bf16 values as UINT16 bit patterns. They are read
// as bf16 where the model declares the value BFLOAT16 (`types`: the model's elem type per position).
std::vector<Tensor> read_tensors(const fs::path& dir, const char* prefix, const std::vector<int>& types) {
  std::vector<Tensor> out;
  for (int i = 0;; ++i) {
    fs::path p = dir / fmt::format("{}_{}.pb", prefix, i);
    if (!fs::exists(p)) break;
    std::string bytes = read_file(p.string(), size_t{1} << 30);
    onnx::TensorProto t;
    if (t.ParseFromString(bytes) && t.data_type() == onnx::TensorProto::UINT16 && static_cast<size_t>(i) < types.size() &&
        types[static_cast<size_t>(i)] == onnx::TensorProto::BFLOAT16) {
      t.set_data_type(onnx::TensorProto::BFLOAT16);
      bytes = t.SerializeAsString();
    }
    out.push_back(parse_onnx_tensor(bytes, p.string()));
  }
  return out;
}

void emit(const std::string& backend, const std::string& status, const std::string& reason) {
  json j{{"backend", backend}, {"status", status}, {"reason", reason}};
  fmt::print("RESULT {}\n", j.dump());
  std::fflush(stdout);
}

int run_case(const fs::path& dir, const std::string& cache_dir) {
  // Whether every op of the model is one the importer maps (the pass rate's denominator).
  bool ops_known = true, core = true;
  onnx::ModelProto model;
  std::vector<std::string> real_inputs;
  std::vector<int> input_types, output_types;
  try {
    std::string bytes = read_file((dir / "model.onnx").string(), size_t{1} << 30);
    if (!model.ParseFromString(bytes)) throw UserError("model.onnx does not parse");
    std::set<std::string> inits;
    for (const auto& t : model.graph().initializer()) inits.insert(t.name());
    for (const auto& i : model.graph().input())
      if (!inits.count(i.name())) real_inputs.push_back(i.name()), input_types.push_back(i.type().tensor_type().elem_type());
    for (const auto& o : model.graph().output()) output_types.push_back(o.type().tensor_type().elem_type());
    for (const auto& n : model.graph().node()) {
      bool std_domain = n.domain().empty() || n.domain() == "ai.onnx";
      if (!std_domain || !onnx_op_supported(n.op_type())) ops_known = false;
      if (!std_domain || !kCoreOps.count(n.op_type())) core = false;
    }
    if (model.graph().node_size() == 0) core = false;
  } catch (const std::exception& e) { ops_known = core = false; }
  fmt::print("OPS_KNOWN {}\nCORE {}\n", ops_known ? 1 : 0, core ? 1 : 0);
  std::fflush(stdout);
  auto all = [&](const std::string& status, const std::string& reason) {
    for (const char* b : kBackends) emit(b, status, reason);
    return 0;
  };
  for (const auto& i : model.graph().input())
    if (!i.type().has_tensor_type()) return all("unsupported", fmt::format("input '{}' is not a tensor (a sequence, map or optional)", i.name()));
  for (const auto& o : model.graph().output())
    if (!o.type().has_tensor_type()) return all("unsupported", fmt::format("output '{}' is not a tensor (a sequence, map or optional)", o.name()));
  std::vector<DataSet> sets;
  try {
    for (const auto& d : data_sets(dir)) sets.push_back({read_tensors(d, "input", input_types), read_tensors(d, "output", output_types)});
  } catch (const UserError& e) { return all("unsupported", std::string("test data: ") + e.what()); }
  if (sets.empty()) return all("unsupported", "no test data sets");
  std::map<std::string, std::string> status = {{"eager", "pass"}, {"cpp", "pass"}}, reason;
  for (size_t s = 0; s < sets.size(); ++s) {
    const DataSet& ds = sets[s];
    if (ds.inputs.size() > real_inputs.size()) return all("unsupported", "more test inputs than model inputs");
    ImportOptions opts;
    for (size_t i = 0; i < ds.inputs.size(); ++i) {
      opts.shapes[real_inputs[i]] = ds.inputs[i].shape();
      opts.known_inputs[real_inputs[i]] = ds.inputs[i];
    }
    ImportedModel m;
    try {
      m = import_onnx((dir / "model.onnx").string(), opts);
    } catch (const UserError& e) {
      std::string what = e.what();
      // The file name is the same in every message: drop it.
      std::string prefix = (dir / "model.onnx").string() + ": ";
      if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
      return all("unsupported", what);
    }
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < m.input_sources.size(); ++i) {
      const std::string& src = m.input_sources[i];
      auto it = std::find(real_inputs.begin(), real_inputs.end(), src);
      size_t pos = static_cast<size_t>(it - real_inputs.begin());
      if (it != real_inputs.end() && pos < ds.inputs.size()) inputs.push_back(ds.inputs[pos]);
      else if (m.values.count(m.graph.node(static_cast<int>(i)).name)) inputs.push_back(m.values.at(m.graph.node(static_cast<int>(i)).name));
      else return all("unsupported", fmt::format("no test value for input '{}'", src));
    }
    auto check = [&](const std::string& backend, const std::vector<Tensor>& got) {
      if (got.size() != ds.outputs.size()) return fmt::format("{} outputs, expected {}", got.size(), ds.outputs.size());
      for (size_t k = 0; k < got.size(); ++k) {
        std::string d = compare(ds.outputs[k], got[k], k);
        if (!d.empty()) return d;
      }
      return std::string();
    };
    auto record = [&](const std::string& backend, const std::string& failure) {
      if (failure.empty() || status[backend] != "pass") return;
      status[backend] = "fail";
      reason[backend] = sets.size() > 1 ? fmt::format("data set {}: {}", s, failure) : failure;
    };
    // eager: the reference interpreter
    try {
      record("eager", check("eager", interpret(m.graph, inputs)));
    } catch (const std::exception& e) { record("eager", std::string("error: ") + e.what()); }
    // cpp: the compiled graph
    try {
      CompileOptions co;
      co.backend = "cpp";
      co.cache_dir = cache_dir;
      auto compiled = compile_graph(m.graph, co);
      record("cpp", check("cpp", compiled->run(inputs)));
    } catch (const std::exception& e) {
      std::string w = e.what();
      if (w.size() > 600) w = w.substr(0, 600) + "...";
      record("cpp", std::string("error: ") + w);
    }
  }
  for (const char* b : kBackends) emit(b, status[b], reason[b]);
  return 0;
}

// ---- parent: every case, in children

struct Case {
  std::string suite, name, dir;
  bool ops_known = false, core = false;
  std::map<std::string, std::pair<std::string, std::string>> results;  // backend -> (status, reason)
  double seconds = 0;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

void run_child(Case& c, const std::string& self, const std::string& cache_dir, double timeout) {
  ProcessSpec spec;
  spec.argv = {self, "--case", c.dir, "--cache-dir", cache_dir};
  spec.timeout_s = timeout;
#ifdef __SANITIZE_ADDRESS__
  spec.memory_limit_mb = 0;  // ASan's shadow memory cannot live under an address-space limit
#else
  spec.memory_limit_mb = 8192;
#endif
  ProcessResult r;
  try {
    r = run_process(spec);
  } catch (const std::exception& e) {
    for (const char* b : kBackends) c.results[b] = {"fail", std::string("could not start the case: ") + e.what()};
    return;
  }
  c.seconds = r.seconds;
  for (const auto& line : split(r.out, '\n')) {
    if (line.rfind("OPS_KNOWN ", 0) == 0) c.ops_known = line.substr(10) == "1";
    if (line.rfind("CORE ", 0) == 0) c.core = line.substr(5) == "1";
    if (line.rfind("RESULT ", 0) == 0) {
      try {
        json j = json::parse(line.substr(7));
        c.results[j.at("backend").get<std::string>()] = {j.at("status").get<std::string>(), j.at("reason").get<std::string>()};
      } catch (const json::exception&) {}
    }
  }
  std::string why;
  if (r.timed_out) why = fmt::format("timeout: the case ran longer than {} s", timeout);
  else if (r.signal) why = fmt::format("crash: signal {}", r.signal);
  else if (r.exit_code != 0) why = fmt::format("the case exited with status {}", r.exit_code);
  std::string tail = r.err.size() > 300 ? r.err.substr(r.err.size() - 300) : r.err;
  for (const char* b : kBackends)
    if (!c.results.count(b))
      c.results[b] = {"fail", (why.empty() ? std::string("no result") : why) + (tail.empty() ? "" : " (stderr: " + tail + ")")};
}

int run_all(int argc, char** argv) {
  std::string data, expected, json_out, cache_dir = "onnx-conformance-cache", write_expected, filter;
  std::vector<std::string> suites = {"node", "pytorch-converted", "pytorch-operator", "simple"};
  int jobs = 2;
  double timeout = 180;
  bool list_failures = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw UserError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--data") data = next();
    else if (a == "--expected") expected = next();
    else if (a == "--json") json_out = next();
    else if (a == "--cache-dir") cache_dir = next();
    else if (a == "--jobs") jobs = std::max(1, std::stoi(next()));
    else if (a == "--timeout") timeout = std::stod(next());
    else if (a == "--suites") suites = split(next(), ',');
    else if (a == "--filter") filter = next();
    else if (a == "--write-expected") write_expected = next();
    else if (a == "--list-failures") list_failures = true;
    else throw UserError("unknown argument " + a);
  }
  if (data.empty() || !fs::is_directory(data)) {
    fmt::print("onnx_conformance: SKIPPED: no ONNX test data at '{}' (Debian: apt-get install libonnx-testdata)\n", data);
    return 77;
  }
  fs::create_directories(cache_dir);
  cache_dir = fs::absolute(cache_dir).string();
  std::vector<Case> cases;
  for (const auto& s : suites) {
    fs::path sd = fs::path(data) / s;
    if (!fs::is_directory(sd)) continue;
    std::vector<std::string> names;
    for (auto& e : fs::directory_iterator(sd))
      if (fs::exists(e.path() / "model.onnx")) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    for (const auto& n : names)
      if (filter.empty() || (s + "/" + n).find(filter) != std::string::npos) cases.push_back({s, n, (sd / n).string(), false, false, {}, 0});
  }
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::atomic<size_t> next{0}, done{0};
  std::mutex mu;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < jobs; ++w)
    workers.emplace_back([&] {
      for (size_t i; (i = next++) < cases.size();) {
        run_child(cases[i], self, cache_dir, timeout);
        size_t d = ++done;
        if (d % 100 == 0) {
          std::lock_guard<std::mutex> lock(mu);
          double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          fmt::print("[onnx_conformance] {}/{} cases, {:.0f} s\n", d, cases.size(), el);
          std::fflush(stdout);
        }
      }
    });
  for (auto& t : workers) t.join();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Summary, per suite and backend.
  json out = json::array();
  for (const auto& c : cases)
    for (const char* b : kBackends) {
      const auto& [st, why] = c.results.at(b);
      out.push_back({{"suite", c.suite},
                     {"name", c.name},
                     {"backend", b},
                     {"status", st},
                     {"reason", why},
                     {"ops_supported", c.ops_known},
                     {"core_ops", c.core},
                     {"seconds", c.seconds}});
    }
  if (!json_out.empty()) {
    std::ofstream f(json_out);
    f << out.dump(1) << "\n";
  }
  fmt::print("ONNX backend test suite (libonnx-testdata), {} cases in {:.0f} s; rtol {} atol {}\n", cases.size(), elapsed, kRtol, kAtol);
  fmt::print("pass rate: passes among the cases whose ops all are in the importer's table (ops-supported), or in the core op set\n");
  fmt::print("{:<18} {:<6} {:>5} {:>5} {:>12} | {:>14} {:>10} | {:>10} {:>10}\n", "suite", "backend", "pass", "fail", "unsupported", "ops-supported",
             "pass rate", "core cases", "pass rate");
  for (const auto& s : suites)
    for (const char* b : kBackends) {
      int pass = 0, fail = 0, uns = 0, known = 0, known_pass = 0, core = 0, core_pass = 0;
      for (const auto& c : cases) {
        if (c.suite != s) continue;
        const std::string& st = c.results.at(b).first;
        pass += st == "pass", fail += st == "fail", uns += st == "unsupported";
        if (c.ops_known) ++known, known_pass += st == "pass";
        if (c.core) ++core, core_pass += st == "pass";
      }
      if (pass + fail + uns == 0) continue;
      fmt::print("{:<18} {:<6} {:>5} {:>5} {:>12} | {:>14} {:>9.1f}% | {:>10} {:>9.1f}%\n", s, b, pass, fail, uns, known,
                 known ? 100.0 * known_pass / known : 0.0, core, core ? 100.0 * core_pass / core : 0.0);
    }
  // Top reasons of unsupported cases (the op or feature missing), first line of each.
  std::map<std::string, int> reasons;
  for (const auto& c : cases) {
    const auto& [st, why] = c.results.at("eager");
    if (st != "unsupported") continue;
    std::string key = why;
    auto p = key.find("not supported: ");
    if (p != std::string::npos) key = key.substr(p);
    auto q = key.find(" (also unsupported");
    if (q != std::string::npos) key = key.substr(0, q);
    if (key.size() > 90) key = key.substr(0, 90);
    ++reasons[key];
  }
  std::vector<std::pair<int, std::string>> top;
  for (auto& [k, n] : reasons) top.push_back({n, k});
  std::sort(top.rbegin(), top.rend());
  fmt::print("top reasons for unsupported cases:\n");
  for (size_t i = 0; i < top.size() && i < 15; ++i) fmt::print("  {:>4}  {}\n", top[i].first, top[i].second);
  // Failures of cases whose ops are all supported, and every crash or timeout.
  for (const auto& c : cases)
    for (const char* b : kBackends) {
      const auto& [st, why] = c.results.at(b);
      if (st == "fail" && (list_failures || c.ops_known || why.find("crash") == 0 || why.find("timeout") == 0))
        fmt::print("FAIL {}/{} {}: {}\n", c.suite, c.name, b, why.substr(0, 400));
    }
  if (!write_expected.empty()) {
    std::ofstream f(write_expected);
    f << "# Cases of ONNX's backend test suite (libonnx-testdata 1.12) that must pass: suite/name backend.\n"
         "# Regenerate with: onnx_conformance --data /usr/share/libonnx-testdata/data --write-expected FILE\n";
    for (const auto& c : cases)
      for (const char* b : kBackends)
        if (c.results.at(b).first == "pass") f << c.suite << "/" << c.name << " " << b << "\n";
  }
  int regressions = 0, listed = 0;
  if (!expected.empty()) {
    std::ifstream f(expected);
    if (!f) throw UserError("cannot read " + expected);
    std::map<std::string, const Case*> by_name;
    for (const auto& c : cases) by_name[c.suite + "/" + c.name] = &c;
    std::string line;
    while (std::getline(f, line)) {
      if (line.empty() || line[0] == '#') continue;
      auto parts = split(line, ' ');
      if (parts.size() != 2) throw UserError("bad line in " + expected + ": " + line);
      auto it = by_name.find(parts[0]);
      if (it == by_name.end()) {
        if (filter.empty()) {
          fmt::print("REGRESSION {} {}: the case was not run\n", parts[0], parts[1]);
          ++regressions;
        }
        continue;
      }
      ++listed;
      const auto& res = it->second->results.at(parts[1]);
      if (res.first != "pass") {
        fmt::print("REGRESSION {} {}: {}: {}\n", parts[0], parts[1], res.first, res.second.substr(0, 400));
        ++regressions;
      }
    }
    fmt::print("{} of {} expected passes still pass\n", listed - regressions, listed);
  }
  return regressions ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 3 && std::string(argv[1]) == "--case") {
      std::string cache = "onnx-conformance-cache";
      for (int i = 3; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--cache-dir") cache = argv[i + 1];
      return run_case(argv[2], cache);
    }
    return run_all(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "onnx_conformance: {}\n", e.what());
    return 2;
  }
}
