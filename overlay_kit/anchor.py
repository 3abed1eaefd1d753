"""Skill body → ordered `Section`s, and `Anchor`s that name a section in a way that survives edits.

Headings are as markdown-it-py finds them (CommonMark: ATX and setext headings, fenced code with `#`
lines, headings indented 1-3 spaces); only document-level headings start sections. Finding them is
`overlay_kit.headings`' job: a fence-aware line scan for the common case (`headings.scan_lines`), the mixed
scan with markdown-it on small islands for bodies holding constructs that could hide or fake a heading
(`headings.scan_mixed`), and markdown-it alone (`headings.markdown_it_headings`). `parse_markdown_it`
(markdown-it alone) is the oracle `parse` is tested against; both give identical sections, and parse
results are cached by body. `parse` is bounded (issue 18): a body with more than MAX_SECTIONS
heading-like lines, or whose islands cost markdown-it more than ISLAND_WORK, is refused with
`AnchorError` in well under a second. Each heading
starts a section that runs to the next heading, so the sections partition the body and
`render(parse(b)) == b` byte for byte. A body with headings always starts with a `_preamble` section (the text before the
first heading, possibly empty), so adding or removing a leading blank line never adds or removes a
section; a body without headings is one `_body` section. Slugs are unique within a document. The
digest hashes normalized text (NFC, whitespace runs collapsed, the `#`/underline heading markers
dropped but the heading's inline source kept), so whitespace-only edits keep it and any change of
words — link targets in a heading included — changes it.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from hashlib import sha256 as _sha256
from itertools import accumulate, repeat
from typing import Literal

from . import headings
from .common import gc_paused, once
from .headings import INLINE_LIMIT, ISLAND_WORK, LINE, NEWLINES, AnchorError, Heads, split_lines

__all__ = [
    "BODY",
    "ISLAND_WORK",
    "MAX_SECTIONS",
    "PREAMBLE",
    "Anchor",
    "AnchorError",
    "Location",
    "Section",
    "anchor_for",
    "cache_clear",
    "digest",
    "locate",
    "parse",
    "parse_markdown_it",
    "render",
    "slugify",
    "split_lines",
]

PREAMBLE = "_preamble"
BODY = "_body"
DIGEST_CHARS = 16
# Input bounds (issue 18): every body up to skill.MAX_SKILL_BYTES anchors in < 1 s or is refused with an
# `AnchorError` in < 1 s. A real SKILL.md has tens to a few hundred sections (docs/reliability.md); a body
# with more heading-like lines than MAX_SECTIONS is refused before any section or island is built.
MAX_SECTIONS = 10_000
_GC_PAUSE_CHARS = 65536  # bodies this long parse with the cyclic collector paused (common.gc_paused)
_NOT_SLUG = re.compile(r"[^\w\- ]")
_ASCII_NOT_SLUG = bytes(c for c in range(128) if not re.match(r"[\w\- ]", chr(c)) and not chr(c).isspace())


@dataclass(frozen=True)
class Section:
    """A contiguous slice of the body: a heading line (or none) and everything up to the next heading."""

    slug: str
    heading: str  # plain inline text of the heading; "" for `_preamble` / `_body`
    level: int  # 1-6; 0 for `_preamble` / `_body`
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive; start_line - 1 for an empty section
    text: str  # the exact source text
    heading_lines: int = 0  # how many leading lines of `text` are the heading (2+ for setext)
    heading_source: str = field(default="", repr=False)  # the heading's inline Markdown, markers dropped

    @once
    def digest(self) -> str:
        text = (self.heading_source or self.heading) + "\n" + self.body_text
        if len(text) > _SHORT:  # `digest(text)`, inlined for the common case (a parse digests every section)
            if text.isascii():
                return _sha256(" ".join(text.split()).encode()).hexdigest()[:DIGEST_CHARS]
            return digest(text)
        hit = _SHORT_DIGESTS.get(text)
        if hit is None:
            if len(_SHORT_DIGESTS) >= 65536:
                _SHORT_DIGESTS.clear()
            hit = _SHORT_DIGESTS[text] = digest(text)
        return hit

    @property
    def content_for_digest(self) -> str:
        return (self.heading_source or self.heading) + "\n" + self.body_text

    @once
    def body_text(self) -> str:
        """The section's text below its heading."""
        pos = 0
        for _ in range(self.heading_lines):
            m = LINE.match(self.text, pos)
            if m is None:
                return ""
            pos = m.end()
        return self.text[pos:]


