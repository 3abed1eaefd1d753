"""Capability evolution: every routing rule and every surface boundary has the test that fails without it."""

from __future__ import annotations

import socket
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from engine_fixtures import engine, scripted  # noqa: F401  (fixtures)
from hypothesis import given, settings
from hypothesis import strategies as st
from overlay_support import TRUSTED, make_skill

from overlay_kit import gates, surfaces
from overlay_kit.common import bigram_similarity
from overlay_kit.llm import LemonadeClient
from overlay_kit.skill import SkillError
from overlay_kit.store import Store
from overlay_kit.surfaces import (
    ROUTES,
    FeedbackError,
    PackageError,
    PromptError,
    Signal,
    SignalError,
    SkillPackages,
    activate,
    create_draft,
    delete_version,
    edit_draft,
    instructions,
    prompt_versions,
    publish,
    record_deliverable,
    record_feedback,
    record_signal,
    record_trace,
    review_report,
    route,
    surface_digest,
)
from overlay_kit.surfaces.knowledge import (
    KnowledgeBase,
    KnowledgeError,
    LLMSummarizer,
    lead_summary,
    normalize_markdown,
    outline,
    pick_summarizer,
)
from overlay_kit.surfaces.memory import (
    Candidate,
    ExtractionError,
    LLMExtractor,
    MemorySettings,
    MemoryWriter,
    Message,
    RuleExtractor,
    UserMemoryError,
    cue_gate,
    last_pairs,
    memories,
    memory_delete,
    memory_runs,
    memory_save,
    memory_update,
    pick_extractor,
    reconcile,
)

WAIT = 10  # seconds: an upper bound for background work that normally takes milliseconds


@pytest.fixture
def store():
    with Store.open(":memory:") as s:
        yield s


def without(name):
    return tuple(r for r in ROUTES if r.name != name)


# ------------------------------------------------------------------------------------------ routing

ROUTED = [
    ("user_memory", Signal("preference", "replies in English", user="u1")),
    ("user_memory", Signal("identity", "works at Contoso", user="u1")),
    ("user_memory", Signal("project", "migrating billing this quarter", user="u1")),
    ("user_memory", Signal("correction", "the office is Berlin, not Munich", user="u1")),
    ("knowledge", Signal("missing_material", "no doc for the expense policy", task="t1")),
    ("skill_overlay", Signal("procedure", "label urgent mail before replying", skill="mail")),
    ("skill_overlay", Signal("policy", "never reply to no-reply senders", skill="mail")),
    ("prompt", Signal("role", "you are the finance assistant", agent="finance")),
    ("prompt", Signal("boundary", "do not give legal advice", agent="finance")),
    ("program", Signal("deterministic_rule", "IBAN checksum must validate", cross_task=True)),
]


@pytest.mark.parametrize("surface,signal", ROUTED, ids=[f"{s}-{g.kind}" for s, g in ROUTED])
def test_each_route_rule_sends_its_signal_and_nothing_else_does(surface, signal):
    got = route(signal)
    assert (got.surface, got.rule) == (surface, surface) and got.reason
    assert route(signal, without(surface)).surface is None  # the rule is the only thing routing it


@pytest.mark.parametrize("kind", ["rating", "trace", "failure", "deliverable", "other"])
def test_runtime_evidence_routes_nowhere_even_with_every_owner_named(kind):
    got = route(Signal(kind, "thumbs down", user="u1", agent="finance", skill="mail", task="t1", cross_task=True))
    assert got.surface is None and got.rule == "evidence_only" and "evidence" in got.reason


@pytest.mark.parametrize(
    "signal,missing",
    [
        (Signal("procedure", "do X first"), "names no skill"),
        (Signal("role", "be terse"), "names no agent"),
        (Signal("preference", "likes tea"), "names no user"),
        (Signal("deterministic_rule", "this invoice total is 40"), "one task only"),
    ],
)
def test_a_signal_without_its_owner_is_ambiguous_and_routes_nowhere(signal, missing):
    got = route(signal)
    assert got.surface is None and missing in got.reason


def test_bad_signals_raise_typed_errors_naming_the_field():
    with pytest.raises(SignalError) as e:
        Signal("vibes", "x")
    assert e.value.field == "kind"
    with pytest.raises(SignalError, match="text"):
        Signal("rating", "  ")
    with pytest.raises(SignalError, match="user"):
        Signal("preference", "x", user="")
    with pytest.raises(SignalError, match="at"):
        Signal("rating", "x", at=datetime(2025, 1, 1))
    with pytest.raises(SignalError, match="signal"):
        route({"kind": "rating"})


def test_record_signal_stores_evidence_and_changes_no_surface(store):
    before = surface_digest(store)
    rec = record_signal(store, Signal("boundary", "no legal advice", agent="finance", task="t1"))
    nowhere = record_signal(store, Signal("failure", "timeout calling the bank", task="t1"))
    assert rec.routing.surface == "prompt" and nowhere.routing.surface is None
    assert surface_digest(store) == before  # routing names a surface; it writes to none
    assert [r.signal.kind for r in surfaces.signals(store, task="t1")] == ["boundary", "failure"]
    assert [r.id for r in surfaces.signals(store, surface=None)] == [nowhere.id]


