"""The write path: every learned lesson passes an ordered list of small named rules before it is stored.

    learn(store, skill, kind, payload, *, section, provenance, scope=None, evidence=None,
          incognito=False, settings=None) -> WriteResult
    check(store_or_None, skill, kind, payload, ...same keywords) -> WriteResult   # dry run: writes nothing

`RULES` is read top to bottom; the first rule that decides wins (one refusal, route, stage or quarantine per
rule, so adding or removing a gate is one line and each has a test that fails without it):

| rule                 | outcome      | when                                                                        |
|----------------------|--------------|-----------------------------------------------------------------------------|
| known_kind           | refused      | kind is not a delta kind and not `fact`                                     |
| research_only        | refused      | tier-2 kind on a store not opened with research=True                        |
| capability_bearing   | refused      | the skill holds a filesystem/shell/database/desktop/env permission          |
| payload_shape        | refused      | fields/types wrong for the kind (grammar.check_shape / validate_fact)       |
| payload_caps         | refused      | a field over its cap, a control character, or provenance turns that are not |
|                      |              | short ids                                                                   |
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
opinion. The store refuses any delta that lacks a seal minted here for exactly that delta.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import accumulate, chain
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from .anchor import BODY, PREAMBLE, Anchor, parse
from .common import dumps, find_all, gc_paused, once
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
    as_read,
    cap_violations,
    cap_violations_many,
    check_shape,
    fields_of,
    made,
    new_delta_id,
    new_delta_ids,
    utc_now,
    validate_fact,
)
from .injection import detectors, pattern_set, scan, scan_many
from .seal import mint, mint_batch
from .skill import PERMISSION_DOMAINS, Permission, Skill
from .textguard import block_structure, views, views_many

if TYPE_CHECKING:  # the store imports this module, never the reverse at run time
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
    "decide_many",
    "learn",
    "learn_many",
    "promote",
    "scan",
]

OUTCOMES = ("refused", "routed", "staged", "quarantined", "session_only", "active", "noop")
LIVE = ("staged", "quarantined", "active")  # a lesson that is one of these already makes a repeat a no-op
# Verbs (or whole tool names) whose tools act on the world and stay behind the confirmation gate.
DEFAULT_CONFIRMATION = frozenset({
    "send", "reply", "forward", "trash", "delete", "remove", "archive", "schedule", "accept", "decline",
    "accept_invite", "decline_invite", "move", "label", "unsubscribe", "post", "publish", "pay", "purchase",
    "write", "execute", "run", "submit", "share", "upload",
})
CONTROL_FIELDS = frozenset({"permissions", "security_tier", "security-tier", "allowed-tools", "allowed_tools",
                            "tools", "metadata", "name", "version", "compatibility", "license"})
_CONTROL_SQUASHED = frozenset(f.replace("-", "").replace("_", "") for f in CONTROL_FIELDS) | {"allowedtool",
                                                                                            "securitylevel"}
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
    """Everything a rule may look at. `evidence` is the text the lesson was drawn from; it is never stored."""

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

    @property
    def is_fact(self) -> bool:
        return self.kind == "fact"

    @once
    def canonical(self) -> dict | None:
        """The payload in canonical form (`check_shape`), or None when its shape is wrong (`payload_shape`
        reports that); computed once for all the rules."""
        return _shaped(self.kind, self.payload)

    def texts(self) -> list[tuple[str, str]]:
        """(field, text) of every string in the payload (facts: their value's strings too)."""
        return list(self._texts)

    @once
    def _texts(self) -> tuple[tuple[str, str], ...]:
        return _payload_texts(self.payload)


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

    @property
    def persisted(self) -> bool:
        return not self.dry_run and self.outcome in ("routed", "staged", "quarantined", "active")

    def _repr_html_(self) -> str:
        return write_result_html(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(write_result_text(self))

    def to_dict(self) -> dict:
        return {"outcome": self.outcome, "rule": self.rule, "message": self.message,
                "persisted": self.persisted, "delta_id": self.delta.id if self.delta else None,
                "status": self.delta.status if self.delta else None,
                "findings": list(self.findings), "warnings": list(self.warnings)}


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


_PERMISSION_TOKEN = re.compile(r"\b(" + "|".join(sorted(PERMISSION_DOMAINS)) + r")\s*[:=]\s*([a-z_*]+)"
                               r"(?:\s*:\s*(\S+))?", re.IGNORECASE)
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
    re.IGNORECASE)
# … or one that takes a write-path action out from behind the confirmation step ("send replies without asking
# for confirmation"): read per sentence, and not when a negation before it keeps the step ("never … without").
_UNCONFIRMED = re.compile(
    r"\b(?:without|skip(?:ping)?|bypass(?:ing)?|no need (?:to|for)|don t need (?:to|for)?|needn t)\s+"
    r"(?:(?:ask(?:ing)?|wait(?:ing)?|get(?:ting)?|check(?:ing)?|request(?:ing)?|need(?:ing)?|for|me|the|my|a|an|"
    r"any|user s?|their)\s+){0,4}(?:confirm(?:ation|ing)?|approv(?:al|ing)|consent|sign off|permission|review)\b",
    re.IGNORECASE)
_WRITE_VERB = re.compile(r"\b(?:" + "|".join(sorted(DEFAULT_CONFIRMATION | {"transfer", "approve", "book", "merge",
                                                                          "deploy", "push", "sign"})) + r")",
                         re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:never|not|don t|do not|dont|no one|nobody)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"[.!?;:\n]+")
# A parameter's or fact's key naming what the skill may do (`tier=verified`, `tool_allowlist=…`).
_CONTROL_KEY = re.compile(r"\b(?:(?:security )?tiers?|allow ?list|allowed|tools|tool (?:list|set)|toolset|"
                          r"permissions?|capabilit(?:y|ies)|grants?|privileges?|sudo)\b", re.IGNORECASE)
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


_QUOTES_SEPARATORS = re.compile(r"[\"'`_\-.]+")


