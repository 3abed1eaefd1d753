"""Many regexes read as one automaton: per text, which of them may match it, so that a Python pattern runs only
where the automaton says it may. RE2's `Filter` (FilteredRE2): each pattern reduced to its atoms, literals one of
which (by an and/or tree) a text must hold for the pattern to match it; one pass of an automaton over every atom
names the patterns whose atoms the text holds, and RE2 then tries only those, and the patterns without atoms,
each with its own DFA. (A DFA over every whole pattern at once — RE2's `Set` — costs far more to build for the
text it has not met yet: each new state holds what every pattern still reads.)

    s = PatternSet([pattern, ...])
    s.groups_many(texts)   # per text: the indices of the patterns that may match some line of it

RE2 reads each Python pattern's own source (`prefilter`), with three widenings: anchors match at any line start
or end, lookarounds are dropped (a condition removed only widens) and a long counted window reads as an unbounded
one. On plain ASCII text (no control character but tab and newline) RE2 and Python's `re` agree on what is left
(classes, `\\b`, `\\s`, case folding), so the automaton reads only such texts: a text holding anything else keeps
every pattern, and so does a pattern RE2 cannot take (a backreference, a comment group, a verbose pattern, a
character whose ASCII case partners RE2 does not know). The answer is necessary, never sufficient: a caller still
tries the patterns it names.

Callers join what their patterns read (a text and its readings) with newlines into one text: a match in one
line is a match of the joined text (a line boundary is a non-word character, and anchors are per line).

RE2's automaton over the atoms gives up when its DFA outgrows its memory budget, and then reports no atom: a
canary line appended to every text, whose atom no text holds, tells that apart, and such a text keeps every
pattern. (A pattern's own DFA that outgrows its budget falls back to RE2's slower NFA: never a wrong answer.)

A text that is not plain (another script, accents, curly quotes, a control character) is read by a second
automaton as its ASCII projection (`project`): each character beyond plain ASCII stands for what Python's `re`
sees in it — an ASCII letter it matches under IGNORECASE (Kelvin sign: k), else a digit `0` (a decimal digit), a
letter `a` (any other word character), a space (a space), or `~` (anything else) — so a class, `\\b`, `\\w`, `\\s`,
`\\d` or `.` that holds the character holds its projection; the patterns' own characters beyond ASCII that are
not letters are projected the same way. A pattern that could tell a character from its projection (a negated
class or a negated literal naming a letter, a digit, a space or `~`; a letter beyond ASCII; a character below
space but tab and newline) is in every answer for such a text.
"""

from __future__ import annotations

import re
import string

import re2

__all__ = ["PatternSet", "prefilter"]

WINDOW = 8  # a counted repetition with a larger upper bound reads as unbounded (`[^.]{0,40}` as `[^.]{0,}`)
MAX_MEM = 8 << 20  # RE2's memory budget per pattern: its program and DFA
# The canary: a line appended to every text read, of control characters no such text holds (a plain text or a
# projection has none but tab and newline), so that its atom is found only when the atoms' automaton read it all.
_CANARY_LINE = "\n\x01\x02\x03"
_CANARY = r"\x01\x02\x03"
# Characters with ASCII case partners in Python's `re` that RE2 does not fold to them (a test checks every code
# point): a pattern holding one is in every answer.
FOLD_GAPS = frozenset("\u0130\u0131")
_PLAIN = bytes([9, 10, *range(32, 127)])  # what plain ASCII text is made of
_LOOKAROUNDS = ("(?=", "(?!", "(?<=", "(?<!")
_COUNT = re.compile(r"\{(\d*),(\d+)\}")
_ASCII_LETTER = re.compile("[A-Za-z]")


class Untranslatable(ValueError):
    """A pattern RE2 cannot read as `prefilter` writes it (the pattern then keeps every text)."""


def plain(text: str) -> bool:
    """ASCII without a control character but tab and newline: the text the automaton reads."""
    return text.isascii() and not text.encode("ascii").translate(None, _PLAIN)


