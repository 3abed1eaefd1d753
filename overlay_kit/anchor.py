"""Skill body → ordered `Section`s, and `Anchor`s that name a section in a way that survives edits.

Headings are as markdown-it-py finds them (CommonMark: ATX and setext headings, fenced code with `#`
lines, headings indented 1-3 spaces); only document-level headings start sections. The common case
takes a fence-aware line scan (`_scan`, three regex passes). A body holding a construct that could
hide or fake a heading there (setext underline candidates, indented headings or fences, HTML blocks,
lists nested ten deep, link reference definitions) takes the mixed parse (`_mixed`): the same scan,
deciding setext headings, indented headings and HTML blocks itself wherever the context is certainly
document-level, and markdown-it on small islands around the lines it cannot decide, each starting and
ending where block state provably resets. `parse_markdown_it` (markdown-it alone) is the oracle both
are tested against; all give identical sections, and parse results are cached by body. `parse` is
bounded (issue 18): a body with more than MAX_SECTIONS heading-like lines, or whose islands cost
markdown-it more than ISLAND_WORK, is refused with `AnchorError` in well under a second. Each heading
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
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from hashlib import sha256 as _sha256
from itertools import accumulate, chain, repeat
from typing import Literal

from .common import gc_paused, once

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
INLINE_LIMIT = 4096  # characters of a heading's inline source parsed for its plain text (see _inline_plain)
# Input bounds (issue 18): every body up to skill.MAX_SKILL_BYTES anchors in < 1 s or is refused with an
# `AnchorError` in < 1 s. A real SKILL.md has tens to a few hundred sections (docs/reliability.md); a body
# with more heading-like lines than MAX_SECTIONS is refused before any section or island is built.
MAX_SECTIONS = 10_000
_GC_PAUSE_CHARS = 65536  # bodies this long parse with the cyclic collector paused (common.gc_paused)
# markdown-it's share of the mixed parse, counted inside markdown-it (`_charge`): one unit each time a block
# rule chain is tried on a line (a block start, or a check whether a line ends a paragraph), plus, per island
# parse (re-parses of a growing island included), ISLAND_CALL and one unit per ISLAND_LINE_SHARE lines given.
# At the worst rates measured (docs/reliability.md) ISLAND_WORK units stay well under the bound; past them the
# body is refused (`AnchorError`), mid-parse if need be.
ISLAND_WORK = 30_000
ISLAND_CALL = 4
ISLAND_LINE_SHARE = 8
_BUDGET = "\0anchor-budget"  # the env key holding an island parse's budget: [units left]
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # markdown-it's own line breaks
_NOT_SLUG = re.compile(r"[^\w\- ]")
_ASCII_NOT_SLUG = bytes(c for c in range(128) if not re.match(r"[\w\- ]", chr(c)) and not chr(c).isspace())


class AnchorError(ValueError):
    """A body the anchorer refuses to parse: over an input bound (see MAX_SECTIONS, ISLAND_WORK). `line` is
    the 1-based body line where the bound was passed, where known."""

    def __init__(self, message: str, line: int | None = None):
        self.message, self.line = message, line
        super().__init__(message if line is None else f"line {line}: {message}")


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
    def from_dict(cls, data: dict) -> Anchor:
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


@lru_cache(maxsize=1)
def _blocks():
    """Block structure only: inline parsing of every paragraph is most of the cost and only headings need it.
    The first block rule, `_charge`, pays for each rule chain tried where the env holds a budget."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").disable("inline")
    md.block.ruler.before("code", "anchor_budget", _charge, {"alt": ["paragraph", "reference", "blockquote", "list"]})
    return md


class _Spent(Exception):
    """An island's markdown-it work ran past the budget at (island-relative) line `args[0]`."""


def _charge(state, start_line, end_line, silent=False) -> bool:
    """A block rule that matches nothing: one unit from the parse's budget each time markdown-it tries the
    block rules on a line (the oracle's parses carry no budget and pay nothing)."""
    budget = state.env.get(_BUDGET)
    if budget is not None:
        budget[0] -= 1
        if budget[0] < 0:
            raise _Spent(start_line)
    return False


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