def _words(text: str) -> list[str]:
    """Readings for the widening check: each folded view, camelCase split, separators and quotes as spaces."""
    return [_word_reading(v) for v in views(_CAMEL.sub(r"\1 \2", text))]


def _granted(skill: Skill, token: re.Match) -> bool:
    want = Permission(token.group(1).lower(), token.group(2).lower(), token.group(3))
    for p in skill.permissions:
        if p.domain == want.domain and p.action in (want.action, "*") and (p.scope is None or p.scope ==
                                                                           want.scope):
            return True
    return False


def longest_overlap(text: str, evidence: str) -> int:
    """Length of the longest verbatim run of `text` found in `evidence` (both normalized)."""

    def has(n: int) -> bool:
        return any(text[i:i + n] in evidence for i in range(len(text) - n + 1))

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
        return _refuse("research_only", f"{p.kind} is tier 2, deferred past v1; it is stored only in a store "
                                        "opened with research=True (CLI: --research)")
    return None


def capability_bearing(p: Submission):
    if p.skill.capability_bearing:
        perms = ", ".join(str(x) for x in p.skill.permissions if x.capability_bearing)
        return _refuse("capability_bearing", f"{p.skill.name} holds local-capability permissions ({perms}); "
                                             "v1 allows no learned lessons on capability-bearing skills")
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
        return _refuse("payload_caps", f"provenance.turns: at most {MAX_TURNS} session/turn ids of at most "
                                       f"{TURN_ID_LIMIT} characters — ids, never message text")
    return None


def plain_text(p: Submission):
    if p.is_fact or p.kind == "tool-hint":
        return None
    for where, text in p.texts():
        found = block_structure(text)
        if found:
            return _refuse("plain_text", f"{where} carries Markdown structure ({', '.join(found)}); a lesson is "
                                         "plain prose and renders as one line, never as a heading, fence, "
                                         "block or reference definition")
    return None


def no_new_tool(p: Submission):
    names = _tool_hint(p, "prefer") + _tool_hint(p, "drop")
    unknown = [n for n in names if n not in _declared_tools(p.skill)]
    if unknown:
        have = ", ".join(sorted(_declared_tools(p.skill))) or "none"
        return _refuse("no_new_tool", f"tool-hint names {', '.join(unknown)}, which {p.skill.name} does not "
                                      f"declare (declared: {have}); a delta may never add a tool")
    return None


def no_widening(p: Submission):
    if p.kind in ("parameter", "fact") and isinstance(p.payload, Mapping):
        for field in ("namespace", "key"):
            raw = str(p.payload.get(field, "") or "")
            key = " ".join(_words(raw)[0].split()) if raw.strip() else ""
            parts = {key, key.replace(" ", "_"), key.replace(" ", "-"), key.replace(" ", "")}
            if key.startswith("metadata") or _CONTROL_KEY.search(key) or any(
                    k in CONTROL_FIELDS or k.split(" ")[-1] in CONTROL_FIELDS or k.replace(" ", "") in _CONTROL_SQUASHED
                    for k in parts):
                return _refuse("no_widening", f"{p.kind} {field} {raw!r} is a frontmatter control field; a "
                                              "lesson may never edit permissions, tools or the security tier")
    for where, text in p.texts():
        for reading in _words(text):
            if _CONTROL_EDIT.search(reading):
                return _refuse("no_widening", f"{where} edits or widens permissions, tools or the security tier; "
                                              "deltas move in the restrictive direction only")
        if _drops_confirmation(text):
            return _refuse("no_widening", f"{where} takes an action out from behind the confirmation step; "
                                          "deltas move in the restrictive direction only")
        for reading in views(text):
            for m in _PERMISSION_TOKEN.finditer(reading):
                if not _granted(p.skill, m):
                    return _refuse("no_widening", f"{where} names permission {m.group(0)!r}, which "
                                                  f"{p.skill.name} is not granted")
    return None


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
        return _refuse("write_path_tool", f"tool-hint prefers {', '.join(hits)}, in the confirmation set; "
                                          "learning may not steer toward write-path tools")
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
                return _refuse("quotes_evidence", f"{where} copies {n} characters of the evidence verbatim; "
                                                  "store the lesson, not the evidence")
    return None


def known_section(p: Submission):
    if p.is_fact:
        return None
    slugs = _by_slug(p.skill.body)
    if len(slugs) == 1 and BODY in slugs:
        if p.section in (None, "", BODY):
            return (f"{p.skill.name} has no headings: the delta anchors to the whole body ({BODY}), and "
                    "whole-body anchors orphan on any edit of the skill")
        return _refuse("known_section", f"section {p.section!r} does not exist; {p.skill.name} has no headings, "
                                        f"so the only anchor is {BODY}")
    if p.section not in slugs:
        return _refuse("known_section", f"section {p.section!r} does not exist in {p.skill.name}; "
                                        f"valid sections: {', '.join(slugs)}")
    if p.section == PREAMBLE and not _sections(p.skill.body)[0].text.strip():
        return _refuse("known_section", f"{p.skill.name} has no text before its first heading: {PREAMBLE} is "
                                        "empty and carries no lesson; name a section")
    return None


def untrusted_fact(p: Submission):
    if p.is_fact and not p.provenance.trusted:
        return _refuse("untrusted_fact", f"a fact from {p.provenance.source} provenance is not stored: tier 0 "
                                         "has no quarantine; restate it as a user instruction")
    return None


def incognito(p: Submission):
    if p.incognito:
        return Verdict("session_only", "incognito", "incognito: session only, not persisted")
    return None


def route_fact(p: Submission):
    if p.is_fact:
        return Verdict("routed", "route_fact", "a fact is a tier-0 row a tool reads, not a delta: routed to "
                                               "learned_facts")
    return None


def _findings(p: Submission) -> tuple[str, ...]:
    return tuple(f"{w}: {f}" for w, t in p.texts() for f in scan(t))


