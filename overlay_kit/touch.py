"""Does a section's edit touch a lesson? — the stale flag narrowed to what the lesson refers to.

The `section` rebase policy flags a lesson `stale` whenever its section's text changed. On real instruction-file
histories most such flags are false alarms (notebook 16: a hand-kept rule whose section's other lines changed
was reworded or deleted later with precision 0.57): a section grows a bullet, a typo is fixed two lines away,
and a rule about something else is flagged. `touches(lesson, old, new)` asks the narrower question — was what the
lesson refers to edited, moved or removed? — in two explainable steps:

1. **Rewritten.** The section's words, diffed (`difflib`, old against new), keep a similarity (the diff's own
   ratio, 2 × matched / total words) under REWRITE_SIMILARITY: the section was rewritten, every lesson on it is
   touched.
2. **Shared terms.** Otherwise the lesson is touched when at least MIN_SHARED of its *terms* occur in the
   old lines the edit removed or replaced, or at least ADDED_SHARED of them in the lines it put in (a new line
   about the lesson's subject: a weaker sign, so it needs more shared terms). A term is a word (`\\w+`, so
   identifiers, paths, flags and quoted strings break into their words) case-folded, a plural `s` dropped, of at
   least 3 characters (2 digits for a number), not a stop word. Lines are compared whitespace-normalized (a
   re-indented line is unchanged; a re-wrapped paragraph is changed).

A section gone is no question for this module: the policy orphans its lessons as before.

    touches("Run pytest with -x", "# Tests\\n- Use pytest.\\n", "# Tests\\n- Use nox.\\n")  # Touch(True, ...)
    bool(touches(lesson, old, new))     # the decision; .reason says why, .terms which words

The parameters were chosen on the development repositories of the real histories (`benchmarks/touch_accuracy.py
--tune`, `datasets/histories/anchoring_split.csv`: dev precision 0.56 against the section flag's 0.47, recall
0.87 against 0.91) and reported once on the held-out ones (precision 0.80 against 0.71, recall 0.93 against
0.95); the figures, with their intervals, are in `datasets/histories/touch_results.json`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

__all__ = ["ADDED_SHARED", "MIN_SHARED", "REWRITE_SIMILARITY", "STOPWORDS", "Touch", "terms", "touches"]

REWRITE_SIMILARITY = 0.5  # word similarity of old and new section under which the section counts as rewritten
MIN_SHARED = 1  # lesson terms that must occur in the changed lines
ADDED_SHARED: int | None = 3  # lesson terms that must occur in the lines an edit put in (None: those never count)

STOPWORDS = frozenset(
    """
a about above after again all also always an and any are as at be because been before being below between both but
by can could did do does doing don done during each either else ever every few for from further get gets had has
have having here how however if in instead into is it its itself just least less let like make makes many may
might more most much must need needs never no nor not now of off on once one only or other otherwise our out over
own per rather same shall should since so some such than that the their them then there these they this those
though through to too under unless until up upon use used uses using very via was we were what when whenever where
whether which while who whom whose why will with within without would yes yet you your
""".split()
)

_WORD = re.compile(r"\w+")


def _term(word: str) -> str | None:
    w = word.casefold()
    if w.isdigit():
        return w if len(w) >= 2 else None
    if len(w) < 3 or w in STOPWORDS:
        return None
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    return w


@lru_cache(maxsize=8192)
def terms(text: str) -> frozenset[str]:
    """The terms of a text (see the module): what a lesson can refer to, and what a changed line mentions."""
    return frozenset(t for t in map(_term, _WORD.findall(text)) if t is not None)


@dataclass(frozen=True)
class Touch:
    """Whether an edit touches a lesson, and why. True in a boolean context when it does."""

    touched: bool
    reason: str
    terms: tuple[str, ...] = ()  # the lesson's terms found in the changed lines

    def __bool__(self) -> bool:
        return self.touched


def _lines(text: str) -> list[str]:
    return [n for n in (" ".join(line.split()) for line in text.splitlines()) if n]


def touches(
    lesson_text: str,
    old_section_text: str,
    new_section_text: str,
    *,
    rewrite_similarity: float = REWRITE_SIMILARITY,
    min_shared: int = MIN_SHARED,
    added_shared: int | None = ADDED_SHARED,
) -> Touch:
    """Whether the edit of a section from `old_section_text` to `new_section_text` plausibly touches a lesson
    anchored there (`lesson_text`): the section rewritten, or a term of the lesson in a changed line."""
    if old_section_text == new_section_text:
        return Touch(False, "section unchanged")
    old_words = _WORD.findall(old_section_text.casefold())
    new_words = _WORD.findall(new_section_text.casefold())
    if old_words or new_words:
        sim = SequenceMatcher(None, old_words, new_words, autojunk=False).ratio()
        if sim < rewrite_similarity:
            return Touch(True, f"section rewritten (word similarity {sim:.2f} < {rewrite_similarity})")
    a, b = _lines(old_section_text), _lines(new_section_text)
    changed: set[str] = set()
    added: set[str] = set()
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("delete", "replace"):
            changed.update(*(terms(x) for x in a[i1:i2]))
        if tag in ("insert", "replace"):
            added.update(*(terms(x) for x in b[j1:j2]))
    lesson = terms(lesson_text)
    shared = tuple(sorted(lesson & changed))
    if len(shared) >= min_shared:
        return Touch(True, f"changed lines mention {', '.join(shared[:5])}", shared)
    near = tuple(sorted(lesson & added))
    if added_shared is not None and len(near) >= added_shared:
        return Touch(True, f"added lines mention {', '.join(near[:5])}", near)
    return Touch(False, "section changed, but not what this lesson refers to")
