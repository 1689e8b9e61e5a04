"""What every backend worker (inductor_worker, onnx_worker) shares: the stream its replies go to,
an exception as the one-line message a reply carries, and serving from forked children."""
import json
import os
import sys
import traceback


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


def _ends_the_worker(reply):
    try:
        return json.loads(reply).get("worker_ends") is True
    except (ValueError, AttributeError):
        return False


class _ForkedServer:
    """One child forked from the worker after its imports, serving requests over two pipes."""

    def __init__(self, serve, protocol):
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: the worker's own stdin and reply stream are the parent's alone
            status = 0
            try:
                os.close(requests_w)
                os.close(replies_r)
                os.close(protocol.fileno())
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.close(null)
                serve(os.fdopen(requests_r), os.fdopen(replies_w, "w", buffering=1))
            except BaseException:  # noqa: B036 (the child never returns into the parent's loop)
                traceback.print_exc()
                status = 70
            finally:
                sys.stderr.flush()
                os._exit(status)
        os.close(requests_r)
        os.close(replies_w)
        self.pid = pid
        self.requests = os.fdopen(requests_w, "w", buffering=1)
        self.replies = os.fdopen(replies_r)

    def ask(self, line):
        """The child's reply line, or None when it died before it finished one."""
        try:
            self.requests.write(line if line.endswith("\n") else line + "\n")
            self.requests.flush()
        except BrokenPipeError:
            return None
        reply = self.replies.readline()
        return reply if reply.endswith("\n") else None

    def end(self):
        """Closes its requests (it ends as a worker does at the end of input) and reaps it:
        {"signal": N} or {"exit_code": N}."""
        for f in (self.requests, self.replies):
            try:
                f.close()
            except OSError:
                pass
        _, status = os.waitpid(self.pid, 0)
        if os.WIFSIGNALED(status):
            return {"signal": os.WTERMSIG(status)}
        return {"exit_code": os.waitstatus_to_exitcode(status)}


def serve_in_forked_children(ready, serve, inp, out):
    """Announces `ready`, then answers each request line of `inp` on `out` through
    serve(requests, replies) run in a child forked from this process, which has already imported
    the compiler. When the child dies on a request (an abort or a segfault in generated code), that
    request is answered {"ok": false, "kind": "worker_died", "signal" | "exit_code": N} and the next
    one goes to a fresh fork: a crashing candidate costs a fork, not an interpreter's start and the
    compiler's import. Only for a compiler whose import starts no thread (a fork keeps one)."""
    out.write(json.dumps(ready) + "\n")
    child = None
    for line in inp:
        if not line.strip():
            continue
        if child is None:
            child = _ForkedServer(serve, out)
        reply = child.ask(line)
        if reply is None:
            how = child.end()
            child = None
            sys.stderr.flush()
            reply = json.dumps({"ok": False, "kind": "worker_died", **how}) + "\n"
        out.write(reply)
        if _ends_the_worker(reply):  # the child's last answer: it exits by itself
            child.end()
            child = None
    if child is not None:
        child.end()
