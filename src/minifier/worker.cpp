// The oracle worker: runs candidates of one bundle in this process (see minify_bundle.h).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "reprokit/codegen/backend.h"
#include "reprokit/harness/child_run.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"
#include "reprokit/minifier/minify_bundle.h"
#include "reprokit/minifier/worker_protocol.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit {

namespace {

// The part of `t` at `start` with the shape `shape` (a window), contiguous.
Tensor window(const Tensor& t, const Shape& shape, const std::vector<int64_t>& start, const std::string& name) {
  if (shape == t.shape() && start.empty()) return t;
  if (shape.size() != t.shape().size() || (!start.empty() && start.size() != shape.size()))
    throw UserError(fmt::format("candidate input %{} is {}-d, its known value {}-d", name, shape.size(), t.rank()));
  Shape in_strides = contiguous_strides(t.shape());
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t s = start.empty() ? 0 : start[d];
    if (s < 0 || shape[d] < 0 || s > t.shape()[d] - shape[d])  // no s + size: a tampered start overflows it
      throw UserError(fmt::format("candidate input %{}: the window does not fit in the known value", name));
    offset += s * in_strides[d];
  }
  Tensor c = t.contiguous(), out = Tensor::zeros(t.dtype(), shape);
  // Element-wise copy through the window (small: shrunk inputs), exact for every dtype.
  Shape os = contiguous_strides(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t src = offset;
    for (size_t d = 0; d < shape.size(); ++d) src += ((i / os[d]) % shape[d]) * in_strides[d];
    if (is_floating(t.dtype())) out.set(i, c.get(src));
    else out.set_int(i, c.get_int(src));
  }
  return out;
}

}  // namespace

std::vector<Tensor> candidate_inputs(const Candidate& c, const Bundle& b, KnownValues& known_values) {
  std::vector<Tensor> inputs;
  for (int i = 0; i < c.graph.num_inputs(); ++i) {
    const Node& in = c.graph.node(i);
    int id = b.graph.find(in.name);
    if (id < 0) throw UserError(fmt::format("candidate input %{} is neither an input nor a node of the bundle's graph", in.name));
    const InputEdit& e = c.edit(in.name);
    const Tensor& known = known_values.of(id);
    if (known.dtype() != in.type.dtype)
      throw UserError(fmt::format("candidate input %{} is declared {} but the known value is {}", in.name, in.type.str(), dtype_name(known.dtype())));
    Tensor t = window(known, in.type.shape, e.start, in.name);
    if (e.fill != InputFill::original || !e.zeroed.empty()) {
      t = t.to(t.dtype());  // a fresh copy: the known value is shared between candidates
      for (int64_t k = 0; k < t.numel(); ++k) {
        switch (e.fill) {
          case InputFill::original: break;
          case InputFill::zeros: t.set(k, 0.0); break;
          case InputFill::ones: t.set(k, 1.0); break;
          case InputFill::integers: t.set(k, std::clamp(std::nearbyint(is_floating(t.dtype()) ? t.get(k) : static_cast<double>(t.get_int(k))), -4.0, 4.0)); break;
        }
      }
      for (int64_t z : e.zeroed) {
        if (z < 0 || z >= t.numel()) throw UserError(fmt::format("candidate input %{}: zeroed element {} is out of range", in.name, z));
        t.set(z, 0.0);
      }
    }
    if (!in.type.strides.empty() && t.strides() != in.type.strides) t = t.with_strides(in.type.strides);
    inputs.push_back(t);
  }
  return inputs;
}

ReproSpec candidate_spec(const ReproSpec& base, const Candidate& c) {
  ReproSpec s = base;
  s.options.compile.disabled_passes.insert(c.disabled_passes.begin(), c.disabled_passes.end());
  for (auto& [p, n] : c.pass_limits) s.options.compile.pass_limits[p] = n;
  return s;
}

std::optional<std::string> value_edit_leaves_domain(const Candidate& c, const Bundle& b, KnownValues& known) {
  bool edited = false;
  Candidate plain = c;
  for (auto& [name, e] : plain.edits) {
    edited |= e.fill != InputFill::original || !e.zeroed.empty();
    e.fill = InputFill::original;
    e.zeroed.clear();
  }
  if (!edited) return std::nullopt;
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  auto with_edit = interpret_all(c.graph, candidate_inputs(c, b, known), f64);
  auto without = interpret_all(c.graph, candidate_inputs(plain, b, known), f64);
  for (int id = 0; id < c.graph.size(); ++id) {
    const Tensor &e = with_edit[static_cast<size_t>(id)], &o = without[static_cast<size_t>(id)];
    if (!is_floating(e.dtype())) continue;
    for (int64_t k = 0; k < e.numel(); ++k)
      if (!std::isfinite(e.get(k)) && std::isfinite(o.get(k)))
        return fmt::format("the edited input values make %{} {} (element {}) where the original values keep it finite", c.graph.node(id).name,
                           std::isnan(e.get(k)) ? "NaN" : "infinite", k);
  }
  return std::nullopt;
}

int run_minify_worker(const std::string& bundle_dir, const std::string& query_file) {
  Bundle b = load_bundle(bundle_dir);
  KnownValues values(b);
  auto answer = [&](const std::string& line) {
    Candidate c = Candidate::from_json(nlohmann::json::parse(line));
    // A value edit that drives an op out of its domain (1/0, log 0) proves nothing either way:
    // neither a repro nor a twin may rest on it.
    if (auto why = value_edit_leaves_domain(c, b, values)) return Failure{FailureKind::invalid_candidate, *why, "invalid", 0};
    Failure f = run_and_classify(candidate_spec(b.spec, c), c.graph, candidate_inputs(c, b, values));
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
    fmt::print("{}\n", kBeginLine);
    std::fflush(stdout);
    Failure f;
    try {
      f = answer(line);
    } catch (const UserError& e) {
      f = Failure{FailureKind::invalid_candidate, e.what(), "invalid", 0};
    }
    fmt::print("{}\n", verdict_line(f));
    std::fflush(stdout);
    // The GPU is lost to this process (a CUDA kernel fault): end, so that the next candidate runs
    // in a fresh worker instead of failing on the corrupt context.
    if (device_lost_in_this_process()) return 0;
  }
  return 0;
}

}  // namespace reprokit
