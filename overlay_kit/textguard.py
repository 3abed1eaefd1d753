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
* `lookalikes(text)` — letters of a look-alike script (Cyrillic, Greek, ...) spoofing a Latin word or address
  (`billing@cоmpany.com`), for the scan; `visible_review(text)` shows them as `<U+043E>` too, for review.
* `language(text)` / `languages_many(texts)` — the language of prose the (English) scan cannot read, or None.
* `views(text)` / `views_many(texts)` — the folded readings of a text the injection scan looks at, so that
  obfuscation does not hide a payload: ANSI sequences dropped, CR read as a line break, HTML comments cut out
  (and their content read on its own), hidden characters dropped (tag characters decoded: "ASCII smuggling"),
  NFKC (fullwidth, mathematical and circled letters), confusable Cyrillic/Greek/small-capital letters mapped to
  Latin, accents stripped, casefolded; then with hyphen/dot-split words joined and spaced-out letters collapsed.
"""

from __future__ import annotations

import re
import string
import unicodedata
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate, chain

from .common import find_all
from .headings import block_parser  # the anchorer's block-level CommonMark parser (inline parsing off)
from .patternset import plain as _plain_ascii  # ASCII without a control character (tab and newline allowed)

__all__ = [
    "block_parser",
    "block_structure",
    "fold",
    "hidden_chars",
    "is_hidden",
    "language",
    "languages_many",
    "lookalikes",
    "markdown_line",
    "script",
    "views",
    "views_many",
    "visible",
    "visible_review",
]

# Bidi controls, zero-width characters, tag characters, variation selectors, interlinear annotation, BOM,
# Hangul/Braille fillers: all render as nothing (or reorder what follows) on a terminal or in a browser.
_INVISIBLE = frozenset(
    [0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x2800, 0x3164, 0xFEFF, 0xFFA0]
    + list(range(0x200B, 0x2010))
    + list(range(0x202A, 0x202F))
    + list(range(0x2060, 0x2070))
    + list(range(0xFE00, 0xFE10))
    + list(range(0xFFF9, 0xFFFC))
)


def is_hidden(ch: str) -> bool:
    """A character a reader cannot see or that changes how the rest of the line displays."""
    o = ord(ch)
    if ch in "\n\t":
        return False
    if o in _INVISIBLE or 0xE0000 <= o <= 0xE007F or 0xE0100 <= o <= 0xE01EF:
        return True
    return unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")


class _Unhide(dict):
    """A `str.translate` table, filled as characters are met: a tag character to the ASCII one it encodes, any
    other hidden character (`is_hidden`) to nothing, every other character unchanged (not stored: left as is)."""

    def __missing__(self, code: int):
        ch = chr(code)
        out = chr(code - 0xE0000) if 0xE0020 <= code <= 0xE007E else "" if is_hidden(ch) else ch
        if len(self) < 65536:
            self[code] = out
        return out


_UNHIDE = _Unhide()


def hidden_chars(text: str) -> list[tuple[int, str]]:
    if _plain_ascii(text) or text.translate(_UNHIDE) == text:  # no hidden character (the common case)
        return []
    return [(i, ch) for i, ch in enumerate(text) if is_hidden(ch)]


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """`text` with every hidden character shown as `<U+XXXX>` (newlines kept unless `keep_newlines=False`)."""
    text = str(text)
    if _plain_ascii(text) and (keep_newlines or "\n" not in text):
        return text  # nothing in it is hidden: skip the per-character pass (every CLI line goes through here)
    if not any(is_hidden(ch) or (not keep_newlines and ch == "\n") for ch in text):
        return text
    return "".join(f"<U+{ord(ch):04X}>" if is_hidden(ch) or (not keep_newlines and ch == "\n") else ch for ch in text)


_ORDERED = re.compile(r"(\d{1,9})([.)])")


def markdown_line(text: str) -> str:
    """One lesson as one structure-free CommonMark line (see the module docstring). Never empty."""
    flat = " ".join(visible(text).split())
    if not flat:
        return "(empty)"
    m = _ORDERED.match(flat)
    if m:  # `1. x` / `1) x` would open an ordered list
        return m.group(1) + "\\" + flat[m.end(1) :]
    if flat[0] in string.punctuation:  # `#`, `>`, `-`, `*`, `+`, `=`, `` ` ``, `~`, `<`, `[`, `|`, `_`, …
        return "\\" + flat
    return flat


_NAMES = {"heading_open": "a heading", "fence": "a code fence", "html_block": "an HTML block", "hr": "a thematic break"}


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
_CONFUSABLE = str.maketrans(
    {
        **dict(zip("аеорсухіјѕԁһԛԝӏɡνοαειкмтпгвнзьℓ", "aeopcyxijsdhqwlgvoaeikmtnrbh3bl")),
        **dict(zip("АВЕКМНОРСТХІЈЅԌΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "abekmhopctxijsgabezhikmnoptyx")),
        **dict(zip("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ", "abcdefghijklmnoprstuvwyz")),
        **dict(zip("ıȷ0＠", "ijo@")),
    }
)
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
    t = t.translate(_UNHIDE)  # tag characters decoded, hidden ones dropped
    t = unicodedata.normalize("NFKC", t).translate(_CONFUSABLE)
    t = unicodedata.normalize("NFKD", t).translate(_UNCOMBINE)
    return unicodedata.normalize("NFC", t).casefold().translate(_CONFUSABLE)


class _Uncombine(dict):
    """A `str.translate` table dropping combining marks (`unicodedata.combining`), filled as characters are met."""

    def __missing__(self, code: int):
        out = "" if unicodedata.combining(chr(code)) else chr(code)
        if len(self) < 65536:
            self[code] = out
        return out


_UNCOMBINE = _Uncombine()


def views(text: str) -> tuple[str, ...]:
    """The distinct readings the scan matches against: the folded text, its split words joined, its spaced
    letters collapsed, and the content of each HTML comment on its own. A batch of one (`views_many`)."""
    return views_many([text])[0]


def _despace(m: re.Match) -> str:
    return re.sub(r"[ .\-_*·]", "", m.group(0))


@lru_cache(maxsize=8192)  # several gate rules read the same fields of one lesson
def _views(text: str) -> tuple[str, ...]:
    """`views` of any text, one pass after another."""
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
    return (
        _byte_table(lambda c: _fold_plain(c) if c.isascii() else c),
        _byte_table(
            lambda c: (
                "#"
                if c == "\x00"
                else "-"
                if re.fullmatch(f"[{_SPLITTERS}]", c)
                else "a"
                if re.fullmatch("[a-z]", c)
                else " "
                if re.fullmatch(r"\s", c)
                else "o"
            )
        ),
        _byte_table(
            lambda c: (
                "#"
                if c == "\x00"
                else "s"
                if re.fullmatch(f"[{_SPACERS}]", c)
                else "a"
                if re.fullmatch("[a-z]", c)
                else "o"
            )
        ),
    )


def plain_batchable(text: str) -> bool:
    """Plain ASCII (no control character) holding no HTML comment: its readings are the batch readings of
    `views_many` (no ANSI, CR, hidden character or comment to fold)."""
    return _plain_ascii(text) and "<!--" not in text


def views_many(texts: list[str]) -> list[tuple[str, ...]]:
    """`views` of each text: plain texts (`plain_batchable`) read in whole-batch passes, any other by `_views`
    (the oracle of the batch passes; the tests compare them)."""
    texts = [t if type(t) is str else str(t) for t in texts]
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
        shaped = {
            bisect_right(starts, at) - 1
            for at in chain(
                (m.start() for m in _SPLIT_SHAPE.finditer(base.translate(splitters))),
                find_all(base.translate(spacers), b"sas"),
            )
        }
        views = list(zip(folded))  # one reading each (split and spacing change nothing) but for `shaped`
        for k in shaped:
            b = folded[k]
            views[k] = tuple(dict.fromkeys((b, _SPLIT.sub("", b), _SPACED.sub(_despace, b))))
        if len(plain) == len(texts):
            return views
        for i, v in zip(plain, views):
            out[i] = v
    return [v if v is not None else _views(t) for v, t in zip(out, texts)]


_SPLIT_SHAPE = re.compile(rb"- *a")  # on `_batch_tables`' splitter classes: a splitter, spaces, a letter


# ----------------------------------------------------------------------------- scripts and look-alikes
# A letter's script, from its Unicode name: what tells a Cyrillic "о" inside "cоmpany.com" from the Latin one, and
# prose the English scan cannot read (Cyrillic, Han, Arabic, ...) from prose it can.

_NAME_PREFIXES = ("FULLWIDTH", "HALFWIDTH")
# Scripts with letters that look like Latin ones: one of them inside a Latin word is a spoof, not a language.
LOOKALIKE_SCRIPTS = frozenset({"CYRILLIC", "GREEK", "ARMENIAN", "COPTIC", "CHEROKEE"})


@lru_cache(maxsize=8192)
def script(ch: str) -> str:
    """The script of a letter: "LATIN" for ASCII, the Latin blocks and any letter NFKC folds to an ASCII one
    (fullwidth, mathematical); else the first word of its Unicode name ("CYRILLIC", "GREEK", "CJK", "HANGUL",
    ...); "" for a character that is not a letter."""
    if not ch.isalpha():
        return ""
    if ch < "\u0250":
        return "LATIN"
    name = unicodedata.name(ch, "")
    if "LATIN" in name:
        return "LATIN"
    folded = unicodedata.normalize("NFKC", ch)
    if folded.isascii() and folded.isalpha():
        return "LATIN"
    words = [w for w in name.split() if w not in _NAME_PREFIXES]
    return words[0] if words else "OTHER"


_LOOKALIKE_LETTERS = frozenset(chr(k) for k in _CONFUSABLE if not chr(k).isascii())
_WORDISH = re.compile(r"\w+(?:[.'’-]\w+)*")  # a word or a dotted name (a domain, a file name): where a spoof hides


def lookalikes(text: str) -> list[tuple[int, str, str]]:
    """(index, letter, token) of each letter of a look-alike script (`LOOKALIKE_SCRIPTS`) that spoofs a Latin
    word: inside a token that also holds Latin letters (`billing@cоmpany.com`), or making up, with other
    look-alike letters alone (`_CONFUSABLE`), a whole token of a text whose letters are mostly Latin (`αrε`).
    Tokens are words and dotted names; [] for ASCII text. In a text whose letters are mostly of another script, a
    hyphenated compound whose every part is of one script (`CSV-файла`, `API-ключи`) is no spoof."""
    text = str(text)
    if text.isascii() or not any(script(c) in LOOKALIKE_SCRIPTS for c in set(text) if not c.isascii()):
        return []
    tokens = []
    latin = other = 0
    for m in _WORDISH.finditer(text):
        token = m.group(0)
        if token.isascii():
            latin += sum(map(str.isalpha, token))
            continue
        classes = token.translate(_SCRIPT_CLASS)  # per character: Latin, look-alike script, other script, none
        n_latin = classes.count("l")
        n_other = len(classes) - n_latin - classes.count("-")
        latin, other = latin + n_latin, other + n_other
        if n_other:
            tokens.append((token, m.start(), classes, n_latin))
    out = []
    for token, start, classes, n_latin in tokens:
        if not n_latin and latin <= other:
            continue  # a word of another script in text mostly of other scripts: no spoof
        if (
            n_latin
            and other > latin
            and "-" in token
            and all(  # a compound of one script a part
                "l" not in part or not set(part) - {"l", "-"}
                for part in (piece.translate(_SCRIPT_CLASS) for piece in token.split("-"))
            )
        ):
            continue
        foreign = [(i, ch) for i, (ch, c) in enumerate(zip(token, classes), start) if c in "ko"]
        if n_latin:
            out += [(i, ch, token) for i, ch in foreign if classes[i - start] == "k"]
        elif latin > other and all(ch in _LOOKALIKE_LETTERS for _, ch in foreign):
            out += [(i, ch, token) for i, ch in foreign]
    return out


class _ScriptClass(dict):
    """A `str.translate` table, filled as characters are met: "l" for a Latin letter, "k" for a letter of a
    look-alike script (`LOOKALIKE_SCRIPTS`), "o" for a letter of another script, "-" for anything else."""

    def __missing__(self, code: int) -> str:
        s = script(chr(code))
        out = "-" if not s else "l" if s == "LATIN" else "k" if s in LOOKALIKE_SCRIPTS else "o"
        if len(self) < 65536:
            self[code] = out
        return out


_SCRIPT_CLASS = _ScriptClass()


def visible_review(text: str, *, keep_newlines: bool = True) -> str:
    """`visible`, with every look-alike letter (`lookalikes`) shown as `<U+XXXX>` too: what a reviewer reads
    of a learned text, so that `billing@c<U+043E>mpany.com` is not read as a known address."""
    text = str(text)
    marks = {i for i, _, _ in lookalikes(text)}
    if not marks:
        return visible(text, keep_newlines=keep_newlines)
    return "".join(
        f"<U+{ord(ch):04X}>" if i in marks else visible(ch, keep_newlines=keep_newlines) for i, ch in enumerate(text)
    )


# ------------------------------------------------------------------------------------------ language
# The injection scan reads English. `language(text)` names the language of prose it cannot read: words of a
# non-Latin script (other than look-alike letters spoofing a Latin word, which `lookalikes` reports), or a Latin
# clause that is not English. Markup, code, URLs, addresses, paths and identifiers are cut first; names
# (capitalised words inside a clause), acronyms and camelCase words are not read. A text whose every word is in
# the English lexicon below is English at once (`_not_lexicon`). Otherwise each clause of three words or more
# (two, when it is the whole text; the whole text too, when some clause is shorter) is English when its words
# give it away: English function words at least one in five (and more than foreign ones), or every word in the
# lexicon and no foreign function word. Any other clause goes to the language-ID model (py3langid, its model
# shipped in the wheel): each word scored on its own (cached; `_LangModel`), the clause's words summed. It is
# foreign when the model's best language is not English and either that language is near certain (`LANG_SURE`),
# or English is unlikely (below `LANG_MAX_EN`) and the other language likely (`LANG_MIN_P`) or named by a foreign
# function word, or the clause holds two foreign function words and English is below `LANG_MAX_EN_2`. Short
# English clauses of jargon and names come out of the model spread over many languages: a clause is flagged on
# evidence that it is another language, not for want of evidence that it is English.

LANG_SURE, LANG_MAX_EN, LANG_MIN_P, LANG_MAX_EN_2 = 0.9, 0.03, 0.4, 0.1

# English function words: their share is the cheap evidence that a clause is English.
_EN_FUNCTION = frozenset(
    """
