"""The Lemonade client against a scripted server: only the error shapes a real engine won't produce on demand,
plus Lemonade-only routes (/health, /load, recipes), cassettes and URL/auth resolution."""

from __future__ import annotations

import json
import socket

import pytest
from engine_fixtures import chunk, scripted, sse  # noqa: F401  (fixture)

from overlay_kit.llm import (
    Cassette,
    CassetteError,
    ConfigError,
    ContextOverflow,
    CutOff,
    LemonadeClient,
    LLMTimeout,
    ServerError,
    ServerUnavailable,
    Skipped,
    StreamError,
    TransientError,
    WindowExceeded,
)
from overlay_kit.llm import client as llm

MSG = [{"role": "user", "content": "hi"}]
OK = {
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
}


def client(script, **kw):
    kw.setdefault("backoff_s", 0.001)
    kw.setdefault("window", 65536)
    return LemonadeClient(script.base_url, **kw)


# -------------------------------------------------------------------------------- URL and auth


def test_base_url_resolution(monkeypatch):
    monkeypatch.delenv("LEMONADE_BASE_URL", raising=False)
    assert llm.resolve_base_url() == "http://localhost:13305/api/v1"
    monkeypatch.setenv("LEMONADE_BASE_URL", "http://10.0.0.5:9000")
    assert llm.resolve_base_url() == "http://10.0.0.5:9000/api/v1"  # bare origin gets /api/v1
    assert llm.resolve_base_url("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/v1"  # explicit wins
    with pytest.raises(ConfigError, match="not an http"):
        llm.resolve_base_url("localhost:13305")


def test_bearer_key_from_env_and_401_is_config_error_not_retried(scripted, monkeypatch):
    monkeypatch.setenv("LEMONADE_API_KEY", "sekret")
    scripted.add("POST", "chat/completions", 401, {"error": {"message": "bad key", "type": "auth"}})
    with pytest.raises(ConfigError, match="LEMONADE_API_KEY"):
        client(scripted).chat("m", MSG)
    assert scripted.hits("chat/completions") == 1
    assert scripted.requests[0][2]["Authorization"] == "Bearer sekret"


# ---------------------------------------------------------------------------------------- retries


@pytest.mark.parametrize("status", [408, 429, 502, 503, 504])
def test_transient_status_is_retried_then_succeeds(scripted, status):
    scripted.add("POST", "chat/completions", status, {"error": "busy"}).add("POST", "chat/completions", 200, OK)
    reply = client(scripted).chat("m", MSG)
    assert (reply.content, reply.prompt_tokens) == ("hello", 9)
    assert scripted.hits("chat/completions") == 2


@pytest.mark.parametrize(
    "error",
    [
        {"message": "the context size has been exceeded", "type": "server_error"},  # shared KV pool: transient
        {"message": "backend reset", "code": "backend_watchdog_reset"},
    ],
)
def test_shared_kv_pool_and_watchdog_are_retried(scripted, error):
    scripted.add("POST", "chat/completions", 500, {"error": error}).add("POST", "chat/completions", 200, OK)
    assert client(scripted).chat("m", MSG).content == "hello"
    assert scripted.hits("chat/completions") == 2


def test_retries_are_capped(scripted):
    for _ in range(3):
        scripted.add("POST", "chat/completions", 503, {"error": "down"})
    with pytest.raises(TransientError, match="HTTP 503"):
        client(scripted, retries=2).chat("m", MSG)
    assert scripted.hits("chat/completions") == 3


def test_plain_500_is_not_retried(scripted):
    scripted.add("POST", "chat/completions", 500, {"error": {"message": "boom", "type": "server_error"}})
    with pytest.raises(ServerError, match="boom") as info:
        client(scripted).chat("m", MSG)
    assert not isinstance(info.value, TransientError)
    assert scripted.hits("chat/completions") == 1


def test_connection_refused_is_retried_then_skipped():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = LemonadeClient(f"http://127.0.0.1:{port}", backoff_s=0.001, retries=2, window=65536)
    with pytest.raises(ServerUnavailable) as info:
        c.chat("m", MSG)
    assert isinstance(info.value, Skipped) and "no server answered" in info.value.reason
    assert c.health().up is False


# ------------------------------------------------------------------------------------ overflow shapes

OVERFLOWS = [
    pytest.param(
        400,
        {
            "error": {
                "message": "This model's maximum context length is 512 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
        id="openai",
    ),
    pytest.param(
        400,
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 40000,
                "n_ctx": 32768,
            }
        },
        id="llama.cpp",
    ),
    pytest.param(
        500,
        {
            "error": {
                "message": "backend error",
                "type": "server_error",
                "details": {
                    "response": {
                        "error": {
                            "message": "request too long",
                            "type": "exceed_context_size_error",
                            "n_ctx": 32768,
                            "n_prompt_tokens": 40000,
                        }
                    }
                },
            }
        },
        id="lemonade-wrapped",
    ),
    pytest.param(500, {"error": {"message": "Max length reached!", "type": "model_error"}}, id="flm"),
    pytest.param(400, {"error": "prompt exceeds the available context size"}, id="string-error"),
]


@pytest.mark.parametrize("status,body", OVERFLOWS)
def test_every_overflow_shape_is_context_overflow_and_never_retried(scripted, status, body):
    scripted.add("POST", "chat/completions", status, body).add("POST", "chat/completions", 200, OK)
    with pytest.raises(ContextOverflow) as info:
        client(scripted).chat("m", MSG)
    assert scripted.hits("chat/completions") == 1
    if "n_ctx" in json.dumps(body):
        assert (info.value.error.n_ctx, info.value.error.n_prompt_tokens) == (32768, 40000)


def test_overflow_error_frame_at_http_200(scripted):
    scripted.add(
        "POST",
        "chat/completions",
        chunks=sse(chunk("a"), {"error": {"message": "Max length reached!", "type": "model_error"}}, done=False),
    )
    with pytest.raises(ContextOverflow, match="error frame at HTTP 200"):
        client(scripted).chat("m", MSG, stream=True)


def test_overflow_classification_does_not_swallow_unrelated_errors():
    for body in ({"error": "model_error"}, {"error": {"message": "no such model", "code": "model_not_found"}}):
        assert llm.classify(llm.parse_error(404, body)) == "fatal"
    assert llm.classify(llm.parse_error(500, "<html>Bad gateway</html>")) == "fatal"


# ---------------------------------------------------------------------------------------- streaming


def test_stream_skips_heartbeats_assembles_content_and_reads_final_usage(scripted):
    usage = {"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 2}}
    frames = sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
        ": ping\n\n",
        "event: message\n",
        chunk("Hel"),
        chunk("lo", finish="stop"),
        usage,
    )
    scripted.add("POST", "chat/completions", chunks=frames)
    reply = client(scripted).chat("m", MSG, stream=True, max_completion_tokens=5)
    assert (reply.content, reply.finish_reason, reply.prompt_tokens, reply.completion_tokens) == (
        "Hello",
        "stop",
        12,
        2,
    )
    assert reply.streamed and reply.ttft_source == "wall" and 0 < reply.ttft_s <= reply.elapsed_s
    [sent] = scripted.bodies("chat/completions")
    # no Lemonade /health here: a plain OpenAI-compatible server gets the one limit it reads, never both
    assert sent["stream_options"] == {"include_usage": True} and sent["max_tokens"] == 5
    assert "max_completion_tokens" not in sent


def test_ttft_wall_clock_waits_for_content_not_the_role_chunk(scripted):
    frames = [
        (0.0, "data: " + json.dumps({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}) + "\n\n"),
        (0.3, "data: " + json.dumps(chunk("x", finish="stop")) + "\n\n"),
        (0.0, "data: [DONE]\n\n"),
    ]
    scripted.add("POST", "chat/completions", chunks=frames)
    assert client(scripted).chat("m", MSG, stream=True).ttft_s >= 0.29


@pytest.mark.parametrize(
    "extra,source,ttft",
    [
        (
            {"timings": {"prompt_n": 100, "prompt_ms": 250.0, "predicted_per_token_ms": 10.0, "cache_n": 40}},
            "server:timings",
            0.26,
        ),
        ({"usage": {"prompt_tokens": 5, "completion_tokens": 1, "prefill_duration_ttft": 0.42}}, "server:flm", 0.42),
    ],
)
def test_server_timings_preferred_over_wall_clock(scripted, extra, source, ttft):
    scripted.add("POST", "chat/completions", chunks=sse(chunk("x", finish="stop", **extra)))
    reply = client(scripted).chat("m", MSG, stream=True)
    assert reply.ttft_source == source and reply.ttft_s == pytest.approx(ttft)
    if "timings" in extra:
        assert reply.cached_tokens == 40


def test_meter_gives_server_cpu_to_first_token(scripted):
    readings = iter([10.0, 10.25, 99.0])  # at send, at the first token; never read again
    scripted.add("POST", "chat/completions", chunks=sse(chunk("x"), chunk("y", finish="stop")))
    reply = client(scripted, meter=lambda: next(readings)).chat("m", MSG, stream=True)
    assert reply.server_cpu_s == pytest.approx(0.25)
    scripted.add("POST", "chat/completions", chunks=sse(chunk("x", finish="stop")))
    assert client(scripted).chat("m", MSG, stream=True).server_cpu_s is None  # no meter, no figure


def test_tool_calls_reassembled_by_index(scripted):
    def tc(i, name=None, args=""):
        return {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": i, "function": {"name": name, "arguments": args}}]},
                    "finish_reason": None,
                }
            ]
        }

    scripted.add(
        "POST",
        "chat/completions",
        chunks=sse(tc(0, "search", '{"q":'), tc(1, "open", "{}"), tc(0, None, '"x"}'), chunk(finish="tool_calls")),
    )
    reply = client(scripted).chat("m", MSG, stream=True)
    assert [(t["function"]["name"], t["function"]["arguments"]) for t in reply.tool_calls] == [
        ("search", '{"q":"x"}'),
        ("open", "{}"),
    ]


