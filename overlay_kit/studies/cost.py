"""The cost of learning: what resident learned tokens and their placement do to prefill and time to first token.

COST ONLY. Two local engines run the same prompts (overlay_kit.llm.engine): the random-weight llama (its prefill
work, TTFT and KV-prefix reuse are real, its text is meaningless) and a real quantized model (SmolLM2-135M-Instruct
Q4_1 by default, or any GGUF / Lemonade server). Nothing here judges answers.

    result = run()               # replay the stored recordings (RECORDINGS), no network
    result.table(); result.resolution(); result.on_change(); result.finding(); result.chart()

Measurements, each a function of a chat client (live, recording, or replaying a cassette):

* `growth` — cold TTFT (session start, nothing cached) and warm TTFT (the next turn, prefix cached) as the
  resident learned fragment grows from 0 (the no-delta build), densely at small sizes;
* `session` — a multi-turn session where each turn's goal recalls different lessons; per turn, the
  re-prefill tokens (`prompt.reprefill_tokens`) and the measured TTFT, for the learned fragment in the
  stable prefix vs the volatile tail, and resolved once per session;
* `regression` — cost at each learned size relative to the no-delta build (median ratio, bootstrap interval);
  `growth_slope` — relative growth per 1,000 learned tokens over the small sizes;
* `mde` / `resolve_ceiling` — the minimal detectable effect of the no-delta build's own spread, and the rule
  (fixed before the data) that states a 2 % ceiling only where the MDE is at most 2 %.

What transfers between engines: re-prefill tokens (counts from the prompts) and, as far as prefill cost has the
same shape, relative growth; absolute TTFT does not (model size, quantization, machine). Wall-clock TTFT is the
KPI, but on a shared machine it is noisy; against a local engine each reply also carries the engine's CPU seconds
to the first token (`Engine.cpu_seconds`), which other load barely inflates.

`StudyInputs` snapshots every input text (and the budget constants it reads), so a recording replays
byte-identically even after the example datasets change; `run_study(live=True, record_to=…)` measures one engine
and writes the inputs (with model, quantization, machine, date) and the cassette side by side;
``python -m overlay_kit.studies.cost [OUT_DIR]`` re-records both engines.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from statistics import NormalDist
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..budget import DEFAULT_CEILING
from ..grammar import BLOCK_HEADING, BLOCK_INTRO
from ..llm.client import Cassette, LemonadeClient, Skipped
from ..prompt import Prompt, compose, count_tokens, reprefill_tokens
from ..resources import datasets_root
from ..skill import load_skill

__all__ = ["RECORDINGS", "CostResult", "GrowthPoint", "Study", "StudyInputs", "TurnCost", "ceiling", "growth",
           "growth_slope", "learned_fragment", "mde", "measure", "recall_plan", "regression", "regression_at",
           "resolve_ceiling", "run", "run_study", "session", "study_client"]

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
    def from_datasets(cls, *, full: bool = False, seed: int = 0, real: bool = False,
                      max_skill_tokens: int = 200) -> "StudyInputs":
        """The example skills of under `max_skill_tokens` tokens (a ~500-token authored prefix, small enough for a
        real model's cold prefill on 2 cores) + the τ corpus lessons, shuffled by `seed`.

        Learned sizes are dense below 500 tokens (whole lessons: 77, 127, 184, 244, 343, 456 tokens), where a
        2 % ceiling would lie. `real`: the grid for a real model on a CPU (up to 1,000 learned tokens, 5
        repeats); else up to 4,000 with 20 repeats. `full`: the big grid up to the 32K window."""
        skills = [load_skill(p) for p in sorted((DATASETS / "skills").glob("*/SKILL.md"))]
        skills = [s for s in skills if count_tokens(s.body) < max_skill_tokens]
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
        dense = (0, 80, 130, 190, 250, 350, 460, 1000)
        if real:
            return cls(stable, tools_block, lessons, sizes=dense, repeats=5, turns=6, seed=seed)
        return cls(stable, tools_block, lessons, sizes=dense + (2000, 4000), repeats=20, seed=seed)

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


# ------------------------------------------------------------------------- resolution: what the data can see

def mde(points: Sequence[GrowthPoint], which: str = "cold", metric: str = "cpu", *, alpha: float = 0.05,
        power: float = 0.8) -> dict:
    """The minimal detectable effect of the no-delta build's own spread: the smallest relative regression a
    two-sample comparison with this many repeats detects (two-sided `alpha`, `power`), from the robust spread of
    log(`metric`) at learned size 0 (1.4826 × MAD). {n, median_s, log_sd, mde}."""
    base = np.array([getattr(p, f"{which}_{metric}_s") for p in points
                     if p.learned_target == 0 and getattr(p, f"{which}_{metric}_s") is not None], float)
    if len(base) < 2:
        raise ValueError("the minimal detectable effect needs at least two no-delta measurements")
    logs = np.log(base)
    sd = 1.4826 * float(np.median(np.abs(logs - np.median(logs)))) or float(np.std(logs, ddof=1))
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return {"n": len(base), "median_s": float(np.median(base)), "log_sd": sd,
            "mde": float(np.exp(z * sd * np.sqrt(2 / len(base))) - 1)}


SMALL = 500  # learned tokens: the dense small sizes, where a ceiling of a few per cent would lie


def growth_slope(points: Sequence[GrowthPoint], which: str = "cold", metric: str = "cpu", seed: int = 0,
                 n: int = 2000, max_learned: int | None = SMALL) -> tuple[float, float, float]:
    """Relative growth per 1,000 learned tokens over the sizes up to `max_learned` (prefill is convex, so one
    line over all sizes would be dominated by the largest): the least-squares line through the origin of the
    median regressions (vs the no-delta build) on learned tokens, with a 95 % bootstrap interval (requests
    resampled within each size). (slope, low, high)."""
    key = f"{which}_{metric}_s"
    by: dict[int, list[GrowthPoint]] = {}
    for p in points:
        if getattr(p, key) is not None and (max_learned is None or p.learned_tokens <= max_learned):
            by.setdefault(p.learned_target, []).append(p)
    sizes = sorted(k for k in by if k != 0)
    t = np.array([by[k][0].learned_tokens / 1000 for k in sizes])
    vals = [np.array([getattr(p, key) for p in by[k]]) for k in [0, *sizes]]

    def fit(medians: np.ndarray) -> np.ndarray:  # medians: (..., 1 + len(sizes)), the no-delta build first
        r = medians[..., 1:] / medians[..., :1] - 1
        return r @ t / (t @ t)

    rng = np.random.default_rng(seed)
    boots = fit(np.stack([np.median(rng.choice(v, (n, len(v))), axis=1) for v in vals], axis=1))
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return float(fit(np.array([np.median(v) for v in vals]))), float(lo), float(hi)


def resolve_ceiling(rows: Sequence[dict], spread: dict, limit: float = 0.02) -> dict:
    """The decision rule, fixed before the data: a `limit` ceiling is stated only where the baseline's minimal
    detectable effect is at most `limit`; otherwise the data cannot resolve it and no ceiling is stated. Either
    way, `detected_at` is the smallest learned size whose regression interval lies wholly above 0."""
    resolvable = spread["mde"] <= limit
    detected = next((r["learned_tokens"] for r in sorted(rows, key=lambda r: r["learned_tokens"])
                     if r["learned_tokens"] > 0 and r["ci_low"] > 0), None)
    out = {"limit": limit, "mde": spread["mde"], "resolvable": resolvable, "detected_at": detected,
           "ceiling_tokens": None, "range": (None, None)}
    if resolvable:
        fit = ceiling(rows, limit)
        out.update(ceiling_tokens=fit["ceiling_tokens"], range=fit["range"])
    return out


# ------------------------------------------------------------------------------------- clients, record

@dataclass(frozen=True)
class Study:
    """One engine's measurement: growth points and session turns, with where they come from."""

    inputs: StudyInputs
    growth: tuple[GrowthPoint, ...]
    sessions: tuple[TurnCost, ...]
    model: str
    note: str                  # where the numbers come from: replayed (with date, machine, engine) or live
    kind: str = "random-weight"  # random-weight | real-weight
    meta: Mapping = field(default_factory=dict)


def study_client(live: bool, recording: Path = RECORDING, record_to: Path | None = None, *,
                 model_path: str | Path | None = None, base_url: str | None = None, local: bool = False):
    """(client, model, engine, note) for the study.

    Not live: replay `recording` (.inputs.json + .jsonl), no network. Live: `base_url` (a Lemonade or other
    OpenAI-compatible server: its loaded model), else `model_path` (a GGUF served here by the local engine), else
    a Lemonade server if one answers at the configured URL (unless `local`), else the random-weight engine
    (started here; the caller stops `engine`). With `record_to`, live replies are also recorded there.
    """
    from ..llm.engine import Engine, EngineUnavailable, machine_id

    if not live:
        cas_path = recording.with_suffix(".jsonl")
        if not cas_path.is_file() or not recording.with_suffix(".inputs.json").is_file():
            raise Skipped(f"no recording at {cas_path} and no live model requested (set FULL=1)")
        _, meta = StudyInputs.load(recording.with_suffix(".inputs.json"))
        client = LemonadeClient("http://127.0.0.1:9/v1", cassette=Cassette(cas_path), mode="replay")
        where = f" on {meta['machine']}" if meta.get("machine") else ""
        return client, meta["model"], None, (f"replayed: recorded {meta['recorded_at']}{where} against "
                                             f"{meta['model']} — {meta['engine']}")
    cassette = Cassette(record_to.with_suffix(".jsonl"), record=True) if record_to else None
    mode = "record" if cassette is not None else "live"
    if model_path is None and not local:
        probe = LemonadeClient(base_url, retries=0)
        health = probe.health()
        if health.up and (health.loaded or base_url):
            model = health.loaded[0][0] if health.loaded else probe.models()[0].id
            info = probe.model_info(model)
            engine_id = f"Lemonade at {probe.base_url}, {model} ({info.backend})"
            if cassette is not None:
                cassette.engine = engine_id
            return (LemonadeClient(base_url, cassette=cassette, mode=mode), model, None,
                    f"live: {engine_id}; {machine_id()} (client)")
        if base_url:
            raise Skipped(f"no model server answered at {probe.base_url}")
        why = (f"Lemonade at {probe.base_url} has no model loaded (load one to measure it)" if health.up
               else f"no Lemonade server answered at {probe.base_url}")
    else:
        why = "a local model file" if model_path else "the local random-weight engine, as asked"
    try:
        engine = Engine(model_path).start()
    except EngineUnavailable as exc:
        raise Skipped(f"{why} and the local engine is missing: {exc}") from exc
    if cassette is not None:
        cassette.engine = f"{engine.id}; {machine_id()}"  # every record names model, quantization and machine
    client = LemonadeClient(engine.base_url, cassette=cassette, mode=mode, meter=engine.cpu_seconds,
                            transport=engine.transport())  # a server that dies is reported as the crash
    what = "real weights" if engine.real else "random weights — cost only"
    return client, engine.alias, engine, f"live: {engine.id}; {machine_id()} ({what}; {why})"


def measure(client: LemonadeClient, model: str, inputs: StudyInputs, *, sessions: bool = True
            ) -> tuple[list[GrowthPoint], list[TurnCost]]:
    """Growth at every size, then (optionally) the three session arrangements."""
    points = growth(client, model, inputs)
    turns = [t for p, r in SESSION_KINDS for t in session(client, model, inputs, p, r)] if sessions else []
    return points, turns


def run_study(*, live: bool = False, full: bool = False, recording: Path = RECORDING,
              record_to: Path | None = None, model_path: str | Path | None = None, base_url: str | None = None,
              local: bool = False, inputs: StudyInputs | None = None, sessions: bool = True) -> Study:
    """One engine's study. Default: replay `recording` with its saved inputs. `live=True`: measure now (inputs
    from the datasets — the real-model grid for a model file or server, `full` = the big grid up to the 32K
    window — unless `inputs` are given), recording to `record_to` if given."""
    from ..llm.engine import machine_id

    client, model, engine, note = study_client(live, recording, record_to, model_path=model_path,
                                               base_url=base_url, local=local)
    real = bool(model_path or base_url) or (engine is None and live) or (engine is not None and engine.real)
    if live:
        inputs = inputs or StudyInputs.from_datasets(full=full, real=real)
        meta = {"model": model, "engine": client.cassette.engine if client.cassette is not None else note,
                "machine": machine_id(), "kind": "real-weight" if real else "random-weight",
                "quantization": engine.card.quantization if engine is not None and engine.card else None}
    else:
        inputs, meta = StudyInputs.load(recording.with_suffix(".inputs.json"))
    try:
        points, turns = measure(client, model, inputs, sessions=sessions)
        if record_to is not None:
            client.cassette.save()
            meta["recorded_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            inputs.save(record_to.with_suffix(".inputs.json"), note=note, **meta)
    finally:
        client.close()
        if engine is not None:
            engine.stop()
    return Study(inputs, tuple(points), tuple(turns), model, note, meta.get("kind", "random-weight"), dict(meta))


# ------------------------------------------------------------------------------------------- the study

MEASURES = (("cold", "cpu"), ("cold", "ttft"), ("warm", "cpu"), ("warm", "ttft"))


@dataclass(frozen=True)
class CostResult:
    """The cost-of-learning study over one or more engines (random weights, real weights).

    Rules fixed before the data: (1) a 2 % ceiling is stated only where the no-delta build's minimal detectable
    effect is ≤ 2 % (`resolve_ceiling`); (2) relative cold-start growth transfers from the random-weight to the
    real-weight engine when their growth-slope intervals overlap; (3) the placement with fewer re-prefilled
    tokens on turns whose recall changed is the one to ship — re-prefill tokens are counts from the prompts,
    the same for any model. Absolute TTFT is reported per engine and never carried across."""

    studies: tuple[Study, ...]
    limit: float = 0.02

    def study(self, kind: str) -> Study:
        return next(s for s in self.studies if s.kind == kind)

    @property
    def note(self) -> str:
        return "\n".join(f"{s.kind}: {s.note}" for s in self.studies)

    def table(self) -> pd.DataFrame:
        """Per engine, turn (cold/warm), measure and learned size: median seconds and the regression vs the
        no-delta build with its 95 % bootstrap interval."""
        rows = []
        for s in self.studies:
            for which, metric in MEASURES:
                if all(getattr(p, f"{which}_{metric}_s") is None for p in s.growth):
                    continue  # engine CPU is read only from a local engine
                for r in regression(s.growth, which, metric):
                    rows.append({"engine": s.kind, "turn": which, "measure": _MEASURE[metric], **r})
        return pd.DataFrame(rows)

    def resolution(self) -> pd.DataFrame:
        """Per engine, turn and measure: the baseline's spread and MDE, the relative growth per 1,000 learned
        tokens over the sizes up to `SMALL`, and what the 2 % rule allows to be said."""
        return self._resolution.copy()

    @cached_property
    def _resolution(self) -> pd.DataFrame:
        rows = []
        for s in self.studies:
            for which, metric in MEASURES:
                if all(getattr(p, f"{which}_{metric}_s") is None for p in s.growth):
                    continue
                spread = mde(s.growth, which, metric)
                res = resolve_ceiling(regression(s.growth, which, metric), spread, self.limit)
                slope = growth_slope(s.growth, which, metric)
                rows.append({"engine": s.kind, "turn": which, "measure": _MEASURE[metric],
                             "no-delta median s": spread["median_s"], "n": spread["n"], "MDE": spread["mde"],
                             "growth per 1k learned": slope[0], "growth low": slope[1], "growth high": slope[2],
                             "first detected (learned tokens)": res["detected_at"],
                             f"{self.limit:.0%} resolvable": res["resolvable"],
                             f"{self.limit:.0%} ceiling (learned tokens)": res["ceiling_tokens"]})
        return pd.DataFrame(rows)

    def sessions(self) -> pd.DataFrame:
        """Re-prefill tokens and cost on the turns whose recall changed, per engine and arrangement."""
        rows = []
        for s in self.studies:
            changed = {t.turn for t in s.sessions if t.recall_changed}
            for t in s.sessions:
                rows.append({"engine": s.kind, "arrangement": f"{t.placement}, "
                             + ("recalled per turn" if t.resolution == "turn" else "once per session"),
                             "turn": t.turn, "recall changed": t.turn in changed, "reprefill": t.reprefill,
                             "ttft_s": t.ttft_s, "cpu_s": t.cpu_s})
        return pd.DataFrame(rows)

    def on_change(self) -> pd.DataFrame:
        df = self.sessions()
        return (df[df["recall changed"]].groupby(["engine", "arrangement"])
                .agg(turns=("turn", "size"), reprefill_median=("reprefill", "median"),
                     ttft_median_s=("ttft_s", "median"), cpu_median_s=("cpu_s", "median")).round(3))

    def finding(self) -> str:
        """The verdicts, each computed by the rule stated in the class docstring from the tables shown."""
        res = self.resolution().set_index(["engine", "turn", "measure"])
        out = []
        kinds = [s.kind for s in self.studies]
        measure = "engine CPU" if (res.index.get_level_values("measure") == "engine CPU").any() else "wall TTFT"
        for s in self.studies:
            r = res.loc[(s.kind, "cold", measure)]
            if r[f"{self.limit:.0%} resolvable"]:
                verdict = (f"the {self.limit:.0%} ceiling is ~{r[f'{self.limit:.0%} ceiling (learned tokens)']} "
                           f"learned tokens")
            else:
                verdict = (f"a {self.limit:.0%} ceiling cannot be resolved: the no-delta build's own spread gives a "
                           f"minimal detectable effect of {r['MDE']:.1%} with n = {r['n']}, so no ceiling is stated")
            seen = r["first detected (learned tokens)"]
            seen = int(seen) if pd.notna(seen) else None
            out.append(f"- **{s.kind}** ({s.model}), cold start, {measure}: {verdict}. A regression is first "
                       f"detected at {seen if seen is not None else 'no measured'} learned tokens; growth "
                       f"{r['growth per 1k learned']:+.1%} per 1,000 learned tokens (sizes ≤ {SMALL}) "
                       f"[{r['growth low']:+.1%}, {r['growth high']:+.1%}] over a "
                       f"{count_tokens(s.inputs.stable):,}-token authored prefix.")
        if {"random-weight", "real-weight"} <= set(kinds):
            a, b = res.loc[("random-weight", "cold", measure)], res.loc[("real-weight", "cold", measure)]
            overlap = a["growth low"] <= b["growth high"] and b["growth low"] <= a["growth high"]
            out.append(f"- **Transfer.** Relative cold-start growth is "
                       f"{'consistent' if overlap else 'not consistent'} between the engines (intervals "
                       f"{'overlap — consistent, not shown equal' if overlap else 'do not overlap'}): random-weight "
                       f"{a['growth per 1k learned']:+.1%}, real-weight {b['growth per 1k learned']:+.1%} per 1,000 "
                       f"learned tokens. Absolute TTFT does not transfer: the no-delta cold start costs "
                       f"{a['no-delta median s']:.2f} s on the random-weight engine and {b['no-delta median s']:.2f} s "
                       f"on the real one ({measure}), {b['no-delta median s'] / a['no-delta median s']:.0f}x — "
                       f"a property of the model, its quantization and this machine.")
        oc = self.on_change()
        for kind in kinds:
            if kind not in oc.index.get_level_values(0):
                continue
            o = oc.loc[kind]
            p, t = o.loc["prefix, recalled per turn"], o.loc["tail, recalled per turn"]
            better = "tail" if t.reprefill_median < p.reprefill_median else "prefix"
            out.append(f"- **Placement ({kind}).** On the {int(p.turns)} turns whose recall changed, the prefix "
                       f"placement re-prefilled a median {p.reprefill_median:,.0f} tokens vs {t.reprefill_median:,.0f} "
                       f"for the tail; resolved once per session, "
                       f"{o.loc['prefix, once per session'].reprefill_median:,.0f}. Put what may change mid-session in "
                       f"the {better}. These are token counts from the prompts: they hold for any model.")
        return "\n".join(out)


_MEASURE = {"cpu": "engine CPU", "ttft": "wall TTFT"}
RECORDINGS = {"random-weight": RECORDING, "real-weight": DATASETS / "cassettes" / "cost_of_learning_smollm2"}


def run(*, live: bool = False, full: bool = False, record_to: Path | None = None,
        model_path: str | Path | None = None, base_url: str | None = None, limit: float = 0.02) -> CostResult:
    """The study over the random-weight engine and a real model. Default: replay the stored recordings
    (`RECORDINGS`, no network). `live=True` re-measures both: the random-weight engine here, and the real model
    at `base_url`, else `model_path`, else the installed SmolLM2-135M; recordings go to folder `record_to`."""
    if not live:
        return CostResult(tuple(run_study(recording=r) for r in RECORDINGS.values()
                                if r.with_suffix(".jsonl").is_file()), limit)
    from ..llm.engine import smollm2_path

    out = [run_study(live=True, full=full, local=True,
                     record_to=record_to / RECORDING.name if record_to else None)]
    model_path = model_path or (None if base_url else smollm2_path())
    if model_path or base_url:
        name = RECORDINGS["real-weight"].name
        out.append(run_study(live=True, full=full, model_path=model_path, base_url=base_url,
                             record_to=record_to / name if record_to else None))
    return CostResult(tuple(out), limit)


if __name__ == "__main__":  # python -m overlay_kit.studies.cost [--full] [OUT_DIR]: re-record the studies live
    import sys

    args = [a for a in sys.argv[1:] if a != "--full"]
    out_dir = Path(args[0]) if args else RECORDING.parent
    result = run(live=True, full="--full" in sys.argv[1:], record_to=out_dir)
    print(result.note)
    print(result.finding())
