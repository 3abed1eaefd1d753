"""The cost-of-learning study's pure parts, and the stored recording replayed offline."""

from __future__ import annotations

import pytest
import yaml

from overlay_kit.llm import Skipped
from overlay_kit.prompt import count_tokens
from overlay_kit.studies import cost, rulefile

LESSONS = (("Declining a recruiter.", "Keep it to two sentences."), ("Chasing an executive.", "Wait 48 hours."))


def test_learned_fragment_is_whole_lessons_within_the_target():
    assert cost.learned_fragment(LESSONS, 0) == "" and cost.learned_fragment(LESSONS, 5) == ""
    sizes = [count_tokens(cost.learned_fragment(LESSONS, n)) for n in (40, 100, 400)]
    assert sizes == sorted(sizes) and all(s <= n for s, n in zip(sizes, (40, 100, 400)))
    frag = cost.learned_fragment(LESSONS, 400)
    lines = [ln for ln in frag.splitlines() if ln.startswith("- (")]
    assert lines[0] == "- (1) When: Declining a recruiter. Then: Keep it to two sentences."
    assert lines[2].startswith("- (3) When: Declining")  # cycled, numbered, each lesson whole
    assert all(ln.endswith(("sentences.", "hours.")) for ln in lines)
    once = cost.learned_fragment(LESSONS)  # no target: every lesson exactly once
    assert [ln[:5] for ln in once.splitlines() if ln.startswith("- (")] == ["- (1)", "- (2)"]


def _points(ttfts: dict[int, list[float]]) -> list[cost.GrowthPoint]:
    return [
        cost.GrowthPoint(size, size, 1000 + size, r, t, t / 10, t * 2, t / 5, 5, False, "test")
        for size, ts in ttfts.items()
        for r, t in enumerate(ts)
    ]


def test_regression_against_the_no_delta_build_with_a_bootstrap_interval():
    rows = cost.regression(_points({0: [1.0, 1.0, 1.02, 0.98], 100: [1.1, 1.1, 1.12, 1.08]}))
    assert [r["learned_target"] for r in rows] == [0, 100]
    assert rows[0]["regression"] == 0.0 and rows[1]["regression"] == pytest.approx(0.1)
    assert rows[1]["ci_low"] <= 0.1 <= rows[1]["ci_high"] and rows[1]["ci_low"] > 0
    warm = cost.regression(_points({0: [1.0, 1.0], 100: [2.0, 2.0]}), "warm")
    assert warm[1]["median_s"] == pytest.approx(0.2)
    assert cost.regression(_points({0: [1.0], 100: [2.0]}), "cold", "cpu")[1]["median_s"] == pytest.approx(4.0)
    with pytest.raises(ValueError, match="no-delta"):
        cost.regression(_points({100: [1.0]}))


def _row(x, reg, lo=None, hi=None):
    return {
        "learned_tokens": x,
        "regression": reg,
        "ci_low": reg if lo is None else lo,
        "ci_high": reg if hi is None else hi,
    }


def test_the_interval_resamples_whole_repeats():
    """A slow spell of the machine scales every size of one repeat alike: paired by repeat, it cancels."""
    slow = [1.0, 3.0, 0.5, 2.0, 1.5, 4.0]
    rows = cost.regression(_points({0: slow, 100: [1.1 * f for f in slow]}))
    assert rows[1]["regression"] == pytest.approx(0.1)
    assert rows[1]["ci_low"] == pytest.approx(0.1) and rows[1]["ci_high"] == pytest.approx(0.1)
    shuffled = cost.regression(_points({0: slow, 100: [1.1 * f for f in reversed(slow)]}))
    assert shuffled[1]["ci_high"] - shuffled[1]["ci_low"] > 0.5  # unpaired, the spell no longer cancels
    half = cost.regression(_points({0: slow, 100: [1.1 * f for f in reversed(slow)]}), confidence=0.5)
    assert half[1]["ci_high"] - half[1]["ci_low"] < shuffled[1]["ci_high"] - shuffled[1]["ci_low"]
    assert half[1]["n"] == 6


def test_supported_ceiling_is_the_largest_size_whose_upper_bound_and_every_smaller_ones_stay_within():
    rows = [
        _row(0, 0.0),
        _row(80, 0.03, 0.01, 0.06),
        _row(200, 0.08, 0.04, 0.12),
        _row(400, 0.2, 0.1, 0.3),
        _row(900, 0.15, 0.05, 0.09),
    ]  # 900 dips back under 0.10, but 400 beyond it already broke the bound
    assert cost.supported_ceiling(rows, 0.05)["ceiling_tokens"] == 0  # not even the smallest size
    c = cost.supported_ceiling(rows, 0.10)
    assert c["ceiling_tokens"] == 80 and c["breaks"]["learned_tokens"] == 200 and not c["beyond_measured"]
    assert cost.supported_ceiling(rows, 0.12)["ceiling_tokens"] == 200  # within, inclusive
    top = cost.supported_ceiling(rows, 0.5)
    assert top["ceiling_tokens"] == 900 and top["beyond_measured"] and top["breaks"] is None
    assert cost.supported_ceiling(list(reversed(rows)), 0.10)["ceiling_tokens"] == 80  # order of rows is no input


