"""What every backend worker (inductor_worker, onnx_worker) shares: the stream its replies go to,
and an exception as the one-line message a reply carries."""
import os


def protocol_stream():
    """The original stdout, for replies; stdout itself then goes to stderr, so that anything else
    written to it (a compiler's logs, a print in generated code) cannot break the protocol."""
    fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(fd, "w", buffering=1)


def first_line(e):
    """`e` as one line: its type and the first three non-empty lines of its message, at most 2,000
    characters."""
    text = f"{type(e).__name__}: {e}"
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return " ".join(lines[:3])[:2000] if lines else type(e).__name__
