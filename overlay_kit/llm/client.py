"""A client for a local Lemonade server (OpenAI wire format), with record/replay cassettes.

Follows the client checklist of Lemonade's API documentation: base URL from an argument, else
``LEMONADE_BASE_URL``, else ``http://localhost:13305/api/v1``; bearer ``LEMONADE_API_KEY``; health probe;
model discovery (NPU = recipe ``flm``/``ryzenai-llm`` or an id ending ``-FLM``); explicit load with a context
size; chat and streaming (heartbeats skipped, ``[DONE]``, error frames at HTTP 200, cut-off replies, final
usage chunk); time to first token from the server's own timings when it reports them, else the wall clock.

The prompt is counted with the bundled Llama tokenizer and refused *before sending* when it does not fit the
window (NPU 32,768 / GPU and CPU 65,536, or a smaller loaded or advertised context). A server's
context-overflow error in any of its shapes becomes `ContextOverflow` and is never retried; only 408, 429,
502, 503, 504, connection errors, the shared-KV-pool error and the backend watchdog are retried, with capped
exponential backoff. 401 is a configuration error.

A `Cassette` records chat replies keyed by a hash of the request and replays them offline; replayed replies
say so (`Reply.replayed`, `Reply.recorded_at`, `Reply.model`). Without a live server or a recorded reply, a
chat raises `Skipped` — no output is ever made up.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections import defaultdict, deque
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import httpx

from ..bundled import llama_tokenizer
from ..common import read_jsonl

__all__ = [
    "DEFAULT_BASE_URL", "GPU_CTX_SIZE", "NPU_CTX_SIZE",
    "ApiError", "Cassette", "CassetteError", "ConfigError", "ContextOverflow", "Health", "LLMError",
    "LLMTimeout", "LemonadeClient", "ModelInfo", "Reply", "ServerError", "ServerUnavailable", "Skipped",
    "StreamError", "CutOff", "TransientError", "WindowExceeded",
    "backend_of", "classify", "count_message_tokens", "parse_error", "resolve_base_url",
]

DEFAULT_BASE_URL = "http://localhost:13305/api/v1"
NPU_CTX_SIZE = 32768
GPU_CTX_SIZE = 65536
NPU_RECIPES = frozenset({"flm", "ryzenai-llm"})
RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})
# Tokens a chat template adds around each message, and to prime the reply (an upper estimate for
# Llama/Gemma/ChatML templates); the pre-send window check counts them on top of the contents.
MESSAGE_OVERHEAD_TOKENS = 8
REPLY_PRIMING_TOKENS = 4


# ---------------------------------------------------------------------------------------------- errors

class LLMError(Exception):
    """Base of every error this module raises."""


class ConfigError(LLMError):
    """The client is misconfigured (bad URL, rejected API key): fix the setting, retrying will not help."""


class Skipped(LLMError):
    """A model-dependent step did not run: no live server answered and no cassette holds the reply."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"skipped: {reason}")


class ServerUnavailable(Skipped):
    """Nothing answered at the base URL (after retries)."""


class CassetteError(LLMError):
    """A cassette file is unreadable; names the file and line."""


class LLMTimeout(LLMError):
    """The server stopped answering within the read timeout (a stall); not retried."""


@dataclass(frozen=True)
class ApiError:
    """An error body parsed defensively (``error`` may be a string or an object, possibly nested)."""

    status: int | None
    message: str
    type: str = ""
    code: str = ""
    backend_message: str = ""
    backend_type: str = ""
    backend_code: str = ""
    n_ctx: int | None = None
    n_prompt_tokens: int | None = None

    def texts(self) -> tuple[str, ...]:
        return tuple(t.lower() for t in (self.message, self.type, self.code, self.backend_message,
                                         self.backend_type, self.backend_code) if t)


class ServerError(LLMError):
    """The server answered with an error that retrying will not fix."""

    def __init__(self, error: ApiError, what: str = "request"):
        self.error = error
        status = f"HTTP {error.status}" if error.status is not None else "error frame"
        kind = "/".join(x for x in (error.type, error.code) if x)
        super().__init__(f"{what} failed ({status}{', ' + kind if kind else ''}): {error.message}")


