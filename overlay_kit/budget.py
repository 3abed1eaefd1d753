"""The learning budget: real token counts, a resident ceiling over authored + learned text, a demotion plan.

Tokens are counted with the bundled Llama-2 tokenizer (never len/4). The ceiling is per agent and covers
the authored bodies of the skills it loads *plus* every learned line that sits in the prompt, because an
overlay that fits on its own can still be what overflows a 32K window.

When the resident total is over the ceiling, in this order (seed: "Consolidation, learning budget, and
decay"):

1. **consolidate** — propose merging near-duplicate tier-3 deltas on the same section. A proposal is
   never applied here (it goes through the staged gate), so it does not lower the count by itself;
2. **demote** the lowest-value resident tier-3 deltas to *retrieval-only*: they leave the resident text
   and reach the prompt only when a session goal retrieves them (cosine ≥ τ);
3. **archive** the lowest-value remaining resident deltas (tier 2: they have no trigger to retrieve by).

Only whole deltas move: nothing is ever cut mid-step, and the authored body is never shortened. Value is
evidence first (Laplace-smoothed success rate from the outcome counters), then recency
(`last_used_at`, else `approved_at`, else `created_at`), then age and id — lowest value goes first. Tiers
0 and 1 are exempt: tier 0 never enters the prompt, tier 1 is bounded by the tool loader's cap.

`enforce(store, skills, ceiling)` computes the plan over the store and applies it (audited status /
residency changes); the write paths call it after every state change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

from .common import lazy_logger
from .defaults import SHIPPED
from .grammar import (  # the learned-line format
    BLOCK_HEADING,
    BLOCK_INTRO,
    SECTION_LABEL,
    item_text,
)
from .prompt import count_many, count_tokens  # the one token counter (re-exported)

__all__ = [
    "Budget",
    "BudgetPlan",
    "MergeProposal",
    "count_following",
    "count_many",
    "count_many_following",
    "count_tokens",
    "enforce",
    "following_lines",
    "overhead_tokens",
    "plan",
    "propose_consolidations",
    "remember_following",
    "resident_candidates",
    "scaffold_tokens",
    "value_key",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
log = lazy_logger(__name__)


# The Llama tokenizer never merges across a line break ("\n" is always its own byte token) and prepends
# "▁" only at the very start of a text. So the tokens a piece adds when it follows a line break (or itself
# starts with one) do not depend on what came before: count("...\n" + p) == count("...\n") + follow(p).
# tests/test_budget.py checks this identity on the example skills and on random text.
_NL = 2  # len(encode("\n")) == ["▁", "<0x0A>"]


@lru_cache(maxsize=65536)
def count_following(piece: str) -> int:
    """Tokens `piece` adds to a text that ends with a line break (or when `piece` starts with one).

    Counted line by line: by the identity above, follow(a + b) == follow(a) + follow(b) whenever `a` ends with
    "\n", so a piece made of lines already counted (a section's learned list) needs no tokenizer call."""
    return sum(count_many_following(following_lines(piece))) if piece else 0


def following_lines(piece: str) -> list[str]:
    """`piece` cut after every "\n" (only "\n": the identity is stated for it)."""
    out = piece.split("\n")
    return [line + "\n" for line in out[:-1]] + ([out[-1]] if out[-1] else [])


_FOLLOWING: dict[str, int] = {}  # line → its following count; each line is counted once per process
_FOLLOWING_MAX = 200_000


def count_many_following(pieces: Sequence[str]) -> list[int]:
    """`count_following` for many pieces: known pieces are looked up, the rest counted in one batched call."""
    missing = [p for p in dict.fromkeys(pieces) if p not in _FOLLOWING]
    if missing:
        remember_following(zip(missing, (n - _NL for n in count_many(["\n" + p for p in missing]))))
    return [_FOLLOWING[p] for p in pieces]


def remember_following(counts: Iterable[tuple[str, int]]) -> None:
    """Add known following counts (e.g. the ones a store kept from an earlier process) to this process's cache."""
    counts = dict(counts)
    if len(_FOLLOWING) + len(counts) > _FOLLOWING_MAX:
        _FOLLOWING.clear()
    _FOLLOWING.update(counts)


def value_key(delta) -> tuple:
    """Sort key, lowest value first: (evidence, last use, creation, id)."""
    evidence = (delta.success_count + 1) / (delta.attempt_count + 2)
    last = delta.last_used_at or delta.approved_at or delta.created_at or _EPOCH
    return (evidence, last.astimezone(timezone.utc), delta.created_at.astimezone(timezone.utc), delta.id)


@dataclass(frozen=True)
class MergeProposal:
    """Merge these near-duplicate lessons into one (a proposal for the staged gate, never applied here)."""

    skill: str
    section: str
    ids: tuple[str, ...]
    score: float  # the lowest pairwise similarity that joined the group (0-100)
    tokens: int  # resident tokens the group costs today

    def to_dict(self) -> dict:
        return {
            "skill": self.skill,
            "section": self.section,
            "ids": list(self.ids),
            "score": self.score,
            "tokens": self.tokens,
        }


def propose_consolidations(
    deltas: Sequence, costs: dict[str, int] | None = None, threshold: float = SHIPPED.consolidate_score
) -> list[MergeProposal]:
    """Groups of ≥ 2 tier-3 deltas on the same skill and section whose lessons are near-identical."""
    from rapidfuzz import fuzz  # imported on use: resolving never needs it

    costs = costs or {}
    groups: dict[tuple[str, str], list] = {}
    for d in deltas:
        if d.tier == 3:
            groups.setdefault((d.skill, d.anchor.section), []).append(d)
    out = []
    for (skill, section), members in sorted(groups.items()):
        members = sorted(members, key=lambda d: d.id)
        parent = list(range(len(members)))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        edges = [
            (i, j, fuzz.token_set_ratio(members[i].text, members[j].text))
            for i in range(len(members))
            for j in range(i + 1, len(members))
        ]
        edges = [e for e in edges if e[2] >= threshold]
        for i, j, _ in edges:
            parent[root(j)] = root(i)
        clusters: dict[int, list[int]] = {}
        for i in range(len(members)):
            clusters.setdefault(root(i), []).append(i)
        for r, idx in sorted(clusters.items(), key=lambda kv: kv[1][0]):
            if len(idx) > 1:
                score = min(e[2] for e in edges if root(e[0]) == r)
                ids = tuple(members[i].id for i in idx)
                out.append(MergeProposal(skill, section, ids, float(score), sum(costs.get(x, 0) for x in ids)))
    return out


@dataclass(frozen=True)
class BudgetPlan:
    """What the budget decided. `over` means even the plan could not get under the ceiling (authored
    text alone is too big): nothing learned stays resident then, and the authored body is still whole."""

    ceiling: int
    authored_tokens: int
    learned_tokens: int  # resident learned tokens before the plan
    resident_tokens: int  # authored + learned after the plan
    proposals: tuple[MergeProposal, ...] = ()
    demote: tuple[str, ...] = ()  # → retrieval-only
    archive: tuple[str, ...] = ()  # → archived
    reserve: int = 0  # tokens kept free under the ceiling for retrieved lessons

    @property
    def over(self) -> bool:
        return self.resident_tokens > self.ceiling

    @property
    def changes(self) -> bool:
        return bool(self.demote or self.archive)

    def to_dict(self) -> dict:
        return {
            "ceiling": self.ceiling,
            "reserve": self.reserve,
            "authored_tokens": self.authored_tokens,
            "learned_tokens": self.learned_tokens,
            "resident_tokens": self.resident_tokens,
            "over": self.over,
            "proposals": [p.to_dict() for p in self.proposals],
            "demote": list(self.demote),
            "archive": list(self.archive),
        }


def resident_candidates(deltas: Iterable, retrieval_only: Collection[str] = ()) -> list:
    """Deltas whose text sits in the prompt at every session start: active tier 2/3, not superseded,
    not already retrieval-only."""
    return [
        d
        for d in deltas
        if d.status == "active" and d.superseded_by is None and d.tier in (2, 3) and d.id not in retrieval_only
    ]


@lru_cache(maxsize=1)
def scaffold_tokens() -> tuple[int, int]:
    """(tokens of the Learned adjustments block scaffold, of one per-section label with its blank lines),
    as rendered after a line break (`resolve` adds at most one more blank line before either)."""
    return (count_following(f"\n{BLOCK_HEADING}\n\n{BLOCK_INTRO}\n\n"), count_following(f"\n{SECTION_LABEL}\n\n") + 1)


def overhead_tokens(deltas: Iterable) -> int:
    """Tokens of the scaffolding around learned lines (conservative: block heading + one label per section)."""
    sections = {(d.skill, d.anchor.section) for d in deltas}
    if not sections:
        return 0
    block, label = scaffold_tokens()
    return block + label * len(sections)


def plan(
    authored_tokens: int,
    deltas: Sequence,
    ceiling: int = SHIPPED.ceiling,
    *,
    retrieval_only: Collection[str] = (),
    reserve: int = 0,
    proposer: Callable[..., list[MergeProposal]] | None = propose_consolidations,
) -> BudgetPlan:
    """Decide demotions/archivals so authored + resident learned tokens ≤ ceiling − reserve (the reserve
    keeps room for lessons a session goal retrieves). Pure and deterministic; whole deltas only.

    `deltas` are the agent's deltas (any status; only resident candidates count).
    """
    if ceiling <= 0:
        raise ValueError(f"ceiling must be a positive token count, got {ceiling}")
    if not 0 <= reserve < ceiling:
        raise ValueError(f"reserve must be between 0 and the ceiling ({ceiling}), got {reserve}")
    target = ceiling - reserve
    resident = sorted(resident_candidates(deltas, retrieval_only), key=lambda d: d.id)
    costs = dict(zip((d.id for d in resident), count_many_following([item_text(d) for d in resident])))
    learned = sum(costs.values()) + overhead_tokens(resident)
    total = authored_tokens + learned
    if total <= target:
        return BudgetPlan(ceiling, authored_tokens, learned, total, reserve=reserve)
    proposals = tuple(proposer(resident, costs)) if proposer else ()
    block, label = scaffold_tokens()
    per_section = Counter((d.skill, d.anchor.section) for d in resident)
    learned_now = sum(costs.values())
    moves: dict[str, list[str]] = {"demote": [], "archive": []}
    for step, tier in (("demote", 3), ("archive", 2)):
        for d in sorted((d for d in resident if d.tier == tier), key=value_key):
            if total <= target:
                break
            moves[step].append(d.id)
            learned_now -= costs[d.id]
            per_section[(d.skill, d.anchor.section)] -= 1
            n_sections = sum(1 for v in per_section.values() if v > 0)
            total = authored_tokens + learned_now + (block + label * n_sections if n_sections else 0)
    return BudgetPlan(
        ceiling, authored_tokens, learned, total, proposals, tuple(moves["demote"]), tuple(moves["archive"]), reserve
    )


class Budget:
    """The resident ceiling of one agent: the skills it loads, one store, one ceiling.

    `enforce()` plans over the store and applies the plan (retrieval-only demotions and archivals, each
    audited with the reason). `install()` hooks it to the store so every state change — a write, an
    approval, a revert, a reset, an undo — re-enforces it; `set_skill()` is the base-change entry point.
    """

    def __init__(
        self,
        store,
        skills: Sequence,
        ceiling: int = SHIPPED.ceiling,
        *,
        scope: str | Iterable[str] | None = None,
        reserve: int | None = None,
        proposer: Callable[..., list[MergeProposal]] | None = propose_consolidations,
    ):
        if ceiling <= 0:
            raise ValueError(f"ceiling must be a positive token count, got {ceiling}")
        self.store = store
        self.skills = {s.name: s for s in skills}
        self.ceiling = ceiling
        self.reserve = min(SHIPPED.retrieval_reserve, ceiling // 8) if reserve is None else reserve
        self.scope = store.read_scopes(scope) if hasattr(store, "read_scopes") else scope or "user"
        self.proposer = proposer
        self.last: BudgetPlan | None = None
        self._busy = False

    def plan(self) -> BudgetPlan:
        deltas = [
            d for name in sorted(self.skills) for d in self.store.search(skill=name, scope=self.scope, status="active")
        ]
        counted = getattr(self.store, "authored_tokens", None)
        authored = (
            sum(counted(s.body) for s in self.skills.values())
            if counted is not None
            else sum(count_many([s.body for s in self.skills.values()]))
        )
        return plan(
            authored,
            deltas,
            self.ceiling,
            retrieval_only=self.store.retrieval_only(),
            reserve=self.reserve,
            proposer=self.proposer,
        )

    def enforce(self) -> BudgetPlan:
        """Plan, then apply the plan in one transaction. Idempotent: a plan that fits changes nothing."""
        if self._busy:  # the store hook fires for our own writes too
            return self.last
        self._busy = True
        try:
            p = self.plan()
            if p.changes:
                why = (
                    f"learning budget: {p.authored_tokens + p.learned_tokens} resident tokens > ceiling "
                    f"{p.ceiling} − retrieval reserve {p.reserve}"
                )
                with self.store.transaction():
                    if p.demote:
                        self.store.set_resident(
                            p.demote,
                            False,
                            who="budget",
                            reason=why + "; lowest-value tier 3 demoted to retrieval-only",
                        )
                    for did in p.archive:
                        self.store.set_status(
                            did, "archived", who="budget", reason=why + "; still over after demotion, archived"
                        )
            self.last = p
            return p
        finally:
            self._busy = False

    def _changed(self, _ids) -> None:
        try:
            self.enforce()
        except Exception:  # the write itself committed; resolution re-checks the ceiling exactly anyway
            log.exception("budget enforcement failed after a store change")

    def install(self) -> "Budget":
        """Enforce now and after every state change the store commits."""
        self.store.on_change(self._changed)
        self.enforce()
        return self

    def set_skill(self, skill) -> BudgetPlan:
        """A base changed (or a skill was loaded): account for its new body and re-enforce."""
        self.skills[skill.name] = skill
        return self.enforce()


def enforce(
    store,
    skills: Sequence,
    ceiling: int = SHIPPED.ceiling,
    *,
    scope: str | Iterable[str] | None = None,
    reserve: int | None = None,
) -> BudgetPlan:
    """One-shot: hold `ceiling` over `skills` (authored bodies) + their resident learned deltas in `store`."""
    return Budget(store, skills, ceiling, scope=scope, reserve=reserve).enforce()
