"""PyTorch's own minifier and reprokit's, side by side on the same programs and the same planted
Inductor bugs (torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY).

For each case (program x bug x REPRO_AFTER level), in a fresh directory:
  PyTorch:  TORCHDYNAMO_REPRO_AFTER=A TORCHDYNAMO_REPRO_LEVEL=L python PROGRAM, then
            python .../minifier_launcher.py minify (its "Made N queries"), then python repro.py
  reprokit: REPRO_AFTER=A REPRO_LEVEL=L python -m reprokit.torch PROGRAM, then reprokit minify
            BUNDLE (its "N queries"), then reprokit repro repro.rk
and one table: wall time of the whole flow (program to minimal repro) and of the program's own
run within it, queries, ops left, and whether the repro reproduces in a fresh process. L is 4
for accuracy, 2 otherwise (3 for reprokit's runtime_error: Inductor's fault aborts nothing, but
level 3 records before running).

  .venv/bin/python bench/torch2_minifier_vs_pytorch.py [--models relu_chain,gpt2_block,resnet18]
      [--bugs compile_error,runtime_error,accuracy] [--after dynamo,aot] [--timeout S]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROGRAM = os.path.join(HERE, "torch2_program.py")


def reprokit_exe():
    return os.environ.get("REPROKIT_EXE") or os.path.join(ROOT, "build", "reprokit")


def run(argv, env, cwd, timeout):
    t0 = time.monotonic()
    try:
        r = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return r, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0


def base_env(bug):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPRO_", "TORCHDYNAMO_REPRO"))}
    env["RELU_BUG"] = bug
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    env["REPROKIT_EXE"] = reprokit_exe()
    return env


def level_of(bug):
    return 4 if bug == "accuracy" else 2


def count_repro_ops(path):
    """Calls in the forward of PyTorch's repro.py (one per op of its FX graph)."""
    ops, inside = 0, False
    with open(path) as f:
        for line in f:
            if re.match(r"\s+def forward\(", line):
                inside = True
                continue
            if inside:
                if re.match(r"\s+return\b", line):
                    break
                statement = line.split(";")[0]  # "x_3 = torch.relu(x_2);  x_2 = None"
                if re.match(r"\s+\w+ = .*\(", statement):
                    ops += 1
    return ops


def pytorch_flow(model, bug, after, timeout):
    work = tempfile.mkdtemp(prefix=f"pt-{model}-{bug}-{after}-")
    env = base_env(bug)
    env.update(TORCHDYNAMO_REPRO_AFTER=after, TORCHDYNAMO_REPRO_LEVEL=str(level_of(bug)))
    t = 0.0
    r, dt = run([sys.executable, PROGRAM, model], env, work, timeout)
    t += dt
    program = dt
    launchers = glob.glob(os.path.join(work, "torch_compile_debug", "**", "minifier_launcher.py"), recursive=True)
    if r is None or not launchers:
        return {"time": t, "program": program, "queries": "-", "ops": "-", "reproduces": "no launcher", "dir": work}
    env.pop("TORCHDYNAMO_REPRO_AFTER")
    env.pop("TORCHDYNAMO_REPRO_LEVEL")
    r, dt = run([sys.executable, launchers[0], "minify"], env, os.path.dirname(launchers[0]), timeout)
    t += dt
    if r is None:
        return {"time": t, "program": program, "queries": "-", "ops": "-", "reproduces": f"minify > {timeout}s", "dir": work}
    m = re.search(r"Made (\d+) queries", r.stderr)
    repros = sorted(glob.glob(os.path.join(work, "**", "repro.py"), recursive=True), key=os.path.getmtime)
    if not m or not repros:
        return {"time": t, "program": program, "queries": m.group(1) if m else "-", "ops": "-", "reproduces": "no repro.py", "dir": work}
    again, _ = run([sys.executable, repros[-1]], env, os.path.dirname(repros[-1]), timeout)
    return {"time": t, "program": program, "queries": int(m.group(1)), "ops": count_repro_ops(repros[-1]),
            "reproduces": "yes" if again is not None and again.returncode != 0 else "no", "dir": work}


