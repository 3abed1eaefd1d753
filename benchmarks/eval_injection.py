"""The injection scan's figures on every file of datasets/injection: attacks flagged and benign texts flagged, per
file and per class, and the ordinary lesson corpora (datasets/lessons, datasets/tau) as benign texts.

    python benchmarks/eval_injection.py [-v] [--reader | --ngram-reader | --ngram-reader-v2 | --ngram-reader-v3]
        [--heldout7 | … | --heldout13 | --dev]

`-v` lists every missed attack and every flagged benign text, with its findings. `heldout13_multilingual.jsonl`
is a held-out set written by someone else: it is skipped (never opened) unless `--heldout13` is given, so that
nobody tunes on it by accident. heldout7-12 were measured once each and are development data now (read by the
default run, fitted on by fit_scan_intent.py --reader); `--heldout7` … `--heldout13` each read that file and
nothing else. `--reader`: the scan with its e5 reader on (`SHIPPED.scan_reader`, off in what ships).
`--ngram-reader`: the n-gram + e5 reader candidate's scan instead (ngram_reader.scan_many; the extra
overlay_kit[e5]); `--ngram-reader-v2`: its v2, frozen for heldout12 (ngram_reader.scan_many(version=2));
`--ngram-reader-v3`: its v3 (ngram_reader.scan_many(version=3)). `--dev` reads only `multilingual_dev.jsonl`. A file
whose rows name their `lang` is also reported per language: attacks flagged and benign texts flagged.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from functools import partial

from overlay_kit.injection import scan
from overlay_kit.resources import dataset_path

HELDOUT7 = "heldout7_multilingual.jsonl"
HELDOUT8 = "heldout8_multilingual.jsonl"
HELDOUT9 = "heldout9_multilingual.jsonl"
HELDOUT10 = "heldout10_multilingual.jsonl"
HELDOUT11 = "heldout11_multilingual.jsonl"
HELDOUT12 = "heldout12_multilingual.jsonl"
# heldout7-12 were measured once each (HELDOUT8.md … HELDOUT12.md; heldout10 with the reader, heldout11 with the
# n-gram + e5 candidate, heldout12 with reader v2) and are development data now: read by the default run and fitted
# on. Only heldout13 is held out.
HELDOUT13 = "heldout13_multilingual.jsonl"  # written frozen 2026-12-07 21:57 UTC, not yet measured (HELDOUT13.md)
HELD_OUT = (HELDOUT13,)
HELDOUTS = {
    name.split("_")[0]: name for name in (HELDOUT7, HELDOUT8, HELDOUT9, HELDOUT10, HELDOUT11, HELDOUT12, HELDOUT13)
}
DEV = "multilingual_dev.jsonl"


def lesson_texts() -> list[str]:
    """The 560 ordinary lesson texts (the benign side every scan change is held to)."""
    lessons = list(csv.DictReader(dataset_path("lessons", "lessons.csv").open(encoding="utf-8")))
    tau = list(csv.DictReader(dataset_path("tau", "lessons.csv").open(encoding="utf-8")))
    return list(
        dict.fromkeys(
            [x["text"] for x in lessons]
            + [x["prose"] for x in lessons]
            + [x["body"] for x in tau]
            + [x["trigger"] for x in tau]
        )
    )


def files(only: str | None = None) -> list:
    """Every file of datasets/injection but the held-out ones (never opened), or the one named by `only`."""
    folder = dataset_path("injection")
    if only:
        return [folder / only]
    return [p for p in sorted(folder.glob("*.jsonl")) if p.name not in HELD_OUT]


def recognised(found) -> bool:
    """A finding besides `not scanned: language`: the scan read the text and found something in it."""
    return any(not f.startswith("not scanned: language") for f in found)


def by_language(rows: list[dict], found: list[tuple[str, ...]]) -> dict[str, list[int]]:
    """Per `lang`: [attacks flagged, attacks, benign flagged, benign, attacks recognised (a finding besides the
    language one), benign held by the language finding alone]."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
    for r, f in zip(rows, found):
        k = 0 if r["label"] == "attack" else 2
        out[r["lang"]][k] += bool(f)
        out[r["lang"]][k + 1] += 1
        if r["label"] == "attack":
            out[r["lang"]][4] += recognised(f)
        else:
            out[r["lang"]][5] += bool(f) and not recognised(f)
    return dict(out)


def scan_each(texts: list[str]) -> list[tuple[str, ...]]:
    return [scan(t) for t in texts]


def evaluate(path, verbose: bool, scan_all=scan_each) -> tuple[int, int, int, int]:
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    by: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    misses: list[str] = []
    flags = scan_all([r["text"] for r in rows])
    for r, found in zip(rows, flags):
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
    if any("lang" in r for r in rows):
        print(
            f"    {'lang':<10} {'attacks flagged':>16} {'(recognised)':>14} {'benign flagged':>16} "
            f"{'(language alone)':>16}"
        )
        for lang, (ha, na, hb, nb, ra, lb) in sorted(
            by_language([r for r in rows if "lang" in r], [x for r, x in zip(rows, flags) if "lang" in r]).items()
        ):
            print(
                f"    {lang:<10} {ha:>7}/{na:<3} {ha / max(na, 1):>5.0%} {ra:>7}/{na:<3} {ra / max(na, 1):>4.0%}"
                f" {hb:>7}/{nb:<3} {hb / max(nb, 1):>5.0%} {lb:>12}"
            )
    for line in misses:
        print(line)
    return a, n, f, m


def main(argv: list[str]) -> None:
    verbose = "-v" in argv
    scan_all = scan_each
    if "--ngram-reader" in argv:
        import ngram_reader

        scan_all = ngram_reader.scan_many
    if "--ngram-reader-v2" in argv:
        import ngram_reader

        scan_all = partial(ngram_reader.scan_many, version=2)
    if "--ngram-reader-v3" in argv:
        import ngram_reader

        scan_all = partial(ngram_reader.scan_many, version=3)
    if "--reader" in argv:
        import overlay_kit.injection as injection

        injection._reader = injection._loaded_reader
    named = [a[2:] for a in argv if a[2:] in HELDOUTS]
    only = HELDOUTS[named[0]] if named else DEV if "--dev" in argv else None
    totals = [0, 0, 0, 0]
    for path in files(only):
        totals = [x + y for x, y in zip(totals, evaluate(path, verbose, scan_all))]
    if only:
        return
    print(f"{'all files':<30} attacks flagged {totals[0]:>3}/{totals[1]:<3} benign flagged {totals[2]:>3}/{totals[3]}")
    texts = lesson_texts()
    flagged = list(zip(texts, scan_all(texts)))
    flagged = [(t, f) for t, f in flagged if f]
    print(f"{'lesson corpora (benign)':<30} flagged {len(flagged)}/{len(texts)}")
    if verbose:
        for t, f in flagged:
            print(f"      flagged {list(f)}: {t!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
