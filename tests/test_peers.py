"""The real memory libraries behind the benchmark's interface (overlay_kit.studies.peers). Each library's tests
skip, saying why, when the `peers` extra is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_architectures import HEAD, INBOX, REPLIES, A, B  # the same demo skill and lessons

from overlay_kit.skill import parse_skill
from overlay_kit.studies import peers
from overlay_kit.studies.architectures import Config, Placement
from overlay_kit.studies.memory_bench import fragments

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

GOAL_A = "Archive the newsletters in my inbox, keep list senders aside"


def skill(text: str):
    s, problems = parse_skill(HEAD + text, None)
    assert s is not None, problems
    return s


V1, V2 = skill(INBOX + REPLIES), skill(INBOX)


def needs(arm: str):
    reason = peers.available(arm)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def make(arm, tmp_path, **kw):
    work = tmp_path / arm
    work.mkdir(parents=True, exist_ok=True)
    return peers.PEERS[arm](V1, Config(), work, **kw)


def teach(m, lesson, pair):
    return m.teach(lesson, pair[0], section="inbox", trigger=pair[1])


def test_a_missing_library_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "skillmem", None)  # makes `import skillmem` raise ImportError
    assert "overlay_kit[peers]" in peers.available("skillmem")
    with pytest.raises(peers.PeerUnavailable, match=r"skillmem==0\.13\.0.*pip install 'overlay_kit\[peers\]'"):
        make("skillmem", Path("/nonexistent-never-created"))


@pytest.mark.skipif(tomllib is None, reason="tomllib is Python 3.11+")
def test_the_extra_pins_every_peer_exactly_and_stays_out_of_lab_and_dev():
    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert sorted(extras["peers"]) == sorted(f"{d}=={v}" for d, v, _ in peers.PEER_PACKAGES.values())
    assert set(peers.PEERS) == set(peers.PEER_PACKAGES)
    for name in ("lab", "dev"):
        assert not any("peers" in x or x.split("=")[0] in {"mem0ai", "ace-framework", "skillmem"} for x in extras[name])


@needs("mem0ai")
def test_mem0_stores_verbatim_retrieves_by_goal_and_keeps_deleted_text_in_history(tmp_path):
    m = make("mem0ai", tmp_path)
    try:
        assert teach(m, "a", A) == 0 and teach(m, "b", B) == 0
        assert teach(m, "a", ("Again: " + A[0], A[1])) == 0  # inference off: a restatement is one more memory
        assert m.held().count("newsletters unread") == 2
        assert A[0] in m.context(GOAL_A).text
        one = make("mem0ai", tmp_path / "k1", top_k=1)
        teach(one, "a", A), teach(one, "b", B)
        assert one.search(GOAL_A) == [A[0]]  # top_k caps the memories retrieved
        one.close()
        assert m.update(V2, V1).placements == {"a": Placement(None), "b": Placement(None)}
        m.forget()
        assert m.held() == "" and m.context(GOAL_A).text == ""
        assert A[0].encode() in m.residue()  # Mem0's history table keeps the DELETE's old text
    finally:
        m.close()


@needs("ace_framework")
def test_ace_skillbook_holds_every_lesson_in_context_counts_helpful_and_forgets(tmp_path):
    m = make("ace_framework", tmp_path)
    assert teach(m, "a", A) == 0 and teach(m, "b", B) == 0 and teach(m, "a", A) == 0
    assert len(m.skillbook.skills()) == 2  # a verbatim repeat is not added twice
    ctx = m.context("anything at all")
    assert A[0] in ctx.text and B[0] in ctx.text  # the whole skillbook, no retrieval
    m.after(ctx, A[0])
    assert [s.helpful for s in m.skillbook.skills()] == [1, 0]
    assert b'"helpful": 1' in m.residue()  # saved to its file after each change
    m.forget()
    assert m.held() == "" and m.context("anything").text == ""
    assert not any(f in m.residue() for f in fragments(A[0] + B[0], 24, 8))  # hard REMOVE: gone from the file


@needs("skillmem")
def test_skillmem_approves_the_text_shown_recalls_by_goal_and_soft_deletes(tmp_path):
    m = make("skillmem", tmp_path)
    try:
        assert teach(m, "a", A) == 1 and teach(m, "b", B) == 1  # one approval prompt each
        assert teach(m, "a", ("Please: " + A[0], A[1])) == 0  # a near-duplicate is refused by mem_write's check
        rows = m.conn.execute("SELECT slug, kind, trusted_at, origin FROM memory_items ORDER BY id").fetchall()
        assert [(r["kind"], r["origin"], r["trusted_at"] is not None) for r in rows] == [
            ("feedback", "agent", True)
        ] * 2
        ctx = m.context(GOAL_A)
        assert A[0] in ctx.text and "UNTRUSTED" not in ctx.text  # approved: no data frame
        assert "Auto-recall from memory" in ctx.text and "# skillmem briefing" in ctx.text
        assert m.update(V2, V1).placements == {"a": Placement(None), "b": Placement(None)}
        m.forget()
        assert m.held() == "" and m.context(GOAL_A).text == ""
        assert m.S.verify_history(m.conn)[1] == []  # the hash chain holds through the deletes
        assert A[0].encode() in m.residue()  # soft delete: the tombstone and the history keep the text
    finally:
        m.close()


@needs("skillmem")
def test_skillmem_approval_is_pinned_to_the_text_shown(tmp_path):
    m = make("skillmem", tmp_path)
    try:
        S = m.S
        item = S.upsert(
            m.conn,
            S.MemoryItem(origin="agent", slug="r", kind="feedback", title="t", body=A[0]),
            surface="mcp",
            explicit={"kind"},
        )
        shown = item.content_hash
        S.upsert(
            m.conn,
            S.MemoryItem(origin="agent", slug="r", kind="feedback", title="t", body=B[0]),
            surface="mcp",
            reason="rewritten after it was shown",
            explicit={"kind"},
        )
        with pytest.raises(S.MemoryConflict, match="changed since you read it"):
            S.set_trust(m.conn, "r", trusted=True, expect_hash=shown, owner_prompt=True)
    finally:
        m.close()


@needs("skillmem")
def test_skillmem_skills_earn_strength_only_from_outside_evidence(tmp_path):
    m = make("skillmem", tmp_path, kind="skill")
    try:
        assert teach(m, "a", A) == 1 and teach(m, "b", B) == 1
        ctx = m.context(GOAL_A)
        assert A[0] in ctx.text and "# skillmem briefing" not in ctx.text  # skills are recalled, not briefed
        strength = lambda slug: m.S.get(m.conn, slug).strength
        m.after(ctx, None)  # nothing needed: no evidence
        assert strength("lesson-0001") == 1.0
        m.after(ctx, A[0])  # the needed lesson was recalled and the session went right: user_confirmed
        assert strength("lesson-0001") == pytest.approx(1.15) and strength("lesson-0002") == 1.0
    finally:
        m.close()
