"""Notebook 14's study: `decay.run(rule)` → `.table()`, `.judgements()`, `.finding()` from the rule file
datasets/rules/14_decay.yaml, fixed before the data; `simulate` held equal to the product path (`replay`)."""

from __future__ import annotations

import numpy as np
import pytest
from overlay_support import rule_copy

from overlay_kit.studies import decay, world
from overlay_kit.studies.rulefile import RuleFileError

SMALL = {"small": {"sessions": 60, "users": 10, "days_between_sessions": [1.0, 3.0]}}


def _rule(tmp_path, **params):
    return rule_copy(decay.RULE_NAME, tmp_path, **params)


def _one(need_at, n=60, *, obsolete_at=None, rare=True, draw=0.99):
    """One user, one lesson needed at the given sessions (every session runs in its agent)."""
    need = np.zeros((1, n), bool)
    need[0, list(need_at)] = True
    return decay.Timelines(
        ("u",),
        np.array([0]),
        ("l",),
        ("a",),
        np.array([rare]),
        np.ones((1, n), bool),
        need,
        np.array([n if obsolete_at is None else obsolete_at]),
        np.full((1, n), draw),
    )


RULES = (
    decay.DecayRule("none"),
    decay.DecayRule("demote", 30),
    decay.DecayRule("restore", 30),
    decay.DecayRule("archive", 30),
)


def test_each_rule_does_what_it_says_to_an_idle_lesson():
    # taught at 0, needed again at 40 and 41 (idle 40 days > 30 at session 40), never comes back (draw 0.99)
    c = decay.simulate(_one([0, 40, 41]), RULES, days_between=1.0, comeback=0.5, trace=True)
    s = c.states[:, 0]
    assert (s[0, 1:] == decay.RESIDENT).all()  # none: age never moves it
    # decay_plan's test is now - last use > idle: day 31 - 0 > 30, so it is demoted at the start of session 31
    assert s[1, 30] == decay.RESIDENT and s[1, 31] == decay.RETRIEVAL and (s[1, 31:] == decay.RETRIEVAL).all()
    assert s[2, 41] == decay.RESIDENT  # restore: the missed need at 40 makes it resident again
    assert s[3, 31] == decay.ARCHIVED and s[3, 41] == decay.RESIDENT  # archive: re-taught at the miss
    assert c.rare_needs[:, 0].tolist() == [2, 2, 2, 2]
    assert c.rare_hits[:, 0].tolist() == [2, 0, 1, 1]  # demote: the correction is a no-op, 41 misses too
    assert c.rare_lost[:, 0].tolist() == [0, 0, 0, 1]


def test_a_retrieval_only_lesson_comes_back_by_its_draw_and_stays_retrieval_only():
    c = decay.simulate(_one([0, 40, 65], n=80), RULES[:2], days_between=1.0, comeback=0.5)
    assert c.rare_hits[1, 0] == 0
    back = decay.simulate(_one([0, 40, 65], n=80, draw=0.1), RULES[:2], days_between=1.0, comeback=0.5, trace=True)
    assert back.rare_hits[1, 0] == 2 and back.rare_needs[1, 0] == 2
    assert (back.states[1, 0, 31:] == decay.RETRIEVAL).all()  # nothing makes it resident again


def test_precision_counts_obsolete_resident_lessons_and_spacing_is_days():
    tl = _one([0], n=40, obsolete_at=10, rare=False)
    c = decay.simulate(tl, RULES[:2], days_between=1.0, comeback=0.0)
    # none: resident at sessions 1..39 (taught at 0), still needed only before session 10
    assert c.resident[0, 0] == 39 and c.needed[0, 0] == 9
    assert c.resident[1, 0] == 30  # demote-30: sessions 1..30, then retrieval-only
    wide = decay.simulate(tl, RULES[:2], days_between=7.0, comeback=0.0)
    assert wide.resident[1, 0] == 4  # a session a week: idle 35 > 30 at session 5


def test_the_fast_simulation_equals_the_product_path():
    w = world.build(3, users=2, sessions=36)
    tl = decay.timelines(w, share_obsolete=0.5, rare_per_agent=2, rare_need_rate=0.15)
    rules = (*RULES, decay.DecayRule("demote", 7), decay.DecayRule("archive", 7), decay.DecayRule("restore", 7))
    c = decay.simulate(tl, rules, days_between=2.0, comeback=0.4, trace=True)
    for user in range(len(tl.users)):
        mine = np.flatnonzero(tl.user == user)
        assert np.array_equal(decay.replay(tl, user, rules, days_between=2.0, comeback=0.4), c.states[:, mine])
    assert (c.states == decay.RETRIEVAL).any() and (c.states == decay.ARCHIVED).any()  # the test exercised both


