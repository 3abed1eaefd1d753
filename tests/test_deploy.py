"""overlay_kit.studies.deploy: the deployment simulator is seeded, follows its effective skill, and uses the real gates."""

import json

import numpy as np
import pandas as pd
import pytest

from overlay_kit import bundled, retrieval
from overlay_kit.retrieval import Embedder
from overlay_kit.studies import deploy

SMALL = dict(n_sessions=24, turns=3, n_situations=5, eval_turns=2)


@pytest.fixture(scope="module")
def default_run():
    return deploy.run(seed=3, **SMALL)


def test_settings_are_validated_before_any_work():
    with pytest.raises(ValueError, match="p_obey"):
        deploy.run(p_obey=1.5)
    with pytest.raises(TypeError, match="unknown deployment setting.*obedience"):
        deploy.run(obedience=0.9)
    with pytest.raises(ValueError, match="unknown rebase policy"):
        deploy.Settings(rebase_policy="magic")
    with pytest.raises(ValueError, match="tier_mix"):
        deploy.Settings(tier_mix=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="retire_below"):
        deploy.Settings(threshold=0.6, retire_below=0.7)


def test_a_run_is_a_function_of_its_settings(default_run):
    again = deploy.run(seed=3, **SMALL)
    for name in ("turns", "sessions", "lessons", "evals"):
        pd.testing.assert_frame_equal(getattr(default_run, name), getattr(again, name))
    pd.testing.assert_frame_equal(default_run.tables["deltas"], again.tables["deltas"])
    other = deploy.run(seed=4, **SMALL)
    assert not default_run.turns.equals(other.turns)


def test_the_agent_learns_and_follows_what_the_gates_let_through(default_run):
    d = default_run
    assert (d.turns["signal"] == "correction").any()
    corrections = int((d.turns["signal"] == "correction").sum())
    assert len(d.lessons) == corrections  # the trigger fires once per correction
    assert set(d.lessons["outcome"]) <= {"staged", "routed", "refused", "active", "noop"}  # noop: restated
    assert {"lesson", "fact"} & set(d.turns["how"])  # learned behaviour shows up in later sessions
    first_lesson = d.turns[d.turns["how"].isin(["lesson", "fact"])]["session"].min()
    assert first_lesson > d.lessons["session"].min()  # never within the session that taught it
    # counters moved exactly as often as user signals were attributed; tool calls never count
    assert len(d.tables["outcomes"]) == int(d.turns["attributed"].sum())
    assert set(d.tables["outcomes"]["signal"]) <= {"correction", "undo", "accepted", "rating"}


def test_off_equals_baseline_and_on_changes_the_prompt(default_run):
    e = default_run.evals
    off, base, on = (e[e["arm"] == a].reset_index(drop=True) for a in ("off", "baseline", "on"))
    assert (off["prompt_hash"] == base["prompt_hash"]).all() and (off["option"] == base["option"]).all()
    if default_run.tables["deltas"]["status"].eq("active").any():
        assert (on["prompt_hash"] != base["prompt_hash"]).any()
    assert on["correct"].mean() >= off["correct"].mean()


def test_auto_approve_decides_who_activates():
    auto = deploy.run(seed=5, auto_approve=True, review_every=0, **SMALL)
    gated = deploy.run(seed=5, auto_approve=False, review_every=0, **SMALL)
    who = lambda d: set(d.tables["audit"].query("to_status == 'active'")["who"])  # noqa: E731
    assert "gates" in who(auto)
    assert who(gated) <= {"evidence"} and "gates" not in who(gated)
    assert (gated.turns["how"] == "suggestion").any() and not (auto.turns["how"] == "suggestion").any()


def test_base_updates_go_through_rebase():
    orphan = deploy.run(seed=1, base_update_every=6, rebase_policy="orphan-all", **SMALL)
    section = deploy.run(seed=1, base_update_every=6, rebase_policy="section", **SMALL)
    assert orphan.sessions["version"].max() == 3
    r = orphan.rebases[orphan.rebases["body_changed"]]
    assert len(r) and (r["state"] == "orphaned").all() and r["surfaced"].all()
    s = section.rebases[section.rebases["body_changed"]]
    assert len(s) and (s["state"] != "orphaned").any()  # section identity keeps what did not move


def test_the_budget_holds_and_retrieval_brings_lessons_back():
    tight = deploy.run(seed=2, headroom=96, tau=0.6, n_sessions=30, turns=3, n_situations=5, eval_turns=2)
    s = tight.sessions
    assert (s["tokens"] <= s["ceiling"]).all() and s["atomic"].all()
    assert s["retrieved"].sum() > 0 and (tight.tables["deltas"]["resident"] == 0).any()


def test_goals_are_human_phrased_tau_paraphrases_not_the_trigger(default_run):
    topics = {t.trigger: t for t in deploy.topics()}
    assert len(topics) == 36 and all(len(t.goals) == 6 for t in topics.values())
    goals = {g for x in default_run.situations for g in x.topic.goals}
    triggers = {x.topic.trigger.casefold().rstrip(".") for x in default_run.situations}
    assert not any(t in g.casefold() for g in goals for t in triggers)  # no goal contains its trigger
    lessons = default_run.tables["deltas"]
    prefs = lessons[lessons["kind"] == "preference"]["payload"]
    assert all(json.loads(p)["trigger"] in topics for p in prefs)  # tier-3 lessons are indexed by τ triggers
    cos = deploy.goal_cosines()
    assert len(cos) == 216 and cos.median() < 0.5  # as notebook 04 sees them, not the old 0.81 of trigger copies


def test_static_embedder_is_the_bundled_mean_pooled_model():
    from safetensors.numpy import load_file

    emb = retrieval.static_embedder()
    assert isinstance(emb, Embedder)
    texts = ["Keep replies short", "keep the replies brief", "quarterly tax filing deadline"]
    v = emb.encode(texts)
    assert v.shape == (3, 256) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    weights = load_file(str(bundled.embedding_path()))["embedding.weight"].astype(np.float32)
    ids = bundled.llama_tokenizer().encode(texts[0], add_special_tokens=False).ids
    mean = weights[ids].mean(axis=0)
    assert float(v[0] @ (mean / np.linalg.norm(mean))) > 0.999
    assert v[0] @ v[1] > v[0] @ v[2]
    assert emb.encode([]).shape == (0, 256)


def test_the_agent_loads_its_tools_through_the_tool_loader_whose_registry_holds_the_ghost_tools():
    dep = deploy._World(deploy.settings(n_sessions=1, seed=0))
    assert set(dep.tools.registry) == set(dep.skill.tools) | set(deploy.GHOST_TOOLS)
    sel = dep.tools.select(None, (deploy.GHOST_TOOLS[0], *dep.skill.tools))  # what a hint past the gates would do
    assert deploy.GHOST_TOOLS[0] in sel.tools  # so `tools_ok` can come out False
