"""Decay strength (notebook 14): does an unused lesson ever deactivate on age alone, or only lose rank?

    study = decay.run()            # the rule file's grid (datasets/rules/14_decay.yaml, fixed before the data)
    study.table()                  # one row per candidate rule: safety for rare lessons, precision gain, verdict
    study.cells()                  # one row per (profile, assumption cell, rule): every figure with its interval
    study.finding()                # the verdict against the shipped rule (demote after SHIPPED.decay_idle_days)
    decay.explore(sessions=300, idle_days=30, share_obsolete=0.3)   # the StudyExplorer's what-if (not the verdict)

What is simulated. The shared world trace (`world.build`) gives each user's agents, sessions and the tau lessons
they teach (taught at the first session that needs one). Named, seeded assumptions (each one uniform draw per
(world seed, user, lesson), so the swept values nest): a share of the world's lessons becomes *obsolete* at a
session drawn after it was taught (never needed again); each agent carries *rare* lessons the user relies on and
never gives up, needed in a session of that agent with a small probability; session i is on day i x the profile's
days between sessions. Decay runs at the start of every session (simulated now = that day) and reads last use:
the last session whose need found the lesson in front of the model.

The candidate rules (`DecayRule`): `none` (age only ranks: `budget.value_key`), `demote-N` (the product today,
`evidence.decay`: idle > N days -> retrieval-only, for good: a correction of a retrieval-only lesson is a no-op
repeat in `gates.learn`, and no code path makes it resident again), `restore-N` (as demote, but a correction
makes it resident again), `archive-N` (idle > N -> archived; a correction re-teaches it, assumed approved at
once). A retrieval-only lesson a session needs comes back with the shipped gate's measured chance
(`world.comeback`), one seeded draw per (user, lesson, session) shared by every rule.

`simulate` is the fast form (numpy over every lesson and rule at once); `replay` runs one user's lessons through
the product itself (a temporary `Store`, `gates.learn`, `store.approve`, `evidence.decay` at a simulated now,
`store.touch` for a retrieval) and returns the same state trace; tests hold the two equal.
"""

from __future__ import annotations

import hashlib
import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import evidence, gates
from ..common import FieldError
from ..defaults import SHIPPED
from ..metrics import Interval
from ..resources import dataset_path
from ..skill import load_skill
from ..store import Store
from . import rulefile, world
from .finding import Finding, render
from .rulefile import RuleFile, RuleFileError
from .threshold import lesson_weights

__all__ = [
    "FAMILIES",
    "RULE_NAME",
    "STATES",
    "Counts",
    "DecayRule",
    "DecayStudy",
    "DecayStudyError",
    "Judgement",
    "Timelines",
    "explore",
    "replay",
    "run",
    "simulate",
    "timelines",
]

RULE_NAME = "14_decay"
FAMILIES = ("none", "restore", "demote", "archive")
UNTAUGHT, RESIDENT, RETRIEVAL, ARCHIVED = 0, 1, 2, 3
STATES = ("untaught", "resident", "retrieval-only", "archived")
_START = datetime(2026, 1, 1, tzinfo=timezone.utc)  # day 0 of every simulated user


class DecayStudyError(FieldError):
    """A bad argument to the decay study; `field` names it."""


@dataclass(frozen=True)
class DecayRule:
    """One candidate: `family` (FAMILIES) and its idle bound in days (None for `none`)."""

    family: str
    days: int | None = None

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise DecayStudyError("family", f"{self.family!r}; families are {', '.join(FAMILIES)}")
        if self.family == "none":
            if self.days is not None:
                raise DecayStudyError("days", "the rule 'none' takes no idle bound")
        elif isinstance(self.days, bool) or not isinstance(self.days, int) or self.days < 1:
            raise DecayStudyError("days", f"{self.days!r}; an idle bound is a whole number of days >= 1")

    @property
    def name(self) -> str:
        return self.family if self.family == "none" else f"{self.family}-{self.days}"

    @classmethod
    def parse(cls, spec: Any) -> "DecayRule":
        """From a rule file's `[family, days]` pair."""
        if not isinstance(spec, (list, tuple)) or len(spec) != 2:
            raise DecayStudyError("rules", f"{spec!r}; each rule is [family, days]")
        return cls(spec[0], spec[1])


