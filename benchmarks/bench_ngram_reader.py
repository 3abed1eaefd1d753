"""The n-gram + e5 reader candidate's cost (ngram_reader.py): microseconds per ordinary lesson.

    python benchmarks/bench_ngram_reader.py

Per text, best of ROUNDS: the n-gram part alone (`char_scores`), e5's embedding (`injection.reader_embeddings`,
the extra overlay_kit[e5]) and the product's scan with its reader off (`injection.scan_many`), each over the
560 ordinary lessons and the benign rows of multilingual_dev.jsonl per language. Weights are loaded before timing.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict

import ngram_reader
from bench_scan import lesson_texts

from overlay_kit import injection
from overlay_kit.resources import dataset_path

ROUNDS = 5


def best_us(fn, texts: list[str], rounds: int = ROUNDS) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn(texts)
        best = min(best, time.perf_counter() - t)
    return best / len(texts) * 1e6


def main() -> None:
    ngram_reader.model()
    injection.reader_embeddings(["warm up"])
    sets = {"560 ordinary lessons (en)": lesson_texts()}
    by = defaultdict(list)
    for line in dataset_path("injection", "multilingual_dev.jsonl").open(encoding="utf-8"):
        r = json.loads(line)
        if r["label"] == "benign":
            by[r["lang"]].append(r["text"])
    sets.update({f"multilingual_dev benign {k}": v for k, v in sorted(by.items())})
    print(f"{'texts':<34} {'n-grams':>9} {'e5':>9} {'scan (reader off)':>18}   µs per text, best of {ROUNDS}")
    for name, texts in sets.items():
        ng = best_us(ngram_reader.char_scores, texts)
        e5 = best_us(injection.reader_embeddings, texts, rounds=1 if len(texts) > 100 else 2)
        sc = best_us(injection.scan_many, texts)
        print(f"{name:<34} {ng:>9.1f} {e5:>9.0f} {sc:>18.1f}")


if __name__ == "__main__":
    main()
