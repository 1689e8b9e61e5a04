"""python/reprokit/onnx_worker.py on a planted compiler: how it classifies what a compiler does
(compile error, runtime error, unsupported), that it compiles a model once, and what it refuses.
The real compilers are in test_onnx_backends.py."""
import io
import json
import re

import numpy as np
import pytest

from reprokit import onnx_worker


class Planted:
    """A compiler whose compile and run do what the test says."""

    NAME = "Planted"
    UNSUPPORTED = re.compile(r"[^\n]*no kernel for[^\n]*")

    def __init__(self, compile_does=None, run_does=None):
        self.compile_does, self.run_does, self.compiles = compile_does, run_does, 0

    def load(self):
        return "0"

    def compile(self, path):
        self.compiles += 1
        if self.compile_does:
            raise self.compile_does
        return path

    def run(self, compiled, inputs):
        if self.run_does:
            raise self.run_does
        return [np.negative(inputs[0])]


def ask(compiler, requests):
    inp = io.StringIO("".join(json.dumps(r) + "\n" for r in requests))
    out = io.StringIO()
    onnx_worker.serve(compiler, inp, out)
    lines = [json.loads(l) for l in out.getvalue().splitlines()]
    assert lines[0]["ready"] is True
    return lines[1:]


@pytest.fixture
def request_for(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"a model")
    np.save(tmp_path / "x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    (tmp_path / "out").mkdir()
    return {"model": str(tmp_path / "model.onnx"), "inputs": [{"file": str(tmp_path / "x.npy"), "dtype": "f32", "shape": [2, 3]}],
            "outputs": str(tmp_path / "out")}


def test_a_run_writes_the_outputs_and_compiles_the_model_once(request_for, tmp_path):
    c = Planted()
    assert ask(c, [request_for, request_for]) == [{"ok": True}, {"ok": True}]
    assert c.compiles == 1
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "out0.npy"), -np.arange(6, dtype=np.float32).reshape(2, 3))


def test_an_exception_while_compiling_is_a_compile_error(request_for):
    (reply,) = ask(Planted(compile_does=RuntimeError("lowering failed\nat pass 3")), [request_for])
    assert reply == {"ok": False, "kind": "compile_error", "message": "RuntimeError: lowering failed at pass 3"}


def test_an_exception_while_running_is_a_runtime_error(request_for):
    (reply,) = ask(Planted(run_does=IndexError("out of range")), [request_for])
    assert reply == {"ok": False, "kind": "runtime_error", "message": "IndexError: out of range"}


def test_the_compilers_words_for_a_missing_kernel_make_it_unsupported(request_for):
    # The words may be deep in the message: they are quoted after its first lines.
    (reply,) = ask(Planted(compile_does=RuntimeError("a\nb\nc\nd\nno kernel for Det(f64)")), [request_for])
    assert reply["kind"] == "unsupported", reply
    assert reply["message"].endswith("no kernel for Det(f64)"), reply


def test_a_model_that_failed_to_compile_is_compiled_again(request_for):
    c = Planted(compile_does=RuntimeError("flaky"))
    assert [r["kind"] for r in ask(c, [request_for, request_for])] == ["compile_error", "compile_error"]
    assert c.compiles == 2


def test_an_input_that_is_not_what_the_request_says_is_a_bad_request(request_for):
    request_for["inputs"][0]["dtype"] = "f64"
    (reply,) = ask(Planted(), [request_for])
    assert reply["kind"] == "bad_request" and "float32 where f64 was expected" in reply["message"], reply


def test_a_line_that_is_not_json_is_a_bad_request():
    out = io.StringIO()
    onnx_worker.serve(Planted(), io.StringIO("{not json\n"), out)
    assert json.loads(out.getvalue().splitlines()[1])["kind"] == "bad_request"


def test_an_unknown_compiler_is_refused(capsys):
    assert onnx_worker.main(["nvcc"]) == 2
    assert "usage: python -m reprokit.onnx_worker openvino|tvm|iree" in capsys.readouterr().err