NONE = DecayRule("none")
# evidence.decay as it ships: rank only (no idle bound), or demote after the shipped idle bound
SHIPPED_RULE = NONE if SHIPPED.decay_idle_days is None else DecayRule("demote", SHIPPED.decay_idle_days)


def _draws(seed: int, user: str, lesson: str, n: int) -> np.ndarray:
    """The lesson's own uniform draws: one stream per (world seed, user, lesson), whatever else is drawn."""
    digest = hashlib.sha256(f"decay/{seed}/{user}/{lesson}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little")).random(n)


@dataclass(frozen=True, eq=False)
class Timelines:
    """Every lesson of every user of a trace (L lessons, S sessions per user)."""

    users: tuple[str, ...]
    user: np.ndarray  # (L,) index into users
    lesson: tuple[str, ...]  # (L,) a tau lesson id, or rare:<agent>:<k>
    agent: tuple[str, ...]  # (L,)
    rare: np.ndarray  # (L,) bool
    on: np.ndarray  # (L, S) bool: the session runs in the lesson's agent
    need: np.ndarray  # (L, S) bool: the session needs the lesson (the first one teaches it)
    obsolete_at: np.ndarray  # (L,) the first session it is no longer needed in (S: never)
    draw: np.ndarray  # (L, S) uniform: a retrieval-only lesson comes back iff draw < comeback

    @property
    def sessions(self) -> int:
        return self.need.shape[1]


def timelines(
    w: world.World,
    *,
    share_obsolete: float,
    rare_per_agent: int,
    rare_need_rate: float,
    frame: pd.DataFrame | None = None,
) -> Timelines:
    """The trace's lessons under the named assumptions (see the module docstring). `frame`: `w.frame()`, when
    the caller already has it."""
    for name, p in (("share_obsolete", share_obsolete), ("rare_need_rate", rare_need_rate)):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise DecayStudyError(name, f"{p!r} is not a probability in [0, 1]")
    if isinstance(rare_per_agent, bool) or not isinstance(rare_per_agent, int) or rare_per_agent < 0:
        raise DecayStudyError("rare_per_agent", f"{rare_per_agent!r}; a count >= 0")
    frame = (w.frame() if frame is None else frame).sort_values(["user", "index"], kind="stable")
    n = int(frame.groupby("user").size().max())
    users = tuple(sorted(frame.user.unique()))
    rows: list[tuple] = []
    for u, (user, g) in enumerate(frame.groupby("user", sort=True)):
        if len(g) != n:
            raise DecayStudyError("world", f"{user} has {len(g)} sessions, others {n}: one length per trace")
        agents = g.agent.to_numpy()
        needs = g.needs.to_numpy()
        for lesson in sorted({x for x in needs if x is not None and x == x}):
            need = needs == lesson
            agent = agents[need.argmax()]
            d = _draws(w.seed, user, lesson, 2 + 2 * n)
            teach = int(need.argmax())
            end = n
            if d[0] < share_obsolete and teach < n - 1:
                end = teach + 1 + int(d[1] * (n - teach - 1))
            need = need & (np.arange(n) < end)
            rows.append((u, lesson, agent, False, agents == agent, need, end, d[2 + n :]))
        for agent in sorted(set(agents)):
            on = agents == agent
            for k in range(rare_per_agent):
                lesson = f"rare:{agent}:{k}"
                d = _draws(w.seed, user, lesson, 2 + 2 * n)
                need = on & (d[2 : 2 + n] < rare_need_rate)
                if need.any():
                    rows.append((u, lesson, agent, True, on, need, n, d[2 + n :]))
    if not rows:
        raise DecayStudyError("world", "no session of the trace needs a lesson: nothing to measure")
    col = list(zip(*rows))
    return Timelines(
        users,
        np.array(col[0]),
        tuple(col[1]),
        tuple(col[2]),
        np.array(col[3], bool),
        np.stack(col[4]),
        np.stack(col[5]),
        np.array(col[6]),
        np.stack(col[7]),
    )


