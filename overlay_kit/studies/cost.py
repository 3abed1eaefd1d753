"""The cost of learning: what resident learned tokens and their placement do to prefill and time to first token.

COST ONLY. Two local engines run the same prompts (overlay_kit.llm.engine): the random-weight llama (its prefill
work, TTFT and KV-prefix reuse are real, its text is meaningless) and a real quantized model (SmolLM2-135M-Instruct
Q4_1 by default, or any GGUF / Lemonade server). Nothing here judges answers.

    result = run()               # replay the stored recordings (RECORDINGS), no network
    result.rule.stamp(); result.ceilings(); result.table(); result.resolution(); result.on_change()
    result.finding()

Measurements, each a function of a chat client (live, recording, or replaying a cassette):

* `growth` — cold TTFT (session start, nothing cached) and warm TTFT (the next turn, prefix cached) as the
  resident learned fragment grows from 0 (the no-delta build), densely at small sizes;
* `session` — a multi-turn session where each turn's goal recalls different lessons; per turn, the
  re-prefill tokens (`prompt.reprefill_tokens`) and the measured TTFT, for the learned fragment in the
  stable prefix vs the volatile tail, and resolved once per session;
* `regression` — cost at each learned size relative to the no-delta build (median ratio; bootstrap interval
  over repeats, the study's independent unit); `growth_slope` — relative growth per 1,000 learned tokens over
  the small sizes; `mde` — the minimal detectable effect of the no-delta build's own spread;
* `supported_ceiling` / `target_verdict` / `combine_verdicts` — the decision rule, fixed before the data in
  `datasets/rules/08_cost_of_learning.yaml` (`RULE`): per TTFT bound, the largest resident learned size whose
  regression's upper interval end stays within it, and whether the seed's ≤ 2 % target is attainable.

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
import warnings
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from statistics import NormalDist
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..defaults import SHIPPED
from ..grammar import BLOCK_HEADING, BLOCK_INTRO
from ..llm.client import Cassette, LemonadeClient, Skipped
from ..prompt import Prompt, compose, count_tokens, reprefill_tokens
from ..resources import datasets_root
from ..skill import load_skill
from . import rulefile
from .finding import Finding, render

__all__ = [
    "RECORDINGS",
    "RULE",
    "CostResult",
    "GrowthPoint",
    "Study",
    "StudyInputs",
    "TurnCost",
    "combine_verdicts",
    "growth",
    "growth_slope",
    "learned_fragment",
    "mde",
    "measure",
    "recall_plan",
    "regression",
    "regression_at",
    "run",
    "run_study",
    "session",
    "study_client",
    "supported_ceiling",
    "target_verdict",
]

DATASETS = datasets_root()
RECORDING = DATASETS / "cassettes" / "cost_of_learning"  # .inputs.json + .jsonl
SESSION_KINDS = (("prefix", "turn"), ("tail", "turn"), ("prefix", "session"))
RULE = "08_cost_of_learning"  # datasets/rules/08_cost_of_learning.yaml: the ceiling rule, fixed first


@dataclass(frozen=True)
class StudyInputs:
    """Everything the study sends, fixed up front (seeded) and saved with a recording."""

    stable: str  # authored skill bodies: the stable prefix
    tools: str  # the tools block: volatile tail
    lessons: tuple[tuple[str, str], ...]  # (trigger, body) of tier-3 lessons, in a seeded order
    sizes: tuple[int, ...] = (0, 512, 1024, 2048, 4096)  # resident learned tokens to measure
    repeats: int = 5
    turns: int = 8
    recall_k: int = 3  # lessons recalled per turn
    change_p: float = 0.5  # chance the recalled set changes at a turn
    reply_tokens: int = 8
    seed: int = 0
    heading: str = f"{BLOCK_HEADING}\n\n{BLOCK_INTRO}"  # opens the learned block (the budget's, at record time)
    budget_ceiling: int = SHIPPED.ceiling  # the resident ceiling the regression is read at

    @classmethod
    def from_datasets(
        cls, *, full: bool = False, seed: int = 0, real: bool = False, max_skill_tokens: int = 200
    ) -> "StudyInputs":
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
            return cls(
                stable,
                tools_block,
                lessons,
                sizes=(0, 1024, 2048, 4096, 8192, 16384, 24576, 28672),
                repeats=3,
                turns=12,
                seed=seed,
            )
        dense = (0, 80, 130, 190, 250, 350, 460, 1000)
        if real:
            return cls(stable, tools_block, lessons, sizes=dense, repeats=5, turns=6, seed=seed)
        return cls(stable, tools_block, lessons, sizes=dense + (2000, 4000), repeats=20, seed=seed)

    def save(self, path: Path, **meta) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps({"inputs": asdict(self), "meta": meta}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: Path) -> tuple["StudyInputs", dict]:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        d = data["inputs"]
        d["lessons"] = tuple(tuple(x) for x in d["lessons"])
        d["sizes"] = tuple(d["sizes"])
        return cls(**d), data.get("meta", {})


def learned_fragment(
    lessons: Sequence[tuple[str, str]], tokens: int | None = None, heading: str = f"{BLOCK_HEADING}\n\n{BLOCK_INTRO}"
) -> str:
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
    learned_tokens: int  # counted tokens of the learned fragment actually placed
    prompt_tokens: int  # counted tokens of the whole cold prompt
    repeat: int
    cold_ttft_s: float | None
    warm_ttft_s: float | None
    cold_cpu_s: float | None  # engine CPU seconds to the first token (local engine only)
    warm_cpu_s: float | None
    warm_reprefill: int  # tokens re-prefilled by the warm turn (prompt model)
    replayed: bool
    source: str  # the reply's label: live/replayed, model, backend, date


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
            cold = compose(
                _nonce(f"g{size}-{r}") + inputs.stable,
                learned,
                inputs.tools,
                policy="prefix",
                history=[("user", inputs.lessons[r % len(inputs.lessons)][0])],
            )
            a = _send(client, model, cold, inputs)
            answered = cold.then("assistant", a.content)
            warm = answered.then("user", inputs.lessons[(r + 1) % len(inputs.lessons)][0])
            b = _send(client, model, warm, inputs)
            out.append(
                GrowthPoint(
                    size,
                    count_tokens(learned),
                    count_tokens(cold.text),
                    r,
                    a.ttft_s,
                    b.ttft_s,
                    a.server_cpu_s,
                    b.server_cpu_s,
                    reprefill_tokens(answered, warm),
                    a.replayed,
                    a.label(),
                )
            )
    return sorted(out, key=lambda p: (p.learned_target, p.repeat))


def _send(client: LemonadeClient, model: str, prompt: Prompt, inputs: StudyInputs):
    return client.chat(
        model,
        prompt.messages(),
        max_completion_tokens=inputs.reply_tokens,
        stream=True,
        temperature=0.0,
        seed=inputs.seed,
    )


# --------------------------------------------------------------------------------------------- session


@dataclass(frozen=True)
class TurnCost:
    placement: str  # prefix | tail
    resolution: str  # turn (recalled per turn: the shipped path) | session (resolved at start)
    turn: int
    recall_changed: bool
    prompt_tokens: int
    reprefill: int  # tokens after the first changed byte vs the previous turn's prompt
    ttft_s: float | None
    cpu_s: float | None  # engine CPU seconds to the first token (local engine only)
    replayed: bool


def recall_plan(inputs: StudyInputs) -> list[tuple[int, ...]]:
    """Which lessons each turn's goal recalls (seeded): a new set with probability `change_p`, else the same."""
    rng = np.random.default_rng(inputs.seed + 1)
    n = len(inputs.lessons)
    plan = [tuple(int(i) for i in rng.choice(n, inputs.recall_k, replace=False))]
    for _ in range(inputs.turns - 1):
        plan.append(
            tuple(int(i) for i in rng.choice(n, inputs.recall_k, replace=False))
            if rng.random() < inputs.change_p
            else plan[-1]
        )
    return plan


