"""The deployment simulator: synthetic users with hidden preferences, an agent that follows its effective
skill, and the gates deciding what it learns — over many sessions, seeded, sweepable.

One `run(**settings)` is one user living with one skill for `n_sessions` sessions:

* **The skill** is a seeded synthetic SKILL.md and its base-update history (`sim.generate_history`, with
  ground truth for every section); every `base_update_every` sessions the next version ships and
  `rebase.apply` moves the deltas under `rebase_policy`.
* **The user** has `n_situations` recurring needs, each anchored on a section of the skill, with a hidden
  preferred option (the authored default is option 0). A need's situation is a lesson of the τ corpus
  (`topics()`, datasets/tau): its trigger is what a tier-3 lesson is indexed under, and a session opens
  with one of its human-phrased paraphrase goals — so tier-3 retrieval at τ meets goals like notebook 04's,
  not copies of the trigger. A need is learned at tier 0 (a value a tool reads), tier 1 (which declared
  tool to use) or tier 3 (a preference line). Each session has a goal (one need, Zipf-frequent); its turns
  mostly exercise that need. When the agent is right the user may
  accept or rate; when it is wrong they correct (stating the lesson), undo, or stay silent.
* **The agent** resolves its effective skill once per session (`resolve.resolve`, real budget and tier-3
  retrieval at τ) and follows a deterministic policy: a lesson in context is obeyed with probability
  `p_obey`; the latest lesson for a need wins; a tier-0 fact is read by the tool; a staged lesson for a
  need with nothing in context is offered as a suggestion (`suggest_staged`). Everything in context is
  ledgered with `evidence.record_context`, every user signal with `evidence.record_signal`.
* **The learning trigger** turns each correction into a lesson through `gates.learn` (user-instruction
  provenance); it misreads the value with probability `p_misread` and overreaches (a lesson naming a tool
  the skill lacks or an ungranted permission, which the gates refuse) with `p_overreach`. Restated lessons
  are paraphrased, so near-duplicates accumulate as they do in real use.
* **Between sessions**: `evidence.review_staged` promotes on counters (`min_samples`, `threshold`,
  `wilson`) and retires below `retire_below`; every `review_every` sessions the user reviews what is
  pending (approves right lessons and umbrellas, reverts wrong ones, re-homes or discards orphans) after
  `evidence.consolidate` proposed umbrellas; `decay_days` demotes idle tier-3 lessons; the learning budget
  (`budget.Budget`, ceiling = authored tokens + `headroom`, consolidation hook from `evidence`) is held
  after every change.
* **Eval** at the end: every need `eval_turns` times, in three arms on the same random numbers — the
  no-delta baseline (no store), deltas-off (`learned=False`) and deltas-on — scored against the hidden
  preferences, with the prompt hash of each arm.

Every behavioural assumption (how often the agent obeys, the user reviews, corrects, acknowledges; how often
the trigger misreads) is a named `Settings` field with a stated range in `ASSUMPTIONS`. Everything is seeded
(`random.Random` streams keyed by purpose), so a run is a pure function of its settings except for audit
timestamps; the KPI study (`overlay_kit.studies.kpis`) runs many on the studies' sweep runner and reads the
logs and the store tables returned in `Deployment`.
"""

from __future__ import annotations

import csv
import hashlib
import random
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from .. import anchor as anchor_mod
from .. import budget as budget_mod
from .. import evidence, gates, rebase, resolve, retrieval
from ..common import cosines
from ..defaults import SHIPPED
from ..grammar import Provenance, item_text
from ..resources import dataset_path
from ..skill import Skill, parse_skill
from ..store import Store, StoreError
from ..tools import ToolLoader
from . import sim

__all__ = [
    "ASSUMPTIONS",
    "OPTIONS",
    "Assumption",
    "Deployment",
    "Settings",
    "Situation",
    "Topic",
    "assumption_table",
    "goal_cosines",
    "run",
    "settings",
    "store_tables",
    "topics",
]

