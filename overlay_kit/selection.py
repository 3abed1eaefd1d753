"""Tier-3 selection: which learned lessons a session's goal puts in front of the model.

The design's procedural lessons (`preference`, `example`) are retrievable, not resident: a lesson enters the
prompt when the goal needs it and stays out otherwise. `select(goals, lessons, embedder, rule)` scores every
lesson for every goal and admits, per goal, what the `SelectionRule` lets through:

- **dense**: the goal's cosine (the embedder's, `common.cosines`: the same on every CPU) to the lesson's triggers
  and its text, pooled: the best of them (`pool="max"`) or their centroid (`pool="centroid"`). A lesson's
  triggers are its evidence: the goal it was taught at, and every goal at which it was restated, corrected or
  accepted since (`learn(goal=)`, `Store.add_triggers`), so what brings it back follows its user's own words;
- **lexical**: the tf-idf cosine (Snowball-stemmed words, `touch.STOPWORDS` out, idf over the lessons in play) of
  the goal to the lesson's triggers and text — what matches a name, a tool or a number the embedder has no sense of;
- **section**: the goal's cosine to the text of the section the lesson is anchored to ("section activation").

A lesson's score is the rule's weighted sum of the three; a goal admits the lessons that reach `floor`, lie within
`margin` of its best score, at most `k` of them, best first (ties by id). `shipped_rule()` is the rule resolve uses
(the `SHIPPED.select_*` settings, chosen by the selection study: notebook 18, datasets/rules/18_selection.yaml); a
study varies it by passing another.

    from overlay_kit.selection import Candidate, SelectionRule, select
    lessons = [Candidate("l1", ("decline the recruiter",), "Keep declines to two sentences.", "Drafting replies ...")]
    select(["say no to the headhunter"], lessons, embedder)   # [[("l1", 0.71)]]
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from .common import cosine_rows, cosines, cosines_of
from .touch import STOPWORDS

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Candidate", "SelectionRule", "Scores", "score", "select", "shipped_rule"]


@dataclass(frozen=True)
class Candidate:
    """A tier-3 lesson as selection sees it."""

    id: str
    triggers: tuple[str, ...]  # the goals it was taught, restated, corrected or accepted at (first: its trigger)
    text: str  # what it says (a preference's body; an example's input and output)
    section: str = ""  # the text of the section it is anchored to ("" when it floats)


@dataclass(frozen=True)
class SelectionRule:
    dense: float = 1.0  # weight of the goal's cosine to the lesson's triggers and text, pooled by `pool`
    lexical: float = 0.0  # weight of the tf-idf cosine of the goal to the lesson's triggers and text
    section: float = 0.0  # weight of the goal's cosine to the lesson's section
    floor: float = 0.5  # the score a lesson must reach
    margin: float = 1.0  # ... and how far below the goal's best score it may lie
    k: int = 20  # at most this many lessons a goal (the compliance study's k_safe)
    # "max": the best cosine to any trigger or the text; "centroid": the cosine to the mean of their unit vectors
    # (a prototype: more evidence sharpens a lesson instead of giving it more chances to match by accident)
    pool: str = "max"

    def __post_init__(self):
        if (
            self.k < 1
            or self.margin < 0
            or min(self.dense, self.lexical, self.section) < 0
            or self.pool not in ("max", "centroid")
        ):
            raise ValueError(f"bad selection rule: {self}")

    def combine(self, s: "Scores") -> "np.ndarray":
        out = self.dense * s.dense
        if self.lexical:
            out = out + self.lexical * s.lexical
        if self.section:
            out = out + self.section * s.section
        return out

    def admit_sorted(self, values: "np.ndarray") -> "np.ndarray":
        """Admission mask for score rows sorted best first (goals × lessons): the one place the rule lives."""

        keep = (values >= self.floor) & (values >= values[:, :1] - self.margin)
        keep[:, self.k :] = False
        return keep

    def admit(self, s: "Scores") -> list[list[tuple[int, float]]]:
        """Per goal, the admitted lessons' columns with their scores, best first (ties: lower column first)."""
        import numpy as np

        total = self.combine(s)
        order = np.argsort(-total, axis=1, kind="stable")
        values = np.take_along_axis(total, order, axis=1)
        keep = self.admit_sorted(values)
        return [[(int(j), float(v)) for j, v, ok in zip(o, row, k) if ok] for o, row, k in zip(order, values, keep)]


def shipped_rule() -> SelectionRule:
    """The rule the product selects with (`SHIPPED.select_*`): the best `select_k`, no floor, no margin."""
    from .defaults import SHIPPED

    return SelectionRule(
        dense=1.0,
        lexical=SHIPPED.select_lexical,
        section=SHIPPED.select_section,
        floor=float("-inf"),
        margin=float("inf"),
        k=SHIPPED.select_k,
        pool=SHIPPED.select_pool,
    )


@dataclass(frozen=True)
class Scores:
    """The three components for goals × lessons (float64)."""

    dense: np.ndarray
    lexical: np.ndarray
    section: np.ndarray


