"""The client's NPU path against a stand-in that keeps Lemonade's current API (tests/lemonade_standin.py): one test
per place where the client used to differ from it (issue 38, part 4), and cassettes recorded before the fixes."""

from __future__ import annotations

import json

import pytest
from engine_fixtures import scripted  # noqa: F401  (fixture)
from lemonade_standin import AUTO_CTX, VERSION, lemonade, weights_path  # noqa: F401  (fixture)

from overlay_kit.llm import Cassette, LemonadeClient, WindowExceeded
from overlay_kit.llm import client as llm

QWEN = "Qwen3-0.6B-GGUF"
MSG = [{"role": "user", "content": "hi"}]
OK = {
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
}


def client(server, **kw):
    """Tests after the first send no token limit, so each fails on the old client for its own mismatch."""
    kw.setdefault("backoff_s", 0.001)
    return LemonadeClient(server.base_url, **kw)


# 1 ------------------------------------------------------------------------------- one token limit, never both


def test_one_token_limit_is_sent_never_both(lemonade, scripted):
    reply = client(lemonade).chat(QWEN, MSG, max_completion_tokens=2)  # both would be a 400 here
    assert (reply.content, reply.finish_reason) == ("ok ok", "length")
    [sent] = lemonade.bodies("chat/completions")
    assert sent["max_completion_tokens"] == 2 and "max_tokens" not in sent
    # a plain OpenAI-compatible server (no Lemonade /health; llama-cpp-python reads only max_tokens)
    scripted.add("POST", "chat/completions", 200, OK)
    client(scripted, window=65536).chat("m", MSG, max_completion_tokens=2)
    [plain] = scripted.bodies("chat/completions")
    assert plain["max_tokens"] == 2 and "max_completion_tokens" not in plain


# 2 ----------------------------------------------------------------------- the loaded context survives eviction


def test_the_loaded_context_survives_idle_eviction(lemonade):
    lemonade.saved[QWEN] = {"llamacpp_backend": "rocm"}  # the user's own saved option
    c = client(lemonade)
    c.load(QWEN, 16384)
    assert lemonade.loaded[QWEN].ctx_size == 16384
    # saved through the options route, merged: the user's backend choice stays (save_options would replace it)
    assert lemonade.saved[QWEN] == {"llamacpp_backend": "rocm", "ctx_size": 16384}
    assert lemonade.bodies("load") == [{"model_name": QWEN, "ctx_size": 16384}]
    lemonade.evict(QWEN)  # evict_idle_timeout passed
    reply = c.chat(QWEN, MSG)  # the server loads it again on its own
    assert reply.model_status == "not_loaded"
    assert lemonade.loaded[QWEN].ctx_size == 16384  # not the server's automatic size
    assert AUTO_CTX != 16384


# 3 ------------------------------------------------------------------ replies say which server and model state


def test_replies_and_cassettes_record_server_version_and_model_status(lemonade, tmp_path):
    path = tmp_path / "c.jsonl"
    with Cassette(path, record=True, engine="stand-in") as cas:
        c = client(lemonade, cassette=cas, mode="record")
        cold = c.chat(QWEN, MSG, stream=True)  # not resident: this chat loads it
        warm = c.chat(QWEN, MSG, stream=True)
        lemonade.downsize(QWEN)  # soft idle: KV cache cleared
        soft = c.chat(QWEN, MSG, stream=True)
    want = [(VERSION, "not_loaded"), (VERSION, "ready"), (VERSION, "downsized")]
    assert [(r.server_version, r.model_status) for r in (cold, warm, soft)] == want
    assert f"server {VERSION}, model downsized" in soft.label()
    health = c.health()
    assert (health.version, dict(health.model_status)[QWEN]) == (VERSION, "ready")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["server_version"], r["model_status"]) for r in rows] == want
    assert [(r["response"]["server_version"], r["response"]["model_status"]) for r in rows] == want
    off = LemonadeClient("http://127.0.0.1:9", cassette=Cassette(path), mode="replay")
    again = [off.chat(QWEN, MSG, stream=True) for _ in range(3)]
    assert [(r.server_version, r.model_status) for r in again] == want and all(r.replayed for r in again)


# 4 ----------------------------------------------------------------------- a path is never the model's name


def test_a_weights_path_the_server_echoes_is_never_the_model(lemonade, tmp_path):
    path = tmp_path / "c.jsonl"
    with Cassette(path, record=True) as cas:
        c = client(lemonade, cassette=cas, mode="record")
        streamed = c.chat(QWEN, MSG, stream=True)
        plain = c.chat(QWEN, MSG)
    assert streamed.model == plain.model == QWEN
    text = path.read_text()
    assert weights_path(QWEN) not in text and "/home/" not in text and ".gguf" not in text


