"""The delta grammar: a bounded vocabulary of typed lessons, and where each one came from.

| kind        | tier | payload                                   |
|-------------|------|-------------------------------------------|
| tool-hint   | 1    | {prefer: [name…], drop: [name…]}          |
| parameter   | 2    | {key, value, scope?}                      |
| exception   | 2    | {condition, action ∈ RESTRICTIVE_ACTIONS} |
| preference  | 3    | {body ≤ 400 chars, trigger?}              |
| example     | 3    | {input, output ≤ 400 chars together, trigger?} |

`fact` is never a delta: a value a tool can read is routed to tier 0 (`learned_facts`). Tier-2 kinds
exist for research and are refused unless the caller passes `research=True` (v1 defers them).
Validation is pure and raises `GrammarError` naming the offending field.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from types import MappingProxyType
from typing import Any

from .anchor import Anchor

__all__ = [
    "KINDS",
    "RESTRICTIVE_ACTIONS",
    "STATUSES",
    "TIERS",
    "TRUSTED_SOURCES",
    "Delta",
    "GrammarError",
    "Provenance",
    "new_delta_id",
    "utc_now",
    "validate_payload",
]

TIERS: Mapping[str, int] = MappingProxyType(
    {"tool-hint": 1, "parameter": 2, "exception": 2, "preference": 3, "example": 3})
KINDS = tuple(TIERS)
RESEARCH_KINDS = frozenset(k for k, t in TIERS.items() if t == 2)
STATUSES = ("staged", "active", "quarantined", "orphaned", "archived")
RESTRICTIVE_ACTIONS = frozenset({
    "ask-first", "decline", "skip", "escalate-to-user", "require-confirmation", "flag-for-review",
    "do-not-send", "draft-only",
})
SOURCES = ("user_instruction", "outcome_evidence", "observed_content", "unknown")
TRUSTED_SOURCES = frozenset({"user_instruction", "outcome_evidence"})
PROSE_LIMIT = 400
TRIGGER_LIMIT = 200
KEY_LIMIT = 64
VALUE_LIMIT = 200


class GrammarError(ValueError):
    """A delta that the grammar does not allow; `field` names the offending part."""

    def __init__(self, message: str, field: str | None = None):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def new_delta_id() -> str:
    return f"delta_{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True)
class Provenance:
    """Where a lesson came from. Turns are session/turn ids, never message content."""

    source: str = "unknown"
    turns: tuple[str, ...] = ()

    @property
    def trusted(self) -> bool:
        return self.source in TRUSTED_SOURCES

    def to_dict(self) -> dict:
        return {"source": self.source, "turns": list(self.turns)}

    @classmethod
    def from_dict(cls, data: Any) -> "Provenance":
        """Unreadable or unknown provenance is `unknown`: untrusted, never trusted by default."""
        if not isinstance(data, Mapping):
            return cls()
        source = data.get("source")
        turns = data.get("turns") or ()
        if source not in SOURCES:
            source = "unknown"
        if not isinstance(turns, (list, tuple)):
            turns = ()
        return cls(source, tuple(str(t) for t in turns))


def _text(payload: Mapping, key: str, kind: str, *, required: bool = True, limit: int | None = None) -> str | None:
    value = payload.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise GrammarError(f"{kind} needs a non-empty string", f"payload.{key}")
    if limit is not None and len(value) > limit:
        raise GrammarError(f"{len(value)} characters; at most {limit}", f"payload.{key}")
    return value


def _names(payload: Mapping, key: str) -> list[str]:
    value = payload.get(key, [])
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
        raise GrammarError("must be a list of tool names", f"payload.{key}")
    return [v.strip() for v in value]


def validate_payload(kind: str, payload: Any, *, research: bool = False) -> dict:
    """Check a payload against its kind; return it in canonical form (unknown keys refused)."""
    if kind == "fact":
        raise GrammarError("a fact is never a delta: route it to learned_facts (tier 0)", "kind")
    if kind not in TIERS:
        raise GrammarError(f"unknown kind {kind!r}; kinds are {', '.join(KINDS)}", "kind")
    if kind in RESEARCH_KINDS and not research:
        raise GrammarError(f"{kind} is tier 2, deferred past v1; open the store with research=True to study it",
                           "kind")
    if not isinstance(payload, Mapping):
        raise GrammarError("must be a mapping", "payload")
    allowed = {
        "tool-hint": {"prefer", "drop"},
        "parameter": {"key", "value", "scope"},
        "exception": {"condition", "action"},
        "preference": {"body", "trigger"},
        "example": {"input", "output", "trigger"},
    }[kind]
    extra = sorted(set(payload) - allowed)
    if extra:
        raise GrammarError(f"unknown field(s) {', '.join(extra)} for {kind}", f"payload.{extra[0]}")

    if kind == "tool-hint":
        prefer, drop = _names(payload, "prefer"), _names(payload, "drop")
        if not prefer and not drop:
            raise GrammarError("a tool-hint must prefer or drop at least one tool", "payload.prefer")
        if set(prefer) & set(drop):
            raise GrammarError(f"{sorted(set(prefer) & set(drop))} both preferred and dropped", "payload.drop")
        return {"prefer": prefer, "drop": drop}
    if kind == "parameter":
        key = _text(payload, "key", kind, limit=KEY_LIMIT)
        value = payload.get("value")
        if not isinstance(value, (str, int, float, bool)) or (isinstance(value, str) and not value.strip()):
            raise GrammarError("must be a string, number or boolean", "payload.value")
        if isinstance(value, str) and len(value) > VALUE_LIMIT:
            raise GrammarError(f"{len(value)} characters; at most {VALUE_LIMIT}", "payload.value")
        out = {"key": key, "value": value}
        scope = _text(payload, "scope", kind, required=False, limit=KEY_LIMIT)
        return out | ({"scope": scope} if scope else {})
    if kind == "exception":
        condition = _text(payload, "condition", kind, limit=PROSE_LIMIT)
        action = payload.get("action")
        if action not in RESTRICTIVE_ACTIONS:
            raise GrammarError(f"{action!r} is not a restrictive action; allowed: "
                               f"{', '.join(sorted(RESTRICTIVE_ACTIONS))}", "payload.action")
        return {"condition": condition, "action": action}
    trigger = _text(payload, "trigger", kind, required=False, limit=TRIGGER_LIMIT)
    if kind == "preference":
        out = {"body": _text(payload, "body", kind, limit=PROSE_LIMIT)}
    else:
        inp, outp = _text(payload, "input", kind), _text(payload, "output", kind)
        if len(inp) + len(outp) > PROSE_LIMIT:
            raise GrammarError(f"input + output are {len(inp) + len(outp)} characters; at most {PROSE_LIMIT}",
                               "payload.output")
        out = {"input": inp, "output": outp}
    return out | ({"trigger": trigger} if trigger else {})


@dataclass(frozen=True)
class Delta:
    """One learned lesson attached to a section of an authored skill. Immutable; the store versions it."""

    skill: str  # base skill name (== its directory)
    kind: str
    payload: Mapping[str, Any]
    anchor: Anchor
    provenance: Provenance = field(default_factory=Provenance)
    scope: str = "user"
    base_root: str | None = None
    status: str = "staged"
    id: str = field(default_factory=new_delta_id)
    created_at: datetime = field(default_factory=utc_now)
    approved_at: datetime | None = None
    last_used_at: datetime | None = None
    success_count: int = 0
    attempt_count: int = 0
    superseded_by: str | None = None
    findings: tuple[str, ...] = ()  # injection-scan findings (quarantined deltas)

    @property
    def tier(self) -> int:
        return TIERS[self.kind]

    @property
    def sort_key(self) -> tuple:
        """Deterministic render order: (tier, kind, created_at as a UTC instant, id)."""
        return (self.tier, self.kind, self.created_at.astimezone(timezone.utc), self.id)

    @property
    def trigger(self) -> str | None:
        """The text a goal is matched against for tier-3 retrieval."""
        if self.tier != 3:
            return None
        return self.payload.get("trigger") or self.payload.get("body") or self.payload.get("input")

    @property
    def text(self) -> str:
        """The lesson as one line of prose (what a tier-2/3 delta contributes to the prompt)."""
        p = self.payload
        if self.kind == "preference":
            return p["body"]
        if self.kind == "example":
            return f"Example — input: {p['input']} → output: {p['output']}"
        if self.kind == "parameter":
            return f"{p['key']} = {json.dumps(p['value'])}" + (f" (for {p['scope']})" if p.get("scope") else "")
        if self.kind == "exception":
            return f"When {p['condition']}: {p['action']}."
        parts = []
        if p.get("prefer"):
            parts.append("prefer " + ", ".join(p["prefer"]))
        if p.get("drop"):
            parts.append("drop " + ", ".join(p["drop"]))
        return "; ".join(parts)

    def evolve(self, **changes) -> "Delta":
        return replace(self, **changes)
