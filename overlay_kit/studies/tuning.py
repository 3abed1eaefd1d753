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
* `run(rule=None)` — notebook 06's study under its rule file (datasets/rules/06_budget_tuning.yaml, fixed before
  the data): corpora from data — each agent of the shared world trace (`studies.world`) with the lessons its user
  taught, as lessons.csv lesson texts, loading the skills an authored-load profile names — the product's plan at
  every ceiling of the rule's grid, the share of needing sessions whose lesson is in front of the model (resident,
  or demoted and brought back at the shipped gate's measured comeback rate), intervals that resample users (and
  the lessons behind the comeback rate); `.table()`, `.answers()`, `.recommended()`, `.finding()`.
* `synthetic_deltas(skills, n, seed)` — an illustrative corpus (tests, the tuner's what-ifs; not the study's):
  `n` seeded active deltas whose lessons are the prose of `datasets/lessons/lessons.csv`.
"""

from __future__ import annotations

import csv
import hashlib
import random
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .. import budget, retrieval
from ..anchor import anchor_for, parse
from ..defaults import SHIPPED
from ..grammar import Delta, Provenance, item_text
from ..llm.client import NPU_CTX_SIZE
from ..metrics import Interval, ratio_ci
from ..resolve import compose
from ..resources import dataset_path
from ..skill import Skill, load_skill
from . import rulefile, world
from .finding import Finding, render
from .rulefile import RuleFile, RuleFileError

__all__ = [
    "CEILINGS",
    "FATES",
    "LESSONS_CSV",
    "RULE_NAME",
    "Agent",
    "BudgetStudy",
    "ScaleReading",
    "ProfileAnswer",
    "SkillCost",
    "View",
    "agents",
    "at_ceilings",
    "at_scale",
    "envelope",
    "loadout",
    "measure_on_engine",
    "measure_ttft",
    "realistic_agents",
    "run",
    "sessions",
    "share_draws",
    "synthetic_deltas",
    "ttft_estimate",
    "view",
]

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
        return {
            "skill": self.skill,
            "authored": self.authored,
            "learned": self.learned,
            "resident": self.resident,
            "demoted": self.demoted,
            "archived": self.archived,
        }


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
        return {
            "ceiling": self.ceiling,
            "reserve": self.reserve,
            "authored": self.authored,
            "learned": self.learned,
            "resident_tokens": self.resident_tokens,
            **counts,
            "over": self.plan.over,
        }


def view(
    skills: Sequence,
    deltas: Iterable[Delta],
    ceiling: int = SHIPPED.ceiling,
    *,
    reserve: int | None = None,
    consolidate: bool = False,
) -> View:
    """The plan at `ceiling` over the skills' authored bodies and their deltas (any status; only active tier 2/3
    count), and what each skill renders under it. `consolidate` also computes merge proposals (slower)."""
    skills = list(skills)
    reserve = budget.Budget(None, skills, ceiling, reserve=reserve).reserve  # the store's own reserve rule
    names = {s.name for s in skills}
    deltas = [d for d in deltas if d.skill in names]
    authored = dict(zip((s.name for s in skills), budget.count_many([s.body for s in skills])))
    the_plan = budget.plan(
        sum(authored.values()),
        deltas,
        ceiling,
        reserve=reserve,
        proposer=budget.propose_consolidations if consolidate else None,
    )
    demoted, archived = set(the_plan.demote), set(the_plan.archive)
    fates = {
        d.id: "retrieval-only" if d.id in demoted else "archived" if d.id in archived else "resident"
        for d in sorted(budget.resident_candidates(deltas), key=lambda d: d.sort_key)
    }
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

RULE_NAME = "06_budget_tuning"
CEILINGS: tuple[int, ...] = tuple(rulefile.load(RULE_NAME).param("ceilings"))  # the rule's grid; holds SHIPPED
_START = datetime(2026, 1, 1, tzinfo=timezone.utc)  # a user's session i happens on day i


@dataclass(frozen=True)
class Agent:
    """One user's agent in the world trace, with every lesson the user taught it as an active tier-3 delta."""

    user: str
    domain: str
    skill: Skill  # the domain's skill: the one that takes the deltas
    lessons: tuple[str, ...]  # τ lesson ids, in the order they were taught
    deltas: tuple[Delta, ...]  # one per lesson (same order): text from lessons.csv, evidence 0/0
    taught_at: tuple[int, ...]  # the session index that taught each lesson
    needs: tuple[tuple[int, str], ...]  # (session index, τ lesson id) of each session needing a taught lesson

    def at(self, index: int) -> list[Delta]:
        """The deltas the agent holds at the start of session `index`: lessons taught before it, each last
        used at the last earlier session that needed it (recency: the budget's order when evidence is 0/0)."""
        return [
            replace(d, last_used_at=_START + timedelta(days=self._last_use(lesson, index)))
            for lesson, d, t in zip(self.lessons, self.deltas, self.taught_at)
            if t < index
        ]

    def _last_use(self, lesson: str, index: int) -> int:
        used = [i for i, need in self.needs if need == lesson and i < index]
        return max(used, default=self.taught_at[self.lessons.index(lesson)])


