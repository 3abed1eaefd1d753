"""The tool loader: which tool schemas render this turn — CORE ∪ SKILL ∪ SEMANTIC, capped.

Precedence is CORE > SKILL > SEMANTIC (seed: "Correction 2"):

* **CORE** — always loaded, never evicted, never withheld;
* **SKILL** — the effective skill's `skill_tools` (`skill_tier`: authored tools, with tier-1 `tool-hint`
  deltas' `prefer` names first and `drop` names withheld; the resolver calls it), admitted ahead of any
  semantic candidate;
* **SEMANTIC** — tools whose description is at cosine ≥ `threshold` (0.20) to the goal, best first.

The loader is stateful across turns: at `max_tools` (14) a new SKILL/SEMANTIC tool evicts the least
recently used non-core tool that this turn did not ask for; when every loaded tool was asked for this
turn, lower-precedence candidates wait. Every name must be in the live registry — anything else is
dropped with a reason — so a learned delta can reorder or withhold tools but never add one. Tier-1 `drop`
names are *withheld*: they leave SKILL and SEMANTIC and are evicted if loaded (CORE is exempt).

This is the one tool-loading path: `resolve` builds the SKILL tier with `skill_tier`, and `resolve.Session`
(which the deployment simulator drives) selects each turn's tools with a `ToolLoader`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .common import cosines
from .defaults import SHIPPED

if TYPE_CHECKING:
    import numpy as np

__all__ = ["SEMANTIC_THRESHOLD", "Selection", "ToolLoader", "skill_tier"]

SEMANTIC_THRESHOLD = 0.20


@dataclass(frozen=True)
class Selection:
    """One turn's tools. `tools` is the render order: core, then this turn's admissions in precedence
    order, then tools carried over from earlier turns (most recently used first)."""

    tools: tuple[str, ...]
    sources: Mapping[str, str]  # name -> core | skill | semantic | carried
    dropped: tuple[tuple[str, str], ...] = ()  # (name, why): unknown, withheld, capped
    evicted: tuple[str, ...] = ()
    scores: Mapping[str, float] = field(default_factory=dict)  # cosine of each semantic candidate

    def to_dict(self) -> dict:
        return {
            "tools": list(self.tools),
            "sources": dict(self.sources),
            "dropped": [list(x) for x in self.dropped],
            "evicted": list(self.evicted),
            "scores": dict(self.scores),
        }


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(n for n in names if isinstance(n, str) and n))


def skill_tier(
    authored: Sequence[str], hints: Iterable[Mapping[str, Sequence[str]]] = ()
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The SKILL tier: (skill_tools, withheld) from the authored tools and tier-1 hint payloads in render
    order (`{"prefer": [...], "drop": [...]}`). Preferred names go first, dropped names are withheld; a later
    hint about the same tool wins. Names outside the live registry are dropped later, by `ToolLoader.select`."""
    last: dict[str, str] = {}
    for payload in hints:
        for action in ("prefer", "drop"):
            for n in payload.get(action, ()):
                last.pop(n, None)
                last[n] = action
    withheld = tuple(n for n, a in last.items() if a == "drop")
    preferred = [n for n, a in last.items() if a == "prefer"]
    return tuple(n for n in dict.fromkeys(preferred + list(authored)) if n not in withheld), withheld


class ToolLoader:
    """`registry` maps every live tool name to its description (the text semantic selection matches)."""

    def __init__(
        self,
        registry: Mapping[str, str],
        core: Sequence[str] = (),
        *,
        max_tools: int = SHIPPED.max_tools,
        threshold: float = SEMANTIC_THRESHOLD,
        embedder=None,
    ):
        if max_tools < 1:
            raise ValueError(f"max_tools must be ≥ 1, got {max_tools}")
        self.registry = dict(registry)
        self.core = tuple(n for n in _unique(core) if n in self.registry)
        self.core_unknown = tuple(n for n in _unique(core) if n not in self.registry)
        self.max_tools = max_tools
        self.threshold = threshold
        self.embedder = embedder
        self._loaded: OrderedDict[str, None] = OrderedDict()  # non-core, least recently used first
        self._tool_vectors: tuple[list[str], np.ndarray] | None = None

    @property
    def loaded(self) -> tuple[str, ...]:
        return self.core + tuple(self._loaded)

    def _semantic(self, goal: str | None) -> list[tuple[str, float]]:
        if not goal or self.embedder is None:
            return []
        import numpy as np  # only semantic selection needs it; `resolve` imports this module on the CLI's path

        if self._tool_vectors is None:
            names = sorted(n for n in self.registry if n not in self.core)
            texts = [f"{n.replace('_', ' ')}: {self.registry[n]}" for n in names]
            self._tool_vectors = (names, self.embedder.encode(texts) if names else np.zeros((0, 1), np.float32))
        names, vectors = self._tool_vectors
        if not names:
            return []
        scores = cosines(vectors, self.embedder.encode([goal]))[:, 0]
        ranked = sorted(
            ((n, float(s)) for n, s in zip(names, scores) if s >= self.threshold), key=lambda x: (-x[1], x[0])
        )
        return ranked

    def select(
        self, goal: str | None = None, skill_tools: Sequence[str] = (), withheld: Iterable[str] = ()
    ) -> Selection:
        """Admit this turn's tools and update the LRU state."""
        withheld = set(withheld) - set(self.core)
        dropped: list[tuple[str, str]] = [(n, "not in the live registry (core)") for n in self.core_unknown]
        wanted: list[tuple[str, str]] = []
        for n in _unique(skill_tools):
            if n in self.core:
                continue
            if n not in self.registry:
                dropped.append((n, "not in the live registry"))
            elif n in withheld:
                dropped.append((n, "withheld by a learned tool-hint"))
            else:
                wanted.append((n, "skill"))
        semantic = self._semantic(goal)
        taken = {n for n, _ in wanted} | set(self.core)
        wanted += [(n, "semantic") for n, _ in semantic if n not in taken and n not in withheld]

        evicted = [n for n in self._loaded if n in withheld]
        for n in evicted:
            del self._loaded[n]
        room = max(0, self.max_tools - len(self.core))
        asked: set[str] = set()
        admitted: list[tuple[str, str]] = []
        for name, source in wanted:
            if name in self._loaded:
                self._loaded.move_to_end(name)
            elif len(self._loaded) < room:
                self._loaded[name] = None
            else:
                victim = next((n for n in self._loaded if n not in asked), None)
                if victim is None:
                    dropped.append((name, f"cap of {self.max_tools} tools reached by higher-precedence tools"))
                    continue
                del self._loaded[victim]
                evicted.append(victim)
                self._loaded[name] = None
            asked.add(name)
            admitted.append((name, source))

        carried = [n for n in reversed(self._loaded) if n not in asked]
        tools = self.core + tuple(n for n, _ in admitted) + tuple(carried)
        sources = {n: "core" for n in self.core} | dict(admitted) | {n: "carried" for n in carried}
        return Selection(tools, sources, tuple(dropped), tuple(evicted), dict(semantic))
