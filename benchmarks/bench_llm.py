"""Benchmark: the model client's own overhead and the local engine's prefill cost.

Prints medians of repeated runs. Client-side parts need no engine; the engine parts start the random-weight
llama (overlay_kit.engine) and are skipped, loudly, when `llama-cpp-python[server]` is missing.
    .venv/bin/python benchmarks/bench_llm.py
"""

from __future__ import annotations

import statistics
import time

from overlay_kit import cost
from overlay_kit.engine import Engine, engine_available
from overlay_kit.llm import LemonadeClient, count_message_tokens
from overlay_kit.prompt import compose, reprefill_tokens

REPEATS = 5


def median_s(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    inputs = cost.StudyInputs.from_datasets()
    learned = cost.learned_fragment(inputs.lessons, 28000)
    big = compose(inputs.stable, learned, inputs.tools, history=[("user", "What is urgent?")])
    moved = compose(inputs.stable, learned.replace("(2)", "(two)"), inputs.tools, history=[("user", "What is urgent?")])
    n = count_message_tokens(big.messages())
    print(f"pre-send window check, {n:,}-token prompt: {median_s(lambda: count_message_tokens(big.messages())):.3f} s")
    print(f"reprefill_tokens on a {n:,}-token prompt: {median_s(lambda: reprefill_tokens(big, moved)):.3f} s")

    reason = engine_available()
    if reason:
        print(f"ENGINE SKIPPED: {reason}")
        return
    with Engine() as eng, LemonadeClient(eng.base_url) as client:
        for size in (512, 2048, 8192):
            text = cost.learned_fragment(inputs.lessons * 8, size)
            counter = iter(range(10**6))

            def cold():
                msgs = [{"role": "system", "content": f"Run {next(counter)}.\n\n{text}"},
                        {"role": "user", "content": "Go."}]
                return client.chat(eng.alias, msgs, max_completion_tokens=1, stream=True, temperature=0.0).ttft_s

            ttfts = [cold() for _ in range(3)]
            msgs = [{"role": "system", "content": f"Warm.\n\n{text}"}, {"role": "user", "content": "Go."}]
            client.chat(eng.alias, msgs, max_completion_tokens=1, stream=True, temperature=0.0)
            warm = [client.chat(eng.alias, msgs + [{"role": "assistant", "content": "ok"},
                                                   {"role": "user", "content": f"Again {i}."}],
                                max_completion_tokens=1, stream=True, temperature=0.0).ttft_s for i in range(3)]
            print(f"engine TTFT, {size:>5,}-token prompt: cold {statistics.median(ttfts):.3f} s, "
                  f"warm (prefix cached) {statistics.median(warm):.3f} s  [{eng.id}]")


if __name__ == "__main__":
    main()
