"""Rich displays: HTML and plain-text renderings of skills, deltas, effective skills, diffs and rebase reports.

Pure string building (`html.escape`, inline styles) — no Jupyter import, so the core stays importable
anywhere. The value classes expose these through `_repr_html_` (Jupyter's rich output) and `_repr_pretty_`
(IPython's plain text), so a notebook cell ending in a `Skill`, `Delta`, `EffectiveSkill`, `RebaseResult`
or `gates.WriteResult` shows a readable card; the widgets reuse the same builders. Every rendering is
deterministic for the same value (no ids of its own, no clock), so stored notebook outputs re-run equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from .anchor import locate, parse
from .textguard import visible, visible_review

__all__ = [
    "DeltaTable",
    "UnifiedDiff",
    "delta_html",
    "delta_text",
    "deltas_html",
    "diff_html",
    "effective_html",
    "effective_text",
    "rebase_html",
    "rebase_text",
    "skill_html",
    "skill_text",
    "write_result_html",
    "write_result_text",
]

# status / state / outcome → colour of its badge
COLOURS = {
    "active": "#1a7f37",
    "staged": "#0969da",
    "quarantined": "#cf222e",
    "orphaned": "#8250df",
    "archived": "#6e7781",
    "clean": "#1a7f37",
    "stale": "#9a6700",
    "refused": "#cf222e",
    "routed": "#8250df",
    "session_only": "#6e7781",
    "proposed": "#0969da",
}
_BOX = "font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;line-height:1.45;margin:2px 0"
_PRE = (
    "font-family:var(--jp-code-font-family,monospace);font-size:12px;line-height:1.4;white-space:pre-wrap;"
    "margin:4px 0;"
    "padding:6px;border:1px solid #d0d7de;border-radius:4px;max-height:32em;overflow:auto"
)
_CELL = "padding:2px 8px;border-bottom:1px solid #d0d7de;text-align:left;vertical-align:top"


def esc(value) -> str:
    """HTML-escaped, with every control, bidi and invisible character shown as `<U+XXXX>`."""
    import html  # the renderers import what they use: a CLI start renders no HTML and no diff

    return html.escape(visible(str(value)), quote=True)


def esc_review(value) -> str:
    """`esc` for a learned text and its findings: look-alike letters of another script inside a Latin word
    (`textguard.lookalikes`: the Cyrillic "о" of `billing@cоmpany.com`) are shown as `<U+XXXX>` too, as hidden
    characters are."""
    import html

    return html.escape(visible_review(str(value)), quote=True)


def badge(text: str, colour: str | None = None) -> str:
    c = colour or COLOURS.get(text, "#57606a")
    return (
        f'<span style="display:inline-block;padding:0 6px;border-radius:8px;border:1px solid {c};'
        f'color:{c};font-size:11px;font-weight:600">{esc(text)}</span>'
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """An HTML table; cells are already HTML (escape text with `esc`)."""
    head = "".join(f'<th style="{_CELL}">{esc(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in r) + "</tr>" for r in rows)
    return (
        f'<table style="border-collapse:collapse;margin:4px 0"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _box(inner: str, border: str = "#d0d7de") -> str:
    return f'<div style="{_BOX};border-left:3px solid {border};padding:4px 10px">{inner}</div>'


def _when(t: datetime | None) -> str:
    return "—" if t is None else t.astimezone(timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------------------------------------- skill


def skill_html(skill) -> str:
    """Name, version, security tier, permissions, tools, and every section with its anchor digest."""
    sections = parse(skill.body)
    shift = skill.body_start_line - 1
    head = f"<b>{esc(skill.name)}</b> {esc(skill.version or '')} {badge(skill.security_tier, '#57606a')}"
    if skill.capability_bearing:
        head += " " + badge("capability-bearing: no learned deltas", "#cf222e")
    meta = [f"<div>{esc(skill.description)}</div>"]
    if skill.permissions:
        meta.append("<div>permissions: " + ", ".join(f"<code>{esc(p)}</code>" for p in skill.permissions) + "</div>")
    if skill.tools:
        meta.append("<div>tools: " + ", ".join(f"<code>{esc(t)}</code>" for t in skill.tools) + "</div>")
    rows = [
        (
            f"<code>{esc(s.slug)}</code>",
            esc(s.heading),
            str(s.level),
            f"{s.start_line + shift}–{s.end_line + shift}",
            f"<code>{esc(s.digest)}</code>",
        )
        for s in sections
    ]
    return _box(head + "".join(meta) + table(("anchor", "heading", "level", "lines", "digest"), rows))


def skill_text(skill) -> str:
    extra = "; capability-bearing" if skill.capability_bearing else ""
    lines = [
        f"Skill {skill.name} {skill.version or ''} ({skill.security_tier}; {len(skill.tools)} tools; "
        f"permissions: {', '.join(map(str, skill.permissions)) or 'none'}{extra})"
    ]
    lines += [f"  {s.slug:<28} {s.digest}  {s.heading}" for s in parse(skill.body)]
    return visible("\n".join(lines))


# ---------------------------------------------------------------------------------------------- delta


def _anchor_state(delta, body: str | None) -> str | None:
    return None if body is None else locate(delta.anchor, body).state


def delta_html(delta, body: str | None = None) -> str:
    """Kind, tier, status, provenance, evidence counters, anchor (and its state in `body`), findings."""
    state = _anchor_state(delta, body)
    a = delta.anchor
    prov = delta.provenance
    trust = badge("trusted", COLOURS["active"]) if prov.trusted else badge("untrusted", COLOURS["quarantined"])
    head = (
        f"{badge(delta.status)} <b>{esc(delta.kind)}</b> · tier {delta.tier} · {esc(delta.skill)}"
        f"#<code>{esc(a.section)}</code> · <code>{esc(delta.id)}</code>"
    )
    rows = [
        f"<div style='margin:2px 0 2px 0'>{esc_review(delta.text)}</div>",
        f"<div>anchor: <code>{esc(a.section)}</code> @ <code>{esc(a.digest)}</code> "
        f"(base {esc(a.base_version or '?')})" + (f" {badge(state)}" if state else "") + "</div>",
        f"<div>provenance: {esc(prov.source)} {trust}"
        + (f" · turns {esc(', '.join(prov.turns))}" if prov.turns else "")
        + f" · scope {esc(delta.scope)}</div>",
        f"<div>evidence: {delta.success_count}/{delta.attempt_count} outcomes positive · created "
        f"{esc(_when(delta.created_at))} · approved {esc(_when(delta.approved_at))}"
        + (f" · superseded by <code>{esc(delta.superseded_by)}</code>" if delta.superseded_by else "")
        + "</div>",
    ]
    if delta.findings:
        rows.append(
            "<div style='color:#cf222e'>injection scan: <ul style='margin:0'>"
            + "".join(f"<li>{esc_review(f)}</li>" for f in delta.findings)
            + "</ul></div>"
        )
    return _box(head + "".join(rows), COLOURS.get(delta.status, "#d0d7de"))


def delta_text(delta, body: str | None = None) -> str:
    state = _anchor_state(delta, body)
    lines = [
        f"Delta {delta.id} [{delta.status}] {delta.kind} (tier {delta.tier}) on "
        f"{delta.skill}#{delta.anchor.section}" + (f" ({state})" if state else ""),
        f"  {visible_review(delta.text, keep_newlines=False)}",
        f"  provenance: {delta.provenance.source} ({'trusted' if delta.provenance.trusted else 'untrusted'}); "
        f"evidence {delta.success_count}/{delta.attempt_count}",
    ]
    lines += [f"  finding: {visible_review(f)}" for f in delta.findings]
    return visible("\n".join(lines))


def deltas_html(deltas: Sequence, bodies: dict[str, str] | None = None, title: str = "") -> str:
    """A table of deltas; `bodies` (skill name → current body) adds each anchor's state."""
    bodies = bodies or {}
    rows = []
    for d in deltas:
        state = _anchor_state(d, bodies.get(d.skill))
        rows.append(
            (
                f"<code>{esc(d.id)}</code>",
                badge(d.status),
                esc(d.kind),
                str(d.tier),
                f"{esc(d.skill)}#<code>{esc(d.anchor.section)}</code>" + (f" {badge(state)}" if state else ""),
                esc(d.provenance.source),
                f"{d.success_count}/{d.attempt_count}",
                esc_review(d.text) + "".join(f"<div style='color:#cf222e'>⚠ {esc_review(f)}</div>" for f in d.findings),
            )
        )
    head = f"<div><b>{esc(title)}</b></div>" if title else ""
    if not rows:
        return _box(head + "<i>no deltas</i>")
    return _box(head + table(("id", "status", "kind", "tier", "anchor", "source", "evidence", "lesson"), rows))


