"""A planted Inductor bug of each kind, captured from a real torch.compile program and minified by
reprokit (`reprokit minify`, candidates compiled by Inductor in long-lived workers) to one op."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, bundles_in, run_under_hook

PROGRAM = os.path.join(ROOT, "examples", "torch2", "relu_chain.py")


@pytest.mark.parametrize("bug,level,kind", [("compile_error", 2, "compile_error"), ("runtime_error", 3, "runtime_error"),
                                            ("accuracy", 4, "accuracy")])
def test_a_planted_inductor_bug_minifies_to_the_one_relu(bug, level, kind, tmp_path, reprokit_exe):
    r = run_under_hook([PROGRAM], {"REPRO_AFTER": "dynamo", "REPRO_LEVEL": str(level), "REPRO_DIR": str(tmp_path / "out"),
                                   "RELU_BUG": bug}, str(tmp_path), reprokit_exe)
    (bundle,) = bundles_in(str(tmp_path / "out"))
    m = subprocess.run([reprokit_exe, "minify", bundle, "--jobs", "1"], capture_output=True, text=True, timeout=900)
    assert m.returncode == 0, m.stdout + m.stderr
    assert "verified: REPRODUCED in a fresh process" in m.stdout, m.stdout
    with open(os.path.join(bundle, "repro.rk")) as f:
        body = [l.strip() for l in f if l.startswith("  %")]
    assert len(body) == 1 and " = relu(" in body[0], body
    with open(os.path.join(bundle, "report.json")) as f:
        report = json.load(f)
    assert report["failure"]["kind"] == kind, report["failure"]
    # The repro reruns in a fresh process through the same Inductor worker.
    again = subprocess.run([reprokit_exe, "repro", os.path.join(bundle, "repro.rk")], capture_output=True, text=True, timeout=600)
    assert again.returncode == 1 and f"REPRODUCED: {kind}" in again.stdout, again.stdout + again.stderr
    # The script a PyTorch user attaches compiles the one op with Inductor as the program did.
    script = subprocess.run([sys.executable, "repro_torch.py"], capture_output=True, text=True, cwd=bundle, timeout=600)
    assert script.returncode == 1, script.stdout + script.stderr
    assert "REPRODUCED" in script.stdout and 'torch.compile(backend="inductor")' in script.stdout, script.stdout
    with open(os.path.join(bundle, "BUG_REPORT.md")) as f:
        report_text = f.read()
    assert f'cpp.inject_relu_bug_TESTING_ONLY = "{bug}"' in report_text, report_text