def _quarantined(p: Submission, findings: tuple[str, ...]) -> Verdict:
    note = f"; scan: {len(findings)} finding(s)" if findings else "; scan: clean"
    return Verdict("quarantined", "quarantine_untrusted",
                   f"untrusted provenance ({p.provenance.source}): quarantined until explicitly approved "
                   f"(overlay-kit approve ID){note}", findings)


def _staged(p: Submission, findings: tuple[str, ...]) -> Verdict:
    if p.auto_approve and not findings and p.provenance.source in AUTO_APPROVE_SOURCES:
        return _ACTIVE
    return Verdict("staged", "stage_trusted", _STAGED_MESSAGE, findings) if findings else _STAGED


_STAGED_MESSAGE = "staged: review it with `overlay-kit deltas --pending`, then `overlay-kit approve ID`"
_STAGED = Verdict("staged", "stage_trusted", _STAGED_MESSAGE)
_ACTIVE = Verdict("active", "stage_trusted", "user instruction, auto-approve on: active next session")


def quarantine_untrusted(p: Submission):
    if not p.provenance.trusted:
        return _quarantined(p, _findings(p))
    return None


def stage_trusted(p: Submission):
    return _staged(p, _findings(p))


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


def _proposal(store, skill, kind, payload, section, provenance, scope, evidence, incognito, settings,
              research=None) -> Submission:
    settings = settings or GateSettings()
    auto = (store.auto_approve if store is not None else False) if settings.auto_approve is None \
        else settings.auto_approve
    research = (store.research if store is not None else False) if research is None else research
    ev = (evidence,) if isinstance(evidence, str) else tuple(evidence or ())
    return Submission(skill, kind, payload, section, _provenance(provenance), _scope(store, scope), ev, incognito,
                      research, bool(auto), settings)


def _scope(store, scope: str | None) -> str:
    """The scope a lesson is written with (`Store.write_scope`: given, else the shipped default for the store's
    agent); without a store (a dry run), the given one or "user"."""
    return store.write_scope(scope) if store is not None else scope or "user"


def _new_delta(p: Submission, verdict: Verdict, delta_id: str | None = None) -> Delta:
    return _new_deltas([(p, verdict)], [delta_id or new_delta_id()])[0]


def _new_deltas(accepted: list[tuple[Submission, Verdict]], ids: Iterable[str]) -> list[Delta]:
    """The delta each (submission, verdict) stores, with the given ids: the canonical payload (`check_shape`,
    raising if malformed), the section's anchor, the verdict's status and findings; `created_at` read per row,
    so a batch renders in the order it was learned."""
    out = []
    skills: dict = {}  # per skill (a batch has one): its fields' template and its sections' anchors
    for (p, verdict), delta_id in zip(accepted, ids):
        payload = p.canonical
        if payload is None:
            payload = check_shape(p.kind, p.payload)  # raises: not well-shaped
        skill = p.skill
        known = skills.get(id(skill))
        if known is None:
            known = skills[id(skill)] = (_DELTA | {"skill": skill.name, "base_root": skill.root_key}, {})
        template, anchors = known
        anchor = anchors.get(p.section)
        if anchor is None:
            anchor = anchors[p.section] = _anchor(skill, p.section)
        f = template.copy()
        f["kind"], f["payload"], f["anchor"], f["provenance"], f["scope"] = \
            p.kind, payload, anchor, p.provenance, p.scope
        f["status"], f["id"], f["created_at"], f["findings"] = verdict.outcome, delta_id, utc_now(), verdict.findings
        out.append(made(Delta, f))
    return out


_DELTA = fields_of(Delta, {"skill": "", "kind": "", "payload": None, "anchor": None, "provenance": None, "scope": "",
                           "base_root": None, "status": "", "id": "", "created_at": None, "approved_at": None,
                           "last_used_at": None, "success_count": 0, "attempt_count": 0, "superseded_by": None,
                           "findings": ()})


@lru_cache(maxsize=4096)
def _anchor_of(body: str, section: str, version: str | None) -> Anchor:
    sec = _by_slug(body)[section]
    return Anchor(sec.slug, sec.digest, version)


def _anchor(skill: Skill, section: str | None) -> Anchor:
    return _anchor_of(skill.body, section or BODY, skill.version)


def check(store: "Store | None", skill: Skill, kind: str, payload: Any, *, section: str | None,
          provenance: Provenance | str | Mapping | None, scope: str | None = None,
          evidence: str | Iterable[str] | None = None, incognito: bool = False,
          settings: GateSettings | None = None, research: bool | None = None,
          rules: Iterable[Rule] = RULES) -> WriteResult:
    """Dry run of `learn`: the same rules, the same decision, nothing written (`store` is only read: for its
    research / auto-approve settings and for a live lesson this one repeats, a `noop` as `learn` says; it may be
    None). `delta` is the unsaved delta learn would store, or the live lesson a repeat names."""
    p = _proposal(store, skill, kind, payload, section, provenance, scope, evidence, incognito, settings, research)
    verdict, warnings = decide(p, rules)
    delta = _new_delta(p, verdict) if verdict.outcome in ("staged", "quarantined", "active") else None
    twin = _twins(store, [delta]).get(0) if delta is not None and store is not None and p.settings.noop_repeats \
        else None
    if twin is not None:
        return replace(_noop(delta, twin, warnings), dry_run=True)
    return WriteResult(verdict.outcome, verdict.message, verdict.rule, delta=delta, findings=verdict.findings,
                       warnings=warnings, dry_run=True)


def _allowed_rules(store, rules: Iterable[Rule], custom_rules: bool) -> tuple[Rule, ...]:
    """`rules` if the caller may use them (every write path calls this): `RULES`, or any other list with
    `custom_rules=True` on a research store."""
    rules = tuple(rules)
    if rules != RULES and not (custom_rules and getattr(store, "research", False)):
        raise GateError("custom gate rules are research-only: pass custom_rules=True to a store opened with "
                        "research=True")
    return rules


