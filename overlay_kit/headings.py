"""The Markdown heading scanner: which lines of a skill body are document-level headings, where sections start.

CommonMark decides what is a heading (ATX `#` lines and setext `===`/`---` underlines, not inside code, HTML
blocks or paragraphs that swallow them), and only a heading at document level (not in a block quote or list
item) starts a section. markdown-it-py finds them exactly, by parsing every block of the body; this module
finds the same headings by scanning lines, and hands markdown-it only the few regions it cannot decide.
Three ways in, all returning the same `Heads`:

* `markdown_it_headings(body)`: markdown-it alone, the reference. It is the oracle both scanners are tested
  against (tests/test_headings.py, tests/test_anchor_fast.py, tests/test_anchor_bound.py).
* `scan_lines(body)`: the common case, a fence-aware regex scan for ATX headings at indent 0; None where the body
  holds anything whose meaning depends on container or paragraph state.
* `scan_mixed(body)`: every other body. One pass over the lines that may matter (`_EVENT`) decides setext
  headings, headings indented 1-3 spaces and HTML blocks wherever the context is certainly document level;
  around each line it cannot decide, markdown-it parses an *island* that starts and ends where block state
  provably resets. markdown-it's share of the work is bounded (ISLAND_WORK); past it, `AnchorError`.

Line numbers here are 0-based. The scanners read "\\n" + body + "\\n" (line breaks normalized as markdown-it
normalizes them), so every line, the first and last included, is "\\n" + its text + "\\n" and the patterns need
no MULTILINE anchors: a literal "\\n" prefix is what the regex engine skips to fastest.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate, chain, repeat

__all__ = [
    "INLINE_LIMIT",
    "ISLAND_WORK",
    "LINE",
    "AnchorError",
    "Heads",
    "block_parser",
    "markdown_it_headings",
    "scan_lines",
    "scan_mixed",
    "split_lines",
]

INLINE_LIMIT = 4096  # characters of a heading's inline source parsed for its plain text (anchor._inline_plain)
# markdown-it's share of the mixed scan, counted inside markdown-it (`_charge`): one unit each time a block
# rule chain is tried on a line (a block start, or a check whether a line ends a paragraph), plus, per island
# parse (re-parses of a growing island included), ISLAND_CALL and one unit per ISLAND_LINE_SHARE lines given.
# At the worst rates measured (docs/reliability.md) ISLAND_WORK units stay well under the bound; past them the
# body is refused (`AnchorError`), mid-parse if need be.
ISLAND_WORK = 30_000
ISLAND_CALL = 4
ISLAND_LINE_SHARE = 8
_BUDGET = "\0anchor-budget"  # the env key holding an island parse's budget: [units left]
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # a line with its ending, split where markdown-it splits
NEWLINES = re.compile(r"\r\n?")  # the line breaks markdown-it normalizes to "\n"
# The characters markdown-it trims from a heading's inline source (`MD_TRIM_CHARS`; Unicode whitespace).
_TRIM = "\t\n\x0b\x0c\r \xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


class AnchorError(ValueError):
    """A body the anchorer refuses to parse: over an input bound (see anchor.MAX_SECTIONS, ISLAND_WORK). `line`
    is the 1-based body line where the bound was passed, where known."""

    def __init__(self, message: str, line: int | None = None):
        self.message, self.line = message, line
        super().__init__(message if line is None else f"line {line}: {message}")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split exactly where markdown-it splits (\\r\\n, \\r, \\n)."""
    return LINE.findall(text)


class Heads:
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

    def add_tokens(self, tokens, first_line: int = 0) -> None:
        """The document-level headings among markdown-it block tokens of lines from `first_line` on
        (a heading nested in a block quote or list item has token level > 0)."""
        for i, tok in enumerate(tokens):
            if tok.type == "heading_open" and tok.level == 0 and tok.map:
                self.starts.append(first_line + tok.map[0])
                self.ends.append(first_line + tok.map[1])
                self.levels.append(int(tok.tag[1]))
                self.sources.append(tokens[i + 1].content)

    def drop_from(self, line: int) -> None:
        """Forget the headings starting at `line` or later (an island re-decides them)."""
        while self.starts and self.starts[-1] >= line:
            for col in (self.starts, self.ends, self.levels, self.sources):
                col.pop()


