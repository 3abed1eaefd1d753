"""Budget what-ifs: how a resident ceiling splits into authored and learned tokens, what it demotes, and
what the resident prompt costs at prefill — the model behind the BudgetTuner and notebook 06.

* `view(skills, deltas, ceiling)` — the budget plan at one ceiling (`budget.plan`, the very rule the store
  enforces, with `Budget`'s retrieval reserve), each skill's authored and learned resident tokens exactly as
  the resolver renders them, and every delta's fate: resident / retrieval-only / archived. Pure: it never
  writes; `Budget(store, skills, ceiling).enforce()` is what applies a ceiling.
* `at_ceilings(skills, deltas, ceilings)` — `view` at many ceilings, one row each; `envelope` splits a context
  window (the NPU's 32,768 tokens by default) into authored, learned, reserve and what is left for the rest of
  the prompt and the answer.
* `ttft_estimate(tokens, prefill_tps)` — time to first token from a prefill throughput (tokens/s);
  `measure_ttft(client, model, text)` asks a live model (a Lemonade server or the local engine) instead.
* `run(skills, …)` — notebook 06's study: synthetic corpora × seeds × ceilings, `.table()` and a `.finding()`
  from the decision rule `RULE`, stated before the data.
* `synthetic_deltas(skills, n, seed)` — a seeded corpus of active deltas whose lessons are the prose of
  `datasets/lessons/lessons.csv`, anchored to sections of the given skills, with seeded evidence and ages.
"""

from __future__ import annotations

import csv
import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .. import budget
from ..anchor import anchor_for, parse
from ..grammar import Delta, Provenance
from ..llm.client import NPU_CTX_SIZE
from ..resolve import compose
from ..resources import dataset_path

__all__ = ["CEILINGS", "FATES", "LESSONS_CSV", "RULE", "SIZES", "BudgetStudy", "SkillCost", "View", "at_ceilings",
           "envelope", "measure_on_engine", "measure_ttft", "run", "synthetic_deltas", "ttft_estimate", "view"]

FATES = ("resident", "retrieval-only", "archived")
LESSONS_CSV = dataset_path("lessons", "lessons.csv")
_UNBOUNDED = 10**9  # render everything the plan keeps; the plan already applied the ceiling


@dataclass(frozen=True)
class SkillCost:
    skill: str
    authored: int  # Llama tokens of the authored body
    learned: int  # tokens the resident learned lines add, as rendered
    resident: int  # resident deltas of this skill after the plan
    demoted: int
    archived: int

    def to_dict(self) -> dict:
        return {"skill": self.skill, "authored": self.authored, "learned": self.learned, "resident": self.resident,
                "demoted": self.demoted, "archived": self.archived}


@dataclass(frozen=True)
class View:
    """The budget at one ceiling. `fates` maps each resident candidate's id to one of FATES."""

    ceiling: int
    reserve: int
    plan: budget.BudgetPlan
    skills: tuple[SkillCost, ...]
    fates: Mapping[str, str]
    texts: Mapping[str, str]  # skill → effective text with the plan applied (what a session would prefill)

    @property
    def authored(self) -> int:
        return sum(s.authored for s in self.skills)

    @property
    def learned(self) -> int:
        return sum(s.learned for s in self.skills)

    @property
    def resident_tokens(self) -> int:
        """Authored + learned tokens as rendered: the resident prompt the skills put in front of every turn."""
        return self.authored + self.learned

    def ids(self, fate: str) -> tuple[str, ...]:
        return tuple(i for i, f in self.fates.items() if f == fate)

    def to_dict(self) -> dict:
        counts = {f: len(self.ids(f)) for f in FATES}
        return {"ceiling": self.ceiling, "reserve": self.reserve, "authored": self.authored, "learned": self.learned,
                "resident_tokens": self.resident_tokens, **counts, "over": self.plan.over}


def view(skills: Sequence, deltas: Iterable[Delta], ceiling: int = budget.DEFAULT_CEILING, *,
         reserve: int | None = None, consolidate: bool = False) -> View:
    """The plan at `ceiling` over the skills' authored bodies and their deltas (any status; only active tier 2/3
    count), and what each skill renders under it. `consolidate` also computes merge proposals (slower)."""
    skills = list(skills)
    reserve = budget.Budget(None, skills, ceiling, reserve=reserve).reserve  # the store's own reserve rule
    names = {s.name for s in skills}
    deltas = [d for d in deltas if d.skill in names]
    authored = dict(zip((s.name for s in skills), budget.count_many([s.body for s in skills])))
    the_plan = budget.plan(sum(authored.values()), deltas, ceiling, reserve=reserve,
                           proposer=budget.propose_consolidations if consolidate else None)
    demoted, archived = set(the_plan.demote), set(the_plan.archive)
    fates = {d.id: "retrieval-only" if d.id in demoted else "archived" if d.id in archived else "resident"
             for d in sorted(budget.resident_candidates(deltas), key=lambda d: d.sort_key)}
    rows, texts = [], {}
    for s in skills:
        mine = [d for d in deltas if d.skill == s.name and d.id not in archived]
        eff = compose(s, mine, retrieval_only=demoted, embedder=False, ceiling=_UNBOUNDED)
        texts[s.name] = eff.text
        own = [fates[d.id] for d in deltas if d.skill == s.name and d.id in fates]
        learned = eff.tokens - authored[s.name]
        rows.append(SkillCost(s.name, authored[s.name], learned, *(own.count(f) for f in FATES)))
    return View(ceiling, reserve, the_plan, tuple(rows), fates, texts)