class TransientError(ServerError):
    """A retryable error that outlived every retry."""


class ContextOverflow(ServerError):
    """The prompt does not fit the context window. Never retried: trim the prompt instead."""


class WindowExceeded(ContextOverflow):
    """Refused before sending: the counted prompt (+ reply budget) exceeds the model's window."""

    def __init__(self, model: str, prompt_tokens: int, reply_tokens: int, window: int, backend: str):
        self.model, self.prompt_tokens, self.reply_tokens = model, prompt_tokens, reply_tokens
        self.window, self.backend = window, backend
        msg = (f"prompt for {model!r} is {prompt_tokens:,} tokens (+{reply_tokens:,} reserved for the reply), "
               f"over its {backend} window of {window:,} tokens; nothing was sent — trim the prompt")
        LLMError.__init__(self, msg)
        self.error = ApiError(None, msg, "window_exceeded", "context_length_exceeded",
                              n_ctx=window, n_prompt_tokens=prompt_tokens)


class StreamError(LLMError):
    """A streamed reply was malformed or carried an error frame."""


class CutOff(StreamError):
    """The stream ended without ``[DONE]`` and without a finish reason: the reply is incomplete."""

    def __init__(self, partial: str):
        self.partial = partial
        super().__init__(f"stream cut off after {len(partial)} characters (no [DONE], no finish_reason)")


# ------------------------------------------------------------------------------------------ parsing

def _as_int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def parse_error(status: int | None, body: Any) -> ApiError:
    """Read an error body of any shape: JSON object or string, ``{"error": str|obj}``, ``{"detail": ...}``."""
    if isinstance(body, (bytes, str)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            body = json.loads(text)
        except ValueError:
            return ApiError(status, text.strip()[:500] or f"HTTP {status}")
    if not isinstance(body, dict):
        return ApiError(status, str(body)[:500])
    err = body.get("error", body.get("detail", body))
    if isinstance(err, list):  # FastAPI validation errors
        return ApiError(status, "; ".join(str(e.get("msg", e)) if isinstance(e, dict) else str(e) for e in err))
    if not isinstance(err, dict):
        return ApiError(status, str(err))
    raw = ((err.get("details") or {}).get("response") or {}) if isinstance(err.get("details"), dict) else {}
    raw = raw.get("error", raw) if isinstance(raw, dict) else {}
    if isinstance(raw, str):
        raw = {"message": raw}
    src = raw if isinstance(raw, dict) else {}
    return ApiError(
        status=_as_int(err.get("status_code")) or status,
        message=str(err.get("message", "") or json.dumps(err)[:500]),
        type=str(err.get("type", "") or ""),
        code=str(err.get("code", "") or ""),
        backend_message=str(src.get("message", "") or ""),
        backend_type=str(src.get("type", "") or ""),
        backend_code=str(src.get("code", "") or ""),
        n_ctx=_as_int(src.get("n_ctx", err.get("n_ctx"))),
        n_prompt_tokens=_as_int(src.get("n_prompt_tokens", err.get("n_prompt_tokens"))),
    )


def classify(err: ApiError) -> str:
    """``overflow`` | ``transient`` | ``config`` | ``not_loaded`` | ``fatal`` (LEMONADE.md §9)."""
    texts = err.texts()
    if any(t == "context_length_exceeded" for t in (err.code.lower(), err.backend_code.lower())) or any(
        "exceed_context_size" in t or "exceeds the available context size" in t or "max length reached" in t
        for t in texts
    ):
        return "overflow"
    if err.status == 401:
        return "config"
    if err.status in RETRY_STATUSES or any(
        "context size has been exceeded" in t or "backend_watchdog_reset" in t
        or "llama-server failed to start" in t for t in texts
    ):
        return "transient"
    if err.status == 404 and any("model_not_loaded" in t or "model not loaded" in t for t in texts):
        return "not_loaded"
    return "fatal"


def resolve_base_url(explicit: str | None = None) -> str:
    """Explicit argument, else ``$LEMONADE_BASE_URL``, else the default; a bare origin gets ``/api/v1``."""
    url = (explicit or os.environ.get("LEMONADE_BASE_URL") or DEFAULT_BASE_URL).strip().rstrip("/")
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"base URL {url!r} is not an http(s) URL")
    return url + "/api/v1" if parsed.path in ("", "/") else url


