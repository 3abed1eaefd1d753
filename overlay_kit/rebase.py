"""What happens to deltas when their authored base changes, under named policies.

A base update is an `Update(old, new)` of two section lists (`anchor.parse`). A policy turns it into a
`Plan`: one `Decision` per old section — `clean` (same text, attaches), `stale` (same section, changed
text: still applies, flagged), or `orphaned` (kept, not applied, surfaced). An orphan may carry a
re-anchor `Proposal`; a proposal is never applied until a person confirms it.

| policy       | clean / stale                                 | orphan proposals                              |
|--------------|-----------------------------------------------|-----------------------------------------------|
| `orphan-all` | none: any body change orphans everything (v1) | none                                          |
| `section`    | section identity (below)                      | none                                          |
| `fuzzy`      | as `section`                                  | quote + prefix/suffix context (rapidfuzz)     |
| `embedding`  | as `section`                                  | cosine of section embeddings                  |

Section identity, designed so that a policy never attaches a delta to a different section:

1. **Exact.** An old section whose digest occurs exactly once in the old body and once in the new one is
   the same text: `clean`, re-keyed to the new slug if numbering moved it (`notes-1` → `notes-2`).
2. **Same heading.** Otherwise an old and a new section are the same section only if their heading key
   (the un-numbered slug) pairs them *unambiguously* — one old and one new with that key, either in the
   whole document or between the same two exact matches (patience-diff style) — *and* their bodies still
   share most of their words (word-level Indel similarity ≥ `min_similarity`). Then `stale`.
   A bare "same slug" is not enough: inserting a new "Notes" above an old one renumbers `notes` →
   `notes-1`, and a same-slug match would silently attach the old lesson to the new section.
3. **Renumbered.** A heading that changed only in its numbers ("Step 5: Verify" → "Step 4: Verify") over a
   byte-identical body, that pair unique on both sides, is the same step: `stale` (flagged, re-keyed) — one
   deleted step no longer orphans every step after it. Any other heading change is a rename: `orphaned`,
   with a proposal under `fuzzy` / `embedding`.
4. Everything else is `orphaned`.

A `stale` section flags every lesson on it (shipped: `SHIPPED.stale_touch` off, set by notebook 10's rule
10_stale_touch). With `stale_touch=True` it flags only the lessons its edit touches (`touch.touches`: the section
rewritten, or a word of the lesson in a changed line); a lesson it did not touch, current before the update, is
re-keyed clean with the audit note "section changed, but not what this lesson refers to". The plan's per-section
decisions are the same either way.

Frontmatter-only updates (body byte-identical) change nothing for body anchors. A permission narrowing in the
new base always wins, whatever the body policy said (`narrowing` re-runs the write-path permission gates
against the new base): a capability-bearing base orphans every delta, a tool-hint naming a tool the new base
no longer declares is orphaned.

`apply(store, new_skill, policy, old=previous_skill)` runs all of this against the store atomically;
`reanchor` (per-delta approve, e.g. of a proposal), `reapprove` (bulk) and `discard` are the review actions;
`confirm_stale` is a stale lesson's "still valid" (its anchor re-digested to the current section, the flag cleared).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Any, Literal, Protocol, runtime_checkable

from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

from .anchor import BODY, PREAMBLE, Anchor, Section, digest, locate, parse, slugify
from .common import cosines
from .defaults import SHIPPED
from .display import rebase_html, rebase_text
from .grammar import Delta
from .store import StoreError, Undo
from .touch import touches

__all__ = [
    "POLICIES",
    "Decision",
    "DeltaOutcome",
    "EmbeddingPolicy",
    "FuzzyPolicy",
    "NotStaleError",
    "OrphanAllPolicy",
    "Plan",
    "Policy",
    "Proposal",
    "RebaseResult",
    "SectionPolicy",
    "Update",
    "apply",
    "confirm_stale",
    "discard",
    "get_policy",
    "narrowing",
    "plan",
    "plan_update",
    "reanchor",
    "reapprove",
    "rebase_deltas",
    "section_key",
    "similarity",
    "stale",
]

State = Literal["clean", "stale", "orphaned"]
_WORD = re.compile(r"\w+")


# ------------------------------------------------------------------------------------------ values


@dataclass(frozen=True)
class Proposal:
    """A suggested new home for an orphan. Never applied without a person's confirmation."""

    section: str  # slug in the new body
    score: float  # 0..1, higher is more alike
    method: str  # "fuzzy" | "embedding"

    def to_dict(self) -> dict:
        return {"section": self.section, "score": round(self.score, 4), "method": self.method}


