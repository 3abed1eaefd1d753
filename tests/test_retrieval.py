"""Tier-3 retrieval: the offline embedder, the trigger index, embedder identity, erasure."""

from __future__ import annotations

import random

import numpy as np
import pytest
from resolve_fixtures import delta, learn_active, make_skill, no_network  # noqa: F401

from overlay_kit import bundled, retrieval
from overlay_kit.retrieval import (
    EmbedderUnavailable,
    TextEmbedder,
    TriggerIndex,
    load_embedder,
)
from overlay_kit.store import Store

pytestmark = pytest.mark.usefixtures("no_network")


class Counting:
    def __init__(self, inner):
        self.inner, self.id, self.calls = inner, inner.id, 0

    def encode(self, texts):
        self.calls += 1
        return self.inner.encode(texts)


@pytest.fixture(scope="module")
def emb():
    return load_embedder()


def test_default_embedder_is_the_bundled_offline_model_and_is_cached(emb):
    assert emb.id == bundled.EMBEDDER_ID
    assert load_embedder() is emb and load_embedder(bundled.EMBEDDER_ID) is emb
    v = emb.encode(["escalate threads from my manager", "escalating manager threads", "write a haiku"])
    assert v.shape == (3, emb.dim) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.9 > 0.3 > v[0] @ v[2]  # paraphrase close, unrelated far
    assert emb.encode([]).shape == (0, emb.dim)


def test_an_unknown_model_is_unavailable_without_touching_the_network():
    with pytest.raises(EmbedderUnavailable) as exc:
        load_embedder("no-such-org/no-such-model-xyz")
    assert exc.value.name == "no-such-org/no-such-model-xyz"


def _tier3(skill, n, rng):
    words = ["invoice", "vendor", "manager", "newsletter", "deadline", "meeting", "refund", "travel", "contract"]
    return [
        delta(
            skill,
            "preference",
            {"body": f"Lesson {i}", "trigger": " ".join(rng.sample(words, 3))},
            "replies",
            id=f"delta_{i:04d}",
        )
        for i in range(n)
    ]


def test_retrieves_only_at_or_above_tau_best_first(emb):
    skill = make_skill()
    ds = [
        delta(
            skill,
            "preference",
            {"body": "cc finance", "trigger": "replying to a vendor about an invoice"},
            "replies",
            id="delta_a",
        ),
        delta(
            skill,
            "preference",
            {"body": "be brief", "trigger": "replying to a vendor about an invoice date"},
            "replies",
            id="delta_b",
        ),
        delta(skill, "preference", {"body": "no emoji", "trigger": "planning a team offsite"}, "replies", id="delta_c"),
        delta(skill, "parameter", {"key": "k", "value": 1}, "replies", id="delta_t2"),
    ]  # tier 2: never indexed
    index = TriggerIndex.build(emb, ds)
    assert index.ids == ("delta_a", "delta_b", "delta_c")
    hits = index.retrieve("replying to a vendor about an invoice", 0.82)
    assert [h[0] for h in hits][:1] == ["delta_a"] and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert all(c >= 0.82 for _, c in hits) and "delta_c" not in dict(hits)
    everything = index.retrieve("replying to a vendor about an invoice", -1.0)
    assert len(everything) == 3 and [c for _, c in everything] == sorted((c for _, c in everything), reverse=True)
    assert index.retrieve("", 0.0) == []


def test_rebuild_is_deterministic_whatever_the_input_order(emb):
    skill = make_skill()
    ds = _tier3(skill, 60, random.Random(3))
    shuffled = ds[:]
    random.Random(11).shuffle(shuffled)
    a, b = TriggerIndex.build(emb, ds), TriggerIndex.build(emb, shuffled)
    assert a.ids == b.ids == tuple(sorted(d.id for d in ds))
    for goal in ("vendor invoice refund", "manager meeting deadline"):
        assert a.retrieve(goal, 0.5) == b.retrieve(goal, 0.5)


