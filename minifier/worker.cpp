// The oracle worker: runs candidates of one bundle in this process (see minify_bundle.h).
#include <fmt/core.h>

#include <fstream>
#include <iostream>

#include "reprokit/harness/child_run.h"
#include "reprokit/ir/errors.h"
#include "reprokit/support/files.h"
#include "reprokit/minifier/minify_bundle.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit {

std::vector<Tensor> candidate_inputs(const Candidate& c, const Bundle& b, const std::vector<Tensor>& node_values) {
  std::vector<Tensor> inputs;
  for (int i = 0; i < c.graph.num_inputs(); ++i) {
    const Node& in = c.graph.node(i);
    int id = b.graph.find(in.name);
    if (id < 0) throw UserError(fmt::format("candidate input %{} is neither an input nor a node of the bundle's graph", in.name));
    Tensor t = node_values[static_cast<size_t>(id)];
    if (t.dtype() != in.type.dtype || t.shape() != in.type.shape)
      throw UserError(fmt::format("candidate input %{} is declared {} but the original value differs", in.name, in.type.str()));
    auto it = c.fills.find(in.name);
    if (it != c.fills.end() && it->second != InputFill::original) {
      Tensor f = Tensor::empty_strided(in.type.dtype, in.type.shape, in.type.effective_strides());
      for (int64_t k = 0; k < f.numel(); ++k) f.set(k, it->second == InputFill::ones ? 1.0 : 0.0);
      t = f;
    } else if (!in.type.strides.empty() && t.strides() != in.type.strides) {
      t = t.with_strides(in.type.strides);
    }
    inputs.push_back(t);
  }
  return inputs;
}

int run_minify_worker(const std::string& bundle_dir, const std::string& query_file) {
  Bundle b = load_bundle(bundle_dir);
  // Every node's value in the original run (reference interpreter, original precision): what a
  // cut point carries.
  std::vector<Tensor> values = interpret_all(b.graph, b.inputs);
  auto answer = [&](const std::string& line) {
    Candidate c = Candidate::from_json(nlohmann::json::parse(line));
    Failure f = run_and_classify(b.spec, c.graph, candidate_inputs(c, b, values));
    return f;
  };
  if (!query_file.empty()) {
    std::string text = read_file(query_file, kMaxTextFileBytes);
    std::string line = text.substr(0, text.find('\n'));
    Failure f = answer(line);
    fmt::print("{}\n", f.failed() ? fmt::format("FAILS: {}: {}", f.kind_name(), f.message) : "PASSES");
    return f.failed() ? 1 : 0;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    Failure f;
    try {
      f = answer(line);
    } catch (const UserError& e) {
      f = Failure{FailureKind::invalid_candidate, e.what(), "invalid", 0};
    }
    fmt::print("{}\n", verdict_line(f));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace reprokit