def session(
    client: LemonadeClient, model: str, inputs: StudyInputs, placement: str, resolution: str = "turn"
) -> list[TurnCost]:
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
        prompt = compose(
            _nonce(f"s-{placement}-{resolution}") + inputs.stable,
            learned,
            inputs.tools,
            policy=placement,
            history=history + [("user", user)],
        )
        reply = _send(client, model, prompt, inputs)
        changed = resolution == "turn" and t > 0 and chosen != plan[t - 1]
        out.append(
            TurnCost(
                placement,
                resolution,
                t + 1,
                changed,
                count_tokens(prompt.text),
                reprefill_tokens(prev, prompt),
                reply.ttft_s,
                reply.server_cpu_s,
                reply.replayed,
            )
        )
        history += [("user", user), ("assistant", reply.content)]
        prev = prompt.then("assistant", reply.content)
    return out


# ------------------------------------------------------------------------------------------ regression


def _by_repeat(
    points: Sequence[GrowthPoint], key: str, max_learned: int | None = None
) -> tuple[list[int], list[GrowthPoint], np.ndarray]:
    """(learned targets, one point per target, a repeats × targets matrix of `key`, NaN where not measured).

    The repeat is the independent unit: one pass over every size, sizes interleaved within it."""
    by: dict[int, list[GrowthPoint]] = {}
    for p in points:
        if getattr(p, key) is not None and (max_learned is None or p.learned_tokens <= max_learned):
            by.setdefault(p.learned_target, []).append(p)
    if 0 not in by:
        raise ValueError("the regression needs the no-delta build (learned size 0) among the points")
    targets = sorted(by)
    repeats = sorted({p.repeat for ps in by.values() for p in ps})
    row = {r: i for i, r in enumerate(repeats)}
    m = np.full((len(repeats), len(targets)), np.nan)
    for j, t in enumerate(targets):
        for p in by[t]:
            m[row[p.repeat], j] = getattr(p, key)
    return targets, [by[t][0] for t in targets], m


