"""Study 13 (deltas on a shadowed skill): the real precedence and keying it reads, the policies' rules, the root
model's invariants, and the decision rule read from its file (a modified copy changes the verdict)."""

from __future__ import annotations

import random

import pandas as pd
import pytest
from overlay_support import rule_copy

from overlay_kit.studies import rulefile, shadowing
from overlay_kit.studies.shadowing import Assumptions, ShadowingError, _applies, _Base

RULE = rulefile.load(shadowing.RULE_NAME)
REAL = dict(RULE.param("realistic"))


def _rule_copy(tmp_path, **params):
    return rule_copy(shadowing.RULE_NAME, tmp_path, **params)


def _totals(values, users=20, sessions=120):
    df = shadowing.simulate(Assumptions.of(values), users=users, sessions=sessions)
    return df.groupby("policy", sort=False)[
        ["lessons", "silent", "confirmed", "own_uses", "lost_uses", "prompts"]
    ].sum()


# ------------------------------------------------------------------------------ what the product does


def test_precedence_is_the_real_discovery_order():
    assert shadowing.winner(frozenset({"project", "user", "installed"})) == "project"
    assert shadowing.winner(frozenset({"user", "installed"})) == "user"
    assert shadowing.winner(frozenset({"installed"})) == "installed"
    with pytest.raises(ShadowingError, match="labels"):
        shadowing.winner(frozenset({"elsewhere"}))


def test_the_product_keys_by_name_and_root_directory_as_the_rule_says():
    """Probed on the real gates, store and resolver (v1's verdict, adopted); if the product's keying changes,
    the rule must follow."""
    assert shadowing.product_keying() == RULE.param("product_policy") == "name+path"


# ------------------------------------------------------------------------------------- the policies


USER = _Base("review", "user", "~/user/review", "user:review")
FORK_A = _Base("review", "project", "project1/review", "user:review")
OTHER_B = _Base("review", "project", "project2/review", "project2:review")


@pytest.mark.parametrize(
    "policy, lesson, served, applied",
    [
        ("name", USER, FORK_A, True),
        ("name", USER, OTHER_B, True),
        ("name+root", USER, FORK_A, False),
        ("name+root", USER, USER, True),
        ("name+root", FORK_A, OTHER_B, True),
        ("name+path", USER, FORK_A, False),
        ("name+path", USER, USER, True),
        ("name+path", FORK_A, OTHER_B, False),
    ],
)
def test_each_keying_applies_by_its_own_key(policy, lesson, served, applied):
    """name+root compares root labels: a lesson from project A's skill attaches to project B's same-named one."""
    a = Assumptions.of(REAL)
    assert _applies(policy, lesson, served, {}, a, random.Random(0), {"prompts": 0}) == (applied, False)


def test_a_renamed_skill_loses_its_lessons_under_every_keying():
    renamed = _Base("review-v2", "user", "~/user/review-v2", "user:review")
    a = Assumptions.of(REAL)
    for policy in shadowing.POLICIES:
        assert _applies(policy, USER, renamed, {}, a, random.Random(0), {"prompts": 0}) == (False, False)


def test_the_prompt_is_asked_once_per_pair_and_remembered():
    a = Assumptions.of({**REAL, "p_answer": 1.0})
    answers, counts, rng = {}, {"prompts": 0}, random.Random(0)
    assert _applies("name+path+prompt", USER, FORK_A, answers, a, rng, counts) == (True, True)
    assert _applies("name+path+prompt", USER, FORK_A, answers, a, rng, counts) == (True, True)
    assert _applies("name+path+prompt", USER, OTHER_B, answers, a, rng, counts) == (False, False)
    assert _applies("name+path+prompt", USER, USER, answers, a, rng, counts) == (True, False)
    assert counts["prompts"] == 2
    wrong = Assumptions.of({**REAL, "p_answer": 0.0})
    assert _applies("name+path+prompt", USER, OTHER_B, {}, wrong, rng, {"prompts": 0}) == (True, True)


# --------------------------------------------------------------------------------------- the model


def test_without_renames_following_the_name_loses_nothing():
    t = _totals({**REAL, "p_rename": 0.0})
    assert t.loc["name", "lost_uses"] == 0 < t.loc["name+path", "lost_uses"]
    assert t.loc["name", "silent"] > 0


