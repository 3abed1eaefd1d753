"""The wiring panel: switch each tool of the modelled agent off / shipped / on and watch what still needs tier 2."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import ipywidgets as widgets
import pandas as pd

from overlay_kit.studies.lessons import LabelledLesson, Registry, needs_tier2

from .panel import Panel, run_note

__all__ = ["WiringPanel"]


class WiringPanel(Panel):
    """A cell's value displays it (`panel.widget` is the UI); `panel.registry` the current wiring;
    `panel.remaining()` what needs tier 2.

    The readout is written straight into an Output widget's state (no display messages), so a notebook that
    shows the panel re-runs byte-identically under nbval.
    """

    def __init__(self, lessons: Sequence[LabelledLesson], registry: Registry, forbidden: Iterable[str] = ()):
        """`forbidden`: tool ids the gates refuse learning to steer (`lessons.write_path_tools`); they are
        labelled, and the `gates` button switches every tool on except them."""
        self.lessons = tuple(lessons)
        self.registry = registry
        self.forbidden = frozenset(forbidden)
        self.out = widgets.Output()
        self.toggles: dict[str, widgets.ToggleButtons] = {}
        rows = []
        for t in registry.wireable:
            options = ["off", "shipped", "on"] if t.wired and t.wired != t.reads else ["off", "on"]
            value = registry.state(t.id)
            toggle = widgets.ToggleButtons(
                options=options, value=value if value in options else "on", style={"button_width": "64px"}
            )
            toggle.observe(lambda change, tid=t.id: self._set(tid, change["new"]), names="value")
            self.toggles[t.id] = toggle
            label = t.id + (" (write path)" if t.id in self.forbidden else "")
            rows.append(widgets.HBox([widgets.Label(label, layout=widgets.Layout(width="260px")), toggle]))
        names = ("none", "shipped", "gates", "all") if self.forbidden else ("none", "shipped", "all")
        buttons = {name: widgets.Button(description=name) for name in names}
        for name, b in buttons.items():
            b.on_click(lambda _b, name=name: self.set_all(name))
        self.widget = widgets.VBox([run_note(), widgets.HBox(list(buttons.values())), *rows, self.out])
        self.widget.add_class("overlay-panel")
        self._render()

    def _set(self, tool_id: str, state: str) -> None:
        self.registry = self.registry.switch(tool_id, state)
        self._render()

    def set_all(self, which: str) -> None:
        """`none`, `shipped`, `gates` (on unless the gates forbid it) or `all`: every switch at once."""
        for tid, toggle in self.toggles.items():
            here = ("none" if tid in self.forbidden else "all") if which == "gates" else which
            state = {"none": "off", "all": "on"}.get(here) or (
                "shipped" if "shipped" in toggle.options else ("on" if self.registry.tool(tid).wired else "off")
            )
            with toggle.hold_trait_notifications():
                toggle.unobserve_all("value")
                toggle.value = state
                toggle.observe(lambda change, tid=tid: self._set(tid, change["new"]), names="value")
            self.registry = self.registry.switch(tid, state)
        self._render()

    def remaining(self) -> pd.DataFrame:
        left = needs_tier2(self.lessons, self.registry)
        if not left:
            return pd.DataFrame(columns=["domain", "namespace", "could be read by", "lessons"])
        df = pd.DataFrame(
            [
                {
                    "domain": x.domain,
                    "namespace": x.namespace,
                    "could be read by": ", ".join(self.registry.could_read(x.namespace, x.domain)) or "—",
                }
                for x in left
            ]
        )
        return (
            df.groupby(["domain", "namespace", "could be read by"])
            .size()
            .rename("lessons")
            .reset_index()
            .sort_values(["lessons", "domain"], ascending=[False, True], ignore_index=True)
        )

    def summary(self) -> str:
        value = [x for x in self.lessons if x.value_shaped]
        left = needs_tier2(self.lessons, self.registry)
        on = sum(self.registry.is_on(t.id) for t in self.registry.wireable)
        return (
            f"{on} of {len(self.registry.wireable)} tools reading learned facts: {len(left)} of {len(value)} "
            f"value-shaped lessons ({len(left) / len(value):.1%}; {len(left) / len(self.lessons):.1%} of all "
            "lessons) have no reader and need tier 2"
        )

    def _render(self) -> None:
        self.out.outputs = ()
        self.out.append_stdout(self.summary() + "\n")
        self.out.append_display_data(self.remaining())
