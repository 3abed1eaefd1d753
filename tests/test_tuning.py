"""Notebook 06's study: `tuning.run(rule)` → `.table()`, `.answers()` and a `.finding()` from the rule file
datasets/rules/06_budget_tuning.yaml, fixed before the data."""

from __future__ import annotations

import csv
from dataclasses import replace

import numpy as np
import pytest
from overlay_support import rule_copy

from overlay_kit.defaults import SHIPPED
from overlay_kit.studies import rulefile, tuning, world


def _rule(tmp_path, **params):
    return rule_copy(tuning.RULE_NAME, tmp_path, **params)


@pytest.fixture(scope="module")
def study():
    return tuning.run()


def test_the_grid_is_the_rules_and_holds_what_ships():
    rule = rulefile.load(tuning.RULE_NAME)
    assert tuning.CEILINGS == tuple(rule.param("ceilings")) and SHIPPED.ceiling in tuning.CEILINGS


def test_corpora_come_from_the_world_trace_and_the_lessons_dataset(study):
    rule = study.rule
    w = world.build(rule.param("world_seed"))
    assert study.world_digest == w.digest() == study.comeback.world
    frame = w.frame()
    with tuning.LESSONS_CSV.open(encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["gold_tier"] == str(rule.param("lesson_tier"))]
    for a in study.agents:
        mine = frame[(frame.user == a.user) & (frame.agent == a.domain)]
        assert list(a.lessons) == list(mine[mine.taught].needs)  # how many lessons, and which: from the trace
        assert len(a.needs) == int((mine.needs.notna() & ~mine.taught).sum())
        domain = rule.param("domains")[a.domain]["lessons"]
        texts = {r["prose"].strip() for r in rows if domain == "all" or r["domain"] == domain}
        assert {d.text for d in a.deltas} <= texts  # every text is a lesson of the dataset, of the agent's domain
        assert all(
            d.tier == 3 and d.skill == a.skill.name and d.success_count == d.attempt_count == 0 for d in a.deltas
        )
    # capability-bearing skills take no deltas: their agents are counted apart, never measured
    assert set(study.left_out.skill) == {"file-organizer"}
    assert not any(a.skill.capability_bearing for a in study.agents)
    assert len(study.agents) + len(study.left_out) == frame.groupby(["user", "agent"]).ngroups
    # one row per (profile, needing session, ceiling), every needing session of every measured agent
    per = study.rows.groupby(["profile", "ceiling"]).size()
    assert (per == sum(len(a.needs) for a in study.agents)).all()


def test_residency_is_the_products_plan_at_the_session(study):
    a = study.heaviest()
    index, lesson = a.needs[-1]
    held = a.at(index)
    assert {d.id for d in held} == {d.id for d, t in zip(a.deltas, a.taught_at) if t < index}
    for profile in study.rule.param("profiles"):
        authored = sum(tuning.budget.count_many([s.body for s in tuning.loadout(a, profile, study.rule)]))
        for c in (min(tuning.CEILINGS), max(tuning.CEILINGS)):
            reserve = tuning.budget.Budget(None, [], c).reserve
            plan = tuning.budget.plan(authored, held, c, reserve=reserve, proposer=None)
            row = study.rows[
                (study.rows.profile == profile)
                & (study.rows.user == a.user)
                & (study.rows.agent == a.domain)
                & (study.rows["index"] == index)
                & (study.rows.ceiling == c)
            ].iloc[0]
            assert bool(row.resident) == (a.deltas[a.lessons.index(lesson)].id not in plan.demote)
            assert (row.authored, row.reserve) == (authored, reserve)


def test_the_share_counts_demoted_lessons_at_the_measured_comeback_rate(study):
    r = study.comeback.recall.estimate
    assert 0 <= r < 1
    s = study.summary
    # share = resident + r × demoted, per needing session
    assert np.allclose(s.share, s.resident + r * (1 - s.resident))
    assert ((s.share_low <= s.share + 1e-12) & (s.share <= s.share_high + 1e-12)).all()
    # more room never puts fewer needed lessons in front of the model
    assert (s.groupby("profile", sort=False).share.apply(lambda x: x.is_monotonic_increasing)).all()


def test_intervals_resample_users_not_sessions():
    # two users: one with 1 needing session (resident), one with 99 (demoted); nothing comes back (r = 0)
    resident, needs = np.array([1.0, 0.0]), np.array([1.0, 99.0])
    share, draws = tuning.share_draws(resident, needs, np.zeros(5), np.ones(5), n_boot=2000, seed=0)
    assert share == pytest.approx(0.01)
    # resampling users, a draw holds user 0 only ~1/4 of the time (share 1) and user 1 only ~1/4 (share 0)
    assert 0.15 < (draws == 1).mean() < 0.35 and 0.15 < (draws == 0).mean() < 0.35
    # a session-level bootstrap would never come near 1 (binomial sd of 0.01 over 100 sessions is 0.01)


