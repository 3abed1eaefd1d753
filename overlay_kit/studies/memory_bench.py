"""The memory-architecture benchmark (notebook 10): one replayable trace through eight ways of keeping lessons.

    study = memory_bench.run()                # the smoke run of the rule file (FULL: run(full=True))
    study.table()                             # one row per architecture: every metric with its interval
    study.comparisons()                       # the overlay against each architecture, per judged metric
    study.finding()                           # Markdown, from the numbers, starting with the rule's stamp

The trace is the shared world (`world.build`): users, their agents, sessions with goals, the lesson a goal needs
and when it is taught, and `base_version`. Each agent domain's skill and its base updates come from a seeded
synthetic history with ground truth (`sim.generate_history`); each lesson of the domain is anchored on a seeded
section of version 0 and its true home is followed through the truth (a deleted section's lesson is re-homed
on a seeded surviving section, as `deploy` does for needs). Every (user, agent) pair is one memory of each
architecture (`architectures.make`), replayed session by session: base updates first (each lesson's outcome
classified against the truth, then the oracle user answers the prompts), then the context for the goal, then
what the session teaches. At the end each user forgets their first agent and the residue is scanned.

The rule (datasets/rules/10_memory_architectures.yaml) fixes the metrics, units, margins and verdicts.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import anchor as anchor_mod
from ..budget import count_many
from ..defaults import SHIPPED
from ..llm.client import Skipped
from ..metrics import Interval, binomial_upper, bootstrap_ci, ratio_ci
from ..skill import Skill, parse_skill
from . import architectures, compliance, rulefile, sim, world
from .architectures import ARCHITECTURES, Config
from .sweep import sweep

__all__ = ["GROUPS", "OUTCOMES", "RESTATE", "RULE_NAME", "MemoryBench", "Trace", "cell", "classify",
           "compliance_status", "explore", "fragments", "run", "trace", "verdict"]

RULE_NAME = "10_memory_architectures"
RESTATE = "Again: "  # how a user restates a lesson the agent did not have in front of it
OUTCOMES = ("right", "stale", "silently_wrong", "lost")
CHECK_EVERY = 10  # growth is measured every this many sessions of a user


@dataclass(frozen=True)
class Trace:
    world: world.World
    skills: Mapping[str, tuple[Skill, ...]]  # domain -> its skill, version by version
    truth: Mapping[str, tuple[Mapping[str, sim.Fate], ...]]  # domain -> truth of update v -> v+1
    homes: Mapping[str, tuple[str, ...]]  # lesson -> its true home section at each version


def _sections(skill: Skill) -> list[str]:
    return [x.slug for x in anchor_mod.parse(skill.body) if x.text.strip() and x.level > 0]


@lru_cache(maxsize=8)
def trace(seed: int, users: int, sessions: int, update_every: int, profile: str = "typical") -> Trace:
    """The world of `seed` and, per agent domain, its skill's history and each lesson's true home."""
    w = world.build(seed, users=users, sessions=sessions, update_every=update_every)
    n_versions = max(s.base_version for s in w.sessions) + 1
    skills, truth, homes = {}, {}, {}
    for k, domain in enumerate(sorted({s.agent for s in w.sessions})):
        h = sim.generate_history(profile, n_versions=n_versions, n_deltas=0, seed=seed * 1000 + k)
        versions = []
        for v in h.versions:
            skill, problems = parse_skill(v.text, None)
            if skill is None:
                raise ValueError(f"the generated skill of {domain!r} does not validate: {problems}")
            versions.append(skill)
        skills[domain], truth[domain] = tuple(versions), tuple(e.truth for e in h.truth)
        rng = random.Random(f"memory-bench:{seed}:{domain}")
        for lesson in (x for x in world.lessons() if x.domain == domain):
            path = [rng.choice(_sections(versions[0]))]
            for v in range(n_versions - 1):
                fate = truth[domain][v].get(path[-1])
                path.append(fate.target if fate and fate.target else rng.choice(_sections(versions[v + 1])))
            homes[lesson.id] = tuple(path)
    return Trace(w, skills, truth, homes)


def classify(placement: architectures.Placement | None, fate: sim.Fate | None, home: str) -> str:
    """A held lesson's outcome after one base update against the truth (see the rule file):
    lost (not held), stale (flagged for review), right (where it belongs, meaning unchanged), silently_wrong."""
    if placement is None:
        return "lost"
    if placement.flagged:
        return "stale"
    unchanged = fate is not None and fate.target is not None and not fate.changed
    if placement.section is None:
        return "right" if unchanged else "silently_wrong"
    return "right" if unchanged and placement.section == home else "silently_wrong"


def fragments(text: str, chars: int, stride: int) -> list[bytes]:
    """Every `chars`-character window of `text` at `stride` (and its end), UTF-8: what erasure scans for."""
    if len(text) <= chars:
        return [text.encode("utf-8")]
    starts = list(range(0, len(text) - chars + 1, stride)) + [len(text) - chars]
    return [text[i:i + chars].encode("utf-8") for i in sorted(set(starts))]


def _replay(arch: str, t: Trace, user: str, domain: str, sessions: Sequence[world.WorldSession], config: Config,
            workdir: Path, reteach: bool, forget: bool, frag: tuple[int, int]) -> dict[str, list[dict]]:
    by_id = {x.id: x for x in world.lessons()}
    domain_lessons = [x for x in world.lessons() if x.domain == domain]
    skills, seed = t.skills[domain], t.world.seed
    mem = architectures.make(arch, skills[0], config, workdir)
    rows: dict[str, list[dict]] = {"sessions": [], "updates": [], "erasure": [], "growth": []}
    key = {"architecture": arch, "seed": seed, "user": f"{seed}:{user}", "history": f"{seed}:{domain}"}
    version, taught = 0, []
    try:
        for s in sessions:
            while version < s.base_version:
                up = mem.update(skills[version + 1], skills[version])
                for lesson in taught:
                    fate = t.truth[domain][version].get(t.homes[lesson][version])
                    rows["updates"].append({**key, "version": version + 1, "lesson": lesson, "prompts": 0,
                                            "outcome": classify(up.placements.get(lesson), fate,
                                                                t.homes[lesson][version + 1])})
                rows["updates"].append({**key, "version": version + 1, "lesson": None, "prompts": up.prompts,
                                        "outcome": None})
                version += 1
                mem.review({lesson: t.homes[lesson][version] for lesson in taught})
            ctx = mem.context(s.goal)
            present = {x.id for x in domain_lessons if x.body in ctx.text}
            others = [x for x in taught if x != s.needs]
            rows["sessions"].append({**key, "index": s.index, "needs": s.needs, "taught": s.taught,
                                     "needed": bool(s.needs and not s.taught),
                                     "needed_in": bool(s.needs and not s.taught and s.needs in present),
                                     "could_irrelevant": bool(others),
                                     "irrelevant_in": bool(present - {s.needs}), "learned": ctx.learned,
                                     "prompts": 0})
            lesson = by_id.get(s.needs) if s.needs else None
            mem.after(ctx, lesson.body if lesson else None)
            if lesson is not None and (s.taught or (reteach and s.needs not in present)):
                text = lesson.body if s.taught else RESTATE + lesson.body
                rows["sessions"][-1]["prompts"] = mem.teach(lesson.id, text, section=t.homes[lesson.id][version],
                                                            trigger=lesson.trigger)
                if s.taught:
                    taught.append(lesson.id)
            if (s.index + 1) % CHECK_EVERY == 0 or s is sessions[-1]:
                held = mem.held()
                rows["growth"].append({**key, "index": s.index, "held": held, "taught": len(taught),
                                       "held_lessons": sum(by_id[x].body in held for x in taught),
                                       "taught_text": "\n".join(by_id[x].body for x in taught)})
        if forget:
            mem.forget()
            residue = mem.residue()
            for lesson in taught:
                left = any(f in residue for f in fragments(by_id[lesson].body, *frag))
                rows["erasure"].append({**key, "lesson": lesson, "remains": left})
    finally:
        mem.close()
    return rows


def _tokens(frame: pd.DataFrame, column: str, out: str) -> pd.DataFrame:
    texts = sorted(set(frame[column]))
    counts = dict(zip(texts, count_many(texts))) if texts else {}
    counts[""] = 0
    return frame.assign(**{out: frame[column].map(counts)}).drop(columns=[column])


def cell(seed: int, architecture: str, users: int, sessions: int, update_every: int, profile: str,
         config: Config, reteach: bool, fragment: tuple[int, int]) -> dict[str, pd.DataFrame]:
    """One architecture over the whole trace of one seed: its session, update, erasure and growth rows."""
    t = trace(seed, users, sessions, update_every, profile)
    frame = t.world.frame()
    rows: dict[str, list[dict]] = {"sessions": [], "updates": [], "erasure": [], "growth": []}
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        for user, mine in frame.groupby("user", sort=True):
            first = mine.agent.iloc[0]
            for domain in sorted(set(mine.agent)):
                part = [t.world.sessions[i] for i in mine.index[mine.agent == domain]]
                got = _replay(architecture, t, user, domain, part, config, Path(tmp) / user / domain, reteach,
                              domain == first, fragment)
                for k, v in got.items():
                    rows[k] += v
    out = {k: pd.DataFrame(v) for k, v in rows.items()}
    out["sessions"] = _tokens(out["sessions"], "learned", "learned_tokens")
    growth = _tokens(out["growth"], "held", "held_tokens")
    out["growth"] = _tokens(growth, "taught_text", "taught_tokens")
    return out


# How each architecture puts a lesson in front of the model, as notebook 17's arms render it: the overlay and
# in-place rewriting under the lesson's section, every other a list of learned lines after the skill
RENDERING = {"overlay": "section", "hermes_inplace": "section"}


def compliance_status() -> tuple[dict[str, Interval], str]:
    """The compliance arm (does the model follow a needed lesson in context): notebook 17's follow rate per
    rendering (section, tail) on its recorded real model, replayed and judged by its own code, with a label saying
    so; no rates and the reason when nothing was recorded."""
    rule = rulefile.load(compliance.RULE)
    try:
        frame, provenance = compliance.replies(rule.param("model"))
    except Skipped as exc:
        return {}, f"not run: {exc}"
    rates = compliance.judge(frame, rule).rates.set_index("arm")
    follow = {arm: Interval(rates.follow[arm], rates.low[arm], rates.high[arm]) for arm in ("section", "tail")}
    return follow, (f"estimated: needed-in-context x the follow rate notebook 17 measured for the architecture's "
                    f"rendering (section {follow['section'].fmt()}, a list after the skill {follow['tail'].fmt()}), "
                    f"replayed from its recording of {provenance['model']} made {provenance['started'][:10]}; it "
                    f"assumes following does not depend on the rest of the context, which 17 found up to 20 "
                    f"irrelevant lessons")


# ------------------------------------------------------------------------------------------------ study

SESSION_METRICS = {"needed_in": ("needed_in", "needed"), "irrelevant_in": ("irrelevant_in", "could_irrelevant"),
                   "learned_tokens": ("learned_tokens", "one")}
UPDATE_METRICS = ("silently_wrong", "lost")


def _clusters(df: pd.DataFrame, unit: str, num: str, den: str, index: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    g = df.groupby(unit)[[num, den]].sum().reindex(index, fill_value=0)
    return g[num].to_numpy(float), g[den].to_numpy(float)


def _diff(sign: float):
    def stat(na, da, nb, db, axis=-1):
        with np.errstate(invalid="ignore", divide="ignore"):
            return sign * (np.sum(na, axis=axis) / np.sum(da, axis=axis) - np.sum(nb, axis=axis) / np.sum(db, axis=axis))
    return stat


@dataclass(frozen=True)
class MemoryBench:
    rule: rulefile.RuleFile
    params: Mapping[str, Any]  # what ran: seeds, users, sessions, architectures, budget, reteach, smoke/full
    sessions: pd.DataFrame
    updates: pd.DataFrame
    erasure: pd.DataFrame
    growth: pd.DataFrame
    compliance: str
    follow: Mapping[str, Interval] = field(default_factory=dict)  # rendering -> follow rate (compliance_status)

    # -- per-architecture figures

    def _frames(self):
        s = self.sessions.assign(one=1)
        u = self.updates[self.updates.outcome.notna()]
        u = u.assign(**{o: (u.outcome == o).astype(int) for o in OUTCOMES}, n=1)
        return s, u

    def _ci(self, df: pd.DataFrame, unit: str, num: str, den: str) -> Interval:
        g = df.groupby(unit)[[num, den]].sum()
        g = g[g[den] > 0]  # a cluster with nothing to count carries no information (and would resample to NaN)
        return ratio_ci(g[num], g[den], n_resamples=self.rule.param("resamples"),
                        confidence=self.rule.param("confidence"), seed=self.rule.param("bootstrap_seed"))

    def table(self) -> pd.DataFrame:
        """One row per architecture: each metric with its 95 % interval (`_low`, `_high`), review prompts, erasure,
        growth, and the shipped default the row varies (the overlay's ceiling when a budget is set)."""
        s, u = self._frames()
        units = self.rule.param("units")
        rows = []
        for arch in self.params["architectures"]:
            row: dict[str, Any] = {"architecture": arch}
            sa, ua = s[s.architecture == arch], u[u.architecture == arch]
            for name, (num, den) in SESSION_METRICS.items():
                ci = self._ci(sa.assign(**{num: sa[num].astype(float)}), units["sessions"], num, den)
                row |= {name: ci.estimate, f"{name}_low": ci.low, f"{name}_high": ci.high}
            for o in OUTCOMES:
                ci = self._ci(ua, units["updates"], o, "n") if len(ua) else Interval(np.nan, np.nan, np.nan)
                row |= {o: ci.estimate, f"{o}_low": ci.low, f"{o}_high": ci.high}
            prompts = self.updates[(self.updates.architecture == arch) & self.updates.lesson.isna()]
            n_taught = int(sa.taught.sum())
            row["prompts_per_update"] = prompts.prompts.mean() if len(prompts) else np.nan
            row["prompts_per_lesson"] = ((prompts.prompts.sum() + sa.prompts.sum()) / n_taught if n_taught
                                         else np.nan)
            e = self.erasure[self.erasure.architecture == arch] if len(self.erasure) else self.erasure
            k, n = int(e.remains.sum()) if len(e) else 0, len(e)
            row |= {"erased": n, "residue": k, "residue_high": binomial_upper(k, n).high if n else np.nan}
            row |= self._growth(arch)
            f = self.follow.get(RENDERING.get(arch, "tail"))
            if f is not None:  # needed, in context and followed: both intervals' ends multiplied (conservative)
                row |= {"followed": row["needed_in"] * f.estimate, "followed_low": row["needed_in_low"] * f.low,
                        "followed_high": row["needed_in_high"] * f.high}
            row["varied"] = ("ceiling: shipped → authored + %d" % self.params["budget"]
                             if arch == "overlay" and self.params["budget"] else "")
            rows.append(row)
        return pd.DataFrame(rows)

    def _growth(self, arch: str) -> dict[str, Any]:
        g = self.growth[self.growth.architecture == arch]
        if g.empty:
            return {"held_share_end": np.nan, "held_tokens_end": np.nan, "growth": ""}
        end = g.sort_values("index").groupby(["user", "history"]).tail(1)
        share = end.held_lessons.sum() / max(1, end.taught.sum())
        factor = end.held_tokens.sum() / max(1, end.taught_tokens.sum())
        verdict = ("collapse" if share < self.rule.param("collapse_share") else
                   "bloat" if factor > self.rule.param("bloat_factor") else "stable")
        return {"held_share_end": share, "held_tokens_end": end.held_tokens.sum() / max(1, len(end)),
                "held_per_taught_tokens": factor, "growth": verdict}

    def curve(self) -> pd.DataFrame:
        """Mean tokens held per memory by session index, per architecture (the growth chart)."""
        return self.growth.groupby(["architecture", "index"], sort=False).held_tokens.mean().reset_index()

    # -- the decision rule

    def comparisons(self) -> pd.DataFrame:
        """The baseline against each other architecture, per judged metric: the oriented paired difference
        (positive: the baseline is better), its interval, the half-width, and the verdict."""
        base = self.rule.param("baseline")
        cols = ["architecture", "metric", "difference", "low", "high", "half_width", "clusters", "verdict"]
        if base not in self.params["architectures"]:
            return pd.DataFrame(columns=cols)
        s, u = self._frames()
        s = s.assign(needed_in=s.needed_in.astype(float), irrelevant_in=s.irrelevant_in.astype(float))
        units, margins = self.rule.param("units"), self.rule.param("margins")
        rows = []
        for metric, direction in self.rule.param("judged").items():
            if metric in SESSION_METRICS:
                df, unit, (num, den) = s, units["sessions"], SESSION_METRICS[metric]
            else:
                df, unit, num, den = u, units["updates"], metric, "n"
            index = sorted(set(df[unit]))
            sign = 1.0 if direction == "higher" else -1.0
            na, da = _clusters(df[df.architecture == base], unit, num, den, index)
            for arch in (a for a in self.params["architectures"] if a != base):
                nb, db = _clusters(df[df.architecture == arch], unit, num, den, index)
                keep = (da > 0) & (db > 0)  # clusters both sides can count
                if not keep.any():
                    rows.append({"architecture": arch, "metric": metric, "clusters": len(index),
                                 "verdict": "undecided (no data)"})
                    continue
                ci = bootstrap_ci(na[keep], da[keep], nb[keep], db[keep], statistic=_diff(sign), n_resamples=self.rule.param("resamples"),
                                  confidence=self.rule.param("confidence"), seed=self.rule.param("bootstrap_seed"))
                rows.append({"architecture": arch, "metric": metric, "difference": ci.estimate, "low": ci.low,
                             "high": ci.high, "half_width": (ci.high - ci.low) / 2, "clusters": int(keep.sum()),
                             "verdict": verdict(ci, margins[metric])})
        return pd.DataFrame(rows, columns=cols)

    def finding(self) -> str:
        t, c = self.table().set_index("architecture"), self.comparisons()
        p = self.params
        lines = [self.rule.stamp(), "",
                 f"**{'FULL grid' if p['full'] else 'Smoke run (not the verdict run: FULL=1 is)'}**: seeds "
                 f"{list(p['seeds'])}, {p['users']} users x {p['sessions']} sessions, a base update every "
                 f"{p['update_every']} sessions ({len(self.sessions) // max(1, len(p['architectures']))} sessions per "
                 f"architecture); overlay "
                 + ("at the shipped ceiling." if not p["budget"] else f"at ceiling authored + {p['budget']}."), ""]
        if "overlay" in t.index:
            o = t.loc["overlay"]
            lines.append(f"The overlay had the needed lesson in context in {_pct(o, 'needed_in')} of needing "
                         f"sessions and an irrelevant one in {_pct(o, 'irrelevant_in')}, at "
                         f"{o.learned_tokens:.0f} learned tokens a session; after base updates "
                         f"{_pct(o, 'silently_wrong')} of lesson outcomes were silently wrong and "
                         f"{_pct(o, 'lost')} lost, at {o.prompts_per_update:.2f} review prompts per update "
                         f"({o.prompts_per_lesson:.2f} per lesson taught, the consent prompt included).")
        best = t.needed_in.idxmax() if t.needed_in.notna().any() else None
        if best is not None:
            lines.append(f"Highest needed-in-context: {best} ({_pct(t.loc[best], 'needed_in')}); fewest irrelevant: "
                         f"{t.irrelevant_in.idxmin()} ({_pct(t.loc[t.irrelevant_in.idxmin()], 'irrelevant_in')}).")
        lines.append("")
        if len(c):
            lines.append("Verdicts of the rule (the overlay against each architecture; positive = overlay better):")
            lines.append("")
            for metric, g in c.groupby("metric", sort=False):
                parts = [f"{r.architecture}: {r.verdict}" + (f" ({r.difference:+.3g} [{r.low:+.3g}, {r.high:+.3g}])"
                                                             if pd.notna(r.difference) else "")
                         for r in g.itertuples()]
                lines.append(f"- **{metric}** — " + "; ".join(parts))
            und = c[c.verdict.str.startswith("undecided") & c.half_width.notna()]
            if len(und):
                margins = self.rule.param("margins")
                need = max(int(np.ceil(r.clusters * (r.half_width / margins[r.metric]) ** 2)) for r in und.itertuples())
                lines += ["", f"{len(und)} comparison(s) undecided: their intervals are wider than the margins; "
                              f"about {need} clusters (users or histories) would resolve the widest at its margin."]
        else:
            lines.append("No comparison: the baseline (overlay) was not among the architectures run.")
        erased = t[t.erased > 0]
        if len(erased):
            bad = [f"{a} ({int(r.residue)} of {int(r.erased)})" for a, r in erased.iterrows() if r.residue]
            ok = [a for a, r in erased.iterrows() if not r.residue]
            lines += ["", "Erasure (after forget, any fragment of an erased lesson left in what the memory persists): "
                      + (f"residue in {', '.join(bad)}; " if bad else "")
                      + (f"none in {', '.join(ok)} (exact upper bound {erased.loc[ok[0], 'residue_high']:.2f} each)."
                         if ok else "")]
        lines += ["", "Growth at the trace's end: " + ", ".join(f"{a} {r.growth} ({r.held_share_end:.0%} of lessons "
                                                                 f"held)" for a, r in t.iterrows() if r.growth) + ".",
                  "", f"Compliance arm: {self.compliance}."]
        return "\n".join(lines)


def _pct(row, name: str) -> str:
    if not np.isfinite(row[name]):
        return "n/a"
    return f"{row[name]:.0%} [{row[name + '_low']:.0%}, {row[name + '_high']:.0%}]"


def verdict(ci: Interval, margin: float) -> str:
    """The rule's verdict for an oriented difference (positive: the baseline is better)."""
    if ci.low > 0 and ci.estimate >= margin:
        return "overlay better"
    if ci.high < 0 and ci.estimate <= -margin:
        return "overlay worse"
    if -margin < ci.low and ci.high < margin:
        return f"no difference detected at MDE {margin:g}"
    return "undecided"


def run(*, full: bool = False, seeds: Sequence[int] | None = None, users: int | None = None,
        sessions: int | None = None, architectures: Sequence[str] | None = None, budget: int | None = None,
        reteach: bool | None = None, rule: rulefile.RuleFile | str | Path | None = None, n_jobs: int = 1,
        backend: str = "loky", progress: bool = True) -> MemoryBench:
    """The benchmark under its rule file: the smoke grid by default, `full=True` the FULL grid; any argument
    given overrides the rule's (and the table names the variation). `budget`: 0 or None runs the overlay at the
    shipped ceiling. One sweep cell per (seed, architecture), on `overlay_kit.studies.sweep` (`n_jobs`,
    `backend`, "dask" included)."""
    rule = rule if isinstance(rule, rulefile.RuleFile) else rulefile.load(rule or RULE_NAME)
    grid = dict(rule.param("full" if full else "smoke"))
    seeds = list(grid["seeds"] if seeds is None else seeds)
    users = int(grid["users"] if users is None else users)
    sessions = int(grid["sessions"] if sessions is None else sessions)
    archs = tuple(rule.param("architectures") if architectures is None else architectures)
    unknown = [a for a in archs if a not in ARCHITECTURES]
    if unknown or not archs:
        raise ValueError(f"architectures: {unknown or 'none'}; architectures are {', '.join(ARCHITECTURES)}")
    if not seeds:
        raise ValueError("seeds: at least one seed")
    budget = budget or None
    config = Config.from_rule(rule, budget)
    reteach = rule.param("reteach") if reteach is None else bool(reteach)
    common = {"users": users, "sessions": sessions, "update_every": int(rule.param("update_every")),
              "profile": rule.param("profile"), "config": config, "reteach": reteach,
              "fragment": (int(rule.param("fragment_chars")), int(rule.param("fragment_stride")))}
    cells = [{"seed": s, "architecture": a, **common} for s in seeds for a in archs]
    results = sweep(cell, cells, backend="sequential" if n_jobs == 1 else backend, n_jobs=n_jobs,
                    progress=progress, desc="memory architectures")
    frames = {k: pd.concat([r[k] for r in results], ignore_index=True) for k in results[0]}
    params = {"full": full, "seeds": tuple(seeds), "users": users, "sessions": sessions, "architectures": archs,
              "budget": budget, "reteach": reteach, "update_every": common["update_every"],
              "ceiling": SHIPPED.ceiling}
    follow, status = compliance_status()
    return MemoryBench(rule, params, frames["sessions"], frames["updates"], frames["erasure"], frames["growth"],
                       status, follow)




GROUPS: Mapping[str, tuple[str, ...]] = {
    "all eight": tuple(ARCHITECTURES),
    "overlay vs retrieval (keyword, mem0, letta)": ("overlay", "keyword_files", "mem0_flat", "letta_blocks"),
    "overlay vs always resident (full, ACE, hermes)": ("overlay", "full_context", "ace_playbook", "hermes_inplace"),
    "overlay vs rewrite (cheatsheet)": ("overlay", "rewrite_cheatsheet"),
}


def explore(architectures: str = "all eight", budget: int = 0, sessions: int = 40, users: int = 2,
            seed: int = 0) -> MemoryBench:
    """The notebook's explorer: a named group of architectures (`GROUPS`), the overlay's budget (0: shipped
    ceiling), trace length and users, one seed; no progress bar (the explorer shows its own status)."""
    if architectures not in GROUPS:
        raise ValueError(f"architectures: {architectures!r}; groups are {', '.join(GROUPS)}")
    return run(seeds=[seed], users=users, sessions=sessions, architectures=GROUPS[architectures], budget=budget,
               progress=False)
