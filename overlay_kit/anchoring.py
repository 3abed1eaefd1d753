"""Which section a new lesson belongs in: a proposal, its confidence, and the alternatives.

`propose(sections, text, goal=None)` scores every candidate section of a skill body with one transparent weighted
mean of five parts, each in [0, 1]:

- `lexical`: BM25 of the lesson's words (and the goal's) against the section's heading and body, the sections of
  this one body being the corpus, divided by the best candidate's BM25 (so the best lexical match scores 1);
- `body`: the exact cosine (`common.cosines`) of the static embedder's vectors of the lesson and of the section
  (heading and body);
- `heading`: the same cosine against the heading alone;
- `nearest`: the best cosine against one line of the section (a new rule often resembles a sibling rule);
- `size`: log(1 + the section's words), divided by the largest candidate's (people add to big sections).

`score = Σ WEIGHTS[part] · part / Σ WEIGHTS`. The proposal is the best score (ties: the earlier section);
`confidence` is its margin over the runner-up (1.0 when there is one candidate). A proposal with `confidence` below
`SHIPPED.anchor_confidence` is asked, not assumed: `learn_anchored` writes nothing and returns the proposal for a
person to confirm. The weights and the threshold were chosen on the development split of real instruction-file
additions (`benchmarks/anchoring_accuracy.py`); the held-out figures are in `datasets/histories/
anchoring_results.json` and the README.

The empty `_preamble` is never a candidate; a headingless body has one candidate, `_body`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .anchor import PREAMBLE, Section, parse
from .common import cosines
from .defaults import SHIPPED
from .gates import WriteResult, learn
from .retrieval import static_embedder

if TYPE_CHECKING:
    from .grammar import Provenance
    from .skill import Skill
    from .store import Store

__all__ = ["PARTS", "WEIGHTS", "Proposal", "candidates", "learn_anchored", "parts", "propose"]

PARTS = ("lexical", "body", "heading", "nearest", "size")
# Chosen on the development split of the real additions (benchmarks/anchoring_accuracy.py --tune): the best top-1
# of a grid (lexical 0 or 1; the others 0, 0.5, 1 or 2); a score is the weighted mean of the parts.
WEIGHTS: Mapping[str, float] = {"lexical": 1.0, "body": 2.0, "heading": 0.5, "nearest": 0.5, "size": 2.0}
BM25_K1, BM25_B = 1.2, 0.75
_WORD = re.compile(r"[^\W_]{2,}", re.UNICODE)
_STOP = frozenset(
    """the and for with that this from are was were will would should can could not but you your
 use using when then than into onto only also any all each its it's our out has have had been being there their
 they them these those what which who how why where while about over under more most such very just may
 might""".split()
)


@dataclass(frozen=True)
class Proposal:
    """Where a lesson should anchor: `section` (a slug), `confidence` (the margin of its score over the
    runner-up's; 1.0 when it is the only candidate), `alternatives` ((slug, score), ...) best first, the proposal
    included, at most `k`; `confident` says whether `confidence` reaches the threshold it was judged by."""

    section: str
    confidence: float
    alternatives: tuple[tuple[str, float], ...]
    threshold: float = SHIPPED.anchor_confidence

    @property
    def confident(self) -> bool:
        return self.confidence >= self.threshold

    def to_dict(self) -> dict:
        return {
            "section": self.section,
            "confidence": round(self.confidence, 4),
            "threshold": self.threshold,
            "confident": self.confident,
            "alternatives": [{"section": s, "score": round(v, 4)} for s, v in self.alternatives],
        }


def candidates(sections: Sequence[Section]) -> list[Section]:
    """The sections a lesson may anchor on, in body order: all but an empty `_preamble` or `_body` (a headingless
    body's `_body` included when it has text)."""
    return [s for s in sections if s.text.strip() and not (s.slug == PREAMBLE and not s.body_text.strip())]


def _words(text: str) -> list[str]:
    return [w for w in (m.group().lower() for m in _WORD.finditer(text)) if w not in _STOP]


def _section_text(s: Section) -> str:
    return f"{s.heading}\n{s.body_text}" if s.heading else s.body_text


def _bm25(query: list[str], docs: list[list[str]]) -> list[float]:
    n = len(docs)
    avg = sum(map(len, docs)) / n or 1.0
    df = Counter(w for d in docs for w in set(d))
    out = []
    for d in docs:
        tf = Counter(d)
        score = 0.0
        for w in set(query):
            if tf[w]:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                score += idf * tf[w] * (BM25_K1 + 1) / (tf[w] + BM25_K1 * (1 - BM25_B + BM25_B * len(d) / avg))
        out.append(score)
    return out


def _lines(s: Section) -> list[str]:
    return [ln.strip() for ln in s.body_text.splitlines() if len(_words(ln)) >= 2]


def parts(sections: Sequence[Section], text: str, *, goal: str | None = None) -> list[dict[str, float]]:
    """The parts of every candidate's score (`candidates(sections)`, in order), each in [0, 1]."""
    cands = candidates(sections)
    if not cands:
        return []
    query = f"{text}\n{goal}" if goal else text
    docs = [_words(s.heading) * 2 + _words(s.body_text) for s in cands]  # a heading word counts twice
    lexical = _bm25(_words(query), docs)
    top = max(lexical)
    lines = [_lines(s) for s in cands]
    unique = list(
        dict.fromkeys(
            [
                query,
                *(_section_text(s) for s in cands),
                *(s.heading for s in cands if s.heading),
                *(ln for ls in lines for ln in ls),
            ]
        )
    )
    at = {t: i for i, t in enumerate(unique)}
    sims = _sims(unique)
    size = [math.log1p(len(d)) for d in docs]
    big = max(size) or 1.0
    return [
        {
            "lexical": lexical[i] / top if top > 0 else 0.0,
            "body": max(float(sims[at[_section_text(s)]]), 0.0),
            "heading": max(float(sims[at[s.heading]]), 0.0) if s.heading else 0.0,
            "nearest": max((float(sims[at[ln]]) for ln in lines[i]), default=0.0),
            "size": size[i] / big,
        }
        for i, s in enumerate(cands)
    ]


def _sims(texts: list[str]):
    """Exact cosine of `texts[0]` with every text (itself included)."""
    import numpy as np  # imported on use, as `cosines` does

    vectors = np.nan_to_num(static_embedder().encode(texts))  # a text of no tokens embeds as NaN: score it 0
    return cosines(vectors[:1], vectors)[0]


def _rank(
    slugs: Sequence[str], scored: Sequence[Mapping[str, float]], weights: Mapping[str, float], k: int, threshold: float
) -> Proposal:
    scale = sum(weights.values()) or 1.0
    totals = [sum(weights.get(p, 0.0) * row[p] for p in PARTS) / scale for row in scored]
    order = sorted(range(len(slugs)), key=lambda i: (-totals[i], i))  # ties: the earlier section
    margin = totals[order[0]] - totals[order[1]] if len(order) > 1 else 1.0
    return Proposal(slugs[order[0]], margin, tuple((slugs[i], totals[i]) for i in order[:k]), threshold)


def propose(
    sections: Sequence[Section] | str,
    text: str,
    *,
    goal: str | None = None,
    k: int = 3,
    weights: Mapping[str, float] | None = None,
    threshold: float = SHIPPED.anchor_confidence,
) -> Proposal:
    """The section `text` (a lesson: its body, trigger or example, as one string) most likely belongs in, among
    `sections` (a `parse` result, or a skill body), with the `goal` or turn that taught it when there is one.
    `weights` other than `WEIGHTS` are for studies. `ValueError` when the body has no candidate at all."""
    if isinstance(sections, str):
        sections = parse(sections)
    cands = candidates(sections)
    if not cands:
        raise ValueError("no section to anchor on: the body is empty")
    return _rank([s.slug for s in cands], parts(sections, text, goal=goal), weights or WEIGHTS, k, threshold)


def lesson_text(kind: str, payload: Any) -> str:
    """The words of a lesson's payload that say what it is about (every string in it, keys in order)."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif value is not None and not isinstance(value, bool):
            out.append(str(value))

    walk(payload)
    return "\n".join(out) or kind


def learn_anchored(
    store: "Store",
    skill: "Skill",
    kind: str,
    payload: Any,
    *,
    provenance: "Provenance | str | Mapping | None",
    goal: str | None = None,
    threshold: float = SHIPPED.anchor_confidence,
    **kwargs,
) -> tuple[Proposal, WriteResult | None]:
    """`gates.learn` with the section proposed: when the proposal is confident (`confidence >= threshold`), the
    lesson is learned there (through `learn`, the one write path) and its result returned with the proposal;
    otherwise nothing is written and the result is None — ask a person to pick from `proposal.alternatives`.
    `goal` is the goal or turn that taught the lesson, where there is one. Other keywords go to `learn`."""
    proposal = propose(skill.body, lesson_text(kind, payload), goal=goal, threshold=threshold)
    if not proposal.confident:
        return proposal, None
    return proposal, learn(store, skill, kind, payload, section=proposal.section, provenance=provenance, **kwargs)
