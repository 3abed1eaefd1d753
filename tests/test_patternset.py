"""The pattern automaton (`patternset`) never clears a text one of its patterns matches: pattern by pattern and
all together on the scan's corpus (the text and every reading the scan tries), on generated patterns and texts,
and on the constructs RE2 reads differently from Python's `re`."""

from __future__ import annotations

import re
import string

import pytest
import re2
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_injection_batch import PIECES as BATCH_PIECES
from test_injection_batch import TEXTS

from overlay_kit import gates, injection, patternset, textguard

PATTERNS = injection.detectors() + gates._WIDENING
READINGS = [(t, *textguard.views(t)) for t in TEXTS]
LINES = ["\n".join(r) for r in READINGS]


def matches(pattern: re.Pattern, readings) -> bool:
    return any(pattern.search(r) for r in readings)


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:24])
def test_the_automaton_never_clears_a_text_its_pattern_matches(pattern):
    """Pattern by pattern: the automaton of that pattern alone keeps every text it matches (raw or a reading),
    RE2 takes the pattern, and the automaton clears most texts it does not match."""
    automaton = patternset.PatternSet([pattern])
    kept = automaton.groups_many(LINES)
    matched = [matches(pattern, r) for r in READINGS]
    assert automaton.always == frozenset()
    assert [t for t, m, k in zip(TEXTS, matched, kept) if m and not k] == []
    assert sum(map(bool, kept)) < sum(matched) + 0.25 * len(TEXTS)


def test_the_whole_automaton_names_each_matching_pattern():
    kept = injection.pattern_set(PATTERNS).groups_many(LINES)
    missed = [
        (t, k) for t, r, g in zip(TEXTS, READINGS, kept) for k, p in enumerate(PATTERNS) if k not in g and matches(p, r)
    ]
    assert missed == []


def kept(pattern: re.Pattern, texts: list[str]) -> list[bool]:
    return [bool(g) for g in patternset.PatternSet([pattern]).groups_many(texts)]


def test_what_re2_reads_differently_is_widened():
    assert kept(re.compile(r"^new rules$"), ["x\nnew rules\ny", "new rules!"]) == [True, False]  # any line
    assert kept(re.compile(r"\Anew\Z"), ["x\nnew\ny", "renew"]) == [True, False]
    assert kept(re.compile(r"(?<!never )\bsend\b"), ["never send", "resend"]) == [True, False]  # lookbehind dropped
    assert kept(re.compile(r"send(?= it)(?!x)"), ["send", "sent"]) == [True, False]
    assert kept(re.compile(r"[(?=]x"), ["(x", "?x", "ax"]) == [True, True, False]  # a class, not a lookahead
    assert kept(re.compile(r"[]a]b"), ["]b", "ab", "cb"]) == [True, True, False]
    assert kept(re.compile(r"[^]a]b"), ["]b", "cb"]) == [False, True]
    assert kept(re.compile(r"ab{,2}c"), ["ac", "abbc", "ab{,2}c"]) == [True, True, False]
    assert kept(re.compile(r"a\w{0,3}b"), ["axxxb", "axxxxb"]) == [True, False]  # a short window: exact
    assert kept(re.compile(r"a\w{0,40}b"), ["a" + "x" * 40 + "b", "a" + "x" * 41 + "b"]) == [True, True]  # widened
    assert kept(re.compile("kelvin", re.I), ["KELVIN", "kelvim"]) == [True, False]
    assert kept(re.compile("kelvin"), ["KELVIN", "kelvin"]) == [False, True]  # case-sensitive stays so
    assert kept(re.compile(r"a.b", re.S), ["a\nb"]) == [True]
    assert kept(re.compile(r"a\sb"), ["a\tb", "a-b"]) == [True, False]
    assert kept(re.compile(r"[A-Za-z0-9+/]{32,}"), ["Q" * 32, "Q" * 31]) == [True, False]


def test_what_re2_cannot_read_is_in_every_answer():
    """A backreference, a comment group, a verbose pattern, a case-folding gap: every text keeps the pattern. A
    text that is not plain ASCII (a character beyond ASCII, or a control character) is read as its projection
    (issue 40: it used to keep every pattern)."""
    for pattern in (
        re.compile(r"(\w+) \1"),
        re.compile(r"a(?#note)b"),
        re.compile("a b", re.X),
        re.compile("\u0131", re.I),
        re.compile(r"(?>a)"),
    ):
        automaton = patternset.PatternSet([pattern, re.compile("zebra")])
        assert automaton.always == {0}
        assert automaton.groups_many(["a zebra", "x"]) == [{0, 1}, {0}]
    assert kept(re.compile("plain"), ["caf\u00e9", "a\x0bb", "a\rb", "a\x7f", "plain text"]) == [False] * 4 + [True]
    assert kept(re.compile("caf.$"), ["caf\u00e9"]) == [True]
    # a pattern that could tell a character from its projection keeps every text that is not plain
    for pattern in (re.compile("[^a]b"), re.compile("\u00e9t\u00e9"), re.compile("a[^ ]b")):
        assert kept(pattern, ["x\u00e9", "plain"]) == [True, False]
    assert kept(re.compile("plain"), ["a\tb\nc"]) == [False]


