"""ipywidgets front-ends over overlay_kit's public API (import name `overlay_widgets`).

`ReviewPanel` (review.py), `BudgetTuner` (budget.py), `AnchorInspector` (anchors.py), `WiringPanel`
(wiring.py), `StudyExplorer` (explore.py: move a study's assumptions and re-run it); `charts` draws the studies'
results (altair); `notebook.setup()` is the shared notebook set-up. Imported lazily, so `import overlay_widgets`
stays cheap (altair loads only with the tuner).
"""

from importlib import import_module

__all__ = ["AnchorInspector", "BudgetTuner", "ReviewPanel", "StudyExplorer", "WiringPanel"]
_HOME = {
    "AnchorInspector": "anchors",
    "BudgetTuner": "budget",
    "ReviewPanel": "review",
    "StudyExplorer": "explore",
    "WiringPanel": "wiring",
}


def __getattr__(name: str):
    if name in _HOME:
        return getattr(import_module(f".{_HOME[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
