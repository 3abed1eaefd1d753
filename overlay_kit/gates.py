"""The write path: every learned lesson passes an ordered list of small named rules before it is stored.

    learn(store, skill, kind, payload, *, section, provenance, scope=None, evidence=None,
          incognito=False, goal=None, settings=None) -> WriteResult
    check(store_or_None, skill, kind, payload, ...same keywords) -> WriteResult   # dry run: writes nothing

`goal`: the session goal at which a tier-3 lesson (preference, example) was taught or restated. It is kept as an
evidence trigger of the lesson (`Store.add_triggers`, never in its payload): `taught` for a new lesson — its first
trigger when its payload has none (`Store.triggers`) — and `restated` for the live lesson a repeat names (the
`noop` outcome), as is a payload trigger the live lesson lacks. Only a write records them (not `check`), in the
write's transaction, and only from trusted provenance for a repeat: observed content never changes when an
approved lesson applies. A goal on another kind is ignored (it still helps `anchoring.propose` find a section).

`RULES` is read top to bottom; the first rule that decides wins (one refusal, route, stage or quarantine per
rule, so adding or removing a gate is one line and each has a test that fails without it):

| rule                 | outcome      | when                                                                        |
|----------------------|--------------|-----------------------------------------------------------------------------|
| known_kind           | refused      | kind is not a delta kind and not `fact`                                     |
| research_only        | refused      | tier-2 kind on a store not opened with research=True                        |
| capability_bearing   | refused      | the skill holds a filesystem/shell/database/desktop/env permission          |
| payload_shape        | refused      | fields/types wrong for the kind (grammar.check_shape / validate_fact)       |
| payload_caps         | refused      | a field over its cap, a control character, or provenance turns that are not |
|                      |              | short ids; a goal that could not be a trigger (empty, over 200, a control) |
| plain_text           | refused      | a lesson's text carries Markdown block structure (heading, setext          |
|                      |              | underline, fence, HTML block, link reference definition, thematic break,    |
|                      |              | leading blank lines): learned text renders as one line and never as structure |
| no_new_tool          | refused      | a tool-hint names a tool the skill does not declare                         |
| no_widening          | refused      | a lesson (or a fact) edits permissions / security tier / tool list in any   |
|                      |              | spelling (`allowedTools=`, `shell : execute`), is worded to widen them, or  |
|                      |              | names an ungranted permission                                               |
| write_path_tool      | refused      | a tool-hint prefers a tool in the confirmation set (send, trash, …)        |
| quotes_evidence      | refused      | long verbatim overlap with the evidence (the lesson, not the evidence)     |
| known_section        | refused      | the anchor section is not a slug of the skill body                         |
| untrusted_fact       | refused      | a fact from untrusted provenance (tier 0 has no quarantine)                 |
| incognito            | session_only | incognito: nothing is written, and the result says so                      |
| route_fact           | routed       | kind == "fact": a learned_facts row, no delta                               |
| quarantine_untrusted | quarantined  | observed_content / unknown / absent provenance; injection scan stored       |
| stage_trusted        | staged       | trusted provenance (`active` when auto-approve is on and the scan is clean) |

Refused lessons are not stored. Quarantined deltas are never auto-approved and leave quarantine only by
`store.approve(id)`. `promote` activates a staged delta on its outcome counters only, never on a model's
opinion. The store writes no delta row without a seal minted here for exactly that row (as the store encoded it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .anchor import BODY, PREAMBLE, Anchor, parse
from .common import gc_paused
from .defaults import SHIPPED
from .display import write_result_html, write_result_text
from .grammar import (
    AUTO_APPROVE_SOURCES,
    KINDS,
    RESEARCH_KINDS,
    SOURCES,
    TIERS,
    TURN_ID_LIMIT,
    Delta,
    GrammarError,
    Provenance,
    ScopeError,
    as_read,
    cap_violations,
    check_scope,
    check_shape,
    default_read_scope,
    new_delta_ids,
    utc_now,
    validate_fact,
)
from .injection import auto_approve_languages, languages_many, pattern_set, scan, scan_many
from .seal import mint
from .skill import PERMISSION_DOMAINS, Permission, Skill
from .store.core import trigger_problem
from .textguard import block_structure, views, views_many

if TYPE_CHECKING:
    from .store import Fact, Store, Undo

__all__ = [
    "DEFAULT_CONFIRMATION",
    "OUTCOMES",
    "RULES",
    "GateError",
    "GateSettings",
    "Promotion",
    "Submission",
    "Rule",
    "Verdict",
    "WriteResult",
    "check",
    "decide",
    "learn",
    "learn_many",
    "promote",
    "scan",
]

OUTCOMES = ("refused", "routed", "staged", "quarantined", "session_only", "active", "noop")
LIVE = ("staged", "quarantined", "active")  # a lesson that is one of these already makes a repeat a no-op
# Verbs (or whole tool names) whose tools act on the world and stay behind the confirmation gate.
DEFAULT_CONFIRMATION = frozenset(
    {
        "send",
        "reply",
        "forward",
        "trash",
        "delete",
        "remove",
        "archive",
        "schedule",
        "accept",
        "decline",
        "accept_invite",
        "decline_invite",
        "move",
        "label",
        "unsubscribe",
        "post",
        "publish",
        "pay",
        "purchase",
        "write",
        "execute",
        "run",
        "submit",
        "share",
        "upload",
    }
)
CONTROL_FIELDS = frozenset(
    {
        "permissions",
        "security_tier",
        "security-tier",
        "allowed-tools",
        "allowed_tools",
        "tools",
        "metadata",
        "name",
        "version",
        "compatibility",
        "license",
    }
)
_CONTROL_SQUASHED = frozenset(f.replace("-", "").replace("_", "") for f in CONTROL_FIELDS) | {
    "allowedtool",
    "securitylevel",
}
QUOTE_CHARS = 40  # a verbatim run this long copied from the evidence is quoting, not a lesson
MIN_QUOTE_CHARS = 24  # … or a shorter run that makes up most of a short field
MAX_TURNS = 64
_FLAT = (str, int, float, bool, type(None))  # payload values with no strings inside them


# --------------------------------------------------------------------------------- value objects


@dataclass(frozen=True)
class GateSettings:
    """Write-path settings. `auto_approve=None` means: the store's setting (off unless opened with it on)."""

    confirmation_tools: frozenset[str] = DEFAULT_CONFIRMATION
    auto_approve: bool | None = None
    quote_chars: int = QUOTE_CHARS
    # a repeat of a live lesson is a no-op; off only where the new row is meant to replace its twins (a
    # consolidation's umbrella supersedes the members whose text it may share)
    noop_repeats: bool = SHIPPED.noop_repeats