# ---------------------------------------------------------------------------------------- user memory

CUED = [{"role": "user", "content": "I always want replies in English."}, {"role": "assistant", "content": "Sure."}]
PLAIN = [{"role": "user", "content": "What is the weather in Oslo?"}, {"role": "assistant", "content": "Rainy."}]


class Counting:
    """An extractor that records each call and returns fixed candidates."""

    def __init__(self, *candidates):
        self.calls, self.candidates = [], list(candidates)

    def __call__(self, pairs):
        self.calls.append(pairs)
        return list(self.candidates)


def run(store, extractor, messages, *, tools=(), settings=MemorySettings(), user="u1"):
    with MemoryWriter(store, extractor, settings=settings) as w:
        return w.after_turn(user, messages, turn="t", tools_used=tools).result(timeout=WAIT)


def test_no_cue_means_no_extraction_call(store):
    ex = Counting(Candidate("preference", "I like rain", 0.9))
    r = run(store, ex, PLAIN * 3)
    assert ex.calls == [] and r.outcome == "no_cue" and memories(store, "u1") == []
    r = run(store, ex, PLAIN + CUED)
    assert len(ex.calls) == 1 and r.outcome == "extracted" and r.cues == ("preference",)


def test_the_extractor_sees_only_the_latest_three_pairs(store):
    convo = []
    for i in range(5):
        convo += [{"role": "user", "content": f"q{i} I prefer option {i}"}, {"role": "assistant", "content": f"a{i}"}]
    ex = Counting()
    run(store, ex, convo)
    assert [(u.content[:2], a.content) for u, a in ex.calls[0]] == [("q2", "a2"), ("q3", "a3"), ("q4", "a4")]
    # a cue outside the window does not open the gate
    old_cue = CUED + PLAIN * 3
    ex = Counting()
    assert run(store, ex, old_cue).outcome == "no_cue" and ex.calls == []


def test_last_pairs_ignores_system_and_tool_messages_and_keeps_a_trailing_question():
    msgs = [
        Message("system", "be nice"),
        Message("user", "a"),
        Message("tool", "x"),
        Message("assistant", "b"),
        Message("user", "c"),
    ]
    assert last_pairs(msgs) == (
        (Message("user", "a"), Message("assistant", "b")),
        (Message("user", "c"), Message("assistant", "")),
    )
    with pytest.raises(UserMemoryError, match=r"messages\[0\]"):
        last_pairs([{"role": "user"}])


def test_explicit_memory_tool_in_the_turn_skips_extraction(store):
    for tool in ("memory_save", "memory_update", "memory_delete"):
        ex = Counting(Candidate("preference", "I like rain", 0.9))
        r = run(store, ex, CUED, tools=("web_search", tool))
        assert r.outcome == "skipped_explicit" and ex.calls == []
    ex = Counting()
    assert run(store, ex, CUED, tools=("web_search",)).outcome == "extracted" and len(ex.calls) == 1


def test_low_salience_candidates_are_dropped(store):
    ex = Counting(
        Candidate("preference", "I want a short answer today", 0.2), Candidate("identity", "I am a tax accountant", 0.8)
    )
    r = run(store, ex, CUED)
    assert [d.action for d in r.decisions] == ["low_salience", "added"]
    assert [m.content for m in memories(store, "u1")] == ["I am a tax accountant"]


def test_equivalent_content_is_a_no_op(store):
    reconcile(store, "u1", [Candidate("preference", "I always want replies in English.", 0.9)])
    before = memories(store, "u1")
    decisions = reconcile(store, "u1", [Candidate("preference", "i always want replies in english", 0.9)])
    assert decisions[0].action == "noop" and decisions[0].similarity == 1.0
    assert memories(store, "u1") == before  # same row, same updated_at


def test_related_automatic_memory_is_updated_in_place(store):
    reconcile(store, "u1", [Candidate("preference", "I prefer replies in English", 0.9)])
    d = reconcile(store, "u1", [Candidate("preference", "I prefer replies in French", 0.9)])[0]
    assert d.action == "updated" and 0.6 <= d.similarity < 0.9
    assert [m.content for m in memories(store, "u1")] == ["I prefer replies in French"]


def test_reconciliation_is_per_type(store):
    reconcile(store, "u1", [Candidate("preference", "I prefer replies in English", 0.9)])
    d = reconcile(store, "u1", [Candidate("project", "I prefer replies in English", 0.9)])[0]
    assert d.action == "added" and len(memories(store, "u1")) == 2


def test_automatic_content_never_overwrites_a_manual_memory(store):
    manual = memory_save(store, "u1", "preference", "I prefer replies in English")
    r = run(store, Counting(Candidate("preference", "I prefer replies in French", 0.95)), CUED)
    assert r.decisions[0].action == "manual_kept" and r.written == 0
    assert memories(store, "u1") == [manual]


