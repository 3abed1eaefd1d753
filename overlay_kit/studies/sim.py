"""Synthetic base updates with ground truth, and the sweeps that score rebase policies against it.

* `make_skill(rng)` writes a realistic SKILL.md from the example skills' own sentences (`corpus()`): frontmatter;
  title, intro, numbered runbook steps (some repeating one sentence), headings that share words ("Escalation
  rules", "Escalation examples"), duplicate "Example"/"Notes" headings, lists, fenced code, boilerplate.
* `OPERATORS` edit SKILL.md *text*. Each returns an `Edit`: the new text plus ground truth — for every old
  section, the new section it became (or None) and whether its meaning changed. Operators work on the
  parsed sections and verify that the result parses back into exactly the pieces they meant, so the
  truth can never disagree with the anchorer about where sections begin.
* `generate_history(profile, …)` chains operators into a seeded version history with deltas attached to
  random sections; `PROFILES` are calibrated to `CALIBRATION` (`calibration_stats` measures the
  same rates on any history, synthetic or real).
* `evaluate` runs rebase policies over a history and tallies outcomes against the truth, counting apart the
  deltas whose section the update *touched* (the only ones that test a policy's matching).
* The studies — `operator_study` (notebook 03) and `history_study` (notebook 05) — return result objects with
  `.table()` and `.finding()`. The operator study reads its rule file (`RULE`, datasets/rules): per edit class
  (`edit_class`: textual operators pooled, each structural operator alone) the exact upper bound on the rate
  of touching trials with a wrongly anchored delta. The history study's safety bound (`TARGET`, `safety`) is
  the exact upper bound over touched deltas, per policy. Grids run on
  the studies' one sweep runner (`overlay_kit.studies.sweep`).
"""

from __future__ import annotations

import math
import random
import re
import textwrap
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from .. import rebase
from ..anchor import PREAMBLE, Section, parse, split_lines
from ..common import read_jsonl
from ..metrics import binomial_upper, mean_ci, rate_table
from ..rebase import Update, similarity
from ..resources import dataset_path
from . import rulefile
from .finding import Finding, render
from .sweep import sweep

__all__ = [
    "CALIBRATION",
    "CONFIDENCE",
    "COUNTS",
    "OPERATORS",
    "OUTCOMES",
    "PROFILES",
    "RATES",
    "STRUCTURAL_OPERATORS",
    "TARGET",
    "TEXTUAL_OPERATORS",
    "Corpus",
    "DeltaSpec",
    "Edit",
    "Fate",
    "History",
    "HistoryStudy",
    "OperatorStudy",
    "Profile",
    "Version",
    "apply_operator",
    "calibration_stats",
    "calibration_table",
    "corpus",
    "decisions",
    "edit_class",
    "evaluate",
    "generate_histories",
    "generate_history",
    "history_study",
    "live_anchors",
    "load_histories",
    "make_skill",
    "needed",
    "operator_study",
    "operator_trials",
    "rates",
    "safety",
    "tally",
    "touched",
]

# ------------------------------------------------------------------------------------------- text
# Synthetic skills are written from the example skills' own prose (datasets/skills): their sentences and
# list items, their numbered runbook steps, and headings that share words ("Escalation rules", "Escalation
# examples") — so similarity-based matching meets the near-duplicates real skills have.