def _boot_medians(m: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Medians per column over `resamples` bootstrap samples of whole rows (repeats): (resamples, columns)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(m), (resamples, len(m)))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample with no measurement of a size: NaN, dropped
        return np.nanmedian(m[idx], axis=1)


def regression(
    points: Sequence[GrowthPoint],
    which: str = "cold",
    metric: str = "ttft",
    seed: int = 0,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
) -> list[dict]:
    """Per learned size: the median of `metric` (``ttft`` wall seconds, or ``cpu`` engine CPU seconds to the
    first token) on `which` turns (``cold``/``warm``), and its regression vs the no-delta build,
    median(size) / median(0) - 1, with a two-sided `confidence` bootstrap interval that resamples whole repeats
    (the same repeats for every size, so a slow spell of the machine moves a size and its baseline together)."""
    targets, first, m = _by_repeat(points, f"{which}_{metric}_s")
    med = np.nanmedian(m, axis=0)
    boots = _boot_medians(m, resamples, seed)
    regs = boots / boots[:, :1] - 1.0
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.nanpercentile(regs, [tail, 100 - tail], axis=0)
    return [
        {
            "learned_target": t,
            "learned_tokens": p.learned_tokens,
            "prompt_tokens": p.prompt_tokens,
            "n": int(np.sum(~np.isnan(m[:, j]))),
            "median_s": float(med[j]),
            "regression": float(med[j] / med[0] - 1.0),
            "ci_low": float(lo[j]),
            "ci_high": float(hi[j]),
        }
        for j, (t, p) in enumerate(zip(targets, first))
    ]


def supported_ceiling(rows: Sequence[dict], bound: float) -> dict:
    """The largest measured learned size whose regression's upper interval end stays within `bound` there and at
    every smaller measured size (0: not even the smallest measured size does). `beyond_measured`: every size
    does, so the ceiling is at least the largest measured one. `at`: that size's row (None for 0); `breaks`:
    the first size whose upper end exceeds `bound` (None if none)."""
    rows = sorted((r for r in rows if r["learned_tokens"] > 0), key=lambda r: r["learned_tokens"])
    at = None
    for r in rows:
        if r["ci_high"] > bound:
            return {
                "bound": bound,
                "ceiling_tokens": at["learned_tokens"] if at else 0,
                "at": at,
                "breaks": r,
                "beyond_measured": False,
            }
        at = r
    return {
        "bound": bound,
        "ceiling_tokens": at["learned_tokens"] if at else 0,
        "at": at,
        "breaks": None,
        "beyond_measured": at is not None,
    }


VERDICTS = ("unattainable", "attainable", "undecided")


def target_verdict(rows: Sequence[dict], target: float) -> str:
    """The target read at the smallest non-zero measured size (one lesson, the smallest resident unit):
    unattainable if its interval lies wholly above `target`, attainable if wholly within it, else undecided."""
    first = min((r for r in rows if r["learned_tokens"] > 0), key=lambda r: r["learned_tokens"], default=None)
    if first is None:
        raise ValueError("a verdict needs at least one non-zero learned size")
    if first["ci_low"] > target:
        return "unattainable"
    return "attainable" if first["ci_high"] <= target else "undecided"


def combine_verdicts(verdicts: Sequence[str]) -> str:
    """Across engines: unattainable if any engine says so, attainable if every engine does, else undecided."""
    if not verdicts:
        raise ValueError("no verdicts to combine")
    if "unattainable" in verdicts:
        return "unattainable"
    return "attainable" if all(v == "attainable" for v in verdicts) else "undecided"


def regression_at(rows: Sequence[dict], learned_tokens: float) -> tuple[float, bool]:
    """The median regression at `learned_tokens`, interpolated between measured sizes; past the largest size,
    extrapolated along the last two (the flag says so)."""
    xs = np.array([r["learned_tokens"] for r in rows], float)
    ys = np.array([r["regression"] for r in rows], float)
    order = np.argsort(xs, kind="stable")
    xs, ys = xs[order], ys[order]
    if learned_tokens <= xs[-1]:
        return float(np.interp(learned_tokens, xs, ys)), False
    slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    return float(ys[-1] + slope * (learned_tokens - xs[-1])), True


# ------------------------------------------------------------------------- resolution: what the data can see