def _validates(rules: tuple[Rule, ...]) -> bool:
    """Whether every delta these rules accept had its payload checked as `grammar.validate_payload` checks it
    (the claim its seal carries, `seal.mint`; the store then does not check it again). With `RULES` a delta
    outcome (quarantine_untrusted, stage_trusted) comes only after known_kind, research_only (on the store's
    own research setting), payload_shape (`check_shape`: `_new_delta` stores the canonical form it gave) and
    payload_caps (`cap_violations` of that form) have passed. Custom rules claim nothing: the store checks."""
    return rules == RULES


def learn(store: "Store", skill: Skill, kind: str, payload: Any, *, section: str | None,
          provenance: Provenance | str | Mapping | None, scope: str | None = None,
          evidence: str | Iterable[str] | None = None, incognito: bool = False,
          settings: GateSettings | None = None, rules: Iterable[Rule] = RULES,
          custom_rules: bool = False) -> WriteResult:
    """Propose one lesson; the gates refuse, route, stage or quarantine it. Never raises for a bad lesson —
    a refusal is a `WriteResult` with an actionable message, and nothing is stored.

    `rules` other than `RULES` are for research: they need `custom_rules=True` AND a store opened with
    `research=True` (`GateError` otherwise). Whatever they decide, the store still refuses an untrusted delta
    that is not quarantined, and a scan-flagged one that starts active."""
    rules = _allowed_rules(store, rules, custom_rules)
    p = _proposal(store, skill, kind, payload, section, provenance, scope, evidence, incognito, settings)
    verdict, warnings = decide(p, rules)
    if verdict.outcome in ("refused", "session_only"):
        return WriteResult(verdict.outcome, verdict.message, verdict.rule, warnings=warnings)
    if verdict.outcome == "routed":
        namespace, key, value = validate_fact(payload)
        undo = store.put_fact(namespace or skill.name, key, value, scope=p.scope, provenance=p.provenance)
        fact = next(f for f in store.facts(namespace or skill.name) if f.key == key and f.scope == p.scope)
        return WriteResult("routed", verdict.message, verdict.rule, fact=fact, undo=undo, warnings=warnings)

    delta = _new_delta(p, verdict)
    twin = _twins(store, [delta]).get(0) if p.settings.noop_repeats else None
    if twin is not None:
        return _noop(delta, twin, warnings)
    undo = store._insert_delta(delta, mint(delta, validated=_validates(rules)))
    return WriteResult(verdict.outcome, verdict.message, verdict.rule, delta=store.get(delta.id), undo=undo,
                       findings=verdict.findings, warnings=warnings)


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

    @classmethod
    def from_dict(cls, data: Mapping) -> "Lesson":
        """A JSON object with `kind`, `payload` and optionally `section`, `provenance` (a source name or
        {source, turns}), `scope`, `evidence` (a string or list), `incognito`. Strict where a guess would change
        what is learned: booleans are JSON booleans (`"false"` is a string, and a string is true), a provenance
        source is one of `SOURCES` (never read as `unknown`), a kind is one of the kinds; `LessonError` names
        the field."""
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
        if scope is not None and (not isinstance(scope, str) or not scope):
            raise LessonError("field 'scope' must be a non-empty string", "scope")
        evidence = data.get("evidence")
        if evidence is not None and not isinstance(evidence, str):
            if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
                raise LessonError("field 'evidence' must be a string or a list of strings", "evidence")
            evidence = tuple(evidence)
        incognito = data.get("incognito", False)
        if not isinstance(incognito, bool):
            raise LessonError(f"field 'incognito' must be a JSON boolean (true or false), not {_json_type(incognito)}",
                              "incognito")
        provenance = data.get("provenance")
        if isinstance(provenance, Mapping):
            extra = sorted(set(provenance) - {"source", "turns"})
            if extra:
                raise LessonError(f"unknown field 'provenance.{extra[0]}'; a provenance has source, turns",
                                  f"provenance.{extra[0]}")
            turns = provenance.get("turns", [])
            if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
                raise LessonError("field 'provenance.turns' must be a list of strings", "provenance.turns")
            if "source" not in provenance:
                raise LessonError("missing field 'provenance.source'", "provenance.source")
            source, field = provenance["source"], "provenance.source"
        elif provenance is None or isinstance(provenance, str):
            source, field = provenance or "unknown", "provenance"
        else:
            raise LessonError(f"field 'provenance' must be a source name or {{source, turns}}, not "
                              f"{_json_type(provenance)}", "provenance")
        if source not in SOURCES:
            raise LessonError(f"unknown source {source!r} in field {field!r}; sources are {', '.join(SOURCES)}",
                              field)
        return cls(kind, data["payload"], section, provenance, scope, evidence, incognito)


LESSON_FIELDS = ("kind", "payload", "section", "provenance", "scope", "evidence", "incognito")


