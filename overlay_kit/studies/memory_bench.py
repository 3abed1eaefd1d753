"""The memory-architecture benchmark (notebook 10): one replayable trace through every way of keeping lessons.

    study = memory_bench.run()                # the smoke run of the rule file (FULL: run(full=True))
    study.table()                             # one row per architecture: every metric with its interval
    study.comparisons(); study.goals()        # the overlay against each architecture; issue #37's goals
    study.finding()                           # Markdown, from the numbers, starting with the rule's stamp
    record(run(full=True, n_jobs=2), wall_s=..., n_jobs=2)   # the FULL grid, with its provenance
    full, meta = recorded()                   # that recording, judged by the same code
    big = realistic(); big.comparisons()      # the realistic-scale world under its own rule (same judging code)
    big, meta = recorded(name=REALISTIC_RECORDING)   # its recorded FULL grid

The trace is the shared world (`world.build`): users, their agents, sessions with goals, the lesson a goal needs
and when it is taught, and `base_version`. Each agent domain's skill and its base updates come from a seeded
synthetic history with ground truth (`sim.generate_history`), into whose first version each lesson's referent —
the authored line it refers to — is written on a seeded section before any update is drawn; the line is followed
through every update, and a lesson turns wrong when an update edits or removes its line (`Trace.wrong`). Every
(user, agent) pair is one memory of each architecture (`make`: a stand-in or a real library's adapter), replayed
session by session: base updates first (after each, the context for the next goal is read, each taught lesson's
outcome classified flag-blind from that text, and the simulated user answers the prompts), then the context for
the goal, then what the session teaches — with no section given: an anchored arm proposes one itself. At the end
each user forgets their first agent and the residue is scanned.

`realistic()` replays a realistic-scale world (`world.build(seed, scale="realistic")`: agents holding tens to
hundreds of lessons, goals needing several) the same way, with each agent's own skill from the selection corpus as
its history's first version, under its own rule file (datasets/rules/10_memory_realistic.yaml): each lesson a goal
needs is counted (`needs_in_context`), and the share of what is in context the goal does not need
(`irrelevant_share`); `MemoryBench.pressure()` describes it per architecture.

The rules (datasets/rules/10_memory_architectures.yaml, 10_memory_realistic.yaml) fix the metrics (`METRICS`),
units, margins, goals and verdicts; one `MemoryBench` judges either.
"""

from __future__ import annotations

import random
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import anchor as anchor_mod
from .. import anchoring
from ..budget import count_many
from ..defaults import SHIPPED
from ..llm.client import Skipped
from ..metrics import Interval, binomial_upper, bootstrap_ci, ratio_ci
from ..resolve import STALE_MARK
from ..resources import dataset_path
from ..skill import Skill, parse_skill
from . import architectures, compliance, rulefile, sim, world
from .architectures import ARCHITECTURES, Config
from .finding import Finding, render

try:  # the real libraries' adapters (each library imported only when its arm is made)
    from . import peers as peers_mod
except ImportError:  # pragma: no cover - a checkout without the adapters module
    peers_mod = None
from .sweep import sweep

__all__ = [
    "GROUPS",
    "OUTCOMES",
    "METRICS",
    "REALISTIC_RECORDING",
    "REALISTIC_RULE",
    "RESTATE",
    "RULE_NAME",
    "STALE_TOUCH_RULE",
    "STALE_TOUCH_WORLDS",
    "MemoryBench",
    "Trace",
    "available",
    "cell",
    "classify",
    "compliance_status",
    "explore",
    "fragments",
    "make",
    "realistic",
    "record",
    "recorded",
    "recording_note",
    "referent",
    "run",
    "shown",
    "stale_touch_decision",
    "stale_touch_recorded",
    "stale_touch_run",
    "trace",
    "verdict",
]

RULE_NAME = "10_memory_architectures"
RESTATE = "Again: "  # how a user restates a lesson the agent did not have in front of it
OUTCOMES = ("right", "wrong_in_context", "wrong_kept_out", "lost", "dropped")
CHECK_EVERY = 10  # growth is measured every this many sessions of a user


@dataclass(frozen=True)
class Trace:
    world: world.World
    skills: Mapping[str, tuple[Skill, ...]]  # domain -> its skill, version by version
    truth: Mapping[str, tuple[Mapping[str, sim.Fate], ...]]  # domain -> truth of update v -> v+1
    homes: Mapping[str, tuple[str, ...]]  # lesson -> its home section at each version
    referents: Mapping[str, tuple[str | None, ...]]  # lesson -> the authored line it refers to, per version
    invalid: Mapping[str, frozenset[int]]  # lesson -> the updates (v: version v -> v+1) that made it wrong

    def wrong(self, lesson: str, version: int, taught_at: int) -> bool:
        """Whether `lesson`, last taught (or restated) by its user at version `taught_at`, is wrong at `version`:
        an update since then edited or removed the authored line it refers to."""
        return any(taught_at <= u < version for u in self.invalid[lesson])


def _sections(skill: Skill) -> list[str]:
    return [x.slug for x in anchor_mod.parse(skill.body) if x.text.strip() and x.level > 0]


def referent(lesson: world.WorldLesson) -> str:
    """The authored line of the skill a lesson refers to: the situation it is about, as a list item (a lesson
    refines what the skill already says about that situation)."""
    return f"- {lesson.trigger.strip()}"


def _norm(line: str) -> str:
    return " ".join(line.split())


def _with_referents(
    text: str, lines: Mapping[str, str], seed_key: str, homes: Mapping[str, str] | None = None
) -> tuple[str, dict[str, str]]:
    """`text` (a SKILL.md) with each lesson's referent line appended to a headed section — `homes` (lesson ->
    slug) where given, else a seeded one; the sections."""
    front, body = sim._split(text)
    if homes is None:
        rng = random.Random(seed_key)
        slugs = [x.slug for x in anchor_mod.parse(body) if x.text.strip() and x.level > 0]
        homes = {lesson: rng.choice(slugs) for lesson in lines}
    homes = dict(homes)
    for lesson, line in lines.items():
        sec = next(x for x in anchor_mod.parse(body) if x.slug == homes[lesson])
        rows = body.split("\n")
        at = sec.end_line
        while at > sec.start_line and not rows[at - 1].strip():
            at -= 1
        body = "\n".join(rows[:at] + ["", line] + rows[at:])
    return front + body, homes


def _follow(ref: str, fate: sim.Fate | None, new: Skill) -> tuple[str | None, str | None, bool]:
    """A referent line through one update: (the line now or None when it went, its section now or None, whether
    the update made the lesson wrong). Unchanged when the line is still there verbatim (whitespace aside); edited
    when the section's meaning changed and the line's closest match there is another text (difflib ratio >= 0.5),
    then that text is the referent; removed otherwise."""
    if fate is None or fate.target is None:
        return None, None, True
    sections = {x.slug: x for x in anchor_mod.parse(new.body)}
    candidates = [
        (slug, _norm(line))
        for slug in fate.homes
        if slug in sections
        for line in sections[slug].text.splitlines()
        if line.strip()
    ]
    for slug, line in candidates:
        if line == _norm(ref):
            return ref, slug, False
    best = max(candidates, key=lambda c: SequenceMatcher(None, c[1], _norm(ref)).ratio(), default=None)
    if best is not None and SequenceMatcher(None, best[1], _norm(ref)).ratio() >= 0.5:
        return best[1], best[0], bool(fate.changed)
    return None, fate.target, True