def test_assumptions_are_seeded_and_nest_across_the_swept_values():
    w = world.build(0, users=6, sessions=80)
    lo = decay.timelines(w, share_obsolete=0.1, rare_per_agent=2, rare_need_rate=0.02)
    hi = decay.timelines(w, share_obsolete=0.5, rare_per_agent=2, rare_need_rate=0.1)
    n = lo.sessions
    obs = lambda tl: {
        (u, x)
        for u, x, o, r in zip(tl.user, tl.lesson, tl.obsolete_at, tl.rare)  # noqa: E731
        if o < n and not r
    }
    assert obs(lo) <= obs(hi) and len(obs(hi)) > len(obs(lo))
    needs = lambda tl: {
        (u, x): set(np.flatnonzero(nd)) for u, x, nd, r in zip(tl.user, tl.lesson, tl.need, tl.rare) if r
    }  # noqa: E731
    a, b = needs(lo), needs(hi)
    assert set(a) <= set(b) and all(a[k] <= b[k] for k in a)
    again = decay.timelines(w, share_obsolete=0.1, rare_per_agent=2, rare_need_rate=0.02)
    assert np.array_equal(again.need, lo.need) and np.array_equal(again.draw, lo.draw)
    frame = w.frame()  # the world's lessons are taught where the trace teaches them
    for u, x, nd, r in zip(lo.user, lo.lesson, lo.need, lo.rare):
        if not r:
            row = frame[(frame.user == lo.users[u]) & frame.taught & (frame.needs == x)]
            assert int(row["index"].iloc[0]) == int(np.flatnonzero(nd)[0])


def test_the_verdict_comes_from_the_rule_file(tmp_path):
    strict = decay.run(_rule(tmp_path, profiles=SMALL, n_boot=200))
    assert strict.answer() == decay.NONE
    assert strict.verdict() == ("right" if decay.SHIPPED_RULE == decay.NONE else "change")
    assert "none**" in strict.finding() or "`none`" in strict.finding()
    assert strict.finding().startswith(strict.rule.stamp())
    assert set(strict.table().rule) == {r.name for r in strict.rules}
    # the same data under a rule that tolerates any harm and asks no gain: the shipped rule is the answer
    loose = decay.run(
        _rule(
            tmp_path,
            profiles=SMALL,
            n_boot=200,
            harm_margin=1.0,
            min_gain=-1.0,
            tie_margin=1.0,
            rules=[["none", None], ["demote", 30], ["archive", 30]],
        )
    )
    assert loose.answer() != decay.NONE  # a rule that demotes or archives wins once harm is free
    assert loose.verdict() == ("right" if loose.answer() == decay.SHIPPED_RULE else "change")


def test_explore_is_a_what_if_not_the_verdict():
    s = decay.explore(sessions=40, idle_days=10, share_obsolete=0.5, users=6)
    assert "What-if, not the verdict" in s.finding() and "would answer" in s.finding()
    assert list(s.table().rule) == ["none", "restore-10", "demote-10", "archive-10"]
    assert {"precision", "harm", "gain"} <= set(s.rows.columns)


def test_bad_input_names_the_field(tmp_path):
    for kwargs, field in (
        ({"family": "fade", "days": 3}, "family"),
        ({"family": "demote", "days": 0}, "days"),
        ({"family": "none", "days": 5}, "days"),
        ({"family": "archive", "days": True}, "days"),
    ):
        with pytest.raises(decay.DecayStudyError) as e:
            decay.DecayRule(**kwargs)
        assert e.value.field == field
    w = world.build(0, users=2, sessions=10)
    with pytest.raises(decay.DecayStudyError, match="share_obsolete"):
        decay.timelines(w, share_obsolete=1.5, rare_per_agent=1, rare_need_rate=0.1)
    with pytest.raises(decay.DecayStudyError, match="rare_per_agent"):
        decay.timelines(w, share_obsolete=0.1, rare_per_agent=-1, rare_need_rate=0.1)
    tl = _one([0, 3])
    with pytest.raises(decay.DecayStudyError, match="days_between"):
        decay.simulate(tl, RULES, days_between=0, comeback=0.1)
    with pytest.raises(decay.DecayStudyError, match="comeback"):
        decay.simulate(tl, RULES, days_between=1.0, comeback=2)
    with pytest.raises(decay.DecayStudyError, match="sessions"):
        decay.explore(sessions=0)
    with pytest.raises(RuleFileError, match="params.rules"):
        decay.run(_rule(tmp_path, rules=[["demote", 30]], profiles=SMALL))
    with pytest.raises(RuleFileError, match="params.rules"):
        decay.run(_rule(tmp_path, rules=[["none", None], ["fade", 3]]))
    with pytest.raises(RuleFileError, match="params.profiles.small"):
        decay.run(_rule(tmp_path, profiles={"small": {"sessions": 30}}))
