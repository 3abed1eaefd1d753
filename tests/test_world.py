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


# ------------------------------------------------------------------------------------------ realistic scale


def test_the_tau_trace_is_what_it_was():  # WORLD_VERSION 1: the same arguments, the same trace (06 shows it)
    assert world.build(0).digest().startswith("17290890f141")
    assert "also_needs" not in world.build(0)._text() and "also_needs" not in world.build(0).frame()


@pytest.fixture(scope="module")
def big():
    return world.build(1, scale="realistic", users=3, sessions=240)


def test_a_realistic_world_is_seeded_and_reads_the_development_corpus_only(big):
    assert world.build(1, scale="realistic", users=3, sessions=240).digest() == big.digest()
    assert world.build(2, scale="realistic", users=3, sessions=240).digest() != big.digest()
    dev = {x.id for x in world.selection_corpus("dev").lessons}
    assert {x.id for x in big.lessons()} == dev and big.lessons() == world.lessons("realistic")
    assert {i for s in big.sessions for i in s.need_ids} <= dev
    assert big.scale == "realistic" and dict(big.params)["scale"] == "realistic"
    with pytest.raises(ValueError, match="scale"):
        world.build(0, scale="huge")


def test_realistic_sessions_keep_the_worlds_rules(big):
    by_id = {x.id: x for x in big.lessons()}
    corpus = world.selection_corpus("dev")
    none_goals = {g.goal for g in corpus.goals if not g.needs}
    held: dict = {}
    uses: dict = {}
    for s in big.sessions:
        have = held.setdefault((s.user, s.agent), set())
        assert all(by_id[i].domain == s.agent for i in s.need_ids)
        if s.category == "none":
            assert s.needs is None and not s.also_needs and s.goal in none_goals and not s.taught
        elif s.category == "multi":
            assert len(s.need_ids) >= 2 and set(s.need_ids) <= have and not s.taught
            assert any(g.goal == s.goal and g.needs == s.need_ids for g in corpus.goals)
        else:
            lesson, n = by_id[s.needs], uses.get((s.user, s.needs), 0)
            assert not s.also_needs and s.taught == (n == 0) == (s.category == "taught")
            expected = {0: {lesson.trigger}, 1: {lesson.restated}}.get(n, set(lesson.goals))
            assert s.goal in expected and s.category == {0: "taught", 1: "restated"}.get(n, "paraphrase")
            uses[(s.user, s.needs)] = n + 1
            have.add(s.needs)
    assert {s.category for s in big.sessions} == {"taught", "restated", "paraphrase", "multi", "none"}


def test_a_realistic_trace_replays_exactly_and_names_bad_fields(tmp_path, big):
    path = big.write(tmp_path / "w.jsonl")
    assert World.read(path) == big and World.read(path).digest() == big.digest()
    lines = path.read_text().splitlines()
    multi = next(n for n, line in enumerate(lines) if "also_needs" in line)
    assert all(("also_needs" in line) == (n == multi or '"multi"' in line) for n, line in enumerate(lines[1:], 1))
    for key, value, where in [("index", "x", "index"), ("needs", None, "also_needs"), ("also_needs", "a", "also")]:
        row = json.loads(lines[multi])
        row[key] = value
        path.write_text("\n".join([*lines[:multi], json.dumps(row), *lines[multi + 1 :]]), encoding="utf-8")
        with pytest.raises(WorldError, match=f":{multi + 1}: {where}"):
            World.read(path)


def test_the_docstring_states_the_default_realistic_worlds_figures():
    fig = world.figures(world.build(0, scale="realistic"))
    assert " ".join(world.describe(fig).split()) in " ".join(world.__doc__.split())
    assert fig["lessons_per_agent_min"] >= 20 and fig["lessons_per_agent_max"] == 300
    assert fig["needs_several"] > 0 and fig["needs_none"] > 0 and 0 < fig["no_shared_word"] < 1


def _shipped_oracle(w, emb):
    """The selection comeback the slow way: per session, `selection.select` over the agent's taught lessons."""
    from overlay_kit import selection
    from overlay_kit.defaults import SHIPPED

    by_id = {x.id: x for x in w.lessons()}
    sections = world.selection_corpus("dev").sections
    held, restated, got = {}, set(), []
    for s in w.sessions:
        have = held.setdefault((s.user, s.agent), [])
        if have and not s.taught:
            if len(have) <= SHIPPED.resident_max:
                chosen = set(have)
            else:
                lessons = [
                    selection.Candidate(
                        i,
                        (by_id[i].trigger, *([by_id[i].restated] if (s.user, i) in restated else [])),
                        by_id[i].body,
                        sections[s.agent][by_id[i].section],
                    )
                    for i in have
                ]
                chosen = {i for i, _ in selection.select([s.goal], lessons, emb, selection.shipped_rule())[0]}
            got.append((s.index, s.user, chosen))
        if s.taught:
            have.append(s.needs)
        if s.category == "restated":
            restated.add((s.user, s.needs))
    return got


def test_the_shipped_selection_comeback_agrees_with_select_per_session(big):
    emb = retrieval.static_embedder()
    cb = world.comeback(big, emb, mode="selection", split="all", n_boot=200)
    t = cb.table.set_index(["index", "user"])
    oracle = _shipped_oracle(big, emb)
    assert len(oracle) == len(t) and t.held.max() > 20
    for index, user, chosen in oracle:
        row = t.loc[(index, user)]
        needs = set(row.need_list)
        assert row.admitted == len(chosen) <= 20 and row.irrelevant == len(chosen - needs)
        assert row.came_back == (bool(needs) and needs <= chosen)
    per_need = cb.needs
    assert cb.needed == len(per_need) == sum(len(x) for x in cb.table.need_list)
    assert cb.recall.estimate == pytest.approx(per_need.found.mean())
    assert cb.irrelevant_share.estimate == pytest.approx(cb.table.irrelevant.sum() / cb.table.admitted.sum())
    assert cb.tokens_per_goal.estimate == pytest.approx(cb.table.tokens.mean())
    assert set(cb.by_category().needs) == {"multi", "paraphrase", "restated", "no shared word"}


def test_the_gate_comeback_at_scale_and_its_bounds(big):
    everything = world.comeback(big, gate=-1.0, split="all", n_boot=200)
    assert everything.recall.estimate == 1.0 and (everything.table.admitted == everything.table.held).all()
    nothing = world.comeback(big, gate=1.0, split="all", n_boot=200)
    assert nothing.recall.estimate == 0.0 and nothing.tokens_per_goal.estimate == 0.0
    shipped = world.comeback(big, n_boot=200)  # eval lessons, the calibrated gate
    assert shipped.split == "eval" and set(shipped.needs.need.map(world.split_of)) == {"eval"}
    assert 0 <= shipped.recall.low <= shipped.recall.estimate <= shipped.recall.high <= 1
    with pytest.raises(ValueError, match="realistic"):
        world.comeback(world.build(0, users=2, sessions=10), mode="selection")
