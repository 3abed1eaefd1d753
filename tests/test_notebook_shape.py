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