def test_from_store_embeds_new_triggers_once_and_keeps_the_embedder_identity(emb):
    skill = make_skill()
    with Store.open(":memory:") as store:
        d1 = learn_active(
            store, skill, "preference", {"body": "cc finance", "trigger": "vendor invoice reply"}, "replies"
        )
        learn_active(store, skill, "tool-hint", {"prefer": ["search_mail"]}, "triage")
        index = TriggerIndex.from_store(store, emb)
        assert index.ids == (d1.id,) and not index.dark
        assert store.embedder_id == emb.id
        ids, matrix = store.embeddings(emb.id)
        assert ids == [d1.id] and matrix.shape == (1, emb.dim)
        counting = Counting(emb)
        again = TriggerIndex.from_store(store, counting)
        assert counting.calls == 0 and again.ids == index.ids  # stored vectors reused, nothing re-embedded


def test_an_embedder_change_invalidates_vectors_and_darkens_tier3_until_reembedded(emb):
    skill = make_skill()
    with Store.open(":memory:") as store:
        d1 = learn_active(
            store, skill, "preference", {"body": "cc finance", "trigger": "vendor invoice reply"}, "replies"
        )
        TriggerIndex.from_store(store, emb)
        other = TextEmbedder(emb.model, "another/embedder")
        index = TriggerIndex.from_store(store, other)
        assert index.dark and "invalidated" in index.reason
        assert index.retrieve("vendor invoice reply", 0.0) == []
        assert store.embedder_id == "another/embedder" and store.embeddings(emb.id)[0] == []
        assert retrieval.reembed(store, other) == 1
        index = TriggerIndex.from_store(store, other)
        assert not index.dark and index.retrieve("vendor invoice reply", 0.82)[0][0] == d1.id


def test_no_embedder_or_a_failing_store_gives_a_dark_index_never_an_error(emb):
    assert TriggerIndex.from_store(object(), None).dark

    class Broken:
        embedder_id = None

        def search(self, **kw):
            raise RuntimeError("disk on fire")

    index = TriggerIndex.from_store(Broken(), emb)
    assert index.dark and "disk on fire" in index.reason and index.retrieve("x", 0.0) == []


def test_forget_erases_vectors_from_the_store_and_the_live_index(emb):
    skill, other = make_skill(), make_skill("notes")
    with Store.open(":memory:") as store:
        d1 = learn_active(
            store, skill, "preference", {"body": "cc finance", "trigger": "vendor invoice reply"}, "replies"
        )
        d2 = learn_active(
            store, other, "preference", {"body": "dates first", "trigger": "meeting notes summary"}, "replies"
        )
        index = TriggerIndex.from_store(store, emb).attach(store)
        assert set(index.ids) == {d1.id, d2.id}
        store.forget(skill="mail")
        assert index.ids == (d2.id,)
        assert store.embeddings(emb.id)[0] == [d2.id]
        assert index.retrieve("vendor invoice reply", 0.0)[0][0] == d2.id


# ------------------------------------------------------------------------------------ calibrated gates


def _record(embedder_id: str, gate: retrieval.Gate) -> dict:
    return {"embedder": embedder_id, "gate": gate.to_dict()}


def test_the_bundled_embedder_ships_a_calibrated_gate_and_the_users_own_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("OVERLAY_KIT_GATES", str(tmp_path))
    shipped, path = retrieval.gate_for(bundled.EMBEDDER_ID)
    assert path.parent.name == "gates" and path.parent.parent.name == "tau"  # datasets/tau/gates
    assert shipped.floor < 0.82 and shipped.family in retrieval.FAMILIES
    mine = retrieval.Gate("margin", 0.3, margin=0.05)
    written = retrieval.write_calibration(_record(bundled.EMBEDDER_ID, mine))
    assert written.parent == tmp_path and retrieval.gate_for(bundled.EMBEDDER_ID) == (mine, written)
    assert retrieval.calibration_path("a/b", tmp_path) != retrieval.calibration_path("a-b", tmp_path)


def test_an_uncalibrated_embedder_or_a_bad_calibration_is_said_never_guessed(tmp_path, monkeypatch):
    monkeypatch.setenv("OVERLAY_KIT_GATES", str(tmp_path))
    with pytest.raises(retrieval.Uncalibrated, match="calibrate-tau --embedder"):
        retrieval.gate_for("someone/else")
    path = retrieval.calibration_path("someone/else", tmp_path)
    path.write_text('{"embedder": "someone/else", "gate": {"family": "nearest"}}')
    with pytest.raises(retrieval.CalibrationError) as err:
        retrieval.gate_for("someone/else")
    assert err.value.field == "gate" and str(path) in str(err.value)
    path.write_text("{not json")
    with pytest.raises(retrieval.CalibrationError, match="json"):
        retrieval.gate_for("someone/else")