@dataclass(frozen=True)
class Submission:
    """Everything a rule may look at. `evidence` is the text the lesson was drawn from; it is never stored.
    `derived`: what several rules read of the payload (`Derived`), derived when the submission is made (a
    batch derives its rows' together: `_submissions`)."""

    skill: Skill
    kind: str
    payload: Any
    section: str | None
    provenance: Provenance
    scope: str
    evidence: tuple[str, ...]
    incognito: bool
    research: bool
    auto_approve: bool
    settings: GateSettings
    derived: "Derived | None" = field(default=None, repr=False, compare=False)
    goal: str | None = None  # the session goal it was taught or restated at (kept as an evidence trigger)

    def __post_init__(self) -> None:
        if self.derived is None:  # a submission of its own: a batch of one
            object.__setattr__(self, "derived", _derive([(self.kind, self.payload)])[0])

    @property
    def is_fact(self) -> bool:
        return self.kind == "fact"

    @property
    def canonical(self) -> dict | None:
        """The payload in canonical form (`check_shape`), or None when its shape is wrong (`payload_shape`
        reports that)."""
        return self.derived.canonical

    def texts(self) -> list[tuple[str, str]]:
        """(field, text) of every string in the payload (facts: their value's strings too)."""
        return list(self.derived.text_fields)


@dataclass(frozen=True)
class Derived:
    """What several rules read of one payload: its canonical form (None: malformed), (field, text) of each of
    its strings, their views (`textguard.views`), the injection scan's findings on them (each named by its
    field), whether a widening pattern may match one of them or a reading `no_widening` tries, and the
    languages besides English each is in (`injection.languages`: what the scan read them as)."""

    canonical: dict | None
    text_fields: tuple[tuple[str, str], ...]
    views: tuple[tuple[str, ...], ...]
    findings: tuple[str, ...]
    may_widen: bool
    languages: tuple[tuple[str, ...], ...]


def _derive(items: list[tuple[str, Any]]) -> list[Derived]:
    """`Derived` of each (kind, payload), every step one pass over all the texts of the batch (views, languages,
    the scan, the widening automaton)."""
    fields = [_payload_texts(payload) for _, payload in items]
    texts = [text for f in fields for _, text in f]
    views = views_many(texts)
    langs = languages_many(texts)
    hits = scan_many(texts, readings=views, langs=langs)
    may = _widening_set().groups_many(["\n".join((t, *v, *_words(t, v))) for t, v in zip(texts, views)])
    out, at = [], 0
    for (kind, payload), f in zip(items, fields):
        end = at + len(f)
        findings = tuple(f"{where}: {hit}" for (where, _), found in zip(f, hits[at:end]) for hit in found)
        out.append(
            Derived(_shaped(kind, payload), f, tuple(views[at:end]), findings, any(may[at:end]), tuple(langs[at:end]))
        )
        at = end
    return out


def _shaped(kind: str, payload: Any) -> dict | None:
    try:
        return check_shape(kind, payload)
    except GrammarError:
        return None


def _payload_texts(payload: Any) -> tuple[tuple[str, str], ...]:
    if isinstance(payload, dict) and all([isinstance(v, _FLAT) for v in payload.values()]):
        return tuple([(f"payload.{k}", v) for k, v in payload.items() if isinstance(v, str)])
    out: list[tuple[str, str]] = []

    def walk(path: str, value: Any) -> None:
        if isinstance(value, str):
            out.append((path, value))
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{path}.{k}", v)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(f"{path}[{i}]", v)

    walk("payload", payload)
    return tuple(out)


@dataclass(frozen=True)
class Verdict:
    outcome: str
    rule: str
    message: str
    findings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    name: str
    check: Callable[[Submission], "Verdict | str | None"]  # a Verdict decides; a str is a warning