@dataclass(frozen=True)
class DeltaTable:
    """A list of deltas that displays as a table (what `%deltas` returns). Iterable like the list it holds."""

    deltas: tuple
    title: str = ""
    bodies: tuple[tuple[str, str], ...] = ()  # (skill, current body) pairs, for anchor states

    def __iter__(self):
        return iter(self.deltas)

    def __len__(self) -> int:
        return len(self.deltas)

    def __getitem__(self, i):
        return self.deltas[i]

    def _repr_html_(self) -> str:
        return deltas_html(self.deltas, dict(self.bodies), self.title)

    def _repr_pretty_(self, printer, cycle) -> None:
        bodies = dict(self.bodies)
        text = [self.title] if self.title else []
        text += [delta_text(d, bodies.get(d.skill)) for d in self.deltas] or ["no deltas"]
        printer.text("\n".join(text))


# -------------------------------------------------------------------------------------- effective skill


def _learned_lines(eff) -> set[int]:
    """0-based lines of `eff.text` that the resolver added (it only ever inserts)."""
    import difflib

    base, text = eff.base.splitlines(), eff.text.splitlines()
    out: set[int] = set()
    for op, _i1, _i2, j1, j2 in difflib.SequenceMatcher(None, base, text, autojunk=False).get_opcodes():
        if op in ("insert", "replace"):
            out.update(range(j1, j2))
    return out