@dataclass(frozen=True)
class Anchor:
    """Where a delta attaches: a section slug, that section's digest at write time, the base version."""

    section: str
    digest: str
    base_version: str | None = None

    def to_dict(self) -> dict:
        return {"section": self.section, "digest": self.digest, "base_version": self.base_version}

    @classmethod
    def from_dict(cls, data: dict) -> Anchor:
        return cls(str(data["section"]), str(data["digest"]), data.get("base_version"))


@dataclass(frozen=True)
class Location:
    """Where an anchor lands in a (new) body: `clean`, `stale` (same slug, changed text) or `orphaned`."""

    state: Literal["clean", "stale", "orphaned"]
    section: Section | None
    moved_to: str | None = None  # an orphan whose exact text now lives under another slug (a hint only)


def _normalize(text: str) -> str:
    return " ".join((text if text.isascii() else unicodedata.normalize("NFC", text)).split())


# Digests of short section texts, remembered: a body of many tiny sections (thousands of `## Notes`) repeats
# them, and hashing is then most of the cost. At most 65,536 texts of <= 64 characters are held.
_SHORT = 64
_SHORT_DIGESTS: dict[str, str] = {}


def digest(text: str) -> str:
    """sha256 prefix over normalized text: whitespace and Unicode normal form do not count, words do."""
    return _sha256(_normalize(text).encode("utf-8")).hexdigest()[:DIGEST_CHARS]


@lru_cache(maxsize=16384)
def slugify(heading: str) -> str:
    """GitHub-style slug: NFC, lowercase, punctuation dropped, whitespace to single hyphens; never empty."""
    if heading.isascii():
        text = heading.lower().encode("ascii").translate(None, _ASCII_NOT_SLUG).decode("ascii")
    else:
        text = _NOT_SLUG.sub("", " ".join(unicodedata.normalize("NFC", heading).lower().split()))
    # every run of spaces/hyphens → one hyphen, none at either end
    return "-".join(filter(None, "-".join(text.split()).split("-"))) or "section"


def cache_clear() -> None:
    """Forget every cached parse, slug and heading text (benchmarks time the uncached path with it)."""
    for f in (_parse_cached, slugify, _inline_plain):
        f.cache_clear()
    _SLUG_INDEX.clear()
    _SHORT_DIGESTS.clear()


@lru_cache(maxsize=1)
def _markdown():
    from markdown_it import (
        MarkdownIt,  # imported on first use: the line scan needs none of it
    )

    return MarkdownIt("commonmark")


def _plain(tokens) -> str:
    """The visible text of inline tokens: links and emphasis unwrapped, image alt text kept, breaks as spaces."""
    out = []
    for tok in tokens or ():
        if tok.type in ("text", "text_special", "code_inline"):
            out.append(tok.content)
        elif tok.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif tok.type == "image":
            out.append(_plain(tok.children))
    return "".join(out)


_INLINE_SYNTAX = re.compile(r"[\\`*_\[\]<>&!]")  # CommonMark inline syntax; without any, plain text == source


def _plains(sources: list[str], env: dict | None) -> list[str]:
    """The visible text of every heading (see `_inline_plain`), the common case in one pass: ASCII
    sources without inline syntax, tabs or space runs are their own plain text."""
    joined = "\n".join(sources)
    if (
        joined.isascii()
        and joined.count("\n") == len(sources) - 1
        and not _INLINE_SYNTAX.search(joined)
        and "  " not in joined
        and joined.replace("\n", " ").isprintable()
    ):
        return sources
    if env:  # (not cached across bodies: the definitions are this body's; repeated headings once)
        plain: dict[str, str] = {}
        return [plain[s] if s in plain else plain.setdefault(s, _inline_plain.__wrapped__(s, env)) for s in sources]
    return [_inline_plain(s) for s in sources]


@lru_cache(maxsize=4096)
def _inline_plain(source: str, env: dict | None = None) -> str:
    """The visible text of a heading's inline source. Inline parsing is superlinear on some inputs (a
    1 MB heading of `[` or `*a` takes seconds to minutes), so only the first INLINE_LIMIT characters of
    a longer heading are parsed for its text; its digest still covers the whole source."""
    if not _INLINE_SYNTAX.search(source):
        return " ".join(source.split())
    # the inline rules alone: `parseInline`'s core chain around them costs twice as much again, and its
    # other steps (normalizing line breaks and NULs, joining text tokens) change nothing here, since the
    # source comes from a parse that normalized it and `_plain` joins text anyway
    md, tokens = _markdown(), []
    md.inline.parse(source[:INLINE_LIMIT], md, {} if env is None else env, tokens)
    return " ".join(_plain(tokens).split())


