"""The review panel: what the agent learned and is waiting for a person — approve it, discard it, undo it.

Pending (staged and quarantined) deltas each show their card (provenance, evidence, anchor state, the
injection scan's findings for quarantined ones) and the unified diff of the effective skill *with* the
delta against *without* it. Active deltas can be reverted (archived); orphans (their section changed in a
base update) can be re-approved in bulk per skill or discarded one by one; stale ones (their section's text changed
since they were learned) are confirmed still valid in one click per skill (`rebase.confirm_stale`, which clears the
flag). Every action goes through the
store's public API — `store.approve` is the consent gate, the only way out of quarantine — and the undo
handle it returns is listed with an Undo button (`store.undo`).

A panel shows the store as it was when it was drawn (or last refreshed, by its own actions or the Refresh
button): a later cell's writes never redraw an earlier panel, so Run All leaves each panel as of its cell.
The one exception is erasure: once `forget` erases a lesson, its buttons and undo handles are withdrawn.
Approving a quarantined lesson whose injection scan found something takes two steps: Approve… shows the
findings, and only "Approve despite findings" calls `store.approve`.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from types import MappingProxyType

import ipywidgets as widgets

from overlay_kit import anchoring, rebase
from overlay_kit.display import UnifiedDiff, delta_html, esc
from overlay_kit.grammar import Delta
from overlay_kit.resolve import EffectiveSkill, compose
from overlay_kit.store import Store, StoreError, Undo

from .panel import Panel, run_note

__all__ = ["ReviewPanel"]

PENDING = ("staged", "quarantined")
STYLES = MappingProxyType(
    {"Approve": "success", "Discard": "warning", "Revert": "danger", "Approve despite findings": "danger", "Cancel": ""}
)


class ReviewPanel(Panel):
    """A cell's value displays it (`panel.widget` is the UI). `approve(id)`, `discard(id)`, `revert(id)`,
    `reapprove(skill)`, `confirm(skill)` and `undo(i)` are what its buttons call; `button(id, "Approve")` finds a
    row's button (tests click it; `button(skill, "Still valid")` a skill's)."""

    def __init__(
        self, store: Store, skills: Sequence, *, scope: str | Iterable[str] = "user", show_active: bool = True
    ):
        self.store = store
        self.skills = {s.name: s for s in skills}
        self.scope = scope
        self.show_active = show_active
        self.history: list[tuple[str, str, Undo | None]] = []  # (what was done, result, undo handle)
        self.message = widgets.HTML()
        self.body = widgets.VBox()
        reload = widgets.Button(
            description="Refresh",
            tooltip="re-read the store (this panel shows it as of its cell or its last action)",
            layout=widgets.Layout(width="auto"),
        )
        reload.on_click(lambda _b: self.refresh())
        self.widget = widgets.VBox(
            [
                widgets.HBox([widgets.HTML(f"<b>Review</b> · {esc(', '.join(self.skills))}"), reload]),
                run_note(),
                self.message,
                self.body,
            ]
        )
        self.widget.add_class("overlay-review")
        self.widget.add_class("overlay-panel")
        self._buttons: dict[tuple[str, str], widgets.Button] = {}
        self._undone: set[int] = set()
        self._erased: set[str] = set()  # erased by forget after this panel was drawn
        self._confirming: str | None = None  # a flagged quarantined delta whose findings are on show
        hook = weakref.WeakMethod(self._on_forget)
        store.on_forget(lambda ids: hook() and hook()(ids))
        self.refresh()

    def summary(self) -> str:
        counts = [f"{len(self.pending())} pending", f"{len(self.orphans())} orphaned"]
        if self.show_active:
            counts.append(f"{len(self.active())} active")
        return f"{', '.join(self.skills)}: " + ", ".join(counts)

    # ------------------------------------------------------------------------------------- queries

    def _search(self, status) -> list[Delta]:
        return [d for name in self.skills for d in self.store.search(name, scope=self.scope, status=status)]

    def pending(self) -> list[Delta]:
        return self._search(PENDING)

    def orphans(self) -> list[Delta]:
        return self._search("orphaned")

    def active(self) -> list[Delta]:
        return self._search("active")

    def stale(self, skill: str) -> list[Delta]:
        """The lessons of `skill` this panel shows (pending, and active when shown) that are flagged stale against
        its current body (`rebase.stale`)."""
        shown = PENDING + ("active",) if self.show_active else PENDING
        return list(rebase.stale(self.skills[skill], self.store.search(skill, scope=self.scope, status=shown)))

    def effects(self, delta: Delta) -> tuple[EffectiveSkill, EffectiveSkill]:
        """The effective skill without `delta` (today's active set) and with it (as if it were active)."""
        skill = self.skills[delta.skill]
        others = [d for d in self.store.search(skill.name, scope=self.scope, status="active") if d.id != delta.id]
        kw = dict(scope=self.scope, retrieval_only=self.store.retrieval_only(skill.name), embedder=False)
        return compose(skill, others, **kw), compose(skill, others + [delta.evolve(status="active")], **kw)

    def diff(self, delta: Delta) -> UnifiedDiff:
        """Unified diff of the effective skill, without → with `delta`."""
        without, with_ = self.effects(delta)
        return UnifiedDiff.of(with_, against=without, labels=("without this delta", "with it"))

    def _change_html(self, delta: Delta) -> str:
        without, with_ = self.effects(delta)
        diff = UnifiedDiff.of(with_, against=without, labels=("without this delta", "with it"))
        tools_moved = without.skill_tools != with_.skill_tools or without.withheld_tools != with_.withheld_tools
        note = "<div style='font-size:12px;line-height:1.4'>adds no text</div>"
        html = diff._repr_html_() if diff or not tools_moved else note
        if tools_moved:

            def tools(e):
                return ", ".join(e.skill_tools) + (
                    f" (withheld: {', '.join(e.withheld_tools)})" if e.withheld_tools else ""
                )

            html += (
                f"<div style='font-size:12px;line-height:1.4'>skill_tools: {esc(tools(without))}<br>"
                f"&nbsp;&nbsp;→ {esc(tools(with_))}</div>"
            )
        return html

    # ------------------------------------------------------------------------------------- actions

    def proposal(self, delta: Delta) -> "anchoring.Proposal | None":
        """Where `anchoring.propose` would put this lesson in its skill (None if it cannot say)."""
        try:
            return anchoring.propose(self.skills[delta.skill].body, anchoring.lesson_text(delta.kind, delta.payload))
        except Exception:  # the render path never raises: no proposal shown
            return None

    def _proposal_html(self, delta: Delta) -> str:
        p = self.proposal(delta)
        if p is None:
            return ""
        here = delta.anchor.section
        verdict = "the proposal" if p.section == here else f"proposed: §{esc(p.section)}"
        alts = " · ".join(f"§{esc(s)} {v:.2f}" for s, v in p.alternatives)
        return (
            f"<div class='overlay-anchoring' style='font-size:90%'>Section §{esc(here)} — {verdict} "
            f"(confidence {p.confidence:.2f}{'' if p.confident else ', low: check it'}); "
            f"alternatives: {alts}</div>"
        )

    def _moved_on(self, delta_id: str) -> bool:
        """True (and the panel says so, and redraws) when the row changed outside this panel since it was drawn
        (a later cell, another session): its buttons offered what no longer applies, so nothing is done."""
        drawn = self._drawn.get(delta_id)
        try:
            now = self.store.get(delta_id).status
        except StoreError:
            now = "gone"
        if drawn is None or now == drawn:
            return False
        self.message.value = (
            f"<span style='color:#9a6700'>{esc(delta_id)} is {esc(now)} now (it was {esc(drawn)} "
            "when this panel was drawn: changed by another cell or session); nothing was done, "
            "and the panel now shows the store as it is</span>"
        )
        self.refresh(keep_message=True)
        return True

    def _do(self, what: str, call, describe=None, delta_id: str | None = None) -> Undo | None:
        if delta_id is not None and self._moved_on(delta_id):
            return None
        try:
            out = call()
        except StoreError as exc:  # the row moved on (another session approved it, …): say so, never raise
            self.message.value = f"<span style='color:#cf222e'>{esc(what)}: {esc(exc)}</span>"
            self.refresh(keep_message=True)
            return None
        handle = out if isinstance(out, Undo) and out else None
        result = describe(out) if describe else f"undo handle: {out.op}, {len(out.steps)} step(s) — Undo applies it"
        self.history.append((what, result, handle))
        self.message.value = f"<span style='color:#1a7f37'>{esc(what)}: done</span>"
        self.refresh(keep_message=True)
        return handle

    def approve(self, delta_id: str, *, findings_seen: bool = False) -> Undo | None:
        """The consent gate (`store.approve`): staged, quarantined or orphaned → active. A quarantined delta with
        injection findings is not approved on the first call: its findings are shown with a deliberate second
        button ("Approve despite findings", i.e. `findings_seen=True`)."""
        try:
            d = self.store.get(delta_id)
        except StoreError:
            d = None
        if d is not None and d.status == "quarantined" and d.findings and not findings_seen:
            self._confirming = delta_id
            self.message.value = (
                f"<span style='color:#9a6700'>{esc(delta_id)} came from untrusted input and "
                f"its scan found {len(d.findings)} finding(s): read them below, then approve "
                "despite them or cancel</span>"
            )
            self.refresh(keep_message=True)
            return None
        self._confirming = None
        handle = self._do(f"approve {delta_id}", lambda: self.store.approve(delta_id), delta_id=delta_id)
        if handle is not None:
            d = self.store.get(delta_id)
            self.message.value = (
                f"<span style='color:#1a7f37'>approve {esc(delta_id)}: done — "
                f"<i>{esc(d.text)}</i> is now <b>active</b> under §{esc(d.anchor.section)}; "
                "sessions see it from their next resolve (Undo under Done)</span>"
            )
        return handle

    def cancel(self, delta_id: str) -> None:
        """Close the findings of a flagged delta without approving it."""
        self._confirming = None
        self.message.value = f"approval of {esc(delta_id)} cancelled: it stays quarantined"
        self.refresh(keep_message=True)

    def _on_forget(self, ids: list[str]) -> None:
        """Erased lessons lose their cards, buttons and undo handles in place (nothing is left to act on); the
        rest of the panel stays as drawn."""
        self._erased.update(ids)
        for delta_id, row in self._rows.items():
            if delta_id in self._erased:
                row.children = (
                    widgets.HTML(
                        f"<span style='color:#6e7781'>{esc(delta_id)}: erased by forget — nothing left to review</span>"
                    ),
                )
        for (delta_id, _), b in self._buttons.items():
            b.disabled = b.disabled or delta_id in self._erased
        for i, b in self._undo_buttons.items():
            b.disabled = b.disabled or self._undo_erased(i)

    def _undo_erased(self, index: int) -> bool:
        handle = self.history[index][2]
        return handle is not None and not self._erased.isdisjoint(handle.ids)

    def discard(self, delta_id: str) -> Undo | None:
        """Archive a pending or orphaned delta (never deleted; `rebase.discard` = `store.revert`)."""
        return self._do(f"discard {delta_id}", lambda: rebase.discard(self.store, delta_id), delta_id=delta_id)

    def revert(self, delta_id: str) -> Undo | None:
        """Archive an active delta: the authored text again where it applied."""
        return self._do(f"revert {delta_id}", lambda: self.store.revert(delta_id), delta_id=delta_id)

    def reapprove(self, skill: str) -> Undo | None:
        """Bulk re-approve every orphan of `skill` (`rebase.reapprove`: back to the status each had)."""
        return self._do(
            f"re-approve orphans of {skill}",
            lambda: rebase.reapprove(self.store, self.skills[skill]),
            lambda ids: (
                f"{len(ids)} back to their earlier status: {', '.join(ids) or 'none'} "
                "(per delta: Revert archives it again)"
            ),
        )

    def confirm(self, skill: str, ids: Sequence[str] | None = None) -> Undo | None:
        """The "Still valid" button: confirm the stale lessons of `skill` (`ids`, else every one this panel shows)
        against its current body (`rebase.confirm_stale`: one transaction, one undo; a lesson no longer stale
        refuses it, and the panel says so)."""
        ids = [d.id for d in self.stale(skill)] if ids is None else list(ids)
        return self._do(
            f"confirm stale lessons of {skill} still valid",
            lambda: rebase.confirm_stale(self.store, self.skills[skill], ids),
            lambda undo: f"{len(undo.ids)} no longer stale: {', '.join(undo.ids) or 'none'} (Undo flags them again)",
        )

    def undo(self, index: int = -1) -> None:
        """Reverse a recorded action with its undo handle (refused if the rows moved on since)."""
        index %= len(self.history)
        what, _, handle = self.history[index]
        if handle is None or index in self._undone:
            self.message.value = f"<span style='color:#9a6700'>{esc(what)}: no undo handle left to apply</span>"
            return
        try:
            self.store.undo(handle)
        except StoreError as exc:  # refused: a row moved on since (nothing was changed)
            self.message.value = f"<span style='color:#cf222e'>undo of {esc(what)}: {esc(exc)}</span>"
            return
        self._undone.add(index)
        self.history.append((f"undo of {what}", "undone", None))
        self.message.value = f"<span style='color:#1a7f37'>undo of {esc(what)}: done</span>"
        self.refresh(keep_message=True)

    def button(self, delta_id: str, label: str) -> widgets.Button:
        return self._buttons[(delta_id, label)]

    # ------------------------------------------------------------------------------------ rendering

    def _row(self, d: Delta, actions: Sequence[tuple[str, str, object]]) -> widgets.VBox:
        body = self.skills[d.skill].body
        parts = [widgets.HTML(delta_html(d, body))]
        if d.status != "orphaned":
            parts.append(widgets.HTML(self._change_html(d)))
        if d.status in PENDING:
            parts.append(widgets.HTML(self._proposal_html(d)))
        flagged = d.status == "quarantined" and bool(d.findings)
        if flagged and self._confirming == d.id:
            items = "".join(f"<li><code>{esc(f)}</code></li>" for f in d.findings)
            parts.append(
                widgets.HTML(
                    f"<div style='border:2px solid #cf222e;padding:6px 10px;margin:4px 0'><b>Untrusted input "
                    f"({esc(d.provenance.source)}) — the injection scan found:</b><ul>{items}</ul>Approving lets this "
                    "text reach every session of the skill.</div>"
                )
            )
            actions = [
                (
                    "Approve despite findings",
                    "store.approve, after reading the findings",
                    lambda i: self.approve(i, findings_seen=True),
                ),
                ("Cancel", "keep it quarantined", self.cancel),
            ]
        buttons = []
        for label, tip, fn in actions:
            first_step = flagged and label == "Approve"  # shows the findings; approves nothing
            b = widgets.Button(
                description="Approve…" if first_step else label,
                tooltip="shows the injection findings first; a second button approves" if first_step else tip,
                button_style="warning" if first_step else STYLES[label],
                layout=widgets.Layout(width="auto"),
            )
            b.on_click(lambda _b, fn=fn, i=d.id: fn(i))
            self._buttons[(d.id, label)] = b
            buttons.append(b)
        parts.append(widgets.HBox(buttons))
        row = widgets.VBox(parts, layout=widgets.Layout(margin="4px 0 10px 0"))
        row.add_class("overlay-delta")
        self._rows[d.id] = row
        self._drawn[d.id] = d.status
        return row

    def refresh(self, keep_message: bool = False) -> None:
        """Re-read the store and rebuild the rows."""
        if not keep_message:
            self.message.value = ""
        self._buttons.clear()
        self._rows: dict[str, widgets.VBox] = {}
        self._drawn: dict[str, str] = {}  # each row's status as drawn
        self._undo_buttons: dict[int, widgets.Button] = {}
        rows: list[widgets.Widget] = []
        pending = self.pending()
        rows.append(
            widgets.HTML(
                f"<b>Pending</b> ({len(pending)}): staged lessons and quarantined untrusted "
                "input — nothing here reaches a session until approved"
            )
        )
        for d in pending:
            rows.append(
                self._row(
                    d,
                    [
                        ("Approve", "store.approve: activate (the consent gate)", self.approve),
                        ("Discard", "archive it (never deleted)", self.discard),
                    ],
                )
            )
        orphans = self.orphans()
        if orphans:
            rows.append(widgets.HTML(f"<b>Orphaned</b> ({len(orphans)}): their section changed in a base update"))
            for name in sorted({d.skill for d in orphans}):
                b = widgets.Button(
                    description=f"Re-approve all orphans of {name}",
                    button_style="info",
                    layout=widgets.Layout(width="auto"),
                )
                b.on_click(lambda _b, n=name: self.reapprove(n))
                self._buttons[(name, "Re-approve")] = b
                rows.append(b)
            for d in orphans:
                rows.append(self._row(d, [("Discard", "archive it (never deleted)", self.discard)]))
        stale = {name: [d.id for d in self.stale(name)] for name in self.skills}
        if any(stale.values()):
            rows.append(
                widgets.HTML(
                    f"<b>Stale</b> ({sum(map(len, stale.values()))}): their section's text changed "
                    "since they were learned; confirm them still valid to clear the flag"
                )
            )
            for name, ids in stale.items():
                if ids:
                    b = widgets.Button(
                        description=f"Still valid: confirm {len(ids)} stale lesson(s) of {name}",
                        button_style="info",
                        tooltip="rebase.confirm_stale: re-anchor them on the section's current text",
                        layout=widgets.Layout(width="auto"),
                    )
                    b.on_click(lambda _b, n=name, i=tuple(ids): self.confirm(n, i))
                    self._buttons[(name, "Still valid")] = b
                    rows.append(b)
        if self.show_active:
            active = self.active()
            rows.append(widgets.HTML(f"<b>Active</b> ({len(active)})"))
            for d in active:
                rows.append(self._row(d, [("Revert", "archive it: the authored text again", self.revert)]))
        if self.history:
            rows.append(widgets.HTML("<b>Done</b> (each with its undo handle)"))
            for i, (what, result, handle) in enumerate(self.history):
                erased = self._undo_erased(i)
                u = widgets.Button(
                    description="Undo",
                    disabled=handle is None or i in self._undone or erased,
                    tooltip="store.undo(handle)",
                )
                u.on_click(lambda _b, i=i: self.undo(i))
                self._undo_buttons[i] = u
                note = "erased by forget: nothing to undo" if erased else result
                rows.append(widgets.HBox([u, widgets.HTML(f"{esc(what)} — {esc(note)}")]))
        self.body.children = tuple(rows)
