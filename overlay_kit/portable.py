"""Moving a store: a portable export of lessons with their provenance and review history, and its import into
another database (another machine, another account, another key).

    export_lessons(store, path, *, skill=None) -> ExportReport    # JSONL: a header, then one lesson a line
    import_lessons(store, path, *, skills=None) -> ImportReport   # re-validated, resealed; nothing partial

The file: line 1 a header `{"format": "overlay_kit lessons", "version": 1, "exported_at": T,
"skill": S|null, "lessons": N}`; then one line per lesson `{"lesson": {...}, "audit": [...], "mac": HEX}`, where
`lesson` holds the row's sealed columns (`seal.SEALED_COLUMNS`, JSON ones as JSON), `audit` its review history
(who, at, from, to, reason) and `mac` a keyed BLAKE2b of the canonical JSON of both under the exporting key
(`RowSealer.export_mac`). Only rows whose seals verify are exported (the others are named in the store's notes).

On import every lesson is checked again: its record's shape (a typed `InputError` naming FILE:LINE and the
field, nothing written), the grammar (`grammar.validate_payload`) and the gates' rules (`gates.decide`, the
skill found by name in `skills` when given: every rule but `known_section`, since anchoring is rebase's business;
a skill not found: the rules that do not need its file too). A lesson the rules refuse refuses the file (the
same error). Then each is resealed in the new store, bound to its identity. A lesson whose MAC verifies under
this user's key (a same-user move) keeps its status, approval and counters; any other arrives waiting for
review: `quarantined` for untrusted provenance, else `staged` (`archived` stays archived), never `active`. A
lesson whose id the store already holds is skipped (an import run twice adds nothing). Its audit rows come along
and one more says where it came from and whether its MAC verified."""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .anchor import Anchor
from .common import InputError, dumps, iso, parse_time, read_jsonl, utc_now
from .gates import RULES, GateSettings, Submission, decide
from .grammar import SOURCES, STATUSES, TIERS, Delta, GrammarError, Provenance, check_shape
from .seal import SEALED_COLUMNS, mint
from .skill import Skill
from .store import Store

__all__ = ["FORMAT", "ExportReport", "ImportReport", "export_lessons", "import_lessons"]

FORMAT, VERSION = "overlay_kit lessons", 1
_LESSON_FIELDS = frozenset(SEALED_COLUMNS)
_AUDIT_FIELDS = ("who", "at", "from", "to", "reason")
# rules that read the skill's file: without it (a skill not installed here) they cannot run
_SKILL_RULES = {"capability_bearing", "no_new_tool", "known_section", "quotes_evidence"}


@dataclass(frozen=True)
class ExportReport:
    path: str
    lessons: int
    left_out: tuple[str, ...] = ()  # the store's notes: rows whose seals did not verify

    def to_dict(self) -> dict:
        return {"op": "export", "out": self.path, "lessons": self.lessons, "left_out": list(self.left_out)}


@dataclass(frozen=True)
class ImportReport:
    path: str
    kept: tuple[str, ...] = ()  # MAC verified: status kept
    review: tuple[str, ...] = ()  # MAC did not verify: waiting for review (or archived)
    skipped: tuple[str, ...] = ()  # already in the store
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict:
        return {
            "op": "import",
            "file": self.path,
            "imported": len(self.kept) + len(self.review),
            "kept": list(self.kept),
            "review": list(self.review),
            "skipped": list(self.skipped),
            "notes": list(self.notes),
        }


def _body(lesson: Mapping, audit: list) -> str:
    return dumps({"lesson": lesson, "audit": audit})


def export_lessons(store: Store, path: str | os.PathLike, *, skill: str | None = None) -> ExportReport:
    """Write every verified lesson of the store (of `skill`) with its review history to `path` (JSONL), with
    a MAC under this store's key; written whole under a private name, then moved into place."""
    before = len(store.integrity_notes)
    records = store.lesson_records(skill)
    sealer = store.key_sealer()
    header = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": iso(utc_now()),
        "skill": skill,
        "lessons": len(records),
    }
    lines = [dumps(header)]
    for rec in records:
        audit = rec.pop("audit")
        lines.append(dumps({"lesson": rec, "audit": audit, "mac": sealer.export_mac(_body(rec, audit))}))
    out = Path(path)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return ExportReport(str(out), len(records), tuple(store.integrity_notes[before:]))


# ------------------------------------------------------------------------------------------------ import


def _need(cond: bool, path: Path, n: int, fld: str, message: str) -> None:
    if not cond:
        raise InputError(path, f"{message} (field {fld!r})", n, fld)