def test_the_target_verdict_reads_the_smallest_size_interval_and_can_come_out_each_way():
    def at(lo, hi):
        return [_row(0, 0.0), _row(400, 0.5, 0.4, 0.6), _row(77, (lo + hi) / 2, lo, hi)]

    assert cost.target_verdict(at(0.03, 0.2), 0.02) == "unattainable"
    assert cost.target_verdict(at(-0.01, 0.02), 0.02) == "attainable"
    assert cost.target_verdict(at(0.01, 0.2), 0.02) == "undecided"
    with pytest.raises(ValueError, match="non-zero"):
        cost.target_verdict([_row(0, 0.0)], 0.02)
    assert cost.combine_verdicts(["attainable", "unattainable", "undecided"]) == "unattainable"
    assert cost.combine_verdicts(["attainable", "undecided"]) == "undecided"
    assert cost.combine_verdicts(["attainable", "attainable"]) == "attainable"


def test_regression_between_and_beyond_the_measured_sizes():
    rows = [_row(0, 0.0), _row(100, 0.1), _row(300, 0.5)]
    assert cost.regression_at(rows, 200) == (pytest.approx(0.3), False)
    assert cost.regression_at(rows, 500) == (pytest.approx(0.9), True)  # extrapolated along the last two


def test_recall_plan_is_seeded_and_changes_as_asked():
    inputs = cost.StudyInputs("s", "t", LESSONS * 3, turns=6, recall_k=2, change_p=0.0)
    plan = cost.recall_plan(inputs)
    assert plan == cost.recall_plan(inputs) and len(plan) == 6 and len(set(plan)) == 1
    assert len(set(cost.recall_plan(cost.StudyInputs("s", "t", LESSONS * 3, turns=6, change_p=1.0)))) > 1


def test_inputs_round_trip(tmp_path):
    inputs = cost.StudyInputs.from_datasets()
    again, meta = cost.StudyInputs.load(inputs.save(tmp_path / "x.inputs.json", model="m"))
    assert again == inputs and meta == {"model": "m"}


def test_no_recording_and_no_live_model_is_skipped(tmp_path):
    with pytest.raises(Skipped, match="no recording"):
        cost.run_study(recording=tmp_path / "absent")


def test_stored_recording_replays_offline_and_shows_the_placement_effect():
    study = cost.run_study()  # datasets/cassettes/cost_of_learning.*, no network
    assert study.note.startswith("replayed: recorded ")
    assert all(p.replayed for p in study.growth) and all(t.replayed for t in study.sessions)
    assert {p.learned_target for p in study.growth} == set(study.inputs.sizes)
    by = {(t.placement, t.resolution, t.turn): t for t in study.sessions}
    changed = [
        t.turn for t in study.sessions if t.placement == "prefix" and t.resolution == "turn" and t.recall_changed
    ]
    assert changed, "the recorded session should change its recall at least once"
    for turn in changed:  # the prefix re-prefills the authored text too; the tail only the recalled lessons
        assert by[("prefix", "turn", turn)].reprefill > by[("tail", "turn", turn)].reprefill + 400
    rows = cost.regression(study.growth)
    assert rows[0]["learned_target"] == 0 and all(r["median_s"] > 0 for r in rows)


def _spread(base: list[float], sizes: dict[int, list[float]] | None = None) -> list[cost.GrowthPoint]:
    return _points({0: base, **(sizes or {})})


def test_mde_comes_from_the_baseline_spread_and_shrinks_with_n():
    tight, loose = _spread([1.0, 1.01, 0.99, 1.0] * 5), _spread([1.0, 1.2, 0.8, 1.1] * 5)
    assert cost.mde(tight)["mde"] < 0.02 < cost.mde(loose)["mde"]
    small = _spread([1.0, 1.2, 0.8, 1.1])
    assert cost.mde(small)["mde"] > cost.mde(loose)["mde"] and cost.mde(small)["n"] == 4
    with pytest.raises(ValueError, match="two no-delta"):
        cost.mde(_spread([1.0]))


def test_growth_slope_pools_the_small_sizes():
    pts = _spread([1.0, 1.0, 1.0], {100: [1.1, 1.1, 1.1], 200: [1.2, 1.2, 1.2], 4000: [9.0, 9.0, 9.0]})
    slope, lo, hi = cost.growth_slope(pts, "cold", "ttft")  # 4,000 is beyond the small sizes: left out
    assert slope == pytest.approx(1.0) and lo == pytest.approx(1.0) and hi == pytest.approx(1.0)
    assert cost.growth_slope(pts, "cold", "ttft", max_learned=None)[0] > 1.5


