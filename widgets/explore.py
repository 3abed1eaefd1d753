"""The study explorer: move a study's stated assumptions and re-run it, its table and finding beside the controls.

    StudyExplorer(shadowing.run, users=(4, 40, 4, 12), p_shadow=(0.0, 0.5, 0.05, 0.1),
                  policy=["name", "name+root"], full=False)

Each keyword names one argument of the study's `run` and its control: `(low, high, step, value)` a slider
(integer when all four are integers), a list a dropdown (its first item selected), a bool a checkbox. **Run**
calls `run(**values)` and shows the study object's `.table()` and `.finding()` (Markdown). The study runs once
when the explorer is made, so a stored notebook shows the result at the values it opened with. The readout is
written into HTML widgets (no display messages), so a notebook showing it re-runs byte-identically under nbval.
"""

from __future__ import annotations

import html
import inspect
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
from markdown_it import MarkdownIt

from .panel import Panel, run_note

__all__ = ["StudyExplorer"]

_MD = MarkdownIt("commonmark").enable("table")


def _control(name: str, spec: Any) -> widgets.ValueWidget:
    style = {"description_width": "initial"}
    if isinstance(spec, bool):
        return widgets.Checkbox(value=spec, description=name, style=style)
    if isinstance(spec, list):
        if not spec:
            raise ValueError(f"{name}: a dropdown needs at least one choice")
        return widgets.Dropdown(options=[(str(c), c) for c in spec], value=spec[0], description=name, style=style)
    if isinstance(spec, tuple) and len(spec) == 4 and all(isinstance(x, (int, float)) for x in spec):
        low, high, step, value = spec
        if not low <= value <= high or step <= 0:
            raise ValueError(f"{name}: a slider needs low <= value <= high and a positive step, got {spec}")
        kind = widgets.IntSlider if all(isinstance(x, int) for x in spec) else widgets.FloatSlider
        return kind(
            value=value,
            min=low,
            max=high,
            step=step,
            description=name,
            continuous_update=False,
            style=style,
            layout=widgets.Layout(width="420px"),
        )
    raise TypeError(f"{name}: a control is (low, high, step, value), a list of choices or a bool; got {spec!r}")


class StudyExplorer(Panel):
    """A cell's value displays it (`explorer.widget` is the UI); `explorer.study` is the last run's study
    object, `explorer.values()` the arguments it ran with."""

    def __init__(self, run: Callable[..., Any], **controls: Any):
        if not controls:
            raise ValueError("StudyExplorer needs at least one control")
        params = inspect.signature(run).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            unknown = sorted(set(controls) - set(params))
            if unknown:
                raise TypeError(f"{getattr(run, '__qualname__', run)} takes no argument {unknown}")
        self.run = run
        self.controls = {name: _control(name, spec) for name, spec in controls.items()}
        self.button = widgets.Button(description="Run", button_style="primary")
        self.button.on_click(lambda _b: self.refresh())
        self.status, self.table, self.finding = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.widget = widgets.VBox(
            [run_note(), *self.controls.values(), self.button, self.status, self.table, self.finding]
        )
        self.widget.add_class("overlay-panel")
        self.study: Any = None
        self.refresh()

    def values(self) -> dict[str, Any]:
        return {name: c.value for name, c in self.controls.items()}

    def summary(self) -> str:
        return ", ".join(f"{k} = {v}" for k, v in self.values().items())

    def refresh(self) -> Any:
        """Run the study at the controls' values and show its table and finding; an error is shown, not raised
        (a bad combination of values is the user's to fix)."""
        try:
            self.study = self.run(**self.values())
        except (ValueError, TypeError) as exc:
            self.status.value = (
                f"<p style='color:#cf222e'>{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</p>"
            )
            return None
        self.status.value = f"<p><i>ran with {html.escape(self.summary())}</i></p>"
        self.table.value = self.study.table().to_html(index=False, float_format=lambda x: f"{x:.3g}", border=0)
        self.finding.value = _MD.render(self.study.finding())
        return self.study