def _text_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _time(value: Any, path: Path, n: int, fld: str, *, optional: bool = False):
    if value is None and optional:
        return None
    _need(isinstance(value, str), path, n, fld, "a UTC ISO-8601 time is expected")
    try:
        when = parse_time(value)
    except (TypeError, ValueError):
        when = None
    _need(when is not None, path, n, fld, f"{value!r} is not an ISO-8601 time")
    return when


def _record(value: Any, path: Path, n: int) -> tuple[dict, list, Any]:
    """(lesson, audit, mac) of one line, its shape checked (`InputError` naming FILE:LINE and the field)."""
    _need(isinstance(value, dict), path, n, "lesson", "a line is a JSON object {lesson, audit, mac}")
    extra = sorted(set(value) - {"lesson", "audit", "mac"})
    _need(not extra, path, n, extra[0] if extra else "", "unknown field")
    lesson, audit = value.get("lesson"), value.get("audit", [])
    _need(isinstance(lesson, dict), path, n, "lesson", "missing, or not a JSON object")
    extra = sorted(set(lesson) - _LESSON_FIELDS)
    _need(not extra, path, n, f"lesson.{extra[0]}" if extra else "", "unknown field")
    for name in ("id", "base_name", "scope", "kind", "status", "created_at"):
        _need(
            isinstance(lesson.get(name), str) and lesson[name] != "",
            path,
            n,
            f"lesson.{name}",
            "missing, or not a non-empty string",
        )
    for name in ("base_root", "base_version", "superseded_by", "approved_at", "approved_by"):
        _need(_text_or_none(lesson.get(name)), path, n, f"lesson.{name}", "a string or null is expected")
    _need(lesson["kind"] in TIERS, path, n, "lesson.kind", f"unknown kind {lesson['kind']!r}")
    _need(lesson["status"] in STATUSES, path, n, "lesson.status", f"unknown status {lesson['status']!r}")
    for name in ("success_count", "attempt_count", "tier", "resident"):
        v = lesson.get(name, 0 if name != "resident" else 1)
        _need(type(v) is int and v >= 0, path, n, f"lesson.{name}", "a whole number >= 0 is expected")
    _need(
        lesson.get("attempt_count", 0) >= lesson.get("success_count", 0),
        path,
        n,
        "lesson.attempt_count",
        "fewer attempts than successes",
    )
    anchor = lesson.get("anchor")
    _need(
        isinstance(anchor, dict)
        and set(anchor) == {"section", "digest"}
        and all(isinstance(v, str) for v in anchor.values()),
        path,
        n,
        "lesson.anchor",
        "an object {section, digest} of strings is expected",
    )
    _need(isinstance(lesson.get("payload"), dict), path, n, "lesson.payload", "a JSON object is expected")
    prov = lesson.get("provenance")
    _need(
        isinstance(prov, dict)
        and set(prov) <= {"source", "turns"}
        and prov.get("source") in SOURCES
        and isinstance(prov.get("turns", []), list)
        and all(isinstance(t, str) for t in prov.get("turns", [])),
        path,
        n,
        "lesson.provenance",
        f"an object {{source, turns}} with a source of {', '.join(SOURCES)}",
    )
    findings = lesson.get("findings", [])
    _need(
        isinstance(findings, list) and all(isinstance(f, str) for f in findings),
        path,
        n,
        "lesson.findings",
        "a list of strings is expected",
    )
    _need(isinstance(audit, list), path, n, "audit", "a list is expected")
    for i, row in enumerate(audit):
        _need(
            isinstance(row, dict)
            and set(row) <= set(_AUDIT_FIELDS)
            and isinstance(row.get("who"), str)
            and all(_text_or_none(row.get(k)) for k in ("from", "to"))
            and isinstance(row.get("reason", ""), str),
            path,
            n,
            f"audit[{i}]",
            "an object {who, at, from, to, reason} is expected",
        )
        _time(row.get("at"), path, n, f"audit[{i}].at")
    return lesson, audit, value.get("mac")


def _stand_in(name: str) -> Skill:
    """What the rules see of a skill that is not installed here: its name, no tools, no permissions."""
    return Skill(name=name, description="not installed here", body="")