def test_memory_tools_are_manual_and_delete_erases(store):
    m = memory_save(store, "u1", "identity", "  I work   at Contoso ")
    assert (m.content, m.source) == ("I work at Contoso", "manual")
    auto = reconcile(store, "u1", [Candidate("project", "I am migrating billing", 0.9)])[0]
    assert memory_update(store, auto.memory_id, "I am migrating billing to SAP").source == "manual"
    memory_delete(store, m.id)
    assert [x.id for x in memories(store, "u1")] == [auto.memory_id]
    assert store.conn.execute("SELECT count(*) FROM user_memories WHERE id = ?", (m.id,)).fetchone()[0] == 0
    with pytest.raises(UserMemoryError, match="type"):
        memory_save(store, "u1", "mood", "happy")
    with pytest.raises(UserMemoryError, match="content"):
        memory_save(store, "u1", "identity", "x" * 401)
    with pytest.raises(UserMemoryError, match="memory_id"):
        memory_delete(store, 999)


def test_extraction_runs_in_the_background(store):
    release, entered = threading.Event(), threading.Event()

    def slow(pairs):
        entered.set()
        release.wait(WAIT)
        return []

    with MemoryWriter(store, slow) as w:
        fut = w.after_turn("u1", CUED, turn="t1")
        assert entered.wait(WAIT) and not fut.done()  # after_turn returned while the extractor still runs
        release.set()
        assert fut.result(timeout=WAIT).outcome == "extracted"


def test_a_failed_extraction_is_recorded_and_the_task_result_is_unchanged(store):
    def broken(pairs):
        raise RuntimeError("model crashed")

    def task():  # an agent turn: the answer, then the memory pass
        answer = "Here is your summary."
        fut = w.after_turn("u1", CUED, turn="t9")
        return answer, fut

    with MemoryWriter(store, broken) as w:
        answer, fut = task()
        r = fut.result(timeout=WAIT)
    assert answer == "Here is your summary."
    assert r.outcome == "failed" and "model crashed" in r.error
    assert [(x.turn, x.outcome) for x in memory_runs(store, "u1")] == [("t9", "failed")]
    assert run(store, lambda pairs: "not a list", CUED).outcome == "failed"


def test_bad_input_to_after_turn_raises_before_scheduling(store):
    with MemoryWriter(store, Counting()) as w:
        with pytest.raises(UserMemoryError, match="user"):
            w.after_turn("", CUED, turn="t")
        with pytest.raises(UserMemoryError, match="messages"):
            w.after_turn("u1", [{"role": "user", "content": 3}], turn="t")
    assert memory_runs(store) == []


def test_rule_extractor_keeps_first_person_durable_facts_and_scores_the_rest_low():
    pairs = last_pairs(
        [
            {
                "role": "user",
                "content": "Actually the meeting moved. I always want replies in English. "
                "Today I want a short one. I like the numbers in report.xlsx.",
            },
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "My name is Dana and I work at Contoso. No, I meant the Berlin office."},
            {"role": "assistant", "content": "OK."},
        ]
    )
    got = {(c.type, c.content): c.salience for c in RuleExtractor()(pairs)}
    assert ("correction", "Actually the meeting moved.") not in got  # not about the user
    assert got[("preference", "I always want replies in English.")] >= 0.8
    assert got[("preference", "Today I want a short one.")] < 0.5  # not useful next week
    assert got[("preference", "I like the numbers in report.xlsx.")] < 0.5  # recoverable from a file
    assert got[("identity", "My name is Dana and I work at Contoso.")] >= 0.5
    assert ("correction", "No, I meant the Berlin office.") in got
    assert cue_gate(pairs) == ("identity", "preference", "correction")


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_bigram_similarity_is_a_symmetric_score_in_unit_range(a, b):
    s = bigram_similarity(a, b)
    assert 0.0 <= s <= 1.0 and s == bigram_similarity(b, a)
    assert bigram_similarity(a, a) == 1.0


def test_bigram_similarity_orders_rewordings():
    base = "I prefer replies in English"
    assert bigram_similarity(base, base.upper() + "!") == 1.0
    assert bigram_similarity(base, "I prefer replies in French") > bigram_similarity(base, "My name is Dana")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_pick_extractor_is_rule_based_without_a_server():
    assert isinstance(pick_extractor(None), RuleExtractor)
    client = LemonadeClient(f"http://127.0.0.1:{_free_port()}", retries=0, window=65536)
    assert isinstance(pick_extractor(client), RuleExtractor)


def test_pick_extractor_uses_the_local_model_when_one_answers(scripted, store):  # noqa: F811
    health = {
        "status": "ok",
        "model_loaded": "m",
        "all_models_loaded": [{"model_name": "m", "recipe_options": {"ctx_size": 4096}}],
    }
    scripted.add("GET", "health", 200, health).add("GET", "models", 200, {"data": [{"id": "m"}]})
    reply = '```json\n[{"type": "preference", "content": "Replies in English", "salience": 0.9}]\n```'
    scripted.add(
        "POST", "chat/completions", 200, {"choices": [{"message": {"content": reply}, "finish_reason": "stop"}]}
    )
    scripted.add(
        "POST",
        "chat/completions",
        200,
        {"choices": [{"message": {"content": "sure! here you go"}, "finish_reason": "stop"}]},
    )
    client = LemonadeClient(scripted.base_url, retries=0, window=65536)
    ex = pick_extractor(client)
    assert isinstance(ex, LLMExtractor) and ex.model == "m"
    r = run(store, ex, CUED)
    assert r.outcome == "extracted" and [m.content for m in memories(store, "u1")] == ["Replies in English"]
    sent = scripted.bodies("chat/completions")[0]
    assert sent["temperature"] == 0.0 and "I always want replies in English." in sent["messages"][1]["content"]
    r = run(store, ex, CUED)  # an unparsable reply is a recorded failure, not a memory
    assert r.outcome == "failed" and ExtractionError.__name__ in r.error


