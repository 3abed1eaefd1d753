"""What each shippable embedder of notebook 04 costs, and how well it separates relevant from irrelevant pairs.

    .venv/bin/python benchmarks/bench_embedders.py [--repeat N] [--names wordllama minilm e5-small mpnet]
    .venv/bin/python benchmarks/bench_embedders.py --auc [--names ...]       # separation on datasets/tau/pairs.csv
    .venv/bin/python benchmarks/bench_embedders.py --resolve [--repeat N]   # `overlay-kit resolve --goal`, cold

Costs: each measurement runs in a fresh Python process (so imports and the model load are cold, and the memory
figure is that process alone): `load` = import overlay_kit.retrieval + `load_embedder(NAME)` (the weights' sha256
check included for the extras), `first` = load plus the first one-goal encode, `RSS` = the process's peak resident
memory right after the load, `peak` = after the corpus (pandas) and one batch too, `batch` = embedding the τ
corpus' distinct goals in one call, `one goal` = one short goal (median of 20). Medians of `--repeat` processes.
Install size = what carries the weights (threshold.install_sizes; for mpnet the assembled model folder).

`--auc`: ROC AUC of cosine(goal, trigger) for the relevant against the irrelevant pairs of datasets/tau/pairs.csv
(all 648 pairs; goals through `encode_query` where an embedder has one), per embedder that loads here.

`--resolve`: a store holding `--lessons` tier-3 lessons (1,000) on `triage-inbox` with the budget enforced at
`--ceiling` (the shipped one; most lessons become retrieval-only, their vectors stored by an earlier session), and
`overlay-kit resolve triage-inbox --goal G [--ceiling C]` in a new process, G phrased like one retrieval-only
lesson's trigger; the whole process, wall clock and CPU (user + system: what contention inflates least), with the
check that the lesson was retrieved, and the same command without the goal beside it. The figures belong in docs/performance.md; nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, statistics, sys, time
t0 = time.perf_counter()
from overlay_kit import retrieval
emb = retrieval.load_embedder(sys.argv[1])
load = time.perf_counter() - t0
rss_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
query = getattr(emb, "encode_query", emb.encode)
query(["find the duplicate files on my external drive"])
first = time.perf_counter() - t0
from overlay_kit.studies import threshold as th
goals = list(dict.fromkeys(th.load_corpus()["goal"]))
t0 = time.perf_counter()
query(goals)
batch = time.perf_counter() - t0
one = []
for _ in range(20):
    t0 = time.perf_counter()
    query(["find the duplicate files on my external drive"])
    one.append(time.perf_counter() - t0)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
print(json.dumps({"id": emb.id, "load": load, "first": first, "batch": batch, "n": len(goals),
                  "one": statistics.median(one), "rss_load": rss_load, "rss": rss,
                  "torch": "torch" in sys.modules}))
"""

DEFAULT_NAMES = ("wordllama", "minilm", "e5-small", "mpnet")


def measure(name: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, name], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def installed_mb(name: str) -> float:
    from overlay_kit import retrieval
    from overlay_kit.studies import threshold as th

    if name == getattr(retrieval, "MPNET", None):
        from overlay_kit import bundled

        path = bundled.installed(bundled.EMBEDDER_ASSETS[bundled.MPNET])
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6 if path else float("nan")
    return th.install_sizes()["installed_MB"].get(name, float("nan"))