# 5 --------------------------------------------------------- only local chat models, with the windows reported


def test_models_are_the_local_chat_models_with_the_windows_the_server_reports(lemonade):
    c = client(lemonade)
    got = {m.id: (m.backend, m.window) for m in c.models()}
    assert got == {
        QWEN: ("gpu/cpu", 40960),
        "Gemma-4-E4B-it-GGUF": ("gpu/cpu", 65536),
        "Long-Ctx-GGUF": ("gpu/cpu", 131072),  # as reported, not capped by a guess for the recipe
        "gemma4-it-e4b-FLM": ("npu", 32768),
        "Not-Downloaded-GGUF": ("gpu/cpu", 65536),
    }
    assert dict(c.left_out) == {
        "nomic-embed-text-v1-GGUF": "embeddings",
        "bge-reranker-v2-m3-GGUF": "reranking",
        "Whisper-Tiny": "recipe whispercpp serves no chat",
        "kokoro-v1": "tts",
        "SD-Turbo": "image",
        "fireworks.kimi-k2p5": "cloud",
    }
    gemma = c.model_info("Gemma-4-E4B-it-GGUF")  # nothing reported: the documented default, and it says so
    assert gemma.window_source == "the server reported no window: the documented gpu/cpu default"
    assert c.model_info(QWEN).window_source == "server: max_context_window"
    c.load("Long-Ctx-GGUF", 100_000)  # over GAIA's GPU window, within what the model supports
    assert {m.id: (m.window, m.window_source) for m in c.models()}["Long-Ctx-GGUF"] == (
        100_000,
        "server: context_length",
    )


# 6 ---------------------------------------------------------------- the window is the context the server resolved


def test_the_window_is_the_context_size_the_server_resolved(lemonade):
    c = client(lemonade)
    long = [{"role": "user", "content": "word " * 6000}]  # fits the model's 40,960, not the 4,096 it would load with
    with pytest.raises(WindowExceeded) as info:
        c.chat(QWEN, long)
    assert info.value.window == AUTO_CTX and lemonade.hits("chat/completions") == 0
    assert c.window_for(QWEN) == AUTO_CTX
    c.load("Gemma-4-E4B-it-GGUF", -1)  # automatic sizing: the window is what the server resolved, never -1
    assert c.window_for("Gemma-4-E4B-it-GGUF") == AUTO_CTX
    assert lemonade.bodies(f"models/{QWEN}/options") == [None]  # asked once (a GET), then remembered
    # loaded at 16,384 without saving it, then evicted: the chat's own load resolves the server's size again
    c.load(QWEN, 16384, persist=False)
    assert c.window_for(QWEN) == 16384
    lemonade.evict(QWEN)
    with pytest.raises(WindowExceeded) as info:
        c.chat(QWEN, long)
    assert info.value.window == AUTO_CTX and lemonade.hits("chat/completions") == 0


# ------------------------------------------------------------------------ cassettes recorded before the fixes


def test_a_cassette_recorded_before_the_fixes_still_replays(tmp_path):
    """The old client keyed a request with both limits and kept the server's echo as the model; no server version
    or model status. Such a recording is still found, as the requested model, with both fields unknown."""
    body = {
        "model": QWEN,
        "messages": MSG,
        "stream": True,
        "max_completion_tokens": 8,
        "max_tokens": 8,
        "stream_options": {"include_usage": True},
        "temperature": 0.0,
    }
    key = llm.request_key({"method": "POST", "path": "/chat/completions", "body": body})
    record = {
        "key": key,
        "model": weights_path(QWEN),
        "backend": "gpu/cpu",
        "engine": "old",
        "recorded_at": "2026-12-01T16:08:38+00:00",
        "request": {},
        "response": {
            "model": weights_path(QWEN),
            "content": "old",
            "finish_reason": "length",
            "backend": "gpu/cpu",
            "streamed": True,
            "ttft_s": 0.1,
            "ttft_source": "wall",
        },
    }
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(record) + "\n")
    off = LemonadeClient("http://127.0.0.1:9", cassette=Cassette(path), mode="replay")
    reply = off.chat(QWEN, MSG, max_completion_tokens=8, stream=True, temperature=0.0)
    assert (reply.content, reply.model, reply.replayed) == ("old", QWEN, True)
    assert (reply.server_version, reply.model_status) == (None, None)
    assert reply.label() == f"replayed from a recording of {QWEN} (gpu/cpu) made 2026-12-01T16:08:38+00:00"