def test_error_frame_at_200_is_a_failure(scripted):
    scripted.add("POST", "chat/completions", chunks=sse(chunk("a"), {"error": {"message": "kaput"}}, done=False))
    with pytest.raises(ServerError, match="kaput"):
        client(scripted).chat("m", MSG, stream=True)


def test_transient_error_frame_before_content_is_retried(scripted):
    scripted.add(
        "POST",
        "chat/completions",
        chunks=sse({"error": {"code": "backend_watchdog_reset", "message": "reset"}}, done=False),
    )
    scripted.add("POST", "chat/completions", chunks=sse(chunk("ok", finish="stop")))
    assert client(scripted).chat("m", MSG, stream=True).content == "ok"
    assert scripted.hits("chat/completions") == 2


def test_malformed_frame(scripted):
    scripted.add("POST", "chat/completions", chunks=sse(chunk("a"), "data: {not json\n\n"))
    with pytest.raises(StreamError, match="malformed"):
        client(scripted).chat("m", MSG, stream=True)


def test_eof_without_done_or_finish_reason_is_a_cut_off(scripted):
    scripted.add("POST", "chat/completions", chunks=sse(chunk("par"), chunk("tial"), done=False))
    with pytest.raises(CutOff) as info:
        client(scripted).chat("m", MSG, stream=True)
    assert info.value.partial == "partial"


