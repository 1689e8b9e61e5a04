// The harness (see harness.h).
#include "reprokit/harness/harness.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "reprokit/aot/decompose.h"
#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/harness/accuracy.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/process/self_executable.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/harness/repro_spec.h"
#include "reprokit/support/errors.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace {

std::atomic<HangEnd> g_hang_end{nullptr};

// Calls `fire` once if `stop()` is not called within `seconds` (0: never).
class Watchdog {
 public:
  Watchdog(double seconds, std::function<void()> fire) {
    if (seconds <= 0) return;
    thread_ = std::thread([this, seconds, fire = std::move(fire)] {
      std::unique_lock<std::mutex> lock(m_);
      if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stopped_; })) fire();
    });
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stopped_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  ~Watchdog() { stop(); }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::thread thread_;
};

// What a failure's bundle is and what to do with it, as printed (also precomputed for a crash).
std::string announcement(const Failure& f, const std::string& stage, const Graph& g, const ReproSpec& spec, const std::string& dir, int level) {
  std::string s = fmt::format("reprokit: {} in stage {} of graph {} ({} backend)\n", f.kind_name(), stage, g.name, spec.options.compile.backend);
  s += fmt::format("reprokit:   {}\n", f.message.substr(0, f.message.find('\n')));
  s += fmt::format("reprokit: wrote {}/\n", dir);
  if (level >= 2) s += fmt::format("reprokit:   minify with: {}/minifier_launcher\n", dir);
  s += fmt::format("reprokit:   rerun with:  reprokit repro {}/original/repro.rk\n", dir);
  return s;
}

void announce(const Failure& f, const std::string& stage, const Graph& g, const ReproSpec& spec, const std::string& dir, int level) {
  fmt::print(stderr, "{}", announcement(f, stage, g, spec, dir, level));
}

// A level-3 bundle is written as NAME-pending-... before compiling; a failure renames it after
// its kind (a name that exists already is left alone).
std::string named_after(const std::string& dir, const Failure& f) {
  std::filesystem::path p(dir);
  std::string name = p.filename().string();
  if (auto at = name.rfind("-pending-"); at != std::string::npos) name.replace(at, 9, "-" + std::string(f.kind_name()) + "-");
  return (p.parent_path() / name).string();
}

// Writes the failure's bundle (or completes the level-3 one) and the un-minified repro files.
// `compiled`: the stage's outputs when it ran to the end (an accuracy failure), for repro_torch.py.
std::string record_failure(const std::string& pre, const HarnessConfig& cfg, const Graph& g, const std::vector<Tensor>& inputs, ReproSpec spec,
                           const Failure& f, uint64_t seed, const std::vector<Tensor>* compiled = nullptr) {
  spec.expected = f;
  std::string dir = pre;
  if (dir.empty()) {
    dir = write_bundle(cfg.dir, g, inputs, spec, cfg.level, seed);
  } else {
    update_bundle_failure(dir, spec);
    // Now that the kind is known, say it in the name (the bundle holds only relative paths).
    std::filesystem::path p(dir), named(named_after(dir, f));
    Dir root = Dir::open(p.parent_path().string());
    if (named != p && !root.exists(named.filename().string())) {
      root.rename(p.filename().string(), named.filename().string());
      dir = named.string();
    }
  }
  Dir bundle = Dir::open(dir);
  if (cfg.level == 1) bundle.remove_file("minifier_launcher");
  // The un-minified repro goes to original/: the minifier writes its repro beside the manifest.
  write_repro_files(bundle.sub("original", true).path(), g, inputs, spec, "Un-minified: the whole graph the harness saw.", nullptr, compiled);
  return dir;
}

