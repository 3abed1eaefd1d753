"""Small helpers every layer shares, each with one home: UTC instants and their fixed-width text form,
canonical JSON, the character-bigram similarity used to reconcile near-duplicate texts, and a logger that
imports `logging` only when it logs."""

from __future__ import annotations

import gc
import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["bigram_similarity", "dumps", "find_all", "gc_paused", "iso", "lazy_logger", "once", "parse_time",
           "read_jsonl", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso(when: datetime | None) -> str | None:
    """A UTC ISO-8601 string of fixed width (microseconds, +00:00): text order == time order."""
    if when is None:
        return None
    if when.tzinfo is None:
        raise ValueError(f"naive datetime {when!r}: overlay_kit stores UTC instants only")
    return when.astimezone(timezone.utc).isoformat(timespec="microseconds")


def parse_time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).astimezone(timezone.utc)


_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8 kept."""
    return _CANONICAL_JSON.encode(value)


def read_jsonl(path: str | Path, what: str = "JSON record") -> Iterator[tuple[int, Any]]:
    """(line number, value) for every non-blank line of a JSONL file; a line that is not JSON raises
    `ValueError("PATH:LINE: not a <what> (...)")` (callers name their own record errors the same way)."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield n, json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"{path}:{n}: not a {what} ({type(exc).__name__}: {exc})") from None


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def bigram_similarity(a: str, b: str) -> float:
    """Dice coefficient over character bigrams of the normalized texts (casefold, punctuation dropped)."""
    a, b = _norm(a), _norm(b)
    if len(a) < 2 or len(b) < 2:
        return float(a == b)
    x, y = Counter(a[i:i + 2] for i in range(len(a) - 1)), Counter(b[i:i + 2] for i in range(len(b) - 1))
    return 2 * sum((x & y).values()) / (sum(x.values()) + sum(y.values()))


class _LazyLogger:
    """`logging.getLogger(name)`, looked up (and `logging` imported: ~3 ms with `traceback`) on the first message,
    so a CLI start that logs nothing does not pay for it."""

    def __init__(self, name: str):
        self.name = name

    def __getattr__(self, attr: str):
        import logging

        return getattr(logging.getLogger(self.name), attr)


def lazy_logger(name: str) -> _LazyLogger:
    return _LazyLogger(name)


class once:
    """`functools.cached_property` without its per-access lock (Python 3.11 takes one on every first
    access: a third of the cost of digesting a small section, and of reading a batch row's canonical payload):
    computed on first access, then an ordinary instance attribute (frozen dataclasses too). Safe for immutable
    values computed from immutable fields."""

    def __init__(self, fn):
        self.fn, self.name, self.__doc__ = fn, fn.__name__, fn.__doc__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


def find_all(data: bytes | str, needle: bytes | str) -> Iterator[int]:
    """Every position where `needle` starts in `data`, overlapping ones included (`find` in C, a step a hit)."""
    at = data.find(needle)
    while at >= 0:
        yield at
        at = data.find(needle, at + 1)


@contextmanager
def gc_paused(pause: bool = True):
    """The cyclic garbage collector off for the block (and back as it was after, whatever happens). For work
    that allocates many objects and makes no cycles (a batch of rows, the sections of a large body): each
    collection it would trigger re-walks everything allocated so far. Reference counting frees as usual."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
