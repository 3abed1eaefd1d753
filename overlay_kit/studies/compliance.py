"""Does the model follow what the overlay puts in front of it? (notebook 17; rule datasets/rules/17_compliance.yaml)

Forty lessons whose compliance a program checks (a sign-off, a date format, a forbidden word, a first line, a
word count: `Check`), each anchored to a section of a small reply-drafting skill and each with two goals that
need it (datasets/compliance). Every prompt is built by the product — `resolve.compose` for the section
rendering, the distractors and the stale policies; `prompt.compose` of the authored body with the
EffectiveSkill's `fragment` for the flat list before (prefix) or after (tail) the skill — and one greedy reply
per (arm, lesson, goal) comes from a real model, the pinned Qwen2.5-Coder asset served by the project's
llama.cpp engine. `record` runs them live and writes the replies (a cassette, labelled with model, engine,
machine and date) and their provenance; `replies` replays them (or runs live); `judge` applies the rule.
"""

from __future__ import annotations

import csv
import json
import random
import re
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cached_property
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
import yaml

from ..anchor import anchor_for, parse
from ..common import FieldError
from ..grammar import Delta, Provenance
from ..llm.client import Cassette, LemonadeClient, Skipped
from ..metrics import Interval, bootstrap_ci
from ..prompt import compose as compose_prompt
from ..resolve import compose
from ..resources import dataset_path
from ..skill import Skill, load_skill
from . import rulefile

__all__ = [
    "ARMS",
    "Check",
    "CheckError",
    "CheckedLesson",
    "Verdicts",
    "World",
    "ask",
    "judge",
    "load_world",
    "record",
    "recording_path",
    "replies",
]

RULE = "17_compliance"
ARMS = ("none", "section", "tail", "prefix", "k5", "k20", "k100", "stale-keep", "stale-mark")
CONDITIONS = (
    "contains",
    "exact",
    "absent",
    "matches",
    "first_line",
    "last_line",
    "max_sentences",
    "max_words",
    "lowercase",
    "min_bullets",
)
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")
_BULLET = re.compile(r"^\s*[-*] \S", re.M)
_FLAGS = re.I | re.M | re.S
# When the irrelevant lessons were learned; the tested lesson a second later, so that it renders after them in its
# section (the product orders a section's lines by when they were learned) and every prompt is the same each run
_LEARNED = datetime(2026, 12, 1, tzinfo=timezone.utc)


class CheckError(FieldError):
    """The lessons file is malformed: names the lesson and the field."""


@dataclass(frozen=True)
class Check:
    """Conditions that must all hold of a reply (see datasets/compliance/lessons.yaml for their meaning)."""

    conditions: tuple[tuple[str, object], ...]

    def failures(self, reply: str) -> list[str]:
        """The conditions the reply breaks, as `kind: value` (empty: it follows)."""
        lines = [x.strip() for x in reply.strip().splitlines() if x.strip()] or [""]
        out = []
        for kind, value in self.conditions:
            ok = {
                "contains": lambda: str(value).lower() in reply.lower(),
                "exact": lambda: str(value) in reply,
                "absent": lambda: re.search(str(value), reply, _FLAGS) is None,
                "matches": lambda: re.search(str(value), reply, _FLAGS) is not None,
                "first_line": lambda: re.search(str(value), lines[0], re.I) is not None,
                "last_line": lambda: re.search(str(value), lines[-1], re.I) is not None,
                "max_sentences": lambda: len(_SENTENCE_END.findall(reply)) <= int(value),
                "max_words": lambda: len(reply.split()) <= int(value),
                "lowercase": lambda: reply == reply.lower(),
                "min_bullets": lambda: len(_BULLET.findall(reply)) >= int(value),
            }[kind]()
            if not ok:
                out.append(f"{kind}: {value}")
        return out


@dataclass(frozen=True)
class CheckedLesson:
    id: str
    section: str
    text: str
    check: Check
    goals: tuple[str, ...]


