"""Run the memory-architecture benchmark's FULL grid (notebook 10) through the studies' sweep runner.

    .venv/bin/python benchmarks/bench_memory_architectures.py [--n-jobs 2] [--backend loky|dask] [--out DIR]
    .venv/bin/python benchmarks/bench_memory_architectures.py --smoke      # the rule's small grid

One sweep cell per (seed, architecture) of datasets/rules/10_memory_architectures.yaml, on
`overlay_kit.studies.sweep` (`--backend dask` runs it on a local dask.distributed cluster: the `dask` extra).
Prints the table, the verdicts and the finding; `--out` also writes the table, the verdicts and every row (CSV)
and the finding (Markdown).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from overlay_kit.studies import memory_bench


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the rule's smoke grid instead of the FULL grid")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--backend", default="loky", help="a joblib backend, or dask")
    ap.add_argument("--budget", type=int, default=0, help="the overlay's learned budget (0: shipped ceiling)")
    ap.add_argument("--out", type=Path, default=None, help="a folder for the CSVs and the finding")
    args = ap.parse_args()
    study = memory_bench.run(full=not args.smoke, n_jobs=args.n_jobs, backend=args.backend, budget=args.budget)
    with pd.option_context("display.width", 200, "display.max_columns", 60):
        print(study.table().round(3).to_string(index=False))
        print(study.comparisons().round(3).to_string(index=False))
    print(study.finding())
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        study.table().to_csv(args.out / "table.csv", index=False)
        study.comparisons().to_csv(args.out / "comparisons.csv", index=False)
        for name in ("sessions", "updates", "erasure", "growth"):
            getattr(study, name).to_csv(args.out / f"{name}.csv", index=False)
        (args.out / "finding.md").write_text(study.finding() + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
