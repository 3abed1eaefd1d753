"""Mine the git history of instruction files: versions, section-level changes, and rule events with their fates.

`mine(paths)` reads local git repositories only (bare mirrors too: everything comes from `git log` and
`git cat-file --batch`, never a checkout) and returns a `MineResult`:

* **files** — every instruction file the first-parent history of HEAD ever held (names: `DEFAULT_PATTERNS`, or
  your own globs), renames followed (`git log -M`), with its versions oldest first. A version is a commit
  on the first-parent chain that changed the file's blob; a pure rename (same blob) is no new version. A file
  deleted and later re-added at the same path continues as one file (as `git log --follow` shows it). The
  YAML frontmatter of a SKILL.md or a `.cursor/rules` file is split off (`skill.split_frontmatter`); every
  other file is all body.
* **pairs** — one per consecutive pair of versions of a file: the `section` rebase policy's decision for every
  old section (clean / stale / orphaned), the section-level changes the anchorer sees, and an edit class.
* **events** — *rule events*: a rule unit (a list item with its continuation lines, a table row, a quote line
  or a line of prose, hard-wrapped lines joined: `rule_units`) added to a section that existed before (matched
  by the policy, or paired below), while every other line of that section is kept (in order, whitespace-
  normalized) — the hand-kept equivalent of a learned lesson — and each one's later fate. A unit whose text was
  already in the file, or that has ratio ≥ REWORD_RATIO with a unit the same pair (or another instruction file
  in the same commit) took out, was moved, not added: no event.

Section changes, per old section (blank sections — an empty `_preamble` — take no part):

| change     | what the anchorer sees                                                                   |
|------------|------------------------------------------------------------------------------------------|
| unchanged  | `clean`: same normalized text                                                            |
| append     | `stale`, same heading; all old body lines kept in order, the new lines all after them   |
| insert     | `stale`, same heading; all old body lines kept in order, a new line among them          |
| edit       | `stale`, same heading, an old line changed or removed                                    |
| rewrite    | as edit, but fewer than half of the old lines kept and the bodies' word similarity under |
|            | RENAME_SIMILARITY (so the policy orphaned it: paired below)                              |
| renumber   | `stale` through a heading changed only in its numbers over the same body                 |
| rename     | `orphaned`, paired to an otherwise unmatched new section with another heading whose body |
|            | is similar (`rebase.similarity` ≥ RENAME_SIMILARITY)                                     |
| remove     | `orphaned`, no such pairing                                                              |
| move       | (extra) a matched section out of the longest order-keeping chain of matches              |
| add        | (new side) a non-blank new section nothing was matched to                                |

An `orphaned` old section whose heading key (`rebase.section_key`) is unique among the unmatched sections on
both sides is paired to that new section first, and its change read from its lines as for `stale` (append /
insert / edit / rewrite): the policy's decision stays `orphaned` in the record (the product would orphan its
lessons: that is what a study measures), the change says what the text did. A one-bullet section that gains a
second bullet is such a case: under the policy's body similarity, orphaned; to the miner, an append.

Edit class of a pair (exactly one, first that applies):

| class            | rule                                                                                |
|------------------|-------------------------------------------------------------------------------------|
| frontmatter-only | the body is byte-identical (only the frontmatter changed)                          |
| whitespace-only  | every old section `clean`, in the same order, nothing added                        |
| rewrite          | more than half of the old non-blank sections removed or rewritten, and new text    |
|                  | (a section added, or a section rewritten)                                          |
| append-only      | changes ⊆ {append, insert}: lines added inside existing sections, nothing else     |
| section-added    | changes ⊆ {append, insert, renumber, add}, with add                                 |
| in-section-edit  | changes ⊆ {append, insert, edit, rewrite}, with edit or rewrite                     |
| heading-rename   | changes ⊆ {append, insert, edit, rewrite, renumber, rename}, with renumber or rename|
| section-removed  | changes ⊆ {append, insert, edit, rewrite, renumber, remove}, with remove            |
| section-moved    | changes ⊆ {append, insert, edit, rewrite, renumber, move}, with move                |
| mixed            | anything else (two or more of add / remove / rename / move)                         |

Fate of a rule event, followed version by version through the rest of its file's history, the rule's
section followed through the pairs' section matching (clean / stale target, or a rename pairing). The first
version at which the rule's normalized text is no longer in its section decides:

* `moved` — the same text newly appears in another section, or, failing that, a new unit in another section
  has `rapidfuzz.fuzz.ratio` ≥ REWORD_RATIO with it (`fate_similarity` says which); or, found nowhere in its
  file, the same or such a similar unit is new in another instruction file of the repository in the same commit
  (`fate_file`: `CLAUDE.md` emptied into a new `AGENTS.md`);
* `reworded` — a unit of its section that is new in this version has ratio ≥ REWORD_RATIO with it;
* `deleted` — neither (its section gone included);
* `kept` — still there verbatim (normalized) at the file's last version (`file_deleted` says whether the file
  was deleted afterwards).

The section's *authored text* for an event is its section's heading key and other lines (the rule unit's lines
taken out — at the fate of a `reworded` rule, its rewording's — whitespace-normalized, blank lines dropped).
`section_changed_before_fate` says whether they differed, at any version strictly between the event and its fate
(to the end, for `kept`), from what they were at the event; `section_edited_before_fate` the same for a change that
is not pure addition (an other line removed or altered); `..._at_fate` the same for the fate version itself (a
section gone counts as changed and edited). Per update, `section_changes` / `section_edits` count the later
versions (to the fate, inclusive) whose authored text changed / was edited against the version before, and
`versions_survived` the later versions that still held the rule: together they give, update by update, whether the
section changed and whether the rule went — the stale flag's confusion matrix. (For the flag itself: the product
flags a lesson stale once its section's digest differs from the one it was written against, which is
`section_changed_before_fate` or `..._at_fate`; `fate_decision` is the policy's decision for the section at the
fate update, the rule's own line included.) `section_touched_before_fate` / `..._at_fate` are the same flag
narrowed as the product narrows it (`defaults.stale_touch`): raised only by a change that touches the rule
(`touch_flags`: the section orphaned by the policy or gone, or `touch.touches` of the rule's text, its authored
text before and after); each change is judged against the version before, as a lesson re-keyed clean would be.
`RuleEvent.steps` keeps those texts for a local cache (API only).

Records (`MineResult.to_records()`) carry ids, hashes, counts, classes and fates only — no instruction text;
the texts are on the API objects (`MinedVersion.text`, `.body`, `RuleEvent.text`) for a local cache.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from difflib import SequenceMatcher
from hashlib import sha256
from pathlib import Path

from rapidfuzz import fuzz, process

from .anchor import AnchorError, Section, parse
from .common import InputError
from .rebase import Update, get_policy, plan_update, section_key, similarity
from .skill import MAX_SKILL_BYTES, SkillFormatError, split_frontmatter
from .touch import touches

__all__ = [
    "DEFAULT_PATTERNS",
    "EDIT_CLASSES",
    "FATES",
    "MAX_BLOB_BYTES",
    "RENAME_SIMILARITY",
    "REWORD_RATIO",
    "MineError",
    "MineResult",
    "MinedFile",
    "MinedVersion",
    "Pair",
    "RuleEvent",
    "SectionChange",
    "analyse",
    "edit_class",
    "matches",
    "mine",
    "mine_repository",
    "mine_texts",
    "normalize_rule",
    "pathspecs",
    "read_versions",
    "rule_hash",
    "rule_units",
    "touch_flags",
    "write_records",
]

DEFAULT_PATTERNS = (
    "SKILL.md",
    "CLAUDE.md",
    "AGENTS.md",
    "GEMINI.md",
    ".cursor/rules/*.mdc",
    ".cursor/rules/*.md",
    ".cursorrules",
    ".github/copilot-instructions.md",
    ".windsurfrules",
    ".clinerules",
    ".clinerules/*.md",
)
FRONTMATTER_PATTERNS = ("SKILL.md", ".cursor/rules/*.mdc", ".cursor/rules/*.md")
MAX_BLOB_BYTES = MAX_SKILL_BYTES  # a larger blob is skipped (counted in `notes`), never read into memory
REWORD_RATIO = 60.0  # rapidfuzz.fuzz.ratio (0-100) of two normalized rule texts at or above which one rewords the other
RENAME_SIMILARITY = 0.5  # rebase.similarity of two section bodies: at or above, an orphan is a renamed section; under,
# a same-heading edit is a rewrite (the section policy's own min_similarity)
POLICY = "section"
NEAR_DUPLICATE_RATIO = 90.0  # rapidfuzz.fuzz.ratio at or above which two rule units of one version near-duplicate
NEAR_DUPLICATE_MAX = 3000  # rule units in a version above which near duplicates are not counted (None)
PROGRESS_MIN = 200  # versions in a repository below which no progress bar is drawn
EDIT_CLASSES = (
    "frontmatter-only",
    "whitespace-only",
    "rewrite",
    "append-only",
    "section-added",
    "in-section-edit",
    "heading-rename",
    "section-removed",
    "section-moved",
    "mixed",
)
FATES = ("kept", "reworded", "moved", "deleted")
CHANGES = ("unchanged", "append", "insert", "edit", "rewrite", "renumber", "rename", "remove", "move", "add")

_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class MineError(InputError):
    """A repository that cannot be mined: no such path, not a git repository, git missing or failing.
    Reads `PATH: MESSAGE`."""


# ------------------------------------------------------------------------------------------ values


@dataclass(frozen=True)
class MinedVersion:
    """One version of a file: the commit that made it, and its text (API only, never in a record)."""

    index: int  # 0-based within the file
    commit: str
    date: str  # committer date, ISO-8601 UTC
    path: str  # the file's path at this version
    blob: str
    text: str = field(repr=False)
    frontmatter: str = field(repr=False)
    body: str = field(repr=False)
    sections: tuple[Section, ...] = field(repr=False)

    @property
    def lines(self) -> int:
        return len(self.text.splitlines())

    def to_record(self, file_id: str) -> dict:
        body_sections = [s for s in self.sections if s.text.strip()]
        return {
            "file": file_id,
            "version": self.index,
            "commit": self.commit,
            "date": self.date,
            "path": self.path,
            "blob": self.blob,
            "lines": self.lines,
            "body_lines": len(self.body.splitlines()),
            "bytes": len(self.text.encode("utf-8")),
            "sections": len(body_sections),
            "frontmatter_digest": _digest(self.frontmatter) if self.frontmatter else None,
            "body_digest": _digest(self.body),
            **_duplicates([u.text for s in self.sections for u in _units_of(s)]),
        }


@dataclass(frozen=True)
class MinedFile:
    """An instruction file's history in one repository, renames followed."""

    id: str  # "<repo>:<first path>", with "#n" when the same path starts a second file
    repo: str
    path: str  # the path at its last version
    paths: tuple[str, ...]  # every path it had, in order
    pattern: str  # the pattern of DEFAULT_PATTERNS (or yours) the last path matched
    deleted: bool  # deleted on the first-parent chain after its last version (and not re-added)
    versions: tuple[MinedVersion, ...]
    skipped: Counter = field(default_factory=Counter, compare=False)  # why versions were skipped → how many
    missing: tuple[str, ...] = ()  # commits whose blob of the file is not in the repository (a partial clone)

    def to_record(self) -> dict:
        return {
            "id": self.id,
            "repo": self.repo,
            "path": self.path,
            "paths": list(self.paths),
            "pattern": self.pattern,
            "deleted": self.deleted,
            "versions": len(self.versions),
            "first_commit": self.versions[0].commit if self.versions else None,
            "last_commit": self.versions[-1].commit if self.versions else None,
            "first_date": self.versions[0].date if self.versions else None,
            "last_date": self.versions[-1].date if self.versions else None,
            "skipped": dict(sorted(self.skipped.items())),
        }