# ------------------------------------------------------------------------------------------ markdown-it


@lru_cache(maxsize=1)
def block_parser():
    """markdown-it's CommonMark block parser, inline parsing off (inline parsing of every paragraph is most
    of the cost and only headings need it). Its first block rule, `_charge`, pays for each rule chain tried
    where the env holds a budget. Imported on first use: the line scans need none of it."""
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


def markdown_it_headings(body: str) -> Heads:
    """Every document-level heading by markdown-it alone (offsets left to the caller): the reference."""
    env: dict = {}  # collects link reference definitions, which heading text may use
    heads = Heads()
    heads.add_tokens(block_parser().parse(body, env))
    heads.offsets = heads.body_offsets = None
    heads.env = env or None
    return heads


@lru_cache(maxsize=1)
def _html_sequences():
    """CommonMark's seven HTML block kinds as markdown-it matches them: (start pattern, end pattern)."""
    from markdown_it.rules_block.html_block import HTML_SEQUENCES

    return HTML_SEQUENCES


def _label_key(label: str) -> str:
    """A link label as markdown-it matches it (case-folded, whitespace collapsed)."""
    from markdown_it.common.utils import normalizeReference

    return normalizeReference(label)


def _closed(tokens, n: int) -> bool:
    """Whether nothing a region's parse left open at its end (line `n`, after a blank line) could
    continue past it: only a list may reach the end (the next, unindented line closes it or adds an
    item), and only where nesting stayed below markdown-it's limit (else the list swallowed the rest)."""
    deepest = max((t.level for t in tokens), default=0)
    return not any(
        tok.level == 0
        and tok.map
        and tok.map[1] >= n
        and (tok.type not in ("bullet_list_open", "ordered_list_open") or deepest >= 18)
        for tok in tokens
    )


# ------------------------------------------------------------------------------------------ line patterns

# (A lookahead on a line's first character lets the engine reject most lines with one test.)
_ATX = re.compile(r"\n#(#{0,5})([ \t][^\n]*)?(?=\n)")  # an ATX heading at indent 0 (level: 1 + the group)
_FENCE = re.compile(r"\n(?=[ `~])( {0,3})(`{3,}|~{3,})([^\n]*)")  # a fence line, indent 0-3
# Lines `scan_lines` cannot decide: an indented heading, an HTML block start, a setext underline candidate
# (harmless only under a blank line), and a container prefix reaching column 18 (`_ten_deep`). Tabs need no
# case of their own: a tab in the indentation puts a line at column 4 or more, code or container content.
# A line opening with `- ` and then a character none of them can continue with (a bullet item's first word, as
# every learned line opens) is rejected at once by the negative lookahead.
_SUSPECT = re.compile(
    r"\n(?=[ <=\-\t>*+.)0-9])(?!- [^ \t\n<=>\-*+.)0-9#])"
    r"(?: {1,3}#{1,6}(?=[ \t\n])| {0,3}<|(?P<setext> {0,3}(?:=+|-+)[ \t]*(?=\n))"
    r"|(?P<deep>[ >\-*+.)0-9]{18,}|[ >\-*+.)0-9]*\t[ \t>\-*+.)0-9]*))"
)
_MARKER = re.compile(r"[-*+]|\d[.)]")
# The same lines, plus headings and fences, in one pass (`scan_mixed`); `ref` is a line that may hold a link
# reference definition, `item` one that may start a list item, `hr` a thematic break at indent 0.
_EVENT = re.compile(
    r"""\n(?:
    (?P<atx>\#{1,6})(?P<raw>[ \t][^\n]*)?(?=\n)
  | (?P<fence>(?P<indent>\ {0,3})(?P<marker>`{3,}|~{3,})(?P<info>[^\n]*))
  | (?P<setext>\ {0,3}(?:=+|-+)[ \t]*)(?=\n)
  | (?P<indented>\ {1,3})(?P<iatx>\#{1,6})(?P<iraw>[ \t][^\n]*)?(?=\n)
  | (?P<html>\ {0,3}<[^\n]*)
  | (?P<deep>[ >\-*+.)0-9]{18,}|[ >\-*+.)0-9]*\t[ \t>\-*+.)0-9]*)
  | (?P<hr>(?P<hrc>[-*_])(?:[ \t]*(?P=hrc)){2,}[ \t]*)(?=\n)
  | (?P<item>\ {0,3}(?:[-+*]|\d{1,9}[.)])(?=[ \t\n])[^\n]*)
  | (?P<ref>[^\n]*\]:)
)""",
    re.VERBOSE,
)
# an event's kind from the last group its match closed
_EVENT_KIND = {
    "atx": "atx",
    "raw": "atx",
    "fence": "fence",
    "info": "fence",
    "setext": "setext",
    "html": "html",
    "deep": "deep",
    "item": "item",
    "hr": "hr",
    "hrc": "hr",
    "ref": "ref",
    "iatx": "indented",
    "iraw": "indented",
}
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
_PLAIN = re.compile(
    r" {0,3}(?![\s`~>=<\[]|#{1,6}(?:[ \t]|$)|[-+*](?:[ \t]|$)|([-*_])(?:[ \t]*\1){2,}[ \t]*$"
    r"|-+[ \t]*$|\d{1,9}[.)](?:[ \t]|$))"
)
# A blank line (spaces and tabs only) followed by a line at indent 0: where block state may reset.
_SPLIT = re.compile(r"\n[ \t]*(?=\n[^ \t\n])")
# The label a line may define: after a container prefix, `[label]:` with no bracket inside.
_REF_LABEL = re.compile(r"[ \t>\-*+.)0-9]*\[([^\[\]]*)\]:")


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