def _headings(body: str) -> _Heads:
    """Every document-level heading by markdown-it (offsets left to `_parse`). Headings nested in block
    quotes or list items do not start sections."""
    env: dict = {}  # collects link reference definitions, which heading text may use
    tokens = _blocks().parse(body, env)
    heads = _Heads()
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map:
            heads.starts.append(tok.map[0])
            heads.ends.append(tok.map[1])
            heads.levels.append(int(tok.tag[1]))
            heads.sources.append(tokens[i + 1].content)
    heads.offsets = heads.body_offsets = None
    heads.env = env or None
    return heads


# ------------------------------------------------------------------------------------------ the line scan

# The scan works on "\n" + body (markdown-it's line breaks normalized) + "\n", so that every line, the first
# and the last included, is "\n" + its text + "\n" and the patterns need no MULTILINE anchors: a literal "\n"
# prefix is what the regex engine skips to fastest.
# (A lookahead on the first character lets the engine reject most lines with one test.)
_ATX = re.compile(r"\n#(#{0,5})([ \t][^\n]*)?(?=\n)")  # an ATX heading at indent 0 (level: 1 + the group)
_FENCE = re.compile(r"\n(?=[ `~])( {0,3})(`{3,}|~{3,})([^\n]*)")  # a fence line, indent 0-3
# Lines the scan cannot decide: an indented heading, an HTML block start, a setext underline candidate
# (harmless only under a blank line), and a container prefix reaching column 18 (`_deep`). Tabs need no
# case of their own: a tab in the indentation puts a line at column 4 or more, code or container content.
_SUSPECT = re.compile(r"\n(?=[ <=\-\t>*+.)0-9])(?: {1,3}#{1,6}(?=[ \t\n])| {0,3}<|(?P<setext> {0,3}(?:=+|-+)[ \t]*(?=\n))"
                      r"|(?P<deep>[ >\-*+.)0-9]{18,}|[ >\-*+.)0-9]*\t[ \t>\-*+.)0-9]*))")
_MARKER = re.compile(r"[-*+]|\d[.)]")
# The same lines, plus headings and fences, in one pass with line numbers (the mixed parse, `_mixed`);
# `ref` is a line that may hold a link reference definition.
_EVENT = re.compile(r"""\n(?:
    (?P<atx>\#{1,6})(?P<raw>[ \t][^\n]*)?(?=\n)
  | (?P<fence>(?P<indent>\ {0,3})(?P<marker>`{3,}|~{3,})(?P<info>[^\n]*))
  | (?P<setext>\ {0,3}(?:=+|-+)[ \t]*)(?=\n)
  | (?P<indented>\ {1,3})(?P<iatx>\#{1,6})(?P<iraw>[ \t][^\n]*)?(?=\n)
  | (?P<html>\ {0,3}<[^\n]*)
  | (?P<deep>[ >\-*+.)0-9]{18,}|[ >\-*+.)0-9]*\t[ \t>\-*+.)0-9]*)
  | (?P<hr>(?P<hrc>[-*_])(?:[ \t]*(?P=hrc)){2,}[ \t]*)(?=\n)
  | (?P<item>\ {0,3}(?:[-+*]|\d{1,9}[.)])(?=[ \t\n])[^\n]*)
  | (?P<ref>[^\n]*\]:)
)""", re.VERBOSE)
_EVENT_KIND = {"atx": "atx", "raw": "atx", "fence": "fence", "info": "fence", "setext": "setext", "html": "html",
               "deep": "deep", "item": "item", "hr": "hr", "hrc": "hr", "ref": "ref", "iatx": "indented", "iraw": "indented"}
_ITEM = re.compile(r"( {0,3})([-+*]|\d{1,9}[.)])(?:[ \t]|$)")
_ITEM_EXACT = re.compile(r"( {0,3})([-+*]|\d{1,9}[.)])( +)(?=\S)")  # a tab in the way: no match
_BREAK = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_QUOTED = re.compile(r" {0,3}>")
# A line at indent 0 that opens a block quote or list item with paragraph text (which may then continue
# lazily); ordered items only from 1, the only ones that may interrupt a paragraph.
_LAZY_HOST = re.compile(r"(?:> ?|(?:[-+*]|1[.)]) {1,4})(?=[^\s#`~>\-+*_=<\[\d])")
_BLANK_LINE = re.compile(r"\n[ \t]*(?=\n)")
# A line that can only be paragraph text wherever it stands, and cannot end or interrupt a paragraph:
# up to 3 spaces of indentation, then none of the characters that start another block (or a link
# reference definition), nor an ordered-list marker.
_PLAIN = re.compile(r" {0,3}(?![\s`~>=<\[]|#{1,6}(?:[ \t]|$)|[-+*](?:[ \t]|$)|([-*_])(?:[ \t]*\1){2,}[ \t]*$"
                    r"|-+[ \t]*$|\d{1,9}[.)](?:[ \t]|$))")
