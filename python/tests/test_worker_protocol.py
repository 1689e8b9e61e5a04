"""The worker protocol's forked children (serve_in_forked_children): a child that dies on a request
is answered as a death and the next request goes to a fresh fork of the same worker, which imports
nothing again."""
import json
import os
import subprocess
import sys

from conftest import PYTHON_DIR

# A worker whose load() counts its calls in a file and whose children answer with their pid, or
# die as the request asks.
WORKER = r'''
import json, os, signal, sys
from reprokit.worker_protocol import protocol_stream, serve_in_forked_children

def load():
    with open(sys.argv[1], "a") as f:
        f.write("loaded\n")
    return {"ready": True}

def serve(inp, out):
    for line in inp:
        req = json.loads(line)
        what = req.get("do")
        if what == "abort":
            print("about to abort", file=sys.stderr, flush=True)
            os.abort()
        if what == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if what == "exit":
            os._exit(3)
        if what == "last":
            out.write(json.dumps({"ok": True, "pid": os.getpid(), "worker_ends": True}) + "\n")
            out.flush()
            os._exit(0)
        out.write(json.dumps({"ok": True, "pid": os.getpid()}) + "\n")
    with open(sys.argv[1], "a") as f:
        f.write("child ended\n")

serve_in_forked_children(load(), serve, sys.stdin, protocol_stream())
'''


def run_worker(tmp_path, requests):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    loads = tmp_path / "loads"
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, str(script), str(loads)], input="".join(json.dumps(q) + "\n" for q in requests),
                       capture_output=True, text=True, env=env, timeout=120)
    replies = [json.loads(line) for line in r.stdout.splitlines()]
    return r, replies, loads.read_text().count("loaded"), loads.read_text().count("child ended")


def test_requests_are_served_by_one_child_until_it_dies(tmp_path):
    r, replies, loads, _ = run_worker(tmp_path, [{}, {}, {"do": "abort"}, {}, {}])
    assert r.returncode == 0, r.stderr
    assert replies[0] == {"ready": True}
    first, second, died, third, fourth = replies[1:]
    assert first["pid"] == second["pid"] != os.getpid()
    assert died == {"ok": False, "kind": "worker_died", "signal": 6}
    assert third["pid"] == fourth["pid"] != first["pid"]
    assert loads == 1, "the worker imported again after a death"
    assert "about to abort" in r.stderr


def test_a_death_by_signal_or_by_exit_status_is_named(tmp_path):
    r, replies, _, _ = run_worker(tmp_path, [{"do": "segv"}, {"do": "exit"}, {}])
    assert r.returncode == 0, r.stderr
    assert replies[1:3] == [{"ok": False, "kind": "worker_died", "signal": 11}, {"ok": False, "kind": "worker_died", "exit_code": 3}]
    assert replies[3]["ok"] is True


def test_a_childs_last_answer_is_passed_on_and_the_next_request_gets_a_fresh_child(tmp_path):
    r, replies, loads, _ = run_worker(tmp_path, [{"do": "last"}, {}])
    assert r.returncode == 0, r.stderr
    assert replies[1]["worker_ends"] is True
    assert replies[2]["ok"] is True and replies[2]["pid"] != replies[1]["pid"]
    assert loads == 1


def test_the_end_of_input_ends_the_child_before_the_worker(tmp_path):
    r, replies, _, ended = run_worker(tmp_path, [{}, {}])
    assert r.returncode == 0, r.stderr
    assert len(replies) == 3 and ended == 1