def at_ceilings(skills: Sequence, deltas: Sequence[Delta], ceilings: Iterable[int], **kw) -> list[dict]:
    """`view(...).to_dict()` at each ceiling."""
    return [view(skills, deltas, c, **kw).to_dict() for c in ceilings]


# ------------------------------------------------------------------------------------------- the study

SIZES: Mapping[str, int] = {"light": 25, "typical": 100, "heavy": 400}
CEILINGS = (2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768)
RULE = ("Stated before the data: recommend the smallest ceiling in the grid that keeps every lesson of the "
        "*typical* corpus resident (none demoted, none archived) in every seed **and** leaves at least half of "
        "the 32,768-token window to the rest of the prompt. The default (16,384) is *larger than needed* when "
        "a smaller ceiling qualifies, *right* when it is the one, *too small* when only larger ones do; if no "
        "ceiling in the grid qualifies, the verdict says so.")


@dataclass(frozen=True)
class BudgetStudy:
    """What `run` measured: one row per (corpus, seed, ceiling) — `view(...).to_dict()` plus the corpus."""

    rows: tuple[Mapping, ...]
    target: str = "typical"
    window: int = NPU_CTX_SIZE
    default: int = budget.DEFAULT_CEILING

    def table(self):
        """The sweep as a DataFrame (pandas is imported here, not by the budget core)."""
        import pandas as pd

        return pd.DataFrame(list(self.rows))

    def fits_all(self, corpus: str) -> int | None:
        """The smallest ceiling at which `corpus` keeps every lesson resident in every seed (None: none does)."""
        t = self.table()
        t = t[t.corpus == corpus]
        ok = t.groupby("ceiling").apply(lambda g: bool(((g["retrieval-only"] == 0) & (g.archived == 0)).all()),
                                        include_groups=False)
        return int(ok[ok].index.min()) if ok.any() else None

    def recommended(self) -> int | None:
        """`RULE` applied: the smallest qualifying ceiling, or None."""
        fits = self.fits_all(self.target)
        return fits if fits is not None and self.window - fits >= self.window / 2 else None

    def finding(self) -> str:
        rec = self.recommended()
        t = self.table()
        at_default = t[(t.ceiling == self.default) & (t.corpus == self.target)]
        if rec is None:
            fits = self.fits_all(self.target)
            why = ("no ceiling in the grid keeps every lesson resident" if fits is None else
                   f"keeping every lesson resident needs {fits:,}, more than half the {self.window:,} window")
            return f"**No ceiling in the grid meets the rule** for the {self.target} corpus: {why}."
        verdict = ("larger than needed" if rec < self.default else "right" if rec == self.default else "too small")
        return (f"**Recommend a ceiling of {rec:,} tokens** for the {self.target} corpus "
                f"({len(set(t.seed))} seed(s)): every lesson stays resident from there and "
                f"{self.window - rec:,} of the {self.window:,}-token window stay free; the default "
                f"{self.default:,} is **{verdict}**"
                + (f" (at the default: {int(at_default['retrieval-only'].max())} demoted, up to "
                   f"{int(at_default.resident_tokens.max()):,} resident tokens)" if len(at_default) else "")
                + ". Per corpus, every lesson resident from: "
                + ", ".join(f"{c} {self.fits_all(c) or 'none'}" for c in dict.fromkeys(t.corpus)) + ".")


def run(skills: Sequence, sizes: Mapping[str, int] = SIZES, seeds: Iterable[int] = (0,),
        ceilings: Iterable[int] = CEILINGS, *, target: str = "typical") -> BudgetStudy:
    """Notebook 06: synthetic corpora of each size and seed over `skills`, viewed at every ceiling."""
    ceilings = tuple(ceilings)
    rows = tuple({"corpus": name, "seed": seed, "deltas": n, **row}
                 for name, n in sizes.items() for seed in seeds
                 for row in at_ceilings(skills, synthetic_deltas(skills, n, seed=seed), ceilings))
    return BudgetStudy(rows, target)


def envelope(v: View, window: int = NPU_CTX_SIZE) -> dict:
    """A context window split: authored + learned (resident) + retrieval reserve + unused ceiling (`headroom`)
    + what is left for the rest of the prompt and the answer (system scaffold, tools, conversation, reply).
    When the authored text alone is over the ceiling the skills take more than it: `rest` says what is
    really left (negative: the window overflows)."""
    taken = max(v.ceiling, v.resident_tokens + v.reserve)
    return {"window": window, "ceiling": v.ceiling, "authored": v.authored, "learned": v.learned,
            "reserve": v.reserve, "headroom": max(0, v.ceiling - v.reserve - v.resident_tokens),
            "rest": window - taken}


