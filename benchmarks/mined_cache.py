"""The histories manifest and its dev / held-out split, and rows mined from every repository of the histories manifest, each at its recorded commit, cached on local disk.

The rows may hold instruction texts, so the cache lives under ~/.cache/overlay_kit and is never committed."""

from __future__ import annotations

import csv
import pickle
import sys
import time
from pathlib import Path
from typing import Callable

HISTORIES = Path(__file__).resolve().parents[1] / "datasets/histories"
MANIFEST = HISTORIES / "manifest.csv"
SPLIT = HISTORIES / "anchoring_split.csv"  # dev / held-out repositories, committed before any tuning


def split() -> dict[str, str]:
    """repository -> "dev" or "heldout"."""
    with open(SPLIT, newline="", encoding="utf-8") as fh:
        return {r["repository"]: r["split"] for r in csv.DictReader(fh)}


def mined(cache: Path, per_repo: Callable[[str, str], list[dict]]) -> list[dict]:
    """`per_repo(repository, commit)` over the manifest, concatenated; read from `cache` when it exists."""
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    with open(MANIFEST, newline="", encoding="utf-8") as fh:
        manifest = list(csv.DictReader(fh))
    rows = []
    for r in manifest:
        t0 = time.perf_counter()
        got = per_repo(r["repository"], r["commit"])
        print(f"{r['repository']}: {len(got)} rows, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        rows.extend(got)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(rows))
    return rows