# ---------------------------------------------------------------------------------------- knowledge

DOC = (
    "Expense policy\r\n==============\r\n\r\n\r\nMeals are   capped at 40 EUR per day.  \r\n\r\n"
    "Travel\r\n------\r\n* Book trains\r\n* Economy only\r\n"
)


class Gate:
    """A summarizer that blocks until released (to make a result arrive late)."""

    def __init__(self, text="generated summary"):
        self.entered, self.release, self.text = threading.Event(), threading.Event(), text

    def __call__(self, body):
        self.entered.set()
        assert self.release.wait(WAIT)
        return self.text


@pytest.fixture
def kb(store):
    with KnowledgeBase(store) as k:
        yield k


def test_ingest_normalizes_markdown_rebuilds_the_outline_and_is_pending(kb):
    doc = kb.ingest("policy/expenses", DOC, summarize=False)
    assert (
        doc.body
        == normalize_markdown(DOC)
        == ("# Expense policy\n\nMeals are capped at 40 EUR per day.\n\n## Travel\n\n- Book trains\n- Economy only\n")
    )
    assert [(h.slug, h.level, h.line) for h in doc.outline] == [("expense-policy", 1, 1), ("travel", 2, 5)]
    assert doc.outline == outline(doc.body) and doc.title == "Expense policy"
    assert (doc.status, doc.revision, doc.summary) == ("pending", 1, None)


def test_a_pending_document_is_never_returned_by_search(kb):
    kb.ingest("policy/expenses", DOC, summarize=False)
    assert kb.search("meals capped") == [] and kb.knowledge_map() == []
    kb.mark_ready("policy/expenses")
    hit = kb.search("meals capped")[0]
    assert (hit.doc_id, hit.section, hit.score) == ("policy/expenses", "expense-policy", 2)
    kb.ingest("policy/expenses", DOC.replace("40", "45"), summarize=False)  # re-ingest: back to pending
    assert kb.get("policy/expenses").status == "pending" and kb.search("meals capped") == []
    assert kb.get("policy/expenses").revision == 2


def test_reingest_clears_the_summary_derived_from_the_prior_body(kb):
    kb.ingest("d", DOC)
    kb.wait()
    assert kb.get("d").summary_source == "auto"
    kb.set_summary("d", "Reviewer: meals 40 EUR, trains economy.")
    doc = kb.ingest("d", DOC + "\nNew rule.\n", summarize=False)
    assert (doc.summary, doc.summary_source) == (None, None)


def test_the_summary_is_generated_in_the_background(store):
    gate = Gate()
    with KnowledgeBase(store, gate) as kb:
        doc = kb.ingest("d", DOC)
        assert gate.entered.wait(WAIT) and doc.summary is None  # ingest returned before the summary exists
        gate.release.set()
        assert kb.wait(WAIT) == {("d", 1): "written"}
        assert (kb.get("d").summary, kb.get("d").summary_source) == ("generated summary", "auto")


def test_a_late_summary_never_overwrites_a_manual_one(store):
    gate = Gate()
    with KnowledgeBase(store, gate) as kb:
        kb.ingest("d", DOC)
        assert gate.entered.wait(WAIT)
        kb.set_summary("d", "Reviewer's summary.")  # the reviewer writes while generation is running
        gate.release.set()
        assert kb.wait(WAIT) == {("d", 1): "manual_kept"}
        assert (kb.get("d").summary, kb.get("d").summary_source) == ("Reviewer's summary.", "manual")


def test_a_late_summary_of_an_older_revision_is_discarded(store):
    gate = Gate("summary of revision 1")
    with KnowledgeBase(store, gate) as kb:
        kb.ingest("d", DOC)
        assert gate.entered.wait(WAIT)
        kb.ingest("d", DOC + "\nRevision two.\n", summarize=False)
        gate.release.set()
        assert kb.wait(WAIT)[("d", 1)] == "stale"
        assert kb.get("d").summary is None


def test_a_failed_summary_leaves_the_content_write_in_place(store):
    def broken(body):
        raise TimeoutError("model too slow")

    with KnowledgeBase(store, broken) as kb:
        kb.ingest("d", DOC)
        assert kb.wait(WAIT) == {("d", 1): "failed"}
        doc = kb.get("d")
        assert doc.body == normalize_markdown(DOC) and doc.status == "pending" and doc.summary is None
        assert kb.events("d")[-1][2:] == ("summary_failed", "TimeoutError: model too slow")


