"""Resolution over many lessons: what the store reads, and that it resolves exactly as composing every active row
would (the oracle: `compose` over the whole `search`). The 100,000-lesson path at a small scale: the same code."""

from __future__ import annotations

import pytest
from overlay_support import TRUSTED, make_skill

from overlay_kit import budget, gates, resolve
from overlay_kit.bundled import llama_tokenizer
from overlay_kit.store import Store
from overlay_kit.store import core as store_mod  # where Store decodes rows (`_row_to_delta`)

SKILL = make_skill()
WORDS = "invoice vendor refund audit payroll outage rollback replica customer budget".split()


def _fill(store, n: int, skill=SKILL, section_of=lambda i: ("triage", "replies")[i % 2]):
    lessons = [
        gates.Lesson(
            "preference",
            {
                "body": f"Lesson {i}: check the {WORDS[i % 10]} and "
                f"{WORDS[(i * 7) % 10]} {'twice ' * (i % 4)}before replying."
            },
            section_of(i),
            TRUSTED,
        )
        for i in range(n)
    ]
    out = gates.learn_many(store, skill, lessons)
    assert all(r.outcome == "active" for r in out), out[0].message
    return [r.delta for r in out]


def _oracle(skill, store, ceiling):
    """`compose` over every active row (what `resolve` did before it read only what the budget can keep)."""
    scopes = store.read_scopes(None)
    deltas = store.search(
        skill=skill.name, scope=sorted(resolve._scopes(scopes)), status="active", include_superseded=True
    )
    left_out = [resolve.Note("left_out", None, text) for text in store.integrity_notes]
    store.integrity_notes.clear()
    return resolve.compose(
        skill, deltas, scope=scopes, retrieval_only=store.retrieval_only(skill.name), ceiling=ceiling, notes=left_out
    )


def _same(got, want):
    assert got.text == want.text and got.tokens == want.tokens
    assert [d.id for d in got.applied] == [d.id for d in want.applied]
    assert sorted((n.kind, n.delta_id) for n in got.notes) == sorted((n.kind, n.delta_id) for n in want.notes)


@pytest.mark.parametrize("room", [0, 40, 150, 400, 10**6])
def test_resolving_reads_only_what_the_budget_can_keep_and_matches_the_oracle(tmp_path, monkeypatch, room):
    with Store.open(tmp_path / "o.db", auto_approve=True) as s:
        deltas = _fill(s, 60)
        # evidence and use set the budget's order
        for i, d in enumerate(deltas[::5]):
            for k in range(i % 3 + 1):
                s.record_outcome(d.id, session=f"s{i}-{k}", signal="thumbs", positive=bool(k % 2))
        s.touch([deltas[7].id, deltas[31].id])
        ceiling = resolve._authored_tokens(SKILL.body) + room
        want = _oracle(SKILL, s, ceiling)
        resolve.resolve(SKILL, s, embedder=False, ceiling=ceiling)  # the first counts every line and keeps it
        reads = []
        real = store_mod._row_to_delta
        monkeypatch.setattr(store_mod, "_row_to_delta", lambda row: reads.append(row[0]) or real(row))
        got = resolve.resolve(SKILL, s, embedder=False, ceiling=ceiling)
    _same(got, want)
    if want.notes_of("suppressed_by_budget") and room < 150:
        assert len(reads) < len(deltas)  # rows past what the budget keeps were never decoded


def test_rows_that_cannot_apply_make_room_for_the_next_ones(tmp_path):
    """Orphaned rows (their section is gone) and a row whose seal fails sit first in the budget's order: the
    rows after them are read on until the budget binds, as composing every row would decide."""
    with Store.open(tmp_path / "o.db", auto_approve=True) as s:
        deltas = _fill(s, 40, section_of=lambda i: "triage" if i < 10 else "replies")
        for d in deltas[:10]:
            for k in range(3):
                s.record_outcome(d.id, session=f"s{d.id}{k}", signal="thumbs", positive=True)
        resolve.resolve(SKILL, s, embedder=False)  # keeps every line's count
        s.conn.execute(
            "UPDATE skill_deltas SET attempt_count = 9, success_count = 9 WHERE id = ?", (deltas[12].id,)
        )  # edited outside overlay_kit: first in line, and its seal fails
        s.integrity_notes.clear()
        moved = make_skill(body=SKILL.body.replace("## Triage\n\nLabel urgent mail first.\n\n", ""))
        ceiling = resolve._authored_tokens(moved.body) + 120
        want = _oracle(moved, s, ceiling)
        got = resolve.resolve(moved, s, embedder=False, ceiling=ceiling)
    assert want.notes_of("orphaned") and want.notes_of("suppressed_by_budget") and want.notes_of("left_out")
    _same(got, want)
    assert deltas[12].id not in {d.id for d in got.applied}


def test_unknown_line_counts_are_read_and_counted_then_kept(tmp_path):
    with Store.open(tmp_path / "o.db", auto_approve=True) as s:
        _fill(s, 30)
        ceiling = resolve._authored_tokens(SKILL.body) + 100
        first = resolve.resolve(SKILL, s, embedder=False, ceiling=ceiling)  # no counts kept yet: all read
        ids = [i for i, _, _, _ in s.budget_order(SKILL.name, ["user"])]
        kept = s.kept_line_tokens(ids)
        assert [kept[i] for i in ids] == [budget.count_following(resolve.item_text(s.get(i))) for i in ids]
        assert resolve.resolve(SKILL, s, embedder=False, ceiling=ceiling).text == first.text
        _same(first, _oracle(SKILL, s, ceiling))


def test_budget_order_is_the_budgets_order(tmp_path):
    """The SQL order is `budget.value_key` descending (the oracle), ties broken alike."""
    with Store.open(tmp_path / "o.db", auto_approve=True) as s:
        deltas = _fill(s, 25)
        for i, d in enumerate(deltas):
            for k in range(i % 4):
                s.record_outcome(d.id, session=f"s{i}-{k}", signal="thumbs", positive=k % 3 == 0)
        s.touch([d.id for d in deltas[3:9]])
        want = [d.id for d in sorted(s.search(SKILL.name, status="active"), key=budget.value_key, reverse=True)]
        assert [i for i, _, _, _ in s.budget_order(SKILL.name, "user")] == want


def test_compose_makes_no_budget_plan_when_the_text_fits(tmp_path, monkeypatch):
    with Store.open(tmp_path / "o.db", auto_approve=True) as s:
        deltas = _fill(s, 20)
        want = resolve.compose(SKILL, s.search(SKILL.name, status="active"), ceiling=10**6)
        monkeypatch.setattr(budget, "plan", lambda *a, **k: pytest.fail("planned though nothing binds"))
        got = resolve.compose(SKILL, s.search(SKILL.name, status="active"), ceiling=10**6)
        assert got.text == want.text and len(got.applied) == len(deltas)
        assert resolve.compose(SKILL, deltas, ceiling=got.tokens).text == got.text  # exactly at the ceiling
        monkeypatch.undo()
        cut = resolve.compose(SKILL, deltas, ceiling=got.tokens - 1)  # one token over: the plan runs
        assert cut.notes_of("suppressed_by_budget") and cut.tokens <= got.tokens - 1


def test_count_tokens_is_a_batch_of_one():
    texts = ["", "Reply in two short sentences.", "## Heading\n\n- a list\n", "naïve café — ünïcode ✓\n" * 3]
    per_row = [len(llama_tokenizer().encode(t, add_special_tokens=False).ids) for t in texts]  # the oracle
    assert budget.count_many(texts) == per_row
    assert [budget.count_tokens(t) for t in texts] == per_row
