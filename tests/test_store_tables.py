"""overlay_kit.store's table families (store.evidence, .memories, .knowledge, .prompts, .packages, .task_log):
the rows the evidence ledger and the surfaces keep, read and written only through store methods."""

import dataclasses
from datetime import datetime, timezone

import pytest

from overlay_kit import store as store_mod
from overlay_kit.store import Heading, Store, StoreError
from overlay_kit.surfaces import knowledge, memory, routing

T0 = datetime(2026, 1, 5, 9, 30, tzinfo=timezone.utc)


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "overlay.db") as s:
        yield s


def test_the_surfaces_reexport_the_stores_values():
    for mod, names in (
        (memory, ("Memory", "MemoryRun", "MemoryDecision")),
        (knowledge, ("Document", "Heading")),
        (routing, ("PromptVersion", "Feedback", "TraceStep", "Deliverable")),
    ):
        for name in names:
            assert getattr(mod, name) is getattr(store_mod, name)
            assert dataclasses.is_dataclass(getattr(mod, name))


def test_writes_inside_an_outer_transaction_commit_or_roll_back_together(store):
    with pytest.raises(RuntimeError), store.transaction():
        store.memories.add("ann", "preference", "Short replies.", source="manual", salience=None, at=T0)
        store.task_log.add_trace("t1", "plan", "ok", {"tokens": 3}, "", T0)
        store.prompts.add_draft("triage", "Be brief.", T0)
        raise RuntimeError("abort")
    assert store.memories.total() == 0 and store.task_log.tasks() == [] and store.prompts.versions("triage") == []
    with store.transaction():
        mid = store.memories.add("ann", "preference", "Short replies.", source="manual", salience=None, at=T0)
        store.task_log.add_trace("t1", "plan", "ok", {"tokens": 3}, "", T0)
    m = store.memories.get(mid)
    assert (m.user, m.source, m.created_at, m.updated_at) == ("ann", "manual", T0, T0)
    assert store.task_log.tasks() == ["t1"]


def test_a_trace_whose_usage_is_not_json_writes_nothing(store):
    with pytest.raises((TypeError, ValueError)):
        store.task_log.add_trace("t1", "plan", "ok", {"when": T0}, "", T0)
    assert store.task_log.traces("t1") == ()


def test_memory_rows_round_trip_and_erase(store):
    a = store.memories.add("ann", "project", "Working on the Q3 plan.", source="auto", salience=0.7, at=T0)
    store.memories.revise(a, "Working on the Q3 launch plan.", salience=0.9, at=T0)
    assert (store.memories.get(a).content, store.memories.get(a).source) == ("Working on the Q3 launch plan.", "auto")
    store.memories.rewrite(a, "Owns the Q3 launch plan.", at=T0)
    assert store.memories.get(a).source == "manual"
    assert store.memories.total("manual") == 1 and store.memories.total("auto") == 0
    assert store.memories.delete(a) is True and store.memories.delete(a) is False
    assert store.memories.get(a) is None


def test_prompt_versions_count_up_per_agent_and_activation_sets_instructions(store):
    a1, a2 = store.prompts.add_draft("a", "one", T0), store.prompts.add_draft("a", "two", T0)
    b1 = store.prompts.add_draft("b", "uno", T0)
    assert [p.version for p in store.prompts.versions("a")] == [1, 2] and store.prompts.get(b1).version == 1
    store.prompts.set_published(a2, T0)
    store.prompts.activate("a", a2, "two", T0)
    assert store.prompts.instructions("a") == "two" and store.prompts.instructions("b") == ""
    assert [p.active for p in store.prompts.versions("a")] == [False, True]
    store.prompts.delete(a1)
    assert store.prompts.get(a1) is None


def test_a_package_upload_replaces_the_whole_tree_and_advances_the_revision(store):
    assert store.packages.revision("p") == 0 and store.packages.files("p") == {}
    assert store.packages.replace("p", "d1", {"SKILL.md": b"x", "a.txt": b"a"}, T0) == 1
    assert store.packages.replace("p", "d2", {"SKILL.md": b"y"}, T0) == 2
    assert store.packages.files("p") == {"SKILL.md": b"y"}


def test_knowledge_rows_keep_revision_and_summary_state(store):
    store.knowledge.put("d", title="D", body="# D\n", outline=(Heading("d", "D", 1, 1),), revision=1, at=T0)
    assert store.knowledge.revision("d") == 1 and store.knowledge.summary_state("d") == (1, None)
    store.knowledge.set_manual_summary("d", "About D.", T0)
    assert store.knowledge.summary_state("d") == (1, "manual")
    assert store.knowledge.get("d").outline == (Heading("d", "D", 1, 1),)
    assert store.knowledge.get("nope") is None and store.knowledge.summary_state("nope") is None


def test_erasing_signals_by_scope_leaves_other_scopes(store):
    for scope in ("user", "user", "team"):
        store.evidence.add_signal(
            "s", "1", "undo", positive=False, rating=None, scope=scope, skill=None, section=None, lesson=None, at=T0
        )
    assert store.evidence.erase_signals(scope="user") == 2
    assert store.evidence.erase_signals(all=True) == 1


def test_table_digest_moves_with_its_tables_only_and_refuses_unknown_tables(store):
    before = store.table_digest(["user_memories"])
    store.task_log.add_feedback("t1", "m1", "negative", "", T0)
    assert store.table_digest(["user_memories"]) == before
    store.memories.add("ann", "identity", "I am Ann.", source="manual", salience=None, at=T0)
    assert store.table_digest(["user_memories"]) != before
    with pytest.raises(StoreError, match="no table"):
        store.table_digest(["user_memories; DROP TABLE agents"])
