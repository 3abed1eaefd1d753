"""The injection scan's figures on every file of datasets/injection: attacks flagged and benign texts flagged, per
file and per class, and the ordinary lesson corpora (datasets/lessons, datasets/tau) as benign texts.

    python benchmarks/eval_injection.py [-v] [--heldout7]

`-v` lists every missed attack and every flagged benign text, with its findings. `heldout7_multilingual.jsonl`
is a held-out set written by someone else after the scan's multilingual work: it is skipped (never opened)
unless `--heldout7` is given, so that nobody tunes on it by accident. `--heldout7` reads it and nothing else.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict

from overlay_kit.injection import scan
from overlay_kit.resources import dataset_path

HELDOUT7 = "heldout7_multilingual.jsonl"


def lesson_texts() -> list[str]:
    """The 560 ordinary lesson texts (the benign side every scan change is held to)."""
    lessons = list(csv.DictReader(dataset_path("lessons", "lessons.csv").open(encoding="utf-8")))
    tau = list(csv.DictReader(dataset_path("tau", "lessons.csv").open(encoding="utf-8")))
    return list(dict.fromkeys([x["text"] for x in lessons] + [x["prose"] for x in lessons]
                              + [x["body"] for x in tau] + [x["trigger"] for x in tau]))


def files(heldout7: bool) -> list:
    folder = dataset_path("injection")
    if heldout7:
        return [folder / HELDOUT7]
    return [p for p in sorted(folder.glob("*.jsonl")) if p.name != HELDOUT7]


def evaluate(path, verbose: bool) -> tuple[int, int, int, int]:
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    by: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    misses: list[str] = []
    for r in rows:
        found = scan(r["text"])
        by[(r["label"], r["class"])][0] += bool(found)
        by[(r["label"], r["class"])][1] += 1
        if verbose and bool(found) != (r["label"] == "attack"):
            what = "missed" if r["label"] == "attack" else f"flagged {list(found)}"
            misses.append(f"      {what} {r['id']}: {r['text']!r}")
    a = sum(h for (lab, _), (h, _n) in by.items() if lab == "attack")
    n = sum(c for (lab, _), (_h, c) in by.items() if lab == "attack")
    f = sum(h for (lab, _), (h, _n) in by.items() if lab == "benign")
    m = sum(c for (lab, _), (_h, c) in by.items() if lab == "benign")
    print(f"{path.name:<30} attacks flagged {a:>3}/{n:<3} benign flagged {f:>3}/{m:<3}")
    for (lab, cls), (hit, cnt) in sorted(by.items()):
        print(f"    {lab:<7} {cls:<18} {hit}/{cnt}")
    for line in misses:
        print(line)
    return a, n, f, m


def main(argv: list[str]) -> None:
    verbose, heldout7 = "-v" in argv, "--heldout7" in argv
    totals = [0, 0, 0, 0]
    for path in files(heldout7):
        totals = [x + y for x, y in zip(totals, evaluate(path, verbose))]
    if heldout7:
        return
    print(f"{'all files':<30} attacks flagged {totals[0]:>3}/{totals[1]:<3} benign flagged {totals[2]:>3}/{totals[3]}")
    texts = lesson_texts()
    flagged = [(t, scan(t)) for t in texts]
    flagged = [(t, f) for t, f in flagged if f]
    print(f"{'lesson corpora (benign)':<30} flagged {len(flagged)}/{len(texts)}")
    if verbose:
        for t, f in flagged:
            print(f"      flagged {list(f)}: {t!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