def mde(
    points: Sequence[GrowthPoint], which: str = "cold", metric: str = "cpu", *, alpha: float = 0.05, power: float = 0.8
) -> dict:
    """The minimal detectable effect of the no-delta build's own spread: the smallest relative regression a
    two-sample comparison with this many repeats detects (two-sided `alpha`, `power`), from the robust spread of
    log(`metric`) at learned size 0 (1.4826 × MAD). {n, median_s, log_sd, mde}."""
    base = np.array(
        [
            getattr(p, f"{which}_{metric}_s")
            for p in points
            if p.learned_target == 0 and getattr(p, f"{which}_{metric}_s") is not None
        ],
        float,
    )
    if len(base) < 2:
        raise ValueError("the minimal detectable effect needs at least two no-delta measurements")
    logs = np.log(base)
    sd = 1.4826 * float(np.median(np.abs(logs - np.median(logs)))) or float(np.std(logs, ddof=1))
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return {
        "n": len(base),
        "median_s": float(np.median(base)),
        "log_sd": sd,
        "mde": float(np.exp(z * sd * np.sqrt(2 / len(base))) - 1),
    }


SMALL = 500  # learned tokens: the dense small sizes, where a ceiling of a few per cent would lie


def growth_slope(
    points: Sequence[GrowthPoint],
    which: str = "cold",
    metric: str = "cpu",
    seed: int = 0,
    n: int = 2000,
    max_learned: int | None = SMALL,
) -> tuple[float, float, float]:
    """Relative growth per 1,000 learned tokens over the sizes up to `max_learned` (prefill is convex, so one
    line over all sizes would be dominated by the largest): the least-squares line through the origin of the
    median regressions (vs the no-delta build) on learned tokens, with a 95 % bootstrap interval (whole repeats
    resampled, as in `regression`). (slope, low, high)."""
    targets, first, m = _by_repeat(points, f"{which}_{metric}_s", max_learned)
    t = np.array([p.learned_tokens / 1000 for p in first[1:]])

    def fit(medians: np.ndarray) -> np.ndarray:  # medians: (..., len(targets)), the no-delta build first
        r = medians[..., 1:] / medians[..., :1] - 1
        return r @ t / (t @ t)

    boots = fit(_boot_medians(m, n, seed))
    lo, hi = np.nanpercentile(boots, [2.5, 97.5])
    return float(fit(np.nanmedian(m, axis=0))), float(lo), float(hi)


# ------------------------------------------------------------------------------------- clients, record


@dataclass(frozen=True)
class Study:
    """One engine's measurement: growth points and session turns, with where they come from."""

    inputs: StudyInputs
    growth: tuple[GrowthPoint, ...]
    sessions: tuple[TurnCost, ...]
    model: str
    note: str  # where the numbers come from: replayed (with date, machine, engine) or live
    kind: str = "random-weight"  # random-weight | real-weight
    meta: Mapping = field(default_factory=dict)


def study_client(
    live: bool,
    recording: Path = RECORDING,
    record_to: Path | None = None,
    *,
    model_path: str | Path | None = None,
    base_url: str | None = None,
    local: bool = False,
):
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
        return (
            client,
            meta["model"],
            None,
            (f"replayed: recorded {meta['recorded_at']}{where} against {meta['model']} — {meta['engine']}"),
        )
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
            return (
                LemonadeClient(base_url, cassette=cassette, mode=mode),
                model,
                None,
                f"live: {engine_id}; {machine_id()} (client)",
            )
        if base_url:
            raise Skipped(f"no model server answered at {probe.base_url}")
        why = (
            f"Lemonade at {probe.base_url} has no model loaded (load one to measure it)"
            if health.up
            else f"no Lemonade server answered at {probe.base_url}"
        )
    else:
        why = "a local model file" if model_path else "the local random-weight engine, as asked"
    try:
        engine = Engine(model_path).start()
    except EngineUnavailable as exc:
        raise Skipped(f"{why} and the local engine is missing: {exc}") from exc
    if cassette is not None:
        cassette.engine = f"{engine.id}; {machine_id()}"  # every record names model, quantization and machine
    client = LemonadeClient(
        engine.base_url, cassette=cassette, mode=mode, meter=engine.cpu_seconds, transport=engine.transport()
    )  # a server that dies is reported as the crash
    what = "real weights" if engine.real else "random weights — cost only"
    return client, engine.alias, engine, f"live: {engine.id}; {machine_id()} ({what}; {why})"


def measure(
    client: LemonadeClient, model: str, inputs: StudyInputs, *, sessions: bool = True
) -> tuple[list[GrowthPoint], list[TurnCost]]:
    """Growth at every size, then (optionally) the three session arrangements."""
    points = growth(client, model, inputs)
    turns = [t for p, r in SESSION_KINDS for t in session(client, model, inputs, p, r)] if sessions else []
    return points, turns


