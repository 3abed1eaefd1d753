"""One world for the studies: a seeded, versioned, replayable trace of users, their agents, sessions, the goals
they open sessions with, the lessons they teach and the base updates their skills receive.

    w = world.build(seed=0)               # WORLD_VERSION, seeded: the same trace on every machine
    w.frame()                             # one row per session (user, agent, goal, category, needs, taught)
    w.digest()                            # sha256 of the trace: what a study's table names
    w.write(path); World.read(path)       # replay it (JSON lines, checked field by field)
    world.comeback(w)                     # does a retrieval-only lesson come back when a goal needs it?

Built from the corpora the studies already have: the lessons and goals of the τ corpus (datasets/tau: 36 tier-3
lessons in six domains, each with paraphrase goals that need it and near-miss, lexical-overlap, cross-domain and
adversarial goals that need nothing). Each user works with one to three agents (a domain each) and will teach
some of their lessons; a session opens with a goal in one of its user's domains: a paraphrase of a lesson the
user teaches (a *need*) with probability `p_need`, else a goal that needs nothing. The first session that needs
a lesson teaches it (the user corrects the agent); every later one needs it again. Every `update_every`
sessions each agent's skill ships a new version (the rebase studies' histories say what an update does).

`comeback` is the number 04, 06 and 07 share: with every taught lesson retrieval-only (demoted by the budget),
the share of needing sessions whose gate brings the needed lesson back, resampled by lesson; beside it the
wrong-lesson tokens a session injects, benign goals and adversarial ones reported apart.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .. import retrieval
from ..budget import count_many
from ..common import cosines, dumps
from ..metrics import Interval, ratio_ci
from ..resources import dataset_path

__all__ = [
    "BENIGN",
    "STRESS",
    "WORLD_VERSION",
    "Comeback",
    "WorldLesson",
    "WorldSession",
    "World",
    "WorldError",
    "build",
    "comeback",
    "learned_load",
    "lessons",
]

WORLD_VERSION = 1  # raised whenever `build` makes a different trace from the same arguments
BENIGN = ("near_miss", "lexical_overlap", "cross_domain")  # goals that need no lesson, asked in good faith
STRESS = ("adversarial",)  # goals stuffed with a lesson's keywords in front of an unrelated task


class WorldError(ValueError):
    """A trace file that cannot be replayed: names the file, the line and the field."""


@dataclass(frozen=True)
class WorldLesson:
    id: str
    domain: str
    skill: str
    section: str
    split: str  # the τ corpus' split: "calibration" (gates were tuned on it) or "test"
    trigger: str
    body: str


@dataclass(frozen=True)
class WorldSession:
    user: str
    index: int  # the user's n-th session
    agent: str  # the domain of the agent the session runs in
    goal: str
    category: str  # the goal's τ-corpus category: "paraphrase" (needs a lesson) or one of BENIGN / STRESS
    needs: str | None  # the lesson the goal needs
    taught: bool  # this session teaches `needs` (its first need of it)
    base_version: int  # the agent's skill version during the session


@lru_cache(maxsize=1)
def lessons() -> tuple[WorldLesson, ...]:
    """The τ corpus' lessons (datasets/tau/lessons.csv), in id order."""
    with open(dataset_path("tau", "lessons.csv"), newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return tuple(
        sorted(
            (
                WorldLesson(r["lesson_id"], r["domain"], r["skill"], r["section"], r["split"], r["trigger"], r["body"])
                for r in rows
            ),
            key=lambda lesson: lesson.id,
        )
    )


@lru_cache(maxsize=1)
def _goals() -> dict[tuple[str, str], tuple[tuple[str, str], ...]]:
    """{(domain, category): ((goal, lesson_id), ...)} from the τ corpus' pairs, in file order."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    with open(dataset_path("tau", "pairs.csv"), newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            out.setdefault((r["domain"], r["category"]), []).append((r["goal"], r["lesson_id"]))
    return {k: tuple(v) for k, v in out.items()}


@dataclass(frozen=True)
class World:
    version: int
    seed: int
    params: tuple[tuple[str, float], ...]  # build's arguments, as (name, value)
    sessions: tuple[WorldSession, ...]

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(s) for s in self.sessions], columns=[f.name for f in fields(WorldSession)])

    def digest(self) -> str:
        return hashlib.sha256(self._text().encode("utf-8")).hexdigest()

    def _text(self) -> str:
        head = dumps({"version": self.version, "seed": self.seed, "params": dict(self.params)})
        return "\n".join([head, *(dumps(asdict(s)) for s in self.sessions)]) + "\n"

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self._text(), encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: str | Path) -> "World":
        """A trace `write` wrote, checked line by line (`WorldError` naming the line and field)."""
        path = Path(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise WorldError(f"{path}: cannot read: {exc}") from exc
        if not lines:
            raise WorldError(f"{path}: empty")
        rows = []
        for n, line in enumerate(lines, 1):
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise WorldError(f"{path}:{n}: not JSON: {exc}") from exc
        head = rows[0]
        if not isinstance(head, dict) or set(head) != {"version", "seed", "params"}:
            raise WorldError(f"{path}:1: the header must hold version, seed and params")
        if head["version"] != WORLD_VERSION:
            raise WorldError(f"{path}:1: version: {head['version']!r}; this code replays version {WORLD_VERSION}")
        names = [f.name for f in fields(WorldSession)]
        sessions = []
        for n, row in enumerate(rows[1:], 2):
            if not isinstance(row, dict) or sorted(row) != sorted(names):
                missing = sorted(set(names) - set(row)) if isinstance(row, dict) else names
                raise WorldError(f"{path}:{n}: a session needs the fields {names}; missing {missing}")
            sessions.append(WorldSession(**row))
        return cls(head["version"], head["seed"], tuple(sorted(head["params"].items())), tuple(sessions))


def build(
    seed: int = 0,
    *,
    users: int = 12,
    sessions: int = 60,
    p_need: float = 0.6,
    taught_share: float = 0.5,
    adversarial_share: float = 0.1,
    update_every: int = 20,
) -> World:
    """The world of `seed`: `users` users of `sessions` sessions each (see the module's docstring).
    `taught_share`: the share of a user's domains' lessons they will teach; `adversarial_share`: the share of
    goals that need nothing which are adversarial."""
    if users < 1 or sessions < 1 or update_every < 1:
        raise ValueError("users, sessions and update_every must be at least 1")
    for name, p in (("p_need", p_need), ("taught_share", taught_share), ("adversarial_share", adversarial_share)):
        if not 0 <= p <= 1:
            raise ValueError(f"{name}: {p!r} is not a probability in [0, 1]")
    rng = random.Random(f"world-v{WORLD_VERSION}-{seed}")
    by_domain: dict[str, list[WorldLesson]] = {}
    for lesson in lessons():
        by_domain.setdefault(lesson.domain, []).append(lesson)
    domains = sorted(by_domain)
    goals = _goals()
    out = []
    for u in range(users):
        user = f"user-{u:02d}"
        agents = rng.sample(domains, rng.randint(1, min(3, len(domains))))
        teaches = {d: [x.id for x in by_domain[d] if rng.random() < taught_share] for d in agents}
        seen: set[str] = set()
        for i in range(sessions):
            agent = rng.choice(agents)
            if teaches[agent] and rng.random() < p_need:
                need = rng.choice(teaches[agent])
                goal = rng.choice([g for g, lid in goals[(agent, "paraphrase")] if lid == need])
                category = "paraphrase"
            else:
                need = None
                category = STRESS[0] if rng.random() < adversarial_share else rng.choice(BENIGN)
                goal = rng.choice(goals[(agent, category)])[0]
            out.append(
                WorldSession(
                    user, i, agent, goal, category, need, need is not None and need not in seen, i // update_every
                )
            )
            if need is not None:
                seen.add(need)
    params = (
        ("adversarial_share", adversarial_share),
        ("p_need", p_need),
        ("sessions", sessions),
        ("taught_share", taught_share),
        ("update_every", update_every),
        ("users", users),
    )
    return World(WORLD_VERSION, seed, params, tuple(out))


def learned_load(world: World) -> pd.DataFrame:
    """Per user: the lessons they have taught by their last session and those lessons' tokens, were every one
    resident (the most a learning budget would hold for that user; 08 prices it)."""
    tokens = dict(zip((x.id for x in lessons()), count_many([x.body for x in lessons()])))
    taught = world.frame().query("taught").groupby("user")["needs"].agg(list)
    users = sorted({s.user for s in world.sessions})
    return pd.DataFrame(
        [
            {"user": u, "lessons": len(taught.get(u, [])), "learned_tokens": sum(tokens[i] for i in taught.get(u, []))}
            for u in users
        ]
    )


# ---------------------------------------------------------------------------------------- comeback


@dataclass(frozen=True)
class Comeback:
    """`comeback`'s answer for one embedder and gate."""

    embedder: str
    gate: str
    world: str  # the trace's digest
    split: str
    needed: int  # needing sessions counted (after the lesson was taught)
    recall: Interval  # share of them whose needed lesson the gate brought back (resampled by lesson)
    wrong_tokens_benign: Interval  # wrong-lesson tokens per benign session (resampled by user)
    wrong_tokens_stress: Interval  # the same on adversarial goals: the stress case, reported apart
    table: pd.DataFrame  # one row per counted session: user, lesson, category, came_back, wrong_tokens

    def to_dict(self) -> dict:
        return {
            "embedder": self.embedder,
            "gate": self.gate,
            "world": self.world[:12],
            "split": self.split,
            "needed": self.needed,
            "recall": self.recall.estimate,
            "recall_low": self.recall.low,
            "recall_high": self.recall.high,
            "wrong_tokens_benign": self.wrong_tokens_benign.estimate,
            "wrong_tokens_benign_high": self.wrong_tokens_benign.high,
            "wrong_tokens_stress": self.wrong_tokens_stress.estimate,
        }


def comeback(
    world: World,
    embedder=None,
    gate: retrieval.Gate | float | None = None,
    *,
    split: str = "test",
    n_boot: int = 1000,
    seed: int = 0,
) -> Comeback:
    """Every taught lesson retrieval-only (in its user's trigger index, none resident): for each session after
    a lesson was taught, what the gate retrieves for its goal from the user's taught lessons so far.

    `embedder`: the bundled one by default; `gate`: the embedder's shipped calibrated gate by default (a float
    is an absolute τ). `split`: count needs of lessons of this τ-corpus split only ("test": never tuned on;
    "all"). Recall is resampled by lesson (the independent unit of the goals), wrong-lesson tokens by user."""
    emb = embedder or retrieval.static_embedder()
    emb_id = getattr(emb, "id", type(emb).__name__)
    if gate is None:
        gate = retrieval.gate_for(emb_id)[0]
    gate = retrieval.Gate.absolute(gate) if isinstance(gate, (int, float)) else gate
    by_id = {x.id: x for x in lessons()}
    ids = sorted(by_id)
    column = {lid: k for k, lid in enumerate(ids)}
    triggers = emb.encode([by_id[i].trigger for i in ids])
    goal_texts = sorted({s.goal for s in world.sessions})
    goal_row = {g: k for k, g in enumerate(goal_texts)}
    cosine = cosines(getattr(emb, "encode_query", emb.encode)(goal_texts), triggers)  # goals as queries (e5)
    tokens = dict(zip(ids, count_many([by_id[i].body for i in ids])))
    rows = []
    taught: dict[str, list[str]] = {}
    for s in world.sessions:
        have = taught.setdefault(s.user, [])
        if have and not s.taught:
            cols = [column[i] for i in have]
            admitted = gate.admit(cosine[[goal_row[s.goal]]][:, cols])[0]
            got = [have[k] for k in np.flatnonzero(admitted)]
            rows.append(
                {
                    "user": s.user,
                    "index": s.index,
                    "lesson": s.needs,
                    "category": s.category,
                    "came_back": s.needs in got,
                    "wrong_tokens": sum(tokens[i] for i in got if i != s.needs),
                }
            )
        if s.taught:
            have.append(s.needs)
    table = pd.DataFrame(rows, columns=["user", "index", "lesson", "category", "came_back", "wrong_tokens"])
    needs = table[table.lesson.notna()]
    if split != "all":
        needs = needs[needs.lesson.map(lambda i: by_id[i].split) == split]
    per_lesson = needs.groupby("lesson").came_back.agg(["sum", "count"])
    recall = ratio_ci(per_lesson["sum"], per_lesson["count"], n_resamples=n_boot, seed=seed)

    def tokens_per_session(categories: Sequence[str]) -> Interval:
        part = table[table.category.isin(categories)].groupby("user").wrong_tokens.agg(["sum", "count"])
        return ratio_ci(part["sum"], part["count"], n_resamples=n_boot, seed=seed)

    return Comeback(
        emb_id,
        str(gate),
        world.digest(),
        split,
        len(needs),
        recall,
        tokens_per_session(BENIGN),
        tokens_per_session(STRESS),
        table,
    )