def _numbered(slugs: list[str]) -> list[str]:
    """Each slug, else its first free `slug-N` (taken by a heading before it or reserved). Where a slug
    recurs, the search for N resumes where it stopped (taken only grows), so N identical headings number
    in linear time."""
    distinct = set(slugs)
    reserved = PREAMBLE in distinct or BODY in distinct
    if len(distinct) == len(slugs) and not reserved:
        return slugs  # nothing to number: the common case
    repeated = {slug for slug, n in Counter(slugs).items() if n > 1}
    if not reserved and not any((mm := _NUMBERED.fullmatch(slug)) and mm[1] in repeated for slug in distinct):
        # no heading's own slug is a number of a repeated one, and two slugs' numbers never coincide, so
        # the k-th repeat of a slug is `slug-k`
        seen = dict.fromkeys(repeated, 0)
        out = []
        append = out.append
        for slug in slugs:
            k = seen.get(slug)
            if k is None:
                append(slug)
            else:
                append(f"{slug}-{k}" if k else slug)
                seen[slug] = k + 1
        return out
    taken, tried = {PREAMBLE, BODY}, {}
    out = []
    add, append = taken.add, out.append
    for slug in slugs:
        if slug in taken:
            n = tried.get(slug, 0)
            while True:
                n += 1
                candidate = f"{slug}-{n}"
                if candidate not in taken:
                    break
            tried[slug] = n
            slug = candidate
        add(slug)
        append(slug)
    return out


def parse(body: str, *, fast: bool = True) -> tuple[Section, ...]:
    """Split a body into sections. Deterministic, lossless, slugs unique. Cached by body.

    `fast=False` always takes the markdown-it parse (the oracle; same result)."""
    return _parse_cached(body) if fast else parse_markdown_it(body)


def parse_markdown_it(body: str) -> tuple[Section, ...]:
    """`parse` by markdown-it alone (no line scan, no cache): the oracle of the fast path."""
    with gc_paused(len(body) >= _GC_PAUSE_CHARS):
        return _parse(body, headings.markdown_it_headings(body))


@lru_cache(maxsize=256)
def _parse_cached(body: str) -> tuple[Section, ...]:
    _bound_sections(body)
    with gc_paused(len(body) >= _GC_PAUSE_CHARS):
        heads = headings.scan_lines(body)
        return _parse(body, headings.scan_mixed(body) if heads is None else heads)


# Every document-level heading is one of these lines (an ATX heading or a setext underline at indent 0-3), so
# a body has at most as many sections as it has such lines, plus its `_preamble`.
_HEADING_LIKE = re.compile(r"\n {0,3}(?:#{1,6}(?=[ \t\n])|=+[ \t]*(?=\n)|-+[ \t]*(?=\n))")
_HEADING_STARTS = tuple(f"\n{' ' * k}{c}" for k in range(4) for c in "#=-")


def _bound_sections(body: str) -> None:
    """`AnchorError` where a body holds more than MAX_SECTIONS heading-like lines. Counted before any
    section, match or island exists: first an upper bound by `str.count`, then, only
    above the limit, the exact count."""
    if len(body) <= 2 * MAX_SECTIONS or body.count("\n") + body.count("\r") < MAX_SECTIONS:
        return  # a heading-like line takes two characters and a line of its own
    src = "\n" + (body if "\r" not in body else NEWLINES.sub("\n", body)) + "\n"
    if sum(map(src.count, _HEADING_STARTS)) <= MAX_SECTIONS:
        return
    n = len(_HEADING_LIKE.findall(src))
    if n > MAX_SECTIONS:
        raise AnchorError(
            f"{n} heading-like lines (`#` headings and `===`/`---` underlines), more than the "
            f"limit of {MAX_SECTIONS} sections; refused before parsing (a SKILL.md has tens to "
            "hundreds of sections)"
        )


