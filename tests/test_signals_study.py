"""Study 12 (overlay_kit.studies.signals): which outcome signal makes promotion and retirement right."""

from dataclasses import replace

import numpy as np
import pytest
from overlay_support import rule_copy

from overlay_kit import evidence
from overlay_kit.defaults import SHIPPED
from overlay_kit.studies import rulefile, signals
from overlay_kit.studies.signals import Assumptions, SignalStudyError

SMALL = {"world": {"users": 4, "sessions": 40}, "followup": 25, "seeds": 1, "scenarios": ["base"], "resamples": 200}


def write_rule(tmp_path, **params):
    return rule_copy(signals.RULE, tmp_path, **params)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    rule = write_rule(tmp_path_factory.mktemp("rule"), **SMALL)
    return signals.run(rule=rule, n_jobs=1, progress=False, p_misread=0.3, engagement=1.25)


def test_the_product_refuses_tool_ok_and_its_set_is_the_counterfactual(study):
    df = study.lessons
    assert df.refused.all()
    tool = df[(df.set == "tool_ok") & (df.arm == "shipped")]
    assert (tool.decision == "promoted").any()  # counted as the old code did, it promotes


def test_negative_only_signals_never_promote_and_positive_only_never_retire(study):
    df = study.lessons
    negative = df[df.set.isin(["correction", "undo", "thumbs_down"])]
    assert not (negative.decision == "promoted").any()
    assert not (df[df.set == "accepted"].decision == "retired").any()
    assert (negative.decision == "retired").any()  # in the studied arm, enough corrections retire


def test_what_ships_never_retires_and_every_decision_clears_min_samples(study):
    df = study.lessons
    if SHIPPED.retire_below is None:
        assert not (df[df.arm == "shipped"].decision == "retired").any()
    decided = df[df.decision != "held"]
    assert len(decided) and (decided.samples >= SHIPPED.min_samples).all()
    assert (decided.sessions <= SMALL["followup"]).all() and decided.sessions.ge(1).all()


def test_sets_are_paired_on_the_same_lessons(study):
    df = study.lessons
    per_set = df.groupby(["arm", "set"]).apply(lambda g: tuple(zip(g.seed, g.user, g.lesson, g.good)))
    assert per_set.nunique() == 1


def test_a_run_is_a_pure_function_of_its_arguments(study):
    again = signals.run(rule=study.rule, n_jobs=1, progress=False, p_misread=0.3, engagement=1.25)
    assert again.lessons.equals(study.lessons)


def test_table_and_finding_read_the_rule(study):
    assert study.finding().startswith(study.rule.stamp())
    t = study.table()
    assert list(t.index.names) == ["scenario", "signals counted"] and len(t) == len(
        signals._sets(study.rule.param("sets"))
    )
    assert set(study.verdicts.promotion) <= {"right", "wrong", "undecided"}


def test_a_changed_rule_changes_the_verdict(study, tmp_path):
    lax = replace(study, rule=write_rule(tmp_path, **SMALL, precision_target=0.0, recall_target=0.0))
    strict = replace(study, rule=write_rule(tmp_path, **SMALL, precision_target=1.0, recall_target=1.0))
    promoting = [s for s in lax.overall.index if (study.lessons[study.lessons.set == s].decision == "promoted").any()]
    assert promoting and all(lax.overall.loc[s, "promotion"] == "right" for s in promoting)
    assert all(strict.overall.loc[s, "promotion"] != "right" for s in promoting)


def test_nothing_promoted_is_wrong_even_when_recall_could_be_anything(study):
    row = study.metrics[(study.metrics.set == "correction") & (study.metrics.arm == "shipped")].iloc[0]
    assert row.promoted == 0 and study._verdict(row, True) == "wrong"


def test_recommendation_changes_only_when_a_set_beats_what_ships(study, tmp_path):
    rec = study.recommendation
    assert rec["count"] in signals._sets(study.rule.param("sets"))
    if not rec["change_signals"]:
        assert rec["count"] == study.rule.param("shipped_set")


def test_reactions_scale_with_engagement_and_never_exceed_one():
    kinds, p = Assumptions(engagement=2.0, p_correct=0.85).reactions(False)
    assert kinds == ("correction", "undo", "thumbs_down") and p.sum() == pytest.approx(1.0)
    _, half = Assumptions(engagement=0.5).reactions(True)
    _, full = Assumptions().reactions(True)
    assert np.allclose(half * 2, full)


def test_judging_an_interval_against_a_target():
    assert signals._judge(0.92, 0.99, 0.9) == "meets"
    assert signals._judge(0.5, 0.89, 0.9) == "fails"
    assert signals._judge(0.85, 0.95, 0.9) == "undecided"
    assert signals._combine(["right", "undecided"]) == "undecided"
    assert signals._combine(["right", "wrong", "undecided"]) == "wrong"
    assert signals._combine(["right", "right"]) == "right"


def test_the_shipped_set_is_what_the_product_counts():
    assert signals.product_kinds() == {"accepted", "thumbs_up", "correction", "undo", "thumbs_down"}
    assert all(signals.LEDGER[k][0] in evidence.SIGNALS for k in signals.product_kinds())
    rule = rulefile.load(signals.RULE)
    assert set(rule.param("sets")[rule.param("shipped_set")]) == signals.product_kinds()


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: Assumptions(p_slip=1.5), "p_slip"),
        (lambda: Assumptions(engagement="often"), "engagement"),
        (lambda: Assumptions.scenario("p_slip=middle"), "scenarios"),
        (lambda: Assumptions.scenario("nonsense=low"), "scenarios"),
        (lambda: signals.run(rule=rulefile.load(signals.RULE), mood=1.0), "mood"),
        (lambda: signals._sets({"x": ["thumbs_sideways"]}), "sets"),
        (lambda: signals._sets({"x": ["tool_ok", "accepted"]}), "sets"),
        (lambda: signals._sets([]), "sets"),
    ],
)
def test_bad_input_names_its_field(call, field):
    with pytest.raises(SignalStudyError) as e:
        call()
    assert e.value.field == field


def test_a_rule_that_misnames_what_ships_or_retire_below_is_refused(tmp_path):
    with pytest.raises(SignalStudyError) as e:
        signals.run(rule=write_rule(tmp_path, shipped_set="accepted"))
    assert e.value.field == "params.shipped_set"
    with pytest.raises(SignalStudyError) as e:
        signals.run(rule=write_rule(tmp_path, retire_below=0.99))
    assert e.value.field == "params.retire_below"
    with pytest.raises(SignalStudyError) as e:
        signals.run(rule=write_rule(tmp_path, **SMALL), scenarios=["p_slip=high"])
    assert e.value.field == "scenarios"
    with pytest.raises(SignalStudyError) as e:
        signals.simulate(
            0,
            Assumptions(),
            sets={"a": ("accepted",)},
            arms={"shipped": None},
            users=2,
            sessions=10,
            followup=10,
            turns=1,
        )
    assert e.value.field == "followup"
