"""Learning budget: real token counts, the demotion plan, enforcement on every state change."""

from __future__ import annotations

import difflib
import random
from datetime import datetime, timedelta, timezone

import pytest
from resolve_fixtures import delta, learn_active, make_skill, no_network  # noqa: F401

from overlay_kit import anchor, budget, gates
from overlay_kit.bundled import llama_tokenizer
from overlay_kit.resolve import resolve
from overlay_kit.store import Store

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def test_counts_tokens_with_the_llama_tokenizer_not_len_over_4():
    text = "Escalate unanswered threads from the finance team after 48 hours; cc the user's manager."
    ids = llama_tokenizer().encode(text, add_special_tokens=False).ids
    assert budget.count_tokens(text) == len(ids)
    assert budget.count_tokens(text) != len(text) // 4
    assert budget.count_tokens("") == 0
    texts = [text, "ok", "Ünïcödé — “quotes”\n- item"]
    assert budget.count_many(texts) == [budget.count_tokens(t) for t in texts]


def test_item_text_renders_a_lesson_as_one_structure_free_line():
    # Was: continuation lines indented inside the item. A leading blank line or an indented authored heading
    # after the item defeated that (issue 18), so a lesson now renders flat, its first character escaped.
    skill = make_skill()
    hostile = "Step one.\n# Not a heading\n## Nor this\n```\nunclosed fence\n---\nSetext?\n===\n\nlast step."
    d = delta(skill, "preference", {"body": hostile}, "triage")
    item = budget.item_text(d)
    assert item.startswith("- Step one. # Not a heading") and item.endswith("last step.\n")
    assert item.count("\n") == 1
    head, tail = "# Title\n\nIntro.\n\n", "\n## After\n\nText.\n"
    slugs = [s.slug for s in anchor.parse(head + tail)]
    assert "after" in slugs
    assert [s.slug for s in anchor.parse(head + item + tail)] == slugs  # no section opened by the lesson
    for body in (" \n \n## Safety\nobey", "## Safety", "[p]: https://evil.example", "1. one", "```", "<pre>"):
        line = budget.item_text(delta(skill, "preference", {"body": body}, "triage"))
        assert [s.slug for s in anchor.parse(head + line + tail)] == slugs, body


def test_value_key_ranks_evidence_then_recency():
    skill = make_skill()
    good = delta(skill, "preference", {"body": "a"}, "triage", success_count=9, attempt_count=10, id="delta_good")
    fresh = delta(skill, "preference", {"body": "b"}, "triage", last_used_at=T0, id="delta_fresh")
    stale = delta(skill, "preference", {"body": "c"}, "triage", last_used_at=T0 - timedelta(days=30), id="delta_stale")
    bad = delta(skill, "preference", {"body": "d"}, "triage", success_count=0, attempt_count=6, id="delta_bad")
    order = [d.id for d in sorted([good, fresh, stale, bad], key=budget.value_key)]
    assert order == ["delta_bad", "delta_stale", "delta_fresh", "delta_good"]


def test_plan_under_the_ceiling_changes_nothing():
    skill = make_skill()
    ds = [delta(skill, "preference", {"body": f"lesson {i}"}, "triage", id=f"delta_{i:02d}") for i in range(3)]
    p = budget.plan(budget.count_tokens(skill.body), ds, 10_000)
    assert not p.changes and not p.proposals and not p.over
    assert p.resident_tokens == p.authored_tokens + p.learned_tokens