def test_finish_reason_without_done_is_complete(scripted):
    scripted.add("POST", "chat/completions", chunks=sse(chunk("done", finish="length"), done=False))
    reply = client(scripted).chat("m", MSG, stream=True)
    assert reply.content == "done" and reply.truncated


def test_stall_mid_stream_times_out(scripted):
    scripted.add(
        "POST",
        "chat/completions",
        chunks=[(0.0, "data: " + json.dumps(chunk("a")) + "\n\n"), (1.5, "data: [DONE]\n\n")],
    )
    with pytest.raises(LLMTimeout, match="stalled"):
        client(scripted, read_timeout_s=0.3).chat("m", MSG, stream=True)
    assert scripted.hits("chat/completions") == 1  # a stall is not retried


# ------------------------------------------------------------------------------- models, load, health

MODELS = {
    "object": "list",
    "data": [
        {"id": "Gemma-4-E4B-it-GGUF", "recipe": "llamacpp", "downloaded": True, "labels": ["vision"]},
        {"id": "gemma4-it-e4b-FLM", "recipe": "flm", "max_context_window": 32768},
        {"id": "Phi-3-mini-ryzenai", "recipe": "ryzenai-llm"},
        {"id": "Qwen3-0.6B-FLM"},
        {"id": "Small-GGUF", "recipe": "llamacpp", "context_length": 8192},
    ],
}