def score(
    goals: Sequence[str],
    lessons: Sequence[Candidate],
    embedder,
    rule: SelectionRule | None = None,
    *,
    vectors: dict[str, "np.ndarray"] | None = None,
) -> Scores:
    """Every component for every goal and lesson (a component the rule weighs 0 is left 0: not computed).
    `vectors`: text → its vector, for texts embedded already (a store's trigger vectors; a study's cache)."""
    import numpy as np

    rule = rule or SelectionRule()
    shape = (len(goals), len(lessons))
    if not goals or not lessons:
        return Scores(np.zeros(shape), np.zeros(shape), np.zeros(shape))
    known = {} if vectors is None else vectors
    q = _encode(embedder, goals, known, query=True)
    dense = np.zeros(shape)
    if rule.dense:
        rows, starts = _lesson_side(embedder, lessons, rule.pool, known)
        dense = cosines_of(cosine_rows(q), rows)
        if starts is not None:  # "max": each lesson's best row (its rows are contiguous)
            dense = np.maximum.reduceat(dense, starts, axis=1)
    lexical = (
        _tfidf(goals, tuple(" ".join((*lesson.triggers, lesson.text)) for lesson in lessons))
        if rule.lexical
        else np.zeros(shape)
    )
    section = np.zeros(shape)
    if rule.section:
        anchored = [j for j, lesson in enumerate(lessons) if lesson.section]
        if anchored:
            section[:, anchored] = cosines(q, _encode(embedder, [lessons[j].section for j in anchored], known))
    return Scores(dense, lexical, section)


def select(
    goals: Sequence[str],
    lessons: Sequence[Candidate],
    embedder,
    rule: SelectionRule | None = None,
    *,
    vectors: dict[str, "np.ndarray"] | None = None,
) -> list[list[tuple[str, float]]]:
    """Per goal, `(lesson id, score)` of the lessons the rule admits, best first."""
    rule = rule or SelectionRule()
    admitted = rule.admit(score(goals, lessons, embedder, rule, vectors=vectors))
    return [[(lessons[j].id, s) for j, s in row] for row in admitted]


def _encode(embedder, texts: Sequence[str], known: dict, *, query: bool = False) -> "np.ndarray":
    """Vectors of `texts`, embedding only those `known` lacks (goals as queries: e5 asks for it)."""
    import numpy as np

    if query:
        return np.asarray(getattr(embedder, "encode_query", embedder.encode)(list(texts)), dtype=np.float64)
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        known.update(zip(missing, np.asarray(embedder.encode(missing), dtype=np.float64)))
    return np.stack([known[t] for t in texts])


# A session's goals score the same lessons: their side of the dense cosines is kept, per embedder, pooling and
# lessons (an embedder's vector of a text is a function of the two), the most recent `_SIDES_MAX`.
_SIDES: dict[tuple, tuple] = {}
_SIDES_MAX = 8


def _lesson_side(embedder, lessons: Sequence[Candidate], pool: str, known: dict) -> tuple:
    """(the lessons' rows as `cosine_rows` makes them, each lesson's first row for "max" or None): one row a lesson
    for "centroid" (the sum of its unit vectors: the mean's direction), one a text for "max"."""
    import numpy as np

    key = (id(embedder), pool, tuple((lesson.triggers, lesson.text) for lesson in lessons))
    kept = _SIDES.pop(key, None)
    if kept is None or kept[0] is not embedder:  # the embedder held by the entry: its id cannot be reused meanwhile
        texts = [t for lesson in lessons for t in (*lesson.triggers, lesson.text)]
        starts = np.cumsum([0] + [len(lesson.triggers) + 1 for lesson in lessons[:-1]])
        vectors = _encode(embedder, texts, known)
        if pool == "centroid":
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            units = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
            kept = embedder, (cosine_rows(np.add.reduceat(units, starts, axis=0)), None)
        else:
            kept = embedder, (cosine_rows(vectors), starts)
        while len(_SIDES) >= _SIDES_MAX:  # the oldest out (another thread may have taken it first)
            _SIDES.pop(next(iter(_SIDES), None), None)
    _SIDES[key] = kept
    return kept[1]


def _tfidf(goals: Sequence[str], docs: Sequence[str]) -> "np.ndarray":
    """Cosines of the goals' tf-idf vectors to the lessons' (sublinear tf, smoothed idf over `docs`: scikit-learn's
    `TfidfVectorizer(sublinear_tf=True)`, which `tests/test_selection.py` holds it to; written here because
    importing scikit-learn costs a new process more than the whole resolve may)."""
    vocab, idf, rows = _fitted(tuple(docs))
    return cosines_of(cosine_rows(_weighted([_words(g) for g in goals], vocab, idf)), rows)


@lru_cache(maxsize=16)
def _fitted(docs: tuple[str, ...]):
    """The vocabulary, idf and tf-idf rows (as `cosine_rows` makes them) of one set of lessons (kept: a session's
    goals score the same set)."""
    words = [_words(d) for d in docs]
    vocab = {w: i for i, w in enumerate(sorted({w for ws in words for w in ws}))}
    df = [0] * len(vocab)
    for ws in words:
        for w in set(ws):
            df[vocab[w]] += 1
    idf = [math.log((1 + len(docs)) / (1 + n)) + 1 for n in df]
    return vocab, idf, cosine_rows(_weighted(words, vocab, idf))


def _weighted(texts: Sequence[list[str]], vocab: dict[str, int], idf: list[float]) -> "np.ndarray":
    import numpy as np

    out = np.zeros((len(texts), max(len(vocab), 1)))
    for row, ws in enumerate(texts):
        for w, tf in Counter(w for w in ws if w in vocab).items():
            out[row, vocab[w]] = (1 + math.log(tf)) * idf[vocab[w]]
    return out


_TOKEN = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    """Stemmed content words: lower-case alphanumeric runs of 2+ characters outside the stop words."""
    return [w for w in map(_stem, _TOKEN.findall(text.lower())) if w]


@lru_cache(maxsize=65536)
def _stem(word: str) -> str | None:
    return None if len(word) < 2 or word in STOPWORDS else _stemmer().stemWord(word)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer  # PyStemmer: the Snowball English stemmer

    return Stemmer.Stemmer("english")