class LessonError(ValueError):
    """A lesson record (`Lesson.from_dict`) that is not one; `field` names the field, where one is at fault."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def _json_type(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def learn_many(store: "Store", skill: Skill, lessons: Iterable[Lesson | Mapping], *,
               settings: GateSettings | None = None, rules: Iterable[Rule] = RULES,
               custom_rules: bool = False) -> list[WriteResult]:
    """`learn` for a batch of lessons on one skill: every rule runs on every row (`decide_many`: the same
    verdicts as `decide` row by row; custom `rules` research-only, as there), then the accepted deltas and
    their audit rows are written with `executemany` in one transaction. One `WriteResult` per lesson, in
    order (refusals included: a refused row writes nothing and does not stop the others). Nothing is written
    if anything fails while writing (or a lesson is not a `Lesson`/mapping: `ValueError` naming its index)."""
    rows = []
    for i, lesson in enumerate(lessons):
        try:
            rows.append(lesson if isinstance(lesson, Lesson) else Lesson.from_dict(lesson))
        except ValueError as exc:
            raise ValueError(f"lesson {i}: {exc}") from exc
    rules = _allowed_rules(store, rules, custom_rules)
    with gc_paused():  # a batch allocates tens of objects per row, none in a cycle
        return _learn_many(store, skill, rows, settings, rules)


def _learn_many(store: "Store", skill: Skill, rows: list[Lesson], settings: GateSettings | None,
                rules: tuple[Rule, ...]) -> list[WriteResult]:
    subs = _submissions(store, skill, rows, settings)
    decided = decide_many(subs, rules)
    results: list[WriteResult | None] = [None] * len(rows)
    accepted: list[int] = []
    with store.transaction():
        for i, (p, (verdict, warnings)) in enumerate(zip(subs, decided)):
            outcome = verdict.outcome
            if outcome in ("staged", "quarantined", "active"):
                accepted.append(i)
            elif outcome == "routed":
                namespace, key, value = validate_fact(p.payload)
                undo = store.put_fact(namespace or skill.name, key, value, scope=p.scope, provenance=p.provenance)
                fact = next(f for f in store.facts(namespace or skill.name) if f.key == key and f.scope == p.scope)
                results[i] = WriteResult("routed", verdict.message, verdict.rule, fact=fact, undo=undo,
                                         warnings=warnings)
            else:
                results[i] = _result(verdict, warnings)
        deltas = _new_deltas([(subs[i], decided[i][0]) for i in accepted], new_delta_ids(len(accepted)))
        twins = _twins(store, deltas) if subs and subs[0].settings.noop_repeats else {}
        if twins:  # a repeat of a live lesson (or of an earlier row of the batch) writes nothing
            kept = [k for k in range(len(deltas)) if k not in twins]
            repeats = {accepted[k]: (deltas[k], twin) for k, twin in twins.items()}
            accepted, deltas = [accepted[k] for k in kept], [deltas[k] for k in kept]
        stored = store._insert_deltas(deltas, mint_batch(deltas, validated=_validates(rules)))
    templates: dict = {}  # per (verdict, warnings): the result's fields but its delta and undo (a batch has few)
    for i, (delta, undo) in zip(accepted, stored):
        verdict, warnings = decided[i]
        key = (id(verdict), id(warnings))
        template = templates.get(key)
        if template is None:
            template = templates[key] = _result(verdict, warnings, delta, undo).__dict__
        f = template.copy()
        f["delta"], f["undo"] = delta, undo
        results[i] = made(WriteResult, f)
    if twins:
        written = {d.id: d for d, _ in stored}
        for i, (delta, twin) in repeats.items():
            twin = twin if isinstance(twin, Delta) else written[twin]
            results[i] = _noop(delta, twin, decided[i][1])
    return results  # type: ignore[return-value]


def _twins(store: "Store", deltas: list[Delta]) -> dict[int, "Delta | str"]:
    """{index: the live lesson it repeats} for each new delta that repeats one of its skill in the store (a
    stored `Delta`) or an earlier delta of the same batch (that delta's id): the same `Delta.lesson` (kind,
    scope, payload as read) in the same section. Found through the store's index of lesson digests; a stored
    row counts by the digest of its sealed payload, computed here, not by the digest column."""
    seen: dict[tuple, "Delta | str"] = {}
    for skill in dict.fromkeys(d.skill for d in deltas):
        digests = list(dict.fromkeys(d.lesson for d in deltas if d.skill == skill))
        for at in range(0, len(digests), 500):
            for live in store.search(skill, status=LIVE, lessons=digests[at:at + 500]):
                seen.setdefault((live.skill, live.lesson, live.anchor.section), live)
    out: dict[int, Delta | str] = {}
    for k, d in enumerate(deltas):
        twin = seen.setdefault((d.skill, d.lesson, d.anchor.section), d.id)
        if twin != d.id:
            out[k] = twin
    return out


def _noop(delta: Delta, twin: Delta, warnings: tuple[str, ...]) -> WriteResult:
    return WriteResult("noop", f"the same lesson as {twin.id} ({twin.status}) in §{twin.anchor.section}, scope "
                               f"{twin.scope}: nothing written", "duplicate", delta=twin, warnings=warnings)


def _result(verdict: Verdict, warnings: tuple[str, ...], delta: Delta | None = None,
            undo: "Undo | None" = None) -> WriteResult:
    f = _RESULT.copy()
    f["outcome"], f["message"], f["rule"], f["warnings"] = verdict.outcome, verdict.message, verdict.rule, warnings
    if delta is not None:
        f["delta"], f["undo"], f["findings"] = delta, undo, verdict.findings
    return made(WriteResult, f)


_RESULT = fields_of(WriteResult, {"outcome": "", "message": "", "rule": "", "delta": None, "fact": None, "undo": None,
                                  "findings": (), "warnings": (), "dry_run": False})


def _submissions(store, skill: Skill, rows: list[Lesson], settings: GateSettings | None) -> list[Submission]:
    """`_proposal` for each row of a batch: the settings resolved once, each distinct provenance read once."""
    settings = settings or GateSettings()
    auto = bool(store.auto_approve if settings.auto_approve is None else settings.auto_approve)
    template = fields_of(Submission, {"skill": skill, "kind": "", "payload": None, "section": None, "provenance": None,
                                      "scope": "", "evidence": (), "incognito": False, "research": store.research,
                                      "auto_approve": auto, "settings": settings})
    seen: dict = {}
    out = []
    for r in rows:
        prov = r.provenance
        try:
            provenance = seen[prov]
        except (KeyError, TypeError):
            provenance = _provenance(prov)
            if isinstance(prov, (str, Provenance)) or prov is None:
                try:
                    seen[prov] = provenance
                except TypeError:  # a Provenance holding a list: not hashable, read every time
                    pass
        ev = r.evidence
        f = template.copy()
        f["kind"], f["payload"], f["section"], f["provenance"], f["scope"], f["incognito"] = \
            r.kind, r.payload, r.section, provenance, store.write_scope(r.scope), r.incognito
        f["evidence"] = (ev,) if isinstance(ev, str) else tuple(ev or ())
        out.append(made(Submission, f))
    return out


# ----------------------------------------------------------------------------------- batch rules
# `decide_many` runs RULES over a batch rule by rule. A rule with a batch form below gives, for every row it is
# asked about, exactly what its per-row form gives (tests/test_learn_batch.py holds them to `decide`, row by
# row, on the injection corpus, the workload and generated hostile lessons); a rule without one runs per row.


class _Batch:
    """What the batch forms share: the rows, and per row which text-reading patterns may match (one automaton
    pass over all the rows that reach them)."""

    def __init__(self, subs: list[Submission]):
        self.subs = subs
        self.groups: dict[int, frozenset] = {}
        self.views: dict[int, list[tuple[str, ...]]] = {}  # per row: the views of each of its texts
        self.findings: dict[int, tuple[str, ...]] = {}
        self._read: tuple[list[int], list[str], list[tuple[str, ...]]] | None = None  # `may`'s rows, texts, views
        self._values: dict[str, Collection] = {}
        self._texts: tuple[list, list[str]] | None = None
        self._skills: dict[int, Skill] | None = None

    def skills(self) -> dict[int, Skill]:
        """The batch's skills by identity (`learn_many` gives every row the same one)."""
        if self._skills is None:
            self._skills = {id(skill): skill for skill in map(attrgetter("skill"), self.subs)}
        return self._skills

    def texts(self, idx: list[int]) -> tuple[list[tuple[tuple[str, str], ...]], list[str]]:
        """For rows `idx` (ascending, as rules are asked): each row's (field, text) pairs (`Submission.texts`),
        and all their texts in order. Read once for the whole batch."""
        if self._texts is None:
            fields = [p._texts for p in self.subs]
            self._texts = (fields, [t for f in fields for _, t in f])
        if len(idx) == len(self.subs):  # every row
            return self._texts
        fields = [self._texts[0][i] for i in idx]
        return fields, [t for f in fields for _, t in f]

    def values(self, field: str) -> Collection:
        """The values a submission field takes in this batch (any row, decided or not): a rule that reads only
        rows with some value of it has none to read where the batch holds no such value."""
        found = self._values.get(field)
        if found is None:
            values = list(map(attrgetter(field), self.subs))
            try:
                found = self._values[field] = set(values)
            except TypeError:  # an unhashable value (evidence holding a list): every value, as it is
                found = self._values[field] = values
        return found

    def may(self, idx: list[int]) -> dict[int, frozenset]:
        """Per row: the patterns of the scan (`detectors()`) and of `no_widening` (by their index in
        `_text_patterns`) that may match one of its texts or a reading of one (any other cannot)."""
        todo = [i for i in idx if i not in self.groups]
        if todo:
            fields, flat = self.texts(todo)
            views = views_many(flat)
            words = _words_lines(flat, views)
            ends = list(accumulate(map(len, fields), initial=0))  # each row's texts: flat[ends[k]:ends[k + 1]]
            if sum(map(len, views)) == len(views):  # one view a text (the common case): three lines each
                lines = list(chain.from_iterable(zip(flat, chain.from_iterable(views), words)))
                line_ends = [3 * e for e in ends]
            else:
                lines = [line for t, v, w in zip(flat, views, words) for line in (t, *v, w)]
                per_text = list(accumulate((2 + len(v) for v in views), initial=0))
                line_ends = [per_text[e] for e in ends]
            may = _text_patterns().groups_of(lines, line_ends)  # each text's `reading_lines`, row by row
            self.views.update((i, views[a:b]) for i, a, b in zip(todo, ends, ends[1:]))
            self.groups.update(zip(todo, may))
            if self._read is None:
                self._read = (todo, flat, views)
        return self.groups

    def scan(self, idx: list[int]) -> dict[int, tuple[str, ...]]:
        """Per row: the scan findings `stage_trusted` / `quarantine_untrusted` report (`scan_many`)."""
        todo = [i for i in idx if i not in self.findings]
        if todo:
            may = self.may(todo)
            fields, texts = self.texts(todo)
            owners = [(i, w) for i, f in zip(todo, fields) for w, _ in f]
            if self._read is not None and self._read[0] == todo:  # the rows `may` read, in one batch: its views
                views = self._read[2]
            else:
                views = [v for i in todo for v in self.views[i]]
            patterns = detectors()
            if any([may[i] for i in todo]):
                candidates = [[patterns[j] for j in sorted(may[i]) if j < len(patterns)] if may[i] else ()
                              for i, _ in owners]
            else:  # no pattern may match any text of these rows
                candidates = [()] * len(owners)
            hits = scan_many(texts, candidates, views)
            found = dict.fromkeys(todo, ())
            for (i, w), h in zip(owners, hits):
                if h:
                    found[i] += tuple(f"{w}: {f}" for f in h)
            self.findings.update(found)
        return self.findings


