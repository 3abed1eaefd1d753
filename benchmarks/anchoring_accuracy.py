"""How often `overlay_kit.anchoring.propose` puts a lesson in the section a person chose.

Two labelled sets:

- real additions: every rule event (`overlay_kit.mine.RuleEvent`) of the 54 histories of
  `datasets/histories/manifest.csv`, mined from local bare mirrors (`--mirrors`, default /work/.mirror). The input
  is the rule's text only (a real addition has no goal or turn that taught it); the candidates are the sections of
  the file's version before the addition; the label is the section the person put it in (its slug in the new
  version mapped back through the pair's section decision). Only files with >= 2 candidate sections count.
- the lessons dataset (`datasets/lessons/lessons.csv`): each lesson's text (and its trigger as the goal) against
  its skill's sections; the label is its `section`.

The repositories are split dev / held-out by `datasets/histories/anchoring_split.csv` (committed before any
tuning). `--tune` searches the weights and the threshold on dev only; the default run reports once on both splits
and writes text-free figures to `datasets/histories/anchoring_results.json`.

    .venv/bin/python benchmarks/anchoring_accuracy.py [--mirrors DIR] [--tune] [--write]
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import json
import pickle
import platform
import subprocess
import sys
from collections import Counter
from pathlib import Path

from mined_cache import SPLIT, mined, split

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "datasets/histories/anchoring_results.json"
CACHE = Path.home() / ".cache/overlay_kit/anchoring_events.pkl"  # texts: local only, never committed


def extract_repo(repo: str, commit: str, mirrors: Path) -> list[dict]:
    """One row per rule event of `repo`: {repo, file, text, sections (the old version's), label (old slug)}."""
    from overlay_kit import mine

    path = mirrors / repo.replace("/", "+", 1) / "repo"
    result = mine.mine_repository(path, rev=commit, label=repo)
    files = {f.id: f for f in result.files}
    pairs = {(p.file, p.new): p for p in result.pairs}
    rows = []
    for e in result.events:
        pair = pairs.get((e.file, e.version))
        if pair is None or e.version == 0:
            continue
        old = [c.section for c in pair.sections if c.target == e.section]
        if len(old) != 1:
            continue
        rows.append(
            {
                "repo": repo,
                "file": e.file,
                "event": e.id,
                "text": e.text,
                "sections": files[e.file].versions[e.version - 1].sections,
                "label": old[0],
            }
        )
    return rows


def extract(mirrors: Path) -> list[dict]:
    return mined(CACHE, lambda repo, commit: extract_repo(repo, commit, mirrors))


if __name__ == "__main__" and "--extract-only" in sys.argv:
    extract(Path("/work/.mirror"))


PARTS_CACHE = Path.home() / ".cache/overlay_kit/anchoring_parts.pkl"  # derived from texts: local only


def real_cases(mirrors: Path) -> tuple[list[dict], dict]:
    """The informative events with their candidates' parts: {repo, file, slugs, parts, label}; and what was left
    out, counted."""
    from overlay_kit.anchoring import candidates, parts

    if PARTS_CACHE.exists():
        return pickle.loads(PARTS_CACHE.read_bytes())
    rows = extract(mirrors)
    cases, left = [], Counter()
    for r in rows:
        cands = candidates(r["sections"])
        slugs = [s.slug for s in cands]
        if len(cands) < 2:
            left["fewer than 2 candidate sections"] += 1
            continue
        if r["label"] not in slugs:
            left["label not a candidate (an empty preamble)"] += 1
            continue
        cases.append(
            {
                "repo": r["repo"],
                "file": r["file"],
                "slugs": slugs,
                "label": r["label"],
                "parts": parts(r["sections"], r["text"]),
            }
        )
    out = (cases, {"events": len(rows), "left_out": dict(left)})
    PARTS_CACHE.write_bytes(pickle.dumps(out))
    return out


def lesson_cases() -> list[dict]:
    """The lessons dataset: each lesson's text against its skill's sections; label its `section`."""
    from overlay_kit.anchoring import candidates, parts
    from overlay_kit.skill import load_skill

    skills = {}
    cases = []
    with open(ROOT / "datasets/lessons/lessons.csv", newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            name = r["skill"]
            if name not in skills:
                where = ROOT / "datasets/lessons/skills" / name
                skills[name] = load_skill(where if where.is_dir() else ROOT / "datasets/skills" / name)
            sections = parse_cached(skills[name].body)
            slugs = [s.slug for s in candidates(sections)]
            cases.append(
                {
                    "repo": name,
                    "split": r["split"],
                    "slugs": slugs,
                    "label": r["section"],
                    "parts": parts(sections, r["text"]),
                }
            )
    return cases


_PARSED: dict = {}


def parse_cached(body: str):
    from overlay_kit.anchor import parse

    if body not in _PARSED:
        _PARSED[body] = parse(body)
    return _PARSED[body]


def judge(cases: list[dict], weights: dict, threshold: float) -> list[dict]:
    """Per case: rank of the label (1-based) and the proposal's confidence."""
    from overlay_kit.anchoring import _rank

    out = []
    for c in cases:
        p = _rank(c["slugs"], c["parts"], weights, len(c["slugs"]), threshold)
        rank = 1 + [s for s, _ in p.alternatives].index(c["label"])
        out.append({"repo": c["repo"], "rank": rank, "confidence": p.confidence})
    return out


def tune(dev: list[dict]) -> tuple[dict, float, list]:
    """The weights with the best top-1 (then top-3) on dev, and the smallest threshold whose confident
    proposals are right at least TARGET of the time on dev."""
    import itertools

    grid = [0.0, 0.5, 1.0, 2.0]
    best = None
    for lex in (0.0, 1.0):
        for body, head, near, size in itertools.product(grid, grid, grid, grid):
            if lex == body == head == near == 0:
                continue
            w = {"lexical": lex, "body": body, "heading": head, "nearest": near, "size": size}
            j = judge(dev, w, 0.0)
            key = (sum(r["rank"] == 1 for r in j), sum(r["rank"] <= 3 for r in j))
            if best is None or key > best[0]:
                best = (key, w, j)
    _, weights, j = best
    return weights, threshold_for(j), j


TARGET = 0.95  # the accuracy a confident proposal must have on dev


def threshold_for(j: list[dict]) -> float:
    """The smallest confidence t (to 0.01) at which proposals with confidence >= t are right >= TARGET on dev."""
    for t in [x / 100 for x in range(0, 101)]:
        kept = [r for r in j if r["confidence"] >= t]
        if kept and sum(r["rank"] == 1 for r in kept) / len(kept) >= TARGET:
            return t
    return 1.0


def figures(j: list[dict], threshold: float) -> dict:
    """top-1, top-3 with cluster-bootstrap intervals over repositories; n; the confident share and its accuracy."""
    import numpy as np

    from overlay_kit.metrics import bootstrap_ci

    repos = sorted({r["repo"] for r in j})
    per = {rp: [r for r in j if r["repo"] == rp] for rp in repos}
    n = np.array([len(per[rp]) for rp in repos], float)

    def ratio(num, den, axis=-1):
        return num.sum(axis=axis) / np.maximum(den.sum(axis=axis), 1)

    out = {"n_events": len(j), "n_repositories": len(repos)}
    for name, hit in (("top1", lambda r: r["rank"] == 1), ("top3", lambda r: r["rank"] <= 3)):
        k = np.array([sum(map(hit, per[rp])) for rp in repos], float)
        ci = bootstrap_ci(k, n, statistic=ratio)
        out[name] = {"estimate": round(ci.estimate, 4), "low": round(ci.low, 4), "high": round(ci.high, 4)}
    conf = [r for r in j if r["confidence"] >= threshold]
    out["confident_share"] = round(len(conf) / len(j), 4) if j else None
    out["confident_top1"] = round(sum(r["rank"] == 1 for r in conf) / len(conf), 4) if conf else None
    out["per_repository"] = {
        rp: {
            "n": len(per[rp]),
            "top1": sum(r["rank"] == 1 for r in per[rp]),
            "top3": sum(r["rank"] <= 3 for r in per[rp]),
            "confident": sum(r["confidence"] >= threshold for r in per[rp]),
        }
        for rp in repos
    }
    return out


def main(argv=None) -> int:
    from overlay_kit.anchoring import WEIGHTS
    from overlay_kit.defaults import SHIPPED

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--tune", action="store_true", help="search weights and threshold on dev only, print them")
    ap.add_argument("--write", action="store_true", help="write the results file")
    args = ap.parse_args(argv)
    which = split()
    cases, counts = real_cases(Path(args.mirrors))
    dev = [c for c in cases if which[c["repo"]] == "dev"]
    held = [c for c in cases if which[c["repo"]] == "heldout"]
    if args.tune:
        weights, threshold, j = tune(dev)
        print(json.dumps({"weights": weights, "threshold": threshold, "dev": figures(j, threshold)}, indent=1))
        return 0
    weights, threshold = dict(WEIGHTS), SHIPPED.anchor_confidence
    lessons = lesson_cases()
    files = {c["file"] for c in cases}
    result = {
        "what": "anchoring.propose on real instruction-file additions (rule text only: no goal or turn exists) "
        "and on datasets/lessons; text-free",
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "machine": f"{platform.machine()} {platform.system()} python {platform.python_version()}",
        "split": {
            "file": SPLIT.name,
            "sha256": hashlib.sha256(SPLIT.read_bytes()).hexdigest(),
            "dev": sorted(r for r, s in which.items() if s == "dev"),
            "heldout": sorted(r for r, s in which.items() if s == "heldout"),
        },
        "weights": weights,
        "threshold": threshold,
        "target_confident_accuracy": TARGET,
        "events": counts["events"],
        "left_out": counts["left_out"],
        "informative_files": len(files),
        "informative_events": len(cases),
        "dev": figures(judge(dev, weights, threshold), threshold),
        "heldout": figures(judge(held, weights, threshold), threshold),
        "lessons": figures(judge(lessons, weights, threshold), threshold),
        "lessons_test": figures(judge([c for c in lessons if c["split"] == "test"], weights, threshold), threshold),
    }
    summary = {k: result[k] for k in ("dev", "heldout", "lessons", "lessons_test")}
    print(
        json.dumps(
            {
                k: {m: v[m] for m in ("n_events", "top1", "top3", "confident_share", "confident_top1")}
                for k, v in summary.items()
            },
            indent=1,
        )
    )
    if args.write:
        RESULTS.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__" and "--extract-only" not in sys.argv:
    sys.exit(main())
