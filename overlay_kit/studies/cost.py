"""The cost of learning: what resident learned tokens and their placement do to prefill and time to first token.

COST ONLY. The local engine's weights are random (overlay_kit.llm.engine): its prefill work, TTFT and KV-prefix
reuse are real, its text is meaningless. Against a Lemonade server the same code measures a real model.

Three measurements, each a function of a chat client (live, recording, or replaying a cassette):

* `growth` — cold TTFT (session start, nothing cached) and warm TTFT (the next turn, prefix cached) as the
  resident learned fragment grows from 0 (the no-delta build) towards the window;
* `session` — a multi-turn session where each turn's goal recalls different lessons; per turn, the
  re-prefill tokens (`prompt.reprefill_tokens`) and the measured TTFT, for the learned fragment in the
  stable prefix vs the volatile tail, and resolved once per session;
* `regression` / `ceiling` — TTFT at each learned size relative to the no-delta build (median ratio with a
  bootstrap interval), and the largest learned size whose regression stays within a limit (2 %).

Wall-clock TTFT is the KPI, but on a machine shared with other work it is noisy; against the local engine each
reply also carries the engine's CPU seconds to the first token (`Engine.cpu_seconds`), which other load barely
inflates, so every figure is available for both.

`StudyInputs` snapshots every input text (and the budget constants it reads), so a recording replays byte-identically even after the example
datasets change; `run_study(live=True, record_to=…)` measures and writes the inputs and the cassette side by
side (``python -m overlay_kit.studies.cost`` re-records the stored default).
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import numpy as np

from ..budget import BLOCK_HEADING, BLOCK_INTRO, DEFAULT_CEILING
from ..llm.client import Cassette, LemonadeClient, Skipped
from ..prompt import Prompt, compose, count_tokens, reprefill_tokens
from ..resources import datasets_root
from ..skill import load_skill

__all__ = ["GrowthPoint", "Study", "StudyInputs", "TurnCost", "ceiling", "growth", "learned_fragment",
           "recall_plan", "regression", "regression_at", "run_study", "session", "study_client"]

DATASETS = datasets_root()
RECORDING = DATASETS / "cassettes" / "cost_of_learning"  # .inputs.json + .jsonl
SESSION_KINDS = (("prefix", "turn"), ("tail", "turn"), ("prefix", "session"))


@dataclass(frozen=True)
class StudyInputs:
    """Everything the study sends, fixed up front (seeded) and saved with a recording."""

    stable: str                                   # authored skill bodies: the stable prefix
    tools: str                                    # the tools block: volatile tail
    lessons: tuple[tuple[str, str], ...]          # (trigger, body) of tier-3 lessons, in a seeded order
    sizes: tuple[int, ...] = (0, 512, 1024, 2048, 4096)   # resident learned tokens to measure
    repeats: int = 5
    turns: int = 8
    recall_k: int = 3                             # lessons recalled per turn
    change_p: float = 0.5                         # chance the recalled set changes at a turn
    reply_tokens: int = 8
    seed: int = 0
    heading: str = f"{BLOCK_HEADING}\n\n{BLOCK_INTRO}"  # opens the learned block (the budget's, at record time)
    budget_ceiling: int = DEFAULT_CEILING          # the resident ceiling the regression is read at

    @classmethod
    def from_datasets(cls, *, full: bool = False, seed: int = 0) -> "StudyInputs":
        """The example skills (all but the 12k-token runbook) + the τ corpus lessons, shuffled by `seed`."""
        skills = [load_skill(p) for p in sorted((DATASETS / "skills").glob("*/SKILL.md"))]
        skills = [s for s in skills if count_tokens(s.body) < 2000]
        stable = "\n\n".join(s.body.strip() for s in skills)
        tools = sorted({t for s in skills for t in s.tools})
        tools_block = "## Tools available this turn\n\n" + "\n".join(f"- `{t}`" for t in tools)
        with (DATASETS / "tau" / "lessons.csv").open(encoding="utf-8") as fh:
            rows = [(r["trigger"], r["body"]) for r in csv.DictReader(fh)]
        order = np.random.default_rng(seed).permutation(len(rows))
        lessons = tuple(rows[i] for i in order)
        if full:
            return cls(stable, tools_block, lessons, sizes=(0, 1024, 2048, 4096, 8192, 16384, 24576, 28672),
                       repeats=3, turns=12, seed=seed)
        return cls(stable, tools_block, lessons, seed=seed)

    def save(self, path: Path, **meta) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"inputs": asdict(self), "meta": meta}, indent=1, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: Path) -> tuple["StudyInputs", dict]:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        d = data["inputs"]
        d["lessons"] = tuple(tuple(x) for x in d["lessons"])
        d["sizes"] = tuple(d["sizes"])
        return cls(**d), data.get("meta", {})


def learned_fragment(lessons: Sequence[tuple[str, str]], tokens: int | None = None,
                     heading: str = f"{BLOCK_HEADING}\n\n{BLOCK_INTRO}") -> str:
    """A learned-adjustments block of whole lessons, numbered; never cut mid-lesson.

    `tokens=None`: every lesson once. Else lessons in order, cycled, while the block stays within `tokens`.
    """
    if (tokens is not None and tokens <= 0) or not lessons:
        return ""
    head = heading + "\n"
    lines, used, i = [], count_tokens(head), 0
    while tokens is not None or i < len(lessons):
        trigger, body = lessons[i % len(lessons)]
        line = f"\n- ({i + 1}) When: {trigger} Then: {body}"
        n = count_tokens(line)
        if tokens is not None and used + n > tokens:
            break
        lines.append(line)
        used, i = used + n, i + 1
    return head + "".join(lines) if lines else ""


# ---------------------------------------------------------------------------------------------- growth

@dataclass(frozen=True)
class GrowthPoint:
    learned_target: int
    learned_tokens: int        # counted tokens of the learned fragment actually placed
    prompt_tokens: int         # counted tokens of the whole cold prompt
    repeat: int
    cold_ttft_s: float | None
    warm_ttft_s: float | None
    cold_cpu_s: float | None   # engine CPU seconds to the first token (local engine only)
    warm_cpu_s: float | None
    warm_reprefill: int        # tokens re-prefilled by the warm turn (prompt model)
    replayed: bool
    source: str                # the reply's label: live/replayed, model, backend, date


def _nonce(tag: str) -> str:
    return f"Session {tag}.\n\n"  # differs early, so a request never shares a cached prefix with the last one


def growth(client: LemonadeClient, model: str, inputs: StudyInputs) -> list[GrowthPoint]:
    """Cold and warm TTFT per learned size; the learned fragment sits in the stable prefix, resolved once.

    Sizes are interleaved within each repeat, so slow spells of a shared machine hit every size alike."""
    fragments = {size: learned_fragment(inputs.lessons, size, inputs.heading) for size in inputs.sizes}
    out = []
    for r in range(inputs.repeats):
        for size in inputs.sizes:
            learned = fragments[size]
            cold = compose(_nonce(f"g{size}-{r}") + inputs.stable, learned, inputs.tools, policy="prefix",
                           history=[("user", inputs.lessons[r % len(inputs.lessons)][0])])
            a = _send(client, model, cold, inputs)
            answered = cold.then("assistant", a.content)
            warm = answered.then("user", inputs.lessons[(r + 1) % len(inputs.lessons)][0])
            b = _send(client, model, warm, inputs)
            out.append(GrowthPoint(size, count_tokens(learned), count_tokens(cold.text), r, a.ttft_s, b.ttft_s,
                                   a.server_cpu_s, b.server_cpu_s, reprefill_tokens(answered, warm), a.replayed,
                                   a.label()))
    return sorted(out, key=lambda p: (p.learned_target, p.repeat))


def _send(client: LemonadeClient, model: str, prompt: Prompt, inputs: StudyInputs):
    return client.chat(model, prompt.messages(), max_completion_tokens=inputs.reply_tokens, stream=True,
                       temperature=0.0, seed=inputs.seed)


# --------------------------------------------------------------------------------------------- session

@dataclass(frozen=True)
class TurnCost:
    placement: str             # prefix | tail
    resolution: str            # turn (recalled per turn: the shipped path) | session (resolved at start)
    turn: int
    recall_changed: bool
    prompt_tokens: int
    reprefill: int             # tokens after the first changed byte vs the previous turn's prompt
    ttft_s: float | None
    cpu_s: float | None        # engine CPU seconds to the first token (local engine only)
    replayed: bool


def recall_plan(inputs: StudyInputs) -> list[tuple[int, ...]]:
    """Which lessons each turn's goal recalls (seeded): a new set with probability `change_p`, else the same."""
    rng = np.random.default_rng(inputs.seed + 1)
    n = len(inputs.lessons)
    plan = [tuple(int(i) for i in rng.choice(n, inputs.recall_k, replace=False))]
    for _ in range(inputs.turns - 1):
        plan.append(tuple(int(i) for i in rng.choice(n, inputs.recall_k, replace=False))
                    if rng.random() < inputs.change_p else plan[-1])
    return plan


