"""Study 12 — the outcome signal for attribution: which user signal, alone or combined, makes promotion and
retirement right under realistic noise and sparsity (the design's open question 2).

    study = signals.run()                      # the rule's default run (datasets/rules/12_outcome_signal.yaml)
    study.table(); study.finding()             # per signal set: verdicts, precision, recall, sessions
    signals.explore(engagement=0.5, p_slip=0.1, silence=0.01)   # one scenario, for the StudyExplorer

**The world.** The shared world (`world.build`) gives users, their sessions and the lessons they teach: the first
session that needs a lesson teaches it. The learning trigger writes it *good* or, with `p_misread`, *bad* (the
ground truth). Every later session that needs it offers the staged lesson as a suggestion on `turns` turns
(`evidence.record_context(role="suggested")`). A turn is right with `p_obey` for a good lesson and `p_bad_ok`
for a bad one; the user takes it the wrong way round with `p_slip` (a misclick, a misjudgment, a reaction about
something else attributed to the lesson); then, unless they have gone silent (a per-session hazard `silence`, for
good), they react: on a turn that looks right `accepted` (`p_ack`) or a thumbs-up (`p_rate`), on one that looks
wrong a `correction` (`p_correct`), an `undo` (`p_undo`) or a thumbs-down (`p_down`) — each rate times
`engagement` (scaled down together where they would sum past 1), else silence. The tool call returns cleanly or
raises (`tool_error`, `tool_error_wrong`) on every turn, silent user or not.

**The evidence path is the product's.** One reaction stream feeds every *signal set* (which signals count) and
both *review arms* (the shipped review, and the rule's studied `retire_below`): each (lesson, set, arm) is its
own staged, trusted delta in the user's own SQLite store, and each reaction is ledgered once with
`evidence.record_signal(..., delta_ids=...)` on the deltas whose set counts it — sets are compared on the same
users, lessons and reactions. After every session `evidence.review_staged` decides with the shipped
`min_samples`, `threshold`, `wilson` and `z` (`defaults.SHIPPED`), over the deltas whose counters moved (the
review is a function of counters and status, so the others' decisions cannot change). A thumbs-up / down is
ledgered as a rating of 5 / 1. `tool_ok` is refused by the product (`NotAnOutcome`: checked in every run); its
row is the counterfactual of counting it the way the old code did — a clean return as `accepted`, an error as
`undo`.

**Measures** (per scenario, arm and set; the independent unit is the user, each user's lessons resampled
together): promotion precision (good among promoted) and recall (good lessons promoted within `followup`
sessions of being taught), retirement precision and recall (bad among retired; bad lessons retired), and the
sessions from teaching to a decision. Lessons taught with fewer than `followup` sessions left are not counted.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timedelta, timezone
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
import pandas as pd

from .. import evidence, gates
from ..defaults import SHIPPED
from ..grammar import Provenance
from ..metrics import Interval, binomial_upper, rate_table
from ..skill import Skill, parse_skill
from ..store import Store
from . import deploy, rulefile, world
from .finding import Finding, render
from .rulefile import RuleFile
from .sweep import sweep

__all__ = [
    "ASSUMPTIONS",
    "KINDS",
    "RULE",
    "Assumptions",
    "SignalStudy",
    "SignalStudyError",
    "assumption_table",
    "explore",
    "product_kinds",
    "run",
    "simulate",
]

RULE = "12_outcome_signal"
T0 = datetime(2025, 1, 6, 9, tzinfo=timezone.utc)  # a user's session n is on day n
POSITIVE, NEGATIVE = ("accepted", "thumbs_up"), ("correction", "undo", "thumbs_down")
KINDS = (*POSITIVE, *NEGATIVE, "tool_ok")
# how each user reaction is ledgered through `evidence.record_signal`: (signal, rating)
LEDGER = {
    "accepted": ("accepted", None),
    "thumbs_up": ("rating", 5),
    "correction": ("correction", None),
    "undo": ("undo", None),
    "thumbs_down": ("rating", 1),
}


class SignalStudyError(ValueError):
    """Bad input to the study: `field` names the argument or rule parameter at fault."""

    def __init__(self, message: str, field: str):
        self.field = field
        super().__init__(f"{field}: {message}")


# ------------------------------------------------------------------------------------------ assumptions

_SHARED = deploy.Settings()  # the deployment simulator's assumptions this study shares (value and range)


def _shared(name: str, what: str | None = None) -> deploy.Assumption:
    a = deploy.ASSUMPTIONS[name]
    return replace(a, what=what) if what else a


# Every behavioural assumption, with the range the study sweeps it over (one at a time, at each end). Shared
# ones are the deployment simulator's (`deploy.ASSUMPTIONS`, defaults from `deploy.Settings`); the rest are new
# here. No real deployment has measured any of them.
ASSUMPTIONS: Mapping[str, deploy.Assumption] = {
    a.name: a
    for a in (
        deploy.Assumption("engagement", 0.25, 1.25, "multiplies every reaction rate: how often users react at all"),
        _shared(
            "p_slip",
            "the user reacts as if the turn were the other way round (misclick, misjudgment, a "
            "reaction about something else)",
        ),
        deploy.Assumption("silence", 0.0, 0.05, "per session: the user stops reacting for good"),
        _shared("p_misread", "a taught lesson is bad (the learning trigger wrote the wrong value)"),
        _shared("p_obey", "a good lesson gives the user what they want on a turn it is offered"),
        deploy.Assumption("p_bad_ok", 0.0, 0.3, "a bad lesson happens to give the user what they want"),
        _shared("p_ack", "a right-looking turn is accepted"),
        deploy.Assumption("p_rate", 0.01, 0.2, "a right-looking turn gets a thumbs-up"),
        _shared("p_correct", "a wrong-looking turn is corrected"),
        _shared("p_undo", "a wrong-looking turn is undone"),
        deploy.Assumption("p_down", 0.01, 0.2, "a wrong-looking turn gets a thumbs-down"),
        deploy.Assumption("tool_error", 0.02, 0.1, "the tool call raises on a right turn"),
        deploy.Assumption("tool_error_wrong", 0.05, 0.3, "the tool call raises on a wrong turn"),
    )
}


@dataclass(frozen=True)
class Assumptions:
    """One scenario: every assumption of `ASSUMPTIONS` (defaults: the shared simulator's, else new here)."""

    engagement: float = 1.0
    p_slip: float = _SHARED.p_slip
    silence: float = 0.01
    p_misread: float = _SHARED.p_misread
    p_obey: float = _SHARED.p_obey
    p_bad_ok: float = 0.1
    p_ack: float = _SHARED.p_ack
    p_rate: float = _SHARED.p_rate
    p_correct: float = _SHARED.p_correct
    p_undo: float = _SHARED.p_undo
    p_down: float = _SHARED.p_rate  # a thumbs-down as often as a thumbs-up
    tool_error: float = 0.05
    tool_error_wrong: float = 0.1

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            top = 2.0 if f.name == "engagement" else 1.0
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= top:
                raise SignalStudyError(f"{v!r} is not a number in [0, {top:g}]", f.name)

    def reactions(self, looks_right: bool) -> tuple[tuple[str, ...], np.ndarray]:
        """(kinds, probabilities) of the user's reaction to a turn that looks right / wrong (the rest: silence)."""
        kinds = POSITIVE if looks_right else NEGATIVE
        p = (
            np.array(
                [getattr(self, n) for n in (("p_ack", "p_rate") if looks_right else ("p_correct", "p_undo", "p_down"))]
            )
            * self.engagement
        )
        return kinds, p / max(1.0, p.sum())

    @classmethod
    def scenario(cls, name: str, **base: float) -> "Assumptions":
        """`base` (the defaults, or those given), or `assumption=low|high`: that one at its stated end."""
        if name == "base":
            return cls(**base)
        key, _, end = name.partition("=")
        if key not in ASSUMPTIONS or end not in ("low", "high"):
            raise SignalStudyError(
                f"{name!r}; a scenario is 'base' or NAME=low|high, NAME one of {', '.join(ASSUMPTIONS)}", "scenarios"
            )
        return cls(**{**base, key: getattr(ASSUMPTIONS[key], end)})


def assumption_table() -> pd.DataFrame:
    """Every assumption: its base value, the range the FULL run sweeps, what it means, and where it comes from."""
    base = Assumptions()
    return pd.DataFrame(
        [
            {
                "assumption": a.name,
                "base": getattr(base, a.name),
                "low": a.low,
                "high": a.high,
                "what": a.what,
                "from": "deploy" if a.name in deploy.ASSUMPTIONS else "new here",
            }
            for a in ASSUMPTIONS.values()
        ]
    ).set_index("assumption")


def product_kinds() -> frozenset[str]:
    """The reaction kinds the product counts today: those whose ledger signal is one of `evidence.SIGNALS`."""
    return frozenset(k for k, (signal, _) in LEDGER.items() if signal in evidence.SIGNALS)


def _sets(raw: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, Mapping) or not raw:
        raise SignalStudyError("must map set names to lists of signal kinds", "sets")
    out = {}
    for name, kinds in raw.items():
        kinds = tuple(kinds) if isinstance(kinds, (list, tuple)) else ()
        if not kinds or any(k not in KINDS for k in kinds) or len(set(kinds)) != len(kinds):
            raise SignalStudyError(f"{name}: {raw[name]!r}; kinds are {', '.join(KINDS)}", "sets")
        if "tool_ok" in kinds and len(kinds) > 1:
            raise SignalStudyError(
                f"{name}: tool_ok is studied alone (its counterfactual ledger would collide "
                "with a user's accepted / undo on the same turn)",
                "sets",
            )
        out[str(name)] = kinds
    return out


# ------------------------------------------------------------------------------------------- simulation


@lru_cache(maxsize=1)
def _skills() -> dict[str, Skill]:
    """One skill per τ-corpus skill name, with a section for each of its lessons' sections."""
    sections: dict[str, set[str]] = {}
    for lesson in world.lessons():
        sections.setdefault(lesson.skill, set()).add(lesson.section)
    out = {}
    for name, slugs in sorted(sections.items()):
        body = "".join(
            f"## {s.replace('-', ' ').capitalize()}\n\nWhat the author says about {s.replace('-', ' ')}.\n\n"
            for s in sorted(slugs)
        )
        skill, problems = parse_skill(
            f"---\nname: {name}\ndescription: study skill for {name}\n---\n# {name}\n\n" + body, None
        )
        if skill is None:
            raise ValueError(f"the study skill {name} does not validate: {problems}")
        out[name] = skill
    return out


def simulate(
    seed: int,
    assumptions: Assumptions,
    *,
    sets: Mapping[str, Sequence[str]],
    arms: Mapping[str, float | None],
    users: int,
    sessions: int,
    followup: int,
    turns: int,
    scenario: str = "base",
) -> pd.DataFrame:
    """One world (`seed`) through the product's evidence path: one row per (user, lesson, arm, set) with the
    lesson's truth, the decision within `followup` sessions and when it came. `arms`: name → retire_below."""
    if followup < 1 or followup >= sessions or turns < 1:
        raise SignalStudyError("need 1 <= followup < sessions and turns >= 1", "followup")
    a, by_id, skills = assumptions, {x.id: x for x in world.lessons()}, _skills()
    w = world.build(seed, users=users, sessions=sessions)
    counts = {name: tuple(kinds) for name, kinds in sets.items()}
    rows = []
    by_user: dict[str, list[world.WorldSession]] = {}
    for s in w.sessions:
        by_user.setdefault(s.user, []).append(s)
    for user, history in by_user.items():
        rng = random.Random(f"signals:{seed}:{user}")
        store = Store.open(":memory:")
        try:
            rows += _user(
                store, rng, user, history, a, counts, arms, by_id, skills, sessions - followup, followup, turns, seed
            )
        finally:
            store.close()
    out = pd.DataFrame(
        rows, columns=["user", "lesson", "good", "taught", "arm", "set", "decision", "sessions", "samples", "refused"]
    )
    out.insert(0, "seed", seed)
    out.insert(0, "scenario", scenario)
    return out


def _user(
    store: Store,
    rng: random.Random,
    user: str,
    history: Sequence[world.WorldSession],
    a: Assumptions,
    counts: Mapping[str, tuple[str, ...]],
    arms: Mapping[str, float | None],
    by_id: Mapping[str, Any],
    skills: Mapping[str, Skill],
    last_taught: int,
    followup: int,
    turns: int,
    seed: int,
) -> list[dict]:
    """One user's sessions; returns their lessons' rows."""
    silent_from = next((s.index for s in history if rng.random() < a.silence), len(history))
    staged: dict[str, dict[tuple[str, str], str]] = {}  # lesson → (arm, set) → delta id, while undecided
    facts: dict[str, dict] = {}  # lesson → truth and taught session
    decided: dict[tuple[str, str, str], tuple[str, int, int]] = {}  # (lesson, arm, set) → decision
    scope: dict[str, str] = {}  # delta id → its scope (what `review_staged` selects on)
    refused = []
    for s in history:
        now = T0 + timedelta(days=s.index)
        sid = f"{seed}:{user}:{s.index}"
        lesson = s.needs
        if lesson is not None and s.taught and s.index < last_taught:
            good = rng.random() >= a.p_misread
            x = by_id[lesson]
            prov = Provenance("user_instruction", (f"{sid}:0",))
            keys = [(arm, name) for arm in arms for name in counts]
            res = gates.learn_many(
                store,
                skills[x.skill],
                [
                    gates.Lesson(
                        "preference",
                        {"body": x.body, "trigger": x.trigger},
                        x.section,
                        prov,
                        f"session:s{len(staged)}.{k}",
                    )
                    for k in range(len(keys))
                ],
                settings=gates.GateSettings(auto_approve=False),
            )
            bad = [r for r in res if r.delta is None or r.delta.status != "staged"]
            if bad:
                raise RuntimeError(f"lesson {lesson} was not staged: {bad[0].outcome} {bad[0].message}")
            staged[lesson] = {k: r.delta.id for k, r in zip(keys, res)}
            scope.update((r.delta.id, r.delta.scope) for r in res)
            facts[lesson] = {"good": good, "taught": s.index}
            continue
        if lesson not in staged or not staged[lesson] or s.index - facts[lesson]["taught"] > followup:
            continue
        good, live = facts[lesson]["good"], staged[lesson]
        moved: set[tuple[str, str]] = set()
        for t in range(turns):
            right = rng.random() < (a.p_obey if good else a.p_bad_ok)
            looks_right = right != (rng.random() < a.p_slip)
            kinds, p = a.reactions(looks_right)
            u = rng.random()
            pick = int(np.searchsorted(np.cumsum(p), u, side="right"))
            reaction = kinds[pick] if pick < len(kinds) and s.index < silent_from else None
            clean = rng.random() >= (a.tool_error if right else a.tool_error_wrong)
            heard = [
                (kind, ledger, [k for k in live if kind in counts[k[1]]])
                for kind, ledger in (
                    (reaction, LEDGER.get(reaction or "")),
                    ("tool_ok", ("accepted", None) if clean else ("undo", None)),
                )
                if kind is not None
            ]
            # the context ledger holds the deltas a signal will reach: the others' rows change nothing the review reads
            evidence.record_context(
                store, sid, str(t), [live[k] for _, _, ks in heard for k in ks], role="suggested", at=now
            )
            if not refused:
                try:
                    evidence.record_signal(store, sid, str(t), "tool_ok", at=now)
                    refused.append(False)
                except evidence.NotAnOutcome:
                    refused.append(True)
            for kind, (signal, rating), targets in heard:
                if not targets:
                    continue
                evidence.record_signal(
                    store,
                    sid,
                    str(t),
                    signal,
                    rating=rating,
                    skill=by_id[lesson].skill,
                    lesson=lesson if signal == "correction" else None,
                    delta_ids=[live[k] for k in targets],
                    at=now,
                )
                moved.update(targets)
        for arm, retire_below in arms.items():
            ids = {live[k]: k for k in moved if k[0] == arm}
            if not ids:
                continue
            scopes = [scope[d] for d in ids]
            for r in evidence.review_staged(
                store,
                scope=scopes,
                min_samples=SHIPPED.min_samples,
                threshold=SHIPPED.threshold,
                wilson=SHIPPED.wilson,
                z=SHIPPED.z,
                retire_below=retire_below,
                at=now,
            ):
                if r.decision != "held":
                    k = ids[r.delta_id]
                    decided[(lesson, *k)] = (r.decision, s.index - facts[lesson]["taught"], r.promotion.samples)
                    del live[k]
    rows = []
    for lesson, f in facts.items():
        for arm in arms:
            for name in counts:
                decision, n, samples = decided.get((lesson, arm, name), ("held", np.nan, np.nan))
                if decision == "held":
                    d = store.get(staged[lesson][(arm, name)])
                    samples = d.attempt_count
                rows.append(
                    {
                        "user": user,
                        "lesson": lesson,
                        "good": f["good"],
                        "taught": f["taught"],
                        "arm": arm,
                        "set": name,
                        "decision": decision,
                        "sessions": n,
                        "samples": samples,
                        "refused": bool(refused and refused[0]),
                    }
                )
    return rows


# ----------------------------------------------------------------------------------------------- study


def _exact(iv: Interval, k: int, n: int) -> Interval:
    """A bootstrap interval widened to the exact Clopper–Pearson end where it is degenerate (k = 0 or k = n)."""
    if n == 0:
        return iv
    if k == n:
        return replace(iv, low=min(iv.low, 1 - binomial_upper(0, n, iv.confidence).high))
    if k == 0:
        return replace(iv, high=max(iv.high, binomial_upper(0, n, iv.confidence).high))
    return iv


def _judge(low: float, high: float, target: float) -> str:
    """'meets' when the interval lies at or above the target, 'fails' when wholly below, else 'undecided'."""
    if np.isfinite(low) and low >= target:
        return "meets"
    if np.isfinite(high) and high < target:
        return "fails"
    return "undecided"


def _combine(verdicts: Sequence[str], ok: str = "right", bad: str = "wrong") -> str:
    return bad if bad in verdicts else ok if verdicts and all(v == ok for v in verdicts) else "undecided"


@dataclass(frozen=True)
class SignalStudy:
    """The study's lesson rows and rule; `metrics`, `verdicts`, `table` and `finding` read them."""

    rule: RuleFile
    lessons: pd.DataFrame  # one row per (scenario, seed, user, lesson, arm, set)
    scenarios: tuple[str, ...]
    seeds: tuple[int, ...]
    assumptions: tuple[tuple[str, Assumptions], ...]
    arms: tuple[tuple[str, float | None], ...]  # name → retire_below; the first is what ships

    @property
    def shipped_arm(self) -> str:
        return self.arms[0][0]

    @property
    def retire_arm(self) -> str:
        return self.arms[1][0]

    @cached_property
    def metrics(self) -> pd.DataFrame:
        """Per (scenario, arm, set): each rate with its interval over users, sessions to a decision, counts."""
        r = self.rule
        df = self.lessons.assign(
            unit=lambda d: d.seed.astype(str) + ":" + d.user,
            promoted=lambda d: d.decision == "promoted",
            retired=lambda d: d.decision == "retired",
            bad=lambda d: ~d.good,
        )
        df = df.assign(
            tp=df.promoted & df.good,
            fp=df.promoted & df.bad,
            rtp=df.retired & df.bad,
            decided=df.decision != "held",
            wait=df.sessions.fillna(0),
            good_promoted_wait=np.where(df.promoted & df.good, df.sessions.fillna(0), 0),
        )
        for c in ("good", "bad", "promoted", "retired", "tp", "fp", "rtp", "decided"):
            df[c] = df[c].astype(int)
        rates = {
            "promotion_precision": ("tp", "promoted"),
            "promotion_recall": ("tp", "good"),
            "bad_promoted": ("fp", "bad"),
            "sessions_to_decision": ("wait", "decided"),
            "sessions_to_promotion": ("good_promoted_wait", "tp"),
        }
        retirement = {"retirement_precision": ("rtp", "retired"), "retirement_recall": ("rtp", "bad")}
        kw = {
            "n_resamples": int(r.param("resamples")),
            "confidence": float(r.param("confidence")),
            "seed": int(r.param("bootstrap_seed")),
        }
        by = ["scenario", "arm", "set"]
        out = rate_table(df, by, "unit", rates, **kw).merge(  # retirement happens in the studied arm only
            rate_table(df[df.arm == self.retire_arm], by, "unit", retirement, **kw), on=by, how="left"
        )
        sums = df.groupby(by)[["good", "bad", "promoted", "retired", "tp", "rtp", "decided"]].sum().reset_index()
        out = out.merge(sums, on=by)
        out["decided"] = out["decided"] / (out["good"] + out["bad"])
        out["lessons"] = out["good"] + out["bad"]
        out = out.merge(df.groupby(by).unit.nunique().rename("users").reset_index(), on=by)
        for name, k, n in (
            ("promotion_precision", "tp", "promoted"),
            ("promotion_recall", "tp", "good"),
            ("retirement_precision", "rtp", "retired"),
            ("retirement_recall", "rtp", "bad"),
        ):
            for i, row in out[out[name].notna() | (out.arm == self.retire_arm)].iterrows():
                iv = _exact(
                    Interval(row[name], row[f"{name}_low"], row[f"{name}_high"], kw["confidence"]),
                    int(row[k]),
                    int(row[n]),
                )
                out.loc[i, [f"{name}_low", f"{name}_high"]] = [iv.low, iv.high]
        order = {s: i for i, s in enumerate(self.scenarios)}
        sets = list(_sets(r.param("sets")))
        return out.sort_values(
            ["scenario", "arm", "set"],
            key=lambda c: c.map(
                order
                if c.name == "scenario"
                else {a: i for i, (a, _) in enumerate(self.arms)}
                if c.name == "arm"
                else {s: i for i, s in enumerate(sets)}
            ),
        ).reset_index(drop=True)

    def _verdict(self, row: pd.Series, promotion: bool) -> str:
        """One scenario: promotion (precision and recall) or retirement (and promotion in the same arm)."""
        r = self.rule
        if promotion:
            names = (("promotion_precision", "precision_target"), ("promotion_recall", "recall_target"))
        else:
            names = (("retirement_precision", "retire_precision_target"), ("retirement_recall", "retire_recall_target"))
        if row["promoted" if promotion else "retired"] == 0:  # nothing decided: the rule calls it wrong
            return "wrong"
        parts = [_judge(row[f"{name}_low"], row[f"{name}_high"], float(r.param(target))) for name, target in names]
        return _combine(parts, "meets", "fails").replace("meets", "right").replace("fails", "wrong")

    @cached_property
    def verdicts(self) -> pd.DataFrame:
        """Per (set, scenario): promotion right/wrong/undecided (shipped arm), retirement (studied arm: retirement
        and promotion both right there)."""
        m = self.metrics.set_index(["scenario", "arm", "set"])
        rows = []
        for (scenario, arm, name), row in m.iterrows():
            if arm != self.shipped_arm:
                continue
            ret = m.loc[(scenario, self.retire_arm, name)]
            rows.append(
                {
                    "set": name,
                    "scenario": scenario,
                    "promotion": self._verdict(row, True),
                    "retirement": _combine([self._verdict(ret, False), self._verdict(ret, True)]),
                }
            )
        return pd.DataFrame(rows)

    @cached_property
    def overall(self) -> pd.DataFrame:
        """Per set, across scenarios: wrong if wrong in any, right if right in every one, else undecided; with
        the scenarios where it is right, and the tie-break inputs."""
        m = self.metrics.set_index(["scenario", "arm", "set"])
        sets = _sets(self.rule.param("sets"))
        base = self.scenarios[0]
        rows = []
        for name, g in self.verdicts.groupby("set", sort=False):
            both = [_combine([p, q]) for p, q in zip(g.promotion, g.retirement)]
            first = m.loc[(base, self.shipped_arm, name)]
            rows.append(
                {
                    "set": name,
                    "kinds": len(sets[name]),
                    "promotion": _combine(list(g.promotion)),
                    "retirement": _combine(list(g.retirement)),
                    "both": _combine(both),
                    "promotion_right_in": int((g.promotion == "right").sum()),
                    "both_right_in": sum(v == "right" for v in both),
                    "precision_fails_in": int(
                        sum(self._precision_fails(m.loc[(s, self.shipped_arm, name)]) for s in g.scenario)
                    ),
                    "sessions_to_promotion": first["sessions_to_promotion"],
                }
            )
        out = pd.DataFrame(rows).set_index("set").loc[list(sets)]
        return out

    def _precision_fails(self, row: pd.Series) -> bool:
        return bool(
            np.isfinite(row["promotion_precision_high"])
            and row["promotion_precision_high"] < float(self.rule.param("precision_target"))
        )

    def ranked(self, column: str) -> list[str]:
        """Sets by the rule's tie-break: most scenarios right on `column`, then fewer sessions to promotion (base
        scenario), then fewer signal kinds, then the rule's order."""
        o = self.overall.reset_index()
        o["order"] = range(len(o))
        key = {"promotion": "promotion_right_in", "both": "both_right_in"}[column]
        o = o.assign(wait=o.sessions_to_promotion.fillna(np.inf))
        return list(o.sort_values([key, "wait", "kinds", "order"], ascending=[False, True, True, True])["set"])

    @property
    def recommendation(self) -> dict[str, Any]:
        """What the rule says about the shipped defaults: which signals count, and retire_below."""
        o, shipped = self.overall, str(self.rule.param("shipped_set"))
        best = self.ranked("promotion")[0]
        change = (
            best != shipped
            and o.loc[best, "promotion_right_in"] > o.loc[shipped, "promotion_right_in"]
            and o.loc[best, "precision_fails_in"] == 0
            and (o.loc[best, "promotion"] == "right" or o.loc[shipped, "promotion"] != "right")
        )
        counted = best if change else shipped
        retire = o.loc[counted, "both"] == "right"
        return {
            "count": counted,
            "change_signals": bool(change),
            "best": best,
            "retire_below": dict(self.arms)[self.retire_arm] if retire else SHIPPED.retire_below,
            "change_retire_below": bool(retire and SHIPPED.retire_below != dict(self.arms)[self.retire_arm]),
        }

    def table(self) -> pd.DataFrame:
        """Per signal set: verdicts across scenarios and, per scenario, promotion precision / recall, sessions to
        a decision (shipped review) and retirement precision / recall (studied retire_below), each with its
        interval over users."""
        m = self.metrics
        rows = []
        for (scenario, name), g in m.groupby(["scenario", "set"], sort=False):
            ship, ret = g[g.arm == self.shipped_arm].iloc[0], g[g.arm == self.retire_arm].iloc[0]
            v = self.verdicts[(self.verdicts.set == name) & (self.verdicts.scenario == scenario)].iloc[0]

            def fmt(row, col):
                return Interval(row[col], row[f"{col}_low"], row[f"{col}_high"]).fmt(".2f", empty="—")

            rows.append(
                {
                    "scenario": scenario,
                    "signals counted": name,
                    "promotion precision": fmt(ship, "promotion_precision"),
                    "promotion recall": fmt(ship, "promotion_recall"),
                    "bad promoted": fmt(ship, "bad_promoted"),
                    "sessions to decision": fmt(ship, "sessions_to_decision"),
                    "decided": round(float(ship["decided"]), 3),
                    "retirement precision": fmt(ret, "retirement_precision"),
                    "retirement recall": fmt(ret, "retirement_recall"),
                    "promotion": v.promotion,
                    "with retirement": v.retirement,
                    "lessons": int(ship["lessons"]),
                    "users": int(ship["users"]),
                }
            )
        return pd.DataFrame(rows).set_index(["scenario", "signals counted"])

    def power(self) -> dict[str, float]:
        """The widest precision / recall half-width of the shipped arm (among sets that promote), and the run size
        that would bring it to the rule's target half-width (half-widths shrink as 1/√users)."""
        m = self.metrics[self.metrics.arm == self.shipped_arm]
        half = float(
            np.nanmax(
                np.r_[
                    (m.promotion_precision_high - m.promotion_precision_low) / 2,
                    (m.promotion_recall_high - m.promotion_recall_low) / 2,
                ]
            )
        )
        target = float(self.rule.param("target_halfwidth"))
        users = int(m.users.min())
        return {
            "halfwidth": half,
            "target": target,
            "users": users,
            "users_needed": int(np.ceil(users * (half / target) ** 2)) if half > target else users,
        }

    def undecided(self) -> pd.DataFrame:
        """Per undecided (scenario, set) promotion verdict, the measure that left it open and the users per
        scenario that would decide it: a half-width below the distance from its estimate to the target
        (half-widths shrink as 1/√users)."""
        m = self.metrics[self.metrics.arm == self.shipped_arm].set_index(["scenario", "set"])
        rows = []
        for v in self.verdicts[self.verdicts.promotion == "undecided"].itertuples():
            row = m.loc[(v.scenario, v.set)]
            for name, target in (("promotion_precision", "precision_target"), ("promotion_recall", "recall_target")):
                t = float(self.rule.param(target))
                if _judge(row[f"{name}_low"], row[f"{name}_high"], t) != "undecided":
                    continue
                half, gap = (row[f"{name}_high"] - row[f"{name}_low"]) / 2, abs(row[name] - t)
                need = int(np.ceil(row["users"] * (half / gap) ** 2)) if gap > 0 else None
                rows.append(
                    {
                        "scenario": v.scenario,
                        "set": v.set,
                        "measure": name,
                        "estimate": row[name],
                        "target": t,
                        "halfwidth": half,
                        "users": int(row["users"]),
                        "users_needed": need,
                    }
                )
        return pd.DataFrame(
            rows, columns=["scenario", "set", "measure", "estimate", "target", "halfwidth", "users", "users_needed"]
        )

    def finding(self) -> str:
        r, o, rec = self.rule, self.overall, self.recommendation
        m = self.metrics.set_index(["scenario", "arm", "set"])
        base = self.scenarios[0]
        pw = self.power()
        p_t, r_t = float(r.param("precision_target")), float(r.param("recall_target"))
        rp_t, rr_t = float(r.param("retire_precision_target")), float(r.param("retire_recall_target"))
        shipped = str(r.param("shipped_set"))
        retire_value = dict(self.arms)[self.retire_arm]
        intro = [
            f"**Question.** {r.question}",
            f"Run: {len(self.seeds)} world seed(s) × {len(self.scenarios)} scenario(s) "
            f"({', '.join(self.scenarios)}); {int(m.loc[(base, self.shipped_arm, shipped), 'lessons'])} "
            f"lessons from {int(m.loc[(base, self.shipped_arm, shipped), 'users'])} users per scenario; the "
            f"shipped review (min_samples {SHIPPED.min_samples}, threshold {SHIPPED.threshold}, wilson "
            f"{SHIPPED.wilson}, retire_below {SHIPPED.retire_below}) and the studied retire_below "
            f"{retire_value}. Promotion is right when precision ≥ {p_t} and recall ≥ {r_t} (interval "
            f"lower ends); retirement when retirement precision ≥ {rp_t} and recall ≥ {rr_t}.",
        ]
        refused = bool(self.lessons.refused.all())
        findings = []
        for name in o.index:
            row = m.loc[(base, self.shipped_arm, name)]
            ret = m.loc[(base, self.retire_arm, name)]
            iv = lambda x, c: Interval(x[c], x[f"{c}_low"], x[f"{c}_high"]).fmt(".2f", empty="n/a")  # noqa: E731
            findings.append(
                Finding(
                    f"**{name}** ({base}): promotion precision",
                    row["promotion_precision"],
                    row["promotion_precision_low"],
                    row["promotion_precision_high"],
                    p_t,
                    spec=".2f",
                    side="≥",
                    verdict=f"across scenarios promotion **{o.loc[name, 'promotion']}** (right in "
                    f"{o.loc[name, 'promotion_right_in']} of {len(self.scenarios)}), with retirement "
                    f"**{o.loc[name, 'both']}** (right in {o.loc[name, 'both_right_in']})",
                    note=f"recall {iv(row, 'promotion_recall')}, {iv(row, 'sessions_to_decision')} sessions to a "
                    f"decision; retirement precision {iv(ret, 'retirement_precision')}, recall "
                    f"{iv(ret, 'retirement_recall')}",
                )
            )
        right = [s for s in o.index if o.loc[s, "both"] == "right"]
        promo = [s for s in o.index if o.loc[s, "promotion"] == "right"]
        best = rec["best"]
        wrong_in = [
            sc
            for sc, v in self.verdicts[self.verdicts.set == best][["scenario", "promotion"]].itertuples(index=False)
            if v != "right"
        ]
        if right:
            verdict = f"Promotion and retirement are right in every scenario for: {', '.join(right)}."
        else:
            verdict = "No signal set makes promotion and retirement right in every scenario."
        if promo:
            verdict += f" Promotion alone is right in every scenario for: {', '.join(promo)}."
        elif o.promotion_right_in.max() == 0:
            verdict += (
                " No set makes promotion right in any scenario, so the rule's ranking falls through to its "
                f"speed tie-break and names **{best}** (bad lessons promoted in the base scenario: "
                f"{m.loc[(base, self.shipped_arm, best), 'bad_promoted']:.2f}) — a ranking, not an answer."
            )
        else:
            fails = int(o.loc[best, "precision_fails_in"])
            verdict += (
                f" No set makes promotion right in every scenario; the rule's ranking puts **{best}** first "
                f"(right in {o.loc[best, 'promotion_right_in']} of {len(self.scenarios)}"
                + (f", but its precision is below target in {fails}" if fails else "")
                + f"; not right in: {', '.join(wrong_in) or 'none'})."
            )
        lines = [
            f"The product refuses `tool_ok` as an outcome in {'every' if refused else 'NOT every'} run "
            "(`NotAnOutcome`): as shipped it moves nothing. Its row is the counterfactual of counting it.",
            "",
            f"**Verdict.** {verdict}",
            "",
        ]
        if rec["change_signals"]:
            kinds = ", ".join(_sets(r.param("sets"))[rec["count"]])
            lines.append(
                f"**Shipped default: change.** Count **{rec['count']}** ({kinds}) instead of every user "
                f"signal ({shipped}), which is right in {o.loc[shipped, 'promotion_right_in']} of "
                f"{len(self.scenarios)} scenarios."
            )
        else:
            lines.append(
                f"**Shipped default: keep** counting every user signal ({shipped}): no set beats it under "
                "the rule (more scenarios right, never failing precision)."
            )
        retire = (
            f"turn it on at {rec['retire_below']}" if rec["change_retire_below"] else f"stays {SHIPPED.retire_below}"
        )
        lines.append(
            f"retire_below: {retire} — with {rec['count']}, promotion with retirement at {retire_value} is "
            f"{o.loc[rec['count'], 'both']} across scenarios."
        )
        undecided = self.undecided()
        lines.append(
            f"Undecided (scenario, set) pairs for promotion: {len(undecided)}"
            + (
                ": "
                + "; ".join(
                    f"{x.scenario} / {x.set} ({x.measure} {x.estimate:.3f} against "
                    f"{x.target}: about {x.users_needed} users would decide it)"
                    for x in undecided.itertuples()
                )
                if len(undecided)
                else ""
            )
            + "."
        )
        lines += [
            "",
            f"**Power.** The widest promotion precision / recall half-width is {pw['halfwidth']:.3f} "
            f"({pw['users']} users per scenario); the rule's target is {pw['target']}"
            + (
                ", reached."
                if pw["halfwidth"] <= pw["target"]
                else f"; about {pw['users_needed']} users per scenario would reach it (FULL=1 runs more seeds)."
            )
            + " An undecided scenario is decided by more users, not by another look at these.",
        ]
        return render(findings, stamp=r.stamp(), intro=intro, outro="\n".join(lines))


# ------------------------------------------------------------------------------------------------- run


def _arms(rule: RuleFile) -> dict[str, float | None]:
    value = rule.param("retire_below")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= SHIPPED.threshold:
        raise SignalStudyError(f"{value!r} must be a number in (0, threshold]", "params.retire_below")
    return {"shipped": SHIPPED.retire_below, f"retire_below={value}": float(value)}


def _one(seed: int, scenario: str, assumptions: dict, **kw: Any) -> pd.DataFrame:
    return simulate(seed, Assumptions(**assumptions), scenario=scenario, **kw)


def run(
    *,
    full: bool = False,
    rule: RuleFile | str | None = None,
    seeds: int | None = None,
    scenarios: Sequence[str] | None = None,
    n_jobs: int = 2,
    progress: bool = True,
    **assumptions: float,
) -> SignalStudy:
    """The study: the rule's scenarios (`full_scenarios` with `full`) × its seeds, every signal set and both review
    arms on common reactions. `assumptions` override the base scenario's (each scenario moves one from there)."""
    rule = rule if isinstance(rule, RuleFile) else rulefile.load(rule or RULE)
    unknown = sorted(set(assumptions) - {f.name for f in fields(Assumptions)})
    if unknown:
        raise SignalStudyError(f"unknown assumption(s) {unknown}; they are {', '.join(ASSUMPTIONS)}", unknown[0])
    sets = _sets(rule.param("sets"))
    if set(sets.get(str(rule.param("shipped_set")), ())) != product_kinds():
        raise SignalStudyError(
            f"must name the set of what the product counts ({sorted(product_kinds())})", "params.shipped_set"
        )
    arms = _arms(rule)
    scenarios = tuple(scenarios or rule.param("full_scenarios" if full else "scenarios"))
    if not scenarios or scenarios[0] != "base":
        raise SignalStudyError("the first scenario must be 'base'", "scenarios")
    n = int(seeds if seeds is not None else rule.param("full_seeds" if full else "seeds"))
    if n < 1:
        raise SignalStudyError("at least one seed", "seeds")
    chosen = {s: Assumptions.scenario(s, **assumptions) for s in scenarios}
    w = rule.param("world")
    kw = {
        "sets": sets,
        "arms": arms,
        "users": int(w["users"]),
        "sessions": int(w["sessions"]),
        "followup": int(rule.param("followup")),
        "turns": int(rule.param("turns")),
    }
    grid = [
        {"seed": seed, "scenario": s, "assumptions": asdict(chosen[s]), **kw} for s in scenarios for seed in range(n)
    ]
    frames = sweep(_one, grid, n_jobs=n_jobs, progress=progress, desc="signals")
    return SignalStudy(
        rule,
        pd.concat(frames, ignore_index=True),
        scenarios,
        tuple(range(n)),
        tuple(chosen.items()),
        tuple(arms.items()),
    )


def explore(
    engagement: float = 1.0,
    p_slip: float = _SHARED.p_slip,
    silence: float = 0.01,
    p_misread: float = _SHARED.p_misread,
    seeds: int = 2,
) -> SignalStudy:
    """One scenario at the given assumptions (the designer's widget): the rule's sets, arms and measures."""
    return run(
        scenarios=("base",),
        seeds=seeds,
        engagement=engagement,
        p_slip=p_slip,
        silence=silence,
        p_misread=p_misread,
        progress=False,
    )
