"""`--backend openvino|tvm|iree` on the command line: each real compiler matches reprokit's
float64 rule on an example, and each failure kind arrives as such — from a graph the compiler
really rejects where one is known, and from a planted compiler in the real worker for the rest
(crash, hang, run-time error). The real compilers' tests skip, saying why, where the interpreter
lacks the package."""
import importlib.util
import json
import os
import stat
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR, ROOT

EXAMPLES = os.path.join(ROOT, "examples")
PACKAGES = {"openvino": ["openvino"], "tvm": ["tvm"], "iree": ["iree.compiler", "iree.runtime"]}


def require(backend):
    for module in PACKAGES[backend]:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            pytest.skip(f"the {backend} backend needs the Python package of {module}, which {sys.executable} lacks "
                        f"(scripts/install_deps.sh installs python/requirements.lock)")


def run(reprokit_exe, args, cwd, **env):
    e = dict(os.environ, REPRO_DIR=os.path.join(str(cwd), "out"), REPROKIT_PYTHON=sys.executable)
    for k in ("REPRO_AFTER", "REPRO_LEVEL", "REPRO_MINIFY", "REPRO_TIMEOUT"):
        e.pop(k, None)
    e.update(env)
    return subprocess.run([reprokit_exe, "run"] + args, capture_output=True, text=True, cwd=str(cwd), env=e, timeout=900)


def bundles(tmp_path):
    out = tmp_path / "out"
    return sorted(d for d in out.iterdir() if (d / "manifest.json").exists()) if out.is_dir() else []


@pytest.mark.parametrize("backend", ["openvino", "tvm", "iree"])
@pytest.mark.parametrize("example", ["mlp.rk", "attention.rk"])
def test_an_example_matches_the_float64_reference(backend, example, tmp_path, reprokit_exe):
    require(backend)
    r = run(reprokit_exe, [os.path.join(EXAMPLES, example), "--backend", backend, "--save-outputs", "outs"], tmp_path,
            REPRO_AFTER="dynamo", REPRO_LEVEL="4")
    assert r.returncode == 0, r.stderr
    assert list((tmp_path / "outs").iterdir()), "no outputs saved"
    assert bundles(tmp_path) == []


F64_SIN = """graph sin64(%x: f64[4, 8]) {
  %s = sin(%x)
  return (%s)
}
"""


def test_iree_cannot_link_f64_sin_a_compile_error(tmp_path, reprokit_exe):
    # IREE's llvm-cpu target lowers an f64 sin to a call of libm's `sin`, which its embedded
    # linker does not have.
    require("iree")
    (tmp_path / "g.rk").write_text(F64_SIN)
    r = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "iree"], tmp_path, REPRO_AFTER="dynamo", REPRO_LEVEL="2")
    assert r.returncode == 1, r.stderr
    assert "compile_error in stage dynamo of graph sin64 (iree backend)" in r.stderr, r.stderr
    assert "undefined symbol: sin" in r.stderr, r.stderr
    assert len(bundles(tmp_path)) == 1


def test_openvino_has_no_bf16_input_unsupported_not_a_finding(tmp_path, reprokit_exe):
    require("openvino")
    r = run(reprokit_exe, [os.path.join(EXAMPLES, "mixed_precision.rk"), "--backend", "openvino"], tmp_path, REPRO_AFTER="dynamo",
            REPRO_LEVEL="4")
    assert r.returncode == 2, r.stderr
    assert "reprokit run: unsupported: OpenVINO cannot take graph mixed_precision" in r.stderr, r.stderr
    assert "Unsupported data type: bfloat16" in r.stderr, r.stderr
    assert bundles(tmp_path) == []


def test_openvino_computes_f64_in_f32_unsupported(tmp_path, reprokit_exe):
    require("openvino")
    (tmp_path / "g.rk").write_text(F64_SIN)
    r = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "openvino"], tmp_path, REPRO_AFTER="dynamo", REPRO_LEVEL="4")
    assert r.returncode == 2, r.stderr
    assert "unsupported: OpenVINO cannot take graph sin64: TypeError: f64 is not supported by the CPU plugin" in r.stderr, r.stderr