// Level 3's crash recorder: if the stage dies of a signal, a handler writes a precomputed failure
// record into the bundle, renames the bundle from -pending- to -crash- (never over an existing
// name) and prints where it is, as for any other failure, before the process dies for real. Only
// async-signal-safe calls: open, write, close, renameat2.
struct CrashRecorder {
  static inline std::string path, from, to;
  static inline std::string records[32], renamed_note[32], kept_note[32];
  static void handler(int sig) {
    if (sig > 0 && sig < 32 && !records[sig].empty()) {
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        (void)!::write(fd, records[sig].data(), records[sig].size());
        ::close(fd);
      }
      bool renamed = from != to && ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0;
      const std::string& note = renamed ? renamed_note[sig] : kept_note[sig];
      (void)!::write(STDERR_FILENO, note.data(), note.size());
    }
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
  static void arm(const std::string& dir, const std::string& stage, const Graph& g, const ReproSpec& spec, int level) {
    path = dir + "/crash.json";
    from = dir;
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
      Failure f{FailureKind::crash, fmt::format("the process was killed by signal {} ({})", sig, strsignal(sig)), strsignal(sig), sig};
      records[sig] = f.to_json().dump();
      to = named_after(dir, f);
      renamed_note[sig] = announcement(f, stage, g, spec, to, level);
      kept_note[sig] = announcement(f, stage, g, spec, dir, level);
      ::signal(sig, handler);
    }
  }
  static void disarm() {
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::signal(sig, SIG_DFL);
  }
};

void maybe_minify(const HarnessConfig& cfg, const std::string& dir) {
  if (!cfg.minify || cfg.level < 2) return;
  ProcessSpec ps;
  ps.argv = {self_executable(), "minify", dir};
  ps.inherit_output = true;  // the user watches its progress
  fmt::print(stderr, "reprokit: REPRO_MINIFY=1: running {}\n", shell_quote_command(ps.argv));
  try {
    ProcessResult r = run_process(ps);
    if (r.exit_code != 0) fmt::print(stderr, "reprokit: the minifier exited with status {}\n", r.signal ? 128 + r.signal : r.exit_code);
  } catch (const std::runtime_error& e) { fmt::print(stderr, "reprokit: cannot run the minifier: {}\n", e.what()); }
}

// --samples N: the stage on N - 1 more input samples (seeds 1 .. N-1) drawn like its inputs.
// Records in the spec which samples fail and returns the failure to report: the original's, or
// the first failing sample's, saying on which samples it shows.
Failure check_samples(ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs, Failure original, int samples) {
  spec.sample_seeds.clear();
  for (int k = 1; k < samples; ++k) spec.sample_seeds.push_back(static_cast<uint64_t>(k));
  std::vector<int> failing;
  Failure first = original;
  if (original.failed()) failing.push_back(0);
  ReproSpec one = spec;
  one.failing_samples.clear();
  for (int k = 1; k < samples; ++k) {
    // A CUDA kernel fault has cost this process the GPU: no later sample can run here. The seeds
    // not run are not recorded, so nothing claims they passed.
    if (device_lost_in_this_process()) {
      fmt::print(stderr, "reprokit: the GPU is lost to this process after a kernel fault: input samples {} to {} were not run\n", k, samples - 1);
      spec.sample_seeds.resize(static_cast<size_t>(k - 1));
      break;
    }
    Failure f = run_and_classify(one, g, sample_inputs(spec, g, inputs, k));
    if (!f.failed()) continue;
    failing.push_back(k);
    if (!first.failed()) first = f;
  }
  spec.failing_samples = failing;
  if (failing.empty()) return first;
  fmt::print(stderr, "reprokit: stage {} of graph {} fails on {} of {} input samples ({})\n", spec.stage, g.name, failing.size(), samples,
             fmt::join(failing, ", "));
  first.message = fmt::format("on input samples {} of {}: {}", fmt::join(failing, ", "), samples, first.message);
  return first;
}