def run_study(
    *,
    live: bool = False,
    full: bool = False,
    recording: Path = RECORDING,
    record_to: Path | None = None,
    model_path: str | Path | None = None,
    base_url: str | None = None,
    local: bool = False,
    inputs: StudyInputs | None = None,
    sessions: bool = True,
) -> Study:
    """One engine's study. Default: replay `recording` with its saved inputs. `live=True`: measure now (inputs
    from the datasets — the real-model grid for a model file or server, `full` = the big grid up to the 32K
    window — unless `inputs` are given), recording to `record_to` if given."""
    from ..llm.engine import machine_id

    client, model, engine, note = study_client(
        live, recording, record_to, model_path=model_path, base_url=base_url, local=local
    )
    real = bool(model_path or base_url) or (engine is None and live) or (engine is not None and engine.real)
    if live:
        inputs = inputs or StudyInputs.from_datasets(full=full, real=real)
        meta = {
            "model": model,
            "engine": client.cassette.engine if client.cassette is not None else note,
            "machine": machine_id(),
            "kind": "real-weight" if real else "random-weight",
            "quantization": engine.card.quantization if engine is not None and engine.card else None,
        }
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

    Rules fixed before the data: (1) the supported ceilings and the verdict on the ≤ 2 % target, from the rule
    file `rule` (default `datasets/rules/08_cost_of_learning.yaml`; `ceilings`); (2) relative cold-start growth
    transfers from the random-weight to the real-weight engine when their growth-slope intervals overlap; (3) the
    placement with fewer re-prefilled tokens on turns whose recall changed is the one to ship — re-prefill tokens
    are counts from the prompts, the same for any model. Absolute TTFT is reported per engine and never carried
    across."""

    studies: tuple[Study, ...]
    rule: rulefile.RuleFile | None = None  # None: the study's own rule file, `RULE`; a name or path is loaded

    def __post_init__(self):
        if not isinstance(self.rule, rulefile.RuleFile):
            object.__setattr__(self, "rule", rulefile.load(RULE if self.rule is None else self.rule))

    def as_ruled(self, s: Study) -> bool:
        """Whether `s` was measured on the grid the rule states for its engine (learned sizes and repeats)."""
        grid = dict(self.rule.param("engines")).get(s.kind)
        return (
            grid is not None
            and list(s.inputs.sizes) == list(grid["learned_targets"])
            and s.inputs.repeats == grid["repeats"]
        )

    def study(self, kind: str) -> Study:
        return next(s for s in self.studies if s.kind == kind)

    @property
    def note(self) -> str:
        return "\n".join(f"{s.kind}: {s.note}" for s in self.studies)

    def _regression(self, s: Study, which: str, metric: str) -> list[dict]:
        """`regression` under the rule's interval: its confidence, resamples and seed."""
        return regression(
            s.growth,
            which,
            metric,
            int(self.rule.param("seed")),
            confidence=float(self.rule.param("confidence")),
            resamples=int(self.rule.param("resamples")),
        )

    def table(self) -> pd.DataFrame:
        """Per engine, turn (cold/warm), measure and learned size: median seconds and the regression vs the
        no-delta build with its bootstrap interval over repeats (the rule's confidence)."""
        return self._table.copy()

    @cached_property
    def _table(self) -> pd.DataFrame:
        rows = []
        for s in self.studies:
            for which, metric in MEASURES:
                if all(getattr(p, f"{which}_{metric}_s") is None for p in s.growth):
                    continue  # engine CPU is read only from a local engine
                for r in self._regression(s, which, metric):
                    rows.append({"engine": s.kind, "turn": which, "measure": _MEASURE[metric], **r})
        return pd.DataFrame(rows)

    def ceilings(self) -> pd.DataFrame:
        """The rule's table: per engine and measure (at the rule's turn), the regression at one lesson (the
        smallest measured size) with its interval, the verdict on the target, and per bound the supported
        ceiling in resident learned tokens (the largest measured size whose upper interval end — and every
        smaller size's — stays within the bound; ≥ the largest measured size where `beyond` is marked)."""
        return self._ceilings.copy()

    @cached_property
    def _ceilings(self) -> pd.DataFrame:
        target, bounds = float(self.rule.param("target")), [float(b) for b in self.rule.param("bounds")]
        turn, measures = self.rule.param("turn"), list(self.rule.param("measures"))
        table, rows = self.table(), []
        for s in self.studies:
            for measure in measures:
                sub = table[(table.engine == s.kind) & (table.turn == turn) & (table.measure == measure)]
                if sub.empty:
                    continue
                regs = sub.to_dict("records")
                first = min((r for r in regs if r["learned_tokens"] > 0), key=lambda r: r["learned_tokens"])
                row = {
                    "engine": s.kind,
                    "measure": measure,
                    "turn": turn,
                    "grid as ruled": self.as_ruled(s),
                    "repeats": int(sub.n.min()),
                    "one lesson (learned tokens)": first["learned_tokens"],
                    "regression": first["regression"],
                    "low": first["ci_low"],
                    "high": first["ci_high"],
                    f"≤ {target:.0%} target": target_verdict(regs, target),
                }
                for b in bounds:
                    c = supported_ceiling(regs, b)
                    row[f"ceiling ≤ +{b:.0%}"] = c["ceiling_tokens"]
                    row[f"beyond ≤ +{b:.0%}"] = c["beyond_measured"]
                rows.append(row)
        return pd.DataFrame(rows)

    def verdict(self) -> str:
        """The target across engines on the rule's primary measure (unattainable if any engine says so)."""
        c = self.ceilings()
        c = c[c.measure == self.rule.param("primary_measure")]
        return combine_verdicts(list(c[f"≤ {float(self.rule.param('target')):.0%} target"]))

    def resolution(self) -> pd.DataFrame:
        """Per engine, turn and measure: the baseline's spread and MDE, the relative growth per 1,000 learned
        tokens over the sizes up to `SMALL`, and the smallest size whose regression interval lies above 0."""
        return self._resolution.copy()

    @cached_property
    def _resolution(self) -> pd.DataFrame:
        rows = []
        for s in self.studies:
            for which, metric in MEASURES:
                if all(getattr(p, f"{which}_{metric}_s") is None for p in s.growth):
                    continue
                spread = mde(s.growth, which, metric)
                regs = self._regression(s, which, metric)
                detected = next(
                    (r["learned_tokens"] for r in regs if r["learned_tokens"] > 0 and r["ci_low"] > 0), None
                )
                slope = growth_slope(s.growth, which, metric)
                rows.append(
                    {
                        "engine": s.kind,
                        "turn": which,
                        "measure": _MEASURE[metric],
                        "no-delta median s": spread["median_s"],
                        "n": spread["n"],
                        "MDE": spread["mde"],
                        "growth per 1k learned": slope[0],
                        "growth low": slope[1],
                        "growth high": slope[2],
                        "first detected (learned tokens)": detected,
                    }
                )
        return pd.DataFrame(rows)

    def sessions(self) -> pd.DataFrame:
        """Re-prefill tokens and cost on the turns whose recall changed, per engine and arrangement."""
        rows = []
        for s in self.studies:
            changed = {t.turn for t in s.sessions if t.recall_changed}
            for t in s.sessions:
                rows.append(
                    {
                        "engine": s.kind,
                        "arrangement": f"{t.placement}, "
                        + ("recalled per turn" if t.resolution == "turn" else "once per session"),
                        "turn": t.turn,
                        "recall changed": t.turn in changed,
                        "reprefill": t.reprefill,
                        "ttft_s": t.ttft_s,
                        "cpu_s": t.cpu_s,
                    }
                )
        return pd.DataFrame(rows)

    def on_change(self) -> pd.DataFrame:
        df = self.sessions()
        if df.empty:  # measured without sessions (`measure(sessions=False)`)
            df = pd.DataFrame(
                columns=["engine", "arrangement", "turn", "recall changed", "reprefill", "ttft_s", "cpu_s"]
            ).astype({"recall changed": bool})
        return (
            df[df["recall changed"]]
            .groupby(["engine", "arrangement"])
            .agg(
                turns=("turn", "size"),
                reprefill_median=("reprefill", "median"),
                ttft_median_s=("ttft_s", "median"),
                cpu_median_s=("cpu_s", "median"),
            )
            .round(3)
        )

    def _ceilings_text(self, row: pd.Series, bounds: Sequence[float]) -> str:
        """Per bound, the supported ceiling; bounds with the same ceiling share one entry."""
        groups: list[tuple[list[float], tuple]] = []
        for b in bounds:
            key = (int(row[f"ceiling ≤ +{b:.0%}"]), bool(row[f"beyond ≤ +{b:.0%}"]))
            if groups and groups[-1][1] == key:
                groups[-1][0].append(b)
            else:
                groups.append(([b], key))
        out = []
        for bs, (tokens, beyond) in groups:
            what = (
                f"≥ {tokens:,} (every measured size)"
                if beyond
                else f"{tokens:,}"
                if tokens
                else "none (not one lesson)"
            )
            out.append("≤ " + ", ".join(f"+{b:.0%}" for b in bs) + f": {what}")
        return "; ".join(out)

    def _verdict_text(self, row: pd.Series, target: float) -> str:
        v = row[f"≤ {target:.0%} target"]
        if v == "unattainable":
            return f"wholly above it, the ≤ {target:.0%} target is **unattainable**"
        if v == "attainable":
            return f"wholly within it, the ≤ {target:.0%} target is **attainable**"
        return f"the interval spans it: too little power to decide the ≤ {target:.0%} target, no verdict"

    def world_load(self, load: pd.DataFrame) -> pd.DataFrame:
        """What the world's users would pay (`world.learned_load`: per user, every taught lesson resident):
        per engine, on the rule's primary measure at its turn, the regression at the median and the largest
        user's load (interpolated between measured sizes; `extrapolated` past them), and per bound how many
        users keep their whole load within its supported ceiling."""
        ceil = self.ceilings().set_index(["engine", "measure"])
        primary, turn = self.rule.param("primary_measure"), self.rule.param("turn")
        table, tokens, rows = self.table(), load["learned_tokens"], []
        for s in self.studies:
            if (s.kind, primary) not in ceil.index:
                continue
            regs = table[(table.engine == s.kind) & (table.turn == turn) & (table.measure == primary)]
            regs = regs.to_dict("records")
            c = ceil.loc[(s.kind, primary)]
            median, top = regression_at(regs, float(tokens.median())), regression_at(regs, float(tokens.max()))
            row = {
                "engine": s.kind,
                "measure": primary,
                "users": len(load),
                "median load (tokens)": float(tokens.median()),
                "regression at median": median[0],
                "largest load (tokens)": int(tokens.max()),
                "regression at largest": top[0],
                "extrapolated": median[1] or top[1],
            }
            for b in (float(b) for b in self.rule.param("bounds")):
                within = int((tokens <= c[f"ceiling ≤ +{b:.0%}"]).sum())
                row[f"users within +{b:.0%}"] = f"{within} of {len(load)}" + (
                    " (ceiling ≥ every size measured)" if c[f"beyond ≤ +{b:.0%}"] else ""
                )
            rows.append(row)
        return pd.DataFrame(rows)

    def finding(self) -> str:
        """The verdicts, each computed by the rules stated in the class docstring from the tables shown."""
        res = self.resolution().set_index(["engine", "turn", "measure"])
        ceil = self.ceilings().set_index(["engine", "measure"])
        target, bounds = float(self.rule.param("target")), [float(b) for b in self.rule.param("bounds")]
        primary, conf = self.rule.param("primary_measure"), float(self.rule.param("confidence"))
        engines = []
        kinds = [s.kind for s in self.studies]
        judged = [s for s in self.studies if (s.kind, primary) in ceil.index]
        for s in judged:
            c = ceil.loc[(s.kind, primary)]
            note = (
                f"supported ceilings in resident learned tokens (upper {conf:.0%} bound within): "
                f"{self._ceilings_text(c, bounds)}."
            )
            if not c["grid as ruled"]:
                note += " (Measured on a grid other than the rule's: indicative only.)"
            other = [m for m in self.rule.param("measures") if m != primary and (s.kind, m) in ceil.index]
            for m in other:
                w = ceil.loc[(s.kind, m)]
                note += (
                    f" Under the same rule, {m}: {w.regression:+.1%} [{w.low:+.1%}, {w.high:+.1%}] at one "
                    f"lesson, target {w[f'≤ {target:.0%} target']}; {self._ceilings_text(w, bounds)}."
                )
            engines.append(
                Finding(
                    f"**{s.kind}** ({s.model}), {c.turn} start, {primary}, n = {c.repeats} repeats: "
                    f"one lesson ({c['one lesson (learned tokens)']} learned tokens) costs",
                    c.regression,
                    c.low,
                    c.high,
                    target,
                    self._verdict_text(c, target),
                    note=note,
                    spec="+.1%",
                )
            )
        out = [render(engines)] if engines else []
        if judged:
            rows = ceil.xs(primary, level="measure")
            table = self.table().set_index(["engine", "turn", "measure", "learned_tokens"])
            turn = self.rule.param("turn")
            verdict = self.verdict()
            parts = []
            for b in bounds:
                col = f"ceiling ≤ +{b:.0%}"
                low = int(rows[col].min())
                who = [k for k in rows.index if rows.loc[k, col] == low]
                if not low:
                    what = f"none, not one {rows['one lesson (learned tokens)'].min()}-token lesson"
                elif all(rows.loc[k, f"beyond ≤ +{b:.0%}"] for k in who):
                    what = f"≥ {low:,} (every size measured on {', '.join(who)})"
                else:
                    at = [table.loc[(k, turn, primary, low)] for k in who]
                    what = (
                        f"{low:,} ("
                        + "; ".join(
                            f"{k}: {a.regression:+.1%} [{a.ci_low:+.1%}, {a.ci_high:+.1%}] there"
                            for k, a in zip(who, at)
                        )
                        + ")"
                    )
                if parts and parts[-1][1] == what:
                    parts[-1][0].append(b)
                else:
                    parts.append(([b], what))
            by = {v: [k for k in rows.index if rows.loc[k, f"≤ {target:.0%} target"] == v] for v in VERDICTS}
            why = "; ".join(f"{v} on {', '.join(ks)}" for v, ks in by.items() if ks)
            say = {
                "unattainable": f"the seed's ≤ {target:.0%} target is **unattainable**: one resident lesson "
                f"already exceeds it",
                "attainable": f"the seed's ≤ {target:.0%} target is **attainable** on every engine",
                "undecided": f"the data are too weak to decide the seed's ≤ {target:.0%} target; no verdict",
            }
            out.append(
                f"- **Supported target** ({primary}, {turn} start): {say[verdict]} ({why}). The resident "
                f"learned tokens that keep session-start cost within a bound, the smallest ceiling over the "
                f"engines: "
                + "; ".join("within " + " / ".join(f"+{b:.0%}" for b in bs) + f": {what}" for bs, what in parts)
                + f". These hold over the recorded {count_tokens(judged[0].inputs.stable):,}-token authored "
                f"prefix; a larger authored prefix makes each lesson a smaller share."
            )
        growth = []
        for s in self.studies:
            r = res.loc[(s.kind, "cold", primary)] if (s.kind, "cold", primary) in res.index else None
            if r is None:
                continue
            seen = r["first detected (learned tokens)"]
            seen = int(seen) if pd.notna(seen) else None
            growth.append(
                Finding(
                    f"**Growth ({s.kind})** per 1,000 learned tokens (sizes ≤ {SMALL})",
                    r["growth per 1k learned"],
                    r["growth low"],
                    r["growth high"],
                    spec="+.1%",
                    note=f"a regression is first detected at {seen if seen is not None else 'no measured'} learned "
                    f"tokens; the no-delta build's own spread gives a minimal detectable effect of {r['MDE']:.1%} "
                    f"(n = {int(r['n'])})",
                )
            )
        if growth:
            out.append(render(growth))
        if {"random-weight", "real-weight"} <= set(kinds) and all(
            (k, "cold", primary) in res.index for k in ("random-weight", "real-weight")
        ):
            a, b = res.loc[("random-weight", "cold", primary)], res.loc[("real-weight", "cold", primary)]
            overlap = a["growth low"] <= b["growth high"] and b["growth low"] <= a["growth high"]
            out.append(
                f"- **Transfer.** Relative cold-start growth is "
                f"{'consistent' if overlap else 'not consistent'} between the engines (intervals "
                f"{'overlap — consistent, not shown equal' if overlap else 'do not overlap'}): random-weight "
                f"{a['growth per 1k learned']:+.1%}, real-weight {b['growth per 1k learned']:+.1%} per 1,000 "
                f"learned tokens. Absolute TTFT does not transfer: the no-delta cold start costs "
                f"{a['no-delta median s']:.2f} s on the random-weight engine and {b['no-delta median s']:.2f} s "
                f"on the real one ({primary}), {b['no-delta median s'] / a['no-delta median s']:.0f}x — "
                f"a property of the model, its quantization and this machine."
            )
        oc = self.on_change()
        for kind in kinds:
            if kind not in oc.index.get_level_values(0):
                continue
            o = oc.loc[kind]
            p, t = o.loc["prefix, recalled per turn"], o.loc["tail, recalled per turn"]
            better = "tail" if t.reprefill_median < p.reprefill_median else "prefix"
            out.append(
                f"- **Placement ({kind}).** On the {int(p.turns)} turns whose recall changed, the prefix "
                f"placement re-prefilled a median {p.reprefill_median:,.0f} tokens vs {t.reprefill_median:,.0f} "
                f"for the tail; resolved once per session, "
                f"{o.loc['prefix, once per session'].reprefill_median:,.0f}. Put what may change mid-session in "
                f"the {better}. These are token counts from the prompts: they hold for any model."
            )
        return "\n".join(out)