@dataclass(frozen=True)
class World:
    """The study's skill, lessons and the irrelevant lessons the k arms add."""

    skill: Skill
    lessons: tuple[CheckedLesson, ...]
    distractors: tuple[Delta, ...]

    def delta(self, lesson: CheckedLesson, *, stale: bool = False) -> Delta:
        """The lesson as the product stores it; `stale`: anchored to an older text of its section."""
        body = self.skill.body
        if stale:  # the section as it read when the lesson was learned: one sentence less
            section = next(s for s in parse(body) if s.slug == lesson.section)
            body = body.replace(section.body_text.strip(), section.body_text.strip() + " (Earlier wording.)", 1)
        return Delta(
            skill=self.skill.name,
            kind="preference",
            payload={"body": lesson.text},
            anchor=anchor_for(body, lesson.section, self.skill.version),
            provenance=Provenance("user_instruction"),
            status="active",
            id=f"delta_{lesson.id}",
            created_at=_LEARNED + timedelta(seconds=1),
        )

    def messages(self, arm: str, lesson: CheckedLesson, goal: str) -> list[dict]:
        """The chat the model sees for one (arm, lesson, goal): the system prompt as the product builds it."""
        if arm not in ARMS:
            raise ValueError(f"arm must be one of {', '.join(ARMS)}, not {arm!r}")
        if arm == "none":
            system = compose(self.skill, []).text
        elif arm in ("tail", "prefix"):
            fragment = compose(self.skill, [self.delta(lesson)]).fragment
            system = compose_prompt(self.skill.body, fragment, policy=arm).system
        elif arm.startswith("stale-"):
            system = compose(self.skill, [self.delta(lesson, stale=True)], stale_policy=arm.removeprefix("stale-")).text
        else:
            k = int(arm[1:]) if arm.startswith("k") else 0
            system = compose(self.skill, [*self.distractors[:k], self.delta(lesson)]).text
        return [{"role": "system", "content": system}, {"role": "user", "content": goal}]


def _check(lesson_id: str, raw) -> Check:
    if not isinstance(raw, list) or not raw:
        raise CheckError(f"lessons[{lesson_id}].check", "a non-empty list of conditions")
    out = []
    for i, cond in enumerate(raw):
        if not isinstance(cond, dict) or len(cond) != 1 or next(iter(cond)) not in CONDITIONS:
            raise CheckError(f"lessons[{lesson_id}].check[{i}]", f"one of {', '.join(CONDITIONS)}, got {cond!r}")
        kind, value = next(iter(cond.items()))
        if kind in ("absent", "matches", "first_line", "last_line"):
            try:
                re.compile(str(value))
            except re.error as exc:
                raise CheckError(f"lessons[{lesson_id}].check[{i}].{kind}", f"not a regular expression: {exc}")
        out.append((kind, value))
    return Check(tuple(out))


def load_world(folder: str | Path | None = None, *, distractors: int = 100, seed: int = 17) -> World:
    """The study's world from datasets/compliance (or `folder`): a malformed lesson raises `CheckError`."""
    folder = Path(folder) if folder else dataset_path("compliance")
    skill = load_skill(folder / "reply-drafts")
    raw = yaml.safe_load((folder / "lessons.yaml").read_text(encoding="utf-8"))
    texts = {f"email:{k}": v for k, v in raw["emails"].items()} | {f"digest:{k}": v for k, v in raw["digests"].items()}
    sections = {s.slug for s in parse(skill.body)}
    lessons = []
    for i, item in enumerate(raw["lessons"]):
        lid = item.get("id") or f"#{i}"
        if item.get("section") not in sections:
            raise CheckError(f"lessons[{lid}].section", f"{item.get('section')!r} is not a section of {skill.name}")
        goals = []
        for ref in item.get("goals") or ():
            if ref not in texts:
                raise CheckError(f"lessons[{lid}].goals", f"{ref!r} names no email or digest")
            goals.append(raw["goal_templates"][ref.split(":")[0]].format(text=texts[ref]))
        lessons.append(CheckedLesson(lid, item["section"], item["text"], _check(lid, item.get("check")), tuple(goals)))
    return World(skill, tuple(lessons), _distractors(skill, distractors, seed))


