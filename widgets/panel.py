"""What every front-end panel shares: it displays itself as a cell's value, and says when it is only a picture.

A panel (`ReviewPanel`, `BudgetTuner`, `AnchorInspector`, `WiringPanel`) keeps its ipywidgets tree in `.widget`.
As a cell's value its display bundle holds three forms, and each front end shows the richest it can:

- the live widget (`application/vnd.jupyter.widget-view+json`), for a front end with a widget manager
  (JupyterLab, Notebook 7, VS Code, Colab);
- `text/html`, a static snapshot of what the panel shows, for a viewer without one: an untrusted notebook,
  a repository preview, nbviewer; it says that the panel is interactive only when its cell runs;
- `text/plain`, one line naming the panel, for everything else.

A stored widget drawn from the notebook's saved state, or from an exported page, has no kernel behind it: its
buttons would look live and do nothing. ipywidgets marks such a view, and every view inside it,
`jupyter-widgets-disconnected`, and draws a red broken-chain icon (a `::before` font glyph, from
`@jupyter-widgets/base`'s CSS) before each one: a dozen red icons on one ReviewPanel. Inside a panel those
icons are hidden (`QUIET_CSS`); the panel's `RUN_NOTE` says instead, once and in words, that it is a stored
view ("Stored view: run this cell to use it"), and its controls are dimmed. `overlay_widgets.report --store`
quiets a stored tqdm bar the same way (a picture of what a finished sweep did: nothing to reconnect).
"""

from __future__ import annotations

import html

import ipywidgets as widgets

__all__ = ["QUIET", "QUIET_CSS", "RUN_NOTE_TEXT", "Panel", "run_note", "snapshot_html"]

RUN_NOTE_TEXT = "Stored view: run this cell to use it (its buttons and sliders need a running kernel)."
# The classes whose widget trees draw no disconnected icon: a panel, and a stored progress bar (report.py).
QUIET = ("overlay-panel", "overlay-stored-bar")
_QUIET = ":is(" + ",".join(f".{c}" for c in QUIET) + ")"
# @jupyter-widgets/base: `.jupyter-widgets-disconnected::before { content: '\f127'; color: #d9534f; … }`, on
# the tree's root and on every view inside it; one class more here, so this wins wherever the two load.
QUIET_CSS = (
    f"{_QUIET}.jupyter-widgets-disconnected::before,{_QUIET} .jupyter-widgets-disconnected::before"
    "{content:none;display:none}"
)
_RUN_NOTE_CSS = (
    f"<style>{QUIET_CSS}.overlay-run-note{{display:none}}"
    ".jupyter-widgets-disconnected .overlay-run-note{display:block;color:#9a6700;font-size:12px;"
    "font-weight:600;margin:2px 0 6px 0}"
    ".jupyter-widgets-disconnected.overlay-panel :is(button,input,textarea,.widget-slider)"
    "{opacity:.55;pointer-events:none}</style>"
)


def run_note() -> widgets.HTML:
    """The note a panel shows only where ipywidgets marks it disconnected (a stored or exported view)."""
    return widgets.HTML(f"{_RUN_NOTE_CSS}<div class='overlay-run-note'>⟳ {html.escape(RUN_NOTE_TEXT)}</div>")


def snapshot_html(widget: widgets.Widget) -> str:
    """A static HTML picture of a widget tree: HTML values as they are, every control as its label and value,
    buttons as disabled buttons. No script; what a sanitizing viewer keeps of it is still readable."""
    if isinstance(widget, widgets.HTML):
        return "" if "overlay-run-note" in widget.value else widget.value
    if isinstance(widget, widgets.Button):
        return f"<button disabled>{html.escape(widget.description)}</button> "
    if isinstance(widget, widgets.Box):
        tag = "span" if isinstance(widget, widgets.HBox) else "div"
        return f"<{tag}>" + "".join(snapshot_html(w) for w in widget.children) + f"</{tag}>"
    if isinstance(widget, widgets.Output):
        return "".join(
            html.escape(o.get("text", ""))
            if o.get("output_type") == "stream"
            else o.get("data", {}).get("text/html", html.escape(o.get("data", {}).get("text/plain", "")))
            for o in widget.outputs
        )
    if isinstance(widget, widgets.ValueWidget):
        label, value = getattr(widget, "description", "") or type(widget).__name__, str(widget.value)
        value = value if len(value) <= 400 else value[:400] + "…"
        return f"<div><b>{html.escape(label)}</b>: <code>{html.escape(value)}</code></div>"
    return ""


class Panel:
    """Mixed into each panel: `widget` (its ipywidgets tree, built with `run_note()` as a child and
    `self.widget.add_class("overlay-panel")`) and `summary()` (one line for `text/plain`)."""

    widget: widgets.Widget

    def summary(self) -> str:
        return ""

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        bundle = dict(self.widget._repr_mimebundle_())
        name = type(self).__name__
        line = f"{name}: {self.summary()}".rstrip(": ")
        bundle["text/plain"] = f"{line} (interactive: run this cell to use it)"
        bundle["text/html"] = (
            f"<div class='overlay-snapshot'><p><i>{html.escape(name)}, as stored: interactive "
            f"only when this cell runs in a live kernel.</i></p>{snapshot_html(self.widget)}</div>"
        )
        return bundle