def _lesson_texts(tier: int, domain: str, path: Path = LESSONS_CSV) -> list[str]:
    """The prose of the lessons.csv lessons of gold tier `tier` in `domain` ("all": every domain), file order."""
    with path.open(encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["gold_tier"] == str(tier) and r["prose"].strip()]
    texts = [r["prose"].strip() for r in rows if domain == "all" or r["domain"] == domain]
    if not texts:
        raise ValueError(f"{path}: no lesson of gold tier {tier} in domain {domain!r}")
    return texts


def _taught(w: world.World, user: str, agent: str, lesson: str, index: int, skill, body: str, section: str) -> Delta:
    """The lesson `user` taught `agent` at their session `index`, as the product holds it once approved: an
    active tier-3 preference on `section`, its id drawn from the world's seed, the user, the agent and the lesson."""
    created = _START + timedelta(days=index)
    digest = hashlib.sha256(f"{w.seed}/{user}/{agent}/{lesson}".encode()).hexdigest()[:16]
    return Delta(
        skill=skill.name,
        kind="preference",
        payload={"body": body},
        anchor=anchor_for(skill.body, section, skill.version),
        provenance=Provenance("user_instruction"),
        status="active",
        id=f"delta_{digest}",
        created_at=created,
        approved_at=created,
        base_root=skill.root,
    )


def agents(w: world.World, rule: RuleFile | None = None) -> tuple[list[Agent], pd.DataFrame]:
    """The world's agents as the rule builds them (`domains`, `lesson_tier`), and one row per agent left out
    because its skill is capability-bearing (the gates refuse deltas on it)."""
    rule = rule or rulefile.load(RULE_NAME)
    domains, tier = rule.param("domains"), int(rule.param("lesson_tier"))
    frame = w.frame()
    out, left_out = [], []
    for (user, domain), group in frame.groupby(["user", "agent"], sort=True):
        if domain not in domains:
            raise RuleFileError(rule.path, f"params.domains.{domain}", "the world has this domain; the rule maps none")
        spec = domains[domain]
        skill = load_skill(dataset_path(*spec["skill"].split("/")))
        group = group.sort_values("index", kind="stable")
        taught = group[group.taught]
        later = group[group.needs.notna() & ~group.taught]  # the first need of a lesson teaches it
        needs = tuple((int(i), str(lesson)) for i, lesson in zip(later["index"], later.needs))
        if skill.capability_bearing:
            left_out.append(
                {
                    "user": user,
                    "agent": domain,
                    "skill": skill.name,
                    "lessons": len(taught),
                    "needing sessions": len(needs),
                }
            )
            continue
        texts = _lesson_texts(tier, spec["lessons"])
        sections = [x.slug for x in parse(skill.body) if x.body_text.strip()] or [parse(skill.body)[0].slug]
        deltas = []
        for i, lesson in zip(taught["index"], taught.needs):
            rng = random.Random(f"{w.seed}/{user}/{lesson}")  # the draw of one lesson, whatever else is drawn
            body = rng.choice(texts)
            deltas.append(_taught(w, user, domain, lesson, int(i), skill, body, rng.choice(sections)))
        out.append(
            Agent(
                user, domain, skill, tuple(taught.needs), tuple(deltas), tuple(int(i) for i in taught["index"]), needs
            )
        )
    return out, pd.DataFrame(left_out, columns=["user", "agent", "skill", "lessons", "needing sessions"])


def loadout(agent: Agent, profile: str, rule: RuleFile | None = None) -> list[Skill]:
    """The skills `agent` loads under an authored-load profile of the rule: its own skill, then the profile's
    (datasets/skills), each once."""
    rule = rule or rulefile.load(RULE_NAME)
    extra = rule.param("profiles")[profile]
    return [agent.skill] + [_example_skill(n) for n in extra if n != agent.skill.name]


@lru_cache(maxsize=32)
def _example_skill(name: str) -> Skill:
    return load_skill(dataset_path("skills", name))