@lru_cache(maxsize=8)
def trace(
    seed: int, users: int, sessions: int, update_every: int, profile: str = "typical", scale: str = "tau"
) -> Trace:
    """The world of `seed` at `scale` and, per agent domain, its skill's history (each lesson's referent line
    written into a section of the first version, then edited by the history like any other line), each lesson's
    home section and the updates that made it wrong.

    τ: the skill is the history's synthetic one, every lesson of the domain's line on a seeded section.
    Realistic: the agent's own skill from the selection corpus (`world.selection_corpus("dev").skills`) is the
    first version, and each lesson the world teaches has its line on the section the corpus anchors it to; the
    history's edits are drawn on it the same way."""
    kw = {} if scale == "tau" else {"scale": scale}
    w = world.build(seed, users=users, sessions=sessions, update_every=update_every, **kw)
    n_versions = max(s.base_version for s in w.sessions) + 1
    skills, truth, homes, refs, invalid = {}, {}, {}, {}, {}
    taught = {s.needs for s in w.sessions if s.taught}
    corpus = None if scale == "tau" else world.selection_corpus("dev")
    for k, domain in enumerate(sorted({s.agent for s in w.sessions})):
        mine = [x for x in w.lessons() if x.domain == domain and (corpus is None or x.id in taught)]
        first: dict[str, str] = {}

        def start(text, mine=mine, first=first, domain=domain):
            at = None
            if corpus is not None:  # the agent's real skill, each line on its lesson's own section
                text = corpus.skills[domain].read_text(encoding="utf-8")
                at = {x.id: x.section for x in mine}
            lines = {x.id: referent(x) for x in mine}
            out, placed = _with_referents(text, lines, f"memory-bench:{seed}:{domain}", at)
            first.update(placed)
            return out

        h = sim.generate_history(profile, n_versions=n_versions, n_deltas=0, seed=seed * 1000 + k, start=start)
        versions = []
        for v in h.versions:
            skill, problems = parse_skill(v.text, None)
            if skill is None:
                raise ValueError(f"the generated skill of {domain!r} does not validate: {problems}")
            versions.append(skill)
        skills[domain], truth[domain] = tuple(versions), tuple(e.truth for e in h.truth)
        rng = random.Random(f"memory-bench:{seed}:{domain}:rehome")
        for lesson in mine:
            path, ref, bad = [first[lesson.id]], [referent(lesson)], set()
            for v in range(n_versions - 1):
                fate = truth[domain][v].get(path[-1])
                if ref[-1] is None:  # nothing left to refer to: it follows its section, and is never made wrong
                    line, home, made_wrong = None, fate.target if fate and fate.target else None, False
                else:
                    line, home, made_wrong = _follow(ref[-1], fate, versions[v + 1])
                if made_wrong:
                    bad.add(v)
                path.append(home or rng.choice(_sections(versions[v + 1])))
                ref.append(line)
            homes[lesson.id], refs[lesson.id], invalid[lesson.id] = tuple(path), tuple(ref), frozenset(bad)
    return Trace(w, skills, truth, homes, refs, invalid)


_ESCAPE = re.compile(r"\\(.)")


def unescaped(text: str) -> str:
    """`text` with backslash escapes undone (a Markdown `\\*`, a JSON-escaped `\\"`), so a lesson an arm renders
    escaped is still found by its words: every arm is scored on the same unescaped reading."""
    return _ESCAPE.sub(r"\1", text)


def shown(text: str, body: str) -> str:
    """How `body` reaches the model in the context `text`: "shown" (somewhere without the stale marker before it
    on its line), "marked" (only behind `resolve.STALE_MARK`), or "out"."""
    mark, at, seen = STALE_MARK.strip(), text.find(body), "out"
    while at >= 0:
        line = text[text.rfind("\n", 0, at) + 1 : at]
        if mark not in line:
            return "shown"
        seen, at = "marked", text.find(body, at + 1)
    return seen


def classify(held: bool, wrong: bool, where: str) -> str:
    """A taught lesson's outcome after one base update, from what the arm puts in front of the model (flag-blind,
    see the rule file): wrong_in_context (wrong, and shown unmarked), wrong_kept_out (wrong, held but withheld or
    marked), right (right, held), lost (right, no longer held), dropped (wrong, no longer held)."""
    if not held:
        return "dropped" if wrong else "lost"
    if wrong:
        return "wrong_in_context" if where == "shown" else "wrong_kept_out"
    return "right"


def fragments(text: str, chars: int, stride: int) -> list[bytes]:
    """Every `chars`-character window of `text` at `stride` (and its end), UTF-8: what erasure scans for."""
    if len(text) <= chars:
        return [text.encode("utf-8")]
    starts = list(range(0, len(text) - chars + 1, stride)) + [len(text) - chars]
    return [text[i : i + chars].encode("utf-8") for i in sorted(set(starts))]


def available(names: Sequence[str] | str | None = None) -> tuple[tuple[str, ...], dict[str, str]]:
    """The real libraries' arms (`overlay_kit.studies.peers.PEERS`) that can run here, and the reason for each
    one that cannot. `names` None or "all": every peer."""
    if peers_mod is None:
        return (), {"peers": "no adapters module (overlay_kit.studies.peers)"}
    names = list(peers_mod.PEERS) if names is None or names == "all" else list(names)
    why = {n: (peers_mod.available(n) if n in peers_mod.PEERS else "not among the peers' adapters") for n in names}
    return tuple(n for n in names if why[n] is None), {n: r for n, r in why.items() if r is not None}


def make(name: str, skill: Skill, config: Config, workdir: Path) -> architectures.MemoryArchitecture:
    """A fresh memory of `name`: a stand-in (`architectures.make`) or a real library's adapter (`available`)."""
    if name in ARCHITECTURES or peers_mod is None or name not in peers_mod.PEERS:
        return architectures.make(name, skill, config, workdir)
    Path(workdir).mkdir(parents=True, exist_ok=True)
    return peers_mod.PEERS[name](skill, config, Path(workdir))


def _pick(alternatives: Sequence[str], home: str, proposed: str) -> str:
    """The simulated user's answer to "which section?": the lesson's section when it is among those shown,
    else the proposal stands."""
    return home if home in alternatives else proposed


def _replay(
    arch: str,
    t: Trace,
    user: str,
    domain: str,
    sessions: Sequence[world.WorldSession],
    config: Config,
    workdir: Path,
    reteach: bool,
    forget: bool,
    frag: tuple[int, int],
) -> dict[str, list[dict]]:
    by_id = {x.id: x for x in t.world.lessons()}
    domain_lessons = [x for x in by_id.values() if x.domain == domain]
    skills, seed = t.skills[domain], t.world.seed
    mem = make(arch, skills[0], config, workdir)
    rows: dict[str, list[dict]] = {k: [] for k in ("sessions", "updates", "erasure", "growth", "anchoring")}
    key = {"architecture": arch, "seed": seed, "user": f"{seed}:{user}", "history": f"{seed}:{domain}"}
    version, taught, taught_at = 0, [], {}
    now = {"version": 0}
    mem.ask = lambda p: _pick([x for x, _ in p.alternatives], t.homes[asking[0]][now["version"]], p.section)
    asking = [""]
    try:
        for s in sessions:
            while version < s.base_version:  # each update, then the context the next session's goal gets
                up = mem.update(skills[version + 1], skills[version])
                version = now["version"] = version + 1
                ctx, held = unescaped(mem.context(s.goal).text), unescaped(mem.held())
                wrong = frozenset(x for x in taught if t.wrong(x, version, taught_at[x]))
                for lesson in taught:
                    body, place = by_id[lesson].body, up.placements.get(lesson)
                    where = shown(ctx, body)
                    rows["updates"].append(
                        {
                            **key,
                            "version": version,
                            "lesson": lesson,
                            "prompts": 0,
                            "held": body in held,
                            "wrong": lesson in wrong,
                            "where": where,
                            "flagged": bool(place and place.flagged),
                            "misplaced": bool(place and place.section and place.section != t.homes[lesson][version]),
                            "outcome": classify(body in held, lesson in wrong, where),
                        }
                    )
                rows["updates"].append(
                    {**key, "version": version, "lesson": None, "prompts": up.prompts, "outcome": None}
                )
                mem.review({x: t.homes[x][version] for x in taught}, wrong)
            ctx = mem.context(s.goal)
            reads = unescaped(ctx.text)
            present = {x.id for x in domain_lessons if x.body in reads}
            others = [x for x in taught if x != s.needs]
            needs = () if s.taught else s.need_ids  # each lesson the goal needs that was taught before it
            holds = unescaped(mem.held()) if needs else ""
            rows["sessions"].append(
                {
                    **key,
                    "index": s.index,
                    "needs": s.needs,
                    "taught": s.taught,
                    "needed": bool(s.needs and not s.taught),
                    "needed_in": bool(s.needs and not s.taught and s.needs in present),
                    "could_irrelevant": bool(others),
                    "irrelevant_in": bool(present - {s.needs}),
                    "learned": ctx.learned,
                    "prompts": 0,
                    # every needed lesson counted (a goal may need several), and what is in context
                    "n_needed": len(needs),
                    "n_needed_in": sum(x in present for x in needs),
                    "n_present": len(present),
                    "n_irrelevant": len(present - set(s.need_ids)),
                    "need_list": list(needs),
                    "found_list": [x in present for x in needs],
                    "held_list": [by_id[x].body in holds for x in needs],  # a need out of context: held or gone?
                }
            )
            if not s.need_ids:
                mem.after(ctx, None)
            for need in s.need_ids:
                mem.after(ctx, by_id[need].body)
            for lesson in (by_id[x] for x in s.need_ids):
                if not (s.taught or (reteach and lesson.id not in present)):
                    continue
                text = lesson.body if s.taught else RESTATE + lesson.body
                asking[0] = lesson.id
                rows["sessions"][-1]["prompts"] += mem.teach(lesson.id, text, trigger=lesson.trigger, goal=s.goal)
                taught_at[lesson.id] = version
                if s.taught:
                    taught.append(lesson.id)
                if arch == "overlay":  # the product's proposal, scored once per teaching (every arm sees the same)
                    p = anchoring.propose(skills[version].body, text, goal=s.goal)
                    alts, home = [x for x, _ in p.alternatives], t.homes[lesson.id][version]
                    rows["anchoring"].append(
                        {
                            **key,
                            "lesson": lesson.id,
                            "version": version,
                            "top1": p.section == home,
                            "top3": home in alts,
                            "confident": p.confident,
                        }
                    )
            if (s.index + 1) % CHECK_EVERY == 0 or s is sessions[-1]:
                held = unescaped(mem.held())
                rows["growth"].append(
                    {
                        **key,
                        "index": s.index,
                        "held": held,
                        "taught": len(taught),
                        "held_lessons": sum(by_id[x].body in held for x in taught),
                        "taught_text": "\n".join(by_id[x].body for x in taught),
                    }
                )
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


