"""Issue 18: a seeded CI-sized chunk of the structure fuzz (benchmarks/fuzz_structure.py; `FULL=1` there runs
10,000 cases). 0 structure changes, 0 wrong fallbacks, 0 untyped errors, 0 cases over one second."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fuzz_structure


def test_a_seeded_chunk_of_mutated_skills_keeps_its_structure():
    n = int(os.environ.get("FUZZ_CASES", "150"))
    f = fuzz_structure.run(n, seed=int(os.environ.get("FUZZ_SEED", "18")), chunk=50)
    assert f.cases == n and f.deltas > n
    assert f.structure_changes == 0 and f.wrong_fallbacks == 0 and f.errors == 0, f.failures[:3]
    assert f.over_1s == 0, f.max_seconds
    assert f.fallbacks < f.cases  # most cases render their learned lines


def test_the_fuzz_detects_a_structure_change(monkeypatch):
    """The checker can fail: with the resolver's own guard switched off and a renderer that opens a
    heading, the fuzz reports structure changes."""
    from overlay_kit import budget, resolve

    monkeypatch.setattr(budget, "item_text", lambda d: "- x\n\n## Injected\n")
    monkeypatch.setattr(resolve, "_structure_problem", lambda *a: None)
    f = fuzz_structure.run(20, seed=1, chunk=20)
    assert f.structure_changes > 0
