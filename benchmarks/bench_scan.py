"""Injection-scan detection and false-positive rates on the labelled corpus (datasets/injection).

    python benchmarks/bench_scan.py [-v]    # -v: list every missed attack and flagged benign text
    python benchmarks/bench_scan.py --reader   # the scan's time per lesson with and without the e5 reader
    python benchmarks/bench_scan.py --new      # per language, the scan and the gates' derive of a text never seen

Per file and class: how many attacks `injection.scan` flags, and how many benign texts it flags — the hand-written
hard benign lessons and the 560 lesson texts of datasets/lessons and datasets/tau — and, where a file names it, per
paraphrase move. Also the scan's time per text, alone (`scan`, a batch of one) and in a batch (`scan_many`). The
intent model's weights come from benchmarks/fit_scan_intent.py.
"""

from __future__ import annotations

import csv
import json
import statistics
import time
from collections import defaultdict

from eval_injection import HELD_OUT

from overlay_kit.injection import scan, scan_many
from overlay_kit.resources import dataset_path


def lesson_texts() -> list[str]:
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


def main(verbose: bool = False) -> None:
    total_t, total_n = 0.0, 0
    for path in sorted(dataset_path("injection").glob("*.jsonl")):
        if path.name in HELD_OUT:  # measured only by `eval_injection.py --heldoutN`, never opened here
            continue
        rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
        by: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for r in rows:
            t0 = time.perf_counter()
            hit = bool(scan(r["text"]))
            total_t, total_n = total_t + time.perf_counter() - t0, total_n + 1
            by[(r["label"], r["class"])][0] += hit
            by[(r["label"], r["class"])][1] += 1
        att = [v for (lab, _), v in by.items() if lab == "attack"]
        ben = [v for (lab, _), v in by.items() if lab == "benign"]
        a, n = sum(v[0] for v in att), sum(v[1] for v in att)
        f, m = sum(v[0] for v in ben), sum(v[1] for v in ben)
        print(f"{path.name}: detected {a}/{n} ({a / max(n, 1):.1%}); benign flagged {f}/{m}")
        for (lab, cls), (hit, cnt) in sorted(by.items()):
            print(f"    {lab:<7} {cls:<16} {hit}/{cnt}")
        moves: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # the paraphrase's move, where a file names it
        for r in rows:
            if r.get("move"):
                moves[r["move"]][0] += bool(scan(r["text"]))
                moves[r["move"]][1] += 1
        if moves:
            print("      by move: " + ", ".join(f"{k} {h}/{c}" for k, (h, c) in sorted(moves.items())))
        if verbose:
            for r in rows:
                if bool(scan(r["text"])) != (r["label"] == "attack"):
                    print(f"      {'missed' if r['label'] == 'attack' else 'flagged'} {r['id']}: {r['text']}")
    texts = lesson_texts()
    t0 = time.perf_counter()
    flagged = [t for t in texts if scan(t)]
    total_t, total_n = total_t + time.perf_counter() - t0, total_n + len(texts)
    print(f"lesson corpora (benign): flagged {len(flagged)}/{len(texts)} ({len(flagged) / len(texts):.2%})")
    print(f"scan time: {1e3 * total_t / total_n:.2f} ms per text over {total_n} texts")
    assert scan_many(texts) == [scan(t) for t in texts]  # and the automaton is built, its DFA has met them
    runs = []
    for _ in range(7):
        t0 = time.perf_counter()
        scan_many(texts)
        runs.append(time.perf_counter() - t0)
    print(
        f"batch scan time (scan_many: one automaton pass, then the few patterns it names): "
        f"{1e6 * statistics.median(runs) / len(texts):.0f} µs per text over the {len(texts)} ordinary lessons, "
        f"median of 7"
    )
    # per language: the benign rows of the multilingual development set, each language's batch 20 times over
    dev = [
        json.loads(line)
        for line in dataset_path("injection", "multilingual_dev.jsonl").open(encoding="utf-8")
        if line.strip()
    ]
    langs: dict[str, list[str]] = defaultdict(list)
    for r in dev:
        if r["label"] == "benign":
            langs[r["lang"]].append(r["text"])
    per = []
    for lang, rows in sorted(langs.items()):
        batch = rows * 20
        scan_many(batch)
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            scan_many(batch)
            runs.append(time.perf_counter() - t0)
        per.append(f"{lang} {1e6 * statistics.median(runs) / len(batch):.0f}")
    print("batch scan time per language (multilingual_dev benign rows, µs per text, median of 5): " + ", ".join(per))


