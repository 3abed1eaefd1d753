"""The budget tuner: slide the resident ceiling and watch what stays in the prompt and what it costs.

A preview over `overlay_kit.studies.tuning.view` (the store's own budget rule; nothing is written): authored vs
learned resident tokens per skill as an Altair chart rendered offline to SVG (vl-convert), which deltas
stay resident, which are demoted to retrieval-only and which would be archived, and the time to first token
of the resident prompt — estimated from a prefill throughput, or measured when a local model answers (a
Lemonade server or the local engine: pass its `LemonadeClient` and model id, then press Measure).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import altair as alt
import ipywidgets as widgets
import pandas as pd
import vl_convert

from overlay_kit.defaults import SHIPPED
from overlay_kit.display import badge, esc, table
from overlay_kit.llm import LLMError
from overlay_kit.studies import tuning

from .panel import Panel, run_note

__all__ = ["BudgetTuner", "chart", "svg"]

DEFAULT_PREFILL_TPS = 1000.0  # tokens/s; a parameter to set from a measurement, not a claim about any device


TOTAL = "all skills (vs the ceiling)"


def chart(v: tuning.View, axis_max: int | None = None) -> alt.Chart:
    """Stacked bars: authored vs learned resident tokens, per skill and in total, on a fixed axis (0 to
    `axis_max`, default the ceiling) with the ceiling and the ceiling minus the retrieval reserve marked."""
    rows = [
        {"skill": name, "part": part, "tokens": n}
        for name, a, learned in [(TOTAL, v.authored, v.learned)] * (len(v.skills) > 1)
        + [(s.skill, s.authored, s.learned) for s in v.skills]
        for part, n in (("authored", a), ("learned", learned))
    ]
    names = list(dict.fromkeys(r["skill"] for r in rows))
    top = max(axis_max or v.ceiling, v.ceiling, v.resident_tokens)
    scale = alt.Scale(domain=[0, top], nice=False)
    x = alt.X("sum(tokens):Q", title="tokens", scale=scale, axis=alt.Axis(format=",d", labelOverlap=True))
    bars = (
        alt.Chart(pd.DataFrame(rows))
        .mark_bar()
        .encode(
            y=alt.Y("skill:N", sort=names, title=None, axis=alt.Axis(labelLimit=220)),
            x=x,
            color=alt.Color(
                "part:N",
                sort=["authored", "learned"],
                title=None,
                scale=alt.Scale(domain=["authored", "learned"], range=["#8c959f", "#2da44e"]),
            ),
            order=alt.Order("part:N", sort="ascending"),
            tooltip=["skill", "part", "tokens"],
        )
    )
    marks = pd.DataFrame(
        [
            {"x": v.ceiling, "label": f"ceiling {v.ceiling:,}"},
            {"x": v.ceiling - v.reserve, "label": f"− reserve {v.reserve:,}"},
        ]
    )
    rules = alt.Chart(marks).mark_rule(color="#cf222e", strokeDash=[4, 3]).encode(x=alt.X("x:Q", scale=scale))
    labels = (
        alt.Chart(marks.head(1))
        .mark_text(align="right", dx=-3, dy=-6, color="#cf222e", fontSize=11)
        .encode(x=alt.X("x:Q", scale=scale), y=alt.value(0), text="label:N")
    )
    return alt.layer(bars, rules, labels, title=f"resident tokens at ceiling {v.ceiling:,}").properties(
        width=420, height=28 * max(1, len(names))
    )


def svg(c: alt.Chart) -> str:
    """Render a chart to SVG offline (vl-convert; no browser, no network)."""
    return vl_convert.vegalite_to_svg(c.to_dict())


class BudgetTuner(Panel):
    """A cell's value displays it (`tuner.widget` is the UI); `tuner.view` the current `tuning.View`;
    `tuner.ttft()` the estimate."""

    def __init__(
        self,
        skills: Sequence,
        store=None,
        deltas: Iterable | None = None,
        *,
        ceiling: int = SHIPPED.ceiling,
        prefill_tps: float = DEFAULT_PREFILL_TPS,
        scope: str | Iterable[str] = "user",
        client=None,
        model: str | None = None,
        max_ceiling: int = 32768,
        step: int = 256,
    ):
        if store is None and deltas is None:
            raise ValueError("BudgetTuner needs a store or a list of deltas")
        self.skills = list(skills)
        if deltas is None:
            deltas = [d for s in self.skills for d in store.search(s.name, scope=scope, status="active")]
        self.deltas = list(deltas)
        self.client, self.model = client, model
        self.measured: tuple[float | None, str] | None = None
        self.slider = widgets.IntSlider(
            value=ceiling,
            min=step,
            max=max(max_ceiling, ceiling),
            step=step,
            description="ceiling",
            continuous_update=False,
            layout=widgets.Layout(width="520px"),
        )
        self.prefill = widgets.BoundedFloatText(
            value=prefill_tps, min=1.0, max=1e7, step=100.0, description="prefill tok/s"
        )
        no_model = client is None or model is None
        self.measure_button = widgets.Button(
            description="Measure TTFT",
            disabled=no_model,
            tooltip="no local model: pass client= and model="
            if no_model
            else "send the resident prompt to the local model",
        )
        self.measure_hint = widgets.HTML(
            "<span style='font-size:12px;color:#57606a;white-space:nowrap'>Measure needs a local model: "
            "<code>BudgetTuner(…, client=LemonadeClient(url), model=…)</code> (a Lemonade server or "
            "<code>overlay_kit.llm.engine.Engine</code>)</span>"
            if no_model
            else ""
        )
        self.totals, self.figure, self.fates = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.axis_max = self.slider.max  # the chart's axis stays put while the slider moves
        self.slider.observe(lambda _c: self.refresh(), names="value")
        self.prefill.observe(lambda _c: self._summarize(), names="value")
        self.measure_button.on_click(lambda _b: self.measure())
        self.widget = widgets.VBox(
            [
                run_note(),
                widgets.HBox([self.slider, self.prefill, self.measure_button]),
                self.measure_hint,
                self.totals,
                self.figure,
                self.fates,
            ]
        )
        self.widget.add_class("overlay-budget")
        self.widget.add_class("overlay-panel")
        self.view: tuning.View | None = None
        self.refresh()

    def summary(self) -> str:
        v = self.view
        return f"{v.resident_tokens:,} resident tokens under ceiling {v.ceiling:,}; " + ", ".join(
            f"{len(v.ids(f))} {f}" for f in tuning.FATES
        )

    @property
    def ceiling(self) -> int:
        return self.slider.value

    def ttft(self) -> tuple[float, float]:
        """Estimated seconds to first token for (the resident prompt now, a prompt filling the ceiling)."""
        tps = self.prefill.value
        return tuning.ttft_estimate(self.view.resident_tokens, tps), tuning.ttft_estimate(self.ceiling, tps)

    def measure(self) -> tuple[float | None, str] | None:
        """Time to first token of the resident prompt on the live model; None (and a note) when none answers."""
        text = "\n\n".join(self.view.texts[s.name] for s in self.skills)
        if self.client is None or self.model is None:
            self.measured = (None, "not measured: no local model (pass client= and model=)")
        else:
            try:
                self.measured = tuning.measure_ttft(self.client, self.model, text)
            except LLMError as exc:  # nothing answered, no recording, the window is exceeded …
                self.measured = (None, f"not measured: {exc}")
        self._summarize()
        return self.measured

    def refresh(self) -> None:
        self.view = tuning.view(self.skills, self.deltas, self.ceiling)
        self.measured = None  # a measurement belongs to the prompt it timed
        self.figure.value = svg(chart(self.view, self.axis_max))
        self._summarize()
        self._list_fates()

    def _summarize(self) -> None:
        v = self.view
        now, full = self.ttft()
        counts = " · ".join(f"{len(v.ids(f))} {f}" for f in tuning.FATES)
        over = " " + badge("authored text alone is over the ceiling", "#cf222e") if v.plan.over else ""

        def n(x):  # a number never wraps in the middle
            return f"<span style='white-space:nowrap'>{x}</span>"

        lines = [
            (
                f"<b>{n(f'{v.resident_tokens:,}')}</b> resident tokens ({n(f'{v.authored:,}')} authored + "
                f"{n(f'{v.learned:,}')} learned) under ceiling {n(f'{v.ceiling:,}')} (retrieval reserve "
                f"{n(f'{v.reserve:,}')}) · {counts}{over}"
            ),
            (
                f"time to first token at {n(f'{self.prefill.value:g} tok/s')} prefill: {n(f'~{now:.2f} s')} for "
                f"the resident prompt, {n(f'~{full:.2f} s')} for a prompt filling the ceiling (estimate)"
            ),
        ]
        if self.measured is not None:
            secs, source = self.measured
            lines.append(n(f"measured: {secs:.3f} s") + f" ({esc(source)})" if secs is not None else esc(source))
        self.totals.value = "<div>" + "</div><div>".join(lines) + "</div>"

    def _list_fates(self) -> None:
        by_id = {d.id: d for d in self.deltas}
        order = {f: i for i, f in enumerate(tuning.FATES)}
        rows = [
            (
                badge(f, {"resident": "#1a7f37", "retrieval-only": "#9a6700", "archived": "#6e7781"}[f]),
                f"<code>{esc(i)}</code>",
                f"{esc(by_id[i].skill)}#{esc(by_id[i].anchor.section)}",
                f"t{by_id[i].tier}",
                f"{by_id[i].success_count}/{by_id[i].attempt_count}",
                esc(by_id[i].text[:90]),
            )
            for i, f in sorted(self.view.fates.items(), key=lambda kv: (order[kv[1]], by_id[kv[0]].sort_key))
        ]
        self.fates.value = (
            f"<details><summary>which deltas stay resident, go retrieval-only, would be archived "
            f"({len(rows)})</summary>"
            + table(("fate", "id", "anchor", "tier", "evidence", "lesson"), rows)
            + "</details>"
        )
