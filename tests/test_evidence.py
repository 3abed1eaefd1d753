"""overlay_kit.evidence: outcome attribution, promotion on counters, consolidation, decay."""

import hashlib
import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from overlay_support import TRUSTED, UNTRUSTED, make_skill

from overlay_kit import budget, evidence, gates, resolve
from overlay_kit.evidence import EvidenceError, NotAnOutcome
from overlay_kit.store import Store, StoreError

SKILL = make_skill()
T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)


class BagEmbedder:
    """A deterministic bag-of-words embedder (hashed words), enough to tell paraphrases from other lessons."""

    id = "test/bag-of-words"

    def encode(self, texts):
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


class Orthogonal:
    """Every text gets its own axis: cosine 0 between any two different texts."""

    id = "test/orthogonal"

    def encode(self, texts):
        return np.eye(len(texts), 8, dtype=np.float32)


def learn(
    store, body="Keep replies short.", section="replies", source=TRUSTED, auto=True, kind="preference", payload=None
):
    r = gates.learn(
        store,
        SKILL,
        kind,
        payload or {"body": body},
        section=section,
        provenance=source,
        settings=gates.GateSettings(auto_approve=auto),
    )
    assert r.persisted, r.message
    return r.delta


def counters(store, did):
    d = store.get(did)
    return d.success_count, d.attempt_count


def signals(store):
    return store.conn.execute("SELECT count(*) FROM turn_signals").fetchone()[0]


# ------------------------------------------------------------------------------------ attribution


def test_counters_move_on_a_correction_and_not_on_a_clean_tool_return(store):
    d = learn(store)
    eff = resolve.resolve(SKILL, store)
    assert [x.id for x in eff.applied] == [d.id]
    evidence.record_context(store, "s1", "1", eff, at=T0)
    with pytest.raises(NotAnOutcome, match="tool return code"):
        evidence.record_signal(store, "s1", "1", "tool_ok")
    assert counters(store, d.id) == (0, 0) and store.outcomes(d.id) == [] and signals(store) == 0
    a = evidence.record_signal(store, "s1", "1", "correction", lesson="replies=short", at=T0)
    assert a.attributed == (d.id,) and a.positive is False
    assert counters(store, d.id) == (0, 1)
    evidence.record_context(store, "s2", "1", eff, at=T0)
    evidence.record_signal(store, "s2", "1", "accepted", at=T0)
    assert counters(store, d.id) == (1, 2)
    assert [(o.signal, o.positive) for o in store.outcomes(d.id)] == [("correction", False), ("accepted", True)]


@pytest.mark.parametrize(
    "name",
    [
        "tool_ok",
        "no_error",
        "did_not_raise",
        "tool_returned",
        "success",
        "OK",
        "exit_code_0",
        "tool call did not raise",
    ],
)
def test_every_tool_return_shape_is_refused(store, name):
    d = learn(store)
    evidence.record_context(store, "s", "1", [d.id])
    with pytest.raises(NotAnOutcome) as err:
        evidence.record_signal(store, "s", "1", name)
    assert err.value.field == "signal" and isinstance(err.value, EvidenceError)
    assert counters(store, d.id) == (0, 0) and signals(store) == 0


def test_unknown_signal_is_an_error_but_not_a_tool_refusal(store):
    with pytest.raises(EvidenceError, match="unknown signal") as err:
        evidence.record_signal(store, "s", "1", "thumbs")
    assert not isinstance(err.value, NotAnOutcome)


