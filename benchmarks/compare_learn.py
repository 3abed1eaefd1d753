"""CPU time of the write path of one checkout, for side-by-sides across commits (docs/performance.md, issue 30):

    git worktree add /tmp/before c26afcd
    for tree in /tmp/before .; do (cd $tree && python /path/to/benchmarks/compare_learn.py $tree); done

`gates.learn_many` of 5,000 fresh workload lessons into an empty store (CPU µs per row, 3 runs) and 250 single
`gates.learn` into a 5,000-row store (median CPU µs), for the checkout at TREE (its own `overlay_kit` and
`benchmarks`). Run the trees alternately, more than once: the machine's load moves every figure.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

TREE = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]).resolve()
sys.path[:0] = [str(TREE / "benchmarks"), str(TREE)]

import bench_hot  # noqa: E402
import workload  # noqa: E402

from overlay_kit import gates  # noqa: E402
from overlay_kit.skill import load_skill  # noqa: E402
from overlay_kit.store import Store  # noqa: E402


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    large = load_skill(bench_hot.write_skill(tmp / "skills", "large", workload.SIZES["large"]))
    batch = []
    for r in range(3):
        with Store.open(tmp / f"batch-{r}.db") as store:
            rows = bench_hot.lesson_rows(large, 5000, 300 + r)
            c = time.process_time()
            gates.learn_many(store, large, rows)
            batch.append((time.process_time() - c) / len(rows) * 1e6)
    with Store.open(tmp / "one.db") as store:
        gates.learn_many(store, large, bench_hot.lesson_rows(large, 5000, 3))
        one = []
        for k, x in enumerate(bench_hot.lesson_rows(large, 300, 11)):
            c = time.process_time()
            gates.learn(store, large, x.kind, x.payload, section=x.section, provenance=x.provenance)
            if k >= 50:  # the first ones warm the caches
                one.append(time.process_time() - c)
    print(
        f"{TREE}: learn_many CPU µs/row {min(batch):.0f} (runs {', '.join(f'{b:.0f}' for b in batch)}); "
        f"one learn CPU median {statistics.median(one) * 1e6:.0f} µs"
    )


if __name__ == "__main__":
    main()