def prefilter(pattern: re.Pattern) -> str:
    """RE2 syntax accepting (at least) every plain ASCII text `pattern` matches somewhere, line by line: its
    source with its flags, in multi-line mode (`\\A` and `\\Z` as `^` and `$`), lookarounds dropped, `{,n}` as
    `{0,n}` and a counted window above `WINDOW` unbounded. `Untranslatable` for a verbose pattern or one holding
    a `FOLD_GAPS` character."""
    src = pattern.pattern
    if pattern.flags & re.VERBOSE or FOLD_GAPS.intersection(src):
        raise Untranslatable(pattern.pattern[:40])
    flags = "m" + "i" * bool(pattern.flags & re.IGNORECASE) + "s" * bool(pattern.flags & re.DOTALL)
    out, i, in_class = [f"(?{flags})"], 0, False
    while i < len(src):
        c = src[i]
        if c == "\\":
            esc = src[i : i + 2]
            out.append({"\\A": "^", "\\Z": "$"}.get(esc, esc) if not in_class else esc)
            i += 2
        elif in_class:
            in_class = c != "]"
            out.append(c)
            i += 1
        elif c == "[":
            start = i + 1 + (src[i + 1 : i + 2] == "^")
            if src[start : start + 1] == "]":  # a leading `]` is a member
                out.append(src[i:start] + "\\]")
                i = start + 1
            else:
                out.append(src[i:start])
                i = start
            in_class = True
        elif src.startswith(_LOOKAROUNDS, i):
            i = _group_end(src, i)
        elif c == "{" and (m := _COUNT.match(src, i)):
            lo, hi = m.group(1) or "0", int(m.group(2))
            out.append(f"{{{lo},}}" if hi > WINDOW else f"{{{lo},{hi}}}")
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _group_end(src: str, i: int) -> int:
    """The index just past the group that opens at `src[i]` (escapes and classes skipped)."""
    depth, in_class = 0, False
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 1
        elif in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += src[i + 1 : i + 2] == "^"
            i += src[i + 1 : i + 2] == "]"
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Untranslatable(src[:40])


