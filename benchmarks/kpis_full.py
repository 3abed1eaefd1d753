"""Notebook 07's FULL run, recorded: the rule file's full plan (every axis, every world scenario, `max_seeds`
seeds, `full_run` sessions), run seed block by seed block on the studies' sweep runner. After each block the
frame so far is written to `datasets/recorded/07_kpis_full.csv.gz` with a provenance file beside it (commit,
rule sha256, seeds done, machine, wall time), so a run cut short keeps every whole block it finished and says
how many seeds it holds. Notebook 07 judges the recording with the same code (`kpis.recorded`).

    python benchmarks/kpis_full.py [--block 10] [--n-jobs 2]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from overlay_kit.studies import kpis, rulefile  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--block", type=int, default=10, help="seeds per recorded block")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=kpis.RECORDED)
    args = ap.parse_args()
    rule = rulefile.load("07_kpis")
    plan = kpis.plan(rule, full=True)
    seeds = list(plan.pop("seeds"))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frames, t0 = [], time.perf_counter()
    for start in range(0, len(seeds), args.block):
        block = seeds[start : start + args.block]
        study = kpis.run(**plan, seeds=block, rule=rule, n_jobs=args.n_jobs, progress=False)
        frames.append(study.frame)
        frame = pd.concat(frames, ignore_index=True)
        tmp = args.out.with_suffix(".tmp")
        frame.to_csv(tmp, index=False, compression="gzip")
        os.replace(tmp, args.out)
        meta = {
            "rule": rule.path.name,
            "rule_sha256": rule.sha256,
            "commit": commit,
            "recorded": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "seeds": len(seeds[: start + len(block)]),
            "planned_seeds": len(seeds),
            "n_sessions": plan["base"]["n_sessions"],
            "shipped": study.defaults,
            "worlds": int(frame["world"].nunique()),
            "rows": len(frame),
            "wall_s": round(time.perf_counter() - t0),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "n_jobs": args.n_jobs,
        }
        kpis.RECORDED_META(args.out).write_text(json.dumps(meta, indent=1) + "\n")
        print(f"{meta['seeds']}/{len(seeds)} seeds, {meta['rows']} rows, {meta['wall_s']} s", flush=True)


if __name__ == "__main__":
    main()
