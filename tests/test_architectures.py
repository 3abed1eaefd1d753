"""Each memory architecture of the benchmark keeps to the rules its docstring states (overlay_kit.studies.architectures)."""

from __future__ import annotations

import pytest

from overlay_kit.skill import parse_skill
from overlay_kit.studies import architectures as arch
from overlay_kit.studies.architectures import Config, Placement
from overlay_kit.studies.memory_bench import fragments

HEAD = "---\nname: demo\ndescription: A demo skill for tests.\n---\n# Demo\n\n"
INBOX = "## Inbox\n\nSort the inbox by sender and archive newsletters.\n\n"
REPLIES = "## Replies\n\nReply within a day and keep it short.\n"
A = (
    "Archive newsletters unread unless the sender is on the keep list; never unsubscribe on my behalf.",
    "Triaging newsletters and promotional mail in the inbox.",
)
B = (
    "When declining a recruiter, keep it to two sentences and thank them by name.",
    "Replying to decline a recruiter's job outreach.",
)


def skill(text: str):
    s, problems = parse_skill(HEAD + text, None)
    assert s is not None, problems
    return s


V1, V2_DELETED = skill(INBOX + REPLIES), skill(INBOX)


def mem(name, tmp_path, config=Config(), base=V1):
    return arch.make(name, base, config, tmp_path / name)


def teach(m, lesson, text_trigger, section):
    return m.teach(lesson, text_trigger[0], section=section, trigger=text_trigger[1])


def test_config_and_make_refuse_bad_input_naming_the_field(tmp_path):
    with pytest.raises(ValueError, match="budget"):
        Config(budget=0)
    with pytest.raises(ValueError, match="keyword_top_k"):
        Config(keyword_top_k=0)
    with pytest.raises(ValueError, match="mem0_update_cosine"):
        Config(mem0_update_cosine=1.5)
    with pytest.raises(ValueError, match="architecture: 'nope'"):
        arch.make("nope", V1, Config(), tmp_path)
    with pytest.raises(ValueError, match="mem0_threshold"):
        Config(mem0_threshold=1.0)
    assert list(arch.ARCHITECTURES) == [
        "overlay",
        "full_context",
        "keyword_files",
        "ace_playbook",
        "rewrite_cheatsheet",
        "mem0_flat",
        "letta_blocks",
        "hermes_inplace",
        "overlay_touch",
    ]


def test_the_stand_ins_default_to_their_authors_settings():
    c = Config()
    assert (c.mem0_top_k, c.mem0_threshold, c.letta_block_chars) == (10, 0.3, 5000)


def test_mem0_search_returns_nothing_under_its_threshold(tmp_path):
    m = mem("mem0_flat", tmp_path)
    teach(m, "a", A, "inbox")
    assert A[0] in m.context("archive newsletters unread unless on the keep list").text
    m.config = Config(mem0_threshold=0.99)
    assert m.context("archive newsletters unread unless on the keep list").text == ""


def test_peers_that_do_not_import_are_skipped_with_a_reason(monkeypatch):
    from overlay_kit.studies import memory_bench as mb

    monkeypatch.setattr(mb.peers_mod, "available", lambda name: "No module named 'mem0'" if name == "mem0ai" else None)
    ran, why = mb.available("all")
    assert "mem0ai" not in ran and why == {"mem0ai": "No module named 'mem0'"}
    assert set(ran) | set(why) == set(mb.peers_mod.PEERS)
    assert mb.available(["nope"]) == ((), {"nope": "not among the peers' adapters"})


def test_full_context_keeps_every_lesson_resident_and_forgets_them(tmp_path):
    m = mem("full_context", tmp_path)
    teach(m, "a", A, "inbox"), teach(m, "b", B, "replies")
    assert A[0] in m.context("anything").text and B[0] in m.context("anything").text
    assert m.update(V2_DELETED, V1).placements == {"a": Placement(None), "b": Placement(None)}
    m.forget()
    assert not any(f in m.residue() for f in fragments(A[0], 24, 8))


def test_keyword_files_open_only_files_with_enough_goal_words(tmp_path):
    m = mem("keyword_files", tmp_path, Config(keyword_top_k=1, keyword_min_hits=2))
    teach(m, "a", A, "inbox"), teach(m, "b", B, "replies")
    assert A[0] in m.context("archive the newsletters from that sender").text
    assert m.context("archive the newsletters from that sender").text.count("[lesson-") == 1  # top k
    assert m.context("book a flight to Lisbon").text == ""  # fewer than min_hits
    m.teach("a", "Again: " + A[0], section="inbox")
    assert len(m.files) == 3  # a restatement is one more file


def test_ace_playbook_dedups_restatements_and_counts_helpful_bullets(tmp_path):
    m = mem("ace_playbook", tmp_path)
    teach(m, "a", A, "inbox")
    m.teach("a", "Again: " + A[0], section="inbox")
    teach(m, "b", B, "replies")
    assert [b["text"] for b in m.bullets] == [A[0], B[0]]  # grow-and-refine merged the restatement
    ctx = m.context("x")
    m.after(ctx, A[0])
    assert [(b["helpful"], b["harmful"]) for b in m.bullets] == [(1, 0), (0, 0)]
    assert "helpful=1" in m.context("x").text
    assert m.update(V2_DELETED, V1).placements["b"] == Placement(None)  # no base underneath: nothing moves


