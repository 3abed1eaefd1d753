"""Time the τ study's stages and the served gate; print medians — then the numbers issue 15 names, measured.

    .venv/bin/python benchmarks/bench_tau.py [--repeat N] [--n-boot N]

Stages: `score` (the bundled embedder embeds every distinct goal and trigger of the corpus and FAISS searches
every goal against every trigger), `study` (one embedder: every gate family × both halves × lesson
resamples, the pick re-run per resample), `retrieve` (one goal through a 36-lesson `TriggerIndex` and the shipped
gate, as the resolver serves it). Then, per scorer (all-MiniLM-L6-v2 too when the optional extra is
installed): the highest cosine any labelled pair gets, the share of held-out relevant goals whose lesson ranks
first / in the top 3, the best absolute-τ recall at the budget, the winning gate with both halves' recall and
cost, how often the pick is over budget under lesson resampling, and recall at τ = 0.82.
"""

from __future__ import annotations

import argparse
import statistics

from timing import timed  # noqa: E402  (benchmarks/timing.py)

from overlay_kit import retrieval
from overlay_kit.studies import threshold as th


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-boot", type=int, default=1000, help="lesson resamples for the study's intervals")
    args = ap.parse_args()
    pairs, emb = th.load_corpus(), retrieval.load_embedder()
    scorer = th.EmbedderScorer(emb)
    scored = th.score(pairs, scorer)
    rule = th.TauRule(n_boot=args.n_boot)
    lessons = pairs.drop_duplicates("trigger")
    index = retrieval.TriggerIndex(emb, [f"{i:04d}" for i in range(len(lessons))], emb.encode(list(lessons["trigger"])))
    gate, _ = retrieval.gate_for(emb.id)
    stages = {
        "score": lambda: th.score(pairs, scorer),
        "study": lambda: th.study_embedder(scored, rule),
        "retrieve": lambda: index.retrieve("find the duplicate files on my external drive", gate),
    }
    print(
        f"{'stage':<10} {'median':>10}   (of {args.repeat}; {len(scored.goals)} goals × {len(scored.triggers)} lessons)"
    )
    for name, fn in stages.items():
        print(f"{name:<10} {statistics.median(timed(fn, args.repeat)) * 1e3:>8.1f} ms")

    study = th.run(pairs, n_boot=args.n_boot)
    for name, r in study.results.items():
        sc, w = study.scored[name], r.families[r.winner]
        absolute = r.families.get("absolute")
        print(f"\n== {name}")
        print(f"highest cosine of any labelled pair   {sc.pairs['score'].max():.3f}")
        print(f"held-out: relevant lesson ranked 1st  {r.top1.fmt()}   in top 3 {r.top3.fmt()}")
        if absolute:
            print(
                f"best absolute τ within {rule.budget:g} tokens    {absolute.calibration.gate}: held-out recall "
                f"{absolute.test.recall.fmt()}"
            )
        print(f"winning gate                          {w.calibration.gate} ({r.winner})")
        print(
            f"  calibration half                    recall {w.calibration.recall.fmt()}, "
            f"{w.calibration.false_tokens.fmt('.0f')} false tokens/session"
        )
        print(
            f"  held-out half                       recall {w.test.recall.fmt()}, "
            f"{w.test.false_tokens.fmt('.0f')} false tokens/session, holds: {r.holds(rule.budget)}"
        )
        print(
            f"  lesson resamples                    over budget {w.over_budget:.0%}; vs absolute τ "
            f"{r.vs_absolute.fmt()}"
        )
        print(f"recall at τ = {th.REFERENCE_TAU}                   {r.reference.recall.fmt()}")


if __name__ == "__main__":
    main()