def ttft_estimate(tokens: int, prefill_tps: float, overhead_s: float = 0.0) -> float:
    """Seconds to the first token when `tokens` must be prefilled at `prefill_tps` tokens per second."""
    if prefill_tps <= 0:
        raise ValueError(f"prefill throughput must be positive tokens/s, got {prefill_tps}")
    return overhead_s + tokens / prefill_tps


def measure_ttft(client, model: str, text: str, *, user: str = "Begin.") -> tuple[float | None, str]:
    """Send `text` as the system prompt to a live model and read its time to first token (one reply token).
    Returns (seconds or None, where the figure comes from). Raises the client's errors (`llm.Skipped` …)."""
    reply = client.chat(model, [{"role": "system", "content": text}, {"role": "user", "content": user}],
                        max_completion_tokens=1, stream=True, temperature=0.0, seed=0)
    return reply.ttft_s, f"{reply.label()}, {reply.ttft_source or 'unknown source'}"


def measure_on_engine(skills: Sequence, deltas: Sequence[Delta], ceilings: Iterable[int]) -> tuple[list[dict], str]:
    """Time the resident prompt at each ceiling on the local engine (`llm.engine.Engine`: random weights, real
    prefill). Returns (rows, source); no rows and the reason when the engine is not installed."""
    from ..llm import LemonadeClient
    from ..llm.engine import Engine, engine_available

    if (reason := engine_available()) is not None:
        return [], f"not measured: {reason}"
    rows, source = [], ""
    with Engine() as engine, LemonadeClient(engine.base_url) as client:
        for c in ceilings:
            v = view(skills, deltas, c)
            secs, source = measure_ttft(client, engine.alias, "\n\n".join(v.texts.values()))
            rows.append({"ceiling": c, "resident tokens": v.resident_tokens, "measured TTFT (s)": round(secs, 3),
                         "implied prefill tok/s": round(v.resident_tokens / secs)})
    return rows, source


# -------------------------------------------------------------------------------------- synthetic corpora


def _lesson_prose(path: Path = LESSONS_CSV) -> list[str]:
    with path.open(encoding="utf-8", newline="") as fh:
        return [r["prose"].strip() for r in csv.DictReader(fh) if r.get("prose", "").strip()]


def _tier2_keys(path: Path = LESSONS_CSV) -> list[str]:
    """The parameter names of the corpus's tier-2 lessons (`max_sentences`, `followup_hours`, …), sorted."""
    with path.open(encoding="utf-8", newline="") as fh:
        return sorted({r["key"] for r in csv.DictReader(fh) if r["gold_tier"] == "2" and r["key"].isidentifier()})


def synthetic_deltas(skills: Sequence, n: int, seed: int = 0, *, tier2_share: float = 0.15,
                     start: datetime = datetime(2026, 1, 1, tzinfo=timezone.utc)) -> list[Delta]:
    """`n` active deltas spread over `skills` (capability-bearing ones skipped: they take no deltas): tier-3
    preferences whose bodies are lesson prose from the lessons corpus, and a `tier2_share` of tier-2
    parameters; each on a seeded section, with seeded outcome counters, creation and last-use times.
    Deterministic for (skill bodies, n, seed), ids included."""
    rng = random.Random(seed)
    prose, keys = _lesson_prose(), _tier2_keys()
    targets = [s for s in skills if not s.capability_bearing]
    if not targets:
        raise ValueError("every skill given is capability-bearing: none can take a learned delta")
    sections = {s.name: [x.slug for x in parse(s.body) if x.body_text.strip()] or [parse(s.body)[0].slug]
                for s in targets}
    out = []
    for i in range(n):
        s = targets[i % len(targets)]
        section = rng.choice(sections[s.name])
        if rng.random() < tier2_share:
            key = f"{keys[i % len(keys)]}_{i // len(keys) + 1}" if i >= len(keys) else keys[i]  # readable, unique
            kind, payload = "parameter", {"key": key, "value": rng.choice([12, 24, 48, 72, "draft-only"])}
        else:
            kind, payload = "preference", {"body": rng.choice(prose)}
        created = start + timedelta(hours=rng.randrange(24 * 90))
        attempts = rng.randrange(0, 12)
        digest = hashlib.sha256(f"{seed}/{i}/{s.name}".encode()).hexdigest()[:16]
        out.append(Delta(skill=s.name, kind=kind, payload=payload, anchor=anchor_for(s.body, section, s.version),
                         provenance=Provenance("user_instruction"), status="active", id=f"delta_{digest}",
                         created_at=created, approved_at=created,
                         last_used_at=created + timedelta(hours=rng.randrange(24 * 30)),
                         success_count=rng.randint(0, attempts), attempt_count=attempts, base_root=s.root))
    return out
