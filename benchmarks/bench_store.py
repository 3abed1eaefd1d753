"""Store workload timings: learn 5,000 deltas through the gates (batched), read one skill's 90 active deltas,
point lookup; and the cost of one learn into a section that already holds 0 or 4,000 lessons (a learn looks
for a live twin: it must not read the section). Prints medians of repeated runs (seeded; a fresh temporary
database per run)."""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from overlay_support import make_skill  # noqa: E402

from overlay_kit import gates  # noqa: E402
from overlay_kit.store import Store  # noqa: E402

N_LEARN, BATCH, N_SKILLS, ACTIVE, RUNS, READS = 5_000, 500, 50, 90, 5, 200
FULL, PROBES = 4_000, 200  # lessons already in one section; single learns timed into it


def one_run(seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    skills = [make_skill(f"skill-{i:02d}") for i in range(N_SKILLS)]
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "bench.db") as store:
        t0 = time.perf_counter()
        ids: dict[str, list[str]] = {s.name: [] for s in skills}
        for start in range(0, N_LEARN, BATCH):
            with store.transaction():
                for i in range(start, start + BATCH):
                    s = skills[i % N_SKILLS] if i >= ACTIVE else skills[0]  # skill-00 gets 90 + its share
                    r = gates.learn(
                        store,
                        s,
                        "preference",
                        {"body": f"lesson {i}: {rng.random():.6f}"},
                        section=rng.choice(["triage", "replies"]),
                        provenance="user_instruction",
                    )
                    ids[s.name].append(r.delta.id)
        learn_s = time.perf_counter() - t0
        with store.transaction():
            for did in ids["skill-00"][:ACTIVE]:
                store.approve(did)
        reads = []
        for _ in range(READS):
            t = time.perf_counter()
            got = store.search("skill-00", status="active")
            reads.append(time.perf_counter() - t)
        assert len(got) == ACTIVE
        all_ids = [i for v in ids.values() for i in v]
        lookups = []
        for _ in range(READS):
            did = rng.choice(all_ids)
            t = time.perf_counter()
            store.get(did)
            lookups.append(time.perf_counter() - t)
    return {
        "learn_total_s": learn_s,
        "learn_per_delta_us": learn_s / N_LEARN * 1e6,
        "read_90_active_ms": statistics.median(reads) * 1e3,
        "point_lookup_us": statistics.median(lookups) * 1e6,
    }


def one_section(seed: int) -> dict[str, float]:
    """Median µs of one `gates.learn` into a section holding no lessons, then `FULL` of them."""
    skill = make_skill()
    out = {}
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "bench.db") as store:

        def probe(tag: str) -> float:
            times = []
            for i in range(PROBES):
                t = time.perf_counter()
                gates.learn(
                    store,
                    skill,
                    "preference",
                    {"body": f"{tag} probe {seed}.{i}"},
                    section="replies",
                    provenance="user_instruction",
                )
                times.append(time.perf_counter() - t)
            return statistics.median(times) * 1e6

        out["learn_one_empty_us"] = probe("empty")
        gates.learn_many(
            store,
            skill,
            [gates.Lesson("preference", {"body": f"filler {i}"}, "replies", "user_instruction") for i in range(FULL)],
        )
        out[f"learn_one_{FULL}_us"] = probe("full")
    return out


def main() -> None:
    runs = [one_run(seed) | one_section(seed) for seed in range(RUNS)]
    print(
        f"store benchmark: {N_LEARN} deltas via gates.learn in batches of {BATCH}, {N_SKILLS} skills, "
        f"median of {RUNS} runs ({READS} reads each)"
    )
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(f"  {key:<22} median {statistics.median(values):10.3f}   (min {min(values):.3f}, max {max(values):.3f})")


if __name__ == "__main__":
    main()
