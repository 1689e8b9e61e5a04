// `reprokit reduce MODEL --check "CMD"`: the minifier for any compiler (see reduce_model.h).
#include "command.h"
#include "reprokit/minifier/reduce_model.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/support/command_words.h"

namespace reprokit::cli {

static int run_reduce(const std::vector<std::string>& argv) {
  Args args(argv, with_session_flags({"--check", "-o", "--out", "--inputs", "--format", "--fail-regex", "--shape", "--seed"}, true),
            with_session_flags({"--hang-is-interesting", "--keep-candidates", "--allow-drift"}, false));
  if (args.positional().size() != 1) throw UsageError("expected exactly one MODEL (.rk or .onnx)");
  auto check = args.get("--check");
  if (!check) throw UsageError("--check \"CMD ...\" is required: the command that says whether a candidate is interesting");
  ReduceCommandOptions o;
  o.model = args.positional()[0];
  o.check = split_command_words(*check, "--check");
  o.session = session_options(args, 3);
  o.out_dir = args.get_or("-o", args.get_or("--out", ""));
  o.inputs_dir = args.get_or("--inputs", "");
  o.format = args.get_or("--format", "");
  o.fail_regex = args.get_or("--fail-regex", "");
  o.hang_is_interesting = args.has("--hang-is-interesting");
  o.keep_candidates = args.has("--keep-candidates");
  o.allow_drift = args.has("--allow-drift");
  long seed = args.get_int("--seed", 0);
  if (seed < 0) throw UsageError("--seed must not be negative");
  o.seed = static_cast<uint64_t>(seed);
  o.shapes = parse_shape_specs(args.get_all("--shape"));
  return reduce_model(o);
}

static CommandRegistration reg(
    {"reduce",
     "reprokit reduce MODEL.rk|MODEL.onnx --check \"CMD ...\" [-o OUT] [--inputs DIR] [--format rk|onnx] [--jobs N] [--timeout S] "
     "[--fail-regex RE] [--resume]",
     "reduce a model to the smallest one a check command still finds interesting (any compiler)",
     "  --check \"CMD ...\"    the interestingness test: run in each candidate's directory, without a shell (split into\n"
     "                      words as sh would; write sh -c '...' for pipes). {} and $REPRO_CANDIDATE are replaced by the\n"
     "                      candidate model's path (also in the environment as REPRO_CANDIDATE, and its directory as\n"
     "                      REPRO_CANDIDATE_DIR; its inputs are in inputs/<input name>.npy). Interesting: a non-zero exit\n"
     "                      status (a crash counts); 126 or 127 (not executable, not found) is an error, not an answer\n"
     "  --fail-regex RE     interesting instead when stdout+stderr match RE, whatever the exit status (RE2: ECMAScript's\n"
     "                      syntax without backreferences or lookaround, in time linear in the output)\n"
     "  --hang-is-interesting  a check killed at --timeout counts as interesting (default: not interesting)\n"
     "  --allow-drift       any failure of the check counts; by default a candidate must fail the way the original did\n"
     "                      (same exit status or signal, same first line of output or --fail-regex match, numbers and\n"
     "                      paths aside), so the reduction cannot slide to another bug\n"
     "  -o, --out OUT       where the repro goes (default: MODEL's stem + .reduced); never over another run's files\n"
     "  --inputs DIR        input values as DIR/<input name>.npy (default: an ONNX model's weights, random for the rest);\n"
     "                      an ONNX input's file is named after its ONNX name, else after reprokit's name for it\n"
     "  --shape NAME:[d,..] (.onnx) the shape of an input with dynamic dimensions; repeatable\n"
     "  --seed S            seed of the random inputs (default 0)\n"
     "  --format rk|onnx    the format candidates are written in (default: MODEL's)\n"
     "  --jobs N            checks run at once (default 1); the result does not depend on N\n"
     "  --timeout S         least seconds per check (default: 3x the original's + 5, at least 10); the limit grows with\n"
     "                      what candidates cost; a check past it is stopped (SIGTERM, then SIGKILL), asked again with\n"
     "                      twice the limit, then is unknown (never 'not interesting'); with --hang-is-interesting it\n"
     "                      is the hang threshold\n"
     "  --worker-prefix CMD run every check under this launcher, e.g. \"srun -N1 -n1 --gres=gpu:1\" (see docs/CLUSTER.md)\n"
     "  --work-dir DIR      where candidate directories go (default OUT/reduce_work; on a cluster, a shared directory)\n"
     "  --keep-candidates   keep every candidate's directory (default: removed once judged)\n"
     "  --resume            continue from the best repro an interrupted run left in OUT (an OUT that holds no\n"
     "                      reduction is refused, never written into)\n"
     "  --flaky-checks N    most runs of the original, to measure a flaky check (default 3)\n"
     "  --only A,B / --skip A,B  strategies to run or not (`reprokit minify --list-strategies`; compiler ones do not apply;\n"
     "                           named-in-failure: the nodes the failure names, tried alone first)\n"
     "  --no-verify         skip the final check of the repro in a fresh run\n"
     "exit status: 0 reduced and verified; 1 the original is not interesting, or the final repro is not; 2 bad input",
     run_reduce});

}  // namespace reprokit::cli
