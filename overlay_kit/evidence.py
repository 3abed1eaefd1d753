"""Evidence: which deltas were in context, what the user did about it, and what that track record decides.

The design's safety claim — promote on a measured track record, never on a model's judgment — needs
counters that move after adoption, on signals a user produced (seed: "Correction 4"). This module is
the only writer of those counters (through `store.record_outcome`)::

    record_context(store, session, turn, deltas, *, role="context", at=None) -> tuple[str, ...]
    record_signal(store, session, turn, signal, *, rating=None, scope="user", skill=None, section=None,
                  lesson=None, delta_ids=None, at=None) -> Attribution
    review_staged(store, *, min_samples, threshold, wilson, retire_below) -> list[Review]   (defaults: SHIPPED)
    near_duplicates(deltas, *, embedder=None, min_cosine=0.85, min_bigram=0.6) -> list[Cluster]
    propose_umbrella(store, skill, cluster) -> Umbrella;  approve_umbrella(store, umbrella_id) -> Undo
    consolidation_proposer(embedder) -> the `budget.Budget(proposer=...)` hook
    decay(store, *, now, idle) -> DecayPlan

**Outcomes.** `record_context` ledgers which deltas were in context on a (session, turn) — the applied
deltas of an `EffectiveSkill` (role `context`), or a staged lesson the agent offered as a suggestion
(role `suggested`) — and stamps their `last_used_at`. `record_signal` ledgers one user-observable signal
(`SIGNALS`: a correction, an undo, an accepted suggestion, an explicit 1-5 rating) and attributes it to
the deltas in context on that turn (all of them, or those anchored on `section`, or the named
`delta_ids`, which must have been in context). "The tool call did not raise" is never an outcome: such
a signal raises `NotAnOutcome` and nothing is written. A correction carries a *lesson key* (an id such
as `tone=formal`, never message text) so correction non-recurrence can be measured from this log.

**Promotion.** `review_staged` runs `gates.promote` over staged, trusted deltas and logs every
promotion with the counters it read and the outcome-ledger position they covered, so a KPI can recount
them from the ledger; optionally it retires (archives, never deletes) a staged lesson whose track record
is below `retire_below` — a staged lesson was never approved by anyone.

**Consolidation.** Active deltas on the same base (skill, root), scope, anchor section and kind whose
texts are near-identical by *both* embedding cosine and character-bigram Dice form a `Cluster`
(complete linkage: every pair is similar). `propose_umbrella` writes one umbrella lesson through the
gates, always staged (a proposal, never an automatic rewrite); `approve_umbrella` activates it and
supersedes the members in one transaction — members are kept, with lineage.

**Decay.** `last_used_at` is a ranking input (`budget.value_key`: evidence, then last use — the order the
budget demotes in) and a surfacing input (idle clusters are proposed first). `decay` demotes idle tier-3
deltas to retrieval-only and lists idle tier-1/2 deltas for review; it never changes a delta's status,
so it never deactivates a delta a user approved. Age demotes; it does not delete.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from . import budget as budget_mod
from . import gates
from .common import bigram_similarity, cosines, iso, utc_now
from .defaults import SHIPPED
from .grammar import KEY_LIMIT, TURN_ID_LIMIT, Delta, Provenance
from .store import StoreError

if TYPE_CHECKING:
    from .skill import Skill
    from .store import Store, Undo

__all__ = [
    "CONTEXT_ROLES",
    "NOT_OUTCOMES",
    "SIGNALS",
    "Attribution",
    "Cluster",
    "DecayPlan",
    "EvidenceError",
    "NotAnOutcome",
    "Review",
    "SignalKind",
    "Umbrella",
    "approve_umbrella",
    "consolidate",
    "consolidation_proposer",
    "decay",
    "decay_plan",
    "forget",
    "in_context",
    "near_duplicates",
    "pending_umbrellas",
    "propose_umbrella",
    "record_context",
    "record_signal",
    "review_staged",
]

CONTEXT_ROLES = ("context", "suggested")
MIN_COSINE = 0.85  # embedding cosine at or above which two lessons may be near-duplicates …
MIN_BIGRAM = 0.6  # … and character-bigram Dice at or above which they are (both must hold)
DEFAULT_IDLE = None if SHIPPED.decay_idle_days is None else timedelta(days=SHIPPED.decay_idle_days)


class EvidenceError(ValueError):
    """A signal or context record that cannot be ledgered. `field` names the offending argument."""

    def __init__(self, message: str, field: str | None = None):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


class NotAnOutcome(EvidenceError):
    """The typed refusal for tool-return-code "outcomes": a tool call that did not raise says nothing
    about whether the user got what they wanted, so it never moves a counter."""


@dataclass(frozen=True)
class SignalKind:
    name: str
    positive: bool | None  # None: read from the rating (≥ 4 positive, ≤ 2 negative, 3 neutral)
    states_lesson: bool  # the user says what they wanted: the correction log non-recurrence reads
    meaning: str


SIGNALS: Mapping[str, SignalKind] = {
    k.name: k
    for k in (
        SignalKind("correction", False, True, "the user corrected the agent, stating what they wanted"),
        SignalKind("undo", False, False, "the user undid what the agent did"),
        SignalKind("accepted", True, False, "the user accepted a suggestion or result as proposed"),
        SignalKind("rating", None, False, "an explicit 1-5 rating: 4-5 positive, 1-2 negative, 3 neutral"),
    )
}
# Names a caller might reach for when only a tool's return code is known. Refused, never ledgered.
NOT_OUTCOMES = frozenset(
    {
        "tool_ok",
        "tool_success",
        "tool_returned",
        "tool_completed",
        "no_error",
        "not_raised",
        "did_not_raise",
        "exit_code_0",
        "ok",
        "success",
        "completed",
    }
)
_TOOL_RETURN = re.compile(
    r"^(?:tool[_\-\s]|no[_\-\s]?(?:error|exception)|did[_\-\s]?not[_\-\s]?(?:raise|fail)"
    r"|exit[_\-\s]?(?:code|status)|returned[_\-\s]?(?:ok|clean))",
    re.IGNORECASE,
)
RATING_POSITIVE, RATING_NEGATIVE = 4, 2


def _id(value: Any, field: str, limit: int = TURN_ID_LIMIT) -> str:
    if not isinstance(value, str) or not value.strip():
        raise EvidenceError("must be a non-empty string", field)
    if len(value) > limit:
        raise EvidenceError(f"{len(value)} characters; at most {limit} (an id or key, never message text)", field)
    return value


def _kind(signal: Any) -> SignalKind:
    if isinstance(signal, str) and signal in SIGNALS:
        return SIGNALS[signal]
    if isinstance(signal, str) and (signal.strip().lower() in NOT_OUTCOMES or _TOOL_RETURN.match(signal.strip())):
        raise NotAnOutcome(
            f"{signal!r} is a tool return code, not an outcome: a tool call that did not raise "
            f"says nothing about whether the user got what they wanted; record one of "
            f"{', '.join(SIGNALS)}",
            "signal",
        )
    raise EvidenceError(f"unknown signal {signal!r}; user-observable signals are {', '.join(SIGNALS)}", "signal")


# ------------------------------------------------------------------------------------- context ledger


def _delta_ids(deltas: Any) -> list[str]:
    """Ids from an EffectiveSkill (its applied deltas), Delta objects or id strings."""
    if hasattr(deltas, "applied"):
        deltas = deltas.applied
    out = []
    for d in deltas:
        out.append(_id(d.id if isinstance(d, Delta) else d, "deltas"))
    return list(dict.fromkeys(out))


def record_context(
    store: "Store", session: str, turn: str, deltas: Any, *, role: str = "context", at: datetime | None = None
) -> tuple[str, ...]:
    """Ledger the deltas in context on (session, turn) and stamp their last_used_at. Returns the ids.

    `deltas`: an `EffectiveSkill` (its applied deltas), Delta objects or ids. `role="suggested"` records a
    staged lesson the agent offered the user as a suggestion rather than followed silently.
    """
    _id(session, "session"), _id(str(turn), "turn")
    if role not in CONTEXT_ROLES:
        raise EvidenceError(f"{role!r}; roles are {', '.join(CONTEXT_ROLES)}", "role")
    ids = _delta_ids(deltas)
    when = at or utc_now()
    with store.transaction():
        known = store.evidence.sections(ids)
        missing = [d for d in ids if d not in known]
        if missing:
            raise StoreError(f"no delta with id {missing[0]!r} in {store.path}")
        store.evidence.add_context(session, str(turn), ids, role, when)
        if ids:
            store.touch(ids, when)
    return tuple(ids)


def in_context(store: "Store", session: str, turn: str) -> dict[str, str]:
    """{delta id: role} of what was in context on (session, turn)."""
    out: dict[str, str] = {}
    for did, role in store.evidence.context(session, str(turn)):
        out.setdefault(did, role)
    return out


# ----------------------------------------------------------------------------------------- signals


@dataclass(frozen=True)
class Attribution:
    """What one signal did: the counters it moved, and the deltas whose ledger already had it."""

    signal_id: int
    signal: str
    positive: bool | None  # None: a neutral rating, attributed to nothing
    attributed: tuple[str, ...]
    repeated: tuple[str, ...] = ()


def record_signal(
    store: "Store",
    session: str,
    turn: str,
    signal: str,
    *,
    rating: int | None = None,
    scope: str = "user",
    skill: str | None = None,
    section: str | None = None,
    lesson: str | None = None,
    delta_ids: Iterable[str] | None = None,
    at: datetime | None = None,
) -> Attribution:
    """Ledger one user-observable signal on (session, turn) and attribute it to the deltas in context.

    Attribution goes to every delta in context on that turn, narrowed to those anchored on `section`
    (the section the turn exercised) when given, or to `delta_ids` (each must have been in context).
    A correction should carry `lesson`, a key naming what the user asked for (`tone=formal`); it is what
    correction non-recurrence counts. Raises `NotAnOutcome` for a tool return code and `EvidenceError`
    for anything malformed — in both cases nothing is written.
    """
    kind = _kind(signal)
    _id(session, "session"), _id(str(turn), "turn"), _id(scope, "scope", KEY_LIMIT)
    for name, value in (("skill", skill), ("section", section), ("lesson", lesson)):
        if value is not None:
            _id(value, name)
    if kind.positive is None:
        if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
            raise EvidenceError(f"{rating!r}; an explicit rating is an integer 1-5", "rating")
        positive = True if rating >= RATING_POSITIVE else False if rating <= RATING_NEGATIVE else None
    else:
        if rating is not None:
            raise EvidenceError(f"only a 'rating' signal carries a rating, not {signal!r}", "rating")
        positive = kind.positive
    when = at or utc_now()
    with store.transaction():
        context = in_context(store, session, str(turn))
        if delta_ids is not None:
            wanted = list(dict.fromkeys(delta_ids))
            absent = [d for d in wanted if d not in context]
            if absent:
                raise EvidenceError(
                    f"{', '.join(absent)} not in context on {session}/{turn}: outcomes are "
                    "attributed only to deltas that were in context",
                    "delta_ids",
                )
            targets = wanted
        else:
            targets = list(context)
        if section is not None:
            anchored = store.evidence.sections(targets)
            targets = [d for d in targets if anchored.get(d) == section]
        if positive is None:
            targets = []
        signal_id = store.evidence.add_signal(
            session,
            str(turn),
            kind.name,
            positive=positive,
            rating=rating,
            scope=scope,
            skill=skill,
            section=section,
            lesson=lesson,
            at=when,
        )
        moved, repeated = [], []
        for did in targets:
            ok = store.record_outcome(
                did, session=session, turn=str(turn), signal=kind.name, positive=bool(positive), at=when
            )
            (moved if ok else repeated).append(did)
        store.evidence.set_attributed(signal_id, len(moved))
    return Attribution(signal_id, kind.name, positive, tuple(moved), tuple(repeated))


def forget(store: "Store", *, skill: str | None = None, scope: str | None = None, all: bool = False) -> int:
    """`store.forget`, which erases the correction log (signals of that skill / scope, or all) too."""
    return store.forget(skill=skill, scope=scope, all=all)


# --------------------------------------------------------------------------------------- promotion


@dataclass(frozen=True)
class Review:
    """What the track record decided for one staged delta: promoted, retired or held."""

    delta_id: str
    decision: str
    promotion: gates.Promotion


def review_staged(
    store: "Store",
    *,
    skill: str | None = None,
    scope: str | Iterable[str] | None = None,
    min_samples: int = SHIPPED.min_samples,
    threshold: float = SHIPPED.threshold,
    wilson: bool = SHIPPED.wilson,
    z: float = SHIPPED.z,
    retire_below: float | None = SHIPPED.retire_below,
    at: datetime | None = None,
) -> list[Review]:
    """Promote staged, trusted deltas whose counters clear the bar (`gates.promote`); with `retire_below`,
    archive those with at least `min_samples` outcomes and a success rate below it. Each decision is logged
    with the counters read and the outcome-ledger position they covered."""
    if not 0 <= threshold <= 1 or (retire_below is not None and not 0 <= retire_below <= threshold):
        raise EvidenceError("threshold in [0, 1] and retire_below in [0, threshold]", "threshold")
    when = at or utc_now()
    out = []
    for d in store.search(skill, scope, status="staged"):
        if not d.provenance.trusted:
            continue
        with store.transaction():
            p = gates.promote(store, d.id, min_samples=min_samples, threshold=threshold, wilson=wilson, z=z)
            decision = "promoted" if p.promoted else "held"
            if not p.promoted and retire_below is not None and p.samples >= min_samples and p.rate < retire_below:
                store.set_status(
                    d.id,
                    "archived",
                    who="evidence",
                    reason=f"retired on evidence: success rate {p.rate:.3f} < {retire_below} over {p.samples} outcomes",
                )
                decision = "retired"
            if decision != "held":
                now = store.get(d.id)
                store.evidence.log_promotion(
                    d.id,
                    decision,
                    successes=now.success_count,
                    attempts=now.attempt_count,
                    score=p.score,
                    threshold=threshold if decision == "promoted" else retire_below,
                    min_samples=min_samples,
                    wilson=wilson,
                    ledger_seq=store.evidence.ledger_seq(d.id),
                    reason=p.reason,
                    at=when,
                )
        out.append(Review(d.id, decision, p))
    return out


# ----------------------------------------------------------------------------------- consolidation


@dataclass(frozen=True)
class Cluster:
    """Near-duplicate deltas on one base, scope, anchor section and kind. `ids[0]` is the representative
    (the medoid: most alike the others; ties go to the most recently used)."""

    skill: str
    base_root: str | None
    scope: str
    section: str
    kind: str
    ids: tuple[str, ...]
    cosine: float | None  # lowest pairwise embedding cosine (None: lexical only)
    bigram: float  # lowest pairwise character-bigram Dice
    last_used: datetime  # most recent use of any member

    @property
    def score(self) -> float:
        return min(self.bigram, self.cosine if self.cosine is not None else 1.0)

    def to_dict(self) -> dict:
        return {
            "skill": self.skill,
            "section": self.section,
            "kind": self.kind,
            "ids": list(self.ids),
            "cosine": self.cosine,
            "bigram": round(self.bigram, 4),
            "last_used": iso(self.last_used),
        }


def _last_used(d: Delta) -> datetime:
    return budget_mod.value_key(d)[1]


def _embed(embedder, texts: list[str]) -> np.ndarray | None:
    if embedder is False:
        return None
    if embedder is None or isinstance(embedder, str):
        from .retrieval import load_embedder

        embedder = load_embedder(embedder)
    return np.asarray(embedder.encode(texts), dtype=np.float32)


def near_duplicates(
    deltas: Iterable[Delta], *, embedder: Any = None, min_cosine: float = MIN_COSINE, min_bigram: float = MIN_BIGRAM
) -> list[Cluster]:
    """Clusters (≥ 2 members) of live active deltas that say near-identical things. Complete linkage: every
    pair in a cluster clears both bars. `embedder`: None loads the default, an object with `encode` is used,
    False means character bigrams only. Idle clusters come first (the oldest most-recent use)."""
    groups: dict[tuple, list[Delta]] = {}
    for d in deltas:
        if d.status == "active" and d.superseded_by is None:
            groups.setdefault((d.skill, d.base_root or "", d.scope, d.anchor.section, d.kind), []).append(d)
    groups = {k: v for k, v in groups.items() if len(v) > 1}
    if not groups:
        return []
    members = [d for k in sorted(groups) for d in groups[k]]
    vectors = _embed(embedder, [str(d.text) for d in members])
    row = {d.id: i for i, d in enumerate(members)}
    out = []
    for key in sorted(groups):
        # most recently used first: an incoming member joins the first cluster it matches entirely
        group = sorted(groups[key], key=lambda d: (_last_used(d), d.created_at, d.id), reverse=True)
        n = len(group)
        if vectors is None:
            cos = np.ones((n, n))
        else:
            v = vectors[[row[d.id] for d in group]]
            cos = np.clip(cosines(v, v), -1.0, 1.0)
            np.fill_diagonal(cos, 1.0)
        big = np.eye(n)
        for i in range(n):
            for j in range(i + 1, n):
                if cos[i, j] >= min_cosine - 1e-6:  # bigrams only where the cheap bar already holds
                    big[i, j] = big[j, i] = bigram_similarity(group[i].text, group[j].text)
        ok = (big >= min_bigram) & (cos >= min_cosine - 1e-6)
        clusters: list[list[int]] = []
        for i in range(n):
            home = next((c for c in clusters if all(ok[i, j] for j in c)), None)
            if home is None:
                clusters.append([i])
            else:
                home.append(i)
        for c in (c for c in clusters if len(c) > 1):
            mean = [(big[i, c].sum() + cos[i, c].sum() - 2) / (len(c) - 1) for i in c]
            order = sorted(range(len(c)), key=lambda k: -mean[k])  # stable: ties keep recency order
            ids = tuple(group[c[k]].id for k in order)
            pairs = [(i, j) for a, i in enumerate(c) for j in c[a + 1 :]]
            out.append(
                Cluster(
                    key[0],
                    key[1] or None,
                    key[2],
                    key[3],
                    key[4],
                    ids,
                    None if vectors is None else round(min(cos[i, j] for i, j in pairs), 4),
                    min(big[i, j] for i, j in pairs),
                    max(_last_used(group[i]) for i in c),
                )
            )
    return sorted(out, key=lambda c: (c.last_used, -len(c.ids), c.ids))


@dataclass(frozen=True)
class Umbrella:
    """One consolidation proposal: the umbrella delta the gates staged (or refused) for `members`."""

    members: tuple[str, ...]
    result: gates.WriteResult
    umbrella_id: str | None

    @property
    def staged(self) -> bool:
        return self.result.persisted


def pending_umbrellas(store: "Store", skill: str | None = None) -> dict[str, tuple[str, ...]]:
    """{umbrella id: member ids} of consolidation proposals still waiting for a decision."""
    return store.evidence.pending_consolidations(skill)


def propose_umbrella(
    store: "Store",
    skill: "Skill",
    cluster: Cluster | Sequence[str],
    *,
    merger: Callable[[Sequence[Delta]], Mapping[str, Any]] | None = None,
    settings: gates.GateSettings | None = None,
) -> Umbrella:
    """Stage one umbrella lesson for the cluster through the gates (never auto-approved). Its payload is
    the representative's, or `merger(members)`'s (e.g. a model's merge) — the gates check it either way.
    Provenance is trusted only if every member's is. An identical pending proposal is returned as is."""
    ids = tuple(cluster.ids if isinstance(cluster, Cluster) else cluster)
    if len(set(ids)) < 2:
        raise EvidenceError("a consolidation needs at least two distinct deltas", "cluster")
    for uid, mem in pending_umbrellas(store, skill.name).items():
        if set(mem) == set(ids):
            d = store.get(uid)
            return Umbrella(mem, gates.WriteResult(d.status, "already proposed", "pending", delta=d), uid)
    members = [store.get(i) for i in ids]
    rep = members[0]
    for d in members:
        if d.superseded_by or d.status not in ("active", "staged"):
            raise EvidenceError(
                f"delta {d.id} is {d.status}{' and superseded' if d.superseded_by else ''}; only "
                "live, unsuperseded deltas are consolidated",
                "cluster",
            )
        if (d.skill, d.anchor.section, d.kind, d.scope) != (skill.name, rep.anchor.section, rep.kind, rep.scope):
            raise EvidenceError(
                f"delta {d.id} is not on {skill.name}/{rep.anchor.section} ({rep.kind}, {rep.scope}) like {rep.id}",
                "cluster",
            )
    payload = dict(merger(members)) if merger else dict(rep.payload)
    trusted = all(d.provenance.trusted for d in members)
    turns = tuple(dict.fromkeys(t for d in members for t in d.provenance.turns))[-gates.MAX_TURNS :]
    prov = Provenance(rep.provenance.source if trusted else "unknown", turns)
    result = gates.learn(
        store,
        skill,
        rep.kind,
        payload,
        section=rep.anchor.section,
        provenance=prov,
        scope=rep.scope,
        settings=replace(settings or gates.GateSettings(), auto_approve=False, noop_repeats=False),
    )  # it replaces its twins
    if not result.persisted:
        return Umbrella(ids, result, None)
    pairs = [(a, b) for k, a in enumerate(members) for b in members[k + 1 :]]
    cosine = cluster.cosine if isinstance(cluster, Cluster) else None
    store.evidence.add_consolidation(
        result.delta.id,
        ids,
        skill=skill.name,
        section=rep.anchor.section,
        embedding_sim=cosine,
        bigram_sim=min(bigram_similarity(a.text, b.text) for a, b in pairs),
        at=utc_now(),
    )
    return Umbrella(ids, result, result.delta.id)


def approve_umbrella(store: "Store", umbrella_id: str, who: str = "user") -> "Undo":
    """Accept a consolidation: the umbrella becomes active and supersedes its members (kept, with lineage),
    in one transaction. Rejecting it is `store.revert(umbrella_id)`; the members are untouched then."""
    members = store.evidence.consolidation_members(umbrella_id)
    if members is None:
        raise StoreError(f"{umbrella_id} is not a consolidation proposal")
    with store.transaction():
        a = store.approve(umbrella_id, who=who)
        s = store.supersede(members, umbrella_id, who=who)
    return store.combine("approve_umbrella", a, s, ids=(umbrella_id, *members))


def consolidate(
    store: "Store",
    skill: "Skill",
    *,
    embedder: Any = None,
    min_cosine: float = MIN_COSINE,
    min_bigram: float = MIN_BIGRAM,
    scope: str | Iterable[str] | None = None,
) -> list[Umbrella]:
    """Find near-duplicate active deltas of `skill` and stage one umbrella per cluster."""
    deltas = store.search(skill.name, scope, status="active")
    return [
        propose_umbrella(store, skill, c)
        for c in near_duplicates(deltas, embedder=embedder, min_cosine=min_cosine, min_bigram=min_bigram)
    ]


def consolidation_proposer(
    embedder: Any = None, *, min_cosine: float = MIN_COSINE, min_bigram: float = MIN_BIGRAM
) -> Callable[..., list[budget_mod.MergeProposal]]:
    """The budget's consolidation step (`budget.Budget(store, skills, proposer=...)`): near-duplicate
    clusters among the resident deltas, as `budget.MergeProposal`s. `propose_umbrella(store, skill, p.ids)`
    sends one through the staged gate."""

    def propose(resident: Sequence[Delta], costs: Mapping[str, int] | None = None) -> list[budget_mod.MergeProposal]:
        costs = costs or {}
        return [
            budget_mod.MergeProposal(
                c.skill, c.section, c.ids, round(100 * c.score, 2), sum(costs.get(i, 0) for i in c.ids)
            )
            for c in near_duplicates(resident, embedder=embedder, min_cosine=min_cosine, min_bigram=min_bigram)
        ]

    return propose


# ------------------------------------------------------------------------------------------- decay


@dataclass(frozen=True)
class DecayPlan:
    """`ranked`: live active deltas, lowest value first (the budget's order). `demote`: idle tier-3 deltas
    still resident (→ retrieval-only). `surfaced`: idle tier-1/2 deltas, listed for review, never changed.
    With no idle bound (`idle` None, what ships) nothing is idle: the plan only ranks."""

    now: datetime
    idle: timedelta | None
    ranked: tuple[str, ...]
    demote: tuple[str, ...]
    surfaced: tuple[str, ...]

    def to_dict(self) -> dict:
        return {
            "now": iso(self.now),
            "idle_days": None if self.idle is None else self.idle.total_seconds() / 86400,
            "ranked": list(self.ranked),
            "demote": list(self.demote),
            "surfaced": list(self.surfaced),
        }


def decay_plan(
    deltas: Iterable[Delta], *, now: datetime, idle: timedelta | None = DEFAULT_IDLE, retrieval_only: Iterable[str] = ()
) -> DecayPlan:
    """Pure: rank by `budget.value_key` (evidence, then last use) and pick what has been idle longer than
    `idle` (last use, else approval, else creation); `idle` None picks nothing."""
    if idle is not None and idle <= timedelta(0):
        raise EvidenceError("must be a positive duration or None", "idle")
    demoted = set(retrieval_only)
    live = sorted((d for d in deltas if d.status == "active" and d.superseded_by is None), key=budget_mod.value_key)
    stale = [] if idle is None else [d for d in live if now - _last_used(d) > idle]
    return DecayPlan(
        now,
        idle,
        tuple(d.id for d in live),
        tuple(d.id for d in stale if d.tier == 3 and d.id not in demoted),
        tuple(d.id for d in stale if d.tier in (1, 2)),
    )


def decay(
    store: "Store",
    skill: str | None = None,
    *,
    now: datetime | None = None,
    idle: timedelta | None = DEFAULT_IDLE,
    scope: str | Iterable[str] | None = None,
    apply: bool = True,
    who: str = "decay",
) -> DecayPlan:
    """Demote idle tier-3 deltas to retrieval-only (audited); with no idle bound (what ships), rank only.
    Never changes a status: a delta a user approved stays active, and a demoted one comes back only when a
    session goal retrieves it."""
    now = now or utc_now()
    plan = decay_plan(
        store.search(skill, scope, status="active"), now=now, idle=idle, retrieval_only=store.retrieval_only(skill)
    )
    if apply and plan.demote:
        store.set_resident(
            plan.demote, False, who=who, reason=f"decay: unused for more than {plan.idle.days} days; retrieval-only"
        )
    return plan
