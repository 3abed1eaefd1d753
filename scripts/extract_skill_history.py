#!/usr/bin/env python3
"""Extract the version history of every SKILL.md in a git repository as JSONL.

    python scripts/extract_skill_history.py REPO [--out FILE] [--pattern GLOB] [--label NAME]

One record per SKILL.md path present at HEAD (renames followed), oldest version first:

    {"repo": "...", "path": "skills/x/SKILL.md",
     "versions": [{"commit": "<sha>", "date": "<ISO-8601 UTC>", "text": "<file at that commit>"}, ...]}

Consecutive identical versions are dropped. Read the result with `overlay_kit.studies.sim.load_histories`.
Only local git is used; nothing is fetched.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return out.stdout.decode("utf-8", errors="replace")


def skill_paths(repo: Path, pattern: str) -> list[str]:
    files = git(repo, "ls-files", "-z").split("\0")
    return sorted(f for f in files if f and (Path(f).name == "SKILL.md") and fnmatch.fnmatch(f, pattern))


def history(repo: Path, path: str) -> list[dict]:
    """Versions of one file, oldest first, following renames."""
    log = git(repo, "log", "--follow", "--format=%x00%H %cI", "--name-only", "--", path)
    versions, seen = [], None
    for chunk in reversed([c for c in log.split("\0") if c.strip()]):
        head, *names = chunk.strip().splitlines()
        commit, date = head.split(" ", 1)
        name = next((n for n in names if n.strip()), path)
        try:
            text = git(repo, "show", f"{commit}:{name}")
        except subprocess.CalledProcessError:  # deleted in this commit: not a version of the skill
            continue
        if text == seen:
            continue
        when = datetime.fromisoformat(date).astimezone(timezone.utc).isoformat()
        versions.append({"commit": commit, "date": when, "text": text})
        seen = text
    return versions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="a local git repository")
    ap.add_argument("--out", type=Path, help="JSONL file to write (default: stdout)")
    ap.add_argument("--pattern", default="*", help="glob the SKILL.md paths must match (default: all)")
    ap.add_argument("--label", help="the `repo` value written (default: the repository directory name)")
    args = ap.parse_args(argv)
    try:
        paths = skill_paths(args.repo, args.pattern)
        records = [{"repo": args.label or args.repo.resolve().name, "path": p, "versions": history(args.repo, p)}
                   for p in paths]
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        err = getattr(exc, "stderr", b"") or b""
        print(f"extract_skill_history: {args.repo}: {err.decode(errors='replace').strip() or exc}", file=sys.stderr)
        return 1
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    try:
        for r in records:
            out.write(json.dumps(r, ensure_ascii=False) + "\n")
    finally:
        if args.out:
            out.close()
    print(f"{len(records)} skill(s), {sum(len(r['versions']) for r in records)} version(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
