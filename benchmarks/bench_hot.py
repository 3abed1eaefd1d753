"""Issue 14's hot paths, each against its target: medians of >= 7 runs on the deterministic workload of
`workload.py` (seeded; no network). Wall time is what the targets are stated in; CPU time (this process's,
or the child's for the CLI row) is printed beside it because a loaded machine stretches wall time only.

    python benchmarks/bench_hot.py [--runs 7]

The rebase-sweep row is measured by `bench_rebase.py` (1,000 histories x 20 versions take minutes a run).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
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

from overlay_kit import anchor, gates  # noqa: E402
from overlay_kit.resolve import compose  # noqa: E402
from overlay_kit.skill import load_skill  # noqa: E402
from overlay_kit.store import Store  # noqa: E402


def timed(fn, runs: int, setup=None) -> tuple[float, float]:
    """(median wall ms, median CPU ms) of `fn()` over `runs` runs; `setup()` runs untimed before each."""
    wall, cpu = [], []
    for _ in range(runs):
        if setup is not None:
            setup()
        c, t = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def write_skill(root: Path, name: str, sections: int) -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(workload.skill_text(name, workload.skill_body(sections)), encoding="utf-8")
    return d


def lesson_rows(skill, n: int = 100, seed: int = 7) -> list[gates.Lesson]:
    """`n` lessons on the skill's sections, drawn with `seed`."""
    slugs = [s.slug for s in anchor.parse(skill.body) if s.level]
    return [
        gates.Lesson("preference", {"body": x["body"], "trigger": x["trigger"]}, x["section"], "user_instruction")
        for x in workload.lessons(slugs, n, seed)
    ]


def fill(store: Store, skill) -> list[str]:
    """The skill's 100 lessons: 90 approved (active), 10 left staged. Returns the active ids."""
    results = gates.learn_many(store, skill, lesson_rows(skill))
    ids = [r.delta.id for r in results]
    with store.transaction():
        for did in ids[: workload.ACTIVE]:
            store.approve(did)
    return ids[: workload.ACTIVE]


_PYCACHE: list[tempfile.TemporaryDirectory] = []  # one bytecode cache per benchmark process


def cli_resolve(
    skill_dir: Path, db: Path, runs: int, warm: bool = True, *, compiled: bool = True
) -> tuple[float, float]:
    """`overlay-kit resolve SKILL` as a whole process (the console script's interpreter, cold imports).

    With bytecode, as an installed package has it (pip compiles it at install): the children share a bytecode
    cache (PYTHONPYCACHEPREFIX, a temporary folder, so the checkout is not written to) that the first run
    fills — the untimed `warm` run, or the caller's own warm-up. `compiled=False` removes the package's own
    bytecode from that cache and forbids writing it (PYTHONDONTWRITEBYTECODE), so every run compiles
    overlay_kit's sources again, as a checkout run with that variable set does (dependencies and the standard
    library still load from bytecode)."""
    if not _PYCACHE:
        _PYCACHE.append(tempfile.TemporaryDirectory(prefix="overlay_kit-bench-pycache-"))
    cache = Path(_PYCACHE[0].name)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        PYTHONPYCACHEPREFIX=str(cache),
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-m", "overlay_kit.cli", "resolve", str(skill_dir), "--db", str(db)]
    if warm or not compiled:
        subprocess.run(cmd, env=env, check=True, capture_output=True)  # bytecode, page cache, stored counts
    if not compiled:
        shutil.rmtree(cache / (ROOT / "overlay_kit").relative_to(ROOT.anchor), ignore_errors=True)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return timed_process(cmd, env, runs)


