"""Many regexes read as one automaton: per text, which of them may match it, found in one linear pass (RE2's
`Set`: a DFA over every pattern at once), so that a Python pattern runs only where that pass says it may.

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

RE2 gives up when its DFA outgrows its memory budget, and its `Set` then reports "no match": a canary pattern
that matches every text tells that apart, and such a text keeps every pattern.
"""

from __future__ import annotations

import re

import re2

__all__ = ["PatternSet", "prefilter"]

WINDOW = 8  # a counted repetition with a larger upper bound reads as unbounded (`[^.]{0,40}` as `[^.]{0,}`)
MAX_MEM = 32 << 20  # RE2's memory budget for the set: its program and DFA
_CANARY = r"\z"  # matches every text, at its end: reported only when the DFA read the whole text
# Characters with ASCII case partners in Python's `re` that RE2 does not fold to them (a test checks every code
# point): a pattern holding one is in every answer.
FOLD_GAPS = frozenset("\u0130\u0131")
_PLAIN = bytes([9, 10, *range(32, 127)])  # what plain ASCII text is made of
_LOOKAROUNDS = ("(?=", "(?!", "(?<=", "(?<!")
_COUNT = re.compile(r"\{(\d*),(\d+)\}")


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
            esc = src[i:i + 2]
            out.append({"\\A": "^", "\\Z": "$"}.get(esc, esc) if not in_class else esc)
            i += 2
        elif in_class:
            in_class = c != "]"
            out.append(c)
            i += 1
        elif c == "[":
            start = i + 1 + (src[i + 1:i + 2] == "^")
            if src[start:start + 1] == "]":  # a leading `]` is a member
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
            i += src[i + 1:i + 2] == "^"
            i += src[i + 1:i + 2] == "]"
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Untranslatable(src[:40])


class PatternSet:
    """Over `patterns` (compiled Python regexes): `groups_many(texts)[k]` holds the index of every pattern that
    may match some line of `texts[k]`; an index missing from it belongs to a pattern that matches no line of it."""

    def __init__(self, patterns):
        self.patterns = tuple(patterns)
        self.everything = frozenset(range(len(self.patterns)))
        options = re2.Options()
        options.max_mem = MAX_MEM
        options.log_errors = False
        automaton = re2.Set.SearchSet(options)
        index, always = [], []
        for k, pattern in enumerate(self.patterns):
            try:
                automaton.Add(prefilter(pattern))
                index.append(k)
            except (Untranslatable, re2.error):
                always.append(k)
        automaton.Add(_CANARY)
        try:
            automaton.Compile()
        except re2.error:  # over the memory budget: every pattern in every answer
            automaton, index, always = None, [], range(len(self.patterns))
        self._set, self._index, self._canary = automaton, tuple(index), len(index)
        self.always = frozenset(always)  # patterns RE2 could not take: in every answer

    def groups_many(self, texts: list[str]) -> list[frozenset[int]]:
        """Per text: the indices of the patterns that may match some line of it (every index for a text that is
        not plain ASCII, or where RE2's DFA gave up)."""
        if self._set is None:
            return [self.everything] * len(texts)
        return [self._groups(text) for text in texts]

    def _groups(self, text: str) -> frozenset[int]:
        if not plain(text):
            return self.everything
        found = self._set.Match(text)
        if found == [self._canary]:  # the common case
            return self.always
        if found is None or self._canary not in found:
            return self.everything  # the DFA gave up on this text (or the canary went missing)
        return self.always.union(self._index[m] for m in found if m != self._canary)