def test_lead_summary_is_the_first_sentence():
    assert lead_summary(normalize_markdown(DOC)) == "Meals are capped at 40 EUR per day."
    assert lead_summary("# A\n\n## B\n") == "Sections: A, B"


def test_pick_summarizer_uses_the_local_model_when_one_answers(scripted, store):  # noqa: F811
    assert pick_summarizer(None) is lead_summary
    scripted.add("GET", "health", 200, {"status": "ok", "all_models_loaded": [{"model_name": "m"}]})
    scripted.add("GET", "models", 200, {"data": [{"id": "m"}]})
    for text in ("Meals are capped; trains are economy.", "  "):
        scripted.add(
            "POST", "chat/completions", 200, {"choices": [{"message": {"content": text}, "finish_reason": "stop"}]}
        )
    summarizer = pick_summarizer(LemonadeClient(scripted.base_url, retries=0, window=65536))
    assert isinstance(summarizer, LLMSummarizer)
    with KnowledgeBase(store, summarizer) as kb:
        kb.ingest("d", DOC)
        assert kb.wait(WAIT) == {("d", 1): "written"}
        assert kb.get("d").summary == "Meals are capped; trains are economy."
        kb.ingest("d", DOC + "\nMore.\n")  # an empty reply is a failed job, not an empty summary
        assert kb.wait(WAIT)[("d", 2)] == "failed" and kb.get("d").summary is None


def test_knowledge_bad_input_raises_typed_errors(kb):
    for bad, field in [(("../x", DOC), "doc_id"), (("d", "   \n"), "markdown"), (("d", b"bytes"), "markdown")]:
        with pytest.raises(KnowledgeError) as e:
            kb.ingest(*bad)
        assert e.value.field == field
    with pytest.raises(KnowledgeError, match="doc_id"):
        kb.mark_ready("nope")
    kb.ingest("d", DOC, summarize=False)
    kb.mark_ready("d")
    with pytest.raises(KnowledgeError, match="already ready"):
        kb.mark_ready("d")
    with pytest.raises(KnowledgeError, match="query"):
        kb.search("  ?! ")
    with pytest.raises(KnowledgeError, match="summary"):
        kb.set_summary("d", "")


# ------------------------------------------------------------------------------------------ prompts


def test_prompt_lifecycle_draft_published_active(store):
    v1 = create_draft(store, "finance", "You are the finance assistant.")
    v1 = edit_draft(store, v1.id, "You are the finance assistant. Be brief.")
    assert (v1.version, v1.status, v1.active) == (1, "draft", False)
    v1 = publish(store, v1.id)
    assert instructions(store, "finance") == ""  # publishing does not activate
    with pytest.raises(PromptError, match="immutable"):
        edit_draft(store, v1.id, "rewritten")
    assert activate(store, v1.id).active
    assert instructions(store, "finance") == "You are the finance assistant. Be brief."


def test_only_a_published_version_can_activate(store):
    d = create_draft(store, "finance", "draft text")
    with pytest.raises(PromptError, match="publish it before activating"):
        activate(store, d.id)
    assert instructions(store, "finance") == ""
    with pytest.raises(PromptError, match="already published"):
        publish(store, publish(store, d.id).id)


def test_the_active_version_cannot_be_deleted(store):
    v1 = activate(store, publish(store, create_draft(store, "a", "one").id).id)
    with pytest.raises(PromptError, match="active"):
        delete_version(store, v1.id)
    v2 = activate(store, publish(store, create_draft(store, "a", "two").id).id)
    delete_version(store, v1.id)  # no longer active
    assert [(p.version, p.active) for p in prompt_versions(store, "a")] == [(2, True)]
    assert instructions(store, "a") == "two" and v2.version == 2


def test_prompt_bad_input(store):
    with pytest.raises(PromptError, match="content"):
        create_draft(store, "a", "")
    with pytest.raises(PromptError, match="agent"):
        create_draft(store, "", "x")
    with pytest.raises(PromptError, match="version_id"):
        publish(store, 42)


# ------------------------------------------------------------------------------------ skill packages


def skill_md(description="triage mail", name="mail"):
    return f"---\nname: {name}\ndescription: {description}\n---\n# Mail\n\nSort the inbox.\n"


def test_an_upload_advances_a_monotonic_revision(store):
    pk = SkillPackages(store)
    revs = [pk.upload({"SKILL.md": skill_md(f"v{i}"), "refs/a.md": f"a{i}"}).revision for i in range(3)]
    assert revs == [1, 2, 3] and pk.revision("mail") == 3 and pk.revision("other") == 0


def test_an_upload_invalidates_cached_metadata(store):
    pk = SkillPackages(store)
    pk.upload({"SKILL.md": skill_md("first")})
    assert pk.metadata("mail").description == "first"
    pk.upload({"SKILL.md": skill_md("second")})
    assert pk.metadata("mail").description == "second"


def test_another_reader_observes_the_revision_and_reloads(store):
    writer, reader = SkillPackages(store), SkillPackages(store)
    writer.upload({"SKILL.md": skill_md("first")})
    assert reader.metadata("mail").description == "first" and reader.refresh("mail") is False
    writer.upload({"SKILL.md": skill_md("second")})
    assert reader.refresh("mail") is True and reader.metadata("mail").description == "second"


