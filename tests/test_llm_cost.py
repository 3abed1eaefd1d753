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
    for turn in changed:
        assert by[("prefix", "turn", turn)].reprefill > 5 * by[("tail", "turn", turn)].reprefill
    rows = cost.regression(study.growth)
    assert rows[0]["learned_target"] == 0 and all(r["median_s"] > 0 for r in rows)
