"""Side by side with GAIA 0.25.1 (`amd-gaia` on PyPI, the reference implementation of the same design).

    make bench-gaia        # builds .venv-gaia, then: .venv/bin/python benchmarks/gaia_compare.py [--runs 7]

GAIA runs in its own venv, in a worker process (`gaia_worker.py`) that this driver feeds one operation at a
time; each round runs every operation once on each side, alternating, so both see the same machine load.
Inputs come from `workload.py` on both sides. Printed: medians of >= 7 rounds (wall, and CPU in brackets) and
the ratio GAIA ÷ ours (> 1: we are faster), with a note wherever the two do different work. The 5,000-lesson
corpus runs in `--learn-runs` rounds (default 3): GAIA commits every row, which takes minutes a round here.
(Not named bench_*.py: `make bench` runs those, and this one needs the GAIA venv.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_hot  # noqa: E402
import workload  # noqa: E402

from overlay_kit import anchor, gates  # noqa: E402
from overlay_kit.resolve import compose  # noqa: E402
from overlay_kit.skill import load_skill  # noqa: E402
from overlay_kit.store import Store  # noqa: E402

NOTES = {
    "anchors_large": "GAIA: fence-aware ATX line split, sha256 of raw text; ours: CommonMark-exact sections "
                     "(setext, indented, containers via the markdown-it fallback), normalized digests",
    "anchors_small": "as above",
    "compose_small": "GAIA: 90 snippet substitutions (no typed lines, no budget, chars/4 tokens); ours: typed "
                     "lines under their sections, exact Llama token count, budget plan, structure check",
    "search_small": "both: read the 90 active rows and map them to delta objects",
    "learn_200": "GAIA: put_delta per row, no gate rules, a commit (fsync, synchronous=FULL) and an INFO log "
                 f"line each; ours: all {len(gates.RULES)} gate rules on every row, then one transaction",
    "learn_5000": "as above",
    "cli": "GAIA: `gaia skill deltas small` (lists the 90); ours: `overlay-kit resolve small` (renders them)",
}
LABELS = {
    "anchors_large": "anchors (slugs + digests), 201 sections / ~83 KB",
    "anchors_small": "anchors (slugs + digests), 9 sections / ~3.5 KB",
    "compose_small": "compose one skill with 90 active deltas (no DB)",
    "search_small": "store search: one skill's 90 active deltas",
    "learn_200": "learn 200 lessons (µs/row)",
    "learn_5000": "learn 5,000 lessons (µs/row)",
    "cli": "the CLI on that skill, whole process",
}


class Gaia:
    def __init__(self, python: Path):
        self.proc = subprocess.Popen([str(python), str(HERE / "gaia_worker.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
        assert json.loads(self.proc.stdout.readline()).get("ready"), "the GAIA worker did not start"

    def __call__(self, op: str, seed: int = workload.LEARN_SEED) -> tuple[float, float]:
        self.proc.stdin.write(json.dumps({"op": op, "seed": seed}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if "error" in answer:
            raise RuntimeError(f"GAIA {op}: {answer['error']}")
        return answer["wall_ms"], answer["cpu_ms"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def ours(tmp: Path):
    """Our side of each operation: op name → a function of the round's seed returning (wall ms, cpu ms) of one run."""
    small = load_skill(bench_hot.write_skill(tmp / "skills", "small", workload.SIZES["small"]))
    large = load_skill(bench_hot.write_skill(tmp / "skills", "large", workload.SIZES["large"]))
    store = Store.open(tmp / "read.db")
    for skill in (small, large):
        bench_hot.fill(store, skill)
    active = store.search(small.name, status="active")
    counter = iter(range(1_000_000))

    def once(fn, setup=None, per: int = 1):
        if setup:
            setup()
        c, t = time.process_time(), time.perf_counter()
        fn()
        scale = 1e6 / per if per > 1 else 1e3
        return (time.perf_counter() - t) * scale, (time.process_time() - c) * scale

    def learn(n: int, seed: int):
        batch = bench_hot.lesson_rows(large, n, seed)
        s = Store.open(tmp / f"learn-{next(counter)}.db")
        try:
            return once(lambda: gates.learn_many(s, large, batch), per=n)
        finally:
            s.close()

    def cli():
        return bench_hot.cli_resolve(tmp / "skills" / "small", tmp / "read.db", 1, warm=False)

    return store, {
        "anchors_large": lambda seed: once(lambda: [s.digest for s in anchor.parse(large.body)], anchor.cache_clear),
        "anchors_small": lambda seed: once(lambda: [s.digest for s in anchor.parse(small.body)], anchor.cache_clear),
        "compose_small": lambda seed: once(lambda: compose(small, active)),
        "search_small": lambda seed: once(lambda: store.search(small.name, status="active")),
        "learn_200": lambda seed: learn(200, seed),
        "learn_5000": lambda seed: learn(5000, seed),
        "cli": lambda seed: cli(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", 7)))
    ap.add_argument("--learn-runs", type=int, default=int(os.environ.get("BENCH_LEARN_RUNS", 3)))
    ap.add_argument("--gaia-python", default=str(ROOT / ".venv-gaia" / "bin" / "python"))
    args = ap.parse_args()
    runs = max(7, args.runs)
    gaia = Gaia(Path(args.gaia_python))
    results: dict[str, dict[str, list[tuple[float, float]]]] = {op: {"gaia": [], "ours": []} for op in LABELS}
    with tempfile.TemporaryDirectory() as tmp:
        store, mine = ours(Path(tmp))
        try:
            for op in LABELS:  # one untimed warm-up each (imports, page cache); the big corpus needs none
                if op != "learn_5000":
                    gaia(op, workload.LEARN_SEED - 1), mine[op](workload.LEARN_SEED - 1)
            for r in range(runs):
                for op in LABELS:
                    if op == "learn_5000" and r >= args.learn_runs:
                        continue
                    first, second = (("gaia", gaia), ("ours", mine[op])) if r % 2 else (("ours", mine[op]),
                                                                                        ("gaia", gaia))
                    for side, fn in (first, second):
                        seed = workload.LEARN_SEED + r  # the learn ops: new lessons each round, the same for both
                        results[op][side].append(fn(op, seed) if side == "gaia" else fn(seed))
        finally:
            gaia.close()
            store.close()
    load = os.getloadavg()
    print(f"gaia_compare: GAIA 0.25.1 vs overlay_kit, interleaved, medians of {runs} rounds ({args.learn_runs} "
          f"for the 5,000-lesson corpus); {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  {'path':<52}{'GAIA wall (cpu)':>20}{'ours wall (cpu)':>20}{'GAIA ÷ ours':>14}")
    for op, label in LABELS.items():
        g, o = ([statistics.median(x[i] for x in results[op][side]) for i in (0, 1)] for side in ("gaia", "ours"))
        unit = "µs" if op.startswith("learn") else "ms"
        print(f"  {label:<52}{g[0]:>11.3f} ({g[1]:.3f}){o[0]:>11.3f} ({o[1]:.3f}){g[0] / o[0]:>9.2f} "
              f"({g[1] / max(o[1], 1e-9):.2f})  {unit}")
    print("\n  where the work differs:")
    for op, note in NOTES.items():
        print(f"  - {LABELS[op]}: {note}")


if __name__ == "__main__":
    main()