def reprokit_flow(model, bug, after, timeout):
    work = tempfile.mkdtemp(prefix=f"rk-{model}-{bug}-{after}-")
    env = base_env(bug)
    level = 3 if bug == "runtime_error" else level_of(bug)
    env.update(REPRO_AFTER=after, REPRO_LEVEL=str(level), REPRO_DIR=os.path.join(work, "out"))
    t = 0.0
    r, dt = run([sys.executable, "-m", "reprokit.torch", PROGRAM, model], env, work, timeout)
    t += dt
    program = dt
    out = os.path.join(work, "out")
    bundles = [os.path.join(out, d) for d in os.listdir(out)] if os.path.isdir(out) else []
    bundles = [b for b in bundles if os.path.exists(os.path.join(b, "manifest.json"))]
    if r is None or not bundles:
        return {"time": t, "program": program, "queries": "-", "ops": "-", "reproduces": "no bundle", "dir": work}
    r, dt = run([reprokit_exe(), "minify", bundles[0]], env, work, timeout)
    t += dt
    m = re.search(r"(\d+) -> (\d+) ops, .*?(\d+) queries", r.stdout if r else "")
    if r is None or r.returncode != 0 or not m:
        return {"time": t, "program": program, "queries": "-", "ops": "-", "reproduces": "minify failed", "dir": work}
    again, _ = run([reprokit_exe(), "repro", os.path.join(bundles[0], "repro.rk")], env, work, timeout)
    script, _ = run([sys.executable, "repro_torch.py"], env, bundles[0], timeout)
    # `reprokit repro` says REPRODUCED with exit 1; repro_torch.py exits 1 on the failure, or dies with
    # the compiled code (Inductor's planted runtime error aborts the interpreter), judged as
    # PyTorch's repro.py is: any non-zero status.
    ok = again is not None and again.returncode == 1 and script is not None and script.returncode != 0
    return {"time": t, "program": program, "queries": int(m.group(3)), "ops": int(m.group(2)), "reproduces": "yes" if ok else "no", "dir": work}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="relu_chain,gpt2_block,resnet18")
    p.add_argument("--bugs", default="compile_error,runtime_error,accuracy")
    p.add_argument("--after", default="dynamo,aot")
    p.add_argument("--timeout", type=float, default=1800)
    a = p.parse_args()
    import torch

    print(f"torch {torch.__version__}, reprokit {reprokit_exe()}, {os.cpu_count()} cores; wall time of program -> minimal repro")
    # "program": the program's own run, which both flows start with (it compiles the whole graph);
    # the rest of each time is the minifier's.
    header = (f"{'case':38} | {'PyTorch s':>9} {'program':>7} {'queries':>7} {'ops':>4} {'repro?':>11} | "
              f"{'reprokit s':>10} {'program':>7} {'queries':>7} {'ops':>4} {'repro?':>8} | {'time ratio':>10}")
    print(header)
    print("-" * len(header))
    for model in a.models.split(","):
        for bug in a.bugs.split(","):
            for after in a.after.split(","):
                pt = pytorch_flow(model, bug, after, a.timeout)
                rk = reprokit_flow(model, bug, after, a.timeout)
                ratio = f"{rk['time'] / pt['time']:.2f}" if pt["time"] > 0 else "-"
                print(f"{model + ' ' + bug + ' ' + after:38} | {pt['time']:9.1f} {pt['program']:7.1f} {pt['queries']!s:>7} {pt['ops']!s:>4} {pt['reproduces']:>11} | "
                      f"{rk['time']:10.1f} {rk['program']:7.1f} {rk['queries']!s:>7} {rk['ops']!s:>4} {rk['reproduces']:>8} | {ratio:>10}", flush=True)


if __name__ == "__main__":
    main()
