"""The studies' one world: a seeded, versioned, replayable trace, and the comeback number read from it."""

import json

import numpy as np
import pytest

from overlay_kit import retrieval
from overlay_kit.budget import count_tokens
from overlay_kit.studies import world
from overlay_kit.studies.world import World, WorldError


@pytest.fixture(scope="module")
def small():
    return world.build(3, users=4, sessions=30)


def test_a_world_is_a_pure_function_of_its_seed_and_version(small):
    assert world.build(3, users=4, sessions=30).digest() == small.digest()
    assert world.build(4, users=4, sessions=30).digest() != small.digest()
    assert small.version == world.WORLD_VERSION and len(small.sessions) == 120


def test_sessions_keep_the_worlds_rules(small):
    f = small.frame()
    by_id = {x.id: x for x in world.lessons()}
    needing = f[f.needs.notna()]
    assert set(needing.category) == {"paraphrase"} and set(f[f.needs.isna()].category) <= {*world.BENIGN, *world.STRESS}
    assert all(by_id[n].domain == a for n, a in zip(needing.needs, needing.agent))  # a need is its agent's
    first = needing.groupby(["user", "needs"]).index.min()
    taught = needing[needing.taught].set_index(["user", "needs"]).index
    assert sorted(taught) == sorted(first.index) and all(
        needing[needing.taught].set_index(["user", "needs"])["index"].loc[list(first.index)] == first.values
    )
    assert (f.base_version == f["index"] // 20).all()
    assert f.groupby("user").agent.nunique().between(1, 3).all()


def test_a_trace_replays_exactly(tmp_path, small):
    path = small.write(tmp_path / "w.jsonl")
    back = World.read(path)
    assert back == small and back.digest() == small.digest()


@pytest.mark.parametrize(
    "edit, where",
    [
        (lambda lines: lines[:1] + ["{not json"] + lines[2:], ":2: not JSON"),
        (lambda lines: [json.dumps({"version": 99, "seed": 0, "params": {}})] + lines[1:], ":1: version: 99"),
        (lambda lines: lines[:2] + [json.dumps({"user": "u"})] + lines[3:], ":3: a session needs the fields"),
        (lambda lines: [], "empty"),
    ],
)
def test_a_bad_trace_is_refused_naming_its_line(tmp_path, small, edit, where):
    path = small.write(tmp_path / "w.jsonl")
    path.write_text("\n".join(edit(path.read_text().splitlines())), encoding="utf-8")
    with pytest.raises(WorldError, match=where):
        World.read(path)


def test_bad_build_arguments_are_refused():
    with pytest.raises(ValueError, match="p_need"):
        world.build(0, p_need=1.5)
    with pytest.raises(ValueError, match="at least 1"):
        world.build(0, users=0)


def _oracle(w, emb, gate, split):
    """The comeback recall the slow way: per session, a trigger index of the user's taught lessons."""
    by_id = {x.id: x for x in world.lessons()}
    taught, hits, needs = {}, 0, 0
    for s in w.sessions:
        have = taught.setdefault(s.user, [])
        if have and not s.taught and s.needs and (split == "all" or by_id[s.needs].split == split):
            index = retrieval.TriggerIndex(emb, have, emb.encode([by_id[i].trigger for i in have]))
            got = [i for i, _ in index.retrieve(s.goal, gate)]
            hits, needs = hits + (s.needs in got), needs + 1
        if s.taught:
            have.append(s.needs)
    return hits, needs


@pytest.mark.parametrize(
    "gate",
    [retrieval.Gate("top-k", 0.48, 1), retrieval.Gate.absolute(0.3), retrieval.Gate("margin", 0.2, 1, 0.05)],
    ids=str,
)
def test_comeback_agrees_with_a_trigger_index_per_session(small, gate):
    emb = retrieval.static_embedder()
    got = world.comeback(small, emb, gate, split="all", n_boot=200)
    hits, needs = _oracle(small, emb, gate, "all")
    assert got.needed == needs and got.recall.estimate == pytest.approx(hits / needs)


def test_comeback_bounds_and_defaults(small):
    everything = world.comeback(small, gate=-1.0, split="all", n_boot=200)
    assert everything.recall.estimate == 1.0 and everything.wrong_tokens_benign.estimate > 0
    nothing = world.comeback(small, gate=1.0, split="all", n_boot=200)
    assert nothing.recall.estimate == 0.0 and nothing.wrong_tokens_benign.estimate == 0.0
    shipped = world.comeback(small, n_boot=200)  # the bundled embedder's calibrated gate
    assert shipped.gate == str(retrieval.gate_for(retrieval.StaticEmbedder.id)[0])
    assert 0 <= shipped.recall.low <= shipped.recall.estimate <= shipped.recall.high <= 1
    assert (
        shipped.recall.n
        == shipped.table[shipped.table.lesson.notna()]
        .pipe(lambda t: t[t.lesson.map({x.id: x.split for x in world.lessons()}) == "test"])
        .lesson.nunique()
    )
    assert np.isfinite(shipped.wrong_tokens_stress.estimate)


def test_learned_load_is_each_users_taught_lessons_all_resident():
    w = world.build(3, users=5, sessions=40)
    load = world.learned_load(w).set_index("user")
    body = {x.id: x.body for x in world.lessons()}
    for user, sessions in w.frame().groupby("user"):
        taught = list(sessions[sessions.taught].needs)
        assert load.loc[user, "lessons"] == len(taught) == len(set(taught))
        assert load.loc[user, "learned_tokens"] == sum(count_tokens(body[i]) for i in taught)