def test_the_case_folding_gaps_are_all_there_are():
    """Every character beyond ASCII that Python's `re` matches with an ASCII letter under IGNORECASE: RE2 folds
    it to the same letters, or it is in `FOLD_GAPS` (a pattern holding it is in every answer). (Python's `re`
    folds case by the simple mappings, so a character without an ASCII letter in its lower, upper or folded
    form has no ASCII partner.)"""
    gaps = set()
    for code in range(128, 0x110000):
        ch = chr(code)
        if 0xD800 <= code < 0xE000 or not re.search("[A-Za-z]", ch.lower() + ch.upper() + ch.casefold()):
            continue
        partners = [a for a in string.ascii_letters if re.fullmatch(re.escape(ch), a, re.I)]
        if partners and [a for a in partners if re2.fullmatch("(?i)" + re.escape(ch), a)] != partners:
            gaps.add(ch)
    assert gaps == patternset.FOLD_GAPS


PIECES = [
    "a",
    "b",
    "ab",
    " ",
    r"\s",
    r"\S",
    r"\w",
    r"\W",
    r"\d",
    r"\b",
    r"\B",
    ".",
    "^",
    "$",
    r"\A",
    r"\Z",
    "[ab]",
    "[^a]",
    "[]a]",
    "[^]b]",
    r"[\s.]",
    "(?:a|b)",
    "(?=a)",
    "(?!b)",
    "(?<=a)",
    "(?<!b)",
    "(?<![ab])",
    "(?=[)])",
    "a*",
    "b+",
    "a?",
    "a{,2}",
    "b{1,3}",
    "a{0,12}",
    r"\.",
    r"\(",
    "(?i:A)",
    "(a)",
    r"\1",
]
ALPHABET = "ab .\t\nAB()_1"
# and characters beyond plain ASCII: case partners of ASCII letters, accents, a combining mark, spaces, a line
# separator, CJK, a non-ASCII digit, punctuation, control characters (read through `patternset.project`)
BEYOND = "\u00e9\u212a\u017f\u0131\u0130\u0301\u00a0\u2028\u4e2d\u0661\u2014\u00bd\x0b\r\x1f\x7f~"


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=6),
    st.sampled_from([0, re.I, re.M, re.S]),
    st.lists(st.text(alphabet=ALPHABET, max_size=12), min_size=1, max_size=4),
)
def test_generated_patterns_keep_every_text_they_match(pieces, flags, lines):
    try:
        pattern = re.compile("".join(pieces), flags)
    except re.error:  # a backreference before its group
        assume(False)
    g = patternset.PatternSet([pattern]).groups_many(["\n".join(lines)])[0]
    assert g or not any(pattern.search(line) for line in lines)


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            PIECES + ["[^ ]", "[^~]", "[^0]", r"[\s\w]", "(?i:K)", "\u2014", "[\u2014-]", "s", "k", "i", "0"]
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([0, re.I, re.M, re.S]),
    st.lists(st.text(alphabet=ALPHABET + BEYOND, max_size=12), min_size=1, max_size=4),
)
def test_generated_patterns_keep_every_text_beyond_ascii_they_match(pieces, flags, lines):
    """The projection (`patternset.project`) never clears a text a pattern matches (issue 40)."""
    try:
        pattern = re.compile("".join(pieces), flags)
    except re.error:
        assume(False)
    g = patternset.PatternSet([pattern]).groups_many(["\n".join(lines)])[0]
    assert g or not any(pattern.search(line) for line in lines)


def test_a_batch_answers_as_each_text_alone():
    """Random batches (patterns anchored to line ends, word edges, spaces and windows that would match across two
    texts if joined wrongly) get, text by text, what each text read alone gets."""
    import random

    automaton = patternset.PatternSet(
        [
            re.compile(r"^rules$", re.M),
            re.compile(r"\bsend\b"),
            re.compile(r"a\sb"),
            re.compile(r"x[^.]{0,40}y"),
            re.compile(r"^new", re.M),
            re.compile(r"end$"),
        ]
    )
    rng = random.Random(13)
    pieces = ["rules", "send", "resend", "a", "b", "x", "y", "new", "end", "the", ".", " ", "\n", "\u00e9"]
    for _ in range(300):
        texts = ["".join(rng.choice(pieces[3:]) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 90))]
        for _ in range(rng.randint(0, 3)):
            texts[rng.randrange(len(texts))] = rng.choice(["rules", "send", "a b", "x-y", "new", "end", "a\nb"])
        assert automaton.groups_many(texts) == [automaton.groups_many([t])[0] for t in texts]