@dataclass(frozen=True)
class SectionChange:
    """One old section across a pair: the section policy's decision and what the anchorer saw."""

    section: str  # slug in the old version
    state: str  # clean | stale | orphaned (the `section` policy)
    change: str  # one of CHANGES but `add`
    target: str | None  # slug in the new version (clean / stale target, or the rename pairing), else None
    moved: bool = False
    lines_added: int = 0
    lines_removed: int = 0

    def to_dict(self) -> dict:
        return {
            "section": self.section,
            "state": self.state,
            "change": self.change,
            "target": self.target,
            "moved": self.moved,
            "lines_added": self.lines_added,
            "lines_removed": self.lines_removed,
        }


@dataclass(frozen=True)
class Pair:
    """Two consecutive versions of a file."""

    file: str
    old: int  # version index
    new: int
    edit_class: str
    changes: tuple[str, ...]  # sorted kinds of change present (CHANGES but `unchanged`), `frontmatter` too
    sections: tuple[SectionChange, ...]  # one per non-blank old section
    added: tuple[str, ...]  # slugs of new sections nothing was matched to
    body_changed: bool
    frontmatter_changed: bool
    slugs_changed: bool  # the ordered list of slugs differs
    lines_added: int
    lines_removed: int
    events: int  # rule events this pair made

    def counts(self) -> Counter:
        return Counter(s.state for s in self.sections)

    def to_record(self, versions: Sequence[MinedVersion]) -> dict:
        states, changes = self.counts(), Counter(s.change for s in self.sections)
        o, n = versions[self.old], versions[self.new]
        return {
            "file": self.file,
            "old": self.old,
            "new": self.new,
            "old_commit": o.commit,
            "new_commit": n.commit,
            "date": n.date,
            "edit_class": self.edit_class,
            "changes": list(self.changes),
            "body_changed": self.body_changed,
            "frontmatter_changed": self.frontmatter_changed,
            "slugs_changed": self.slugs_changed,
            "sections_old": len(self.sections),
            "sections_new": sum(1 for s in n.sections if s.text.strip()),
            "clean": states["clean"],
            "stale": states["stale"],
            "orphaned": states["orphaned"],
            **{c: changes[c] for c in CHANGES if c not in ("add", "move")},
            "moved": sum(s.moved for s in self.sections),
            "added": len(self.added),
            "lines_old": o.lines,
            "lines_new": n.lines,
            "lines_added": self.lines_added,
            "lines_removed": self.lines_removed,
            "events": self.events,
            "decisions": [s.to_dict() for s in self.sections],
            "added_sections": list(self.added),
        }


