"""Altair charts of the studies' results (presentation lives here, so `overlay_kit` imports no Jupyter package).

Each function takes a study result from `overlay_kit.studies` and draws from its public tables:

    charts.operator_heatmap(study, "false_orphan", "false-orphan rate")   # sim.operator_study
    charts.review_burden(study, "typical")                                # sim.history_study
    charts.kpi_panels(study, {"nonrecurrence": "non-recurrence"})         # kpis.run
    charts.cost_regression(result)                                        # cost.run
    charts.bound_chart(frame, "x", "estimate", "low", "high", bound=0.05)   # any frame: estimate, interval, bound
"""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import pandas as pd

__all__ = ["bound_chart", "cost_regression", "kpi_panels", "operator_heatmap", "review_burden"]


def operator_heatmap(study, rate: str, title: str, fmt: str = ".2f") -> alt.LayerChart:
    """An operator × policy heat map of one rate."""
    order = list(dict.fromkeys(study.rows["policy"]))
    base = alt.Chart(study.table([rate])).encode(
        x=alt.X("policy:N", sort=order, title=None), y=alt.Y("operator:N", title=None)
    )
    rect = base.mark_rect().encode(color=alt.Color(f"{rate}:Q", title=title, scale=alt.Scale(scheme="orangered")))
    return (rect + base.mark_text(fontSize=10).encode(text=alt.Text(f"{rate}:Q", format=fmt))).properties(
        width=240, height=380, title=title
    )


def review_burden(study, profile: str) -> alt.FacetChart:
    """Review prompts per update by policy, faceted by history length and edit intensity."""
    data = study.table(["review_per_update"])
    data = data[data["profile"] == profile]
    order = list(dict.fromkeys(study.rows["policy"]))
    base = alt.Chart().encode(x=alt.X("policy:N", sort=order, title=None), color="policy:N")
    return (
        alt.layer(
            base.mark_bar().encode(y=alt.Y("review_per_update:Q", title="review prompts per update")),
            base.mark_rule().encode(y="review_per_update_low:Q", y2="review_per_update_high:Q"),
            data=data,
        )
        .properties(width=150, height=160, title=profile)
        .facet(
            column=alt.Column("n_versions:O", title="versions in the history"),
            row=alt.Row("intensity:O", title="edit intensity"),
        )
    )


def kpi_panels(study, kpis: Mapping[str, str]) -> alt.FacetChart:
    """Each KPI (column → label) per axis value in the default world, with 95 % intervals."""
    s = study.summary(list(kpis))
    long = pd.concat(
        [
            s[["axis", "value"]].assign(kpi=label, estimate=s[k], low=s[f"{k}_lo"], high=s[f"{k}_hi"])
            for k, label in kpis.items()
        ]
    )
    base = alt.Chart().encode(x=alt.X("value:N", title=None, sort=None))
    panel = alt.layer(
        base.mark_errorbar().encode(y=alt.Y("low:Q", title=None), y2="high:Q"),
        base.mark_point(filled=True).encode(y="estimate:Q"),
        data=long,
    ).properties(width=90, height=90)
    return panel.facet(
        row=alt.Row("kpi:N", title=None, sort=list(kpis.values())),
        column=alt.Column("axis:N", title=None, sort=list(dict.fromkeys(s["axis"]))),
    ).resolve_scale(x="independent", y="independent")


def cost_regression(result, max_learned: int | None = None) -> alt.FacetChart:
    """Regression vs the no-delta build against resident learned tokens, engines side by side, one panel per
    turn, with the 95 % intervals; up to `max_learned` (default: the largest size every engine measured)."""
    df = result.table()
    df = df[df.measure == "engine CPU"] if (df.measure == "engine CPU").any() else df
    top = max_learned or min(int(g.learned_tokens.max()) for _, g in df.groupby("engine"))
    df = df[df.learned_tokens <= top]
    base = alt.Chart(df).encode(
        x=alt.X("learned_tokens:Q", title="resident learned tokens"), color=alt.Color("engine:N", title=None)
    )
    band = base.mark_area(opacity=0.2).encode(
        y=alt.Y("ci_low:Q", title="regression vs no-delta build", axis=alt.Axis(format="%")), y2="ci_high:Q"
    )
    line = base.mark_line(point=True).encode(y="regression:Q")
    return (
        (band + line)
        .properties(width=280, height=200)
        .facet(column=alt.Column("turn:N", title=None))
        .resolve_scale(y="independent")
    )


def bound_chart(
    frame: pd.DataFrame,
    along,
    estimate: str,
    low: str | None = None,
    high: str | None = None,
    bound: float | str | None = None,
    *,
    value_title: str | None = None,
    domain=None,
    horizontal: bool = False,
    color=None,
    tooltip=None,
    line: bool = False,
    facet=None,
    columns: int | None = None,
    independent: bool = False,
    title: str | None = None,
    width: int = 380,
    height: int = 220,
) -> alt.TopLevelMixin:
    """An estimate, its interval and the decision rule's bound: a filled point (joined by a line when `line`) at
    `estimate`, a rule from `low` to `high`, and the bound as a dashed black rule across the panel.

    `along` places the rows (a field or an `alt.X`, or an `alt.Y` when `horizontal`); the estimate runs on the
    other axis, titled `value_title`, its scale fixed to `domain` if given. `bound` is a number (one line) or a
    column (one line per facet panel, e.g. a bound that differs per harm). `facet` (a field, `alt.Facet`,
    `alt.Row` or `alt.Column`) splits the chart into panels, `columns` wide; `independent` gives each panel its
    own value scale.

        bound_chart(df, alt.X("co_load:Q"), "leak_user", "leak_user_low", "leak_user_high", bound=0.05)
    """
    Along, Value = (alt.Y, alt.X) if horizontal else (alt.X, alt.Y)
    ch = "x" if horizontal else "y"
    kw = {"title": value_title} if value_title is not None else {}
    if domain is not None:
        kw["scale"] = alt.Scale(domain=list(domain))
    base = alt.Chart(frame).encode(**{"y" if horizontal else "x": Along(along) if isinstance(along, str) else along})
    if color is not None:
        base = base.encode(color=color)
    layers = []
    if low is not None and high is not None:
        layers.append(base.mark_rule().encode(**{ch: Value(f"{low}:Q", **kw), f"{ch}2": f"{high}:Q"}))
    mark = base.mark_line(point=True) if line else base.mark_point(filled=True)
    layers.append(mark.encode(**{ch: Value(f"{estimate}:Q", **kw)}, **({"tooltip": tooltip} if tooltip else {})))
    if bound is not None:
        where = Value(f"{bound}:Q", **kw) if isinstance(bound, str) else Value(datum=bound, **kw)
        layers.append(alt.Chart(frame).mark_rule(strokeDash=[4, 4], color="black").encode(**{ch: where}))
    chart = alt.layer(*layers).properties(width=width, height=height)
    if facet is not None:
        how = {alt.Row: "row", alt.Column: "column"}.get(type(facet), "facet")
        chart = chart.facet(**{how: facet}, **({"columns": columns} if columns else {}))
        if independent:
            chart = chart.resolve_scale(**{ch: "independent"})
    return chart.properties(title=title) if title else chart