def cell(
    seed: int,
    architecture: str,
    users: int,
    sessions: int,
    update_every: int,
    profile: str,
    config: Config,
    reteach: bool,
    fragment: tuple[int, int],
    scale: str = "tau",
) -> dict[str, pd.DataFrame]:
    """One architecture over the whole trace of one seed: its session, update, erasure and growth rows."""
    t = trace(seed, users, sessions, update_every, profile, scale)
    frame = t.world.frame()
    rows: dict[str, list[dict]] = {k: [] for k in ("sessions", "updates", "erasure", "growth", "anchoring")}
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        for user, mine in frame.groupby("user", sort=True):
            first = mine.agent.iloc[0]
            for domain in sorted(set(mine.agent)):
                part = [t.world.sessions[i] for i in mine.index[mine.agent == domain]]
                got = _replay(
                    architecture,
                    t,
                    user,
                    domain,
                    part,
                    config,
                    Path(tmp) / user / domain,
                    reteach,
                    domain == first,
                    fragment,
                )
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
    return follow, (
        f"estimated: needed-in-context x the follow rate notebook 17 measured for the architecture's "
        f"rendering (section {follow['section'].fmt()}, a list after the skill {follow['tail'].fmt()}), "
        f"replayed from its recording of {provenance['model']} made {provenance['started'][:10]}; it "
        f"assumes following does not depend on the rest of the context, which 17 found up to 20 "
        f"irrelevant lessons"
    )


# ------------------------------------------------------------------------------------------------ study

SESSION_METRICS = {
    "needed_in": ("needed_in", "needed"),
    "irrelevant_in": ("irrelevant_in", "could_irrelevant"),
    "learned_tokens": ("learned_tokens", "one"),
}
# update metrics: numerator and denominator columns of the update frame (`MemoryBench._frames`)
UPDATE_METRICS = {
    "wrong_in_context": ("wrong_in_context", "n"),
    "lost": ("lost", "n"),
    "prompts_per_update": ("prompts", "n"),
}
# Every metric a rule can judge or set a goal on: (the frame it is counted in, numerator, denominator). The frames:
# "sessions" (one row a goal), "needs" (one row a (goal, lesson it needs) pair: `MemoryBench._needs`), "updates"
# (one row a (taught lesson, base update)) and "prompts" (one row a base update of a memory). A rule's `units`
# names the cluster of each frame; "prompts" falls back to the unit of "updates", "needs" to that of "sessions".
METRICS: Mapping[str, tuple[str, str, str]] = {
    **{m: ("sessions", num, den) for m, (num, den) in SESSION_METRICS.items()},
    "needs_in_context": ("needs", "found", "one"),
    "irrelevant_share": ("sessions", "n_irrelevant", "n_present"),
    "wrong_in_context": ("updates", "wrong_in_context", "n"),
    "lost": ("updates", "lost", "n"),
    "prompts_per_update": ("prompts", "prompts", "n"),
}
_FALLBACK_UNIT = {"prompts": "updates", "needs": "sessions"}