@dataclass(frozen=True)
class RuleEvent:
    """A rule unit added to an existing section, and its later fate."""

    id: str  # "<file id>@<version>#<n>"
    file: str
    version: int  # the version that added it
    commit: str
    section: str  # slug in that version
    line_index: int  # 0-based line of the unit's first line within the section body (below the heading)
    unit_lines: int
    section_lines: int  # body lines of the section at that version
    at_end: bool  # appended after every old line of the section
    kind: str  # bullet | table-row | quote | paragraph (a line of prose, hard-wrapped lines joined)
    hash: str  # rule_hash of the normalized text
    text: str = field(repr=False)  # normalized text (API only)
    fate: str = "kept"  # one of FATES
    fate_version: int | None = None
    fate_commit: str | None = None
    fate_similarity: float | None = None  # ratio/100 for reworded / moved (1.0: same text moved)
    fate_section: str | None = None  # the slug it went to (moved, reworded), or its last slug (kept)
    fate_file: str | None = None  # the file it moved to, when another file of the repository
    fate_decision: str | None = None  # the section policy's decision for its section at the fate pair
    versions_survived: int = 0  # later versions that still held it verbatim in its section
    section_changed_before_fate: bool = False
    section_edited_before_fate: bool = False
    section_changed_at_fate: bool = False
    section_edited_at_fate: bool = False
    first_section_change: int | None = None  # first later version whose other lines differ from the event's
    section_changes: int = 0  # later versions (to the fate, inclusive) whose other lines differ from the previous
    section_edits: int = 0  # of those, the ones that are no pure addition (an other line removed or altered)
    section_touched_before_fate: bool = False  # a change before the fate that touched the rule (`_touched`)
    section_touched_at_fate: bool = False
    file_deleted: bool = False
    # each later version whose other lines changed, to the fate inclusive: (authored text before, after — None
    # when the section is gone —, the policy orphaned the section) — texts, API only
    steps: tuple[tuple[str, str | None, bool], ...] = field(default=(), repr=False, compare=False)

    def to_record(self) -> dict:
        return {
            k: getattr(self, k)
            for k in (
                "id",
                "file",
                "version",
                "commit",
                "section",
                "line_index",
                "unit_lines",
                "section_lines",
                "at_end",
                "kind",
                "hash",
                "fate",
                "fate_version",
                "fate_commit",
                "fate_similarity",
                "fate_section",
                "fate_file",
                "fate_decision",
                "versions_survived",
                "section_changed_before_fate",
                "section_edited_before_fate",
                "section_changed_at_fate",
                "section_edited_at_fate",
                "first_section_change",
                "section_changes",
                "section_edits",
                "section_touched_before_fate",
                "section_touched_at_fate",
                "file_deleted",
            )
        }


@dataclass(frozen=True)
class MineResult:
    files: tuple[MinedFile, ...]
    pairs: tuple[Pair, ...]
    events: tuple[RuleEvent, ...]
    repos: tuple[dict, ...] = ()  # {"repo", "path", "head", "rev", "commits"}
    notes: Counter = field(default_factory=Counter, compare=False)  # "<repo>: <why>" → count of skipped blobs

    def to_records(self) -> dict:
        """Text-free derived records, JSON-serializable: repos, files, versions, pairs, events, notes."""
        by_id = {f.id: f for f in self.files}
        return {
            "repos": [dict(r) for r in self.repos],
            "files": [f.to_record() for f in self.files],
            "versions": [v.to_record(f.id) for f in self.files for v in f.versions],
            "pairs": [p.to_record(by_id[p.file].versions) for p in self.pairs],
            "events": [e.to_record() for e in self.events],
            "notes": dict(sorted(self.notes.items())),
        }


# ------------------------------------------------------------------------------------------ text helpers


def _digest(text: str) -> str:
    return sha256(text.encode("utf-8")).hexdigest()[:16]


