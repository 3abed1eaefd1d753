"""Hostile text: what untrusted lesson text may look like once it reaches a Markdown document, a terminal or
the injection scan.

* `markdown_line(text)` — one learned lesson as ONE line of CommonMark inline text that no parser can read
  as block structure: whitespace (line breaks included) collapsed, a leading character that could open a
  heading, list, quote, fence, HTML block, table, thematic break or link reference definition escaped, and
  invisible/control characters made visible. Learned text can then never open, close or hide a section.
* `block_structure(text)` — the block constructs (headings, setext underlines, fences, HTML blocks, link
  reference definitions, thematic breaks, leading blank lines) a lesson's text would carry as Markdown; the
  gates refuse those lessons rather than silently flatten them.
* `visible(text)` — every control, bidi, invisible or private-use character as a visible `<U+202E>` mark,
  for every human-facing output (CLI text, HTML and text reprs), so the text a reviewer approves is the text
  that is stored.
* `hidden_chars(text)` — (index, char) of those characters, for the injection scan.
* `views(text)` — the folded readings of a text the injection scan looks at, so that obfuscation does not
  hide a payload: ANSI sequences dropped, CR read as a line break, HTML comments cut out (and their content
  read on its own), hidden characters dropped (tag characters decoded: "ASCII smuggling"), NFKC (fullwidth,
  mathematical and circled letters), confusable Cyrillic/Greek/small-capital letters mapped to Latin,
  accents stripped, casefolded; then with hyphen/dot-split words joined and spaced-out letters collapsed.
"""

from __future__ import annotations

import re
import string
import unicodedata
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate, chain

from .common import find_all

__all__ = ["block_parser", "block_structure", "fold", "hidden_chars", "is_hidden", "markdown_line", "views", "views_many",
           "visible"]

# Bidi controls, zero-width characters, tag characters, variation selectors, interlinear annotation, BOM,
# Hangul/Braille fillers: all render as nothing (or reorder what follows) on a terminal or in a browser.
_INVISIBLE = frozenset(
    [0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x2800, 0x3164, 0xFEFF, 0xFFA0]
    + list(range(0x200B, 0x2010)) + list(range(0x202A, 0x202F)) + list(range(0x2060, 0x2070))
    + list(range(0xFE00, 0xFE10)) + list(range(0xFFF9, 0xFFFC)))


def is_hidden(ch: str) -> bool:
    """A character a reader cannot see or that changes how the rest of the line displays."""
    o = ord(ch)
    if ch in "\n\t":
        return False
    if o in _INVISIBLE or 0xE0000 <= o <= 0xE007F or 0xE0100 <= o <= 0xE01EF:
        return True
    return unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")


_PLAIN_BYTES = bytes([9, 10, *range(32, 127)])  # ASCII but its control characters (the hidden ones it can hold)


def _plain_ascii(text: str) -> bool:
    """ASCII without a control character (tab and newline allowed): nothing in it is hidden or folds by
    Unicode normalization, so the per-character passes below can be skipped. (Deleting the plain bytes
    leaves nothing: a byte-table pass, 5x faster than a regex search on a batch.)"""
    return text.isascii() and not text.encode("ascii").translate(None, _PLAIN_BYTES)


def hidden_chars(text: str) -> list[tuple[int, str]]:
    if _plain_ascii(text):
        return []
    return [(i, ch) for i, ch in enumerate(text) if is_hidden(ch)]


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """`text` with every hidden character shown as `<U+XXXX>` (newlines kept unless `keep_newlines=False`)."""
    text = str(text)
    if _plain_ascii(text) and (keep_newlines or "\n" not in text):
        return text  # nothing in it is hidden: skip the per-character pass (every CLI line goes through here)
    if not any(is_hidden(ch) or (not keep_newlines and ch == "\n") for ch in text):
        return text
    return "".join(f"<U+{ord(ch):04X}>" if is_hidden(ch) or (not keep_newlines and ch == "\n") else ch
                   for ch in text)


_ORDERED = re.compile(r"(\d{1,9})([.)])")