def backend_of(model_id: str, recipe: str | None = None) -> str:
    """``npu`` for FastFlowLM / Ryzen AI models, else ``gpu/cpu`` (llama.cpp and friends)."""
    return "npu" if (recipe or "").lower() in NPU_RECIPES or model_id.endswith("-FLM") else "gpu/cpu"


def count_message_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Prompt tokens by the bundled Llama tokenizer, plus a per-message template allowance."""
    texts = []
    for m in messages:
        c = m.get("content") or ""
        texts.append(c if isinstance(c, str) else json.dumps(c))
    encs = llama_tokenizer().encode_batch(texts, add_special_tokens=False) if texts else []
    return sum(len(e.ids) for e in encs) + MESSAGE_OVERHEAD_TOKENS * len(texts) + REPLY_PRIMING_TOKENS


# ----------------------------------------------------------------------------------------- values

@dataclass(frozen=True)
class ModelInfo:
    id: str
    recipe: str = ""
    backend: str = "gpu/cpu"
    downloaded: bool | None = None
    labels: tuple[str, ...] = ()
    max_context_window: int | None = None

    @property
    def window(self) -> int:
        base = NPU_CTX_SIZE if self.backend == "npu" else GPU_CTX_SIZE
        return min(base, self.max_context_window) if self.max_context_window else base


@dataclass(frozen=True)
class Health:
    up: bool
    busy: bool = False
    status: str = ""
    loaded: tuple[tuple[str, int | None], ...] = ()  # (model id, ctx_size) of resident models
    detail: str = ""


@dataclass(frozen=True)
class Reply:
    """One chat reply. `ttft_s` comes from the server when `ttft_source` starts with ``server``."""

    model: str
    content: str
    finish_reason: str | None
    prompt_tokens: int | None = None        # as the server counted them
    completion_tokens: int | None = None
    cached_tokens: int | None = None        # prompt tokens served from the KV cache, when reported
    prompt_tokens_counted: int = 0          # the client's own pre-send count (bundled tokenizer)
    ttft_s: float | None = None
    ttft_source: str = ""                   # server:timings | server:flm | server:stats | wall | wall:total
    server_cpu_s: float | None = None       # server CPU seconds to the first token (when the client has a meter)
    elapsed_s: float | None = None
    streamed: bool = False
    reasoning: str = ""
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    backend: str = ""
    replayed: bool = False
    recorded_at: str | None = None          # UTC ISO time the reply was recorded (replayed replies)

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    def label(self) -> str:
        return (f"replayed from a recording of {self.model} ({self.backend}) made {self.recorded_at}"
                if self.replayed else f"live from {self.model} ({self.backend})")


# --------------------------------------------------------------------------------------- cassettes

def request_key(request: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a request (method, path, body): independent of host and key order."""
    canon = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


