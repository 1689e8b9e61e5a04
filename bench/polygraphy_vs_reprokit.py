"""NVIDIA Polygraphy's `polygraphy debug reduce` and `reprokit reduce`, side by side on the same
failing ONNX models with the same check (bench/reduce_check.py), in one Markdown table.

  .venv/bin/python bench/polygraphy_vs_reprokit.py [--cases a,b] [--timeout S] [--work DIR]
      [--exporter-python PY] [--reprokit EXE] [--flaky-checks N] [--keep]

Each case's model is exported into a scratch directory by --exporter-python (default: Debian's
/usr/bin/python3 when it has torch and torchvision, else this Python) running this file with
`--build CASE OUT.onnx`: random weights, no downloads. Then, each in a directory of its own:

  Polygraphy: polygraphy debug reduce MODEL -o bisect.onnx --mode=bisect
                  --iter-artifact cand.onnx --check PY reduce_check.py ... cand.onnx
              and a second pass on its output, --mode=linear -o linear.onnx, as Polygraphy's help
              advises ("use 'bisect' first, and then further reduce the result with 'linear'").
              Polygraphy writes each candidate to --iter-artifact and runs the check as given (no
              placeholder), so the check names that path; a non-zero exit status is a failure.
  reprokit:   reprokit reduce MODEL --check "PY reduce_check.py ... {}" -o OUT (its defaults: the
              original is run up to 3 times first, and the repro once more at the end, in a fresh
              run; all of them are counted here). --flaky-checks N is handed to it: 1 runs the
              original once, as a reducer that takes the failure to be steady does (Polygraphy
              runs it never).

Per tool: wall time of the whole reduction (both passes for Polygraphy), the checks it ran
(counted by the check itself, REDUCE_CHECK_COUNTER, not by either tool), the nodes of the model it
left (Constant nodes included, counted apart; the op types when 4 or fewer), and whether that
model reproduces: the check run once more on it in a fresh process, exit status 1. A tool that
fails or runs past --timeout (per pass) gets its message in the table instead; when Polygraphy
fails, it is run once more on the model after `polygraphy surgeon sanitize --fold-constants` (what
its help advises for a model with shape operations), in a row of its own beside the same reprokit
run. The ratios are reprokit's over Polygraphy's, where neither failed.

Needs polygraphy and onnx-graphsurgeon in this Python (python/requirements.lock pins them),
onnxruntime and onnx; the exporter needs torch (torchvision for efficientnet_b0_f64).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHECK = os.path.join(HERE, "reduce_check.py")

# name -> (what the model is, the check's arguments before the model's path)
CASES = {
    "quickgelu_mlp_f64": (
        "float64 MLP with SiLU: ORT's QuickGeluFusion makes a float64 com.microsoft.QuickGelu, "
        "which has no kernel",
        ["session-error", "QuickGelu"]),
    "padfusion_cnn": (
        "CNN with ZeroPad2d((2, 3, 0, 0)) -> AvgPool2d((1, 2)): ORT's Pad fusion makes pads larger "
        "than the kernel ('Pad should be smaller than kernel')",
        ["session-error", "Pad should be smaller than kernel"]),
    "efficientnet_b0_f64": (
        "torchvision efficientnet_b0 (random weights) in float64: ORT has no float64 Conv",
        ["session-error", r"NOT_IMPLEMENTED.*Conv"]),
    "sin_mul_planted": (
        "about 60 nodes (Gemm, Tanh, Sin, Mul, Add, ...) where one Sin feeds a Mul; the check "
        "fails on that pattern",
        ["sin-mul"]),
    "big_value_planted": (
        "about 60 nodes of bounded activations and one Mul by 1000 whose value reaches the "
        "output; the check fails when ORT's output holds a value above 100",
        ["output-above", "100"]),
}


# ---- models (run under the exporter's Python) ----

def build(case, out):
    import torch
    nn = torch.nn
    torch.manual_seed(0)

    if case == "quickgelu_mlp_f64":
        class Mlp(nn.Module):
            def __init__(self):
                super().__init__()
                self.inp = nn.Linear(32, 64)
                self.hidden = nn.ModuleList(nn.Linear(64, 64) for _ in range(4))
                self.norm = nn.LayerNorm(64)
                self.out = nn.Linear(64, 10)

            def forward(self, x):
                h = torch.tanh(self.inp(x))
                for layer in self.hidden:
                    h = h + nn.functional.silu(layer(h))
                return torch.softmax(self.out(self.norm(h)), dim=-1)
        model, x = Mlp().double(), torch.randn(4, 32, dtype=torch.float64)
    elif case == "padfusion_cnn":
        class Cnn(nn.Module):
            def __init__(self):
                super().__init__()
                self.c1 = nn.Conv2d(3, 8, 3, padding=1)
                self.c2 = nn.Conv2d(8, 8, 3, padding=1)
                self.pad = nn.ZeroPad2d((2, 3, 0, 0))  # last dim: 2 before, 3 after
                self.pool = nn.AvgPool2d((1, 2))
                self.c3 = nn.Conv2d(8, 16, 3, padding=1)
                self.c4 = nn.Conv2d(16, 16, 3, padding=1)
                self.fc = nn.Linear(16, 10)

            def forward(self, x):
                h = torch.relu(self.c2(torch.relu(self.c1(x))))
                h = self.pool(self.pad(h))
                h = torch.relu(self.c4(torch.relu(self.c3(h))))
                h = nn.functional.adaptive_avg_pool2d(h, 1).flatten(1)
                return self.fc(h)
        model, x = Cnn(), torch.randn(1, 3, 16, 16)
    elif case == "efficientnet_b0_f64":
        import torchvision
        model = torchvision.models.efficientnet_b0(weights=None).double()
        x = torch.randn(1, 3, 224, 224, dtype=torch.float64)
    elif case == "sin_mul_planted":
        class Planted(nn.Module):
            def __init__(self):
                super().__init__()
                self.fcs = nn.ModuleList(nn.Linear(32, 32) for _ in range(10))

            def forward(self, x):
                h = x
                for k, fc in enumerate(self.fcs):
                    y = fc(h)
                    if k == 6:
                        y = torch.sin(y) * 3.0                # the planted pattern
                    elif k % 3 == 0:
                        y = torch.sin(y) + 0.5 * torch.tanh(y)  # Sin, but feeding an Add
                    else:
                        y = torch.tanh(y) * torch.sigmoid(y)  # Mul, but not of a Sin
                    h = h + y
                    h = h - h.mean(dim=-1, keepdim=True)
                return h
        model, x = Planted(), torch.randn(4, 32)
    elif case == "big_value_planted":
        class Planted(nn.Module):
            def __init__(self):
                super().__init__()
                self.fcs = nn.ModuleList(nn.Linear(32, 32) for _ in range(10))
                self.norm = nn.LayerNorm(32)

            def forward(self, x):
                h, big = torch.tanh(x), None
                for k, fc in enumerate(self.fcs):
                    y = torch.tanh(fc(h)) * torch.sigmoid(h)
                    h = torch.tanh(h + y)
                    if k == 4:
                        big = h * 1000.0                      # the only node that leaves [-100, 100]
                    h = self.norm(h) if k % 3 == 2 else h
                return torch.softmax(h, dim=-1) + big
        model, x = Planted(), torch.randn(4, 32)
    else:
        raise SystemExit(f"unknown case {case}")
    torch.onnx.export(model.eval(), x, out, opset_version=13, input_names=["x"], output_names=["y"])


# ---- the benchmark (run under the Python that has polygraphy) ----

def nodes_text(path):
    """The node count; a small model's op types too, since a node count alone does not say
    whether the culprit is among them."""
    import onnx
    g = onnx.load(path).graph
    n, const = len(g.node), sum(n.op_type == "Constant" for n in g.node)
    text = f"{n} ({const} Constant)" if const else str(n)
    if n <= 4:
        text += " " + ", ".join(x.op_type for x in g.node)
    return text


def counted(counter):
    if not os.path.exists(counter):
        return 0
    with open(counter) as f:
        return sum(1 for _ in f)


def run(argv, cwd, env, timeout, log):
    t0 = time.monotonic()
    with open(log, "w") as f:
        f.write("$ " + " ".join(argv) + "\n")
        f.flush()
        try:
            r = subprocess.run(argv, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT,
                               timeout=timeout)
            rc = r.returncode
        except subprocess.TimeoutExpired:
            rc = None
    return rc, time.monotonic() - t0


def shorten(line, head=110, tail=70):
    return line if len(line) <= head + tail + 5 else line[:head] + " ... " + line[-tail:]


def tail_message(log):
    """What a tool said when it stopped: the last line of its log, and before it the last line
    of Polygraphy's own log ("[I] ...", "[W] ...") when that is not the same line."""
    with open(log, errors="replace") as f:
        lines = [l.strip() for l in f if l.strip()]
    if not lines:
        return "(no output)"
    last = shorten(lines[-1])
    tagged = [l for l in lines if l[:3] in ("[I]", "[W]", "[E]", "[!]") and "Could not clean up" not in l]
    if tagged and tagged[-1] != lines[-1]:
        return f"{shorten(tagged[-1])} — {last}"
    return last