def test_an_upload_replaces_the_whole_tree(store):
    pk = SkillPackages(store)
    pk.upload({"SKILL.md": skill_md(), "scripts/old.py": b"print(1)"})
    rev = pk.upload({"SKILL.md": skill_md(), "scripts/new.py": b"print(2)"})
    assert sorted(pk.files("mail")) == ["SKILL.md", "scripts/new.py"] == list(rev.paths)


@pytest.mark.parametrize(
    "files,error,where",
    [
        ({"README.md": "x"}, PackageError, "SKILL.md"),
        ({"SKILL.md": skill_md(), "../escape.md": "x"}, PackageError, "../escape.md"),
        ({"SKILL.md": skill_md(), "/abs.md": "x"}, PackageError, "/abs.md"),
        ({"SKILL.md": skill_md(), "a//b.md": "x"}, PackageError, "a//b.md"),
        ({"SKILL.md": "---\nname: mail\n---\nbody\n"}, SkillError, "description"),
        ({"SKILL.md": "no frontmatter"}, SkillError, "SKILL.md"),
    ],
)
def test_an_invalid_upload_raises_a_located_error_and_stores_nothing(store, files, error, where):
    pk = SkillPackages(store)
    pk.upload({"SKILL.md": skill_md("good")})
    before = surface_digest(store)
    with pytest.raises(error, match=where.replace(".", r"\.").replace("/", "/")):
        pk.upload(files)
    assert surface_digest(store) == before and pk.revision("mail") == 1


def test_a_directory_upload_checks_the_name_against_the_directory(store, tmp_path):
    (tmp_path / "mail").mkdir()
    (tmp_path / "mail" / "SKILL.md").write_text(skill_md(name="inbox"))
    with pytest.raises(SkillError, match="directory"):
        SkillPackages(store).upload(tmp_path / "mail")
    (tmp_path / "mail" / "SKILL.md").write_text(skill_md())
    (tmp_path / "mail" / "refs").mkdir()
    (tmp_path / "mail" / "refs" / "r.md").write_text("ref")
    assert SkillPackages(store).upload(tmp_path / "mail").paths == ("SKILL.md", "refs/r.md")


# ------------------------------------------------------------------------------- feedback and review


def populate(store):
    """One object on every surface."""
    memory_save(store, "u1", "preference", "I prefer replies in English")
    with KnowledgeBase(store) as kb:
        kb.ingest("d", DOC)
        kb.wait()
        kb.mark_ready("d")
    activate(store, publish(store, create_draft(store, "finance", "You are the finance assistant.").id).id)
    SkillPackages(store).upload({"SKILL.md": skill_md()})
    gates.learn(
        store, make_skill(), "preference", {"body": "Label urgent mail first."}, section="triage", provenance=TRUSTED
    )


def test_a_rating_changes_no_surface(store):
    populate(store)
    before = surface_digest(store)
    for rating in ("negative", "negative", "positive", "cleared"):
        record_feedback(store, "t1", "m1", rating, comment="wrong currency")
    record_trace(store, "t1", "call_bank", "failed", usage={"prompt_tokens": 900})
    record_deliverable(store, "t1", "report.pdf", False, detail="missing totals")
    assert surface_digest(store) == before
    assert instructions(store, "finance") == "You are the finance assistant."
    assert {r.routing.surface for r in surfaces.signals(store, task="t1")} == {None}


def test_surface_digest_notices_any_surface_change(store):
    populate(store)
    before = surface_digest(store)
    memory_save(store, "u2", "identity", "I am a nurse")
    assert surface_digest(store) != before


def test_review_report_links_feedback_traces_and_deliverables(store):
    t0 = datetime(2025, 3, 3, 9, tzinfo=timezone.utc)
    record_trace(store, "t1", "plan", "ok", usage={"prompt_tokens": 120}, at=t0)
    record_trace(store, "t1", "call_bank", "failed", detail="timeout", at=t0 + timedelta(seconds=5))
    record_deliverable(store, "t1", "report.pdf", False, detail="missing totals", at=t0 + timedelta(seconds=9))
    record_feedback(store, "t1", "m1", "negative", comment="no totals", at=t0 + timedelta(minutes=1))
    record_feedback(store, "t1", "m2", "positive", at=t0 + timedelta(minutes=2))
    record_feedback(store, "t1", "m2", "cleared", at=t0 + timedelta(minutes=3))
    record_feedback(store, "t2", "m9", "positive", at=t0)
    (t1,) = review_report(store, "t1")
    assert t1.ratings == {"m1": "negative"}
    d = t1.to_dict()
    assert [s["step"] for s in d["traces"]] == ["plan", "call_bank"]
    assert d["deliverables"] == [{"name": "report.pdf", "ok": False, "detail": "missing totals"}]
    assert [s["rule"] for s in d["signals"]] == ["evidence_only"] * 3
    assert [r.task for r in review_report(store)] == ["t1", "t2"]


