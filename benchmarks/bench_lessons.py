"""Time the tier-2 probe's pure stages over the 313-lesson corpus; print medians — then the study's numbers.

    .venv/bin/python benchmarks/bench_lessons.py [--repeat N] [--n-boot N]

Stages: `extract` (the value-shape extractor on every lesson), `route` (the write-site router on every
lesson, shipped wiring), `curve` (the greedy collapse curve to all-wired), `costs` (render every
representation and count its Llama tokens), `facts.get` (one scoped tier-0 read from an in-memory store),
`run` (the whole study: three wirings, namespace-bootstrap intervals). Then the figures the verdict is computed
from (`lessons.run(...).table()`), the verdict, and the live arm's power requirement (`probe.Power`).
"""

from __future__ import annotations

import argparse
import statistics
import time

from timing import timed  # noqa: E402  (benchmarks/timing.py)

from overlay_kit.facts import Facts
from overlay_kit.store import Store
from overlay_kit.studies import lessons as L
from overlay_kit.studies import probe as P


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples for the study's intervals")
    args = ap.parse_args()
    source, corpus = L.load_source(), L.load_corpus()
    with Store.open(":memory:") as store:
        store.put_fact("escalation", "followup_hours", 48, scope="sender:cfo@company.com")
        facts = Facts(store)
        stages = {
            "extract": lambda: [L.extract(x.text, source.vocabulary(x.domain)) for x in corpus],
            "route": lambda: [L.route(x.text, x.capture, x.domain, source) for x in corpus],
            "curve": lambda: L.collapse_curve(corpus, source.registry),
            "costs": lambda: L.representation_costs(corpus, source),
            "facts.get x1000": lambda: [
                facts.get("escalation", "followup_hours", 72, scope="sender:cfo@company.com") for _ in range(1000)
            ],
        }
        print(f"{len(corpus)} lessons, median of {args.repeat} runs")
        for name, fn in stages.items():
            med = statistics.median(timed(fn, args.repeat))
            print(f"  {name:<16} {med * 1000:9.1f} ms")
    t = time.perf_counter()
    study = L.run(corpus, source, n_boot=args.n_boot)
    print(f"  {'run':<16} {(time.perf_counter() - t) * 1000:9.1f} ms (once, n_boot={args.n_boot})\n")
    print(study.coverage.round(3).to_string(index=False), "\n")
    print(study.table().round(3).to_string(), "\n")
    print(f"rule: {study.rule}\nverdict: {study.verdict()}")
    keys = len({s.unit for s in P.load_scenarios(source=source)})
    print(f"live arm: {P.Power(available=keys)}")


if __name__ == "__main__":
    main()