TOOLS = (
    "search_email",
    "read_calendar",
    "draft_reply",
    "list_files",
    "summarize",
    "lookup_contact",
    "fetch_page",
    "create_event",
)
TOPICS = (
    "Inbox",
    "Replies",
    "Escalation",
    "Invites",
    "Report",
    "Timeline",
    "Impact",
    "Action items",
    "Pages",
    "Citations",
    "Folders",
    "Manifest",
    "Form fields",
    "Decisions",
    "Release notes",
    "Drafts",
)
ASPECTS = ("rules", "checklist", "examples", "format", "exceptions", "tone", "limits", "order", "review")
SECTION_HEADINGS = (
    "When to use",
    "Instructions",
    "Inputs",
    "Output format",
    "Guidelines",
    "Best practices",
    "Common mistakes",
    "Troubleshooting",
    "Limitations",
    "References",
    "Edge cases",
    "Safety",
    "Prerequisites",
    "Quick start",
    "Checklist",
    "Tone",
    "Formatting",
)
REPEATED_HEADINGS = ("Notes", "Example", "Tips")  # headings that recur in one document: numbered slugs
BOILERPLATE = ("License", "Contributing", "Support", "Changelog", "Feedback")
QUALIFIERS = ("Additional", "More", "Key", "General", "Detailed", "Common", "Optional")
_STEP = re.compile(r"^(?P<pre>(?:Step|Phase|Stage)\s+)(?P<n>\d+)(?P<post>\b.*)$")
_ATX = re.compile(r"^(?P<lead> {0,3}#{1,6})(?P<sp>[ \t]+|$)(?P<text>.*?)(?P<close>[ \t]+#+[ \t]*)?(?P<eol>\r?\n?)$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_BLOCK_START = re.compile(r"^\s*([-*+>#|=<]|\d+[.)]|```|~~~)")
_LIST_ITEM = re.compile(r"^(?P<mark>\s*(?:[-*+]|\d+[.)])\s+)(?P<rest>.*)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Corpus:
    """What synthetic skills are written from: sentences, runbook step titles, title and word vocabularies."""

    sentences: tuple[tuple[str, ...], ...]  # per example skill (a sentence picks a skill, then a sentence)
    steps: tuple[str, ...]
    titles: tuple[str, ...]
    words: tuple[str, ...]


@lru_cache(maxsize=1)
def corpus() -> Corpus:
    """The example skills' prose (datasets/skills/*/SKILL.md), split into sentences (seeded order: sorted)."""
    per_skill, steps, titles = [], set(), set()
    for path in sorted(dataset_path("skills").glob("*/SKILL.md")):
        sentences = set()
        body = _split(path.read_text(encoding="utf-8").replace("\r\n", "\n"))[1]
        for s in _parse(body):
            if (m := _STEP.match(s.heading)) is not None:
                steps.add(m["post"].lstrip(": ").strip())
            elif s.level == 1:
                titles.add(s.heading.strip())
            lines = split_lines(s.text)
            for a, b in _units(s):
                for sentence in _SENTENCE_END.split(_unit_text(lines, a, b)[1]):
                    if len(sentence.split()) >= 4 and sentence[-1:] in ".!?" and sentence[:1].isupper():
                        sentences.add(sentence)
        if sentences:
            per_skill.append(tuple(sorted(sentences)))
    words = {w.lower() for ts in per_skill for t in ts for w in re.findall(r"[A-Za-z]{3,}", t)}
    return Corpus(tuple(per_skill), tuple(sorted(steps)), tuple(sorted(titles)), tuple(sorted(words)))


def _sentence(rng: random.Random) -> str:
    return rng.choice(rng.choice(corpus().sentences))


def _paragraph(rng: random.Random, width: int | None, lo: int = 1, hi: int = 3) -> str:
    text = " ".join(_sentence(rng) for _ in range(rng.randint(lo, hi)))
    return textwrap.fill(text, width) if width else text


def _block(rng: random.Random, width: int | None) -> str:
    roll = rng.random()
    if roll < 0.25:
        return "\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(2, 4)))
    if roll < 0.35:
        return "\n".join(f"{k}. {_sentence(rng)}" for k in range(1, rng.randint(3, 5)))
    if roll < 0.42:
        tool, words = rng.choice(TOOLS), corpus().words
        return (
            f"```bash\n# {rng.choice(words)} {rng.choice(words)}\n{tool} --{rng.choice(words)} {rng.choice(words)}\n```"
        )
    return _paragraph(rng, width)


def _body(rng: random.Random, width: int | None, lo: int = 1, hi: int = 2) -> str:
    return "\n\n".join(_block(rng, width) for _ in range(rng.randint(lo, hi)))


def _section_text(level: int, heading: str, body: str) -> str:
    return f"{'#' * level} {heading}\n\n" + (f"{body}\n\n" if body else "")


def _headings(rng: random.Random) -> list[str]:
    """Section headings for one skill: generic ones, and a topic or two with several aspects each (shared
    words: "Escalation rules", "Escalation examples", "Escalation")."""
    out = rng.sample(SECTION_HEADINGS, rng.randint(2, 4))
    for topic in rng.sample(TOPICS, rng.randint(1, 2)):
        aspects = rng.sample(ASPECTS, rng.randint(1, 3))
        out += [topic] * (rng.random() < 0.5) + [f"{topic} {a}" for a in aspects]
    rng.shuffle(out)
    return out


def make_skill(rng: random.Random, name: str | None = None) -> str:
    """A seeded, realistic SKILL.md text (frontmatter + body) written from the example skills' prose."""
    c = corpus()
    name = name or f"{rng.choice(c.words)}-{rng.choice(c.words)}"
    width = rng.choice((None, None, 72, 80, 100))
    tools = sorted(rng.sample(TOOLS, rng.randint(1, 4)))
    front = {
        "name": name,
        "description": _sentence(rng),
        "metadata": {"gaia": {"version": f"1.{rng.randint(0, 4)}.0", "tools": tools}},
    }
    parts = []
    if rng.random() < 0.25:
        parts.append(_paragraph(rng, width) + "\n\n")  # text before the first heading: `_preamble`
    parts.append(_section_text(1, rng.choice(c.titles), _paragraph(rng, width)))
    headings = _headings(rng)
    steps_at = rng.randrange(len(headings) + 1)
    refrain = _sentence(rng) if rng.random() < 0.5 else None  # a sentence every step repeats (runbooks do)
    for k, heading in enumerate(headings):
        if k == steps_at:
            parts.append(_section_text(2, "Workflow", _paragraph(rng, width) if rng.random() < 0.4 else ""))
            for n, title in enumerate(rng.sample(c.steps, rng.randint(2, 5)), 1):
                body = _body(rng, width, 1, 2) + (f"\n\n{refrain}" if refrain else "")
                parts.append(_section_text(3, f"Step {n}: {title}", body))
        parts.append(_section_text(2, heading, _body(rng, width)))
        for _ in range(rng.choice((0, 0, 0, 1, 2))):
            parts.append(_section_text(3, rng.choice(REPEATED_HEADINGS), _body(rng, width, 1, 2)))
    if rng.random() < 0.5:
        parts.append(_section_text(2, "Examples", ""))
        for _ in range(rng.randint(1, 3)):
            parts.append(_section_text(3, "Example", _body(rng, width, 1, 2)))
    if rng.random() < 0.35:
        parts.append(_section_text(2, rng.choice(BOILERPLATE), _paragraph(rng, width, 1, 2)))
    body = "".join(parts)
    return "---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n" + body


# ------------------------------------------------------------------------------------ edit machinery


@dataclass(frozen=True)
class Fate:
    """Ground truth for one old section: the new section it became (None: gone) and whether its meaning
    changed. A section's deltas belong on `target`; stale review is warranted when `changed`."""

    target: str | None
    changed: bool
    heirs: tuple[str, ...] = ()  # other new sections holding part of its text (after a split)

    @property
    def homes(self) -> frozenset:
        """Every new section that holds some of the old section's text."""
        return frozenset(((self.target,) if self.target else ()) + self.heirs)


@dataclass(frozen=True)
class Edit:
    """An edited SKILL.md text and the ground truth of every old section's fate."""

    ops: tuple[str, ...]
    text: str
    truth: Mapping[str, Fate]

    def settled(self, old_text: str) -> "Edit":
        """Net truth: a section whose final text normalizes to its old text did not change in meaning
        (an edit and its undo within one update)."""
        old = {s.slug: s.digest for s in _parse(_split(old_text)[1])}
        new = {s.slug: s.digest for s in _parse(_split(self.text)[1])}
        return replace(
            self,
            truth={
                k: replace(f, changed=f.changed and old[k] != new[f.target]) if f.target is not None else f
                for k, f in self.truth.items()
            },
        )

    def then(self, other: "Edit") -> "Edit":
        """Compose: self's old sections through self, then through other."""
        truth = {}
        for slug, fate in self.truth.items():
            primary = other.truth[fate.target] if fate.target is not None else Fate(None, True)
            heirs = [other.truth[h] for h in fate.heirs]
            homes = [f.target for f in [primary, *heirs] if f.target] + [h for f in [primary, *heirs] for h in f.heirs]
            homes = list(dict.fromkeys(homes))
            if primary.target is not None:
                truth[slug] = Fate(primary.target, fate.changed or primary.changed, tuple(homes[1:]))
            elif homes:  # the primary part went; the text lives on in a part split off earlier
                truth[slug] = Fate(homes[0], True, tuple(homes[1:]))
            else:
                truth[slug] = Fate(None, True)
        return Edit(self.ops + other.ops, other.text, truth)


def identity(text: str) -> Edit:
    return Edit((), text, {s.slug: Fate(s.slug, False) for s in _parse(_split(text)[1])})


@lru_cache(maxsize=8192)
def _parse(body: str) -> tuple[Section, ...]:
    return parse(body)


def _anchorable(text: str) -> list[Section]:
    """Sections a delta can sit on: any with words (not a blank `_preamble`)."""
    return [s for s in _parse(_split(text)[1]) if s.text.strip()]


def _split(text: str) -> tuple[str, str]:
    """(frontmatter block incl. fences, body); no frontmatter → ('', text)."""
    lines = text.splitlines(keepends=True)
    if lines and lines[0].rstrip("\r\n") == "---":
        for i in range(1, len(lines)):
            if lines[i].rstrip("\r\n") == "---":
                return "".join(lines[: i + 1]), "".join(lines[i + 1 :])
    return "", text


@dataclass
class _Piece:
    text: str
    sources: dict[int, bool]  # old section index → meaning changed
    heirs: frozenset = frozenset()  # old sections whose text partly lives here (a split-off part)


def _pieces(sections: Sequence[Section]) -> list[_Piece]:
    return [_Piece(s.text, {i: False}) for i, s in enumerate(sections)]


def _finish(
    op: str, front: str, sections: Sequence[Section], pieces: list[_Piece], keep_digest: bool = False
) -> Edit | None:
    """Join pieces into a body, check it parses back into exactly those pieces, and derive the truth."""
    pieces = [p for k, p in enumerate(pieces) if p.text or k == 0]  # the `_preamble` may be empty
    for k, p in enumerate(pieces[:-1]):  # every piece must end a line so the next heading starts one
        if p.text and not p.text.endswith("\n"):
            pieces[k] = replace(p, text=p.text + "\n")
    body = "".join(p.text for p in pieces)
    new = _parse(body)
    if len(new) == len(pieces) + 1 and new[0].slug == PREAMBLE and not new[0].text:
        pieces.insert(0, _Piece("", {}))  # a first heading now opens the body: an empty `_preamble` appears
    if len(new) != len(pieces) or any(n.text != p.text for n, p in zip(new, pieces)):
        return None
    if body == "".join(s.text for s in sections):
        return None  # not an edit
    truth = {s.slug: Fate(None, True) for s in sections}
    for k, p in enumerate(pieces):
        for i, changed in p.sources.items():
            truth[sections[i].slug] = Fate(new[k].slug, changed and sections[i].digest != new[k].digest)
    for k, p in enumerate(pieces):
        for i in p.heirs:
            fate = truth[sections[i].slug]
            truth[sections[i].slug] = replace(fate, heirs=fate.heirs + (new[k].slug,))
    if keep_digest and any(sections[i].digest != new[k].digest for k, p in enumerate(pieces) for i in p.sources):
        return None
    return Edit((op,), front + body, truth)


def _heading_indices(sections: Sequence[Section]) -> list[int]:
    return [i for i, s in enumerate(sections) if s.level > 0]


def _pick(rng: random.Random, sections: Sequence[Section], candidates: Sequence[int], target: str | None) -> int | None:
    if target is not None:
        i = next((i for i, s in enumerate(sections) if s.slug == target), None)
        return i if i in candidates else None
    return rng.choice(list(candidates)) if candidates else None


def _text_lines(section: Section) -> list[int]:
    """Indices (into split_lines(section.text)) of editable prose lines: outside fences, below the
    heading, not indented code, paragraph or list-item text."""
    lines, out, fenced = split_lines(section.text), [], False
    for k, line in enumerate(lines):
        if k < section.heading_lines:
            continue
        if _FENCE.match(line):
            fenced = not fenced
            continue
        stripped = line.strip()
        if fenced or not stripped or line.startswith(("    ", "\t")):
            continue
        rest = m["rest"] if (m := _LIST_ITEM.match(line)) else stripped
        if rest[:1].isalpha() or rest[:1] == "`":
            out.append(k)
    return out


def _units(section: Section) -> list[tuple[int, int]]:
    """Editable prose units as line ranges [a, b): one list item line, or a run of paragraph lines."""
    lines, prose, out, start = split_lines(section.text), set(_text_lines(section)), [], None
    for k in range(len(lines) + 1):
        item = k < len(lines) and k in prose and _LIST_ITEM.match(lines[k]) is not None
        para = k < len(lines) and k in prose and not item
        if start is not None and not para:
            out.append((start, k))
            start = None
        if item:
            out.append((k, k + 1))
        elif para and start is None:
            start = k
    return out


def _is_item(lines: list[str], k: int) -> bool:
    return 0 <= k < len(lines) and _LIST_ITEM.match(lines[k]) is not None


def _unit_text(lines: list[str], a: int, b: int) -> tuple[str, str]:
    """(list marker or indentation, the unit's words on one line)."""
    m = _LIST_ITEM.match(lines[a].rstrip("\r\n"))
    if m:
        return m["mark"], m["rest"].strip()
    first = lines[a].rstrip("\r\n")
    return first[: len(first) - len(first.lstrip())], " ".join(line.strip() for line in lines[a:b])


def _fill(lead: str, words: str, old: list[str], width: int | None = None) -> list[str] | None:
    """Lay `words` out as the old lines were laid out: one line, or wrapped at the old width."""
    eol = "\r\n" if old[0].endswith("\r\n") else "\n" if old[-1].endswith(("\n", "\r")) or len(old) > 1 else ""
    width = width or (max(len(line.rstrip("\r\n")) for line in old) if len(old) > 1 else None)
    out = textwrap.wrap(words, width, break_on_hyphens=False, break_long_words=False) if width else [words]
    if not out or any(_BLOCK_START.match(line) for line in out[1:]):
        return None
    out[0] = lead + out[0].lstrip() if not lead.strip() else lead + out[0]
    return [line + "\n" if k < len(out) - 1 else line + eol for k, line in enumerate(out)]


# ---------------------------------------------------------------------------------------- operators
# Each: (text, rng, target=None) -> Edit | None. `target` names the old section to edit (for operators that
# edit one section); None picks one at random. None is returned when the operator does not apply.

Operator = Callable[..., "Edit | None"]


def _prose_op(
    name: str, doc: str, change: Callable[[random.Random, str], str | None], changed: bool, keep_digest: bool = False
) -> Operator:
    def op(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
        front, body = _split(text)
        sections = _parse(body)
        i = _pick(rng, sections, [i for i, s in enumerate(sections) if _units(s)], target)
        if i is None:
            return None
        s = sections[i]
        units = _units(s)
        rng.shuffle(units)
        for a, b in units:  # the first unit the change applies to
            lines = split_lines(s.text)
            lead, words = _unit_text(lines, a, b)
            new = change(rng, words)
            if new == "" and _is_item(lines, a) and (_is_item(lines, a - 1) or _is_item(lines, b)):
                laid = []  # the only sentence of a list item: the item goes
            else:
                laid = _fill(lead, new, lines[a:b]) if new and new != words else None
            if laid is not None:
                lines[a:b] = laid
                pieces = _pieces(sections)
                pieces[i] = _Piece("".join(lines), {i: changed})
                return _finish(name, front, sections, pieces, keep_digest)
        return None

    op.__name__, op.__doc__ = name, doc
    return op


def _reword(rng: random.Random, prose: str) -> str | None:
    sentences = _SENTENCE_END.split(prose)
    j = rng.randrange(len(sentences))
    words = sentences[j].split(" ")
    slots = [k for k, w in enumerate(words) if w.isalpha() and k > 0]
    if not slots:
        return None
    for k in rng.sample(slots, min(len(slots), rng.randint(1, 3))):
        words[k] = rng.choice([w for w in corpus().words if w != words[k]])
    sentences[j] = " ".join(words)
    return " ".join(sentences)


def _insert_sentence(rng: random.Random, prose: str) -> str:
    sentences = _SENTENCE_END.split(prose)
    sentences.insert(rng.randint(0, len(sentences)), _sentence(rng))
    return " ".join(sentences)


def _delete_sentence(rng: random.Random, prose: str) -> str | None:
    sentences = _SENTENCE_END.split(prose)
    if len(sentences) < 2:
        return ""
    del sentences[rng.randrange(len(sentences))]
    return " ".join(sentences)


def _typo(rng: random.Random, prose: str) -> str | None:
    """Swap two interior letters of a word outside code spans (a typo fixed, or made)."""
    spans = [m for m in re.finditer(r"[A-Za-z]{5,}", prose) if prose[: m.start()].count("`") % 2 == 0]
    if not spans:
        return None
    m = rng.choice(spans)
    w = m.group()
    k = rng.randrange(1, len(w) - 2)
    if w[k] == w[k + 1]:
        return None
    return prose[: m.start()] + w[:k] + w[k + 1] + w[k] + w[k + 2 :] + prose[m.end() :]


sentence_reword = _prose_op("sentence_reword", "Reword a sentence (1-3 words replaced).", _reword, changed=True)
sentence_insert = _prose_op(
    "sentence_insert", "Insert a new sentence into a paragraph or list item.", _insert_sentence, changed=True
)
sentence_delete = _prose_op(
    "sentence_delete", "Delete a sentence (or a one-sentence list item).", _delete_sentence, changed=True
)
typo_fix = _prose_op(
    "typo_fix", "Swap two letters of a word outside code (a typo fixed or made): meaning kept.", _typo, changed=False
)


def whitespace_churn(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
    """Trailing spaces added or removed, a blank line doubled: no word changes."""
    front, body = _split(text)
    sections = _parse(body)
    i = _pick(rng, sections, range(len(sections)), target)
    if i is None:
        return None
    s = sections[i]
    lines = split_lines(s.text)
    prose = _text_lines(s)
    blanks = [k for k, line in enumerate(lines) if k >= s.heading_lines and not line.strip()]
    roll = rng.random()
    if roll < 0.5 and prose:
        k = rng.choice(prose)
        core = lines[k].rstrip("\r\n")
        eol = lines[k][len(core) :]
        lines[k] = (core.rstrip() if core != core.rstrip() else core + " " * rng.randint(1, 3)) + eol
    elif blanks:
        k = rng.choice(blanks)
        lines.insert(k, "\n")
    else:
        lines.append("\n")
    pieces = _pieces(sections)
    pieces[i] = _Piece("".join(lines), {i: False})
    return _finish("whitespace_churn", front, sections, pieces, keep_digest=True)


def rewrap(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
    """Reflow one paragraph to another line width (same words, same digest)."""
    front, body = _split(text)
    sections = _parse(body)

    def paragraphs(s: Section) -> list[tuple[int, int]]:
        lines = split_lines(s.text)
        return [(a, b) for a, b in _units(s) if not _LIST_ITEM.match(lines[a])]

    i = _pick(rng, sections, [i for i, s in enumerate(sections) if paragraphs(s)], target)
    if i is None:
        return None
    s = sections[i]
    lines = split_lines(s.text)
    a, b = rng.choice(paragraphs(s))
    lead, words = _unit_text(lines, a, b)
    options = [w for w in (60, 72, 80, 100, 10_000) if _fill(lead, words, lines[a:b], w) != lines[a:b]]
    laid = _fill(lead, words, lines[a:b], rng.choice(options)) if options else None
    if laid is None:
        return None
    lines[a:b] = laid
    pieces = _pieces(sections)
    pieces[i] = _Piece("".join(lines), {i: False})
    return _finish("rewrap", front, sections, pieces, keep_digest=True)


def _set_heading(s: Section, heading: str | None = None, level: int | None = None) -> str | None:
    lines = split_lines(s.text)
    m = _ATX.match(lines[0]) if s.heading_lines == 1 else None
    if m is None:
        return None
    lead = m["lead"].rstrip("#") + "#" * (level or len(m["lead"].strip()))
    text = m["text"] if heading is None else heading
    lines[0] = f"{lead} {text}" + (m["close"] or "") + (m["eol"] or "")
    return "".join(lines)


def _new_heading(rng: random.Random, old: str) -> str:
    m = _STEP.match(old)
    if m and rng.random() < 0.7:
        n = int(m["n"])
        return f"{m['pre']}{rng.choice([k for k in range(1, 10) if k != n])}{m['post']}"
    roll = rng.random()
    if roll < 0.45:
        return f"{rng.choice(QUALIFIERS)} {old[:1].lower()}{old[1:]}"
    if roll < 0.9:
        words = old.split()
        words[-1] = rng.choice(ASPECTS + tuple(t.lower() for t in TOPICS))
        return " ".join(words) if len(words) > 1 else f"{words[0].capitalize()} {rng.choice(ASPECTS)}"
    return old.upper() if old != old.upper() else old.capitalize()


def _heading_op(
    name: str, doc: str, retitle: Callable[[random.Random, Section], str | None], keep_digest: bool
) -> Operator:
    """An operator that rewrites one ATX heading line and leaves the section's body alone."""

    def op(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
        front, body = _split(text)
        sections = _parse(body)
        i = _pick(rng, sections, _heading_indices(sections), target)
        new = retitle(rng, sections[i]) if i is not None else None
        if new is None:
            return None
        pieces = _pieces(sections)
        pieces[i] = _Piece(new, {i: False})
        return _finish(name, front, sections, pieces, keep_digest)

    op.__name__, op.__doc__ = name, doc
    return op


heading_rename = _heading_op(
    "heading_rename",
    'Reword a heading over an unchanged body (incl. renumbering "Step 5" → "Step 3").',
    lambda rng, s: _set_heading(s, _new_heading(rng, s.heading)),
    False,
)
heading_level = _heading_op(
    "heading_level",
    "`## X` → `### X` or back: same words, same digest.",
    lambda rng, s: _set_heading(s, level=min(6, s.level + 1) if s.level < 2 or rng.random() < 0.5 else s.level - 1),
    True,
)


def _first_movable(sections: Sequence[Section]) -> int:
    return 1 if sections and sections[0].slug == PREAMBLE else 0


def section_move(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
    """Move one section elsewhere, unchanged (duplicate headings may renumber)."""
    front, body = _split(text)
    sections = _parse(body)
    heads = _heading_indices(sections)
    i = _pick(rng, sections, heads, target)
    if i is None or len(heads) < 2:
        return None
    pieces = _pieces(sections)
    piece = pieces.pop(i)
    if not piece.text.endswith("\n\n"):
        piece = replace(piece, text=piece.text.rstrip("\n") + "\n\n")
    spots = [k for k in range(_first_movable(sections), len(pieces) + 1) if k != i]
    pieces.insert(rng.choice(spots), piece)
    return _finish("section_move", front, sections, pieces)


def _blocks(s: Section) -> list[int]:
    """Line indices of blank lines (outside fences) that separate blocks below the heading."""
    lines, out, fenced, seen = split_lines(s.text), [], False, False
    for k, line in enumerate(lines):
        if k < s.heading_lines:
            continue
        if _FENCE.match(line):
            fenced = not fenced
        if not line.strip() and not fenced and seen and k + 1 < len(lines) and lines[k + 1].strip():
            out.append(k + 1)
        seen = seen or bool(line.strip())
    return out


def section_split(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
    """Split a section at a block boundary; the rest goes under a new heading of the same level."""
    front, body = _split(text)
    sections = _parse(body)
    i = _pick(rng, sections, [i for i in _heading_indices(sections) if _blocks(sections[i])], target)
    if i is None:
        return None
    s = sections[i]
    at = rng.choice(_blocks(s))
    lines = split_lines(s.text)
    heading = rng.choice(REPEATED_HEADINGS + SECTION_HEADINGS)
    head = "".join(lines[:at])
    rest = _section_text(max(s.level, 2), heading, "").rstrip("\n") + "\n\n" + "".join(lines[at:])
    pieces = _pieces(sections)
    pieces[i : i + 1] = [_Piece(head, {i: True}), _Piece(rest, {}, frozenset({i}))]
    return _finish("section_split", front, sections, pieces)


def section_merge(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
    """Fold a section's body into the section before it (its heading disappears)."""
    front, body = _split(text)
    sections = _parse(body)
    heads = _heading_indices(sections)
    i = _pick(rng, sections, [k for k in heads if k - 1 in heads], target)  # `target` is the one absorbed
    if i is None:
        return None
    a, b = sections[i - 1], sections[i]
    head = a.text if a.text.endswith("\n\n") else a.text.rstrip("\n") + "\n\n"
    tail = "".join(split_lines(b.text)[b.heading_lines :]).lstrip("\r\n")
    pieces = _pieces(sections)
    pieces[i - 1 : i + 1] = [_Piece(head + tail, {i - 1: True, i: True})]
    return _finish("section_merge", front, sections, pieces)


def _renumber(sections: Sequence[Section], pieces: list[_Piece], at: Section, delta: int) -> None:
    """Shift the "Step N" numbers of the steps after `at` (deleted: delta -1), or of `at` and those after
    it (a step inserted before it: delta +1). Renumbered sections keep their meaning."""
    m = _STEP.match(at.heading)
    if not m:
        return
    for k, p in enumerate(pieces):
        if len(p.sources) != 1 or any(p.sources.values()):
            continue
        s = sections[next(iter(p.sources))]
        n = _STEP.match(s.heading)
        later = s.start_line > at.start_line or (delta > 0 and s is at)
        if n and n["pre"] == m["pre"] and later:
            new = _set_heading(s, f"{n['pre']}{max(1, int(n['n']) + delta)}{n['post']}")
            if new is not None:
                pieces[k] = replace(p, text=new)


def section_delete(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
    """Remove a section (later "Step N" headings renumber)."""
    front, body = _split(text)
    sections = _parse(body)
    filled = [k for k, s in enumerate(sections) if s.text.strip()]
    i = _pick(rng, sections, filled if len(filled) > 1 else [], target)
    if i is None:
        return None
    pieces = _pieces(sections)
    pieces[i] = _Piece("", {})  # an emptied `_preamble` stays as the (empty) first piece
    _renumber(sections, pieces, sections[i], -1)
    return _finish("section_delete", front, sections, pieces)


def boilerplate_removed(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
    """The commit that removes a boilerplate section (License, Support, …) from every skill."""
    front, body = _split(text)
    sections = _parse(body)
    hits = [i for i, s in enumerate(sections) if s.heading in BOILERPLATE]
    i = _pick(rng, sections, hits, target)
    if i is None:
        return None
    pieces = _pieces(sections)
    del pieces[i]
    return _finish("boilerplate_removed", front, sections, pieces)


def section_insert(
    text: str, rng: random.Random, target: str | None = None, *, at_end: float = 0.5, name: str = "section_insert"
) -> Edit | None:
    """Insert a new section, appended or among the others (a repeated heading renumbers its namesakes).

    A repeated heading such as "Notes" renumbers the slugs of its namesakes below it; a new "Step N"
    renumbers the later steps.
    """
    front, body = _split(text)
    sections = _parse(body)
    start = _first_movable(sections)
    pieces = _pieces(sections)
    width = rng.choice((None, 80))
    steps = [i for i, s in enumerate(sections) if _STEP.match(s.heading)]
    roll = rng.random()
    if roll < 0.1 and steps and at_end < 1:
        i = rng.choice(steps)
        m = _STEP.match(sections[i].heading)
        heading = f"{m['pre']}{m['n']}: {rng.choice(corpus().steps)}"
        at, level = i, sections[i].level
        _renumber(sections, pieces, sections[i], +1)
    else:
        heading = (
            rng.choice(REPEATED_HEADINGS)
            if roll < 0.25
            else rng.choice(SECTION_HEADINGS + BOILERPLATE)
            if roll < 0.6
            else f"{rng.choice(TOPICS)} {rng.choice(ASPECTS)}"
        )
        at = len(pieces) if rng.random() < at_end else rng.randint(start, len(pieces))
        level = rng.choice((2, 3))
    new = _Piece(_section_text(level, heading, _body(rng, width, 1, 2)), {})
    if at > 0 and pieces[at - 1].text and not pieces[at - 1].text.endswith("\n\n"):
        pieces[at - 1] = replace(pieces[at - 1], text=pieces[at - 1].text.rstrip("\n") + "\n\n")
    pieces.insert(at, new)
    return _finish(name, front, sections, pieces)


def section_append(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
    """A new section appended at the end of the body."""
    return section_insert(text, rng, target, at_end=1.0, name="section_append")


def namesake_above(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
    """A second section under the same heading inserted directly above one: the "second Notes above the
    first" trap. The old slug now names the newcomer; the original, and every namesake below it, renumbers.
    In half the edits the original's text is edited too (a sentence reworded or inserted)."""
    front, body = _split(text)
    sections = _parse(body)
    i = _pick(rng, sections, [k for k in _heading_indices(sections) if sections[k].level >= 2], target)
    if i is None:
        return None
    first = None
    if rng.random() < 0.5:
        first = (sentence_reword if rng.random() < 0.5 else sentence_insert)(text, rng, sections[i].slug)
        if first is not None:  # a textual edit keeps the section at its slug
            front, body = _split(first.text)
            sections = _parse(body)
    s = sections[i]
    head = "".join(split_lines(s.text)[: s.heading_lines]).rstrip("\r\n") + "\n\n"  # the heading, verbatim
    pieces = _pieces(sections)
    if i > 0 and pieces[i - 1].text and not pieces[i - 1].text.endswith("\n\n"):
        pieces[i - 1] = replace(pieces[i - 1], text=pieces[i - 1].text.rstrip("\n") + "\n\n")
    pieces.insert(i, _Piece(head + _body(rng, rng.choice((None, 80)), 1, 2) + "\n\n", {}))
    edit = _finish("namesake_above", front, sections, pieces)
    if edit is None:
        return None
    edit = first.then(edit) if first is not None else edit
    return Edit(("namesake_above",), edit.text, edit.truth)


def _frontmatter_op(name: str, doc: str, change: Callable[[random.Random, dict], bool]) -> Operator:
    def op(text: str, rng: random.Random, target: str | None = None) -> Edit | None:
        front, body = _split(text)
        if not front:
            return None
        data = yaml.safe_load("".join(front.splitlines(keepends=True)[1:-1])) or {}
        if not isinstance(data, dict) or not change(rng, data):
            return None
        new = "---\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True) + "---\n"
        edit = identity(text)
        return Edit((name,), new + body, edit.truth)

    op.__name__, op.__doc__ = name, doc
    return op


def _gaia(data: dict) -> dict:
    meta = data.setdefault("metadata", {})
    return meta.setdefault("gaia", {}) if isinstance(meta, dict) else {}


def _edit_frontmatter(rng: random.Random, data: dict) -> bool:
    if rng.random() < 0.5 and isinstance(data.get("description"), str):
        data["description"] = _reword(rng, data["description"]) or data["description"] + " Updated."
    else:
        meta = data.setdefault("metadata", {})
        if not isinstance(meta, dict):
            return False
        meta[rng.choice(("author", "category", "tags", "homepage"))] = (
            rng.choice(corpus().words) + f"-{rng.randint(1, 99)}"
        )
    return True


def _bump_version(rng: random.Random, data: dict) -> bool:
    gaia = _gaia(data)
    parts = [int(p) if p.isdigit() else 0 for p in str(gaia.get("version", data.get("version", "1.0.0"))).split(".")]
    parts = (parts + [0, 0, 0])[:3]
    k = rng.choices((0, 1, 2), (1, 3, 6))[0]
    parts = parts[:k] + [parts[k] + 1] + [0] * (2 - k)
    gaia["version"] = ".".join(map(str, parts))
    return True


def _narrow_tools(rng: random.Random, data: dict) -> bool:
    tools = _gaia(data).get("tools")
    if not isinstance(tools, list) or not tools:
        return False
    tools.remove(rng.choice(tools))
    return True


frontmatter_edit = _frontmatter_op(
    "frontmatter_edit", "Reword the description or set a metadata field; body byte-identical.", _edit_frontmatter
)
version_bump = _frontmatter_op("version_bump", "Bump metadata.gaia.version; body byte-identical.", _bump_version)
narrow_tools = _frontmatter_op(
    "narrow_tools", "Remove one declared tool (a permission narrowing); body byte-identical.", _narrow_tools
)

OPERATORS: Mapping[str, Operator] = {
    op.__name__: op
    for op in (
        whitespace_churn,
        rewrap,
        typo_fix,
        sentence_reword,
        sentence_insert,
        sentence_delete,
        heading_rename,
        heading_level,
        section_move,
        section_split,
        section_merge,
        section_delete,
        section_insert,
        section_append,
        frontmatter_edit,
        version_bump,
        boilerplate_removed,
        narrow_tools,
        namesake_above,
    )
}
FRONTMATTER_OPERATORS = frozenset({"frontmatter_edit", "version_bump", "narrow_tools"})
# Textual edits leave every section at its slug under its heading line (whitespace, rewrap, typo, sentence
# reword/insert/delete); structural edits change headings or which section a slug names; frontmatter edits
# leave the body byte-identical.
TEXTUAL_OPERATORS = frozenset(
    {"whitespace_churn", "rewrap", "typo_fix", "sentence_reword", "sentence_insert", "sentence_delete"}
)
STRUCTURAL_OPERATORS = frozenset(OPERATORS) - TEXTUAL_OPERATORS - FRONTMATTER_OPERATORS


def edit_class(operator: str) -> str:
    """The edit class of an operator: "textual", "structural" or "frontmatter" (see `TEXTUAL_OPERATORS`)."""
    if operator not in OPERATORS:
        raise ValueError(f"unknown edit operator {operator!r}; operators are {', '.join(OPERATORS)}")
    return (
        "textual"
        if operator in TEXTUAL_OPERATORS
        else "frontmatter"
        if operator in FRONTMATTER_OPERATORS
        else "structural"
    )


def apply_operator(name: str, text: str, rng: random.Random, target: str | None = None) -> Edit | None:
    try:
        op = OPERATORS[name]
    except KeyError:
        raise ValueError(f"unknown edit operator {name!r}; operators are {', '.join(OPERATORS)}") from None
    return op(text, rng, target)


# ------------------------------------------------------------------------------------------ histories


@dataclass(frozen=True)
class Profile:
    """The edit mix of one kind of skill repository.

    An update is frontmatter-only with probability `frontmatter_only`; otherwise it edits the body (and the
    frontmatter too with `frontmatter_with_body`). Section rates are averages per section per body update.
    Removals, renames, moves, splits, merges and inserts cluster: they happen only in the `structural`
    fraction of body updates, at rate / `structural` there — real repositories restructure a skill in a few
    commits and only touch sentences in the rest.
    """

    name: str
    frontmatter_only: float
    frontmatter_with_body: float
    section_edit: float  # sentence-level edits under the same heading
    section_remove: float
    section_rename: float  # heading reworded / renumbered, or the section moved
    structural: float  # P(a body update restructures)
    insert: float = 0.5  # per structural update: P(a new section), repeated with the same probability
    append: float = 0.0  # per other body update: P(a section appended at the end)
    split: float = 0.05  # per structural update
    merge: float = 0.05
    boilerplate: float = 0.05
    level: float = 0.002  # per body update
    rewrap: float = 0.002
    whitespace: float = 0.0002  # per section
    edit_mix: Mapping[str, float] = field(
        default_factory=lambda: {
            "sentence_reword": 0.4,
            "sentence_insert": 0.3,
            "sentence_delete": 0.15,
            "typo_fix": 0.15,
        }
    )

    def scaled(self, factor: float) -> "Profile":
        """The same mix with every body-edit rate multiplied by `factor` (edit intensity)."""
        s = lambda p: min(1.0, p * factor)  # noqa: E731
        return replace(
            self,
            name=f"{self.name}x{factor:g}",
            section_edit=s(self.section_edit),
            section_remove=s(self.section_remove),
            section_rename=s(self.section_rename),
            structural=s(self.structural),
        )


PROFILES: Mapping[str, Profile] = {
    "typical": Profile(
        "typical",
        frontmatter_only=0.16,
        frontmatter_with_body=0.21,
        section_edit=0.15,
        section_remove=0.055,
        section_rename=0.01,
        structural=0.25,
        insert=0.55,
        append=0.15,
    ),
    "metadata-heavy": Profile(
        "metadata-heavy",
        frontmatter_only=0.53,
        frontmatter_with_body=0.11,
        section_edit=0.005,
        section_remove=0.038,
        section_rename=0.002,
        structural=0.66,
        insert=0.6,
        edit_mix={"sentence_reword": 0.3, "sentence_insert": 0.4, "sentence_delete": 0.1, "typo_fix": 0.2},
    ),
    # Not calibrated: a stress mix for the safety properties (duplicate headings, moves, merges, splits).
    "adversarial": Profile(
        "adversarial",
        frontmatter_only=0.05,
        frontmatter_with_body=0.1,
        section_edit=0.3,
        section_remove=0.15,
        section_rename=0.15,
        structural=0.8,
        insert=0.6,
        append=0.3,
        split=0.4,
        merge=0.4,
        boilerplate=0.3,
        level=0.2,
        rewrap=0.3,
        whitespace=0.1,
    ),
}

# Rates observed on the git histories of SKILL.md files in six public skill repositories (379 skills,
# 2,039 versions, 1,660 updates; per update, and per old section per update).
CALIBRATION: Mapping[str, Mapping[str, float]] = {
    "typical": {
        "frontmatter_changed": 0.34,
        "frontmatter_only": 0.16,
        "slugs_changed": 0.32,
        "removed_or_renamed": 0.20,
        "edited_same_heading": 0.76,
        "sec_unchanged": 0.82,
        "sec_edited": 0.12,
        "sec_whitespace": 0.0002,
        "sec_removed": 0.054,
        "sec_renamed": 0.009,
        "sec_offset_moved": 0.46,
    },
    "metadata-heavy": {
        "frontmatter_changed": 0.58,
        "frontmatter_only": 0.53,
        "slugs_changed": 0.31,
        "removed_or_renamed": 0.15,
        "edited_same_heading": 0.22,
        "sec_unchanged": 0.97,
        "sec_edited": 0.013,
        "sec_whitespace": 0.0001,
        "sec_removed": 0.018,
        "sec_renamed": 0.001,
        "sec_offset_moved": 0.15,
    },
}


@dataclass(frozen=True)
class Version:
    commit: str
    date: str
    text: str


@dataclass(frozen=True)
class DeltaSpec:
    """A synthetic delta: written at `version` on section `section` of that version."""

    version: int
    section: str


@dataclass(frozen=True)
class History:
    """Versions of one SKILL.md; `truth[i]` is the ground truth of update i → i+1 (None for real data)."""

    repo: str
    path: str
    versions: tuple[Version, ...]
    truth: tuple[Edit, ...] | None = None
    deltas: tuple[DeltaSpec, ...] = ()

    @property
    def bodies(self) -> list[str]:
        return [_split(v.text)[1] for v in self.versions]


def _update(text: str, profile: Profile, rng: random.Random) -> Edit:
    """One base update drawn from the profile; never a no-op."""
    if rng.random() < profile.frontmatter_only:
        op = "version_bump" if rng.random() < 0.5 else "frontmatter_edit"
        return OPERATORS[op](text, rng) or identity(text)
    structural = rng.random() < profile.structural
    scale = 1 / profile.structural if structural else 0.0
    ops, weights = zip(*profile.edit_mix.items())
    plan: list[tuple[str, str | None]] = []
    for s in _anchorable(text):
        roll = rng.random()
        remove, rename = profile.section_remove * scale, profile.section_rename * scale
        if roll < remove:
            plan.append(("section_delete", s.slug))
        elif roll < remove + rename:
            plan.append((rng.choice(("heading_rename", "heading_rename", "section_move")), s.slug))
        elif roll < remove + rename + profile.section_edit:
            plan += [(rng.choices(ops, weights)[0], s.slug) for _ in range(rng.choice((1, 1, 2)))]
        if rng.random() < profile.whitespace:
            plan.append(("whitespace_churn", s.slug))
    extra = [("heading_level", profile.level), ("rewrap", profile.rewrap)]
    if structural:
        extra += [
            ("section_split", profile.split),
            ("section_merge", profile.merge),
            ("boilerplate_removed", profile.boilerplate),
        ]
        while rng.random() < profile.insert:
            plan.append(("section_insert", None))
    elif rng.random() < profile.append:
        plan.append(("section_append", None))
    plan += [(op, None) for op, p in extra if rng.random() < p]
    rng.shuffle(plan)
    edit = identity(text)
    for op, target in plan:
        current = edit.truth[target].target if target is not None else None
        if target is not None and current is None:
            continue  # that section is already gone
        step = OPERATORS[op](edit.text, rng, current)
        if step is not None:
            edit = edit.then(step)
    if _split(edit.text)[1] == _split(text)[1]:  # a body update must change the body
        fallback = ("sentence_reword", "sentence_insert", "section_insert")
        for op in fallback[::-1] if structural else fallback:
            step = OPERATORS[op](edit.text, rng)
            if step is not None:
                edit = edit.then(step)
                break
    if rng.random() < profile.frontmatter_with_body:
        step = OPERATORS[rng.choice(("version_bump", "frontmatter_edit"))](edit.text, rng)
        edit = edit.then(step) if step is not None else edit
    return edit.settled(text)


def generate_history(
    profile: Profile | str = "typical",
    n_versions: int = 20,
    n_deltas: int = 10,
    seed: int = 0,
    start: Callable[[str], str] | None = None,
) -> History:
    """A seeded synthetic history: `n_versions` texts, the truth of each update, and deltas written at
    random versions on random sections. `start` rewrites the first version before any update is drawn (the
    memory benchmark adds the authored lines its lessons refer to); the random draws are the same either way."""
    profile = PROFILES[profile] if isinstance(profile, str) else profile
    rng = random.Random(f"history:{profile.name}:{seed}")
    text = make_skill(rng, f"skill-{seed}")
    if start is not None:
        text = start(text)
    versions, truths = [text], []
    for _ in range(n_versions - 1):
        edit = _update(versions[-1], profile, rng)
        truths.append(edit)
        versions.append(edit.text)
    deltas = []
    for _ in range(n_deltas if n_versions > 1 else 0):
        v = rng.randrange(n_versions - 1)
        deltas.append(DeltaSpec(v, rng.choice(_anchorable(versions[v])).slug))
    stamp = lambda k: f"2024-01-{1 + k % 28:02d}T00:00:00+00:00"  # noqa: E731
    return History(
        f"synthetic/{profile.name}",
        f"skill-{seed}/SKILL.md",
        tuple(Version(f"v{k}", stamp(k), t) for k, t in enumerate(versions)),
        tuple(truths),
        tuple(deltas),
    )


def generate_histories(
    n: int, profile: Profile | str = "typical", n_versions: int = 20, n_deltas: int = 10, seed: int = 0
) -> list[History]:
    return [generate_history(profile, n_versions, n_deltas, seed * 1_000_003 + k) for k in range(n)]


# --------------------------------------------------------------------------------------- real data


def load_histories(path: str | Path, *, min_versions: int = 2) -> list[History]:
    """Read a JSONL of `{repo, path, versions: [{commit, date, text}]}` (oldest first; see
    scripts/extract_skill_history.py). Identical consecutive versions are dropped. Errors name the line."""
    out = []
    for n, rec in read_jsonl(path, "history record"):
        try:
            versions = [Version(str(v["commit"]), str(v["date"]), v["text"]) for v in rec["versions"]]
            repo, rel = str(rec["repo"]), str(rec["path"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a history record ({type(exc).__name__}: {exc})") from exc
        if not all(isinstance(v.text, str) for v in versions):
            raise ValueError(f"{path}:{n}: every version needs a text string")
        kept = [v for k, v in enumerate(versions) if k == 0 or v.text != versions[k - 1].text]
        if len(kept) >= min_versions:
            out.append(History(repo, rel, tuple(kept)))
    return out


# ----------------------------------------------------------------------------------------- scoring

COUNTS = ("updates", "deltas", "clean", "stale", "orphaned", "review", "survivors", "touched")
OUTCOMES = (
    "correct_clean",
    "correct_stale",
    "over_flagged",
    "attached_part",
    "silent_reapply",
    "misattached",
    "correct_orphan",
    "false_orphan",
    "rescued",
    "proposals",
    "correct_proposals",
    "touched_misattached",
)


def touched(update: Update) -> frozenset:
    """Old sections the update touched: gone from their slug, or their text changed in any byte (whitespace
    included). Only these put a policy's matching to the test; an untouched section is found by its slug."""
    return frozenset(s.slug for s in update.old if (n := update.new_by_slug.get(s.slug)) is None or n.text != s.text)


def tally(
    the_plan: rebase.Plan, anchored: Iterable[str], truth: Mapping[str, Fate] | None, touched: frozenset = frozenset()
) -> Counter:
    """Count outcomes for deltas anchored on the old sections `anchored` (a slug per delta).

    With truth: correct_clean / correct_stale (attached where the section went, flagged iff its meaning
    changed), over_flagged (stale though unchanged in meaning), silent_reapply (clean though changed),
    attached_part (stale on a part split off from the section), misattached (attached to a section holding
    none of its text), correct_orphan, false_orphan (the section survived), rescued (false orphan whose
    proposal names a section holding its text). `touched` (old slugs the edit touched, `touched(update)`)
    adds touched / touched_misattached. Without truth, only states.
    """
    c: Counter = Counter()
    for slug in anchored:
        d = the_plan.by_section[slug]
        c["deltas"] += 1
        c[d.state] += 1
        c["review"] += d.state != "clean"
        c["touched"] += slug in touched
        if d.proposal is not None:
            c["proposals"] += 1
        if truth is None:
            continue
        fate = truth[slug]
        if d.attached:
            if d.target not in fate.homes:
                c["misattached"] += 1
                c["touched_misattached"] += slug in touched
            elif d.target != fate.target:
                c["attached_part"] += 1  # stale on a part split off from its section: flagged, not wrong
            elif d.state == "clean":
                c["silent_reapply" if fate.changed else "correct_clean"] += 1
            else:
                c["correct_stale" if fate.changed else "over_flagged"] += 1
        elif fate.target is None:
            c["correct_orphan"] += 1
        else:
            c["false_orphan"] += 1
            c["rescued"] += d.proposal is not None and d.proposal.section in fate.homes
        if d.proposal is not None:
            c["correct_proposals"] += d.proposal.section in fate.homes
        c["survivors"] += fate.target is not None
    return c


def live_anchors(history: History, update: int) -> list[str]:
    """Old-side slugs of the deltas alive at `update` (tracked through the truth). Real histories have no
    deltas: every old section then carries one."""
    if history.truth is None or not history.deltas:
        return [s.slug for s in _anchorable(history.versions[update].text)]
    out = []
    for d in history.deltas:
        slug = d.section
        for k in range(d.version, update):
            slug = history.truth[k].truth[slug].target
            if slug is None:
                break
        if d.version <= update and slug is not None:
            out.append(slug)
    return out


def evaluate(
    history: History, policies: Sequence[str | rebase.Policy] = tuple(rebase.POLICIES), history_id: Any = None
) -> list[dict]:
    """One row per (update, policy): outcome counts for the live deltas, plus what the update was."""
    policies = [rebase.get_policy(p) for p in policies]
    bodies, rows = history.bodies, []
    for k in range(len(bodies) - 1):
        update = Update(_parse(bodies[k]), _parse(bodies[k + 1]))
        truth = history.truth[k].truth if history.truth is not None else None
        ops = ",".join(sorted(set(history.truth[k].ops))) if history.truth is not None else ""
        live, hit = live_anchors(history, k), touched(update)
        for p in policies:
            counts = tally(rebase.plan_update(update, p), live, truth, hit)
            rows.append(
                {
                    "history": history_id if history_id is not None else history.path,
                    "update": k,
                    "policy": p.name,
                    "body_changed": update.body_changed,
                    "ops": ops,
                    **{key: counts.get(key, 0) for key in COUNTS + OUTCOMES},
                    "updates": 1,
                }
            )
    return rows


def operator_trials(
    operator: str,
    policies: Sequence[str | rebase.Policy] = tuple(rebase.POLICIES),
    n: int = 50,
    seed: int = 0,
    start: int = 0,
) -> list[dict]:
    """Apply one operator once to `n` fresh skills (trials `start` … `start + n - 1`); every old section
    carries one delta."""
    policies = [rebase.get_policy(p) for p in policies]
    rows = []
    for trial in range(start, start + n):
        rng = random.Random(f"trial:{operator}:{seed}:{trial}")
        text = make_skill(rng, f"skill-{trial}")
        edit = None
        for _ in range(20):  # some skills lack what the operator needs (e.g. a boilerplate section)
            edit = OPERATORS[operator](text, rng)
            if edit is not None:
                break
            text = make_skill(rng, f"skill-{trial}")
        if edit is None:
            continue
        update = Update(_parse(_split(text)[1]), _parse(_split(edit.text)[1]))
        hit = touched(update)
        for p in policies:
            counts = tally(rebase.plan_update(update, p), [s.slug for s in _anchorable(text)], edit.truth, hit)
            rows.append(
                {
                    "operator": operator,
                    "trial": trial,
                    "unit": f"{operator}:{trial}",
                    "policy": p.name,
                    **{key: counts.get(key, 0) for key in COUNTS + OUTCOMES},
                    "updates": 1,
                }
            )
    return rows


# ------------------------------------------------------------------------------------------ studies

# name: (numerator, denominator), both summed per cluster before the ratio (metrics.rate_table).
RATES: Mapping[str, tuple[str, str]] = {
    "clean": ("clean", "deltas"),
    "stale": ("stale", "deltas"),
    "orphaned": ("orphaned", "deltas"),
    "correct_clean": ("correct_clean", "deltas"),
    "correct_stale": ("correct_stale", "deltas"),
    "over_flagged": ("over_flagged", "deltas"),
    "false_orphan": ("false_orphan", "deltas"),
    "rescued_orphan": ("rescued", "deltas"),
    "misattached": ("misattached", "deltas"),
    "misattached_touched": ("touched_misattached", "touched"),  # the denominator the safety bound is over
    "silent_reapply": ("silent_reapply", "deltas"),
    "proposal_precision": ("correct_proposals", "proposals"),
    "proposal_recall": ("rescued", "false_orphan"),
    "review_per_update": ("review", "updates"),  # orphaned + stale: everything put in front of a person
    "orphaned_per_update": ("orphaned", "updates"),  # what needs an action (re-approve, re-anchor, discard)
}


def rates(
    df: pd.DataFrame, by: str | Sequence[str], cluster: str, names: Sequence[str] | None = None, **kw
) -> pd.DataFrame:
    """Outcome rates per group with cluster-bootstrap intervals (`RATES`; `names` picks some)."""
    return rate_table(df, by, cluster, {k: RATES[k] for k in (names or RATES)}, **kw)


# The safety rule, fixed before any data: a policy "does not misattach" at level TARGET when the exact one-sided
# 95 % (Clopper–Pearson) upper bound on its misattachment rate over the deltas whose section an edit touched is
# below TARGET. Untouched deltas are found by slug and text and cannot test a policy, so they are not counted.
TARGET = 0.005
CONFIDENCE = 0.95


def needed(target: float = TARGET, confidence: float = CONFIDENCE) -> int:
    """The fewest touched deltas at which zero misattachments bound the rate below `target`."""
    n = math.ceil(math.log(1 - confidence) / math.log(1 - target))
    while binomial_upper(0, n, confidence).high >= target:
        n += 1
    return n


def safety(
    rows: pd.DataFrame, by: str | Sequence[str] = "policy", *, target: float = TARGET, confidence: float = CONFIDENCE
) -> pd.DataFrame:
    """Per group (default: per policy): deltas, touched deltas, misattached (all and touched), and the exact
    upper bound on the misattachment rate over touched deltas, against `target`."""
    by = [by] if isinstance(by, str) else list(by)
    g = rows.groupby(by, sort=False)[["updates", "deltas", "touched", "misattached", "touched_misattached"]].sum()
    g["bound"] = [
        binomial_upper(int(k), int(n), confidence).high if n else float("nan")
        for k, n in zip(g["touched_misattached"], g["touched"])
    ]
    g["below_target"] = g["bound"] < target
    return g.reset_index()


def _bound_line(s: pd.DataFrame, target: float) -> str:
    parts = []
    for r in s.itertuples():
        verdict = "below" if r.below_target else "**not** below"
        how = " (it never attaches: zero by construction)" if r.policy == "orphan-all" else ""
        parts.append(
            f"`{r.policy}` {r.touched_misattached} of {r.touched:,} touched deltas misattached, bound "
            f"{r.bound:.2%} — {verdict} {target:.1%}{how}"
        )
    return "; ".join(parts)


def _ci(r: pd.Series, k: str, fmt: str = ".2f") -> str:
    return f"{r[k]:{fmt}} [{r[k + '_low']:{fmt}}, {r[k + '_high']:{fmt}}]"


def _operator_cell(operator: str, policies: Sequence[str], n: int, seed: int, start: int = 0) -> list[dict]:
    return operator_trials(operator, policies, n, seed, start)


RULE = "03_anchor_stability"  # the operator study's decision rule: datasets/rules/03_anchor_stability.yaml
CLASSES = ("textual", "structural", "frontmatter")
POOLED = "all textual"  # the row of the textual class, its operators pooled


def _load_rule(rule: rulefile.RuleFile | str | Path | None) -> rulefile.RuleFile:
    return rule if isinstance(rule, rulefile.RuleFile) else rulefile.load(RULE if rule is None else rule)


def _rule_classes(rule: rulefile.RuleFile) -> dict[str, list[str]]:
    """The rule's edit classes, checked against the operators (`edit_class`): a rule that misses an operator,
    names an unknown one or files one under another class is refused, naming the field."""
    classes = rule.param("classes")
    if not isinstance(classes, Mapping) or set(classes) != set(CLASSES):
        raise rulefile.RuleFileError(rule.path, "params.classes", "must map " + ", ".join(CLASSES) + " to operators")
    listed = [op for c in CLASSES for op in classes[c]]
    if sorted(listed) != sorted(OPERATORS):
        missing, extra = set(OPERATORS) - set(listed), set(listed) - set(OPERATORS)
        raise rulefile.RuleFileError(
            rule.path,
            "params.classes",
            f"must list every operator once (missing: {sorted(missing)}, unknown: {sorted(extra)})",
        )
    wrong = [f"{op} is {edit_class(op)}" for c in CLASSES for op in classes[c] if edit_class(op) != c]
    if wrong:
        raise rulefile.RuleFileError(rule.path, "params.classes", "; ".join(wrong))
    return {c: list(classes[c]) for c in CLASSES}


def _groups(ops: Sequence[str]) -> dict[str, list[str]]:
    """What the rule judges and the stopping rule fills: the textual operators as one class, each structural
    operator alone. Frontmatter operators touch no section and are neither grown nor judged."""
    out = {POOLED: [op for op in ops if edit_class(op) == "textual"]}
    out |= {op: [op] for op in ops if edit_class(op) == "structural"}
    return {k: v for k, v in out.items() if v}


def _verdict(failing: int, touching: int, bound: float, target: float) -> str:
    if not touching:
        return "untested"
    if bound <= target:
        return "meets"
    return "lacks power" if failing == 0 else "exceeds"


@dataclass(frozen=True)
class OperatorStudy:
    """Edit operators, one at a time, over fresh skills (rows: one per operator × trial × policy), judged by
    the rule file `RULE` (`rule`): per edit class — the textual operators pooled, each structural operator
    alone — and per attaching policy, the exact upper bound on the rate of touching trials (one skill, one
    edit: the independent unit) with a wrongly anchored delta, against the rule's target; burden and
    proposals on the first `trials_first` trials of every body operator. Rate intervals resample trials.
    """

    rows: pd.DataFrame
    rule: rulefile.RuleFile
    full: bool = False
    SHOWN = (
        "correct_clean",
        "correct_stale",
        "over_flagged",
        "false_orphan",
        "rescued_orphan",
        "misattached",
        "proposal_precision",
        "proposal_recall",
        "review_per_update",
    )
    COLUMNS = ("trials", "touching", "touched", "failing", "wrong", "bound", "verdict")

    @property
    def target(self) -> float:
        return float(self.rule.param("target"))

    @property
    def n_boot(self) -> int:
        return int(self.rule.param("n_boot_full" if self.full else "n_boot"))

    @property
    def seed(self) -> int:
        return int(self.rule.param("bootstrap_seed"))

    def table(self, names: Sequence[str] = SHOWN) -> pd.DataFrame:
        """Rates per (operator, policy) over all trials, with 95 % trial-bootstrap intervals."""
        if tuple(names) == self.SHOWN:
            return self._shown.copy()
        return rates(self.rows, ["operator", "policy"], "trial", names, n_resamples=self.n_boot, seed=self.seed)

    @cached_property
    def _shown(self) -> pd.DataFrame:
        return rates(self.rows, ["operator", "policy"], "trial", self.SHOWN, n_resamples=self.n_boot, seed=self.seed)

    def body(self) -> pd.DataFrame:
        """Rows of the body-changing operators only (frontmatter edits never move an anchor)."""
        return self.rows[~self.rows["operator"].isin(FRONTMATTER_OPERATORS)]

    def bounds(self) -> pd.DataFrame:
        """Per (group, operator, policy) for the rule's policies: trials; touching trials (≥ 1 touched delta);
        touched deltas; failing trials (a touched delta wrongly anchored); wrongly anchored deltas; the exact
        one-sided upper bound on the failing-trial rate; the verdict (`meets`, `lacks power`, `exceeds`,
        `untested`). The textual operators' own rows say "(pooled)": their class is judged as one (`POOLED`)."""
        return self._bounds.copy()

    @cached_property
    def _bounds(self) -> pd.DataFrame:
        judged = [p for p in self.rule.param("policies") if p in set(self.rows["policy"])]
        r = self.rows[self.rows["policy"].isin(judged) & ~self.rows["operator"].isin(FRONTMATTER_OPERATORS)]
        r = r.assign(touching=r["touched"] > 0, failing=(r["touched"] > 0) & (r["touched_misattached"] > 0))
        agg = dict(
            trials=("trial", "size"),
            touching=("touching", "sum"),
            touched=("touched", "sum"),
            failing=("failing", "sum"),
            wrong=("touched_misattached", "sum"),
        )
        per = r.groupby(["operator", "policy"], sort=False).agg(**agg).reset_index()
        per["group"] = [op if edit_class(op) == "structural" else POOLED for op in per["operator"]]
        pooled = per[per["group"] == POOLED].groupby("policy", sort=False)[list(self.COLUMNS[:5])].sum()
        pooled = pooled.reset_index().assign(operator=POOLED, group=POOLED)
        out = pd.concat([per, pooled], ignore_index=True)
        confidence = float(self.rule.param("confidence"))
        out["bound"] = [
            binomial_upper(int(k), int(n), confidence).high if n else float("nan")
            for k, n in zip(out["failing"], out["touching"])
        ]
        out["verdict"] = [
            _verdict(int(k), int(n), b, self.target) if op == g else "(pooled)"
            for k, n, b, op, g in zip(out["failing"], out["touching"], out["bound"], out["operator"], out["group"])
        ]
        classes = self.rule.param("classes")
        order = {op: k for k, op in enumerate([*classes["textual"], POOLED, *classes["structural"]])}
        out = out.assign(_op=out["operator"].map(order), _policy=out["policy"].map(judged.index))
        out = out.sort_values(["_op", "_policy"], kind="stable")
        return out[["group", "operator", "policy", *self.COLUMNS]].reset_index(drop=True)

    def textual(self) -> pd.DataFrame:
        """The textual class: each of its operators, then the pooled rows the verdict is read from."""
        b = self.bounds()
        return b[b["group"] == POOLED].drop(columns="group").set_index(["operator", "policy"])

    def structural(self) -> pd.DataFrame:
        """Each structural operator, judged on its own."""
        b = self.bounds()
        return b[b["group"] != POOLED].drop(columns="group").set_index(["operator", "policy"])

    def verdicts(self) -> pd.DataFrame:
        """The judged rows only: the pooled textual class and every structural operator, per policy."""
        b = self.bounds()
        return b[b["operator"] == b["group"]].reset_index(drop=True)

    def lacking(self) -> list[str]:
        """Groups (operators, or `POOLED`) that lack power under some judged policy."""
        v = self.verdicts()
        return list(dict.fromkeys(v.loc[v["verdict"] == "lacks power", "group"]))

    def _burden(self) -> list[Finding]:
        first = int(self.rule.param("trials_first"))
        body = self.body()
        body = rates(
            body[body["trial"] < first],
            "policy",
            "unit",
            ["review_per_update", "proposal_precision", "proposal_recall"],
            n_resamples=self.n_boot,
            seed=self.seed,
        ).set_index("policy")
        floor = float(self.rule.param("recall_floor"))
        v1 = body.loc["orphan-all"] if "orphan-all" in body.index else None
        findings = []
        for p in [p for p in body.index if p != "orphan-all"]:
            r = body.loc[p]
            verdict, notes = "", []
            if v1 is not None:
                fewer = r["review_per_update_high"] < v1["review_per_update_low"]
                verdict = "**fewer** (intervals apart)" if fewer else "not distinguishable (intervals overlap)"
                notes.append(f"against `orphan-all`'s {_ci(v1, 'review_per_update', '.1f')}")
            if r["proposal_precision"] == r["proposal_precision"]:  # a proposing policy
                most = r["proposal_recall_low"] > floor
                notes.append(
                    f"its proposals: precision {_ci(r, 'proposal_precision')}, recall "
                    f"{_ci(r, 'proposal_recall')} — "
                    + ("they recover most false orphans" if most else f"recall not shown above {floor}")
                )
            findings.append(
                Finding(
                    f"`{p}`, review prompts per body update",
                    r["review_per_update"],
                    r["review_per_update_low"],
                    r["review_per_update_high"],
                    spec=".2f",
                    verdict=verdict,
                    note="; ".join(notes),
                )
            )
        return findings

    def finding(self) -> str:
        """The rule's verdicts, computed from `bounds()` and the burden/proposal rates."""
        v, target = self.verdicts(), self.target
        need = int(self.rule.param("units_needed"))
        cap = int(self.rule.param("max_trials_full" if self.full else "max_trials"))
        lines = []
        t = v[v["group"] == POOLED]
        if len(t):
            n = t.iloc[0]
            lines.append(
                f"- **Textual edits** (whitespace, rewrap, typo, sentence reword/insert/delete, pooled: "
                f"{n.trials:,} trials, {n.touching:,} touching, {n.touched:,} touched deltas; rule: "
                f"bound ≤ {target:.1%} over touching trials): "
                + "; ".join(
                    f"`{r.policy}` {r.failing} failing, bound {r.bound:.2%} — **{r.verdict}**" for r in t.itertuples()
                )
                + "."
            )
        s = v[v["group"] != POOLED]
        if len(s):
            ok = [g for g, d in s.groupby("group", sort=False) if (d["verdict"] == "meets").all()]
            n_of = s.groupby("group", sort=False)["touching"].first()
            lines.append(
                "- **Structural edits**, each operator alone: "
                + (
                    "meets under every judged policy: " + ", ".join(f"`{g}` ({n_of[g]:,} touching trials)" for g in ok)
                    if ok
                    else "no operator meets the rule under every judged policy"
                )
                + "."
            )
            rest = s[s["verdict"] != "meets"]
            keys = ["group", "verdict", "trials", "touching", "failing", "wrong", "bound"]
            for k, d in rest.groupby(keys, sort=False, dropna=False):
                r = dict(zip(keys, k))
                why = {
                    "lacks power": f"lacks power — 0 failing of {r['touching']:,} touching trials (bound "
                    f"{r['bound']:.2%}; {need:,} needed)",
                    "exceeds": f"**exceeds** — {r['failing']} of {r['touching']:,} touching trials failing "
                    f"({r['wrong']} wrongly anchored deltas), bound {r['bound']:.2%}",
                    "untested": f"untested — none of its {r['trials']:,} trials touched a delta's section "
                    "(nothing to judge)",
                }[r["verdict"]]
                under = ", ".join(f"`{p}`" for p in d["policy"])
                lines.append(f"  - `{r['group']}` under {under}: {why}.")
        lacking = self.lacking()
        if lacking:
            lines.append(
                f"- **Too few trials to decide** for {', '.join(f'`{g}`' for g in lacking)}: this run "
                f"stops at {cap:,} trials per operator"
                + ("." if self.full else f"; `FULL=1` runs up to {int(self.rule.param('max_trials_full')):,}.")
            )
        front = self.rows[self.rows["operator"].isin(FRONTMATTER_OPERATORS)]
        if len(front):
            per = front.groupby(["operator", "trial"])["touched"].first()
            lines.append(
                f"- Frontmatter edits ({len(per):,} trials) touched {int(per.sum())} deltas' sections: not "
                "judged (the body stays byte-identical)."
            )
        return "\n".join(p for p in [render(self._burden()), *lines] if p)


def _stopping_point(
    touching: Mapping[str, Sequence[int]], members: Sequence[str], done: int, first: int, step: int, cap: int, need: int
) -> int | None:
    """The rule's stopping rule for one group, read off the trials run so far (`done` per member): the trials
    per member at the first count `first + j·step` (at most `cap`) where the members' touching trials reach
    `need`, or `cap` once every member is there; None while the trials run so far cannot tell."""
    count = min(first, cap)
    while count <= done:
        if sum(sum(t < count for t in touching.get(m, ())) for m in members) >= need or count == cap:
            return count
        count = min(count + step, cap)
    return None


def operator_study(
    rule: rulefile.RuleFile | str | Path | None = None,
    *,
    full: bool = False,
    operators: Sequence[str] | None = None,
    policies: Sequence[str] = tuple(rebase.POLICIES),
    chunk: int = 250,
    **sweep_kw,
) -> OperatorStudy:
    """Each operator applied once to fresh skills, every section carrying a delta, through every policy, with
    every number (seed, trials, the stopping rule, target) from the rule file (default `RULE`; a name, path or
    `RuleFile`). Every operator gets `trials_first` trials; then each operator of a class (the textual
    operators pooled, each structural operator alone) with fewer than `units_needed` touching trials gets
    `trials_step` more, up to `max_trials` per operator (`max_trials_full` with `full`): the stopping rule
    reads the touching-trial counts only, never a failure.

    Trials are seeded one by one, so they are run ahead in batches of up to `chunk` (sized from the touching
    rate so far) and cut back to the rule's stopping point: the trials kept are exactly those of adding
    `trials_step` at a time. `sweep_kw` go to `sweep` (backend, n_jobs, progress)."""
    rule = _load_rule(rule)
    _rule_classes(rule)
    p = rule.params
    ops, policies = list(operators or OPERATORS), tuple(policies)
    seed, need, first, step = int(p["seed"]), int(p["units_needed"]), int(p["trials_first"]), int(p["trials_step"])
    cap = int(p["max_trials_full" if full else "max_trials"])
    done = {op: min(first, cap) for op in ops}
    kept = dict(done)  # trials per operator the rule keeps (frontmatter operators: `trials_first`)

    def run(cells: list[tuple[str, int, int]]) -> list[dict]:
        grid = [
            {"operator": op, "policies": policies, "n": min(chunk, start + n - k), "seed": seed, "start": k}
            for op, start, n in cells
            for k in range(start, start + n, chunk)
        ]
        return [r for part in sweep(_operator_cell, grid, desc="operators", **sweep_kw) for r in part]

    rows = run([(op, 0, n) for op, n in done.items()])
    groups, open_ = _groups(ops), set(_groups(ops))
    while open_:
        touching: dict[str, list[int]] = {}
        for r in rows:
            if r["policy"] == policies[0] and r["touched"]:
                touching.setdefault(r["operator"], []).append(r["trial"])
        cells = []
        for g in sorted(open_):
            members = groups[g]
            have = done[members[0]]  # the members of a group grow together
            stop = _stopping_point(touching, members, have, first, step, cap, need)
            if stop is not None:
                kept |= {m: stop for m in members}
                open_.discard(g)
                continue
            units = sum(len(touching.get(m, ())) for m in members)
            rate = units / (have * len(members)) if have else 0.0
            more = (need - units) / (rate * len(members)) if rate else cap
            ahead = min(cap, have + step * max(1, math.ceil(more / step)))
            cells += [(m, have, ahead - have) for m in members]
            done |= {m: ahead for m in members}
        if cells:
            rows += run(cells)
    rows = [r for r in rows if r["trial"] < kept[r["operator"]]]
    return OperatorStudy(pd.DataFrame(rows), rule, full)


def _history_cell(
    profile: str, intensity: float, n_versions: int, n_deltas: int, seeds: Sequence[int], policies: Sequence[str]
) -> list[dict]:
    prof = PROFILES[profile] if intensity == 1 else PROFILES[profile].scaled(intensity)
    rows = []
    for s in seeds:
        h = generate_history(prof, n_versions, n_deltas, seed=s)
        for r in evaluate(h, policies, history_id=s):
            rows.append({"profile": profile, "intensity": intensity, "n_versions": n_versions, **r})
    return rows


CELL = ["profile", "intensity", "n_versions"]


@dataclass(frozen=True)
class HistoryStudy:
    """Policies over synthetic base-update histories (rows: one per cell × history × update × policy).

    Rules stated before the data: a policy lowers the review burden of a profile when the upper end of its
    95 % interval of review prompts per update lies below `orphan-all`'s lower end (intensity 1, history
    lengths pooled); safety is the `TARGET` rule over touched deltas. Intervals resample histories (one
    history's updates are correlated; histories are independent).
    """

    rows: pd.DataFrame
    n_deltas: int
    target: float = TARGET
    n_boot: int = 1000
    seed: int = 0
    SHOWN = (
        "orphaned",
        "false_orphan",
        "stale",
        "misattached",
        "proposal_precision",
        "proposal_recall",
        "orphaned_per_update",
        "review_per_update",
    )

    def table(self, names: Sequence[str] = SHOWN) -> pd.DataFrame:
        """Rates per (cell, policy) with 95 % history-bootstrap intervals, plus the counts behind them."""
        t = rates(self.rows, CELL + ["policy"], "history", names, n_resamples=self.n_boot, seed=self.seed)
        counts = self.rows.groupby(CELL + ["policy"])[["updates", "deltas", "touched", "proposals"]].sum()
        return t.merge(counts.reset_index(), on=CELL + ["policy"])

    def lifetime(self) -> pd.DataFrame:
        """Review prompts per delta written, summed over a whole history, per (cell, policy)."""
        per = self.rows.groupby(CELL + ["policy", "history"])["review"].sum().div(self.n_deltas)
        out = []
        for key, g in per.groupby(level=CELL + ["policy"]):
            iv = mean_ci(g.to_numpy(), n_resamples=self.n_boot, seed=self.seed)
            out.append({**dict(zip(CELL + ["policy"], key)), "estimate": iv.estimate, "low": iv.low, "high": iv.high})
        return pd.DataFrame(out)

    def safety(self) -> pd.DataFrame:
        return safety(self.rows, target=self.target)

    def finding(self) -> str:
        one = self.rows[self.rows["intensity"] == 1.0]
        pooled = rates(
            one,
            ["profile", "policy"],
            "history",
            ["review_per_update", "orphaned_per_update", "false_orphan"],
            n_resamples=self.n_boot,
            seed=self.seed,
        ).set_index(["profile", "policy"])
        findings = []
        for profile in dict.fromkeys(one["profile"]):
            t = pooled.xs(profile)
            if "orphan-all" not in t.index:
                continue
            v1 = t.loc["orphan-all"]
            for p in [p for p in t.index if p != "orphan-all"]:
                r = t.loc[p]
                lower = r["review_per_update_high"] < v1["review_per_update_low"]
                ratio = v1["review_per_update"] / max(r["review_per_update"], 1e-9)
                findings.append(
                    Finding(
                        f"*{profile}*, `{p}`, review prompts per update",
                        r["review_per_update"],
                        r["review_per_update_low"],
                        r["review_per_update_high"],
                        spec=".2f",
                        verdict=f"**{ratio:.1f}× fewer** (intervals apart)"
                        if lower
                        else "not distinguishable (intervals overlap)",
                        note=f"against `orphan-all`'s {_ci(v1, 'review_per_update')} ({_ci(r, 'orphaned_per_update')} "
                        f"orphans needing an action; false-orphan rate {_ci(r, 'false_orphan', '.3f')})",
                    )
                )
        s = self.safety()
        safety = (
            f"- **Misattachment over touched deltas** (rule: 95 % upper bound < {self.target:.1%}, "
            "all cells pooled): "
            + _bound_line(s, self.target)
            + "."
            + (
                ""
                if s["below_target"].all()
                else " This grid is too small to make the claim here (and "
                "its touched deltas cluster by history); the operator study (notebook 03) carries it."
            )
        )
        return "\n".join(p for p in (render(findings), safety) if p)


def history_study(
    profiles: Sequence[str] = ("typical", "metadata-heavy"),
    intensities: Sequence[float] = (1.0,),
    versions: Sequence[int] = (10,),
    n_histories: int = 20,
    n_deltas: int = 10,
    policies: Sequence[str] = tuple(rebase.POLICIES),
    seed: int = 0,
    chunk: int = 10,
    *,
    n_boot: int = 1000,
    target: float = TARGET,
    **sweep_kw,
) -> HistoryStudy:
    """Synthetic histories for every (profile, edit intensity, versions) cell, every policy. History k of
    every cell uses seed `seed·10⁶ + k` (common random numbers)."""
    seeds = [seed * 1_000_000 + k for k in range(n_histories)]
    grid = [
        {
            "profile": p,
            "intensity": i,
            "n_versions": v,
            "n_deltas": n_deltas,
            "seeds": seeds[c : c + chunk],
            "policies": tuple(policies),
        }
        for p in profiles
        for i in intensities
        for v in versions
        for c in range(0, n_histories, chunk)
    ]
    rows = [r for part in sweep(_history_cell, grid, desc="histories", **sweep_kw) for r in part]
    return HistoryStudy(pd.DataFrame(rows), n_deltas, target, n_boot, seed)


# The duplicate-heading trap: a new "Notes" inserted above the first one, which is edited too, so the slug
# `notes` now names the new section (notebook 03 shows what each policy does with it).
TRAP_OLD = """# Mail

## Triage

Label urgent mail first. Then label the newsletters.

## Notes

Never forward invoices without asking the owner.

## Replies

Draft replies; never send without asking.

## Notes

Keep a short log of every escalation and its outcome.
"""
TRAP_NEW = TRAP_OLD.replace(
    "## Notes\n\nNever forward", "## Notes\n\nAlways cc the team lead.\n\n## Notes\n\nNever forward"
).replace("asking the owner.", "asking the owner first.")


def decisions(old: str, new: str, policies: Sequence[str] = tuple(rebase.POLICIES)) -> pd.DataFrame:
    """Every policy's decision for every old section of one update, side by side."""
    rows = [
        {
            "policy": p,
            "old section": d.section,
            "state": d.state,
            "attaches to": d.target or "",
            "proposal": f"{d.proposal.section} ({d.proposal.score:.2f})" if d.proposal else "",
            "reason": d.reason,
        }
        for p in policies
        for d in rebase.plan(old, new, p).decisions
    ]
    return pd.DataFrame(rows).set_index(["policy", "old section"])


# ------------------------------------------------------------------------------------- calibration


def calibration_stats(histories: Iterable[History]) -> dict[str, float]:
    """The `CALIBRATION` rates measured on text alone (no ground truth needed)."""
    upd: Counter = Counter()
    sec: Counter = Counter()
    for h in histories:
        for a, b in zip(h.versions, h.versions[1:]):
            (fa, ba), (fb, bb) = _split(a.text), _split(b.text)
            upd["updates"] += 1
            upd["frontmatter_changed"] += fa != fb
            upd["frontmatter_only"] += fa != fb and ba == bb
            old, new = _parse(ba), _parse(bb)
            upd["slugs_changed"] += [s.slug for s in old] != [s.slug for s in new]
            by_slug = {s.slug: s for s in new}
            gone = [s for s in old if s.slug not in by_slug]
            unclaimed = [s for s in new if s.slug not in {o.slug for o in old}]
            renamed = {
                s.slug
                for s in gone
                if any(similarity(s.body_text, n.body_text) >= 0.8 for n in unclaimed) and s.body_text.strip()
            }
            upd["removed_or_renamed"] += bool(gone)
            edited = 0
            for s in old:
                sec["sections"] += 1
                n = by_slug.get(s.slug)
                if n is None:
                    sec["sec_renamed" if s.slug in renamed else "sec_removed"] += 1
                elif n.text == s.text:
                    sec["sec_unchanged"] += 1
                    sec["sec_offset_moved"] += len("".join(x.text for x in old[: old.index(s)])) != len(
                        "".join(x.text for x in new[: new.index(n)])
                    )
                elif n.digest == s.digest:
                    sec["sec_whitespace"] += 1
                else:
                    sec["sec_edited"] += 1
                    edited += 1
            upd["edited_same_heading"] += edited > 0
    out = {
        k: upd[k] / max(upd["updates"], 1)
        for k in (
            "frontmatter_changed",
            "frontmatter_only",
            "slugs_changed",
            "removed_or_renamed",
            "edited_same_heading",
        )
    }
    out |= {
        k: sec[k] / max(sec["sections"], 1)
        for k in ("sec_unchanged", "sec_edited", "sec_whitespace", "sec_removed", "sec_renamed", "sec_offset_moved")
    }
    return out


def calibration_table(
    profiles: Sequence[str] = ("typical", "metadata-heavy"), n: int = 8, n_versions: int = 10, seed: int = 0
) -> pd.DataFrame:
    """`calibration_stats` of `n` generated histories per profile beside the observed rates (`CALIBRATION`)."""
    gen = pd.DataFrame({p: calibration_stats(generate_histories(n, p, n_versions, 0, seed=seed)) for p in profiles})
    both = pd.concat({"generated": gen, "observed": pd.DataFrame(CALIBRATION)[list(profiles)]}, axis=1)
    return both.swaplevel(axis=1).sort_index(axis=1)