_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s+\[[ xX]\])?\s+")
_ITEM = re.compile(r"^\s{0,12}(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HR = re.compile(r"^\s{0,3}([-*_])(?:\s*\1){2,}\s*$")


def normalize_rule(text: str) -> str:
    """A rule unit's text for comparison: NFC, list marker (and task box) dropped, whitespace runs collapsed."""
    text = unicodedata.normalize("NFC", text)
    return " ".join(_MARKER.sub("", text, count=1).split())


def rule_hash(text: str) -> str:
    """16 hex digits of sha256 over `normalize_rule(text)`."""
    return _digest(normalize_rule(text))


def _duplicates(texts: list[str]) -> dict:
    """`rule_units`: how many rule units; `duplicate_units`: how many repeat an earlier unit's text (case
    folded); `near_duplicate_units`: how many have ratio ≥ NEAR_DUPLICATE_RATIO with another unit of the file
    (exact repeats included; None over NEAR_DUPLICATE_MAX units)."""
    folded = [t.casefold() for t in texts]
    near = None
    if len(folded) <= NEAR_DUPLICATE_MAX:
        near = 0
        if len(folded) > 1:
            scores = process.cdist(folded, folded, scorer=fuzz.ratio, score_cutoff=NEAR_DUPLICATE_RATIO)
            near = int(((scores > 0).sum(axis=1) > 1).sum())  # itself, and at least one other
    return {"rule_units": len(texts), "duplicate_units": len(folded) - len(set(folded)), "near_duplicate_units": near}


def _norm_line(line: str) -> str:
    return " ".join(unicodedata.normalize("NFC", line).split())


@dataclass(frozen=True)
class _Unit:
    start: int  # 0-based line within the section body
    lines: int
    kind: str
    text: str  # normalized


def rule_units(body: str) -> list[tuple[int, int, str, str]]:
    """The rule units of a section body: (first line, line count, kind, normalized text), in order. A list item
    takes its indented continuation lines; a line of prose is a unit of its own (a rules file often holds one
    rule a line, unbulleted), joined by the next line only where that continues a hard-wrapped sentence
    (`_wrapped`: no sentence end before it, or a lower-case start); a table row and a quote line are one unit
    each; fenced code and thematic breaks are no unit."""
    return [(u.start, u.lines, u.kind, u.text) for u in _units(body)]


def _units(body: str) -> tuple[_Unit, ...]:
    out: list[_Unit] = []
    lines = body.splitlines()
    fence: str | None = None
    cur: list | None = None  # [start, [lines], kind]

    def close():
        nonlocal cur
        if cur is not None:
            text = normalize_rule(" ".join(cur[1]))
            if text:
                out.append(_Unit(cur[0], len(cur[1]), cur[2], text))
        cur = None

    for i, line in enumerate(lines):
        if fence is not None:
            m = _FENCE.match(line)
            if (
                m
                and m.group(1)[0] == fence[0]
                and len(m.group(1)) >= len(fence)
                and not line.strip()[len(m.group(1)) :].strip()
            ):  # a closing fence has no info string
                fence = None
            continue
        m = _FENCE.match(line)
        if m:
            close()
            fence = m.group(1)
            continue
        stripped = line.strip()
        if not stripped or _HR.match(line):
            close()
            continue
        if _ITEM.match(line):
            close()
            cur = [i, [line], "bullet"]
        elif stripped.startswith("|"):
            close()
            out.append(_Unit(i, 1, "table-row", normalize_rule(line)))
        elif stripped.startswith(">"):
            close()
            text = normalize_rule(stripped.lstrip(">"))
            if text:
                out.append(_Unit(i, 1, "quote", text))
        elif cur is not None and (line[:1].isspace() or cur[2] == "paragraph" and _wrapped(cur[1][-1], stripped)):
            cur[1].append(line)  # a list item's indented continuation, or a hard-wrapped sentence's next line
        else:
            close()
            cur = [i, [line], "paragraph"]
    close()
    return tuple(out)


_SENTENCE_END = (".", "!", "?", ":", ";", ")", "`", '"', "*", "_")


def _wrapped(previous: str, line: str) -> bool:
    """Whether `line` continues `previous` (hard-wrapped prose) rather than starting a rule of its own: the
    previous line does not end a sentence, or this one starts in lower case."""
    return not previous.rstrip().endswith(_SENTENCE_END) or line[:1].islower()


_UNIT_CACHE: dict[str, tuple[_Unit, ...]] = {}


def _units_of(section: Section) -> tuple[_Unit, ...]:
    body = section.body_text
    hit = _UNIT_CACHE.get(body)
    if hit is None:
        if len(_UNIT_CACHE) > 65536:
            _UNIT_CACHE.clear()
        hit = _UNIT_CACHE[body] = _units(body)
    return hit


def _body_lines(section: Section) -> list[str]:
    """The section body's non-blank lines, whitespace-normalized."""
    return [n for n in map(_norm_line, section.body_text.splitlines()) if n]


# ------------------------------------------------------------------------------------------ git


def matches(path: str, patterns: Sequence[str]) -> str | None:
    """The first pattern `path` matches: a pattern without `/` matches the file name, one with `/` the path or
    any tail of it that starts at a directory boundary (`.cursor/rules/*.mdc` matches `app/.cursor/rules/x.mdc`)."""
    name = path.rsplit("/", 1)[-1]
    for p in patterns:
        if "/" not in p:
            if fnmatch.fnmatchcase(name, p):
                return p
        elif fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path, "*/" + p):
            return p
    return None


def _git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    try:
        out = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True, check=False)
    except FileNotFoundError:
        raise MineError(repo, "git is not installed (no `git` on PATH)") from None
    if out.returncode != 0:
        msg = out.stderr.decode("utf-8", "replace").strip().splitlines()
        raise MineError(repo, f"git {args[0]} failed: {msg[-1] if msg else f'exit {out.returncode}'}")
    return out.stdout


def _open(repo: str | os.PathLike) -> tuple[Path, str | None]:
    """The repository's path and HEAD commit (None for a repository without commits)."""
    path = Path(repo)
    if shutil.which("git") is None:
        raise MineError(path, "git is not installed (no `git` on PATH)")
    if not path.exists():
        raise MineError(path, "no such path")
    if not path.is_dir():
        raise MineError(path, "not a git repository (not a directory)")
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "--git-dir"], capture_output=True, check=False)
    except FileNotFoundError:
        raise MineError(path, "git is not installed (no `git` on PATH)") from None
    if out.returncode != 0:
        raise MineError(path, "not a git repository")
    head = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--verify", "-q", "HEAD^{commit}"], capture_output=True, check=False
    )
    return path, (head.stdout.decode().strip() or None) if head.returncode == 0 else None


def _label(path: Path) -> str:
    """`owner/name` for a mirror laid out as `.../owner+name/repo`; else the directory name without `.git`."""
    p = path.resolve()
    name = p.name.removesuffix(".git")
    if name in ("", "repo") and p.parent.name:
        name = p.parent.name
    return name.replace("+", "/", 1) if "+" in name else name


@dataclass
class _Track:
    id: str
    path: str
    paths: list
    pattern: str
    raw: list  # (commit, date, path, blob)
    deleted: bool = False


def pathspecs(patterns: Sequence[str]) -> list[str]:
    """Git pathspecs covering every path `matches` accepts (a superset: `matches` decides), in git's default
    wildcard form, where `*` also matches `/` (faster than `:(glob)` magic): a pattern without `/` is
    `*NAME`; one with `/` is cut at its first wildcard's directory (`.cursor/rules/*.mdc` → `*.cursor/rules/*`)."""
    out = []
    for p in patterns:
        if "/" not in p:
            out.append(f"*{p}")
            continue
        head, wild = [], False
        for part in p.split("/"):
            if any(c in part for c in "*?["):
                wild = True
                break
            head.append(part)
        out.append(f"*{'/'.join(head)}" + ("/*" if wild else ""))
    return out


def _walk(repo: Path, label: str, rev: str, patterns: Sequence[str]) -> tuple[list[_Track], bool]:
    """One `git log --first-parent -M --raw` pass over the instruction files' paths (`pathspecs`): every matching
    file's blob per commit, renames among them followed — and whether they could be: rename detection reads
    blobs, and a partial clone may lack some; then the pass is made again with `--no-renames`, and a renamed
    file shows as one deleted and one added."""
    args = (
        "log",
        "--first-parent",
        "--reverse",
        "--raw",
        "--no-abbrev",
        "-z",
        "--format=%x01%H %ct",
        rev,
        "--",
        *pathspecs(patterns),
    )
    try:
        log, renames = _git(repo, *args[:3], "-M", *args[3:]), True
    except MineError:
        log, renames = _git(repo, *args[:3], "--no-renames", *args[3:]), False
    tracks: list[_Track] = []
    live: dict[str, _Track] = {}
    dead: dict[str, _Track] = {}
    taken: Counter = Counter()

    def start(path: str, pattern: str) -> _Track:
        if path in dead:
            t = dead.pop(path)
            t.deleted = False
            return t
        taken[path] += 1
        t = _Track(f"{label}:{path}" + (f"#{taken[path]}" if taken[path] > 1 else ""), path, [path], pattern, [])
        tracks.append(t)
        return t

    for chunk in log.split(b"\x01")[1:]:
        head, _, rest = chunk.partition(b"\0")  # under -z the header ends in NUL, then the raw lines
        commit, stamp = head.decode().strip().split(" ")
        date = datetime.fromtimestamp(int(stamp), timezone.utc).isoformat()
        fields = rest.split(b"\0")
        i = 0
        while i < len(fields):
            meta = fields[i].strip(b"\n")
            if not meta.startswith(b":"):
                i += 1
                continue
            parts = meta[1:].decode().split()
            status = parts[4]
            if status[0] in "RC":
                src, dst = fields[i + 1].decode("utf-8", "replace"), fields[i + 2].decode("utf-8", "replace")
                i += 3
            else:
                src = dst = fields[i + 1].decode("utf-8", "replace")
                i += 2
            new_mode, blob = parts[1], parts[3]
            regular = new_mode.startswith("100")
            if status[0] == "D":
                t = live.pop(src, None)
                if t is not None:
                    t.deleted = True
                    dead[src] = t
                continue
            if status[0] == "R":
                t = live.pop(src, None)
                pattern = matches(dst, patterns)
                if t is not None and pattern is None:  # renamed away from every pattern: gone
                    t.deleted = True
                    dead[src] = t
                    continue
                if t is None:
                    if pattern is None:
                        continue
                    t = start(dst, pattern)
                t.path, t.pattern = dst, pattern
                if t.paths[-1] != dst:
                    t.paths.append(dst)
                live[dst] = t
            else:  # A, M, T, C (the copy's destination)
                t = live.get(dst)
                if t is None:
                    pattern = matches(dst, patterns)
                    if pattern is None:
                        continue
                    t = live[dst] = start(dst, pattern)
            if regular:
                t.raw.append((commit, date, dst, blob))
            else:  # a symlink or submodule at the path: no text version
                t.raw.append((commit, date, dst, None))
    return tracks, renames