def import_lessons(
    store: Store, path: str | os.PathLike, *, skills: Mapping[str, Skill] | Callable[[str], Skill | None] | None = None
) -> ImportReport:
    """Import an `export_lessons` file into `store` (see the module's text). `skills`: the installed skills by
    name (a mapping, or a function returning a `Skill` or None), for the rules that read the skill's file."""
    path = Path(path)
    lines = list(read_jsonl(path, "lesson export"))
    if not lines:
        raise InputError(path, "an empty file: no header line", None, "format")
    n0, header = lines[0]
    _need(
        isinstance(header, dict) and header.get("format") == FORMAT,
        path,
        n0,
        "format",
        f"not an overlay_kit lesson export (the first line's format is {FORMAT!r})",
    )
    _need(header.get("version") == VERSION, path, n0, "version", f"version {header.get('version')!r} is not {VERSION}")
    lookup = skills.get if isinstance(skills, Mapping) else skills
    sealer = store.key_sealer()
    settings = GateSettings(auto_approve=False)
    parsed, seen = [], set()
    for n, value in lines[1:]:
        lesson, audit, mac = _record(value, path, n)
        _need(lesson["id"] not in seen, path, n, "lesson.id", f"delta id {lesson['id']!r} twice in the file")
        seen.add(lesson["id"])
        verified = isinstance(mac, str) and hmac.compare_digest(
            mac.encode("ascii", "replace"), sealer.export_mac(_body(lesson, audit)).encode("ascii")
        )
        skill = lookup(lesson["base_name"]) if lookup else None
        rules = tuple(
            r for r in RULES if r.name != "known_section" and (skill is not None or r.name not in _SKILL_RULES)
        )
        prov = Provenance.from_dict(lesson["provenance"])
        sub = Submission(
            skill or _stand_in(lesson["base_name"]),
            lesson["kind"],
            lesson["payload"],
            lesson["anchor"]["section"],
            prov,
            lesson["scope"],
            (),
            False,
            store.research,
            False,
            settings,
        )
        verdict, _ = decide(sub, rules)
        _need(
            verdict.outcome in ("staged", "quarantined", "active"),
            path,
            n,
            "lesson.payload",
            f"refused by the gates ({verdict.rule}): {verdict.message}",
        )
        try:
            payload = check_shape(lesson["kind"], lesson["payload"])
        except GrammarError as exc:
            raise InputError(path, f"{exc} (field 'lesson.payload')", n, "lesson.payload") from None
        parsed.append((n, lesson, audit, verified, payload, verdict, prov))
    known = store.known_ids(p[1]["id"] for p in parsed)
    deltas, approvals, resident, audits, lineage = [], [], [], [], {}
    kept, review, skipped = [], [], []
    now = iso(utc_now())
    ids = {p[1]["id"] for p in parsed} - known
    for n, lesson, audit, verified, payload, verdict, prov in parsed:
        if lesson["id"] in known:
            skipped.append(lesson["id"])
            continue
        status, who = lesson["status"], lesson.get("approved_by")
        approved = _time(lesson.get("approved_at"), path, n, "lesson.approved_at", optional=True)
        if not verified and status != "archived":
            status, who, approved = ("staged" if prov.trusted else "quarantined"), None, None
        elif not verified:
            who = None
        if status == "active" and not prov.trusted and who is None:
            status = "quarantined"  # a verified record never says this; held for review all the same
        (kept if verified else review).append(lesson["id"])
        deltas.append(
            Delta(
                lesson["base_name"],
                lesson["kind"],
                payload,
                Anchor(lesson["anchor"]["section"], lesson["anchor"]["digest"], lesson.get("base_version")),
                prov,
                lesson["scope"],
                lesson.get("base_root"),
                status,
                lesson["id"],
                _time(lesson["created_at"], path, n, "lesson.created_at"),
                approved_at=approved,
                success_count=lesson.get("success_count", 0),
                attempt_count=lesson.get("attempt_count", 0),
                findings=tuple(dict.fromkeys((*lesson.get("findings", ()), *verdict.findings))),
            )
        )
        approvals.append(who)
        resident.append(lesson.get("resident", 1) if verified else 1)
        if lesson.get("superseded_by") in ids:
            lineage[lesson["id"]] = lesson["superseded_by"]
        audits += [(lesson["id"], a["who"], a["at"], a.get("from"), a.get("to"), a.get("reason", "")) for a in audit]
        audits.append(
            (
                lesson["id"],
                "import",
                now,
                None,
                status,
                f"imported from {path.name}: "
                + (
                    "export MAC verified, status kept"
                    if verified
                    else "export MAC did not verify under this key: waiting for review"
                ),
            )
        )
    new = store._imported_rows(deltas, approvals, resident=resident)
    store._import_deltas(new, mint(new.rows, validated=True), lineage, audits)
    return ImportReport(str(path), tuple(kept), tuple(review), tuple(skipped))