def _note_rows(notes) -> str:
    shown = [n for n in notes if n.kind != "applied"]
    if not shown:
        return ""
    items = (
        f"<li>{badge(n.kind, COLOURS.get(n.kind, '#9a6700'))} "
        + (f"<code>{esc(n.delta_id)}</code> " if n.delta_id else "")
        + f"{esc(n.detail)}</li>"
        for n in shown
    )
    return "<ul style='margin:2px 0'>" + "".join(items) + "</ul>"


def effective_html(eff) -> str:
    """The authored text with the learned lines marked, the tool order, and every non-trivial note."""
    marked = _learned_lines(eff)
    lines = []
    for i, line in enumerate(eff.text.splitlines()):
        if i in marked:
            lines.append(f'<span style="background:#dafbe1;display:block" title="learned">{esc(line) or " "}</span>')
        else:
            lines.append(f'<span style="display:block">{esc(line) or " "}</span>')
    head = (
        f"<b>{esc(eff.skill)}</b> (effective) · {eff.tokens} tokens"
        + (f" of {eff.ceiling}" if eff.ceiling else "")
        + f" · {len(eff.applied)} learned applied"
        + ("" if eff.learned else " · " + badge("learned off", "#6e7781"))
    )
    tools = f"<div>skill_tools: {', '.join(f'<code>{esc(t)}</code>' for t in eff.skill_tools) or '—'}"
    if eff.withheld_tools:
        tools += " · withheld: " + ", ".join(f"<code>{esc(t)}</code>" for t in eff.withheld_tools)
    tools += "</div>"
    legend = (
        (
            "<div style='font-size:11px;color:#57606a'>green lines are learned; everything else is the "
            "authored body, byte for byte</div>"
        )
        if marked
        else ""
    )
    return _box(head + tools + _note_rows(eff.notes) + legend + f'<div style="{_PRE}">{"".join(lines)}</div>')


def effective_text(eff) -> str:
    notes = [f"  {n}" for n in eff.notes if n.kind != "applied"]
    head = (
        f"EffectiveSkill {eff.skill}: {eff.tokens} tokens"
        + (f" (ceiling {eff.ceiling})" if eff.ceiling else "")
        + f", {len(eff.applied)} learned applied, skill_tools: {', '.join(eff.skill_tools)}"
    )
    return visible("\n".join([head, *notes, "", eff.text.rstrip("\n")]))


# ----------------------------------------------------------------------------------------------- diff


def diff_html(text: str) -> str:
    """A unified diff, coloured by line."""
    if not text:
        return _box("<i>no difference</i>")
    colour = {"+": "background:#dafbe1", "-": "background:#ffebe9", "@": "color:#8250df"}
    out = []
    for line in text.splitlines():
        style = "font-weight:600" if line.startswith(("+++", "---")) else colour.get(line[:1], "")
        out.append(f'<span style="display:block;{style}">{esc(line) or " "}</span>')
    return f'<div style="{_PRE}">{"".join(out)}</div>'


def unified_diff(eff, context: int = 3, *, against=None, labels: tuple[str, str] = ("authored", "effective")) -> str:
    """Unified diff of the authored body → the effective body ('' when nothing learned applies). `against`:
    diff from another resolution's text instead (e.g. without one delta → with it), named by `labels`."""
    import difflib

    before = eff.base if against is None else against.text
    a, b = (f"{side}/{eff.skill}/SKILL.md ({label})" for side, label in zip("ab", labels))
    return "".join(
        difflib.unified_diff(before.splitlines(keepends=True), eff.text.splitlines(keepends=True), a, b, n=context)
    )


@dataclass(frozen=True)
class UnifiedDiff:
    """A unified diff that displays coloured; `str()` is the diff text (the CLI's `deltas --diff` output)."""

    text: str

    @classmethod
    def of(cls, eff, against=None, labels: tuple[str, str] | None = None) -> "UnifiedDiff":
        """Authored → effective (the CLI's diff), or `against` → `eff` (e.g. without one delta → with it)."""
        kw = {} if against is None else {"against": against, "labels": labels or ("without", "with")}
        return cls(unified_diff(eff, **kw))

    def __str__(self) -> str:
        return self.text

    def __bool__(self) -> bool:
        return bool(self.text)

    def _repr_html_(self) -> str:
        return diff_html(self.text)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.text.rstrip("\n") or "(no difference)")


