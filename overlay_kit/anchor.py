"""Skill body → ordered `Section`s, and `Anchor`s that name a section in a way that survives edits.

Headings are found by markdown-it-py (CommonMark: ATX and setext headings, fenced code with `#` lines,
headings indented 1-3 spaces); only document-level headings start sections. Each heading starts a
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
from functools import cached_property, lru_cache
from typing import Literal

from markdown_it import MarkdownIt

__all__ = [
    "BODY",
    "PREAMBLE",
    "Anchor",
    "Location",
    "Section",
    "anchor_for",
    "digest",
    "locate",
    "parse",
    "render",
    "slugify",
    "split_lines",
]

PREAMBLE = "_preamble"
BODY = "_body"
DIGEST_CHARS = 16
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # markdown-it's own line breaks


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

    @cached_property
    def digest(self) -> str:
        return digest(self.content_for_digest)

    @property
    def content_for_digest(self) -> str:
        return (self.heading_source or self.heading) + "\n" + self.body_text

    @property
    def body_text(self) -> str:
        """The section's text below its heading."""
        return "".join(split_lines(self.text)[self.heading_lines:])


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
    return " ".join(unicodedata.normalize("NFC", text).split())


def digest(text: str) -> str:
    """sha256 prefix over normalized text: whitespace and Unicode normal form do not count, words do."""
    return hashlib.sha256(_normalize(text).encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def slugify(heading: str) -> str:
    """GitHub-style slug: NFC, lowercase, punctuation dropped, whitespace to single hyphens; never empty."""
    text = " ".join(unicodedata.normalize("NFC", heading).lower().split())
    text = re.sub(r"[^\w\- ]", "", text)
    text = re.sub(r"[\s-]*\s[\s-]*|-{2,}", "-", text).strip("-")
    return text or "section"


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


@lru_cache(maxsize=1)
def _blocks() -> MarkdownIt:
    """Block structure only: inline parsing of every paragraph is most of the cost and only headings need it."""
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
    0-based. Headings nested in block quotes or list items do not start sections."""
    env: dict = {}  # collects link reference definitions, which heading text may use
    tokens = _blocks().parse(body, env)
    found = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map:
            source = tokens[i + 1].content
            inline = _markdown().parseInline(source, env)[0].children if source else []
            found.append((tok.map[0], tok.map[1], int(tok.tag[1]), " ".join(_plain(inline).split()), source))
    return found


def _unique(slug: str, taken: set[str]) -> str:
    candidate, n = slug, 0
    while candidate in taken:
        n += 1
        candidate = f"{slug}-{n}"
    taken.add(candidate)
    return candidate


def parse(body: str) -> tuple[Section, ...]:
    """Split a body into sections. Deterministic, lossless, slugs unique."""
    lines = split_lines(body)
    heads = _headings(body)
    if not heads:
        return (Section(BODY, "", 0, 1, len(lines), body),)
    first = heads[0][0]
    sections = [Section(PREAMBLE, "", 0, 1, first, "".join(lines[:first]))]
    taken = {PREAMBLE, BODY}
    for i, (start, head_end, level, text, source) in enumerate(heads):
        end = heads[i + 1][0] if i + 1 < len(heads) else len(lines)
        sections.append(Section(_unique(slugify(text), taken), text, level, start + 1, end,
                                "".join(lines[start:end]), heading_lines=head_end - start,
                                heading_source=source))
    return tuple(sections)


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
    by_slug = {s.slug: s for s in sections}
    here = by_slug.get(anchor.section)
    if here is not None and here.digest == anchor.digest:
        return Location("clean", here)
    if here is not None:
        return Location("stale", here)
    moved = next((s.slug for s in sections if s.digest == anchor.digest), None)
    return Location("orphaned", None, moved_to=moved)