def costs(names, repeat: int) -> None:
    print(
        f"{'embedder':<10} {'load s':>7} {'+1 goal s':>9} {'RSS MiB':>8} {'peak MiB':>9} {'batch s':>8} "
        f"{'ms/goal':>8} {'one goal ms':>12} {'MB':>7}   (medians of {repeat} fresh processes)"
    )
    for name in names:
        try:
            runs = [measure(name) for _ in range(repeat)]
        except subprocess.CalledProcessError as exc:
            print(f"{name:<10} does not load here: {exc.stderr.strip().splitlines()[-1]}")
            continue
        med = {k: statistics.median(r[k] for r in runs) for k in ("load", "first", "batch", "one", "rss_load", "rss")}
        print(
            f"{name:<10} {med['load']:>7.2f} {med['first']:>9.2f} {med['rss_load']:>8.0f} {med['rss']:>9.0f} "
            f"{med['batch']:>8.2f} {1e3 * med['batch'] / runs[0]['n']:>8.1f} {1e3 * med['one']:>12.1f} "
            f"{installed_mb(name):>7.1f}   {runs[0]['id']}{' (imports torch)' if runs[0]['torch'] else ''}"
        )


def auc(names, resamples: int = 2000, seed: int = 0) -> None:
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from overlay_kit import retrieval
    from overlay_kit.studies import threshold as th

    pairs = th.load_corpus()
    relevant = pairs["relevant"].astype(int).to_numpy()
    # the independent unit is the lesson (its goals were written together): resample lessons, keep their pairs
    lessons = pairs["lesson_id"].to_numpy()
    members = {lesson: np.flatnonzero(lessons == lesson) for lesson in dict.fromkeys(lessons)}
    rng = np.random.default_rng(seed)
    draws = [np.concatenate([members[k] for k in rng.choice(list(members), len(members))]) for _ in range(resamples)]
    print(
        f"ROC AUC of cosine(goal, trigger) on datasets/tau/pairs.csv: {int(relevant.sum())} relevant, "
        f"{int(len(relevant) - relevant.sum())} irrelevant pairs, {len(members)} lessons; 95% intervals from "
        f"{resamples} lesson resamples (seed {seed}); Δ = AUC − the bundled embedder's on the same resamples"
    )
    boot, point = {}, {}
    for name in names:
        try:
            emb = retrieval.load_embedder(name)
        except retrieval.EmbedderUnavailable as exc:
            print(f"{name:<10} not installed here ({exc.reason.splitlines()[0][:100]})")
            continue
        goals = getattr(emb, "encode_query", emb.encode)(list(pairs["goal"]))
        triggers = emb.encode(list(pairs["trigger"]))
        cos = np.einsum("ij,ij->i", goals.astype(np.float64), triggers.astype(np.float64))
        boot[name] = np.array([roc_auc_score(relevant[d], cos[d]) for d in draws])
        point[name] = roc_auc_score(relevant, cos)
        first = next(iter(point))
        lo, hi = np.percentile(boot[name], [2.5, 97.5])
        dlo, dhi = np.percentile(boot[name] - boot[first], [2.5, 97.5])
        delta = f"  Δ {point[name] - point[first]:+.3f} [{dlo:+.3f}, {dhi:+.3f}]" if name != first else ""
        test = (pairs["split"] == "test").to_numpy()
        print(
            f"{name:<10} AUC {point[name]:.3f} [{lo:.3f}, {hi:.3f}]{delta}  (calibration half "
            f"{roc_auc_score(relevant[~test], cos[~test]):.3f}, test half "
            f"{roc_auc_score(relevant[test], cos[test]):.3f})   {emb.id}"
        )


WORDS = (
    "invoice vendor manager newsletter deadline meeting refund travel contract audit payroll outage "
    "rollback database replica failover customer escalation holiday budget security phishing"
).split()