def markdown_line(text: str) -> str:
    """One lesson as one structure-free CommonMark line (see the module docstring). Never empty."""
    flat = " ".join(visible(text).split())
    if not flat:
        return "(empty)"
    m = _ORDERED.match(flat)
    if m:  # `1. x` / `1) x` would open an ordered list
        return m.group(1) + "\\" + flat[m.end(1):]
    if flat[0] in string.punctuation:  # `#`, `>`, `-`, `*`, `+`, `=`, `` ` ``, `~`, `<`, `[`, `|`, `_`, …
        return "\\" + flat
    return flat


def block_parser():
    """The anchorer's block-level CommonMark parser (inline parsing off), loaded on first use."""
    from .anchor import _blocks

    return _blocks()


_NAMES = {"heading_open": "a heading", "fence": "a code fence", "html_block": "an HTML block",
          "hr": "a thematic break"}


def block_structure(text: str) -> list[str]:
    """The Markdown block constructs `text` carries, described for a refusal message; [] for plain prose
    (paragraphs, lists, quotes and indented lines are prose: rendered flat, they stay prose)."""
    if "\n" not in text and "\r" not in text and text.lstrip(" \t")[:1].isalnum():
        return []  # one line opening with a letter or digit: no construct named here can start it
    return block_structure_parsed(text)


def block_structure_parsed(text: str) -> list[str]:
    """`block_structure` by a full block parse, for any text (the oracle of its one-line shortcut)."""
    out: list[str] = []
    if re.match(r"[ \t]*(?:\r\n|\r|\n)", text):
        out.append("leading blank lines")
    env: dict = {}
    for tok in block_parser().parse(text, env):
        name = _NAMES.get(tok.type)
        if name and name not in out:
            out.append(name)
    if env.get("references"):
        out.append("a link reference definition")
    return out


