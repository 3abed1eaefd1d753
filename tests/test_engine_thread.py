"""Issue 40 §4: an engine started from a thread died when that thread ended (Linux sends the parent-death signal
when the *thread* that forked the child ends). `Engine.start` now forks from one long-lived spawner thread
(`engine._spawn`): the server outlives the thread that started it and still ends with the process.

Each case runs a parent process that starts the server from a short-lived thread, waits past that thread's end,
asks the server, prints what it saw, and is then SIGKILLed; the server must be gone soon after. The stand-in case
needs no llama.cpp (a small HTTP server that calls `_die_with_parent` as `engine.main` does); the real case starts
the llama.cpp engine (skipped, or failed under OVERLAY_KIT_REQUIRE_ENGINE=1, where it is not installed)."""

import os
import subprocess
import sys

import pytest
from engine_fixtures import _need_engine, gone_within

STAND_IN = """
import os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from overlay_kit.llm.engine import PARENT_ENV, _die_with_parent

_die_with_parent(int(os.environ[PARENT_ENV]))

class H(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b'{"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "me"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""

PARENT = """
import sys, threading, time
import httpx
from overlay_kit.llm.engine import Engine
{setup}
started = []
worker = threading.Thread(target=lambda: started.append(Engine(n_ctx=256).start()), name="short-lived")
worker.start()
worker.join()  # the thread that started the server has ended
time.sleep({wait})
eng = started[0]
alive = eng._proc.poll() is None
status = httpx.get(f"{{eng.base_url}}/models", timeout=30).status_code if alive else None
print(eng._proc.pid, alive, status, flush=True)
time.sleep(300)
"""

STAND_IN_SETUP = f"Engine._command = lambda self, model: [sys.executable, '-c', {STAND_IN!r}, str(self.port)]"


def _run_parent(code: str, tmp_path) -> tuple[int, str, str]:
    """Run the parent, read its line, SIGKILL it: (server pid, alive, status) as printed."""
    parent = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp_path)}
    )
    try:
        line = parent.stdout.readline().split()
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    assert len(line) == 3, f"the parent printed {line!r}"
    return int(line[0]), line[1], line[2]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_server_started_from_a_thread_outlives_the_thread_and_ends_with_the_process(tmp_path):
    pid, alive, status = _run_parent(PARENT.format(setup=STAND_IN_SETUP, wait=1.5), tmp_path)
    assert (alive, status) == ("True", "200")  # it was killed with the thread before
    assert gone_within(pid, 10.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_the_llama_cpp_engine_started_from_a_thread_still_answers_and_ends_with_the_process(tmp_path):
    _need_engine()
    pid, alive, status = _run_parent(PARENT.format(setup="", wait=1.5), tmp_path)
    assert (alive, status) == ("True", "200")
    assert gone_within(pid, 10.0)


def test_the_spawner_forks_from_one_long_lived_thread_and_hands_errors_back():
    import threading

    from overlay_kit.llm import engine

    seen = []
    for _ in range(2):
        t = threading.Thread(target=lambda: seen.append(engine._spawn([sys.executable, "-c", "pass"])))
        t.start()
        t.join()
    assert [p.wait(timeout=30) for p in seen] == [0, 0]
    assert engine._SPAWNER is not None and engine._SPAWNER[1].is_alive() and engine._SPAWNER[1].daemon
    with pytest.raises(FileNotFoundError):
        engine._spawn(["/nonexistent/overlay-kit-no-such-program"])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_spawns_from_a_spawner_of_its_own():
    from overlay_kit.llm import engine

    engine._spawn([sys.executable, "-c", "pass"]).wait(timeout=30)
    with engine._SPAWNER_LOCK:  # held across the fork: the child must not wait on it
        pid = os.fork()
        if pid == 0:  # the child
            ok = False
            try:
                ok = engine._spawn([sys.executable, "-c", "pass"]).wait(timeout=30) == 0
            finally:
                os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