def _store(db: Path, n: int = 1000, ceiling: int | None = None) -> str:
    """A store with `n` tier-3 lessons on triage-inbox, the budget enforced, vectors stored; returns a goal."""
    from overlay_kit import anchor, budget, gates
    from overlay_kit.defaults import SHIPPED
    from overlay_kit.resolve import Session
    from overlay_kit.retrieval import load_embedder
    from overlay_kit.skill import load_skill
    from overlay_kit.store import Store

    skill = load_skill(ROOT / "datasets" / "skills" / "triage-inbox")
    slugs = [s.slug for s in anchor.parse(skill.body) if s.slug != anchor.PREAMBLE]
    rng = random.Random(2)
    with Store.open(db, auto_approve=True) as store:
        with store.transaction():
            for i in range(n):
                trigger = " ".join(rng.sample(WORDS, 4))
                body = f"Lesson {i}: when {trigger}, " + " ".join(rng.sample(WORDS, 8)) + "; check twice."
                r = gates.learn(
                    store,
                    skill,
                    "preference",
                    {"body": body, "trigger": trigger},
                    section=rng.choice(slugs),
                    provenance="user_instruction",
                )
                assert r.delta is not None, r.message
        budget.enforce(store, [skill], ceiling or SHIPPED.ceiling)
        pooled = sorted(store.retrieval_only(skill.name))
        assert pooled, "the budget demoted nothing: no retrieval to time"
        goal = min(store.get(p).trigger for p in pooled) + " today"  # ids are random: choose by text
        Session(store, goal=goal, embedder=load_embedder(), touch=False).resolve(skill)  # stores the vectors
    return goal


def resolve_cold(repeat: int, lessons: int = 1000, ceiling: int | None = None) -> None:
    cli = shutil.which("overlay-kit", path=str(Path(sys.executable).parent)) or "overlay-kit"
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = tmp  # the store's seal key, calibrations and discovery roots: none of this machine's
        db = Path(tmp) / "overlay.db"
        goal = _store(db, lessons, ceiling)
        cmd = [
            cli,
            "resolve",
            str(ROOT / "datasets" / "skills" / "triage-inbox"),
            "--db",
            str(db),
            "--json",
            *(["--ceiling", str(ceiling)] if ceiling else []),
        ]
        runs = {"goal": [], "no goal": []}
        for _ in range(repeat):
            for kind in runs:
                before = os.times()
                t = time.perf_counter()
                out = subprocess.run(
                    cmd + (["--goal", goal] if kind == "goal" else []),
                    cwd=tmp,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                wall, after = time.perf_counter() - t, os.times()
                runs[kind].append(
                    (wall, after.children_user + after.children_system - before.children_user - before.children_system)
                )
                notes = json.loads(out.stdout)["notes"]
                if kind == "goal":
                    retrieved = [n for n in notes if n["kind"] == "retrieved"]
                    dark = [n for n in notes if n["kind"] == "retrieval_dark"]
                    assert retrieved and not dark, notes[:3]
    print(
        f"overlay-kit resolve triage-inbox --goal {goal!r} ({lessons:,} tier-3 lessons, budget enforced at "
        f"{ceiling or 'the shipped ceiling'}; {len(retrieved)} retrieved), whole process, medians of {repeat} "
        f"(load average {os.getloadavg()[0]:.1f}):"
    )
    for kind, got in runs.items():
        print(
            f"  {kind:<8} wall {statistics.median(w for w, _ in got):.3f} s (min {min(w for w, _ in got):.3f}), "
            f"CPU {statistics.median(c for _, c in got):.3f} s (min {min(c for _, c in got):.3f})"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per measurement")
    ap.add_argument("--names", nargs="+", default=None, help=f"embedders (default: {' '.join(DEFAULT_NAMES)})")
    ap.add_argument("--auc", action="store_true", help="separation on the τ corpus instead of costs")
    ap.add_argument("--resolve", action="store_true", help="a cold `overlay-kit resolve` with a goal instead")
    ap.add_argument("--lessons", type=int, default=1000, help="--resolve: tier-3 lessons in the store")
    ap.add_argument("--ceiling", type=int, default=None, help="--resolve: the budget's ceiling (default: shipped)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    names = args.names or list(DEFAULT_NAMES)
    if args.resolve:
        resolve_cold(args.repeat, args.lessons, args.ceiling)
    elif args.auc:
        auc(names)
    else:
        costs(names, args.repeat)


if __name__ == "__main__":
    main()
