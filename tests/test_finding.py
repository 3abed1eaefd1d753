"""The studies' one record for a reported figure (`studies.finding`) and the one chart of estimate, interval and
the rule's bound (`overlay_widgets.charts.bound_chart`)."""

import dataclasses
import math

import pandas as pd
import pytest

from overlay_kit.metrics import Interval
from overlay_kit.studies.finding import Finding, render, table


def test_a_finding_is_frozen_and_says_its_numbers_bound_and_verdict():
    f = Finding("unwanted share", 0.042, 0.01, 0.09, 0.05, "undecided", note="the interval straddles the bound")
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.estimate = 0.0
    assert f.line() == (
        "unwanted share 0.042 [0.010, 0.090] (bound ≤ 0.05): undecided, the interval straddles the bound"
    )
    gain = Finding("gain", 0.2, side="≥", bound=0.1, spec=".2f", unit="points")
    assert gain.line() == "gain 0.20 points (bound ≥ 0.1)"
    assert Finding.of("x", Interval(0.5, 0.25, 0.75), spec="+.2f").figure() == "+0.50 [+0.25, +0.75]"
    assert Finding("cost", 0.205, 0.097, 0.257, 0.02, spec="+.1%").figure() == "+20.5% [+9.7%, +25.7%] (bound ≤ 2%)"
    assert math.isnan(Finding("x", 1.0).low)


def test_an_interval_of_zero_width_is_said_once_not_printed_three_times():
    """low = high = estimate: every resample gave the estimate. Only the interval's wording changes: the unit, the
    bound and the verdict stay where they were; an interval that only rounds to zero width keeps its numbers."""
    assert Finding("lost", 0.0, 0.0, 0.0, 0.05, "no difference detected at MDE 0.05", spec="+.3g").line() == (
        "lost +0 in every resample (bound ≤ 0.05): no difference detected at MDE 0.05"
    )
    assert Finding("share", 1.0, 1.0, 1.0, 0.9, "met", unit="of lessons", spec=".1%", side="≥").figure() == (
        "100.0% of lessons in every resample (bound ≥ 90%)"
    )
    assert Finding("x", 0.0, 0.0, 0.0004).figure() == "0.000 [0.000, 0.000]"  # rounds to zero width, is not
    assert Finding("x", 0.1, 0.0, 0.0).figure() == "0.100 [0.000, 0.000]"  # the resamples agreed, not with it
    assert Finding("x", math.nan, math.nan, math.nan).figure() == "n/a"


def test_render_writes_stamp_intro_bullets_outro_or_one_inline_sentence():
    fs = [Finding("a", 0.1, 0.0, 0.2, 0.5, "within"), Finding("b", 0.9, 0.8, 1.0, 0.5, "over")]
    text = render(fs, stamp="Rule x", intro="**Head**:", outro=["Then.", ""])
    assert text == (
        "Rule x\n\n**Head**:\n\n- a 0.100 [0.000, 0.200] (bound ≤ 0.5): within\n"
        "- b 0.900 [0.800, 1.000] (bound ≤ 0.5): over\n\nThen."
    )
    inline = render(fs, intro=["First.", "**Head** over 3 weeks:"], joiner="; ", outro=".")
    assert inline == (
        "First.\n\n**Head** over 3 weeks: a 0.100 [0.000, 0.200] (bound ≤ 0.5): within; "
        "b 0.900 [0.800, 1.000] (bound ≤ 0.5): over."
    )
    assert render([], stamp="Rule x", outro="Nothing.") == "Rule x\n\nNothing."


def test_findings_alike_but_for_their_subject_are_one_line_naming_each():
    fs = [
        Finding("lost", 0.0, 0.0, 0.0, verdict="no difference", spec="+.3g", subject="a"),
        Finding("lost", 0.5, 0.4, 0.6, verdict="better", spec="+.3g", subject="b"),
        Finding("lost", 0.0, 0.0, 0.0, verdict="no difference", spec="+.3g", subject="c"),
        Finding("gain", 0.0, 0.0, 0.0, verdict="no difference", spec="+.3g", subject="a"),
        Finding("n/a", math.nan, verdict="undecided", subject="a"),
        Finding("n/a", math.nan, verdict="undecided", subject="b"),
    ]
    assert render(fs) == (
        "- lost (a, c) +0 in every resample: no difference\n- lost (b) +0.5 [+0.4, +0.6]: better\n"
        "- gain (a) +0 in every resample: no difference\n- n/a (a, b) n/a: undecided"
    )
    same = [Finding("x", 0.1, verdict="v"), Finding("x", 0.1, verdict="v")]  # no subject: each its own line
    assert render(same) == "- x 0.100: v\n- x 0.100: v"
    assert table(fs)["subject"].tolist() == ["a", "b", "c", "a", "a", "b"]  # the table keeps every record


def test_a_verdict_with_no_one_figure_is_its_metric_verdict_and_note():
    f = Finding("**tier2**", None, verdict="UNDERPOWERED — no verdict", note="control 2/33 [0.02, 0.20]")
    assert f.figure() == "" and f.line() == "**tier2**: UNDERPOWERED — no verdict, control 2/33 [0.02, 0.20]"
    assert math.isnan(f.interval.estimate) and math.isnan(table([f]).estimate.iloc[0])


def test_table_has_one_row_per_finding():
    t = table([Finding("a", 0.1, 0.0, 0.2, 0.5, "within", "share", "n")])
    assert list(t.columns) == ["metric", "estimate", "low", "high", "bound", "verdict", "unit", "note"]
    assert t.iloc[0].to_dict() == {
        "metric": "a",
        "estimate": 0.1,
        "low": 0.0,
        "high": 0.2,
        "bound": 0.5,
        "verdict": "within",
        "unit": "share",
        "note": "n",
    }
    assert table([]).empty


def test_bound_chart_draws_points_interval_rules_and_a_dashed_bound():
    alt = pytest.importorskip("altair")
    from overlay_widgets.charts import bound_chart

    df = pd.DataFrame(
        {
            "x": ["a", "b"],
            "est": [0.1, 0.3],
            "lo": [0.0, 0.2],
            "hi": [0.2, 0.4],
            "cap": [0.25, 0.25],
            "panel": ["p", "q"],
        }
    )
    spec = bound_chart(df, "x:N", "est", "lo", "hi", bound=0.25, value_title="share").to_dict()
    rule, point, bound = spec["layer"]
    assert rule["mark"]["type"] == "rule" and rule["encoding"]["y"]["field"] == "lo"
    assert rule["encoding"]["y2"]["field"] == "hi" and point["mark"] == {"type": "point", "filled": True}
    assert bound["mark"]["strokeDash"] == [4, 4] and bound["encoding"]["y"]["datum"] == 0.25
    assert len(spec["datasets"]) == 1  # one frame for every layer
    side = bound_chart(
        df, alt.Y("x:N"), "est", "lo", "hi", bound="cap", horizontal=True, facet=alt.Column("panel:N"), independent=True
    ).to_dict()
    assert side["facet"]["column"]["field"] == "panel" and side["resolve"]["scale"] == {"x": "independent"}
    assert side["spec"]["layer"][2]["encoding"]["x"]["field"] == "cap"
    assert "title" not in bound_chart(df, "x:N", "est").to_dict()  # no interval, no bound: the points alone
