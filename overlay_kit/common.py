"""Small helpers every layer shares, each with one home: UTC instants and their fixed-width text form,
canonical JSON, reading a file a user named (capped, never hanging on a FIFO, UTF-8 or an `InputError` naming
PATH:LINE; JSONL line by line), the character-bigram similarity used to reconcile near-duplicate texts, the
cosine every decision reads (the same bits on every CPU), and a logger that imports `logging` only when it logs."""

from __future__ import annotations

import errno
import gc
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = [
    "InputError",
    "bigram_similarity",
    "cosines",
    "dumps",
    "find_all",
    "gc_paused",
    "iso",
    "lazy_logger",
    "once",
    "parse_time",
    "read_capped",
    "read_jsonl",
    "read_text_file",
    "utc_now",
]


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


class FieldError(ValueError):
    """Bad input naming the field at fault: `field`, and the message reads `FIELD: MESSAGE`."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class InputError(ValueError):
    """Bad input in a file the user named: reads `PATH[:LINE]: MESSAGE` (the message names the field, if one);
    under `--json` its `where` is `PATH[:LINE] [field]`."""

    def __init__(self, path, message: str, line: int | None = None, field: str | None = None):
        self.path, self.line, self.field, self.message = str(path), line, field, message
        self.place = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{self.place}: {message}")


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def read_capped(path: str, cap: int, flag: str) -> bytes:
    """The bytes of the regular file `path`, at most `cap` of them. A directory is an `IsADirectoryError`; a FIFO,
    socket or device is refused without waiting on it (opened non-blocking, then checked); a file over `cap` is
    refused from its size before it is read (one that grows while read, at `cap` + 1 bytes)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(st.st_mode):
            what = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device"
            raise InputError(path, f"{what}, not a regular file ({flag} reads regular files only)")
        chunks, total = [], 0
        while total <= cap and st.st_size <= cap:
            chunk = os.read(fd, min(cap + 1 - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if max(st.st_size, total) > cap:
            raise InputError(path, f"{max(st.st_size, total)} bytes: over the {_mib(cap)} cap of {flag}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _utf8(path, data: bytes, line: int | None = None) -> str:
    """`data` decoded, or an `InputError` naming PATH:LINE and the byte: `data` is line `line` of `path`, else
    the whole file (and the line is counted). A UTF-16 byte-order mark or a NUL byte is not UTF-8 text either
    (UTF-16 without a mark is mostly NULs, which are valid UTF-8)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") and line in (None, 1):
        raise InputError(path, "not UTF-8: it starts with a UTF-16 byte-order mark (save it as UTF-8)", 1)
    bad, why, hint = data.find(b"\x00"), "a NUL byte", " (UTF-16? save it as UTF-8)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if bad < 0 or exc.start < bad:
            bad, why, hint = exc.start, f"invalid byte 0x{data[exc.start]:02x}", ""
    if bad < 0:
        return text
    start = 0 if line is not None else data.rfind(b"\n", 0, bad) + 1
    line = line if line is not None else data.count(b"\n", 0, bad) + 1
    raise InputError(path, f"not UTF-8: {why} at byte {bad - start + 1} of the line{hint}", line)


def read_text_file(path: str, cap: int, flag: str) -> str:
    """A UTF-8 text file named on the command line (`read_capped`; a UTF-8 byte-order mark is dropped); one
    that is not UTF-8 is an `InputError` naming PATH:LINE."""
    return _utf8(path, read_capped(path, cap, flag)).removeprefix("\ufeff")


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _no_duplicates(pairs: list) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"key {key!r} appears twice in one object")
    return out


def _check_tree(value, max_depth: int) -> tuple[str | None, str] | None:
    """(field, message) for the first thing in a parsed JSON line that no record may hold: nesting deeper than
    `max_depth`, a string (or key) with a lone surrogate (`"\\ud800"`: not Unicode text); else None. The
    field is the dotted path of object keys (an item of a list is named by its list's field). Iterative: a line
    that is deep but under the parser's own limit cannot exhaust the stack here."""
    stack = [(value, "", 1)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError as exc:
                    return where or None, (
                        f"field {where!r}: " if where else ""
                    ) + f"a lone surrogate \\u{ord(item[exc.start]):04x} (not Unicode text)"
            continue
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                return where or None, (
                    f"field {where!r}: " if where else ""
                ) + f"JSON nested deeper than {max_depth} levels"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for k, v in pairs:
                if isinstance(k, str):
                    stack.append((k, where, depth))
                stack.append((v, f"{where}.{k}".removeprefix(".") if isinstance(k, str) else where, depth + 1))
    return None


JSONL_FILE_CAP = 256 * 2**20  # bytes in a JSONL file read through `read_jsonl` unless the caller sets less
JSONL_LINE_CAP = 16 * 2**20  # bytes in one of its lines
JSON_DEPTH_CAP = 32  # JSON nesting levels in one line


def read_jsonl(
    path: str | Path,
    what: str = "JSON record",
    *,
    cap: int = JSONL_FILE_CAP,
    line_cap: int = JSONL_LINE_CAP,
    depth: int = JSON_DEPTH_CAP,
    reader: str | None = None,
) -> Iterator[tuple[int, Any]]:
    """(line number, value) for every non-blank line of a JSONL file, every line checked before the first is
    yielded: a regular file of at most `cap` bytes (`read_capped`), UTF-8 (a leading byte-order mark dropped),
    lines of at most `line_cap` bytes, each one JSON value with no NaN, no key twice in an object, no lone
    surrogate and at most `depth` levels of nesting. Anything else is an `InputError` naming PATH:LINE (and
    `reader`, e.g. the command-line flag, where the file itself is refused)."""
    data = read_capped(path, cap, reader or f"a {what} file")
    data = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    out = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        if len(raw) > line_cap:
            raise InputError(path, f"a line of {len(raw)} bytes: over the {_mib(line_cap)} cap of a {what}", n)
        text = _utf8(path, raw, n)
        try:
            value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
        except RecursionError:
            raise InputError(path, f"not a {what}: JSON nested deeper than {depth} levels", n) from None
        except ValueError as exc:
            raise InputError(path, f"not a {what} ({type(exc).__name__}: {exc})", n) from None
        # only an escape can make a lone surrogate, only that many brackets that depth: most lines need no walk
        if text.count("[") + text.count("{") > depth or "\\u" in text:
            problem = _check_tree(value, depth)
            if problem:
                raise InputError(path, problem[1], n, problem[0])
        out.append((n, value))
    return iter(out)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def bigram_similarity(a: str, b: str) -> float:
    """Dice coefficient over character bigrams of the normalized texts (casefold, punctuation dropped)."""
    a, b = _norm(a), _norm(b)
    if len(a) < 2 or len(b) < 2:
        return float(a == b)
    x, y = Counter(a[i : i + 2] for i in range(len(a) - 1)), Counter(b[i : i + 2] for i in range(len(b) - 1))
    return 2 * sum((x & y).values()) / (sum(x.values()) + sum(y.values()))


def cosines(a, b):
    """Cosine of every row of `a` with every row of `b` (2-d, or 1-d for one vector), float64 — the same bits on
    every CPU and BLAS kernel, so a threshold, a ranking or a tie decided on it never moves with the machine.

    Each row is scaled by its largest magnitude and rounded to integers of at most `bits` bits, chosen so that
    every product and every partial sum of a dot product is an integer below 2**53: a float64 matmul is then exact
    whatever order or fused multiply-add the kernel uses, and the final square root and division are correctly
    rounded. The rounding moves a cosine by about 2**-bits (≈ 1e-6 at 256 dimensions). A zero row scores 0."""
    return cosines_of(cosine_rows(a), cosine_rows(b))


def cosine_rows(m) -> tuple:
    """One side of `cosines`: its rows rounded to the grid (`bits` from their dimension) and their norms. A caller
    scoring many queries against the same rows keeps this (`selection`'s lesson side) and calls `cosines_of`."""
    import numpy as np  # imported on use: the CLI's resolve path never loads numpy

    m = np.atleast_2d(np.asarray(m, dtype=np.float64))
    bits = (52 - max(m.shape[1], 1).bit_length()) // 2
    peak = np.abs(m).max(axis=1, keepdims=True) if m.size else np.zeros((len(m), 1))
    q = np.rint(m * (2.0**bits / np.where(peak > 0, peak, 1.0)))
    return q, np.sqrt(np.einsum("ij,ij->i", q, q))  # exact integer sums: the order cannot matter


def cosines_of(a: tuple, b: tuple):
    """`cosines` of two sides made by `cosine_rows`."""
    import numpy as np

    (qa, na), (qb, nb) = a, b
    if qa.shape[1] != qb.shape[1]:
        raise ValueError(f"cosines of {qa.shape[1]}- and {qb.shape[1]}-dimensional vectors")
    norms = np.outer(na, nb)
    return np.divide(qa @ qb.T, norms, out=np.zeros(norms.shape), where=norms > 0)


class _LazyLogger:
    """`logging.getLogger(name)`, looked up (and `logging` imported, with `traceback`) on the first message, so a
    CLI start that logs nothing does not pay for it (docs/performance.md)."""

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
