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
Validation is pure and raises `GrammarError` naming the offending field. It is split in three so
the write-path gates can report each separately: `check_kind` (known, not `fact`, tier 2 only for
research), `check_shape` (fields and types, canonical form) and `cap_violations` (sizes);
`validate_payload` runs all three. `validate_fact` checks a tier-0 `{namespace?, key, value}`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cached_property, lru_cache
from itertools import chain
from types import MappingProxyType
from typing import Any

from .anchor import Anchor
from .common import FieldError, dumps, utc_now
from .display import delta_html, delta_text
from .textguard import markdown_line

__all__ = [
    "AUTO_APPROVE_SOURCES",
    "KINDS",
    "RESTRICTIVE_ACTIONS",
    "SCOPE_FORMS",
    "STATUSES",
    "SOURCES",
    "TIERS",
    "TRUSTED_SOURCES",
    "Delta",
    "GrammarError",
    "Provenance",
    "ScopeError",
    "as_read",
    "cap_violations",
    "cap_violations_many",
    "check_kind",
    "check_scope",
    "default_read_scope",
    "lesson_digest",
    "check_shape",
    "new_delta_id",
    "new_delta_ids",
    "validate_fact",
    "validate_payload",
    "BLOCK_HEADING",
    "BLOCK_INTRO",
    "SECTION_LABEL",
    "item_text",
]

TIERS: Mapping[str, int] = MappingProxyType(
    {"tool-hint": 1, "parameter": 2, "exception": 2, "preference": 3, "example": 3}
)
KINDS = tuple(TIERS)
RESEARCH_KINDS = frozenset(k for k, t in TIERS.items() if t == 2)
STATUSES = ("staged", "active", "quarantined", "orphaned", "archived")
RESTRICTIVE_ACTIONS = frozenset(
    {
        "ask-first",
        "decline",
        "skip",
        "escalate-to-user",
        "require-confirmation",
        "flag-for-review",
        "do-not-send",
        "draft-only",
    }
)
SOURCES = ("user_instruction", "outcome_evidence", "observed_content", "unknown")
TRUSTED_SOURCES = frozenset({"user_instruction", "outcome_evidence"})
# The only provenance that auto-approve may ever make active without a person (the design's open question 6):
# the user said it. Outcome evidence is trusted (never quarantined) but always waits for review: a signal
# inferred from outcomes can be steered by whoever shapes those outcomes.
AUTO_APPROVE_SOURCES = frozenset({"user_instruction"})
PROSE_LIMIT = 400
TRIGGER_LIMIT = 200
KEY_LIMIT = 64
VALUE_LIMIT = 200
TOOL_LIMIT = 14  # the loader's max_tools: a tool-hint can never name more than a full tool set
FACT_VALUE_LIMIT = 1000  # JSON characters
TURN_ID_LIMIT = 128  # provenance turns are ids, never message text


class GrammarError(ValueError):
    """A delta that the grammar does not allow; `field` names the offending part."""

    def __init__(self, message: str, field: str | None = None):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


AGENT_NAME = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?")  # `Store.open(agent=)`, `agent:NAME`
# The scopes a lesson may be written with. `user` and `agent:NAME` are what a store reads by default
# (`Store.read_scopes`: its agent's own, then the user's); the qualified forms are narrower scopes a reader names
# itself: a tool's `Facts.get(..., scope="sender:ADDRESS")` (falling back to the bound chain), a host's
# `resolve(scope=[..., "user:work"])` / `overlay-kit resolve --scope`. Anything else (`USER`, `admin`, `*`,
# `"user "`, `agent:`) no reader ever reads: it is refused (`check_scope`), never stored to sit unread.
SCOPE_QUALIFIERS = ("user", "sender", "person", "path", "session")
SCOPE_LIMIT = 200
SCOPE_FORMS = (
    "user",
    "agent:NAME",
    *(f"{q}:{v}" for q, v in zip(SCOPE_QUALIFIERS, ("LABEL", "ADDRESS", "NAME", "DIR", "ID"))),
)
_SCOPE_HELP = (
    "'user' (every agent of the user), 'agent:NAME' (one agent; NAME is lowercase letters, digits, "
    "'.', '_', '-', 1 to 64, starting and ending with a letter or digit), or a narrower scope that "
    "only a reader naming it reads: 'user:LABEL', 'sender:ADDRESS', 'person:NAME', 'path:DIR', "
    "'session:ID'"
)


