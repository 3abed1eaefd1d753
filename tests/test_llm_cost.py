"""The cost-of-learning study's pure parts, and the stored recording replayed offline."""

from __future__ import annotations

import pytest

from overlay_kit.llm import Skipped
from overlay_kit.prompt import count_tokens
from overlay_kit.studies import cost

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
    return [cost.GrowthPoint(size, size, 1000 + size, r, t, t / 10, t * 2, t / 5, 5, False, "test")
            for size, ts in ttfts.items() for r, t in enumerate(ts)]


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
    return {"learned_tokens": x, "regression": reg, "ci_low": reg if lo is None else lo,
            "ci_high": reg if hi is None else hi}


def test_ceiling_reads_the_first_crossing_of_the_measured_regression():
    rows = [_row(0, 0.0, -0.1, 0.1), _row(100, 0.01), _row(500, 0.05, 0.03, 0.09), _row(1000, 0.2)]
    c = cost.ceiling(rows)
    assert c["ceiling_tokens"] == 200 and not c["beyond_measured"]  # 100 + (0.02 - 0.01) × 400 / 0.04
    assert c["range"] == (100 + int(0.01 * 400 / 0.08), 100 + int(0.01 * 400 / 0.02))  # from the CI ends
    assert cost.ceiling([_row(0, 0.0), _row(400, 0.08)])["ceiling_tokens"] == 100  # chord from the no-delta build
    flat = cost.ceiling([_row(0, 0.0), _row(100, 0.01), _row(200, -0.01)])
    assert flat["ceiling_tokens"] is None and flat["beyond_measured"]


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
    changed = [t.turn for t in study.sessions if t.placement == "prefix" and t.resolution == "turn"
               and t.recall_changed]
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


def test_a_ceiling_is_stated_only_where_the_mde_allows_it():
    sizes = {100: [1.01, 1.02, 1.0, 1.01] * 5, 200: [1.05, 1.06, 1.04, 1.05] * 5}
    tight = _spread([1.0, 1.01, 0.99, 1.0] * 5, sizes)
    res = cost.resolve_ceiling(cost.regression(tight, "cold", "ttft"), cost.mde(tight, "cold", "ttft"))
    assert res["resolvable"] and 100 <= res["ceiling_tokens"] <= 200 and res["detected_at"] == 100
    loose = _spread([1.0, 1.2, 0.8, 1.1] * 5, sizes)
    res = cost.resolve_ceiling(cost.regression(loose, "cold", "ttft"), cost.mde(loose, "cold", "ttft"))
    assert not res["resolvable"] and res["ceiling_tokens"] is None  # the same curve, but the noise hides 2 %


def test_growth_slope_pools_the_small_sizes():
    pts = _spread([1.0, 1.0, 1.0], {100: [1.1, 1.1, 1.1], 200: [1.2, 1.2, 1.2], 4000: [9.0, 9.0, 9.0]})
    slope, lo, hi = cost.growth_slope(pts, "cold", "ttft")  # 4,000 is beyond the small sizes: left out
    assert slope == pytest.approx(1.0) and lo == pytest.approx(1.0) and hi == pytest.approx(1.0)
    assert cost.growth_slope(pts, "cold", "ttft", max_learned=None)[0] > 1.5


def test_stored_recordings_side_by_side_and_the_finding_follows_the_rules():
    result = cost.run()  # both stored recordings, replayed
    assert [s.kind for s in result.studies] == ["random-weight", "real-weight"]
    assert all(p.replayed for s in result.studies for p in s.growth)
    real = result.study("real-weight")
    assert real.meta["quantization"] == "Q4_1" and real.meta["machine"] and "SmolLM2" in real.model
    table, res = result.table(), result.resolution()
    assert set(table.engine) == {"random-weight", "real-weight"} and (table.n > 1).all()
    text = result.finding()
    for kind in ("random-weight", "real-weight"):  # each engine's 2 % statement obeys the MDE rule
        r = res[(res.engine == kind) & (res.turn == "cold") & (res.measure == "engine CPU")].iloc[0]
        line = next(ln for ln in text.splitlines() if ln.startswith(f"- **{kind}**"))
        assert ("cannot be resolved" in line) == (not r["2% resolvable"])
        assert r["2% resolvable"] or (f"{r.MDE:.1%}" in line and "ceiling is ~" not in line)
    assert "Absolute TTFT does not transfer" in text and "hold for any model" in text