def _clusters(df: pd.DataFrame, unit: str, num: str, den: str, index: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    g = df.groupby(unit)[[num, den]].sum().reindex(index, fill_value=0)
    return g[num].to_numpy(float), g[den].to_numpy(float)


def _diff(sign: float):
    def stat(na, da, nb, db, axis=-1):
        with np.errstate(invalid="ignore", divide="ignore"):
            return sign * (
                np.sum(na, axis=axis) / np.sum(da, axis=axis) - np.sum(nb, axis=axis) / np.sum(db, axis=axis)
            )

    return stat


NAN = Interval(np.nan, np.nan, np.nan)
UPDATE_FLAGS = ("held", "wrong", "flagged", "misplaced")  # columns of a lesson's update row


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
    anchoring: pd.DataFrame = field(default_factory=pd.DataFrame)  # the product's proposal at each teaching
    skipped: Mapping[str, str] = field(default_factory=dict)  # architecture -> why it did not run

    # -- per-architecture figures

    def _frames(self):
        s = self.sessions.assign(one=1)
        u = self.updates.reindex(
            columns=[*self.updates.columns.drop(list(UPDATE_FLAGS), errors="ignore"), *UPDATE_FLAGS]
        )
        u = u[u.outcome.notna()]
        u = u.assign(
            **{o: (u.outcome == o).astype(int) for o in OUTCOMES},
            n=1,
            flag=u.flagged.astype(bool).astype(int),
            false_alarm=(u.flagged.astype(bool) & ~u.wrong.astype(bool)).astype(int),
            caught=(u.flagged.astype(bool) & u.wrong.astype(bool)).astype(int),
            wrong_held=(u.wrong.astype(bool) & u.held.astype(bool)).astype(int),
            misplace=u.misplaced.astype(bool).astype(int),
        )
        u = u.assign(lesson=u.history + ":" + u.lesson.astype(str))  # a lesson of one history: the "lesson" unit
        # what a perfect flag would raise: a lesson the update made wrong while the memory held it (wrong now,
        # right at the memory's previous update or first seen now)
        u = u.sort_values(["architecture", "user", "lesson", "version"], kind="stable")
        before = u.wrong.astype(bool).groupby([u.architecture, u.user, u.lesson]).shift(fill_value=False)
        u = u.assign(newly_wrong=(u.wrong_held.astype(bool) & ~before).astype(int)).sort_index()
        newly = u.groupby(["architecture", "user", "version"]).newly_wrong.sum().rename("perfect_prompts")
        p = self.updates[self.updates.outcome.isna()].assign(n=1)
        p = p.join(newly, on=["architecture", "user", "version"]).fillna({"perfect_prompts": 0})
        return s, u, p

    def _needs(self) -> pd.DataFrame:
        """One row per (goal, lesson it needs) after that lesson's teaching session: `found` (in the goal's
        context), `held` (the memory still held it, in context or not), `lesson` keyed by its history."""
        cols = ["architecture", "seed", "user", "history", "need_list", "found_list", "held_list"]
        if "need_list" not in self.sessions:  # a recording made before needs were counted
            return pd.DataFrame(columns=[*cols[:4], "lesson", "found", "held", "one"])
        need = self.sessions[cols].explode(["need_list", "found_list", "held_list"]).dropna(subset=["need_list"])
        need = need.assign(
            lesson=need.history + ":" + need.need_list.astype(str),
            found=need.found_list.astype(bool).astype(int),
            held=need.held_list.astype(bool).astype(int),
            one=1,
        )
        return need.drop(columns=["need_list", "found_list", "held_list"])

    def _unit(self, frame: str) -> str:
        """The rule's cluster for a frame of `METRICS` ("prompts" falls back to "updates", "needs" to "sessions")."""
        units = self.rule.param("units")
        return units[frame] if frame in units else units[_FALLBACK_UNIT[frame]]

    def _metric(self, metric: str, frames: Mapping[str, pd.DataFrame]) -> tuple[pd.DataFrame, str, str, str]:
        """A metric's frame (booleans as numbers), its unit, numerator and denominator columns."""
        frame, num, den = METRICS[metric]
        df = frames[frame]
        if df[num].dtype == bool or df[num].dtype == object:
            df = df.assign(**{num: df[num].astype(float)})
        return df, self._unit(frame), num, den

    def _all_frames(self) -> dict[str, pd.DataFrame]:
        s, u, p = self._frames()
        return {"sessions": s, "needs": self._needs(), "updates": u, "prompts": p}

    def _ci(self, df: pd.DataFrame, unit: str, num: str, den: str) -> Interval:
        if df.empty:
            return NAN
        g = df.groupby(unit)[[num, den]].sum()
        g = g[g[den] > 0]  # a cluster with nothing to count carries no information (and would resample to NaN)
        if g.empty:
            return NAN
        return ratio_ci(
            g[num],
            g[den],
            n_resamples=self.rule.param("resamples"),
            confidence=self.rule.param("confidence"),
            seed=self.rule.param("bootstrap_seed"),
        )

    def table(self) -> pd.DataFrame:
        """One row per architecture: each metric with its 95 % interval (`_low`, `_high`): the session metrics,
        every update outcome (flag-blind), review prompts per base update and those a perfect flag would raise
        (`perfect_prompts`: the held lessons each update made wrong), the flags (share of outcomes flagged,
        the share of flags that were false alarms, the share of wrong lessons flagged), teach prompts per lesson
        taught, erasure, growth, and the shipped default the row varies."""
        frames = self._all_frames()
        s, u, p = frames["sessions"], frames["updates"], frames["prompts"]
        units = {k: self._unit(k) for k in ("sessions", "updates", "prompts")}
        # the metrics a rule judges or sets a goal on beyond those every table has (the realistic rule's)
        extra = [
            m
            for m in (*self.rule.param("judged"), *self.rule.param("goals"))
            if m in METRICS and m not in SESSION_METRICS and m not in UPDATE_METRICS
        ]
        rows = []
        for arch in self.params["architectures"]:
            row: dict[str, Any] = {"architecture": arch}
            sa, ua, pa = s[s.architecture == arch], u[u.architecture == arch], p[p.architecture == arch]
            for name, (num, den) in SESSION_METRICS.items():
                ci = self._ci(sa.assign(**{num: sa[num].astype(float)}), units["sessions"], num, den)
                row |= {name: ci.estimate, f"{name}_low": ci.low, f"{name}_high": ci.high}
            for name in dict.fromkeys(extra):
                df, unit, num, den = self._metric(name, frames)
                ci = self._ci(df[df.architecture == arch], unit, num, den)
                row |= {name: ci.estimate, f"{name}_low": ci.low, f"{name}_high": ci.high}
            for name, df, num, den in [
                *((o, ua, o, "n") for o in OUTCOMES),
                ("prompts_per_update", pa, "prompts", "n"),
                ("perfect_prompts", pa, "perfect_prompts", "n"),
                ("flagged", ua, "flag", "n"),
                ("false_alarms", ua, "false_alarm", "flag"),
                ("flag_recall", ua, "caught", "wrong_held"),
                ("misplaced", ua, "misplace", "n"),
            ]:
                ci = self._ci(df, units["prompts" if df is pa else "updates"], num, den)
                row |= {name: ci.estimate, f"{name}_low": ci.low, f"{name}_high": ci.high}
            n_taught = int(sa.taught.sum())
            row["teach_prompts_per_lesson"] = sa.prompts.sum() / n_taught if n_taught else np.nan
            e = self.erasure[self.erasure.architecture == arch] if len(self.erasure) else self.erasure
            k, n = int(e.remains.sum()) if len(e) else 0, len(e)
            row |= {"erased": n, "residue": k, "residue_high": binomial_upper(k, n).high if n else np.nan}
            row |= self._growth(arch)
            f = self.follow.get(RENDERING.get(arch, "tail"))
            if f is not None:  # needed, in context and followed: both intervals' ends multiplied (conservative)
                row |= {
                    "followed": row["needed_in"] * f.estimate,
                    "followed_low": row["needed_in_low"] * f.low,
                    "followed_high": row["needed_in_high"] * f.high,
                }
            row["varied"] = (
                "ceiling: shipped → authored + %d" % self.params["budget"]
                if arch.startswith("overlay") and self.params["budget"]
                else "stale_touch: False → True"
                if arch == "overlay_touch"
                else ""
            )
            rows.append(row)
        return pd.DataFrame(rows)

    def anchoring_accuracy(self) -> pd.DataFrame:
        """The product's own section proposal (`anchoring.propose`) at every teaching of the trace, against the
        section the lesson refers to: top-1, top-3 and the share it was confident enough not to ask, with
        intervals resampling histories."""
        a = self.anchoring
        if a.empty:
            return pd.DataFrame(columns=["measure", "estimate", "low", "high", "n"])
        a = a.assign(n=1, top1=a.top1.astype(int), top3=a.top3.astype(int), confident=a.confident.astype(int))
        a = a.assign(lesson=a.history + ":" + a.lesson.astype(str))
        rows = []
        for m in ("top1", "top3", "confident"):
            ci = self._ci(a, self._unit("updates"), m, "n")
            rows.append({"measure": m, "estimate": ci.estimate, "low": ci.low, "high": ci.high, "n": len(a)})
        return pd.DataFrame(rows)

    def _growth(self, arch: str) -> dict[str, Any]:
        g = self.growth[self.growth.architecture == arch]
        if g.empty:
            return {"held_share_end": np.nan, "held_tokens_end": np.nan, "growth": ""}
        end = g.sort_values("index", kind="stable").groupby(["user", "history"]).tail(1)
        share = end.held_lessons.sum() / max(1, end.taught.sum())
        factor = end.held_tokens.sum() / max(1, end.taught_tokens.sum())
        verdict = (
            "collapse"
            if share < self.rule.param("collapse_share")
            else "bloat"
            if factor > self.rule.param("bloat_factor")
            else "stable"
        )
        return {
            "held_share_end": share,
            "held_tokens_end": end.held_tokens.sum() / max(1, len(end)),
            "held_per_taught_tokens": factor,
            "growth": verdict,
        }

    def pressure(self) -> pd.DataFrame:
        """Per architecture, what reaches the model for each goal, the figures a budget that binds moves (the
        realistic rule, datasets/rules/10_memory_realistic.yaml, judges them with the same units through
        `comparisons()` and `goals()`; `needed_in` here is its `needs_in_context`): `needed_in`, each lesson a
        goal needs that was taught before it, in context (resampling lessons), and `needed_held`, those the
        memory still held, in context or not (a need held but out of context is a selection miss; one not held
        was evicted, dropped or never kept); `irrelevant_share`, the share of the lessons in context that the goal
        does not need, and `learned_tokens` per goal (resampling users); `wrong_in_context` after base updates
        (resampling lessons: a lesson's line is edited once for every user of its agent) and the review prompts
        each base update raises (`prompts_per_update`, resampling users); `in_context`, lessons in context per
        goal; growth at the trace's end.
        Each with its interval (`_low`, `_high`) and its clusters (`n_`)."""
        need = self._needs()
        s, u, prompts = self._frames()
        rows = []
        for arch in self.params["architectures"]:
            sa, na, ua = s[s.architecture == arch], need[need.architecture == arch], u[u.architecture == arch]
            pa = prompts[prompts.architecture == arch]
            row: dict[str, Any] = {"architecture": arch, "goals": len(sa), "needs": len(na)}
            for name, df, unit, num, den in [
                ("needed_in", na, "lesson", "found", "one"),
                ("needed_held", na, "lesson", "held", "one"),
                ("irrelevant_share", sa, "user", "n_irrelevant", "n_present"),
                ("learned_tokens", sa, "user", "learned_tokens", "one"),
                ("in_context", sa, "user", "n_present", "one"),
                ("wrong_in_context", ua, "lesson", "wrong_in_context", "n"),
                ("prompts_per_update", pa, "user", "prompts", "n"),
            ]:
                ci = self._ci(df, unit, num, den)
                row |= {name: ci.estimate, f"{name}_low": ci.low, f"{name}_high": ci.high}
                row[f"n_{name}"] = int(df.loc[df[den] > 0, unit].nunique()) if len(df) else 0
            row |= self._growth(arch)
            rows.append(row)
        return pd.DataFrame(rows)

    def _realistic_world(self, title: str) -> str:
        """`title`: what ran on the realistic-scale world (seeds, users, sessions, the lessons the agents held)."""
        p = self.params
        g = self.growth.sort_values("index", kind="stable").groupby(["architecture", "user", "history"]).tail(1)
        held = g[g.architecture == p["architectures"][0]].taught
        return (
            f"{title}: seeds {list(p['seeds'])}, {p['users']} users of up to {p['sessions']} sessions "
            f"({len(self.sessions) // max(1, len(p['architectures'])):,} sessions per architecture), agents holding "
            f"{held.min()}–{held.max()} lessons at their last session, a base update every {p['update_every']} "
            f"sessions; each architecture at its authors' default budget, the overlay at the shipped ceiling "
            f"({p['ceiling']:,} tokens) with the goal selecting the best {SHIPPED.select_k} once more than "
            f"{SHIPPED.resident_max} lessons are resident."
        )

    def pressure_finding(self) -> str:
        """Markdown, from `pressure()`: what ran (the world's size, the lessons its agents held), and per
        architecture the figures with their intervals and clusters; no verdict (`finding()` gives the rule's)."""
        p, t = self.params, self.pressure()
        run = "FULL run" if p["full"] else "Default run"
        lines = [
            self._realistic_world(
                f"**{run} on a realistic-scale world** (per architecture; the rule's verdicts are `finding()`'s)"
            )
        ]
        if self.skipped:
            lines.append("Not run (stand-ins only): " + "; ".join(f"{k} ({v})" for k, v in self.skipped.items()) + ".")
        for r in t.itertuples():
            lines.append(
                f"- **{r.architecture}**: needed lesson in context {_num(t.loc[r.Index], 'needed_in', 3)} of "
                f"{r.needs} needs ({r.n_needed_in} lessons; still held: {r.needed_held:.3f}); irrelevant share of "
                f"what is in context "
                f"{_num(t.loc[r.Index], 'irrelevant_share', 3)}; {r.learned_tokens:.0f} [{r.learned_tokens_low:.0f}, "
                f"{r.learned_tokens_high:.0f}] learned tokens per goal ({r.in_context:.1f} lessons in context); "
                f"wrong lesson shown after base updates {_num(t.loc[r.Index], 'wrong_in_context', 3)} "
                f"({r.n_wrong_in_context} lessons), at {_num(t.loc[r.Index], 'prompts_per_update')} review prompts "
                f"per base update; growth {r.growth} ({r.held_share_end:.0%} of taught lessons "
                f"held at the end)."
            )
        lines.append(
            f"Intervals: {int(self.rule.param('confidence') * 100)} % cluster bootstrap over lessons (needed, wrong) "
            f"or users (irrelevant share, tokens, prompts); with {p['users']} users the user-level intervals are rough."
        )
        return "\n".join(lines)

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
        frames, margins = self._all_frames(), self.rule.param("margins")
        rows = []
        for metric, direction in self.rule.param("judged").items():
            df, unit, num, den = self._metric(metric, frames)  # the metric's frame and the rule's unit for it
            index = sorted(set(df[unit]))
            sign = 1.0 if direction == "higher" else -1.0
            na, da = _clusters(df[df.architecture == base], unit, num, den, index)
            for arch in (a for a in self.params["architectures"] if a != base):
                nb, db = _clusters(df[df.architecture == arch], unit, num, den, index)
                keep = (da > 0) & (db > 0)  # clusters both sides can count
                if not keep.any():
                    rows.append(
                        {
                            "architecture": arch,
                            "metric": metric,
                            "clusters": len(index),
                            "verdict": "undecided (no data)",
                        }
                    )
                    continue
                ci = bootstrap_ci(
                    na[keep],
                    da[keep],
                    nb[keep],
                    db[keep],
                    statistic=_diff(sign),
                    n_resamples=self.rule.param("resamples"),
                    confidence=self.rule.param("confidence"),
                    seed=self.rule.param("bootstrap_seed"),
                )
                rows.append(
                    {
                        "architecture": arch,
                        "metric": metric,
                        "difference": ci.estimate,
                        "low": ci.low,
                        "high": ci.high,
                        "half_width": (ci.high - ci.low) / 2,
                        "clusters": int(keep.sum()),
                        "verdict": verdict(ci, margins[metric]),
                    }
                )
        return pd.DataFrame(rows, columns=cols)

    def _side(self, goal: str) -> str:
        """Which way a goal's bound holds: "≥" for anchoring and for a metric the rule judges higher-better."""
        higher = goal.startswith("anchoring") or self.rule.param("judged").get(goal) == "higher"
        return "≥" if higher else "≤"

    def goals(self, table: pd.DataFrame | None = None) -> pd.DataFrame:
        """The issues' goals for the overlay (the rule's `goals`), each met or missed by the interval's far end
        (`side`: which way the bound holds); `missed_by`: how far that end lies beyond the bound (NaN when met).
        `table`: this study's `table()`, when the caller already has it."""
        t = (self.table() if table is None else table).set_index("architecture")
        base = self.rule.param("baseline")
        rows = []
        cols = ["goal", "side", "bound", "estimate", "low", "high", "met", "missed_by"]
        if base not in t.index:
            return pd.DataFrame(columns=cols)
        o = t.loc[base]
        for name, bound in self.rule.param("goals").items():
            if name == "anchoring_top1" or name == "anchoring_top3":
                acc = self.anchoring_accuracy().set_index("measure")
                m = name.split("_")[1]
                est, lo, hi = acc.loc[m, ["estimate", "low", "high"]] if m in acc.index else (np.nan,) * 3
            else:
                est, lo, hi = o[name], o[f"{name}_low"], o[f"{name}_high"]
            side = self._side(name)
            gap = bound - lo if side == "≥" else hi - bound  # > 0: the far end is beyond the bound
            met = bool(gap <= 0)
            rows.append(
                {
                    "goal": name,
                    "side": side,
                    "bound": bound,
                    "estimate": est,
                    "low": lo,
                    "high": hi,
                    "met": met,
                    "missed_by": np.nan if met or not np.isfinite(gap) else gap,
                }
            )
        return pd.DataFrame(rows, columns=cols)

    def finding(self) -> str:
        t, c = self.table().set_index("architecture"), self.comparisons()
        p = self.params
        realistic = p.get("scale", "tau") == "realistic"
        per_arch = len(self.sessions) // max(1, len(p["architectures"]))
        if realistic:
            run = "FULL grid" if p["full"] else "Smoke run (not the verdict run: the recorded FULL grid is)"
            intro = [self._realistic_world(f"**{run} on the realistic-scale world**")]
        else:
            intro = [
                f"**{'FULL grid' if p['full'] else 'Smoke run (not the verdict run: the recorded FULL grid is)'}**: "
                f"seeds {list(p['seeds'])}, {p['users']} users x {p['sessions']} sessions, a base update every "
                f"{p['update_every']} sessions ({per_arch} sessions per "
                f"architecture); overlay "
                + ("at the shipped ceiling." if not p["budget"] else f"at ceiling authored + {p['budget']}.")
            ]
        if self.skipped:
            intro.append("Not run: " + "; ".join(f"{k} ({v})" for k, v in self.skipped.items()) + ".")
        seen = []
        if "overlay" in t.index and realistic:
            o = t.loc["overlay"]
            seen.append(
                f"The overlay had each lesson a goal needs in context for {_pct(o, 'needs_in_context')} of "
                f"needs; {_pct(o, 'irrelevant_share')} of the lessons in context were ones the goal did not "
                f"need, at {_num(o, 'learned_tokens', 0)} learned tokens a goal. After base updates, scored on the "
                f"text each arm puts in front of the model: a wrong lesson shown unmarked in "
                f"{_pct(o, 'wrong_in_context')} of lesson outcomes, a right one lost in {_pct(o, 'lost')}; "
                f"{_pct(o, 'false_alarms')} of its stale flags were false alarms, at "
                f"{_num(o, 'prompts_per_update')} review prompts per base update "
                f"({o.teach_prompts_per_lesson:.2f} per lesson taught). Intervals resample the rule's units: "
                f"lessons for needs and update outcomes (lessons edited by the same update are not independent, "
                f"which this unit ignores), users for the share, tokens and prompts."
            )
        elif "overlay" in t.index:
            o = t.loc["overlay"]
            seen.append(
                f"The overlay had the needed lesson in context in {_pct(o, 'needed_in')} of needing "
                f"sessions and an irrelevant one in {_pct(o, 'irrelevant_in')}, at "
                f"{o.learned_tokens:.0f} learned tokens a session. After base updates, scored on the text "
                f"each arm puts in front of the model: a wrong lesson shown unmarked in "
                f"{_pct(o, 'wrong_in_context')} of lesson outcomes, a right one lost in {_pct(o, 'lost')}; "
                f"{_pct(o, 'false_alarms')} of its stale flags were false alarms, at "
                f"{_num(o, 'prompts_per_update')} review prompts per base update "
                f"({o.teach_prompts_per_lesson:.2f} per lesson taught: consent and, when the proposal is "
                f"not confident, its section)."
            )
        acc = self.anchoring_accuracy()
        if len(acc):
            a = acc.set_index("measure")
            seen.append(
                f"The product's section proposal named the lesson's section first in "
                f"{_pct(a.loc['top1'], 'estimate', True)} of {int(a.loc['top1', 'n'])} teachings and among "
                f"its three in {_pct(a.loc['top3'], 'estimate', True)}; it was confident enough not to ask "
                f"in {_pct(a.loc['confident'], 'estimate', True)}."
            )
        intro += ["\n".join(seen)] if seen else []
        findings, outro = [], []
        if len(c):
            intro.append("Verdicts of the rule (the overlay against each architecture; positive = overlay better):")
            findings = [
                Finding(
                    f"**{r.metric}**",
                    None if pd.isna(r.difference) else r.difference + 0.0,  # + 0.0: a difference of -0 is 0
                    r.low + 0.0,
                    r.high + 0.0,
                    verdict=r.verdict,
                    spec="+,.0f" if abs(r.difference) >= 1000 else "+.3g",  # tokens: no exponent
                    subject=r.architecture,
                )
                for r in c.itertuples()
            ]
            und = c[c.verdict.str.startswith("undecided") & c.half_width.notna()]
            if len(und):
                margins = self.rule.param("margins")
                need = max(int(np.ceil(r.clusters * (r.half_width / margins[r.metric]) ** 2)) for r in und.itertuples())
                outro.append(
                    f"{len(und)} comparison(s) undecided: their intervals are wider than the margins; "
                    f"about {need} clusters (users or histories) would resolve the widest at its margin."
                )
        else:
            intro.append("No comparison: the baseline (overlay) was not among the architectures run.")
        g = self.goals(t.reset_index())
        if len(g):
            outro.append(
                render(
                    [
                        Finding(
                            r.goal,
                            r.estimate,
                            r.low,
                            r.high,
                            r.bound,
                            "met" if r.met else "missed",
                            side=r.side,
                            spec=".0f" if r.bound >= 100 else ".3f",  # tokens whole
                            note="" if r.met or pd.isna(r.missed_by) else f"its far end {_short(r.missed_by)} beyond",
                        )
                        for r in g.itertuples()
                    ],
                    intro="The issue's goals for the overlay (met when the interval's far end is within the bound):",
                    joiner="; ",
                    outro=".",
                )
            )
        erased = t[t.erased > 0]
        if len(erased):
            bad = [f"{a} ({int(r.residue)} of {int(r.erased)})" for a, r in erased.iterrows() if r.residue]
            ok = [a for a, r in erased.iterrows() if not r.residue]
            outro.append(
                "Erasure (after forget, any fragment of an erased lesson left in what the memory persists): "
                + (f"residue in {', '.join(bad)}; " if bad else "")
                + (
                    f"none in {', '.join(ok)} (exact upper bound {erased.loc[ok[0], 'residue_high']:.2g} each)."
                    if ok
                    else ""
                )
            )
        outro += [
            "Growth at the trace's end: "
            + ", ".join(f"{a} {r.growth} ({r.held_share_end:.0%} of lessons held)" for a, r in t.iterrows() if r.growth)
            + ".",
            f"Compliance arm: {self.compliance}.",
        ]
        return render(findings, stamp=self.rule.stamp(), intro=intro, outro=outro)


def _short(x: float) -> str:
    """A gap as a reader takes it in: three significant digits, or a whole number from 100 on."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _num(row, name: str, digits: int = 2) -> str:
    if not np.isfinite(row[name]):
        return "n/a"
    return f"{row[name]:.{digits}f} [{row[name + '_low']:.{digits}f}, {row[name + '_high']:.{digits}f}]"


def _pct(row, name: str, bare: bool = False) -> str:
    lo, hi = ("low", "high") if bare else (name + "_low", name + "_high")
    if not np.isfinite(row[name]):
        return "n/a"
    return f"{row[name]:.1%} [{row[lo]:.1%}, {row[hi]:.1%}]"


def verdict(ci: Interval, margin: float) -> str:
    """The rule's verdict for an oriented difference (positive: the baseline is better)."""
    if ci.low > 0 and ci.estimate >= margin:
        return "overlay better"
    if ci.high < 0 and ci.estimate <= -margin:
        return "overlay worse"
    if -margin < ci.low and ci.high < margin:
        return f"no difference detected at MDE {margin:g}"
    return "undecided"


def run(
    *,
    full: bool = False,
    seeds: Sequence[int] | None = None,
    users: int | None = None,
    sessions: int | None = None,
    architectures: Sequence[str] | None = None,
    budget: int | None = None,
    reteach: bool | None = None,
    rule: rulefile.RuleFile | str | Path | None = None,
    n_jobs: int = 1,
    backend: str = "loky",
    progress: bool = True,
    scale: str | None = None,
) -> MemoryBench:
    """The benchmark under its rule file: the smoke grid by default, `full=True` the FULL grid; any argument
    given overrides the rule's (and the table names the variation). `budget`: 0 or None runs the overlay at the
    shipped ceiling. The rule's `peers` (adapters of the real libraries) run where they import, and are named
    with the reason where they do not (`MemoryBench.skipped`). One sweep cell per (seed, architecture), on
    `overlay_kit.studies.sweep` (`n_jobs`, `backend`, "dask" included). `scale`: the world's (default: the
    rule's `scale`, "tau" when it states none)."""
    rule = rule if isinstance(rule, rulefile.RuleFile) else rulefile.load(rule or RULE_NAME)
    scale = scale or rule.params.get("scale", "tau")
    if scale not in world.SCALES:
        raise ValueError(f"scale: {scale!r} is not one of {world.SCALES}")
    grid = dict(rule.param("full" if full else "smoke"))
    seeds = list(grid["seeds"] if seeds is None else seeds)
    users = int(grid["users"] if users is None else users)
    sessions = int(grid["sessions"] if sessions is None else sessions)
    wanted = tuple(rule.param("architectures") if architectures is None else architectures)
    runnable = set(ARCHITECTURES) | set(available([a for a in wanted if a not in ARCHITECTURES])[0])
    unknown = [a for a in wanted if a not in runnable]  # a real library's arm named here runs where it imports
    if unknown or not wanted:
        raise ValueError(f"architectures: {unknown or 'none'}; architectures are {', '.join(ARCHITECTURES)}")
    if not seeds:
        raise ValueError("seeds: at least one seed")
    archs, skipped = wanted, {}
    if architectures is None and rule.params.get("peers"):
        found, skipped = available(rule.param("peers"))
        archs = wanted + tuple(a for a in found if a not in wanted)
    budget = budget or None
    config = Config.from_rule(rule, budget)
    reteach = rule.param("reteach") if reteach is None else bool(reteach)
    common = {
        "users": users,
        "sessions": sessions,
        "update_every": int(rule.param("update_every")),
        "profile": rule.param("profile"),
        "config": config,
        "reteach": reteach,
        "fragment": (int(rule.param("fragment_chars")), int(rule.param("fragment_stride"))),
    }
    if scale != "tau":  # the τ cells' arguments stay what they were (a sweep cell's key)
        common["scale"] = scale
    cells = [{"seed": s, "architecture": a, **common} for s in seeds for a in archs]
    results = sweep(
        cell,
        cells,
        backend="sequential" if n_jobs == 1 else backend,
        n_jobs=n_jobs,
        progress=progress,
        desc="memory architectures",
    )
    frames = {k: pd.concat([r[k] for r in results], ignore_index=True) for k in results[0]}
    params = {
        "full": full,
        "seeds": tuple(seeds),
        "users": users,
        "sessions": sessions,
        "architectures": archs,
        "budget": budget,
        "reteach": reteach,
        "update_every": common["update_every"],
        "ceiling": SHIPPED.ceiling,
        "scale": scale,
    }
    follow, status = compliance_status()
    return MemoryBench(
        rule,
        params,
        frames["sessions"],
        frames["updates"],
        frames["erasure"],
        frames["growth"],
        status,
        follow,
        frames["anchoring"],
        skipped,
    )


# ------------------------------------------------------------------------------- the realistic-scale world

# The realistic-scale run (issues #36 and #37): every architecture at its authors' default budget on a world whose
# agents hold tens to hundreds of lessons, judged by its own rule file with the same code as the τ world.
REALISTIC_RULE = "10_memory_realistic"  # datasets/rules/10_memory_realistic.yaml
REALISTIC_RECORDING = "10_memory_realistic_full"


def realistic(
    *,
    full: bool = False,
    seeds: Sequence[int] | None = None,
    users: int | None = None,
    sessions: int | None = None,
    architectures: Sequence[str] | None = None,
    rule: rulefile.RuleFile | str | Path | None = None,
    n_jobs: int = 1,
    backend: str = "loky",
    progress: bool = True,
) -> MemoryBench:
    """The benchmark on a realistic-scale world (`world.build(seed, scale="realistic")`) under its rule file
    (datasets/rules/10_memory_realistic.yaml, or `rule`): the rule's smoke size by default, `full=True` its FULL
    grid; every stand-in at its authors' default (the rule's `caps` and `stand_ins`; the overlay at the shipped
    ceiling and selection) and every real library that imports here (`MemoryBench.skipped` names the others).
    Judged like any run (`comparisons()`, `goals()`, `finding()`); `MemoryBench.pressure()` describes it."""
    rule = rule if isinstance(rule, rulefile.RuleFile) else rulefile.load(rule or REALISTIC_RULE)
    return run(
        full=full,
        seeds=seeds,
        users=users,
        sessions=sessions,
        architectures=architectures,
        rule=rule,
        n_jobs=n_jobs,
        backend=backend,
        progress=progress,
        scale="realistic",
    )


# ------------------------------------------------------------------------------------------ the recording

FRAMES = ("sessions", "updates", "erasure", "growth", "anchoring")
RECORDED = dataset_path("recorded")
RECORDING = "10_memory_full"
_BOOLS = {
    "sessions": ("taught", "needed", "needed_in", "could_irrelevant", "irrelevant_in"),
    "updates": ("held", "wrong", "flagged", "misplaced"),
    "erasure": ("remains",),
    "anchoring": ("top1", "top3", "confident"),
}
_LISTS = {"sessions": ("need_list", "found_list", "held_list")}


def _machine() -> str:
    import os
    import platform

    return f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def record(study: MemoryBench, *, wall_s: float, n_jobs: int, folder: Path = RECORDED, name: str = RECORDING) -> Path:
    """Write a FULL run: one gzipped CSV per frame (`<name>.<frame>.csv.gz`) and its provenance
    (`<name>.json`: commit, rule file and sha256, machine, date, what ran, what was skipped, wall time)."""
    import datetime
    import json
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    for k in FRAMES:
        getattr(study, k).to_csv(folder / f"{name}.{k}.csv.gz", index=False)
    root = Path(__file__).resolve().parents[2]
    git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True, cwd=root).stdout  # noqa: E731
    commit = git("rev-parse", "HEAD").strip()
    # the files the study runs that differ from the commit (a recording made before its code is committed)
    # (a rule file outside this checkout, e.g. a recording run from a clone, is left out of the pathspec: git
    # refuses a path outside the repository and would report nothing at all)
    rule_path = study.rule.path.resolve()
    spec = [str(rule_path.relative_to(root))] if rule_path.is_relative_to(root) else []
    dirty = [x for x in git("status", "--porcelain", "--", "overlay_kit", *spec).splitlines() if x]
    meta = {
        "rule": study.rule.path.name,
        "rule_version": study.rule.version,
        "rule_sha256": study.rule.sha256,
        "commit": commit,
        "uncommitted": sorted(x[3:] for x in dirty),
        "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": _machine(),
        "n_jobs": n_jobs,
        "wall_s": round(wall_s),
        "params": {k: list(v) if isinstance(v, tuple) else v for k, v in study.params.items()},
        "skipped": dict(study.skipped),
        "rows": {k: len(getattr(study, k)) for k in FRAMES},
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return path


def recorded(
    rule: rulefile.RuleFile | None = None, *, folder: Path = RECORDED, name: str = RECORDING
) -> tuple[MemoryBench, dict[str, Any]] | None:
    """The recorded FULL run `name` as a `MemoryBench` judged by `rule` (default: the rule file the recording
    names, e.g. `recorded(name=REALISTIC_RECORDING)` for the realistic world's) with the same code as a live
    run, and its provenance; None when nothing is recorded. A recording made under another version of the rule
    file is refused: its verdict would not be the rule's."""
    import ast
    import json

    path = folder / f"{name}.json"
    if not path.exists():
        return None
    meta = json.loads(path.read_text(encoding="utf-8"))
    rule = rule or rulefile.load(Path(meta["rule"]).stem)
    if meta["rule_sha256"] != rule.sha256:
        raise ValueError(
            f"{path}: recorded under rule sha256 {meta['rule_sha256'][:12]}, not the rule file's {rule.sha256[:12]}"
        )
    frames = {}
    for k in FRAMES:
        df = pd.read_csv(
            folder / f"{name}.{k}.csv.gz",
            dtype={"user": str, "history": str, "lesson": str, "outcome": str, "needs": str},
        )
        for col in _BOOLS.get(k, ()):
            if col in df:
                df[col] = df[col].map({True: True, False: False, "True": True, "False": False})
        for col in _LISTS.get(k, ()):  # a goal's needs, found and held: written as Python lists
            if col in df:
                df[col] = df[col].map(ast.literal_eval)
        frames[k] = df
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in meta["params"].items()}
    follow, status = compliance_status()
    return MemoryBench(
        rule, params, *(frames[k] for k in FRAMES[:4]), status, follow, frames["anchoring"], meta.get("skipped", {})
    ), meta