def reproduces(check_args, model, env):
    """The check once more on a tool's output, in a fresh process and directory, uncounted."""
    env = {k: v for k, v in env.items() if k != "REDUCE_CHECK_COUNTER"}
    d = tempfile.mkdtemp(prefix="recheck-")
    try:
        dst = os.path.join(d, "model.onnx")
        shutil.copy(model, dst)
        r = subprocess.run([sys.executable, CHECK, *check_args, dst], cwd=d, env=env,
                           capture_output=True, text=True)
        return "yes" if r.returncode == 1 else f"no (exit {r.returncode})"
    finally:
        shutil.rmtree(d, ignore_errors=True)


def polygraphy_flow(model, check_args, work, env, timeout, sanitize=False):
    os.makedirs(work)
    counter = os.path.join(work, "checks.txt")
    env = dict(env, REDUCE_CHECK_COUNTER=counter)
    cand = os.path.join(work, "cand.onnx")
    exe = os.path.join(os.path.dirname(sys.executable), "polygraphy")
    total, src, res = 0.0, model, {}
    if sanitize:
        # What `debug reduce --help` advises for a model with shape operations: fold them first.
        folded = os.path.join(work, "folded.onnx")
        log = os.path.join(work, "sanitize.log")
        rc, dt = run([exe, "surgeon", "sanitize", model, "--fold-constants", "-o", folded],
                     work, env, timeout, log)
        total += dt
        if rc != 0 or not os.path.exists(folded):
            res.update(time=total, checks=counted(counter),
                       error=f"surgeon sanitize: exit {rc}: {tail_message(log)}")
            return res
        src = folded
    for mode in ("bisect", "linear"):
        out = os.path.join(work, f"{mode}.onnx")
        log = os.path.join(work, f"{mode}.log")
        argv = [exe, "debug", "reduce", src, "-o", out, f"--mode={mode}", "--iter-artifact", cand,
                "--check", sys.executable, CHECK, *check_args, cand]
        rc, dt = run(argv, work, env, timeout, log)
        total += dt
        if rc is None:
            res["error"] = f"{mode} pass: timed out after {timeout:g} s"
            break
        if rc != 0 or not os.path.exists(out):
            res["error"] = f"{mode} pass: exit {rc}: {tail_message(log)}"
            break
        res[f"nodes_{mode}"] = nodes_text(out)
        src = out
    res.update(time=total, checks=counted(counter))
    if "error" not in res:
        res["nodes"] = f"{res['nodes_bisect']} → {res['nodes_linear']}"
        res["reproduces"] = reproduces(check_args, src, env)
    return res


