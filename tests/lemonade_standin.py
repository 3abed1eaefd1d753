"""A stand-in Lemonade server: the parts of Lemonade's current API (docs/api/openai.md and lemonade.md, 2026-08)
that the client's NPU path depends on, kept as state rather than a script.

Faithful where the client was not:

- ``/chat/completions`` rejects a request carrying both ``max_tokens`` and ``max_completion_tokens`` (documented as
  mutually exclusive) with a 400;
- ``/load`` resolves ``ctx_size`` by the documented priority (the request, else the model's saved options, else
  the server-wide setting, ``-1``: automatic, which this machine sizes to ``AUTO_CTX``); ``save_options`` replaces
  the saved entry; ``evict(model)`` is the idle eviction, after which a chat loads the model again by the same
  rule — so a context size survives only when it was saved;
- ``GET|POST|DELETE /models/{id}/options`` keep saved options (POST merges, ``null`` removes, ``dry_run``) and
  report ``saved``, ``effective``, ``defaults`` and ``resolved_ctx_size``;
- ``/health`` reports ``version`` and, per resident model, ``status`` (``ready``; ``downsized`` after
  ``downsize(model)``, the soft idle stage), ``recipe_options.ctx_size`` (resolved) and a ``launch_command`` with
  local paths;
- ``/models`` lists chat, embedding, reranking, TTS, image, transcription and cloud entries, with
  ``context_length`` (loaded, else configured) and ``max_context_window`` where known;
- replies name the model by its weights' file path (as llama.cpp backends do), streamed or not;
- a prompt longer than the loaded context fails with llama.cpp's ``exceed_context_size_error``.

Tokens are whitespace-separated words plus 4 per message: crude, but the client counts with its own tokenizer
and tests keep a wide margin either side.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit

import pytest
from engine_fixtures import served

VERSION = "11.7.2"
AUTO_CTX = 4096  # what automatic sizing (ctx_size -1) resolves to on this pretend machine
RECIPE_OPTIONS = {
    "ctx_size",
    "llamacpp_backend",
    "llamacpp_args",
    "merge_args",
    "auto_evict",
    "evict_idle_timeout",
    "downsize_idle_timeout",
    "evict_weight_factor",
}
CATALOG = [
    {"id": "Qwen3-0.6B-GGUF", "recipe": "llamacpp", "max_context_window": 40960, "labels": ["reasoning"]},
    {"id": "Gemma-4-E4B-it-GGUF", "recipe": "llamacpp", "labels": ["vision"]},
    {"id": "Long-Ctx-GGUF", "recipe": "llamacpp", "max_context_window": 131072, "labels": ["chat"]},
    {"id": "gemma4-it-e4b-FLM", "recipe": "flm", "max_context_window": 32768},
    {"id": "nomic-embed-text-v1-GGUF", "recipe": "llamacpp", "labels": ["embeddings"]},
    {"id": "bge-reranker-v2-m3-GGUF", "recipe": "llamacpp", "labels": ["reranking"]},
    {"id": "Whisper-Tiny", "recipe": "whispercpp"},
    {"id": "kokoro-v1", "recipe": "kokoro", "labels": ["tts"]},
    {"id": "SD-Turbo", "recipe": "sd-cpp", "labels": ["image"]},
    {"id": "fireworks.kimi-k2p5", "recipe": "cloud", "cloud_provider": "fireworks", "max_context_window": 262144},
    {"id": "Not-Downloaded-GGUF", "recipe": "llamacpp", "downloaded": False},
]


def weights_path(model: str) -> str:
    return f"/home/tester/.cache/huggingface/hub/models--x--{model}/snapshots/0a1b2c/{model}-Q4_K_M.gguf"


@dataclass
class Resident:
    ctx_size: int
    status: str = "ready"
    last_use: float = field(default_factory=time.time)


@dataclass
class StandIn:
    """The server's state; tests reach in to evict, downsize, or read what it was sent."""

    port: int = 0
    server_ctx: int = -1  # the server-wide ctx_size setting (-1: automatic)
    saved: dict = field(default_factory=dict)  # recipe_options.json
    loaded: dict = field(default_factory=dict)  # model -> Resident (max_loaded_models: 1 LLM)
    requests: list = field(default_factory=list)  # (method, path, body)
    catalog: dict = field(default_factory=lambda: {m["id"]: dict(m) for m in CATALOG})
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    def bodies(self, route: str) -> list:
        return [b for _, p, b in self.requests if p == route]

    def hits(self, route: str) -> int:
        return sum(1 for _, p, _ in self.requests if p == route)

    # -- what the server does on its own
    def evict(self, model: str) -> None:
        """Hard idle: `evict_idle_timeout` passed, the model is fully unloaded."""
        self.loaded.pop(model, None)

    def downsize(self, model: str) -> None:
        """Soft idle: `downsize_idle_timeout` passed, the KV cache is cleared, weights stay resident."""
        self.loaded[model].status = "downsized"

    # -- resolution, by the documented priority
    def effective_ctx(self, model: str, requested=None) -> int:
        if requested is not None:
            return int(requested)
        return int(self.saved.get(model, {}).get("ctx_size", self.server_ctx))

    def resolve(self, ctx: int) -> int:
        return AUTO_CTX if ctx == -1 else ctx

    def load(self, model: str, requested=None) -> int:
        ctx = self.resolve(self.effective_ctx(model, requested))
        self.loaded = {model: Resident(ctx)}  # one LLM slot: loading another evicts
        return ctx

    def options(self, model: str, pending: dict | None = None) -> dict:
        saved = dict(self.saved.get(model, {}))
        layered = {**saved, **(pending or {})}
        layered = {k: v for k, v in layered.items() if v is not None}
        defaults = {
            "model_name": model,
            "ctx_size": self.server_ctx,
            "llamacpp_backend": "vulkan",
            "llamacpp_args": "",
            "merge_args": True,
            "auto_evict": None,
            "evict_idle_timeout": 300,
            "downsize_idle_timeout": 60,
            "evict_weight_factor": 1.0,
        }
        effective = {**defaults, **layered}
        return {
            "model_name": model,
            "recipe": self.catalog[model]["recipe"],
            "saved": saved,
            "effective": effective,
            "defaults": defaults,
            "resolved_ctx_size": self.resolve(effective["ctx_size"]),
        }

    def model_row(self, model: str) -> dict:
        row = {
            "object": "model",
            "owned_by": "lemonade",
            "created": 1744173590,
            "downloaded": True,
            "checkpoint": f"x/{model}:Q4_K_M",
            **self.catalog[model],
        }
        if model in self.loaded:
            row["context_length"] = self.loaded[model].ctx_size
        elif self.effective_ctx(model) > 0:
            row["context_length"] = self.effective_ctx(model)  # the configured ctx_size; omitted when automatic
        return row

    def health(self) -> dict:
        rows = [
            {
                "model_name": m,
                "checkpoint": f"x/{m}:Q4_K_M",
                "last_use": r.last_use,
                "type": "llm",
                "device": "npu" if self.catalog[m]["recipe"] == "flm" else "gpu",
                "pinned": False,
                "recipe": self.catalog[m]["recipe"],
                "pid": 4242,
                "status": r.status,
                "is_busy": False,
                "launch_command": [
                    "/home/tester/.cache/lemonade/bin/llama-server",
                    "-m",
                    weights_path(m),
                    "--ctx-size",
                    str(r.ctx_size),
                    "--port",
                    "8001",
                ],
                "recipe_options": {"ctx_size": r.ctx_size},
                "backend_url": "http://127.0.0.1:8001/v1",
            }
            for m, r in self.loaded.items()
        ]
        return {
            "status": "ok",
            "version": VERSION,
            "model_loaded": next(iter(self.loaded), None),
            "all_models_loaded": rows,
            "max_models": {"llm": 1, "embedding": 1, "reranking": 1, "tts": 1, "image": 1, "transcription": 1},
        }


