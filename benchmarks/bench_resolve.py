"""Resolution workload timings (medians of repeated runs; seeded; no network).

1. resolve 90 active deltas (tier 1/2/3 mixed) over the 201-section `failover-runbook` base;
2. full session-start resolution with tier-3 retrieval over 5,000 deltas (budget enforced, so most are
   retrieval-only; vectors stored): cold (first session: triggers embedded) and warm;
3. embed 10,000 distinct triggers with the bundled offline embedder, and build their FAISS index.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from overlay_kit import anchor, budget, gates  # noqa: E402
from overlay_kit.defaults import SHIPPED  # noqa: E402
from overlay_kit.resolve import Session, resolve  # noqa: E402
from overlay_kit.retrieval import TriggerIndex, load_embedder  # noqa: E402
from overlay_kit.skill import load_skill  # noqa: E402
from overlay_kit.store import Store  # noqa: E402

RUNS = 5
WORDS = (
    "invoice vendor manager newsletter deadline meeting refund travel contract audit payroll outage "
    "rollback database replica failover customer escalation holiday budget security phishing"
).split()


def median_ms(fn, runs: int = RUNS) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3, out


def lesson(rng: random.Random, i: int) -> tuple[str, str]:
    trigger = " ".join(rng.sample(WORDS, 4))
    body = f"Lesson {i}: when {trigger}, " + " ".join(rng.sample(WORDS, 8)) + "; check twice before acting."
    return trigger, body


def learn(store, skill, rng, n: int, kinds=("preference",)) -> None:
    slugs = [s.slug for s in anchor.parse(skill.body) if s.slug != anchor.PREAMBLE]
    with store.transaction():
        for i in range(n):
            kind = kinds[i % len(kinds)]
            trigger, body = lesson(rng, i)
            payload = {
                "preference": {"body": body, "trigger": trigger},
                "example": {"input": trigger, "output": body[:200]},
                "parameter": {"key": f"knob_{i}", "value": i},
                "exception": {"condition": f"{trigger} happens twice", "action": "escalate-to-user"},
                "tool-hint": {"prefer": [rng.choice(skill.tools)]} if skill.tools else None,
            }[kind]
            if payload is None:
                continue
            r = gates.learn(store, skill, kind, payload, section=rng.choice(slugs), provenance="user_instruction")
            assert r.delta is not None, r.message


def bench_90_over_201() -> dict:
    skill = load_skill(ROOT / "datasets" / "skills" / "failover-runbook")
    sections = len(anchor.parse(skill.body)) - 1
    with (
        tempfile.TemporaryDirectory() as tmp,
        Store.open(Path(tmp) / "b.db", research=True, auto_approve=True) as store,
    ):
        learn(store, skill, random.Random(1), 90, ("preference", "example", "parameter", "exception"))
        t = time.perf_counter()
        resolve(skill, store, embedder=False)  # first: parses and counts the authored base (cached after)
        first_ms = (time.perf_counter() - t) * 1e3
        ms, eff = median_ms(lambda: resolve(skill, store, embedder=False))
        again = resolve(skill, store, embedder=False)
    assert again.text == eff.text  # byte-identical across resolutions
    return {
        "sections": sections,
        "deltas": 90,
        "applied": len(eff.applied),
        "tokens": eff.tokens,
        "resolve_ms": ms,
        "first_ms": first_ms,
    }


def bench_session_5000(emb) -> dict:
    skill = load_skill(ROOT / "datasets" / "skills" / "triage-inbox")
    rng = random.Random(2)
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "b.db", auto_approve=True) as store:
        learn(store, skill, rng, 5000)
        plan = budget.enforce(store, [skill], SHIPPED.ceiling)
        # a goal phrased like one demoted lesson's trigger, plus a word of its own
        pooled_id = sorted(store.retrieval_only(skill.name))[0]
        goal = store.get(pooled_id).trigger + " " + rng.choice(WORDS)
        t = time.perf_counter()
        cold = Session(store, goal=goal, embedder=emb, touch=False).resolve(skill)  # embeds 5,000 triggers
        cold_ms = (time.perf_counter() - t) * 1e3
        warm_ms, warm = median_ms(lambda: Session(store, goal=goal, embedder=emb, touch=False).resolve(skill))
        assert warm.text == cold.text
        pooled = len(store.retrieval_only(skill.name))
    return {
        "deltas": 5000,
        "retrieval_only": pooled,
        "resident": 5000 - pooled - len(plan.archive),
        "retrieved": len(warm.notes_of("retrieved")),
        "tokens": warm.tokens,
        "cold_ms": cold_ms,
        "warm_ms": warm_ms,
    }


def bench_embed_10000(emb) -> dict:
    rng = random.Random(3)
    triggers = list(dict.fromkeys(" ".join(rng.sample(WORDS, 5)) + f" #{i}" for i in range(10_000)))
    enc_ms, vectors = median_ms(lambda: emb.encode(triggers), runs=3)
    ids = [f"delta_{i:05d}" for i in range(len(triggers))]
    idx_ms, index = median_ms(lambda: TriggerIndex(emb, ids, vectors), runs=3)
    q_ms, _ = median_ms(lambda: index.retrieve("vendor invoice refund audit", 0.82), runs=21)
    return {
        "triggers": len(triggers),
        "embed_ms": enc_ms,
        "per_1k_ms": enc_ms / len(triggers) * 1e3,
        "index_build_ms": idx_ms,
        "query_ms": q_ms,
    }


def main() -> None:
    t = time.perf_counter()
    emb = load_embedder()
    load_s = time.perf_counter() - t
    a = bench_90_over_201()
    print(
        f"resolve {a['deltas']} deltas over a {a['sections']}-section base: median {a['resolve_ms']:.1f} ms "
        f"of {RUNS}, first {a['first_ms']:.0f} ms with the base uncached ({a['applied']} applied, "
        f"{a['tokens']} tokens)"
    )
    b = bench_session_5000(emb)
    print(
        f"session start with retrieval over {b['deltas']} deltas ({b['retrieval_only']} retrieval-only, "
        f"{b['resident']} resident after the budget): cold {b['cold_ms']:.0f} ms (embeds every trigger), "
        f"warm median {b['warm_ms']:.1f} ms of {RUNS} ({b['retrieved']} retrieved, {b['tokens']} tokens)"
    )
    c = bench_embed_10000(emb)
    print(
        f"embed {c['triggers']} triggers: median {c['embed_ms']:.0f} ms of 3 ({c['per_1k_ms']:.0f} ms per 1,000); "
        f"FAISS index build {c['index_build_ms']:.1f} ms; one goal query {c['query_ms']:.2f} ms"
    )
    print(f"(one-off embedder load in this process: {load_s:.1f} s)")


if __name__ == "__main__":
    main()