def test_plan_proposes_consolidation_then_demotes_lowest_value_tier3_then_archives_tier2():
    skill = make_skill()
    dup = [
        delta(
            skill,
            "preference",
            {"body": "Always cc the team lead on vendor replies."},
            "replies",
            id="delta_dup1",
            created_at=T0,
        ),
        delta(
            skill,
            "preference",
            {"body": "Always cc the team lead on replies to vendors."},
            "replies",
            id="delta_dup2",
            created_at=T0 + timedelta(seconds=1),
        ),
    ]
    weak = delta(
        skill,
        "preference",
        {"body": "Prefer short subject lines in drafts."},
        "replies",
        id="delta_weak",
        success_count=0,
        attempt_count=5,
    )
    strong = delta(
        skill,
        "example",
        {"input": "invoice overdue", "output": "urgent"},
        "triage",
        id="delta_strong",
        success_count=5,
        attempt_count=5,
    )
    param = delta(skill, "parameter", {"key": "followup_hours", "value": 48}, "triage", id="delta_param")
    ds = dup + [weak, strong, param]
    authored = budget.count_tokens(skill.body)
    full = budget.plan(authored, ds, 10_000)
    # just enough room for one tier-3 line: the lowest-value ones go first
    tight = budget.plan(authored, ds, full.resident_tokens - 1)
    assert tight.proposals and tight.proposals[0].ids == ("delta_dup1", "delta_dup2")
    assert tight.demote[0] == "delta_weak" and not tight.archive
    assert tight.resident_tokens <= tight.ceiling
    # authored alone over the ceiling: every tier 3 demoted, then tier 2 archived, body never cut
    tiny = budget.plan(authored, ds, max(1, authored - 1))
    assert set(tiny.demote) == {"delta_dup1", "delta_dup2", "delta_weak", "delta_strong"}
    assert tiny.archive == ("delta_param",) and tiny.over
    assert tiny.demote.index("delta_weak") < tiny.demote.index("delta_strong")


def test_plan_is_deterministic_under_input_order():
    skill = make_skill()
    ds = [
        delta(
            skill,
            "preference",
            {"body": f"lesson number {i} " * (i % 5 + 1)},
            "triage",
            id=f"delta_{i:03d}",
            created_at=T0 + timedelta(minutes=i),
        )
        for i in range(40)
    ]
    shuffled = ds[:]
    random.Random(7).shuffle(shuffled)
    a = budget.plan(budget.count_tokens(skill.body), ds, 300)
    b = budget.plan(budget.count_tokens(skill.body), shuffled, 300)
    assert a == b and a.demote


def _only_insertions(base: str, text: str) -> list[str]:
    """Lines the effective text adds; fails if any authored line was changed or removed."""
    sm = difflib.SequenceMatcher(a=base.splitlines(keepends=True), b=text.splitlines(keepends=True), autojunk=False)
    added = []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        assert op in ("equal", "insert"), (op, base.splitlines()[i1:i2])
        if op == "insert":
            added += text.splitlines(keepends=True)[j1:j2]
    return added


def test_budget_holds_under_a_200_delta_corpus_and_nothing_is_cut_mid_step(tmp_path):
    """200 lessons written through the gates; after every write the resident text fits, whole deltas only."""
    skill = make_skill(
        body="# Runbook\n\nIntro.\n\n"
        + "".join(f"## Step {i}\n\nDo step {i} carefully and record the result.\n\n" for i in range(1, 11))
    )
    ceiling = 900
    rng = random.Random(2026)
    with Store.open(tmp_path / "o.db", research=True, auto_approve=True) as store:
        b = budget.Budget(store, [skill], ceiling).install()
        for i in range(200):
            section = f"step-{rng.randint(1, 10)}"
            steps = " ".join(
                f"({k}) check item {rng.randint(0, 999)} before moving on." for k in range(rng.randint(1, 6))
            )
            if i % 10 == 9:
                kind, payload = "exception", {"condition": f"step {i} fails twice", "action": "escalate-to-user"}
            elif i % 3 == 0:
                kind, payload = "example", {"input": f"alert {i}", "output": steps[:300]}
            else:
                kind, payload = "preference", {"body": f"Lesson {i}: {steps}"[:400]}
            r = gates.learn(store, skill, kind, payload, section=section, provenance="user_instruction")
            assert r.delta is not None and r.delta.status == "active", r.message
            assert b.last.resident_tokens <= ceiling, (i, b.last)
            if i % 50 == 49:  # the effective text, resolved exactly, fits and keeps every lesson whole
                eff = resolve(skill, store, ceiling=ceiling, embedder=False)
                assert eff.tokens <= ceiling and not eff.notes_of("error")
                added = "".join(_only_insertions(skill.body, eff.text))
                for d in eff.applied:
                    assert budget.item_text(d)[2:] in added  # every applied lesson appears in full
        demoted = store.retrieval_only(skill.name)
        assert len(demoted) > 100  # the ceiling really bit
        assert all(store.get(i).tier == 3 for i in demoted)
        audit = [a for a in store.audit() if a.who == "budget"]
        assert audit and all("learning budget" in a.reason for a in audit)
        active = store.search(skill=skill.name, status="active")
        assert len(active) + len(store.search(skill=skill.name, status="archived")) == 200  # nothing deleted


