"""The compilers python/reprokit/onnx_worker.py drives, one module each. A module has:

  NAME          the compiler's name, for messages
  UNSUPPORTED   a compiled pattern of the compiler's own words for an op or type it lacks
  load()        imports the compiler (once per worker); returns its version
  compile(path) compiles the ONNX model at `path` for the CPU; returns what run takes
  run(compiled, inputs)  the outputs (numpy arrays, in the model's order) for the inputs (numpy
                arrays, in the model's input order)

and may have:

  message(e)    the compiler's own words for exception `e` (None: its first lines)
  OPTIONS       the names of the compiler's own optimisation switches that compile() takes as
                keyword arguments (reprokit's backend options, validated before they are sent)
  changed(path, **options)  the optimisers that changed the model under those options, in the
                order they ran, each of which can be turned off alone (what `reprokit bisect` walks)

An exception in compile() is a compile error, one in run() a runtime error, unless its text
matches UNSUPPORTED.
"""
import re

# What every compiler here says, in some form, of an op or a type it lacks.
_COMMON_WORDS = ("unsupported", "Unsupported", "not supported", "Not supported", "not implemented", "Not implemented",
                 "NotImplementedError")


def unsupported_pattern(*own_words):
    """UNSUPPORTED for a compiler: the line holding one of its own phrases or one of the common words."""
    words = "|".join(re.escape(w) for w in own_words + _COMMON_WORDS)
    return re.compile(rf"[^\n]*(?:{words})[^\n]*")