the and of to for with from that this these those you your yours yourself yourselves when where what which who
whom whose why how not never always be been being are is were it its itself they them their theirs themselves we
our ours ourselves us my mine myself he she his her him hers herself himself or if then than by into onto about
after before until unless only just any all every each some can could should would shall must may might does did
doing don't doesn't didn't isn't aren't wasn't weren't won't can't couldn't shouldn't wouldn't hasn't haven't
hadn't has have had having please there here but up out over more most less least same other others such too very
because though although while whenever whether instead within without via against between through during above
below again once both either neither nor yet still even ever already anything everything something nothing anyone
everyone someone nobody none it's i'm i'll i've i'd you're you'll you've you'd we're we'll we've we'd they're
they'll they've they'd that's there's here's what's who's let's these those whatever whichever whoever
""".split()
)
# Words that are common in English and in another language too (in, an, so, was, die, ...): English, but no
# evidence of it.
_EN_SHARED = frozenset(
    """
a an as at do go i in is me no on so also will was man per plus till dig van op am us
""".split()
)
# Common English words (instructions, mail, calendars, documents, code review, operations, money): a clause made
# of these alone (with no foreign function word) is English without the model.
_EN_COMMON = frozenset(
    """
able accept accepted access account accounts act action actions active add added adding address addresses admin
advance after afternoon agenda ago agree ahead alert alerts allow allowed almost alone along already alternative
amount amounts analysis annual another answer answers api app apply approval approvals approve approved april
archive archived area ask asked asking assign assigned assistant attach attached attachment attachments attend
audit august author authors auto available avoid away back backup bad balance bank base based basic batch before
begin below best better big bill billing bills block blog board body bold book booked booking boss both bottom
box branch brief briefly bring broken budget bug bugs build builds bullet bullets business busy button buy cache
calendar call calls cancel cancelled capital card care careful carefully case cases catch category cc bcc change
changed changes changelog channel channels chart chat check checked checks choose city claim class clean clear
clearly click client clients close closed code comment comments commit commits common company complete
completed compliance concise conference confirm confirmation conflict conflicts contact contacts content context
contract contracts control copy correct cost costs could count country cover create created credit csv current
currency customer customers daily dashboard data database date dates day days deadline deadlines deal dear debug
december decide decision default delay delete deleted deliver delivery dependency deploy deployment describe
design detail details dev developer diff different direct directly discuss discussion doc docs document documents
dollar dollars done double down draft drafts drive due duplicate during each early easy edit editor effort else
email emails empty end ends engineer english enough ensure entry error errors escalate escalation estimate euro
euros event events every evening exact exactly example examples except expense expenses explain export external
extra fact fail failed failing failure fast feature features february fee feedback field fields file files filter
final finance find finish first fix fixed flag flagged flight flights focus folder folders follow following font
footer form format formal forward found free friday friendly full function future general get gets give given
glad good grant green group groups guide half handle happen hard head header heading help high highlight history
hold holiday holidays home hotel hour hours html human idea image images immediately important include included
including income index info information inline input inside instead internal invite invites invoice invoices issue
issues item items january job join journal json july june keep key keys kind know label labels language large
last late later latest lead leave left legal length less letter letters level library like limit limits line
lines link links list lists little local log logs long look loop low lower mail mailbox main major make manager
many march mark markdown marked may meeting meetings member members mention merge message messages method middle
minor minute minutes miss missing mobile mode monday money month monthly months morning move much multiple name
names need needed needs never new news newsletter next night none normal note notes notice notify november now
number numbers object october off office official often old one ones open option optional options order orders
original outage outside owner page pages paper papers paragraph part partner party pass password passwords past
patch path pay payment payments payroll pdf pending people per percent period person personal phone pick place
plan plans plain point policy post posts prefer preference preferences prepare present press previous price
prices primary print priority private problem process product production project projects proposal provide
public pull purchase purpose push put quarter quarterly question questions quick quickly quote rate rather read
reader reading ready real reason receipt receipts recent record records red reference references refund refunds
regular release releases remind reminder reminders remove rename repeat replies reply report reports repository
request requests require required research reserve response rest result results return review reviewed reviews
right risk room root rule rules run running safe sales same saturday save saved schedule scheduled scope score
search second section sections secure security see select send sender sending sent september server service
services session set setting settings setup share shared sheet short should show side sign signature simple
since single site size skip slack slide slides small soon sort source space special spend spreadsheet staff stage
staging standard start state status step steps stop store story subject submit summary sunday supplier support
sure system table tag tags take task tasks tax team teams template test tests text thanks thank thread threads
thursday ticket tickets time times title today together tomorrow tone too tool tools top topic total track
travel treat trip true try tuesday turn type under unit units unread update updated updates upload urgent usd use
used user users using usual usually value values vendor vendors version via view visit wait want warning warn
watch way web website wednesday week weekly weeks well whole wide window word words work working world write
writing written wrong year years yes yesterday zone
also again always answer ask asks avoid being bring call calls came come comes coming did does doing done feel
felt gave get gets getting give gives giving go goes going gone got had has have help helps hold keep keeps kept
know knows let lets like look looks made make makes making mean means meant need needs put puts said say says
saw see seen sees seem seems send sends set sets show shows take takes taking tell tells think thinks thought
told took try tries use uses want wants went work works
lesson learn learned note verify validate ensure cluster node server latency uptime downtime incident outage
rollback failover replica migration schema query queries pipeline hotfix config configuration environment
monitor monitoring alerting backup restore firewall login logout spam phishing malware virus ransomware vpn
network traffic load disk memory cpu container image cloud bucket queue worker job cron script shell terminal
""".split()
)


def _inflected(words: frozenset[str]) -> frozenset[str]:
    """The words with their regular inflections (-s, -es, -ies, -ed, -ied, -d, -ing, -er, -ly): a form that is
    no word does no harm here."""
    out = set(words)
    for w in words:
        if w.isalpha() and len(w) > 2:
            stem = w[:-1] if w.endswith("e") else w
            out.update((w + "s", w + "es", w + "d", w + "ed", stem + "ing", w + "er", w + "ly"))
            if w.endswith("y"):
                out.update((w[:-1] + "ies", w[:-1] + "ied"))
    return frozenset(out)


_EN_LEXICON = _EN_FUNCTION | _EN_SHARED | _inflected(_EN_COMMON)
_EN_LEXICON_BYTES = frozenset(w.encode("ascii") for w in _EN_LEXICON if w.isascii())
# Function words of other languages written in Latin letters (none of them an English word).
_FOREIGN_FUNCTION = (
    frozenset(
        """