# A blank line (spaces and tabs only) followed by a line at indent 0: where block state may reset.
_SPLIT = re.compile(r"\n[ \t]*(?=\n[^ \t\n])")
_NEWLINES = re.compile(r"\r\n?")
# The label a line may define: after a container prefix, `[label]:` with no bracket inside (see `_mixed`).
_REF_LABEL = re.compile(r"[ \t>\-*+.)0-9]*\[([^\[\]]*)\]:")
_INLINE_SYNTAX = re.compile(r"[\\`*_\[\]<>&!]")  # CommonMark inline syntax; without any, plain text == source
_TRIM = "\t\n\x0b\x0c\r \xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


class _Heads:
    """Document-level headings, column-wise: 0-based start line, end line (exclusive), level, inline
    source, and (when known) each heading line's offset in the body."""

    __slots__ = ("body_offsets", "ends", "env", "levels", "n_lines", "offsets", "sources", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.levels: list[int] = []
        self.sources: list[str] = []
        self.offsets: list[int] | None = []
        self.body_offsets: list[int] | None = []  # where the text below each heading starts
        self.env: dict | None = None  # link reference definitions heading text may use
        self.n_lines: int | None = None  # the body's line count, where known


def _plains(sources: list[str], env: dict | None) -> list[str]:
    """The visible text of every heading (see `_inline_plain`), the common case in one pass: ASCII
    sources without inline syntax, tabs or space runs are their own plain text."""
    joined = "\n".join(sources)
    if joined.isascii() and joined.count("\n") == len(sources) - 1 and not _INLINE_SYNTAX.search(joined) \
            and "  " not in joined and joined.replace("\n", " ").isprintable():
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


def _scan(body: str) -> _Heads | None:
    """`_headings` by a fence-aware line scan, or None where only the full parse can tell.

    Exact for ATX headings at indent 0 and fences at indent 0 (CommonMark: a heading or fence line at
    indent 0 always closes any open list item or block quote, and both interrupt paragraphs). It gives
    up on anything that needs container or paragraph state: a heading or fence indented 1-3 spaces (in a
    list item or not?), a setext underline candidate after a non-blank line, an HTML block start, or a
    link reference definition (heading text may use it).
    """
    if "]" in body and "]:" in body:  # (one character is found faster than two)
        return None
    src = body
    exact = "\r" not in src  # else offsets into the normalized text are not offsets into `body`
    if not exact:
        src = _NEWLINES.sub("\n", src)  # markdown-it's normalization; line numbers are unchanged
    if "\0" in src:
        src = src.replace("\0", "\ufffd")
    src = "\n" + src + "\n"
    fences: list[int] = [0]  # [0, open, close, open, close, …, end]: the regions outside fences
    fence, fence_len = "", 0
    for m in _FENCE.finditer(src):
        indent, marker, info = m.groups()
        if fence:  # only a closing fence matters: same marker, at least as long, spaces after
            if marker[0] == fence and len(marker) >= fence_len and not info.strip(" \t"):
                fence = ""
                fences.append(m.end())  # the closing line's line break: the next line is outside
        elif marker[0] == "`" and "`" in info:
            continue  # inline code in a paragraph
        elif indent:
            return None  # in a list item or not?
        else:
            fence, fence_len = marker[0], len(marker)
            fences.append(m.start() + 1)  # a match may end on the opening line's line break, none start there
    if not fence:
        fences.append(len(src))
    outside = list(zip(fences[::2], fences[1::2]))
    for m in chain.from_iterable(map(_SUSPECT.finditer, repeat(src), *zip(*outside))):
        pos = m.start()
        deep = m.group("deep")
        if deep is not None:
            if _deep(deep):
                return None
            continue
        if m.group("setext") is None or src[src.rfind("\n", 0, pos) + 1:pos].strip(" \t"):
            return None  # `===` / `---` under a non-blank line: maybe a setext heading
    ms = list(chain.from_iterable(map(_ATX.finditer, repeat(src), *zip(*outside))))
    heads = _Heads()
    if not exact:
        heads.offsets = heads.body_offsets = None
    if not ms:
        return heads
    # column-wise, with C-level loops (map) wherever they do: a body may hold a million headings
    offsets = list(map(re.Match.start, ms))  # each heading line's "\n" in src = its offset in body
    heads.starts = list(accumulate(map(src.count, repeat("\n"), [0] + offsets, offsets)))
    heads.ends = [s + 1 for s in heads.starts]
    heads.levels = list(map(int.__add__, map(len, map(re.Match.group, ms, repeat(1))), repeat(1)))
    heads.sources = list(map(_atx_text, map(re.Match.group, ms, repeat(2))))
    if exact:
        heads.offsets = offsets
        heads.body_offsets = list(map(re.Match.end, ms))
        heads.body_offsets[-1] = min(heads.body_offsets[-1], len(body))
    return heads


def _content_indent(text: str) -> int:
    """The content indentation of the list item that line `text` certainly opens, wherever it stands (a
    bullet or `1.`/`1)` with text after it, which may interrupt a paragraph, and not a thematic break):
    the marker, then its 1-4 spaces, or one where 5 or more follow. Else a large number."""
    mm = _ITEM_EXACT.match(text)
    if mm is None or _BREAK.match(text) or mm[2][0].isdigit() and mm[2][:-1] != "1":
        return 99
    spaces = len(mm[3])
    return len(mm[1]) + len(mm[2]) + (spaces if spaces <= 4 else 1)


def _deep(prefix: str) -> bool:
    """Whether a line's container prefix may hold a list nested ten deep: markdown-it stops at nesting
    level 20 (a list and its item are two) and then swallows the rest of the enclosing block, the whole
    document for a top-level list. Ten list levels put the last marker at column 18 or more."""
    return len(prefix.expandtabs(4)) >= 18 and _MARKER.search(prefix) is not None


def _mixed(body: str, refs: bool = False, budget: list[int] | None = None, wanted: str | None = None) -> _Heads:
    """`_headings` where the line scan gave up: the scan's decisions between the lines it cannot decide,
    and markdown-it on an island around each such line.

    An island starts where CommonMark block state is known to be reset in a region the scan decided (a
    line at indent 0 after a blank line, a heading or fence line at indent 0, the line after a closing
    fence), and ends before a line at indent 0 after a blank line once markdown-it shows that nothing
    is open there (no fence, HTML block or nesting-limit swallow runs to the island's end; a list that
    does is closed by the unindented line). Where it is not shown, the island grows to twice its size.
    A link reference definition cannot start, end or hide a heading (a paragraph that starts with `[`
    is left to an island), but heading text may use it: where a heading's source holds `[` and a line
    outside the islands holds `]:`, the parse is redone with every such line an island of its own, and
    the definitions collected there resolve heading text everywhere, as in the full parse. Only a
    definition that may change a heading's text needs its island then: one whose label is not yet
    defined and occurs in some heading's source (`wanted`: the first pass's sources, normalized as
    labels are; a line that defines any other label, or none, is what the first pass took it for).

    markdown-it's work is bounded (`budget`, see ISLAND_WORK): past it, `AnchorError`.
    """
    if budget is None:
        budget = [ISLAND_WORK]
    src = body if "\r" not in body else _NEWLINES.sub("\n", body)
    if "\0" in src:
        src = src.replace("\0", "\ufffd")
    n_lines = src.count("\n") + (0 if src.endswith("\n") or not src else 1)
    src = "\n" + src + "\n"
    line_start = [0, *accumulate(map(len, split_lines(body)))]
    splits = [m.start() for m in _SPLIT.finditer(src)]
    splits = list(map(int.__add__, accumulate(map(src.count, repeat("\n"), [0] + splits, splits)), repeat(1)))
    heads = _Heads()
    heads.offsets = heads.body_offsets = None
    env: dict = {_BUDGET: budget}
    starts, ends, levels, sources = heads.starts, heads.ends, heads.levels, heads.sources
    pos = reset = 0  # lines before `pos` are decided; `reset`: the latest line where block state resets
    fence, fence_len = "", 0
    line, last = -1, 0
    item = -1  # the latest line that may start a list item
    width = 0  # the least content indentation any list item open since then may have
    defined = False  # whether a line outside the islands may define a link reference
    lines = src.split("\n")  # lines[i + 1] is line i
    ended: set[int] = set()  # lines that end a document-level block with nothing left open after them

    def list_open(at: int) -> bool:
        """Whether a list item may hold line `at`: one started since block state last reset (a line at
        indent 0 after a blank one closes every list, unless it starts an item itself)."""
        i = bisect_right(splits, at)
        return item >= max(pos, reset, splits[i - 1] if i else 0)

    def paragraph(at: int) -> int | None:
        """The first line of the document-level paragraph whose last line is `at`, or None where that
        is not certain (-1 for "no paragraph": `at` ends a block)."""
        i = at
        while i >= pos and i not in ended and lines[i + 1].strip(" \t") and (
                _PLAIN.match(lines[i + 1]) or len(lines[i + 1]) - len(lines[i + 1].lstrip(" ")) >= 4):
            i -= 1  # paragraph text; a line indented 4 or more only continues one
        if i == at:  # no paragraph line at all
            return -1 if at in ended else None
        first = i + 1
        if not _PLAIN.match(lines[first + 1]):
            return None
        if i in ended or (i < 0 or not lines[i + 1].strip(" \t")) and (
                not lines[first + 1][:1].isspace() or not list_open(first)):
            return first
        return None

    def started(at: int, text: str) -> None:
        """Line `at` (`text`) may start a list item."""
        nonlocal item, width
        mm = _ITEM.match(text)
        w = len(mm[1]) + len(mm[2]) + 1 if mm else 2  # the least content indentation of that item
        width = min(width, w) if list_open(at) else w
        item = at

    def needed(text: str) -> bool:
        """Whether line `text` may define a label that some heading may use and no island has defined."""
        if wanted is None:
            return True
        mm = _REF_LABEL.match(text)
        if mm is None:
            return True  # a label escaped, spread over lines or after other text: the island decides
        label = _label_key(mm[1])
        return bool(label) and label in wanted and label not in env.get("references", ())

    def add(start: int, end: int, level: int, source: str) -> None:
        starts.append(start)
        ends.append(end)
        levels.append(level)
        sources.append(source)
        ended.add(end - 1)

    for m in _EVENT.finditer(src):
        line += src.count("\n", last, m.start() + 1)
        last = m.start() + 1
        if line < pos:
            continue
        kind = _EVENT_KIND[m.lastgroup]
        if fence:
            if kind == "fence" and m["marker"][0] == fence and len(m["marker"]) >= fence_len \
                    and not m["info"].strip(" \t"):
                fence, reset = "", line + 1
                ended.add(line)
            continue
        if kind == "atx":
            add(line, line + 1, len(m["atx"]), _atx_text(m["raw"]))
            reset = line
            continue
        if kind == "fence":
            if m["marker"][0] == "`" and "`" in m["info"]:
                continue
            if not m["indent"]:
                fence, fence_len, reset = m["marker"][0], len(m["marker"]), line
                continue
        elif kind == "setext":
            lone = m["setext"].strip(" \t") == "-"  # also an empty list item
            if not lines[line].strip(" \t"):
                if lone:
                    started(line, lines[line + 1])
                continue  # under a blank line: a thematic break, a paragraph or an item, never a heading
            first = paragraph(line - 1)
            if first == -1:
                if lone:
                    started(line, lines[line + 1])
                continue  # under a heading, an underline or a closing fence: a thematic break, text or an item
            if first is not None:  # a setext heading: CommonMark's paragraph text, markers dropped
                add(first, line + 1, 1 if m["setext"].strip(" \t")[0] == "=" else 2,
                    "\n".join(lines[first + 1:line + 1]).strip(_TRIM))
                reset = line + 1
                continue
            i = line - 1  # else under a block quote's or list item's paragraph: lazy text or a break
            while i >= pos and i not in ended and lines[i + 1].strip(" \t") and (
                    _PLAIN.match(lines[i + 1]) or len(lines[i + 1]) - len(lines[i + 1].lstrip(" ")) >= 4):
                i -= 1
            host = lines[i + 1] if i >= pos and i not in ended else ""
            if _LAZY_HOST.match(host) and (host[0] != ">" or i == pos or i - 1 in ended or not _QUOTED.match(lines[i])):
                if lone:
                    started(line, lines[line + 1])
                continue
            if lone:
                started(line, lines[line + 1])
        elif kind == "indented":
            # a heading indented 1-3 spaces is one unless a list item holds it (a heading is never a lazy
            # continuation line, so a block quote before it is closed)
            if not list_open(line) or len(m["indented"]) < width:  # or too little indented for any
                add(line, line + 1, len(m["iatx"]), _atx_text(m["iraw"]))
                reset = line
                continue
            if line - 1 >= pos and _content_indent(lines[line]) <= len(m["indented"]):
                continue  # inside the list item the line above opens: a nested heading
        elif kind == "html":
            end = _html_block(src, m, line, n_lines, lines, paragraph, list_open, pos)
            if end is not None:  # an HTML block certainly at document level: its lines hide nothing else
                ended.add(end - 1)
                pos = reset = end
                continue
        elif kind == "deep":
            if not _deep(m["deep"]):
                text = lines[line + 1]
                if _ITEM.match(text):
                    started(line, text)
                if "]:" not in text or not refs or not needed(text):
                    defined = defined or "]:" in text
                    continue
        elif kind == "hr":  # a thematic break at indent 0: it closes every container and paragraph
            ended.add(line)
            reset = line
            continue
        elif kind == "item":
            started(line, m["item"])
            if "]:" not in m["item"] or not refs or not needed(m["item"]):
                defined = defined or "]:" in m["item"]
                continue
        elif kind == "ref" and (not refs or not needed(m["ref"])):
            defined = True
            continue
        # a line the scan cannot decide: markdown-it parses an island around it
        i = bisect_right(splits, line)
        start = max(reset, splits[i - 1] if i else 0)
        while starts and starts[-1] >= start:
            for col in (starts, ends, levels, sources):
                col.pop()
        pos = reset = _island(body, line_start, splits, start, line, n_lines, heads, env)
        fence = ""
    if defined and not refs and any("[" in source for source in sources):
        # heading text may use a definition the scan passed over
        wanted = _label_key("\n".join(source[:INLINE_LIMIT] for source in sources if "[" in source))
        again = _mixed(body, True, budget, wanted)
        if again.sources == sources:
            return again
        return _mixed(body, True, budget)  # (never seen) other headings: every definition counts
    del env[_BUDGET]
    heads.env = env or None
    heads.offsets = list(map(line_start.__getitem__, starts))
    heads.body_offsets = list(map(line_start.__getitem__, ends))
    heads.n_lines = n_lines
    return heads


def _html_block(src, m, line, n_lines, lines, paragraph, list_open, pos) -> int | None:
    """The end (exclusive) of the HTML block that line `line` (matched by `m`) starts, where it certainly
    starts one at document level; else None. CommonMark's seven kinds by markdown-it's own patterns: the
    first five run to the line holding their end marker, the last two to the next blank line."""
    text = m["html"].lstrip(" ")
    kind = next((k for k, seq in enumerate(_html_sequences()) if seq[0].search(text)), None)
    if kind is None:
        return None  # paragraph text after all; left to markdown-it
    if line and line != pos:
        if not lines[line].strip(" \t"):  # after a blank line: at indent 0, or where no list item is open
            if m["html"][0] == " " and list_open(line):
                return None
        else:  # after a block's end; or interrupting a document-level paragraph (kinds 1-6 may)
            before = paragraph(line - 1)
            if before is None or before >= 0 and kind == 6:
                return None
    if kind < 5:
        close = _html_sequences()[kind][1]
        if close.search(text):
            return line + 1
        found = close.search(src, m.end())
        return n_lines if found is None else min(n_lines, line + src.count("\n", m.end(), found.start()) + 1)
    found = _BLANK_LINE.search(src, m.end())
    return n_lines if found is None else min(n_lines, line + src.count("\n", m.end(), found.start()) + 1)


@lru_cache(maxsize=1)
def _html_sequences():
    from markdown_it.rules_block.html_block import HTML_SEQUENCES

    return HTML_SEQUENCES


def _label_key(label: str) -> str:
    """A link label as markdown-it matches it (case-folded, whitespace collapsed)."""
    from markdown_it.common.utils import normalizeReference

    return normalizeReference(label)


def _island(body, line_start, splits, start, line, n_lines, heads, env) -> int:
    """markdown-it on lines [start, end) for the first `end` after `line` that it shows to be a reset
    point (see `_mixed`); the island's headings are added to `heads`. Returns `end`. The work is paid for
    from the env's budget (`_charge`); `AnchorError` where the budget cannot pay."""
    i = bisect_right(splits, line)
    end = splits[i] if i < len(splits) else n_lines
    budget = env[_BUDGET]
    while True:
        budget[0] -= (end - start) // ISLAND_LINE_SHARE + ISLAND_CALL
        try:
            if budget[0] < 0:
                raise _Spent(0)
            tokens = _blocks().parse(body[line_start[start]:line_start[end]], env)
        except _Spent as spent:
            raise AnchorError(f"too much for markdown-it: the lines the line scan cannot decide (nested lists, "
                              f"block quotes, HTML, link reference definitions) cost more than {ISLAND_WORK} "
                              "units of block parsing; refused to keep anchoring under a second",
                              start + spent.args[0] + 1) from None
        if end >= n_lines or _closed(tokens, end - start):
            break
        i = bisect_right(splits, start + 2 * (end - start) - 1)
        end = splits[i] if i < len(splits) else n_lines
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map:
            heads.starts.append(start + tok.map[0])
            heads.ends.append(start + tok.map[1])
            heads.levels.append(int(tok.tag[1]))
            heads.sources.append(tokens[i + 1].content)
    return end


def _closed(tokens, n: int) -> bool:
    """Whether nothing a region's parse left open at its end (line `n`, after a blank line) could
    continue past it: only a list may reach the end (the next, unindented line closes it or adds an
    item), and only where nesting stayed below markdown-it's limit (else the list swallowed the rest)."""
    deepest = max((t.level for t in tokens), default=0)
    return not any(tok.level == 0 and tok.map and tok.map[1] >= n and (
        tok.type not in ("bullet_list_open", "ordered_list_open") or deepest >= 18) for tok in tokens)


def _atx_text(raw: str | None) -> str:
    """An ATX heading's inline source from the text after its `#` marks (from the space or tab on)."""
    if not raw:
        return ""
    if raw[-1] in " \t#":
        raw = raw.rstrip(" \t")
        head = raw.rstrip("#")
        if len(head) < len(raw) and head[-1] in " \t":
            raw = head  # a closing run of `#` after a space is not text
    return raw.strip(_TRIM)


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
        return _parse(body, _headings(body))


@lru_cache(maxsize=256)
def _parse_cached(body: str) -> tuple[Section, ...]:
    _bound_sections(body)
    with gc_paused(len(body) >= _GC_PAUSE_CHARS):
        heads = _scan(body)
        return _parse(body, _mixed(body) if heads is None else heads)


# Every document-level heading is one of these lines (an ATX heading or a setext underline at indent 0-3), so
# a body has at most as many sections as it has such lines, plus its `_preamble`.
_HEADING_LIKE = re.compile(r"\n {0,3}(?:#{1,6}(?=[ \t\n])|=+[ \t]*(?=\n)|-+[ \t]*(?=\n))")
_HEADING_STARTS = tuple(f"\n{' ' * k}{c}" for k in range(4) for c in "#=-")


def _bound_sections(body: str) -> None:
    """`AnchorError` where a body holds more than MAX_SECTIONS heading-like lines. Counted before any
    section, match or island exists: first an upper bound by `str.count` (~20 ms on 2 MiB), then, only
    above the limit, the exact count."""
    if len(body) <= 2 * MAX_SECTIONS or body.count("\n") + body.count("\r") < MAX_SECTIONS:
        return  # a heading-like line takes two characters and a line of its own
    src = "\n" + (body if "\r" not in body else _NEWLINES.sub("\n", body)) + "\n"
    if sum(map(src.count, _HEADING_STARTS)) <= MAX_SECTIONS:
        return
    n = len(_HEADING_LIKE.findall(src))
    if n > MAX_SECTIONS:
        raise AnchorError(f"{n} heading-like lines (`#` headings and `===`/`---` underlines), more than the "
                          f"limit of {MAX_SECTIONS} sections; refused before parsing (a SKILL.md has tens to "
                          "hundreds of sections)")


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


def _parse(body: str, heads: _Heads) -> tuple[Section, ...]:
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
    preamble = body[:offsets[0]]
    sections = [_section(PREAMBLE, "", 0, 1, starts[0], preamble, 0, "", preamble)]
    sections += map(_section, slugs, plains, heads.levels, map(int.__add__, starts, repeat(1)), starts[1:] + [n_lines],
                    map(body.__getitem__, map(slice, offsets, ends_at)), map(int.__sub__, ends, starts),
                    heads.sources, map(body.__getitem__, map(slice, below, ends_at)))
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
