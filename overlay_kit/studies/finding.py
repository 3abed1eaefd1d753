"""One record for a figure a study reports against its rule, and one renderer for the studies' findings.

A study's `finding()` builds `Finding`s — the metric, its estimate and interval, the rule's bound, the verdict —
and hands them to `render`, with the rule's stamp and the sentences only that study can write around them:

    render([Finding("wrong-lesson exposure", 1.08, 0.46, 1.75, 1.0, "fails", "sessions per 100")],
           stamp=rule.stamp(), intro="**At the default assumptions** (64 users):")

Findings alike in all but their `subject` (what the figure is of: an arm, an architecture, a cell) are one line
naming each subject, so the same figure and verdict are never written twice in a row of bullets.

`table(findings)` is the same records as a DataFrame, one row each.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, astuple, dataclass, replace

import pandas as pd

from ..metrics import Interval

__all__ = ["Finding", "merged", "render", "table"]


@dataclass(frozen=True)
class Finding:
    """One figure against its rule: `estimate` in [`low`, `high`] (NaN: no interval; None: a verdict with no one
    figure, its evidence in `note`), the rule's `bound` (None: the rule has none for it) and the `verdict` the rule
    gives; `spec` formats the numbers, `side` says which way the bound holds ("≤": at most, "≥": at least), `note`
    is what the verdict alone does not say, `subject` what the figure is of when `metric` names a measure that
    several subjects share."""

    metric: str
    estimate: float | None
    low: float = math.nan
    high: float = math.nan
    bound: float | None = None
    verdict: str = ""
    unit: str = ""
    note: str = ""
    spec: str = ".3f"
    side: str = "≤"
    subject: str = ""

    @classmethod
    def of(cls, metric: str, interval: Interval, **kw) -> Finding:
        """The finding of an `Interval` (its estimate, low and high)."""
        return cls(metric, interval.estimate, interval.low, interval.high, **kw)

    @property
    def interval(self) -> Interval:
        return Interval(math.nan if self.estimate is None else self.estimate, self.low, self.high)

    def figure(self) -> str:
        """`0.042 [0.010, 0.090] sessions (bound ≤ 0.05)`: the numbers, without the verdict ("" with no figure).
        An interval of zero width (low = high = estimate: every resample gave the estimate) is said so, not
        printed three times: `+0 in every resample`."""
        if self.estimate is None:
            return ""
        unit = f" {self.unit}" if self.unit else ""
        if math.isfinite(self.estimate) and self.low == self.high == self.estimate:
            text = f"{self.estimate:{self.spec}}{unit} in every resample"
        else:
            text = self.interval.fmt(self.spec) + unit
        if self.bound is None:
            return text
        bound = f"{self.bound * 100:g}%" if self.spec.endswith("%") else f"{self.bound:g}"  # as the numbers are
        return text + f" (bound {self.side} {bound})"

    def line(self) -> str:
        """`metric (subject) 0.042 [0.010, 0.090] (bound ≤ 0.05): verdict, note`."""
        text = " ".join(t for t in (self.metric, f"({self.subject})" if self.subject else "", self.figure()) if t)
        tail = ", ".join(t for t in (self.verdict, self.note) if t)
        return f"{text}: {tail}" if tail else text


def render(
    findings: Iterable[Finding],
    *,
    stamp: str | None = None,
    intro: str | Sequence[str] = "",
    outro: str | Sequence[str] = "",
    joiner: str | None = None,
) -> str:
    """The findings as Markdown: the rule's stamp, the `intro` paragraph(s), one bullet per finding, then the
    `outro` paragraph(s); empty parts are left out. With `joiner` (e.g. "; ") the findings run inline instead, in
    one sentence between the last intro paragraph and the first outro one."""
    intro, outro = _paragraphs(intro), _paragraphs(outro)
    lines = [f.line() for f in merged(findings)]
    if joiner is not None:
        head = intro.pop() if intro else ""
        tail = outro.pop(0) if outro else ""
        body = [" ".join(p for p in (head, joiner.join(lines)) if p) + tail]
    else:
        body = ["\n".join(f"- {line}" for line in lines)] if lines else []
    return "\n\n".join(p for p in [stamp or "", *intro, *body, *outro] if p)


def merged(findings: Iterable[Finding]) -> list[Finding]:
    """The findings with those alike in all but a non-empty `subject` made one, naming each subject in order (at
    the place of the first)."""
    out: list[Finding] = []
    at: dict[tuple, int] = {}
    for f in findings:
        key = tuple(map(repr, astuple(replace(f, subject="")))) if f.subject else None  # repr: NaN equals NaN
        if key is not None and key in at:
            first = out[at[key]]
            out[at[key]] = replace(first, subject=f"{first.subject}, {f.subject}")
            continue
        if key is not None:
            at[key] = len(out)
        out.append(f)
    return out


def _paragraphs(text: str | Sequence[str]) -> list[str]:
    return [text] if isinstance(text, str) else list(text)


def table(findings: Sequence[Finding]) -> pd.DataFrame:
    """The findings, one row each (metric, estimate — NaN where none —, low, high, bound, verdict, unit, note;
    subject when any has one)."""
    cols = ["metric", "estimate", "low", "high", "bound", "verdict", "unit", "note"]
    cols += ["subject"] if any(f.subject for f in findings) else []
    rows = [{k: v for k, v in asdict(f).items() if k in cols} | {"estimate": f.interval.estimate} for f in findings]
    return pd.DataFrame(rows, columns=cols)
