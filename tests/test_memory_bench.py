"""The memory-architecture benchmark: its trace, outcome classes, erasure scan, decision rule and study shape."""

from __future__ import annotations

import pytest

from overlay_kit.metrics import Interval
from overlay_kit.studies import memory_bench as mb
from overlay_kit.studies import rulefile
from overlay_kit.studies.architectures import Placement
from overlay_kit.studies.sim import Fate

SMALL = {"users": 2, "sessions": 42, "architectures": ["overlay", "keyword_files", "mem0_flat"], "progress": False}


@pytest.fixture(scope="module")
def study():
    return mb.run(**SMALL)


def test_classify_names_each_outcome():
    same, edited, gone = Fate("inbox", False), Fate("inbox", True), Fate(None, True)
    assert mb.classify(None, same, "inbox") == "lost"
    assert mb.classify(Placement("inbox", True), edited, "inbox") == "stale"
    assert mb.classify(Placement("inbox"), same, "inbox") == "right"
    assert mb.classify(Placement("replies"), same, "inbox") == "silently_wrong"  # on the wrong section
    assert mb.classify(Placement("inbox"), edited, "inbox") == "silently_wrong"  # changed, unflagged
    assert mb.classify(Placement(None), same, "inbox") == "right"  # floating, still valid
    assert mb.classify(Placement(None), gone, "other") == "silently_wrong"


def test_fragments_cover_the_whole_text():
    text = "x" * 10 + "abcdefghijklmnopqrstuvwxyz0123456789"
    parts = mb.fragments(text, 24, 8)
    assert all(len(p) == 24 for p in parts) and parts[-1] == text[-24:].encode()
    assert mb.fragments("short", 24, 8) == [b"short"]


def test_trace_follows_the_truth_of_each_update():
    t = mb.trace(0, 2, 42, 20)
    assert set(t.skills) == {s.agent for s in t.world.sessions}
    for lesson, path in t.homes.items():
        domain = next(x.domain for x in mb.world.lessons() if x.id == lesson)
        for v in range(len(path) - 1):
            fate = t.truth[domain][v].get(path[v])
            if fate is not None and fate.target:
                assert path[v + 1] == fate.target


def test_verdict_comes_out_every_way():
    assert mb.verdict(Interval(0.2, 0.1, 0.3), 0.05) == "overlay better"
    assert mb.verdict(Interval(-0.2, -0.3, -0.1), 0.05) == "overlay worse"
    assert mb.verdict(Interval(0.0, -0.01, 0.01), 0.05) == "no difference detected at MDE 0.05"
    assert mb.verdict(Interval(0.02, -0.1, 0.2), 0.05) == "undecided"


def test_the_study_has_a_row_per_architecture_and_a_finding_from_its_rule(study):
    t = study.table()
    assert list(t.architecture) == SMALL["architectures"]
    assert {"needed_in", "needed_in_low", "irrelevant_in", "learned_tokens", "silently_wrong", "lost",
            "prompts_per_update", "residue", "growth"} <= set(t.columns)
    assert study.finding().startswith(study.rule.stamp())
    assert "Compliance arm: estimated: needed-in-context x the follow rate" in study.finding()
    c = study.comparisons()
    assert set(c.architecture) == {"keyword_files", "mem0_flat"} and set(c.metric) == set(
        study.rule.param("judged"))
    # the overlay erases completely; mem0's history keeps the deleted text
    assert t.set_index("architecture").loc["overlay", "residue"] == 0
    assert t.set_index("architecture").loc["mem0_flat", "residue"] > 0


def test_a_modified_rule_changes_the_verdict(study, tmp_path):
    text = study.rule.path.read_text(encoding="utf-8").replace("margins: {needed_in: 0.05,", "margins: {needed_in: 5,")
    path = tmp_path / f"{mb.RULE_NAME}.yaml"
    path.write_text(text, encoding="utf-8")
    other = mb.MemoryBench(rulefile.load(path), study.params, study.sessions, study.updates, study.erasure,
                           study.growth, study.compliance)
    before = study.comparisons().set_index(["architecture", "metric"]).verdict
    after = other.comparisons().set_index(["architecture", "metric"]).verdict
    changed = before[before != after]
    assert len(changed) and set(changed.index.get_level_values("metric")) == {"needed_in"}
    assert set(after[changed.index]) == {"no difference detected at MDE 5"}


def test_a_budget_is_named_as_a_variation_of_the_shipped_ceiling():
    s = mb.run(users=1, sessions=21, architectures=["overlay"], budget=64, progress=False)
    assert s.table().varied.iloc[0] == "ceiling: shipped → authored + 64"
    assert s.comparisons().empty  # no other architecture to compare with


def test_bad_input_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="architectures"):
        mb.run(architectures=["nope"], progress=False)
    with pytest.raises(ValueError, match="seeds"):
        mb.run(seeds=[], progress=False)


def test_the_compliance_arm_is_notebook_17s_follow_rate_per_rendering(monkeypatch):
    follow, label = mb.compliance_status()
    assert set(follow) == {"section", "tail"} and label.startswith("estimated") and "replayed" in label
    s = mb.run(users=2, sessions=40, architectures=["overlay", "mem0_flat"], progress=False)
    t = s.table().set_index("architecture")
    for arch, rendering in (("overlay", "section"), ("mem0_flat", "tail")):
        assert t.followed[arch] == pytest.approx(t.needed_in[arch] * follow[rendering].estimate, nan_ok=True)
    assert t.followed_low.overlay <= t.followed.overlay <= t.followed_high.overlay and t.followed.overlay > 0
    monkeypatch.setattr(mb.compliance, "replies", lambda model: (_ for _ in ()).throw(mb.Skipped("no recording")))
    assert mb.compliance_status() == ({}, "not run: skipped: no recording")
