"""Altair charts of the studies' results (presentation lives here, so `overlay_kit` imports no Jupyter package).

Each function takes a study result from `overlay_kit.studies` and draws from its public tables:

    charts.operator_heatmap(study, "false_orphan", "false-orphan rate")   # sim.operator_study
    charts.review_burden(study, "typical")                                # sim.history_study
    charts.kpi_panels(study, {"nonrecurrence": "non-recurrence"})         # kpis.run
    charts.cost_regression(result)                                        # cost.run
"""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import pandas as pd

__all__ = ["cost_regression", "kpi_panels", "operator_heatmap", "review_burden"]


def operator_heatmap(study, rate: str, title: str, fmt: str = ".2f") -> alt.LayerChart:
    """An operator × policy heat map of one rate."""
    order = list(dict.fromkeys(study.rows["policy"]))
    base = alt.Chart(study.table([rate])).encode(x=alt.X("policy:N", sort=order, title=None),
                                                 y=alt.Y("operator:N", title=None))
    rect = base.mark_rect().encode(color=alt.Color(f"{rate}:Q", title=title, scale=alt.Scale(scheme="orangered")))
    return (rect + base.mark_text(fontSize=10).encode(text=alt.Text(f"{rate}:Q", format=fmt))).properties(
        width=240, height=380, title=title)


def review_burden(study, profile: str) -> alt.FacetChart:
    """Review prompts per update by policy, faceted by history length and edit intensity."""
    data = study.table(["review_per_update"])
    data = data[data["profile"] == profile]
    order = list(dict.fromkeys(study.rows["policy"]))
    base = alt.Chart().encode(x=alt.X("policy:N", sort=order, title=None), color="policy:N")
    return alt.layer(base.mark_bar().encode(y=alt.Y("review_per_update:Q", title="review prompts per update")),
                     base.mark_rule().encode(y="review_per_update_low:Q", y2="review_per_update_high:Q"),
                     data=data).properties(width=150, height=160, title=profile).facet(
        column=alt.Column("n_versions:O", title="versions in the history"),
        row=alt.Row("intensity:O", title="edit intensity"))


def kpi_panels(study, kpis: Mapping[str, str]) -> alt.FacetChart:
    """Each KPI (column → label) per axis value in the default world, with 95 % intervals."""
    s = study.summary(list(kpis))
    long = pd.concat([s[["axis", "value"]].assign(kpi=label, estimate=s[k], low=s[f"{k}_lo"], high=s[f"{k}_hi"])
                      for k, label in kpis.items()])
    base = alt.Chart().encode(x=alt.X("value:N", title=None, sort=None))
    panel = alt.layer(base.mark_errorbar().encode(y=alt.Y("low:Q", title=None), y2="high:Q"),
                      base.mark_point(filled=True).encode(y="estimate:Q"), data=long).properties(width=90, height=90)
    return panel.facet(row=alt.Row("kpi:N", title=None, sort=list(kpis.values())),
                       column=alt.Column("axis:N", title=None, sort=list(dict.fromkeys(s["axis"])))
                       ).resolve_scale(x="independent", y="independent")


def cost_regression(result, max_learned: int | None = None) -> alt.FacetChart:
    """Regression vs the no-delta build against resident learned tokens, engines side by side, one panel per
    turn, with the 95 % intervals; up to `max_learned` (default: the largest size every engine measured)."""
    df = result.table()
    df = df[df.measure == "engine CPU"] if (df.measure == "engine CPU").any() else df
    top = max_learned or min(int(g.learned_tokens.max()) for _, g in df.groupby("engine"))
    df = df[df.learned_tokens <= top]
    base = alt.Chart(df).encode(x=alt.X("learned_tokens:Q", title="resident learned tokens"),
                                color=alt.Color("engine:N", title=None))
    band = base.mark_area(opacity=0.2).encode(y=alt.Y("ci_low:Q", title="regression vs no-delta build",
                                                      axis=alt.Axis(format="%")), y2="ci_high:Q")
    line = base.mark_line(point=True).encode(y="regression:Q")
    return (band + line).properties(width=280, height=200).facet(column=alt.Column("turn:N", title=None)
                                                                 ).resolve_scale(y="independent")
