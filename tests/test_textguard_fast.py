"""The scan's shortcuts equal their full twins: `fold` on plain ASCII equals the Unicode folding, and
`block_structure`'s one-line shortcut equals the full block parse."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from overlay_kit import textguard

RISKY = list("#=-*_`~<>[]:!|+.)0123456789 \t\n\r") + ["```", "---", "<div>", "[p]: http://x", "\x1b[8m", "<!--",
                                                    "-->", "\u202e", "\u200b", "ｉｇｎｏｒｅ", "é", "А"]
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
