"""Rule 18_equal_tokens: the shipped selection cut to Mem0's token spend, against Mem0's search (notebook 18)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from overlay_kit import selection as sel
from overlay_kit.studies import rulefile
from overlay_kit.studies import selection as study

RULE = rulefile.load("18_equal_tokens")


@pytest.fixture(scope="module")
def dev():
    return study.load("dev")


@pytest.fixture(scope="module")
def judged(dev):
    return study.equal_tokens(RULE, dev)


def _rule(tmp_path, **params):
    text = RULE.path.read_text(encoding="utf-8")
    for name, value in params.items():
        old = f"  {name}: {RULE.param(name)}\n"
        assert old in text
        text = text.replace(old, f"  {name}: {value}\n")
    path = tmp_path / RULE.path.name
    path.write_text(text, encoding="utf-8")
    return rulefile.load(path)


def test_the_cut_is_the_largest_top_k_within_mem0s_spend_on_the_tune_split(dev, judged):
    arm, size = study.shipped_arm(), RULE.param("size")
    mem0 = study.Arm("m", "mem0", arm.embedder, False, params={"k": 10, "threshold": 0.3})
    budget = study.trial(dev, mem0, None, split="tune", size=size).tokens.mean()
    k = judged["k_eq"]
    spent = study.trial(dev, arm, replace(sel.shipped_rule(), k=k), split="tune", size=size).tokens.mean()
    more = study.trial(dev, arm, replace(sel.shipped_rule(), k=k + 1), split="tune", size=size).tokens.mean()
    assert spent <= budget < more  # whole lessons: the next one would spend more than Mem0
    assert judged["eval"]["tokens"]["cut"] <= judged["eval"]["tokens"]["mem0"]


def test_the_verdict_is_the_paired_interval_read_by_the_rule(judged):
    e = judged["eval"]
    ci = e["difference"]
    assert e["verdict"] == study.stand_in_verdict(ci, e["mde"], e["tokens"]["cut"], e["tokens"]["mem0"])
    assert ci.low <= ci.estimate <= ci.high and e["mde"] > 0
    found = {name: m["needed_in_context"].estimate for name, m in e["metrics"].items()}
    assert ci.estimate == pytest.approx(found["cut"] - found["mem0"], abs=0.05)  # per-lesson mean vs pooled ratio


def test_the_comparison_can_come_out_the_other_way(dev, tmp_path):
    """A Mem0 that keeps nothing leaves no equal-token cut; one that keeps its top 20 at any cosine lets the
    ranking spend as much, and the verdict follows the data, not the code."""
    none = study.equal_tokens(_rule(tmp_path, mem0_threshold=2.0), dev)
    assert none["k_eq"] is None and "eval" not in none
    wide = study.equal_tokens(_rule(tmp_path, mem0_top_k=20, mem0_threshold=-1.0), dev)
    assert wide["k_eq"] >= 15 and wide["eval"]["verdict"] == "higher"  # the ranking's evidence triggers pay
