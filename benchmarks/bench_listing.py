"""Issue 42: `overlay-kit deltas --json` over a skill with 100,000 active lessons, streamed: the time from the
command's start to its first delta on stdout (goal < 0.5 s), to its last byte, and the process's peak memory; then
one `--limit 100` page at the start and one at the end of the walk (`--after` the 99,900th id: keyset paging
costs the same wherever the page is). Each figure the median of `--runs` fresh processes.

    python benchmarks/bench_listing.py [--runs 3] [--lessons 100000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build(db: str, lessons: int) -> None:
    """In a child process of its own (so the parent, whose peak memory its children start from, stays small):
    the store, then the id `--after` starts the last page from."""
    sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]
    import workload
    from bench_compose import fill, write_skill

    from overlay_kit.skill import load_skill
    from overlay_kit.store import Store

    big = load_skill(write_skill(Path(db).parent / "skills", "big", workload.SIZES["small"]))
    with Store.open(db, auto_approve=True) as store:
        fill(store, big, lessons)
        ids = [d.id for d in store.iter_deltas(big.name, status="active")]
    print(len(ids), ids[-101])


def listing(argv: list[str], env: dict) -> dict:
    """One `overlay-kit ARGV` process: seconds to its first delta line and to its end, peak RSS in MiB, bytes."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "overlay_kit", *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    first, size = None, 0
    for line in proc.stdout:
        size += len(line)
        if first is None and line.lstrip().startswith(b'"id"'):
            first = time.perf_counter() - t
    total = time.perf_counter() - t
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, argv
    return {"first_s": first, "total_s": total, "peak_mib": usage.ru_maxrss / 1024, "bytes": size}


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", 3)))
    ap.add_argument("--lessons", type=int, default=100_000)
    ap.add_argument("--build", metavar="DB", help=argparse.SUPPRESS)  # the child that builds the store
    args = ap.parse_args()
    if args.build:
        return build(args.build, args.lessons)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            OVERLAY_KIT_KEY_FILE=str(Path(tmp) / "seal.key"),
        )
        db = str(Path(tmp) / "big.db")
        t = time.perf_counter()
        out = subprocess.run(
            [sys.executable, __file__, "--build", db, "--lessons", str(args.lessons)],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        build_s, (n, after) = time.perf_counter() - t, out[-2:]
        whole = [listing(["deltas", "big", "--json", "--db", db], env) for _ in range(args.runs)]
        first_page = [listing(["deltas", "big", "--json", "--limit", "100", "--db", db], env) for _ in range(args.runs)]
        last_page = [
            listing(["deltas", "big", "--json", "--limit", "100", "--after", after, "--db", db], env)
            for _ in range(args.runs)
        ]
    load = os.getloadavg()
    print(
        f"bench_listing: medians of {args.runs} processes; {int(n):,} active lessons on one skill "
        f"(store built in {build_s:.1f} s); {os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f}"
    )
    rows = [
        ("`deltas big --json`: first delta on stdout", median(whole, "first_s"), "s"),
        ("`deltas big --json`: whole listing", median(whole, "total_s"), "s"),
        ("`deltas big --json`: peak RSS", median(whole, "peak_mib"), "MiB"),
        ("`deltas big --json`: bytes out", median(whole, "bytes") / 2**20, "MiB"),
        ("`--limit 100`, first page: whole process", median(first_page, "total_s"), "s"),
        ("`--limit 100`, first page: peak RSS", median(first_page, "peak_mib"), "MiB"),
        ("`--limit 100 --after` the 99,900th id: whole process", median(last_page, "total_s"), "s"),
    ]
    for label, value, unit in rows:
        print(f"  {label:<60}{value:10.3f}  {unit}")


if __name__ == "__main__":
    main()
