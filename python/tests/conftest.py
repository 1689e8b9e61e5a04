"""Shared fixtures of reprokit's Python tests: the reprokit command line, a fresh Dynamo, and how
to run a program under the hook."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
ROOT = os.path.dirname(PYTHON_DIR)
sys.path.insert(0, PYTHON_DIR)
sys.path.insert(0, HERE)


@pytest.fixture(scope="session")
def reprokit_exe():
    exe = os.environ.get("REPROKIT_EXE") or os.path.join(ROOT, "build", "reprokit")
    if not os.access(exe, os.X_OK):
        pytest.skip(f"the reprokit command line is not built ({exe}): bash scripts/build.sh")
    return exe


@pytest.fixture(autouse=True)
def fresh_dynamo():
    import torch._dynamo

    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def run_under_hook(args, env_extra, cwd, reprokit_exe, timeout=600):
    """`python -m reprokit.torch ARGS` with REPRO_* from env_extra; returns the CompletedProcess."""
    env = dict(os.environ)
    for k in ("REPRO_AFTER", "REPRO_LEVEL", "REPRO_DIR", "REPRO_MINIFY", "RELU_BUG"):
        env.pop(k, None)
    env.update(env_extra)
    env["REPROKIT_EXE"] = reprokit_exe
    env["PYTHONPATH"] = PYTHON_DIR + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, "-m", "reprokit.torch"] + args, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def bundles_in(directory):
    if not os.path.isdir(directory):
        return []
    return sorted(os.path.join(directory, d) for d in os.listdir(directory) if os.path.isfile(os.path.join(directory, d, "manifest.json")))