def test_when_re2_reports_no_atom_at_all_every_pattern_is_kept(monkeypatch):
    """RE2's automaton over the atoms reports no atom when its DFA gives up: the canary line appended to every text,
    whose atom no text holds, tells that apart."""
    automaton = patternset.PatternSet([re.compile("zebra"), re.compile("quagga"), re.compile(r"\d")])
    assert automaton.groups_many(["a zebra", "a horse", "caf\u00e9 2"]) == [{0}, set(), {2}]
    # the canary is found by its atom (it is no pattern RE2 tries on every text), in the canary line alone
    for a in (automaton._plain, automaton._projected):
        assert a._filter.Match("a zebra 2 " + "".join(map(chr, range(32, 127))), False) == [0, 2]
        assert a._filter.Match("x" + patternset._CANARY_LINE, True) == [2, 3]
    for gave_up in (None, [0], [2]):  # no atom at all: only the patterns without atoms were tried
        fake = type("GaveUp", (), {"Match": staticmethod(lambda text, potential, found=gave_up: found)})()
        monkeypatch.setattr(automaton._plain, "_filter", fake)
        monkeypatch.setattr(automaton._projected, "_filter", fake)
        assert automaton.groups_many(["a zebra", "a horse", "caf\u00e9"]) == [automaton.everything] * 3


def re2_oracle(patterns) -> callable:
    """What RE2 itself finds, pattern by pattern, on a text as the automaton reads it (its `prefilter` on the text
    or, for a text that is not plain, the projected pattern on the projection): the automaton's answer must hold
    every pattern this names (its atoms never clear a text RE2 matches)."""
    options = re2.Options()
    options.log_errors = False
    compiled = {}
    for plain in (True, False):
        for k, p in enumerate(patterns):
            try:
                if not plain and not patternset._projectable(p):
                    raise patternset.Untranslatable(p.pattern[:40])
                compiled[plain, k] = re2.compile(
                    patternset.prefilter(p if plain else patternset._projected_source(p)), options
                )
            except (patternset.Untranslatable, re2.error, re.error):
                compiled[plain, k] = None

    def found(text: str) -> set[int]:
        plain = patternset.plain(text)
        read = text if plain else patternset.project(text)
        return {k for k in range(len(patterns)) if (rx := compiled[plain, k]) is None or rx.search(read)}

    return found


ORACLE = re2_oracle(PATTERNS)


def test_the_automaton_holds_every_pattern_re2_finds_on_the_corpora():
    """On the scan's corpus (datasets/injection, the lesson corpora, the workload's lessons, generated hostile and
    benign texts: `TEXTS`, each with its readings), the whole automaton names every pattern RE2 matches, and names
    few more."""
    kept = injection.pattern_set(PATTERNS).groups_many(LINES)
    want = [ORACLE(line) for line in LINES]
    assert [(t, w - k) for t, w, k in zip(TEXTS, want, kept) if not w <= k] == []
    assert sum(map(len, kept)) <= sum(map(len, want)) + 0.05 * len(LINES)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(BATCH_PIECES), st.text(max_size=20), st.text(alphabet=ALPHABET + BEYOND, max_size=8)),
        min_size=1,
        max_size=5,
    ).map(" ".join),
    st.sampled_from([str, str.upper, str.lower, str.title]),
)
def test_the_automaton_keeps_every_pattern_matching_generated_text(text, case):
    """Generated text (hostile phrases, any characters, case changed), with its readings: every pattern of the
    scan that matches a line of it, and every pattern RE2 finds there, is in the answer."""
    text = case(text)
    lines = [text, *textguard.views(text)]
    g = injection.pattern_set(PATTERNS).groups_many(["\n".join(lines)])[0]
    assert [k for k, p in enumerate(PATTERNS) if k not in g and matches(p, lines)] == []
    assert ORACLE("\n".join(lines)) <= g


def test_a_character_without_an_ascii_letter_in_its_cases_has_no_ascii_partner():
    """`project`'s shortcut: a character with no ASCII letter in its lower, upper or folded form is no ASCII
    letter's case partner in Python's `re` (every code point, a class of them at a time)."""
    rest = [
        chr(c)
        for c in range(128, 0x110000)
        if not 0xD800 <= c < 0xE000 and not re.search("[A-Za-z]", chr(c).lower() + chr(c).upper() + chr(c).casefold())
    ]
    for k in range(0, len(rest), 4000):
        chunk = re.compile("[" + "".join(map(re.escape, rest[k : k + 4000])) + "]", re.IGNORECASE)
        assert not chunk.search(string.ascii_letters), rest[k : k + 4000]