def _slugs(plains: list[str]) -> list[str]:
    """`slugify` of every heading; ASCII headings (the common case) in one pass over all of them."""
    joined = "\n".join(plains)
    if not joined.isascii():
        return [slugify(p) for p in plains]
    text = joined.lower().encode("ascii").translate(None, _ASCII_NOT_SLUG).decode("ascii").replace(" ", "-")
    while "--" in text:
        text = text.replace("--", "-")
    return [p.strip("-") or "section" for p in text.split("\n")]


_NUMBERED = re.compile(r"(.+)-(\d+)")  # a slug that may be another's number
_new = object.__new__


def _section(slug, heading, level, start_line, end_line, text, heading_lines, heading_source, body_text):
    """A `Section` without the frozen dataclass's per-field `object.__setattr__` (a parse builds
    thousands); `body_text` is known here, so it is stored rather than recomputed."""
    s = _new(Section)
    d = s.__dict__
    d["slug"], d["heading"], d["level"], d["start_line"], d["end_line"] = slug, heading, level, start_line, end_line
    d["text"], d["heading_lines"], d["heading_source"], d["body_text"] = text, heading_lines, heading_source, body_text
    return s


def _parse(body: str, heads: Heads) -> tuple[Section, ...]:
    """Sections from the document-level headings."""
    starts, ends = heads.starts, heads.ends
    offsets, below = heads.offsets, heads.body_offsets
    if offsets is None:
        line_start = [0, *accumulate(map(len, split_lines(body)))]
        n_lines = len(line_start) - 1
        offsets = [line_start[h] for h in starts]
        below = [line_start[e] for e in ends]
    elif heads.n_lines is not None:
        n_lines = heads.n_lines
    else:
        n_lines = body.count("\n") + (0 if body.endswith("\n") or not body else 1)
    if not starts:
        return (_section(BODY, "", 0, 1, n_lines, body, 0, "", body),)
    plains = _plains(heads.sources, heads.env)
    slugs = _numbered(_slugs(plains))
    ends_at = offsets[1:] + [len(body)]
    preamble = body[: offsets[0]]
    sections = [_section(PREAMBLE, "", 0, 1, starts[0], preamble, 0, "", preamble)]
    sections += map(
        _section,
        slugs,
        plains,
        heads.levels,
        map(int.__add__, starts, repeat(1)),
        starts[1:] + [n_lines],
        map(body.__getitem__, map(slice, offsets, ends_at)),
        map(int.__sub__, ends, starts),
        heads.sources,
        map(body.__getitem__, map(slice, below, ends_at)),
    )
    return tuple(sections)


_SLUG_INDEX: dict[int, tuple[tuple[Section, ...], dict[str, Section]]] = {}


def _by_slug(sections: Sequence[Section]) -> dict[str, Section]:
    """slug → section; kept per parse result (a tuple, shared through the parse cache), so locating many
    anchors in one body builds the index once."""
    if not isinstance(sections, tuple):
        return {s.slug: s for s in sections}
    hit = _SLUG_INDEX.get(id(sections))
    if hit is not None and hit[0] is sections:
        return hit[1]
    if len(_SLUG_INDEX) >= 256:
        _SLUG_INDEX.clear()
    index = {s.slug: s for s in sections}
    _SLUG_INDEX[id(sections)] = (sections, index)  # the tuple is held, so its id is not reused meanwhile
    return index


def render(sections: Sequence[Section]) -> str:
    """The inverse of `parse`: `render(parse(body)) == body`."""
    return "".join(s.text for s in sections)


def anchor_for(body_or_sections: str | Sequence[Section], slug: str, base_version: str | None = None) -> Anchor:
    """The anchor of section `slug` in a body; `KeyError` naming the known slugs if there is none."""
    sections = parse(body_or_sections) if isinstance(body_or_sections, str) else body_or_sections
    for s in sections:
        if s.slug == slug:
            return Anchor(s.slug, s.digest, base_version)
    raise KeyError(f"no section {slug!r}; sections are: {', '.join(s.slug for s in sections)}")


def locate(anchor: Anchor, body_or_sections: str | Sequence[Section]) -> Location:
    """Find an anchor in a (new) body: same slug and digest → clean; same slug → stale; else orphaned."""
    sections = parse(body_or_sections) if isinstance(body_or_sections, str) else body_or_sections
    here = _by_slug(sections).get(anchor.section)
    if here is not None and here.digest == anchor.digest:
        return Location("clean", here)
    if here is not None:
        return Location("stale", here)
    moved = next((s.slug for s in sections if s.digest == anchor.digest), None)
    return Location("orphaned", None, moved_to=moved)