# ---------------------------------------------------------------------------------------------- rebase


def _outcome_cells(o) -> tuple:
    d = o.decision
    prop = f"{esc(d.proposal.section)} ({esc(d.proposal.method)} {d.proposal.score:.2f})" if d.proposal else "—"
    new = f"<code>{esc(o.anchor.section)}</code>" if o.state != "orphaned" else "—"
    return (
        f"<code>{esc(o.delta.id)}</code>",
        esc(o.delta.kind),
        f"<code>{esc(o.delta.anchor.section)}</code>",
        badge(o.state),
        new,
        prop,
        esc(o.narrowed or d.reason),
    )


def rebase_html(result) -> str:
    """What a base update did to each live delta under the policy: clean / stale / orphaned, proposals."""
    counts = ", ".join(f"{v} {k}" for k, v in sorted(result.counts().items())) or "no live deltas"
    change = result.change
    head = (
        f"<b>rebase</b> of <b>{esc(change.name)}</b> under <code>{esc(result.policy)}</code> · "
        f"{esc(change.old_version or '?')} → {esc(change.version or '?')} · {esc(counts)}"
    )
    if not result.outcomes:
        return _box(head)
    review = (
        "<div>review: stale deltas still apply (flagged); orphans are kept, not applied, and wait for a "
        "person (re-anchor, bulk re-approve or discard)</div>"
        if result.review
        else ""
    )
    rows = [_outcome_cells(o) for o in result.outcomes]
    return _box(head + review + table(("id", "kind", "was on", "state", "now on", "proposal", "why"), rows))


def rebase_text(result) -> str:
    counts = ", ".join(f"{v} {k}" for k, v in sorted(result.counts().items())) or "no live deltas"
    lines = [f"RebaseResult {result.change.name} ({result.policy}): {counts}"]
    for o in result.outcomes:
        lines.append(
            f"  {o.delta.id} {o.delta.kind} {o.delta.anchor.section} -> {o.state}"
            + (f" ({o.anchor.section})" if o.state != "orphaned" else "")
            + f": {o.narrowed or o.decision.reason}"
        )
    return visible("\n".join(lines))


# ------------------------------------------------------------------------------------- gate decisions


def write_result_html(r) -> str:
    """A gate decision: outcome, the rule that decided, its message, scan findings, warnings, the delta."""
    colour = COLOURS.get(r.outcome, "#57606a")
    dry = " · " + badge("dry run: nothing written", "#6e7781") if getattr(r, "dry_run", False) else ""
    head = f"{badge(r.outcome)} rule <code>{esc(r.rule)}</code>{dry}<div>{esc(r.message)}</div>"
    parts = [head]
    if r.findings:
        parts.append(
            "<div style='color:#cf222e'>injection scan: <ul style='margin:0'>"
            + "".join(f"<li>{esc_review(f)}</li>" for f in r.findings)
            + "</ul></div>"
        )
    if r.warnings:
        parts.append(
            "<div style='color:#9a6700'>" + "".join(f"<div>warning: {esc(w)}</div>" for w in r.warnings) + "</div>"
        )
    if r.fact is not None:
        parts.append(
            f"<div>tier-0 fact: <code>{esc(r.fact.namespace)}.{esc(r.fact.key)}</code> = "
            f"<code>{esc(r.fact.value)}</code> (scope {esc(r.fact.scope)})</div>"
        )
    if r.delta is not None:
        parts.append(delta_html(r.delta))
    if r.undo:
        parts.append(f"<div style='color:#57606a'>undo handle: {esc(undo_text(r.undo))}</div>")
    return _box("".join(parts), colour)


def write_result_text(r) -> str:
    lines = [
        f"{r.outcome} ({r.rule}){' [dry run: nothing written]' if getattr(r, 'dry_run', False) else ''}: {r.message}"
    ]
    lines += [f"  finding: {visible_review(f)}" for f in r.findings] + [f"  warning: {w}" for w in r.warnings]
    if r.fact is not None:
        lines.append(f"  tier-0 fact: {r.fact.namespace}.{r.fact.key} = {r.fact.value!r} (scope {r.fact.scope})")
    if r.delta is not None:
        lines.append(delta_text(r.delta))
    if r.undo:
        lines.append(f"  undo: {undo_text(r.undo)}")
    return visible("\n".join(lines))


def undo_text(undo) -> str:
    """One line naming an undo handle: the operation, the rows it touches, and how to apply it."""
    rows = f" of {', '.join(undo.ids)}" if undo.ids else ""
    return f"{undo.op}{rows} ({len(undo.steps)} step(s)); store.undo(handle) reverses it"