def _words_lines(texts: list[str], views: list[tuple[str, ...]]) -> list[str]:
    """Per text, the `_words` readings `no_widening` matches (camelCase split, separators as spaces), joined."""
    joined = "\x00".join(texts)
    if joined.count("\x00") == len(texts) - 1:  # texts that hold a camelCase join, found in one pass
        starts = list(accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
        if joined.isascii():  # `_CAMEL` is [a-z0-9][A-Z]: "aA" once lowercase letters and digits read "a"
            flat = joined.encode("ascii").translate(_CAMEL_CLASSES)
            moved = sorted({bisect_right(starts, at) - 1 for at in find_all(flat, b"aA")})
        else:
            moved = sorted({bisect_right(starts, m.start()) - 1 for m in _CAMEL.finditer(joined)})
    else:
        moved = [i for i, t in enumerate(texts) if _CAMEL.search(t)]
    readings = views
    if moved:
        camel_views = dict(zip(moved, views_many([_CAMEL.sub(r"\1 \2", texts[i]) for i in moved])))
        readings = [camel_views.get(i, v) for i, v in enumerate(views)]
    flat = list(chain.from_iterable(readings))
    joined = "\x00".join(flat) if len(flat) == len(readings) else "\x00".join(map("\x01".join, readings))
    if joined.count("\x00") != len(readings) - 1 or joined.count("\x01") != len(flat) - len(readings):
        return ["\n".join(dict.fromkeys(_word_reading(r) for r in rs)) for rs in readings]  # not our separators
    spaced = _spaced_words(joined)
    if "\x01" not in spaced:  # one reading per text (the common case): each stripped of its edge spaces
        return spaced.replace(" \x00", "\x00").replace("\x00 ", "\x00").strip(" ").split("\x00")
    out = []
    for piece in spaced.split("\x00"):
        parts = piece.split("\x01")
        out.append(parts[0].strip(" ") if len(parts) == 1 else "\n".join(dict.fromkeys(p.strip(" ") for p in parts)))
    return out


def _spaced_words(text: str) -> str:
    """Each separator or quote a space, every run of whitespace one space, none at the ends: `_words`' spacing
    (NUL and SOH, a batch's separators, are not spaces). ASCII text in whole-string passes."""
    if not text.isascii():
        return " ".join(text.translate(_SEPARATORS_AS_SPACE).split())
    text = text.encode("ascii").translate(_SEPARATORS_AND_WHITESPACE_AS_SPACE).decode("ascii")
    while "  " in text:
        text = text.replace("  ", " ")
    return text.strip(" ")


_CAMEL_CLASSES = bytes(97 if 97 <= b <= 122 or 48 <= b <= 57 else 65 if 65 <= b <= 90 else 32 for b in range(256))
_SEPARATORS_AS_SPACE = str.maketrans({c: " " for c in "\"'`_-."})
_SEPARATORS_AND_WHITESPACE_AS_SPACE = bytes(32 if chr(b) in "\"'`_-." or chr(b).isspace() else b for b in range(256))


def _word_reading(view: str) -> str:
    return " ".join(_QUOTES_SEPARATORS.sub(" ", view).split())


def _text_patterns():
    """The scan's patterns (`injection.detectors`) and `no_widening`'s, as one automaton (`patternset`): read on
    every string either rule tries them on."""
    return pattern_set(detectors() + _WIDENING)


_WIDENING = (_CONTROL_EDIT, _PERMISSION_TOKEN, _UNCONFIRMED)


def _one_plain_line(text: str) -> bool:
    """`block_structure`'s own shortcut: one line opening with a letter or digit carries no block construct."""
    return "\n" not in text and "\r" not in text and text.lstrip(" \t")[:1].isalnum()


def _per_row(rule) -> Callable:
    def many(batch: _Batch, idx: list[int]) -> list:
        return [rule(batch.subs[i]) for i in idx]
    return many


def _where(field: str, test: Callable, rule) -> Callable:
    """A batch form that runs `rule` only on the rows whose `field` passes `test` (the others: `rule` decides
    nothing); none at all where no row of the batch holds such a value (`_Batch.values`)."""
    get = attrgetter(field)

    def many(batch: _Batch, idx: list[int]) -> list:
        if not any(map(test, batch.values(field))):
            return [None] * len(idx)
        return [rule(p) if test(get(p)) else None for p in map(batch.subs.__getitem__, idx)]
    return many


def _capability_bearing_many(batch: _Batch, idx: list[int]) -> list:
    subs, skills = batch.subs, batch.skills()
    if len(skills) == 1:  # a property of the skill alone: one answer for the batch
        return [capability_bearing(subs[idx[0]])] * len(idx) if idx else []
    seen: dict[int, Any] = {}
    out = []
    for i in idx:
        skill = subs[i].skill
        if id(skill) not in seen:
            seen[id(skill)] = capability_bearing(subs[i])
        out.append(seen[id(skill)])
    return out


def _payload_shape_many(batch: _Batch, idx: list[int]) -> list:
    """`payload_shape` on the rows it can refuse: facts, and rows whose payload has no canonical form (computed
    here, once, for the rules after it)."""
    subs = batch.subs
    return [payload_shape(p) if p.kind == "fact" or p.canonical is None else None
            for p in map(subs.__getitem__, idx)]


def _payload_caps_many(batch: _Batch, idx: list[int]) -> list:
    """`payload_caps` on the rows it can refuse: facts, rows whose provenance turns are over their caps, and
    shaped payloads `cap_violations` finds something in (`cap_violations_many`: one pass for the batch)."""
    rows = [batch.subs[i] for i in idx]
    shaped = [(p, c) for p in rows if p.kind != "fact" and (c := p.canonical) is not None]
    broken = {id(p) for (p, _), found in zip(shaped, cap_violations_many([(p.kind, c) for p, c in shaped]))
              if found}
    provenances = {id(p.provenance): p.provenance for p in rows}  # a batch shares a few
    unfit = {key for key, prov in provenances.items()
             if len(prov.turns) > MAX_TURNS or any(len(t) > TURN_ID_LIMIT for t in prov.turns)}
    if not broken and not unfit and len(shaped) == len(rows):
        return [None] * len(rows)
    return [payload_caps(p) if p.kind == "fact" or id(p) in broken or id(p.provenance) in unfit else None
            for p in rows]  # the per-row rule words the refusal


def _plain_text_many(batch: _Batch, idx: list[int]) -> list:
    """`plain_text` on the rows it reads (not facts, not tool-hints) whose texts are not all one plain line
    (`_one_plain_line`: the rule finds nothing in those). When no text of those rows holds a line break and
    each opens with a letter or digit, every one is such a line: one pass for the batch."""
    subs = batch.subs
    if any(kind in ("fact", "tool-hint") for kind in batch.values("kind")):
        rows = [(i, p._texts) for i in idx if (p := subs[i]).kind != "fact" and p.kind != "tool-hint"]
        texts = [t for _, ts in rows for _, t in ts]
    else:  # every row's texts
        fields, texts = batch.texts(idx)
        rows = list(zip(idx, fields))
    firsts = "".join([t[:1] for t in texts])
    joined = "".join(texts)
    if len(firsts) == len(texts) and firsts.isalnum() and "\n" not in joined and "\r" not in joined:
        return [None] * len(idx)
    test = {i for i, ts in rows if not all(_one_plain_line(t) for _, t in ts)}
    return [plain_text(subs[i]) if i in test else None for i in idx]


def _no_widening_many(batch: _Batch, idx: list[int]) -> list:
    """`no_widening` on the rows whose keys it reads (parameters, facts) and on those a widening pattern matches
    a reading of (its `_words` readings, its views): on any other row it finds nothing."""
    subs = batch.subs
    may = batch.may(idx)
    control, permission, unconfirmed = (len(detectors()) + i for i in range(3))  # places in `_text_patterns`
    if not any(kind in ("parameter", "fact") for kind in batch.values("kind")) and not any(
            control in g or permission in g or unconfirmed in g
            for g in {id(g): g for g in map(may.__getitem__, idx)}.values()):
        return [None] * len(idx)  # no row whose keys it reads, none a widening pattern may match
    out = []
    for i in idx:
        p = subs[i]
        if p.kind in ("parameter", "fact"):
            out.append(no_widening(p))
        elif control in may[i] and any(_CONTROL_EDIT.search(w) for _, t in p._texts for w in _words(t)) \
                or permission in may[i] and any(_PERMISSION_TOKEN.search(v) for vs in batch.views[i] for v in vs) \
                or unconfirmed in may[i] and any(_drops_confirmation(t) for _, t in p._texts):
            out.append(no_widening(p))
        else:
            out.append(None)
    return out


def _known_section_many(batch: _Batch, idx: list[int]) -> list:
    """`known_section` on the rows it can refuse or warn about; where the batch's one skill has headings, no row
    is a fact and every section named is one of them (not the preamble), none: one check per section."""
    subs, skills = batch.subs, batch.skills()
    if len(skills) == 1 and "fact" not in batch.values("kind"):
        slugs = _by_slug(next(iter(skills.values())).body)
        if not (len(slugs) == 1 and BODY in slugs) and \
                all([section in slugs and section != PREAMBLE for section in batch.values("section")]):
            return [None] * len(idx)
    out = []
    for i in idx:
        p = subs[i]
        slugs = _by_slug(p.skill.body)
        quick = not p.is_fact and p.section in slugs and p.section != PREAMBLE and \
            not (len(slugs) == 1 and BODY in slugs)
        out.append(None if quick else known_section(p))
    return out


def _quarantine_untrusted_many(batch: _Batch, idx: list[int]) -> list:
    subs = batch.subs
    if all([Provenance(source).trusted for source in batch.values("provenance.source")]):
        return [None] * len(idx)  # every row's provenance is trusted: nothing here to quarantine
    findings = batch.scan([i for i in idx if not subs[i].provenance.trusted])
    return [None if subs[i].provenance.trusted else _quarantined(subs[i], findings[i]) for i in idx]


def _stage_trusted_many(batch: _Batch, idx: list[int]) -> list:
    findings = batch.scan(idx)
    if not any(batch.values("auto_approve")) and not any([findings[i] for i in idx]):
        return [_STAGED] * len(idx)  # what `_staged` gives each of them
    return [_staged(batch.subs[i], findings[i]) for i in idx]


_MANY: dict[Callable, Callable] = {
    known_kind: _where("kind", lambda kind: kind != "fact" and kind not in TIERS, known_kind),
    research_only: _where("kind", lambda kind: kind in RESEARCH_KINDS, research_only),
    capability_bearing: _capability_bearing_many,
    payload_shape: _payload_shape_many,
    payload_caps: _payload_caps_many,
    plain_text: _plain_text_many,
    no_new_tool: _where("kind", lambda kind: kind == "tool-hint", no_new_tool),
    no_widening: _no_widening_many,
    write_path_tool: _where("kind", lambda kind: kind == "tool-hint", write_path_tool),
    quotes_evidence: _where("evidence", bool, quotes_evidence),
    known_section: _known_section_many,
    untrusted_fact: _where("kind", lambda kind: kind == "fact", untrusted_fact),
    incognito: _where("incognito", bool, incognito),
    route_fact: _where("kind", lambda kind: kind == "fact", route_fact),
    quarantine_untrusted: _quarantine_untrusted_many,
    stage_trusted: _stage_trusted_many,
}


def decide_many(subs: list[Submission], rules: Iterable[Rule] = RULES) -> list[tuple[Verdict, tuple[str, ...]]]:
    """`decide` for each submission of a batch: every rule, in order, on every row it has not yet decided,
    through its batch form where it has one (the same verdicts and warnings as `decide`, row by row)."""
    batch = _Batch(subs)
    verdicts: list[Verdict | None] = [None] * len(subs)
    warnings: dict[int, list[str]] = {}
    idx = list(range(len(subs)))
    for rule in rules:
        if not idx:
            break
        many = _MANY.get(rule.check) or _per_row(rule.check)
        results = many(batch, idx)
        if results.count(None) == len(results):  # the rule decided nothing and warned of nothing on this batch
            continue
        left = []
        for i, result in zip(idx, results):
            if isinstance(result, Verdict):
                verdicts[i] = result
                continue
            if isinstance(result, str):
                warnings.setdefault(i, []).append(result)
            left.append(i)
        idx = left
    for i in idx:
        verdicts[i] = _refuse("no_rule", "no gate accepted this lesson")
    if not warnings:
        return [(v, ()) for v in verdicts]  # type: ignore[misc]
    return [(v, tuple(warnings.get(i, ()))) for i, v in enumerate(verdicts)]  # type: ignore[misc]


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


def promote(store: "Store", delta_id: str, min_samples: int = SHIPPED.min_samples,
            threshold: float = SHIPPED.threshold, wilson: bool = SHIPPED.wilson, z: float = SHIPPED.z) -> Promotion:
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
    undo = store.set_status(delta_id, "active", who="evidence",
                            reason=f"promoted on evidence: {k}/{n} ({'wilson ' if wilson else ''}{score:.3f} "
                                   f">= {threshold})")
    return Promotion(delta_id, True, "promoted on evidence", n, rate, score, undo)


Proposal = Submission  # the old name (four classes were called Proposal); removed in the next release
