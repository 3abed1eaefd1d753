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

from overlay_kit import budget
from overlay_kit.display import badge, esc, table
from overlay_kit.llm import LLMError
from overlay_kit.studies import tuning

__all__ = ["BudgetTuner", "chart", "svg"]

DEFAULT_PREFILL_TPS = 1000.0  # tokens/s; a parameter to set from a measurement, not a claim about any device


def chart(v: tuning.View) -> alt.Chart:
    """Stacked bars per skill: authored vs learned resident tokens at the view's ceiling."""
    rows = [{"skill": s.skill, "part": part, "tokens": n}
            for s in v.skills for part, n in (("authored", s.authored), ("learned", s.learned))]
    return (alt.Chart(pd.DataFrame(rows), title=f"resident tokens at ceiling {v.ceiling}")
            .mark_bar()
            .encode(y=alt.Y("skill:N", sort=None, title=None), x=alt.X("sum(tokens):Q", title="tokens"),
                    color=alt.Color("part:N", sort=["authored", "learned"],
                                    scale=alt.Scale(domain=["authored", "learned"], range=["#8c959f", "#2da44e"])),
                    order=alt.Order("part:N", sort="ascending"), tooltip=["skill", "part", "tokens"])
            .properties(width=420, height=28 * max(1, len(v.skills))))


def svg(c: alt.Chart) -> str:
    """Render a chart to SVG offline (vl-convert; no browser, no network)."""
    return vl_convert.vegalite_to_svg(c.to_dict())


class BudgetTuner:
    """`tuner.widget` is the UI; `tuner.view` the current `tuning.View`; `tuner.ttft()` the estimate."""

    def __init__(self, skills: Sequence, store=None, deltas: Iterable | None = None, *,
                 ceiling: int = budget.DEFAULT_CEILING, prefill_tps: float = DEFAULT_PREFILL_TPS,
                 scope: str | Iterable[str] = "user", client=None, model: str | None = None,
                 max_ceiling: int = 32768, step: int = 256):
        if store is None and deltas is None:
            raise ValueError("BudgetTuner needs a store or a list of deltas")
        self.skills = list(skills)
        if deltas is None:
            deltas = [d for s in self.skills for d in store.search(s.name, scope=scope, status="active")]
        self.deltas = list(deltas)
        self.client, self.model = client, model
        self.measured: tuple[float | None, str] | None = None
        self.slider = widgets.IntSlider(value=ceiling, min=step, max=max(max_ceiling, ceiling), step=step,
                                        description="ceiling", continuous_update=False,
                                        layout=widgets.Layout(width="520px"))
        self.prefill = widgets.BoundedFloatText(value=prefill_tps, min=1.0, max=1e7, step=100.0,
                                                description="prefill tok/s")
        self.measure_button = widgets.Button(description="Measure TTFT", disabled=client is None or model is None,
                                             tooltip="send the resident prompt to the local model" if client else
                                             "no local model: pass client= and model=")
        self.summary, self.figure, self.fates = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.slider.observe(lambda _c: self.refresh(), names="value")
        self.prefill.observe(lambda _c: self._summarize(), names="value")
        self.measure_button.on_click(lambda _b: self.measure())
        self.widget = widgets.VBox([widgets.HBox([self.slider, self.prefill, self.measure_button]), self.summary,
                                    self.figure, self.fates])
        self.widget.add_class("overlay-budget")
        self.view: tuning.View | None = None
        self.refresh()

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
        self.figure.value = svg(chart(self.view))
        self._summarize()
        self._list_fates()

    def _summarize(self) -> None:
        v = self.view
        now, full = self.ttft()
        counts = " · ".join(f"{len(v.ids(f))} {f}" for f in tuning.FATES)
        over = " " + badge("authored text alone is over the ceiling", "#cf222e") if v.plan.over else ""
        lines = [f"<b>{v.resident_tokens}</b> resident tokens ({v.authored} authored + {v.learned} learned) under "
                 f"ceiling {v.ceiling} (retrieval reserve {v.reserve}) · {counts}{over}",
                 f"time to first token at {self.prefill.value:g} tok/s prefill: ~{now:.2f} s for the resident "
                 f"prompt, ~{full:.2f} s for a prompt filling the ceiling (estimate)"]
        if self.measured is not None:
            secs, source = self.measured
            lines.append(f"measured: {secs:.3f} s ({esc(source)})" if secs is not None else esc(source))
        self.summary.value = "<div>" + "</div><div>".join(lines) + "</div>"

    def _list_fates(self) -> None:
        by_id = {d.id: d for d in self.deltas}
        order = {f: i for i, f in enumerate(tuning.FATES)}
        rows = [(badge(f, {"resident": "#1a7f37", "retrieval-only": "#9a6700", "archived": "#6e7781"}[f]),
                 f"<code>{esc(i)}</code>", f"{esc(by_id[i].skill)}#{esc(by_id[i].anchor.section)}",
                 f"t{by_id[i].tier}", f"{by_id[i].success_count}/{by_id[i].attempt_count}", esc(by_id[i].text[:90]))
                for i, f in sorted(self.view.fates.items(), key=lambda kv: (order[kv[1]], by_id[kv[0]].sort_key))]
        self.fates.value = (f"<details><summary>which deltas stay resident, go retrieval-only, would be archived "
                            f"({len(rows)})</summary>" + table(("fate", "id", "anchor", "tier", "evidence", "lesson"),
                                                                rows) + "</details>")