def _blobs(repo: Path, shas: Iterable[str], cap: int) -> tuple[dict[str, bytes], dict[str, str]]:
    """Blob bytes by sha through `git cat-file --batch` (sizes checked first with `--batch-check`), and why
    the others were not read: "missing", "too-big"."""
    shas = sorted(set(shas))
    if not shas:
        return {}, {}
    why: dict[str, str] = {}
    check = _git(repo, "cat-file", "--batch-check", input="\n".join(shas).encode() + b"\n")
    wanted = []
    for line in check.decode().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == "missing":
            why[parts[0]] = "missing"
        elif len(parts) == 3:
            if parts[1] != "blob":
                why[parts[0]] = "not-a-blob"
            elif int(parts[2]) > cap:
                why[parts[0]] = "too-big"
            else:
                wanted.append(parts[0])
    out: dict[str, bytes] = {}
    if wanted:
        data = _git(repo, "cat-file", "--batch", input="\n".join(wanted).encode() + b"\n")
        pos = 0
        while pos < len(data):
            nl = data.index(b"\n", pos)
            sha, _, size = data[pos:nl].decode().split(" ")
            start = nl + 1
            out[sha] = data[start : start + int(size)]
            pos = start + int(size) + 1
    return out, why


def _split(text: str, pattern: str) -> tuple[str, str]:
    """(frontmatter, body): the frontmatter is split off for FRONTMATTER_PATTERNS only, when it is closed."""
    if pattern in FRONTMATTER_PATTERNS and text.startswith("---"):
        try:
            fm, body, _ = split_frontmatter(text)
            return fm, body
        except SkillFormatError:
            pass
    return "", text


# ------------------------------------------------------------------------------------------ pairs


def _line_ops(old: Section, new: Section) -> tuple[str, int, int]:
    """(append | insert | edit | rewrite, lines added, lines removed) between two bodies of the same section:
    `rewrite` when lines were removed or changed, fewer than half of the old lines are kept, and the bodies' word
    similarity (`rebase.similarity`, as the section policy measures it) is under RENAME_SIMILARITY."""
    a, b = _body_lines(old), _body_lines(new)
    ops = SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    added = sum(j2 - j1 for tag, _, _, j1, j2 in ops if tag in ("insert", "replace"))
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag in ("delete", "replace"))
    if removed:
        rewritten = 2 * (len(a) - removed) < len(a) and similarity(old.body_text, new.body_text) < RENAME_SIMILARITY
        return ("rewrite" if rewritten else "edit"), added, removed
    if not added:
        return "edit", added, removed
    tail = all(tag == "equal" or (tag == "insert" and i1 == len(a)) for tag, i1, _, _, _ in ops)
    return ("append" if tail else "insert"), added, removed