def test_intervals_propagate_the_comeback_rates_own_uncertainty():
    resident, needs = np.zeros(3), np.full(3, 10.0)  # every lesson demoted: the share is r
    came_back, needed = np.array([0.0, 0.0, 3.0, 5.0]), np.full(4, 5.0)
    share, draws = tuning.share_draws(resident, needs, came_back, needed, n_boot=2000, seed=1)
    assert share == pytest.approx(8 / 20)
    assert draws.min() < share < draws.max()  # lessons resampled: r varies from draw to draw
    still, flat = tuning.share_draws(resident, needs, np.full(4, 2.0), needed, n_boot=200, seed=1)
    assert np.allclose(flat, still)  # every lesson alike: nothing to propagate, the users alone set the width


def test_the_answer_follows_the_rule_per_profile(study):
    margin = study.rule.param("margin")
    for a in study.answers():
        assert a.answer in study.eligible and a.best in study.eligible and a.answer <= a.best
        assert study.diffs[(a.profile, a.best, a.answer)].high <= margin
        smaller = [c for c in study.eligible if c < a.answer]
        assert all(study.diffs[(a.profile, a.best, c)].high > margin for c in smaller)
    assert study.recommended() == max(a.answer for a in study.answers())
    assert study.rule.sha256[:12] in study.rule.stamp()


def test_the_verdict_is_computed_from_the_rule_file(tmp_path, study):
    """A changed copy of the rule changes the answer and the verdict; the shipped value is judged by it."""
    assert study.verdict() == (
        "right"
        if study.recommended() == SHIPPED.ceiling
        else "larger than needed"
        if study.recommended() < SHIPPED.ceiling
        else "too small"
    )
    assert f"**{study.verdict()}**" in study.finding()
    assert f"a ceiling of {study.recommended():,} tokens" in study.finding()
    # only the world's own single-skill agents: the authored load is small, a small ceiling does
    light = tuning.run(_rule(tmp_path, profiles={"own skill": []}, n_boot=200))
    assert light.recommended() < SHIPPED.ceiling and light.verdict() == "larger than needed"
    assert "**larger than needed**" in light.finding() and f"set to {light.recommended():,}" in light.finding()
    # the same numbers judged against other shipped values
    rec = study.recommended()
    assert replace(study, default=rec).verdict() == "right"
    assert replace(study, default=max(tuning.CEILINGS)).verdict() == "larger than needed"
    if rec > min(tuning.CEILINGS):
        below = max(c for c in tuning.CEILINGS if c < rec)
        assert replace(study, default=below).verdict() == "too small"
        assert f"set to {rec:,}" in replace(study, default=below).finding()


def test_a_window_share_too_small_for_the_authored_load_is_reported(tmp_path):
    # the product keeps only a quarter of the window: an agent that loads the runbook cannot keep a lesson
    tight = tuning.run(_rule(tmp_path, window_share=0.25, profiles={"long runbook": ["failover-runbook"]}, n_boot=200))
    (a,) = tight.answers()
    assert max(tight.eligible) <= 0.25 * 32768
    assert a.over > 0 and a.window_binds is not None and a.window_binds > max(tight.eligible)
    assert "the window share binds" in tight.finding() and "authored text alone fills" in tight.finding()


# ------------------------------------------------------------------------------------------ realistic scale


@pytest.fixture(scope="module")
def realistic():
    return world.build(1, scale="realistic", users=2, sessions=200)


def test_realistic_agents_carry_the_corpus_lessons_on_their_own_sections(realistic):
    by_id = {x.id: x for x in realistic.lessons()}
    ags = tuning.realistic_agents(realistic)
    f = realistic.frame()
    assert sum(len(a.lessons) for a in ags) == int(f.taught.sum())
    for a in ags:
        assert {by_id[i].skill for i in a.lessons} <= {a.skill.name} and {by_id[i].domain for i in a.lessons} <= {
            a.domain
        }
        assert [d.payload["body"] for d in a.deltas] == [by_id[i].body for i in a.lessons]
        assert [d.anchor.section for d in a.deltas] == [by_id[i].section for i in a.lessons]
        assert all(i in a.lessons for _, i in a.needs) and list(a.taught_at) == sorted(a.taught_at)


def test_at_scale_is_the_selection_when_nothing_binds_and_the_gate_when_everything_is_demoted(realistic):
    reading = tuning.at_scale(realistic, [700, 10**6], split="all")
    t = reading.table().set_index("ceiling")
    selection = world.comeback(realistic, mode="selection", split="all", n_boot=100)
    gate = world.comeback(realistic, split="all", n_boot=100)
    assert t.loc[10**6, "needed in context"] == round(selection.recall.estimate, 3)
    assert t.loc[10**6, "learned tokens per goal"] == round(selection.tokens_per_goal.estimate, 1)
    assert t.loc[700, "needed in context"] == round(gate.recall.estimate, 3)
    assert t.loc[700, "resident (median)"] == 0 and t.loc[10**6, "resident (min)"] >= 1
    rows = reading.rows[reading.rows.ceiling == 10**6]
    assert (rows.resident == rows.held).all() and (rows.chosen <= 20).all()
    assert "selection on" in reading.answer() and "Below 10,000,000" not in reading.answer()
    evaluated = tuning.at_scale(realistic, [10**6]).table().iloc[0]  # the eval split by default
    assert evaluated["needed in context"] == round(world.comeback(realistic, mode="selection").recall.estimate, 3)
