"""Study 11: the scope a lesson gets when it is written without one — shared by every agent of its user (what
ships, `SHIPPED.scope` "user") or kept by the agent that learned it (datasets/rules/11_scope_default.yaml).

    study = scope.run()                                  # the rule's grid over the shared world
    study.table(); study.points(); study.verdict(); study.finding()
    scope.run(transfer_share=0.4, split_share=0.1, co_load=0.5, agents=2)   # one point (the explorer)

In the product a lesson is a delta on one skill with one scope; `resolve` applies it to a session only when its
scope is one of the reader's scopes and its skill is the one resolved. So scope matters where two agents of one
user load the same skill (every agent of a user discovers the same user-root skills). The shared world
(`world.build`) gives users with one to three agents (a domain each), their sessions, and the lessons they
teach; what it does not hold is derived here from seeded, stated assumptions (`ASSUMPTIONS`), each swept across
its range by the rule:

* `split_share`: the share of a user's agent pairs that cross work/personal (each agent is personal with
  probability q, q(1 − q)·2 = split_share); a lesson crossing that line is never wanted (leakage when shown);
* `transfer_share`: the share of taught lessons that are user-wide preferences (they help the same user in their
  other agents of the same context), the rest agent-specific procedures;
* `co_load`: the share of an agent's sessions that load another agent's skill (its own skill always loads).

A transferable lesson is needed in a session of another same-context agent B that loads its skill with
probability p_need / (k_B + 1) (k_B: the lessons the world has the user need in B). A need whose lesson is not
in B's scopes is a repeat correction: the user teaches it again in B. Uniform draws are fixed per user and
compared to each assumption, so every grid point sees the same random numbers.

Arms: the scope a lesson is written with — "user", "agent" (`agent:<writer>`) and, descriptive only, "context"
(`user:<work|personal>`, which needs the host to label each agent's context). Every agent reads `reader_scopes`.
`product_check` writes a few users' lessons through `gates.learn` + `Store.approve` and resolves every (agent,
skill) with `resolve.resolve(scope=...)`: the applied lessons must equal the model's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import product
from typing import Any

import numpy as np
import pandas as pd

from .. import gates
from .. import resolve as resolve_mod
from ..common import FieldError
from ..defaults import SHIPPED
from ..metrics import Interval, ratio_ci
from ..skill import parse_skill
from ..store import Store
from . import rulefile, world
from .finding import Finding, render
from .rulefile import RuleFile

__all__ = [
    "ARMS",
    "ASSUMPTIONS",
    "RULE_NAME",
    "Point",
    "ScopeError",
    "ScopeStudy",
    "Tally",
    "UserTrace",
    "product_check",
    "reader_scopes",
    "run",
    "simulate",
    "traces",
    "written_scope",
]

RULE_NAME = "11_scope_default"
ARMS = ("user", "agent", "context")  # the scope a lesson is written with when none is given
# name: (low, high, what it is) — the stated range each assumption is swept across
ASSUMPTIONS: Mapping[str, tuple[float, float, str]] = {
    "transfer_share": (
        0.1,
        0.7,
        "share of taught lessons that are user-wide preferences (help the user's other "
        "agents of the same context); the rest are agent-specific procedures",
    ),
    "split_share": (0.1, 0.5, "share of a user's agent pairs that cross work/personal"),
    "co_load": (0.1, 1.0, "share of an agent's sessions that load another agent's skill"),
}
_SALT = 11  # this study's stream of per-user draws


class ScopeError(FieldError):
    """Bad input to the scope study: names the field."""


@dataclass(frozen=True)
class Point:
    """One combination of the assumptions."""

    transfer_share: float
    split_share: float
    co_load: float

    def __post_init__(self):
        for name, (low, high, _what) in ASSUMPTIONS.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise ScopeError(name, f"{v!r} is not a share in [0, 1]")
        if self.split_share > 0.5:
            raise ScopeError(
                "split_share", f"{self.split_share!r}: independent contexts split at most half the pairs (0.5)"
            )

    @property
    def personal(self) -> float:
        """q: the probability an agent is personal, so that 2q(1 − q) = split_share."""
        return (1 - math.sqrt(1 - 2 * self.split_share)) / 2


def written_scope(arm: str, agent: str, context: str) -> str:
    """The scope a lesson written by `agent` (in `context`) gets under `arm`."""
    if arm == "user":
        return "user"
    if arm == "agent":
        return agent_scope(agent)
    if arm == "context":
        return f"user:{context}"
    raise ScopeError("arm", f"{arm!r}; arms are {', '.join(ARMS)}")


def reader_scopes(agent: str, context: str) -> frozenset[str]:
    """The scopes an agent resolves with, whatever the write default: the user's, its own, its context's."""
    return frozenset({"user", agent_scope(agent), f"user:{context}"})


def agent_scope(agent: str) -> str:
    """The product's scope for a world agent (a domain such as "code review"): `agent:NAME` with NAME an agent
    name as `Store.open(agent=)` takes it ("agent:code-review"); the gates refuse any other spelling."""
    return "agent:" + "-".join(agent.lower().split())


@dataclass(frozen=True)
class UserTrace:
    """One world user's sessions and the draws the derived ground truth is read from."""

    user: str
    agents: tuple[str, ...]  # domains, in first-session order
    sessions: tuple[tuple[str, str | None, bool], ...]  # (agent, needs, taught) in order
    rate: Mapping[str, float]  # agent → a transferable lesson's need rate in a session that loads its skill
    u_context: np.ndarray  # per agent
    u_transfer: Mapping[str, float]  # per taught lesson
    u_load: np.ndarray  # [session, agent]
    u_need: np.ndarray  # [session, lesson index in `lessons`]
    lessons: tuple[str, ...]  # the lessons the user teaches, in teaching order (the columns of `u_need`)

    @property
    def kind(self) -> str:
        return "shared" if len(self.agents) > 1 else "alone"