def sessions(ags: Sequence[Agent], rule: RuleFile | None = None) -> pd.DataFrame:
    """One row per (profile, needing session, ceiling): whether the needed lesson is resident under the
    product's plan (`budget.plan`, `Budget`'s reserve, no consolidation) over the lessons taught so far."""
    rule = rule or rulefile.load(RULE_NAME)
    ceilings = [int(c) for c in rule.param("ceilings")]
    reserves = {c: budget.Budget(None, [], c).reserve for c in ceilings}
    profiles = list(rule.param("profiles"))
    rows = []
    for a in ags:
        authored = {p: sum(budget.count_many([s.body for s in loadout(a, p, rule)])) for p in profiles}
        for index, lesson in a.needs:
            held = a.at(index)
            wanted = a.deltas[a.lessons.index(lesson)].id
            for profile in profiles:
                for c in ceilings:
                    p = budget.plan(authored[profile], held, c, reserve=reserves[c], proposer=None)
                    rows.append(
                        {
                            "profile": profile,
                            "user": a.user,
                            "agent": a.domain,
                            "index": index,
                            "lesson": lesson,
                            "ceiling": c,
                            "reserve": reserves[c],
                            "authored": authored[profile],
                            "lessons": len(held),
                            "resident": wanted not in p.demote and wanted not in p.archive,
                            "resident_tokens": p.resident_tokens,
                        }
                    )
    return pd.DataFrame(rows)


def _per_lesson(cb: world.Comeback) -> pd.DataFrame:
    """Comeback's needing sessions per lesson (sum came back, count), exactly as `world.comeback` counts them."""
    split = {x.id: x.split for x in world.lessons()}
    needs = cb.table[cb.table.lesson.notna()]
    if cb.split != "all":
        needs = needs[needs.lesson.map(split) == cb.split]
    return needs.groupby("lesson").came_back.agg(["sum", "count"]).astype(float)


@dataclass(frozen=True)
class ProfileAnswer:
    profile: str
    answer: int  # the smallest eligible ceiling within the margin of the best (upper end of the difference)
    best: int  # the eligible ceiling with the highest share (ties: the smallest)
    held_up: int | None  # a smaller ceiling within the margin on the point estimate only (too little power)
    window_binds: int | None  # a larger, ineligible ceiling that beats the best by more than the margin
    over: int  # agents whose authored text alone fills the largest eligible ceiling (no lesson can stay)


