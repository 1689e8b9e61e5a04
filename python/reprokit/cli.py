"""The `reprokit` command of a pip-installed reprokit: runs the command line installed inside this
package, with this interpreter as the inductor backend's worker (REPROKIT_PYTHON) and this package
importable by it."""
import os
import sys

from . import _HERE


def main():
    exe = os.path.join(_HERE, "bin", "reprokit")
    if not os.access(exe, os.X_OK):
        print(f"reprokit: {exe} is missing: this package was not installed with `pip install` (build with scripts/build.sh)",
              file=sys.stderr)
        return 2
    env = dict(os.environ)
    env.setdefault("REPROKIT_PYTHON", sys.executable)
    parent = os.path.dirname(_HERE)
    env["PYTHONPATH"] = parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    os.execve(exe, [exe] + sys.argv[1:], env)


if __name__ == "__main__":
    sys.exit(main())