def session(client: LemonadeClient, model: str, inputs: StudyInputs, placement: str,
            resolution: str = "turn") -> list[TurnCost]:
    """One multi-turn session; each turn's re-prefill tokens come from the prompt model, its TTFT from the
    engine. The model's own replies (live or replayed) go into the history."""
    plan = recall_plan(inputs)
    history: list[tuple[str, str]] = []
    prev: Prompt | None = None
    out = []
    for t, recalled in enumerate(plan):
        chosen = recalled if resolution == "turn" else plan[0]
        learned = learned_fragment([inputs.lessons[i] for i in chosen], None, inputs.heading)
        user = inputs.lessons[recalled[0]][0]
        prompt = compose(_nonce(f"s-{placement}-{resolution}") + inputs.stable, learned, inputs.tools,
                         policy=placement, history=history + [("user", user)])
        reply = _send(client, model, prompt, inputs)
        changed = resolution == "turn" and t > 0 and chosen != plan[t - 1]
        out.append(TurnCost(placement, resolution, t + 1, changed, count_tokens(prompt.text),
                            reprefill_tokens(prev, prompt), reply.ttft_s, reply.server_cpu_s, reply.replayed))
        history += [("user", user), ("assistant", reply.content)]
        prev = prompt.then("assistant", reply.content)
    return out