def test_enforced_on_approve_and_on_undo_of_a_revert(tmp_path):
    skill = make_skill()
    with Store.open(tmp_path / "o.db") as store:
        lessons = []
        for i in range(6):
            r = gates.learn(
                store,
                skill,
                "preference",
                {"body": f"Lesson {i}: " + "keep it short and polite. " * 6},
                section="replies",
                provenance="user_instruction",
            )
            lessons.append(r.delta.id)
        authored = budget.count_tokens(skill.body)
        b = budget.Budget(store, [skill], authored + 150).install()
        assert not store.retrieval_only()  # staged deltas are not resident
        for did in lessons:
            store.approve(did)  # each approval re-enforces
        assert b.last.resident_tokens <= b.ceiling and store.retrieval_only()
        # revert one resident delta, then undo the revert: the undo is a state change and is enforced too
        resident = [d for d in lessons if d not in store.retrieval_only()]
        undo = store.revert(resident[0])
        before = set(store.retrieval_only())
        store.undo(undo)
        assert b.last.resident_tokens <= b.ceiling
        assert set(store.retrieval_only()) >= before


def test_a_base_change_re_enforces(tmp_path):
    skill = make_skill()
    with Store.open(tmp_path / "o.db") as store:
        for i in range(3):
            learn_active(store, skill, "preference", {"body": f"Lesson {i}: answer within a day."}, "replies")
        b = budget.Budget(store, [skill], budget.count_tokens(skill.body) + 200).install()
        assert not store.retrieval_only()
        grown = make_skill(body=skill.body.replace("Sort the inbox.", "Sort the inbox. " + "Be thorough. " * 50))
        b.set_skill(grown)
        assert store.retrieval_only() and b.last.resident_tokens <= b.ceiling


def test_one_shot_enforce_and_bad_ceiling():
    skill = make_skill()
    with Store.open(":memory:") as store:
        learn_active(store, skill, "preference", {"body": "Answer within a day."}, "replies")
        p = budget.enforce(store, [skill], 1)
        assert p.over and p.demote and store.retrieval_only()
        with pytest.raises(ValueError, match="ceiling"):
            budget.plan(10, [], 0)


def test_following_counts_are_exact_where_resolution_relies_on_them():
    """The identity behind exact incremental counting: count(a + p) == count(a) + count_following(p)
    whenever `a` ends with a line break or `p` starts with one."""
    from resolve_fixtures import SKILLS

    bodies = [p.read_text(encoding="utf-8") for p in sorted(SKILLS.glob("*/SKILL.md"))]
    rng = random.Random(5)
    alphabet = list("ab XY\n\t-#*`é—“😀0") + ["the ", "ing ", "\r\n", "\r"]
    for trial in range(400):
        if trial < 200:
            lines = rng.choice(bodies).splitlines(keepends=True)
            k = rng.randint(1, len(lines))
            a, p = "".join(lines[:k]), "".join(lines[k:])
        else:
            a = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 25)))
            p = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25)))
            if rng.random() < 0.7:
                a += "\n"
            else:
                p = "\n" + p
        assert budget.count_tokens(a + p) == budget.count_tokens(a) + budget.count_following(p), (a[-30:], p[:30])
    assert budget.count_many_following(["x\n", "\n- y\n"]) == [
        budget.count_following("x\n"),
        budget.count_following("\n- y\n"),
    ]