def _distractors(skill: Skill, n: int, seed: int) -> tuple[Delta, ...]:
    """`n` lessons of other skills (datasets/lessons/lessons.csv prose), each anchored to a section of `skill`
    drawn with the same seed: lessons that are resident but do not apply to a reply."""
    with dataset_path("lessons", "lessons.csv").open(newline="", encoding="utf-8") as fh:
        prose = sorted({r["prose"] for r in csv.DictReader(fh) if r["domain"] != "email" and r["prose"].strip()})
    rng = random.Random(seed)
    slugs = [s.slug for s in parse(skill.body) if s.body_text.strip()]
    return tuple(
        Delta(
            skill=skill.name,
            kind="preference",
            payload={"body": text},
            anchor=anchor_for(skill.body, rng.choice(slugs), skill.version),
            provenance=Provenance("user_instruction"),
            status="active",
            id=f"delta_irrelevant_{i:03d}",
            created_at=_LEARNED,
        )
        for i, text in enumerate(rng.sample(prose, n))
    )


# ------------------------------------------------------------------------------------- the replies


def recording_path(model: str) -> Path:
    return dataset_path("recorded") / f"17_compliance_{model}.jsonl"


def _units(world: World, arms: Sequence[str]) -> Iterator[tuple[str, CheckedLesson, int, str]]:
    """Arm-major order: consecutive prompts share the longest prefix, which the engine's KV cache reuses."""
    for arm in arms:
        for lesson in world.lessons:
            for g, goal in enumerate(lesson.goals):
                yield arm, lesson, g, goal


def ask(
    client: LemonadeClient,
    model: str,
    arms: Sequence[str] = ARMS,
    *,
    world: World | None = None,
    max_tokens: int | None = None,
    progress=None,
) -> pd.DataFrame:
    """One reply per (arm, lesson, goal) from `client` (live, recording or replaying), judged by each lesson's
    check: one row per reply. `max_tokens`: the reply budget (default: the rule's)."""
    rule = rulefile.load(RULE)
    world = world or load_world(distractors=rule.param("distractors"), seed=rule.param("distractor_seed"))
    return _ask(client, model, world, arms, max_tokens or rule.param("max_tokens"), progress)


def _ask(
    client: LemonadeClient, model: str, world: World, arms: Sequence[str], max_tokens: int, progress=None
) -> pd.DataFrame:
    rows = []
    units = list(_units(world, arms))
    for arm, lesson, g, goal in progress(units) if progress else units:
        messages = world.messages(arm, lesson, goal)
        r = client.chat(model, messages, max_completion_tokens=max_tokens, temperature=0.0, seed=0)
        broken = lesson.check.failures(r.content)
        rows.append(
            {
                "arm": arm,
                "lesson": lesson.id,
                "section": lesson.section,
                "goal": g,
                "reply": r.content,
                "follows": not broken,
                "broken": "; ".join(broken),
                "prompt_tokens": r.prompt_tokens,
                "completion_tokens": r.completion_tokens,
                "truncated": r.truncated,
                "replayed": r.replayed,
                "recorded_at": r.recorded_at,
            }
        )
    return pd.DataFrame(rows)


def record(
    model: str,
    arms: Sequence[str] = ARMS,
    *,
    base_url: str | None = None,
    world: World | None = None,
    out: Path | None = None,
    progress=None,
) -> pd.DataFrame:
    """Ask `model` live and record every reply of `arms` (and a provenance file beside): the installed asset of
    that name served here by the llama.cpp engine, or, with `base_url`, that model on a running Lemonade (or other
    OpenAI-compatible) server — the NPU path."""
    rule = rulefile.load(RULE)
    world = world or load_world(distractors=rule.param("distractors"), seed=rule.param("distractor_seed"))
    return record_live(
        model,
        rule,
        out or recording_path(model),
        lambda client: ask(client, model, arms, world=world, progress=progress),
        base_url=base_url,
        arms=list(arms),
    )