def _error(status: int, message: str, type_: str = "invalid_request_error", **extra) -> tuple[int, dict]:
    return status, {"error": {"message": message, "type": type_, **extra}}


def _chat(st: StandIn, body: dict):
    """(status, payload) or (200, [frames]) for a stream."""
    if "max_tokens" in body and "max_completion_tokens" in body:
        return _error(400, "max_tokens and max_completion_tokens are mutually exclusive; send only one")
    model = body.get("model")
    if model not in st.catalog:
        return _error(404, f"Model {model} has not been found", "not_found", code="model_not_found")
    if model not in st.loaded:  # auto-load through chat: the saved ctx_size, else the server's; a body ctx_size
        st.load(model, body.get("ctx_size"))  # applies only to this (non-resident) load
    resident = st.loaded[model]
    prompt = sum(len(str(m.get("content") or "").split()) + 4 for m in body.get("messages") or [])
    if prompt > resident.ctx_size:
        return _error(
            400,
            "the request exceeds the available context size, try increasing it",
            "exceed_context_size_error",
            n_prompt_tokens=prompt,
            n_ctx=resident.ctx_size,
        )
    budget = body.get("max_completion_tokens", body.get("max_tokens", 16))
    words = ["ok"] * max(1, min(int(budget), 3))
    finish = "length" if int(budget) < 3 else "stop"
    cached = resident.ctx_size if resident.status == "ready" else 0
    resident.status, resident.last_use = "ready", time.time()
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": len(words),
        "total_tokens": prompt + len(words),
        "prompt_tokens_details": {"cached_tokens": min(cached, prompt // 2)},
    }
    path = weights_path(model)
    if not body.get("stream"):
        return 200, {
            "id": "0",
            "object": "chat.completion",
            "created": 1,
            "model": path,
            "usage": usage,
            "choices": [
                {"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": " ".join(words)}}
            ],
        }
    frames = [
        {
            "id": "0",
            "object": "chat.completion.chunk",
            "model": path,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": w + " "}, "finish_reason": None}],
        }
        for w in words
    ]
    frames.append(
        {
            "id": "0",
            "object": "chat.completion.chunk",
            "model": path,
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
        }
    )
    frames.append({"id": "0", "object": "chat.completion.chunk", "model": path, "choices": [], "usage": usage})
    return 200, frames


