"""The Lemonade client against a real local engine: llama.cpp serving a random-weight llama (overlay_kit.llm.engine).

Cost and protocol only — the weights are random, so no test looks at what the text says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest
from engine_fixtures import ABORTS_AT_START, SEGFAULTS_ON_POST, alive, engine, gone_within, small_engine, stand_in  # noqa: F401

from overlay_kit.bundled import llama_tokenizer
from overlay_kit.llm import (
    Cassette,
    ConfigError,
    ContextOverflow,
    CutOff,
    LemonadeClient,
    ServerUnavailable,
    WindowExceeded,
)
from overlay_kit.llm.engine import MODEL_ALIAS, Engine, EngineCrashed
from overlay_kit.prompt import compose
from overlay_kit.studies import cost

pytestmark = pytest.mark.engine
MSG = [{"role": "system", "content": "You triage mail."}, {"role": "user", "content": "What is urgent?"}]


@pytest.fixture
def client(engine):
    with LemonadeClient(engine.base_url, backoff_s=0.01, transport=engine.transport()) as c:
        yield c


def _count_requests(c: LemonadeClient) -> list:
    seen = []
    c._http.event_hooks["request"].append(lambda req: seen.append(req.url.path))
    return seen


def test_health_and_models(client):
    assert client.health().up
    [model] = client.models()
    assert (model.id, model.backend, model.window) == (MODEL_ALIAS, "gpu/cpu", 65536)


def test_chat_reply_and_server_token_count(client):
    reply = client.chat(MODEL_ALIAS, MSG, max_completion_tokens=4, temperature=0.0, seed=1)
    assert reply.finish_reason in ("stop", "length") and not reply.replayed
    assert 1 <= reply.completion_tokens <= 4 and reply.ttft_source == "wall:total"
    # the server's prompt count = message tokens + its chat template; the client's count bounds it from above
    contents = sum(len(llama_tokenizer().encode(m["content"], add_special_tokens=False).ids) for m in MSG)
    assert contents < reply.prompt_tokens <= reply.prompt_tokens_counted


def test_streamed_reply_measures_ttft(client, engine):
    client.meter = engine.cpu_seconds
    reply = client.chat(MODEL_ALIAS, MSG, max_completion_tokens=6, stream=True, temperature=0.0, seed=1)
    assert reply.streamed and reply.finish_reason in ("stop", "length")
    assert reply.ttft_source == "wall" and 0 < reply.ttft_s <= reply.elapsed_s
    assert 0 < reply.server_cpu_s < 3 * reply.elapsed_s + 0.05  # 2 compute threads + the HTTP loop
    assert reply.completion_tokens is None or reply.completion_tokens <= 6
    plain = client.chat(MODEL_ALIAS, MSG, max_completion_tokens=6, temperature=0.0, seed=1)
    assert plain.content == reply.content  # greedy: streaming and plain give the same tokens


def test_engine_tokenizes_like_the_python_tokenizer(engine):
    texts = [
        "Hello world",
        "  two  spaces\tand\ttabs   ",
        "naïve café — 日本語 🙂",
        "line\n\n\nbreaks",
        "`code_span()` and snake_case_words",
        "    indented\n        more",
    ]
    tok = llama_tokenizer()
    for text in texts:
        r = httpx.post(
            engine.base_url.removesuffix("/v1") + "/extras/tokenize",
            json={"input": text, "model": MODEL_ALIAS},
            timeout=10,
        )
        ids = [i for i in r.json()["tokens"] if i != 1]  # drop BOS
        assert ids == tok.encode(text, add_special_tokens=False).ids, text


def test_kv_prefix_reuse_makes_the_next_turn_cheaper(client):
    inputs = cost.StudyInputs.from_datasets(max_skill_tokens=2000)  # every small example skill: ~2.5k tokens
    prompt = compose("Session kv.\n\n" + inputs.stable, "", inputs.tools, history=[("user", "What is urgent?")])
    cold = client.chat(MODEL_ALIAS, prompt.messages(), max_completion_tokens=1, stream=True, temperature=0.0)
    warm = client.chat(
        MODEL_ALIAS,
        prompt.then("assistant", cold.content).then("user", "And then?").messages(),
        max_completion_tokens=1,
        stream=True,
        temperature=0.0,
    )
    assert cold.prompt_tokens_counted > 2500
    assert warm.ttft_s < cold.ttft_s  # ~2.6k tokens prefilled cold vs a few dozen warm


def test_server_overflow_error_is_context_overflow_and_not_retried(small_engine):
    with LemonadeClient(small_engine.base_url, backoff_s=0.01) as c:
        seen = _count_requests(c)
        with pytest.raises(ContextOverflow) as info:
            c.chat(MODEL_ALIAS, [{"role": "user", "content": "word " * 400}], max_completion_tokens=4)
    assert not isinstance(info.value, WindowExceeded)  # the server's own error, not the pre-send check
    assert "context" in str(info.value).lower()
    assert seen.count("/v1/chat/completions") == 1


def test_pre_send_window_check_sends_nothing(client):
    seen = _count_requests(client)
    long = [{"role": "user", "content": "word " * 33000}]
    with pytest.raises(WindowExceeded, match="32,768"):
        client.chat(MODEL_ALIAS, long, window=32768)  # the NPU window
    assert "/v1/chat/completions" not in seen
    assert client.health().up  # and the server is untouched


def test_load_is_a_lemonade_route(client):
    with pytest.raises(ConfigError, match="no /load route"):
        client.load(MODEL_ALIAS, 4096)


def test_record_live_then_replay_offline(engine, tmp_path):
    path = tmp_path / "engine.jsonl"
    with Cassette(path, record=True, engine=engine.id) as cas:
        live = LemonadeClient(engine.base_url, cassette=cas, mode="record").chat(
            MODEL_ALIAS, MSG, max_completion_tokens=5, stream=True, temperature=0.0, seed=3
        )
    rec = json.loads(path.read_text())
    assert rec["engine"].startswith("llama-cpp-python 0.3.36") and rec["request"]["messages"]["count"] == 2
    again = LemonadeClient("http://127.0.0.1:9", cassette=Cassette(path), mode="replay").chat(
        MODEL_ALIAS, MSG, max_completion_tokens=5, stream=True, temperature=0.0, seed=3
    )
    assert again.replayed and (again.content, again.ttft_s) == (live.content, live.ttft_s)
    assert again.recorded_at == rec["recorded_at"]


def test_tiny_study_live_prefix_recall_costs_more_than_tail(engine, tmp_path):
    inputs = cost.StudyInputs.from_datasets()
    tiny = cost.StudyInputs(
        inputs.stable[:3000],
        inputs.tools,
        inputs.lessons,
        sizes=(0, 256),
        repeats=1,
        turns=4,
        change_p=1.0,
        reply_tokens=2,
    )
    with LemonadeClient(engine.base_url) as c:
        points = cost.growth(c, MODEL_ALIAS, tiny)
        turns = {p: cost.session(c, MODEL_ALIAS, tiny, p) for p in ("prefix", "tail")}
    assert [p.learned_target for p in points] == [0, 256]
    assert all(p.cold_ttft_s > 0 and p.warm_ttft_s > 0 and not p.replayed for p in points)
    for t in range(1, 4):  # the recall changed at every turn
        assert turns["prefix"][t].reprefill > turns["tail"][t].reprefill
        assert turns["prefix"][t].reprefill >= turns["prefix"][t].prompt_tokens - 40  # all but the heading


def test_study_client_records_live_replies(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("LEMONADE_BASE_URL", "http://127.0.0.1:9")  # no Lemonade here: the local engine is used
    client, model, eng, note = cost.study_client(True, record_to=tmp_path / "rec")
    try:
        assert client.mode == "record" and note.startswith("live: llama-cpp-python") and "no Lemonade" in note
        client.chat(model, MSG, max_completion_tokens=2, stream=True)
        assert len(client.cassette) == 1
    finally:
        client.close()
        eng.stop()


# ------------------------------------------------------------------------------------ weight repacking, crashes


def test_weight_repacking_is_off_unless_turned_on(monkeypatch):
    monkeypatch.delenv("OVERLAY_KIT_EXTRA_BUFTS", raising=False)
    assert [Engine(use_extra_bufts=v).use_extra_bufts for v in (None, True, False)] == [False, True, False]
    monkeypatch.setenv("OVERLAY_KIT_EXTRA_BUFTS", "1")
    assert [Engine(use_extra_bufts=v).use_extra_bufts for v in (None, True, False)] == [True, True, False]
    monkeypatch.setenv("OVERLAY_KIT_EXTRA_BUFTS", "0")  # the way off, even where asked for
    assert [Engine(use_extra_bufts=v).use_extra_bufts for v in (None, True, False)] == [False, False, False]


def test_weight_repacking_setting_reaches_the_model_loader(monkeypatch):
    """The setting is in the engine's identity and in the model parameters the server's loader received (its own
    report, not llama.cpp's log: what llama.cpp prints about repacking depends on the CPU)."""
    monkeypatch.delenv("OVERLAY_KIT_EXTRA_BUFTS", raising=False)
    for flag in (True, False):
        with Engine(n_ctx=256, use_extra_bufts=flag) as eng:
            assert eng.id.endswith(f"weight repacking {'on' if flag else 'off'}")
            assert eng._proc.args[3:5] == ["serve", "1" if flag else "0"]  # the command line it ran
            report = [line for line in eng.log_tail(100_000).splitlines() if "use_extra_bufts=" in line]
            assert report and all(line.endswith(f"use_extra_bufts={flag}") for line in report)


def test_a_server_that_dies_at_start_is_reported_as_a_crash(monkeypatch):
    monkeypatch.delenv("OVERLAY_KIT_EXTRA_BUFTS", raising=False)
    stand_in(monkeypatch, ABORTS_AT_START)
    with pytest.raises(EngineCrashed, match="died of SIGABRT") as info:
        Engine(use_extra_bufts=True).start()
    assert "weight repacking (use_extra_bufts) was on" in str(info.value)
    assert "OVERLAY_KIT_EXTRA_BUFTS=0 turns it off" in str(info.value)


def test_a_server_that_dies_mid_request_is_reported_as_a_crash(monkeypatch):
    monkeypatch.delenv("OVERLAY_KIT_EXTRA_BUFTS", raising=False)
    stand_in(monkeypatch, SEGFAULTS_ON_POST)
    for stream in (False, True):  # before the reply, mid-stream
        with (
            Engine(use_extra_bufts=True) as eng,
            LemonadeClient(eng.base_url, backoff_s=0.01, transport=eng.transport()) as c,
        ):
            with pytest.raises(EngineCrashed, match="died of SIGSEGV.*OVERLAY_KIT_EXTRA_BUFTS=0") as info:
                c.chat("m", MSG, max_completion_tokens=4, stream=stream)  # the crash, not a dropped connection
            assert isinstance(info.value.__cause__, httpx.TransportError) and "(pid " in str(info.value)
        with pytest.raises(EngineCrashed, match="died of SIGSEGV; weight repacking was off") as info:
            with Engine() as eng, LemonadeClient(eng.base_url, backoff_s=0.01) as c:  # a plain client
                c.chat("m", MSG, max_completion_tokens=4, stream=stream)
        assert isinstance(info.value.__cause__, CutOff if stream else ServerUnavailable)  # what it saw, chained


def _orphaned(parent_code: str, tmp_path) -> int:
    """Run `parent_code` (it prints the pid of the process it started), SIGKILL it; the started process's pid."""
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    try:
        child = int(parent.stdout.readline())
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
    return child


def test_the_server_dies_with_its_parent(tmp_path):
    server = _orphaned(
        "import time\nfrom overlay_kit.llm.engine import Engine\n"
        "print(Engine(n_ctx=256).start()._proc.pid, flush=True)\ntime.sleep(300)",
        tmp_path,
    )
    assert gone_within(server, 10.0)


def test_the_portable_watcher_alone_ends_an_orphan(tmp_path):
    """Without Linux's parent-death signal: the watcher thread notices the parent is gone."""
    child = (
        "import os, time\nfrom overlay_kit.llm.engine import _die_with_parent\n"
        "_die_with_parent(os.getppid(), prctl=False)\nprint('ready', flush=True)\ntime.sleep(300)"
    )
    parent = (
        f"import subprocess, sys, time\nc = subprocess.Popen([sys.executable, '-c', {child!r}], "
        f"stdout=subprocess.PIPE, text=True)\nc.stdout.readline()\nprint(c.pid, flush=True)\ntime.sleep(300)"
    )
    assert gone_within(_orphaned(parent, tmp_path), 10.0)