def test_perfect_answers_make_the_prompt_policy_follow_lineage():
    t = _totals({**REAL, "p_answer": 1.0})
    assert t.loc["name+path+prompt", "confirmed"] == 0 == t.loc["name+path+prompt", "silent"]
    assert t.loc["name+path+prompt", "lost_uses"] == t.loc["name", "lost_uses"]


def test_without_shadows_or_renames_every_keying_is_always_right():
    t = _totals({**REAL, "p_shadow": 0.0, "p_installed": 0.0, "p_import": 0.0, "p_rename": 0.0})
    assert (t[["silent", "confirmed", "lost_uses", "prompts"]] == 0).all().all()
    assert (t.lessons == t.lessons.iloc[0]).all() and t.lessons.iloc[0] > 0


def test_the_path_keyings_never_attach_silently_in_this_model():
    t = _totals({**REAL, "p_shadow": 0.4})
    assert t.loc["name+path", "silent"] == 0 == t.loc["name+path+prompt", "silent"]
    assert t.loc["name+root", "silent"] > 0


# ------------------------------------------------------------------------------------ the decision


def test_the_rule_decides_and_a_modified_rule_changes_the_verdict(tmp_path):
    study = shadowing.run(ranges=False, backend="sequential", progress=False)
    assert study.finding().startswith(RULE.stamp())
    assert list(study.table().policy) == list(RULE.param("policies"))
    assert study.table().set_index("policy").today[RULE.param("product_policy")] == "product"
    assert study.verdict.policy == "name+path+prompt" and not study.verdict.robustness_checked
    strict = _rule_copy(tmp_path, prompt_max=0.5)
    other = shadowing.run(rule=strict, ranges=False, backend="sequential", progress=False)
    assert other.verdict.policy == "name+path" and other.verdict.kind == "keep"  # what the product now does
    assert study.verdict.kind == "change"  # the realistic point alone picks the prompt variant


def test_a_pick_that_fails_in_the_ranges_is_not_adopted(tmp_path):
    narrow = _rule_copy(tmp_path, ranges={"p_shadow": [0.02, 0.40]})
    study = shadowing.run(rule=narrow, backend="sequential", progress=False)
    v = study.verdict
    assert v.pick == "name+path+prompt" and "p_shadow=0.4" in v.failures["name+path+prompt"]
    assert v.policy == "name+path" and v.robustness_checked
    assert set(study.sweep_table().point) == {"realistic", "p_shadow=0.02", "p_shadow=0.4"}


def test_too_few_lessons_for_the_silent_bound_is_undecided():
    study = shadowing.run(users=10, ranges=False, backend="sequential", progress=False)
    assert study.verdict.kind == "undecided" and "undecided" in study.finding()


def test_a_tie_in_lost_goes_to_fewer_prompts_then_the_listed_order():
    per_user = pd.DataFrame(
        [
            {
                "user": f"u{i}",
                "policy": p,
                "sessions": 100,
                "shadowed_sessions": 5,
                "lessons": 200,
                "silent": 0,
                "confirmed": 0,
                "lost_lessons": 1,
                "kept": 199,
                "own_uses": 50,
                "lost_uses": 5 + i % 2,
                "prompts": 1 if p.endswith("prompt") else 0,
            }
            for i in range(6)
            for p in ("name+path+prompt", "name+path")
        ]
    ).assign(point="realistic")
    summary = shadowing._summary(per_user, RULE).assign(point="realistic")
    v = shadowing._decide(summary, per_user, RULE, "name+root")
    assert v.tie and v.policy == "name+path" and v.kind == "change"


# ---------------------------------------------------------------------------------------- bad input


def test_bad_input_is_refused_naming_the_field():
    with pytest.raises(ShadowingError, match="p_shadow"):
        Assumptions.of({**REAL, "p_shadow": 1.5})
    with pytest.raises(ShadowingError, match="p_fork"):
        Assumptions.of({k: v for k, v in REAL.items() if k != "p_fork"})
    with pytest.raises(ShadowingError, match="p_shadows"):
        shadowing.run(p_shadows=0.1)
    with pytest.raises(ShadowingError, match="users"):
        shadowing.simulate(Assumptions.of(REAL), users=0, sessions=10)
    with pytest.raises(ShadowingError, match="policies"):
        shadowing.simulate(Assumptions.of(REAL), users=2, sessions=10, policies=["by-author"])