@dataclass(frozen=True, eq=False)
class BudgetStudy:
    """What `run` measured under the rule: `table()` one row per (profile, ceiling) with intervals; `answers()`
    one per profile; `recommended()` the rule's answer; `finding()` the verdict against the shipped ceiling."""

    rule: RuleFile
    agents: tuple[Agent, ...]  # the world's agents that take deltas, with their lessons
    rows: pd.DataFrame  # `sessions(...)`: one row per (profile, needing session, ceiling)
    corpus: pd.DataFrame  # one row per agent: lessons taught, their tokens, needing sessions
    left_out: pd.DataFrame  # agents whose skill takes no deltas
    comeback: world.Comeback
    summary: pd.DataFrame  # the table, numeric
    diffs: Mapping[tuple[str, int, int], Interval]  # (profile, c1, c2) → S(c1) − S(c2), paired
    world_digest: str
    default: int = SHIPPED.ceiling

    def table(self) -> pd.DataFrame:
        """One row per (profile, ceiling): the share of needing sessions with the lesson in front of the model
        and how far below the profile's best ceiling it falls, each with its interval (users × lessons)."""
        s = self.summary
        iv = lambda col: [
            f"{e:.3f} [{lo:.3f}, {hi:.3f}]"
            for e, lo, hi in zip(s[col], s[f"{col}_low"], s[f"{col}_high"])  # noqa: E731
        ]
        return pd.DataFrame(
            {
                "profile": s.profile,
                "ceiling": s.ceiling,
                "eligible": s.eligible,
                "reserve": s.reserve,
                "authored (max)": s["authored (max)"],
                "resident tokens (max)": s["resident tokens (max)"],
                "resident share": s.resident.round(3),
                "in front of the model": iv("share"),
                "below the best": iv("below best"),
                "agents over": s["agents over"],
            }
        )

    def profiles(self) -> pd.DataFrame:
        """One row per authored-load profile: the skills it adds to each agent's own, and the authored tokens
        its agents carry (smallest, largest; agents with at least one needing session)."""
        per = (
            self.rows.groupby(["profile", "user", "agent"], sort=False).authored.first().groupby("profile", sort=False)
        )
        adds = self.rule.param("profiles")
        return pd.DataFrame(
            [
                {
                    "profile": p,
                    "adds": ", ".join(adds[p]) or "nothing",
                    "agents measured": len(g),
                    "authored tokens (min)": int(g.min()),
                    "authored tokens (max)": int(g.max()),
                }
                for p, g in per
            ]
        )

    def heaviest(self) -> Agent:
        """The agent holding the most learned tokens (ties: most lessons, then user and domain order)."""
        tokens = dict(zip(zip(self.corpus.user, self.corpus.agent), self.corpus["learned tokens"]))
        return max(self.agents, key=lambda a: (tokens[(a.user, a.domain)], len(a.lessons), a.user, a.domain))

    @property
    def eligible(self) -> tuple[int, ...]:
        """The grid's ceilings inside the window share the product keeps for skills and what they learned."""
        return _eligible(self.rule)

    def answers(self) -> list[ProfileAnswer]:
        margin = float(self.rule.param("margin"))
        out = []
        for profile, g in self.summary.groupby("profile", sort=False):
            g = g.set_index("ceiling")
            elig = self.eligible
            best = _best(g.share, elig)
            within = [c for c in elig if self.diffs[(profile, best, c)].high <= margin]
            answer = min(within)
            point = [c for c in elig if c < answer and self.diffs[(profile, best, c)].estimate <= margin]
            overall = max(g.index, key=lambda c: (g.loc[c, "share"], -c))
            binds = overall if overall not in elig and self.diffs[(profile, overall, best)].low > margin else None
            out.append(
                ProfileAnswer(
                    profile, answer, best, min(point) if point else None, binds, int(g.loc[max(elig), "agents over"])
                )
            )
        return out

    def recommended(self) -> int:
        """The rule's answer: the largest of the profiles' answers (it holds across the stated range)."""
        return max(a.answer for a in self.answers())

    def verdict(self) -> str:
        rec = self.recommended()
        return "larger than needed" if rec < self.default else "right" if rec == self.default else "too small"

    def finding(self) -> str:
        rec, verdict, r = self.recommended(), self.verdict(), self.comeback.recall
        t = self.summary.set_index(["profile", "ceiling"])
        findings = []
        for a in self.answers():
            s = t.loc[(a.profile, a.answer)]
            bits = [f"best {a.best:,}"]
            if a.held_up is not None:
                bits.append(f"held up by uncertainty: {a.held_up:,} is within the margin on the estimate only")
            if a.window_binds is not None:
                bits.append(f"the window share binds: {a.window_binds:,} would keep more")
            if a.over:
                bits.append(f"{a.over} agent(s) whose authored text alone fills {max(self.eligible):,}")
            findings.append(
                Finding(
                    f"{a.profile}: **{a.answer:,}**, share", s.share, s.share_low, s.share_high, note="; ".join(bits)
                )
            )
        head = (
            f"**The rule's answer: a ceiling of {rec:,} tokens**, the largest of the profiles' answers "
            f"(smallest ceiling within {float(self.rule.param('margin')):.2f} of the best on the upper end of "
            f"the paired difference). Per profile:"
        )
        heavy = self.corpus.sort_values(["learned tokens", "lessons"]).iloc[-1]
        authored = ", ".join(
            f"{p} {n:,}" for p, n in zip(self.profiles().profile, self.profiles()["authored tokens (max)"])
        )
        load = (
            f"In the world trace the heaviest agent holds {int(heavy.lessons)} lessons "
            f"({int(heavy['learned tokens']):,} learned tokens; {len(self.agents)} agents take deltas, "
            f"{int(self.corpus['needing sessions'].sum())} needing sessions); the authored text an agent loads "
            f"is at most {authored} tokens by profile. "
        )
        why = (
            f"A demoted lesson comes back in {r.estimate:.0%} [{r.low:.0%}, {r.high:.0%}] of the sessions that "
            f"need it ({self.comeback.gate}, {self.comeback.needed} needing sessions, split "
            f"{self.comeback.split}, resampled by lesson), so demotion is close to a loss. "
        )
        if verdict == "right":
            tail = f"The shipped ceiling ({self.default:,}, `SHIPPED.ceiling`) is **right**: it is the rule's answer."
        else:
            tail = (
                f"The shipped ceiling ({self.default:,}) is **{verdict}**: by the rule, `SHIPPED.ceiling` in "
                f"overlay_kit/defaults.py is set to {rec:,} and this notebook re-run."
            )
        return render(findings, intro=head, joiner=" · ", outro=". " + load + why + tail)


def _grid(rule: RuleFile) -> tuple[int, ...]:
    return tuple(int(c) for c in rule.param("ceilings"))


def _eligible(rule: RuleFile) -> tuple[int, ...]:
    limit = float(rule.param("window_share")) * int(rule.param("window"))
    eligible = tuple(c for c in _grid(rule) if c <= limit)
    if not eligible:
        raise RuleFileError(rule.path, "params.ceilings", f"no ceiling within the window share ({limit:,.0f})")
    return eligible


def _best(share: pd.Series, eligible: Sequence[int]) -> int:
    """The eligible ceiling with the highest share; ties (within float noise): the smallest."""
    top = max(share[c] for c in eligible)
    return min(c for c in eligible if share[c] >= top - 1e-12)