OPTIONS = re.compile(r"^models/(?P<id>[^/]+)/options$")


def _route(st: StandIn, method: str, route: str, query: str, body):
    with st.lock:
        if (method, route) == ("GET", "health"):
            return 200, st.health()
        if (method, route) == ("GET", "models"):
            rows = [st.model_row(m) for m in st.catalog]
            if "show_all=true" not in query:
                rows = [r for r in rows if r["downloaded"]]
            return 200, {"object": "list", "data": rows}
        if (method, route) == ("POST", "load"):
            model = (body or {}).get("model_name")
            if model not in st.catalog:
                return _error(404, f"Model {model} has not been found", "not_found", code="model_not_found")
            st.load(model, body.get("ctx_size"))
            if body.get("save_options"):
                st.saved[model] = {k: v for k, v in body.items() if k in RECIPE_OPTIONS}
            return 200, {"status": "success", "message": f"Loaded model: {model}"}
        if (method, route) == ("POST", "unload"):
            model = (body or {}).get("model_name")
            if model not in st.loaded:
                return 404, {"status": "error", "message": f"Model not found: {model}"}
            st.evict(model)
            return 200, {"status": "success", "message": "Model unloaded successfully"}
        if (method, route) == ("POST", "chat/completions"):
            return _chat(st, body or {})
        if (method, route) == ("GET", "stats"):
            return 200, {"time_to_first_token": None, "tokens_per_second": None}
        m = OPTIONS.match(route)
        if m:
            model = unquote(m["id"])
            if model not in st.catalog:
                return _error(404, f"Model {model}: Model not found", "not_found", code="model_not_found")
            if method == "GET":
                return 200, st.options(model)
            if method == "DELETE":
                st.saved.pop(model, None)
                return 200, st.options(model)
            if method == "POST":
                changes = {k: v for k, v in (body or {}).items() if k not in ("model_name", "dry_run")}
                bad = sorted(set(changes) - RECIPE_OPTIONS)
                if bad:
                    return _error(400, f"unrecognized option(s): {', '.join(bad)}")
                ctx = changes.get("ctx_size")
                if ctx is not None and (not isinstance(ctx, int) or (ctx < 1 and ctx != -1)):
                    return _error(400, "'ctx_size' must be a positive whole number or -1")
                if (body or {}).get("dry_run"):
                    return 200, st.options(model, changes)
                merged = {**st.saved.get(model, {}), **changes}
                st.saved[model] = {k: v for k, v in merged.items() if v is not None}
                return 200, st.options(model)
        return 404, {"detail": "Not Found"}


def _handler(st: StandIn):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _serve(self, method):
            n = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(n)) if n else None
            url = urlsplit(self.path)
            route = re.sub(r"^/(api/)?v1/", "", url.path)
            st.requests.append((method, route, body))
            status, payload = _route(st, method, route, url.query, body)
            self.send_response(status)
            if isinstance(payload, list):  # a stream: heartbeat, frames, [DONE]
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(b": keep-alive\n\n")
                for frame in payload:
                    self.wfile.write(f"data: {json.dumps(frame)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                return
            data = json.dumps(payload).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._serve("GET")

        def do_POST(self):
            self._serve("POST")

        def do_DELETE(self):
            self._serve("DELETE")

    return H


@pytest.fixture
def lemonade():
    st = StandIn()
    with served(st, _handler(st)):
        yield st