def recording_note(meta: Mapping[str, Any]) -> str:
    """One line saying what a recording (`recorded`'s provenance) holds and where it came from."""
    p = meta["params"]
    size = (
        f"{p['users']} users of up to {p['sessions']} sessions on the realistic-scale world"
        if p.get("scale") == "realistic"
        else f"{p['users']} users x {p['sessions']} sessions"
    )
    dirty = (
        f" with uncommitted changes to {len(meta['uncommitted'])} files (listed in the provenance)"
        if meta.get("uncommitted")
        else ""
    )
    return (
        f"FULL run recorded {meta['recorded'][:16]} UTC at commit {meta['commit'][:7]}{dirty} under rule "
        f"{meta['rule']} v{meta['rule_version']} (sha256 {meta['rule_sha256'][:12]}): seeds {p['seeds']}, "
        f"{size}, {len(p['architectures'])} architectures, "
        f"{meta['rows']['updates']:,} update rows, on {meta['machine']} ({meta['n_jobs']} jobs, "
        f"{meta['wall_s'] / 60:.0f} min)"
        + (f"; not run: {', '.join(meta['skipped'])}" if meta["skipped"] else "")
        + "."
    )


GROUPS: Mapping[str, tuple[str, ...]] = {
    "all stand-ins": tuple(ARCHITECTURES),
    "overlay vs retrieval (keyword, mem0, letta)": ("overlay", "keyword_files", "mem0_flat", "letta_blocks"),
    "overlay vs always resident (full, ACE, hermes)": ("overlay", "full_context", "ace_playbook", "hermes_inplace"),
    "overlay vs rewrite (cheatsheet)": ("overlay", "rewrite_cheatsheet"),
    "overlay: stale_touch off vs on": ("overlay", "overlay_touch"),
}


