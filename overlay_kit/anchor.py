"""Skill body → ordered `Section`s, and `Anchor`s that name a section in a way that survives edits.

Headings are found by markdown-it-py (CommonMark: ATX and setext headings, fenced code with `#` lines,
headings indented 1-3 spaces); only document-level headings start sections. The common case takes a
fence-aware line scan (`_scan`); any body holding a construct that could hide or fake a heading there
(setext underline candidates, indented headings or fences, HTML blocks, tabs in indentation, link
reference definitions) goes to the markdown-it parse (`parse_markdown_it`, the oracle the scan is tested
against). Both give identical sections; parse results are cached by body. Each heading starts a
section that runs to the next heading, so the sections partition the body and `render(parse(b)) == b`
byte for byte. A body with headings always starts with a `_preamble` section (the text before the
first heading, possibly empty), so adding or removing a leading blank line never adds or removes a
section; a body without headings is one `_body` section. Slugs are unique within a document. The
digest hashes normalized text (NFC, whitespace runs collapsed, the `#`/underline heading markers
dropped but the heading's inline source kept), so whitespace-only edits keep it and any change of
words — link targets in a heading included — changes it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

__all__ = [
    "BODY",
    "PREAMBLE",
    "Anchor",
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
INLINE_LIMIT = 4096  # characters of a heading's inline source parsed for its plain text (see _inline_plain)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # markdown-it's own line breaks
_NOT_SLUG = re.compile(r"[^\w\- ]")
_ASCII_NOT_SLUG = bytes(c for c in range(128) if not re.match(r"[\w\- ]", chr(c)) and not chr(c).isspace())


class _once:
    """`functools.cached_property` without its per-access lock (Python 3.11 takes one on every first
    access, a third of the cost of digesting a small section): computed on first access, then an ordinary
    instance attribute. Safe for immutable values computed from immutable fields."""

    def __init__(self, fn):
        self.fn, self.name, self.__doc__ = fn, fn.__name__, fn.__doc__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


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

    @_once
    def digest(self) -> str:
        return digest(self.content_for_digest)

    @property
    def content_for_digest(self) -> str:
        return (self.heading_source or self.heading) + "\n" + self.body_text

    @_once
    def body_text(self) -> str:
        """The section's text below its heading."""
        pos = 0
        for _ in range(self.heading_lines):
            m = _LINE.match(self.text, pos)
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
    def from_dict(cls, data: dict) -> "Anchor":
        return cls(str(data["section"]), str(data["digest"]), data.get("base_version"))


@dataclass(frozen=True)
class Location:
    """Where an anchor lands in a (new) body: `clean`, `stale` (same slug, changed text) or `orphaned`."""

    state: Literal["clean", "stale", "orphaned"]
    section: Section | None
    moved_to: str | None = None  # an orphan whose exact text now lives under another slug (a hint only)


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split exactly where markdown-it splits (\\r\\n, \\r, \\n)."""
    return _LINE.findall(text)


def _normalize(text: str) -> str:
    return " ".join((text if text.isascii() else unicodedata.normalize("NFC", text)).split())


def digest(text: str) -> str:
    """sha256 prefix over normalized text: whitespace and Unicode normal form do not count, words do."""
    return hashlib.sha256(_normalize(text).encode("utf-8")).hexdigest()[:DIGEST_CHARS]


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


@lru_cache(maxsize=1)
def _markdown():
    from markdown_it import (
        MarkdownIt,  # imported on first use: the line scan needs none of it
    )

    return MarkdownIt("commonmark")


@lru_cache(maxsize=1)
def _blocks():
    """Block structure only: inline parsing of every paragraph is most of the cost and only headings need it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable("inline")


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


def _headings(body: str) -> list[tuple[int, int, int, str, str]]:
    """(start_line, end_line_exclusive, level, plain text, inline source) of every document-level heading,
    0-based, by markdown-it. Headings nested in block quotes or list items do not start sections."""
    env: dict = {}  # collects link reference definitions, which heading text may use
    tokens = _blocks().parse(body, env)
    found = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map:
            source = tokens[i + 1].content
            plain = _inline_plain.__wrapped__(source, env) if env else _inline_plain(source)
            found.append((tok.map[0], tok.map[1], int(tok.tag[1]), plain, source))
    return found


# ------------------------------------------------------------------------------------------ the line scan

# Line starts worth a look: `#`, `<`, `=`/`-` underline shapes (indented 0-3) and fence runs (any indent).
# Every other line is paragraph, list or code text, which cannot start or hide a document-level heading; a
# tab in the indentation puts a line at column 4 or more, where it is code or container content.
# A leading "\n" gives the pattern a literal prefix, which the regex engine skips to quickly.
_CANDIDATE = re.compile(r"""\n(?:
    (?P<atx>\#{1,6})(?:[ \t](?P<content>[^\n]*))?$         # an ATX heading at indent 0
  | (?P<fence>(?P<indent>\ {0,3})(?P<marker>`{3,}|~{3,})(?P<info>[^\n]*))   # a fence line, indent 0-3
  | (?P<setext>\ {0,3}(?:=+|-+)[ \t]*$)                   # a setext underline candidate
  | (?P<other>\ {1,3}\#{1,6}(?:[ \t]|$)|\ {0,3}<)          # an indented heading, an HTML block start
)""", re.MULTILINE | re.VERBOSE)
# `lastgroup` names the innermost group that closed last: map it to its alternative.
_KIND = {"atx": "atx", "content": "atx", "fence": "fence", "setext": "setext", "other": "other"}
_NEWLINES = re.compile(r"\r\n?")
_INLINE_SYNTAX = re.compile(r"[\\`*_\[\]<>&!]")  # CommonMark inline syntax; without any, plain text == source
_TRIM = "\t\n\x0b\x0c\r \xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