def test_models_tell_npu_from_gpu_cpu_and_windows(scripted):
    scripted.add("GET", "models", 200, MODELS)
    c = client(scripted, window=None)
    got = {m.id: (m.backend, m.window) for m in c.models()}
    assert got == {
        "Gemma-4-E4B-it-GGUF": ("gpu/cpu", 65536),
        "gemma4-it-e4b-FLM": ("npu", 32768),
        "Phi-3-mini-ryzenai": ("npu", 32768),
        "Qwen3-0.6B-FLM": ("npu", 32768),
        "Small-GGUF": ("gpu/cpu", 8192),
    }
    assert "show_all=true" in scripted.requests[0][1]


def test_npu_window_enforced_before_sending(scripted):
    scripted.add("GET", "models", 200, MODELS)
    c = client(scripted, window=None)
    long = [{"role": "user", "content": "word " * 33000}]
    with pytest.raises(WindowExceeded, match="npu window of 32,768") as info:
        c.chat("gemma4-it-e4b-FLM", long)
    assert info.value.prompt_tokens > 32768 and isinstance(info.value, ContextOverflow)
    assert scripted.hits("chat/completions") == 0
    with pytest.raises(WindowExceeded, match="reserved for the reply"):  # the reply budget counts too
        c.chat("gemma4-it-e4b-FLM", [{"role": "user", "content": "word " * 32000}], max_completion_tokens=2000)
    assert scripted.hits("chat/completions") == 0


def test_load_reads_back_ctx_size_and_window_follows_it(scripted):
    scripted.add("GET", "models", 200, MODELS)
    scripted.add("POST", "load", 200, {"status": "success"})
    scripted.add(
        "GET",
        "health",
        200,
        {
            "status": "ok",
            "model_loaded": "Gemma-4-E4B-it-GGUF",
            "all_models_loaded": [
                {"model_name": "Gemma-4-E4B-it-GGUF", "recipe": "llamacpp", "recipe_options": {"ctx_size": 16384}}
            ],
        },
    )
    c = client(scripted, window=None)
    health = c.load("Gemma-4-E4B-it-GGUF", 16384)
    assert health.up and dict(health.loaded)["Gemma-4-E4B-it-GGUF"] == 16384
    # no options route on this server: the size is kept across an idle eviction by /load's save_options
    assert scripted.bodies("load") == [{"model_name": "Gemma-4-E4B-it-GGUF", "ctx_size": 16384, "save_options": True}]
    assert c.window_for("Gemma-4-E4B-it-GGUF") == 16384
    with pytest.raises(ConfigError, match="exceeds the npu window"):
        c.load("gemma4-it-e4b-FLM", 65536)


def test_model_not_loaded_reloads_then_retries_once(scripted):
    scripted.add("GET", "models", 200, MODELS).add("POST", "load", 200, {"status": "success"})
    scripted.add("GET", "health", 200, {"status": "ok", "all_models_loaded": []})
    scripted.add("GET", "health", 200, {"status": "ok", "all_models_loaded": []})  # read before the chat
    scripted.add("POST", "chat/completions", 404, {"error": {"message": "m not loaded", "code": "model_not_loaded"}})
    scripted.add("POST", "load", 200, {"status": "success"})
    scripted.add("GET", "health", 200, {"status": "ok", "all_models_loaded": []})
    scripted.add("POST", "chat/completions", 200, OK)
    c = client(scripted)
    c.load("Gemma-4-E4B-it-GGUF", 4096)
    assert c.chat("Gemma-4-E4B-it-GGUF", MSG).content == "hello"
    assert scripted.hits("load") == 2 and scripted.hits("chat/completions") == 2


def test_health_busy_when_read_times_out(scripted):
    scripted.add("GET", "health", chunks=[(1.5, "{}")])
    h = client(scripted).health(read_timeout_s=0.3)
    assert (h.up, h.busy) == (False, True)


# --------------------------------------------------------------------------------------- cassettes