class ScopeError(FieldError):
    """A scope no reader reads (`check_scope`); `field` is "scope" and the message lists the valid forms."""

    def __init__(self, scope: Any, field: str = "scope", *, where: str | None = None):
        self.scope, self.where = scope, where
        super().__init__(field, f"{scope!r} is not a scope; a scope is {_SCOPE_HELP}")
        if where:  # which row of a batch: "lesson 3: scope: …"
            self.args = (f"{where}: {self.args[0]}",)


def check_scope(scope: Any, field: str = "scope") -> str:
    """`scope` itself when it is one of `SCOPE_FORMS` exactly (case, spaces and all: nothing is normalised,
    since a stored scope is compared byte for byte by every reader); else `ScopeError`."""
    if not isinstance(scope, str) or len(scope) > SCOPE_LIMIT:
        raise ScopeError(scope, field)
    if scope == "user":
        return scope
    qualifier, colon, value = scope.partition(":")
    if colon and qualifier == "agent" and AGENT_NAME.fullmatch(value):
        return scope
    if colon and qualifier in SCOPE_QUALIFIERS and value and value == value.strip() and value.isprintable():
        return scope
    raise ScopeError(scope, field)


def default_read_scope(scope: str) -> bool:
    """Whether a store reads `scope` without being told to (`user`, `agent:NAME`); a qualified scope is read only
    by a reader that names it."""
    return scope == "user" or scope.startswith("agent:")


def new_delta_id() -> str:
    import uuid  # on first use: `uuid` imports `platform`, a cost every CLI start would pay

    return f"delta_{uuid.uuid4().hex[:16]}"  # uuid4: a seeded study (studies.deploy) draws them from its seed


def new_delta_ids(n: int) -> list[str]:
    """`n` ids of `new_delta_id`, in ascending order: a batch's rows then enter the id indexes in key order."""
    return sorted([new_delta_id() for _ in range(n)])


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


def _text(payload: Mapping, key: str, kind: str, *, required: bool = True) -> str | None:
    value = payload.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise GrammarError(f"{kind} needs a non-empty string", f"payload.{key}")
    return value


def _names(payload: Mapping, key: str) -> list[str]:
    value = payload.get(key, [])
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
        raise GrammarError("must be a list of tool names", f"payload.{key}")
    return list(dict.fromkeys(v.strip() for v in value))


_FIELDS = {
    "tool-hint": {"prefer", "drop"},
    "parameter": {"key", "value", "scope"},
    "exception": {"condition", "action"},
    "preference": {"body", "trigger"},
    "example": {"input", "output", "trigger"},
}


def check_kind(kind: str, *, research: bool = False) -> None:
    """`kind` is a storable delta kind (tier 2 only with `research=True`); `fact` never is."""
    if kind == "fact":
        raise GrammarError("a fact is never a delta: route it to learned_facts (tier 0)", "kind")
    if kind not in TIERS:
        raise GrammarError(f"unknown kind {kind!r}; kinds are {', '.join(KINDS)}", "kind")
    if kind in RESEARCH_KINDS and not research:
        raise GrammarError(f"{kind} is tier 2, deferred past v1; open the store with research=True to study it", "kind")


