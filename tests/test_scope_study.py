"""Study 11 (overlay_kit.studies.scope): the scope a lesson is written with, shared by the user's agents or kept
by one; its rules on hand-made traces, the product path, the control trace and the rule file's say."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from overlay_kit.defaults import SHIPPED
from overlay_kit.studies import rulefile, scope
from overlay_kit.studies.scope import Point, ScopeError, UserTrace

LESSON = "email-decline-recruiter"  # an "email triage" lesson
SMALL = dict(users=16, sessions=30, transfer_share=0.4, co_load=0.5, split_share=0.3)


def _trace(*, contexts=(0.9, 0.9), transfer=0.0, load=0.0, need=0.0) -> UserTrace:
    """Two agents; the email agent teaches LESSON in session 0, the calendar agent runs sessions 1 and 2."""
    sessions = (("email triage", LESSON, True), ("calendar", None, False), ("calendar", None, False))
    return UserTrace(
        "u",
        ("email triage", "calendar"),
        sessions,
        {"email triage": 0.5, "calendar": 0.5},
        np.array(contexts),
        {LESSON: transfer},
        np.full((3, 2), load),
        np.full((3, 1), need),
        (LESSON,),
    )


POINT = Point(transfer_share=0.5, split_share=0.3, co_load=0.5)


@pytest.fixture(scope="module")
def small():
    return scope.run(**SMALL)


def test_each_scope_reaches_the_agents_it_names():
    work, home = scope.reader_scopes("mail", "work"), scope.reader_scopes("diary", "personal")
    assert scope.written_scope("user", "mail", "work") in work & home
    assert scope.written_scope("agent", "mail", "work") in work - home
    assert scope.written_scope("context", "mail", "work") in work - home
    assert scope.written_scope("context", "mail", "work") in scope.reader_scopes("notes", "work")
    with pytest.raises(ScopeError, match="arm"):
        scope.written_scope("team", "mail", "work")


def test_a_shared_lesson_spares_the_user_a_repeat_a_per_agent_one_costs_one():
    t = _trace()  # same context, transferable, loaded and needed in both calendar sessions
    user, agent, ctx = (scope.simulate(t, POINT, arm) for arm in ("user", "agent", "context"))
    assert (user.needs, user.met, user.leaky, user.misfit) == (2, 2, 0, 0)
    assert (agent.needs, agent.met, agent.leaky) == (2, 1, 0)  # the first need corrects the calendar agent again
    assert agent.written[-1] == (LESSON, "calendar", "agent:calendar")
    assert (ctx.needs, ctx.met) == (2, 2)


def test_a_lesson_crossing_work_and_personal_leaks_only_when_shared_by_the_user():
    t = _trace(contexts=(0.9, 0.0))  # the calendar agent is personal at any split_share > 0
    user, agent, ctx = (scope.simulate(t, POINT, arm) for arm in ("user", "agent", "context"))
    assert (user.leaky, user.needs) == (2, 0)  # never wanted across the line, shown in both calendar sessions
    assert agent.leaky == ctx.leaky == 0


def test_an_agent_specific_lesson_is_a_misfit_not_a_need_and_an_unloaded_skill_shows_nothing():
    specific = scope.simulate(_trace(transfer=0.9), POINT, "user")
    assert (specific.needs, specific.misfit, specific.leaky) == (0, 2, 0)
    unloaded = scope.simulate(_trace(load=0.9), POINT, "user")
    assert (unloaded.needs, unloaded.misfit, unloaded.leaky) == (0, 0, 0)


def test_shared_leakage_grows_with_co_load_on_the_same_draws(small):
    w = scope.world.build(0, users=12, sessions=30)
    for t in scope.traces(w):
        leaks = [scope.simulate(t, Point(0.4, 0.3, c), "user").leaky for c in (0.1, 0.5, 1.0)]
        assert leaks == sorted(leaks)


def test_a_point_refuses_what_is_not_a_share():
    assert Point(0.4, 0.3, 0.5).personal == pytest.approx((1 - (1 - 0.6) ** 0.5) / 2)
    q = Point(0.4, 0.3, 0.5).personal
    assert 2 * q * (1 - q) == pytest.approx(0.3)
    for kw, field in [
        (dict(transfer_share=1.2), "transfer_share"),
        (dict(co_load=-0.1), "co_load"),
        (dict(split_share=0.6), "split_share"),
        (dict(co_load=True), "co_load"),
    ]:
        with pytest.raises(ScopeError) as err:
            Point(**(dict(transfer_share=0.4, split_share=0.3, co_load=0.5) | kw))
        assert err.value.field == field


@pytest.mark.parametrize(
    "kw, field",
    [(dict(agents=4), "agents"), (dict(users=0), "users"), (dict(sessions=True), "sessions"), (dict(seed=-1), "seed")],
)
def test_run_refuses_bad_input_naming_the_field(kw, field):
    with pytest.raises(ScopeError) as err:
        scope.run(**kw)
    assert err.value.field == field


def test_the_product_path_applies_exactly_the_models_lessons():
    w = scope.world.build(3, users=10, sessions=30)
    users = [t for t in scope.traces(w) if t.kind == "shared"][:2]
    agree, total = scope.product_check(users, Point(0.7, 0.3, 1.0))
    assert total > 0 and agree == total


def test_the_study_shape_its_control_and_the_shipped_arm(small):
    rule = rulefile.load(scope.RULE_NAME)
    t = small.table()
    assert set(t.scope) == set(rule.param("arms")) and set(t.trace) == {"shared", "alone"}
    assert (t[t.scope == SHIPPED.scope].varied == "shipped").all()
    assert small.control() and small.check[0] == small.check[1] > 0
    agent = t[(t.scope == "agent")]
    assert (agent.leakage == 0).all()
    assert small.finding().startswith(rule.stamp())
    assert small.verdict()[0] in ("user", "agent", "undecided")
    assert len(small.points()) == 1


def _copy(tmp_path: Path, **params) -> rulefile.RuleFile:
    text = rulefile.load(scope.RULE_NAME).path.read_text(encoding="utf-8")
    for name, value in params.items():
        old = next(line for line in text.splitlines() if line.startswith(f"  {name}:"))
        text = text.replace(old, f"  {name}: {value}")
    path = tmp_path / f"{scope.RULE_NAME}.yaml"
    path.write_text(text, encoding="utf-8")
    return rulefile.load(path)


def test_a_modified_rule_file_changes_the_verdict(tmp_path):
    kw = dict(SMALL, split_share=0.5, co_load=1.0)
    assert scope.run(**kw).verdict()[0] == "agent"  # half the pairs split, every skill loaded: it leaks
    assert scope.run(**kw, rule=_copy(tmp_path, leak_max=1.0)).verdict()[0] == "user"
    assert scope.run(**kw, rule=_copy(tmp_path, leak_max=1.0, min_gain=1.5)).verdict()[0] == "agent"  # tie