def test_attribution_only_to_what_was_in_context_and_narrowed_by_section(store):
    replies, triage, idle = learn(store), learn(store, "Urgent first.", "triage"), learn(store, "Unused.", "triage")
    evidence.record_context(store, "s", "1", [replies.id, triage.id])
    a = evidence.record_signal(store, "s", "1", "undo", section="triage")
    assert a.attributed == (triage.id,)
    assert counters(store, triage.id) == (0, 1) and counters(store, replies.id) == (0, 0)
    assert counters(store, idle.id) == (0, 0)
    with pytest.raises(EvidenceError, match="not in context") as err:
        evidence.record_signal(store, "s", "1", "accepted", delta_ids=[idle.id])
    assert err.value.field == "delta_ids" and counters(store, idle.id) == (0, 0) and signals(store) == 1
    b = evidence.record_signal(store, "s", "1", "accepted", delta_ids=[replies.id])
    assert b.attributed == (replies.id,) and counters(store, replies.id) == (1, 1)


def test_a_signal_on_a_turn_with_nothing_in_context_moves_nothing(store):
    d = learn(store)
    a = evidence.record_signal(store, "s", "9", "correction", lesson="x=y")
    assert a.attributed == () and counters(store, d.id) == (0, 0) and signals(store) == 1


def test_ratings(store):
    d = learn(store)
    for turn, rating in enumerate((5, 4, 3, 2, 1)):
        evidence.record_context(store, "s", str(turn), [d.id])
        a = evidence.record_signal(store, "s", str(turn), "rating", rating=rating)
        assert a.positive == (True if rating >= 4 else None if rating == 3 else False)
    assert counters(store, d.id) == (2, 4)  # the neutral 3 is ledgered as a signal, attributed to nothing
    for bad in (0, 6, 4.5, True, None):
        with pytest.raises(EvidenceError) as err:
            evidence.record_signal(store, "s", "0", "rating", rating=bad)
        assert err.value.field == "rating"
    with pytest.raises(EvidenceError, match="only a 'rating'"):
        evidence.record_signal(store, "s", "0", "accepted", rating=5)


def test_a_repeated_signal_counts_once(store):
    d = learn(store)
    evidence.record_context(store, "s", "1", [d.id])
    assert evidence.record_signal(store, "s", "1", "correction").attributed == (d.id,)
    again = evidence.record_signal(store, "s", "1", "correction")
    assert again.attributed == () and again.repeated == (d.id,) and counters(store, d.id) == (0, 1)


def test_context_ledger_validates_and_stamps_last_use(store):
    d = learn(store)
    with pytest.raises(StoreError):
        evidence.record_context(store, "s", "1", [d.id, "delta_missing"])
    assert evidence.in_context(store, "s", "1") == {}
    with pytest.raises(EvidenceError) as err:
        evidence.record_context(store, "s", "1", [d.id], role="watched")
    assert err.value.field == "role"
    with pytest.raises(EvidenceError) as err:
        evidence.record_context(store, "s" * 500, "1", [d.id])
    assert err.value.field == "session"
    evidence.record_context(store, "s", "1", [d.id], role="suggested", at=T0)
    assert evidence.in_context(store, "s", "1") == {d.id: "suggested"}
    assert store.get(d.id).last_used_at == T0


def test_lesson_keys_are_ids_not_text(store):
    with pytest.raises(EvidenceError) as err:
        evidence.record_signal(store, "s", "1", "correction", lesson="x" * 300)
    assert err.value.field == "lesson" and signals(store) == 0


def test_forget_erases_the_correction_log(store):
    d = learn(store)
    evidence.record_context(store, "s", "1", [d.id])
    evidence.record_signal(store, "s", "1", "correction", lesson="a=b", scope="user")
    evidence.record_signal(store, "s", "2", "correction", lesson="a=b", scope="other")
    assert evidence.forget(store, scope="user") == 1
    assert store.conn.execute("SELECT scope FROM turn_signals").fetchall() == [("other",)]


# -------------------------------------------------------------------------------------- promotion


def _suggest(store, d, outcomes):
    for i, ok in enumerate(outcomes):
        evidence.record_context(store, f"{d.id}:{i}", "1", [d.id], role="suggested")
        evidence.record_signal(store, f"{d.id}:{i}", "1", "accepted" if ok else "correction")


