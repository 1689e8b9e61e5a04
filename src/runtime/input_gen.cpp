// Seeded input generation. Uses its own transforms over mt19937_64 so the values are the same
// with every standard library.
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/memory_budget.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <set>

#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/escape_controls.h"
#include "reprokit/ir/names.h"
#include "reprokit/runtime/npy.h"

namespace reprokit {

namespace {

// The exclusive upper bound for an integer input that some node uses as an index, or 0.
int64_t index_bound(const Graph& g, int input) {
  int64_t bound = 0;
  for (int i = g.num_inputs(); i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (n.operands.size() < 2 || !n.operands[1].is_value() || n.operands[1].value != input) continue;
    int64_t b = 0;
    if (n.op == Op::embedding) b = g.node(n.operands[0].value).type.shape.at(0);
    if (n.op == Op::gather || n.op == Op::scatter_add) {  // index into x along dim
      const auto& x = g.node(n.operands[0].value).type;
      b = gather_dim_size(n, x.shape);
    }
    if (b > 0) bound = bound ? std::min(bound, b) : b;
  }
  return bound;
}

}  // namespace

std::vector<Tensor> generate_inputs(const Graph& g, uint64_t seed) {
  return generate_inputs(g, seed, std::vector<bool>(static_cast<size_t>(g.num_inputs()), false));
}

std::vector<Tensor> generate_inputs(const Graph& g, uint64_t seed, const std::vector<bool>& provided) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0); };
  auto normal = [&] {  // Box-Muller
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1 + 1e-300)) * std::cos(2.0 * M_PI * u2);
  };
  // All of them at once, before the first: a value too large for the budget is refused at once,
  // not after minutes of drawing the ones before it.
  size_t total = 0;
  for (int i = 0; i < g.num_inputs(); ++i)
    if (i >= static_cast<int>(provided.size()) || !provided[static_cast<size_t>(i)])
      total += static_cast<size_t>(g.node(i).type.numel()) * dtype_size(g.node(i).type.dtype);
  check_room_for(total, "the model's generated inputs need");
  std::vector<Tensor> out;
  for (int i = 0; i < g.num_inputs(); ++i) {
    const TensorType& t = g.node(i).type;
    if (i < static_cast<int>(provided.size()) && provided[static_cast<size_t>(i)]) {
      // Skip its draws (two per float for Box-Muller, one otherwise): the other inputs get the
      // values they would get without it.
      rng.discard(static_cast<unsigned long long>(t.numel()) * (is_floating(t.dtype) ? 2 : 1));
      out.emplace_back();
      continue;
    }
    Tensor x = Tensor::empty_strided(t.dtype, t.shape, t.effective_strides());
    int64_t n = x.numel();
    int64_t bound = is_integral(t.dtype) ? index_bound(g, i) : 0;
    bool any_nonzero = false;
    for (int64_t k = 0; k < n; ++k) {
      double v;
      if (is_floating(t.dtype)) v = normal();
      else if (t.dtype == DType::boolean) v = uniform() < 0.5 ? 1 : 0;
      else if (bound > 0) v = static_cast<double>(static_cast<int64_t>(uniform() * static_cast<double>(bound)) % bound);
      else v = static_cast<double>(static_cast<int64_t>(uniform() * 17.0) - (is_unsigned(t.dtype) ? 0 : 8));  // [-8, 8], unsigned [0, 16]
      if (v != 0) any_nonzero = true;
      x.set(k, v);
    }
    // Never all zeros: a zero index tensor or a zero integer input hides bugs.
    if (!any_nonzero && n > 0 && t.dtype != DType::boolean) x.set(n - 1, bound > 1 ? 1 : (bound == 1 ? 0 : 1));
    if (!any_nonzero && n > 1 && t.dtype == DType::boolean) x.set(0, 1);
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<Tensor> assemble_inputs(const Graph& g, const std::map<std::string, Tensor>& known, const std::string& inputs_dir, uint64_t seed) {
  GivenInputs files;
  files.dir = inputs_dir;
  return assemble_inputs(g, known, seed, files);
}

std::vector<Tensor> assemble_inputs(const Graph& g, const std::map<std::string, Tensor>& known, uint64_t seed, const GivenInputs& files,
                                    InputOrigins* origins) {
  namespace fs = std::filesystem;
  const std::string& inputs_dir = files.dir;
  const auto& sources = files.sources;
  std::vector<std::optional<Tensor>> have(static_cast<size_t>(g.num_inputs()));
  for (int i = 0; i < g.num_inputs(); ++i)
    if (auto it = known.find(g.node(i).name); it != known.end()) have[static_cast<size_t>(i)] = it->second;
  if (!inputs_dir.empty()) {
    if (!fs::is_directory(inputs_dir)) throw UserError("--inputs: '" + escape_controls(inputs_dir) + "' is not a directory");
    std::set<std::string> used;
    for (const auto& f : files.specialised) used.insert(fs::path(f).filename().string());
    std::vector<std::string> names;
    for (int i = 0; i < g.num_inputs(); ++i) {
      const Node& in = g.node(i);
      auto src = sources.find(in.name);
      auto f = input_file(inputs_dir, in.name, src != sources.end() ? src->second : "", files.onnx_names);
      names.push_back(src != sources.end() && src->second != in.name ? fmt::format("{}.npy or {}.npy", printable(src->second), in.name)
                                                                     : in.name + ".npy");
      if (!f) continue;
      used.insert(fs::path(*f).filename().string());
      Tensor t = read_npy_as(*f, in.type.dtype);
      if (t.dtype() != in.type.dtype || t.shape() != in.type.shape)
        throw UserError(fmt::format("{}: holds {}{}, input %{} is declared {}", escape_controls(*f), dtype_name(t.dtype()),
                                    fmt::format("[{}]", fmt::join(t.shape(), ", ")), in.name, in.type.str()));
      have[static_cast<size_t>(i)] = t;
      if (origins) origins->from_files.push_back(fmt::format("%{} <- {}", in.name, escape_controls(*f)));  // the file is named after an ONNX name
    }
    std::error_code ec;
    std::vector<std::string> unused;
    for (const auto& e : fs::directory_iterator(inputs_dir, ec)) {
      std::string file = e.path().filename().string();
      if (file.size() > 4 && file.compare(file.size() - 4, 4, ".npy") == 0 && !used.count(file)) unused.push_back(printable(file));
    }
    std::sort(unused.begin(), unused.end());
    // The inputs come first in the graph (weights after them): a model with hundreds of weights
    // names its first few files and counts the rest.
    constexpr size_t kNamed = 8;
    std::string read = fmt::format("{}", fmt::join(names.begin(), names.begin() + static_cast<long>(std::min(names.size(), kNamed)), ", "));
    if (names.size() > kNamed) read += fmt::format(" and {} more", names.size() - kNamed);
    if (origins && !unused.empty())
      origins->unused = fmt::format("{} match{} no input of graph {} and {} not read (the files read are: {})", fmt::join(unused, ", "),
                                    unused.size() == 1 ? "es" : "", g.name, unused.size() == 1 ? "is" : "are", read);
  }
  std::vector<bool> provided;
  for (auto& v : have) provided.push_back(v.has_value());
  std::vector<Tensor> inputs = generate_inputs(g, seed, provided);
  for (size_t i = 0; i < have.size(); ++i) {
    if (have[i]) inputs[i] = std::move(*have[i]);
    else if (origins) origins->random.push_back("%" + g.node(static_cast<int>(i)).name);
  }
  return inputs;
}

std::vector<Tensor> sample_like(const Graph& g, const std::vector<Tensor>& inputs, uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + 0x5851f42d4c957f2dULL);
  // Own transforms, as above: the same samples with every standard library.
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0); };
  auto normal = [&] {
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1 + 1e-300)) * std::cos(2.0 * M_PI * u2);
  };
  std::vector<Tensor> out;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = inputs[k];
    const bool parameter = static_cast<int>(k) < g.num_inputs() && g.node(static_cast<int>(k)).type.requires_grad;
    if (parameter || t.numel() == 0) {
      out.push_back(t);
      continue;
    }
    if (is_floating(t.dtype())) {
      std::vector<double> v = t.to_doubles();
      double sum = 0, sq = 0;
      size_t n = 0;
      for (double x : v)
        if (std::isfinite(x)) sum += x, sq += x * x, ++n;
      double mean = n ? sum / static_cast<double>(n) : 0, spread = n ? std::sqrt(std::max(0.0, sq / static_cast<double>(n) - mean * mean)) : 0;
      for (double& x : v)
        if (std::isfinite(x)) x = spread > 0 ? mean + spread * normal() : mean;
      out.push_back(Tensor::from_doubles(t.dtype(), t.shape(), v));
    } else if (t.dtype() == DType::boolean) {
      std::vector<int64_t> v = t.to_int64s();
      double share = 0;
      for (int64_t x : v) share += x != 0;
      share /= static_cast<double>(v.size());
      for (int64_t& x : v) x = uniform() < share;
      out.push_back(Tensor::from_int64s(t.dtype(), t.shape(), v));
    } else {
      std::vector<int64_t> v = t.to_int64s();
      auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      const int64_t low = *lo;
      const uint64_t span = static_cast<uint64_t>(*hi) - static_cast<uint64_t>(*lo) + 1;  // 0: the whole range
      for (int64_t& x : v) x = static_cast<int64_t>(static_cast<uint64_t>(low) + (span ? rng() % span : rng()));
      out.push_back(Tensor::from_int64s(t.dtype(), t.shape(), v));
    }
  }
  return out;
}

}  // namespace reprokit
