// Triage: which minimized repros are the same bug. A repro's signature is what a compiler
// engineer would file one bug under: the backend, the failure kind, the compiler passes the repro
// still needs, the multiset of its ops, and its normalised message (failure.h). The failing stage
// (dynamo, aot_forward, aot_backward) is recorded but left out of the key: one miscompiled kernel
// shows in the forward graph of one model and the backward graph of another (docs/FUZZING.md).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace reprokit {

struct ReproRecord {
  std::string dir;                  // the directory that holds the repro
  std::string repro;                // repro.rk or repro.onnx in it
  bool minimized = true;            // false: a bundle nobody minified (its original graph)
  std::string backend;              // "" for a `reduce` repro (the user's compiler)
  std::string kind;                 // compile_error, runtime_error, crash, timeout, accuracy, internal; "check" for reduce
  std::string stage;                // dynamo, aot_forward, aot_backward ("" for reduce)
  std::vector<std::string> passes;  // compiler passes the repro keeps on ("pass:N" when limited)
  // op name -> count; for a compiler that is not reprokit's, the ops it ran (the ONNX model's op
  // types, without the arithmetic and reshapes an exporter writes around an op), not reprokit's.
  std::map<std::string, int> ops;
  std::string message;  // normalised message
  // What the compiler says causes it: its optimiser or rewrite rule that `bisect` (or minify)
  // found ("rule Pad_Fusion"), else "" .
  std::string cause;
  std::string location;  // the source file and line the compiler's message names ("pool_attributes.h:88")
  int ops_count = 0;
  long long elements = 0;  // input elements: with ops, what "smallest" compares

  std::string signature() const;
  std::string ops_text() const;  // "exp, mul x2"
};

// Reads the repro in `dir`: a minified bundle (repro.rk with its spec), a `reduce` OUT directory
// (repro.rk or repro.onnx with report.json), a fuzz finding (finding.json beside either), or an
// un-minified bundle (manifest.json: its original graph). nullopt with `why` when it holds none.
std::optional<ReproRecord> read_repro(const std::string& dir, std::string* why = nullptr);

// The directories a walk did not look into because they lie deeper than it goes.
struct TooDeep {
  int64_t count = 0;
  std::string first;  // one of them, in path order
};

// Every repro directory at or below `root` (bundles, reduce outputs, campaigns), in path order,
// down to kMaxReproDepth levels below it; `too_deep` (when given) receives what lies deeper.
// Symlinks are not followed; work directories (minify_work, reduce_work), `original/` and twins
// are not repros of their own.
constexpr int kMaxReproDepth = 8;
std::vector<std::string> find_repro_dirs(const std::string& root, TooDeep* too_deep = nullptr);

struct BugGroup {
  std::string signature;
  std::vector<ReproRecord> members;  // smallest first
  const ReproRecord& smallest() const { return members.front(); }
};

// Groups records by signature; groups in order of first appearance.
std::vector<BugGroup> group_repros(std::vector<ReproRecord> records);

}  // namespace reprokit