@dataclass(frozen=True)
class WriteResult:
    """What `learn` did. `outcome` ∈ OUTCOMES; `rule` names the gate that decided."""

    outcome: str
    message: str
    rule: str
    delta: Delta | None = None
    fact: "Fact | None" = None
    undo: "Undo | None" = None
    findings: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    dry_run: bool = False  # from `check`: `delta` is what learn would store; nothing was written
    triggers: tuple[str, ...] = ()  # evidence triggers this write recorded for `delta` (its goal; a repeat's)

    @property
    def persisted(self) -> bool:
        return not self.dry_run and self.outcome in ("routed", "staged", "quarantined", "active")

    def _repr_html_(self) -> str:
        return write_result_html(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(write_result_text(self))

    def to_dict(self) -> dict:
        return {
            "outcome": self.outcome,
            "rule": self.rule,
            "message": self.message,
            "persisted": self.persisted,
            "delta_id": self.delta.id if self.delta else None,
            "status": self.delta.status if self.delta else None,
            "findings": list(self.findings),
            "warnings": list(self.warnings),
            "triggers": list(self.triggers),
        }


class GateError(ValueError):
    """A write-path call that is not allowed (not a refused lesson: that is a `WriteResult`)."""


def _refuse(rule: str, message: str) -> Verdict:
    return Verdict("refused", rule, message)


# ------------------------------------------------------------------------------- injection scan

# --------------------------------------------------------------------------------------- helpers


def _declared_tools(skill: Skill) -> set[str]:
    return set(skill.tools) | set(skill.allowed_tools)


def _name_tokens(name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if p]
    return set(parts) | {"_".join(parts), name.lower()} | {f"{a}_{b}" for a, b in zip(parts, parts[1:])}


def _write_path(name: str, confirmation: Iterable[str]) -> bool:
    wanted = {c.lower() for c in confirmation}
    return bool(_name_tokens(name) & wanted)


_PERMISSION_TOKEN = re.compile(
    r"\b(" + "|".join(sorted(PERMISSION_DOMAINS)) + r")\s*[:=]\s*([a-z_*]+)"
    r"(?:\s*:\s*(\S+))?",
    re.IGNORECASE,
)
# Over a "words" reading (folded, camelCase split, `-`/`_`/`.` as spaces, quotes dropped): any spelling of a
# control field being set, or a lesson worded to widen what the skill may do.
_CONTROL_EDIT = re.compile(
    r"\bmetadata gaia\b|\b(?:permissions?|security (?:tier|level)|allowed tools?|tool (?:list|set|allowlist)|"
    r"tools|capabilit(?:y|ies)|scopes?|grants?)\s*[:=]"
    r"|\bsecurity (?:tier|level)\b[^.\n]{0,20}\b(?:verified|community|trusted|raise|upgrade|elevate|increase)"
    r"|\b(?:grant|give|add|enable|allow|permit|unlock|extend|widen|expand|elevate|escalate)\b[^.\n]{0,30}\b(?:"
    r"permissions?|shell|filesystem|file system|root|sudo|admin(?:istrator)? (?:rights|access)|"
    r"(?:full|unrestricted|write|network|internet|database|desktop) access|allowed tools|"
    r"(?:new|more|extra|additional|any|all) tools|security tier|capabilit(?:y|ies))\b"
    r"|\b(?:may|can|are (?:allowed|permitted|free) to|feel free to)\s+(?:also\s+|now\s+|freely\s+)?"
    r"(?:use|call|run|invoke|execute|open)\b[^.\n]{0,40}\b(?:bash|shell|terminal|command line|sudo|root|scripts?|"
    r"(?:any|all|other|every|more|extra) tools?)\b",
    re.IGNORECASE,
)
# … or one that takes a write-path action out from behind the confirmation step ("send replies without asking
# for confirmation"): read per sentence, and not when a negation before it keeps the step ("never … without").
_UNCONFIRMED = re.compile(
    r"\b(?:without|skip(?:ping)?|bypass(?:ing)?|no need (?:to|for)|don t need (?:to|for)?|needn t)\s+"
    r"(?:(?:ask(?:ing)?|wait(?:ing)?|get(?:ting)?|check(?:ing)?|request(?:ing)?|need(?:ing)?|for|me|the|my|a|an|"
    r"any|user s?|their)\s+){0,4}(?:confirm(?:ation|ing)?|approv(?:al|ing)|consent|sign off|permission|review)\b",
    re.IGNORECASE,
)
_WRITE_VERB = re.compile(
    r"\b(?:"
    + "|".join(sorted(DEFAULT_CONFIRMATION | {"transfer", "approve", "book", "merge", "deploy", "push", "sign"}))
    + r")",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:never|not|don t|do not|dont|no one|nobody)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"[.!?;:\n]+")
# A parameter's or fact's key naming what the skill may do (`tier=verified`, `tool_allowlist=…`).
_CONTROL_KEY = re.compile(
    r"\b(?:(?:security )?tiers?|allow ?list|allowed|tools|tool (?:list|set)|toolset|"
    r"permissions?|capabilit(?:y|ies)|grants?|privileges?|sudo)\b",
    re.IGNORECASE,
)
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


_QUOTES_SEPARATORS = re.compile(r"[\"'`_\-.]+")
_WIDENING = (_CONTROL_EDIT, _PERMISSION_TOKEN, _UNCONFIRMED)  # every pattern `no_widening` reads a text with


def _words(text: str, text_views: tuple[str, ...] | None = None) -> list[str]:
    """Readings for the widening check: each folded view, camelCase split, separators and quotes as spaces
    (`text_views`: the text's views, if at hand; they are the split text's where it has no camelCase)."""
    split = _CAMEL.sub(_camel_split, text)
    readings = text_views if text_views is not None and split == text else views(split)
    return [" ".join(_QUOTES_SEPARATORS.sub(" ", v).split()) for v in readings]


def _camel_split(m: re.Match) -> str:
    """`_CAMEL`'s replacement, `\\1 \\2` (a function: `re` finds a template's parse by hashing the pattern)."""
    return f"{m.group(1)} {m.group(2)}"


def _readings(p: Submission) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """(field, text, its views) of each text of the submission."""
    return ((where, text, views) for (where, text), views in zip(p.derived.text_fields, p.derived.views))


def _granted(skill: Skill, token: re.Match) -> bool:
    want = Permission(token.group(1).lower(), token.group(2).lower(), token.group(3))
    for p in skill.permissions:
        if p.domain == want.domain and p.action in (want.action, "*") and (p.scope is None or p.scope == want.scope):
            return True
    return False


