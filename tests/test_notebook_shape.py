"""Notebooks stay thin: logic lives in the package, a cell shows a result (docs/architecture.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
MAX_LINES = 10


def _code(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]).strip() for c in cells if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_code_cell_is_at_most_ten_lines(path):
    long = [src.splitlines()[0] for src in _code(path) if len(src.splitlines()) > MAX_LINES]
    assert not long, f"{path.name}: cells over {MAX_LINES} lines start with {long}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_starts_from_the_shared_setup(path):
    assert any("setup()" in src for src in _code(path)[:2]), f"{path.name}: call overlay_widgets.notebook.setup()"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_is_stored_as_jupyterlab_would_save_it(path):
    """`make notebooks` stores them: one kernel display name (JupyterLab's own, so opening one writes no kernel
    metadata) and no integral float (JupyterLab writes 2.0 back as 2), so opening and saving leaves no diff."""
    from overlay_widgets.report import browser_numbers

    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"] == {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    assert browser_numbers(nb) == nb and json.dumps(browser_numbers(nb)) == json.dumps(nb)
    panels = [
        o
        for c in nb["cells"]
        for o in c.get("outputs", ())
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {}) and "text/html" in o["data"]
    ]
    assert not panels or "application/vnd.jupyter.widget-state+json" in nb["metadata"].get("widgets", {})


def test_browser_numbers_writes_integral_floats_as_a_browser_does():
    from overlay_widgets.report import browser_numbers

    node = {"a": [1.0, 2.5, -0.0, 1e16, True, None, "3.0"], "b": {"c": 0.0}}
    assert json.dumps(browser_numbers(node)) == (
        '{"a": [1, 2.5, 0, 10000000000000000, true, null, "3.0"], "b": {"c": 0}}'
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_sweep_hides_its_progress(path):
    """03, 05 and 07 run 30–120 s sweeps: each shows its tqdm bar (the stored bar is its first state)."""
    assert not [src for src in _code(path) if "progress=False" in src], path.name


def test_jupyter_checkpoints_are_ignored():
    root = NOTEBOOKS[0].parents[1]
    assert ".ipynb_checkpoints/" in (root / ".gitignore").read_text(encoding="utf-8").splitlines()


def _bar_notebook(value, maximum, text):
    ids = ("bar", "left", "fill", "right")
    state = {
        "bar": {"model_name": "HBoxModel", "state": {"children": [f"IPY_MODEL_{i}" for i in ids[1:]]}},
        "left": {"model_name": "HTMLModel", "state": {"value": "histories:\u2007100%"}},
        "fill": {"model_name": "FloatProgressModel", "state": {"value": value, "max": maximum}},
        "right": {"model_name": "HTMLModel", "state": {"value": "\u200716/16\u2007[00:02&lt;00:00]"}},
    }
    out = {
        "output_type": "display_data",
        "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "bar"}, "text/plain": [text]},
    }
    return {
        "cells": [{"cell_type": "code", "outputs": [out]}],
        "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": state}}},
    }


def test_a_stored_bar_shows_what_it_finished_from_its_widget_state():
    from overlay_widgets.report import finished_bars

    nb = finished_bars(_bar_notebook(16, 16, "histories:   0%|          | 0/16 [00:00<?, ?it/s]"))
    assert nb["cells"][0]["outputs"][0]["data"]["text/plain"] == "histories: 100%|██████████| 16/16 [00:02<00:00]"
    untouched = _bar_notebook(16, 0, "histories:   0%|          | 0/16")  # no usable state: left as drawn
    assert finished_bars(untouched)["cells"][0]["outputs"][0]["data"]["text/plain"] == [
        "histories:   0%|          | 0/16"
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_stored_progress_bar_shows_an_unfinished_state(path):
    """What an untrusted JupyterLab, GitHub and nbviewer show of a finished sweep is its bar's text."""
    import re

    nb = json.loads(path.read_text(encoding="utf-8"))
    texts = [
        "".join(o.get("data", {}).get("text/plain", ""))
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", ())
    ]
    assert not [t for t in texts if re.search(r"\b0%\|", t)], path.name


def test_the_quickstart_points_to_every_other_notebook():
    quick = json.loads((NOTEBOOKS[0].parent / "00_quickstart.ipynb").read_text(encoding="utf-8"))
    text = "".join("".join(c["source"]) for c in quick["cells"] if c["cell_type"] == "markdown")
    missing = [p.name for p in NOTEBOOKS if p.stem != "00_quickstart" and f"({p.name})" not in text]
    assert not missing, f"00_quickstart's 'Where to go next' lacks {missing}"