def explore(
    architectures: str = "all stand-ins", budget: int = 0, sessions: int = 40, users: int = 2, seed: int = 0
) -> MemoryBench:
    """The notebook's explorer: a named group of architectures (`GROUPS`), the overlay's budget (0: shipped
    ceiling), trace length and users, one seed; no progress bar (the explorer shows its own status)."""
    if architectures not in GROUPS:
        raise ValueError(f"architectures: {architectures!r}; groups are {', '.join(GROUPS)}")
    return run(
        seeds=[seed], users=users, sessions=sessions, architectures=GROUPS[architectures], budget=budget, progress=False
    )


# ------------------------------------------------------------------ the stale flag: every lesson or the touched

# Rule 10_stale_touch: the two arms `SHIPPED.stale_touch` separates, on fresh seeds of both worlds, each judged by
# its world's rule; the default ships on only where both worlds agree (`stale_touch_decision`).
STALE_TOUCH_RULE = "10_stale_touch"  # datasets/rules/10_stale_touch.yaml
STALE_TOUCH_WORLDS = ("tau", "realistic")


def stale_touch_run(world_name: str, *, n_jobs: int = 1, progress: bool = True) -> MemoryBench:
    """Rule 10_stale_touch's run in one world ("tau" or "realistic"): its two arms on the rule's seeds and size,
    under that world's own rule file."""
    rule = rulefile.load(STALE_TOUCH_RULE)
    if world_name not in STALE_TOUCH_WORLDS:
        raise ValueError(f"world: {world_name!r} is not one of {STALE_TOUCH_WORLDS}")
    grid = rule.param(world_name)
    return run(
        full=True,
        seeds=grid["seeds"],
        users=grid["users"],
        sessions=grid["sessions"],
        architectures=rule.param("arms"),
        rule=grid["rule"],
        n_jobs=n_jobs,
        progress=progress,
        scale=world_name,
    )