def test_record_then_replay_offline(scripted, tmp_path):
    scripted.add("GET", "models", 200, MODELS)
    scripted.add("POST", "chat/completions", chunks=sse(chunk("one", finish="stop")))
    scripted.add("POST", "chat/completions", chunks=sse(chunk("two", finish="stop")))
    path = tmp_path / "c.jsonl"
    with Cassette(path, record=True, engine="scripted") as cas:
        c = client(scripted, cassette=cas, mode="record")
        first = [c.chat("Gemma-4-E4B-it-GGUF", MSG, stream=True).content for _ in range(2)]
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert first == ["one", "two"] and len(rows) == 2
    # the requested id, not the server's echo ("m")
    assert {(r["model"], r["backend"], r["engine"]) for r in rows} == {("Gemma-4-E4B-it-GGUF", "gpu/cpu", "scripted")}
    assert rows[0]["key"] == rows[1]["key"] and rows[0]["recorded_at"].endswith("+00:00")
    # replay: no server at all, identical requests come back in recorded order, labelled as replayed
    off = LemonadeClient("http://127.0.0.1:9", cassette=Cassette(path), mode="replay")
    again = [off.chat("Gemma-4-E4B-it-GGUF", MSG, stream=True) for _ in range(2)]
    assert [r.content for r in again] == ["one", "two"]
    assert all(r.replayed for r in again)
    assert [r.recorded_at for r in again] == [row["recorded_at"] for row in rows]
    assert "replayed from a recording of Gemma-4-E4B-it-GGUF" in again[0].label()
    with pytest.raises(Skipped, match="holds no recording"):
        off.chat("Gemma-4-E4B-it-GGUF", MSG, stream=True)  # recordings used up: never made up
    with pytest.raises(Skipped):
        off.chat("Gemma-4-E4B-it-GGUF", [{"role": "user", "content": "other"}])


def test_cassette_key_ignores_dict_order_but_not_content():
    a = {"method": "POST", "path": "/x", "body": {"a": 1, "b": [1, 2]}}
    b = {"body": {"b": [1, 2], "a": 1}, "path": "/x", "method": "POST"}
    assert llm.request_key(a) == llm.request_key(b)
    assert llm.request_key(a) != llm.request_key({**a, "body": {"a": 2, "b": [1, 2]}})


def test_bad_cassette_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"key": "k", "model": "m", "backend": "npu", "recorded_at": "x", "response": {}}\n{oops\n')
    with pytest.raises(CassetteError, match=r"bad\.jsonl:2"):
        Cassette(path)


def test_modes_need_the_right_cassette(tmp_path):
    with pytest.raises(ConfigError):
        LemonadeClient("http://127.0.0.1:9", mode="replay")
    with pytest.raises(ConfigError, match="record=True"):
        LemonadeClient("http://127.0.0.1:9", mode="record", cassette=Cassette(tmp_path / "x.jsonl"))


def test_lemonade_stats_used_for_ttft_when_no_per_response_timings(scripted):
    scripted.add("GET", "health", 200, {"status": "ok", "model_loaded": "m", "all_models_loaded": []})
    scripted.add("POST", "chat/completions", chunks=sse(chunk("x", finish="stop")))
    scripted.add("GET", "stats", 200, {"time_to_first_token": 0.37, "tokens_per_second": 20.0, "input_tokens": 5})
    c = client(scripted)
    assert c.health().up
    reply = c.chat("m", MSG, stream=True)
    assert (reply.ttft_source, reply.ttft_s) == ("server:stats", 0.37)


def test_unload_not_loaded_is_harmless_other_errors_are_not(scripted):
    scripted.add("POST", "unload", 404, {"error": {"message": "model m is not loaded"}})
    scripted.add("POST", "unload", 500, {"error": {"message": "unload failed"}})
    c = client(scripted)
    c.unload("m")
    with pytest.raises(ServerError, match="unload failed"):
        c.unload("m")


@pytest.mark.parametrize("line, why", [("{not json", "JSONDecodeError"), ('{"key": "k"}', "missing 'response'")])
def test_a_bad_cassette_line_is_named_by_path_and_line(tmp_path, line, why):
    path = tmp_path / "c.jsonl"
    path.write_text("\n" + line + "\n", encoding="utf-8")
    with pytest.raises(CassetteError, match=rf"c\.jsonl:2: not a cassette record .*{why}"):
        Cassette(path)
