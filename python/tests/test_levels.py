"""REPRO_AFTER / REPRO_LEVEL on a real torch.compile program (examples/torch2/relu_chain.py), with
Inductor's own planted faults (torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY)."""
import json
import os

import pytest

from conftest import ROOT, bundles_in, run_under_hook

PROGRAM = os.path.join(ROOT, "examples", "torch2", "relu_chain.py")


def manifest(bundle):
    with open(os.path.join(bundle, "manifest.json")) as f:
        return json.load(f)


def hook(tmp_path, reprokit_exe, after, level, bug=None, program=PROGRAM):
    env = {"REPRO_AFTER": after, "REPRO_LEVEL": str(level), "REPRO_DIR": str(tmp_path / "out")}
    if bug:
        env["RELU_BUG"] = bug
    r = run_under_hook([program], env, str(tmp_path), reprokit_exe)
    return r, bundles_in(str(tmp_path / "out"))


def test_level4_accuracy_writes_a_bundle_and_stops_the_program(tmp_path, reprokit_exe):
    r, bundles = hook(tmp_path, reprokit_exe, "dynamo", 4, "accuracy")
    assert r.returncode != 0
    assert "ReproFailure" in r.stderr and "fails under Inductor" in r.stderr, r.stderr
    assert len(bundles) == 1, r.stderr
    m = manifest(bundles[0])
    assert m["failure"]["kind"] == "accuracy"
    assert m["spec"]["backend"] == "inductor"
    assert m["spec"]["inject"] == ["relu:accuracy"]
    assert os.access(os.path.join(bundles[0], "minifier_launcher"), os.X_OK)
    ops = [n["op"] for n in m["graph"]["nodes"]]
    assert ops == ["sin", "relu", "cos", "relu", "mul", "add"], ops  # the program's ops, as captured


def test_level4_without_a_bug_writes_nothing_and_the_program_finishes(tmp_path, reprokit_exe):
    r, bundles = hook(tmp_path, reprokit_exe, "dynamo", 4)
    assert r.returncode == 0, r.stderr
    assert "max |compiled - eager|" in r.stdout
    assert bundles == []


def test_level2_compile_error_writes_a_launcher_and_the_program_sees_its_exception(tmp_path, reprokit_exe):
    r, bundles = hook(tmp_path, reprokit_exe, "dynamo", 2, "compile_error")
    assert r.returncode != 0
    assert "CppCompileError" in r.stderr or "BackendCompilerFailed" in r.stderr, r.stderr[-2000:]
    assert len(bundles) == 1, r.stderr[-2000:]
    assert manifest(bundles[0])["failure"]["kind"] == "compile_error"
    assert os.path.exists(os.path.join(bundles[0], "minifier_launcher"))


def test_level3_runtime_error_is_recorded_before_the_program_runs_the_graph(tmp_path, reprokit_exe):
    # Inductor's runtime_error fault throws from the generated C++; PyTorch raises it as a RuntimeError.
    r, bundles = hook(tmp_path, reprokit_exe, "dynamo", 3, "runtime_error")
    assert r.returncode != 0
    assert "recorded graph dynamo_0" in r.stderr and "before compiling it" in r.stderr
    assert len(bundles) == 1, r.stderr[-2000:]
    m = manifest(bundles[0])
    assert m["failure"]["kind"] == "runtime_error", m["failure"]
    assert os.path.isdir(os.path.join(bundles[0], "original"))  # the unminified repro, written before compiling


def test_aot_level_wraps_the_graph_inductor_compiles(tmp_path, reprokit_exe):
    r, bundles = hook(tmp_path, reprokit_exe, "aot", 4, "accuracy")
    assert r.returncode != 0
    assert len(bundles) == 1, r.stderr[-2000:]
    m = manifest(bundles[0])
    assert m["failure"]["kind"] == "accuracy"
    assert m["graph"]["name"].startswith("forward_")


def test_bad_level_is_refused(tmp_path, reprokit_exe):
    r, _ = hook(tmp_path, reprokit_exe, "dynamo", 7)
    assert r.returncode == 2
    assert "REPRO_LEVEL='7'" in r.stderr


def test_a_program_that_never_compiles_says_so(tmp_path, reprokit_exe):
    program = tmp_path / "plain.py"
    program.write_text("print('no torch.compile here')\n")
    r, bundles = hook(tmp_path, reprokit_exe, "dynamo", 4, program=str(program))
    assert r.returncode == 0
    assert "never called a function compiled by torch.compile" in r.stderr
    assert bundles == []


def test_a_missing_program_is_bad_usage(tmp_path, reprokit_exe):
    r, _ = hook(tmp_path, reprokit_exe, "dynamo", 4, program=str(tmp_path / "missing.py"))
    assert r.returncode == 2
    assert "missing.py: no such file" in r.stderr
