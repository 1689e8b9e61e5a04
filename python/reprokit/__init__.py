"""reprokit's Python side: the PyTorch 2 hook (reprokit.torch) and the inductor backend's worker."""
import os
import shutil

_HERE = os.path.dirname(os.path.abspath(__file__))


def executable():
    """The reprokit command line: $REPROKIT_EXE, the one installed beside this package, `reprokit`
    on PATH, or the build of this checkout (build/reprokit)."""
    env = os.environ.get("REPROKIT_EXE")
    if env:
        return env
    for candidate in (os.path.join(_HERE, "bin", "reprokit"),):
        if os.access(candidate, os.X_OK):
            return candidate
    on_path = shutil.which("reprokit")
    if on_path:
        return on_path
    checkout = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build", "reprokit")
    if os.access(checkout, os.X_OK):
        return checkout
    raise FileNotFoundError("the reprokit command line was not found: build it (bash scripts/build.sh), put it on PATH, "
                            "or set REPROKIT_EXE")