def _ten_deep(prefix: str) -> bool:
    """Whether a line's container prefix may hold a list nested ten deep: markdown-it stops at nesting
    level 20 (a list and its item are two) and then swallows the rest of the enclosing block, the whole
    document for a top-level list. Ten list levels put the last marker at column 18 or more."""
    return len(prefix.expandtabs(4)) >= 18 and _MARKER.search(prefix) is not None


def _content_indent(text: str) -> int:
    """The content indentation of the list item that line `text` certainly opens, wherever it stands (a
    bullet or `1.`/`1)` with text after it, which may interrupt a paragraph, and not a thematic break):
    the marker, then its 1-4 spaces, or one where 5 or more follow. Else a large number."""
    mm = _ITEM_EXACT.match(text)
    if mm is None or _BREAK.match(text) or mm[2][0].isdigit() and mm[2][:-1] != "1":
        return 99
    spaces = len(mm[3])
    return len(mm[1]) + len(mm[2]) + (spaces if spaces <= 4 else 1)


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


# ------------------------------------------------------------------------------------------ the line scan


def scan_lines(body: str) -> Heads | None:
    """`markdown_it_headings` by a fence-aware line scan, or None where only a parse can tell.

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
        src = NEWLINES.sub("\n", src)  # markdown-it's normalization; line numbers are unchanged
    if "\0" in src:
        src = src.replace("\0", "\ufffd")
    src = "\n" + src + "\n"
    # pass 1, fences: a fenced code block hides every heading-like line inside it
    fences: list[int] = [0]  # [0, open, close, open, close, …, end]: the regions outside fences
    fence, fence_len = "", 0
    for m in _FENCE.finditer(src):
        indent, marker, info = m.groups()
        if fence:  # only a closing fence matters: same marker, at least as long, spaces after
            if marker[0] == fence and len(marker) >= fence_len and not info.strip(" \t"):
                fence = ""
                fences.append(m.end())  # the closing line's line break: the next line is outside
        elif marker[0] == "`" and "`" in info:
            continue  # a backtick fence's info string holds no backtick: inline code in a paragraph
        elif indent:
            return None  # in a list item or not?
        else:
            fence, fence_len = marker[0], len(marker)
            fences.append(m.start() + 1)  # a match may end on the opening line's line break, none start there
    if not fence:
        fences.append(len(src))  # (an unclosed fence runs to the end of the document)
    outside = list(zip(fences[::2], fences[1::2]))
    # pass 2, outside fences: any line the scan cannot decide gives up
    for m in chain.from_iterable(map(_SUSPECT.finditer, repeat(src), *zip(*outside))):
        pos = m.start()
        deep = m.group("deep")
        if deep is not None:
            if _ten_deep(deep):
                return None
            continue
        if m.group("setext") is None or src[src.rfind("\n", 0, pos) + 1 : pos].strip(" \t"):
            return None  # `===` / `---` under a non-blank line: maybe a setext heading
    # pass 3, outside fences: the ATX headings at indent 0
    ms = list(chain.from_iterable(map(_ATX.finditer, repeat(src), *zip(*outside))))
    heads = Heads()
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


# ------------------------------------------------------------------------------------------ the mixed scan


def scan_mixed(body: str, refs: bool = False, budget: list[int] | None = None, wanted: str | None = None) -> Heads:
    """`markdown_it_headings` where `scan_lines` gave up: the scan's decisions between the lines it cannot decide,
    and markdown-it on an island around each such line.

    An island starts where CommonMark block state is known to be reset in a region the scan decided (a
    line at indent 0 after a blank line, a heading or fence line at indent 0, the line after a closing
    fence), and ends before a line at indent 0 after a blank line once markdown-it shows that nothing
    is open there (no fence, HTML block or nesting-limit swallow runs to the island's end; a list that
    does is closed by the unindented line). Where it is not shown, the island grows to twice its size.

    A link reference definition cannot start, end or hide a heading (a paragraph that starts with `[`
    is left to an island), but heading text may use it: where a heading's source holds `[` and a line
    outside the islands holds `]:`, the scan is redone with such lines islands of their own (`refs`), and
    the definitions collected there resolve heading text everywhere, as in the full parse. Only a
    definition that may change a heading's text needs its island then: one whose label is not yet
    defined and occurs in some heading's source (`wanted`: the first pass's sources, normalized as
    labels are; a line that defines any other label, or none, is what the first pass took it for).

    markdown-it's work is bounded (`budget`, shared by both passes; see ISLAND_WORK): past it, `AnchorError`.
    """
    if budget is None:
        budget = [ISLAND_WORK]
    first = _MixedScan(body, refs, budget, wanted)
    heads = first.run()
    if first.defined and not refs and any("[" in source for source in heads.sources):
        # heading text may use a definition the first pass took for text: redo it, giving those lines islands
        wanted = _label_key("\n".join(source[:INLINE_LIMIT] for source in heads.sources if "[" in source))
        again = scan_mixed(body, True, budget, wanted)
        if again.sources == heads.sources:
            return again
        return scan_mixed(body, True, budget)  # (never seen) other headings: every definition counts
    return first.finish()


class _MixedScan:
    """One pass of `scan_mixed` over a body, its state explicit.

    The pass walks `_EVENT` matches in order; each kind of line has a method (`_atx`, `_setext`, …) that
    decides it where CommonMark's rules settle it from the lines around it and returns True, or returns
    False and the line goes to markdown-it on an island (`_island`). Lines before `pos` are decided already
    (an island or an HTML block decides many at once); `reset` is the latest line where block state is known
    to reset, where an island may start.
    """

    def __init__(self, body: str, refs: bool, budget: list[int], wanted: str | None) -> None:
        self.body = body
        self.refs = refs  # whether a line that may define a link reference a heading uses goes to an island
        self.wanted = wanted  # the labels headings may use (normalized), or None: any label
        src = body if "\r" not in body else NEWLINES.sub("\n", body)
        if "\0" in src:
            src = src.replace("\0", "\ufffd")
        self.n_lines = src.count("\n") + (0 if src.endswith("\n") or not src else 1)
        self.src = src = "\n" + src + "\n"
        self.lines = src.split("\n")  # lines[i + 1] is line i; lines[0] is the (blank) line before the body
        self.line_start = [0, *accumulate(map(len, split_lines(body)))]  # line i's offset in `body`
        # the lines at indent 0 after a blank line, ascending: where islands start and end
        blanks = [m.start() for m in _SPLIT.finditer(src)]
        self.splits = list(map(int.__add__, accumulate(map(src.count, repeat("\n"), [0] + blanks, blanks)), repeat(1)))
        self.heads = Heads()
        self.heads.offsets = self.heads.body_offsets = None
        self.env: dict = {_BUDGET: budget}  # markdown-it's env: the budget, then the definitions islands found
        self.pos = self.reset = 0
        self.fence, self.fence_len = "", 0  # the open fence's character and length ("": none open)
        self.item = -1  # the latest line that may start a list item
        self.width = 0  # the least content indentation any list item open since then may have
        self.defined = False  # whether a line outside the islands may define a link reference
        self.ended: set[int] = set()  # lines that end a document-level block with nothing left open after them

    def run(self) -> Heads:
        """Every line that may matter, in order, decided here or on an island; the headings found."""
        src = self.src
        decide = {
            "atx": self._atx,
            "fence": self._fence,
            "setext": self._setext,
            "indented": self._indented,
            "html": self._html,
            "deep": self._long_prefix,
            "hr": self._hr,
            "item": self._item,
            "ref": self._ref,
        }
        line, last = -1, 0
        for m in _EVENT.finditer(src):
            line += src.count("\n", last, m.start() + 1)
            last = m.start() + 1
            if line < self.pos:
                continue  # inside an island or HTML block already decided
            kind = _EVENT_KIND[m.lastgroup]
            if self.fence:
                self._in_fence(kind, m, line)
            elif not decide[kind](m, line):
                self._island(line)
        return self.heads

    def finish(self) -> Heads:
        """The headings with their offsets, and the definitions heading text may use."""
        heads, env = self.heads, self.env
        del env[_BUDGET]
        heads.env = env or None
        heads.offsets = list(map(self.line_start.__getitem__, heads.starts))
        heads.body_offsets = list(map(self.line_start.__getitem__, heads.ends))
        heads.n_lines = self.n_lines
        return heads

    # ---------------------------------------------------------------- what the lines around a line say

    def _list_open(self, at: int) -> bool:
        """Whether a list item may hold line `at`: one started since block state last reset (a line at
        indent 0 after a blank one closes every list, unless it starts an item itself)."""
        i = bisect_right(self.splits, at)
        return self.item >= max(self.pos, self.reset, self.splits[i - 1] if i else 0)

    def _text_above(self, at: int) -> int:
        """The line above the run of paragraph-text lines that ends at line `at` (`at` itself where line
        `at` is no such line). A line indented 4 or more only continues a paragraph (no indented code
        interrupts one); the run stops at a decided line or a block's end."""
        lines, ended, pos = self.lines, self.ended, self.pos
        i = at
        while (
            i >= pos
            and i not in ended
            and lines[i + 1].strip(" \t")
            and (_PLAIN.match(lines[i + 1]) or _indent(lines[i + 1]) >= 4)
        ):
            i -= 1
        return i

    def _paragraph(self, at: int) -> int | None:
        """The first line of the document-level paragraph whose last line is `at`, or None where that
        is not certain (-1 for "no paragraph": `at` ends a block)."""
        lines = self.lines
        i = self._text_above(at)
        if i == at:  # no paragraph line at all
            return -1 if at in self.ended else None
        first = i + 1
        if not _PLAIN.match(lines[first + 1]):
            return None  # indented 4 or more: it cannot start a paragraph, so what holds it is undecided
        # a paragraph starts after a block's end, or after a blank line (or the document start) where no
        # list item may hold it (an indented first line could be an item's continuation)
        if (
            i in self.ended
            or (i < 0 or not lines[i + 1].strip(" \t"))
            and (not lines[first + 1][:1].isspace() or not self._list_open(first))
        ):
            return first
        return None

    def _started(self, at: int, text: str) -> None:
        """Line `at` (`text`) may start a list item."""
        mm = _ITEM.match(text)
        w = len(mm[1]) + len(mm[2]) + 1 if mm else 2  # the least content indentation of that item
        self.width = min(self.width, w) if self._list_open(at) else w
        self.item = at

    def _needed(self, text: str) -> bool:
        """Whether line `text` may define a label that some heading may use and no island has defined."""
        if self.wanted is None:
            return True
        mm = _REF_LABEL.match(text)
        if mm is None:
            return True  # a label escaped, spread over lines or after other text: the island decides
        label = _label_key(mm[1])
        return bool(label) and label in self.wanted and label not in self.env.get("references", ())

    def _definition_decided(self, text: str) -> bool:
        """Whether line `text` needs no island for a link reference definition it may hold: it holds
        none, or definitions don't count in this pass, or none a heading may use (noted in `defined`)."""
        if "]:" not in text or not self.refs or not self._needed(text):
            self.defined = self.defined or "]:" in text
            return True
        return False

    def _add(self, start: int, end: int, level: int, source: str) -> None:
        heads = self.heads
        heads.starts.append(start)
        heads.ends.append(end)
        heads.levels.append(level)
        heads.sources.append(source)
        self.ended.add(end - 1)

    # ---------------------------------------------------------------- one method per kind of line

    def _in_fence(self, kind: str, m: re.Match, line: int) -> None:
        """Inside a fenced code block only its closing fence counts: the same character, at least as many,
        nothing but spaces after (indent 0-3)."""
        if (
            kind == "fence"
            and m["marker"][0] == self.fence
            and len(m["marker"]) >= self.fence_len
            and not m["info"].strip(" \t")
        ):
            self.fence, self.reset = "", line + 1
            self.ended.add(line)

    def _atx(self, m: re.Match, line: int) -> bool:
        """An ATX heading at indent 0: a heading wherever it stands (it closes any open container and
        interrupts a paragraph)."""
        self._add(line, line + 1, len(m["atx"]), _atx_text(m["raw"]))
        self.reset = line
        return True

    def _fence(self, m: re.Match, line: int) -> bool:
        """A fence line: at indent 0 it opens a code block; indented 1-3 it may sit in a list item (island)."""
        if m["marker"][0] == "`" and "`" in m["info"]:
            return True  # a backtick fence's info string holds no backtick: inline code in a paragraph
        if not m["indent"]:
            self.fence, self.fence_len, self.reset = m["marker"][0], len(m["marker"]), line
            return True
        return False

    def _setext(self, m: re.Match, line: int) -> bool:
        """A `===` / `---` line (indent 0-3): a setext underline where it ends a document-level paragraph;
        else a thematic break, paragraph text or (a lone `-`) an empty list item."""
        underline = m["setext"].strip(" \t")
        blank_above = not self.lines[line].strip(" \t")
        first = None if blank_above else self._paragraph(line - 1)
        if first is not None and first >= 0:  # a setext heading: the paragraph's text, markers dropped
            self._add(
                first,
                line + 1,
                1 if underline[0] == "=" else 2,
                "\n".join(self.lines[first + 1 : line + 1]).strip(_TRIM),
            )
            self.reset = line + 1
            return True
        if underline == "-":
            self._started(line, self.lines[line + 1])  # `-` alone may be an empty list item
        if blank_above or first == -1:
            return True  # under a blank line or a block's end: never a heading
        # under a block quote's or list item's paragraph: paragraph text continues lazily there (never an
        # underline) when the run of text above starts on a line opening that container at indent 0
        i = self._text_above(line - 1)
        host = self.lines[i + 1] if i >= self.pos and i not in self.ended else ""
        return bool(_LAZY_HOST.match(host)) and (
            host[0] != ">" or i == self.pos or i - 1 in self.ended or not _QUOTED.match(self.lines[i])
        )

    def _indented(self, m: re.Match, line: int) -> bool:
        """An ATX heading indented 1-3 spaces: a heading unless a list item holds it (a heading is never a
        lazy continuation line, so a block quote before it is closed)."""
        depth = len(m["indented"])
        if not self._list_open(line) or depth < self.width:  # no item open, or too little indented for any
            self._add(line, line + 1, len(m["iatx"]), _atx_text(m["iraw"]))
            self.reset = line
            return True
        # inside the list item the line above opens: a nested heading
        return line - 1 >= self.pos and _content_indent(self.lines[line]) <= depth

    def _html(self, m: re.Match, line: int) -> bool:
        """An HTML block start certainly at document level hides every line up to its end."""
        end = self._html_block(m, line)
        if end is None:
            return False
        self.ended.add(end - 1)
        self.pos = self.reset = end
        return True

    def _long_prefix(self, m: re.Match, line: int) -> bool:
        """A line whose container prefix reaches column 18: an island only where a list may nest ten deep
        (markdown-it's nesting limit), else possibly a list item or a definition."""
        if _ten_deep(m["deep"]):
            return False
        text = self.lines[line + 1]
        if _ITEM.match(text):
            self._started(line, text)
        return self._definition_decided(text)

    def _hr(self, m: re.Match, line: int) -> bool:
        """A thematic break at indent 0 closes every container and paragraph."""
        self.ended.add(line)
        self.reset = line
        return True

    def _item(self, m: re.Match, line: int) -> bool:
        """A line that may start a list item (a bullet or `1.`-style marker, indent 0-3)."""
        self._started(line, m["item"])
        return self._definition_decided(m["item"])

    def _ref(self, m: re.Match, line: int) -> bool:
        """A line holding `]:`, which may define a link reference."""
        return self._definition_decided(m["ref"])

    # ---------------------------------------------------------------- HTML blocks and islands

    def _html_block(self, m: re.Match, line: int) -> int | None:
        """The end (exclusive) of the HTML block that line `line` (matched by `m`) starts, where it certainly
        starts one at document level; else None. CommonMark's seven kinds by markdown-it's own patterns: the
        first five run to the line holding their end marker, the last two to the next blank line."""
        src, lines, n_lines = self.src, self.lines, self.n_lines
        text = m["html"].lstrip(" ")
        kind = next((k for k, seq in enumerate(_html_sequences()) if seq[0].search(text)), None)
        if kind is None:
            return None  # paragraph text after all; left to markdown-it
        if line and line != self.pos:
            if not lines[line].strip(" \t"):  # after a blank line: at indent 0, or where no list item is open
                if m["html"][0] == " " and self._list_open(line):
                    return None
            else:  # after a block's end; or interrupting a document-level paragraph (kinds 1-6 may)
                before = self._paragraph(line - 1)
                if before is None or before >= 0 and kind == 6:
                    return None
        if kind < 5:
            close = _html_sequences()[kind][1]
            if close.search(text):
                return line + 1
            found = close.search(src, m.end())
        else:
            found = _BLANK_LINE.search(src, m.end())
        return n_lines if found is None else min(n_lines, line + src.count("\n", m.end(), found.start()) + 1)

    def _island(self, line: int) -> None:
        """markdown-it decides line `line`: an island from the latest reset point at or before the blank line
        above it, the headings already found there dropped; the scan resumes after the island."""
        i = bisect_right(self.splits, line)
        start = max(self.reset, self.splits[i - 1] if i else 0)
        self.heads.drop_from(start)
        self.pos = self.reset = _island(self, start, line)


