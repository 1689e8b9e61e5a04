"""python -m reprokit.torch SCRIPT [ARGS...]: runs an unchanged program with the hook installed."""
import os
import runpy
import sys


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print("usage: python -m reprokit.torch SCRIPT [ARGS...]\n"
              "runs SCRIPT with reprokit's hook on torch.compile; REPRO_AFTER=dynamo|aot and REPRO_LEVEL=1-4 say what it does",
              file=sys.stderr)
        return 2 if len(sys.argv) < 2 else 0
    script = sys.argv[1]
    if not os.path.isfile(script):
        print(f"reprokit.torch: {script}: no such file", file=sys.stderr)
        return 2
    import reprokit.torch as hook  # installs the hook

    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    if hook.installed_config().enabled and hook.compiled_graphs() == 0:
        print(f"reprokit.torch: {script} never called a function compiled by torch.compile: nothing was captured", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
