#!/usr/bin/env python3
"""Expand datasets/tau/source.yaml into the τ-study corpus: lessons.csv and pairs.csv.

Deterministic: slot fills are seeded per goal (sha256 of lesson id + template), cross-domain goals and
the calibration/test split are seeded per lesson and per domain, so editing one lesson changes only
its own rows. Usage:

    python scripts/make_tau_corpus.py                 # rewrite datasets/tau/{lessons,pairs}.csv
    python scripts/make_tau_corpus.py --out /tmp/x    # write elsewhere (the test regenerates and diffs)
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import random
import string
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
AUTHORED = ("paraphrase", "near_miss", "lexical_overlap", "adversarial")
CROSS_DOMAIN_PER_LESSON = 4
MAX_BODY_CHARS = 400  # a tier-3 preference body (grammar: body <= 400)
PAIR_COLUMNS = ("pair_id", "split", "category", "domain", "lesson_id", "relevant", "goal", "trigger")
LESSON_COLUMNS = ("lesson_id", "domain", "skill", "section", "split", "trigger", "body")


class CorpusError(ValueError):
    pass


def _rng(*key: object) -> random.Random:
    digest = hashlib.sha256("\x1f".join(map(str, key)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _fill(template: str, slots: dict, seed: int, lesson_id: str) -> str:
    rng = _rng(seed, lesson_id, template)
    names = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    unknown = sorted(set(names) - set(slots))
    if unknown:
        raise CorpusError(f"lesson {lesson_id}: unknown slot(s) {unknown} in goal {template!r}")
    return template.format(**{name: rng.choice(slots[name]) for name in set(names)})


def build(source: Path, seed: int) -> tuple[list[dict], list[dict]]:
    doc = yaml.safe_load(source.read_text(encoding="utf-8"))
    slots, lessons = doc.get("slots", {}), doc["lessons"]
    ids = [lesson["id"] for lesson in lessons]
    if len(set(ids)) != len(ids):
        raise CorpusError(f"{source}: duplicate lesson ids")

    # Calibration/test split grouped by lesson, balanced within each domain: every lesson carries the same
    # category mix, so the split is stratified by category too, and the test half holds unseen lessons.
    split = {}
    for domain in sorted({lesson["domain"] for lesson in lessons}):
        members = sorted(lesson["id"] for lesson in lessons if lesson["domain"] == domain)
        _rng(seed, "split", domain).shuffle(members)
        half = len(members) // 2
        split.update({lid: ("calibration" if k < half else "test") for k, lid in enumerate(members)})

    lesson_rows, authored, seen = [], {}, {}
    for lesson in lessons:
        lid = lesson["id"]
        body = " ".join(lesson["body"].split())
        if len(body) > MAX_BODY_CHARS:
            raise CorpusError(f"lesson {lid}: body is {len(body)} chars (max {MAX_BODY_CHARS})")
        lesson_rows.append(
            {
                "lesson_id": lid,
                "domain": lesson["domain"],
                "skill": lesson["skill"],
                "section": lesson["section"],
                "split": split[lid],
                "trigger": lesson["trigger"].strip(),
                "body": body,
            }
        )
        for category in AUTHORED:
            goals = [_fill(t, slots, seed, lid) for t in lesson.get(category) or []]
            if not goals:
                raise CorpusError(f"lesson {lid}: no {category} goals")
            for goal in goals:
                if goal.casefold() in seen:
                    raise CorpusError(f"lesson {lid}: goal {goal!r} duplicates one of {seen[goal.casefold()]}")
                seen[goal.casefold()] = lid
            authored[lid, category] = goals

    pairs = []
    for row in lesson_rows:
        lid = row["lesson_id"]

        def add(category: str, k: int, goal: str, relevant: bool) -> None:
            pairs.append(
                {
                    "pair_id": f"{lid}:{category}:{k}",
                    "split": row["split"],
                    "category": category,
                    "domain": row["domain"],
                    "lesson_id": lid,
                    "relevant": int(relevant),
                    "goal": goal,
                    "trigger": row["trigger"],
                }
            )

        for category in AUTHORED:
            for k, goal in enumerate(authored[lid, category]):
                add(category, k, goal, category == "paraphrase")
        # cross-domain: one paraphrase goal from each of CROSS_DOMAIN_PER_LESSON other domains
        rng = _rng(seed, "cross", lid)
        others = sorted({r["domain"] for r in lesson_rows} - {row["domain"]})
        for k, domain in enumerate(rng.sample(others, CROSS_DOMAIN_PER_LESSON)):
            donor = rng.choice(sorted(r["lesson_id"] for r in lesson_rows if r["domain"] == domain))
            add("cross_domain", k, rng.choice(authored[donor, "paraphrase"]), False)
    return lesson_rows, pairs


def _write(path: Path, columns: tuple[str, ...], rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT / "datasets" / "tau" / "source.yaml")
    parser.add_argument("--out", type=Path, default=ROOT / "datasets" / "tau")
    parser.add_argument("--seed", type=int, default=6)
    args = parser.parse_args(argv)
    try:
        lessons, pairs = build(args.source, args.seed)
    except CorpusError as exc:
        print(f"make_tau_corpus: error: {exc}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    _write(args.out / "lessons.csv", LESSON_COLUMNS, lessons)
    _write(args.out / "pairs.csv", PAIR_COLUMNS, pairs)
    print(f"{len(lessons)} lessons, {len(pairs)} pairs -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