def test_openvino_bf16_output_is_read_as_bf16(tmp_path, reprokit_exe):
    # OpenVINO computes it right; its Python binding returns the bits in a float16 array.
    require("openvino")
    (tmp_path / "g.rk").write_text("graph b(%x: f32[3]) {\n  %y = to(%x, dtype=bf16)\n  return (%y)\n}\n")
    r = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "openvino"], tmp_path, REPRO_AFTER="dynamo", REPRO_LEVEL="4")
    assert r.returncode == 0, r.stderr
    assert not bundles(tmp_path), r.stderr


# ---- a planted compiler in the real worker: every kind the client maps -----------------------

PLANTED = '''#!{python}
"""A stand-in interpreter: the real ONNX worker, driving a compiler that does $PLANTED."""
import os, re, signal, sys, time
sys.path.insert(0, {python_dir!r})
from reprokit import onnx_worker


class Planted:
    NAME = "Planted"
    UNSUPPORTED = re.compile(r"[^\\n]*no kernel for[^\\n]*")

    def load(self):
        return "0"

    def compile(self, path):
        if os.environ["PLANTED"] == "compile_error":
            raise RuntimeError("planted: cannot lower the model")
        if os.environ["PLANTED"] == "unsupported":
            raise RuntimeError("planted: no kernel for Sin(f32)")
        return None

    def run(self, compiled, inputs):
        what = os.environ["PLANTED"]
        if what == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if what == "hang":
            while True:
                time.sleep(1)
        if what == "runtime_error":
            raise RuntimeError("planted: the kernel failed")
        return [x for x in inputs]


onnx_worker.serve(Planted(), sys.stdin, onnx_worker.protocol_stream())
'''

RELU = """graph planted(%x: f32[4, 8]) {
  %y = relu(%x)
  return (%y)
}
"""


@pytest.fixture
def planted(tmp_path):
    path = tmp_path / "planted_python"
    path.write_text(PLANTED.format(python=sys.executable, python_dir=PYTHON_DIR))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "g.rk").write_text(RELU)
    return str(path)


def run_planted(reprokit_exe, tmp_path, planted, what, **env):
    settings = dict(REPROKIT_PYTHON=planted, PLANTED=what, REPRO_AFTER="dynamo", REPRO_LEVEL="2")
    settings.update(env)
    return run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "tvm"], tmp_path, **settings)


@pytest.mark.parametrize("what,said", [("compile_error", "planted: cannot lower the model"), ("runtime_error", "planted: the kernel failed")])
def test_a_planted_error_arrives_as_its_kind(what, said, tmp_path, reprokit_exe, planted):
    r = run_planted(reprokit_exe, tmp_path, planted, what)
    assert r.returncode == 1, r.stderr
    assert f"{what} in stage dynamo of graph planted (tvm backend)" in r.stderr, r.stderr
    assert said in r.stderr, r.stderr
    assert len(bundles(tmp_path)) == 1


def test_a_worker_that_dies_is_a_crash_naming_its_signal(tmp_path, reprokit_exe, planted):
    r = run_planted(reprokit_exe, tmp_path, planted, "crash")
    assert r.returncode == 1, r.stderr
    assert "crash in stage dynamo of graph planted (tvm backend)" in r.stderr, r.stderr
    assert "the TVM worker died (killed by signal 11 (Segmentation fault))" in r.stderr, r.stderr


def test_a_worker_that_hangs_is_a_timeout(tmp_path, reprokit_exe, planted):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    r = run_planted(reprokit_exe, tmp_path, planted, "hang", REPRO_TIMEOUT="3", TMPDIR=str(scratch))
    assert r.returncode == 124, r.stderr
    assert "timeout in stage dynamo of graph planted (tvm backend)" in r.stderr, r.stderr
    assert len(bundles(tmp_path)) == 1
    # The hung stage never returns, so the process ends without unwinding: its scratch directory
    # (the graph's .npy files for the worker) is removed all the same.
    assert sorted(p.name for p in scratch.iterdir()) == [], list(scratch.iterdir())


def test_a_planted_missing_kernel_is_unsupported_and_leaves_no_bundle(tmp_path, reprokit_exe, planted):
    r = run_planted(reprokit_exe, tmp_path, planted, "unsupported")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("reprokit run: unsupported: TVM cannot take graph planted"), r.stderr
    assert bundles(tmp_path) == []


