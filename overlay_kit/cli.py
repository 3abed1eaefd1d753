"""The `overlay-kit` command: a thin shell over the public API, one subcommand per verb.

Each subcommand is a `register_*` function adding its parser and a handler `(args) -> exit code`.
`--json` output is stable and documented in the README. Errors print one line to stderr and exit 1
(2 for usage errors, which argparse reports itself).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from . import anchor as anchor_mod
from .skill import SkillError, check_skill, find_skill

Handler = Callable[[argparse.Namespace], int]


def _emit_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, sort_keys=False)
    sys.stdout.write("\n")


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
        report.append({"path": path, "ok": not errors,
                       "errors": [{"line": e.line, "field": e.field, "message": e.message} for e in errors]})
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
    p.set_defaults(handler=cmd_anchors)


def section_rows(skill) -> list[dict]:
    """Sections with file line numbers (body lines shifted past the frontmatter)."""
    shift = skill.body_start_line - 1
    return [{"slug": s.slug, "heading": s.heading, "level": s.level, "digest": s.digest,
             "start_line": s.start_line + shift, "end_line": s.end_line + shift}
            for s in anchor_mod.parse(skill.body)]


def cmd_anchors(args: argparse.Namespace) -> int:
    skill = find_skill(args.path)
    rows = section_rows(skill)
    if args.json:
        _emit_json({"skill": skill.name, "path": str(skill.path), "sections": rows})
        return 0
    width = max(len(r["slug"]) for r in rows)
    for r in rows:
        print(f"{r['slug']:<{width}}  L{r['level']}  {r['digest']}  {r['start_line']:>5}-{r['end_line']:<5}"
              f"  {r['heading']}")
    return 0


# ---------------------------------------------------------------------------------------------- main

REGISTRARS: list[Callable] = [register_validate, register_anchors]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="overlay-kit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in REGISTRARS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (SkillError, KeyError, ValueError, OSError) as exc:
        print(f"overlay-kit {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