def timed_process(cmd: list[str], env: dict, runs: int) -> tuple[float, float]:
    """(median wall ms, median CPU ms of the child) of running `cmd` to its end, `runs` times."""
    wall, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        wall.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", 7)))
    runs = max(7, ap.parse_args().runs)
    rows: list[tuple[str, float, float, float, str]] = []  # (path, wall, cpu, target, unit)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        small = load_skill(write_skill(tmp / "skills", "small", workload.SIZES["small"]))
        large = load_skill(write_skill(tmp / "skills", "large", workload.SIZES["large"]))

        def anchors(body: str):
            return lambda: [s.digest for s in anchor.parse(body)]

        for skill, target in ((large, 2.0), (small, 0.1)):
            n, kb = len(anchor.parse(skill.body)) - 1, len(skill.body.encode()) / 1024
            w, c = timed(anchors(skill.body), runs * 3, setup=anchor.cache_clear)
            rows.append((f"anchors (slugs + digests), {n} sections / {kb:.0f} KB, uncached", w, c, target, "ms"))
        w, c = timed(anchors(large.body), runs * 3)
        rows.append(("  the same, parse cache warm (a body seen before)", w, c, 2.0, "ms"))
        w, c = timed(lambda: anchor.parse_markdown_it(large.body), runs)
        rows.append(
            ("  the same body through markdown-it (the oracle; digests not included)", w, c, float("nan"), "ms")
        )

        with Store.open(tmp / "read.db") as store:
            for skill in (small, large):
                fill(store, skill)
            w, c = timed(lambda: store.search(small.name, status="active"), runs * 10)
            rows.append(("store.search: one skill's 90 active deltas", w, c, 0.8, "ms"))
            sql = "SELECT * FROM skill_deltas WHERE base_name = ? AND status = 'active'"
            w, c = timed(lambda: store.conn.execute(sql, (small.name,)).fetchall(), runs * 10)
            rows.append(("  raw indexed read of the same rows (the floor)", w, c, float("nan"), "ms"))
            for skill, ceiling in ((small, None), (large, 65536)):
                deltas = store.search(skill.name, status="active")
                kw = {} if ceiling is None else {"ceiling": ceiling}
                eff = compose(skill, deltas, **kw)
                assert len(eff.applied) == workload.ACTIVE, eff.notes[:3]
                w, c = timed(lambda: compose(skill, deltas, **kw), runs * 10)
                label = f"compose one skill with 90 active deltas (no DB), {len(anchor.parse(skill.body)) - 1} sections"
                rows.append(
                    (
                        label + ("" if ceiling is None else f", ceiling {ceiling}"),
                        w,
                        c,
                        0.6 if ceiling is None else float("nan"),
                        "ms",
                    )
                )

        for n in workload.CORPORA:
            per_row = []
            seeds = iter(range(workload.LEARN_SEED, workload.LEARN_SEED + 10_000))
            batch: list = []

            def new_batch():
                batch[:] = lesson_rows(large, n, next(seeds))  # each timed run learns new lessons

            def learn():
                with Store.open(tmp / f"learn-{n}-{len(per_row)}.db") as s:
                    t = time.perf_counter()
                    out = gates.learn_many(s, large, batch)
                    per_row.append((time.perf_counter() - t) / n * 1e6)
                    assert all(r.outcome == "staged" for r in out)

            _, c = timed(learn, runs, new_batch)
            # the target is for 5,000 lessons; 200 show what a call's fixed costs add per row
            rows.append(
                (
                    f"learn {n:,} lessons through the gates, one transaction",
                    statistics.median(per_row),
                    c / n * 1e3,
                    40.0 if n == 5000 else float("nan"),
                    "µs/row",
                )
            )

        db = tmp / "cli.db"
        with Store.open(db) as store:
            fill(store, small)
        small_dir = tmp / "skills" / "small"
        w, c = cli_resolve(small_dir, db, runs)
        rows.append(("`overlay-kit resolve SKILL` as a whole process (90 active deltas)", w, c, 300.0, "ms"))
        w, c = cli_resolve(small_dir, db, runs, compiled=False)
        rows.append(
            ("  the same, overlay_kit's sources compiled every run (no bytecode cache)", w, c, float("nan"), "ms")
        )
        w, c = cli_resolve(small_dir, tmp / "absent.db", runs)
        rows.append(("  the same without a store (authored base only)", w, c, float("nan"), "ms"))
        interpreter = [sys.executable, "-c", "import yaml, sqlite3, argparse, json, dataclasses, hashlib"]
        w, c = timed_process(interpreter, dict(os.environ, PYTHONPYCACHEPREFIX=_PYCACHE[0].name), runs)
        rows.append(
            (
                "  floor: the interpreter importing yaml, sqlite3, argparse, json, dataclasses, hashlib",
                w,
                c,
                float("nan"),
                "ms",
            )
        )

    load = os.getloadavg()
    print(
        f"bench_hot: medians of >= {runs} runs; {os.cpu_count()} CPUs, load average {load[0]:.2f} "
        f"{load[1]:.2f} {load[2]:.2f} (wall time stretches with load; CPU time much less)"
    )
    print(f"  {'path':<78}{'wall':>10}{'cpu':>10}{'target':>10}  unit     verdict")
    for path, wall, cpu, target, unit in rows:
        verdict = "" if target != target else ("met" if wall <= target else "cpu met" if cpu <= target else "NOT met")
        tgt = "" if target != target else f"{target:g}"
        print(f"  {path:<78}{wall:10.3f}{cpu:10.3f}{tgt:>10}  {unit:<8} {verdict}")
    print("  rebase sweep, 1,000 histories x 20 versions, four policies, 2 cores: see bench_rebase.py (target <= 30 s)")


if __name__ == "__main__":
    main()