def reprokit_flow(reprokit, model, check_args, work, env, timeout, flaky_checks=None):
    os.makedirs(work)
    counter = os.path.join(work, "checks.txt")
    env = dict(env, REDUCE_CHECK_COUNTER=counter)
    out = os.path.join(work, "out")
    check = " ".join([sys.executable, CHECK, *["'" + a + "'" for a in check_args], "{}"])
    log = os.path.join(work, "reduce.log")
    flags = ["--flaky-checks", str(flaky_checks)] if flaky_checks else []
    rc, dt = run([reprokit, "reduce", model, "--check", check, "-o", out, *flags], work, env, timeout, log)
    res = dict(time=dt, checks=counted(counter))
    repro = os.path.join(out, "repro.onnx")
    if rc is None:
        res["error"] = f"timed out after {timeout:g} s"
    elif not os.path.exists(repro):
        res["error"] = f"exit {rc}: {tail_message(log)}"
    else:
        if rc != 0:
            res["note"] = f"exit {rc}"
        res["nodes"] = nodes_text(repro)
        res["reproduces"] = reproduces(check_args, repro, env)
    return res


def exporter_default():
    deb = "/usr/bin/python3"
    if os.path.exists(deb) and subprocess.run(
            [deb, "-c", "import torch, torchvision"], capture_output=True).returncode == 0:
        return deb
    return sys.executable