# ------------------------------------------------------------------------------------------ regression

def _bootstrap_ratio(x: np.ndarray, base: np.ndarray, seed: int, n: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    xs = np.median(rng.choice(x, (n, len(x))), axis=1)
    bs = np.median(rng.choice(base, (n, len(base))), axis=1)
    lo, hi = np.percentile(xs / bs - 1.0, [2.5, 97.5])
    return float(lo), float(hi)


def regression(points: Sequence[GrowthPoint], which: str = "cold", metric: str = "ttft", seed: int = 0) -> list[dict]:
    """Per learned size: the median of `metric` (``ttft`` wall seconds, or ``cpu`` engine CPU seconds to the
    first token) on `which` turns (``cold``/``warm``), and its regression vs the no-delta build (95 % bootstrap
    CI)."""
    key = f"{which}_{metric}_s"
    by = {}
    for p in points:
        if getattr(p, key) is not None:
            by.setdefault(p.learned_target, []).append(p)
    if 0 not in by:
        raise ValueError("regression needs the no-delta build (learned size 0) among the points")
    base = np.array([getattr(p, key) for p in by[0]])
    rows = []
    for size in sorted(by):
        x = np.array([getattr(p, key) for p in by[size]])
        lo, hi = _bootstrap_ratio(x, base, seed + size)
        rows.append({"learned_target": size, "learned_tokens": by[size][0].learned_tokens,
                     "prompt_tokens": by[size][0].prompt_tokens, "n": len(x), "median_s": float(np.median(x)),
                     "regression": float(np.median(x) / np.median(base) - 1.0), "ci_low": lo, "ci_high": hi})
    return rows


def _crossing(points: Sequence[tuple[float, float]], limit: float) -> float | None:
    """First x where the piecewise-linear curve through `points` (sorted by x) rises above `limit`."""
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if y1 > limit:
            return x0 if y0 >= limit else x0 + (limit - y0) * (x1 - x0) / (y1 - y0)
    return None


def ceiling(rows: Sequence[dict], limit: float = 0.02) -> dict:
    """Largest learned size whose regression vs the no-delta build stays ≤ `limit` (2 %).

    Model-free: the measured median regressions are joined by straight lines and the first crossing of
    `limit` is read off; prefill cost is convex in prompt length, so a chord errs towards a lower ceiling.
    `range` repeats this with the upper and lower ends of the bootstrap intervals (the no-delta build is the
    reference, so its own regression is 0). `ceiling_tokens` is None with `beyond_measured` when no measured
    size exceeds the limit.
    """
    rows = sorted(rows, key=lambda r: r["learned_tokens"])

    def series(key: str) -> list[tuple[float, float]]:
        return [(r["learned_tokens"], 0.0 if r["learned_tokens"] == 0 else r[key]) for r in rows]

    mid, low, high = (_crossing(series(k), limit) for k in ("regression", "ci_high", "ci_low"))
    as_int = lambda v: None if v is None else int(v)  # noqa: E731
    return {"ceiling_tokens": as_int(mid), "range": (as_int(low), as_int(high)), "beyond_measured": mid is None,
            "limit": limit}


def regression_at(rows: Sequence[dict], learned_tokens: float) -> tuple[float, bool]:
    """The median regression at `learned_tokens`, interpolated between measured sizes; past the largest size,
    extrapolated along the last two (the flag says so)."""
    xs = np.array([r["learned_tokens"] for r in rows], float)
    ys = np.array([r["regression"] for r in rows], float)
    order = np.argsort(xs)
    xs, ys = xs[order], ys[order]
    if learned_tokens <= xs[-1]:
        return float(np.interp(learned_tokens, xs, ys)), False
    slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    return float(ys[-1] + slope * (learned_tokens - xs[-1])), True


# ------------------------------------------------------------------------------------- clients, record

@dataclass(frozen=True)
class Study:
    inputs: StudyInputs
    growth: tuple[GrowthPoint, ...]
    sessions: tuple[TurnCost, ...]
    model: str
    note: str                  # where the numbers come from: replayed (with date, engine) or live


def study_client(live: bool, recording: Path = RECORDING, record_to: Path | None = None):
    """(client, model, engine, note) for the study.

    Not live: replay `recording` (.inputs.json + .jsonl), no network. Live: a Lemonade server if one answers
    at the configured URL (its first loaded model), else the local random-weight engine (started here; the
    caller stops `engine`). With `record_to`, live replies are also recorded there.
    """
    from ..llm.engine import Engine, EngineUnavailable

    if not live:
        cas_path = recording.with_suffix(".jsonl")
        if not cas_path.is_file() or not recording.with_suffix(".inputs.json").is_file():
            raise Skipped(f"no recording at {cas_path} and no live model requested (set FULL=1)")
        _, meta = StudyInputs.load(recording.with_suffix(".inputs.json"))
        client = LemonadeClient("http://127.0.0.1:9/v1", cassette=Cassette(cas_path), mode="replay")
        return client, meta["model"], None, (f"replayed: recorded {meta['recorded_at']} against "
                                             f"{meta['model']} — {meta['engine']}")
    cassette = Cassette(record_to.with_suffix(".jsonl"), record=True) if record_to else None
    mode = "record" if cassette is not None else "live"
    probe = LemonadeClient(retries=0)
    health = probe.health()
    if health.up and health.loaded:
        model = health.loaded[0][0]
        info = probe.model_info(model)
        engine_id = f"Lemonade at {probe.base_url}, {model} ({info.backend})"
        if cassette is not None:
            cassette.engine = engine_id
        return LemonadeClient(cassette=cassette, mode=mode), model, None, f"live: {engine_id}"
    why = (f"Lemonade at {probe.base_url} has no model loaded (load one to measure it)" if health.up
           else f"no Lemonade server answered at {probe.base_url}")
    try:
        engine = Engine().start()
    except EngineUnavailable as exc:
        raise Skipped(f"{why} and the local engine is missing: {exc}") from exc
    if cassette is not None:
        cassette.engine = engine.id
    client = LemonadeClient(engine.base_url, cassette=cassette, mode=mode, meter=engine.cpu_seconds)
    return client, engine.alias, engine, f"live: {engine.id} (random weights — cost only; {why})"


def run_study(*, live: bool = False, full: bool = False, recording: Path = RECORDING,
              record_to: Path | None = None) -> Study:
    """The whole study. Default: replay `recording` with its saved inputs. `live=True`: measure now (inputs
    from the datasets; `full` = the big grid up to the 32K window), recording to `record_to` if given."""
    client, model, engine, note = study_client(live, recording, record_to)
    inputs = StudyInputs.from_datasets(full=full) if live else StudyInputs.load(recording.with_suffix(".inputs.json"))[0]
    try:
        points = growth(client, model, inputs)
        turns = [t for p, r in SESSION_KINDS for t in session(client, model, inputs, p, r)]
        if record_to is not None:
            client.cassette.save()
            inputs.save(record_to.with_suffix(".inputs.json"), model=model, engine=client.cassette.engine,
                        note=note, recorded_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    finally:
        client.close()
        if engine is not None:
            engine.stop()
    return Study(inputs, tuple(points), tuple(turns), model, note)


if __name__ == "__main__":  # python -m overlay_kit.studies.cost [--full] [OUT]: record the study live
    import sys

    args = [a for a in sys.argv[1:] if a != "--full"]
    out = Path(args[0]) if args else RECORDING
    run_study(live=True, full="--full" in sys.argv[1:], record_to=out)
    print(out.with_suffix(".jsonl"), out.with_suffix(".inputs.json"))
