#!/usr/bin/env python3
"""Extract the version history of every SKILL.md in a git repository as JSONL.

    python scripts/extract_skill_history.py REPO [--out FILE] [--pattern GLOB] [--label NAME]

One record per SKILL.md path the history ever held (renames followed; a skill deleted before HEAD is
included with `"deleted": true`), oldest version first:

    {"repo": "...", "path": "skills/x/SKILL.md", "deleted": false,
     "versions": [{"commit": "<sha>", "date": "<ISO-8601 UTC>", "text": "<file at that commit>"}, ...],
     "missing": ["<sha>", ...]}

Consecutive identical versions are dropped. A version whose blob is missing (a shallow or partial clone)
is listed under `missing` and skipped; a path whose log cannot be read at all is reported on stderr and
skipped — the run goes on. Read the result with `overlay_kit.studies.sim.load_histories`.
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


def skill_paths(repo: Path, pattern: str) -> tuple[list[str], set[str]]:
    """Every SKILL.md path at HEAD, plus every one a commit deleted (a rename is followed from its new path)."""
    head = {f for f in git(repo, "ls-files", "-z").split("\0") if f}
    ever = {f for f in git(repo, "log", "--all", "-M", "--format=", "--name-only", "--diff-filter=D",
                           "-z").split("\0") if f.strip()}
    every = {f.strip() for f in head | ever}
    keep = sorted(f for f in every if Path(f).name == "SKILL.md" and fnmatch.fnmatch(f, pattern))
    return keep, {f for f in keep if f not in head}


def history(repo: Path, path: str, *, deleted: bool = False) -> tuple[list[dict], list[str]]:
    """Versions of one file, oldest first, following renames; and the commits whose blob is missing."""
    fmt = ("--format=%x00%H %cI", "--name-only")
    try:  # --follow needs the blobs to detect renames; without them, the plain path history
        log = git(repo, "log", *(("--all",) if deleted else ()), "--follow", *fmt, "--", path)
    except subprocess.CalledProcessError:
        log = git(repo, "log", *(("--all",) if deleted else ()), *fmt, "--", path)
    versions, seen, missing = [], None, []
    for chunk in reversed([c for c in log.split("\0") if c.strip()]):
        head, *names = chunk.strip().splitlines()
        commit, date = head.split(" ", 1)
        name = next((n for n in names if n.strip()), path)
        try:
            text = git(repo, "show", f"{commit}:{name}")
        except subprocess.CalledProcessError as exc:
            if b"does not exist" not in (exc.stderr or b"") and b"exists on disk, but not in" not in (exc.stderr or b""):
                missing.append(commit)  # the blob is not in this clone
            continue  # else: deleted in this commit, not a version of the skill
        if text == seen:
            continue
        when = datetime.fromisoformat(date).astimezone(timezone.utc).isoformat()
        versions.append({"commit": commit, "date": when, "text": text})
        seen = text
    return versions, missing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="a local git repository")
    ap.add_argument("--out", type=Path, help="JSONL file to write (default: stdout)")
    ap.add_argument("--pattern", default="*", help="glob the SKILL.md paths must match (default: all)")
    ap.add_argument("--label", help="the `repo` value written (default: the repository directory name)")
    args = ap.parse_args(argv)
    try:
        paths, deleted = skill_paths(args.repo, args.pattern)
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        err = getattr(exc, "stderr", b"") or b""
        print(f"extract_skill_history: {args.repo}: {err.decode(errors='replace').strip() or exc}", file=sys.stderr)
        return 1
    records = []
    for p in paths:
        try:
            versions, missing = history(args.repo, p, deleted=p in deleted)
        except subprocess.CalledProcessError as exc:
            print(f"extract_skill_history: {p}: skipped ({(exc.stderr or b'').decode(errors='replace').strip()})",
                  file=sys.stderr)
            continue
        records.append({"repo": args.label or args.repo.resolve().name, "path": p, "deleted": p in deleted,
                        "versions": versions, "missing": missing})
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
