// `reprokit generate -o DIR`: random valid graphs from the op table with searched input values
// (campaign/graph_generator.h), written as DIR/<graph>/model.rk + inputs/, ready for `run`,
// `reduce` or any compiler's check.
#include <fmt/core.h>

#include <chrono>

#include "command.h"
#include "reprokit/campaign/graph_generator.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/files.h"

namespace reprokit::cli {

static std::set<Op> op_set(const std::string& csv, const char* flag) {
  std::set<Op> ops;
  for (const std::string& name : csv_items(csv)) {
    const OpSchema* s = find_op(name);
    if (!s) throw UsageError(fmt::format("{}: '{}' is not an op (reprokit's ops are those of docs/DESIGN.md's op set)", flag, name));
    ops.insert(s->op);
  }
  if (ops.empty()) throw UsageError(fmt::format("{} expects op names A,B,...", flag));  // empty is not "every op"
  return ops;
}

GeneratorOptions generator_options(const Args& args) {
  const long max_nodes = args.get_int("--max-nodes", 8);
  if (max_nodes < 1 || max_nodes > 200) throw UsageError(fmt::format("--max-nodes expects 1..200, got {}", max_nodes));
  if (args.get("--ops") && args.get("--skip-ops")) throw UsageError("--ops and --skip-ops exclude each other");
  GeneratorOptions o;
  o.max_nodes = static_cast<int>(max_nodes);
  o.train = args.has("--train");
  if (auto ops = args.get("--ops")) o.ops = op_set(*ops, "--ops");
  if (auto skip = args.get("--skip-ops")) {
    o.ops = all_fuzzable_ops();
    for (Op op : op_set(*skip, "--skip-ops")) o.ops.erase(op);
    if (o.ops.empty()) throw UsageError("--skip-ops leaves no op to generate");
  }
  return o;
}

static int run_generate(const std::vector<std::string>& argv) {
  Args args(argv, {"-o", "--count", "--seed", "--max-nodes", "--ops", "--skip-ops"}, {"--train"});
  if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional()[0] + "'");
  if (!args.get("-o")) throw UsageError("-o DIR is required");
  const long count = args.get_int("--count", 10), seed = args.get_int("--seed", 1);
  if (count < 1 || count > 1000000) throw UsageError(fmt::format("--count expects 1..1000000, got {}", count));
  if (seed < 0) throw UsageError(fmt::format("--seed expects a non-negative integer, got {}", seed));
  const GeneratorOptions o = generator_options(args);
  Dir out = Dir::create(*args.get("-o"));
  long made = 0, no_graph = 0, no_values = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < count; ++i) {
    GenerateOutcome why;
    auto c = generate_case(static_cast<uint64_t>(seed) * 1000003ULL + static_cast<uint64_t>(i), o, &why);
    if (!c) {
      (why == GenerateOutcome::no_graph ? no_graph : no_values)++;
      continue;
    }
    if (!out.make_new_dir(c->graph.name)) throw UserError(fmt::format("{}: already exists; nothing was overwritten", out.path(c->graph.name)));
    Dir d = out.sub(c->graph.name);
    d.write("model.rk", print_graph(c->graph));
    Dir in = d.sub("inputs", true);
    for (int k = 0; k < c->graph.num_inputs(); ++k) in.write(c->graph.node(k).name + ".npy", encode_npy(c->inputs[static_cast<size_t>(k)]));
    ++made;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("reprokit generate: {} graphs in {} ({:.1f} graphs/s); {} seeds gave no graph, {} no finite values\n", made, out.path(),
             made / std::max(s, 1e-9), no_graph, no_values);
  return made > 0 ? 0 : 1;
}

static CommandRegistration reg({"generate", "reprokit generate -o DIR [--count N] [--seed S] [--max-nodes N] [--ops A,B|--skip-ops A,B] [--train]",
                                "random valid graphs from the op table, with input values that keep the float64 reference finite",
                                "  -o DIR          write DIR/<graph>/model.rk and DIR/<graph>/inputs/<input>.npy (never overwriting)\n"
                                "  --count N       graphs to generate (default 10)\n"
                                "  --seed S        the campaign seed (default 1); graph i uses seed S * 1000003 + i\n"
                                "  --max-nodes N   ops per graph, 1..N (default 8)\n"
                                "  --ops A,B       only these ops; --skip-ops A,B: every op but these\n"
                                "  --train         floating inputs require grad (the graphs run with `reprokit run --train`)",
                                run_generate});

}  // namespace reprokit::cli