# ------------------------------------------------------------------------------------------ folding

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])|\x9b[0-?]*[ -/]*[@-~]")
_COMMENT = re.compile(r"<!--(.*?)(?:-->|\Z)", re.DOTALL)
# Latin look-alikes that NFKC leaves alone (Cyrillic, Greek, Armenian, small capitals, a few symbols).
_CONFUSABLE = str.maketrans({
    **dict(zip("аеорсухіјѕԁһԛԝӏɡνοαειкмтпгвнзьℓ", "aeopcyxijsdhqwlgvoaeikmtnrbh3bl")),
    **dict(zip("АВЕКМНОРСТХІЈЅԌΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "abekmhopctxijsgabezhikmnoptyx")),
    **dict(zip("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ", "abcdefghijklmnoprstuvwyz")),
    **dict(zip("ıȷ0＠", "ijo@")),
})
_SPLITTERS = r"-‐‑‒–—_·•*.~|/\\"  # join the letters on either side: "ig-nore", "ig.nore"
_SPACERS = r" .\-_*·"  # between single letters: "i g n o r e"
_SPLIT = re.compile(rf"(?<=[a-z])\s*[{_SPLITTERS}]+\s*(?=[a-z])")
_SPACED = re.compile(rf"\b[a-z](?:[{_SPACERS}]{{1,2}}[a-z]\b){{2,}}")


def fold(text: str, ansi: str = " ") -> str:
    """The base folded reading (see `views`); ANSI sequences become `ansi`."""
    t = _ANSI.sub(ansi, str(text)).replace("\r\n", "\n").replace("\r", "\n")
    t = _COMMENT.sub("", t)
    if _plain_ascii(t):  # the common case: the Unicode passes are identities on it (`fold_unicode` is the oracle)
        return _fold_plain(t)
    return fold_unicode(t)


def _fold_plain(t: str) -> str:
    return t.translate(_CONFUSABLE).casefold().translate(_CONFUSABLE)


def fold_unicode(t: str) -> str:
    """The character-level folding of `fold`, for any text: tag characters decoded, hidden ones dropped, NFKC,
    confusables mapped, accents stripped, casefolded."""
    t = "".join(chr(ord(c) - 0xE0000) if 0xE0020 <= ord(c) <= 0xE007E else ("" if is_hidden(c) else c)
                for c in t)
    t = unicodedata.normalize("NFKC", t).translate(_CONFUSABLE)
    t = "".join(c for c in unicodedata.normalize("NFKD", t) if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", t).casefold().translate(_CONFUSABLE)


def views(text: str) -> list[str]:
    """The distinct readings the scan matches against: the folded text, its split words joined, its spaced
    letters collapsed, and the content of each HTML comment on its own."""
    return list(_views(str(text)))


def _despace(m: re.Match) -> str:
    return re.sub(r"[ .\-_*·]", "", m.group(0))


@lru_cache(maxsize=8192)  # several gate rules read the same fields of one lesson
def _views(text: str) -> tuple[str, ...]:
    base = fold(text)
    joined = _SPLIT.sub("", base)
    spaced = _SPACED.sub(_despace, base)
    comments = [fold(m.group(1)) for m in _COMMENT.finditer(_ANSI.sub("", str(text)))]
    return tuple(dict.fromkeys([base, joined, spaced, fold(text, ansi=""), *comments]))


# ------------------------------------------------------------------------------------ batch readings
# A batch of plain texts is read as one string joined by BATCH_SEP: no fold, split or spacing rule reads across it
# (NUL is neither a space, a letter nor a separator, and plain text holds none; the newlines end a line as a
# text's end does). Plain ASCII folds character by character (a byte table); the split and spacing passes run
# only on texts holding their necessary shape, found in the whole batch at once (on byte tables of character
# classes): a splitter, then spaces, then a letter ("- *a"); a single letter between two spacers ("sas").
BATCH_SEP = "\n\x00\n"


def _byte_table(classify) -> bytes:
    return bytes(ord(classify(chr(b))) for b in range(256))


@lru_cache(maxsize=1)
def _batch_tables() -> tuple[bytes, bytes, bytes]:
    """The byte tables of `views_many` (built on first use, not at import): fold; splitter/letter/space;
    spacer/letter."""
    return (_byte_table(lambda c: _fold_plain(c) if c.isascii() else c),
            _byte_table(lambda c: "#" if c == "\x00" else "-" if re.fullmatch(f"[{_SPLITTERS}]", c) else
                        "a" if re.fullmatch("[a-z]", c) else " " if re.fullmatch(r"\s", c) else "o"),
            _byte_table(lambda c: "#" if c == "\x00" else "s" if re.fullmatch(f"[{_SPACERS}]", c) else
                        "a" if re.fullmatch("[a-z]", c) else "o"))


def plain_batchable(text: str) -> bool:
    """Plain ASCII (no control character) holding no HTML comment: its readings are the batch readings of
    `views_many` (no ANSI, CR, hidden character or comment to fold)."""
    return _plain_ascii(text) and "<!--" not in text


def views_many(texts: list[str]) -> list[tuple[str, ...]]:
    """`tuple(views(t))` for each text; plain texts (`plain_batchable`) are read in whole-batch passes
    (`views` is the oracle; the tests compare them)."""
    joined = "\n".join(texts)
    if _plain_ascii(joined) and "<!--" not in joined:
        plain = list(range(len(texts)))  # the common case: one check for the whole batch
    else:
        plain = [i for i, t in enumerate(texts) if plain_batchable(t)]
    out: list[tuple[str, ...] | None] = [None] * len(texts)
    if plain:
        fold, splitters, spacers = _batch_tables()
        base = BATCH_SEP.join([texts[i] for i in plain]).encode("ascii").translate(fold)
        folded = base.decode("ascii").split(BATCH_SEP)
        starts = list(accumulate([len(b) + len(BATCH_SEP) for b in folded], initial=0))
        shaped = {bisect_right(starts, at) - 1 for at in chain(
            (m.start() for m in _SPLIT_SHAPE.finditer(base.translate(splitters))),
            find_all(base.translate(spacers), b"sas"))}
        views = list(zip(folded))  # one reading each (split and spacing change nothing) but for `shaped`
        for k in shaped:
            b = folded[k]
            views[k] = tuple(dict.fromkeys((b, _SPLIT.sub("", b), _SPACED.sub(_despace, b))))
        if len(plain) == len(texts):
            return views
        for i, v in zip(plain, views):
            out[i] = v
    return [v if v is not None else _views(str(t)) for v, t in zip(out, texts)]


_SPLIT_SHAPE = re.compile(rb"- *a")  # on `_batch_tables`' splitter classes: a splitter, spaces, a letter

