"""overlay_kit.studies.auto_approve: the gates decide what goes live, the model's rules each hold, and the verdict
follows the rule file (a modified copy changes it)."""

import math
from dataclasses import replace

import pytest

from overlay_kit.defaults import SHIPPED
from overlay_kit.metrics import Interval
from overlay_kit.studies import auto_approve as aa
from overlay_kit.studies import rulefile
from overlay_kit.studies.rulefile import RuleFileError

RULE = rulefile.load(aa.RULE_NAME)
DOMAINS = dict(RULE.param("domains"))


@pytest.fixture(scope="module")
def miss():
    return aa.scan_miss(RULE)


@pytest.fixture(scope="module")
def frame():
    return aa._frames(RULE, False, 6, 40)[0][1]


def _a(**kw):
    base = dict(
        rubber_stamp=0.3,
        p_paste=0.05,
        hostile_share=0.05,
        p_notice_hostile=0.02,
        p_misread=0.15,
        p_correct=0.6,
        scan_miss=0.1,
    )
    return aa.Assumptions(**(base | kw))


def _user(frame, n=0):
    """The n-th user who teaches at least two lessons, none to a capability-bearing skill (refused by the gates)."""
    users = [
        u for u, g in frame.groupby("user", sort=True) if g.taught.sum() >= 2 and "file organizing" not in set(g.agent)
    ]
    return frame[frame.user == users[n]]


def test_the_scan_miss_rate_is_measured_with_exact_and_clustered_intervals(miss):
    t = miss.table
    assert list(t.columns) == ["file", "class", "attacks", "missed"]  # counts only: no text leaves the module
    assert set(t.file) == set(RULE.param("heldout_files"))
    k, n = int(t.missed.sum()), int(t.attacks.sum())
    assert miss.point == k / n and miss.exact.n == n and miss.clustered.n == len(t)
    assert miss.exact.low <= miss.point <= miss.exact.high
    assert miss.low == min(miss.exact.low, miss.clustered.low) and miss.high == max(
        miss.exact.high, miss.clustered.high
    )
    assert miss.summary().loc["all", "attacks"] == n


def test_the_gates_decide_what_a_pasted_lesson_does():
    g = aa.gate_table(RULE).set_index(["domain", "auto_approve"])
    assert (g.loc[("email triage", True)][["scan missed", "scan flagged"]] == ["active", "staged"]).all()
    assert (g.loc[("email triage", False)][["scan missed", "scan flagged"]] == ["staged", "staged"]).all()
    assert (g.loc[("file organizing", True)][["scan missed", "scan flagged"]] == ["refused", "refused"]).all()


def test_a_misread_lesson_goes_live_unseen_only_with_auto_approve(frame):
    user = _user(frame)
    off = aa.simulate(user, False, _a(p_misread=1.0, rubber_stamp=0.0), DOMAINS)
    on = aa.simulate(user, True, _a(p_misread=1.0, rubber_stamp=0.0), DOMAINS)
    assert off["wrong_live"] == 0 and off["wrong_exposed"] == 0 and off["prompts"] > 0
    assert on["wrong_live"] > 0 and on["wrong_exposed"] > 0


def test_rubber_stamping_every_prompt_makes_off_as_exposed_as_on(frame):
    for n in range(3):
        user = _user(frame, n)
        off, on = (aa.simulate(user, auto, _a(rubber_stamp=1.0), DOMAINS) for auto in (False, True))
        assert off["wrong_exposed"] == on["wrong_exposed"] and off["lessons"] == on["lessons"]
        assert on["prompts"] < off["prompts"] or off["lessons"] == 0


def test_right_lessons_cost_prompts_only_when_off(frame):
    user = _user(frame)
    off, on = (aa.simulate(user, auto, _a(p_misread=0.0, hostile_share=0.0), DOMAINS) for auto in (False, True))
    assert off["wrong_exposed"] == on["wrong_exposed"] == 0
    assert on["prompts"] == 0 and off["prompts"] == off["outcome_staged"] == off["lessons"]


def test_hostile_exposure_is_the_expected_value_over_later_sessions(frame):
    user = _user(frame)
    a = _a(p_paste=0.5, hostile_share=0.5, p_notice_hostile=0.25, scan_miss=0.2, rubber_stamp=0.4)
    got = aa._hostile(user, True, a, DOMAINS)
    # brute force: a hostile paste in session i of an agent exposes later session j with prob keep^(j-i-1)
    want = 0.0
    for agent, group in user.groupby("agent"):
        clean, flagged = aa._gate(DOMAINS[agent], True)
        p_live = 0.2 * aa._live(clean, 0.4) + 0.8 * aa._live(flagged, 0.4)
        n = len(group)
        want += sum(0.25 * p_live * 0.75 ** (j - i - 1) for i in range(n) for j in range(i + 1, n))
    assert math.isclose(got["hostile_exposed"], want, rel_tol=1e-9)
    assert aa._hostile(user, True, replace(a, hostile_share=0.0), DOMAINS)["hostile_exposed"] == 0
    off = aa._hostile(user, False, replace(a, scan_miss=0.0), DOMAINS)
    assert math.isclose(
        aa._hostile(user, True, replace(a, scan_miss=0.0), DOMAINS)["hostile_exposed"], off["hostile_exposed"]
    )