def traces(w: world.World) -> tuple[UserTrace, ...]:
    """Every user of `w` with their seeded draws (from the world's seed and the user, not the assumptions)."""
    p_need = dict(w.params)["p_need"]
    by_user: dict[str, list[world.WorldSession]] = {}
    for s in w.sessions:
        by_user.setdefault(s.user, []).append(s)
    out = []
    for k, (user, ss) in enumerate(sorted(by_user.items())):
        agents = tuple(dict.fromkeys(s.agent for s in ss))
        taught = tuple(s.needs for s in ss if s.taught)
        needed = {a: {s.needs for s in ss if s.agent == a and s.needs} for a in agents}
        rng = np.random.default_rng([w.seed, k, _SALT])
        out.append(
            UserTrace(
                user,
                agents,
                tuple((s.agent, s.needs, s.taught) for s in ss),
                {a: p_need / (len(needed[a]) + 1) for a in agents},
                rng.random(len(agents)),
                dict(zip(taught, rng.random(len(taught)))),
                rng.random((len(ss), len(agents))),
                rng.random((len(ss), max(1, len(taught)))),
                taught,
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Tally:
    """One user under one arm at one point."""

    sessions: int
    leaky: int  # sessions with a lesson of the other context in front of the model
    misfit: int  # sessions with an agent-specific lesson of another same-context agent in front of the model
    needs: int  # cross needs (a transferable lesson of another same-context agent, needed in a session)
    met: int  # of them, in scope already (no repeat correction)
    written: tuple[tuple[str, str, str], ...]  # (lesson, writer agent, scope) at the end, in writing order


def simulate(t: UserTrace, point: Point, arm: str) -> Tally:
    """Walk one user's sessions under `arm` (see the module docstring)."""
    domain = {x.id: x.domain for x in world.lessons()}
    ctx = {a: "personal" if u < point.personal else "work" for a, u in zip(t.agents, t.u_context)}
    col = {a: i for i, a in enumerate(t.agents)}
    transferable = {lid: u < point.transfer_share for lid, u in t.u_transfer.items()}
    written: list[tuple[str, str, str]] = []
    taught: list[tuple[int, str]] = []  # (column of u_need, lesson) taught in their home agent so far
    leaky = misfit = needs = met = 0
    for i, (b, need, teach) in enumerate(t.sessions):
        readers = reader_scopes(b, ctx[b])
        loaded = {a for a in t.agents if a == b or t.u_load[i, col[a]] < point.co_load}
        front = [(lid, w) for lid, w, sc in written if sc in readers and domain[lid] in loaded]
        leaky += any(ctx[w] != ctx[b] for _lid, w in front)
        misfit += any(w != b and ctx[w] == ctx[b] and not transferable[lid] for lid, w in front)
        for k, lid in taught:
            home = domain[lid]
            if (
                home == b
                or not transferable[lid]
                or ctx[home] != ctx[b]
                or home not in loaded
                or t.u_need[i, k] >= t.rate[b]
            ):
                continue
            needs += 1
            if any(x == lid and sc in readers for x, _w, sc in written):
                met += 1
            else:  # the user corrects B again: B learns it, with the arm's scope
                written.append((lid, b, written_scope(arm, b, ctx[b])))
        if teach:
            taught.append((len(taught), need))
            written.append((need, b, written_scope(arm, b, ctx[b])))
    return Tally(len(t.sessions), leaky, misfit, needs, met, tuple(written))


def _skill_text(name: str, sections: Sequence[str]) -> str:
    body = "".join(f"## {s}\n\nAuthored text of {s}.\n\n" for s in sections)
    return f"---\nname: {name}\ndescription: A stand-in for {name} in the scope study.\n---\n# {name}\n\n{body}"


def product_check(users: Sequence[UserTrace], point: Point, arms: Sequence[str] = ARMS) -> tuple[int, int]:
    """(agreeing, total) (user, arm, agent, skill) resolutions: each user's lessons at the end of the trace,
    written through `gates.learn` (a `user_instruction` preference) and `Store.approve` into a fresh store per
    arm, resolved with `resolve.resolve(scope=reader_scopes(...))`: do the applied lessons equal the model's?"""
    by_id = {x.id: x for x in world.lessons()}
    skills = {}
    for x in world.lessons():
        skills.setdefault(x.skill, []).append(x.section)
    agree = total = 0
    for t in users:
        for arm in arms:
            tally = simulate(t, point, arm)
            ctx = {a: "personal" if u < point.personal else "work" for a, u in zip(t.agents, t.u_context)}
            store = Store.open(":memory:")
            try:
                parsed = {}
                for name in {by_id[lid].skill for lid, _w, _sc in tally.written} | {
                    by_id[lid].skill for lid in t.lessons
                }:
                    parsed[name] = parse_skill(
                        _skill_text(name, list(dict.fromkeys(skills[name]))), check_directory=False
                    )[0]
                for lid, _w, sc in tally.written:
                    x = by_id[lid]
                    r = gates.learn(
                        store,
                        parsed[x.skill],
                        "preference",
                        {"body": x.body},
                        section=x.section,
                        provenance="user_instruction",
                        scope=sc,
                    )
                    store.approve(r.delta.id)
                body_of = {by_id[lid].body: lid for lid in by_id}
                for b in t.agents:
                    readers = reader_scopes(b, ctx[b])
                    for name, skill in sorted(parsed.items()):
                        eff = resolve_mod.resolve(skill, store, scope=readers)
                        got = {body_of[d.payload["body"]] for d in eff.applied}
                        want = {lid for lid, _w, sc in tally.written if sc in readers and by_id[lid].skill == name}
                        agree += got == want
                        total += 1
            finally:
                store.close()
    return agree, total


# ---------------------------------------------------------------------------------------------- the study


def _grid(rule: RuleFile, overrides: Mapping[str, Any]) -> list[Point]:
    axes = dict(rule.param("assumptions"))
    for name, value in overrides.items():
        if value is not None:
            axes[name] = [round(float(value), 6)]  # a slider's 0.30000000000000004 is 0.3
    return [Point(**dict(zip(ASSUMPTIONS, combo))) for combo in product(*(axes[n] for n in ASSUMPTIONS))]


def _ci(num, den, rule: RuleFile) -> Interval:
    return ratio_ci(
        num,
        den,
        n_resamples=int(rule.param("resamples")),
        seed=int(rule.param("bootstrap_seed")),
        confidence=float(rule.param("confidence")),
    )


@dataclass(frozen=True)
class ScopeStudy:
    rule: RuleFile
    world_digest: str
    agents: str
    users: int  # world users
    rows: pd.DataFrame  # one row per (point, user, arm): the tallies
    check: tuple[int, int]  # product_check (agreeing, total)

    @cached_property
    def _table(self) -> pd.DataFrame:
        out = []
        keys = ["transfer_share", "split_share", "co_load", "trace", "scope"]
        for key, g in self.rows.groupby(keys, sort=False):
            row = dict(zip(keys, key))
            use, leak = _ci(g.met, g.needs, self.rule), _ci(g.leaky, g.sessions, self.rule)
            row |= {
                "varied": str(SHIPPED.varied({"scope": key[-1]})) if key[-1] != SHIPPED.scope else "shipped",
                "users": len(g),
                "sessions": int(g.sessions.sum()),
                "cross_needs": int(g.needs.sum()),
                "usefulness": use.estimate,
                "usefulness_low": use.low,
                "usefulness_high": use.high,
                "leakage": leak.estimate,
                "leakage_low": leak.low,
                "leakage_high": leak.high,
                "misfit": g.misfit.sum() / g.sessions.sum(),
                "repeats_per_user": (g.needs - g.met).sum() / len(g),
            }
            out.append(row)
        return pd.DataFrame(out)

    def table(self) -> pd.DataFrame:
        """One row per (point, trace, scope): usefulness and leakage with intervals over users."""
        return self._table

    @cached_property
    def _points(self) -> pd.DataFrame:
        leak_max, min_gain = float(self.rule.param("leak_max")), float(self.rule.param("min_gain"))
        shared = self.rows[self.rows.trace == "shared"]
        out = []
        for key, g in shared.groupby(list(ASSUMPTIONS), sort=False):
            u = g[g.scope == "user"].set_index("user")
            a = g[g.scope == "agent"].set_index("user").loc[u.index]
            leak = _ci(u.leaky, u.sessions, self.rule)
            gain = _ci(u.met - a.met, u.needs, self.rule)
            meets = "breaks" if leak.low > leak_max else "meets" if leak.high <= leak_max else "undecided"
            if meets == "meets":
                pick = "user" if gain.low >= min_gain else "agent" if gain.high < min_gain else "undecided"
            else:
                pick = "agent" if meets == "breaks" else "undecided"
            per_user = (u.met - a.met) / u.needs.where(u.needs > 0)
            n = len(u)
            half = (leak.high - leak.low) / 2
            gap = abs(leak.estimate - leak_max)
            out.append(
                dict(zip(ASSUMPTIONS, key))
                | {
                    "users": n,
                    "leak_user": leak.estimate,
                    "leak_user_low": leak.low,
                    "leak_user_high": leak.high,
                    "leak_halfwidth": half,
                    "bound": meets,
                    "gain": gain.estimate,
                    "gain_low": gain.low,
                    "gain_high": gain.high,
                    "mde_gain": 2.8 * float(per_user.std(ddof=1)) / math.sqrt(per_user.count())
                    if per_user.count() > 1
                    else float("nan"),
                    "users_to_decide": math.ceil(n * (half / gap) ** 2)
                    if meets == "undecided" and gap > 0
                    else float("nan"),
                    "pick": pick,
                }
            )
        return pd.DataFrame(out)

    def points(self) -> pd.DataFrame:
        """One row per grid point (trace "shared"): L(user) against leak_max, the gain, the point's pick."""
        return self._points

    def verdict(self) -> tuple[str, str]:
        """(default, why) by the rule's across-the-ranges decision: "user", "agent" or "undecided"."""
        p = self._points
        if p.empty:
            return "undecided", "no user with two or more agents: nothing to decide from"
        if (p.bound == "breaks").any():
            return "agent", (
                f'"user" breaks the leakage bound at {int((p.bound == "breaks").sum())} of {len(p)} points'
            )
        if (p.bound == "meets").all():
            if (p.pick == "user").all():
                return "user", '"user" meets the bound everywhere and its gain clears min_gain everywhere'
            if (p.pick == "agent").all():
                return "agent", '"user" meets the bound but its gain is under min_gain everywhere (tie-break)'
            return "undecided", "the gain clears min_gain at some points only"
        return "undecided", (
            f'"user"\'s leakage is undecided at {int((p.bound == "undecided").sum())} of '
            f"{len(p)} points and breaks the bound at none"
        )

    def control(self) -> bool:
        """The "alone" trace: every arm gives the same numbers, with no cross need and no leak."""
        alone = self.rows[self.rows.trace == "alone"]
        if alone.empty:
            return True
        cols = ["sessions", "leaky", "misfit", "needs", "met"]
        same = alone.groupby(list(ASSUMPTIONS) + ["user"])[cols].nunique().le(1).all().all()
        return bool(same and alone.needs.sum() == 0 and alone.leaky.sum() == 0)

    def finding(self) -> str:
        rule, p, t = self.rule, self._points, self._table
        leak_max, min_gain = rule.param("leak_max"), rule.param("min_gain")
        pick, why = self.verdict()
        intro, findings, lines = [], [], []
        shared = t[t.trace == "shared"]
        n_shared = int(shared.users.iloc[0]) if len(shared) else 0
        n_alone = int(t[t.trace == "alone"].users.iloc[0]) if (t.trace == "alone").any() else 0
        intro.append(
            f"World {self.world_digest[:12]} ({self.users} users; agents per user: {self.agents}): "
            f"{n_shared} users whose agents share them, {n_alone} with one agent; {len(p)} assumption "
            f"point(s). Intervals: {rule.param('confidence'):.0%} percentile bootstrap over users."
        )
        if len(p):
            lo, hi = p.loc[p.leak_user.idxmin()], p.loc[p.leak_user.idxmax()]
            intro.append(
                f'**Leakage of "user" (what ships)** — sessions with a lesson of the other context in '
                f"front of the model, at its lowest and highest point: meets the bound at "
                f"{int((p.bound == 'meets').sum())}, breaks it at {int((p.bound == 'breaks').sum())}, "
                f'undecided at {int((p.bound == "undecided").sum())} of {len(p)} points. "agent": 0 by '
                "construction (the scope filter)."
            )
            findings = [
                Finding(
                    f"{end} (split {r.split_share}, co_load {r.co_load})",
                    r.leak_user,
                    r.leak_user_low,
                    r.leak_user_high,
                    float(leak_max),
                    r.bound,
                )
                for end, r in (("lowest", lo), ("highest", hi))
            ]
            use = shared.pivot_table(index="scope", values="usefulness", aggfunc=["min", "max"])
            rows = ", ".join(f"{s} {use.loc[s].iloc[0]:.2f}–{use.loc[s].iloc[1]:.2f}" for s in use.index)
            g = p.gain
            reps = shared[shared.scope == "agent"].repeats_per_user
            lines += [
                "",
                f"**Usefulness** — cross needs met without the user correcting the other agent again, "
                f'range over points: {rows}. Gain of "user" over "agent": {g.min():.2f}–{g.max():.2f} '
                f"(the rule needs {min_gain}); MDE of the gain at most {p.mde_gain.max():.3f}; "
                f'the price of "agent": {reps.min():.2f}–{reps.max():.2f} repeat corrections per '
                "user (a lesson taught again in another agent).",
            ]
            ctxr = shared[shared.scope == "context"]
            if len(ctxr):
                lines += [
                    "",
                    f'**"context"** (descriptive; needs the host to label work/personal): usefulness '
                    f"{ctxr.usefulness.min():.2f}–{ctxr.usefulness.max():.2f}, leakage "
                    f"{ctxr.leakage.max():.3f} at most — with perfect labels; mislabelled agents are not "
                    "modelled.",
                ]
            und = p[p.bound == "undecided"]
            if len(und):
                lines += [
                    "",
                    "Undecided points and the users each would need: "
                    + "; ".join(
                        f"({r.transfer_share}, {r.split_share}, {r.co_load}) → {int(r.users_to_decide)}"
                        for r in und.itertuples()
                    ),
                ]
        agree, total = self.check
        control = (
            "every scope gives the same numbers, no cross need, no leak"
            if self.control()
            else "THE SCOPES DIFFER: the study is wrong"
        )
        lines += [
            "",
            f"Control (users with one agent): {control}. Product check (gates.learn + store + resolve "
            f"with the reader's scopes): {agree} of {total} resolutions applied exactly the model's "
            "lessons.",
        ]
        ships = SHIPPED.scope
        if pick == "undecided":
            verdict = f'**Verdict: undecided** ({why}); the shipped default stays "{ships}" until decided.'
        elif pick == ships:
            verdict = f'**Verdict: "{pick}"** ({why}) — what ships; it stays.'
        else:
            verdict = (
                f'**Verdict: "{pick}"** ({why}); ships today: "{ships}" — the rule says the default '
                f"should change to a per-agent scope."
            )
        lines += ["", verdict]
        return render(findings, stamp=rule.stamp(), intro=intro, outro="\n".join(lines[1:]))


def run(
    *,
    transfer_share: float | None = None,
    split_share: float | None = None,
    co_load: float | None = None,
    agents: int | str | None = None,
    users: int | None = None,
    sessions: int | None = None,
    seed: int | None = None,
    full: bool = False,
    rule: RuleFile | str | None = None,
) -> ScopeStudy:
    """The study: each assumption left None is swept over the rule's grid, a value fixes it (one point);
    `agents` "any" (the rule's) or 2 / 3 restricts the shared trace; world size from the rule (`full`: its
    full_world) unless given."""
    rule = rule if isinstance(rule, RuleFile) else rulefile.load(rule or RULE_NAME)
    spec = dict(rule.param("full_world" if full else "world"))
    agents = rule.param("agents") if agents is None else agents
    if agents not in ("any", 2, 3):
        raise ScopeError("agents", f"{agents!r}; one of 'any', 2, 3")
    for name, value in (("users", users), ("sessions", sessions), ("seed", seed)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "seed" else 1):
                raise ScopeError(name, f"{value!r} is not a {'non-negative' if name == 'seed' else 'positive'} integer")
            spec[name] = value
    points = _grid(rule, {"transfer_share": transfer_share, "split_share": split_share, "co_load": co_load})
    w = world.build(int(spec["seed"]), users=int(spec["users"]), sessions=int(spec["sessions"]))
    kept = [t for t in traces(w) if t.kind == "alone" or agents == "any" or len(t.agents) == agents]
    rows = []
    for pt in points:
        for t in kept:
            for arm in rule.param("arms"):
                x = simulate(t, pt, arm)
                rows.append(
                    {
                        "transfer_share": pt.transfer_share,
                        "split_share": pt.split_share,
                        "co_load": pt.co_load,
                        "trace": t.kind,
                        "scope": arm,
                        "user": t.user,
                        "sessions": x.sessions,
                        "leaky": x.leaky,
                        "misfit": x.misfit,
                        "needs": x.needs,
                        "met": x.met,
                    }
                )
    middle = points[len(points) // 2]
    check = product_check(
        [t for t in kept if t.kind == "shared"][: int(rule.param("check_users"))], middle, rule.param("arms")
    )
    return ScopeStudy(rule, w.digest(), str(agents), int(spec["users"]), pd.DataFrame(rows), check)