und der die das nicht ist ein eine einen einem einer eines mit auf für sie ich wir ihr du dich dir mir mich den
dem des zu zum zur von vom bei nach aus alle allen alles jede jeden jedes jeder keine kein keinen oder aber wenn
auch noch schon nur sich sind bitte werden wird wurde ohne über dass diese dieser dieses immer sofort jetzt hier
nichts etwas unsere unser deine dein ihre ihren seine mein meine
le la les des du une et est pas pour avec dans sur qui que ne vous nous tu te toi moi mes tes votre vos ce cette
ces au aux tous toutes tout sans ou mais sont être avoir ai il elle ils elles leur leurs très rien jamais
toujours aussi ici chaque même déjà
el los las del y en por para con una uno unos unas es su sus mi al lo se todo todos todas sin pero como más muy
este esta estos estas ese esa eso sí también nunca siempre ahora ya nos
gli di da della dello dei degli delle che non sono tutti tutte tutto questo questa questi queste mio mia tuo
tua suo sua senza anche sempre mai ogni è nel nella nei alla alle ed
os um uma não com em na nas seu seus suas você vocês ele ela eles elas sem mas mais muito isso isto agora
também ao aos pelo pela
het een van niet voor met te dat zijn ze je jij ik wij naar om bij uit aan als maar ook nog geen zonder mijn
jouw deze dit wordt worden altijd nooit de
w z nie się jest że od po za przez dla jak ale lub oraz wszystkie wszystko wszystkich bez tylko zawsze nigdy
proszę mnie czy
v ve že pro jsou nebo všechny vždy nikdy prosím
och att det som är inte för med av på ett jag ni inga ingen utan uden og ikke til af eller också også alltid
aldrig aldri altid skal ska
ve bir bu için ile değil olarak tüm bütün gibi sonra önce hiç ama veya şu
dan yang ke dari untuk dengan tidak ini itu semua saya anda kamu akan ada jangan harus sudah
și nu pe cu în sunt care pentru din toate fără
az és hogy nem egy meg van minden nélkül csak mindig soha
ja ei että kaikki mutta tai kanssa ilman aina älä
ang ng mga ay hindi lahat
ni wa kwa katika yote bila kila
""".split()
    )
    - _EN_LEXICON
)

# What is not prose: fenced and inline code, HTML tags and comment marks (read first, on their own), then every
# token (between whitespace) that holds a character prose does not: a URL, an address, a path, a handle, an
# amount, a date, an identifier (a digit, an underscore), JSON. NUL (the batch separator, `BATCH_SEP`) is no
# token's and ends a code fence. (camelCase words are left to `_clause`.)
_NOT_PROSE_MARKUP = re.compile(r"```[^\x00]*?(?:```|(?=\x00)|\Z)|`[^`\n]*`|<!--|-->|</?[A-Za-z][^<>\n]{0,200}>")
_NOT_PROSE_TOKEN = re.compile(
    r"(?<![^\s\x00])(?>[^\s\x00@/\\\d_#$%&*+=^{|}~\[\]<>`]*)[@/\\\d_#$%&*+=^{|}~\[\]<>`]"
    r"[^\s\x00]*"
)
_UNIT_END = re.compile(r"[.!?;:\n\u3002\uff01\uff1f\uff1b\uff1a\u061f\u0964|•]+")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_ASCII_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")  # `_WORD` on ASCII text
_NO_SPACES = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN", "YI"})


def language(text: str) -> str | None:
    """The code of a language (`de`, `ru`, `zh`, ...) some prose of `text` is in that is not English, or None:
    see the section comment. `languages_many` is the same for a batch."""
    return languages_many([text])[0]


def _prose(text: str, plain: bool = False) -> str:
    """The text as prose: hidden characters dropped (tag characters decoded), NFKC, ANSI and markup cut, the
    dots of common abbreviations dropped (they end no clause). `plain`: known to be plain ASCII."""
    if not (plain or _plain_ascii(text)):
        text = _ANSI.sub(" ", text).translate(_UNHIDE)
        text = unicodedata.normalize("NFKC", text)
    return _ABBREVIATION.sub("", _NOT_PROSE_TOKEN.sub(" ", _NOT_PROSE_MARKUP.sub(" ", text.replace("\r", "\n"))))


# the dot after a common abbreviation (found from the dot: a literal, quick to search for)
_ABBREVIATION = re.compile(
    r"\.(?:(?<=\b(?:Mr|Ms|Dr|St|Jr|Sr|Co|vs|cf|al|No|MR|MS|DR|ST|VS|NO)\.)"
    r"|(?<=\b(?:Mrs|Inc|Ltd|etc|MRS|ETC|e\.g|i\.e|E\.G|I\.E)\.)|(?<=\b(?:Prof|Corp|dept)\.)"
    r"|(?<=\bapprox\.))"
)


def _units(prose: str) -> tuple[list[list[str]], list[str]]:
    """The prose's clauses as their Latin words (names and acronyms kept, marked by case), and its words in a
    non-Latin script (look-alike spoofs left out: `lookalikes` reports them)."""
    if prose.isascii():  # the common case: Latin words only
        return [words for words in map(_ASCII_WORD.findall, _UNIT_END.split(prose)) if words], []
    clauses, foreign = [], []
    latin_letters = other_letters = 0
    pending = []
    for piece in _UNIT_END.split(prose):
        words = []
        for w in _WORD.findall(piece):
            if w.isascii():
                words.append(w)
                latin_letters += len(w)
                continue
            scripts = [script(c) for c in w]
            n_latin = scripts.count("LATIN")
            n_other = len(scripts) - n_latin - scripts.count("")
            latin_letters, other_letters = latin_letters + n_latin, other_letters + n_other
            if not n_other:
                words.append(w)
            elif n_latin and all(s in LOOKALIKE_SCRIPTS for s in scripts if s and s != "LATIN"):
                continue  # a spoofed Latin word
            else:
                pending.append(w)
        if words:
            clauses.append(words)
    for w in pending:  # whole words of look-alike letters in mostly Latin text are spoofs too
        if latin_letters > other_letters and all(c in _LOOKALIKE_LETTERS for c in w if script(c) != "LATIN"):
            continue
        if len(w) >= 2 or any(script(c) in _NO_SPACES for c in w):
            foreign.append(w)
    return clauses, foreign


def _clause(words: list[str], alone: bool) -> tuple[list[str] | None, int]:
    """A clause's words to score (None: English, or too short to tell) and its count of foreign function words.
    A clause of two words is read only when it is the whole text (`alone`)."""
    if len(words) < (2 if alone else 3):
        return None, 0
    # names and acronyms (capitalised inside a clause, or all capitals) are not the clause's language, unless
    # every word is capitalised (a title, or text in capitals); nor are camelCase identifiers
    if all(w[:1].isupper() for w in words):
        read = [w.lower() for w in words if w[1:].islower() or w.isupper() or len(w) < 2]
    else:
        read = [
            w.lower()
            for k, w in enumerate(words)
            if (k == 0 or not w[:1].isupper()) and (w[1:].islower() or len(w) < 2 or k == 0 and w.isupper())
        ]
    if len(read) < 2:
        return None, 0
    e = sum(map(_EN_FUNCTION.__contains__, read))
    f = sum(map(_FOREIGN_FUNCTION.__contains__, read))
    if e > f and e * 5 >= len(read):
        return None, f
    if not f and all(map(_EN_LEXICON.__contains__, read)):
        return None, f
    return read, f


def languages_many(texts: list[str]) -> list[str | None]:
    """`language(t)` for each text: the first of its `prose_languages_many`."""
    return [codes[0] if codes else None for codes in prose_languages_many(texts)]


# A clause whose most likely language is not one the caller reads, but where one it reads is at least this share
# as likely, is read as that one (Portuguese read as Galician, Spanish as Catalan, Russian as Ukrainian: near
# neighbours the model confuses on a short clause).
PREFER_SHARE = 0.5


def prose_languages_many(texts: list[str], prefer: frozenset[str] = frozenset()) -> list[tuple[str, ...]]:
    """Per text: the codes of every language not English its prose is in (clause by clause, the first first; empty
    for English), every clause that needs the model, of every text, scored in one pass. `prefer`: languages the
    caller reads; a clause whose best language is another but one of these is `PREFER_SHARE` as likely is read
    as that one."""
    texts = [t if type(t) is str else str(t) for t in texts]
    out: list[list[str]] = [[] for _ in texts]
    asks: list[tuple[int, list[str], int]] = []  # (text, words to score, foreign function words: -1 for script)
    todo = _not_lexicon(texts)
    plain = [k for k in todo if _plain_ascii(texts[k])]  # their prose in whole-batch passes, the others text by text
    proses = dict(zip(plain, _prose(BATCH_SEP.join([texts[k] for k in plain]), plain=True).split("\x00")))
    if len(proses) != len(plain):  # a pass ate a separator (none should): text by text
        proses = {}
    proses = [proses[k] if k in proses else _prose(texts[k]) for k in todo]
    for k, prose in zip(todo, proses):
        clauses, foreign = _units(prose)
        if foreign:
            asks.append((k, foreign, -1))
            if not prefer:
                continue
        units = [(c, len(clauses) == 1) for c in clauses]
        if len(clauses) > 1 and any(len(c) < 3 for c in clauses):  # clauses too short to read alone: read together
            units.append(([w for c in clauses for w in c], True))
        for words, alone in units:
            scored, f = _clause(words, alone)
            if scored is not None:
                asks.append((k, scored, f))
    if not asks:
        return [()] * len(texts)
    found = _lang_model().best([words for _, words, _ in asks], prefer)
    for (k, words, f), (code, p, p_en, near, p_near) in zip(asks, found):
        if out[k] and not prefer:
            continue
        if f < 0:  # words of a non-Latin script: a language the scan does not read, whatever the model says
            code = code if code not in ("en", "zxx", "und") else _script_name(words)
        elif not (
            code not in ("en", "zxx")
            and (p >= LANG_SURE or (p_en < LANG_MAX_EN and (p >= LANG_MIN_P or f)) or (f >= 2 and p_en < LANG_MAX_EN_2))
        ):
            continue
        if prefer and code not in prefer and near and p_near >= PREFER_SHARE * p:
            code = near
        if code not in out[k]:
            out[k].append(code)
    return [tuple(codes) for codes in out]


def _not_lexicon(texts: list[str]) -> list[int]:
    """The texts that are not ASCII made of words of the English lexicon alone (their words, apostrophes
    included, split at any other character: a superset of the prose's words, so such a text has no clause that
    could be foreign): the ones `languages_many` reads. One pass over the joined batch where it is ASCII."""
    joined = " \x00 ".join(texts)
    if not joined.isascii() or joined.count("\x00") != len(texts) - 1:
        return [k for k, t in enumerate(texts) if not (t.isascii() and _lexical(t.lower().encode("ascii")))]
    tokens = joined.lower().encode("ascii").translate(_LETTERS_APOSTROPHES).split()
    unknown = {w for w in set(tokens).difference(_EN_LEXICON_BYTES) if w.strip(b"'") not in _EN_LEXICON_BYTES}
    unknown.discard(b"\x00")
    if not unknown:
        return []
    todo, k, seen = [], 0, False
    for tok in tokens:
        if tok == b"\x00":
            if seen:
                todo.append(k)
            k, seen = k + 1, False
        elif not seen and tok in unknown:
            seen = True
    if seen:
        todo.append(k)
    return todo


def _lexical(lower: bytes) -> bool:
    """Every word of a lowercased ASCII text in the English lexicon (`_not_lexicon`'s test, text by text)."""
    return all(
        w in _EN_LEXICON_BYTES or w.strip(b"'") in _EN_LEXICON_BYTES
        for w in lower.translate(_LETTERS_APOSTROPHES).split()
    )


_LETTERS_APOSTROPHES = bytes(b if 97 <= b <= 122 or b in (0, 39) else 32 for b in range(256))


def _script_name(words: list[str]) -> str:
    scripts = [script(c) for w in words for c in w if script(c) not in ("", "LATIN")]
    return max(set(scripts), key=scripts.count).lower() if scripts else "und"


class _LangModel:
    """py3langid's model (naive Bayes over byte n-grams, read by its DFA), scoring clauses as the sum of their
    words' scores: each word's feature scores are computed once (with a space either side) and cached, so a batch
    costs a lookup per word it has seen before. Loaded on first use; without py3langid every clause asked about is
    `und` (never English)."""

    def __init__(self):
        try:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier, visit_counts
        except ImportError:  # pragma: no cover - a broken install: fail closed
            self.ident = None
            return
        import numpy as np

        self.np, self.visit = np, visit_counts
        self.ident = ident = LanguageIdentifier.from_model_file(MODEL_FILE)
        self.rowbase = [r << 8 for r in ident.tk_row]
        self.ptc = ident.nb_ptc
        self.pc = np.asarray(ident.nb_pc, dtype=np.float64)
        labels = ["en" if c == "pcm" else c for c in ident.nb_classes]  # Nigerian Pidgin reads as English
        self.labels = list(dict.fromkeys(labels))  # a label's columns (script variants) are summed, in order
        self.order = np.array([j for c in self.labels for j, d in enumerate(labels) if d == c], dtype=np.intp)
        self.groups = np.cumsum([0] + [labels.count(c) for c in self.labels[:-1]])
        self.index: dict[str, int] = {}
        self.vectors = np.zeros((1024, len(labels)), dtype=np.float32)  # per word seen, by `index`

    def _learn(self, words: list[str]) -> None:
        np = self.np
        new = [w for w in dict.fromkeys(words) if w not in self.index]
        if not new:
            return
        if len(self.index) + len(new) > _WORD_CACHE:
            self.index.clear()
            new = list(dict.fromkeys(words))
        need = len(self.index) + len(new)
        if need > len(self.vectors):
            grown = np.zeros((max(need, 2 * len(self.vectors)), self.vectors.shape[1]), dtype=np.float32)
            grown[: len(self.vectors)] = self.vectors
            self.vectors = grown
        feats: list[int] = []
        weights: list[int] = []
        starts = []
        for w in new:
            counts = self.visit(
                self.ident.tk_nextmove,
                self.rowbase,
                self.ident.tk_output,
                b" " + w.encode("utf-8", "surrogatepass") + b" ",
            )
            starts.append(len(feats))
            if counts:
                feats.extend(counts.keys())
                weights.extend(counts.values())
        base = len(self.index)
        rows = np.arange(base, base + len(new))
        self.vectors[rows] = 0.0
        has = np.array([s < e for s, e in zip(starts, starts[1:] + [len(feats)])], dtype=bool)
        if feats:
            table = self.ptc[np.asarray(feats)].astype(np.float64) * np.log1p(np.asarray(weights, np.float64))[:, None]
            self.vectors[rows[has]] = np.add.reduceat(table, np.asarray(starts)[has], axis=0)
        self.index.update(zip(new, range(base, base + len(new))))

    def best(
        self, clauses: list[list[str]], prefer: frozenset[str] = frozenset()
    ) -> list[tuple[str, float, float, str | None, float]]:
        """Per clause (its words): the most likely language, its probability and English's (the model's scores
        over the square root of the clause's length in bytes, as py3langid normalises them), and the most likely
        of `prefer` with its probability (None, 0 without `prefer`)."""
        if self.ident is None:
            return [("und", 1.0, 0.0, None, 0.0)] * len(clauses)
        np = self.np
        flat = [w for c in clauses for w in c]
        self._learn(flat)
        ids = np.fromiter((self.index[w] for w in flat), dtype=np.intp, count=len(flat))
        starts = np.cumsum([0] + [len(c) for c in clauses[:-1]])
        scores = np.add.reduceat(self.vectors[ids], starts, axis=0, dtype=np.float64) + self.pc
        size = np.array(
            [sum(len(w.encode("utf-8", "surrogatepass")) + 1 for w in c) + 1 for c in clauses], dtype=np.float64
        )
        scores /= np.sqrt(size)[:, None]
        scores = np.exp(scores - scores.max(axis=1, keepdims=True))
        probs = np.add.reduceat((scores / scores.sum(axis=1, keepdims=True))[:, self.order], self.groups, axis=1)
        top = probs.argmax(axis=1)
        en = self.labels.index("en")
        cols = [j for j, c in enumerate(self.labels) if c in prefer]
        if not cols:
            return [(self.labels[t], float(probs[k, t]), float(probs[k, en]), None, 0.0) for k, t in enumerate(top)]
        near = np.asarray(cols)[probs[:, cols].argmax(axis=1)]
        return [
            (self.labels[t], float(probs[k, t]), float(probs[k, en]), self.labels[n], float(probs[k, n]))
            for k, (t, n) in enumerate(zip(top, near))
        ]


_WORD_CACHE = 20_000  # words whose scores `_LangModel` keeps (a row of 142 floats each)


@lru_cache(maxsize=1)
def _lang_model() -> _LangModel:
    return _LangModel()
