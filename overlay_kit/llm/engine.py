"""A real local inference engine with random weights: llama.cpp (``llama-cpp-python``) serving a tiny llama.

Its text is meaningless; its prefill cost, time to first token and KV-prefix reuse are real (ENGINE.md).
`write_gguf` writes the model with the `gguf` package: llama architecture, random weights from a seed, and
the real Llama-2 32k vocabulary of the bundled tokenizer with token scores = −(rank of the first BPE merge
that produces the token) (byte, special and single-character tokens 0), so that llama.cpp tokenizes exactly
like the Python tokenizer. `Engine` starts ``python -m llama_cpp.server`` on 127.0.0.1 at a free port.

The engine is pinned (`ENGINE_SPEC`); ``make test`` installs it (a one-time source build of llama.cpp).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

from ..bundled import tokenizer_path

__all__ = ["ENGINE_SPEC", "Engine", "EngineError", "EngineUnavailable", "ModelSpec", "default_model_path",
           "engine_available", "engine_id", "token_scores", "write_gguf"]

ENGINE_SPEC = "llama-cpp-python[server]==0.3.36"
GGUF_WRITER_VERSION = 1  # bump when the written file changes, so cached models are rewritten
MODEL_ALIAS = "random-llama-4x256"


class EngineError(RuntimeError):
    """The engine failed to start or answer; carries the tail of its log."""


class EngineUnavailable(EngineError):
    """`llama-cpp-python[server]` is not installed in this environment."""


def engine_available() -> str | None:
    """None when the engine can run here, else the reason it cannot."""
    for mod in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(mod) is None:
            return (f"module {mod!r} is missing: the local engine needs `pip install \"{ENGINE_SPEC}\"` "
                    f"(`make test` installs it; the first build of llama.cpp takes ~5 min)")
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
            types[added["id"]] = int(gguf.TokenType.UNKNOWN if added["content"] == model.get("unk_token")
                                     else gguf.TokenType.CONTROL)
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


def engine_id(spec: ModelSpec = ModelSpec(), n_ctx: int | None = None, threads: int = 2) -> str:
    """A human-readable identity for recordings made against this engine."""
    try:
        version = importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        version = "not installed"
    return (f"llama-cpp-python {version}; random-weight llama {spec.layers}x{spec.hidden} seed {spec.seed} "
            f"({spec.digest()}); n_ctx {n_ctx or spec.context}; {threads} threads")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Engine:
    """``python -m llama_cpp.server`` on 127.0.0.1; a context manager. `base_url` is OpenAI-style (``…/v1``)."""

    def __init__(self, model_path: str | Path | None = None, *, spec: ModelSpec = ModelSpec(),
                 n_ctx: int = 32768, threads: int = 2, alias: str = MODEL_ALIAS, ready_timeout_s: float = 120.0,
                 extra_args: tuple[str, ...] = ()):
        self.spec, self.n_ctx, self.threads, self.alias = spec, n_ctx, threads, alias
        self.model_path = Path(model_path) if model_path else None
        self.ready_timeout_s, self.extra_args = ready_timeout_s, extra_args
        self.port: int | None = None
        self._proc: subprocess.Popen | None = None
        self._log = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise EngineError("engine is not running")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def id(self) -> str:
        return engine_id(self.spec, self.n_ctx, self.threads)

    def cpu_seconds(self) -> float | None:
        """CPU seconds the server process has run so far, all threads, ns resolution (Linux schedstat).

        None where /proc is not available. Differences around a request are its CPU cost, which other load
        on a shared machine barely inflates (unlike wall-clock TTFT)."""
        if self._proc is None:
            return None
        total = 0
        try:
            for task in Path(f"/proc/{self._proc.pid}/task").iterdir():
                try:
                    total += int((task / "schedstat").read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    continue  # a thread that just exited
        except OSError:
            return None
        return total / 1e9

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
        self.port = _free_port()
        self._log = tempfile.NamedTemporaryFile("w+", prefix="llama-server-", suffix=".log", delete=False)
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", self.alias,
               "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--logits_all", "False", "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads),
               *self.extra_args]
        # Idle OpenMP workers sleep instead of spinning: on a shared machine spinning workers starve each other
        # (measured here: 2.7k-token cold prefill 10-15 s spinning vs ~2 s passive, at load ~7 on 2 cores).
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      env=env)
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise EngineError(f"llama_cpp.server exited with {self._proc.returncode}:\n{tail}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        tail = self.log_tail()
        self.stop()
        raise EngineError(f"llama_cpp.server did not answer within {self.ready_timeout_s:.0f} s:\n{tail}")

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

    def __exit__(self, *_):
        self.stop()