StackResult guarded(const std::string& stage, const Graph& g, const std::vector<Tensor>& inputs, const StackOptions& options,
                    const HarnessConfig& cfg, uint64_t seed) {
  ReproSpec spec;
  spec.stage = stage;
  spec.options = options;
  spec.tolerance = cfg.tolerance;
  spec.timeout_s = cfg.timeout_s;
  spec.check_accuracy = cfg.level >= 4;
  std::string pre;
  if (cfg.level >= 3) {
    pre = write_bundle(cfg.dir, g, inputs, spec, cfg.level, seed);
    // The un-minified repro too: if this process dies, it reproduces whatever failure happens.
    write_repro_files(Dir::open(pre).sub("original", true).path(), g, inputs, spec, "Written before compiling (level 3): any failure counts.");
    // The name is the one it has now: it is removed if the stage passes, renamed after the failure otherwise.
    fmt::print(stderr,
               "reprokit: level {}: recorded graph {} in {}/ before compiling it (kept, and renamed after the failure, only if stage {} fails)\n",
               cfg.level, g.name, pre, stage);
    CrashRecorder::arm(pre, stage, g, spec, cfg.level);
  }
  Watchdog watchdog(cfg.timeout_s, [&] {
    Failure f{FailureKind::timeout, fmt::format("stage {} of graph {} did not finish within REPRO_TIMEOUT={}s", stage, g.name, cfg.timeout_s),
              "timeout", 0};
    std::string dir = record_failure(pre, cfg, g, inputs, spec, f, seed);
    announce(f, stage, g, spec, dir, cfg.level);
    maybe_minify(cfg, dir);
    if (HangEnd end = hang_end()) {
      fmt::print(stderr, "reprokit: ending the hung process (exit status {})\n", kTimeoutExitStatus);
      end();
    }
  });
  Failure f;
  StackResult result;
  try {
    try {
      result = run_stage(stage, g, inputs, options);
    } catch (const CompileFailure& e) { f = failure_from(e.kind, e.what()); }
    if (!f.failed() && cfg.level >= 4) f = check_stage_accuracy(spec, g, inputs, result);
    if (cfg.samples > 1) f = check_samples(spec, g, inputs, f, cfg.samples);  // under the same watchdog
  } catch (const UserError&) {
    // Bad input (a model too large for the memory budget, ...) is no failure of the compiler: the
    // bundle written before compiling would record nothing.
    watchdog.stop();
    if (!pre.empty()) {
      CrashRecorder::disarm();
      std::filesystem::remove_all(pre);
    }
    throw;
  }
  watchdog.stop();
  if (!pre.empty()) CrashRecorder::disarm();
  if (!f.failed()) {
    if (!pre.empty()) std::filesystem::remove_all(pre);  // nothing failed: leave nothing behind
    return result;
  }
  // The saved inputs are sample 0: its compiled outputs show the bug only when sample 0 fails.
  const bool sample0_fails = spec.failing_samples.empty() || spec.failing_samples.front() == 0;
  const bool ran_to_end = f.kind == FailureKind::accuracy && result.outputs.size() == g.outputs.size() && sample0_fails;
  std::string dir = record_failure(pre, cfg, g, inputs, spec, f, seed, ran_to_end ? &result.outputs : nullptr);
  announce(f, stage, g, spec, dir, cfg.level);
  maybe_minify(cfg, dir);
  throw StackFailure(f, dir);
}

}  // namespace

void set_hang_end(HangEnd end) { g_hang_end.store(end); }
HangEnd hang_end() { return g_hang_end.load(); }

StackResult run_stack(const Graph& captured, const std::vector<Tensor>& inputs, const StackOptions& options, const HarnessConfig& cfg,
                      uint64_t seed) {
  const std::string& backend = options.compile.backend;
  bool has_aot = backend_named(backend).has_aot_stage;
  if (cfg.after == "aot" && has_aot) {
    StackOptions resolved = options;
    resolved.compile.injection_nodes = resolve_injections(captured, options.compile);
    if (!options.train) return guarded("aot_forward", decompose(captured), inputs, resolved, cfg, seed);
    // Training: the forward and the backward graph are wrapped separately, each with its real inputs.
    return run_training(build_training_graphs(captured), inputs, [&](const std::string& stage, const Graph& part, const std::vector<Tensor>& in) {
      return guarded(stage, part, in, resolved, cfg, seed).outputs;
    });
  }
  if (cfg.after == "dynamo" || (cfg.after == "aot" && !has_aot)) return guarded("dynamo", captured, inputs, options, cfg, seed);
  // No harness: failures surface as they are; REPRO_TIMEOUT still ends a hang with a message.
  Watchdog watchdog(cfg.timeout_s, [&] {
    HangEnd end = hang_end();
    fmt::print(stderr, "reprokit: graph {} did not finish within REPRO_TIMEOUT={}s{}\n", captured.name, cfg.timeout_s,
               end ? "; ending the process" : "");
    if (end) end();
  });
  try {
    return run_stage("dynamo", captured, inputs, options);
  } catch (const CompileFailure& e) { throw StackFailure(failure_from(e.kind, e.what()), ""); }
}

}  // namespace reprokit
