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


def test_any_sentence_transformers_path_works(emb, tmp_path):
    emb.model.save(str(tmp_path / "st"))
    other = load_embedder(str(tmp_path / "st"))
    assert other.id.startswith("sentence-transformers:") and other.id != emb.id
    a, b = emb.encode(["clean up my inbox"]), other.encode(["clean up my inbox"])
    assert np.allclose(a, b, atol=1e-5)


def _tier3(skill, n, rng):
    words = ["invoice", "vendor", "manager", "newsletter", "deadline", "meeting", "refund", "travel", "contract"]
    return [delta(skill, "preference", {"body": f"Lesson {i}", "trigger": " ".join(rng.sample(words, 3))},
                  "replies", id=f"delta_{i:04d}") for i in range(n)]


def test_retrieves_only_at_or_above_tau_best_first(emb):
    skill = make_skill()
    ds = [delta(skill, "preference", {"body": "cc finance", "trigger": "replying to a vendor about an invoice"},
                "replies", id="delta_a"),
          delta(skill, "preference", {"body": "be brief", "trigger": "replying to a vendor about an invoice date"},
                "replies", id="delta_b"),
          delta(skill, "preference", {"body": "no emoji", "trigger": "planning a team offsite"}, "replies",
                id="delta_c"),
          delta(skill, "parameter", {"key": "k", "value": 1}, "replies", id="delta_t2")]  # tier 2: never indexed
    index = TriggerIndex.build(emb, ds)
    assert index.ids == ("delta_a", "delta_b", "delta_c")
    hits = index.retrieve("replying to a vendor about an invoice", tau=0.82)
    assert [h[0] for h in hits][:1] == ["delta_a"] and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert all(c >= 0.82 for _, c in hits) and "delta_c" not in dict(hits)
    everything = index.retrieve("replying to a vendor about an invoice", tau=-1.0)
    assert len(everything) == 3 and [c for _, c in everything] == sorted((c for _, c in everything), reverse=True)
    assert index.retrieve("", tau=0.0) == []


def test_rebuild_is_deterministic_whatever_the_input_order(emb):
    skill = make_skill()
    ds = _tier3(skill, 60, random.Random(3))
    shuffled = ds[:]
    random.Random(11).shuffle(shuffled)
    a, b = TriggerIndex.build(emb, ds), TriggerIndex.build(emb, shuffled)
    assert a.ids == b.ids == tuple(sorted(d.id for d in ds))
    for goal in ("vendor invoice refund", "manager meeting deadline"):
        assert a.retrieve(goal, tau=0.5) == b.retrieve(goal, tau=0.5)


def test_from_store_embeds_new_triggers_once_and_keeps_the_embedder_identity(emb):
    skill = make_skill()
    with Store.open(":memory:") as store:
        d1 = learn_active(store, skill, "preference", {"body": "cc finance", "trigger": "vendor invoice reply"},
                          "replies")
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
        d1 = learn_active(store, skill, "preference", {"body": "cc finance", "trigger": "vendor invoice reply"},
                          "replies")
        TriggerIndex.from_store(store, emb)
        other = TextEmbedder(emb.model, "another/embedder")
        index = TriggerIndex.from_store(store, other)
        assert index.dark and "invalidated" in index.reason
        assert index.retrieve("vendor invoice reply", tau=0.0) == []
        assert store.embedder_id == "another/embedder" and store.embeddings(emb.id)[0] == []
        assert retrieval.reembed(store, other) == 1
        index = TriggerIndex.from_store(store, other)
        assert not index.dark and index.retrieve("vendor invoice reply", tau=0.82)[0][0] == d1.id


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
        d1 = learn_active(store, skill, "preference", {"body": "cc finance", "trigger": "vendor invoice reply"},
                          "replies")
        d2 = learn_active(store, other, "preference", {"body": "dates first", "trigger": "meeting notes summary"},
                          "replies")
        index = TriggerIndex.from_store(store, emb).attach(store)
        assert set(index.ids) == {d1.id, d2.id}
        store.forget(skill="mail")
        assert index.ids == (d2.id,)
        assert store.embeddings(emb.id)[0] == [d2.id]
        assert index.retrieve("vendor invoice reply", tau=0.0)[0][0] == d2.id
