#!/usr/bin/env python3
"""Extract the version history of every SKILL.md in a git repository as JSONL.

    python scripts/extract_skill_history.py REPO [--out FILE] [--pattern GLOB] [--label NAME]

A thin shell over `overlay_kit.mine.read_versions` (the reader `overlay-kit mine` uses: one `git log
--first-parent -M` pass over HEAD, blobs through `git cat-file --batch`; bare repositories too). One record per
SKILL.md path the history ever held (renames followed; a skill deleted before HEAD is included with
`"deleted": true`), oldest version first, sorted by path:

    {"repo": "...", "path": "skills/x/SKILL.md", "deleted": false,
     "versions": [{"commit": "<sha>", "date": "<ISO-8601 UTC>", "text": "<file at that commit>"}, ...],
     "missing": ["<sha>", ...]}

Consecutive identical versions are dropped. A version whose blob is missing (a shallow or partial clone)
is listed under `missing` and skipped; a version that is not UTF-8, over the size cap or that the anchorer
refuses is skipped and counted on stderr — the run goes on. Read the result with
`overlay_kit.studies.sim.load_histories`. Only local git is used; nothing is fetched.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

from overlay_kit.mine import MineError, read_versions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="a local git repository")
    ap.add_argument("--out", type=Path, help="JSONL file to write (default: stdout)")
    ap.add_argument("--pattern", default="*", help="glob the SKILL.md paths must match (default: all)")
    ap.add_argument("--label", help="the `repo` value written (default: the repository directory name)")
    args = ap.parse_args(argv)
    try:
        read = read_versions(args.repo, patterns=("SKILL.md",), label=args.label or args.repo.resolve().name)
    except MineError as exc:
        print(f"extract_skill_history: {exc}", file=sys.stderr)
        return 1
    records = [
        {
            "repo": f.repo,
            "path": f.path,
            "deleted": f.deleted,
            "versions": [{"commit": v.commit, "date": v.date, "text": v.text} for v in f.versions],
            "missing": list(f.missing),
        }
        for f in sorted(read.files, key=lambda f: f.path)
        if fnmatch.fnmatch(f.path, args.pattern)
    ]
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    try:
        for r in records:
            out.write(json.dumps(r, ensure_ascii=False) + "\n")
    finally:
        if args.out:
            out.close()
    for note, n in sorted(read.notes.items()):
        print(f"extract_skill_history: {note}: {n}", file=sys.stderr)
    print(f"{len(records)} skill(s), {sum(len(r['versions']) for r in records)} version(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