def test_staged_lessons_promote_on_their_track_record_only(store):
    good, meh, bad = (
        learn(store, auto=False),
        learn(store, "Sign off as Sam.", auto=False),
        learn(store, "Reply in French.", auto=False),
    )
    _suggest(store, good, [True] * 5)
    _suggest(store, meh, [True, True, True, False, True])
    _suggest(store, bad, [False, False, True, False, False])
    reviews = {r.delta_id: r.decision for r in evidence.review_staged(store, retire_below=0.5)}
    assert reviews == {good.id: "promoted", meh.id: "held", bad.id: "retired"}
    assert store.get(good.id).status == "active" and store.get(bad.id).status == "archived"
    log = store.conn.execute(
        "SELECT delta_id, decision, successes, attempts, ledger_seq FROM promotion_log ORDER BY id"
    ).fetchall()
    seq = {
        i: store.conn.execute("SELECT max(id) FROM delta_outcomes WHERE delta_id = ?", (i,)).fetchone()[0]
        for i in (good.id, bad.id)
    }
    assert log == [(good.id, "promoted", 5, 5, seq[good.id]), (bad.id, "retired", 1, 5, seq[bad.id])]
    assert [a.who for a in store.audit(good.id)][-1] == "evidence"


def test_untrusted_lessons_never_promote_on_evidence(store):
    d = learn(store, source=UNTRUSTED)
    assert d.status == "quarantined"
    _suggest(store, d, [True] * 10)
    assert evidence.review_staged(store) == [] and store.get(d.id).status == "quarantined"


def test_review_settings_are_checked(store):
    with pytest.raises(EvidenceError):
        evidence.review_staged(store, threshold=0.8, retire_below=0.9)


# ---------------------------------------------------------------------------------- consolidation

PARAPHRASES = (
    "Keep replies short, three sentences at most.",
    "Keep replies short: three sentences at most.",
    "Keep the replies short, at most three sentences.",
)


def test_near_duplicates_need_both_signals(store):
    ids = [learn(store, t).id for t in PARAPHRASES]
    other = learn(store, "Always greet the sender by first name.")
    elsewhere = learn(store, PARAPHRASES[0], section="triage")
    deltas = store.search(SKILL.name, status="active")
    [c] = evidence.near_duplicates(deltas, embedder=BagEmbedder())
    assert set(c.ids) == set(ids) and c.section == "replies" and c.bigram >= evidence.MIN_BIGRAM
    assert other.id not in c.ids and elsewhere.id not in c.ids and c.cosine >= evidence.MIN_COSINE
    assert evidence.near_duplicates(deltas, embedder=Orthogonal()) == []  # lexical alone is not enough
    assert len(evidence.near_duplicates(deltas, embedder=False)[0].ids) == 3  # bigrams only, if asked


def test_umbrella_is_staged_and_approval_supersedes_members_kept(tmp_path):
    with Store.open(tmp_path / "auto.db", auto_approve=True) as store:
        ids = [learn(store, t).id for t in PARAPHRASES]
        [c] = evidence.near_duplicates(store.search(SKILL.name, status="active"), embedder=BagEmbedder())
        u = evidence.propose_umbrella(store, SKILL, c)
        assert u.staged and u.result.outcome == "staged"  # auto-approve never applies to a consolidation
        assert store.get(u.umbrella_id).payload["body"] == store.get(c.ids[0]).payload["body"]
        assert evidence.propose_umbrella(store, SKILL, c).umbrella_id == u.umbrella_id  # no second proposal
        assert evidence.pending_umbrellas(store) == {u.umbrella_id: c.ids}
        undo = evidence.approve_umbrella(store, u.umbrella_id)
        assert store.get(u.umbrella_id).status == "active"
        for i in ids:
            assert store.get(i).status == "active" and store.get(i).superseded_by == u.umbrella_id
        assert [d.id for d in resolve.resolve(SKILL, store).applied] == [u.umbrella_id]
        assert evidence.pending_umbrellas(store) == {}
        store.undo(undo)
        assert {d.id for d in resolve.resolve(SKILL, store).applied} == set(ids)


