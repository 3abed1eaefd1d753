"""A client for a local Lemonade server (OpenAI wire format), with record/replay cassettes.

Follows the client checklist of Lemonade's API documentation: base URL from an argument, else
``LEMONADE_BASE_URL``, else ``http://localhost:13305/api/v1``; bearer ``LEMONADE_API_KEY``; health probe;
model discovery (NPU = recipe ``flm``/``ryzenai-llm`` or an id ending ``-FLM``); explicit load with a context
size; chat and streaming (heartbeats skipped, ``[DONE]``, error frames at HTTP 200, cut-off replies, final
usage chunk); time to first token from the server's own timings when it reports them, else the wall clock.

Where Lemonade's current API (``docs/api/openai.md`` and ``lemonade.md``) asks for it:

- **One token limit.** ``max_tokens`` and ``max_completion_tokens`` are mutually exclusive. A chat sends only
  ``max_completion_tokens`` to a server that answers ``/health`` in Lemonade's shape (or whose kind is not
  known yet), and only ``max_tokens`` to a plain OpenAI-compatible server without Lemonade's ``/health``
  (llama-cpp-python, the local engine, reads no other) — never both.
- **The loaded context survives idle eviction.** `load` first saves ``ctx_size`` with
  ``POST /models/{id}/options`` (merged into the model's saved options, nothing else touched), so the server's
  auto-reload after ``evict_idle_timeout`` keeps it; a server without that route gets ``save_options`` on
  ``/load`` instead.
- **The window is the server's.** A prompt must fit the context the model runs with (``/health``'s
  ``recipe_options.ctx_size`` after `load`, or for a resident model); for a model that is not resident (the chat
  will load it), the server's ``resolved_ctx_size`` (options route: the context a load would use now, automatic
  sizing resolved); else ``/models``' ``context_length`` or ``max_context_window``; only when the server reports
  none, the documented default (NPU 32,768 / GPU and CPU 65,536), and `ModelInfo.window_source` says so.
- **Only local chat models.** `models` keeps chat (LLM) models that run locally: entries whose deployment label
  is another mode (embeddings, reranking, transcription, image, tts, ...), whose recipe serves no chat, and
  cloud entries (``recipe: "cloud"`` or a ``cloud_provider``) are left out.
- **Replies say what served them.** Before each live chat the client reads ``/health``: the server's ``version``
  and the model's ``status`` there (``ready``, ``downsized``, ... or ``not_loaded`` when it is not resident and
  the chat will load it) are kept in `Reply.server_version` and `Reply.model_status`, and in cassettes — time to
  first token and KV reuse depend on both.
- **The model is the one asked for.** A reply's `model` is the requested id, never the server's echo, which for
  llama.cpp-style backends can be the weights' file path; no local path reaches a cassette.

The prompt is counted with the bundled Llama tokenizer and refused *before sending* when it does not fit that
window. A server's context-overflow error in any of its shapes becomes `ContextOverflow` and is never retried;
only 408, 429, 502, 503, 504, connection errors, the shared-KV-pool error and the backend watchdog are retried,
with capped exponential backoff. 401 is a configuration error.

A `Cassette` records chat replies keyed by a hash of the request and replays them offline; replayed replies
say so (`Reply.replayed`, `Reply.recorded_at`, `Reply.model`). The key hashes the request with its token limit
as ``max_completion_tokens``; recordings made when the client sent both limits are still found (their key is
tried second). Without a live server or a recorded reply, a chat raises `Skipped` — no output is ever made up.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections import defaultdict, deque
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence
from urllib.parse import quote

import httpx

from ..bundled import llama_tokenizer
from ..common import read_jsonl

__all__ = [
    "DEFAULT_BASE_URL",
    "GPU_CTX_SIZE",
    "NPU_CTX_SIZE",
    "ApiError",
    "Cassette",
    "CassetteError",
    "ConfigError",
    "ContextOverflow",
    "Health",
    "LLMError",
    "LLMTimeout",
    "LemonadeClient",
    "ModelInfo",
    "Reply",
    "ServerError",
    "ServerUnavailable",
    "Skipped",
    "StreamError",
    "CutOff",
    "TransientError",
    "WindowExceeded",
    "backend_of",
    "classify",
    "count_message_tokens",
    "default_window",
    "is_local_chat",
    "parse_error",
    "resolve_base_url",
]

DEFAULT_BASE_URL = "http://localhost:13305/api/v1"
NPU_CTX_SIZE = 32768
GPU_CTX_SIZE = 65536
NPU_RECIPES = frozenset({"flm", "ryzenai-llm"})
# Lemonade's deployment labels (docs/api/openai.md, "Model Labels"): exactly one names what a model serves.
DEPLOYMENT_LABELS = frozenset(
    {
        "chat",
        "transcription",
        "embeddings",
        "embedding",
        "reranking",
        "image",
        "tts",
        "audio-generation",
        "classification",
        "classifier",
        "3d",
    }
)
# Recipes whose default deployment is chat and that run on this machine (``cloud`` is chat but not local).
LOCAL_CHAT_RECIPES = frozenset({"llamacpp", "flm", "ryzenai-llm", "vllm"})
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
        return tuple(
            t.lower()
            for t in (self.message, self.type, self.code, self.backend_message, self.backend_type, self.backend_code)
            if t
        )


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

    def __init__(self, model: str, prompt_tokens: int, reply_tokens: int, window: int, backend: str, source: str = ""):
        self.model, self.prompt_tokens, self.reply_tokens = model, prompt_tokens, reply_tokens
        self.window, self.backend, self.source = window, backend, source
        why = f" ({source})" if source else ""
        msg = (
            f"prompt for {model!r} is {prompt_tokens:,} tokens (+{reply_tokens:,} reserved for the reply), "
            f"over its {backend} window of {window:,} tokens{why}; nothing was sent — trim the prompt"
        )
        LLMError.__init__(self, msg)
        self.error = ApiError(
            None, msg, "window_exceeded", "context_length_exceeded", n_ctx=window, n_prompt_tokens=prompt_tokens
        )


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
        "context size has been exceeded" in t or "backend_watchdog_reset" in t or "llama-server failed to start" in t
        for t in texts
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


def default_window(backend: str) -> int:
    """The documented window of a backend (NPU 32,768, GPU/CPU 65,536): only for a model whose server reports none."""
    return NPU_CTX_SIZE if backend == "npu" else GPU_CTX_SIZE


def is_local_chat(row: Mapping[str, Any]) -> tuple[bool, str]:
    """(keep, why) for one ``/models`` entry: a chat (LLM) model that runs on this machine?

    A deployment label decides (``chat`` and nothing else); without one, the recipe's default does (``llamacpp``,
    ``flm``, ``ryzenai-llm``, ``vllm``, the older ``oga-*``; no recipe at all is a plain OpenAI-compatible server's
    entry). Cloud entries (``recipe: "cloud"`` or a ``cloud_provider``) are chat but not local."""
    recipe = str(row.get("recipe") or "").lower()
    if recipe == "cloud" or row.get("cloud_provider"):
        return False, "cloud"
    modes = {str(x).lower() for x in (row.get("labels") or ())} & DEPLOYMENT_LABELS
    if modes:
        return (True, "chat") if modes == {"chat"} else (False, "/".join(sorted(modes - {"chat"})))
    if row.get("embedding") is True or row.get("reranking") is True:  # the legacy mode booleans
        return False, "embeddings" if row.get("embedding") is True else "reranking"
    if not recipe or recipe in LOCAL_CHAT_RECIPES or recipe.startswith("oga-"):
        return True, "chat"
    return False, f"recipe {recipe} serves no chat"


def _positive(v: Any) -> int | None:
    n = _as_int(v)
    return n if n is not None and n > 0 else None


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
    """A chat model as ``/models`` lists it. `window` is what the server reports (``context_length``: the loaded or
    configured context; else ``max_context_window``: the most the model supports), else the documented default
    for its backend — `window_source` says which."""

    id: str
    recipe: str = ""
    backend: str = "gpu/cpu"
    downloaded: bool | None = None
    labels: tuple[str, ...] = ()
    max_context_window: int | None = None
    context_length: int | None = None

    @property
    def window(self) -> int:
        return self.context_length or self.max_context_window or default_window(self.backend)

    @property
    def window_source(self) -> str:
        if self.context_length:
            return "server: context_length"
        if self.max_context_window:
            return "server: max_context_window"
        return f"the server reported no window: the documented {self.backend} default"


@dataclass(frozen=True)
class Health:
    up: bool
    busy: bool = False
    status: str = ""
    loaded: tuple[tuple[str, int | None], ...] = ()  # (model id, ctx_size) of resident models
    detail: str = ""
    version: str | None = None  # the server's version (Lemonade's /health)
    model_status: tuple[tuple[str, str], ...] = ()  # (model id, status: ready, downsized, ...) of resident models


@dataclass(frozen=True)
class Reply:
    """One chat reply. `ttft_s` comes from the server when `ttft_source` starts with ``server``."""

    model: str
    content: str
    finish_reason: str | None
    prompt_tokens: int | None = None  # as the server counted them
    completion_tokens: int | None = None
    cached_tokens: int | None = None  # prompt tokens served from the KV cache, when reported
    prompt_tokens_counted: int = 0  # the client's own pre-send count (bundled tokenizer)
    ttft_s: float | None = None
    ttft_source: str = ""  # server:timings | server:flm | server:stats | wall | wall:total
    server_cpu_s: float | None = None  # server CPU seconds to the first token (when the client has a meter)
    elapsed_s: float | None = None
    streamed: bool = False
    reasoning: str = ""
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    backend: str = ""
    replayed: bool = False
    recorded_at: str | None = None  # UTC ISO time the reply was recorded (replayed replies)
    server_version: str | None = None  # the server's version from /health before the request (None: unknown)
    model_status: str | None = None  # the model's /health status before it: ready, downsized, ... not_loaded

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    def label(self) -> str:
        served = ", ".join(
            x
            for x in (
                f"server {self.server_version}" if self.server_version else "",
                f"model {self.model_status}" if self.model_status else "",
            )
            if x
        )
        where = f"{self.backend}{', ' + served if served else ''}"
        return (
            f"replayed from a recording of {self.model} ({where}) made {self.recorded_at}"
            if self.replayed
            else f"live from {self.model} ({where})"
        )


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
        self._new.append(
            {
                "key": key,
                "model": reply.model,
                "backend": reply.backend,
                "engine": self.engine,
                "server_version": reply.server_version,
                "model_status": reply.model_status,
                "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "request": _summary(request),
                "response": response,
            }
        )

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
    return {
        **{k: v for k, v in request.items() if k != "body"},
        "body": body,
        "messages": {
            "count": len(messages),
            "chars": len(text),
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "roles": [m.get("role") for m in messages],
        },
    }


def _reply_from_record(rec: dict, model: str) -> Reply:
    """A recorded reply, as the requested `model` (the key commits to it; a recording made before the client kept
    the requested id may hold the server's echo, even a file path). Records older than `server_version` and
    `model_status` replay with both unknown (None)."""
    data = dict(rec["response"])
    data["tool_calls"] = tuple(data.get("tool_calls") or ())
    data["model"] = model
    for k in ("server_version", "model_status"):
        data.setdefault(k, rec.get(k))
    known = {f for f in Reply.__dataclass_fields__} - {"replayed", "recorded_at"}
    return Reply(**{k: v for k, v in data.items() if k in known}, replayed=True, recorded_at=rec["recorded_at"])


def _legacy_request(request: Mapping[str, Any]) -> dict | None:
    """The request as clients before the one-token-limit fix recorded it (both limits, equal), or None."""
    body = request.get("body") or {}
    if "max_completion_tokens" not in body or "max_tokens" in body:
        return None
    return {**request, "body": {**body, "max_tokens": body["max_completion_tokens"]}}


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

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        cassette: Cassette | None = None,
        mode: str = "live",
        retries: int = 4,
        backoff_s: float = 0.5,
        backoff_cap_s: float = 8.0,
        read_timeout_s: float | None = None,
        window: int | None = None,
        transport: httpx.BaseTransport | None = None,
        meter: Callable[[], float | None] | None = None,
    ):
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
        self._http = httpx.Client(
            base_url=self.base_url + "/", headers=headers, transport=transport, timeout=httpx.Timeout(10.0, connect=3.0)
        )
        self._models: dict[str, ModelInfo] = {}
        self.left_out: tuple[tuple[str, str], ...] = ()  # (id, why) of /models entries that are no local chat model
        self._ctx: dict[str, int] = {}  # the context a model runs with: read back after load(), or from /health
        self._resolved: dict[str, int | None] = {}  # resolved_ctx_size from the options route, per model
        self._loaded_with: dict[str, int] = {}  # the ctx_size this client asked `load` for (a reload repeats it)
        self._options_route: bool | None = None  # does the server have POST /models/{id}/options?
        self._lemonade: bool | None = None  # did /health answer in Lemonade's shape?
        self._version: str | None = None  # the server's version, from /health
        self._cpu0: float | None = None

    # -- plumbing ----------------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "LemonadeClient":
        return self

    def __exit__(self, *_):
        self.close()

    def _sleep(self, attempt: int, retry_after: str | None = None) -> None:
        delay = self.backoff_s * (2**attempt)
        if retry_after and retry_after.strip().replace(".", "", 1).isdigit():
            delay = max(delay, float(retry_after))
        time.sleep(min(self.backoff_cap_s, delay))

    def _request(
        self,
        method: str,
        path: str,
        *,
        what: str,
        json_body: Any = None,
        timeout: httpx.Timeout | None = None,
        stream: bool = False,
    ) -> httpx.Response:
        """Send with retries on transient failures; returns a 2xx response (open, when `stream`)."""
        attempt = 0
        while True:
            try:
                req = self._http.build_request(
                    method, path.lstrip("/"), json=json_body, timeout=timeout or self._http.timeout
                )
                resp = self._http.send(req, stream=stream)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as exc:
                if attempt < self.retries:
                    self._sleep(attempt)
                    attempt += 1
                    continue
                raise ServerUnavailable(f"no server answered at {self.base_url} ({type(exc).__name__}: {exc})") from exc
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
            return Health(
                True, status="ok", loaded=tuple((i, None) for i in ids), detail="no /health; /models answered"
            )
        return self._read_health(resp)

    def _read_health(self, resp: httpx.Response) -> Health:
        try:
            data = resp.json()
        except ValueError:
            return Health(False, status=f"HTTP {resp.status_code}", detail=resp.text[:200])
        self._lemonade = isinstance(data, dict) and ("all_models_loaded" in data or "model_loaded" in data)
        if not isinstance(data, dict):
            return Health(False, status=f"HTTP {resp.status_code}", detail=resp.text[:200])
        loaded, statuses = [], []
        for m in data.get("all_models_loaded") or []:
            if not isinstance(m, dict):
                continue
            ctx = _positive((m.get("recipe_options") or {}).get("ctx_size"))  # -1 (automatic) is no size
            name = str(m.get("model_name") or m.get("id") or "")
            loaded.append((name, ctx))
            statuses.append((name, str(m.get("status") or "loaded")))
            if ctx:
                self._ctx[name] = ctx
        if data.get("version") is not None:
            self._version = str(data["version"])
        status = str(data.get("status", ""))
        return Health(
            status == "ok", status=status, loaded=tuple(loaded), version=self._version, model_status=tuple(statuses)
        )

    def _server_state(self, model: str) -> tuple[str | None, str | None]:
        """(server version, the model's status) from ``/health`` just before a chat; learns whether the server is
        Lemonade. Never raises: a probe that fails leaves both unknown and the chat reports its own errors."""
        if self._lemonade is False:
            return None, None
        try:
            resp = self._http.get("health", timeout=httpx.Timeout(5.0, connect=3.0))
        except httpx.HTTPError:
            return self._version, None
        if resp.status_code == 404 and self._lemonade is None:
            self._lemonade = False  # a plain OpenAI-compatible server: nothing to ask, ever
            return None, None
        if resp.status_code != 200:
            return self._version, None
        was = self._lemonade
        health = self._read_health(resp)
        if not self._lemonade:
            self._lemonade = was if was else False
            return None, None
        status = dict(health.model_status).get(model)
        if status is None:  # not resident: this chat loads it with what the server resolves now, so ask again
            self._ctx.pop(model, None)
            self._resolved.pop(model, None)
        return health.version, status or "not_loaded"

    def models(self, show_all: bool = True) -> tuple[ModelInfo, ...]:
        """``GET /models?show_all=true``: the chat (LLM) models that run locally (`is_local_chat`), each with its
        recipe, backend (NPU or GPU/CPU) and the windows the server reports. What was left out, and why, is in
        `left_out`."""
        resp = self._request("GET", "models" + ("?show_all=true" if show_all else ""), what="list models")
        try:
            rows = resp.json()["data"]
        except (ValueError, KeyError, TypeError) as exc:
            raise StreamError(f"list models: unexpected body {resp.text[:200]!r}") from exc
        out, left_out = [], []
        for r in rows:
            if not isinstance(r, dict) or "id" not in r:
                continue
            keep, why = is_local_chat(r)
            if not keep:
                left_out.append((str(r["id"]), why))
                continue
            recipe = str(r.get("recipe") or "")
            out.append(
                ModelInfo(
                    id=str(r["id"]),
                    recipe=recipe,
                    backend=backend_of(str(r["id"]), recipe),
                    downloaded=r.get("downloaded"),
                    labels=tuple(r.get("labels") or ()),
                    max_context_window=_positive(r.get("max_context_window")),
                    context_length=_positive(r.get("context_length")),
                )
            )
        self._models = {m.id: m for m in out}
        self.left_out = tuple(left_out)
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
        """The window a prompt must fit: the client override, else the context the model runs with (read back
        after `load`, or reported on ``/health``), else the server's ``resolved_ctx_size`` (what the chat's own
        load would use), else the window ``/models`` reports, else the documented default."""
        return self._window(model)[0]

    def _window(self, model: str) -> tuple[int, str]:
        if self.window:
            return self.window, "the client's window"
        if self._ctx.get(model):
            return self._ctx[model], "the context it runs with"
        resolved = self._resolved_ctx(model)
        if resolved:
            return resolved, "server: resolved_ctx_size"
        info = self.model_info(model)
        return info.window, info.window_source

    def _options_path(self, model: str) -> str:
        return f"models/{quote(model, safe='')}/options"

    def _resolved_ctx(self, model: str) -> int | None:
        """``resolved_ctx_size`` from ``GET /models/{id}/options`` (Lemonade only; asked once per model)."""
        if self.mode == "replay" or self._lemonade is not True or self._options_route is False:
            return None
        if model not in self._resolved:
            try:
                data = self._request("GET", self._options_path(model), what=f"options of {model}").json()
                self._resolved[model] = _positive(data.get("resolved_ctx_size")) if isinstance(data, dict) else None
            except ServerError as exc:
                if exc.error.status in (404, 405) and not any("model" in t for t in exc.error.texts()):
                    self._options_route = False
                self._resolved[model] = None
            except (LLMError, ValueError):
                self._resolved[model] = None
        return self._resolved[model]

    def _save_ctx(self, model: str, ctx_size: int) -> int | None:
        """Save ``ctx_size`` as the model's own option (``POST /models/{id}/options``, merged), so a reload after
        idle eviction keeps it; returns the server's ``resolved_ctx_size``. None when the route is missing."""
        if self._options_route is False:
            return None
        try:
            resp = self._request(
                "POST", self._options_path(model), json_body={"ctx_size": ctx_size}, what=f"save options of {model}"
            )
        except ServerError as exc:
            if exc.error.status in (404, 405) and not any("model" in t for t in exc.error.texts()):
                self._options_route = False  # an older server: /load's save_options instead
                return None
            raise
        self._options_route = True
        try:
            data = resp.json()
        except ValueError:
            return None
        resolved = _positive(data.get("resolved_ctx_size")) if isinstance(data, dict) else None
        self._resolved[model] = resolved
        return resolved

    def load(self, model: str, ctx_size: int, *, persist: bool = True, save_options: bool = False) -> Health:
        """``POST /load`` with a context size (``-1``: the server sizes it), then read it back from ``/health``.

        With `persist` (the default) the size is first saved as the model's option, so the server's reload after
        idle eviction uses it too (an older server without the options route gets ``save_options`` instead, which
        replaces the model's saved options). The window is then the context the server reports: the loaded
        ``ctx_size`` on ``/health``, else the ``resolved_ctx_size`` it answered."""
        info = self.model_info(model)
        limit, source = (
            (info.max_context_window, "its max_context_window")
            if info.max_context_window
            else (default_window(info.backend), f"the documented {info.backend} default")
        )
        if ctx_size != -1 and not 0 < ctx_size <= limit:
            raise ConfigError(
                f"ctx_size {ctx_size:,} exceeds the {info.backend} window of {limit:,} for {model!r} ({source})"
                if ctx_size > 0
                else f"ctx_size {ctx_size} is not a size (or -1)"
            )
        body: dict[str, Any] = {"model_name": model, "ctx_size": ctx_size}
        resolved = self._save_ctx(model, ctx_size) if persist else None
        if save_options or (persist and self._options_route is False):
            body["save_options"] = True
        try:
            self._request(
                "POST", "load", json_body=body, what=f"load {model}", timeout=httpx.Timeout(1800.0, connect=3.0)
            )
        except ServerError as exc:
            if exc.error.status == 404 and not any("model" in t for t in exc.error.texts()):
                raise ConfigError(f"{self.base_url} has no /load route (not a Lemonade server?)") from exc
            raise
        self._loaded_with[model] = ctx_size
        health = self.health()
        ctx = dict(health.loaded).get(model) or resolved or _positive(ctx_size)
        if ctx:
            self._ctx[model] = ctx
        else:
            self._ctx.pop(model, None)
        return health

    def unload(self, model: str) -> None:
        try:
            self._request("POST", "unload", json_body={"model_name": model}, what=f"unload {model}")
        except ServerError as exc:
            if exc.error.status != 404:  # "not loaded" is harmless
                raise
        self._ctx.pop(model, None)
        self._loaded_with.pop(model, None)

    def stats(self) -> dict:
        """Lemonade's ``GET /stats`` for the last request (TTFT, tokens/s, cache tokens)."""
        return self._request("GET", "stats", what="stats").json()

    # -- chat --------------------------------------------------------------------------------------
    def chat(
        self,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_completion_tokens: int | None = None,
        stream: bool = False,
        temperature: float | None = None,
        seed: int | None = None,
        tools: Sequence[Mapping] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        window: int | None = None,
    ) -> Reply:
        """One chat completion; streaming measures time to first token. Checks the window before sending.

        The reply budget travels as one limit: ``max_completion_tokens``, or ``max_tokens`` to a server known
        not to be Lemonade (see the module docstring); the cassette key always names it
        ``max_completion_tokens``."""
        counted = count_message_tokens(messages)
        body: dict[str, Any] = {"model": model, "messages": [dict(m) for m in messages], "stream": stream}
        if max_completion_tokens is not None:
            if extra_body and ("max_tokens" in extra_body or "max_completion_tokens" in extra_body):
                raise ConfigError("max_completion_tokens and extra_body's token limit are mutually exclusive: pass one")
            body["max_completion_tokens"] = max_completion_tokens
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
            legacy = _legacy_request(request)
            if rec is None and legacy is not None:  # recorded when the client sent both limits
                rec = self.cassette.take(request_key(legacy))
            if rec is None:
                raise Skipped(
                    f"no live model in replay mode and {self.cassette.path} holds no recording of "
                    f"this request (key {key[:12]})"
                )
            return _reply_from_record(rec, model)
        version, status = self._server_state(model)
        info = self.model_info(model)
        limit, source = (window, "the caller's window") if window else self._window(model)
        if counted + (max_completion_tokens or 0) > limit:
            raise WindowExceeded(
                model,
                counted,
                max_completion_tokens or 0,
                limit,
                info.backend,
                source if source.startswith("the server reported no window") else "",
            )
        wire = body
        if self._lemonade is False and "max_completion_tokens" in body:  # llama-cpp-python reads only max_tokens
            wire = {("max_tokens" if k == "max_completion_tokens" else k): v for k, v in body.items()}
        reply = replace(
            self._chat_live(model, wire, counted, info.backend), server_version=version, model_status=status
        )
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
                resp = self._request(
                    "POST", "chat/completions", json_body=body, what=what, timeout=self._timeout(counted)
                )
                return self._finish_plain(resp, model, counted, backend, t0)
            return self._stream(body, model, counted, backend, what, t0)
        except ServerError as exc:
            if classify(exc.error) == "not_loaded" and not reloaded and model in self._loaded_with:
                self.load(model, self._loaded_with[model])
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

    def _reply(
        self,
        model,
        content,
        finish,
        usage,
        timings,
        counted,
        backend,
        ttft_wall,
        ttft_wall_src,
        elapsed,
        streamed,
        reasoning="",
        tool_calls=(),
        cpu_at_first: float | None = None,
    ) -> Reply:
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
        return Reply(
            model=model,
            content=content,
            finish_reason=finish,
            server_cpu_s=cpu,
            prompt_tokens=_as_int(usage.get("prompt_tokens")),
            completion_tokens=_as_int(usage.get("completion_tokens")),
            cached_tokens=cached,
            prompt_tokens_counted=counted,
            ttft_s=ttft,
            ttft_source=src,
            elapsed_s=elapsed,
            streamed=streamed,
            reasoning=reasoning,
            tool_calls=tuple(tool_calls),
            backend=backend,
        )

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
        return self._reply(
            model,
            msg.get("content") or "",
            choice.get("finish_reason"),
            data.get("usage") or {},
            data.get("timings") or {},
            counted,
            backend,
            elapsed,
            "wall:total",
            elapsed,
            False,
            msg.get("reasoning_content") or "",
            msg.get("tool_calls") or (),
        )

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
            resp = self._request(
                "POST", "chat/completions", json_body=body, what=what, timeout=self._timeout(counted), stream=True
            )
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
        return self._reply(
            model,
            "".join(st.content),
            st.finish,
            st.usage,
            st.timings,
            counted,
            backend,
            ttft,
            "wall",
            elapsed,
            True,
            "".join(st.reasoning),
            tools,
            st.first_cpu,
        )

    @staticmethod
    def _absorb(st: _Stream, frame: dict) -> None:
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
                slot = st.tools.setdefault(
                    int(tc.get("index", 0)), {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
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