@pytest.fixture(scope="module")
def replayed():
    return cost.run()  # both stored recordings, replayed, under the committed rule file


def test_stored_recordings_side_by_side_and_the_finding_follows_the_rules(replayed):
    result = replayed
    assert [s.kind for s in result.studies] == ["random-weight", "real-weight"]
    assert all(p.replayed for s in result.studies for p in s.growth)
    assert all(s.note.startswith("replayed: recorded ") and s.model in s.note for s in result.studies)
    real = result.study("real-weight")
    assert real.meta["quantization"] == "Q4_1" and real.meta["machine"] and "SmolLM2" in real.model
    table, ceil = result.table(), result.ceilings()
    assert set(table.engine) == {"random-weight", "real-weight"} and (table.n > 1).all()
    rule = result.rule
    assert rule.path == rulefile.rules_dir() / f"{cost.RULE}.yaml"
    assert all(result.as_ruled(s) for s in result.studies)  # the recordings are the grid the rule judges
    text = result.finding()
    target = rule.param("target")
    for kind in ("random-weight", "real-weight"):  # each engine's line states what the rule computed
        c = ceil[(ceil.engine == kind) & (ceil.measure == rule.param("primary_measure"))].iloc[0]
        line = next(ln for ln in text.splitlines() if ln.startswith(f"- **{kind}**"))
        rows = table[
            (table.engine == kind)
            & (table.turn == rule.param("turn"))
            & (table.measure == rule.param("primary_measure"))
        ].to_dict("records")
        assert c[f"≤ {target:.0%} target"] == cost.target_verdict(rows, target)
        assert f"{c.regression:+.1%} [{c.low:+.1%}, {c.high:+.1%}]" in line
        assert ("**unattainable**" in line) == (c[f"≤ {target:.0%} target"] == "unattainable")
        for b in rule.param("bounds"):
            assert c[f"ceiling ≤ +{b:.0%}"] == cost.supported_ceiling(rows, b)["ceiling_tokens"]
    target_line = next(ln for ln in text.splitlines() if ln.startswith("- **Supported target**"))
    assert result.verdict() == cost.combine_verdicts(
        list(ceil[ceil.measure == rule.param("primary_measure")][f"≤ {target:.0%} target"])
    )
    assert (f"**{result.verdict()}**" in target_line) != (result.verdict() == "undecided")
    assert ("no verdict" in target_line) == (result.verdict() == "undecided")
    assert "Absolute TTFT does not transfer" in text and "hold for any model" in text


def _rule_copy(tmp_path, **params) -> rulefile.RuleFile:
    """The committed rule file with some params changed, under the same name in `tmp_path`."""
    doc = yaml.safe_load(rulefile.load(cost.RULE).path.read_text(encoding="utf-8"))
    doc["params"].update(params)
    path = tmp_path / f"{cost.RULE}.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return rulefile.load(path)


def test_the_verdict_and_ceilings_come_from_the_rule_file(replayed, tmp_path):
    ceil = replayed.ceilings()
    primary = ceil[ceil.measure == replayed.rule.param("primary_measure")]
    # a target above every engine's one-lesson interval: attainable; below one engine's lower end: unattainable
    high = cost.CostResult(replayed.studies, _rule_copy(tmp_path, target=float(primary.high.max()) + 0.01))
    assert high.verdict() == "attainable" and "**attainable**" in high.finding()
    low = cost.CostResult(replayed.studies, _rule_copy(tmp_path, target=float(primary.low.max()) - 0.01))
    assert low.verdict() == "unattainable" and "**unattainable**" in low.finding()
    assert high.rule.sha256 != low.rule.sha256 != replayed.rule.sha256
    by_path = cost.run(rule=str(low.rule.path))  # run() takes a path, too
    assert by_path.rule.sha256 == low.rule.sha256 and by_path.verdict() == "unattainable"
    # the bounds and the interval's confidence are the file's as well
    other = cost.CostResult(replayed.studies, _rule_copy(tmp_path, bounds=[3.0], confidence=0.5))
    cols = [c for c in other.ceilings().columns if c.startswith("ceiling ≤")]
    assert cols == ["ceiling ≤ +300%"]
    assert (other.table().ci_high - other.table().ci_low).mean() < (
        replayed.table().ci_high - replayed.table().ci_low
    ).mean()
    with pytest.raises(rulefile.RuleFileError, match="params.bounds"):
        doc = yaml.safe_load(replayed.rule.path.read_text(encoding="utf-8"))
        del doc["params"]["bounds"]
        path = tmp_path / f"{cost.RULE}.yaml"
        path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
        cost.CostResult(replayed.studies, rulefile.load(path)).ceilings()