def cell_time(r):
    return f"{r['time']:.1f} s"


def ratio(a, b):
    return f"{a / b:.2f}" if b else "–"


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--build":
        build(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per tool run (default 1800)")
    ap.add_argument("--work", help="scratch directory (default: a new one under $TMPDIR)")
    ap.add_argument("--exporter-python", default=None)
    ap.add_argument("--reprokit", default=os.environ.get("REPROKIT_EXE") or os.path.join(ROOT, "build", "reprokit"))
    ap.add_argument("--flaky-checks", type=int, default=None,
                    help="handed to reprokit reduce: most runs of the original (its default 3)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            ap.error(f"unknown case {c} (known: {', '.join(CASES)})")
    exporter = args.exporter_python or exporter_default()
    reprokit = os.path.abspath(args.reprokit)
    if not os.access(reprokit, os.X_OK):
        ap.error(f"no reprokit at {reprokit} (build it, or name it with --reprokit or REPROKIT_EXE)")
    work = args.work or tempfile.mkdtemp(prefix="polygraphy-vs-reprokit-")
    os.makedirs(work, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_")}
    env["REPROKIT_EXE"] = reprokit
    env.setdefault("OMP_NUM_THREADS", "1")

    import onnx
    import polygraphy
    import onnx_graphsurgeon
    import onnxruntime
    print(f"polygraphy {polygraphy.__version__}, onnx-graphsurgeon {onnx_graphsurgeon.__version__}, "
          f"onnxruntime {onnxruntime.__version__}, onnx {onnx.__version__}; exporter {exporter}; "
          f"work {work}", file=sys.stderr)

    rows = []
    for case in cases:
        desc, check_args = CASES[case]
        d = os.path.join(work, case)
        os.makedirs(d)
        model = os.path.join(d, "model.onnx")
        r = subprocess.run([exporter, os.path.abspath(__file__), "--build", case, model],
                           cwd=d, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(model):
            rows.append((f"`{case}`", "export failed: " + (r.stderr.strip().splitlines() or ["?"])[-1], None, None))
            continue
        print(f"[{case}] {nodes_text(model)} nodes: {desc}", file=sys.stderr)
        p = polygraphy_flow(model, check_args, os.path.join(d, "polygraphy"), env, args.timeout)
        print(f"[{case}] polygraphy: {p}", file=sys.stderr)
        k = reprokit_flow(reprokit, model, check_args, os.path.join(d, "reprokit"), env, args.timeout, args.flaky_checks)
        print(f"[{case}] reprokit: {k}", file=sys.stderr)
        rows.append((f"`{case}`", nodes_text(model), p, k))
        if "error" in p:
            # Polygraphy once more on the model its help says to prepare: constants folded.
            p2 = polygraphy_flow(model, check_args, os.path.join(d, "polygraphy-sanitized"), env,
                                 args.timeout, sanitize=True)
            print(f"[{case}] polygraphy after surgeon sanitize --fold-constants: {p2}", file=sys.stderr)
            rows.append((f"`{case}`, Polygraphy after `surgeon sanitize --fold-constants`",
                         nodes_text(model), p2, k))

    print("| case | nodes | Polygraphy time | Polygraphy checks | Polygraphy nodes left (bisect → linear) "
          "| reproduces | reprokit time | reprokit checks | reprokit nodes left | reproduces "
          "| time reprokit/Polygraphy | checks reprokit/Polygraphy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for case, nodes, p, k in rows:
        if p is None:
            print(f"| {case} | {nodes} |" + " |" * 10)
            continue
        cells = [case, nodes]
        for r in (p, k):
            cells += [cell_time(r), str(r["checks"])]
            if "error" in r:
                cells += [f"failed: {r['error']}".replace("|", "\\|"), "–"]
            else:
                cells += [r["nodes"] + (f" ({r['note']})" if "note" in r else ""), r["reproduces"]]
        if "error" in p or "error" in k:  # a run that failed part way is no basis for a ratio
            cells += ["–", "–"]
        else:
            cells += [ratio(k["time"], p["time"]), ratio(k["checks"], p["checks"])]
        print("| " + " | ".join(cells) + " |")
    if not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    elif args.keep or args.work:
        print(f"scratch kept in {work}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