def test_wrong_numbers_from_the_compiler_are_an_accuracy_failure(tmp_path, reprokit_exe, planted):
    # The planted compiler returns its input: right for relu only where the input is >= 0, so the
    # rule must see the difference; this graph's random inputs have negative elements.
    r = run_planted(reprokit_exe, tmp_path, planted, "identity", REPRO_LEVEL="4")
    assert r.returncode == 1, r.stderr
    assert "accuracy in stage dynamo of graph planted (tvm backend)" in r.stderr, r.stderr


def test_a_missing_interpreter_says_how_to_get_one(tmp_path, reprokit_exe):
    (tmp_path / "g.rk").write_text(RELU)
    r = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "openvino"], tmp_path, REPROKIT_PYTHON=str(tmp_path / "no-python"))
    assert r.returncode == 2, r.stderr
    assert "the openvino backend needs Python with openvino and onnx" in r.stderr, r.stderr


def test_a_fuzz_campaign_counts_what_openvino_lacks_as_unsupported(tmp_path, reprokit_exe):
    # Among the campaign's first ten graphs (seed 1) one computes in f64, which OpenVINO's CPU
    # plugin does not support: counted apart, neither a finding nor a graph reprokit rejected.
    require("openvino")
    e = dict(os.environ, REPROKIT_PYTHON=sys.executable)
    r = subprocess.run([reprokit_exe, "fuzz", "-o", str(tmp_path / "c"), "--backend", "openvino", "--max-graphs", "10", "--max-nodes", "4",
                        "--no-minify"], capture_output=True, text=True, env=e, timeout=900)
    assert r.returncode == 0, r.stderr
    counts = (tmp_path / "c" / "SUMMARY.txt").read_text().splitlines()[3]
    assert "rejected by reprokit 0" in counts and "unsupported 0" not in counts, counts
    # What it does find is OpenVINO's own refusal of a model ONNX allows (its GatherElements wants
    # the indices' shape to match the data's off the axis), never a model reprokit wrote wrong: a
    # TopK with K = 0 has no ONNX form and is counted as not exportable.
    rows = [line for line in (tmp_path / "c" / "SUMMARY.txt").read_text().splitlines() if "/findings/" in line]
    assert all(" compile_error " in row and " openvino " in row and "TopK" not in row for row in rows), rows


# ---- TVM's own switches: a planted pass in TVM's real pipeline ----------------------------------

PLANTED_TVM_PASS = '''#!{python}
"""A stand-in interpreter: the real ONNX worker and TVM, whose build pipeline starts with a pass
of opt_level 2 that computes relu as gelu (PassContext's opt_level and disabled_pass gate it)."""
import sys
sys.path.insert(0, {python_dir!r})
import tvm
import tvm.relax.pipeline as pipeline
from tvm import relax
from tvm.relax.dpl import is_op, rewrite_call, wildcard
from reprokit import onnx_worker


@tvm.transform.module_pass(opt_level=2, name="PlantedReluAsGelu")
def planted(mod, ctx):
    x = wildcard()
    relu = is_op("relax.nn.relu")(x)
    for gv, f in list(mod.functions.items()):
        if isinstance(f, relax.Function):
            mod[gv] = rewrite_call(relu, lambda e, m: relax.op.nn.gelu(m[x]), f)
    return mod


default = pipeline.PIPELINE_MAP["default"]
pipeline.PIPELINE_MAP["default"] = lambda: tvm.transform.Sequential([planted, default()])
sys.exit(onnx_worker.main(sys.argv[-1:]))
'''