def test_rewrite_cheatsheet_keeps_the_newest_whole_lines_under_its_cap(tmp_path):
    m = mem("rewrite_cheatsheet", tmp_path, Config(cheatsheet_tokens=30))
    teach(m, "a", A, "inbox"), teach(m, "b", B, "replies")
    assert m.lines == [B[0]]  # the older lesson no longer fits: gone whole, not cut
    m2 = mem("rewrite_cheatsheet", tmp_path / "2")
    teach(m2, "a", A, "inbox")
    m2.teach("a", "Again: " + A[0], section="inbox")
    assert m2.lines == ["Again: " + A[0]]  # near-duplicates merge, the newest kept


def test_mem0_reconciles_add_noop_update_and_its_history_keeps_deleted_text(tmp_path):
    m = mem("mem0_flat", tmp_path, Config(mem0_top_k=1))
    teach(m, "a", A, "inbox")
    assert m.decide("Again: " + A[0])[0] == "NOOP"
    assert m.decide(B[0])[0] == "ADD"
    teach(m, "b", B, "replies")
    assert A[0] in m.context("archive newsletters in the inbox").text
    assert B[0] not in m.context("archive newsletters in the inbox").text  # top 1
    low = mem("mem0_flat", tmp_path / "low", Config(mem0_update_cosine=0.01))
    teach(low, "a", A, "inbox"), teach(low, "b", B, "replies")
    assert [x["text"] for x in low.memories] == [B[0]]  # UPDATE: the newer text replaced the memory
    assert [h["event"] for h in low.history] == ["ADD", "UPDATE"]
    m.forget()
    assert m.held() == "" and A[0].encode() in m.residue()  # DELETE rows keep the old text


def test_letta_block_evicts_the_oldest_to_archival_and_searches_it(tmp_path):
    m = mem("letta_blocks", tmp_path, Config(letta_block_chars=100))
    teach(m, "a", A, "inbox"), teach(m, "b", B, "replies")
    assert m.block == [B[0]] and m.archival == [A[0]]
    assert A[0] in m.context("archive newsletters in the inbox").text  # archival top 1
    assert B[0] in m.context("book a flight").text  # the block is always resident


def test_hermes_patches_the_skill_and_merges_updates_three_way(tmp_path):
    m = mem("hermes_inplace", tmp_path)
    teach(m, "a", A, "inbox"), teach(m, "b", B, "replies")
    assert m.section_of(f"- {A[0]}") == "inbox" and m.section_of(f"- {B[0]}") == "replies"
    up = m.update(V2_DELETED, V1)
    assert up.prompts == 1 and up.placements == {"a": Placement("inbox"), "b": Placement(None, True)}
    assert B[0] not in m.context("x").text  # a conflict is held out until reviewed
    m.review({"a": "inbox", "b": "inbox"})
    assert m.section_of(f"- {B[0]}") == "inbox" and not m.conflicts
    m.forget()
    assert A[0].encode() not in m.residue() and B[0].encode() not in m.residue()


def test_overlay_runs_the_product_path(tmp_path):
    m = mem("overlay", tmp_path)
    assert teach(m, "a", A, "inbox") == 1  # staged: one consent prompt, approved
    teach(m, "b", B, "replies")
    assert A[0] in m.context("anything").text and B[0] in m.context("anything").text  # shipped ceiling
    up = m.update(V2_DELETED, V1)
    assert up.placements["a"] == Placement("inbox") and up.placements["b"] == Placement(None, True)
    assert up.prompts == 1 and B[0] not in m.context("x").text  # an orphan never applies
    m.review({"a": "inbox", "b": "inbox"})
    assert B[0] in m.context("x").text
    m.forget()
    assert m.residue() and not any(f in m.residue() for f in fragments(A[0] + B[0], 24, 8))
    m.close()


def test_the_overlay_proposes_the_section_and_asks_when_not_confident(tmp_path):
    m = mem("overlay", tmp_path)
    asked = []
    m.ask = lambda proposal: asked.append(proposal) or "replies"
    prompts = m.teach("b", B[0], trigger=B[1], goal="Decline this recruiter politely")  # no section given
    assert len(asked) == 1 and prompts == 2  # the section question (shipped threshold) and the consent
    assert "replies" in {s for s, _ in asked[0].alternatives}
    (d,) = m._live()
    assert d.anchor.section == "replies"  # where the user said
    m.close()


def test_a_stale_lesson_is_shown_marked_then_confirmed_or_discarded(tmp_path):
    from overlay_kit.resolve import STALE_MARK
    from overlay_kit.studies.memory_bench import shown

    m = mem("overlay", tmp_path)
    teach(m, "a", A, "inbox"), teach(m, "b", B, "replies")
    edited = skill(INBOX.replace("by sender", "by date") + REPLIES.replace("a day", "two days"))
    up = m.update(edited, V1)
    assert up.prompts == 2 and up.placements["a"].flagged and up.placements["b"].flagged
    ctx = m.context("x").text
    assert shown(ctx, A[0]) == "marked" and STALE_MARK.strip() in ctx
    m.review({"a": "inbox", "b": "replies"}, wrong=frozenset({"b"}))  # a confirmed still right, b discarded
    ctx = m.context("x").text
    assert shown(ctx, A[0]) == "shown" and shown(ctx, B[0]) == "out"
    assert m.update(edited, edited).prompts == 0  # a confirmed flag ends
    m.close()


def test_overlay_budget_demotes_and_the_calibrated_gate_brings_a_lesson_back(tmp_path):
    m = mem("overlay", tmp_path, Config(budget=100))  # room for one lesson resident, not two
    teach(m, "a", A, "inbox"), teach(m, "b", B, "replies")
    assert len(m.store.retrieval_only(V1.name)) == 1
    assert B[0] in m.context("Book a table for dinner on Friday").text
    assert A[0] in m.context("Sort out the newsletters and promotions in my inbox").text
    assert A[0] not in m.context("Book a table for dinner on Friday").text
    m.close()