def test_feedback_bad_input_raises_typed_errors(store):
    with pytest.raises(FeedbackError) as e:
        record_feedback(store, "t1", "m1", "meh")
    assert e.value.field == "rating"
    with pytest.raises(FeedbackError, match="message"):
        record_feedback(store, "t1", "", "positive")
    with pytest.raises(FeedbackError, match="usage"):
        record_trace(store, "t1", "s", "ok", usage={"x": object()})
    with pytest.raises(FeedbackError, match="at"):
        record_deliverable(store, "t1", "x", True, at=datetime(2025, 1, 1))
    assert review_report(store) == []


def test_every_surface_persists_in_the_one_store_file(tmp_path):
    db = tmp_path / "overlay.db"
    with Store.open(db) as s:
        populate(s)
        record_feedback(s, "t1", "m1", "negative")
        digest = surface_digest(s)
    with Store.open(db) as s:
        assert surface_digest(s) == digest
        assert 5 in [v for v, _, _ in s.schema_history()]
        assert [m.content for m in memories(s, "u1")] == ["I prefer replies in English"]
        assert KnowledgeBase(s).search("meals")[0].doc_id == "d"
        assert instructions(s, "finance") and SkillPackages(s).revision("mail") == 1
        assert review_report(s, "t1")[0].ratings == {"m1": "negative"}


# ------------------------------------------------------------------------------------- simulated week

WEEK_SKILL = Path(__file__).parents[1] / "datasets" / "skills" / "triage-inbox"


def test_a_simulated_week_is_seeded_and_drives_every_surface_through_its_own_lifecycle(store):
    from overlay_kit.skill import load_skill
    from overlay_kit.studies.surface_sim import run_week, simulate_week

    turns = simulate_week(3, days=3, tasks_per_day=8)
    assert simulate_week(3, days=3, tasks_per_day=8) == turns != simulate_week(4, days=3, tasks_per_day=8)
    week = run_week(store, turns, skill=load_skill(WEEK_SKILL))
    outcomes = week.memory_runs.outcome.value_counts().to_dict()
    assert week.extractor_calls == outcomes.get("extracted", 0) and outcomes.get("no_cue", 0) > 0
    assert outcomes["skipped_explicit"] == len({t.user for t in turns})  # each user's memory_save turn
    # a boundary signal made a draft, negative ratings came in, but a three-day week has no release day
    assert week.days.prompt_drafts.iloc[-1] >= 1 and week.days.negative_ratings.iloc[-1] >= 1
    assert set(week.days.prompt_active_version) == {1}
    assert instructions(store, "mail-assistant") == "You are the mail assistant. Be brief."


@pytest.mark.parametrize("seed", [0, 1])
def test_contract_over_a_simulated_week_no_rating_changes_any_surface(store, seed):
    """A property the code guarantees (ratings are evidence only, routed nowhere), not a study finding: over a
    whole simulated week every rating leaves the surface digest as it was, while the surfaces themselves move."""
    from overlay_kit.skill import load_skill
    from overlay_kit.studies.surface_sim import run_week, simulate_week

    start = surface_digest(store)
    week = run_week(store, simulate_week(seed), skill=load_skill(WEEK_SKILL))
    assert week.ratings > 0 and week.days.negative_ratings.iloc[-1] > 0  # there were ratings, bad ones too
    assert week.rating_changes == 0
    assert surface_digest(store) != start and len(week.memories) > 0  # the digest did see the week's writes


@pytest.mark.engine
def test_the_extractor_against_a_real_local_engine_is_recorded_whatever_it_says(store, engine):  # noqa: F811
    """Protocol only: the engine's weights are random, so its reply is never parsed as a fact about anyone."""
    from overlay_kit.llm.engine import MODEL_ALIAS

    with LemonadeClient(engine.base_url, backoff_s=0.01) as client:
        ex = pick_extractor(client)
        assert isinstance(ex, LLMExtractor) and ex.model == MODEL_ALIAS
        ex.max_tokens = 8
        r = run(store, ex, CUED)
    assert r.outcome in ("extracted", "failed") and memory_runs(store)[-1].outcome == r.outcome
    if r.outcome == "failed":
        assert "ExtractionError" in r.error and memories(store, "u1") == []


# ----------------------------------------------------------------------- the memory study (notebook 09)


def _turn(user, *said, remember=None):
    from overlay_kit.studies.surface_sim import MONDAY, SimTurn

    msgs = tuple(m for text in said for m in (Message("user", text), Message("assistant", "Done.")))
    return SimTurn(0, "d1-t01", user, MONDAY, msgs, (), remember, None, None, None)