class _Projection(dict):
    """The `project` table: plain characters map to themselves; any other is worked out once (`__missing__`)."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        # Python's `re` folds case by the simple mappings: a character with no ASCII letter in its lower, upper or
        # folded form has no ASCII case partner (a test checks every code point)
        cased = _ASCII_LETTER.search(ch.lower() + ch.upper() + ch.casefold())
        partners = [a for a in string.ascii_lowercase if re.fullmatch(re.escape(ch), a, re.IGNORECASE)] if cased else []
        out = (
            partners[0]
            if partners
            else "0"
            if ch.isdecimal()
            else "a"
            if ch.isalnum() or ch == "_"
            else " "
            if ch.isspace() and ch != "\n"
            else "~"
        )
        self[code] = out
        return out


_PROJECTION = _Projection({b: chr(b) for b in _PLAIN})


def project(text: str) -> str:
    """`text` as plain ASCII, character by character (see the module's docstring): what the second automaton
    reads of a text that is not plain."""
    return text.translate(_PROJECTION)


_TELLS = re.compile(r"[a-z0-9 ~]")  # a negated set naming one of these could tell a character from its projection


def _projectable(pattern: re.Pattern) -> bool:
    """Whether `pattern` cannot tell a character from its `project`ion (see the module's docstring)."""
    src = pattern.pattern
    if any(not c.isascii() and (c.isalnum() or c == "_") for c in src) or not plain(
        "".join(c for c in src if c.isascii())
    ):
        return False
    try:
        tree = _sre_parse(src, pattern.flags)
    except Exception:  # pragma: no cover - Python compiled it
        return False
    return not _negates_a_projection(tree)


def _sre_parse(src: str, flags: int):
    try:
        from re import _parser as parser  # Python 3.11+
    except ImportError:  # pragma: no cover
        import sre_parse as parser
    return parser.parse(src, flags)


def _negates_a_projection(tree) -> bool:
    from re import _constants as c

    for op, av in tree:
        if op is c.NOT_LITERAL and _TELLS.fullmatch(chr(av).lower()):
            return True
        if op is c.IN and av and av[0][0] is c.NEGATE:
            for iop, iav in av[1:]:
                if iop is c.LITERAL and _TELLS.fullmatch(chr(iav).lower()):
                    return True
                if iop is c.RANGE and any(_TELLS.fullmatch(chr(x).lower()) for x in range(iav[0], iav[1] + 1)):
                    return True
        if isinstance(av, (list, tuple)):
            for sub in av:
                if hasattr(sub, "data") and _negates_a_projection(sub):
                    return True
                if isinstance(sub, (list, tuple)):
                    for s2 in sub:
                        if hasattr(s2, "data") and _negates_a_projection(s2):
                            return True
        elif hasattr(av, "data") and _negates_a_projection(av):
            return True
    return False


def _projected_source(pattern: re.Pattern) -> re.Pattern:
    """`pattern` with its characters beyond ASCII (none a letter: `_projectable`) as their projections."""
    src = pattern.pattern
    if src.isascii():
        return pattern
    return re.compile("".join(re.escape(project(c)) if not c.isascii() else c for c in src), pattern.flags)


class PatternSet:
    """Over `patterns` (compiled Python regexes): `groups_many(texts)[k]` holds the index of every pattern that
    may match some line of `texts[k]`; an index missing from it belongs to a pattern that matches no line of it."""

    def __init__(self, patterns):
        self.patterns = tuple(patterns)
        self.everything = frozenset(range(len(self.patterns)))
        self._plain = _Automaton(self.patterns, lambda pattern: pattern)
        self.always = self._plain.always  # patterns RE2 could not take: in every answer
        self._projected = None  # the second automaton (texts that are not plain), built on first use

    def groups_many(self, texts: list[str]) -> list[frozenset[int]]:
        """Per text: the indices of the patterns that may match some line of it (every index where RE2 gave
        up)."""
        return [self._groups(text) for text in texts]

    def _groups(self, text: str) -> frozenset[int]:
        if plain(text):
            return self._plain.candidates(text, self.everything)
        if self._projected is None:
            self._projected = _Automaton(self.patterns, _projected_source, _projectable)
        return self._projected.candidates(project(text), self.everything)


class _Automaton:
    """RE2's `Filter` over the `prefilter`s of `source(pattern)` for the patterns `keep` allows, and the canary;
    the indices of the others are in every answer (`always`)."""

    def __init__(self, patterns, source, keep=lambda pattern: True):
        options = re2.Options()
        options.max_mem = MAX_MEM
        options.log_errors = False
        automaton = re2.Filter()
        index, always = [], []
        for k, pattern in enumerate(patterns):
            try:
                if not keep(pattern):
                    raise Untranslatable(pattern.pattern[:40])
                automaton.Add(prefilter(source(pattern)), options)
                index.append(k)
            except (Untranslatable, re2.error, re.error):
                always.append(k)
        automaton.Add(_CANARY, options)
        try:
            automaton.Compile()
        except re2.error:  # the atoms over RE2's memory budget: every pattern in every answer
            automaton, index, always = None, [], range(len(patterns))
        self._filter, self._index, self._canary = automaton, tuple(index), len(index)
        self.always = frozenset(always)

    def candidates(self, text: str, everything: frozenset[int]) -> frozenset[int]:
        """The indices of the patterns that may match some line of `text` (plain ASCII), or `everything`."""
        if self._filter is None:
            return everything
        found = self._filter.Match(text + _CANARY_LINE, False)
        if found == [self._canary]:  # the common case
            return self.always
        if found is None or self._canary not in found:
            return everything  # the atoms' automaton gave up on this text (or the canary went missing)
        return self.always.union(self._index[m] for m in found if m != self._canary)
