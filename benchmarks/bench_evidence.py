"""Evidence and deployment timings: ledger 2,000 turns (context of 20 deltas + one signal each), cluster 200
active deltas for consolidation, and one default 60-session deployment with its KPIs. Prints medians of
repeated runs (seeded; in-memory stores)."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from overlay_support import make_skill  # noqa: E402

from overlay_kit import evidence, gates, retrieval  # noqa: E402
from overlay_kit.store import Store  # noqa: E402
from overlay_kit.studies import deploy, kpis  # noqa: E402

TURNS, IN_CONTEXT, CLUSTERED, RUNS = 2_000, 20, 200, 5
SIGNALS = ("accepted", "correction", "undo", "accepted")


def ledger(skill) -> float:
    with Store.open(":memory:", auto_approve=True) as store:
        ids = [
            gates.learn(
                store,
                skill,
                "preference",
                {"body": f"Lesson number {i}."},
                section="replies",
                provenance="user_instruction",
            ).delta.id
            for i in range(IN_CONTEXT)
        ]
        t0 = time.perf_counter()
        for t in range(TURNS):
            evidence.record_context(store, f"s{t // 4}", str(t % 4), ids)
            evidence.record_signal(store, f"s{t // 4}", str(t % 4), SIGNALS[t % 4], lesson="k=v")
        return time.perf_counter() - t0


def clustering(skill) -> float:
    with Store.open(":memory:", auto_approve=True) as store:
        for i in range(CLUSTERED):
            gates.learn(
                store,
                skill,
                "preference",
                {"body": f"For topic {i % 20}, keep replies short ({i % 3})."},
                section=("replies", "triage")[i % 2],
                provenance="user_instruction",
            )
        deltas = store.search(skill.name, status="active")
        t0 = time.perf_counter()
        evidence.near_duplicates(deltas, embedder=retrieval.static_embedder())
        return time.perf_counter() - t0


def deployment(seed: int) -> float:
    t0 = time.perf_counter()
    kpis.run_kpis(deploy.run(seed=seed))
    return time.perf_counter() - t0


def main() -> None:
    skill = make_skill()
    retrieval.static_embedder()  # load once, outside the timings
    rows = {
        f"ledger {TURNS} turns × {IN_CONTEXT} in context": [ledger(skill) for _ in range(RUNS)],
        f"near_duplicates over {CLUSTERED} active deltas": [clustering(skill) for _ in range(RUNS)],
        "one 60-session deployment + KPIs": [deployment(s) for s in range(RUNS)],
    }
    for name, times in rows.items():
        print(
            f"{name:48s} median {statistics.median(times):7.3f} s  (min {min(times):.3f}, max {max(times):.3f}, "
            f"{RUNS} runs)"
        )
    per = statistics.median(rows[f"ledger {TURNS} turns × {IN_CONTEXT} in context"]) / TURNS * 1e3
    print(f"{'per turn (context + signal)':48s} median {per:7.3f} ms")


if __name__ == "__main__":
    main()
