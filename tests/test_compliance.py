"""The compliance study: its checks, its lessons file's errors, the prompts each arm builds through the product,
the rule's verdicts on frames whose answer is known, and the recorded replies replayed (no model runs here)."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from overlay_kit.llm.client import Skipped
from overlay_kit.resolve import STALE_MARK
from overlay_kit.resources import dataset_path
from overlay_kit.studies import compliance, rulefile

WORLD = compliance.load_world()


@pytest.mark.parametrize(
    "conditions, reply, broken",
    [
        ([("contains", "best, sam")], "Thanks.\nBEST, Sam", []),
        ([("exact", "URGENT")], "urgent: Tom", ["exact: URGENT"]),
        ([("absent", r"\bhope")], "I hope you are well", [r"absent: \bhope"]),
        ([("matches", r"\b20\d\d-\d\d-\d\d\b")], "See you on 2026-03-05.", []),
        ([("first_line", r"^\W*draft\W*$")], "\n**DRAFT**\nHi Tom", []),
        ([("last_line", "best, sam")], "Best, Sam\nP.S. later", ["last_line: best, sam"]),
        ([("max_sentences", 2)], "One. Two! Three?", ["max_sentences: 2"]),
        ([("max_words", 3)], "one two three", []),
        ([("lowercase", True)], "hi Tom", ["lowercase: True"]),
        ([("min_bullets", 2)], "- a\n* b\n-c", []),
    ],
)
def test_each_condition(conditions, reply, broken):
    assert compliance.Check(tuple(conditions)).failures(reply) == broken


def _lessons_file(tmp_path, edit):
    folder = tmp_path / "compliance"
    shutil.copytree(dataset_path("compliance"), folder)
    path = folder / "lessons.yaml"
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    "old, new, field",
    [
        (
            "section: signing-off, text: 'End every draft",
            "section: sign-off, text: 'End every draft",
            "lessons[sign-off].section",
        ),
        ("goals: [email:budget, email:invoice]", "goals: [email:nope]", "lessons[sign-off].goals"),
        ("check: [{last_line: 'best, sam'}]", "check: [{ends: 'x'}]", "lessons[sign-off].check[0]"),
        ("check: [{last_line: 'best, sam'}]", "check: [{last_line: '(x'}]", "lessons[sign-off].check[0].last_line"),
    ],
)
def test_a_malformed_lesson_names_its_field(tmp_path, old, new, field):
    folder = _lessons_file(tmp_path, lambda text: text.replace(old, new, 1))
    with pytest.raises(compliance.CheckError) as err:
        compliance.load_world(folder)
    assert str(err.value).startswith(field)


def test_the_world_is_as_the_rule_says():
    rule = rulefile.load(compliance.RULE)
    assert len(WORLD.lessons) == 40 and all(len(x.goals) == 2 for x in WORLD.lessons)
    assert len(WORLD.distractors) == rule.param("distractors") == 100
    assert len({d.payload["body"] for d in WORLD.distractors}) == 100
    assert compliance.load_world().distractors == WORLD.distractors  # the seeded draw is stable


def test_each_arm_builds_its_prompt_through_the_product():
    lesson = WORLD.lessons[0]
    system = {arm: WORLD.messages(arm, lesson, lesson.goals[0])[0]["content"] for arm in compliance.ARMS}
    body = WORLD.skill.body
    assert lesson.text not in system["none"] and system["none"].strip() == body.strip()
    heading = system["section"].index("## Signing off")
    assert heading < system["section"].index(lesson.text) < system["section"].index("## Summaries")
    assert system["tail"].startswith(body) and system["tail"].rstrip().endswith(lesson.text)
    assert system["prefix"].rstrip().endswith(body.rstrip()) and system["prefix"].index(lesson.text) < 200
    for k in (5, 20, 100):
        shown = [d for d in WORLD.distractors if d.payload["body"] in system[f"k{k}"]]
        assert len(shown) == k and lesson.text in system[f"k{k}"]
    assert STALE_MARK.strip() in system["stale-mark"] and STALE_MARK.strip() not in system["stale-keep"]
    assert lesson.text in system["stale-keep"]
    with pytest.raises(ValueError, match="arm must be one of"):
        WORLD.messages("flat", lesson, lesson.goals[0])


def _frame(rates: dict[str, list[float]]) -> pd.DataFrame:
    """Replies whose per-lesson follow rates are `rates[arm]` (two goals each: 0, 0.5 or 1)."""
    rows = []
    for arm, per_lesson in rates.items():
        for i, rate in enumerate(per_lesson):
            for g in range(2):
                rows.append(
                    {
                        "arm": arm,
                        "lesson": f"l{i:02d}",
                        "goal": g,
                        "follows": g < round(rate * 2),
                        "prompt_tokens": 100,
                        "truncated": False,
                    }
                )
    return pd.DataFrame(rows)


def test_verdicts_on_known_frames():
    n = 40
    rates = {
        "none": [0.0] * n,
        "section": [1.0] * n,
        "tail": [0.0] * 20 + [1.0] * 20,
        "prefix": [1.0] * n,
        "k5": [1.0] * n,
        "k20": [1.0] * 30 + [0.0] * 10,
        "k100": [0.0] * n,
        "stale-keep": [1.0] * n,
        "stale-mark": [1.0] * n,
    }
    v = compliance.judge(_frame(rates))
    row = v.comparisons.set_index("comparison")
    assert row.loc["section - none", "verdict"] == "the lesson lifts following"
    assert row.loc["section - tail", "verdict"] == "section followed more"
    assert row.loc["section - prefix", "verdict"].startswith("no difference detected at MDE")
    assert (v.k_safe, v.k_harm) == (5, 20)
    assert row.loc["stale-keep - stale-mark", "verdict"].startswith("no difference detected")
    # flags mostly false (p = 0.33): keep and mark tie (both followed always); the tie-break ships mark
    assert v.tied == ("keep", "mark") and v.stale_policy == "mark"
    rates["stale-mark"] = [0.0] * n
    v = compliance.judge(_frame(rates))
    assert v.comparisons.set_index("comparison").loc["stale-keep - stale-mark", "verdict"] == "marking lowers following"
    assert v.stale_policy == "keep" and v.tied == ("keep",)
    err = v.policy_errors.set_index(["p_true", "policy"])["err"]
    assert err[(0.8, "keep")] == pytest.approx(0.8) and err[(0.8, "withhold")] == pytest.approx(0.2)


def test_recorded_replies_replay_and_are_labelled():
    try:
        frame, provenance = compliance.replies(rulefile.load(compliance.RULE).param("model"))
    except Skipped as exc:
        pytest.fail(f"the stored recording must replay: {exc}")
    assert len(frame) == 40 * 2 * len(compliance.ARMS) and frame.replayed.all() and frame.recorded_at.notna().all()
    assert provenance["asset_sha256"] and provenance["replies"] == len(frame)


def test_a_missing_recording_is_named(tmp_path):
    with pytest.raises(Skipped, match="no recording at"):
        compliance.replies("qwen2.5-coder-0.5b-instruct", path=tmp_path / "none.jsonl")


def test_a_run_of_some_arms_is_judged_on_the_comparisons_it_has():
    n, arms = 40, ("none", "section", "tail", "stale-keep", "stale-mark")
    rates = {
        "none": [0.0] * n,
        "section": [1.0] * n,
        "tail": [0.5] * n,
        "stale-keep": [1.0] * n,
        "stale-mark": [1.0] * n,
    }
    v = compliance.judge(_frame(rates))
    assert list(v.rates.arm) == list(arms)
    assert list(v.comparisons.comparison) == ["section - none", "section - tail", "stale-keep - stale-mark"]
    assert v.k_harm is None and v.stale_policy == "mark"