def _chain(pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """The longest chain of (old, new) pairs increasing in both (patience LIS, O(n log n))."""
    pairs = sorted(pairs)
    tails: list[int] = []
    tail_idx: list[int] = []
    prev = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_idx.append(k)
        else:
            tails[pos], tail_idx[pos] = j, k
        prev[k] = tail_idx[pos - 1] if pos else -1
    out, k = set(), tail_idx[-1] if tail_idx else -1
    while k >= 0:
        out.add(pairs[k])
        k = prev[k]
    return out


@dataclass(frozen=True)
class _Analysis:
    pair: Pair
    mapping: dict  # old slug → new slug (clean / stale / paired orphans)
    ops: dict  # old slug → change

    @property
    def states(self) -> dict:
        """old slug → the section policy's decision."""
        cached = self.__dict__.get("_states")
        if cached is None:
            cached = {c.section: c.state for c in self.pair.sections}
            object.__setattr__(self, "_states", cached)
        return cached


def _analyse(file_id: str, old: MinedVersion, new: MinedVersion, policy) -> _Analysis:
    update = Update(old.sections, new.sections)
    plan = plan_update(update, policy)
    new_index = {s.slug: j for j, s in enumerate(new.sections)}
    blank_new = {j for j, s in enumerate(new.sections) if not s.text.strip()}
    matched: dict[int, int] = {}
    state: dict[int, str] = {}
    reason: dict[int, str] = {}
    for i, (s, d) in enumerate(zip(old.sections, plan.decisions)):
        state[i], reason[i] = d.state, d.reason
        if d.target is not None and d.state != "orphaned":
            matched[i] = new_index[d.target]
    # orphans paired to unmatched new sections: first by a heading key unique among the unmatched on both
    # sides (a section the policy orphaned though it kept its heading: grown or rewritten), then by body
    # similarity (a renamed heading)
    free_new = [j for j in range(len(new.sections)) if j not in matched.values() and j not in blank_new]
    orphans = [i for i, s in enumerate(old.sections) if state[i] == "orphaned" and s.text.strip()]
    paired: dict[int, int] = {}
    old_keys = Counter(section_key(old.sections[i]) for i in orphans)
    new_keys = Counter(section_key(new.sections[j]) for j in free_new)
    for i in orphans:
        key = section_key(old.sections[i])
        if old_keys[key] == 1 and new_keys[key] == 1:
            paired[i] = next(j for j in free_new if section_key(new.sections[j]) == key)
    free_new = [j for j in free_new if j not in paired.values()]
    for i in orphans:
        s = old.sections[i]
        if i in paired or not s.body_text.strip() or not free_new:
            continue
        best, score = None, RENAME_SIMILARITY
        for j in free_new:
            sc = similarity(s.body_text, new.sections[j].body_text)
            if sc >= score and (best is None or sc > score):
                best, score = j, sc
        if best is not None:
            paired[i] = best
            free_new.remove(best)
    everything = {**matched, **paired}
    chain = _chain(list(everything.items()))
    changes: list[SectionChange] = []
    kinds: set[str] = set()
    mapping, ops = {}, {}
    add_total = rem_total = 0
    for i, s in enumerate(old.sections):
        if not s.text.strip():
            continue
        j = everything.get(i)
        target = None if j is None else new.sections[j].slug
        added = removed = 0
        if state[i] == "clean":
            change = "unchanged"
        elif state[i] == "stale" and reason[i].startswith("renumbered"):
            change = "renumber"
        elif state[i] == "stale":
            change, added, removed = _line_ops(s, new.sections[j])
        elif i in paired and section_key(s) == section_key(new.sections[j]):
            change, added, removed = _line_ops(s, new.sections[j])
        elif i in paired:
            change = "rename"
        else:
            change = "remove"
            removed = len(_body_lines(s))
        moved = j is not None and (i, j) not in chain
        if moved:
            kinds.add("move")
        if change != "unchanged":
            kinds.add(change)
        if target is not None:
            mapping[s.slug] = target
        ops[s.slug] = change
        add_total, rem_total = add_total + added, rem_total + removed
        changes.append(SectionChange(s.slug, state[i], change, target, moved, added, removed))
    added_sections = tuple(new.sections[j].slug for j in free_new)
    for j in free_new:
        add_total += len(_body_lines(new.sections[j]))
    if added_sections:
        kinds.add("add")
    fm_changed = old.frontmatter != new.frontmatter
    body_changed = old.body != new.body
    slugs_changed = [s.slug for s in old.sections if s.text.strip()] != [s.slug for s in new.sections if s.text.strip()]
    klass = edit_class(
        kinds,
        body_changed=body_changed,
        removed_share=(sum(c.change in ("remove", "rewrite") for c in changes) / len(changes)) if changes else 0.0,
    )
    pair = Pair(
        file_id,
        old.index,
        new.index,
        klass,
        tuple(sorted(kinds | ({"frontmatter"} if fm_changed else set()))),
        tuple(changes),
        added_sections,
        body_changed,
        fm_changed,
        slugs_changed,
        add_total,
        rem_total,
        0,
    )
    return _Analysis(pair, mapping, ops)


def edit_class(changes: Iterable[str], *, body_changed: bool = True, removed_share: float = 0.0) -> str:
    """The edit class of a pair from its kinds of change and the share of its old non-blank sections removed or
    rewritten (see the module's table)."""
    k = set(changes) - {"unchanged", "frontmatter"}
    if not body_changed:
        return "frontmatter-only"
    if not k:
        return "whitespace-only"
    if removed_share > 0.5 and k & {"add", "rewrite"}:
        return "rewrite"
    grow, edit, renum = {"append", "insert"}, {"edit", "rewrite"}, {"renumber"}  # a section added, removed or
    # moved renumbers the steps after it: the renumbering is part of that change, not a heading rename of its own
    for klass, allowed, needs in (
        ("append-only", grow, grow),
        ("section-added", grow | renum | {"add"}, {"add"}),
        ("in-section-edit", grow | edit, edit),
        ("heading-rename", grow | edit | {"renumber", "rename"}, {"renumber", "rename"}),
        ("section-removed", grow | edit | renum | {"remove"}, {"remove"}),
        ("section-moved", grow | edit | renum | {"move"}, {"move"}),
    ):
        if k <= allowed and k & needs:
            return klass
    return "mixed"


# ------------------------------------------------------------------------------------------ rule events


def _new_units(old: Section, new: Section) -> list[tuple[_Unit, bool]]:
    """The rule units `new` adds to `old`, each with whether it sits after every kept old unit, when every old
    body line is kept in order (else none). A unit that extends an old one (a continuation line added to a
    bullet) is no new rule."""
    ops = SequenceMatcher(None, _body_lines(old), _body_lines(new), autojunk=False).get_opcodes()
    if any(tag in ("delete", "replace") for tag, *_ in ops):
        return []
    left = Counter(u.text for u in _units_of(old))
    fresh, kept_end = [], -1
    for u in _units_of(new):
        if left[u.text] > 0:
            left[u.text] -= 1
            kept_end = max(kept_end, u.start)
        else:
            fresh.append(u)
    gone = [t for t, n in left.items() if n > 0]
    return [(u, u.start > kept_end) for u in fresh if not any(u.text.startswith(t) for t in gone)]


def _others(section: Section, text: str) -> tuple[str, ...]:
    """The section's authored text around a rule: its heading and normalized non-blank body lines, the lines
    of (the first) unit whose text is `text` taken out."""
    lines = section.body_text.splitlines()
    unit = next((u for u in _units_of(section) if u.text == text), None)
    if unit is not None:
        del lines[unit.start : unit.start + unit.lines]
    return (section_key(section), *(n for n in map(_norm_line, lines) if n))


def _pure_addition(before: Sequence[str], after: Sequence[str]) -> bool:
    ops = SequenceMatcher(None, list(before), list(after), autojunk=False).get_opcodes()
    return all(tag in ("equal", "insert") for tag, *_ in ops)


def touch_flags(text: str, steps: Sequence[tuple[str, str | None, bool]], at_fate: bool, **params) -> tuple[bool, bool]:
    """(before the fate, at the fate): whether a section change flags the rule once the flag is narrowed to what
    the rule refers to (`touch.touches`, `params` passed through). A section the policy orphans, or that is
    gone, flags it as before; a stale one only when the edit touches the rule — else the product re-keys the
    lesson clean, so the next change is judged against this text, as `steps` are. `at_fate`: the last step is the
    fate's own."""
    flags = [orphaned or new is None or bool(touches(text, old, new, **params)) for old, new, orphaned in steps]
    if at_fate:
        return any(flags[:-1]), flags[-1]
    return any(flags), False


def _follow(
    ev: RuleEvent, versions: Sequence[MinedVersion], analyses: Sequence[_Analysis], file_deleted: bool
) -> RuleEvent:
    """The event with its fate filled in, following it from its version to the file's last."""
    slug = ev.section
    by_slug = {s.slug: s for s in versions[ev.version].sections}
    base_others = _others(by_slug[slug], ev.text)
    prev_others = base_others
    first_change = None
    n_changes = n_edits = 0
    changed_before = edited_before = False
    steps: list[tuple[str, str | None, bool]] = []
    survived = 0
    for w in range(ev.version + 1, len(versions)):
        a = analyses[w - 1]
        decision = a.states.get(slug, "clean")
        target = a.mapping.get(slug)
        if decision == "clean":  # the same normalized text: the rule and its section as they were
            survived += 1
            slug = target
            continue
        old_v, new_v = versions[w - 1], versions[w]
        old_sections = {s.slug: s for s in old_v.sections}
        new_sections = {s.slug: s for s in new_v.sections}
        here = new_sections.get(target) if target is not None else None
        if here is not None:
            others = _others(here, ev.text)
            changed_now = others != prev_others
            edited_now = changed_now and not _pure_addition(prev_others, others)
        else:
            others, changed_now, edited_now = (), True, True
        units_here = [u.text for u in _units_of(here)] if here is not None else []
        if ev.text in units_here:  # still there
            survived += 1
            if changed_now:
                n_changes += 1
                n_edits += edited_now
                changed_before = True
                edited_before = edited_before or edited_now
                if first_change is None:
                    first_change = w
                steps.append(("\n".join(prev_others), "\n".join(others), decision == "orphaned"))
            slug, prev_others = target, others
            continue
        # the fate happens at w
        old_all = Counter(u.text for s in old_v.sections for u in _units_of(s))
        elsewhere = [(s.slug, u.text) for s in new_v.sections if s.slug != target for u in _units_of(s)]
        fate, sim, where = "deleted", None, None
        new_all = Counter(t for _, t in elsewhere)
        old_elsewhere = Counter(u.text for s in old_v.sections if s.slug != slug for u in _units_of(s))
        if new_all[ev.text] > old_elsewhere[ev.text]:
            fate, sim = "moved", 1.0
            where = next(sl for sl, t in elsewhere if t == ev.text)
        else:
            old_here = Counter(u.text for u in _units_of(old_sections[slug]))
            fresh_here = [t for t in units_here if old_here[t] == 0]
            best = (
                process.extractOne(ev.text, fresh_here, scorer=fuzz.ratio, score_cutoff=REWORD_RATIO)
                if fresh_here
                else None
            )
            if best is not None:
                fate, sim, where = "reworded", round(best[1] / 100, 4), target
            else:
                fresh_else = [(sl, t) for sl, t in elsewhere if old_all[t] == 0]
                best = (
                    process.extractOne(
                        ev.text, [t for _, t in fresh_else], scorer=fuzz.ratio, score_cutoff=REWORD_RATIO
                    )
                    if fresh_else
                    else None
                )
                if best is not None:
                    fate, sim, where = "moved", round(best[1] / 100, 4), fresh_else[best[2]][0]
        if fate == "reworded":  # the rewording is the rule's own text, not its section's
            others = _others(here, fresh_here[best[2]])
            changed_now = others != prev_others
            edited_now = changed_now and not _pure_addition(prev_others, others)
        if changed_now:
            n_changes += 1
            n_edits += edited_now
            if first_change is None:
                first_change = w
            steps.append(
                ("\n".join(prev_others), "\n".join(others) if here is not None else None, decision == "orphaned")
            )
        return replace(
            ev,
            fate=fate,
            fate_version=w,
            fate_commit=new_v.commit,
            fate_similarity=sim,
            fate_section=where,
            fate_decision=decision,
            versions_survived=survived,
            section_changed_before_fate=changed_before,
            section_edited_before_fate=edited_before,
            section_changed_at_fate=changed_now,
            section_edited_at_fate=edited_now,
            first_section_change=first_change,
            section_changes=n_changes,
            section_edits=n_edits,
            **dict(
                zip(
                    ("section_touched_before_fate", "section_touched_at_fate"), touch_flags(ev.text, steps, changed_now)
                )
            ),
            file_deleted=file_deleted,
            steps=tuple(steps),
        )
    return replace(
        ev,
        fate="kept",
        fate_section=slug,
        versions_survived=survived,
        section_changed_before_fate=changed_before,
        section_edited_before_fate=edited_before,
        first_section_change=first_change,
        section_changes=n_changes,
        section_edits=n_edits,
        section_touched_before_fate=touch_flags(ev.text, steps, False)[0],
        file_deleted=file_deleted,
        steps=tuple(steps),
    )


# ------------------------------------------------------------------------------------------ driver


def read_versions(
    repo: str | os.PathLike,
    *,
    patterns: Sequence[str] = DEFAULT_PATTERNS,
    rev: str = "HEAD",
    label: str | None = None,
    max_blob_bytes: int = MAX_BLOB_BYTES,
) -> MineResult:
    """The instruction files of one local git repository and their versions, texts included (`.files` only:
    no pairs, no events). Raises `MineError` naming the path when the repository cannot be read."""
    path, head = _open(repo)
    label = label or _label(path)
    notes: Counter = Counter()
    if head is None and rev == "HEAD":
        return MineResult(
            (), (), (), ({"repo": label, "path": str(path), "head": None, "rev": rev, "commits": 0},), notes
        )
    tracks, renames = _walk(path, label, rev, patterns)
    commits = int(_git(path, "rev-list", "--first-parent", "--count", rev, "--").decode().strip() or 0)
    if not renames:
        notes[f"{label}: renames not followed (blobs missing)"] += 1
    blobs, why = _blobs(path, (b for t in tracks for *_, b in t.raw if b), max_blob_bytes)
    files = []
    for t in tracks:
        versions: list[MinedVersion] = []
        skipped: Counter = Counter()
        missing: list[str] = []
        for commit, date, p, blob in t.raw:
            if blob is None:
                skipped["not-a-file"] += 1
                continue
            if versions and versions[-1].blob == blob:  # a rename carrying the same text: no new version
                continue
            if blob in why:
                skipped[why[blob]] += 1
                if why[blob] == "missing":
                    missing.append(commit)
                continue
            try:
                text = blobs[blob].decode("utf-8")
            except UnicodeDecodeError:
                skipped["not-utf-8"] += 1
                continue
            if versions and versions[-1].text == text:
                continue
            fm, body = _split(text.removeprefix("\ufeff"), t.pattern)
            try:
                sections = parse(body)
            except AnchorError:
                skipped["unparsable"] += 1
                continue
            versions.append(MinedVersion(len(versions), commit, date, p, blob, text, fm, body, sections))
        for k, n in skipped.items():
            notes[f"{label}: {k}"] += n
        if versions:
            files.append(
                MinedFile(
                    t.id, label, t.path, tuple(t.paths), t.pattern, t.deleted, tuple(versions), skipped, tuple(missing)
                )
            )
    return MineResult(
        tuple(files), (), (), ({"repo": label, "path": str(path), "head": head, "rev": rev, "commits": commits},), notes
    )


def _traffic(files: Sequence[MinedFile]) -> tuple[dict, dict]:
    """Per commit, the rule units each file's version there took out (`gone`) and put in (`fresh`, with slugs)
    relative to the file's previous version: what a move from one file to another leaves behind."""
    gone: dict[str, list[tuple[str, str]]] = {}
    fresh: dict[str, list[tuple[str, str, str]]] = {}
    for f in files:
        prev: Counter = Counter()
        for v in f.versions:
            units = [(s.slug, u.text) for s in v.sections for u in _units_of(s)]
            now = Counter(t for _, t in units)
            gone.setdefault(v.commit, []).extend((f.id, t) for t in prev if now[t] == 0)
            fresh.setdefault(v.commit, []).extend((f.id, sl, t) for sl, t in units if prev[t] == 0)
            prev = now
    return gone, fresh


def _similar(text: str, choices: Sequence[str]) -> tuple[int, float] | None:
    """(index, ratio/100) of the choice most like `text` at ratio ≥ REWORD_RATIO; the same text first."""
    if text in choices:
        return choices.index(text), 1.0
    best = process.extractOne(text, choices, scorer=fuzz.ratio, score_cutoff=REWORD_RATIO) if choices else None
    return None if best is None else (best[2], round(best[1] / 100, 4))


def analyse(
    files: Iterable[MinedFile], *, progress=False, label: str = ""
) -> tuple[tuple[Pair, ...], tuple[RuleEvent, ...]]:
    """The pairs and rule events (fates followed) of one repository's files read by `read_versions`. A rule
    taken out of one file and put into another in the same commit (`CLAUDE.md` → `AGENTS.md`) is `moved` there
    (`fate_file`), and makes no rule event in the file it went to."""
    files = list(files)
    gone_at, fresh_at = _traffic(files)
    policy = get_policy(POLICY)
    pairs, events = [], []
    bar = _bar(sum(len(f.versions) - 1 for f in files), progress, label or (files[0].repo if files else ""))
    for f in files:
        versions = f.versions
        analyses = []
        for k in range(len(versions) - 1):
            analyses.append(_analyse(f.id, versions[k], versions[k + 1], policy))
            bar.update(1)
        file_events: list[RuleEvent] = []
        for k, a in enumerate(analyses):
            old_v, new_v = versions[k], versions[k + 1]
            old_by = {s.slug: s for s in old_v.sections}
            new_by = {s.slug: s for s in new_v.sections}
            made = 0
            before = {u.text for s in old_v.sections for u in _units_of(s)}
            after = {u.text for s in new_v.sections for u in _units_of(s)}
            gone = [t for t in before if t not in after]  # units this pair took out somewhere
            for c in a.pair.sections:
                if c.change not in ("append", "insert") or c.target is None:
                    continue
                old_s, new_s = old_by[c.section], new_by[c.target]
                n_body = len(new_s.body_text.splitlines())
                elsewhere = [t for g, t in gone_at.get(new_v.commit, ()) if g != f.id]
                for u, at_end in _new_units(old_s, new_s):
                    if u.text in before or _similar(u.text, gone) or _similar(u.text, elsewhere):
                        continue  # moved here from elsewhere in the file or another (perhaps reworded): no new rule
                    file_events.append(
                        RuleEvent(
                            f"{f.id}@{new_v.index}#{made}",
                            f.id,
                            new_v.index,
                            new_v.commit,
                            c.target,
                            u.start,
                            u.lines,
                            n_body,
                            at_end,
                            u.kind,
                            _digest(u.text),
                            u.text,
                        )
                    )
                    made += 1
            analyses[k] = _Analysis(replace(a.pair, events=made), a.mapping, a.ops)
        pairs.extend(a.pair for a in analyses)
        for e in file_events:
            e = _follow(e, versions, analyses, f.deleted)
            if e.fate == "deleted":
                there = [(g, sl, t) for g, sl, t in fresh_at.get(e.fate_commit, ()) if g != f.id]
                hit = _similar(e.text, [t for *_, t in there])
                if hit is not None:
                    e = replace(
                        e,
                        fate="moved",
                        fate_file=there[hit[0]][0],
                        fate_section=there[hit[0]][1],
                        fate_similarity=hit[1],
                    )
            events.append(e)
    bar.close()
    return tuple(pairs), tuple(events)


def mine_repository(
    repo: str | os.PathLike,
    *,
    patterns: Sequence[str] = DEFAULT_PATTERNS,
    rev: str = "HEAD",
    label: str | None = None,
    max_blob_bytes: int = MAX_BLOB_BYTES,
    progress: bool = False,
) -> MineResult:
    """Mine one local git repository (bare or not): `read_versions`, then `analyse`."""
    read = read_versions(repo, patterns=patterns, rev=rev, label=label, max_blob_bytes=max_blob_bytes)
    pairs, events = analyse(read.files, progress=progress, label=read.repos[0]["repo"])
    return replace(read, pairs=pairs, events=events)


def mine_texts(histories: Iterable[tuple[str, str, Sequence[str]]], *, repo: str = "texts") -> MineResult:
    """Mine histories given as texts, no git: `(path, pattern, [text, ...])` per file, oldest first (`pattern`
    decides the frontmatter split, as `matches` would name it: "SKILL.md" for a skill). Versions get commits
    `v0`, `v1`, ... and no date; consecutive identical texts are one version. For synthetic histories
    (`studies.sim.generate_history`) measured with the very classes and fates the real ones get."""
    files = []
    for path, pattern, texts in histories:
        versions: list[MinedVersion] = []
        for k, text in enumerate(texts):
            if versions and versions[-1].text == text:
                continue
            fm, body = _split(text.removeprefix("\ufeff"), pattern)
            versions.append(MinedVersion(len(versions), f"v{k}", "", path, _digest(text), text, fm, body, parse(body)))
        if versions:
            files.append(MinedFile(f"{repo}:{path}", repo, path, (path,), pattern, False, tuple(versions)))
    pairs, events = analyse(files)
    return MineResult(
        tuple(files), pairs, events, ({"repo": repo, "path": None, "head": None, "rev": None, "commits": None},)
    )


def mine(
    paths: Iterable[str | os.PathLike],
    *,
    patterns: Sequence[str] = DEFAULT_PATTERNS,
    rev: str = "HEAD",
    max_blob_bytes: int = MAX_BLOB_BYTES,
    progress: bool = False,
) -> MineResult:
    """Mine several repositories into one result. Every path is checked before any is mined."""
    paths = list(paths)
    for p in paths:
        _open(p)
    parts, labels = [], Counter()
    for p in paths:  # two repositories of one name (a/repo, b/repo.git ...) get "name#2": file ids stay unique
        name = _label(Path(p))
        labels[name] += 1
        parts.append(
            mine_repository(
                p,
                patterns=patterns,
                rev=rev,
                max_blob_bytes=max_blob_bytes,
                progress=progress,
                label=name if labels[name] == 1 else f"{name}#{labels[name]}",
            )
        )
    notes: Counter = Counter()
    for r in parts:
        notes.update(r.notes)
    return MineResult(
        tuple(f for r in parts for f in r.files),
        tuple(p for r in parts for p in r.pairs),
        tuple(e for r in parts for e in r.events),
        tuple(x for r in parts for x in r.repos),
        notes,
    )


def write_records(records: dict, path: str | os.PathLike) -> None:
    """Write `to_records()` output as JSON to `path`, whole or not at all (a temporary file renamed over it)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent if str(path.parent) else ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(records, out, ensure_ascii=False, indent=1)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(total: int, progress, label: str):
    """A tqdm bar over the versions read, when `progress` is true (or a stream to draw on) and there are many."""
    if not progress or total < PROGRESS_MIN:
        return _NoBar()
    from tqdm.auto import tqdm  # only when drawn: the import costs a cold start

    stream = progress if hasattr(progress, "write") else sys.stderr
    return tqdm(total=total, desc=f"mine {label}", unit="version", file=stream, leave=False)