def longest_overlap(text: str, evidence: str) -> int:
    """Length of the longest verbatim run of `text` found in `evidence` (both normalized)."""

    def has(n: int) -> bool:
        return any(text[i : i + n] in evidence for i in range(len(text) - n + 1))

    lo, hi = 0, len(text)
    while lo < hi:  # has(n) is monotone in n
        mid = (lo + hi + 1) // 2
        if has(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


@lru_cache(maxsize=256)
def _sections(body: str):
    return parse(body)


@lru_cache(maxsize=256)
def _by_slug(body: str) -> dict:
    """slug → section of a body (a batch looks each row's section up in it)."""
    return {s.slug: s for s in _sections(body)}


def _tool_hint(p: Submission, field: str) -> list[str]:
    """A well-shaped tool-hint's `prefer` or `drop` names; [] for any other proposal."""
    payload = p.canonical if p.kind == "tool-hint" else None
    return [] if payload is None else payload[field]


# ----------------------------------------------------------------------------------------- rules


def known_kind(p: Submission):
    if p.kind != "fact" and p.kind not in TIERS:
        return _refuse("known_kind", f"unknown kind {p.kind!r}; kinds are {', '.join(TIERS)} (or fact → tier 0)")
    return None


def research_only(p: Submission):
    if p.kind in RESEARCH_KINDS and not p.research:
        return _refuse(
            "research_only",
            f"{p.kind} is tier 2, deferred past v1; it is stored only in a store "
            "opened with research=True (CLI: --research)",
        )
    return None


def capability_bearing(p: Submission):
    if p.skill.capability_bearing:
        perms = ", ".join(str(x) for x in p.skill.permissions if x.capability_bearing)
        return _refuse(
            "capability_bearing",
            f"{p.skill.name} holds local-capability permissions ({perms}); "
            "v1 allows no learned lessons on capability-bearing skills",
        )
    return None


def payload_shape(p: Submission):
    try:
        validate_fact(p.payload) if p.is_fact else check_shape(p.kind, p.payload)
    except GrammarError as exc:
        return _refuse("payload_shape", str(exc))
    return None


def payload_caps(p: Submission):
    payload = None if p.is_fact else p.canonical
    if payload is not None:
        problems = cap_violations(p.kind, payload)
        if problems:
            return _refuse("payload_caps", "; ".join(str(e) for e in problems))
    if len(p.provenance.turns) > MAX_TURNS or any(len(t) > TURN_ID_LIMIT for t in p.provenance.turns):
        return _refuse(
            "payload_caps",
            f"provenance.turns: at most {MAX_TURNS} session/turn ids of at most "
            f"{TURN_ID_LIMIT} characters — ids, never message text",
        )
    if p.goal is not None and _keeps_goal(p.kind):
        why = trigger_problem(p.goal)
        if why is not None:
            return _refuse("payload_caps", f"goal: {why}; a goal is kept as the lesson's trigger")
    return None


def _keeps_goal(kind: str) -> bool:
    """Whether a lesson of `kind` keeps the goal it was taught at (tier 3: what selection matches goals with)."""
    return TIERS.get(kind) == 3


def plain_text(p: Submission):
    if p.is_fact or p.kind == "tool-hint":
        return None
    for where, text in p.texts():
        found = block_structure(text)
        if found:
            return _refuse(
                "plain_text",
                f"{where} carries Markdown structure ({', '.join(found)}); a lesson is "
                "plain prose and renders as one line, never as a heading, fence, "
                "block or reference definition",
            )
    return None


def no_new_tool(p: Submission):
    names = _tool_hint(p, "prefer") + _tool_hint(p, "drop")
    unknown = [n for n in names if n not in _declared_tools(p.skill)]
    if unknown:
        have = ", ".join(sorted(_declared_tools(p.skill))) or "none"
        return _refuse(
            "no_new_tool",
            f"tool-hint names {', '.join(unknown)}, which {p.skill.name} does not "
            f"declare (declared: {have}); a delta may never add a tool",
        )
    return None


def no_widening(p: Submission):
    if p.kind not in ("parameter", "fact") and not p.derived.may_widen:
        return None  # no widening pattern can match any reading of its texts: nothing below can refuse it
    if p.kind in ("parameter", "fact") and isinstance(p.payload, Mapping):
        for name in ("namespace", "key"):
            raw = str(p.payload.get(name, "") or "")
            key = " ".join(_words(raw)[0].split()) if raw.strip() else ""
            parts = {key, key.replace(" ", "_"), key.replace(" ", "-"), key.replace(" ", "")}
            if (
                key.startswith("metadata")
                or _CONTROL_KEY.search(key)
                or any(
                    k in CONTROL_FIELDS or k.split(" ")[-1] in CONTROL_FIELDS or k.replace(" ", "") in _CONTROL_SQUASHED
                    for k in parts
                )
            ):
                return _refuse(
                    "no_widening",
                    f"{p.kind} {name} {raw!r} is a frontmatter control field; a "
                    "lesson may never edit permissions, tools or the security tier",
                )
    for where, text, seen in _readings(p):
        for reading in _words(text, seen):
            if _CONTROL_EDIT.search(reading):
                return _refuse(
                    "no_widening",
                    f"{where} edits or widens permissions, tools or the security tier; "
                    "deltas move in the restrictive direction only",
                )
        if _drops_confirmation(text):
            return _refuse(
                "no_widening",
                f"{where} takes an action out from behind the confirmation step; "
                "deltas move in the restrictive direction only",
            )
        for reading in seen:
            for m in _PERMISSION_TOKEN.finditer(reading):
                if not _granted(p.skill, m):
                    return _refuse(
                        "no_widening", f"{where} names permission {m.group(0)!r}, which {p.skill.name} is not granted"
                    )
    return None


def _widening_set():
    return pattern_set(_WIDENING)


def _drops_confirmation(text: str) -> bool:
    for sentence in _SENTENCES.split(text):
        for reading in _words(sentence):
            m = _UNCONFIRMED.search(reading)
            if m and _WRITE_VERB.search(reading) and not _NEGATION.search(reading, 0, m.start()):
                return True
    return False


def write_path_tool(p: Submission):
    # Dropping a write-path tool narrows (allowed); preferring one would steer toward unattended action.
    hits = [n for n in _tool_hint(p, "prefer") if _write_path(n, p.settings.confirmation_tools)]
    if hits:
        return _refuse(
            "write_path_tool",
            f"tool-hint prefers {', '.join(hits)}, in the confirmation set; "
            "learning may not steer toward write-path tools",
        )
    return None


def quotes_evidence(p: Submission):
    evidence = [as_read(e) for e in p.evidence if e]
    if not evidence:
        return None
    for where, text in p.texts():
        norm = as_read(text)
        limit = min(p.settings.quote_chars, max(MIN_QUOTE_CHARS, math.ceil(0.6 * len(norm))))
        for ev in evidence:
            n = longest_overlap(norm, ev)
            if n >= limit:
                return _refuse(
                    "quotes_evidence",
                    f"{where} copies {n} characters of the evidence verbatim; store the lesson, not the evidence",
                )
    return None


def known_section(p: Submission):
    if p.is_fact:
        return None
    slugs = _by_slug(p.skill.body)
    if len(slugs) == 1 and BODY in slugs:
        if p.section in (None, "", BODY):
            return (
                f"{p.skill.name} has no headings: the delta anchors to the whole body ({BODY}), and "
                "whole-body anchors orphan on any edit of the skill"
            )
        return _refuse(
            "known_section",
            f"section {p.section!r} does not exist; {p.skill.name} has no headings, so the only anchor is {BODY}",
        )
    if p.section not in slugs:
        return _refuse(
            "known_section",
            f"section {p.section!r} does not exist in {p.skill.name}; valid sections: {', '.join(slugs)}",
        )
    if p.section == PREAMBLE and not _sections(p.skill.body)[0].text.strip():
        return _refuse(
            "known_section",
            f"{p.skill.name} has no text before its first heading: {PREAMBLE} is "
            "empty and carries no lesson; name a section",
        )
    return None


def untrusted_fact(p: Submission):
    if p.is_fact and not p.provenance.trusted:
        return _refuse(
            "untrusted_fact",
            f"a fact from {p.provenance.source} provenance is not stored: tier 0 "
            "has no quarantine; restate it as a user instruction",
        )
    return None


def incognito(p: Submission):
    if p.incognito:
        return Verdict("session_only", "incognito", "incognito: session only, not persisted")
    return None


def route_fact(p: Submission):
    if p.is_fact:
        return Verdict(
            "routed", "route_fact", "a fact is a tier-0 row a tool reads, not a delta: routed to learned_facts"
        )
    return None


def _quarantined(p: Submission, findings: tuple[str, ...]) -> Verdict:
    note = f"; scan: {len(findings)} finding(s)" if findings else "; scan: clean"
    return Verdict(
        "quarantined",
        "quarantine_untrusted",
        f"untrusted provenance ({p.provenance.source}): quarantined until explicitly approved "
        f"(overlay-kit approve ID){note}",
        findings,
    )


def _staged(p: Submission, findings: tuple[str, ...]) -> Verdict:
    auto = p.auto_approve and p.provenance.source in AUTO_APPROVE_SOURCES
    if auto and not findings:
        partly = sorted({c for codes in p.derived.languages for c in codes} - auto_approve_languages())
        if not partly:
            return _ACTIVE
        return Verdict(
            "staged",
            "stage_trusted",
            f"auto-approve skipped: the injection scan reads {', '.join(partly)} "
            "only in part (held-out attack recall under 0.8 or benign flags over 5 %); " + _STAGED_MESSAGE,
        )
    if not findings:
        return _STAGED
    unread = list(dict.fromkeys(_UNREAD.findall("\n".join(findings))))
    if auto and unread:  # say why auto-approve did not apply: the scan does not read the language yet
        return Verdict(
            "staged",
            "stage_trusted",
            f"auto-approve skipped: the injection scan does not read this "
            f"language yet ({', '.join(unread)}); " + _STAGED_MESSAGE,
            findings,
        )
    return Verdict("staged", "stage_trusted", _STAGED_MESSAGE, findings)


_UNREAD = re.compile(r"not scanned: language \(([^)\n]+)\)")  # `injection._language_finding`


_STAGED_MESSAGE = "staged: review it with `overlay-kit deltas --pending`, then `overlay-kit approve ID`"
_STAGED = Verdict("staged", "stage_trusted", _STAGED_MESSAGE)
_ACTIVE = Verdict("active", "stage_trusted", "user instruction, auto-approve on: active next session")


def quarantine_untrusted(p: Submission):
    if not p.provenance.trusted:
        return _quarantined(p, p.derived.findings)
    return None


def stage_trusted(p: Submission):
    return _staged(p, p.derived.findings)


RULES: tuple[Rule, ...] = (
    Rule("known_kind", known_kind),
    Rule("research_only", research_only),
    Rule("capability_bearing", capability_bearing),
    Rule("payload_shape", payload_shape),
    Rule("payload_caps", payload_caps),
    Rule("plain_text", plain_text),
    Rule("no_new_tool", no_new_tool),
    Rule("no_widening", no_widening),
    Rule("write_path_tool", write_path_tool),
    Rule("quotes_evidence", quotes_evidence),
    Rule("known_section", known_section),
    Rule("untrusted_fact", untrusted_fact),
    Rule("incognito", incognito),
    Rule("route_fact", route_fact),
    Rule("quarantine_untrusted", quarantine_untrusted),
    Rule("stage_trusted", stage_trusted),
)


def decide(proposal: Submission, rules: Iterable[Rule] = RULES) -> tuple[Verdict, tuple[str, ...]]:
    """Run the rules in order: the first Verdict decides. Returns it with the warnings gathered on the way."""
    warnings: list[str] = []
    for rule in rules:
        result = rule.check(proposal)
        if isinstance(result, Verdict):
            return result, tuple(warnings)
        if isinstance(result, str):
            warnings.append(result)
    return _refuse("no_rule", "no gate accepted this lesson"), tuple(warnings)


# ---------------------------------------------------------------------------------------- learn


def _provenance(value: Provenance | str | Mapping | None) -> Provenance:
    """The provenance a lesson is written with. A source name outside `SOURCES` is refused (`GateError`), never
    read as `unknown`: a typo or an invented source (`god_mode`) is a mistake to report, not a lesson to keep.
    (Stored rows are read leniently by `Provenance.from_dict`.)"""
    if isinstance(value, Provenance):
        value = value.to_dict()
    elif isinstance(value, str) or value is None:
        value = {"source": value or "unknown"}
    source = value.get("source", "unknown") if isinstance(value, Mapping) else None
    if source not in SOURCES:
        raise GateError(f"unknown provenance source {source!r}; sources are {', '.join(SOURCES)}")
    return Provenance.from_dict(value)


def _scope(store, scope: str | None) -> str:
    """The scope a lesson is written with (`Store.write_scope`: given, else the shipped default for the store's
    agent); without a store (a dry run), the given one or "user". A scope no reader reads (`USER`, `admin`,
    `*`, `agent:`) is a `ScopeError` naming the valid forms (`grammar.check_scope`), raised before anything is
    written."""
    if scope is not None:
        check_scope(scope)
    return store.write_scope(scope) if store is not None else scope or "user"


def _scope_warnings(p: Submission, warnings: tuple[str, ...]) -> tuple[str, ...]:
    """`warnings`, and for a delta in a qualified scope (`user:work`, `sender:…`) the line saying that only a
    resolve naming that scope applies it, so "active" is never read as "applied everywhere"."""
    if p.is_fact or default_read_scope(p.scope):
        return warnings
    return (
        *warnings,
        f"scope {p.scope}: applied only where a resolve names this scope "
        f"(`overlay-kit resolve SKILL --scope {p.scope}`); a default resolve reads 'user' and "
        "'agent:NAME'",
    )


def _submissions(
    store, skill: Skill, rows: list["Lesson"], settings: GateSettings | None, research: bool | None = None
) -> list[Submission]:
    """What the rules see of each lesson: the settings resolved once (auto-approve and research: the store's
    unless given), each provenance read (`_provenance`) and each scope resolved (`_scope`)."""
    settings = settings or GateSettings()
    auto = (
        (store.auto_approve if store is not None else False) if settings.auto_approve is None else settings.auto_approve
    )
    research = (store.research if store is not None else False) if research is None else research
    derived = _derive([(r.kind, r.payload) for r in rows])
    return [
        Submission(
            skill,
            r.kind,
            r.payload,
            r.section,
            _provenance(r.provenance),
            _scope(store, r.scope),
            (r.evidence,) if isinstance(r.evidence, str) else tuple(r.evidence or ()),
            r.incognito,
            research,
            bool(auto),
            settings,
            d,
            r.goal,
        )
        for r, d in zip(rows, derived)
    ]


def _new_deltas(accepted: list[tuple[Submission, Verdict]]) -> list[Delta]:
    """The delta each (submission, verdict) stores: the canonical payload (`check_shape`, raising if
    malformed), the section's anchor, the verdict's status and findings, a fresh id; `created_at` read per
    row, so a batch renders in the order it was learned."""
    return [
        Delta(
            p.skill.name,
            p.kind,
            p.canonical if p.canonical is not None else check_shape(p.kind, p.payload),
            _anchor(p.skill, p.section),
            p.provenance,
            p.scope,
            p.skill.root_key,
            verdict.outcome,
            delta_id,
            utc_now(),
            findings=verdict.findings,
        )
        for (p, verdict), delta_id in zip(accepted, new_delta_ids(len(accepted)))
    ]


@lru_cache(maxsize=4096)
def _anchor_of(body: str, section: str, version: str | None) -> Anchor:
    sec = _by_slug(body)[section]
    return Anchor(sec.slug, sec.digest, version)


def _anchor(skill: Skill, section: str | None) -> Anchor:
    return _anchor_of(skill.body, section or BODY, skill.version)


def _lesson(kind, payload, section, provenance, scope, evidence, incognito, goal) -> "Lesson":
    """`learn`'s and `check`'s arguments as one `Lesson`."""
    if evidence is not None and not isinstance(evidence, str):
        evidence = tuple(evidence)
    return Lesson(kind, payload, section, provenance, scope, evidence, incognito, goal)


def check(
    store: "Store | None",
    skill: Skill,
    kind: str,
    payload: Any,
    *,
    section: str | None,
    provenance: Provenance | str | Mapping | None,
    scope: str | None = None,
    evidence: str | Iterable[str] | None = None,
    incognito: bool = False,
    goal: str | None = None,
    settings: GateSettings | None = None,
    research: bool | None = None,
    rules: Iterable[Rule] = RULES,
) -> WriteResult:
    """Dry run of `learn`: the same rules, the same decision, nothing written (`store` is only read: for its
    research / auto-approve settings and for a live lesson this one repeats, a `noop` as `learn` says; it may be
    None). `delta` is the unsaved delta learn would store, or the live lesson a repeat names; no trigger is
    recorded."""
    lesson = _lesson(kind, payload, section, provenance, scope, evidence, incognito, goal)
    return _gate(store, skill, [lesson], settings, tuple(rules), research=research, write=False)[0]


def _allowed_rules(store, rules: Iterable[Rule], custom_rules: bool) -> tuple[Rule, ...]:
    """`rules` if the caller may use them (every write path calls this): `RULES`, or any other list with
    `custom_rules=True` on a research store."""
    rules = tuple(rules)
    if rules != RULES and not (custom_rules and getattr(store, "research", False)):
        raise GateError(
            "custom gate rules are research-only: pass custom_rules=True to a store opened with research=True"
        )
    return rules


def _validates(rules: tuple[Rule, ...]) -> bool:
    """Whether every delta these rules accept had its payload checked as `grammar.validate_payload` checks it
    (the claim its seal carries, `seal.mint`; the store then does not check it again). With `RULES` a delta
    outcome (quarantine_untrusted, stage_trusted) comes only after known_kind, research_only (on the store's
    own research setting), payload_shape (`check_shape`: `_new_deltas` stores the canonical form it gave) and
    payload_caps (`cap_violations` of that form) have passed. Custom rules claim nothing: the store checks."""
    return rules == RULES


def learn(
    store: "Store",
    skill: Skill,
    kind: str,
    payload: Any,
    *,
    section: str | None,
    provenance: Provenance | str | Mapping | None,
    scope: str | None = None,
    evidence: str | Iterable[str] | None = None,
    incognito: bool = False,
    goal: str | None = None,
    settings: GateSettings | None = None,
    rules: Iterable[Rule] = RULES,
    custom_rules: bool = False,
) -> WriteResult:
    """Propose one lesson; the gates refuse, route, stage or quarantine it. Never raises for a bad lesson —
    a refusal is a `WriteResult` with an actionable message, and nothing is stored. A batch of one
    (`learn_many`).

    `rules` other than `RULES` are for research: they need `custom_rules=True` AND a store opened with
    `research=True` (`GateError` otherwise). Whatever they decide, the store still refuses an untrusted delta
    that is not quarantined, and a scan-flagged one that starts active.

    `goal`: the session goal the lesson was taught at, kept as its evidence trigger (the module's docstring)."""
    lesson = _lesson(kind, payload, section, provenance, scope, evidence, incognito, goal)
    return learn_many(store, skill, [lesson], settings=settings, rules=rules, custom_rules=custom_rules)[0]


@dataclass(frozen=True)
class Lesson:
    """One row of a `learn_many` batch: the arguments of one `learn` call, skill and store aside."""

    kind: str
    payload: Any
    section: str | None = None
    provenance: Provenance | str | Mapping | None = None
    scope: str | None = None  # None: the store's `write_scope()` (the shipped default for its agent)
    evidence: str | tuple[str, ...] | None = None
    incognito: bool = False
    goal: str | None = None  # the session goal it was taught or restated at (tier 3: an evidence trigger)

    @classmethod
    def from_dict(cls, data: Mapping) -> "Lesson":
        """A JSON object with `kind`, `payload` and optionally `section`, `provenance` (a source name or
        {source, turns}), `scope`, `evidence` (a string or list), `incognito`, `goal` (a string). Strict where a
        guess would change what is learned: booleans are JSON booleans (`"false"` is a string, and a string is
        true), a provenance source is one of `SOURCES` (never read as `unknown`), a kind is one of the kinds;
        `LessonError` names the field."""
        if not isinstance(data, Mapping):
            raise LessonError(f"a lesson is a JSON object, not {_json_type(data)}")
        unknown = sorted(set(data) - set(LESSON_FIELDS))
        if unknown:
            raise LessonError(f"unknown field {unknown[0]!r}; a lesson has {', '.join(LESSON_FIELDS)}", unknown[0])
        for name in ("kind", "payload"):
            if name not in data:
                raise LessonError(f"missing field {name!r}", name)
        kind = data["kind"]
        if not isinstance(kind, str):
            raise LessonError(f"field 'kind' must be a string, not {_json_type(kind)}", "kind")
        if kind not in (*KINDS, "fact"):
            raise LessonError(f"unknown kind {kind!r}; kinds are {', '.join((*KINDS, 'fact'))}", "kind")
        if not isinstance(data["payload"], Mapping):
            raise LessonError(f"field 'payload' must be a JSON object, not {_json_type(data['payload'])}", "payload")
        section = data.get("section")
        if section is not None and not isinstance(section, str):
            raise LessonError(f"field 'section' must be a string, not {_json_type(section)}", "section")
        scope = data.get("scope")
        if scope is not None:
            try:
                check_scope(scope)
            except ScopeError as exc:
                raise LessonError(f"field 'scope': {str(exc).removeprefix('scope: ')}", "scope") from None
        evidence = data.get("evidence")
        if evidence is not None and not isinstance(evidence, str):
            if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
                raise LessonError("field 'evidence' must be a string or a list of strings", "evidence")
            evidence = tuple(evidence)
        goal = data.get("goal")
        if goal is not None and not isinstance(goal, str):
            raise LessonError(f"field 'goal' must be a string, not {_json_type(goal)}", "goal")
        incognito = data.get("incognito", False)
        if not isinstance(incognito, bool):
            raise LessonError(
                f"field 'incognito' must be a JSON boolean (true or false), not {_json_type(incognito)}", "incognito"
            )
        provenance = data.get("provenance")
        if isinstance(provenance, Mapping):
            extra = sorted(set(provenance) - {"source", "turns"})
            if extra:
                raise LessonError(
                    f"unknown field 'provenance.{extra[0]}'; a provenance has source, turns", f"provenance.{extra[0]}"
                )
            turns = provenance.get("turns", [])
            if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
                raise LessonError("field 'provenance.turns' must be a list of strings", "provenance.turns")
            if "source" not in provenance:
                raise LessonError("missing field 'provenance.source'", "provenance.source")
            source, field = provenance["source"], "provenance.source"
        elif provenance is None or isinstance(provenance, str):
            source, field = provenance or "unknown", "provenance"
        else:
            raise LessonError(
                f"field 'provenance' must be a source name or {{source, turns}}, not {_json_type(provenance)}",
                "provenance",
            )
        if source not in SOURCES:
            raise LessonError(f"unknown source {source!r} in field {field!r}; sources are {', '.join(SOURCES)}", field)
        return cls(kind, data["payload"], section, provenance, scope, evidence, incognito, goal)


LESSON_FIELDS = ("kind", "payload", "section", "provenance", "scope", "evidence", "incognito", "goal")


class LessonError(ValueError):
    """A lesson record (`Lesson.from_dict`) that is not one; `field` names the field, where one is at fault."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def _json_type(value) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


def learn_many(
    store: "Store",
    skill: Skill,
    lessons: Iterable[Lesson | Mapping],
    *,
    settings: GateSettings | None = None,
    rules: Iterable[Rule] = RULES,
    custom_rules: bool = False,
) -> list[WriteResult]:
    """Learn a batch of lessons on one skill: every rule runs on every row (`decide`; custom `rules`
    research-only, as in `learn`), then the accepted deltas and their audit rows are written in one
    transaction. One `WriteResult` per lesson, in order (refusals included: a refused row writes nothing and
    does not stop the others). Nothing is written if anything fails while writing (or a lesson is not a
    `Lesson`/mapping: `ValueError` naming its index)."""
    rows = []
    for i, lesson in enumerate(lessons):
        try:
            rows.append(lesson if isinstance(lesson, Lesson) else Lesson.from_dict(lesson))
        except LessonError as exc:
            if exc.field == "scope":
                raise ScopeError(lesson.get("scope"), where=f"lesson {i}") from None
            raise ValueError(f"lesson {i}: {exc}") from exc
        except ValueError as exc:
            raise ValueError(f"lesson {i}: {exc}") from exc
    for i, row in enumerate(rows):  # before anything is decided or written (`_scope` checks them again)
        if row.scope is not None:
            try:
                check_scope(row.scope)
            except ScopeError:
                raise ScopeError(row.scope, where=f"lesson {i}" if len(rows) > 1 else None) from None
    rules = _allowed_rules(store, rules, custom_rules)
    with gc_paused(len(rows) > 1):  # a batch allocates tens of objects per row, none in a cycle
        return _gate(store, skill, rows, settings, rules)


def _gate(
    store: "Store | None",
    skill: Skill,
    rows: list[Lesson],
    settings: GateSettings | None,
    rules: tuple[Rule, ...],
    *,
    research: bool | None = None,
    write: bool = True,
) -> list[WriteResult]:
    """The one write path of `learn`, `learn_many` and `check` (`write=False`: a dry run, nothing written):
    decide each row, write the facts it routes, find the repeats of a live lesson (`_twins`: a no-op), and
    write the other accepted deltas and the evidence triggers the rows carry (`_record_triggers`) in one
    transaction."""
    subs = _submissions(store, skill, rows, settings, research)
    decided = [decide(p, rules) for p in subs]
    results: list[WriteResult | None] = [None] * len(subs)
    accepted = [i for i, (verdict, _) in enumerate(decided) if verdict.outcome in LIVE]
    with store.transaction() if write else nullcontext():
        for i, (p, (verdict, warnings)) in enumerate(zip(subs, decided)):
            if verdict.outcome == "routed" and write:
                results[i] = _route(store, p, verdict, warnings)
            elif verdict.outcome not in LIVE:
                results[i] = WriteResult(
                    verdict.outcome, verdict.message, verdict.rule, warnings=warnings, dry_run=not write
                )
        deltas = _new_deltas([(subs[i], decided[i][0]) for i in accepted])
        twins = _twins(store, deltas) if store is not None and deltas and subs[0].settings.noop_repeats else {}
        fresh = [k for k in range(len(deltas)) if k not in twins]
        if write:
            new = store._new_rows([deltas[k] for k in fresh], validated=_validates(rules))
            stored = store._insert_deltas(new, mint(new.rows, validated=new.validated))
            recorded = _record_triggers(store, [subs[i] for i in accepted], deltas, fresh, twins)
        else:
            stored, recorded = [(deltas[k], None) for k in fresh], {}
    for k, (delta, undo) in zip(fresh, stored):
        verdict, warnings = decided[accepted[k]]
        results[accepted[k]] = WriteResult(
            verdict.outcome,
            verdict.message,
            verdict.rule,
            delta=delta,
            undo=undo,
            findings=verdict.findings,
            warnings=_scope_warnings(subs[accepted[k]], warnings),
            dry_run=not write,
            triggers=recorded.get(k, ()),
        )
    kept = {delta.id: delta for delta, _ in stored}
    for k, twin in twins.items():  # a repeat of a stored lesson, or of an earlier row of this batch
        twin = twin if isinstance(twin, Delta) else kept[twin]
        results[accepted[k]] = replace(_noop(twin, decided[accepted[k]][1], recorded.get(k, ())), dry_run=not write)
    return results  # type: ignore[return-value]


def _record_triggers(
    store: "Store", subs: list[Submission], deltas: list[Delta], fresh: list[int], twins: dict[int, "Delta | str"]
) -> dict[int, tuple[str, ...]]:
    """Inside the write's transaction, the evidence triggers of tier-3 rows (`Store.add_triggers`): a new
    lesson's goal, `taught`; a repeat's goal and payload trigger, `restated`, on the live lesson it names — from
    trusted provenance only (observed content never changes when an approved lesson applies). A text the lesson
    has already is not recorded again. Returns {row: the texts recorded for it}."""
    rows, owners = [], []
    for k in fresh:
        if subs[k].goal is not None and _keeps_goal(subs[k].kind):
            rows.append((deltas[k].id, subs[k].goal, "taught"))
            owners.append(k)
    for k, twin in twins.items():
        if not (subs[k].provenance.trusted and _keeps_goal(subs[k].kind)):
            continue
        for text in (deltas[k].payload.get("trigger"), subs[k].goal):
            if text is not None:
                rows.append((twin if isinstance(twin, str) else twin.id, text, "restated"))
                owners.append(k)
    if not rows:
        return {}
    added, at, out = store.add_triggers(rows), 0, {}
    for row, k in zip(rows, owners):  # `added` is the rows recorded, in order: a subsequence of `rows`
        if at < len(added) and added[at] == row:
            out[k] = (*out.get(k, ()), row[1])
            at += 1
    return out


def _route(store: "Store", p: Submission, verdict: Verdict, warnings: tuple[str, ...]) -> WriteResult:
    """A fact: its learned_facts row (`store.put_fact`), and the fact as stored."""
    namespace, key, value = validate_fact(p.payload)
    namespace = namespace or p.skill.name
    undo = store.put_fact(namespace, key, value, scope=p.scope, provenance=p.provenance)
    fact = next(f for f in store.facts(namespace) if f.key == key and f.scope == p.scope)
    return WriteResult("routed", verdict.message, verdict.rule, fact=fact, undo=undo, warnings=warnings)


def _twins(store: "Store", deltas: list[Delta]) -> dict[int, "Delta | str"]:
    """{index: the live lesson it repeats} for each new delta that repeats one of its skill in the store (a
    stored `Delta`) or an earlier delta of the same batch (that delta's id): the same `Delta.lesson` (kind,
    scope, payload as read) in the same section. Found through the store's index of lesson digests; a stored
    row counts by the digest of its sealed payload, computed here, not by the digest column."""
    seen: dict[tuple, "Delta | str"] = {}
    for skill in dict.fromkeys(d.skill for d in deltas):
        digests = list(dict.fromkeys(d.lesson for d in deltas if d.skill == skill))
        for at in range(0, len(digests), 500):
            for live in store.search(skill, status=LIVE, lessons=digests[at : at + 500]):
                seen.setdefault((live.skill, live.lesson, live.anchor.section), live)
    out: dict[int, Delta | str] = {}
    for k, d in enumerate(deltas):
        twin = seen.setdefault((d.skill, d.lesson, d.anchor.section), d.id)
        if twin != d.id:
            out[k] = twin
    return out


def _noop(twin: Delta, warnings: tuple[str, ...], triggers: tuple[str, ...] = ()) -> WriteResult:
    done = (
        f"no new lesson; recorded as its restated trigger(s): {', '.join(map(repr, triggers))}"
        if triggers
        else "nothing written"
    )
    return WriteResult(
        "noop",
        f"the same lesson as {twin.id} ({twin.status}) in §{twin.anchor.section}, scope {twin.scope}: {done}",
        "duplicate",
        delta=twin,
        warnings=warnings,
        triggers=triggers,
    )


# ------------------------------------------------------------------------------------ promotion


@dataclass(frozen=True)
class Promotion:
    delta_id: str
    promoted: bool
    reason: str
    samples: int
    rate: float
    score: float  # the number compared with the threshold (rate, or its Wilson lower bound)
    undo: "Undo | None" = None


def promote(
    store: "Store",
    delta_id: str,
    min_samples: int = SHIPPED.min_samples,
    threshold: float = SHIPPED.threshold,
    wilson: bool = SHIPPED.wilson,
    z: float = SHIPPED.z,
) -> Promotion:
    """Activate a staged, trusted delta when its outcome counters clear the bar. Counters only: there is no
    parameter through which a model's opinion could enter. Quarantined deltas are never promoted."""
    d = store.get(delta_id)
    n, k = d.attempt_count, d.success_count
    rate = k / n if n else 0.0
    from .metrics import wilson_lower_bound  # here: `metrics` imports numpy, which a write does not need

    score = wilson_lower_bound(k, n, z) if wilson else rate

    def no(reason: str) -> Promotion:
        return Promotion(delta_id, False, reason, n, rate, score)

    if d.status != "staged":
        return no(f"status is {d.status}; only staged deltas are promoted on evidence")
    if not d.provenance.trusted:
        return no("untrusted provenance: only an explicit approve activates it")
    if d.superseded_by:
        return no(f"superseded by {d.superseded_by}")
    if n < min_samples:
        return no(f"{n} outcome(s) recorded; promotion needs {min_samples}")
    if score < threshold:
        return no(f"{'Wilson lower bound' if wilson else 'success rate'} {score:.3f} < {threshold}")
    undo = store.set_status(
        delta_id,
        "active",
        who="evidence",
        reason=f"promoted on evidence: {k}/{n} ({'wilson ' if wilson else ''}{score:.3f} >= {threshold})",
    )
    return Promotion(delta_id, True, "promoted on evidence", n, rate, score, undo)
