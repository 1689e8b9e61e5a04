"""NNSmith against `reprokit fuzz` on ONNX Runtime and TVM, with the same time budget each.

    python3 bench/nnsmith_vs_reprokit.py [--budget S] [--nnsmith-python PY] [--reprokit EXE (default: $REPROKIT_EXE,
                                         build/reprokit, reprokit on PATH)]
                                         [--out DIR] [--compilers onnxruntime,tvm]
                                         [--tools nnsmith,reprokit] [--seed N]

Any Python 3 runs this script (it needs the standard library only; with `onnx` importable, NNSmith's
inconsistencies are also grouped by their models' op types, below). For each compiler it runs, one
after the other and single-threaded:

  * NNSmith (PyPI `nnsmith`, in its own virtual environment, --nnsmith-python, default
    .venv-nnsmith/bin/python in the checkout, made with `python3 -m venv .venv-nnsmith &&
    .venv-nnsmith/bin/pip install nnsmith==0.1.0 torch==2.13.0 onnx==1.23.2 onnxruntime==1.30.0
    apache-tvm==0.27.0.post1 numpy==2.4.6`; torch with its version, which takes the CPU wheel): `python -m nnsmith.cli.fuzz model.type=onnx
    backend.type=<compiler> fuzz.time=<S>s fuzz.seed=<N>`, its defaults otherwise (graphs of up to
    5 ops, its PyTorch oracle, rtol 1e-2 / atol 1e-3), ONNX Runtime with one intra-op thread,
    TVM_NUM_THREADS=OMP_NUM_THREADS=1 and torch.set_num_threads(1). The run goes through this
    script's `--nnsmith-launch` mode, which adapts NNSmith 0.1.0 (written against torch 1.13,
    onnx 1.12 and TVM 0.10) to the versions reprokit uses, and changes nothing else:
      - torch.onnx.export gets dynamo=False unless told otherwise: since torch 2.9 the default is
        the torch.export-based exporter (it needs onnxscript, and is not the exporter NNSmith's
        models were written for); dynamo=False is the TorchScript exporter NNSmith 0.1.0 calls;
      - onnx._serialize (gone from onnx) is ModelProto.SerializeToString, which it was;
      - TVM 0.27 has no Relay (NNSmith's TVMFactory imports tvm.relay and builds with
        relay.build_module.create_executor at opt_level 4), so its make_backend for ONNX models is
        replaced by the Relax equivalent reprokit's tvm backend uses: relax.frontend.onnx.from_onnx
        with NNSmith's input shapes, tvm.compile for its target (llvm), relax.VirtualMachine.
  * reprokit: `reprokit fuzz -o DIR --budget S --backend <compiler> --jobs 1 --seed N`, then
    `reprokit triage DIR --json` for the distinct bugs.

Columns: graphs tested (NNSmith: the test cases its log counts, "Total N testcases generated";
reprokit: report.json's counts.graphs, or state.json's when the campaign stopped early), graphs/s over the budget, findings (NNSmith: its bug
reports, bug-*/ in fuzz.root; reprokit: findings), distinct bugs (NNSmith has no grouping of its
own: its reports are grouped here by symptom, stage and the last line of err.log with numbers,
quoted names, addresses and paths made placeholders; an inconsistency's err.log says only which
output differs, so the column also gives the groups when an inconsistency's sorted set of op types
in its model.onnx is added to its key;
reprokit: `reprokit triage`), time from a finding to a minimal repro (reprokit minifies each
finding in the campaign: the median and largest of state.json's minify_s; NNSmith has no reducer:
"–"), and the wall and CPU seconds each process (with its children) took, start-up included.

Everything (NNSmith's fuzz.root and hydra log, reprokit's campaigns, results.json) is kept under
--out (default a new directory in /tmp).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_NNSMITH_PY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".venv-nnsmith", "bin", "python")
_BUILT = Path(__file__).resolve().parent.parent / "build" / "reprokit"
DEFAULT_REPROKIT = os.environ.get("REPROKIT_EXE") or (str(_BUILT) if _BUILT.exists() else "reprokit")
COMPILERS = ("onnxruntime", "tvm")


# ---- the launcher: runs inside NNSmith's virtual environment ------------------------------------

def nnsmith_launch(argv):
    """Adapts NNSmith 0.1.0 to torch 2.13, onnx 1.23 and TVM 0.27 (see the docstring), then runs
    the NNSmith module argv[0] with the arguments argv[1:] as `python -m` would."""
    import functools
    import runpy
    import types

    import onnx
    import torch
    import torch.onnx

    torch.set_num_threads(1)
    export = torch.onnx.export

    @functools.wraps(export)
    def export_torchscript(*args, **kwargs):
        kwargs.setdefault("dynamo", False)
        return export(*args, **kwargs)

    torch.onnx.export = export_torchscript
    if not hasattr(onnx, "_serialize"):
        onnx._serialize = lambda proto: proto.SerializeToString()

    if "backend.type=tvm" in argv:
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx

        if not hasattr(tvm, "relay"):
            # NNSmith's tvm.py does `from tvm import relay` at import; nothing of it is used below.
            tvm.relay = types.ModuleType("tvm.relay")
            sys.modules["tvm.relay"] = tvm.relay
        import nnsmith.backends.tvm as nnsmith_tvm
        from nnsmith.materialize.onnx import ONNXModel

        def flatten(value):
            if isinstance(value, (list, tuple)) or type(value).__name__ == "Array":
                return [a for v in value for a in flatten(v)]
            return [value.numpy()]

        def make_backend(self, model):
            onnx_model = model.native_model
            shape_dict = {name: list(at.shape) for name, at in model.input_like.items()}
            mod = from_onnx(onnx_model, shape_dict, keep_params_in_input=False)
            vm = relax.VirtualMachine(tvm.compile(mod, target=self.tvm_target), self.get_device())
            names = [i.name for i in onnx_model.graph.input]

            def closure(inputs):
                outputs = flatten(vm["main"](*[tvm.runtime.tensor(inputs[n]) for n in names]))
                return dict(zip(model.output_like.keys(), outputs))

            return closure

        nnsmith_tvm.TVMFactory.make_backend.add((ONNXModel,), make_backend)

    sys.argv = list(argv)
    runpy.run_module(argv[0], run_name="__main__", alter_sys=True)


# ---- running a tool -------------------------------------------------------------------------------

def run_measured(cmd, log_path, env=None):
    """Runs cmd with its output in log_path; returns (exit status, wall s, CPU s of it and its
    reaped children)."""
    start = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.monotonic() - start, usage.ru_utime + usage.ru_stime


def normalise(line):
    line = re.sub(r"0x[0-9a-fA-F]+", "<hex>", line)
    line = re.sub(r"(/[\w.\-+]+)+", "<path>", line)
    line = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "<name>", line)
    line = re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "<n>", line)
    return re.sub(r"\s+", " ", line).strip()[:300]


def onnx_op_types(model_path):
    try:
        import onnx
    except ImportError:
        return None
    try:
        return sorted({n.op_type for n in onnx.load(str(model_path)).graph.node})
    except Exception:
        return None


def nnsmith_groups(root):
    """NNSmith's bug reports under root, grouped twice: ({symptom|stage|message: [report dirs]},
    {the same with an inconsistency's op types added: [report dirs]})."""
    groups, by_ops = {}, {}
    for bug in sorted(Path(root).glob("bug-*")):
        meta = {}
        if (bug / "meta.json").exists():
            meta = json.loads((bug / "meta.json").read_text())
        log = (bug / "err.log").read_text(errors="replace") if (bug / "err.log").exists() else ""
        lines = [l for l in log.splitlines() if l.strip()]
        # An inconsistency's "<system> != <oracle> at <output>", else the exception's own line
        # (the last that names an error), else the last line.
        compared = [re.sub(r" at \S+$", "", l) for l in lines if " != " in l]
        named = [l for l in lines if re.match(r"^\s*[\w.]*(Error|Exception|NotImplemented)\w*\b", l)]
        message = normalise((compared or named or lines or ["(no err.log)"])[-1])
        symptom = meta.get("symptom", bug.name.split("-")[1] if "-" in bug.name else "?")
        stage = meta.get("stage", "?")
        signature = f"{symptom}|{stage}|{message}"
        groups.setdefault(signature, []).append(bug.name)
        if "inconsistency" in str(symptom).lower():
            model = next(iter(sorted(bug.glob("model.onnx")) or sorted(bug.glob("*.onnx"))), None)
            ops = onnx_op_types(model) if model else None
            signature += f"|ops:{','.join(ops) if ops is not None else '?'}"
        by_ops.setdefault(signature, []).append(bug.name)
    return groups, by_ops


def run_nnsmith(args, compiler, out):
    root = out / f"nnsmith-{compiler}"
    hydra_dir = out / f"nnsmith-{compiler}.hydra"
    env = dict(os.environ, TVM_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               NNSMITH_ORT_INTRA_OP_THREAD="1", PYTHONWARNINGS="ignore")
    cmd = [args.nnsmith_python, str(Path(__file__).resolve()), "--nnsmith-launch",
           "nnsmith.cli.fuzz", "model.type=onnx", f"backend.type={compiler}",
           f"fuzz.time={args.budget}s", f"fuzz.seed={args.seed}", f"fuzz.root={root}",
           f"hydra.run.dir={hydra_dir}"]
    rc, wall, cpu = run_measured(cmd, out / f"nnsmith-{compiler}.log", env)
    log = ""
    if (hydra_dir / "fuzz.log").exists():
        log = (hydra_dir / "fuzz.log").read_text(errors="replace")
    total = re.search(r"Total (\d+) testcases generated", log)
    graphs = int(total.group(1)) if total else log.count("Timing: ")
    failed_make = re.search(r"Total (\d+) failed to make testcases", log)
    groups, by_ops = nnsmith_groups(root)
    return {
        "tool": "NNSmith", "compiler": compiler, "exit": rc, "wall_s": wall, "cpu_s": cpu,
        "graphs": graphs, "findings": sum(len(v) for v in groups.values()),
        "distinct": f"{len(groups)} by message ({len(by_ops)} with op types)",
        "groups": groups, "groups_with_ops": by_ops, "repro_time": "–",
        "failed_to_make": int(failed_make.group(1)) if failed_make else None,
        "cmd": cmd, "dir": str(root),
    }


def run_reprokit(args, compiler, out):
    campaign = out / f"reprokit-{compiler}"
    cmd = [args.reprokit, "fuzz", "-o", str(campaign), "--budget", str(args.budget),
           "--backend", compiler, "--jobs", "1", "--seed", str(args.seed)]
    rc, wall, cpu = run_measured(cmd, out / f"reprokit-{compiler}.log")
    report = json.loads((campaign / "report.json").read_text()) if (campaign / "report.json").exists() else {}
    state = json.loads((campaign / "state.json").read_text()) if (campaign / "state.json").exists() else {}
    try:
        triage = subprocess.run([args.reprokit, "triage", str(campaign), "--json"],
                                capture_output=True, text=True)
        groups = json.loads(triage.stdout)
    except (OSError, json.JSONDecodeError):
        groups = None
    minify = [f["minify_s"] for f in state.get("findings", [])
              if f.get("minify") == "minimized" and "minify_s" in f]
    repro_time = (f"median {statistics.median(minify):.1f} s, max {max(minify):.1f} s "
                  f"({len(minify)} minified)") if minify else "none minified"
    counts = report.get("counts") or state.get("counts", {})
    return {
        "tool": "reprokit", "compiler": compiler, "exit": rc, "wall_s": wall, "cpu_s": cpu,
        "graphs": counts.get("graphs", 0), "findings": counts.get("findings", 0),
        "distinct": len(groups) if groups is not None else "triage failed",
        "groups": groups, "repro_time": repro_time, "summary": report.get("seconds"),
        "cmd": cmd, "dir": str(campaign),
    }


def table(rows, budget):
    head = ("| tool | compiler | graphs tested | graphs/s | findings | distinct bugs "
            "| finding → minimal repro | wall s | CPU s |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        note = "" if r["exit"] == 0 else f" (exit {r['exit']})"
        lines.append(f"| {r['tool']}{note} | {r['compiler']} | {r['graphs']} | "
                     f"{r['graphs'] / budget:.2f} | {r['findings']} | {r['distinct']} | "
                     f"{r['repro_time']} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} |")
    return "\n".join(lines)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--nnsmith-launch":
        return nnsmith_launch(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=int, default=300, help="seconds per tool per compiler")
    ap.add_argument("--nnsmith-python", default=DEFAULT_NNSMITH_PY)
    ap.add_argument("--reprokit", default=DEFAULT_REPROKIT)
    ap.add_argument("--out", default=None)
    ap.add_argument("--compilers", default=",".join(COMPILERS))
    ap.add_argument("--tools", default="nnsmith,reprokit")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="nnsmith_vs_reprokit."))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for compiler in args.compilers.split(","):
        for tool in args.tools.split(","):
            print(f"[bench] {tool} on {compiler}, {args.budget} s ...", file=sys.stderr, flush=True)
            row = (run_nnsmith if tool == "nnsmith" else run_reprokit)(args, compiler, out)
            rows.append(row)
            (out / "results.json").write_text(json.dumps(rows, indent=2, default=str))
    print(table(rows, args.budget))
    print(f"\nbudget {args.budget} s per tool per compiler; runs, logs and results.json in {out}")
    for r in rows:
        if r["tool"] == "NNSmith":
            print(f"\nNNSmith on {r['compiler']}: {r['distinct']} groups of its bug reports"
                  f" (failed to make a test case: {r['failed_to_make']}); by message:")
            for sig, bugs in r["groups"].items():
                print(f"  {len(bugs):4d}  {sig}  e.g. {bugs[0]}")
        elif isinstance(r["groups"], list):
            print(f"\nreprokit on {r['compiler']} (reprokit triage):")
            for g in r["groups"]:
                print(f"  {g.get('count', '?'):4}  {g.get('signature', '?')[:200]}")


if __name__ == "__main__":
    sys.exit(main())
