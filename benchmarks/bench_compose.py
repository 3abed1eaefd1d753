"""Issue 30's read paths as they scale: compose at 90 / 1,000 / 10,000 active deltas (slope on log-log), budget
planning when nothing can bind, `store.search` for one skill's 90, a cold `overlay-kit resolve` (does it load the
tokenizer?), and a skill with 100,000 active lessons (`resolve` and `overlay-kit deltas --json`).

    python benchmarks/bench_compose.py [--runs 7] [--big 100000]

Each path against GAIA and its floor (a minimal correct implementation, `floors.py`): `make bench-gaia`.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import workload  # noqa: E402

from overlay_kit import anchor, budget, gates  # noqa: E402
from overlay_kit import resolve as resolve_mod  # noqa: E402
from overlay_kit.defaults import SHIPPED  # noqa: E402
from overlay_kit.resolve import compose, resolve  # noqa: E402
from overlay_kit.skill import load_skill  # noqa: E402
from overlay_kit.store import Store  # noqa: E402

BIG_CEILING = 10**9  # nothing can bind


def timed(fn, runs: int) -> float:
    """Median wall ms of `fn()` over `runs` runs."""
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out) * 1e3


def write_skill(root: Path, name: str, sections: int) -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(workload.skill_text(name, workload.skill_body(sections)), encoding="utf-8")
    return d


def fill(store: Store, skill, n: int, seed: int = 7) -> None:
    """`n` active preference lessons on the skill's sections (auto-approved store: they start active)."""
    slugs = [s.slug for s in anchor.parse(skill.body) if s.level]
    step = 5000
    for at in range(0, n, step):
        rows = [
            gates.Lesson(
                "preference",
                {"body": x["body"].replace("Lesson ", f"Lesson {at}.", 1), "trigger": x["trigger"]},
                x["section"],
                "user_instruction",
            )
            for x in workload.lessons(slugs, min(step, n - at), seed + at)
        ]
        out = gates.learn_many(store, skill, rows)
        bad = [r for r in out if r.outcome != "active"]
        assert not bad, bad[0].message


def slope(points: list[tuple[int, float]]) -> float:
    (n0, t0), (n1, t1) = points[0], points[-1]
    return math.log(t1 / t0) / math.log(n1 / n0)


