"""Effective-skill resolution: `EffectiveSkill = base ⊕ deltas`, once per session, never raising.

Which deltas apply: `active`, in scope, not superseded, written against this base's root, with a
known kind and a well-formed payload, whose anchor still resolves (`anchor.locate`: clean or stale —
an orphaned anchor never applies). Staged and quarantined deltas never reach resolution (only `active`
rows are read). Tier-3 deltas the budget demoted to retrieval-only apply only when the session goal
retrieves them through the embedder's calibrated gate (`retrieval.gate_for`; an explicit `tau` overrides it).

How they apply — the authored text is never rewritten:

* tier 1 (`tool-hint`) adds no text: `prefer` names go first in `skill_tools`, `drop` names are
  withheld (the tool loader does the rest);
* tier 2/3 lines are ordered by precedence (parameter → exception → preference/example, most specific
  last), then by `created_at` as a UTC instant, then id, so the same delta set always renders the same
  bytes. A delta whose anchor is clean renders as a list under its section (after the section's own
  text); everything else (stale anchors) goes in one final `## Learned adjustments` block. A later
  parameter with the same key overrides an earlier one.
* a stale delta (its section changed since it was written) renders per `stale_policy` (`SHIPPED.stale_policy`):
  `keep` as is, `mark` behind `STALE_MARK` (counted by the budget like any learned text), `withhold` not at all
  (a `withheld` note). `rebase.confirm_stale` clears the flag.
* the resident total (authored + learned) is held under the ceiling by whole deltas: retrieved deltas
  are admitted best-first while they fit, and if the resident set itself is over (the store's budget
  was not enforced) the budget plan is applied in memory. Nothing is ever cut mid-step.

Off-states land on the authored base: `learned=False` or `OVERLAY_KIT_NO_LEARNED=1` returns before any
store read, no store, an unreachable embedder (tier-3 retrieval dark, tiers 1-2 and resident lines
unaffected), vectors invalidated by an embedder change (same). Any unexpected failure returns the
authored base with a typed `error` note. Every decision is a typed `Note`.

`Session` resolves each skill once and caches it: an approval mid-session shows from the next session.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timezone
from functools import lru_cache
from operator import attrgetter
from typing import TYPE_CHECKING, NamedTuple, Protocol

from . import anchor as anchor_mod
from . import budget as budget_mod
from .defaults import SHIPPED
from .display import effective_html, effective_text, unified_diff
from .grammar import (
    BLOCK_HEADING,
    BLOCK_INTRO,
    SECTION_LABEL,
    TIERS,
    Delta,
    GrammarError,
    check_shape,
    item_text,
)
from .skill import Skill
from .store import Store
from .textguard import block_parser
from .tools import Selection, ToolLoader, skill_tier

if TYPE_CHECKING:
    from .retrieval import Gate, TriggerIndex

__all__ = [
    "NOTE_KINDS",
    "NO_LEARNED_ENV",
    "STALE_MARK",
    "STALE_POLICIES",
    "EffectiveSkill",
    "Note",
    "OverlayStore",
    "Session",
    "compose",
    "known_lines",
    "learned_disabled",
    "render_key",
    "resolve",
    "unified_diff",
]

NO_LEARNED_ENV = "OVERLAY_KIT_NO_LEARNED"
NOTE_KINDS = (
    "applied",  # rendered (detail: where) or fed to the tool loader
    "retrieved",  # a retrieval-only tier-3 delta the goal retrieved (detail: cosine)
    "not_selected",  # tier-3 lessons the goal did not select (more than stay resident; detail: how many)
    "stale",  # its section changed since it was written: applied (marked, per the stale policy) or withheld
    "withheld",  # not applied: stale, and the stale policy withholds stale lessons
    "orphaned",  # not applied: its section (or base root) is gone
    "superseded",  # not applied: another delta replaces it (lineage)
    "excluded",  # not applied: not active, another scope or another skill (a list given to `compose`)
    "overridden",  # not applied: a later parameter with the same key wins
    "unknown_kind",  # not applied: kind outside the grammar
    "malformed_payload",  # not applied: payload does not parse for its kind
    "left_out",  # not applied: the store left a row out (its seal does not verify, or it is damaged)
    "suppressed_by_budget",  # not applied this session: over the resident ceiling
    "over_budget",  # the authored text alone exceeds the ceiling (never cut)
    "retrieval_dark",  # tier-3 retrieval unavailable (embedder unreachable, vectors invalidated)
    "learned_off",  # learned skills switched off: no store read
    "no_store",  # no overlay store: the authored base
    "store_error",  # the store could not be read: the authored base
    "render_failed",  # the rendered text did not keep the authored structure: the authored base
    "error",  # anything else: the authored base
)
# Precedence within text-bearing tiers, most specific last (seed: "Effective-skill resolution").
KIND_RANK = {"tool-hint": 0, "parameter": 0, "exception": 1, "preference": 2, "example": 2}
BLOCK_SLUG = "learned-adjustments"
LIST_END = "<!-- -->\n"  # ends a learned list so an indented authored heading after it stays a heading
_TRUE = {"1", "true", "yes", "on"}
STALE_POLICIES = ("keep", "mark", "withhold")  # how a stale delta renders (`SHIPPED.stale_policy`)
STALE_MARK = "(possibly outdated — its section changed since it was learned) "  # before a marked stale lesson


class Note(NamedTuple):
    """Why a delta did or did not apply (`kind`: applied, stale, orphaned, suppressed_by_budget, ...)."""

    kind: str
    delta_id: str | None = None
    detail: str = ""

    def to_dict(self) -> dict:
        return {"kind": self.kind, "delta_id": self.delta_id, "detail": self.detail}

    def __str__(self) -> str:
        return (
            f"{self.kind}"
            + (f" {self.delta_id}" if self.delta_id else "")
            + (f": {self.detail}" if self.detail else "")
        )


@dataclass(frozen=True)
class EffectiveSkill:
    """The body a session renders, plus the loader's skill_tools, what applied, and why."""

    skill: str
    text: str  # the effective body (authored body, learned lines added, nothing rewritten)
    base: str  # the authored body, byte for byte
    skill_tools: tuple[str, ...]
    withheld_tools: tuple[str, ...] = ()
    applied: tuple[Delta, ...] = ()  # render order; tool-hints first
    notes: tuple[Note, ...] = ()
    learned: bool = False  # whether the overlay was consulted at all
    tokens: int = 0  # Llama tokens of `text`
    ceiling: int | None = None
    # The applied learned lines alone, as one `## Learned adjustments` block (each line names its section):
    # for a prompt that places the learned fragment apart from the authored text (prompt.compose policy).
    fragment: str = ""

    @property
    def changed(self) -> bool:
        return self.text != self.base

    def notes_of(self, kind: str) -> tuple[Note, ...]:
        return tuple(n for n in self.notes if n.kind == kind)

    def diff(self, context: int = 3) -> str:
        return unified_diff(self, context)

    def _repr_html_(self) -> str:
        return effective_html(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(effective_text(self))

    def to_dict(self) -> dict:
        return {
            "skill": self.skill,
            "learned": self.learned,
            "text": self.text,
            "changed": self.changed,
            "skill_tools": list(self.skill_tools),
            "withheld_tools": list(self.withheld_tools),
            "applied": [
                {"id": d.id, "kind": d.kind, "tier": d.tier, "section": d.anchor.section} for d in self.applied
            ],
            "notes": [n.to_dict() for n in self.notes],
            "tokens": self.tokens,
            "ceiling": self.ceiling,
            "fragment": self.fragment,
        }


def learned_disabled() -> bool:
    return os.environ.get(NO_LEARNED_ENV, "").strip().lower() in _TRUE


def render_key(d: Delta) -> tuple:
    """(tier, precedence, kind, created_at as a UTC instant, id): deterministic across sessions and offsets."""
    created = d.created_at
    if created.tzinfo is not timezone.utc:  # the store's instants are UTC already
        created = created.astimezone(timezone.utc)
    return (TIERS[d.kind], KIND_RANK[d.kind], d.kind, created, d.id)


@lru_cache(maxsize=64)
def _sections(body: str) -> tuple[anchor_mod.Section, ...]:
    """Authored bases are immutable: parse each body once per process."""
    return anchor_mod.parse(body)


_AUTHORED: dict[str, int] = {}  # authored body → Llama tokens (from the store's base registry when there is one)


class OverlayStore(Protocol):
    """What `resolve` reads of a store (`overlay_kit.store.Store` is one)."""

    integrity_notes: Sequence[str]  # rows left out (a seal that does not verify, a damaged row), said in notes

    def read_scopes(self, scope: str | Iterable[str] | None = None) -> str | tuple[str, ...]: ...

    def budget_order(self, skill: str, scope: str | Iterable[str]) -> list[tuple[str, int, int, int]]: ...

    def search(self, skill: str | None = None, scope=None, status=None, **filters) -> list[Delta]: ...

    def retrieval_only(self, skill: str | None = None) -> frozenset[str]: ...

    def kept_lines(self, keys: Sequence[str]) -> dict[str, tuple[int, str]]: ...

    def line_tokens(
        self, lines: Mapping[str, str], kept: Mapping[str, tuple[int, str]] | None = None
    ) -> dict[str, int]: ...

    def authored_tokens(self, body: str) -> int: ...


def _authored_tokens(body: str, store: OverlayStore | None = None) -> int:
    """Llama tokens of an authored body: the store's kept count when there is a store (it keeps the count for
    the next process), else this process's."""
    n = store.authored_tokens(body) if store is not None else _AUTHORED.get(body)
    if n is None or body not in _AUTHORED:
        n = budget_mod.count_tokens(body) if n is None else n
        if len(_AUTHORED) >= 64:
            _AUTHORED.clear()
        _AUTHORED[body] = n
    return n


# The fixed lines a render adds around learned lines (`_render`, `_block`): counted once per database too.
SCAFFOLD_LINES = ("\n", SECTION_LABEL + "\n", LIST_END, BLOCK_HEADING + "\n", BLOCK_INTRO + "\n")
_SCAFFOLD = {"scaffold:" + hashlib.sha256(line.encode("utf-8")).hexdigest()[:16]: line for line in SCAFFOLD_LINES}


def known_lines(
    store: OverlayStore, deltas: Sequence[Delta], kept: Mapping[str, tuple[int, str]] | None = None
) -> None:
    """Load the following-token counts the store keeps for these deltas' learned lines and the scaffold lines
    into the budget's cache (`Store.line_tokens` counts and keeps the ones it lacks), so that rendering and
    budgeting known deltas never run the tokenizer. `kept`: what `Store.kept_lines` read already (not read
    again)."""
    lines = {d.id: item_text(d) for d in deltas if d.tier in (2, 3)}
    if not lines:
        return  # nothing will render: no scaffold either
    lines |= _SCAFFOLD
    budget_mod.remember_following((lines[k], n) for k, n in store.line_tokens(lines, kept).items())


def _scopes(scope: str | Iterable[str]) -> frozenset[str]:
    return frozenset([scope] if isinstance(scope, str) else scope)


def _base(
    skill: Skill, notes: Sequence[Note], learned: bool, ceiling: int | None, tokens: int | None = None
) -> EffectiveSkill:
    return EffectiveSkill(
        skill.name,
        skill.body,
        skill.body,
        tuple(skill.tools),
        (),
        (),
        tuple(notes),
        learned,
        _authored_tokens(skill.body) if tokens is None else tokens,
        ceiling,
    )


# ------------------------------------------------------------------------------------------ selection


@dataclass(slots=True)
class _Pick:
    delta: Delta
    state: str  # clean | stale
    section: anchor_mod.Section
    key: tuple  # render_key(delta)
    line: str  # item_text(delta): its learned line ("" for a tool-hint, which renders none)
    mark: str = ""  # STALE_MARK when the stale policy marks it


_KEY = attrgetter("key")


def _admissible(
    skill: Skill, sections, deltas: Iterable[Delta], scopes: frozenset[str], notes: list[Note], shaped: bool = False
) -> list[_Pick]:
    """Filter to deltas that may apply, with a note for every one that may not. `shaped`: every payload is
    already in `check_shape`'s canonical form (a store's deltas are: it leaves out a row whose payload is not);
    so is each delta the store read and vouched for whose payload is unchanged (`Delta.shape_checked`)."""
    picks, located = [], {}
    for d in deltas:
        if d.superseded_by is not None:
            notes.append(Note("superseded", d.id, f"replaced by {d.superseded_by} (lineage); not applied"))
            continue
        if d.status != "active" or d.scope not in scopes or d.skill != skill.name:
            why = (
                f"status {d.status}"
                if d.status != "active"
                else f"scope {d.scope!r}"
                if d.scope not in scopes
                else f"written for skill {d.skill!r}"
            )
            notes.append(Note("excluded", d.id, f"{why}: not part of this resolution"))
            continue
        if d.kind not in TIERS:
            notes.append(Note("unknown_kind", d.id, f"kind {d.kind!r} is not in the grammar; skipped"))
            continue
        if not shaped and not d.shape_checked:
            try:
                payload = check_shape(d.kind, d.payload)
            except GrammarError as exc:
                notes.append(Note("malformed_payload", d.id, str(exc)))
                continue
            if payload != dict(d.payload):
                d = d.evolve(payload=payload)
        if not skill.from_root(d.base_root):
            notes.append(
                Note(
                    "orphaned",
                    d.id,
                    f"written against the {d.base_root!r} root; this base comes "
                    f"from {skill.root_key!r} (never re-attached without confirmation)",
                )
            )
            continue
        key = (d.anchor.section, d.anchor.digest)
        if key not in located:  # many deltas share an anchor
            located[key] = anchor_mod.locate(d.anchor, sections)
        loc = located[key]
        if loc.state == "orphaned":
            hint = f"; its text now lives under {loc.moved_to!r}" if loc.moved_to else ""
            notes.append(Note("orphaned", d.id, f"section {d.anchor.section!r} is gone from the base{hint}"))
            continue
        if loc.state == "stale":
            notes.append(Note("stale", d.id, f"section {d.anchor.section!r} changed since this was written"))
        order = render_key(d)  # its first element is the tier
        picks.append(_Pick(d, loc.state, loc.section, order, item_text(d) if order[0] > 1 else ""))
    picks.sort(key=_KEY)
    return picks


def _check_stale_policy(policy: str) -> None:
    if policy not in STALE_POLICIES:
        raise ValueError(f"stale_policy must be one of {', '.join(STALE_POLICIES)}, not {policy!r}")


def _stale_policy(picks: list[_Pick], policy: str, notes: list[Note]) -> list[_Pick]:
    """Stale picks as the policy renders them: kept, marked (`STALE_MARK`), or withheld with a note."""
    if policy == "keep":
        return picks
    if policy == "mark":
        return [replace(p, mark=STALE_MARK) if p.state == "stale" else p for p in picks]
    for p in picks:
        if p.state == "stale":
            notes.append(
                Note(
                    "withheld",
                    p.delta.id,
                    "withheld as stale (stale_policy 'withhold'): confirm it still valid to apply it again",
                )
            )
    return [p for p in picks if p.state != "stale"]


def _overrides(picks: list[_Pick], notes: list[Note]) -> list[_Pick]:
    """A later parameter with the same (section, key, scope) wins; the earlier ones are noted, not shown."""
    latest: dict[tuple, _Pick] = {}
    for p in (p for p in picks if p.delta.kind == "parameter"):  # in render order
        k = (p.delta.anchor.section, p.delta.payload["key"], p.delta.payload.get("scope"))
        if k in latest:
            notes.append(Note("overridden", latest[k].delta.id, f"parameter {k[1]!r} is set again by {p.delta.id}"))
        latest[k] = p
    keep = {id(p) for p in latest.values()}
    return [p for p in picks if p.delta.kind != "parameter" or id(p) in keep]


# ------------------------------------------------------------------------------------------ rendering


@dataclass(frozen=True)
class _Rendered:
    text: str
    pieces: tuple[tuple[int, str], ...]  # (offset, text) of every inserted piece
    last_start: int = 0  # where the last authored section starts in `text`
    closer: int = -1  # the offset of an inserted fence-closing line (a piece, but not learned lines)
    lines: tuple[str, ...] = ()  # every piece's text cut after each "\n", in order (what `_tokens` counts)


def _render(sections, picks: Sequence[_Pick]) -> _Rendered:
    """The authored sections, each followed by its clean-anchored lines; then the Learned adjustments block
    (`picks` in render order).

    A section's lines are one bullet list; when the next authored heading is indented (2-3 spaces, which a
    list item would swallow as a continuation), an empty HTML comment closes the list first. A code fence the
    body leaves open at its very end (it would swallow every appended line) is closed before the lines."""
    under: dict[str, list[_Pick]] = {}
    block: list[_Pick] = []
    for p in picks:
        (under.setdefault(p.section.slug, []) if p.state == "clean" else block).append(p)
    closer = _fence_closer(sections[-1].text) if picks and sections else ""
    out, pieces, lines, at, last_start, closed_at = [], [], [], 0, 0, -1
    for i, s in enumerate(sections):
        last_start = at
        out.append(s.text)
        at += len(s.text)
        if closer and i == len(sections) - 1:
            out.append(closer)
            pieces.append((at, closer))
            lines += budget_mod.following_lines(closer)
            closed_at, at = at, at + len(closer)
        if s.slug in under:
            following = sections[i + 1].text if i + 1 < len(sections) else ""
            piece_lines = [
                *_gap(out[-1]),  # "", "\n" or "\n\n": one line per "\n"
                _LABEL_LINE,
                "\n",
                *[p.line for p in under[s.slug]],  # one line each
                "\n",
            ]
            if following[:1] in (" ", "\t"):
                piece_lines.append(LIST_END)
            piece = "".join(piece_lines)
            out.append(piece)
            pieces.append((at, piece))
            lines += piece_lines
            at += len(piece)
    if block:
        piece_lines = [*_gap(out[-1] if out else ""), *_block_lines(block)]
        piece = "".join(piece_lines)
        out.append(piece)
        pieces.append((at, piece))
        lines += piece_lines
    return _Rendered("".join(out), tuple(pieces), last_start, closed_at, tuple(lines))


_LABEL_LINE = SECTION_LABEL + "\n"


def _fence_closer(text: str) -> str:
    """The line that closes a top-level code fence `text` leaves open at its end ('' when none is open)."""
    if "```" not in text and "~~~" not in text:
        return ""
    tokens = [t for t in block_parser().parse(text) if t.level == 0 and t.map]
    lines = anchor_mod.split_lines(text)
    if not tokens or tokens[-1].type != "fence" or tokens[-1].map[1] < len(lines):
        return ""
    fence = tokens[-1]
    mark = fence.markup
    start, end = fence.map
    closing = re.compile(r" {0,3}" + re.escape(mark[0]) + "{" + str(len(mark)) + r",}[ \t]*(?:\r\n|\r|\n)?\Z")
    if end - start >= 2 and closing.match(lines[end - 1]):
        return ""  # closed on the last line
    return ("" if text.endswith(("\n", "\r")) else "\n") + mark + "\n"


def _tokens(r: _Rendered, authored: int) -> int:
    """Exact Llama tokens of the rendered text: the authored count plus what each inserted piece adds.

    A piece starts after a line break or with one, where the tokenizer's count is additive (see
    `budget.count_following`), and so is every line of a piece after its first: the pieces' lines (known
    lines, the store's kept counts) are summed. A piece at the very start of the text is counted the slow,
    whole-text way.
    """
    if any(at == 0 or (r.text[at - 1] not in "\n\r" and not piece.startswith(("\n", "\r"))) for at, piece in r.pieces):
        return budget_mod.count_tokens(r.text)
    return authored + sum(budget_mod.count_many_following(r.lines))


_BLOCK_TOP = (BLOCK_HEADING + "\n", "\n", BLOCK_INTRO + "\n", "\n")


def _block_lines(picks: Sequence[_Pick]) -> list[str]:
    """The Learned adjustments block, line by line: its heading, its intro, one line per pick naming its section."""
    return [*_BLOCK_TOP, *[_context(p) + p.line[2:] for p in picks]]


def _block(picks: Sequence[_Pick]) -> str:
    return "".join(_block_lines(picks))


def _gap(text: str) -> str:
    """What makes `text` end in a blank line, so that an appended block starts a new Markdown block."""
    if not text or text.endswith(("\n\n", "\r\n\r\n", "\r\r")):
        return ""
    return "\n" if text.endswith(("\n", "\r")) else "\n\n"


def _context(p: _Pick) -> str:
    name = p.section.heading or p.section.slug
    return f"- ({name}) {p.mark}"


def _structure_problem(sections, r: _Rendered, picks: Sequence[_Pick]) -> str | None:
    """Why the effective text does not keep the authored structure, or None when it does.

    The WHOLE effective document's section list (level, heading, slug) must be the authored one, plus the
    block heading when stale lines render (a lost, added or renamed section anywhere falls back); and no
    top-level Markdown block may cross the edge of a piece inserted after the last authored section (one
    swallowed by an open fence or HTML block at the end of the body)."""
    want = [(s.level, s.heading, s.slug) for s in sections if s.level > 0]
    got = [(s.level, s.heading, s.slug) for s in anchor_mod.parse(r.text) if s.level > 0]
    block = any(p.state != "clean" for p in picks)
    if block and got and got[-1][:2] == (2, BLOCK_HEADING[3:]):  # its slug may be numbered
        got = got[:-1]
    elif block:
        return "the learned adjustments block would not be a section of its own (an open block swallows it)"
    if got != want:
        lost = [w[2] for w in want if w not in got]
        extra = [g[2] for g in got if g not in want]
        return (
            "the effective text's sections differ from the authored ones"
            + (f"; missing: {', '.join(lost)}" if lost else "")
            + (f"; added: {', '.join(extra)}" if extra else "")
        )
    # Only the last authored section can end inside an open construct (a fence, an HTML block) that would
    # swallow what follows: anything open earlier would have swallowed the next heading, which is a section
    # boundary. So the pieces from the last section on are checked block by block, on that tail alone.
    tail = r.text[r.last_start :]
    checked = [
        (at, piece, len(piece) - len(piece.lstrip("\r\n")))
        for at, piece in r.pieces
        if at >= r.last_start and at != r.closer
    ]
    if not _MAY_SWALLOW.search(tail) and all(
        _blank_line_before(tail[: at - r.last_start + gap]) for at, _, gap in checked
    ):
        return None
    tops = _top_blocks(tail)
    starts = {m[0] for m in tops}
    for at, piece, gap in checked:
        first = len(anchor_mod.split_lines(tail[: at - r.last_start + gap]))
        end = len(anchor_mod.split_lines(tail[: at - r.last_start + len(piece)]))
        if first not in starts or any(m[0] < first < m[1] or (first <= m[0] < end < m[1]) for m in tops):
            return "learned lines after the last authored section would not stay outside its open block"
    return None


# A piece that starts after a blank line with a line at column 0 ends any list, quote, paragraph or indented code
# before it. Only an open code fence or an HTML block of CommonMark types 1-5 (script/pre/style/textarea, comment,
# processing instruction, declaration, CDATA) runs on past a blank line, and none of them can start without one of
# these strings: a tail that holds none, with a blank line before each piece, needs no block parse (no markdown-it).
_MAY_SWALLOW = re.compile(r"```|~~~|<[!?]|<(?:script|pre|style|textarea)", re.IGNORECASE)


def _blank_line_before(text: str) -> bool:
    """`text` ends with a blank line (so what follows it at column 0 starts a new top-level block)."""
    lines = anchor_mod.split_lines(text[-256:])
    return len(lines) > 1 and text.endswith(("\n", "\r")) and not lines[-1].strip(" \t\r\n")


@lru_cache(maxsize=1024)
def _top_blocks(text: str) -> tuple[tuple[int, int], ...]:
    """The line spans of `text`'s top-level Markdown blocks (cached: a sweep re-composes the same tails)."""
    return tuple(tuple(t.map) for t in block_parser().parse(text) if t.level == 0 and t.map)


# ------------------------------------------------------------------------------------------ composing


def compose(
    skill: Skill,
    deltas: Sequence[Delta],
    *,
    goal: str | None = None,
    scope: str | Iterable[str] = "user",
    retrieval_only: Iterable[str] = (),
    index: TriggerIndex | None = None,
    embedder=None,
    tau: float | Gate | None = None,
    ceiling: int = SHIPPED.ceiling,
    notes: Sequence[Note] = (),
    stale_policy: str = SHIPPED.stale_policy,
) -> EffectiveSkill:
    """The pure core over a list of deltas (no store). Never raises on deltas (an unknown `stale_policy` is a
    ValueError)."""
    _check_stale_policy(stale_policy)
    request = _Request(goal, scope, retrieval_only, index, embedder, tau, ceiling, False, stale_policy)
    return _composed(skill, deltas, request, list(notes))


@dataclass(frozen=True)
class _Request:
    """What one composition is asked for, besides the skill, its deltas and the notes so far."""

    goal: str | None
    scopes: str | Iterable[str]
    retrieval_only: Iterable[str]  # ids of retrieval-only (demoted) tier-3 deltas
    index: TriggerIndex | None
    embedder: object
    tau: float | Gate | None
    ceiling: int
    shaped: bool  # the deltas' payloads are canonical already (read from a store: `_admissible` skips the check)
    stale_policy: str
    triggers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # a lesson's evidence triggers, by id


def _composed(skill: Skill, deltas: Sequence[Delta], request: _Request, notes: list[Note]) -> EffectiveSkill:
    try:
        return _compose(skill, deltas, request, notes)
    except Exception as exc:  # the render path never raises: authored base + a typed note
        return _base(skill, notes + [Note("error", None, f"{type(exc).__name__}: {exc}")], True, request.ceiling)


def _compose(skill: Skill, deltas: Sequence[Delta], request: _Request, notes: list[Note]) -> EffectiveSkill:
    goal, index, ceiling = request.goal, request.index, request.ceiling
    retrieval_only = frozenset(request.retrieval_only)
    sections = _sections(skill.body)
    picks = _admissible(skill, sections, deltas, _scopes(request.scopes), notes, request.shaped)
    picks = _overrides(_stale_policy(picks, request.stale_policy, notes), notes)
    hints, resident, pool = [], [], []  # tier 1; tiers 2-3 but retrieval-only ones; retrieval-only tier 3
    for p in picks:
        tier = p.key[0]  # the delta's tier (`render_key`)
        if tier == 1:
            hints.append(p)
        elif p.delta.id not in retrieval_only:
            resident.append(p)
        elif tier == 3:
            pool.append(p)
    if goal and sum(p.delta.tier == 3 for p in resident) > SHIPPED.resident_max:
        resident = _selected(goal, resident, request, notes)

    # Budget over what is resident. The rendered text's exact count decides: only when it is over the ceiling
    # (the store's budget was not enforced) is the budget plan made, and applied in memory.
    authored = _authored_tokens(skill.body)
    if authored > ceiling:
        notes.append(
            Note(
                "over_budget",
                None,
                f"the authored body is {authored} tokens, over the ceiling "
                f"{ceiling}; it is kept whole and nothing learned is added",
            )
        )
    rendered = _render(sections, resident)
    tokens = _tokens(rendered, authored)
    if tokens > ceiling:
        plan = budget_mod.plan(authored, [p.delta for p in resident], ceiling, proposer=None)
        cut = set(plan.demote) | set(plan.archive)
        for p in resident:
            if p.delta.id in cut:
                notes.append(
                    Note(
                        "suppressed_by_budget",
                        p.delta.id,
                        f"resident set is {plan.authored_tokens + plan.learned_tokens} tokens > {ceiling}",
                    )
                )
        if cut:
            resident = [p for p in resident if p.delta.id not in cut]
            rendered = _render(sections, resident)
            tokens = _tokens(rendered, authored)

    # Retrieval: demoted tier-3 lessons return only when the goal calls for them.
    retrieved: list[tuple[_Pick, float]] = []
    if goal and pool:
        if index is None:
            index, why = _index_for(request.embedder, [p.delta for p in pool])
            if why:
                notes.append(Note("retrieval_dark", None, why))
        if index is not None and index.dark:
            notes.append(Note("retrieval_dark", None, index.reason))
        elif index is not None:
            gate, why = _gate(request.tau, index.embedder_id)
            if why:
                notes.append(Note("retrieval_dark", None, why))
            else:
                by_id = {p.delta.id: p for p in pool}
                retrieved = [(by_id[i], c) for i, c in index.retrieve(goal, gate) if i in by_id]

    chosen = list(resident)
    if retrieved:  # best first; whole deltas only, while they fit (estimated here, checked exactly below)
        block, label = budget_mod.scaffold_tokens()  # conservative: a label per line, the block once
        costs = budget_mod.count_many_following([p.line for p, _ in retrieved])
        estimate = tokens + block
        for (p, cos), cost in zip(retrieved, costs):
            if estimate + cost + label > ceiling:
                notes.append(
                    Note(
                        "suppressed_by_budget",
                        p.delta.id,
                        f"retrieved at cosine {cos:.3f}, but it does not fit under {ceiling} tokens",
                    )
                )
                continue
            estimate += cost + label
            chosen.append(p)
            notes.append(Note("retrieved", p.delta.id, f"cosine {cos:.3f}, gate {gate}"))
        chosen.sort(key=_KEY)
        rendered = _render(sections, chosen)
        tokens = _tokens(rendered, authored)
    while tokens > ceiling and chosen:  # the estimates were short (e.g. stale lines' context): trim whole lines
        over = tokens - ceiling
        for victim in sorted(chosen, key=lambda p: budget_mod.value_key(p.delta)):
            chosen.remove(victim)
            notes.append(Note("suppressed_by_budget", victim.delta.id, f"effective text {tokens} tokens > {ceiling}"))
            over -= budget_mod.count_following(victim.line)
            if over <= 0:
                break
        rendered = _render(sections, chosen)
        tokens = _tokens(rendered, authored)
    text = rendered.text

    problem = _structure_problem(sections, rendered, chosen) if chosen else None
    if problem:
        return _base(
            skill, notes + [Note("render_failed", None, f"{problem}: authored base only")], True, ceiling, authored
        )
    skill_tools, withheld = skill_tier(skill.tools, [p.delta.payload for p in hints])
    applied = [p.delta for p in hints] + [p.delta for p in chosen]
    where = {
        p.delta.id: (f"under {p.section.slug}" if p.state == "clean" else "learned adjustments block") for p in chosen
    }
    notes += [Note("applied", p.delta.id, "tool loader") for p in hints]
    notes += [Note("applied", p.delta.id, where[p.delta.id]) for p in chosen]
    fragment = _block(chosen) if chosen else ""
    return EffectiveSkill(
        skill.name,
        text,
        skill.body,
        skill_tools,
        withheld,
        tuple(applied),
        tuple(notes),
        True,
        tokens,
        ceiling,
        fragment,
    )


def _selected(goal: str, resident: list[_Pick], request: _Request, notes: list[Note]) -> list[_Pick]:
    """`resident` with only the tier-3 lessons the goal selects (`selection.select` under the shipped rule); the
    others are noted `not_selected`. No embedder: every lesson stays (noted `retrieval_dark`)."""
    from . import selection
    from .retrieval import EmbedderUnavailable, load_embedder

    embedder = request.embedder
    try:
        if embedder is False:
            raise EmbedderUnavailable("none", "no embedder configured")
        embedder = load_embedder(embedder) if embedder is None or isinstance(embedder, str) else embedder
    except EmbedderUnavailable as exc:
        notes.append(Note("retrieval_dark", None, f"tier-3 selection off, every lesson stays: {exc}"))
        return resident
    tier3 = [p for p in resident if p.delta.tier == 3]
    lessons = [
        selection.Candidate(
            p.delta.id,
            request.triggers.get(p.delta.id) or tuple(filter(None, [p.delta.trigger])),
            str(p.delta.text),
            p.section.text,
        )
        for p in tier3
    ]
    rule = selection.shipped_rule()
    chosen = dict(selection.select([goal], lessons, embedder, rule)[0])
    notes.append(
        Note(
            "not_selected",
            None,
            f"{len(tier3) - len(chosen)} of {len(tier3)} tier-3 lessons (more than "
            f"{SHIPPED.resident_max} stay resident): the goal selects the best {rule.k}",
        )
    )
    return [p for p in resident if p.delta.tier != 3 or p.delta.id in chosen]


def _gate(tau, embedder_id) -> tuple[Gate | None, str | None]:
    """The explicit `tau` (a float is an absolute τ), else the embedder's calibrated gate, else why not."""
    from .retrieval import Gate, gate_for  # retrieval (and numpy) load only when a goal retrieves

    if tau is not None:
        return (tau if isinstance(tau, Gate) else Gate.absolute(tau)), None
    try:
        return gate_for(embedder_id)[0], None
    except Exception as exc:  # uncalibrated embedder or an unreadable calibration: a note, never a guess
        return None, str(exc)


def _index_for(embedder, deltas: Sequence[Delta]) -> tuple[TriggerIndex | None, str | None]:
    """A trigger index built on the fly (no store): embedder None loads the default, False means none."""
    from .retrieval import EmbedderUnavailable, TriggerIndex, load_embedder

    if embedder is False:
        return None, "no embedder configured"
    try:
        emb = load_embedder(embedder) if embedder is None or isinstance(embedder, str) else embedder
    except EmbedderUnavailable as exc:
        return None, str(exc)
    return TriggerIndex.build(emb, deltas), None


# ------------------------------------------------------------------------------------------ resolving


def resolve(
    skill: Skill,
    store: OverlayStore | None = None,
    *,
    goal: str | None = None,
    scope: str | Iterable[str] | None = None,
    learned: bool = True,
    embedder=None,
    tau: float | Gate | None = None,
    ceiling: int = SHIPPED.ceiling,
    stale_policy: str = SHIPPED.stale_policy,
) -> EffectiveSkill:
    """Resolve `skill` against `store`. Never raises (but on an unknown `stale_policy`: ValueError); see the
    module docstring for the rules.

    `embedder`: None loads the bundled default only if a goal needs retrieval; a name/path loads that
    sentence-transformers model; an object with `id` and `encode` is used as is; False disables retrieval.
    `tau`: None uses the embedder's calibrated gate; a float (absolute τ) or a `retrieval.Gate` overrides it.
    `scope`: the scopes read; None: the store's `read_scopes()` ("user", and its agent's own scope if it was
    opened for one). `stale_policy`: keep | mark | withhold (the module docstring).
    """
    _check_stale_policy(stale_policy)
    if not learned or learned_disabled():  # before any store read
        why = "--no-learned-skills" if not learned else f"{NO_LEARNED_ENV} is set"
        return _base(
            skill, [Note("learned_off", None, f"{why}: authored base only, the store was not read")], False, ceiling
        )
    if store is None:
        return _base(skill, [Note("no_store", None, "no overlay store: authored base only")], False, ceiling)
    notes: list[Note] = []
    try:
        scopes = _scopes(store.read_scopes(scope))
        authored = _authored_tokens(skill.body, store)  # a known base's count comes from the store
        deltas, unread, demoted, kept = _read(store, skill, sorted(scopes), ceiling - authored)
        known_lines(store, deltas, kept)  # and so do the counts of its learned lines
        for d in store.search(skill=skill.name, scope=sorted(scopes), status="orphaned"):
            notes.append(Note("orphaned", d.id, "marked orphaned by a base update; review it"))
    except Exception as exc:
        return _base(skill, [Note("store_error", None, f"{type(exc).__name__}: {exc}")], True, ceiling)
    index = None
    if goal and any(d.id in demoted and d.tier == 3 for d in deltas) and embedder is not False:
        from .retrieval import EmbedderUnavailable, TriggerIndex, load_embedder

        try:
            emb = load_embedder(embedder) if embedder is None or isinstance(embedder, str) else embedder
            index = TriggerIndex.from_store(store, emb, [d for d in deltas if d.id in demoted])
        except EmbedderUnavailable as exc:
            index = TriggerIndex.dark_index(str(exc))
    while True:
        # rows the store left out (a seal that does not verify, a damaged row): said, never applied
        said = notes + [Note("left_out", None, text) for text in store.integrity_notes]
        request = _Request(
            goal,
            scopes,
            demoted,
            index,
            embedder,
            tau,
            ceiling,
            isinstance(store, Store),
            stale_policy,  # a store's reads are shape-checked
            _triggers(store, deltas) if goal else {},
        )
        eff = _composed(skill, deltas, request, said)
        if not unread or eff.notes_of("suppressed_by_budget") or any(n.kind == "error" for n in eff.notes):
            return _unread_noted(eff, unread)
        # the budget kept every row read (some could not apply, or their counts were unknown): read on
        slack, kept, more = ceiling - eff.tokens, store.kept_lines(unread[:_CHUNK]), []
        for did in unread[:_CHUNK]:
            if more and slack <= 0:
                break
            more.append(did)
            slack -= kept.get(did, _UNKEPT)[0]
        unread = unread[len(more) :]
        try:
            extra = store.search(skill=skill.name, scope=sorted(scopes), status="active", ids=more)
            known_lines(store, extra, kept)
        except Exception as exc:
            return _base(skill, [Note("store_error", None, f"{type(exc).__name__}: {exc}")], True, ceiling)
        deltas = sorted(deltas + extra, key=attrgetter("sort_key"))


_CHUNK = 256  # rows whose kept line counts are read at a time
_UNKEPT = (0, "")  # a row without a kept line count costs nothing when choosing what to read


def _triggers(store, deltas: Sequence[Delta]) -> Mapping[str, tuple[str, ...]]:
    """The evidence triggers of the resident tier-3 lessons, when there are more than stay resident (a store
    without them, or one that fails to read them: none, each lesson its own trigger)."""
    ids = [d.id for d in deltas if d.tier == 3]
    if len(ids) <= SHIPPED.resident_max or not hasattr(store, "triggers"):
        return {}
    try:
        return store.triggers(ids)
    except Exception:  # selection ranks among approved lessons: a missing trigger only ranks one lower
        return {}


def _read(
    store, skill: Skill, scopes: list[str], room: int
) -> tuple[list[Delta], list[str], frozenset[str], dict[str, tuple[int, str]]]:
    """The active deltas resolution reads, the ids of the resident tier-3 rows it leaves unread (highest value
    first), the retrieval-only ids, and the kept line counts it read (`Store.kept_lines`: the scaffold lines'
    come with the first chunk, so that `known_lines` need not read them again).

    The budget keeps resident tier-3 lessons highest value first while they fit (`budget.plan`): rows past the
    point where the kept counts of those before them fill the `room` the authored body leaves can never be
    kept, so they are not read (`resolve` reads on while the budget keeps every row it read). Every other
    active row is read: tiers 1-2, superseded and retrieval-only rows (`Store.budget_order` names them all)."""
    order = store.budget_order(skill.name, scopes)
    ids, unread, demoted, spent, kept, known = [], [], [], 0, {}, 0
    for k, (did, tier, superseded, resident) in enumerate(order):
        if tier != 3 or superseded:
            ids.append(did)
        elif not resident:  # read, goal or not: a row's residency is sealed, and a flipped one must be noted
            demoted.append(did)
            ids.append(did)
        elif spent <= room:
            if k >= known:  # the kept counts of the next rows, a chunk at a time
                chunk = [i for i, t, sup, res in order[k : k + _CHUNK] if res and not sup]
                kept |= store.kept_lines(chunk if known else [*_SCAFFOLD, *chunk])
                known = k + _CHUNK
            ids.append(did)
            spent += kept.get(did, _UNKEPT)[0]
        else:
            unread.append(did)
    deltas = (
        store.search(skill=skill.name, scope=scopes, status="active", include_superseded=True, ids=ids) if ids else []
    )
    return deltas, unread, frozenset(demoted), kept


def _unread_noted(eff: EffectiveSkill, unread: Sequence[str]) -> EffectiveSkill:
    """`eff` with a `suppressed_by_budget` note for each resident row left unread (after the others)."""
    if not unread:
        return eff
    cut = eff.notes_of("suppressed_by_budget")
    if not cut:  # the authored base (an error): nothing applied
        return eff
    detail = cut[-1].detail
    at = max(i for i, n in enumerate(eff.notes) if n.kind == "suppressed_by_budget") + 1
    notes = eff.notes[:at] + tuple(Note("suppressed_by_budget", did, detail) for did in unread) + eff.notes[at:]
    return replace(eff, notes=notes)


class Session:
    """One agent session: each skill resolves once, at first use, and stays fixed for the session.

    The ceiling is shared by every skill the session loads (per-agent budget): each resolution gets what
    earlier ones left. Deltas retrieved by the goal get `last_used_at` stamped (decay input). Each turn's
    tools come from `loader` (the agent's `ToolLoader` over its live registry; by default one over the
    session's skills' own tools), fed the effective skill's SKILL tier: `select_tools(skill, goal)`.
    """

    def __init__(
        self,
        store=None,
        *,
        goal: str | None = None,
        scope: str | Iterable[str] | None = None,
        learned: bool = True,
        embedder=None,
        tau: float | Gate | None = None,
        ceiling: int = SHIPPED.ceiling,
        touch: bool = True,
        loader: ToolLoader | None = None,
        stale_policy: str = SHIPPED.stale_policy,
    ):
        _check_stale_policy(stale_policy)
        self.store = store
        self.goal = goal
        self.scope = scope
        self.learned = learned
        self.embedder = embedder
        self.tau = tau
        self.ceiling = ceiling
        self.touch = touch
        self.loader = loader
        self.stale_policy = stale_policy
        self._cache: dict[tuple, EffectiveSkill] = {}

    @property
    def used_tokens(self) -> int:
        return sum(e.tokens for e in self._cache.values())

    def resolve(self, skill: Skill) -> EffectiveSkill:
        key = (skill.name, str(skill.path), skill.root_key, skill.body_digest)
        if key not in self._cache:
            left = max(1, self.ceiling - self.used_tokens)
            eff = resolve(
                skill,
                self.store,
                goal=self.goal,
                scope=self.scope,
                learned=self.learned,
                embedder=self.embedder,
                tau=self.tau,
                ceiling=left,
                stale_policy=self.stale_policy,
            )
            ids = [n.delta_id for n in eff.notes_of("retrieved")]
            if self.touch and ids and self.store is not None:
                try:
                    self.store.touch(ids)
                except Exception as exc:  # a failed stamp must not fail the session
                    eff = replace(eff, notes=eff.notes + (Note("store_error", None, f"touch: {exc}"),))
            self._cache[key] = eff
        return self._cache[key]

    def select_tools(self, skill: Skill, goal: str | None = None) -> Selection:
        """This turn's tools: CORE > SKILL (the effective skill's, tier-1 hints applied) > SEMANTIC, capped, LRU
        across the session's turns. A hint can reorder or withhold a tool, never add one the registry lacks."""
        eff = self.resolve(skill)
        if self.loader is None:
            self.loader = ToolLoader({name: "" for name in skill.tools})
        return self.loader.select(goal if goal is not None else self.goal, eff.skill_tools, eff.withheld_tools)