def test_bisect_names_the_tvm_pass_and_opt_level_a_planted_fault_needs(tmp_path, reprokit_exe):
    # The level search asks TVM at opt_level 0, 1, 2: the planted pass first runs at 2; then the
    # passes TVM's instrument says changed the module are turned off one at a time.
    require("tvm")
    path = tmp_path / "planted_tvm"
    path.write_text(PLANTED_TVM_PASS.format(python=sys.executable, python_dir=PYTHON_DIR))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "g.rk").write_text(RELU)
    r = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "tvm", "--backend-option", "opt_level=3"], tmp_path,
            REPROKIT_PYTHON=str(path), REPRO_AFTER="dynamo", REPRO_LEVEL="4", REPRO_MINIFY="0")
    assert r.returncode == 1, r.stderr
    assert "accuracy in stage dynamo of graph planted (tvm backend)" in r.stderr, r.stderr
    (bundle,) = bundles(tmp_path)
    # At opt_level 1 the pass is gated off: the same model passes.
    ok = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "tvm", "--backend-option", "opt_level=1"], tmp_path,
             REPROKIT_PYTHON=str(path), REPRO_AFTER="dynamo", REPRO_LEVEL="4", REPRO_DIR=str(tmp_path / "out1"))
    assert ok.returncode == 0, ok.stderr
    b = subprocess.run([reprokit_exe, "bisect", str(bundle)], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, REPROKIT_PYTHON=str(path)))
    assert b.returncode == 0, b.stdout + b.stderr
    assert "tvm at opt_level=1" in b.stdout and "without PlantedReluAsGelu" in b.stdout, b.stdout
    assert "TVM's pass PlantedReluAsGelu (level 2) causes the failure" in b.stdout, b.stdout
    with open(bundle / "bisect.json") as f:
        found = json.load(f)["compiler_switches"]
    assert found["level"] == "2" and found["optimizer"] == "PlantedReluAsGelu", found


def test_tvm_refuses_a_pass_name_that_is_not_one(tmp_path, reprokit_exe):
    (tmp_path / "g.rk").write_text(RELU)
    bad = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "tvm", "--backend-option", "disabled_pass=FuseOps;touch x"], tmp_path)
    assert bad.returncode == 2 and "backend option disabled_pass: 'FuseOps;touch x' is not a TVM pass name" in bad.stderr, bad.stderr
    bad = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "tvm", "--backend-option", "opt_level=9"], tmp_path)
    assert bad.returncode == 2 and "backend option opt_level: '9' is not one of 0, 1, 2, 3" in bad.stderr, bad.stderr


# ---- IREE's own flags: a planted fault tied to a real flag of IREE's pipeline -------------------

PLANTED_IREE_FLAG = '''#!{python}
"""A stand-in interpreter: the real ONNX worker and IREE, whose outputs come out 1 too large when
IREE built a matmul as a generalised one (a "matmul_like" dispatch in the module), which
--iree-opt-generalize-matmul does from --iree-opt-level=O2 on (opt_level and disabled_flags gate it)."""
import sys
sys.path.insert(0, {python_dir!r})
from reprokit import onnx_worker
from reprokit.onnx_compilers import iree_cpu

real_build, real_compile, real_run = iree_cpu._build, iree_cpu.compile, iree_cpu.run
generalised = []


def build(asm, opt_level, disabled_flags):
    vmfb = real_build(asm, opt_level, disabled_flags)
    generalised.append(b"matmul_like" in vmfb)
    return vmfb


def compile(path, **options):
    return real_compile(path, **options), generalised[-1]


def run(compiled, inputs):
    function, wrong = compiled
    return [o + 1 if wrong else o for o in real_run(function, inputs)]


iree_cpu._build, iree_cpu.compile, iree_cpu.run = build, compile, run
sys.exit(onnx_worker.main(sys.argv[-1:]))
'''

MATMUL_RELU = """graph planted(%x: f32[4, 8], %w: f32[8, 8]) {
  %m = matmul(%x, %w)
  %r = relu(%m)
  return (%r)
}
"""


