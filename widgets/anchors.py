"""The anchor inspector: edit a skill's body and watch each delta's anchor go clean / stale / orphaned.

The text area starts at the authored body the deltas were written against. Every edit re-runs
`rebase.rebase_deltas` (old body → edited body) under each named policy, so the table shows side by side
what `orphan-all`, `section`, `fuzzy` and `embedding` would do to every delta — and where the last two would
*propose* a new home for an orphan (a proposal is never applied without a person). The `anchor` column is
the raw `anchor.locate` of the delta's anchor in the edited text. Nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import ipywidgets as widgets

from overlay_kit import rebase
from overlay_kit.anchor import locate
from overlay_kit.display import COLOURS, badge, esc, table

from .panel import Panel, run_note

__all__ = ["AnchorInspector"]

LIVE = ("staged", "active", "quarantined")


def _cell(o: rebase.DeltaOutcome) -> str:
    d = o.decision
    out = badge(o.state)
    if o.state != "orphaned" and o.anchor.section != o.delta.anchor.section:
        out += f" → <code>{esc(o.anchor.section)}</code>"
    if d.proposal is not None:
        out += (
            f"<div style='font-size:11px'>proposed: <code>{esc(d.proposal.section)}</code> {d.proposal.score:.2f}</div>"
        )
    if o.narrowed:
        out += f"<div style='font-size:11px;color:{COLOURS['quarantined']}'>{esc(o.narrowed)}</div>"
    return out


class AnchorInspector(Panel):
    """A cell's value displays it (`inspector.widget` is the UI); set `inspector.text.value` to an edited
    body; `inspector.states()` gives {delta id: {policy: state}} for the current text."""

    def __init__(
        self,
        skill,
        store=None,
        deltas: Iterable | None = None,
        *,
        scope: str | Iterable[str] = "user",
        policies: Sequence[str] | Mapping[str, rebase.Policy] = tuple(rebase.POLICIES),
        embedder=None,
    ):
        if store is None and deltas is None:
            raise ValueError("AnchorInspector needs a store or a list of deltas")
        self.skill = skill
        self.deltas = list(deltas) if deltas is not None else store.search(skill.name, scope=scope, status=LIVE)
        if isinstance(policies, Mapping):
            self.policies = dict(policies)
        else:  # one policy object each, kept: the embedding policy caches its vectors across edits
            self.policies = {
                n: rebase.get_policy(n, **({"embedder": embedder} if n == "embedding" else {})) for n in policies
            }
        self.text = widgets.Textarea(
            value=skill.body, continuous_update=False, layout=widgets.Layout(width="100%", height="320px")
        )
        self.reset_button = widgets.Button(description="Back to the authored body")
        self.reset_button.on_click(lambda _b: setattr(self.text, "value", self.skill.body))
        self.table = widgets.HTML()
        self.text.observe(lambda _c: self.refresh(), names="value")
        self.widget = widgets.VBox(
            [
                widgets.HTML(f"<b>Anchors of {esc(skill.name)}</b>: edit the body, then click outside the text area"),
                run_note(),
                self.text,
                self.reset_button,
                self.table,
            ]
        )
        self.widget.add_class("overlay-anchors")
        self.widget.add_class("overlay-panel")
        self.outcomes: dict[str, tuple[rebase.DeltaOutcome, ...]] = {}
        self.refresh()

    def refresh(self) -> None:
        edited = replace(self.skill, body=self.text.value)
        self.outcomes = {
            name: rebase.rebase_deltas(self.deltas, self.skill.body, edited, policy)
            for name, policy in self.policies.items()
        }
        rows = []
        for i, d in enumerate(self.deltas):
            here = locate(d.anchor, self.text.value)
            rows.append(
                (
                    f"<code>{esc(d.id)}</code>",
                    esc(d.kind),
                    f"<code>{esc(d.anchor.section)}</code>",
                    badge(here.state),
                    *(_cell(self.outcomes[n][i]) for n in self.policies),
                    esc(d.text[:70]),
                )
            )
        changed = self.text.value != self.skill.body
        note = "" if changed else "<div style='color:#57606a'>the body is unchanged: every anchor is clean</div>"
        self.table.value = (
            note + table(("delta", "kind", "section", "anchor", *self.policies, "lesson"), rows)
            if rows
            else "<i>no live deltas on this skill</i>"
        )

    def summary(self) -> str:
        states = [s for row in self.states().values() for s in row.values()]
        return f"{self.skill.name}, {len(self.deltas)} live deltas × {len(self.policies)} policies: " + ", ".join(
            f"{states.count(s)} {s}" for s in dict.fromkeys(sorted(states))
        )

    def states(self) -> dict[str, dict[str, str]]:
        return {d.id: {n: self.outcomes[n][i].state for n in self.policies} for i, d in enumerate(self.deltas)}