class Cassette:
    """Recorded chat replies in a JSONL file, one record per line, keyed by `request_key`.

    Identical requests replay their recordings in the order they were recorded (the n-th identical call
    gets the n-th recording). With ``record=True`` the file is rewritten: records collect in memory and
    the file is replaced atomically by `save()` (or on leaving a ``with`` block without error).
    """

    def __init__(self, path: str | Path, *, record: bool = False, engine: str = ""):
        self.path, self.record_mode, self.engine = Path(path), record, engine
        self._queues: dict[str, deque] = defaultdict(deque)
        self._new: list[dict] = []
        if not record:
            self._load()

    def _load(self) -> None:
        if not self.path.is_file():
            return
        try:
            for lineno, rec in read_jsonl(self.path, "cassette record"):
                try:
                    self._queues[rec["key"]].append(rec)
                    _ = rec["response"], rec["model"], rec["backend"], rec["recorded_at"]
                except (KeyError, TypeError) as exc:
                    raise CassetteError(f"{self.path}:{lineno}: not a cassette record (missing {exc})") from exc
        except ValueError as exc:  # a line that is not JSON at all
            raise CassetteError(str(exc)) from exc

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues.values()) + len(self._new)

    def take(self, key: str) -> dict | None:
        q = self._queues.get(key)
        return q.popleft() if q else None

    def add(self, key: str, request: Mapping[str, Any], reply: Reply) -> None:
        if not self.record_mode:
            raise CassetteError(f"{self.path}: opened for replay, not for recording")
        response = {k: v for k, v in asdict(reply).items() if k not in ("replayed", "recorded_at")}
        self._new.append({
            "key": key, "model": reply.model, "backend": reply.backend, "engine": self.engine,
            "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "request": _summary(request), "response": response,
        })

    def save(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for rec in self._new:
                fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
        tmp.replace(self.path)
        return self.path

    def __enter__(self) -> "Cassette":
        return self

    def __exit__(self, exc_type, *_):
        if self.record_mode and exc_type is None:
            self.save()


def _summary(request: Mapping[str, Any]) -> dict:
    """What a cassette keeps of a request: everything but the message texts, which it hashes (the key
    already commits to them; long prompts would bloat the file)."""
    body = dict(request.get("body") or {})
    messages = body.pop("messages", [])
    text = json.dumps(messages, sort_keys=True, ensure_ascii=False)
    return {**{k: v for k, v in request.items() if k != "body"}, "body": body,
            "messages": {"count": len(messages), "chars": len(text),
                         "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                         "roles": [m.get("role") for m in messages]}}


def _reply_from_record(rec: dict) -> Reply:
    data = dict(rec["response"])
    data["tool_calls"] = tuple(data.get("tool_calls") or ())
    known = {f for f in Reply.__dataclass_fields__}
    return Reply(**{k: v for k, v in data.items() if k in known}, replayed=True, recorded_at=rec["recorded_at"])


# ------------------------------------------------------------------------------------------ client

@dataclass
class _Stream:
    """Accumulates a streamed reply."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tools: dict[int, dict] = field(default_factory=dict)
    finish: str | None = None
    usage: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    model: str = ""
    first_at: float | None = None
    first_cpu: float | None = None
    done: bool = False


class LemonadeClient:
    """OpenAI-compatible client for a local Lemonade server (any llama.cpp-style server works too).

    `cassette` + ``mode``: ``"live"`` (default, no cassette), ``"record"`` (live, every chat reply saved to
    the cassette) or ``"replay"`` (never touches the network; a missing recording raises `Skipped`).
    `meter`: a callable returning the server's cumulative CPU seconds (`Engine.cpu_seconds`); with it each
    reply carries `server_cpu_s`, the CPU the server spent up to the first token — a cost figure that, unlike
    wall-clock TTFT, other load on a shared machine barely inflates.
    """

    def __init__(self, base_url: str | None = None, *, api_key: str | None = None, cassette: Cassette | None = None,
                 mode: str = "live", retries: int = 4, backoff_s: float = 0.5, backoff_cap_s: float = 8.0,
                 read_timeout_s: float | None = None, window: int | None = None,
                 transport: httpx.BaseTransport | None = None, meter: Callable[[], float | None] | None = None):
        if mode not in ("live", "record", "replay"):
            raise ConfigError(f"mode {mode!r} is not one of live, record, replay")
        if mode != "live" and cassette is None:
            raise ConfigError(f"mode {mode!r} needs a cassette")
        if mode == "record" and not cassette.record_mode:
            raise ConfigError(f"mode 'record' needs a cassette opened with record=True ({cassette.path})")
        self.base_url = resolve_base_url(base_url)
        key = api_key if api_key is not None else os.environ.get("LEMONADE_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.cassette, self.mode, self.window = cassette, mode, window
        self.retries, self.backoff_s, self.backoff_cap_s = retries, backoff_s, backoff_cap_s
        self.read_timeout_s = read_timeout_s
        self.meter = meter  # the server's cumulative CPU seconds, when this process can read them (a local engine)
        self._http = httpx.Client(base_url=self.base_url + "/", headers=headers, transport=transport,
                                  timeout=httpx.Timeout(10.0, connect=3.0))
        self._models: dict[str, ModelInfo] = {}
        self._ctx: dict[str, int] = {}  # ctx_size read back after load()
        self._lemonade: bool | None = None  # did /health answer in Lemonade's shape?
        self._cpu0: float | None = None

    # -- plumbing ----------------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "LemonadeClient":
        return self

    def __exit__(self, *_):
        self.close()

    def _sleep(self, attempt: int, retry_after: str | None = None) -> None:
        delay = self.backoff_s * (2 ** attempt)
        if retry_after and retry_after.strip().replace(".", "", 1).isdigit():
            delay = max(delay, float(retry_after))
        time.sleep(min(self.backoff_cap_s, delay))

    def _request(self, method: str, path: str, *, what: str, json_body: Any = None,
                 timeout: httpx.Timeout | None = None, stream: bool = False) -> httpx.Response:
        """Send with retries on transient failures; returns a 2xx response (open, when `stream`)."""
        attempt = 0
        while True:
            try:
                req = self._http.build_request(method, path.lstrip("/"), json=json_body,
                                               timeout=timeout or self._http.timeout)
                resp = self._http.send(req, stream=stream)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as exc:
                if attempt < self.retries:
                    self._sleep(attempt)
                    attempt += 1
                    continue
                raise ServerUnavailable(f"no server answered at {self.base_url} ({type(exc).__name__}: {exc})"
                                        ) from exc
            except httpx.TimeoutException as exc:
                raise LLMTimeout(f"{what}: no answer from {self.base_url} within the read timeout") from exc
            if resp.status_code < 400:
                return resp
            body = resp.read() if stream else resp.content
            resp.close()
            err = parse_error(resp.status_code, body)
            kind = classify(err)
            if kind == "overflow":
                raise ContextOverflow(err, what)
            if kind == "config":
                raise ConfigError(f"{what}: HTTP 401 from {self.base_url} — check LEMONADE_API_KEY ({err.message})")
            if kind == "transient" and attempt < self.retries:
                self._sleep(attempt, resp.headers.get("retry-after"))
                attempt += 1
                continue
            raise (TransientError if kind == "transient" else ServerError)(err, what)

    # -- discovery ---------------------------------------------------------------------------------
    def health(self, read_timeout_s: float = 5.0) -> Health:
        """``GET /health`` with a short timeout; a read timeout means busy (loading), not down."""
        try:
            resp = self._http.get("health", timeout=httpx.Timeout(read_timeout_s, connect=3.0))
        except httpx.ConnectError as exc:
            return Health(False, detail=f"nothing answered at {self.base_url}: {exc}")
        except httpx.TimeoutException:
            return Health(False, busy=True, status="busy", detail="read timeout: the server is busy (often loading)")
        if resp.status_code == 401:
            raise ConfigError(f"health: HTTP 401 from {self.base_url} — check LEMONADE_API_KEY")
        if resp.status_code == 404:  # a plain OpenAI-compatible server: fall back to the model list
            self._lemonade = False
            try:
                ids = [m.id for m in self.models()]
            except LLMError as exc:
                return Health(False, status="no /health", detail=str(exc))
            return Health(True, status="ok", loaded=tuple((i, None) for i in ids), detail="no /health; /models answered")
        try:
            data = resp.json()
        except ValueError:
            return Health(False, status=f"HTTP {resp.status_code}", detail=resp.text[:200])
        self._lemonade = isinstance(data, dict) and ("all_models_loaded" in data or "model_loaded" in data)
        loaded = []
        for m in data.get("all_models_loaded") or [] if isinstance(data, dict) else []:
            ctx = _as_int((m.get("recipe_options") or {}).get("ctx_size"))
            name = m.get("model_name") or m.get("id") or ""
            loaded.append((name, ctx))
            if ctx:
                self._ctx[name] = ctx
        status = str(data.get("status", "")) if isinstance(data, dict) else ""
        return Health(status == "ok", status=status, loaded=tuple(loaded))

    def models(self, show_all: bool = True) -> tuple[ModelInfo, ...]:
        """``GET /models?show_all=true``: id, recipe, backend (NPU or GPU/CPU), advertised window."""
        resp = self._request("GET", "models" + ("?show_all=true" if show_all else ""), what="list models")
        try:
            rows = resp.json()["data"]
        except (ValueError, KeyError, TypeError) as exc:
            raise StreamError(f"list models: unexpected body {resp.text[:200]!r}") from exc
        out = []
        for r in rows:
            recipe = str(r.get("recipe") or "")
            window = _as_int(r.get("context_length")) or _as_int(r.get("max_context_window"))
            out.append(ModelInfo(id=str(r["id"]), recipe=recipe, backend=backend_of(str(r["id"]), recipe),
                                 downloaded=r.get("downloaded"), labels=tuple(r.get("labels") or ()),
                                 max_context_window=window))
        self._models = {m.id: m for m in out}
        return tuple(out)

    def model_info(self, model: str) -> ModelInfo:
        if model not in self._models and self.mode != "replay":
            try:
                self.models()  # refreshes the whole cache
            except LLMError:
                pass
        if model not in self._models:  # not listed (or no list): judge by the id, and remember it
            self._models[model] = ModelInfo(id=model, backend=backend_of(model))
        return self._models[model]

    def window_for(self, model: str) -> int:
        """The window a prompt must fit: the client override, else backend window ∧ advertised ∧ loaded."""
        if self.window:
            return self.window
        info = self.model_info(model)
        return min(x for x in (info.window, self._ctx.get(model)) if x)

    def load(self, model: str, ctx_size: int, *, save_options: bool = False) -> Health:
        """``POST /load`` with a context size, then read it back from ``/health``."""
        info = self.model_info(model)
        limit = NPU_CTX_SIZE if info.backend == "npu" else GPU_CTX_SIZE
        if ctx_size > limit:
            raise ConfigError(f"ctx_size {ctx_size:,} exceeds the {info.backend} window of {limit:,} for {model!r}")
        body = {"model_name": model, "ctx_size": ctx_size}
        if save_options:
            body["save_options"] = True
        try:
            self._request("POST", "load", json_body=body, what=f"load {model}",
                          timeout=httpx.Timeout(1800.0, connect=3.0))
        except ServerError as exc:
            if exc.error.status == 404 and not any("model" in t for t in exc.error.texts()):
                raise ConfigError(f"{self.base_url} has no /load route (not a Lemonade server?)") from exc
            raise
        health = self.health()
        self._ctx[model] = dict(health.loaded).get(model) or ctx_size
        return health

    def unload(self, model: str) -> None:
        try:
            self._request("POST", "unload", json_body={"model_name": model}, what=f"unload {model}")
        except ServerError as exc:
            if exc.error.status != 404:  # "not loaded" is harmless
                raise
        self._ctx.pop(model, None)

    def stats(self) -> dict:
        """Lemonade's ``GET /stats`` for the last request (TTFT, tokens/s, cache tokens)."""
        return self._request("GET", "stats", what="stats").json()

    # -- chat --------------------------------------------------------------------------------------
    def chat(self, model: str, messages: Sequence[Mapping[str, Any]], *, max_completion_tokens: int | None = None,
             stream: bool = False, temperature: float | None = None, seed: int | None = None,
             tools: Sequence[Mapping] | None = None, extra_body: Mapping[str, Any] | None = None,
             window: int | None = None) -> Reply:
        """One chat completion; streaming measures time to first token. Checks the window before sending."""
        counted = count_message_tokens(messages)
        body: dict[str, Any] = {"model": model, "messages": [dict(m) for m in messages], "stream": stream}
        if max_completion_tokens is not None:
            body["max_completion_tokens"] = body["max_tokens"] = max_completion_tokens
        if temperature is not None:
            body["temperature"] = temperature
        if seed is not None:
            body["seed"] = seed
        if tools:
            body["tools"] = [dict(t) for t in tools]
        if stream:
            body["stream_options"] = {"include_usage": True}
        body.update(extra_body or {})
        request = {"method": "POST", "path": "/chat/completions", "body": body}
        key = request_key(request)
        if self.mode == "replay":
            rec = self.cassette.take(key)
            if rec is None:
                raise Skipped(f"no live model in replay mode and {self.cassette.path} holds no recording of "
                              f"this request (key {key[:12]})")
            return _reply_from_record(rec)
        info = self.model_info(model)
        limit = window or self.window_for(model)
        if counted + (max_completion_tokens or 0) > limit:
            raise WindowExceeded(model, counted, max_completion_tokens or 0, limit, info.backend)
        reply = self._chat_live(model, body, counted, info.backend)
        if self.mode == "record":
            self.cassette.add(key, request, reply)
        return reply

    def _timeout(self, counted: int) -> httpx.Timeout:
        read = self.read_timeout_s or max(600.0, math.ceil(counted / 32))
        return httpx.Timeout(read, connect=3.0)

    def _chat_live(self, model: str, body: dict, counted: int, backend: str, reloaded: bool = False) -> Reply:
        what = f"chat with {model}"
        t0 = time.perf_counter()
        self._cpu0 = self.meter() if self.meter else None
        try:
            if not body["stream"]:
                resp = self._request("POST", "chat/completions", json_body=body, what=what,
                                     timeout=self._timeout(counted))
                return self._finish_plain(resp, model, counted, backend, t0)
            return self._stream(body, model, counted, backend, what, t0)
        except ServerError as exc:
            if classify(exc.error) == "not_loaded" and not reloaded and model in self._ctx:
                self.load(model, self._ctx[model])
                return self._chat_live(model, body, counted, backend, reloaded=True)
            raise

    def _server_ttft(self, usage: Mapping, timings: Mapping) -> tuple[float | None, str]:
        if timings and timings.get("prompt_ms") is not None:
            per_tok = timings.get("predicted_per_token_ms") or 0.0
            return (float(timings["prompt_ms"]) + float(per_tok)) / 1000.0, "server:timings"
        if usage and usage.get("prefill_duration_ttft") is not None:
            return float(usage["prefill_duration_ttft"]), "server:flm"
        if self._lemonade:
            try:
                st = self.stats()
                if st.get("time_to_first_token") is not None:
                    return float(st["time_to_first_token"]), "server:stats"
            except LLMError:
                pass
        return None, ""

    def _reply(self, model, content, finish, usage, timings, counted, backend, ttft_wall, ttft_wall_src, elapsed,
               streamed, reasoning="", tool_calls=(), cpu_at_first: float | None = None) -> Reply:
        ttft, src = self._server_ttft(usage, timings)
        if ttft is None:
            ttft, src = ttft_wall, ttft_wall_src
        details = usage.get("prompt_tokens_details") or {}
        cached = _as_int(details.get("cached_tokens")) if isinstance(details, dict) else None
        if cached is None and timings.get("cache_n") is not None:
            cached = _as_int(timings.get("cache_n"))
        if cpu_at_first is None and self.meter:
            cpu_at_first = self.meter()
        cpu = cpu_at_first - self._cpu0 if cpu_at_first is not None and self._cpu0 is not None else None
        return Reply(model=model, content=content, finish_reason=finish, server_cpu_s=cpu,
                     prompt_tokens=_as_int(usage.get("prompt_tokens")),
                     completion_tokens=_as_int(usage.get("completion_tokens")), cached_tokens=cached,
                     prompt_tokens_counted=counted, ttft_s=ttft, ttft_source=src, elapsed_s=elapsed,
                     streamed=streamed, reasoning=reasoning, tool_calls=tuple(tool_calls), backend=backend)

    def _finish_plain(self, resp: httpx.Response, model, counted, backend, t0) -> Reply:
        elapsed = time.perf_counter() - t0
        try:
            data = resp.json()
            if isinstance(data, dict) and "error" in data:  # an error body behind a 200
                err = parse_error(resp.status_code, data)
                raise (ContextOverflow if classify(err) == "overflow" else ServerError)(err, f"chat with {model}")
            choice = data["choices"][0]
            msg = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise StreamError(f"chat with {model}: malformed reply {resp.text[:200]!r}") from exc
        return self._reply(data.get("model") or model, msg.get("content") or "", choice.get("finish_reason"),
                           data.get("usage") or {}, data.get("timings") or {}, counted, backend, elapsed,
                           "wall:total", elapsed, False, msg.get("reasoning_content") or "",
                           msg.get("tool_calls") or ())

    def _frames(self, resp: httpx.Response) -> Iterator[dict]:
        """Decoded ``data:`` frames; heartbeats (``:``) and ``event:`` lines skipped; stops at ``[DONE]``."""
        for line in resp.iter_lines():
            line = line.strip()
            if not line or line.startswith(":") or not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                yield {"__done__": True}
                return
            try:
                frame = json.loads(payload)
            except ValueError as exc:
                raise StreamError(f"malformed stream frame {payload[:120]!r}") from exc
            if not isinstance(frame, dict):
                raise StreamError(f"malformed stream frame {payload[:120]!r}")
            yield frame

    def _stream(self, body, model, counted, backend, what, t0) -> Reply:
        attempt = 0
        while True:
            resp = self._request("POST", "chat/completions", json_body=body, what=what,
                                 timeout=self._timeout(counted), stream=True)
            st = _Stream()
            try:
                try:
                    for frame in self._frames(resp):
                        if frame.get("__done__"):
                            st.done = True
                            break
                        if "error" in frame:
                            err = parse_error(None, frame)
                            kind = classify(err)
                            if kind == "transient" and not st.content and attempt < self.retries:
                                raise _RetryStream(err)
                            exc_type = {"overflow": ContextOverflow, "transient": TransientError}.get(kind, ServerError)
                            raise exc_type(err, what + " (error frame at HTTP 200)")
                        self._absorb(st, frame)
                        if st.first_at is not None and st.first_cpu is None and self.meter:
                            st.first_cpu = self.meter()
                except httpx.TimeoutException as exc:
                    raise LLMTimeout(f"{what}: the stream stalled (read timeout)") from exc
                except httpx.RemoteProtocolError:
                    pass  # the connection dropped mid-stream: judged as a cut-off below
            except _RetryStream as retry:
                resp.close()
                if attempt >= self.retries:
                    raise TransientError(retry.error, what) from None
                self._sleep(attempt)
                attempt += 1
                continue
            finally:
                resp.close()
            break
        if not st.done and st.finish is None:
            raise CutOff("".join(st.content))
        elapsed = time.perf_counter() - t0
        ttft = (st.first_at - t0) if st.first_at is not None else None
        tools = [st.tools[i] for i in sorted(st.tools)]
        return self._reply(st.model or model, "".join(st.content), st.finish, st.usage, st.timings, counted,
                           backend, ttft, "wall", elapsed, True, "".join(st.reasoning), tools, st.first_cpu)

    @staticmethod
    def _absorb(st: _Stream, frame: dict) -> None:
        st.model = st.model or str(frame.get("model") or "")
        if isinstance(frame.get("usage"), dict):
            st.usage = frame["usage"]
        if isinstance(frame.get("timings"), dict):
            st.timings = frame["timings"]
        for choice in frame.get("choices") or []:
            delta = choice.get("delta") or {}
            got = False
            if delta.get("content"):
                st.content.append(delta["content"])
                got = True
            if delta.get("reasoning_content"):
                st.reasoning.append(delta["reasoning_content"])
                got = True
            for tc in delta.get("tool_calls") or []:
                slot = st.tools.setdefault(int(tc.get("index", 0)), {"id": "", "type": "function",
                                                                     "function": {"name": "", "arguments": ""}})
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""
                got = True
            if choice.get("finish_reason"):
                st.finish = choice["finish_reason"]
                got = True
            if got and st.first_at is None:
                st.first_at = time.perf_counter()


class _RetryStream(Exception):
    def __init__(self, error: ApiError):
        self.error = error