_MEASURE = {"cpu": "engine CPU", "ttft": "wall TTFT"}
RECORDINGS = {"random-weight": RECORDING, "real-weight": DATASETS / "cassettes" / "cost_of_learning_smollm2"}


def run(
    *,
    live: bool = False,
    full: bool = False,
    record_to: Path | None = None,
    model_path: str | Path | None = None,
    base_url: str | None = None,
    rule: rulefile.RuleFile | None = None,
) -> CostResult:
    """The study over the random-weight engine and a real model. Default: replay the stored recordings
    (`RECORDINGS`, no network). `live=True` re-measures both: the random-weight engine here, and the real model
    at `base_url`, else `model_path`, else the installed SmolLM2-135M; recordings go to folder `record_to`.
    `rule`: the decision rule (a `RuleFile`, a name under datasets/rules/ or a path); default `RULE`."""
    if not live:
        return CostResult(
            tuple(run_study(recording=r) for r in RECORDINGS.values() if r.with_suffix(".jsonl").is_file()), rule
        )
    from ..llm.engine import smollm2_path

    out = [run_study(live=True, full=full, local=True, record_to=record_to / RECORDING.name if record_to else None)]
    model_path = model_path or (None if base_url else smollm2_path())
    if model_path or base_url:
        name = RECORDINGS["real-weight"].name
        out.append(
            run_study(
                live=True,
                full=full,
                model_path=model_path,
                base_url=base_url,
                record_to=record_to / name if record_to else None,
            )
        )
    return CostResult(tuple(out), rule)


if __name__ == "__main__":  # python -m overlay_kit.studies.cost [--full] [OUT_DIR]: re-record the studies live
    import sys

    args = [a for a in sys.argv[1:] if a != "--full"]
    out_dir = Path(args[0]) if args else RECORDING.parent
    result = run(live=True, full="--full" in sys.argv[1:], record_to=out_dir)
    print(result.note)
    print(result.finding())
