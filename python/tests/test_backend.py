"""`--backend inductor` on the command line: options applied in the worker, what it refuses."""
import os
import subprocess

import pytest

GRAPH = """graph chain(%x: f32[4, 8]) {
  %s = sin(%x)
  %r = relu(%s)
  %o = mul(%r, 2.0)
  return (%o)
}
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "chain.rk"
    path.write_text(GRAPH)
    return str(path)


def run(reprokit_exe, args, cwd, **env):
    e = dict(os.environ, REPRO_DIR=os.path.join(cwd, "out"))
    e.update(env)
    return subprocess.run([reprokit_exe, "run"] + args, capture_output=True, text=True, cwd=cwd, env=e, timeout=600)


def test_a_graph_runs_through_inductor(model, tmp_path, reprokit_exe):
    r = run(reprokit_exe, [model, "--backend", "inductor", "--save-outputs", "outs"], str(tmp_path), REPRO_AFTER="dynamo", REPRO_LEVEL="4")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "outs" / "o.npy").exists()


def test_an_inductor_option_reaches_the_worker(model, tmp_path, reprokit_exe):
    # Inductor's own testing option, given as a backend option, breaks relu's generated code.
    r = run(reprokit_exe, [model, "--backend", "inductor", "--backend-option", "cpp.inject_relu_bug_TESTING_ONLY=accuracy"], str(tmp_path),
            REPRO_AFTER="dynamo", REPRO_LEVEL="4")
    assert r.returncode == 1, r.stderr
    assert "accuracy in stage dynamo of graph chain (inductor backend)" in r.stderr, r.stderr


def test_an_unknown_inductor_option_is_bad_input(model, tmp_path, reprokit_exe):
    r = run(reprokit_exe, [model, "--backend", "inductor", "--backend-option", "no_such.option=1"], str(tmp_path))
    assert r.returncode == 2, r.stderr
    assert "torch._inductor.config has no option 'no_such.option'" in r.stderr, r.stderr


def test_a_fault_inductor_cannot_plant_is_refused(model, tmp_path, reprokit_exe):
    r = run(reprokit_exe, [model, "--backend", "inductor", "--inject", "sin:accuracy"], str(tmp_path))
    assert r.returncode == 2
    assert "Inductor can plant only relu:compile_error, relu:runtime_error or relu:accuracy" in r.stderr, r.stderr


def test_a_missing_interpreter_says_how_to_get_one(model, tmp_path, reprokit_exe):
    r = run(reprokit_exe, [model, "--backend", "inductor"], str(tmp_path), REPROKIT_PYTHON=str(tmp_path / "no-python"))
    assert r.returncode == 2, r.stderr
    assert "the inductor backend needs Python with torch 2" in r.stderr, r.stderr


def test_a_bundle_whose_backend_option_is_not_a_plain_value_is_refused(model, tmp_path, reprokit_exe):
    r = run(reprokit_exe, [model, "--backend", "inductor", "--inject", "relu:compile_error", "--backend-option", "cpp.simdlen=8"],
            str(tmp_path), REPRO_AFTER="dynamo", REPRO_LEVEL="2")
    assert r.returncode == 1, r.stderr
    (bundle,) = [d for d in (tmp_path / "out").iterdir() if (d / "manifest.json").exists()]
    text = (bundle / "manifest.json").read_text()
    assert '"cpp.simdlen": "8"' in text, text
    (bundle / "manifest.json").write_text(text.replace('"cpp.simdlen": "8"', '"cpp.simdlen": "[1, 2]"'))
    m = subprocess.run([reprokit_exe, "minify", str(bundle)], capture_output=True, text=True, timeout=600)
    assert m.returncode == 2, m.stderr
    assert "backend option cpp.simdlen: '[1, 2]' is not a number, string, boolean or null" in m.stderr, m.stderr