@lru_cache(maxsize=4096)
def _inline_plain(source: str, env: dict | None = None) -> str:
    """The visible text of a heading's inline source. Inline parsing is superlinear on some inputs (a
    1 MB heading of `[` or `*a` takes seconds to minutes), so only the first INLINE_LIMIT characters of
    a longer heading are parsed for its text; its digest still covers the whole source."""
    if not _INLINE_SYNTAX.search(source):
        return " ".join(source.split())
    inline = _markdown().parseInline(source[:INLINE_LIMIT], {} if env is None else env)[0].children
    return " ".join(_plain(inline).split())


def _scan(body: str) -> tuple[list[tuple[int, int, int, str, str]], list[int] | None] | None:
    """`_headings` by a fence-aware line scan, or None where only the full parse can tell.

    Exact for ATX headings at indent 0 and fences at indent 0 (CommonMark: a heading or fence line at
    indent 0 always closes any open list item or block quote, and both interrupt paragraphs). It gives
    up on anything that needs container or paragraph state: a heading or fence indented 1-3 spaces (in a
    list item or not?), a setext underline candidate after a non-blank line, an HTML block start, or a
    link reference definition (heading text may use it). Also returns each heading's offset in `body`
    (None when line breaks other than \\n make offsets differ from the normalized text's).
    """
    src = body
    offsets: list[int] | None = []
    if "\r" in src:
        src, offsets = _NEWLINES.sub("\n", src), None  # markdown-it's normalization; line numbers are unchanged
    if "\0" in src:
        src = src.replace("\0", "\ufffd")
    if "]:" in src:
        return None
    src = "\n" + src  # so that the first line is found like every other (offsets below are into this)
    found: list[tuple[int, int, int, str, str]] = []
    fence, fence_len = "", 0
    line, last = -1, 0
    for m in _CANDIDATE.finditer(src):
        kind = _KIND[m.lastgroup]
        if fence:  # only a closing fence matters: same marker, at least as long, indent <= 3, spaces after
            if kind == "fence" and m.group("marker")[0] == fence and len(m.group("marker")) >= fence_len \
                    and not m.group("info").strip(" \t"):
                fence = ""
            continue
        if kind == "atx":
            pos = m.start() + 1
            line += src.count("\n", last, pos)
            last = pos
            content = (m.group("content") or "").rstrip(" \t")
            head = content.rstrip("#")
            if len(head) < len(content) and (not head or head[-1] in " \t"):
                content = head  # a closing run of `#` after a space is not text
            source = content.strip(_TRIM)
            found.append((line, line + 1, len(m.group("atx")), _inline_plain(source), source))
            if offsets is not None:
                offsets.append(pos - 1)
        elif kind == "fence":
            marker, info = m.group("marker"), m.group("info")
            if marker[0] == "`" and "`" in info:
                continue  # inline code in a paragraph
            if m.group("indent"):
                return None
            fence, fence_len = marker[0], len(marker)
        elif kind == "setext":
            pos = m.start()  # the line break before the candidate; the line before it must be blank
            if pos and src[src.rfind("\n", 0, pos) + 1:pos].strip(" \t"):
                return None  # `===` / `---` under a non-blank line: maybe a setext heading
        else:  # an indented heading, an HTML block start
            return None
    return found, offsets


def _unique(slug: str, taken: set[str], tried: dict[str, int]) -> str:
    """`slug`, else the first free `slug-N`. `tried` remembers where each search stopped (taken only
    grows), so N identical headings number in linear time."""
    if slug not in taken:
        taken.add(slug)
        return slug
    n = tried.get(slug, 0)
    while True:
        n += 1
        candidate = f"{slug}-{n}"
        if candidate not in taken:
            tried[slug] = n
            taken.add(candidate)
            return candidate


def parse(body: str, *, fast: bool = True) -> tuple[Section, ...]:
    """Split a body into sections. Deterministic, lossless, slugs unique. Cached by body.

    `fast=False` always takes the markdown-it parse (the oracle; same result)."""
    return _parse_cached(body) if fast else parse_markdown_it(body)


def parse_markdown_it(body: str) -> tuple[Section, ...]:
    """`parse` by markdown-it alone (no line scan, no cache): the oracle of the fast path."""
    return _parse(body, _headings(body))


@lru_cache(maxsize=256)
def _parse_cached(body: str) -> tuple[Section, ...]:
    scanned = _scan(body)
    return _parse(body, _headings(body)) if scanned is None else _parse(body, *scanned)


def _parse(body: str, heads, offsets: Sequence[int] | None = None) -> tuple[Section, ...]:
    """Sections from 0-based heading lines; `offsets` (each heading line's offset in `body`) spare the
    line split."""
    if offsets is None:
        lines = split_lines(body)
        n_lines = len(lines)
        starts = [0]
        for ln in lines:
            starts.append(starts[-1] + len(ln))
        offsets = [starts[h[0]] for h in heads]
    else:
        n_lines = body.count("\n") + (0 if body.endswith("\n") or not body else 1)
    if not heads:
        return (Section(BODY, "", 0, 1, n_lines, body),)
    first = heads[0][0]
    sections = [Section(PREAMBLE, "", 0, 1, first, body[:offsets[0]])]
    taken, tried = {PREAMBLE, BODY}, {}
    bounds = list(offsets) + [len(body)]
    for i, (start, head_end, level, text, source) in enumerate(heads):
        end = heads[i + 1][0] if i + 1 < len(heads) else n_lines
        sections.append(Section(_unique(slugify(text), taken, tried), text, level, start + 1, end,
                                body[bounds[i]:bounds[i + 1]], heading_lines=head_end - start,
                                heading_source=source))
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