def _corpus(ags: Sequence[Agent]) -> pd.DataFrame:
    rows = []
    for a in ags:
        tokens = budget.count_many_following([item_text(d) for d in a.deltas])
        rows.append(
            {
                "user": a.user,
                "agent": a.domain,
                "skill": a.skill.name,
                "lessons": len(a.lessons),
                "learned tokens": sum(tokens),
                "needing sessions": len(a.needs),
            }
        )
    return pd.DataFrame(rows, columns=["user", "agent", "skill", "lessons", "learned tokens", "needing sessions"])


def share_draws(
    resident: np.ndarray, needs: np.ndarray, came_back: np.ndarray, needed: np.ndarray, *, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The share of needing sessions with the lesson in front of the model, S = (resident + r x demoted) / needs,
    and its bootstrap draws. `resident[..., u]`: needing sessions of user u whose lesson is resident (any
    leading axes: profile, ceiling); `needs[u]`: needing sessions of user u; `came_back[l]` / `needed[l]`: the
    comeback table per lesson l (r = Σcame_back / Σneeded). Each draw resamples users with replacement (the
    trace's independent unit) and, independently, lessons for r (comeback's unit). Returns (S, draws), draws
    with a leading axis of `n_boot`."""
    resident, needs = np.asarray(resident, float), np.asarray(needs, float)
    came_back, needed = np.asarray(came_back, float), np.asarray(needed, float)
    rng = np.random.default_rng(seed)
    n_users, n_lessons = needs.shape[0], came_back.shape[0]
    wu = rng.multinomial(n_users, np.full(n_users, 1 / n_users), size=n_boot)  # (draw, user) counts
    wl = rng.multinomial(n_lessons, np.full(n_lessons, 1 / n_lessons), size=n_boot)  # (draw, lesson) counts
    r, r_b = came_back.sum() / needed.sum(), (wl @ came_back) / (wl @ needed)
    kept = resident.sum(axis=-1)
    share = (kept + r * (needs.sum() - kept)) / needs.sum()
    kept_b = np.moveaxis(resident @ wu.T, -1, 0)  # (draw, ...)
    pad = (slice(None),) + (None,) * (resident.ndim - 1)
    needs_b = (wu @ needs)[pad]
    return share, (kept_b + r_b[pad] * (needs_b - kept_b)) / needs_b


def run(rule: RuleFile | None = None, *, w: world.World | None = None, embedder=None) -> BudgetStudy:
    """Notebook 06: the rule's corpora from the world trace and the lessons dataset, the product's plan at every
    ceiling of the rule's grid, the shipped gate's comeback rate, and user × lesson bootstrap intervals."""
    rule = rule or rulefile.load(RULE_NAME)
    w = w or world.build(int(rule.param("world_seed")))
    ags, left_out = agents(w, rule)
    rows = sessions(ags, rule)
    if rows.empty:
        raise ValueError(f"world {w.digest()[:12]}: no session needs a lesson an agent holds; nothing to measure")
    cb = world.comeback(w, embedder, split=str(rule.param("comeback_split")), seed=int(rule.param("seed")))
    lessons = _per_lesson(cb)
    profiles = list(rule.param("profiles"))
    ceilings = _grid(rule)
    users = sorted(rows.user.unique())
    first = rows[(rows.profile == profiles[0]) & (rows.ceiling == ceilings[0])]
    needs = first.groupby("user").size().reindex(users).to_numpy(float)  # needing sessions per user
    res = (
        rows.groupby(["profile", "ceiling", "user"])
        .resident.sum()
        .reindex(pd.MultiIndex.from_product([profiles, ceilings, users]))
        .to_numpy(float)
        .reshape(len(profiles), len(ceilings), len(users))
    )
    share, share_b = share_draws(
        res,
        needs,
        lessons["sum"].to_numpy(),
        lessons["count"].to_numpy(),
        n_boot=int(rule.param("n_boot")),
        seed=int(rule.param("seed")),
    )
    conf = float(rule.param("confidence"))
    diffs = {
        (p, c1, c2): Interval.percentile(
            share[i, j] - share[i, k], share_b[:, i, j] - share_b[:, i, k], conf, len(users)
        )
        for i, p in enumerate(profiles)
        for j, c1 in enumerate(ceilings)
        for k, c2 in enumerate(ceilings)
    }
    limit = float(rule.param("window_share")) * int(rule.param("window"))
    summary = []
    for i, p in enumerate(profiles):
        part = rows[rows.profile == p]
        for j, c in enumerate(ceilings):
            at = part[part.ceiling == c]
            ci = Interval.percentile(share[i, j], share_b[:, i, j], conf, len(users))
            per_agent = at.groupby(["user", "agent"]).authored.first()
            reserve = int(at.reserve.iloc[0])
            summary.append(
                {
                    "profile": p,
                    "ceiling": c,
                    "eligible": c <= limit,
                    "reserve": reserve,
                    "authored (max)": int(at.authored.max()),
                    "resident tokens (max)": int(at.resident_tokens.max()),
                    "resident": float(at.resident.mean()),
                    "share": ci.estimate,
                    "share_low": ci.low,
                    "share_high": ci.high,
                    "agents over": int((per_agent > c - reserve).sum()),
                }
            )
    summary = pd.DataFrame(summary)
    best = {p: _best(g.set_index("ceiling").share, _eligible(rule)) for p, g in summary.groupby("profile")}
    gap = [diffs[(p, best[p], c)] for p, c in zip(summary.profile, summary.ceiling)]
    summary["below best"] = [g.estimate for g in gap]
    summary["below best_low"] = [g.low for g in gap]
    summary["below best_high"] = [g.high for g in gap]
    return BudgetStudy(rule, tuple(ags), rows, _corpus(ags), left_out, cb, summary, diffs, w.digest())


# ------------------------------------------------------------------------------ the realistic-scale world


def realistic_agents(w: world.World) -> list[Agent]:
    """A realistic world's agents (`world.build(scale="realistic")`: a mailbox or coding agent holding tens to
    hundreds of lessons), each taught lesson an active tier-3 preference delta with the corpus lesson's own text,
    anchored to its own section of the agent's skill; `needs` holds every later need (each lesson of a goal
    needing several)."""
    by_id = {x.id: x for x in w.lessons()}
    skills = {a: load_skill(path) for a, path in world.selection_corpus("dev").skills.items()}
    frame = w.frame()
    out = []
    for (user, agent), group in frame.groupby(["user", "agent"], sort=True):
        skill, taught = skills[agent], group[group.taught]
        later = [
            (int(i), lesson)
            for i, taught_here, first, also in zip(group["index"], group.taught, group.needs, group.also_needs)
            if not taught_here and isinstance(first, str)
            for lesson in (first, *also)
        ]
        deltas = [
            _taught(w, user, agent, lesson, int(i), skill, by_id[lesson].body, by_id[lesson].section)
            for i, lesson in zip(taught["index"], taught.needs)
        ]
        out.append(
            Agent(
                user,
                agent,
                skill,
                tuple(taught.needs),
                tuple(deltas),
                tuple(int(i) for i in taught["index"]),
                tuple(later),
            )
        )
    return out


@dataclass(frozen=True, eq=False)
class ScaleReading:
    """`at_scale`'s answer: per ceiling, what the product's plan keeps resident at a realistic world's sessions
    and what each goal then has in context (selection over the resident lessons, the gate over the demoted)."""

    world_digest: str
    profile: str
    split: str  # needed-in-context counts the needs of lessons of this split ("eval": the selection never tuned on)
    # one row per (ceiling, session after the agent's first lesson, teaching ones left out): lessons `held`,
    # `resident`, `chosen` (in context), `irrelevant`; tokens (the lessons' own) in context, resident, held;
    # `authored`: the profile's authored tokens for the agent
    rows: pd.DataFrame
    needs: pd.DataFrame  # one row per (ceiling, need of a lesson already taught): its split, found or not

    def table(self, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
        """One row per ceiling: the lessons agents hold and keep resident (median, largest), what a goal has in
        context, the needed lessons in it (resampled by lesson), the share of it the goal does not need, and
        learned tokens per goal."""
        out = []
        for c, g in self.rows.groupby("ceiling", sort=True):
            part = self.needs[(self.needs.ceiling == c) & ((self.needs.split == self.split) | (self.split == "all"))]
            n = part.groupby("need").found.agg(["sum", "count"])
            found = ratio_ci(n["sum"], n["count"], n_resamples=n_boot, seed=seed)
            out.append(
                {
                    "ceiling": c,
                    "lessons held (max)": int(g.held.max()),
                    "resident (median)": float(g.resident.median()),
                    "resident (min)": int(g.resident.min()),
                    "in context per goal": round(float(g.chosen.mean()), 1),
                    "needed in context": round(found.estimate, 3),
                    "needed low": round(found.low, 3),
                    "needed high": round(found.high, 3),
                    "irrelevant share": round(float(g.irrelevant.sum() / max(g.chosen.sum(), 1)), 3),
                    "learned tokens per goal": round(float(g.tokens.mean()), 1),
                    "resident learned tokens (max)": int(g.resident_tokens.max()),
                }
            )
        return pd.DataFrame(out)

    def answer(self) -> str:
        """The reading in two sentences a designer can act on (from `table()`; descriptive, no rule's verdict):
        the smallest ceiling whose needed-in-context is within 0.02 of the grid's best, and what binds below."""
        t = self.table().set_index("ceiling")
        low = int(t[t["needed in context"] >= t["needed in context"].max() - 0.02].index.min())
        at = t.loc[low]
        first = (
            f"With selection on, what a goal sees stops growing with the ceiling: from {low:,} tokens up (needed "
            f"in context within 0.02 of the best ceiling's), a goal has about {at['in context per goal']:g} lessons "
            f"and {at['learned tokens per goal']:,.0f} learned tokens in context, {at['needed in context']:.2f} of "
            f"the lessons it needs, and {at['irrelevant share']:.2f} of what is in context is not needed"
        )
        if SHIPPED.ceiling in t.index:
            first += f" (at the shipped {SHIPPED.ceiling:,}: {t.loc[SHIPPED.ceiling, 'needed in context']:.2f} needed)"
        below = t[t.index < low]
        second = (
            f"Below {low:,} the budget demotes lessons to retrieval-only and only the gate can bring them back: at "
            f"{int(below.index.min()):,} tokens {below.iloc[0]['needed in context']:.2f} of the needed lessons are "
            "in context; above it a larger ceiling buys nothing, and what is left to gain is the selection's "
            "precision."
            if len(below)
            else f"No ceiling of the grid binds this world: every one from {low:,} up keeps what the goals need."
        )
        return f"{first}. {second}"


def at_scale(
    w: world.World,
    ceilings: Iterable[int] | None = None,
    *,
    profile: str = "own skill",
    split: str = "eval",
    rule: RuleFile | None = None,
    embedder=None,
) -> ScaleReading:
    """The product's plan at each ceiling (the rule's grid by default) over a realistic world: at every session
    after an agent's first lesson (teaching sessions left out), the budget plan (`budget.plan`, `Budget`'s
    reserve, recency order) over the lessons taught so far, then what the goal has in context
    (`world.in_context`: the shipped selection over the resident lessons, the calibrated gate over the demoted
    ones). `profile`: the rule's authored-load profile (skills loaded beside the agent's own); `split`: count the
    needs of lessons of this split only (`WorldLesson.split`; "eval" by default: the shipped selection was tuned
    on the development corpus' tune lessons; "all"). In-context sizes and tokens count every session."""
    rule = rule or rulefile.load(RULE_NAME)
    ceilings = [int(c) for c in (ceilings if ceilings is not None else rule.param("ceilings"))]
    emb = embedder or retrieval.static_embedder()
    gate = retrieval.gate_for(getattr(emb, "id", type(emb).__name__))[0]
    by_id = {x.id: x for x in w.lessons()}
    tokens = dict(zip(by_id, budget.count_many([x.body for x in by_id.values()])))
    ags = {(a.user, a.domain): a for a in realistic_agents(w)}
    extra = rule.param("profiles")[profile]
    authored = {
        k: sum(budget.count_many([s.body for s in [a.skill] + [_example_skill(n) for n in extra if n != a.skill.name]]))
        for k, a in ags.items()
    }
    uses = {k: {lesson: sorted(i for i, x in a.needs if x == lesson) for lesson in a.lessons} for k, a in ags.items()}
    rows, needs = [], []
    for c in ceilings:
        reserve = budget.Budget(None, [], c).reserve
        kept: dict[tuple[str, int], int] = {}  # (user, session) → learned tokens resident

        def demote(s, have, c=c, reserve=reserve, kept=kept):
            a, used = ags[(s.user, s.agent)], uses[(s.user, s.agent)]
            held = [
                replace(d, last_used_at=_START + timedelta(days=_last(used[x], s.index, t)))
                for x, d, t in zip(a.lessons[: len(have)], a.deltas, a.taught_at)
            ]
            p = budget.plan(authored[(s.user, s.agent)], held, c, reserve=reserve, proposer=None)
            out = set(p.demote) | set(p.archive)
            kept[(s.user, s.index)] = sum(tokens[x] for x, d in zip(a.lessons, held) if d.id not in out)
            return [x for x, d in zip(a.lessons, held) if d.id in out]

        seen = world.in_context(w, emb, gate, demote)
        for s, held, resident, chosen in seen.itertuples(index=False):
            if s.taught:
                continue
            need = s.need_ids
            rows.append(
                {
                    "ceiling": c,
                    "user": s.user,
                    "agent": s.agent,
                    "index": s.index,
                    "held": held,
                    "resident": resident,
                    "chosen": len(chosen),
                    "irrelevant": len(set(chosen) - set(need)),
                    "tokens": sum(tokens[i] for i in chosen),
                    "resident_tokens": kept[(s.user, s.index)],
                    "held_tokens": sum(tokens[i] for i in ags[(s.user, s.agent)].lessons[:held]),
                    "authored": authored[(s.user, s.agent)],
                }
            )
            needs += [{"ceiling": c, "need": i, "split": by_id[i].split, "found": i in chosen} for i in need]
    frame = pd.DataFrame(rows)
    return ScaleReading(
        w.digest(), profile, split, frame, pd.DataFrame(needs, columns=["ceiling", "need", "split", "found"])
    )


def _last(used: list[int], index: int, taught: int) -> int:
    """The last session before `index` that needed a lesson (`used`: those sessions, sorted), else its teaching."""
    k = bisect_left(used, index)
    return used[k - 1] if k else taught


def envelope(v: View, window: int = NPU_CTX_SIZE) -> dict:
    """A context window split: authored + learned (resident) + retrieval reserve + unused ceiling (`headroom`)
    + what is left for the rest of the prompt and the answer (system scaffold, tools, conversation, reply).
    When the authored text alone is over the ceiling the skills take more than it: `rest` says what is
    really left (negative: the window overflows)."""
    taken = max(v.ceiling, v.resident_tokens + v.reserve)
    return {
        "window": window,
        "ceiling": v.ceiling,
        "authored": v.authored,
        "learned": v.learned,
        "reserve": v.reserve,
        "headroom": max(0, v.ceiling - v.reserve - v.resident_tokens),
        "rest": window - taken,
    }


def ttft_estimate(tokens: int, prefill_tps: float, overhead_s: float = 0.0) -> float:
    """Seconds to the first token when `tokens` must be prefilled at `prefill_tps` tokens per second."""
    if prefill_tps <= 0:
        raise ValueError(f"prefill throughput must be positive tokens/s, got {prefill_tps}")
    return overhead_s + tokens / prefill_tps


def measure_ttft(client, model: str, text: str, *, user: str = "Begin.") -> tuple[float | None, str]:
    """Send `text` as the system prompt to a live model and read its time to first token (one reply token).
    Returns (seconds or None, where the figure comes from). Raises the client's errors (`llm.Skipped` …)."""
    reply = client.chat(
        model,
        [{"role": "system", "content": text}, {"role": "user", "content": user}],
        max_completion_tokens=1,
        stream=True,
        temperature=0.0,
        seed=0,
    )
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
            rows.append(
                {
                    "ceiling": c,
                    "resident tokens": v.resident_tokens,
                    "measured TTFT (s)": round(secs, 3),
                    "implied prefill tok/s": round(v.resident_tokens / secs),
                }
            )
    return rows, source


# -------------------------------------------------------------------------------------- synthetic corpora


def _lesson_prose(path: Path = LESSONS_CSV) -> list[str]:
    with path.open(encoding="utf-8", newline="") as fh:
        return [r["prose"].strip() for r in csv.DictReader(fh) if r.get("prose", "").strip()]


def _tier2_keys(path: Path = LESSONS_CSV) -> list[str]:
    """The parameter names of the corpus's tier-2 lessons (`max_sentences`, `followup_hours`, …), sorted."""
    with path.open(encoding="utf-8", newline="") as fh:
        return sorted({r["key"] for r in csv.DictReader(fh) if r["gold_tier"] == "2" and r["key"].isidentifier()})


def synthetic_deltas(
    skills: Sequence,
    n: int,
    seed: int = 0,
    *,
    tier2_share: float = 0.15,
    start: datetime = datetime(2026, 1, 1, tzinfo=timezone.utc),
) -> list[Delta]:
    """`n` active deltas spread over `skills` (capability-bearing ones skipped: they take no deltas): tier-3
    preferences whose bodies are lesson prose from the lessons corpus, and a `tier2_share` of tier-2
    parameters; each on a seeded section, with seeded outcome counters, creation and last-use times.
    Deterministic for (skill bodies, n, seed), ids included."""
    rng = random.Random(seed)
    prose, keys = _lesson_prose(), _tier2_keys()
    targets = [s for s in skills if not s.capability_bearing]
    if not targets:
        raise ValueError("every skill given is capability-bearing: none can take a learned delta")
    sections = {
        s.name: [x.slug for x in parse(s.body) if x.body_text.strip()] or [parse(s.body)[0].slug] for s in targets
    }
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
        out.append(
            Delta(
                skill=s.name,
                kind=kind,
                payload=payload,
                anchor=anchor_for(s.body, section, s.version),
                provenance=Provenance("user_instruction"),
                status="active",
                id=f"delta_{digest}",
                created_at=created,
                approved_at=created,
                last_used_at=created + timedelta(hours=rng.randrange(24 * 30)),
                success_count=rng.randint(0, attempts),
                attempt_count=attempts,
                base_root=s.root,
            )
        )
    return out
