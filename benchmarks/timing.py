"""The benchmarks' one timing helper (imported by the bench_*.py scripts, which run from this folder)."""

from __future__ import annotations

import time
from collections.abc import Callable


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    """Wall seconds of `repeat` calls of `fn`, after one warm-up call (imports, parsers, file cache)."""
    fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out
