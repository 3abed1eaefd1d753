"""Rebase 1,000 synthetic histories × 20 versions × 10 deltas through all four policies; print medians.

    .venv/bin/python benchmarks/bench_rebase.py [--histories 1000] [--versions 20] [--deltas 10]
                                                [--repeat 7] [--jobs 2] [--profile typical]

Stage 1 generates the histories (seeded, `sim.generate_history`), in parallel. Stage 2 — the figure of issue 14's
sweep row (target ≤ 30 s on 2 cores), repeated `--repeat` times after one untimed warm-up (worker start,
embedder load) — parses every version once (the parse cache hands version k, parsed as the new body of update
k-1, back as the old body of update k) and runs every policy on one shared `Update` per version pair, as
`sim.evaluate` does: the section decisions are made once (the first policy that needs them, `section`, carries
their timing) and `fuzzy` / `embedding` only add proposals to the orphans — `fuzzy` scoring exactly only the
new sections whose upper bound can still win, `embedding` encoding each distinct section text once per worker
chunk. Each decision is scored against the ground truth, in parallel over chunks of histories (joblib,
`studies.sweep.sweep`). Printed: wall time of each stage (median over repeats), the workers' CPU time, per-update
medians and p95 (in-worker `perf_counter`) with each stage's summed wall and CPU seconds, and the outcome
totals of the last run — misattachment must be 0 for every policy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from overlay_kit import rebase
from overlay_kit.anchor import parse
from overlay_kit.studies import sim
from overlay_kit.studies.sweep import sweep


def _generate(profile: str, versions: int, deltas: int, seeds: list[int]) -> list[sim.History]:
    return [sim.generate_history(profile, versions, deltas, seed=s) for s in seeds]


def _rebase(histories: list[sim.History]) -> dict:
    policies = [rebase.get_policy(name) for name in rebase.POLICIES]
    rebase.plan("# A\n\nalpha\n", "# B\n\nbeta\n", policies[-1])  # load the embedder outside the timings
    parse_s, plan_s, counts = [], {p.name: [] for p in policies}, {p.name: {} for p in policies}
    cpu = {"parse": 0.0, **{p.name: 0.0 for p in policies}}  # process CPU seconds (all threads) per stage
    c_start = time.process_time()
    for h in histories:
        bodies = h.bodies
        for k in range(len(bodies) - 1):
            t0, c0 = time.perf_counter(), time.process_time()
            old, new = parse(bodies[k]), parse(bodies[k + 1])
            parse_s.append(time.perf_counter() - t0)
            cpu["parse"] += time.process_time() - c0
            live = sim.live_anchors(h, k)
            update = rebase.Update(old, new)  # one matching for all four policies
            for p in policies:
                t0, c0 = time.perf_counter(), time.process_time()
                the_plan = rebase.plan_update(update, p)
                plan_s[p.name].append(time.perf_counter() - t0)
                cpu[p.name] += time.process_time() - c0
                for key, v in sim.tally(the_plan, live, h.truth[k].truth).items():
                    counts[p.name][key] = counts[p.name].get(key, 0) + v
    cpu["total"] = time.process_time() - c_start
    return {"parse": parse_s, "plan": plan_s, "counts": counts, "cpu": cpu}


def chunks(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def ms(xs: list[float], q: float | None = None) -> str:
    if q is None:
        return f"{statistics.median(xs) * 1e3:8.2f}"
    return f"{statistics.quantiles(xs, n=100)[int(q) - 1] * 1e3:8.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--histories", type=int, default=int(os.environ.get("BENCH_HISTORIES", 1000)))
    ap.add_argument("--versions", type=int, default=20)
    ap.add_argument("--deltas", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=int(os.environ.get("BENCH_REPEAT", 7)))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("BENCH_JOBS", 2)))
    ap.add_argument("--profile", default="typical", choices=list(sim.PROFILES))
    args = ap.parse_args()
    seeds = list(range(args.histories))
    size = max(1, args.histories // (8 * args.jobs))  # 8 chunks a worker: a short tail when one runs late

    t0 = time.perf_counter()
    parts = sweep(
        _generate,
        [
            {"profile": args.profile, "versions": args.versions, "deltas": args.deltas, "seeds": c}
            for c in chunks(seeds, size)
        ],
        n_jobs=args.jobs,
        progress=False,
    )
    gen_s = time.perf_counter() - t0
    histories = [h for part in parts for h in part]
    updates = sum(len(h.versions) - 1 for h in histories)
    print(
        f"bench_rebase: {len(histories)} histories x {args.versions} versions x {args.deltas} deltas "
        f"({args.profile}), {updates} updates, {args.jobs} jobs, {os.cpu_count()} CPUs"
    )
    print(f"  generate histories          {gen_s:8.1f} s wall")

    sweep(_rebase, [{"histories": histories[:1]}] * (2 * args.jobs), n_jobs=args.jobs, progress=False)  # warm workers
    walls, results = [], None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        results = sweep(_rebase, [{"histories": c} for c in chunks(histories, size)], n_jobs=args.jobs, progress=False)
        walls.append(time.perf_counter() - t0)
    print(
        f"  rebase, all four policies   {statistics.median(walls):8.1f} s wall (median of {args.repeat}: "
        f"{', '.join(f'{w:.1f}' for w in walls)}), {updates / statistics.median(walls):.0f} updates/s"
    )

    parse_s = [x for r in results for x in r["parse"]]
    cpu = lambda stage: sum(r["cpu"][stage] for r in results)  # noqa: E731
    print(f"  worker CPU (last run)       {cpu('total'):8.1f} s")
    print(f"\n  {'per update':<18}{'median ms':>10}{'p95 ms':>10}{'sum s':>9}{'cpu s':>9}")
    print(f"  {'parse both bodies':<18}{ms(parse_s):>10}{ms(parse_s, 95):>10}{sum(parse_s):9.1f}{cpu('parse'):9.1f}")
    for name in rebase.POLICIES:
        xs = [x for r in results for x in r["plan"][name]]
        print(f"  {name:<18}{ms(xs):>10}{ms(xs, 95):>10}{sum(xs):9.1f}{cpu(name):9.1f}")

    print(f"\n  {'outcomes':<18}" + "".join(f"{n:>12}" for n in rebase.POLICIES))
    keys = (
        "deltas",
        "clean",
        "stale",
        "orphaned",
        "false_orphan",
        "rescued",
        "proposals",
        "correct_proposals",
        "misattached",
        "silent_reapply",
    )
    for key in keys:
        row = [sum(r["counts"][n].get(key, 0) for r in results) for n in rebase.POLICIES]
        print(f"  {key:<18}" + "".join(f"{v:>12}" for v in row))
    bad = sum(
        r["counts"][n].get("misattached", 0) + r["counts"][n].get("silent_reapply", 0)
        for r in results
        for n in rebase.POLICIES
    )
    if bad:
        raise SystemExit(f"FAIL: {bad} misattached or silently re-applied decisions")


if __name__ == "__main__":
    main()