def test_bisect_names_the_iree_flag_and_level_a_planted_fault_needs(tmp_path, reprokit_exe):
    # The level search asks IREE at O0, O1, O2: the matmul is generalised from O2; then the flags
    # whose turning off changes the module are turned off one at a time.
    require("iree")
    path = tmp_path / "planted_iree"
    path.write_text(PLANTED_IREE_FLAG.format(python=sys.executable, python_dir=PYTHON_DIR))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "g.rk").write_text(MATMUL_RELU)
    r = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "iree", "--backend-option", "opt_level=O3"], tmp_path,
            REPROKIT_PYTHON=str(path), REPRO_AFTER="dynamo", REPRO_LEVEL="4", REPRO_MINIFY="0")
    assert r.returncode == 1, r.stderr
    assert "accuracy in stage dynamo of graph planted (iree backend)" in r.stderr, r.stderr
    (bundle,) = bundles(tmp_path)
    # With the flag turned off at O3 the same model passes.
    ok = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "iree", "--backend-option", "opt_level=O3", "--backend-option",
                            "disabled_flags=iree-opt-generalize-matmul"], tmp_path,
             REPROKIT_PYTHON=str(path), REPRO_AFTER="dynamo", REPRO_LEVEL="4", REPRO_DIR=str(tmp_path / "out1"))
    assert ok.returncode == 0, ok.stderr
    b = subprocess.run([reprokit_exe, "bisect", str(bundle)], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, REPROKIT_PYTHON=str(path)))
    assert b.returncode == 0, b.stdout + b.stderr
    assert "iree at opt_level=O1" in b.stdout and "without iree-opt-generalize-matmul" in b.stdout, b.stdout
    assert "IREE's flag iree-opt-generalize-matmul (level O2) causes the failure" in b.stdout, b.stdout
    with open(bundle / "bisect.json") as f:
        found = json.load(f)["compiler_switches"]
    assert found["level"] == "O2" and found["optimizer"] == "iree-opt-generalize-matmul", found


def test_iree_refuses_a_flag_outside_its_table_and_a_level_it_lacks(tmp_path, reprokit_exe):
    (tmp_path / "g.rk").write_text(RELU)
    bad = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "iree", "--backend-option", "disabled_flags=iree-opt-const-eval;touch x"],
              tmp_path)
    assert bad.returncode == 2 and "backend option disabled_flags: 'iree-opt-const-eval;touch x' is not one of IREE's optimisation flags" \
        in bad.stderr, bad.stderr
    bad = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "iree", "--backend-option", "opt_level=O9"], tmp_path)
    assert bad.returncode == 2 and "backend option opt_level: 'O9' is not one of O0, O1, O2, O3" in bad.stderr, bad.stderr


def test_iree_changed_compiles_with_each_flag_off():
    # The worker's own answer, asked of IREE: the generalisation of a matmul is on from O2 only.
    require("iree")
    import onnx
    from onnx import TensorProto, helper

    from reprokit.onnx_compilers import iree_cpu

    iree_cpu.load()
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]),
        helper.make_tensor_value_info("w", TensorProto.FLOAT, [8, 8])
    ], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])])
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"rk_iree_changed_{os.getpid()}.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    try:
        assert "iree-opt-generalize-matmul" in iree_cpu.changed(path, opt_level="O2")
        assert "iree-opt-generalize-matmul" not in iree_cpu.changed(path, opt_level="O0")
        assert "iree-opt-generalize-matmul" not in iree_cpu.changed(path, opt_level="O2", disabled_flags=["iree-opt-generalize-matmul"])
        with pytest.raises(ValueError, match="not one of IREE's optimisation flags"):
            iree_cpu.changed(path, disabled_flags=["iree-hal-dump-executable-files-to=/tmp"])
    finally:
        os.remove(path)


# ---- OpenVINO's own properties: a real failure one of them causes --------------------------------


def require_bf16():
    """OpenVINO computes in bf16 only on a CPU with bf16 units; elsewhere it keeps f32."""
    import openvino

    if "BF16" not in openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        pytest.skip("this CPU has no bf16 units: OpenVINO's CPU plugin ignores INFERENCE_PRECISION_HINT=bf16 here")


def test_bisect_names_the_openvino_property_that_lowers_the_precision(tmp_path, reprokit_exe):
    # Nothing planted: asked to infer in bf16, the CPU plugin computes the matmul in bf16, far off
    # its float64 value. The level search fails at ACCURACY already (an explicit precision wins);
    # then the properties whose turning off changes the executed graph are turned off one at a time.
    require("openvino")
    require_bf16()
    (tmp_path / "g.rk").write_text(MATMUL_RELU)
    r = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "openvino", "--backend-option", "INFERENCE_PRECISION_HINT=bf16"], tmp_path,
            REPRO_AFTER="dynamo", REPRO_LEVEL="4", REPRO_MINIFY="0")
    assert r.returncode == 1, r.stderr
    assert "accuracy in stage dynamo of graph planted (openvino backend)" in r.stderr, r.stderr
    (bundle,) = bundles(tmp_path)
    b = subprocess.run([reprokit_exe, "bisect", str(bundle)], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, REPROKIT_PYTHON=sys.executable))
    assert b.returncode == 0, b.stdout + b.stderr
    assert "openvino at EXECUTION_MODE_HINT=ACCURACY" in b.stdout and "without INFERENCE_PRECISION_HINT" in b.stdout, b.stdout
    assert "OpenVINO's property INFERENCE_PRECISION_HINT (level ACCURACY) causes the failure" in b.stdout, b.stdout
    with open(bundle / "bisect.json") as f:
        found = json.load(f)["compiler_switches"]
    assert found["level"] == "ACCURACY" and found["optimizer"] == "INFERENCE_PRECISION_HINT", found


