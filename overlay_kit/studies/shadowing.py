"""Deltas on a shadowed skill (the design's open question 4): does a lesson follow its skill's name, or the
(name, discovery root) pair, when a same-named skill in another root shadows the base it was learned on?

    study = shadowing.run()                    # the rule file's realistic point and its one-at-a-time sweep
    study.table()                              # one row per keying policy at the realistic point
    study.sweep_table()                        # every point run: each policy's figures and admissibility
    study.finding()                            # the verdict, from datasets/rules/13_shadowed_skills.yaml
    shadowing.product_keying()                 # which keying the real store + resolver implement today

Users and sessions come from the shared world (`world.build`): a session uses its agent's skill, and a session
that teaches a lesson attaches it to the base the session resolved. Over those sessions a seeded model of each
user's discovery roots (`Assumptions`: projects that come and go, a same-named project skill that is the user's
own fork or a different author's skill, registry installs later shadowed by an import into the user root,
renames) decides which skills are present; which one a session uses is decided by the real precedence code
(`skill.discover` on temporary roots). Ground truth is the lineage: a lesson belongs to the base it was learned
on and to forks of it. Each keying policy is scored per lesson: silently applied to another lineage's skill
(silent attach), left out while the user uses its own lineage (lost use), or always right (kept).
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .. import gates
from ..common import FieldError
from ..metrics import Interval, binomial_upper, bootstrap_ci, ratio_ci
from ..resolve import resolve
from ..skill import default_roots, discover
from ..store import Store
from . import rulefile, world
from .finding import Finding, render
from .rulefile import RuleFile
from .sweep import sweep

__all__ = [
    "ASSUMPTIONS",
    "POLICIES",
    "RULE_NAME",
    "Assumptions",
    "ShadowStudy",
    "ShadowingError",
    "ShadowVerdict",
    "product_keying",
    "run",
    "simulate",
    "winner",
]

RULE_NAME = "13_shadowed_skills"
POLICIES = ("name+root", "name", "name+path", "name+path+prompt")
ROOTS = ("project", "user", "installed")  # the discovery roots the model fills (labels of `default_roots`)


class ShadowingError(FieldError):
    """Bad input to the study: names the field."""


@dataclass(frozen=True)
class Assumptions:
    """The root-dynamics model's rates (the rule file states each one's realistic value and range)."""

    p_shadow: float  # a project holds a same-named skill for a skill the user uses
    p_fork: float  # such a skill (or an import over an installed one) is the user's own fork, not another author's
    p_switch: float  # after a session the user moves to another project
    p_new_project: float  # a move goes to a new project (else back to an earlier one)
    p_installed: float  # a skill starts in the installed root (another author's lineage), else in the user root
    p_import: float  # per session of a skill: a same-named skill is imported into the user root over an installed one
    p_rename: float  # per session of a skill: the user renames their user-root skill
    p_answer: float  # the prompt policy: the user answers a shadow prompt correctly

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise ShadowingError(f.name, f"{v!r} is not a probability in [0, 1]")

    @classmethod
    def of(cls, values: Mapping[str, float]) -> "Assumptions":
        missing = sorted({f.name for f in fields(cls)} - set(values))
        if missing:
            raise ShadowingError(missing[0], "not stated")
        return cls(**{f.name: values[f.name] for f in fields(cls)})


ASSUMPTIONS = tuple(f.name for f in fields(Assumptions))


# ------------------------------------------------------------------------------- precedence (the real code)


@lru_cache(maxsize=None)
def winner(labels: frozenset[str]) -> str:
    """The root label whose same-named skill `skill.discover` serves when the roots in `labels` each hold one
    (written to temporary `default_roots` directories and discovered by the product's own code)."""
    bad = sorted(set(labels) - set(ROOTS))
    if not labels or bad:
        raise ShadowingError("labels", f"need a non-empty subset of {ROOTS}, got {sorted(labels)}")
    name = "shadowed-skill"
    with tempfile.TemporaryDirectory() as tmp:
        roots = [r for r in default_roots(Path(tmp, "project"), home=Path(tmp, "home")) if r.label in ROOTS]
        for r in roots:
            if r.label in labels:
                (r.path / name).mkdir(parents=True)
                (r.path / name / "SKILL.md").write_text(
                    f"---\nname: {name}\ndescription: the copy in the {r.label} root\n---\n# Steps\n\nDo it.\n",
                    encoding="utf-8",
                )
        found = discover(roots)
    assert len(found.shadowed) == len(labels) - 1 and not found.errors
    return found.skills[name].root


# ------------------------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class _Base:
    name: str
    root: str  # discovery-root label
    path: str  # the skill's directory: identity of (name, root directory)
    lineage: str  # ground truth: the author line a lesson learned on it belongs to


@dataclass
class _Lesson:
    base: _Base
    uses: int = 0  # later sessions of its skill
    uses_own: int = 0
    lost_uses: int = 0
    silent: bool = False
    confirmed: bool = False


def _applies(
    policy: str, lesson: _Base, base: _Base, answers: dict, a: Assumptions, rng: random.Random, counts: dict
) -> tuple[bool, bool]:
    """(applied, confirmed by a prompt) for a lesson learned on `lesson` when the session serves `base`."""
    if lesson.name != base.name:
        return False, False
    if policy == "name":
        return True, False
    if policy == "name+root":
        return lesson.root == base.root, False
    if lesson.path == base.path:
        return True, False
    if policy == "name+path":
        return False, False
    key = (lesson.path, base.path)
    if key not in answers:  # asked once per (lesson base, served base); the answer is remembered
        counts["prompts"] += 1
        right = lesson.lineage == base.lineage
        answers[key] = right if rng.random() < a.p_answer else not right
    return answers[key], answers[key]


def _user(
    sessions: Sequence[world.WorldSession],
    skill_of: Mapping[str, str],
    a: Assumptions,
    seed: str,
    policies: Sequence[str],
) -> list[dict]:
    """One user's sessions under the root model; one row per policy with that user's counts."""
    rng = random.Random(seed)
    answer_rng = {p: random.Random(f"{seed}-answers-{p}") for p in policies}
    home: dict[str, dict[str, _Base]] = {}  # skill -> {"user"/"installed": base}
    projects: list[dict[str, _Base | None]] = [{}]
    here = 0
    lessons: dict[str, dict[str, list[_Lesson]]] = {p: {} for p in policies}
    answers = {p: {} for p in policies}
    counts = {p: {"prompts": 0} for p in policies}
    shadowed_sessions = renames = 0
    for s in sessions:
        if s.index and rng.random() < a.p_switch:
            earlier = [i for i in range(len(projects)) if i != here]
            if not earlier or rng.random() < a.p_new_project:
                projects.append({})
                here = len(projects) - 1
            else:
                here = rng.choice(earlier)
        skill = skill_of[s.agent]
        mine = home.get(skill)
        if mine is None:
            root = "installed" if rng.random() < a.p_installed else "user"
            mine = home[skill] = {root: _Base(skill, root, f"~/{root}/{skill}", f"{root}:{skill}")}
        if "user" not in mine and rng.random() < a.p_import:  # an import into the user root over the installed one
            old = mine["installed"]
            lineage = old.lineage if rng.random() < a.p_fork else f"import:{skill}:{s.index}"
            mine["user"] = _Base(old.name, "user", f"~/user/{old.name}", lineage)
        if "user" in mine and rng.random() < a.p_rename:  # directory and name change together
            old = mine["user"]
            renames += 1
            new = f"{skill}-v{renames + 1}"
            mine["user"] = replace(old, name=new, path=f"~/user/{new}")
        served_home = mine.get("user", mine.get("installed"))
        name = served_home.name
        project = projects[here]
        if skill not in project:  # decided when the user first uses the skill in this project
            if rng.random() < a.p_shadow:
                lineage = served_home.lineage if rng.random() < a.p_fork else f"project{here}:{skill}"
                project[skill] = _Base(name, "project", f"project{here}/{name}", lineage)
            else:
                project[skill] = None
        present = {b.root: b for b in (project[skill], *mine.values()) if b is not None and b.name == name}
        base = present[winner(frozenset(present))]
        shadowed_sessions += len(present) > 1
        for p in policies:
            taught = lessons[p].setdefault(skill, [])
            for lesson in taught:
                lesson.uses += 1
                applied, confirmed = _applies(p, lesson.base, base, answers[p], a, answer_rng[p], counts[p])
                own = lesson.base.lineage == base.lineage
                if own:
                    lesson.uses_own += 1
                    lesson.lost_uses += not applied
                elif applied:
                    lesson.confirmed |= confirmed
                    lesson.silent |= not confirmed
            if s.taught:
                taught.append(_Lesson(base))
    rows = []
    for p in policies:
        used = [x for taught in lessons[p].values() for x in taught if x.uses]
        rows.append(
            {
                "user": sessions[0].user if sessions else "",
                "policy": p,
                "sessions": len(sessions),
                "shadowed_sessions": shadowed_sessions,
                "lessons": len(used),
                "silent": sum(x.silent for x in used),
                "confirmed": sum(x.confirmed for x in used),
                "lost_lessons": sum(x.lost_uses > 0 for x in used),
                "kept": sum(not (x.silent or x.confirmed or x.lost_uses) for x in used),
                "own_uses": sum(x.uses_own for x in used),
                "lost_uses": sum(x.lost_uses for x in used),
                "prompts": counts[p]["prompts"],
            }
        )
    return rows


@lru_cache(maxsize=4)
def _world(seed: int, users: int, sessions: int) -> world.World:
    return world.build(seed, users=users, sessions=sessions)


def simulate(
    assumptions: Assumptions, *, users: int, sessions: int, world_seed: int = 0, policies: Sequence[str] = POLICIES
) -> pd.DataFrame:
    """One row per (user, policy): the counts `_user` returns, over the shared world's users."""
    for name, v in (("users", users), ("sessions", sessions)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ShadowingError(name, f"{v!r} is not a positive integer")
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        raise ShadowingError("policies", f"{unknown or 'none'}: policies are {', '.join(POLICIES)}")
    skill_of = {x.domain: x.skill for x in world.lessons()}
    by_user: dict[str, list[world.WorldSession]] = {}
    for s in _world(world_seed, users, sessions).sessions:
        by_user.setdefault(s.user, []).append(s)
    rows = [
        r
        for user, ss in sorted(by_user.items())
        for r in _user(ss, skill_of, assumptions, f"shadowing-{world_seed}-{user}", policies)
    ]
    return pd.DataFrame(rows)


# -------------------------------------------------------------------------------------------- judging


METRICS = ("silent", "lost", "prompts", "confirmed")


def _rate(num: pd.Series, den: pd.Series, kw: Mapping) -> Interval:
    """`ratio_ci`, without resampling a numerator that is zero for every user (its interval is [0, 0])."""
    if num.sum() == 0 and den.sum() > 0:
        return Interval(0.0, 0.0, 0.0, kw["confidence"], len(den))
    return ratio_ci(num, den, **kw)


def _summary(per_user: pd.DataFrame, rule: RuleFile) -> pd.DataFrame:
    """One row per policy: each metric with its interval over users, and whether the policy is admissible."""
    kw = {
        "confidence": rule.param("confidence"),
        "n_resamples": rule.param("resamples"),
        "seed": rule.param("bootstrap_seed"),
    }
    out = []
    for policy, g in per_user.groupby("policy", sort=False):
        lessons = int(g.lessons.sum())
        cis = {
            "silent": _rate(g.silent, g.lessons, kw),
            "lost": _rate(g.lost_uses, g.own_uses, kw),
            "prompts": _rate(100 * g.prompts, g.sessions, kw),
            "confirmed": _rate(g.confirmed, g.lessons, kw),
        }
        if lessons and g.silent.sum() == 0:  # a degenerate bootstrap: quote the exact bound over lessons
            exact = binomial_upper(0, lessons, kw["confidence"])
            cis["silent"] = Interval(0.0, 0.0, exact.high, exact.confidence, lessons)
        row = {"policy": policy, "users": len(g), "lessons": lessons}
        for m, ci in cis.items():
            row |= {m: ci.estimate, f"{m}_low": ci.low, f"{m}_high": ci.high}
        row |= {
            "lost_lessons": g.lost_lessons.sum() / max(lessons, 1),
            "kept": g.kept.sum() / max(lessons, 1),
            "shadowed_sessions": g.shadowed_sessions.sum() / g.sessions.sum(),
        }
        row["admissible"] = bool(
            row["silent_high"] <= rule.param("silent_max") and row["prompts_high"] <= rule.param("prompt_max")
        )
        out.append(row)
    return pd.DataFrame(out)


def _point(
    point: str, values: Mapping[str, float], rule_path: str, users: int, sessions: int, policies: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One sweep point: (per-user counts, per-policy summary), both labelled with `point`."""
    rule = rulefile.load(rule_path)
    per_user = simulate(
        Assumptions.of(values), users=users, sessions=sessions, world_seed=rule.param("world_seed"), policies=policies
    )
    summary = _summary(per_user, rule)
    return per_user.assign(point=point), summary.assign(point=point)


def _lost_difference(per_user: pd.DataFrame, best: str, other: str, rule: RuleFile) -> Interval:
    """lost(other) − lost(best) with a paired bootstrap over users (the same resamples for both)."""
    a = per_user[per_user.policy == best].set_index("user")
    b = per_user[per_user.policy == other].set_index("user").loc[a.index]

    def diff(n1, d1, n2, d2, axis=-1):
        return np.sum(n2, axis=axis) / np.sum(d2, axis=axis) - np.sum(n1, axis=axis) / np.sum(d1, axis=axis)

    return bootstrap_ci(
        a.lost_uses,
        a.own_uses,
        b.lost_uses,
        b.own_uses,
        statistic=diff,
        n_resamples=rule.param("resamples"),
        confidence=rule.param("confidence"),
        seed=rule.param("bootstrap_seed"),
    )


@dataclass(frozen=True)
class ShadowVerdict:
    kind: str  # "keep" | "change" | "undecided"
    policy: str | None  # the recommended keying (None when undecided)
    pick: str | None  # the rule's pick at the realistic point, before the robustness check
    runner_up: str | None
    difference: Interval | None  # lost(runner-up) − lost(pick), paired over users
    tie: bool
    failures: Mapping[str, tuple[str, ...]]  # policy -> the sweep points where it is not admissible
    robustness_checked: bool


def _decide(summary: pd.DataFrame, per_user: pd.DataFrame, rule: RuleFile, product: str) -> ShadowVerdict:
    """The rule file's decision: admissible at the realistic point, lowest lost, tie-break, then robustness."""
    real = summary[summary.point == "realistic"].set_index("policy")
    order = list(real.index)
    failures = {p: tuple(summary[(summary.policy == p) & ~summary.admissible].point) for p in order}
    checked = summary.point.nunique() > 1
    admissible = sorted((p for p in order if real.admissible[p]), key=lambda p: (real.lost[p], order.index(p)))
    if not admissible:
        return ShadowVerdict("undecided", None, None, None, None, False, failures, checked)
    pick, runner, diff, tie = admissible[0], None, None, False
    if len(admissible) > 1:
        runner = admissible[1]
        diff = _lost_difference(per_user[per_user.point == "realistic"], pick, runner, rule)
        if diff.low <= 0:
            tie = True
            pick, runner = sorted((pick, runner), key=lambda p: (real.prompts[p], order.index(p)))
    robust = [p for p in admissible if not failures[p]] if checked else admissible
    if pick in robust:
        chosen = pick
    elif robust:
        chosen = robust[0]
    else:
        return ShadowVerdict("undecided", None, pick, runner, diff, tie, failures, checked)
    return ShadowVerdict("keep" if chosen == product else "change", chosen, pick, runner, diff, tie, failures, checked)


@dataclass(frozen=True)
class ShadowStudy:
    rule: RuleFile
    product: str  # the keying the real store and resolver implement (`product_keying`)
    values: Mapping[str, float]  # the assumptions at the point called realistic in this run
    users: int
    sessions: int
    summary: pd.DataFrame  # one row per (point, policy)
    per_user: pd.DataFrame  # one row per (point, user, policy)
    verdict: ShadowVerdict = field(compare=False)

    def table(self) -> pd.DataFrame:
        """The realistic point: one row per policy, each rate with its interval over users."""
        cols = [
            "policy",
            "lessons",
            "silent",
            "silent_low",
            "silent_high",
            "lost",
            "lost_low",
            "lost_high",
            "prompts",
            "prompts_high",
            "confirmed",
            "lost_lessons",
            "kept",
            "admissible",
        ]
        t = self.summary[self.summary.point == "realistic"][cols].reset_index(drop=True)
        return t.assign(today=t.policy.eq(self.product).map({True: "product", False: ""}))

    def sweep_table(self) -> pd.DataFrame:
        """Every point run, one row per (point, policy)."""
        return self.summary[
            [
                "point",
                "policy",
                "lessons",
                "silent",
                "silent_high",
                "lost",
                "lost_low",
                "lost_high",
                "prompts",
                "prompts_high",
                "confirmed",
                "shadowed_sessions",
                "admissible",
            ]
        ].reset_index(drop=True)

    def finding(self) -> str:
        v, rule = self.verdict, self.rule
        real = self.summary[self.summary.point == "realistic"].set_index("policy")
        varied = {k: (rule.param("realistic")[k], x) for k, x in self.values.items() if rule.param("realistic")[k] != x}
        intro = [
            f"**Setting.** {self.users} users × {self.sessions} sessions of the shared world (seed "
            f"{rule.param('world_seed')}), {int(real.lessons.iloc[0])} lessons with a later use; sessions "
            f"whose skill shadowed another: {real.shadowed_sessions.iloc[0]:.1%}"
            + (
                "; assumptions varied from the rule's realistic point: "
                + ", ".join(f"{k} {a} → {b}" for k, (a, b) in varied.items())
                if varied
                else ""
            )
            + ".",
            f"**Today.** The product keys a lesson by its skill's name and records where the skill came "
            f"from (`base_root`); the resolver leaves out a lesson whose recorded root differs from the served "
            f"skill's (an `orphaned` note, never re-attached without confirmation). Probed on the real store "
            f"and resolver: the product implements `{self.product}` (until this study's version 1 verdict "
            f"was adopted it recorded the root's label alone: `name+root`).",
            "Per policy at the realistic point: silent attach (share of lessons), its lost uses and prompts "
            "per 100 sessions:",
        ]
        findings = [
            Finding(
                f"`{p}`{' (today)' if p == self.product else ''} silent attach",
                r.silent,
                r.silent_low,
                r.silent_high,
                float(rule.param("silent_max")),
                "admissible" if r.admissible else "not admissible",
                note=f"lost uses {r.lost:.3f} [{r.lost_low:.3f}, {r.lost_high:.3f}]; prompts "
                f"{r.prompts:.2f} (≤ {r.prompts_high:.2f})",
            )
            for p, r in real.iterrows()
        ]
        lines = [
            f"Admissible: silent attach upper end ≤ {rule.param('silent_max')} and prompts upper end ≤ "
            f"{rule.param('prompt_max')} per 100 sessions. The silent bound needs ≥ 299 lessons at zero "
            f"events; this run has {int(real.lessons.iloc[0])}."
        ]
        if v.difference is not None:
            d = v.difference
            lines.append(
                f"Lost uses, {v.runner_up} − {v.pick}: {d.fmt('.3f')} (paired over users; this design "
                f"resolves differences of about ±{(d.high - d.low) / 2:.3f})"
                + ("; a tie, broken by fewer prompts, then the listed order." if v.tie else ".")
            )
        if v.robustness_checked:
            n = self.summary.point.nunique()
            fails = [
                f"`{p}` at " + ("every point" if len(pts) == n else ", ".join(pts))
                for p, pts in v.failures.items()
                if pts
            ]
            lines.append(
                f"Across the {n} points swept: "
                + ("; ".join(f"not admissible: {f}" for f in fails) if fails else "every policy admissible everywhere")
                + "."
            )
        else:
            lines.append("The sweep over the assumption ranges was not run: this is a verdict at one point only.")
        if v.kind == "undecided":
            why = (
                "no policy is admissible at the realistic point"
                if v.pick is None
                else f"the pick `{v.pick}` and every other admissible policy fail somewhere in the stated ranges"
            )
            lines.append(
                f"\n**Verdict: undecided** — {why}. What would decide it: a keying that sees authorship "
                "(a lineage or signature check) for the silent side, or measured collision rates that "
                "narrow the ranges."
            )
        elif v.kind == "keep":
            lines.append(f"\n**Verdict: keep `{v.policy}`**, what the product does today.")
        else:
            today = self.per_user[self.per_user.point == "realistic"]
            d = (
                _lost_difference(today, self.product, v.policy, self.rule)
                if self.product in set(today.policy)
                else None
            )
            lines.append(
                f"\n**Verdict: change** the product's keying from `{self.product}` to `{v.policy}`"
                + (f" (the realistic pick `{v.pick}` fails in the ranges)" if v.pick != v.policy else "")
                + ". The lead decides; the rule adopts a default only when it holds across the ranges."
                + (
                    f" Lost uses, {v.policy} − {self.product}: {d.fmt('.3f')} (paired over users)."
                    if d is not None
                    else ""
                )
            )
        return render(findings, stamp=rule.stamp(), intro=intro, outro="\n".join(lines))


def _grid(rule: RuleFile, full: bool, values: Mapping[str, float], ranges: bool) -> list[tuple[str, dict]]:
    points = [("realistic", dict(values))]
    if not ranges:
        return points
    for name, (low, high) in rule.param("ranges").items():
        for x in (low, high):
            if x != values[name]:
                points.append((f"{name}={x}", {**values, name: x}))
    if full:
        for sh in rule.param("factorial_p_shadow"):
            for fk in rule.param("factorial_p_fork"):
                points.append((f"p_shadow={sh}×p_fork={fk}", {**values, "p_shadow": sh, "p_fork": fk}))
    seen, out = set(), []
    for label, v in points:  # a factorial cell equal to an earlier point is run once
        key = tuple(sorted(v.items()))
        if key not in seen:
            seen.add(key)
            out.append((label, v))
    return out


def run(
    *,
    rule: RuleFile | str | None = None,
    full: bool = False,
    users: int | None = None,
    sessions: int | None = None,
    ranges: bool = True,
    policies: Sequence[str] | None = None,
    n_jobs: int = 1,
    backend: str = "loky",
    progress: bool = True,
    **assumptions: float,
) -> ShadowStudy:
    """The study under `rule` (the committed file by default): the realistic point (any assumption given by
    keyword replaces the rule's realistic value, and the finding names it), and with `ranges` each assumption at
    the ends of its range (`full`: more users and the p_shadow × p_fork factorial). The points run in this
    process unless `n_jobs` > 1 (`sweep`'s workers: worth it on an idle machine with the FULL grid)."""
    rule = rulefile.load(rule or RULE_NAME) if not isinstance(rule, RuleFile) else rule
    unknown = sorted(set(assumptions) - set(ASSUMPTIONS))
    if unknown:
        raise ShadowingError(unknown[0], f"not an assumption; assumptions are {', '.join(ASSUMPTIONS)}")
    values = {**rule.param("realistic"), **assumptions}
    Assumptions.of(values)  # refuse a bad value before any work
    users = users if users is not None else rule.param("users_full" if full else "users")
    sessions = sessions if sessions is not None else rule.param("sessions")
    policies = tuple(policies or rule.param("policies"))
    grid = [
        {
            "point": label,
            "values": v,
            "rule_path": str(rule.path),
            "users": users,
            "sessions": sessions,
            "policies": policies,
        }
        for label, v in _grid(rule, full, values, ranges)
    ]
    results = sweep(
        _point,
        grid,
        n_jobs=n_jobs,
        backend=backend if len(grid) > 1 and n_jobs > 1 else "sequential",
        progress=progress and len(grid) > 1,
        desc="shadowing",
    )
    per_user = pd.concat([r[0] for r in results], ignore_index=True)
    summary = pd.concat([r[1] for r in results], ignore_index=True)
    product = product_keying()
    verdict = _decide(summary, per_user, rule, rule.param("product_policy"))
    return ShadowStudy(rule, product, values, users, sessions, summary, per_user, verdict)


# ------------------------------------------------------------------------------ what the product does


def product_keying() -> str:
    """Which of `POLICIES` the real gates, store and resolver implement: a lesson learned on a user-root skill,
    resolved against a same-named project-root fork; and one learned on project A's skill, resolved against
    project B's same-named skill (same root label, another directory)."""
    with tempfile.TemporaryDirectory() as tmp:

        def make(root: Path, label: str, text: str):
            (root / "probe-skill").mkdir(parents=True)
            (root / "probe-skill" / "SKILL.md").write_text(
                f"---\nname: probe-skill\ndescription: a probe\n---\n# Probe\n\n## Steps\n\n{text}\n", encoding="utf-8"
            )
            return discover(
                [r for r in default_roots(root.parents[1], home=root.parents[1]) if r.label == label]
            ).skills["probe-skill"]

        t = Path(tmp)
        user = make(t / "home" / ".gaia" / "skills", "user", "Do it the user's way.")
        fork = make(t / "a" / ".gaia" / "skills", "project", "Do it the user's way.")
        other = make(t / "b" / ".gaia" / "skills", "project", "Do it another author's way.")
        with Store.open(t / "o.db") as store:
            ids = []
            for skill, body in ((user, "Learned on the user's skill."), (fork, "Learned in project A.")):
                r = gates.learn(
                    store, skill, "preference", {"body": body}, section="steps", provenance="user_instruction"
                )
                if r.delta.status != "active":
                    store.approve(r.delta.id)
                ids.append(r.delta.id)
            follows_name = ids[0] in {d.id for d in resolve(fork, store, embedder=False).applied}
            follows_label = ids[1] in {d.id for d in resolve(other, store, embedder=False).applied}
    return "name" if follows_name else "name+root" if follows_label else "name+path"