def test_umbrella_refuses_mixed_or_dead_members(store):
    a, b = learn(store, PARAPHRASES[0]), learn(store, PARAPHRASES[1], section="triage")
    with pytest.raises(EvidenceError, match="not on mail/replies"):
        evidence.propose_umbrella(store, SKILL, [a.id, b.id])
    c = learn(store, PARAPHRASES[2])
    store.revert(c.id)
    with pytest.raises(EvidenceError, match="archived"):
        evidence.propose_umbrella(store, SKILL, [a.id, c.id])
    with pytest.raises(EvidenceError):
        evidence.propose_umbrella(store, SKILL, [a.id, a.id])
    assert store.conn.execute("SELECT count(*) FROM consolidations").fetchone()[0] == 0


def test_untrusted_member_makes_the_umbrella_quarantined(store):
    a = learn(store, PARAPHRASES[0])
    b = learn(store, PARAPHRASES[1], source=UNTRUSTED)
    store.approve(b.id)
    u = evidence.propose_umbrella(store, SKILL, [a.id, b.id])
    assert u.result.outcome == "quarantined"


def test_budget_consolidation_step_uses_the_evidence_proposer(store):
    for t in PARAPHRASES:
        learn(store, t)
    authored = budget.count_tokens(SKILL.body)
    b = budget.Budget(store, [SKILL], authored + 20, proposer=evidence.consolidation_proposer(BagEmbedder()))
    plan = b.enforce()
    [p] = plan.proposals
    assert len(p.ids) == 3 and p.tokens > 0 and p.section == "replies"
    u = evidence.propose_umbrella(store, SKILL, p.ids)
    assert u.staged and set(u.members) == set(p.ids)


# ------------------------------------------------------------------------------------------- decay


def test_decay_demotes_idle_tier3_and_never_changes_a_status(store):
    approved = learn(store, "Sign as Sam.", auto=False)
    store.approve(approved.id)  # a user-approved delta
    auto = learn(store, "Keep replies short.")
    fresh = learn(store, "Urgent first.", "triage")
    hint = learn(store, kind="tool-hint", payload={"prefer": ["search_mail"]}, section="triage")
    now = T0 + timedelta(days=100)
    for d in (approved, auto, hint):
        store.touch([d.id], T0)
    store.touch([fresh.id], now - timedelta(days=1))
    before = {d.id: d.status for d in store.search(SKILL.name)}
    plan = evidence.decay(store, SKILL.name, now=now, idle=timedelta(days=30))
    assert set(plan.demote) == {approved.id, auto.id} and plan.surfaced == (hint.id,)
    assert {d.id: d.status for d in store.search(SKILL.name)} == before  # age demotes; it never deactivates
    assert store.retrieval_only(SKILL.name) == {approved.id, auto.id}
    assert evidence.decay(store, SKILL.name, now=now).demote == ()  # already demoted: idempotent
    ranked = store.search(SKILL.name, status="active")
    assert list(plan.ranked) == [d.id for d in sorted(ranked, key=budget.value_key)]
    with pytest.raises(EvidenceError):
        evidence.decay_plan(ranked, now=now, idle=timedelta(0))


def test_decay_ranks_evidence_before_recency(store):
    old_good, new_bad = learn(store, "A."), learn(store, "B.")
    store.touch([old_good.id], T0)
    store.touch([new_bad.id], T0 + timedelta(days=50))
    for i in range(4):
        evidence.record_context(store, f"s{i}", "1", [old_good.id, new_bad.id], at=T0)
        evidence.record_signal(store, f"s{i}", "1", "accepted", delta_ids=[old_good.id])
        evidence.record_signal(store, f"s{i}", "1", "correction", delta_ids=[new_bad.id])
    plan = evidence.decay_plan(store.search(SKILL.name), now=T0 + timedelta(days=60))
    assert plan.ranked == (new_bad.id, old_good.id)