def test_openvino_refuses_a_property_outside_its_switches_and_a_value_it_lacks(tmp_path, reprokit_exe):
    (tmp_path / "g.rk").write_text(RELU)
    bad = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "openvino", "--backend-option", "disabled_properties=PERF_COUNT"], tmp_path)
    assert bad.returncode == 2 and "backend option disabled_properties: 'PERF_COUNT' is not INFERENCE_PRECISION_HINT or SNIPPETS_MODE" \
        in bad.stderr, bad.stderr
    bad = run(reprokit_exe, [str(tmp_path / "g.rk"), "--backend", "openvino", "--backend-option", "SNIPPETS_MODE=OFF"], tmp_path)
    assert bad.returncode == 2 and "backend option SNIPPETS_MODE: 'OFF' is not one of ENABLE, IGNORE_CALLBACK, DISABLE" in bad.stderr, bad.stderr


def test_openvino_changed_compares_the_executed_graph():
    # The worker's own answer, asked of OpenVINO: snippets fuse the elementwise chain; precision
    # lowering changes the graph only where a lower precision was asked for.
    require("openvino")
    require_bf16()
    import onnx
    from onnx import TensorProto, helper

    from reprokit.onnx_compilers import openvino_cpu

    openvino_cpu.load()
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Tanh", ["m"], ["t"]), helper.make_node("Mul", ["t", "m"], ["u"]),
             helper.make_node("Relu", ["u"], ["y"])]
    graph = helper.make_graph(nodes, "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]),
        helper.make_tensor_value_info("w", TensorProto.FLOAT, [8, 8])
    ], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])])
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"rk_openvino_changed_{os.getpid()}.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    try:
        assert openvino_cpu.changed(path) == ["SNIPPETS_MODE"]
        assert openvino_cpu.changed(path, INFERENCE_PRECISION_HINT="bf16") == ["INFERENCE_PRECISION_HINT", "SNIPPETS_MODE"]
        assert openvino_cpu.changed(path, INFERENCE_PRECISION_HINT="bf16", disabled_properties=["SNIPPETS_MODE"]) == ["INFERENCE_PRECISION_HINT"]
        with pytest.raises(ValueError, match="not one of the properties reprokit turns off"):
            openvino_cpu.changed(path, disabled_properties=["PERF_COUNT"])
    finally:
        os.remove(path)


def test_openvino_changed_answers_for_a_model_it_cannot_compile(tmp_path):
    # Where the plugin cannot compile a model, its error is its answer: a switch whose turning off
    # lets it compile changed the outcome. On CPUs with AVX-512 FP16 the CPU plugin of 2026.4 fails
    # a check in its brgemm snippets for an f16 matmul of constant weights fused whole
    # (IGNORE_CALLBACK); elsewhere the model compiles and this says nothing.
    require("openvino")
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from reprokit.onnx_compilers import openvino_cpu

    openvino_cpu.load()
    w = numpy_helper.from_array(np.random.RandomState(0).randn(8, 8).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "x"], ["a"]), helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Softmax", ["r"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], [w])
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    options = dict(SNIPPETS_MODE="IGNORE_CALLBACK", INFERENCE_PRECISION_HINT="f16")
    try:
        openvino_cpu.compile(path, **options)
    except RuntimeError:
        assert openvino_cpu.changed(path, **options) == ["INFERENCE_PRECISION_HINT", "SNIPPETS_MODE"]
        openvino_cpu.compile(path, disabled_properties=["SNIPPETS_MODE"], **options)
    else:
        pytest.skip("OpenVINO's CPU plugin compiles this model on this CPU")
