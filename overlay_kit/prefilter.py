"""Necessary-word prefilters for regexes: a cheap test that rules out, for many texts at once, most of those on
which a pattern cannot match, so that the full pattern runs only on the few that remain.

    f = Prefilter.of([pattern, ...])   # read off the patterns' own parse trees (re._parser)
    f.groups_many(texts)               # per text: (the indices of) the patterns that may match it
    f.candidates_many(texts)           # per text: may any of them match it?

A pattern's condition is read off its syntax: every match of `\\bignore\\b[^.]*\\brules\\b` holds the word
`ignore` AND the word `rules`; an alternation holds one of its branches' conditions. Words with a word
boundary on both sides are looked up in the text's set of `\\w+` tokens; a literal without boundaries is looked
for as a substring; `[A-Za-z0-9+/]{32,}` needs 32 such characters in a row; a pattern with nothing of the
kind (`[a-z]+`) keeps every text. Each pattern is split into alternatives, each looked at through its rarest
clause first, and an alternative none of the batch's texts can meet is dropped for the batch. The test is
necessary, never sufficient: a caller tries the patterns it names.

It is sound for plain lowercase ASCII text (the folded readings `textguard.views` gives plain ASCII input):
there, IGNORECASE matching is equality of lowercase letters. Any other text keeps every pattern. The tests
hold it to that on every pattern the batch write path uses (tests/test_learn_batch.py).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

try:  # Python >= 3.11
    from re import _compiler, _constants as _c, _parser as _p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_compile as _compiler  # type: ignore[no-redef]
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

__all__ = ["Prefilter", "condition"]

_WORD = re.compile(r"\w")
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_STARTS = {_c.AT_BEGINNING, _c.AT_BEGINNING_LINE, _c.AT_BEGINNING_STRING, _c.AT_BOUNDARY}
_ENDS = {_c.AT_END, _c.AT_END_LINE, _c.AT_END_STRING, _c.AT_BOUNDARY}
# Words too common to be worth a clause of their own when a branch offers a rarer one.
_COMMON = frozenset("""a an the to of and or in on at for is are be been was were has have had will would should could can
may must need do does did done not no yes so but as by with without from into onto over under up down out off about
after before again also just only then than when what which who how why where there here this that these those it
its you your i me my we our us they them their he she his her all any some each every more most other new now first
last next one two time day week please thanks get got set make use used using check send mail email reply note
work help keep team system user users data file name type access support security review update updated mode like
if ask tell say said see look""".split())

# A condition: TRUE, ("tok", word), ("sub", literal), ("run", chars, n), ("rx", window regex), ("and", (conds...)),
# ("or", (conds...)).
TRUE = ("true",)  # a condition every text meets


def _and(parts) -> tuple:
    parts = tuple(dict.fromkeys(p for p in parts if p != TRUE))
    return TRUE if not parts else parts[0] if len(parts) == 1 else ("and", parts)


def _or(parts) -> tuple:
    parts = tuple(dict.fromkeys(parts))
    return TRUE if not parts or TRUE in parts else parts[0] if len(parts) == 1 else ("or", parts)


def _nonword_item(op, av) -> bool:
    """One element that always matches a non-word character (so a word may start or end next to it)."""
    if op == _c.LITERAL:
        return not _WORD.match(chr(av))
    if op == _c.IN:
        if any(o == _c.NEGATE for o, _ in av):
            return False
        for o, a in av:
            if o == _c.LITERAL and not _WORD.match(chr(a)):
                continue
            if o == _c.RANGE and not any(_WORD.match(chr(x)) for x in range(a[0], a[1] + 1)):
                continue
            if o == _c.CATEGORY and a in (_c.CATEGORY_SPACE, _c.CATEGORY_NOT_WORD, _c.CATEGORY_LINEBREAK):
                continue
            return False
        return True
    return False


def _items(sub) -> list:
    return list(sub.data if hasattr(sub, "data") else sub)


def _next_bounded(items: list, after: bool) -> bool:
    """Whether what `items` match (then whatever follows: `after`) surely starts with a non-word character,
    a word boundary or an end, so that a word just before it ends there."""
    if not items:
        return after
    (op, av), rest = items[0], items[1:]
    if op == _c.AT:
        return av in _ENDS
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return _next_bounded(rest, after)
    if op == _c.SUBPATTERN:
        return _next_bounded(_items(av[-1]) + rest, after)
    if op == _c.BRANCH:
        return all(_next_bounded(_items(b) + rest, after) for b in av[1])
    if op in _REPEATS:
        body = _next_bounded(_items(av[2]), False)
        return body if av[0] >= 1 else body and _next_bounded(rest, after)
    return _nonword_item(op, av)


_RUN_MIN = 8  # a class repeated this often is a condition of its own (`[A-Za-z0-9+/]{32,}`)


def _chars(item, flags: int) -> frozenset:
    """The lowercase ASCII characters that one class item may match in a lowercased text: a character
    counts when it, or its upper case, matches (the text was lowercased before it is read)."""
    one = _compiler.compile(_p.SubPattern(_p.State(), [item]), flags)
    return frozenset(c for c in map(chr, range(128)) if one.fullmatch(c) or one.fullmatch(c.upper()))


def _literal(run: str, left: bool, right: bool, suffix: str = "") -> tuple:
    """The condition of one literal run: its words bounded on both sides as tokens (the last one also with an
    optional one-letter `suffix`: `rules?`), and the whole run as a substring when it is more than one word."""
    if not run.strip():
        return TRUE  # spaces alone tell nothing
    pieces = re.findall(r"\w+|\W+", run)
    words = []
    for k, piece in enumerate(pieces):
        if not _WORD.match(piece) or not (left or k > 0):
            continue
        if k < len(pieces) - 1 or right:
            words.append(("tok", piece))
        elif suffix:
            words.append(_or([("tok", piece), ("tok", piece + suffix)]))
    return _and(words + ([("sub", run)] if len(pieces) > 1 or not words else []))


def _optional_letter(items: list, after: bool) -> str:
    """The letter of `x?` opening `items` when a word boundary surely follows it (`rules?\\b`), else ""."""
    if items and items[0][0] in _REPEATS:
        lo, hi, body = items[0][1]
        body = _items(body)
        if (lo, hi) == (0, 1) and len(body) == 1 and body[0][0] == _c.LITERAL and _WORD.match(chr(body[0][1])) \
                and _next_bounded(items[1:], after):
            return chr(body[0][1]).lower()
    return ""


def _unfactor(items: list) -> list:
    """Undo the parser's factoring of a common prefix (`no(?:body| one)` back to `(?:nobody|no one)`), so that
    the words stay whole."""
    out: list = []
    for op, av in items:
        if op in _REPEATS and av[:2] == (0, 1) and len(_items(av[2])) == 1 and _items(av[2])[0][0] == _c.LITERAL:
            op, av = _c.BRANCH, (None, [_p.SubPattern(_p.State(), _items(av[2])), _p.SubPattern(_p.State(), [])])
        if op == _c.BRANCH and out and out[-1][0] == _c.LITERAL:
            k = len(out)
            while k > 0 and out[k - 1][0] == _c.LITERAL:
                k -= 1
            prefix, out = out[k:], out[:k]
            av = (av[0], [_p.SubPattern(_p.State(), prefix + _items(b)) for b in av[1]])
        out.append((op, av))
    return out


def _simple(op, av) -> bool:
    """An item a small window regex may hold: a character, a class, a word boundary, or a repeat of one."""
    if op in (_c.LITERAL, _c.IN, _c.NOT_LITERAL):
        return True
    if op == _c.AT:
        return av in (_c.AT_BOUNDARY, _c.AT_NON_BOUNDARY)
    if op in _REPEATS:
        body = _items(av[2])
        return len(body) == 1 and body[0][0] in (_c.LITERAL, _c.IN, _c.NOT_LITERAL)
    return False


def _distribute(items: list) -> list:
    """`(?:a|b)\\s*[:=]` as `(?:a\\s*[:=]|b\\s*[:=])` when the alternatives and the few items after them are
    simple: each alternative then ends in a window regex of its own."""
    flat: list = []
    for op, av in items:  # a group only captures: its items (or its one alternation) stand in the sequence
        if op == _c.SUBPATTERN and (len(_items(av[-1])) == 1 and _items(av[-1])[0][0] == _c.BRANCH
                                    or all(_simple(*it) for it in _items(av[-1]))):
            flat.extend(_items(av[-1]))
        else:
            flat.append((op, av))
    items = flat
    out: list = []
    k = 0
    while k < len(items):
        op, av = items[k]
        if op == _c.BRANCH and all(all(_simple(*it) for it in _items(b)) for b in av[1]):
            j = k + 1
            while j < len(items) and items[j][0] == _c.LITERAL:  # the literal run after it, whole
                j += 1
            others = 0
            while j < len(items) and others < 3 and _simple(*items[j]):  # and a few simple items
                j, others = j + 1, others + 1
            if j > k + 1:
                tail = items[k + 1:j]
                out.append((op, (av[0], [_p.SubPattern(_p.State(), _items(b) + tail) for b in av[1]])))
                k = j
                continue
        out.append((op, av))
        k += 1
    return out


def _window(items: list, flags: int) -> tuple:
    """A run of simple items holding a letter and a class or repeat, as one regex condition (searched in the
    lowercased text, so case-blind)."""
    def classy(op, av) -> bool:
        return op in (_c.IN, _c.NOT_LITERAL) or op in _REPEATS and _items(av[2])[0][0] in (_c.IN, _c.NOT_LITERAL)

    if not any(op == _c.LITERAL for op, _ in items) or not any(classy(op, av) for op, av in items):
        return TRUE  # no letter to anchor it, or nothing the literal runs do not say already
    return ("rx", _compiler.compile(_p.SubPattern(_p.State(), list(items)), flags | re.IGNORECASE))


def _run(items: list, bounded: bool, after: bool, flags: int = 0) -> tuple[tuple, bool]:
    """(condition, bounded at the end) of one sequence of parsed items. `bounded`: the position before the
    first item is a line/string start, a word boundary or follows a non-word character; `after`: what
    follows the sequence surely starts with one."""
    parts, run, run_bounded = [], [], False
    items = _distribute(_unfactor(items))
    window: list = []

    def flush(j: int) -> None:
        if run:
            parts.append(_literal("".join(run), run_bounded, _next_bounded(items[j:], after),
                                  _optional_letter(items[j:], after)))
            run.clear()

    for i, (op, av) in enumerate(items):
        if _simple(op, av):
            window.append((op, av))
        else:
            parts.append(_window(window, flags))
            window = []
        if op == _c.LITERAL:
            if not run:
                run_bounded = bounded
            run.append(chr(av).lower())
            bounded = not _WORD.match(chr(av))
            continue
        flush(i)
        nxt = _next_bounded(items[i + 1:], after)
        if op == _c.AT:
            bounded = av in _STARTS or av in _ENDS
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            pass  # zero-width: the position does not move, and its content is not taken as a condition
        elif op == _c.SUBPATTERN:
            cond, bounded = _run(_items(av[-1]), bounded, nxt, flags)
            parts.append(cond)
        elif op == _c.BRANCH:
            runs = [_run(_items(b), bounded, nxt, flags) for b in av[1]]
            parts.append(_or([c for c, _ in runs]))
            bounded = all(e for _, e in runs)
        elif op in _REPEATS:
            lo, body = av[0], _items(av[2])
            cond, once = _run(body, bounded, False, flags)
            twice = once if once == bounded else _run(body, once, False, flags)[1]  # a second pass from there
            if lo >= _RUN_MIN and len(body) == 1 and body[0][0] in (_c.IN, _c.LITERAL):
                parts.append(("run", _chars(body[0], flags), lo))  # lo characters of one class in a row
            if lo >= 1:  # one pass of the body is enough to hold its literals
                parts.append(cond)
                bounded = once and twice
            else:  # skipped (bounded as before) or taken
                bounded = bounded and once and twice
        else:
            bounded = _nonword_item(op, av)
    flush(len(items))
    parts.append(_window(window, flags))
    return _and(parts), bounded


def condition(pattern: re.Pattern) -> tuple:
    """The necessary condition of one compiled pattern (see the module docstring)."""
    tree = _p.parse(pattern.pattern, pattern.flags)
    return _run(_items(tree), False, False, pattern.flags)[0]


# ------------------------------------------------------------------------------------------- evaluation


def _holds(cond, tokens: set, text: str) -> bool:
    kind = cond[0]
    if kind == "tok" or kind == "run":
        return cond in tokens if kind == "run" else cond[1] in tokens
    if kind == "sub":
        return cond[1] in text
    if kind == "rx":
        return cond[1].search(text) is not None
    if kind == "and":
        return all(_holds(c, tokens, text) for c in cond[1])
    if kind == "or":
        return any(_holds(c, tokens, text) for c in cond[1])
    return True


@lru_cache(maxsize=None)
def _gate(cond) -> tuple | None:
    """One clause every text meeting `cond` meets, as (tokens and runs, substrings): the cheap first look.
    None when there is none (every text is a candidate)."""
    kind = cond[0]
    if kind == "tok":
        return frozenset([cond[1]]), ()
    if kind == "run":
        return frozenset([cond]), ()
    if kind == "sub":
        return frozenset(), (cond[1],)
    if kind == "or":
        gates = [_gate(c) for c in cond[1]]
        if any(g is None for g in gates):
            return None
        return frozenset().union(*(g[0] for g in gates)), tuple(dict.fromkeys(s for g in gates for s in g[1]))
    if kind == "and":
        best = None
        for c in cond[1]:
            g = _gate(c)
            if g is not None and (best is None or _cost(g) < _cost(best)):
                best = g
        return best
    return None


def _word_cost(w: str) -> float:
    """A rough chance that a text of ordinary prose holds the word."""
    return 0.5 if w in _COMMON else 0.3 if len(w) <= 2 else 0.1 if len(w) == 3 else 0.02


def _sub_cost(s: str) -> float:
    words = re.findall(r"\w+", s)
    if not words:
        return 1.0 if len(s.strip()) <= 1 else 0.5 if len(s) == 2 else 0.2
    return math.prod(_word_cost(w) for w in words)


_SEARCH = 0.3  # a substring gate is a search through the whole batch: about a false opening in three texts


@lru_cache(maxsize=None)
def _cost(gate) -> float:
    """The rough cost of a clause as a gate: the chance ordinary prose opens it, plus a search per substring
    (a token or a run is looked up for free), so that a condition is gated by its cheapest clause."""
    toks, subs = gate
    return (sum(_word_cost(t) if isinstance(t, str) else 0.01 for t in toks)
            + sum(_SEARCH + _sub_cost(s) for s in subs))


def _implied(clause, gate) -> bool:
    """A clause every text opening `gate` meets anyway (a substring that holds the gate's one word)."""
    if gate is None or len(gate[0]) != 1 or gate[1] or clause[0]:
        return False
    (word,) = gate[0]
    return isinstance(word, str) and all(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", s) and s.strip() == word
                                         for s in clause[1])


def _runs(cond, out: dict) -> dict:
    if cond[0] == "run":
        out[cond] = None
    elif cond[0] in ("and", "or"):
        for c in cond[1]:
            _runs(c, out)
    return out


# Every ASCII character that is not a word character becomes a space (NUL, the batch separator, is kept).
_SPACES = bytes(b if b == 0 or b >= 128 or _WORD.match(chr(b)) else 32 for b in range(256))


def _clauses(cond) -> list:
    """Necessary clauses of `cond` (each one gate: some of its tokens, runs or substrings is there)."""
    if cond[0] == "and":
        return [c for part in cond[1] for c in _clauses(part)]
    gate = _gate(cond)
    return [] if gate is None else [gate]


_MAX_DISJUNCTS = 64


def _disjuncts(cond) -> list:
    """`cond` as alternatives (an OR of ANDs where that stays small), so each is gated by its own clauses."""
    if cond[0] == "or":
        return [d for c in cond[1] for d in _disjuncts(c)]
    if cond[0] == "and":
        out = [()]
        for part in cond[1]:
            alts = _disjuncts(part)
            if len(out) * len(alts) > _MAX_DISJUNCTS:
                return [cond]
            out = [o + (a,) for o in out for a in alts]
        return [_and(o) for o in out]
    return [cond]


class _Live(dict):
    """Alternative -> whether the batch's words can meet each of its word clauses (computed on first look)."""

    def __init__(self, clauses: tuple, present: set):
        super().__init__()
        self.clauses, self.present = clauses, present

    def __missing__(self, i: int) -> bool:
        present = self.present
        value = self[i] = all(subs or not present.isdisjoint(toks) for toks, subs in self.clauses[i])
        return value


@dataclass(frozen=True)
class Prefilter:
    """Over several patterns, each in a group (default: its index; a compiled pattern hashes slowly):
    `groups_many(texts)[i]` holds
    every group with a pattern that may match `texts[i]`; a group missing from it has no pattern that can
    match any line of the text. Texts are lowercase plain ASCII (see the module docstring); any other text (or
    one holding a NUL) keeps every group."""

    conditions: tuple  # the patterns' conditions, split into alternatives
    group: tuple  # per alternative: the group of its pattern
    clauses: tuple  # per alternative: its necessary clauses, its gate (the cheapest) first
    by_token: dict  # gate token (or run) -> the alternatives it opens
    by_sub: dict  # gate substring -> the alternatives it opens
    always: tuple  # alternatives without a gate: always evaluated in full
    runs: dict  # run atom -> (byte table, needle)
    all_groups: frozenset

    @classmethod
    def of(cls, patterns, groups=None) -> "Prefilter":
        """The prefilter of `patterns` (`groups`: one label per pattern, default its index): each pattern's
        condition split into
        its alternatives (`_disjuncts`), each alternative looked at through its rarest clause first."""
        patterns = list(patterns)
        groups = list(groups) if groups is not None else list(range(len(patterns)))
        conds, owner = [], []
        for p, g in zip(patterns, groups, strict=True):
            for d in _disjuncts(condition(p)):
                conds.append(d)
                owner.append(g)
        clauses = []
        by_token: dict = {}
        by_sub: dict = {}
        for i, c in enumerate(conds):
            gate = _gate(c)
            rest = [g for g in _clauses(c) if g != gate and not _implied(g, gate)]
            # after the gate: word clauses (a set lookup) before substring ones, rarest first
            clauses.append(tuple(([gate] if gate else []) + sorted(rest, key=lambda g: (bool(g[1]), _cost(g)))))
            for t in (gate[0] if gate else ()):
                by_token.setdefault(t, []).append(i)
            for t in (gate[1] if gate else ()):
                by_sub.setdefault(t, []).append(i)
        runs = {}
        for c in conds:
            for atom in _runs(c, {}):
                _, chars, k = atom
                table = bytes(ord("a") if b < 128 and chr(b) in chars else ord("#") if b == 0 else ord(" ")
                              for b in range(256))
                runs[atom] = (table, b"a" * k)
        return cls(tuple(conds), tuple(owner), tuple(clauses), {t: tuple(v) for t, v in by_token.items()},
                   {t: tuple(v) for t, v in by_sub.items()},
                   tuple(i for i, c in enumerate(clauses) if not c), runs, frozenset(groups))

    def candidates_many(self, texts: list[str]) -> list[bool]:
        """Per text: may any pattern match it?"""
        return [bool(g) for g in self.groups_many(texts)]

    def groups_many(self, texts: list[str]) -> list[frozenset]:
        """Per text: the groups with a pattern that may match it (see the class docstring): those with an
        alternative whose gate the text opens, whose clauses it meets, and then whose whole condition (its
        window regexes too: `(?:env|shell)\\s*[:=]`, not just the word) holds on it."""
        if not texts:
            return []
        joined = "\x00".join(texts)
        if not joined.isascii() or joined.count("\x00") != len(texts) - 1:  # read the plain ones together
            plain = [k for k, t in enumerate(texts) if t.isascii() and "\x00" not in t]
            out = [self.all_groups] * len(texts)
            for k, g in zip(plain, self.groups_many([texts[k] for k in plain]) if plain else ()):
                out[k] = g
            return out
        raw = joined.encode("ascii")
        tokens = [set(piece.split()) for piece in raw.translate(_SPACES).decode("ascii").split("\x00")]
        for atom, (table, needle) in self.runs.items():
            mapped = raw.translate(table)
            if needle in mapped:
                for k, piece in enumerate(mapped.split(b"#")):
                    if needle in piece:
                        tokens[k].add(atom)
        # An alternative with a word clause no text of the batch can meet is out for the whole batch.
        present = set().union(*tokens)
        live = _Live(self.clauses, present)  # looked at only for the alternatives some text opens
        by_token = {t: w for t, w in ((t, [i for i in self.by_token[t] if live[i]])
                                      for t in present & self.by_token.keys()) if w}
        opened: dict[int, set] = {}
        starts = None
        for sub, which in self.by_sub.items():
            which = [i for i in which if live[i]]
            if not which:
                continue
            at = joined.find(sub)
            if at < 0:
                continue
            starts = starts or list(accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
            while at >= 0:
                opened.setdefault(bisect_right(starts, at) - 1, set()).update(which)
                at = joined.find(sub, at + 1)
        always, holds, group, conds = [i for i in self.always if live[i]], self._holds, self.group, self.conditions
        none: frozenset = frozenset()
        out = []
        for k, (text, toks) in enumerate(zip(texts, tokens)):
            hit = toks & by_token.keys()
            if not (hit or always or k in opened):
                out.append(none)
                continue
            found: set = set()
            for i in sorted(opened.get(k, set()).union(always, *(by_token[t] for t in hit))):
                if group[i] not in found and holds(i, toks, text) and _holds(conds[i], toks, text):
                    found.add(group[i])
            out.append(frozenset(found))
        return out

    def _holds(self, i: int, tokens: set, text: str) -> bool:
        """Does the text meet every clause of alternative `i` (its gate is open)? The whole condition is not
        evaluated here: `holds` does that, and a caller who needs certainty tries the pattern itself."""
        for toks, subs in self.clauses[i][1:]:
            if tokens.isdisjoint(toks) and (not subs or not any(s in text for s in subs)):
                return False
        return True

    def holds(self, text: str) -> bool:
        """The whole condition of some alternative met by `text` (lowercase plain ASCII): slower, exact to the
        conditions (the tests use it)."""
        tokens = set(text.encode("ascii").translate(_SPACES).decode("ascii").split())
        for atom, (table, needle) in self.runs.items():
            if needle in text.encode("ascii").translate(table):
                tokens.add(atom)
        return any(_holds(c, tokens, text) for c in self.conditions)