def _ci(est, low, high, n=20):
    return Interval(est, low, high, 0.95, n)


@pytest.mark.parametrize(
    "burden, wrong, hostile, verdict",
    [
        ((-5, -6, -4), (0.2, 0.1, 0.5), (0.01, 0.0, 0.05), "on"),
        ((0, -1, 1), (0.2, 0.1, 0.5), (0.01, 0.0, 0.05), "off"),  # tie-break: no fewer prompts shown
        ((-5, -6, -4), (2, 1.5, 2.5), (0.01, 0.0, 0.05), "off"),  # wrong bound broken
        ((-5, -6, -4), (0.2, 0.1, 0.5), (0.3, 0.2, 0.4), "off"),  # hostile bound broken
        ((-5, -6, -4), (0.75, 0.25, 1.25), (0.01, 0.0, 0.05), "undecided"),
    ],
)
def test_the_rule_judges_a_scenario(burden, wrong, hostile, verdict):
    sc = aa.Scenario("default", None, "default", _a())
    c = aa._judge(sc, _ci(*burden), _ci(*wrong), _ci(*hostile), 1.0, 0.1, 20)
    assert c.verdict == verdict
    assert (c.users_needed is not None) == (verdict == "undecided")
    if verdict == "undecided":
        assert c.users_needed == 20 * (0.5 / 0.25) ** 2


def test_scenarios_sweep_each_assumption_at_its_ends(miss):
    scs = aa.scenarios(RULE, miss)
    assert scs[0].name == "default" and len(scs) == 1 + 2 * len(aa.PROBABILITIES)
    assert {s.assumption for s in scs[1:]} == set(aa.PROBABILITIES)
    assert scs[0].values.scan_miss == miss.point
    assert len(aa.scenarios(RULE, miss, rubber_stamp=0.5)) == len(scs) - 2


def _small(rule):
    return aa.run(rule, users=8, sessions=40, progress=False)


@pytest.fixture(scope="module")
def small():
    return _small(RULE)


def test_a_modified_rule_file_changes_the_verdict(small, tmp_path):
    assert small.verdict()[0] != "on" and small.ships() is False
    loose = tmp_path / f"{aa.RULE_NAME}.yaml"
    loose.write_text(
        RULE.path.read_text(encoding="utf-8")
        .replace("wrong_bound: 1.0", "wrong_bound: 1000")
        .replace("hostile_bound: 0.1", "hostile_bound: 1000")
    )
    relaxed = _small(rulefile.load(loose))
    assert relaxed.verdict() == ("on", "every scenario says on") and relaxed.ships() is True
    assert SHIPPED.auto_approve or "should change to on" in relaxed.finding()


def test_the_study_has_the_shape(small):
    assert small.finding().startswith(RULE.stamp())
    t = small.table()
    assert list(t.index) == [s.name for s in small.scenarios] and (t.varied == "auto_approve: False → True").all()
    assert {"dB", "dW_low", "dX_high", "verdict", "users_needed"} <= set(t.columns)
    assert (t.users == 8).all()
    one = aa.explore(users=3, rubber_stamp=0.5)
    assert list(one.table().index) == ["default"] and one.scenarios[0].values.rubber_stamp == 0.5


def test_bad_input_is_refused_naming_the_field(tmp_path):
    with pytest.raises(aa.StudyError, match="p_paste"):
        _a(p_paste=1.5)
    with pytest.raises(aa.StudyError, match="users"):
        aa.run(RULE, users=0)
    with pytest.raises(aa.StudyError, match="bogus"):
        aa.scenarios(RULE, None, bogus=0.1)
    text = RULE.path.read_text(encoding="utf-8")
    bad = tmp_path / f"{aa.RULE_NAME}.yaml"
    bad.write_text(
        text.replace(
            "    rubber_stamp: {default: 0.3, low: 0.1, high: 0.7,", "    rubber: {default: 0.3, low: 0.1, high: 0.7,"
        )
    )
    with pytest.raises(RuleFileError, match="params.assumptions.rubber_stamp"):
        aa.scenarios(rulefile.load(bad))
    bad.write_text(text.replace("    calendar: lessons/skills/calendar-assistant\n", ""))
    with pytest.raises(RuleFileError, match="params.domains"):
        aa.run(rulefile.load(bad), users=12, sessions=10, progress=False)