def stale_touch_recorded(folder: Path = RECORDED) -> dict[str, MemoryBench]:
    """Rule 10_stale_touch's recorded runs, world -> study (each judged by its world's rule); missing ones left out."""
    out = {}
    for w in STALE_TOUCH_WORLDS:
        got = recorded(folder=folder, name=f"{STALE_TOUCH_RULE}_{w}")
        if got is not None:
            out[w] = got[0]
    return out


def stale_touch_decision(studies: Mapping[str, MemoryBench]) -> tuple[pd.DataFrame, str]:
    """Rule 10_stale_touch's decision from its runs (world -> study): one row per world — (a) wrong lessons
    shown, touch minus section, non-inferior when the interval's upper end is under the world's margin; (b) the
    prompts comparison's verdict, "overlay worse" when touch raises fewer — with the flags' false alarms and
    recall, and the prompts a perfect flag would raise; and the decision in words."""
    rule = rulefile.load(STALE_TOUCH_RULE)
    base, arm = rule.param("arms")
    wrong, prompts = rule.param("metrics")["wrong"], rule.param("metrics")["prompts"]
    rows = []
    for w in STALE_TOUCH_WORLDS:
        if w not in studies:
            raise ValueError(f"studies: no run of the {w!r} world; the rule decides on both")
        study = studies[w]
        c = study.comparisons().set_index(["architecture", "metric"])
        t = study.table().set_index("architecture")
        margins = study.rule.param("margins")
        cw, cp = c.loc[(arm, wrong)], c.loc[(arm, prompts)]
        rows.append(
            {
                "world": w,
                "wrong_shipped": t.at[base, wrong],
                "wrong_touch": t.at[arm, wrong],
                "difference": cw.difference,
                "low": cw.low,
                "high": cw.high,
                "margin": margins[wrong],
                "non_inferior": bool(cw.high < margins[wrong]),
                "clusters": int(cw.clusters),
                "clusters_needed": np.ceil(cw.clusters * (cw.half_width / margins[wrong]) ** 2)
                if margins[wrong] > 0
                else np.inf,
                "prompts_shipped": t.at[base, prompts],
                "prompts_touch": t.at[arm, prompts],
                "prompts_fewer": -cp.difference,  # oriented: prompts the touch flag saves per base update
                "prompts_fewer_low": -cp.high,
                "prompts_fewer_high": -cp.low,
                "prompts_margin": margins[prompts],
                "prompts_verdict": cp.verdict,
                "fewer_prompts": cp.verdict == "overlay worse",
                "perfect_prompts": t.at[base, "perfect_prompts"],
                "perfect_prompts_low": t.at[base, "perfect_prompts_low"],
                "perfect_prompts_high": t.at[base, "perfect_prompts_high"],
                "false_alarms_shipped": t.at[base, "false_alarms"],
                "false_alarms_touch": t.at[arm, "false_alarms"],
                "flag_recall_shipped": t.at[base, "flag_recall"],
                "flag_recall_touch": t.at[arm, "flag_recall"],
            }
        )
    d = pd.DataFrame(rows)
    adopt = bool(d.non_inferior.all() and d.fewer_prompts.all())
    said = []
    for r in d.itertuples():
        said.append(
            f"{r.world}: a wrong lesson shown unmarked {r.wrong_shipped:.4f} (section flag) against "
            f"{r.wrong_touch:.4f} (touch), difference {r.difference:+.4f} [{r.low:+.4f}, {r.high:+.4f}] — "
            + (
                f"non-inferior at margin {r.margin:g}"
                if r.non_inferior
                else f"not shown non-inferior at margin {r.margin:g} (the upper end {r.high:.4f}; "
                f"{r.clusters} clusters, about {r.clusters_needed:.0f} for a decision at the margin)"
            )
            + f"; review prompts per base update {r.prompts_shipped:.2f} against {r.prompts_touch:.2f}, "
            f"{r.prompts_fewer:.2f} [{r.prompts_fewer_low:.2f}, {r.prompts_fewer_high:.2f}] fewer with touch ("
            + (
                f"fewer by at least the margin {r.prompts_margin:g}"
                if r.fewer_prompts
                else f"{r.prompts_verdict} at the margin {r.prompts_margin:g}"
            )
            + f"); false alarms {r.false_alarms_shipped:.2f} against {r.false_alarms_touch:.2f}, flag recall "
            f"{r.flag_recall_shipped:.2f} against {r.flag_recall_touch:.2f}; a perfect flag (one prompt for each "
            f"held lesson the update made wrong) would raise {r.perfect_prompts:.2f} [{r.perfect_prompts_low:.2f}, "
            f"{r.perfect_prompts_high:.2f}] per base update"
            + (
                f", so no flag meets the goal of {rule.param('prompts_goal'):g} here"
                if r.perfect_prompts_low > rule.param("prompts_goal")
                else ""
            )
            + "."
        )
    head = (
        "**Decision: `stale_touch` ships on** — in both worlds touch showed no more wrong lessons (non-inferior) "
        "and raised fewer review prompts."
        if adopt
        else "**Decision: `stale_touch` stays off** — it did not meet "
        + " and ".join(
            f"({k}) in the {', '.join(d.world[~d[col]])} world"
            for k, col in (("a", "non_inferior"), ("b", "fewer_prompts"))
            if not d[col].all()
        )
        + "."
    )
    return d, "\n\n".join([rule.stamp(), head, *(f"- {x}" for x in said)])