def test_memory_quality_counts_unwanted_and_missed_memories_against_the_ground_truth():
    import pandas as pd

    from overlay_kit.studies.surface_sim import INTENT, memory_quality

    turns = [
        _turn("ana", "I always want amounts in EUR.", "No, I meant the Berlin office."),
        _turn("ana", "I work as a tax accountant at Contoso.", "Today I want it short.", "What needs a reply today?"),
        _turn("ben", "Please always put the summary first."),
    ]
    final = pd.DataFrame(
        [
            {"user": "ana", "type": "preference", "source": "manual", "content": "I always want amounts in EUR."},
            {"user": "ana", "type": "correction", "source": "auto", "content": "No, I meant the Berlin office."},
            {"user": "ana", "type": "preference", "source": "auto", "content": "I always want amounts in EUR!"},
            {"user": "ben", "type": "preference", "source": "auto", "content": "Please always put the summary first"},
        ]
    )
    rows, examples = memory_quality(turns, final, labels=INTENT, keep=["durable"], coverage=0.6)
    ana, ben = rows
    # ana: two automatic memories, the in-task correction unwanted; two durable sentences said, the job not kept
    assert (ana["auto_memories"], ana["unwanted"], ana["unwanted_correction"]) == (2, 1, 1)
    assert (ana["durable_said"], ana["missed"]) == (2, 1)
    assert (ben["auto_memories"], ben["unwanted"], ben["durable_said"], ben["missed"]) == (1, 0, 1, 0)
    assert [(e["kind"], e["sentence"]) for e in examples] == [
        ("unwanted", "No, I meant the Berlin office."),
        ("missed", "I work as a tax accountant at Contoso."),
    ]
    # the same week judged with corrections counted as meant to keep: nothing unwanted
    rows, _ = memory_quality(turns, final, labels=INTENT, keep=["durable", "correction"], coverage=0.6)
    assert rows[0]["unwanted"] == 0


def test_the_rule_files_labels_are_the_simulators_ground_truth_for_every_sentence():
    from overlay_kit.studies import rulefile
    from overlay_kit.studies.surface_sim import CUED, INTENT, RULE_NAME

    rule = rulefile.load(RULE_NAME)
    assert rule.param("labels") == INTENT
    assert {u: set(said) for u, said in CUED.items()} == {u: set(lab) for u, lab in INTENT.items()}
    assert set(rule.param("keep")) <= {lab for lab_of in INTENT.values() for lab in lab_of.values()}


def _rule_copy(tmp_path, **params):
    """The shipped rule file with some params replaced, as a file of its own (same study name)."""
    import yaml

    from overlay_kit.studies import rulefile
    from overlay_kit.studies.surface_sim import RULE_NAME

    doc = yaml.safe_load(rulefile.load(RULE_NAME).path.read_text(encoding="utf-8"))
    doc["params"].update(params)
    folder = tmp_path / f"v{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    path = folder / f"{RULE_NAME}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return rulefile.load(path)


def test_the_memory_studys_verdict_is_computed_from_its_rule_file(tmp_path):
    from overlay_kit.resources import dataset_path
    from overlay_kit.skill import load_skill
    from overlay_kit.studies import surface_sim

    skill, small = load_skill(dataset_path("skills", "triage-inbox")), {"seeds": 2, "days": 3, "tasks_per_day": 8}
    loose = _rule_copy(tmp_path, unwanted_target=1.0, missed_target=1.0, **small)
    study = surface_sim.run(skill, rule=loose.path)  # a path: read from the file
    t = study.table()
    assert study.rule.sha256 == loose.sha256 and sorted(set(t.seed)) == [0, 1]
    assert t.auto_memories.sum() > 0 and t.durable_said.sum() > 0
    assert study.verdict() == "within both targets"  # a share is at most 1
    unwanted, missed = study.shares()
    # the same weeks under a target just under the observed interval: the file's number flips the verdict
    strict = _rule_copy(tmp_path, unwanted_target=round(unwanted.interval.low - 0.01, 4), missed_target=1.0, **small)
    judged = surface_sim.run(skill, rule=strict)
    assert judged.table().equals(t) and judged.shares()[0].interval == unwanted.interval
    assert judged.shares()[0].verdict == "over target" and judged.verdict() == "over target"
    assert judged.finding().startswith("**Over target** over 2 simulated weeks")
    assert study.finding().startswith("**Within both targets** over 2 simulated weeks")


def test_the_memory_verdict_says_undecided_when_the_interval_straddles_the_target(tmp_path):
    from overlay_kit.studies import surface_sim

    rule = _rule_copy(tmp_path, unwanted_target=0.1, missed_target=0.25, resamples=500)
    rows = [
        {"seed": s, "user": "ana", "auto_memories": 10, "unwanted": u, "durable_said": 10, "missed": 0}
        for s, u in enumerate((0, 2, 1))
    ]
    study = surface_sim.WeekStudy(tuple(rows), rule)
    unwanted, missed = study.shares()
    assert unwanted.interval.low <= 0.1 < unwanted.interval.high and unwanted.verdict == "undecided"
    # none missed, but three weeks bound the share only at the exact one-sided bound over weeks
    assert (missed.interval.estimate, missed.verdict) == (0.0, "undecided")
    assert missed.interval.high == pytest.approx(1 - 0.05 ** (1 / 3))
    assert study.verdict() == "undecided" and "MDE of ±" in study.finding()
    assert "none seen but 3 weeks bound it only at ≤ 0.632" in study.finding()
    per_user = study.by_user().iloc[0]  # the descriptive table bounds a zero the same way, not with [0, 0]
    assert per_user["missed share_high"] == pytest.approx(missed.interval.high)
    assert per_user["unwanted share"] == pytest.approx(0.1)