@dataclass(frozen=True, eq=False)
class Counts:
    """`simulate`'s tallies, each (rules, users)."""

    rules: tuple[DecayRule, ...]
    resident: np.ndarray  # lesson-sessions resident in the session's agent (after decay ran)
    needed: np.ndarray  # ... of them still needed (not obsolete)
    rare_needs: np.ndarray  # needs of a rare lesson after it was taught
    rare_hits: np.ndarray  # ... with the lesson in front of the model
    regular_needs: np.ndarray
    regular_hits: np.ndarray
    rare_taught: np.ndarray  # rare lessons taught
    rare_lost: np.ndarray  # ... archived at least once
    states: np.ndarray | None = None  # (rules, L, S) each lesson's state at each session start, after decay


def simulate(
    tl: Timelines, rules: Sequence[DecayRule], *, days_between: float, comeback: float, trace: bool = False
) -> Counts:
    """Run every rule over every lesson, session by session (see the module docstring for the semantics)."""
    if isinstance(days_between, bool) or not isinstance(days_between, (int, float)) or not days_between > 0:
        raise DecayStudyError("days_between", f"{days_between!r}; a positive number of days")
    if isinstance(comeback, bool) or not isinstance(comeback, (int, float)) or not 0 <= comeback <= 1:
        raise DecayStudyError("comeback", f"{comeback!r} is not a probability in [0, 1]")
    rules = tuple(rules)
    if not rules:
        raise DecayStudyError("rules", "at least one rule")
    n_rules, (n_lessons, n) = len(rules), tl.need.shape
    bound = np.array([np.inf if r.days is None else r.days for r in rules])[:, None]
    archive = np.array([r.family == "archive" for r in rules])[:, None]
    restore = np.array([r.family == "restore" for r in rules])[:, None]
    state = np.full((n_rules, n_lessons), UNTAUGHT, np.int8)
    last = np.zeros((n_rules, n_lessons))
    lost = np.zeros((n_rules, n_lessons), bool)
    tally = {k: np.zeros((n_rules, n_lessons)) for k in ("resident", "needed", "needs", "hits")}
    states = np.zeros((n_rules, n_lessons, n), np.int8) if trace else None
    for t in range(n):
        day = t * days_between
        idle = (state == RESIDENT) & (day - last > bound)  # evidence.decay_plan: now - last use > idle
        state[idle & archive] = ARCHIVED
        state[idle & ~archive] = RETRIEVAL
        lost |= idle & archive
        if trace:
            states[:, :, t] = state
        res = (state == RESIDENT) & tl.on[:, t]
        tally["resident"] += res
        tally["needed"] += res & (t < tl.obsolete_at)
        need = tl.need[:, t]
        teach = need & (state == UNTAUGHT)
        counted = need & (state != UNTAUGHT)
        hit = counted & ((state == RESIDENT) | ((state == RETRIEVAL) & (tl.draw[:, t] < comeback)))
        tally["needs"] += counted
        tally["hits"] += hit
        back = (counted & ~hit) & ((state == ARCHIVED) | ((state == RETRIEVAL) & restore))  # re-taught
        state[teach | back] = RESIDENT
        last[teach | back | hit] = day
    users = len(tl.users)

    def per_user(values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        out = np.zeros((n_rules, users))
        v = values if mask is None else values * mask
        np.add.at(out.T, tl.user, v.T)
        return out

    rare = tl.rare.astype(float)
    taught = (tl.need.any(axis=1) & tl.rare).astype(float)
    return Counts(
        rules,
        per_user(tally["resident"]),
        per_user(tally["needed"]),
        per_user(tally["needs"], rare),
        per_user(tally["hits"], rare),
        per_user(tally["needs"], 1 - rare),
        per_user(tally["hits"], 1 - rare),
        per_user(np.broadcast_to(taught, (n_rules, n_lessons))),
        per_user(lost.astype(float), rare),
        states,
    )


# --------------------------------------------------------------------------------------- the product path


def replay(
    tl: Timelines,
    user: int,
    rules: Sequence[DecayRule],
    *,
    days_between: float,
    comeback: float,
    skill_path: str | Path | None = None,
    section: str = "classifying",
) -> np.ndarray:
    """The same state trace as `simulate(..., trace=True).states[:, lessons of user]`, from the product: per rule a
    temporary `Store`; a lesson is taught with `gates.learn` (trusted, staged) and `store.approve`; at each
    session start `evidence.decay(store, now=day, idle=N days)` (archive-N archives its demote list); a resident
    need or a retrieval that came back `store.touch`es the lesson; a missed need re-teaches it with `gates.learn`
    (a no-op for a retrieval-only lesson: restore-N then calls `store.set_resident`; an archived one is written
    anew and approved)."""
    skill = load_skill(skill_path or dataset_path("skills", "triage-inbox"))
    mine = np.flatnonzero(tl.user == user)
    out = np.zeros((len(rules), len(mine), tl.sessions), np.int8)
    for r, rule in enumerate(rules):
        with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "decay.db") as store:
            ids: dict[int, str] = {}

            def teach(k: int, when: datetime) -> None:
                res = gates.learn(
                    store,
                    skill,
                    "preference",
                    {"body": f"Lesson {tl.lesson[mine[k]]}: follow it."},
                    section=section,
                    provenance="user_instruction",
                )
                if not res.persisted and res.outcome != "noop":
                    raise DecayStudyError("skill_path", f"the gates refused the lesson: {res.message}")
                if res.outcome == "noop":
                    return
                store.approve(res.delta.id)
                store.touch([res.delta.id], when)
                ids[k] = res.delta.id

            def state(k: int) -> int:
                if k not in ids:
                    return UNTAUGHT
                d = store.get(ids[k])
                if d.status == "archived":
                    return ARCHIVED
                return RETRIEVAL if d.id in store.retrieval_only() else RESIDENT

            for t in range(tl.sessions):
                now = _START + timedelta(days=t * days_between)
                if rule.family != "none":
                    plan = evidence.decay(
                        store, now=now, idle=timedelta(days=rule.days), apply=rule.family != "archive"
                    )
                    for did in plan.demote if rule.family == "archive" else ():
                        store.set_status(did, "archived", who="decay", reason="archive on age (study)")
                for k in range(len(mine)):
                    out[r, k, t] = state(k)
                for k, lesson in enumerate(mine):
                    if not tl.need[lesson, t]:
                        continue
                    s = state(k)
                    if s == UNTAUGHT or s == ARCHIVED:
                        teach(k, now)
                    elif s == RESIDENT or tl.draw[lesson, t] < comeback:
                        store.touch([ids[k]], now)
                    else:
                        teach(k, now)  # the user corrects it again: a no-op repeat of a retrieval-only lesson
                        if rule.family == "restore":
                            store.set_resident([ids[k]], True, who="user", reason="corrected again (study)")
                            store.touch([ids[k]], now)
    return out