def child(code: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


CLI_PROBE = """
import io, json, sys, time, contextlib
t = time.perf_counter()
from overlay_kit import cli
buf = io.StringIO()
with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
    rc = cli.main(sys.argv[1:] or %r)
ms = (time.perf_counter() - t) * 1e3
print(json.dumps({"rc": rc, "ms": ms, "tokenizers": "tokenizers" in sys.modules, "bytes": len(buf.getvalue())}))
"""


def cli_run(argv: list[str], env: dict) -> dict:
    return child(CLI_PROBE % (argv,), env)


def profile(fn, top: int = 12) -> str:
    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", 7)))
    ap.add_argument("--big", type=int, default=100_000, help="lessons on the big skill (0: skip)")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of the 10k and big paths")
    args = ap.parse_args()
    runs = args.runs
    rows: list[tuple[str, float, str]] = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    plans = []
    real_plan = budget.plan

    def counting_plan(*a, **kw):
        plans.append(1)
        return real_plan(*a, **kw)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        small = load_skill(write_skill(tmp / "skills", "small", workload.SIZES["small"]))
        with Store.open(tmp / "scale.db", auto_approve=True) as store:
            # compose at 90 / 1,000 / 10,000 active deltas
            fill(store, small, 10_000)
            every = store.search(small.name, status="active")
            points, points_default = [], []
            for n in (90, 1000, 10_000):
                deltas = every[:n]
                eff = compose(small, deltas, ceiling=BIG_CEILING)
                assert len(eff.applied) == n, eff.notes[:3]
                ours = timed(lambda: compose(small, deltas, ceiling=BIG_CEILING), runs)
                resolve_mod.budget_mod.plan = counting_plan
                plans.clear()
                compose(small, deltas, ceiling=BIG_CEILING)
                planned = len(plans)
                resolve_mod.budget_mod.plan = real_plan
                dflt = timed(lambda: compose(small, deltas), runs)
                points.append((n, ours))
                points_default.append((n, dflt))
                rows.append((f"compose {n:>6,} active deltas, nothing binds (ceiling 1e9)", ours, "ms"))
                rows.append(("  budget.plan calls when nothing binds", planned, "n"))
                rows.append((f"compose {n:>6,} active deltas, shipped ceiling {SHIPPED.ceiling}", dflt, "ms"))
            rows.append(("compose slope (log-log, 90 -> 10k), nothing binds", slope(points), ""))
            rows.append(("compose slope (log-log, 1k -> 10k), nothing binds", slope(points[1:]), ""))
            rows.append(("compose slope (log-log, 1k -> 10k), shipped ceiling", slope(points_default[1:]), ""))
            deltas = every
            resident = [d for d in deltas]
            rows.append(
                (
                    "budget.plan alone over 10k resident deltas, ceiling 1e9 (fits)",
                    timed(lambda: budget.plan(100, resident, BIG_CEILING, proposer=None), runs),
                    "ms",
                )
            )
            rows.append(
                (
                    "budget.plan alone over 10k resident deltas, shipped ceiling (binds)",
                    timed(lambda: budget.plan(100, resident, SHIPPED.ceiling, proposer=None), runs),
                    "ms",
                )
            )
            if args.profile:
                print(profile(lambda: compose(small, deltas)))

        # search: one skill's 90 active deltas among two skills' (the workload of bench_hot)
        large = load_skill(write_skill(tmp / "skills", "large", workload.SIZES["large"]))
        with Store.open(tmp / "read.db") as store:
            for skill in (small, large):
                ids = [
                    r.delta.id
                    for r in gates.learn_many(
                        store,
                        skill,
                        [
                            gates.Lesson(
                                "preference",
                                {"body": x["body"], "trigger": x["trigger"]},
                                x["section"],
                                "user_instruction",
                            )
                            for x in workload.lessons([s.slug for s in anchor.parse(skill.body) if s.level], 100, 7)
                        ],
                    )
                ]
                with store.transaction():
                    for did in ids[: workload.ACTIVE]:
                        store.approve(did)
            got = store.search(small.name, status="active")
            assert len(got) == workload.ACTIVE
            rows.append(
                (
                    "store.search one skill's 90 active",
                    timed(lambda: store.search(small.name, status="active"), runs * 20),
                    "ms",
                )
            )
            rows.append(
                ("compose 90 (small skill, shipped ceiling), warm", timed(lambda: compose(small, got), runs * 20), "ms")
            )

        # cold process: the second `overlay-kit resolve` must not load the tokenizer
        db = str(tmp / "read.db")
        argv = ["resolve", str(tmp / "skills" / "small"), "--db", db]
        first = cli_run(argv, env)
        second = cli_run(argv, env)
        rows.append(("cold `overlay-kit resolve` (in-process timing, after imports' first run)", second["ms"], "ms"))
        rows.append(("  loaded the tokenizer on the second cold run", int(second["tokenizers"]), "bool"))
        rows.append(("  loaded the tokenizer on the first cold run", int(first["tokenizers"]), "bool"))

        if args.big:
            big = load_skill(write_skill(tmp / "skills", "big", workload.SIZES["small"]))
            t = time.perf_counter()
            with Store.open(tmp / "big.db", auto_approve=True) as store:
                fill(store, big, args.big)
            build_s = time.perf_counter() - t
            with Store.open(tmp / "big.db") as store:
                eff = resolve(big, store, embedder=False)
                rows.append(
                    (
                        f"resolve, {args.big:,} active lessons on one skill (first in process)",
                        timed(lambda: resolve(big, store, embedder=False), 1),
                        "ms",
                    )
                )
                rows.append(
                    (
                        f"resolve, {args.big:,} active lessons on one skill (warm)",
                        timed(lambda: resolve(big, store, embedder=False), 3),
                        "ms",
                    )
                )
                rows.append(("  applied / suppressed", len(eff.applied), "n"))
                if args.profile:
                    print(profile(lambda: resolve(big, store, embedder=False), 25))
            big_argv = ["--db", str(tmp / "big.db")]
            r = cli_run(["resolve", str(tmp / "skills" / "big")] + big_argv, env)
            r = cli_run(["resolve", str(tmp / "skills" / "big")] + big_argv, env)
            rows.append(("cold `overlay-kit resolve` on it (in-process)", r["ms"], "ms"))
            r = cli_run(["deltas", "big", "--json"] + big_argv, env)
            rows.append(
                (f"cold `overlay-kit deltas big --json` on it (in-process; {r['bytes']:,} bytes out)", r["ms"], "ms")
            )
            rows.append((f"  (building the {args.big:,}-lesson store took {build_s:.1f} s)", build_s, "s"))

    load = os.getloadavg()
    print(f"bench_compose: medians of {runs} runs; {os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f}")
    for label, value, unit in rows:
        print(f"  {label:<84}{value:12.3f}  {unit}")


if __name__ == "__main__":
    main()