@dataclass(frozen=True)
class Decision:
    """The fate of one old section under one policy."""

    section: str  # slug in the old body
    state: State
    target: str | None = None  # slug in the new body the section's deltas attach to (clean / stale)
    proposal: Proposal | None = None  # orphans only
    reason: str = ""

    @property
    def attached(self) -> bool:
        return self.state != "orphaned"

    def to_dict(self) -> dict:
        return {
            "section": self.section,
            "state": self.state,
            "target": self.target,
            "proposal": None if self.proposal is None else self.proposal.to_dict(),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Plan:
    """Every old section's decision under one policy. `for_anchor` maps a delta's anchor onto it."""

    policy: str
    body_changed: bool
    decisions: tuple[Decision, ...]
    blank: frozenset[str] = frozenset()  # old sections with no text (an empty `_preamble`): they carry no delta

    @cached_property
    def by_section(self) -> Mapping[str, Decision]:
        return {d.section: d for d in self.decisions}

    def for_anchor(self, anchor: Anchor, old: Sequence[Section]) -> Decision:
        """An anchor written against an earlier text of its section is at best `stale`."""
        d = self.by_section.get(anchor.section)
        if d is None:
            return Decision(anchor.section, "orphaned", reason="anchor section is not in the old base")
        here = next(s for s in old if s.slug == anchor.section)
        if d.state == "clean" and here.digest != anchor.digest:
            return replace(
                d,
                state="stale",
                reason="section unchanged by this update, but it had changed since the delta was written",
            )
        return d

    def counts(self) -> Counter:
        """Decisions per state (and proposals), over the sections that can carry a delta."""
        live = [d for d in self.decisions if d.section not in self.blank]
        return Counter(d.state for d in live) + Counter("proposed" for d in live if d.proposal is not None)


# ------------------------------------------------------------------------------------------ update


def section_key(section: Section) -> str:
    """Heading identity without duplicate numbering: `Notes`, `notes!` → `notes`; lead text → ''."""
    return "" if section.slug in (PREAMBLE, BODY) else slugify(section.heading)


_DIGITS = re.compile(r"\d+")


def _masked(section: Section) -> str:
    """The heading key with its numbers masked: "Step 5: Verify" and "Step 4: Verify" agree."""
    return _DIGITS.sub("#", section_key(section))


@lru_cache(maxsize=4096)
def _collapsed(text: str) -> str:
    """`text` with whitespace runs collapsed to one space, made once per text: consecutive updates share
    their middle version's sections (the parse cache hands back the same objects), so each is flattened once."""
    return " ".join(text.split())


@lru_cache(maxsize=4096)
def _body_digest(body_text: str) -> str:
    return digest(body_text)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def similarity(a: str, b: str) -> float:
    """Word-level Indel similarity (1 − normalized LCS distance) of two texts; two empty texts → 1."""
    wa, wb = _words(a), _words(b)
    if not wa and not wb:
        return 1.0
    return float(Indel.normalized_similarity(wa, wb))


def _lis(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest chain of (old, new) index pairs increasing in both (pairs come sorted by old index)."""
    best: list[list[tuple[int, int]]] = []
    for pair in pairs:
        chain: list[tuple[int, int]] = []
        for c in best:  # the first longest chain this pair extends
            if len(c) > len(chain) and c[-1][1] < pair[1]:
                chain = c
        best.append(chain + [pair])
    return max(best, key=len, default=[])


@dataclass(frozen=True)
class Update:
    """A base update: the old and new body as sections. Policies share its cached matching."""

    old: tuple[Section, ...]
    new: tuple[Section, ...]

    @classmethod
    def of(cls, old_body: str, new_body: str) -> "Update":
        return cls(parse(old_body), parse(new_body))

    @cached_property
    def body_changed(self) -> bool:
        return "".join(s.text for s in self.old) != "".join(s.text for s in self.new)

    @cached_property
    def blank(self) -> frozenset[str]:
        """Old sections with no text (an empty `_preamble`): they carry no delta."""
        return frozenset(s.slug for s in self.old if not s.text.strip())

    @cached_property
    def new_by_slug(self) -> Mapping[str, Section]:
        return {s.slug: s for s in self.new}

    @cached_property
    def flat(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(old, new) section bodies with whitespace runs collapsed: what the proposers compare, made once."""
        return tuple(tuple(_collapsed(s.body_text) for s in side) for side in (self.old, self.new))

    @cached_property
    def contexts(self) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
        """(old, new) `_context` of every section, made once per update."""
        return tuple(tuple(_context(side, k) for k in range(len(side))) for side in (self.old, self.new))

    @cached_property
    def exact(self) -> dict[int, int]:
        """old index → new index for digests unique on both sides."""
        old_n, new_n = Counter(s.digest for s in self.old), Counter(s.digest for s in self.new)
        where = {s.digest: j for j, s in enumerate(self.new)}
        return {i: where[s.digest] for i, s in enumerate(self.old) if old_n[s.digest] == 1 == new_n[s.digest]}

    @cached_property
    def renumbered(self) -> dict[int, int]:
        """old index → new index for a heading that changed only in its numbers ("Step 5: X" → "Step 4: X")
        over a byte-identical body, the pair unique on both sides among sections not matched exactly."""
        taken = set(self.exact.values())
        olds = Counter((_masked(s), _body_digest(s.body_text)) for i, s in enumerate(self.old) if i not in self.exact)
        news = {}
        for j, s in enumerate(self.new):
            if j not in taken:
                news.setdefault((_masked(s), _body_digest(s.body_text)), []).append(j)
        out = {}
        for i, s in enumerate(self.old):
            if i in self.exact:
                continue
            key = (_masked(s), _body_digest(s.body_text))
            if (
                s.level
                and _DIGITS.search(s.heading)
                and olds[key] == 1
                and len(news.get(key, ())) == 1
                and s.body_text.strip()
            ):
                out[i] = news[key][0]
        return out

    def same_heading(self, min_similarity: float) -> dict[int, tuple[int, float]]:
        """old index → (new index, body similarity) for unambiguous same-heading pairs that pass the gate."""
        cache = self.__dict__.setdefault("_same_heading_cache", {})
        if min_similarity not in cache:
            cache[min_similarity] = self._same_heading(min_similarity)
        return cache[min_similarity]

    def _same_heading(self, min_similarity: float) -> dict[int, tuple[int, float]]:
        exact = self.exact
        taken = set(exact.values()) | set(self.renumbered.values())
        old_free = [i for i in range(len(self.old)) if i not in exact and i not in self.renumbered]
        new_free = [j for j in range(len(self.new)) if j not in taken]
        # Gaps between consecutive exact matches that keep their order.
        fences = _lis(sorted(exact.items()))
        olds, news = [a for a, _ in fences], [b for _, b in fences]  # both increasing along the chain
        old_gap = {i: bisect_left(olds, i) for i in old_free}
        new_gap = {j: bisect_left(news, j) for j in new_free}

        def grouped(scope: Callable[[int, bool], Any]) -> dict[Any, tuple[list[int], list[int]]]:
            out: dict[Any, tuple[list[int], list[int]]] = {}
            for i in old_free:
                out.setdefault(scope(i, True), ([], []))[0].append(i)
            for j in new_free:
                out.setdefault(scope(j, False), ([], []))[1].append(j)
            return out

        def key(k: int, is_old: bool) -> str:
            return section_key((self.old if is_old else self.new)[k])

        pairs: dict[int, int] = {}
        for scope in (lambda k, o: key(k, o), lambda k, o: (key(k, o), (old_gap if o else new_gap)[k])):
            for olds, news in grouped(scope).values():
                if len(olds) == 1 and len(news) == 1:
                    pairs.setdefault(olds[0], news[0])
        out = {}
        for i, j in pairs.items():
            score = similarity(self.old[i].body_text, self.new[j].body_text)
            if score >= min_similarity:
                out[i] = (j, score)
        return out


# ---------------------------------------------------------------------------------------- policies


@runtime_checkable
class Policy(Protocol):
    """One rebase strategy, chosen by name. `decide` returns a decision for every old section."""

    name: str

    def decide(self, update: Update) -> tuple[Decision, ...]: ...


def _unchanged(update: Update) -> tuple[Decision, ...]:
    return tuple(Decision(s.slug, "clean", s.slug, reason="body unchanged") for s in update.old)


@dataclass(frozen=True)
class OrphanAllPolicy:
    """v1: any change to the body orphans every delta on it; nothing is matched, nothing proposed."""

    name: str = "orphan-all"

    def decide(self, update: Update) -> tuple[Decision, ...]:
        if not update.body_changed:
            return _unchanged(update)
        return tuple(
            Decision(s.slug, "orphaned", reason="base body changed (v1 orphans every delta)") for s in update.old
        )


@dataclass(frozen=True)
class SectionPolicy:
    """Section identity: exact text → clean; a renumbered heading over the same body, or an unambiguous
    same heading over a similar body → stale."""

    min_similarity: float = 0.5
    renumbering: bool = True  # "Step 5: X" → "Step 4: X" over a byte-identical, unique body is the same step
    name: str = "section"

    def decide(self, update: Update) -> tuple[Decision, ...]:
        if not update.body_changed:
            return _unchanged(update)
        # `fuzzy` and `embedding` extend this policy: the section decisions are made once per update and
        # parameters, and each proposer only adds proposals to the orphans
        cache = update.__dict__.setdefault("_section_decisions", {})
        key = (type(self)._identify, type(self)._why_orphan, self.min_similarity, self.renumbering)
        if key not in cache:
            cache[key] = self._identify(update)
        return tuple(self.propose(update, list(cache[key])))

    def _identify(self, update: Update) -> tuple[Decision, ...]:
        exact, heading = update.exact, update.same_heading(self.min_similarity)
        renumbered = update.renumbered if self.renumbering else {}
        out = []
        for i, s in enumerate(update.old):
            if i in exact:
                t = update.new[exact[i]].slug
                why = "same text" if t == s.slug else f"same text, re-keyed {s.slug} → {t}"
                out.append(Decision(s.slug, "clean", t, reason=why))
            elif i in renumbered:
                t = update.new[renumbered[i]]
                out.append(
                    Decision(
                        s.slug, "stale", t.slug, reason=f"renumbered heading {s.heading!r} → {t.heading!r}, same body"
                    )
                )
            elif i in heading:
                j, score = heading[i]
                out.append(
                    Decision(
                        s.slug,
                        "stale",
                        update.new[j].slug,
                        reason=f"same section, text changed (body similarity {score:.2f})",
                    )
                )
            else:
                out.append(Decision(s.slug, "orphaned", reason=self._why_orphan(update, s)))
        return tuple(out)

    @staticmethod
    def _why_orphan(update: Update, s: Section) -> str:
        if s.slug in update.new_by_slug:
            return "heading still present but not provably the same section (ambiguous or rewritten)"
        return "section gone"

    def propose(self, update: Update, decisions: list[Decision]) -> list[Decision]:
        """Add proposals to orphans; the plain section policy proposes nothing."""
        return decisions


def _context(sections: Sequence[Section], i: int, width: int = 80) -> tuple[str, str]:
    before = _collapsed(sections[i - 1].text)[-width:] if i > 0 else ""
    after = _collapsed(sections[i + 1].text)[:width] if i + 1 < len(sections) else ""
    return before, after


_SLACK = 1e-9  # float rounding room in the fuzzy proposer's upper bounds


def _ratio(a: str, b: str, empty: float = 0.0) -> float:
    """Similarity in [0, 1]. Two empty bodies or headings are no evidence (0), not a perfect match (`fuzz.ratio`
    says 100); for context, two empty neighbours (both at the document's start or end) are (`empty=1`)."""
    return fuzz.ratio(a, b) / 100.0 if a or b else empty


@dataclass(frozen=True)
class FuzzyPolicy(SectionPolicy):
    """`section`, plus a proposal for each orphan scored like robust web-annotation anchoring:
    the quote (the old section body; a containment score lets a merged-away body find its host), the
    prefix/suffix context (text around it), and the heading."""

    min_score: float = 0.6
    weights: tuple[float, float, float] = (0.7, 0.2, 0.1)  # quote, context, heading
    name: str = "fuzzy"
    exhaustive: bool = False  # score every (orphan, new section) pair: the oracle of the bounded search

    def score(self, update: Update, i: int, j: int) -> float:
        o, n = update.old[i], update.new[j]
        qa, qb = update.flat[0][i], update.flat[1][j]
        # Two heading-only sections: their headings are the only text to compare (two empty bodies are no
        # evidence — `fuzz.ratio("", "")` is 100 — so `_preamble` or any heading-only section is not a match)
        quote = _ratio(qa, qb) if qa or qb else _ratio(o.heading.casefold(), n.heading.casefold())
        if 40 <= len(qa) < len(qb):  # the quote may now sit inside a longer section (merge)
            quote = max(quote, fuzz.partial_ratio(qa, qb) / 100.0 * (0.9 if len(qa) < 0.8 * len(qb) else 1.0))
        (pa, sa), (pb, sb) = update.contexts[0][i], update.contexts[1][j]
        context = (_ratio(pa, pb, 1.0) + _ratio(sa, sb, 1.0)) / 2
        wq, wc, wh = self.weights
        return wq * quote + wc * context + wh * _ratio(o.heading.casefold(), n.heading.casefold())

    def propose(self, update: Update, decisions: list[Decision]) -> list[Decision]:
        out = []
        for i, d in enumerate(decisions):
            if d.state == "orphaned" and update.new:
                bounded = not self.exhaustive and min(self.weights) >= 0  # the bounds need weights >= 0
                best = self._bounded(update, i) if bounded else self._exhaustive(update, i)
                if best is not None and best[1] >= self.min_score:
                    d = replace(d, proposal=Proposal(update.new[best[0]].slug, best[1], self.name))
            out.append(d)
        return out

    def _exhaustive(self, update: Update, i: int) -> tuple[int, float]:
        """The best (new index, score) over every new section (ties: the earlier section): the oracle."""
        return max(((j, self.score(update, i, j)) for j in range(len(update.new))), key=lambda p: (p[1], -p[0]))

    def _bounded(self, update: Update, i: int) -> tuple[int, float] | None:
        """`_exhaustive`'s answer wherever it matters (a winner ≥ `min_score`), scoring exactly only the new
        sections whose upper bound can still win: `score` is cheap except the merge containment
        (`partial_ratio`, the costly part on a long quote), bounded here by the quote's longest common subsequence with
        the whole new body. None when no section can reach `min_score`."""
        o, qa = update.old[i], update.flat[0][i]
        (pa, sa), head = update.contexts[0][i], o.heading.casefold()
        wq, wc, wh = self.weights
        bounds = []
        for j, n in enumerate(update.new):
            qb, (pb, sb) = update.flat[1][j], update.contexts[1][j]
            heading = _ratio(head, n.heading.casefold())
            quote = _ratio(qa, qb) if qa or qb else heading
            if 40 <= len(qa) < len(qb):
                # every window of qb holds at most the LCS of qa and qb; a window of w <= len(qa) characters
                # scores 2·lcs(qa, window) / (len(qa) + w) <= 2L / (len(qa) + L)
                lcs = (len(qa) + len(qb) - Indel.distance(qa, qb)) // 2
                containment = 2 * lcs / (len(qa) + lcs) * (0.9 if len(qa) < 0.8 * len(qb) else 1.0)
                quote = max(quote, min(1.0, containment + _SLACK))
            context = (_ratio(pa, pb, 1.0) + _ratio(sa, sb, 1.0)) / 2
            bounds.append((wq * quote + wc * context + wh * heading + _SLACK, j))
        bounds.sort(key=lambda b: (-b[0], b[1]))
        best: tuple[int, float] | None = None
        for bound, j in bounds:
            if bound < self.min_score or (best is not None and bound < best[1]):
                break
            score = self.score(update, i, j)
            if best is None or score > best[1] or (score == best[1] and j < best[0]):
                best = (j, score)
        return best


class _Cache:
    """A small text → vector memo so that unchanged sections are embedded once per run."""

    def __init__(self, embedder: Any, size: int = 50_000):
        self.embedder, self.size, self.vectors = embedder, size, {}

    def __call__(self, texts: list[str]):
        import numpy as np

        self.fill(texts)
        return np.stack([self.vectors[t] for t in texts])

    def fill(self, texts: list[str]) -> None:
        """Encode the texts not seen yet, in one call."""
        import numpy as np

        # shortest first: a batching embedder pads each batch to its longest text (each text's vector is the
        # same whatever its batch)
        missing = sorted(dict.fromkeys(t for t in texts if t not in self.vectors), key=len)
        if missing:
            if len(self.vectors) + len(missing) > self.size:
                self.vectors.clear()
            self.vectors.update(zip(missing, np.asarray(self.embedder.encode(missing), dtype="float32")))


def _default_embedder():
    """The bundled static embedder through numpy (`retrieval.static_embedder`): the same vectors as
    `load_embedder()` without importing torch and sentence-transformers (seconds per CLI call)."""
    try:
        from .retrieval import static_embedder
    except ImportError as exc:  # the retrieval module ships the default embedder
        raise RuntimeError(
            "the embedding policy needs an embedder: pass embedder=… (anything with .encode(list[str]) -> vectors)"
        ) from exc
    return static_embedder()


@dataclass(frozen=True)
class EmbeddingPolicy(SectionPolicy):
    """`section`, plus a proposal for each orphan: the new section whose embedding (heading + body) is
    nearest by cosine, if at least `min_score`. `embedder`: anything with `.encode(list[str]) -> vectors`
    (a sentence-transformers model, `retrieval.TextEmbedder`); default `overlay_kit.retrieval.static_embedder()`
    (the bundled offline static embedder through numpy: no torch import), built on first use."""

    embedder: Any = None
    min_score: float = 0.85
    name: str = "embedding"
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def _cache(self) -> _Cache:
        if "cache" not in self._memo:
            self._memo["cache"] = _Cache(self.embedder if self.embedder is not None else _default_embedder())
        return self._memo["cache"]

    def _encode(self, texts: list[str]):
        return self._cache(texts)

    @staticmethod
    def _text(s: Section) -> str:
        return (s.heading + "\n" + _collapsed(s.body_text)).strip() or s.slug

    def propose(self, update: Update, decisions: list[Decision]) -> list[Decision]:
        orphans = [i for i, d in enumerate(decisions) if d.state == "orphaned"]
        if not orphans or not update.new:
            return decisions
        olds, news = [self._text(update.old[i]) for i in orphans], [self._text(s) for s in update.new]
        self._cache.fill(olds + news)  # one encoder call per update
        sims = cosines(self._encode(olds), self._encode(news))  # the same bits on every CPU
        out = list(decisions)
        for row, i in enumerate(orphans):
            j = int(sims[row].argmax())  # ties: the first new section
            score = float(sims[row, j])
            if score >= self.min_score:
                out[i] = replace(out[i], proposal=Proposal(update.new[j].slug, score, self.name))
        return out


POLICIES: Mapping[str, Callable[..., Policy]] = {
    "orphan-all": OrphanAllPolicy,
    "section": SectionPolicy,
    "fuzzy": FuzzyPolicy,
    "embedding": EmbeddingPolicy,
}


def get_policy(policy: str | Policy, **params) -> Policy:
    """A policy by name (parameters passed through), or a policy object as is."""
    if not isinstance(policy, str):
        return policy
    try:
        return POLICIES[policy](**params)
    except KeyError:
        raise ValueError(f"unknown rebase policy {policy!r}; policies are {', '.join(POLICIES)}") from None


def plan(
    old_body: str | Sequence[Section], new_body: str | Sequence[Section], policy: str | Policy = SHIPPED.rebase_policy
) -> Plan:
    """Decide the fate of every section of `old_body` when the base becomes `new_body`."""
    old = parse(old_body) if isinstance(old_body, str) else tuple(old_body)
    new = parse(new_body) if isinstance(new_body, str) else tuple(new_body)
    return plan_update(Update(old, new), policy)


def plan_update(update: Update, policy: str | Policy) -> Plan:
    p = get_policy(policy)
    return Plan(p.name, update.body_changed, tuple(p.decide(update)), update.blank)


# ------------------------------------------------------------------------------ deltas and narrowing


PERMISSION_GATES = ("capability_bearing", "no_new_tool", "no_widening", "write_path_tool")


def narrowing(delta: Delta, new_skill) -> str | None:
    """Why the new base forbids this delta, or None: the write-path permission gates re-run against the new
    base (a capability-bearing base, a tool it no longer declares, a permission it no longer grants).
    A permission narrowing in the new base always wins over any body policy."""
    from . import gates

    p = gates.Submission(
        new_skill,
        delta.kind,
        dict(delta.payload),
        delta.anchor.section,
        delta.provenance,
        delta.scope,
        (),
        False,
        True,
        False,
        gates.GateSettings(),
    )
    for rule in gates.RULES:
        if rule.name in PERMISSION_GATES:
            verdict = rule.check(p)
            if isinstance(verdict, gates.Verdict) and verdict.outcome == "refused":
                return f"{rule.name}: {verdict.message}"
    return None


@dataclass(frozen=True)
class DeltaOutcome:
    """One delta after a rebase: its decision, and the anchor it should carry from now on."""

    delta: Delta
    decision: Decision
    anchor: Anchor  # re-keyed for clean/stale (stale keeps its old digest, so it stays flagged)
    narrowed: str | None = None

    @property
    def state(self) -> State:
        return "orphaned" if self.narrowed else self.decision.state

    def to_dict(self) -> dict:
        return {
            "id": self.delta.id,
            "kind": self.delta.kind,
            "state": self.state,
            "anchor": self.anchor.to_dict(),
            "decision": self.decision.to_dict(),
            "narrowed": self.narrowed,
        }


def _untouched(d: Delta, decision: Decision, old: Sequence[Section], new: Sequence[Section]) -> Decision:
    """A `stale` decision narrowed to what the lesson refers to (`touch.touches`): `clean` when the lesson was
    current against the old section (its digest) and the edit did not touch it; else the decision as it was,
    with what the edit touched."""
    here = next(s for s in old if s.slug == d.anchor.section)
    if here.digest != d.anchor.digest:  # flagged since before this update: stays flagged
        return decision
    there = next(s for s in new if s.slug == decision.target)
    t = touches(d.text, here.text, there.text)
    if t:
        return replace(decision, reason=f"{decision.reason}; {t.reason}")
    return replace(
        decision, state="clean", reason=f"section changed, but not what this lesson refers to ({decision.reason})"
    )


def rebase_deltas(
    deltas: Iterable[Delta],
    old_body: str,
    new_skill,
    policy: str | Policy = SHIPPED.rebase_policy,
    *,
    old_skill=None,
    stale_touch: bool = SHIPPED.stale_touch,
) -> tuple[DeltaOutcome, ...]:
    """Each delta's fate when the base body goes from `old_body` to `new_skill.body`.

    Without the old body (`old_body=None`) only exact text can be trusted: a delta whose anchored text is
    found once in the new body stays clean, every other delta is orphaned (no proposal is possible).
    `stale_touch`: a stale delta the edit did not touch (`touch.touches`) is re-keyed clean (`_untouched`);
    False flags every delta on a changed section.
    """
    new_sections = parse(new_skill.body)
    if old_body is None:
        the_plan, old = None, None
    else:
        old = parse(old_body)
        the_plan = plan_update(Update(old, new_sections), policy)
    counts = Counter(s.digest for s in new_sections)
    out = []
    for d in deltas:
        if the_plan is not None:
            decision = the_plan.for_anchor(d.anchor, old)
            if stale_touch and decision.state == "stale":
                decision = _untouched(d, decision, old, new_sections)
        else:
            hit = next((s for s in new_sections if s.digest == d.anchor.digest), None)
            decision = (
                Decision(d.anchor.section, "clean", hit.slug, reason="same text (old body unknown)")
                if hit is not None and counts[hit.digest] == 1
                else Decision(d.anchor.section, "orphaned", reason="text not found and old body unknown")
            )
        anchor = d.anchor
        if decision.attached:
            digest = (
                d.anchor.digest
                if decision.state == "stale"
                else next(s.digest for s in new_sections if s.slug == decision.target)
            )
            version = d.anchor.base_version if decision.state == "stale" else new_skill.version
            anchor = Anchor(decision.target, digest, version)
        out.append(DeltaOutcome(d, decision, anchor, narrowing(d, new_skill)))
    return tuple(out)


# ---------------------------------------------------------------------------------- store integration

REBASE_WHO = "rebase"
_UNSETTLED = ("staged", "active", "quarantined")  # live deltas a base update can move


@dataclass(frozen=True)
class RebaseResult:
    """What `apply` did: the base change the store saw, every live delta's fate, and undo handles."""

    policy: str
    change: Any  # store.BaseChange
    outcomes: tuple[DeltaOutcome, ...]
    undo: tuple[Any, ...] = ()  # store.Undo handles of the status changes

    @property
    def review(self) -> tuple[DeltaOutcome, ...]:
        """What a person must look at: stale (flagged) and orphaned deltas — shown once, as one list."""
        return tuple(o for o in self.outcomes if o.state != "clean")

    def counts(self) -> Counter:
        return Counter(o.state for o in self.outcomes)

    def _repr_html_(self) -> str:  # rich display in Jupyter (overlay_kit.display builds plain HTML)
        return rebase_html(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(rebase_text(self))

    def to_dict(self) -> dict:
        return {
            "policy": self.policy,
            "skill": self.change.name,
            "body_changed": _body_changed(self.change),
            "counts": dict(self.counts()),
            "deltas": [o.to_dict() for o in self.outcomes],
        }


def _body_changed(change) -> bool:
    return change.old_digest is not None and change.old_digest != change.new_digest


def _reason(policy: str, o: DeltaOutcome) -> str:
    text = f"rebase ({policy}): {o.narrowed or o.decision.reason}; was on section {o.delta.anchor.section!r}"
    if o.decision.proposal is not None:
        p = o.decision.proposal
        text += f"; proposal: {p.section} ({p.method} {p.score:.2f}), not applied"
    return text


def apply(
    store,
    new_skill,
    policy: str | Policy = SHIPPED.rebase_policy,
    *,
    old=None,
    who: str = REBASE_WHO,
    stale_touch: bool = SHIPPED.stale_touch,
) -> RebaseResult:
    """Register `new_skill` with the store and, if the base changed, move its live deltas — atomically.

    * body unchanged (first sighting, frontmatter-only update): no body anchor moves; only a permission
      narrowing in the new frontmatter can orphan a delta.
    * body changed: the policy decides. `old` (the previous `Skill`) lets section-level policies and proposals
      work; without it — or if its body is not the one the store last registered — only exact text is
      trusted (see `rebase_deltas`). A base now served from a different root orphans everything.
    * orphaned → status `orphaned` (kept, never deleted) with the reason and any proposal in the audit log;
      clean/stale keep their status; a re-keyed anchor is rewritten (stale keeps its old digest, so it stays
      flagged until a person looks: `confirm_stale`). Proposals are never applied here.
    * `stale_touch` (shipped off): on, a delta on a changed section whose edit did not touch what it refers to is
      re-keyed clean, audited "section changed, but not what this lesson refers to" (`touch.touches`).
    """
    p = get_policy(policy)
    undo = []
    with store.transaction():
        change = store.register_base(new_skill)
        live = store.search(new_skill.name, status=_UNSETTLED)
        if change.new or not live:
            return RebaseResult(p.name, change, ())
        if _body_changed(change):
            if change.old_root != change.root:
                p = OrphanAllPolicy()  # never re-attach to a same-named skill from another root
            old_body = old.body if old is not None and old.body_digest == change.old_digest else None
            outcomes = rebase_deltas(live, old_body, new_skill, p, stale_touch=stale_touch)
        else:
            outcomes = tuple(
                DeltaOutcome(
                    d,
                    Decision(d.anchor.section, "clean", d.anchor.section, reason="body unchanged"),
                    d.anchor,
                    narrowing(d, new_skill),
                )
                for d in live
            )
        for o in outcomes:
            if o.state == "orphaned":
                undo.append(store.set_status(o.delta.id, "orphaned", who=who, reason=_reason(p.name, o)))
            elif (o.anchor.section, o.anchor.digest) != (o.delta.anchor.section, o.delta.anchor.digest):
                store.set_anchor(o.delta.id, o.anchor, who=who, reason=_reason(p.name, o))
    return RebaseResult(p.name, change, outcomes, tuple(undo))


def _orphaned_from(store, delta_id: str) -> str:
    """The status a delta had before a rebase orphaned it (from the audit log)."""
    for entry in reversed(store.audit(delta_id)):
        if entry.to_status == "orphaned" and entry.from_status in _UNSETTLED:
            return entry.from_status
    return "staged"


def _restore(store, delta: Delta, who: str, reason: str) -> None:
    """Put an orphan back to what it was. An untrusted active delta needs `approve` (explicit consent)."""
    before = _orphaned_from(store, delta.id)
    if before == "active" and not delta.provenance.trusted:
        store.approve(delta.id, who=who)
    else:
        store.set_status(delta.id, before, who=who, reason=reason)


def reanchor(store, delta_id: str, new_skill, section: str, *, who: str = "user") -> Delta:
    """Per-delta approve: attach an orphan to `section` of the current base (a proposal, or any section the
    person picks) at that section's current text, then restore the status it had before it was orphaned."""
    with store.transaction():
        d = store.get(delta_id)
        if d.status != "orphaned":
            raise StoreError(f"delta {delta_id} is {d.status}, not orphaned")
        if d.skill != new_skill.name:
            raise StoreError(f"delta {delta_id} belongs to {d.skill}, not {new_skill.name}")
        why = narrowing(d, new_skill)
        if why:
            raise StoreError(f"delta {delta_id} cannot return: {why}")
        target = next((s for s in parse(new_skill.body) if s.slug == section), None)
        if target is None:
            raise StoreError(f"{new_skill.name} has no section {section!r}")
        store.set_anchor(
            d.id,
            Anchor(section, target.digest, new_skill.version),
            who=who,
            reason=f"re-anchored by {who} from {d.anchor.section!r} to {section!r}",
        )
        _restore(store, d, who, f"re-approved by {who} on section {section!r}")
    return store.get(delta_id)


def reapprove(store, new_skill, ids: Iterable[str] | None = None, *, who: str = "user") -> tuple[str, ...]:
    """Bulk re-approve: orphans of `new_skill` (all, or `ids`) return to the status they had before the
    rebase (active → active, staged → staged, quarantined → quarantined: bulk never releases quarantine).
    Anchors are not moved (moving one is `reanchor`, one delta at a time): the resolver then applies each
    where its anchor still resolves — clean under its section, stale in the Learned adjustments block with a
    note — and keeps one whose section is gone out, with a note. A narrowed delta stays orphaned."""
    done = []
    with store.transaction():
        wanted = store.search(new_skill.name, status="orphaned") if ids is None else [store.get(i) for i in ids]
        for d in wanted:
            if d.status != "orphaned" or d.skill != new_skill.name:
                raise StoreError(f"delta {d.id} is not an orphan of {new_skill.name}")
            if narrowing(d, new_skill):
                continue
            _restore(store, d, who, f"bulk re-approved by {who}")
            done.append(d.id)
    return tuple(done)


class NotStaleError(StoreError):
    """A delta named for `confirm_stale` that is not stale against the skill's current body (names it and why)."""


def _not_stale(d: Delta, skill, sections: Sequence[Section]) -> str | None:
    """Why `d` is not flagged stale against `skill`'s current body, or None when it is: a live delta of this
    skill and root whose section is still there with changed text (`anchor.locate`)."""
    if d.skill != skill.name:
        return f"belongs to {d.skill}, not {skill.name}"
    if d.status not in _UNSETTLED:
        return f"is {d.status}"
    if not skill.from_root(d.base_root):
        return f"was written against the {d.base_root!r} root, not {skill.root_key!r}"
    state = locate(d.anchor, sections).state
    return None if state == "stale" else f"is {state} on the current body of {skill.name}"


def stale(skill, deltas: Iterable[Delta]) -> tuple[Delta, ...]:
    """The deltas among `deltas` flagged stale against `skill`'s current body (what `confirm_stale` clears)."""
    sections = parse(skill.body)
    return tuple(d for d in deltas if _not_stale(d, skill, sections) is None)


def confirm_stale(store, skill, ids: Iterable[str] | None = None, *, who: str = "user") -> Undo:
    """The "still valid" confirmation: a person confirms stale lessons against `skill`'s current body, and each
    one's anchor is re-digested to its section's current text and `skill.version` (`Store.set_anchor`, audited),
    so it is clean again. `ids` None: every live stale delta of the skill (one action for all of an update's
    flags); else only those, each of which must be stale (`NotStaleError` naming it, nothing written). One
    transaction; the handle (`Store.combine`) undoes all of it, and the flags return."""
    sections = parse(skill.body)
    with store.transaction():
        if ids is None:
            wanted = stale(skill, store.search(skill.name, status=_UNSETTLED, include_superseded=True))
        else:
            wanted = [store.get(i) for i in dict.fromkeys(ids)]
            for d in wanted:
                why = _not_stale(d, skill, sections)
                if why:
                    raise NotStaleError(
                        f"delta {d.id} {why}: it is not stale, so there is nothing to confirm (nothing was confirmed)"
                    )
        handles = []
        for d in wanted:
            now = locate(d.anchor, sections).section
            handles.append(
                store.set_anchor(
                    d.id,
                    Anchor(d.anchor.section, now.digest, skill.version),
                    who=who,
                    reason=f"confirmed still valid by {who}: section {d.anchor.section!r} changed since it was learned",
                )
            )
        return store.combine("confirm_stale", *handles)


def discard(store, delta_id: str, *, who: str = "user"):
    """Per-delta discard: archive the orphan (never deleted). Returns the store's undo handle."""
    return store.revert(delta_id, who=who)