# ---------------------------------------------------------------------------------------------- the study


@dataclass(frozen=True)
class Judgement:
    """The rule's tests for one candidate over every cell."""

    rule: DecayRule
    safety: str  # safe | harmful | undecided
    pays: str  # pays | does not pay | undecided
    worst_harm: Interval  # harmful: the harmful cell with the most rare needs; else the highest upper end
    least_gain: Interval  # among the judged cells, the one with the lowest lower end of gain
    users_needed: int | None  # users per profile an undecided test would need (None: decided)
    harm_cell: str = ""  # where worst_harm was measured, and on how many rare needs


@dataclass(frozen=True, eq=False)
class DecayStudy:
    """What `run` measured. `rows`: one per (profile, cell, rule), numeric, with intervals."""

    rule: RuleFile
    rules: tuple[DecayRule, ...]
    rows: pd.DataFrame
    comeback: world.Comeback
    users: Mapping[str, int]  # users per profile
    judge_share: float | None  # the share_obsolete at which gain is judged (None: every cell)
    what_if: str | None = None  # set by `explore`: the assumptions moved off the rule (not the verdict)

    def cells(self) -> pd.DataFrame:
        """Every cell and rule with its figures as `estimate [low, high]` text."""
        r = self.rows
        out = r[["profile", "days_between", "share_obsolete", "rare_need_rate", "comeback", "rule"]].copy()
        for m in ("precision", "gain", "rare_available", "harm", "regular_available", "rare_lost"):
            out[m] = [Interval(e, lo, hi).fmt(".3f") for e, lo, hi in zip(r[m], r[f"{m}_low"], r[f"{m}_high"])]
        return out

    def judgements(self) -> list[Judgement]:
        margin, gain_bar = float(self.rule.param("harm_margin")), float(self.rule.param("min_gain"))
        judged = (
            self.rows if self.judge_share is None else self.rows[np.isclose(self.rows.share_obsolete, self.judge_share)]
        )
        n = max(self.users.values())
        out = []
        for rule in self.rules[1:]:
            mine, gains = self.rows[self.rows.rule == rule.name], judged[judged.rule == rule.name]
            harmful = (mine.harm_low > margin).any()
            safe = (mine.harm_high <= margin).all()
            no_pay = (gains.gain_high < gain_bar).any()
            pays = (gains.gain_low >= gain_bar).all()
            # the deciding cell: of the harmful cells the one with the most rare needs, else the highest upper end
            w = (
                mine[mine.harm_low > margin].sort_values("rare_needs", kind="stable").iloc[-1]
                if harmful
                else mine.loc[mine.harm_high.idxmax()]
            )
            g = gains.loc[gains.gain_low.idxmin()]
            need = None
            if not (harmful or safe):
                need = _users_needed(n, w.harm_high - w.harm_low, margin)
            if not (no_pay or pays):
                need = max(need or 0, _users_needed(n, g.gain_high - g.gain_low, gain_bar))
            out.append(
                Judgement(
                    rule,
                    "harmful" if harmful else "safe" if safe else "undecided",
                    "does not pay" if no_pay else "pays" if pays else "undecided",
                    Interval(w.harm, w.harm_low, w.harm_high),
                    Interval(g.gain, g.gain_low, g.gain_high),
                    need,
                    _cell(w),
                )
            )
        return out

    def answer(self) -> DecayRule | str:
        """The rule's answer: a DecayRule, or "undecided"."""
        js = self.judgements()
        winners = [j for j in js if j.safety == "safe" and j.pays == "pays"]
        if winners:
            best = max(j.least_gain.estimate for j in winners)
            tie = float(self.rule.param("tie_margin"))
            return next(j.rule for j in winners if j.least_gain.estimate >= best - tie)  # earliest = weakest
        open_ = [
            j for j in js if "undecided" in (j.safety, j.pays) and j.safety != "harmful" and j.pays != "does not pay"
        ]
        return "undecided" if open_ else NONE

    def verdict(self) -> str:
        a = self.answer()
        return "undecided" if a == "undecided" else "right" if a == SHIPPED_RULE else "change"

    def table(self) -> pd.DataFrame:
        """One row per candidate: its two tests, the harm to rare lessons in the deciding cell (harmful: the harmful
        cell with the most rare needs; else the highest upper end), the least precision gain, and
        beside them each profile's figures at the judged middle cell."""
        js = {j.rule.name: j for j in self.judgements()}
        mid = self._middle()
        rows = []
        for rule in self.rules:
            j = js.get(rule.name)
            row = {
                "rule": rule.name,
                "safe for rare lessons": "baseline" if j is None else j.safety,
                "pays (precision)": "baseline" if j is None else j.pays,
                "deciding harm": "" if j is None else j.worst_harm.fmt(".3f"),
                "least gain": "" if j is None else j.least_gain.fmt(".3f"),
                "harm measured in": "" if j is None else j.harm_cell,
            }
            for p in self.users:
                m = mid[(mid.profile == p) & (mid.rule == rule.name)].iloc[0]
                row[f"{p}: precision"] = Interval(m.precision, m.precision_low, m.precision_high).fmt(".3f")
                row[f"{p}: rare available"] = Interval(
                    m.rare_available, m.rare_available_low, m.rare_available_high
                ).fmt(".3f")
            rows.append(row)
        return pd.DataFrame(rows)

    def _middle(self) -> pd.DataFrame:
        """Each profile's illustrative cell: the judged share (else the middle one), the middle rare rate, the
        profile's shortest spacing and the first comeback value (the tests use every cell)."""
        r = self.rows
        mid = lambda col: sorted(r[col].unique())[len(r[col].unique()) // 2]  # noqa: E731
        share = self.judge_share if self.judge_share is not None else mid("share_obsolete")
        keep = (
            np.isclose(r.share_obsolete, share)
            & np.isclose(r.rare_need_rate, mid("rare_need_rate"))
            & (r.comeback == r.comeback.iloc[0])
            & r.days_between.eq(r.groupby("profile").days_between.transform("min"))
        )
        return r[keep]

    def finding(self) -> str:
        js, answer, verdict = self.judgements(), self.answer(), self.verdict()
        cb = self.comeback.recall
        intro = (
            [f"**What-if, not the verdict** ({self.what_if}); the rule's tests applied to these cells only."]
            if self.what_if
            else []
        )
        count = {s: [j.rule.name for j in js if j.safety == s] for s in ("safe", "harmful", "undecided")}
        pays = [j.rule.name for j in js if j.pays == "pays"]
        ship = next((j for j in js if j.rule == SHIPPED_RULE), None)
        users = ", ".join(f"{p}: {n} users" for p, n in self.users.items())
        intro.append(
            f"Over {len(self.rows) // len(self.rules)} cells ({users}); "
            f"a retrieval-only lesson comes back in {cb.fmt('.3f')} of the needs (`world.comeback`, "
            f"{self.comeback.gate}). Safe for rare lessons (harm upper end <= "
            f"{float(self.rule.param('harm_margin')):.2f} in every cell): "
            f"{', '.join(count['safe']) or 'none'}; harmful: {', '.join(count['harmful']) or 'none'}; "
            f"undecided: "
            f"{', '.join(count['undecided']) or 'none'}. Paying (precision gain lower end >= "
            f"{float(self.rule.param('min_gain')):.2f} at the judged share): {', '.join(pays) or 'none'}."
        )
        findings, parts = [], []
        if ship is not None:
            findings = [
                Finding.of(
                    f"The shipped rule {SHIPPED_RULE.name}, harm in its best-measured deciding cell ({ship.harm_cell})",
                    ship.worst_harm,
                    bound=float(self.rule.param("harm_margin")),
                    verdict=ship.safety,
                ),
                Finding.of(
                    f"The shipped rule {SHIPPED_RULE.name}, least gain",
                    ship.least_gain,
                    bound=float(self.rule.param("min_gain")),
                    side="≥",
                    verdict=ship.pays,
                ),
            ]
        for profile in self.users:
            mine = self.rows[(self.rows.profile == profile) & (self.rows.rule == SHIPPED_RULE.name)]
            if mine.empty:
                continue
            lo_rare, lo_reg = mine.loc[mine.rare_available.idxmin()], mine.loc[mine.regular_available.idxmin()]
            hi_gain = mine.loc[mine.gain.idxmax()]
            parts.append(
                f"{profile}, under {SHIPPED_RULE.name} across its cells: rare lessons available in as few as "
                f"{lo_rare.rare_available:.3f} [{lo_rare.rare_available_low:.3f}, "
                f"{lo_rare.rare_available_high:.3f}] of their needs (none: 1.000), frequently needed lessons "
                f"in as few as {lo_reg.regular_available:.3f} [{lo_reg.regular_available_low:.3f}, "
                f"{lo_reg.regular_available_high:.3f}], for a precision gain of at most {hi_gain.gain:.3f} "
                f"[{hi_gain.gain_low:.3f}, {hi_gain.gain_high:.3f}]."
            )
        judged = (
            self.rows if self.judge_share is None else self.rows[np.isclose(self.rows.share_obsolete, self.judge_share)]
        )
        top = judged.loc[judged.gain.idxmax()]
        parts.append(
            f"The most precision any candidate buys in a judged cell is {top.gain:.3f} [{top.gain_low:.3f}, "
            f"{top.gain_high:.3f}] ({top.rule}; {_cell(top).split(':')[0]}); a rule whose idle bound "
            f'exceeds a profile\'s span changes nothing there, so "pays in every judged cell" also asks '
            f"it to act for the light user."
        )
        if self.what_if:
            name = answer if isinstance(answer, str) else answer.name
            parts.append(
                f"In these cells alone the rule's tests would answer **{name}** (the verdict is the rule's "
                f"whole grid, `run()`)."
            )
        elif answer == "undecided":
            open_ = [j for j in js if j.users_needed]
            need = max((j.users_needed for j in open_), default=0)
            parts.append(
                f"**Undecided**: {', '.join(j.rule.name for j in open_)} cannot be decided with these "
                f"users; about {need} users per profile would decide it. What ships stays as it is until "
                f"then: {SHIPPED_RULE.name}."
            )
        elif verdict == "right":
            parts.append(
                f"**The rule's answer is the shipped rule, {answer.name}**: it stays "
                f"(`SHIPPED.decay_idle_days` = {SHIPPED.decay_idle_days})."
            )
        elif answer == NONE:
            parts.append(
                f"**The rule's answer: `none` — age alone never deactivates nor demotes a lesson; last use "
                f"only ranks** (the budget's order when the ceiling binds). No decay rule is both safe for "
                f"the lessons a user rarely triggers and worth its precision. The shipped rule "
                f"({SHIPPED_RULE.name}) should change: `evidence.decay` should only rank/surface idle "
                f"lessons, not demote them."
            )
        else:
            parts.append(
                f"**The rule's answer: {answer.name}**, not the shipped {SHIPPED_RULE.name}: decay should change to it."
            )
        return render(findings, stamp=self.rule.stamp(), intro=intro, outro=" ".join(parts))


def _cell(row: pd.Series) -> str:
    return (
        f"{row.profile}, a session every {row.days_between:g} d, obsolete {row.share_obsolete:g}, rare need "
        f"rate {row.rare_need_rate:g}, comeback {row.comeback}: {int(row.rare_needs)} rare needs"
    )


def _users_needed(n: int, width: float, margin: float) -> int:
    return int(math.ceil(n * ((width / 2) / margin) ** 2)) if margin > 0 else n


def _summaries(counts: Counts, weights: np.ndarray, confidence: float) -> list[dict]:
    """Per rule: each metric's estimate (weights' row 0) and percentile interval (the other rows)."""

    def ratio(num, den):
        with np.errstate(invalid="ignore", divide="ignore"):
            # einsum, not BLAS: a threaded matmul of these small shapes stalls on a busy machine
            return np.einsum("ru,bu->rb", num, weights) / np.einsum("ru,bu->rb", den, weights)  # (rules, draws)

    m = {
        "precision": ratio(counts.needed, counts.resident),
        "rare_available": ratio(counts.rare_hits, counts.rare_needs),
        "regular_available": ratio(counts.regular_hits, counts.regular_needs),
        "rare_lost": ratio(counts.rare_lost, counts.rare_taught),
    }
    base = [i for i, r in enumerate(counts.rules) if r == NONE][0]
    m["gain"] = m["precision"] - m["precision"][base]
    m["harm"] = m["rare_available"][base] - m["rare_available"]
    out = []
    for i, rule in enumerate(counts.rules):
        row = {"rule": rule.name, "rare_needs": counts.rare_needs[i].sum()}
        for k, v in m.items():
            iv = Interval.percentile(v[i, 0], v[i, 1:], confidence)
            if np.isfinite(iv.estimate) and not np.isfinite(iv.low):
                iv = Interval(iv.estimate, iv.estimate, iv.estimate, confidence)
            row |= {k: iv.estimate, f"{k}_low": iv.low, f"{k}_high": iv.high}
        out.append(row)
    return out


@lru_cache(maxsize=4)
def _comeback(world_seed: int, split: str, seed: int) -> world.Comeback:
    return world.comeback(world.build(world_seed), split=split, seed=seed)


def _float_list(rule: RuleFile, name: str) -> list[float]:
    v = rule.param(name)
    if not isinstance(v, list) or not v or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise RuleFileError(rule.path, f"params.{name}", "must be a non-empty list of numbers")
    return [float(x) for x in v]


def _study(
    rule: RuleFile,
    profiles: Mapping[str, Mapping],
    rules: Sequence[DecayRule],
    shares: Sequence[float],
    rates: Sequence[float],
    judge_share: float | None,
    what_if: str | None = None,
) -> DecayStudy:
    if NONE not in rules:
        raise RuleFileError(rule.path, "params.rules", "must hold [none, null]: every rule is compared with it")
    rules = (NONE, *[r for r in rules if r != NONE])
    seed, conf = int(rule.param("seed")), float(rule.param("confidence"))
    cb = _comeback(int(rule.param("world_seed")), str(rule.param("comeback_split")), seed)
    values = rule.param("comeback_values")
    if not isinstance(values, list) or not values or any(v not in ("estimate", "low", "high") for v in values):
        raise RuleFileError(rule.path, "params.comeback_values", "a list of estimate, low, high")
    comebacks = {v: getattr(cb.recall, v) for v in values}
    rows, users = [], {}
    for name, p in profiles.items():
        try:
            w = world.build(int(rule.param("world_seed")), users=int(p["users"]), sessions=int(p["sessions"]))
            spacing = [float(x) for x in p["days_between_sessions"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise RuleFileError(
                rule.path, f"params.profiles.{name}", f"needs sessions, users and days_between_sessions: {exc}"
            ) from exc
        users[name] = int(p["users"])
        frame = w.frame()
        weights = lesson_weights(int(p["users"]), int(rule.param("n_boot")), np.random.default_rng(seed))
        for share in shares:
            for rate in rates:
                tl = timelines(
                    w,
                    share_obsolete=share,
                    rare_per_agent=int(rule.param("rare_per_agent")),
                    rare_need_rate=rate,
                    frame=frame,
                )
                for days in spacing:
                    for label, r in comebacks.items():
                        counts = simulate(tl, rules, days_between=days, comeback=r)
                        for row in _summaries(counts, weights, conf):
                            rows.append(
                                {
                                    "profile": name,
                                    "sessions": int(p["sessions"]),
                                    "days_between": days,
                                    "share_obsolete": share,
                                    "rare_need_rate": rate,
                                    "comeback": label,
                                    "comeback_value": r,
                                    **row,
                                }
                            )
    return DecayStudy(rule, tuple(rules), pd.DataFrame(rows), cb, users, judge_share, what_if)


def run(rule: RuleFile | None = None) -> DecayStudy:
    """Notebook 14: every cell of the rule's grid, every candidate rule."""
    rule = rule or rulefile.load(RULE_NAME)
    profiles = rule.param("profiles")
    if not isinstance(profiles, dict) or not profiles:
        raise RuleFileError(rule.path, "params.profiles", "must map profile names to their settings")
    try:
        rules = [DecayRule.parse(x) for x in rule.param("rules")]
    except DecayStudyError as exc:
        raise RuleFileError(rule.path, "params.rules", str(exc)) from exc
    return _study(
        rule,
        profiles,
        rules,
        _float_list(rule, "share_obsolete"),
        _float_list(rule, "rare_need_rate"),
        float(rule.param("judge_share")),
    )


def explore(
    sessions: int = 300,
    idle_days: int = 30,
    share_obsolete: float = 0.3,
    days_between: float = 1.0,
    users: int = 30,
    rule: RuleFile | None = None,
) -> DecayStudy:
    """A designer's what-if (the StudyExplorer): one mailbox length, one idle bound for every family, one
    obsolete share, one spacing; the rule's rare rates, comeback values and tests. Not the verdict."""
    rule = rule or rulefile.load(RULE_NAME)
    for name, v in (("sessions", sessions), ("idle_days", idle_days), ("users", users)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise DecayStudyError(name, f"{v!r}; a whole number >= 1")
    profile = {
        f"{sessions}-session user": {"sessions": sessions, "users": users, "days_between_sessions": [days_between]}
    }
    rules = [NONE] + [DecayRule(f, idle_days) for f in FAMILIES[1:]]
    what_if = (
        f"{sessions} sessions, {users} users, a session every {days_between:g} days, idle bound "
        f"{idle_days} days, share obsolete {share_obsolete:g}"
    )
    return _study(rule, profile, rules, [share_obsolete], _float_list(rule, "rare_need_rate"), None, what_if)