def record_live(model: str, rule, out: Path, run, *, base_url: str | None = None, **about):
    """`run(client)` against `model` live — the installed asset served here by the llama.cpp engine, or, with
    `base_url`, that model on a running Lemonade (or other OpenAI-compatible) server — every reply recorded in a
    cassette at `out` labelled with the engine and machine, and a provenance file beside it (model, asset sha256,
    `rule`'s sha256, commit, date, wall time, `about`; the replies are what `run` returns, or the last item of
    a tuple it returns). Returns what `run` returns."""
    from contextlib import nullcontext

    from ..llm import weights
    from ..llm.engine import Engine, machine_id

    path = None if base_url else weights.installed(model)
    if base_url is None and path is None:
        raise Skipped(f"the model asset {model} is not installed (make model MODEL_ASSET={model})")
    started, t0 = datetime.now(timezone.utc), time.monotonic()
    # the engine's alias is the asset's name, so that no file path names the model in the recorded keys
    with nullcontext() if base_url else Engine(path, n_ctx=rule.param("n_ctx"), alias=model) as engine:
        url = base_url or engine.base_url
        served = f"server at {base_url}" if base_url else engine.id
        cassette = Cassette(out, record=True, engine=f"{served}; {machine_id()}")
        client = LemonadeClient(url, cassette=cassette, mode="record", transport=engine.transport() if engine else None)
        result = run(client)
        cassette.save()
    provenance = {
        "model": model,
        "asset_sha256": weights.ASSETS[model].sha256 if model in weights.ASSETS else None,
        "engine": cassette.engine,
        **about,
        "rule_sha256": rule.sha256,
        "commit": _commit(),
        "started": started.isoformat(timespec="seconds"),
        "wall_s": round(time.monotonic() - t0),
        "replies": len(result[-1] if isinstance(result, tuple) else result),
        "max_tokens": rule.param("max_tokens"),
        "temperature": 0.0,
        "seed": 0,
    }
    out.with_suffix(".provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    return result


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=Path(__file__).parent
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def replies(
    model: str, arms: Sequence[str] = ARMS, *, world: World | None = None, path: Path | None = None
) -> tuple[pd.DataFrame, dict]:
    """The recorded replies of `model`, replayed and re-judged by `Check` (no network), and their provenance."""
    path = path or recording_path(model)
    if not path.is_file():
        raise Skipped(f"no recording at {path} (record it: python -m overlay_kit.studies.compliance {model})")
    client = LemonadeClient("http://127.0.0.1:9/v1", cassette=Cassette(path), mode="replay")
    frame = ask(client, model, arms, world=world)
    return frame, json.loads(path.with_suffix(".provenance.json").read_text())


# ------------------------------------------------------------------------------------------ verdicts


@dataclass(frozen=True)
class Verdicts:
    rates: pd.DataFrame  # per arm: follow rate with its interval, prompt tokens, truncated replies
    comparisons: pd.DataFrame  # per paired comparison: difference, interval, MDE, verdict
    k_safe: int
    k_harm: int | None
    policy_errors: pd.DataFrame  # per p and policy: err with its interval
    stale_policy: str
    tied: tuple[str, ...]

    @cached_property
    def answer(self) -> str:
        row = self.comparisons.set_index("comparison")
        return (
            f"Placement: {row.loc['section - tail', 'verdict']} (section vs tail), "
            f"{row.loc['section - prefix', 'verdict']} (section vs prefix). Irrelevant lessons in context are "
            f"harmless up to k = {self.k_safe}"
            + (f" and harmful from k = {self.k_harm}" if self.k_harm else "")
            + f". Marking a stale lesson: {row.loc['stale-keep - stale-mark', 'verdict']}; the stale policy "
            f"that ships: {self.stale_policy}."
        )


def _per_lesson(frame: pd.DataFrame) -> pd.DataFrame:
    """Lessons x arms: each lesson's follow rate (the mean over its goals) per arm."""
    return frame.groupby(["lesson", "arm"])["follows"].mean().unstack("arm")


def _mde(diffs: np.ndarray) -> float:
    return float(2.8 * np.std(diffs, ddof=1) / np.sqrt(len(diffs))) if len(diffs) > 1 else float("nan")


def _interval(values: np.ndarray, rule) -> Interval:
    return bootstrap_ci(values, statistic=np.mean, n_resamples=rule.param("n_boot"), seed=rule.param("seed"))


def judge(frame: pd.DataFrame, rule=None) -> Verdicts:
    """The rule's verdicts over one model's replies; a comparison whose arms did not run is left out."""
    rule = rule or rulefile.load(RULE)
    per = _per_lesson(frame)
    rates = []
    for arm in [a for a in ARMS if a in per]:
        ci = _interval(per[arm].to_numpy(), rule)
        part = frame[frame.arm == arm]
        rates.append(
            {
                "arm": arm,
                "follow": ci.estimate,
                "low": ci.low,
                "high": ci.high,
                "lessons": len(per),
                "prompt_tokens": float(part.prompt_tokens.mean()),
                "truncated": int(part.truncated.sum()),
            }
        )
    comparisons = []

    def paired(a: str, b: str, above: str, below: str) -> dict | None:
        if a not in per or b not in per:  # a run of some arms only (the second model): no such comparison
            return None
        d = (per[a] - per[b]).to_numpy()
        ci, mde = _interval(d, rule), _mde(d)
        verdict = above if ci.low > 0 else below if ci.high < 0 else f"no difference detected at MDE {mde:.2f}"
        row = {
            "comparison": f"{a} - {b}",
            "difference": ci.estimate,
            "low": ci.low,
            "high": ci.high,
            "mde": mde,
            "verdict": verdict,
        }
        comparisons.append(row)
        return row

    paired("section", "none", "the lesson lifts following", "the lesson lowers following")
    paired("section", "tail", "section followed more", "flat followed more")
    paired("section", "prefix", "section followed more", "flat followed more")
    margin, k_safe, k_harm, safe_so_far = rule.param("drop_margin"), 0, None, True
    for k in rule.param("ks"):
        row = paired("section", f"k{k}", f"falls with {k} irrelevant lessons", f"rises with {k} irrelevant lessons")
        if row is None:
            break
        safe_so_far = safe_so_far and row["high"] <= margin
        k_safe = k if safe_so_far else k_safe
        if k_harm is None and row["low"] > margin:
            k_harm = k
    paired("stale-keep", "stale-mark", "marking lowers following", "marking raises following")
    errors, tied, answer = _policy_errors(per, rule)
    return Verdicts(pd.DataFrame(rates), pd.DataFrame(comparisons), k_safe, k_harm, errors, answer, tied)


_POLICY_ARM = {"keep": "stale-keep", "mark": "stale-mark", "withhold": "none"}


def _policy_errors(per: pd.DataFrame, rule) -> tuple[pd.DataFrame, tuple[str, ...], str]:
    """err = p x f + (1 - p) x (1 - f) per policy and p; the answer at judge_p_true with its ties."""
    rows, judged = [], {}
    for p in rule.param("p_grid"):
        for policy, arm in _POLICY_ARM.items():
            err = p * per[arm].to_numpy() + (1 - p) * (1 - per[arm].to_numpy())
            ci = _interval(err, rule)
            rows.append({"p_true": p, "policy": policy, "err": ci.estimate, "low": ci.low, "high": ci.high})
            if p == rule.param("judge_p_true"):
                judged[policy] = err
    best = min(judged, key=lambda k: float(judged[k].mean()))
    tied = tuple(k for k in judged if k == best or _interval(judged[k] - judged[best], rule).low <= 0)
    answer = next(k for k in rule.param("tie_break") if k in tied)
    return pd.DataFrame(rows), tied, answer


if __name__ == "__main__":  # python -m overlay_kit.studies.compliance MODEL [ARM ...]: record live
    import sys

    from tqdm.auto import tqdm

    chosen = tuple(sys.argv[2:]) or ARMS
    done = record(sys.argv[1], chosen, progress=lambda units: tqdm(units, desc="replies", mininterval=30))
    print(done.groupby("arm", sort=False)["follows"].mean().round(3).to_string())