def _island(scan: _MixedScan, start: int, line: int) -> int:
    """markdown-it on lines [start, end) for the first `end` after `line` that it shows to be a reset point
    (see `scan_mixed`); the island's headings are added to `scan.heads`. Returns `end`. The work is paid for
    from the env's budget (`_charge`); `AnchorError` where the budget cannot pay."""
    splits, n_lines, env, line_start = scan.splits, scan.n_lines, scan.env, scan.line_start
    i = bisect_right(splits, line)
    end = splits[i] if i < len(splits) else n_lines
    budget = env[_BUDGET]
    while True:
        budget[0] -= (end - start) // ISLAND_LINE_SHARE + ISLAND_CALL
        try:
            if budget[0] < 0:
                raise _Spent(0)
            tokens = block_parser().parse(scan.body[line_start[start] : line_start[end]], env)
        except _Spent as spent:
            raise AnchorError(
                f"too much for markdown-it: the lines the line scan cannot decide (nested lists, "
                f"block quotes, HTML, link reference definitions) cost more than {ISLAND_WORK} "
                "units of block parsing; refused to keep anchoring under a second",
                start + spent.args[0] + 1,
            ) from None
        if end >= n_lines or _closed(tokens, end - start):
            break
        i = bisect_right(splits, start + 2 * (end - start) - 1)  # not shown closed: twice the size
        end = splits[i] if i < len(splits) else n_lines
    scan.heads.add_tokens(tokens, start)
    return end
