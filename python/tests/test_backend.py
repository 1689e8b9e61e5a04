"""`--backend inductor` on the command line: options applied in the worker, what it refuses."""
import json
import os
import subprocess
import sys

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


def test_bisect_names_the_inductor_lowering_a_planted_fault_lives_in(model, tmp_path, reprokit_exe):
    # PyTorch's compile stack level by level (torch.compile's backends), then its subsystems by
    # CompilerBisector's names, then one lowering: the planted fault is in relu's generated code.
    r = run(reprokit_exe, [model, "--backend", "inductor", "--inject", "relu:compile_error"], str(tmp_path), REPRO_AFTER="dynamo", REPRO_LEVEL="2",
            REPRO_MINIFY="0")
    assert r.returncode == 1, r.stderr
    (bundle,) = [os.path.join(tmp_path, "out", d) for d in os.listdir(tmp_path / "out")]
    b = subprocess.run([reprokit_exe, "bisect", bundle], capture_output=True, text=True, timeout=900)
    assert b.returncode == 0, b.stdout + b.stderr
    assert "inductor at compile_backend=aot_eager_decomp_partition     passes" in b.stdout, b.stdout
    assert "without lowerings " in b.stdout and "without post_grad_passes " in b.stdout, b.stdout
    assert "Inductor's lowerings, at relu[aten.relu.default] (level inductor), causes the failure" in b.stdout, b.stdout
    with open(os.path.join(bundle, "bisect.json")) as f:
        found = json.load(f)["compiler_switches"]
    assert found["level"] == "inductor" and found["optimizer"] == "lowerings" and found["rule"] == "lowerings:relu[aten.relu.default]", found


def test_a_stage_below_inductor_is_torch_compiles_backend(model, tmp_path, reprokit_exe):
    # At aot_eager_decomp_partition Inductor never compiles, so its planted fault is not reached.
    r = run(reprokit_exe, [model, "--backend", "inductor", "--inject", "relu:compile_error", "--backend-option",
                           "compile_backend=aot_eager_decomp_partition"], str(tmp_path))
    assert r.returncode == 0, r.stderr
    bad = run(reprokit_exe, [model, "--backend", "inductor", "--backend-option", "compile_backend=cudagraphs"], str(tmp_path))
    assert bad.returncode == 2 and "is not one of eager, aot_eager, aot_eager_decomp_partition, inductor" in bad.stderr, bad.stderr


def test_a_gpu_graph_needs_a_gpu(model, tmp_path, reprokit_exe):
    import torch

    bad = run(reprokit_exe, [model, "--backend", "inductor", "--backend-option", 'device="tpu"'], str(tmp_path))
    assert bad.returncode == 2 and "backend option device: 'tpu' is not cpu or cuda" in bad.stderr, bad.stderr
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the graph would run there")
    r = run(reprokit_exe, [model, "--backend", "inductor", "--backend-option", 'device="cuda"'], str(tmp_path))
    assert r.returncode == 2, r.stderr
    assert "has no CUDA device (the graph was captured on a GPU)" in r.stderr, r.stderr


def test_repro_torch_judges_an_empty_output(tmp_path, reprokit_exe):
    # An output with no elements has nothing to be wrong about: the script judges the others.
    model = tmp_path / "empty.rk"
    model.write_text("graph e(%x: f32[4, 8], %z: f32[0, 3]) {\n  %r = relu(%x)\n  %s = sin(%z)\n  return (%r, %s)\n}\n")
    r = run(reprokit_exe, [str(model), "--backend", "inductor", "--inject", "relu:accuracy"], str(tmp_path), REPRO_AFTER="dynamo",
            REPRO_LEVEL="4", REPRO_MINIFY="0")
    assert r.returncode == 1, r.stderr
    (bundle,) = [os.path.join(tmp_path, "out", d) for d in os.listdir(tmp_path / "out")]
    script = subprocess.run([sys.executable, "repro_torch.py"], capture_output=True, text=True, cwd=os.path.join(bundle, "original"), timeout=600)
    assert script.returncode == 1, script.stdout + script.stderr
    assert "s: ok: empty ([0, 3])" in script.stdout and "REPRODUCED: accuracy" in script.stdout, script.stdout