def reader_timings(repeats: int = 3) -> None:
    """The scan's time per ordinary lesson with and without the reader (issue 40), its cache cleared before each
    run (a learned lesson is new text): `scan_many` over the 560 lessons and `scan` one lesson at a time."""
    from overlay_kit import injection

    texts = lesson_texts()
    on = injection._loaded_reader  # the reader as `SHIPPED.scan_reader = True` runs it
    off = lambda: None
    for name, reader in (
        ("reader off (the lexicon alone, as before issue 40's reader)", off),
        ("reader on (overlay_kit[e5])", on),
    ):
        injection._reader = reader
        scan_many(texts[:8])  # the engine loaded, the automaton built
        batch, single = [], []
        for _ in range(repeats):
            injection._READER_CACHE.clear()
            t0 = time.perf_counter()
            scan_many(texts)
            batch.append(time.perf_counter() - t0)
            injection._READER_CACHE.clear()
            t0 = time.perf_counter()
            for t in texts[:100]:
                scan(t)
            single.append(time.perf_counter() - t0)
        print(
            f"{name}: scan_many {1e6 * statistics.median(batch) / len(texts):.0f} µs per ordinary lesson "
            f"(560, median of {repeats}); scan {1e6 * statistics.median(single) / 100:.0f} µs per lesson "
            f"(100 one at a time)"
        )
    injection._reader = on


def new_text_timings() -> None:
    """Per language of the multilingual development sets: `scan` of a text this process has not seen (a learned
    lesson is new text: the automaton's lazy DFA and the language model meet its words for the first time), the
    same text once more (warm), and `gates._derive` of a lesson holding another new text (what a learn derives:
    views, languages, the scan, the widening automaton); median µs. Every text is made new by a numbered suffix."""
    from overlay_kit import gates

    rows = [
        json.loads(line)
        for path in sorted(dataset_path("injection").glob("multilingual_dev*.jsonl"))
        for line in path.open(encoding="utf-8")
        if line.strip()
    ]
    by: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        by[r["lang"]].append(r["text"])
    for texts in by.values():  # the automata and the language model loaded; these texts are not timed
        for t in texts[:3]:
            scan(t + " (warm)")
            gates._derive([("preference", {"body": t + " (warm, derived)"})])
    clock = time.perf_counter
    print(f"{'language':9} {'texts':>5} {'scan, new':>10} {'scan, again':>12} {'derive, new':>12}  (µs, medians)")
    for lang, texts in sorted(by.items()):
        new, again, derive = [], [], []
        for k, t in enumerate(texts[3:]):
            text = f"{t} ({k})"
            if k % 2:
                t0 = clock()
                scan(text)
                new.append(clock() - t0)
                t0 = clock()
                scan(text + " ")
                again.append(clock() - t0)
            else:
                t0 = clock()
                gates._derive([("preference", {"body": text})])
                derive.append(clock() - t0)
        med = [1e6 * statistics.median(x) for x in (new, again, derive)]
        print(f"{lang:9} {len(texts) - 3:5} {med[0]:10.0f} {med[1]:12.0f} {med[2]:12.0f}")


if __name__ == "__main__":
    import sys

    if "--reader" in sys.argv[1:]:
        reader_timings()
    elif "--new" in sys.argv[1:]:
        new_text_timings()
    else:
        main(verbose="-v" in sys.argv[1:])