def check_shape(kind: str, payload: Any) -> dict:
    """The payload's fields and types for `kind` (no size caps); return it in canonical form."""
    allowed = _FIELDS.get(kind)
    if allowed is None:
        raise GrammarError(f"unknown kind {kind!r}; kinds are {', '.join(KINDS)}", "kind")
    if type(payload) is not dict and not isinstance(payload, Mapping):
        raise GrammarError("must be a mapping", "payload")
    if not payload.keys() <= allowed:
        extra = sorted(set(payload) - allowed)
        raise GrammarError(f"unknown field(s) {', '.join(map(str, extra))} for {kind}", f"payload.{extra[0]}")

    if kind == "tool-hint":
        prefer, drop = _names(payload, "prefer"), _names(payload, "drop")
        if not prefer and not drop:
            raise GrammarError("a tool-hint must prefer or drop at least one tool", "payload.prefer")
        if set(prefer) & set(drop):
            raise GrammarError(f"{sorted(set(prefer) & set(drop))} both preferred and dropped", "payload.drop")
        return {"prefer": prefer, "drop": drop}
    if kind == "parameter":
        key = _text(payload, "key", kind)
        value = payload.get("value")
        if (
            not isinstance(value, (str, int, float, bool))
            or (isinstance(value, str) and not value.strip())
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            raise GrammarError("must be a string, a finite number or a boolean", "payload.value")
        scope = _text(payload, "scope", kind, required=False)
        out = {"key": key, "value": value}
        if scope:
            out["scope"] = scope
        return out
    if kind == "exception":
        condition = _text(payload, "condition", kind)
        action = payload.get("action")
        if action not in RESTRICTIVE_ACTIONS:
            raise GrammarError(
                f"{action!r} is not a restrictive action; allowed: {', '.join(sorted(RESTRICTIVE_ACTIONS))}",
                "payload.action",
            )
        return {"condition": condition, "action": action}
    trigger = _text(payload, "trigger", kind, required=False)
    if kind == "preference":
        out = {"body": _text(payload, "body", kind)}
    else:
        out = {"input": _text(payload, "input", kind), "output": _text(payload, "output", kind)}
    if trigger:
        out["trigger"] = trigger
    return out


_CONTROL_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and line feed, DEL, C1


def _controls(value: Any, where: str) -> list[GrammarError]:
    """C0 controls (tab and line feed aside), DEL and C1 controls in any string of a payload: a CR, an ANSI
    escape or a backspace can make a terminal show a reviewer something other than what is stored."""
    if isinstance(value, str):
        if _CONTROL_CHARS.search(value) is None:
            return []
        bad = _CONTROL_CHARS.findall(value)
        return [
            GrammarError(f"control character U+{ord(bad[0]):04X} ({len(bad)} in all); lessons are plain text", where)
        ]
    if isinstance(value, Mapping):
        try:  # the common case, strings only and none with a control character: one search
            if _CONTROL_CHARS.search("".join(value) + "".join(value.values())) is None:
                return []
        except TypeError:
            pass
        return [e for k, v in value.items() for e in _controls(k, where) + _controls(v, f"{where}.{k}")]
    if isinstance(value, (list, tuple)):
        return [e for i, v in enumerate(value) for e in _controls(v, f"{where}[{i}]")]
    return []


# The caps on single fields, kind by kind, in the order `cap_violations` reports them (after a payload's control
# characters, a tool-hint's name count and names, and an example's input + output).
_FIELD_CAPS: Mapping[str, tuple[tuple[str, int], ...]] = MappingProxyType(
    {
        "parameter": (("key", KEY_LIMIT), ("value", VALUE_LIMIT), ("scope", KEY_LIMIT)),
        "exception": (("condition", PROSE_LIMIT),),
        "preference": (("body", PROSE_LIMIT), ("trigger", TRIGGER_LIMIT)),
        "example": (("trigger", TRIGGER_LIMIT),),
    }
)


# Per kind, a length no string of a payload can exceed without breaking a cap, where its values are all
# strings (a tool-hint's are lists): the smallest field cap; an example's input + output share theirs.
_SAFE_LENGTH = {
    kind: min([limit for _, limit in caps] + ([PROSE_LIMIT // 2] if kind == "example" else []))
    for kind, caps in _FIELD_CAPS.items()
}


def cap_violations(kind: str, payload: Mapping) -> list[GrammarError]:
    """Every size cap a (well-shaped) payload breaks, and every control character in it; empty when it fits."""
    return cap_violations_many([(kind, payload)])[0]


def cap_violations_many(items: list[tuple[str, Mapping]]) -> list[list[GrammarError]]:
    """`cap_violations` of each (kind, payload). A batch of payloads that hold only strings, none of them with
    a control character and none longer than the shortest cap it is under, breaks nothing: found in a few
    passes over the whole batch. Otherwise payload by payload (the control characters of all the payloads
    that hold only strings still looked for in one search)."""
    payloads = [payload for _, payload in items]
    if all([type(payload) is dict for payload in payloads]):
        keys = list(chain.from_iterable(payloads))
        values = list(chain.from_iterable(map(dict.values, payloads)))
        if set(map(type, keys)) | set(map(type, values)) <= {str} and max(map(len, values), default=0) <= min(
            [_SAFE_LENGTH.get(k, -1) for k in {k for k, _ in items}], default=0
        ):
            text = " ".join(keys) + " " + " ".join(values)
            if text.isprintable() or _CONTROL_CHARS.search(text) is None:  # controls are not printable
                return [[] for _ in items]
    texts: list[str] = []
    plain = []
    for payload in payloads:
        flat = type(payload) is dict and all([type(v) is str for v in payload.values()])
        plain.append(flat)
        if flat:
            texts.extend(payload)
            texts.extend(payload.values())
    try:  # a line feed is no control character: the joined text holds one exactly where a payload does
        clean = _CONTROL_CHARS.search("\n".join(texts)) is None
    except TypeError:  # a key that is not a string
        clean = False
    out = []
    for (kind, payload), flat in zip(items, plain):
        found = [] if clean and flat else _controls(payload, "payload")
        if kind == "tool-hint":
            names = list(payload.get("prefer") or []) + list(payload.get("drop") or [])
            if len(names) > TOOL_LIMIT:
                found.append(GrammarError(f"{len(names)} tool names; at most {TOOL_LIMIT}", "payload.prefer"))
            for n in names:
                if isinstance(n, str) and len(n) > KEY_LIMIT:
                    found.append(
                        GrammarError(f"tool name of {len(n)} characters; at most {KEY_LIMIT}", "payload.prefer")
                    )
        elif kind == "example":
            total = sum(len(payload.get(k) or "") for k in ("input", "output"))
            if total > PROSE_LIMIT:
                found.append(
                    GrammarError(f"input + output are {total} characters; at most {PROSE_LIMIT}", "payload.output")
                )
        for key, limit in _FIELD_CAPS.get(kind, ()):
            value = payload.get(key)
            if isinstance(value, str) and len(value) > limit:
                found.append(GrammarError(f"{len(value)} characters; at most {limit}", f"payload.{key}"))
        out.append(found)
    return out


def validate_payload(kind: str, payload: Any, *, research: bool = False) -> dict:
    """Check a payload against its kind (kind, shape, caps); return it in canonical form."""
    check_kind(kind, research=research)
    canonical = check_shape(kind, payload)
    problems = cap_violations(kind, canonical)
    if problems:
        raise problems[0]
    return canonical


def validate_fact(payload: Any) -> tuple[str | None, str, Any]:
    """A tier-0 fact payload `{namespace?, key, value}` → (namespace or None, key, value)."""
    if not isinstance(payload, Mapping):
        raise GrammarError("must be a mapping", "payload")
    extra = sorted(set(payload) - {"namespace", "key", "value"})
    if extra:
        raise GrammarError(f"unknown field(s) {', '.join(map(str, extra))} for fact", f"payload.{extra[0]}")
    namespace = _text(payload, "namespace", "fact", required=False)
    key = _text(payload, "key", "fact")
    if "value" not in payload or payload["value"] is None:
        raise GrammarError("a fact needs a value", "payload.value")
    value = payload["value"]
    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise GrammarError(f"must be JSON (string, number, boolean, list or mapping): {exc}", "payload.value") from exc
    controls = _controls(dict(payload), "payload")
    if controls:
        raise controls[0]
    for name, text, limit in (
        ("namespace", namespace or "", KEY_LIMIT),
        ("key", key, KEY_LIMIT),
        ("value", encoded, FACT_VALUE_LIMIT),
    ):
        if len(text) > limit:
            raise GrammarError(f"{len(text)} characters; at most {limit}", f"payload.{name}")
    return namespace, key, value


def as_read(text: str) -> str:
    """`text` as a person reads it: NFKC, case folded, runs of white space as one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def lesson_digest(kind: str, scope: str, payload: Any) -> str:
    """What makes two lessons one, wherever each is anchored: kind, scope and payload, every string in the
    payload `as_read`. A hex digest: the store keeps it beside each row (indexed), so a repeat is found by
    lookup, not by reading the skill's lessons."""

    def norm(value):
        if isinstance(value, str):
            return as_read(value)
        if isinstance(value, Mapping):
            return {k: norm(v) for k, v in value.items()}
        return [norm(v) for v in value] if isinstance(value, (list, tuple)) else value

    text = dumps([kind, scope, norm(payload)])
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


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
    # The canonical payload the store checked this delta's row against (`Store` reads: `vouched`); never copied
    # by `evolve`. While `payload` equals it, `check_shape` is not run again (`shape_checked`).
    _checked: Mapping[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

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

    @cached_property
    def lesson(self) -> str:
        """`lesson_digest` of this delta (computed from its payload, never read from a row)."""
        return lesson_digest(self.kind, self.scope, self.payload)

    def evolve(self, **changes) -> "Delta":
        return replace(self, **changes)

    def vouched(self, checked: Mapping[str, Any]) -> "Delta":
        """This delta, marked as read from a row whose payload passed `check_shape` as `checked` (a copy no
        caller holds: a payload changed after the read no longer equals it). The store's reads only."""
        object.__setattr__(self, "_checked", checked)
        return self

    @property
    def shape_checked(self) -> bool:
        """Whether `check_shape(kind, payload)` is known to return `payload` unchanged, without running it."""
        return self._checked is not None and self.payload == self._checked

    def _repr_html_(self) -> str:  # rich display in Jupyter (overlay_kit.display builds plain HTML)
        return delta_html(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(delta_text(self))

    def to_dict(self) -> dict:
        """The stable JSON shape (`overlay-kit deltas --json`, documented in the README)."""

        def t(when: datetime | None) -> str | None:
            return None if when is None else when.astimezone(timezone.utc).isoformat(timespec="microseconds")

        return {
            "id": self.id,
            "skill": self.skill,
            "kind": self.kind,
            "tier": self.tier,
            "status": self.status,
            "scope": self.scope,
            "anchor": self.anchor.to_dict(),
            "base_root": self.base_root,
            "payload": dict(self.payload),
            "text": self.text,
            "provenance": self.provenance.to_dict(),
            "trusted": self.provenance.trusted,
            "findings": list(self.findings),
            "success_count": self.success_count,
            "attempt_count": self.attempt_count,
            "superseded_by": self.superseded_by,
            "created_at": t(self.created_at),
            "approved_at": t(self.approved_at),
            "last_used_at": t(self.last_used_at),
        }


# ----------------------------------------------------------------------------- as text in a document
# How learned deltas read inside an effective skill: one list item per delta under a section's label, or in
# the final block. The budget counts exactly this text and the resolver renders it.

BLOCK_HEADING = "## Learned adjustments"
BLOCK_INTRO = "_Learned from use; not part of the authored skill._"
SECTION_LABEL = "_Learned for this section:_"


def item_text(delta) -> str:
    """Exactly the Markdown one learned delta renders as: one list item on ONE line.

    The lesson is flattened and escaped by `textguard.markdown_line`, so no line of it can open a heading,
    fence, HTML block, setext underline or link reference definition: a learned line can never open,
    close or hide a document-level section, nor re-point an authored reference.
    """
    return _item_text(str(delta.text))


@lru_cache(maxsize=65536)
def _item_text(text: str) -> str:
    return "- " + markdown_line(text) + "\n"
