#!/usr/bin/env python3
"""Planted bugs through `reprokit fuzz`: one campaign per injection kind (each on its own op), and
one with two kinds at once on two ops. Each campaign must report exactly one distinct bug per
planted injection, whose smallest repro is that op alone (no splits, no merges).

    python3 bench/fuzz_planted.py --exe build/reprokit [--out DIR] [--graphs 6] [--jobs 1]

Prints a table (kind, op, graphs, findings, distinct bugs, their ops, seconds) and exits 1 when a
campaign does not give exactly its planted bugs.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# (name, REPRO_INJECT, {kind: op} expected). The ops drawn are the planted ones and FILLER, which
# no injection touches.
CAMPAIGNS = [
    ("compile_error", "sin:compile_error", {"compile_error": "sin"}),
    ("runtime_error", "exp:runtime_error", {"runtime_error": "exp"}),
    ("accuracy", "mul:accuracy", {"accuracy": "mul"}),
    ("crash", "tanh:crash", {"crash": "tanh"}),
    ("hang", "neg:hang", {"timeout": "neg"}),
    ("two at once", "exp:runtime_error,mul:accuracy", {"runtime_error": "exp", "accuracy": "mul"}),
]
FILLER = "add,relu,sum"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--out", default=None)
    ap.add_argument("--graphs", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="fuzz_planted.")
    os.makedirs(out, exist_ok=True)
    rows, ok_all = [], True
    for name, inject, expected in CAMPAIGNS:
        camp = os.path.join(out, name.replace(" ", "_"))
        env = dict(os.environ, REPRO_INJECT=inject)
        t0 = time.time()
        ops = ",".join([spec.split(":")[0] for spec in inject.split(",")] + [FILLER])
        r = subprocess.run([a.exe, "fuzz", "-o", camp, "--ops", ops, "--max-nodes", "4", "--max-graphs", str(a.graphs),
                            "--budget", "3600", "--seed", str(a.seed), "--timeout", "5", "--jobs", str(a.jobs)],
                           env=env, capture_output=True, text=True)
        secs = time.time() - t0
        if r.returncode != 0:
            print(f"{name}: reprokit fuzz exited {r.returncode}\n{r.stderr}", file=sys.stderr)
            ok_all = False
            continue
        rep = json.load(open(os.path.join(camp, "report.json")))
        got = {}
        for b in rep["bugs"]:
            got.setdefault(b["kind"], []).append(b["ops"])
        ok = rep["distinct_bugs"] == len(expected) and all(got.get(k) == [op] for k, op in expected.items())
        ok_all &= ok
        rows.append((name, inject, rep["counts"]["graphs"], rep["counts"]["findings"], rep["distinct_bugs"],
                     "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(got.items())), secs, "ok" if ok else "WRONG"))
    print(f"{'campaign':<14} {'REPRO_INJECT':<32} {'graphs':>6} {'findings':>8} {'bugs':>4}  {'bugs found (kind: ops)':<40} {'s':>6}")
    for n, inj, g, f, b, found, s, verdict in rows:
        print(f"{n:<14} {inj:<32} {g:>6} {f:>8} {b:>4}  {found:<40} {s:>6.1f} {verdict}")
    print(f"campaigns in {out}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
