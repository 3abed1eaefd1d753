"""Many regexes read as one automaton: per text, which of them may match it, found in one linear pass (RE2's
`Set`: a DFA over every pattern at once), so that a Python pattern runs only where that pass says it may.

    s = PatternSet([pattern, ...])
    s.groups_many(texts)   # per text: the indices of the patterns that may match some line of it
    s.groups_of(lines, ends)   # the same, of texts given as their lines

Each Python pattern is translated from its own parse tree (`re._parser`) into RE2 syntax that accepts at least
what it accepts: every single-character node (a literal, a class, `.`, `\\s`, with its flags) becomes the exact set
of ASCII characters Python's own engine matches with it — asked of Python, character by character — so case
folding and Python's idea of `\\s` or `\\w` carry over unchanged; anchors match at any line start or end;
lookarounds are dropped, a backreference reads as any text and a long counted window as an unbounded one (each
only widens what matches). A character beyond ASCII is read as one of two stand-ins, one for those Python's `\\w`
matches and one for the rest (so `\\b` decides as Python does), and every node that may match such a character
accepts its stand-in. A pattern RE2 cannot take is in every answer. The answer is necessary, never sufficient,
and close to exact: a caller still tries the patterns it names.

Callers join what their patterns read (a text and its readings) with newlines into one text: a match in one
line is a match of the joined text (a line boundary is a non-word character, and anchors are per line).

RE2 gives up when its DFA outgrows its memory budget, and its `Set` then reports "no match": a canary pattern
that matches every text tells that apart, and such a text keeps every pattern.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import re2

try:  # Python >= 3.11
    from re import _constants as _c, _parser as _p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

__all__ = ["PatternSet", "stand_ins", "superset"]

_ASCII = [chr(b) for b in range(128)]
_ANY_LINE = "(?m:^)"
_LINE_END = "(?m:$)"
_AT = {_c.AT_BEGINNING: _ANY_LINE, _c.AT_BEGINNING_LINE: _ANY_LINE, _c.AT_BEGINNING_STRING: _ANY_LINE,
       _c.AT_END: _LINE_END, _c.AT_END_LINE: _LINE_END, _c.AT_END_STRING: _LINE_END,
       _c.AT_BOUNDARY: r"\b", _c.AT_NON_BOUNDARY: r"\B"}
_CATEGORY = {_c.CATEGORY_DIGIT: r"\d", _c.CATEGORY_NOT_DIGIT: r"\D", _c.CATEGORY_SPACE: r"\s",
             _c.CATEGORY_NOT_SPACE: r"\S", _c.CATEGORY_WORD: r"\w", _c.CATEGORY_NOT_WORD: r"\W"}
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_RE2_MAX_REPEAT = 1000  # RE2's largest counted repetition
# A counted repetition with a larger upper bound reads as unbounded (`[^.]{0,40}` as `[^.]*`, a wider pattern):
# counted, it puts a counter per pattern into the DFA's states, and on new text the DFA then spends most of its
# time building states (about 10x slower on fresh lessons; a few more texts go to the Python pattern instead).
WINDOW = 8
_CHAR_FLAGS = int(re.IGNORECASE | re.DOTALL | re.ASCII | re.UNICODE)  # what a one-character node's meaning depends on
MAX_MEM = 32 << 20  # RE2's memory budget for the set: its program (~3 MB for the scan's patterns) and DFA
_CANARY = r"\z"  # matches every text, at its end: reported only when the DFA read the whole text
WORD_STAND_IN, OTHER_STAND_IN = "_", "\x7f"  # an RE2 word and non-word character, for those beyond ASCII
_WORD = re.compile(r"\w")
CHUNK = 32  # texts per `Set.Match` call of `groups_many` where none may match (one call's fixed cost, shared)


class _StandIns(dict):
    """`str.translate` table: ASCII stays, any other character becomes the stand-in of its kind."""

    def __missing__(self, code: int) -> int:
        value = self[code] = ord(WORD_STAND_IN if _WORD.match(chr(code)) else OTHER_STAND_IN)
        return value


_STAND_INS = _StandIns((b, b) for b in range(128))


class Untranslatable(ValueError):
    """A pattern construct this module does not translate (the pattern then keeps every text)."""


def superset(pattern: re.Pattern) -> str:
    """RE2 syntax accepting (at least) every text `pattern` matches somewhere, once its characters beyond ASCII
    are read as their stand-ins (`stand_ins`); `Untranslatable` else."""
    tree = _p.parse(pattern.pattern, pattern.flags)
    return _sequence(tree, int(tree.state.flags))


def _sequence(nodes, flags: int) -> str:
    return "".join(_node(op, av, flags) for op, av in nodes)


def _node(op, av, flags: int) -> str:
    if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
        return _chars(op, _hashable(av), flags & _CHAR_FLAGS)
    if op is _c.SUBPATTERN:
        _, add, remove, body = av
        return f"(?:{_sequence(body, (flags | int(add)) & ~int(remove))})"
    if op is _c.BRANCH:
        return "(?:" + "|".join(_sequence(b, flags) for b in av[1]) + ")"
    if op in _REPEATS:
        lo, hi, body = av
        lo = min(lo, _RE2_MAX_REPEAT)
        count = f"{{{lo},}}" if hi is _c.MAXREPEAT or hi > WINDOW else f"{{{lo},{hi}}}"
        return f"(?:{_sequence(body, flags)}){count}"
    if op is _c.AT:
        if av not in _AT:
            raise Untranslatable(f"anchor {av}")
        return _AT[av]
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return ""  # dropped: a condition removed only widens
    if op is _c.GROUPREF:
        return "(?s:.*)"  # the group's text, whatever it was
    if op is _c.GROUPREF_EXISTS:
        _, yes, no = av
        return f"(?:{_sequence(yes, flags)}|{_sequence(no, flags) if no else ''})"
    if op is getattr(_c, "ATOMIC_GROUP", None):
        return f"(?:{_sequence(av, flags)})"  # backtracking allowed again: matches at least as much
    raise Untranslatable(f"construct {op}")


def _hashable(av):
    return tuple((o, a) for o, a in av) if isinstance(av, list) else av


@lru_cache(maxsize=4096)
def _chars(op, av, flags: int) -> str:
    """One single-character node under `flags` as an RE2 class: the exact set of ASCII characters it matches
    (Python's engine is asked about each of the 128), and the stand-in of each kind of character beyond ASCII
    it may match (`_beyond_ascii`)."""
    rx = re.compile(_python_char(op, av), flags)
    members = [b for b, ch in enumerate(_ASCII) if rx.fullmatch(ch)]
    word, other = _beyond_ascii(op, av, flags)
    members = sorted({*members, *[ord(WORD_STAND_IN)] * word, *[ord(OTHER_STAND_IN)] * other})
    if not members:
        return "[^\\x00-\\xff]"  # matches nothing (on Latin-1 text)
    ranges, start = [], members[0]
    for prev, b in zip(members, members[1:] + [None]):
        if b != prev + 1:
            ranges.append(f"\\x{start:02x}" if start == prev else f"\\x{start:02x}-\\x{prev:02x}")
            start = b
    return "[" + "".join(ranges) + "]"


def _beyond_ascii(op, av, flags: int) -> tuple[bool, bool]:
    """May the node match a character beyond ASCII that Python's `\\w` matches / one it does not? Item by item:
    an ASCII letter, case-insensitive, may match its case partners (the Kelvin sign, the long s, dotted and
    dotless i: word characters); `\\w` and `\\d` match word characters only, `\\s` and `\\W` others only; any other
    node (a negated class, `.`, a character beyond ASCII) may match both kinds."""
    if op is _c.IN and any(item is _c.NEGATE for item, _ in av) or op not in (_c.LITERAL, _c.IN):
        return True, True
    word = other = False
    for item, value in [(_c.LITERAL, av)] if op is _c.LITERAL else av:
        low, high = (value, value) if item is _c.LITERAL else value if item is _c.RANGE else (None, None)
        if item is _c.CATEGORY:
            w, o = _CATEGORY_KINDS.get(value, (True, True))
        elif low is None or high >= 128:
            w, o = True, True
        else:
            w, o = bool(flags & re.IGNORECASE) and any(chr(b).isalpha() for b in range(low, high + 1)), False
        word, other = word or w, other or o
    return word, other


_CATEGORY_KINDS = {_c.CATEGORY_WORD: (True, False), _c.CATEGORY_DIGIT: (True, False),
                   _c.CATEGORY_SPACE: (False, True), _c.CATEGORY_NOT_WORD: (False, True)}


def stand_ins(text: str) -> str:
    """The text as the automaton reads it: each character beyond ASCII replaced by its stand-in."""
    return text if text.isascii() else text.translate(_STAND_INS)


def _python_char(op, av) -> str:
    if op is _c.ANY:
        return "."
    if op is _c.LITERAL:
        return f"[\\U{av:08x}]"
    if op is _c.NOT_LITERAL:
        return f"[^\\U{av:08x}]"
    out = []
    for item, value in av:
        if item is _c.NEGATE:
            out.append("^")
        elif item is _c.LITERAL:
            out.append(f"\\U{value:08x}")
        elif item is _c.RANGE:
            out.append(f"\\U{value[0]:08x}-\\U{value[1]:08x}")
        elif item is _c.CATEGORY and value in _CATEGORY:
            out.append(_CATEGORY[value])
        else:
            raise Untranslatable(f"class item {item} {value}")
    return "[" + "".join(out) + "]"


class PatternSet:
    """Over `patterns` (compiled Python regexes): `groups_many(texts)[k]` holds the index of every pattern that
    may match some line of `texts[k]`; an index missing from it belongs to a pattern that matches no line of it."""

    def __init__(self, patterns):
        self.patterns = tuple(patterns)
        self.everything = frozenset(range(len(self.patterns)))
        options = re2.Options()
        options.max_mem = MAX_MEM
        options.encoding = re2.Options.Encoding.LATIN1  # ASCII texts: one byte, one character
        options.case_sensitive = True  # the classes above carry Python's own case folding
        options.log_errors = False
        automaton = re2.Set.SearchSet(options)
        index, always = [], []
        for k, pattern in enumerate(self.patterns):
            try:
                automaton.Add(superset(pattern))
                index.append(k)
            except (Untranslatable, re2.error, RecursionError):
                always.append(k)
        automaton.Add(_CANARY)
        try:
            automaton.Compile()
        except re2.error:  # over the memory budget: every pattern in every answer
            automaton, index, always = None, [], range(len(self.patterns))
        self._set, self._index, self._canary = automaton, tuple(index), len(index)
        self.always = frozenset(always)  # patterns RE2 could not take: in every answer

    def groups_many(self, texts: list[str]) -> list[frozenset[int]]:
        """Per text: the indices of the patterns that may match some line of it (every index where RE2's DFA
        gave up)."""
        return self.groups_of(texts, range(len(texts) + 1))

    def groups_of(self, lines: Sequence[str], ends: Sequence[int]) -> list[frozenset[int]]:
        """`groups_many` of texts given as their lines: text k is `lines[ends[k]:ends[k + 1]]` joined by
        newlines. Texts are read `CHUNK` at a time, joined (a match in one of them is a match of the joined
        text): where no pattern may match the chunk, none may match any of its texts; else each of its texts
        is read alone."""
        n = len(ends) - 1
        if self._set is None:
            return [self.everything] * n
        out: list[frozenset[int]] = []
        for at in range(0, n, CHUNK):
            last = min(at + CHUNK, n)
            if last - at > 1 and self._set.Match(stand_ins("\n".join(lines[ends[at]:ends[last]])).encode("ascii")) \
                    == [self._canary]:
                out.extend([self.always] * (last - at))
            else:
                out.extend([self._groups("\n".join(lines[ends[k]:ends[k + 1]])) for k in range(at, last)])
        return out

    def _groups(self, text: str) -> frozenset[int]:
        found = self._set.Match(stand_ins(text).encode("ascii"))
        if found == [self._canary]:  # the common case
            return self.always
        if found is None or self._canary not in found:
            return self.everything  # the DFA gave up on this text (or the canary went missing)
        return self.always.union(self._index[m] for m in found if m != self._canary)