T0 = datetime(2025, 1, 6, 9, tzinfo=timezone.utc)  # session n starts at T0 + n days
OPTIONS = (
    "reply in a formal tone",
    "keep it under three sentences",
    "put a bullet summary first",
    "copy the account owner",
    "flag it for follow-up tomorrow",
    "address people by first name",
    "include the ticket number",
    "link the latest report",
    "mention the deadline up front",
    "group items by sender",
    "write in plain text only",
    "end with a clear next step",
)
VALUES = ("07:00", "12:30", "18:00", "weekly", "daily", "never")
LESSONS = (
    "For {topic}: {option}.",
    "When it comes to {topic}: {option}.",
    "{topic}: always {option}.",
    "{topic}: please {option}.",
)
OVERREACH = ("For {topic}: use shell:execute to {option}.", "For {topic}: {option} and send it right away.")
GHOST_TOOLS = ("send_now", "post_message", "bulk_archive")  # tools no generated skill declares


@dataclass(frozen=True)
class Topic:
    """A need's situation, from the τ corpus (datasets/tau): the lesson trigger the learning trigger writes,
    and the human-phrased goals (the corpus' relevant paraphrases) a user opens a session with."""

    lesson_id: str
    trigger: str
    goals: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.trigger.rstrip(".")


@lru_cache(maxsize=1)
def topics() -> tuple[Topic, ...]:
    """Every τ-corpus lesson with its paraphrase goals, in lesson-id order."""
    with open(dataset_path("tau", "pairs.csv"), newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    goals: dict[str, list[str]] = {}
    trigger: dict[str, str] = {}
    for r in rows:
        if r["category"] == "paraphrase" and r["relevant"] == "1":
            goals.setdefault(r["lesson_id"], []).append(r["goal"])
            trigger[r["lesson_id"]] = r["trigger"]
    return tuple(Topic(k, trigger[k], tuple(goals[k])) for k in sorted(goals))


@dataclass(frozen=True)
class Assumption:
    """A behavioural assumption of the simulator: its default and the range a finding must hold across."""

    name: str
    low: float
    high: float
    what: str


# Every behavioural assumption of the simulated user, agent and learning trigger, with the range over which
# the KPI study sweeps it (each at its low and its high end, the others at their defaults). No real
# deployment has measured them; the ranges span what seems plausible, not what is known.
ASSUMPTIONS: Mapping[str, Assumption] = {
    a.name: a
    for a in (
        Assumption("p_obey", 0.6, 0.99, "the agent follows a lesson (or what the user said) in its context"),
        Assumption("review_every", 5, 40, "sessions between the user's reviews of pending lessons"),
        Assumption("p_correct", 0.3, 0.85, "a wrong turn is corrected, stating the lesson"),
        Assumption("p_misread", 0.05, 0.3, "the learning trigger writes the wrong value"),
        Assumption("p_ack", 0.1, 0.5, "a right turn is explicitly accepted (evidence for promotion)"),
        Assumption("p_slip", 0.0, 0.2, "the user answers a suggestion the wrong way round"),
        Assumption("p_undo", 0.05, 0.25, "a wrong turn is undone without a lesson"),
        Assumption("focus", 0.5, 0.9, "share of a session's turns on its goal need"),
        Assumption("drift", 0.0, 0.05, "per session: one hidden preference changes"),
        Assumption("p_default_ok", 0.05, 0.3, "the authored default already is what the user wants"),
    )
}


def assumption_table() -> pd.DataFrame:
    """Every behavioural assumption: its default (`Settings`), the range swept, and what it means."""
    s = Settings()
    return pd.DataFrame(
        [
            {"assumption": a.name, "default": getattr(s, a.name), "low": a.low, "high": a.high, "what": a.what}
            for a in ASSUMPTIONS.values()
        ]
    ).set_index("assumption")


def goal_cosines(embedder=None) -> pd.Series:
    """Cosine of every simulated goal to its own lesson's trigger (the bundled static embedder by default):
    what tier-3 retrieval at τ sees in the simulator."""
    emb = embedder or retrieval.static_embedder()
    out = {}
    for t in topics():
        v = emb.encode([t.trigger, *t.goals])
        out |= {(t.lesson_id, g): float(c) for g, c in zip(t.goals, cosines(v[1:], v[0])[:, 0])}
    return pd.Series(out, name="cosine")


# ------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    """One deployment. The gate settings are the knobs a designer would ship; the rest is the world, whose
    behavioural assumptions (`ASSUMPTIONS`) default to the middle of their stated ranges."""

    seed: int = 0
    n_sessions: int = 60
    turns: int = 4  # turns per session
    n_situations: int = 8
    tier_mix: tuple[float, float, float] = (0.25, 0.25, 0.5)  # share of needs learned at tier 0 / 1 / 3
    # the user
    p_default_ok: float = 0.15  # the authored default already is what the user wants
    p_correct: float = 0.6  # a wrong turn is corrected (stating the lesson) ...
    p_undo: float = 0.15  # ... or undone (no lesson); otherwise the user stays silent
    p_ack: float = 0.3  # a right turn is explicitly accepted ...
    p_rate: float = 0.05  # ... or rated 4-5
    p_slip: float = 0.1  # the user answers a suggestion the wrong way round (accepts a wrong one, declines a
    #                      right one without saying what they want instead)
    focus: float = 0.75  # share of a session's turns on its goal need
    drift: float = 0.0  # per session: probability that one hidden preference changes
    review_every: int = 20  # the user reviews pending lessons every N sessions (0: never)
    # the agent and its learning trigger
    p_obey: float = 0.8
    p_misread: float = 0.15
    p_overreach: float = 0.05
    suggest_staged: bool = True
    # gate settings: what ships (overlay_kit.defaults); a study that varies one says so (`SHIPPED.varied`)
    auto_approve: bool = SHIPPED.auto_approve
    min_samples: int = SHIPPED.min_samples
    threshold: float = SHIPPED.threshold
    wilson: bool = SHIPPED.wilson
    retire_below: float | None = SHIPPED.retire_below
    tau: float | retrieval.Gate | None = None  # None: the embedder's shipped calibrated gate; a float: absolute τ
    headroom: int | None = None  # budget ceiling = authored tokens + headroom (None: the shipped ceiling)
    rebase_policy: str = SHIPPED.rebase_policy
    base_update_every: int = 0  # sessions between base updates (0: the base never changes)
    profile: str = "typical"
    consolidate: bool = True
    decay_days: int | None = None
    eval_turns: int = 3

    def __post_init__(self):
        probs = (
            "p_default_ok",
            "p_correct",
            "p_undo",
            "p_ack",
            "p_rate",
            "p_slip",
            "focus",
            "drift",
            "p_obey",
            "p_misread",
            "p_overreach",
            "threshold",
        ) + (("tau",) if isinstance(self.tau, (int, float)) else ())
        if not isinstance(self.tau, (int, float, retrieval.Gate, type(None))) or isinstance(self.tau, bool):
            raise ValueError(f"tau: {self.tau!r} is not an absolute τ, a retrieval.Gate or None (calibrated)")
        for name in probs:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"{name}: {value!r} is not a probability in [0, 1]")
        if self.p_correct + self.p_undo > 1 or self.p_ack + self.p_rate > 1:
            raise ValueError("p_correct + p_undo and p_ack + p_rate must each be at most 1")
        if len(self.tier_mix) != 3 or min(self.tier_mix) < 0 or not np.isclose(sum(self.tier_mix), 1):
            raise ValueError(f"tier_mix: {self.tier_mix!r} must be three shares (tier 0, 1, 3) summing to 1")
        for name in ("n_sessions", "turns", "n_situations", "min_samples", "eval_turns"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.n_situations > len(topics()):
            raise ValueError(f"n_situations: at most {len(topics())}")
        for name in ("review_every", "base_update_every"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be 0 (never) or a number of sessions")
        if self.headroom is not None and self.headroom < 1:
            raise ValueError("headroom must be a positive token count (or None)")
        if self.decay_days is not None and self.decay_days < 1:
            raise ValueError("decay_days must be a positive number of days (or None)")
        if self.retire_below is not None and not 0 <= self.retire_below <= self.threshold:
            raise ValueError("retire_below must lie in [0, threshold]")
        rebase.get_policy(self.rebase_policy)  # unknown names raise here, before any work
        if self.profile not in sim.PROFILES:
            raise ValueError(f"profile: {self.profile!r}; profiles are {', '.join(sim.PROFILES)}")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Situation:
    """One recurring need: where it lives in the skill, what the user can want, and how it is learned."""

    key: str
    tier: int  # 0 fact, 1 tool-hint, 3 preference
    section: str  # slug in the first version of the skill
    topic: Topic
    options: tuple[str, ...]  # option 0 is the authored default

    @property
    def category(self) -> str:
        return {0: "fact", 1: "tool-hint", 3: "preference"}[self.tier]

    def lesson(self, option: int) -> str:
        return f"{self.key}={self.options[option]}"


@dataclass(frozen=True)
class Deployment:
    """A run's logs (pandas) and the store tables it left, for `overlay_kit.studies.kpis`."""

    settings: Settings
    turns: pd.DataFrame
    sessions: pd.DataFrame
    lessons: pd.DataFrame
    rebases: pd.DataFrame
    evals: pd.DataFrame
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    situations: tuple[Situation, ...] = ()
    declared_tools: tuple[str, ...] = ()  # the skill's tools at the end of the run

    def overview(self) -> pd.DataFrame:
        """What the agent did, what the user signalled, and what the gates did with each lesson (counts)."""
        return (
            pd.concat(
                {
                    "what the agent did": self.turns["how"].value_counts(),
                    "user signal": self.turns["signal"].fillna("(none)").value_counts(),
                    "lesson outcome at the gates": self.lessons["outcome"].value_counts(),
                },
                axis=1,
            )
            .fillna(0)
            .astype(int)
        )

    @property
    def session_order(self) -> dict[str, int]:
        """Session id → ordinal (what correction non-recurrence counts windows in)."""
        return {session_id(self.settings.seed, n): n for n in range(self.settings.n_sessions)}


def session_id(seed: int, n: int) -> str:
    return f"{seed}:{n:04d}"


# -------------------------------------------------------------------------------------------- tables


def store_tables(store: Store) -> dict[str, pd.DataFrame]:
    """The store's evidence tables (`Store.EXPORTS`) as DataFrames: what the KPIs read."""
    return {name: pd.DataFrame(rows, columns=cols) for name in Store.EXPORTS for cols, rows in [store.export(name)]}


# ------------------------------------------------------------------------------------------ the world


def _prompt_hash(eff: resolve.EffectiveSkill) -> str:
    return hashlib.sha256((eff.text + "\0" + "\n".join(eff.skill_tools)).encode("utf-8")).hexdigest()[:16]


def _atomic(eff: resolve.EffectiveSkill, sections: Sequence[anchor_mod.Section]) -> bool:
    """No learned line and no authored section cut: every applied text line is whole in the text, and the
    authored sections (`sections` = parse of `eff.base`) appear in order, byte for byte."""
    # a line renders as "- text" under its section or "- (Section) text" in the block: the text must be whole
    if any(d.tier > 1 and item_text(d)[2:].rstrip("\n") not in eff.text for d in eff.applied):
        return False
    at = 0
    for s in sections:
        k = eff.text.find(s.text, at)
        if k < 0:
            return False
        at = k + len(s.text)
    return True


class _World:
    """The state of one deployment while it runs (private: `run` is the API)."""

    def __init__(self, s: Settings):
        self.s = s
        n_versions = (s.n_sessions - 1) // s.base_update_every + 1 if s.base_update_every else 1
        self.history = sim.generate_history(s.profile, n_versions=n_versions, n_deltas=0, seed=s.seed)
        self.version = 0
        self.skill = self._parse(0)
        self.sections = anchor_mod.parse(self.skill.body)
        self.rng = {k: random.Random(f"deploy:{k}:{s.seed}") for k in ("world", "user", "agent", "trigger", "drift")}
        self.situations = self._situations()
        self.section = {x.key: x.section for x in self.situations}  # current section of each need
        user = self.rng["user"]
        self.pref = {
            x.key: (0 if user.random() < s.p_default_ok else user.randrange(1, len(x.options))) for x in self.situations
        }
        w = np.array([1 / (k + 1) for k in range(len(self.situations))])
        self.weights = list(w / w.sum())
        self.meaning: dict[str, tuple[str, int]] = {}  # delta id → (need, option)
        self.embedder = retrieval.static_embedder()
        # the agent's live registry holds the ghost tools too: a learned hint that reached one past the gates
        # would be loaded, and `tools_ok` would say so
        self.tools = ToolLoader(dict.fromkeys((*self.skill.tools, *GHOST_TOOLS), ""))
        self.store = Store.open(":memory:", auto_approve=s.auto_approve)
        self.version_counter = 0
        self.store.on_change(self._changed)
        self.store.register_base(self.skill)  # so rebase.apply sees each update as a change of this base
        self.authored = budget_mod.count_tokens(self.skill.body)
        self.ceiling = SHIPPED.ceiling if s.headroom is None else self.authored + s.headroom
        self.budget = budget_mod.Budget(
            self.store, [self.skill], self.ceiling, proposer=evidence.consolidation_proposer(self.embedder)
        ).install()
        self.settings = gates.GateSettings(auto_approve=s.auto_approve)
        self._cache: tuple | None = None
        self.turn_rows: list[dict] = []
        self.session_rows: list[dict] = []
        self.lesson_rows: list[dict] = []
        self.rebase_rows: list[dict] = []

    # ---------------------------------------------------------------------------------- setup

    def _parse(self, version: int) -> Skill:
        skill, problems = parse_skill(self.history.versions[version].text, None)
        if skill is None:
            raise ValueError(f"generated skill version {version} does not validate: {problems}")
        return skill

    def _situations(self) -> tuple[Situation, ...]:
        rng, s = self.rng["world"], self.s
        sections = [x.slug for x in anchor_mod.parse(self.skill.body) if x.text.strip() and x.level > 0]
        # tools a learned hint may prefer: whatever the gates' own dry run does not refuse
        tools = [
            t
            for t in self.skill.tools
            if gates.check(
                None, self.skill, "tool-hint", {"prefer": [t]}, section=sections[0], provenance="user_instruction"
            ).outcome
            != "refused"
        ]
        out = []
        for k, topic in enumerate(rng.sample(topics(), s.n_situations)):
            tier = rng.choices((0, 1, 3), s.tier_mix)[0]
            if tier == 1 and len(tools) < 2:
                tier = 3  # a tool choice needs two usable declared tools
            if tier == 0:
                options = tuple(rng.sample(VALUES, 3))
            elif tier == 1:
                options = tuple(rng.sample(tools, min(3, len(tools))))
            else:
                options = tuple(rng.sample(OPTIONS, 3))
            out.append(Situation(f"n{k}", tier, rng.choice(sections), topic, options))
        return tuple(out)

    def _changed(self, _ids) -> None:
        self.version_counter += 1

    # ------------------------------------------------------------------------------ resolution

    def resolve(self, goal: str, *, learned: bool = True, store: bool = True) -> resolve.EffectiveSkill:
        if not store:
            return resolve.resolve(self.skill, None)
        if not learned:
            return resolve.resolve(self.skill, self.store, learned=False)
        demoted = bool(self.store.retrieval_only(self.skill.name))
        key = (self.version_counter, self.version, goal if demoted else None)
        if self._cache is None or self._cache[0] != key:
            eff = resolve.resolve(
                self.skill, self.store, goal=goal, embedder=self.embedder, tau=self.s.tau, ceiling=self.ceiling
            )
            self._cache = (key, eff, _atomic(eff, self.sections))
        return self._cache[1]

    def atomic(self, eff: resolve.EffectiveSkill) -> bool:
        return self._cache[2] if self._cache is not None and self._cache[1] is eff else _atomic(eff, self.sections)

    def facts(self) -> dict[str, str]:
        return {f.key: f.value for f in self.store.facts(self.skill.name)}

    # ---------------------------------------------------------------------------------- agent

    def act(
        self,
        x: Situation,
        eff: resolve.EffectiveSkill,
        facts: Mapping[str, Any],
        staged: Mapping[str, str],
        u: float,
        told: Mapping[str, int] | None = None,
    ) -> tuple[int, str, str | None]:
        """(option, how, delta id): what the agent does for need `x` — deterministic given `u` ~ U(0, 1).
        `told`: what the user said earlier in this session (the conversation is in context, so it is obeyed
        like a lesson); a session never sees lessons learned during it."""
        if told and x.key in told:
            return (told[x.key], "conversation", None) if u < self.s.p_obey else (0, "disobeyed", None)
        if x.tier == 0:
            v = facts.get(x.key)
            return (x.options.index(v), "fact", None) if v in x.options else (0, "base", None)
        mine = [d.id for d in eff.applied if self.meaning.get(d.id, ("",))[0] == x.key]
        if mine:  # applied in render order: the latest lesson for the need wins
            if u < self.s.p_obey:
                return self.meaning[mine[-1]][1], "lesson", mine[-1]
            return 0, "disobeyed", mine[-1]
        if x.key in staged:
            return self.meaning[staged[x.key]][1], "suggestion", staged[x.key]
        return 0, "base", None

    def staged(self) -> dict[str, str]:
        """need → its most recent staged, trusted lesson (what the agent may offer as a suggestion)."""
        out: dict[str, str] = {}
        if not self.s.suggest_staged:
            return out
        umbrellas = evidence.pending_umbrellas(self.store, self.skill.name)
        for d in self.store.search(self.skill.name, status="staged"):  # sort_key: created_at ascending
            if d.provenance.trusted and d.id in self.meaning and d.id not in umbrellas:
                out[self.meaning[d.id][0]] = d.id
        return out

    # -------------------------------------------------------------------------------- learning

    def teach(self, x: Situation, session: int, turn: int, now: datetime) -> None:
        """The learning trigger after a correction: one lesson through the gates."""
        rng, s = self.rng["trigger"], self.s
        want = self.pref[x.key]
        option = want if rng.random() >= s.p_misread else rng.choice([o for o in range(len(x.options)) if o != want])
        overreach = rng.random() < s.p_overreach
        prov = Provenance("user_instruction", (f"{session}:{turn}",))
        section = self.section[x.key]
        if x.tier == 0:
            kind, payload = "fact", {"key": x.key, "value": x.options[option]}
        elif x.tier == 1:
            kind, payload = "tool-hint", {"prefer": [rng.choice(GHOST_TOOLS) if overreach else x.options[option]]}
        else:
            template = rng.choice(OVERREACH if overreach else LESSONS)
            body = template.format(topic=x.topic.name, option=x.options[option])
            kind, payload = "preference", {"body": body[0].upper() + body[1:], "trigger": x.topic.trigger}
        r = gates.learn(self.store, self.skill, kind, payload, section=section, provenance=prov, settings=self.settings)
        if r.delta is not None:
            self.meaning[r.delta.id] = (x.key, option)
            self.store.touch([r.delta.id], now)
        self.lesson_rows.append(
            {
                "session": session,
                "turn": turn,
                "need": x.key,
                "tier": x.tier,
                "kind": kind,
                "option": option,
                "wanted": want,
                "correct": option == want,
                "overreach": overreach,
                "outcome": r.outcome,
                "rule": r.rule,
                "delta_id": r.delta.id if r.delta else None,
                "lesson_tier": 0 if r.outcome == "routed" else (r.delta.tier if r.delta else None),
            }
        )

    # ---------------------------------------------------------------------------------- review

    def review(self, now: datetime) -> None:
        """The user's periodic review: consolidation proposals first, then every pending item."""
        if self.s.consolidate:
            # the budget's consolidation step (proposals at the ceiling), then a sweep over every active lesson
            proposals = [p.ids for p in (self.budget.last.proposals if self.budget.last else ())]
            clusters = evidence.near_duplicates(
                self.store.search(self.skill.name, status="active"), embedder=self.embedder
            )
            for ids in proposals + [c.ids for c in clusters]:
                members = [self.store.get(i) for i in ids]
                if any(d.status != "active" or d.superseded_by for d in members):
                    continue  # an earlier proposal in this review already covers them
                u = evidence.propose_umbrella(self.store, self.skill, ids)
                if u.umbrella_id and u.umbrella_id not in self.meaning:
                    self.meaning[u.umbrella_id] = self.meaning.get(ids[0], ("", -1))
                    self.store.touch([u.umbrella_id], now)
        for uid in evidence.pending_umbrellas(self.store, self.skill.name):
            need, option = self.meaning.get(uid, ("", -1))
            try:
                if not (need and self.pref.get(need) == option):
                    raise StoreError("the user rejects it")
                evidence.approve_umbrella(self.store, uid)
            except StoreError:  # wrong, or overlapping an umbrella approved a moment ago
                self.store.revert(uid)
        for d in self.store.search(self.skill.name, status=("staged", "orphaned")):
            need, option = self.meaning.get(d.id, ("", -1))
            right = bool(need) and self.pref[need] == option
            if d.status == "staged":
                self.store.approve(d.id) if right else self.store.revert(d.id)
            else:  # an orphan: re-home a right lesson where its need now lives, discard a wrong one
                try:
                    if not right:
                        raise StoreError("the user discards it")
                    rebase.reanchor(self.store, d.id, self.skill, self.section[need])
                except StoreError:
                    rebase.discard(self.store, d.id)

    # ----------------------------------------------------------------------------------- rebase

    def update_base(self, session: int) -> None:
        old = self.skill
        self.version += 1
        new = self._parse(self.version)
        truth = self.history.truth[self.version - 1].truth
        live = self.store.search(old.name, status=("active", "staged", "quarantined"))
        policy = rebase.get_policy(
            self.s.rebase_policy, **({"embedder": self.embedder} if self.s.rebase_policy == "embedding" else {})
        )
        result = rebase.apply(self.store, new, policy, old=old)
        by_id = {o.delta.id: o for o in result.outcomes}
        after = {d.id: d for d in self.store.search(old.name, include_superseded=True)}
        for d in live:
            fate = truth.get(d.anchor.section)
            o = by_id.get(d.id)
            now = after.get(d.id)
            self.rebase_rows.append(
                {
                    "session": session,
                    "version": self.version,
                    "delta_id": d.id,
                    "status_before": d.status,
                    "surfaced": o is not None,
                    "state": o.state if o else None,
                    "target": o.anchor.section if o and o.state != "orphaned" else None,
                    "true_target": fate.target if fate else None,
                    "true_changed": fate.changed if fate else True,
                    "body_changed": old.body != new.body,
                    "status_after": now.status if now else None,
                    "anchor_after": now.anchor.section if now else None,
                }
            )
        rng = self.rng["world"]
        survivors = [x.slug for x in anchor_mod.parse(new.body) if x.text.strip() and x.level > 0]
        for key, slug in self.section.items():
            fate = truth.get(slug)
            self.section[key] = fate.target if fate and fate.target else rng.choice(survivors)
        self.skill = new
        self.sections = anchor_mod.parse(new.body)
        self.authored = budget_mod.count_tokens(new.body)
        if self.s.headroom is not None:
            self.ceiling = self.authored + self.s.headroom
            self.budget.ceiling = self.ceiling
        self.budget.set_skill(new)
        self.version_counter += 1

    # -------------------------------------------------------------------------------------- run

    def session(self, n: int) -> None:
        s, now = self.s, T0 + timedelta(days=n)
        if s.base_update_every and n and n % s.base_update_every == 0 and self.version + 1 < len(self.history.versions):
            self.update_base(n)
        if s.drift and self.rng["drift"].random() < s.drift:
            x = self.rng["drift"].choice(self.situations)
            self.pref[x.key] = self.rng["drift"].choice([o for o in range(len(x.options)) if o != self.pref[x.key]])
        user, agent = self.rng["user"], self.rng["agent"]
        goal_need = user.choices(self.situations, self.weights)[0]
        goal = user.choice(goal_need.topic.goals)
        eff = self.resolve(goal)
        facts, staged = self.facts(), self.staged()
        sid = session_id(s.seed, n)
        learned_tokens = max(0, eff.tokens - self.authored)
        self.session_rows.append(
            {
                "session": n,
                "goal": goal_need.key,
                "tokens": eff.tokens,
                "authored_tokens": self.authored,
                "learned_tokens": learned_tokens,
                "ceiling": self.ceiling,
                "applied": len(eff.applied),
                "resident": sum(1 for d in eff.applied if d.tier > 1) - len(eff.notes_of("retrieved")),
                "retrieved": len(eff.notes_of("retrieved")),
                "atomic": self.atomic(eff),
                "tools_ok": set(self.tools.select(goal, eff.skill_tools, eff.withheld_tools).tools)
                <= set(self.skill.tools),
                "prompt_hash": _prompt_hash(eff),
                "version": self.version,
            }
        )
        told: dict[str, int] = {}
        for t in range(s.turns):
            x = goal_need if user.random() < s.focus else user.choice(self.situations)
            if eff.applied:
                evidence.record_context(self.store, sid, str(t), eff, at=now)
            option, how, did = self.act(x, eff, facts, staged, agent.random(), told)
            if how == "suggestion":
                evidence.record_context(self.store, sid, str(t), [did], role="suggested", at=now)
            right = option == self.pref[x.key]
            r, signal, rating = user.random(), None, None
            if how == "suggestion":  # declining a wrong suggestion states the lesson; a slip just declines
                slip = r < s.p_slip
                signal = ("undo" if slip else "accepted") if right else ("accepted" if slip else "correction")
            elif right:
                signal = "accepted" if r < s.p_ack else "rating" if r < s.p_ack + s.p_rate else None
                rating = user.choice((4, 5)) if signal == "rating" else None
            else:
                signal = "correction" if r < s.p_correct else "undo" if r < s.p_correct + s.p_undo else None
            attributed = 0
            if signal:
                a = evidence.record_signal(
                    self.store,
                    sid,
                    str(t),
                    signal,
                    rating=rating,
                    skill=self.skill.name,
                    section=self.section[x.key] if how != "suggestion" else None,
                    lesson=x.lesson(self.pref[x.key]) if signal == "correction" else None,
                    delta_ids=[did] if how == "suggestion" else None,
                    at=now,
                )
                attributed = len(a.attributed)
            if signal == "correction":
                told[x.key] = self.pref[x.key]
                self.teach(x, n, t, now)
            self.turn_rows.append(
                {
                    "session": n,
                    "turn": t,
                    "need": x.key,
                    "tier": x.tier,
                    "how": how,
                    "option": option,
                    "wanted": self.pref[x.key],
                    "right": right,
                    "signal": signal,
                    "attributed": attributed,
                    "delta_id": did,
                }
            )
        evidence.review_staged(
            self.store,
            skill=self.skill.name,
            min_samples=s.min_samples,
            threshold=s.threshold,
            wilson=s.wilson,
            retire_below=s.retire_below,
            at=now,
        )
        if s.review_every and (n + 1) % s.review_every == 0:
            self.review(now)
        if s.decay_days:
            evidence.decay(self.store, self.skill.name, now=now, idle=timedelta(days=s.decay_days))

    def evaluate(self) -> list[dict]:
        """Every need `eval_turns` times in three arms on common random numbers; nothing is written."""
        rows = []
        facts = self.facts()
        for x in self.situations:
            for i in range(self.s.eval_turns):
                rng = random.Random(f"deploy:eval:{self.s.seed}:{x.key}:{i}")
                goal, u = rng.choice(x.topic.goals), rng.random()
                for arm, eff, known in (
                    ("baseline", self.resolve(goal, store=False), {}),
                    ("off", self.resolve(goal, learned=False), {}),
                    ("on", self.resolve(goal), facts),
                ):
                    option, how, _ = self.act(x, eff, known, {}, u)
                    rows.append(
                        {
                            "arm": arm,
                            "need": x.key,
                            "category": x.category,
                            "i": i,
                            "option": option,
                            "how": how,
                            "correct": option == self.pref[x.key],
                            "prompt_hash": _prompt_hash(eff),
                            "tokens": eff.tokens,
                        }
                    )
        return rows


def settings(**params: Any) -> Settings:
    """`Settings` from keyword arguments, with a clear error naming any unknown one."""
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise TypeError(f"unknown deployment setting(s) {', '.join(unknown)}; settings are {', '.join(sorted(known))}")
    if "tier_mix" in params:
        params = {**params, "tier_mix": tuple(params["tier_mix"])}
    return Settings(**params)


@contextmanager
def _seeded_ids(seed: int) -> Iterator[None]:
    """Delta ids (uuid4) drawn from the run's seed for its duration, so ids — and any order that falls back
    on them, such as equal retrieval scores — are a function of the settings too."""
    rng = random.Random(f"deploy:ids:{seed}")
    real = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)
    try:
        yield
    finally:
        uuid.uuid4 = real


def run(**params: Any) -> Deployment:
    """One seeded deployment (`Settings` fields as keyword arguments) → its logs and store tables."""
    s = settings(**params)
    with _seeded_ids(s.seed):
        w = _World(s)
        try:
            for n in range(s.n_sessions):
                w.session(n)
            evals = w.evaluate()
            tables = store_tables(w.store)
        finally:
            w.store.close()
    frame = pd.DataFrame
    return Deployment(
        s,
        frame(w.turn_rows),
        frame(w.session_rows),
        frame(
            w.lesson_rows,
            columns=[
                "session",
                "turn",
                "need",
                "tier",
                "kind",
                "option",
                "wanted",
                "correct",
                "overreach",
                "outcome",
                "rule",
                "delta_id",
                "lesson_tier",
            ],
        ),
        frame(
            w.rebase_rows,
            columns=[
                "session",
                "version",
                "delta_id",
                "status_before",
                "surfaced",
                "state",
                "target",
                "true_target",
                "true_changed",
                "body_changed",
                "status_after",
                "anchor_after",
            ],
        ),
        frame(evals),
        tables,
        w.situations,
        tuple(w.skill.tools),
    )