def test_resolver_notes_an_uncalibrated_embedder_instead_of_a_silent_dark_index(emb, tmp_path, monkeypatch):
    monkeypatch.setenv("OVERLAY_KIT_GATES", str(tmp_path))
    from overlay_kit.resolve import resolve

    skill = make_skill()
    other = TextEmbedder(emb.model, "uncalibrated/embedder")
    with Store.open(":memory:") as store:
        d = learn_active(
            store, skill, "preference", {"body": "CC FINANCE", "trigger": "vendor invoice reply"}, "replies"
        )
        store.set_resident([d.id], False, who="budget", reason="test")
        eff = resolve(skill, store, goal="vendor invoice reply", embedder=other)
        assert "CC FINANCE" not in eff.text
        assert "no calibrated retrieval gate" in eff.notes_of("retrieval_dark")[0].detail
        retrieval.write_calibration(_record(other.id, retrieval.Gate.absolute(0.9)))
        assert "CC FINANCE" in resolve(skill, store, goal="vendor invoice reply", embedder=other).text


def test_a_relevant_lesson_demoted_by_the_budget_comes_back_for_a_paraphrased_goal(emb, tmp_path, monkeypatch):
    """Issue 15: the resolver's default gate is the study's. The six file-organizing lessons of the τ corpus are
    learned, the budget demotes them all to retrieval-only, and a held-out paraphrase labelled relevant to one
    of them (never seen by the calibration) brings back that lesson and none of the five labelled irrelevant.
    (The bundled embedder retrieves only a minority of held-out paraphrases — the study's own figure — and this
    is one it does; under the old τ = 0.82 none comes back.)"""
    import csv

    from overlay_kit import budget
    from overlay_kit.resolve import resolve
    from overlay_kit.resources import dataset_path

    monkeypatch.setenv("OVERLAY_KIT_GATES", str(tmp_path))  # no user calibration: the shipped one applies
    with dataset_path("tau", "lessons.csv").open(encoding="utf-8") as fh:
        lessons = [r for r in csv.DictReader(fh) if r["skill"] == "file-organizer"]
    with dataset_path("tau", "pairs.csv").open(encoding="utf-8") as fh:
        pairs = {r["pair_id"]: r for r in csv.DictReader(fh)}
    goal = pairs["files-duplicates:paraphrase:0"]
    assert goal["relevant"] == "1" and len(lessons) == 6
    assert all(pairs[f"files-duplicates:near_miss:{k}"]["relevant"] == "0" for k in range(3))

    skill = make_skill("files")  # datasets/skills/file-organizer holds capabilities: v1 learns nothing there
    with Store.open(":memory:") as store:
        ids = {
            r["lesson_id"]: learn_active(
                store, skill, "preference", {"body": r["body"], "trigger": r["trigger"]}, "replies"
            ).id
            for r in lessons
        }
        authored = budget.count_many([skill.body])[0]
        budget.enforce(store, [skill], ceiling=authored + 40, reserve=0)
        assert store.retrieval_only(skill.name) >= set(ids.values())  # every lesson demoted by the budget
        body = {r["lesson_id"]: r["body"] for r in lessons}

        eff = resolve(skill, store, goal=goal["goal"], embedder=emb)
        back = {n.delta_id for n in eff.notes_of("retrieved")}
        assert back == {ids[goal["lesson_id"]]} and body[goal["lesson_id"]] in eff.text
        assert all(body[other] not in eff.text for other in ids if other != goal["lesson_id"])
        gate, _ = retrieval.gate_for(emb.id)
        assert str(gate) in eff.notes_of("retrieved")[0].detail

        for k in range(3):  # same words, another intent: never the lesson they mimic (one lets in another
            near = pairs[f"files-duplicates:near_miss:{k}"]  # lesson at 0.468: a false injection 04 counts)
            missed = resolve(skill, store, goal=near["goal"], embedder=emb)
            assert ids[goal["lesson_id"]] not in {n.delta_id for n in missed.notes_of("retrieved")}
            assert not missed.notes_of("retrieval_dark")
        dark = resolve(skill, store, goal=goal["goal"], embedder=emb, tau=0.82)  # the old default
        assert not dark.notes_of("retrieved")
