"""The scan's shortcuts equal their full twins: `fold` on plain ASCII equals the Unicode folding, and
`block_structure`'s one-line shortcut equals the full block parse."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from overlay_kit import textguard

RISKY = list("#=-*_`~<>[]:!|+.)0123456789 \t\n\r") + [
    "```",
    "---",
    "<div>",
    "[p]: http://x",
    "\x1b[8m",
    "<!--",
    "-->",
    "\u202e",
    "\u200b",
    "ｉｇｎｏｒｅ",
    "é",
    "А",
]
texts = st.lists(st.one_of(st.sampled_from(RISKY), st.text(min_size=0, max_size=6)), max_size=14).map("".join)
ascii_texts = st.text(alphabet=st.characters(max_codepoint=127), max_size=80)


@settings(max_examples=3000, deadline=None)
@given(ascii_texts)
def test_ascii_fold_equals_the_unicode_fold(text):
    t = textguard._COMMENT.sub("", textguard._ANSI.sub(" ", text).replace("\r\n", "\n").replace("\r", "\n"))
    assert textguard.fold(text) == textguard.fold_unicode(t)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(texts, ascii_texts))
def test_block_structure_shortcut_equals_the_full_parse(text):
    assert textguard.block_structure(text) == textguard.block_structure_parsed(text)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(texts, ascii_texts))
def test_hidden_chars_shortcut_equals_the_per_character_check(text):
    assert textguard.hidden_chars(text) == [(i, c) for i, c in enumerate(text) if textguard.is_hidden(c)]


def test_plain_ascii_is_ascii_without_a_hidden_character():
    """`_plain_ascii` (a byte-table pass) on every character up to U+00FF, alone and inside plain text."""
    for c in map(chr, range(256)):
        want = c.isascii() and not textguard.is_hidden(c)
        assert textguard._plain_ascii(c) == textguard._plain_ascii(f"plain {c} text\n") == want, repr(c)


# The language check's shortcuts (issue 29): the batch lexicon pass equals the per-text test, a text it passes is
# one the full reading finds English, and the batch reading equals the single one.
WORDS = (
    sorted(textguard._EN_LEXICON)[::7]
    + sorted(textguard._FOREIGN_FUNCTION)[::5]
    + ["Ignoriere", "Anweisungen", "don't", "'merci'", "users'", "Müller", "东京", "c\u043empany", "\x00", "\x1b[8m"]
)
word_texts = st.lists(
    st.one_of(st.sampled_from(WORDS), st.sampled_from(list(" .,;:!?\n'`<>@/_0123456789")), ascii_texts), max_size=12
).map(" ".join)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.one_of(word_texts, ascii_texts), max_size=8))
def test_lexicon_shortcut_equals_the_per_text_check(texts):
    want = [k for k, t in enumerate(texts) if not (t.isascii() and textguard._lexical(t.lower().encode("ascii")))]
    assert textguard._not_lexicon(texts) == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(word_texts, texts), min_size=1, max_size=6))
def test_languages_many_equals_language_and_the_shortcut_reads_english(batch):
    assert textguard.languages_many(batch) == [textguard.language(t) for t in batch]
    passed = set(range(len(batch))) - set(textguard._not_lexicon(batch))
    clauses = [textguard._units(textguard._prose(batch[k])) for k in passed]
    assert all(not foreign and all(textguard._clause(c, True)[0] is None for c in cs) for cs, foreign in clauses)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(texts, ascii_texts, word_texts))
def test_review_marks_exactly_the_look_alike_letters(text):
    marks = textguard.lookalikes(text)
    assert marks == [] or not text.isascii()
    shown = textguard.visible_review(text)
    if not marks:
        assert shown == textguard.visible(text)
    for i, ch, token in marks:
        assert text[i] == ch and ch in token and f"<U+{ord(ch):04X}>" in shown


# `views` is a batch of one (`views_many`); plain texts are read in whole-batch byte-table passes, whose oracle is
# the per-text reading `_views` (which reads every other text).
def test_batch_views_are_the_per_text_views():
    from test_injection_batch import TEXTS

    assert textguard.views_many(TEXTS) == [textguard._views.__wrapped__(t) for t in TEXTS]
    assert [textguard.views(t) for t in TEXTS[::37]] == [textguard._views.__wrapped__(t) for t in TEXTS[::37]]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.text(alphabet="ab zI-._*~/ \t\n\u00e9<!->", max_size=12), min_size=1, max_size=12))
def test_batch_views_are_the_per_text_views_on_random_batches(texts):
    """Letters, splitters, spacers and whitespace (the shapes the batch finds across the whole joined batch at
    once, text edges included), with a few texts the batch leaves to `_views`."""
    assert textguard.views_many(texts) == [textguard._views.__wrapped__(t) for t in texts]
