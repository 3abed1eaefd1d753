"""One world for the studies: a seeded, versioned, replayable trace of users, their agents, sessions, the goals
they open sessions with, the lessons they teach and the base updates their skills receive.

    w = world.build(seed=0)               # WORLD_VERSION, seeded: the same trace on every machine
    w = world.build(0, scale="realistic") # agents holding tens to hundreds of lessons (below)
    w.frame()                             # one row per session (user, agent, goal, category, needs, taught)
    w.lessons()                           # the lessons this world draws from (`lessons(scale)`)
    w.digest()                            # sha256 of the trace: what a study's table names
    w.write(path); World.read(path)       # replay it (JSON lines, checked field by field)
    world.comeback(w)                     # does a retrieval-only lesson come back when a goal needs it?

**scale="tau"** (the default) is built from the τ corpus (datasets/tau: 36 tier-3 lessons in six domains, each
with paraphrase goals that need it and near-miss, lexical-overlap, cross-domain and adversarial goals that need
nothing). Each user works with one to three agents (a domain each) and will teach some of their lessons; a
session opens with a goal in one of its user's domains: a paraphrase of a lesson the user teaches (a *need*) with
probability `p_need`, else a goal that needs nothing. The first session that needs a lesson teaches it (the user
corrects the agent); every later one needs it again. At most six lessons an agent.

**scale="realistic"** is built from the selection corpus' development set only (datasets/selection/dev,
FORMAT.md: a mailbox agent of 300 lessons on the triage-inbox skill, a coding agent of 150; the held-out sets
are never read here). Each user owns a mailbox agent, a coding agent or both, and runs between an eighth of
`sessions` and `sessions` sessions, each in one of their agents. A session needs a lesson with probability
`p_need`: while the agent has lessons left to learn, a new one with probability `p_new` (taught in an order
drawn per user), else one it holds. A lesson's first need opens with its `taught` goal (the session teaches
it: `taught=True`; that goal is its trigger), its second with its `restated` goal, every later one with one
of its four `goals` — the evaluation paraphrases, which never become a trigger, so a selection never sees the
goals it is judged on; studies that tune split lessons (and with them their goal families) by
`split_of(lesson id)` (`WorldLesson.split`: tune / eval). With probability `p_multi` a needing session opens
instead with a goal line that needs two or three lessons the agent holds; a session that needs nothing opens
with one of the agent's no-need goal lines (category "none").

Trace format: JSON lines, a header (version, seed, params: build's arguments; a realistic world's also name
`scale`) and one object per `WorldSession`. A session that needs several lessons names the first in `needs`
and the others in `also_needs`, a field written only when it is non-empty (a τ trace has none, so its text and
digest are what they were before the field existed); `World.read` takes it when present. `WorldSession.need_ids`
gives every lesson a session needs.

In `build(0, scale="realistic")` (computed by `figures`, checked by tests/test_world.py): 8 users, 2,298 sessions
(136 to 598 a user); 12 agents holding 41 to 300 lessons at their last session (median 81); sessions needing no
lesson 0.21, one 0.75, several 0.04; of the 732 needs of a lesson already taught, 0.56 open with a goal that shares
no word with the lesson's trigger.

`comeback` is the number 04, 06 and 07 share: with every taught lesson retrieval-only (demoted by the budget),
the share of needing sessions whose gate brings the needed lesson back, resampled by lesson; beside it the
wrong-lesson tokens a session injects, benign goals and adversarial ones reported apart. On a realistic world it
also measures the shipped selection (`mode="selection"`: every taught lesson resident, the goal selecting the
`SHIPPED.select_k` best once the agent holds more than `SHIPPED.resident_max`), each needed lesson of a goal
counted, with the share of what is in context that the goal does not need and the learned tokens per goal.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .. import retrieval
from .. import selection as sel
from ..anchor import parse
from ..budget import count_many
from ..common import cosines, dumps
from ..defaults import SHIPPED
from ..metrics import Interval, ratio_ci
from ..resources import dataset_path
from ..skill import load_skill

__all__ = [
    "BENIGN",
    "NONE",
    "SCALES",
    "STRESS",
    "WORLD_VERSION",
    "Comeback",
    "CorpusGoal",
    "CorpusLesson",
    "SelectionCorpus",
    "SelectionCorpusError",
    "WorldLesson",
    "WorldSession",
    "World",
    "WorldError",
    "build",
    "comeback",
    "describe",
    "figures",
    "in_context",
    "learned_load",
    "lessons",
    "selection_corpus",
    "shares_word",
    "split_of",
]

WORLD_VERSION = 1  # raised whenever `build` makes a different trace from the same arguments
SCALES = ("tau", "realistic")
BENIGN = ("near_miss", "lexical_overlap", "cross_domain")  # goals that need no lesson, asked in good faith
STRESS = ("adversarial",)  # goals stuffed with a lesson's keywords in front of an unrelated task
NONE = ("none",)  # a realistic world's goals that need no lesson (the corpus' no-need goal lines)


class WorldError(ValueError):
    """A trace file that cannot be replayed: names the file, the line and the field."""


@dataclass(frozen=True)
class WorldLesson:
    id: str
    domain: str  # the agent it belongs to: a τ domain, or a selection-corpus agent (mailbox, coding)
    skill: str
    section: str
    split: str  # τ: "calibration" (gates were tuned on it) or "test"; realistic: `split_of(id)`, tune or eval
    trigger: str  # the goal it was taught at (realistic: the corpus' `taught`)
    body: str
    restated: str = ""  # realistic: the goal of its second need
    goals: tuple[str, ...] = ()  # realistic: the goals of its later needs (evaluation paraphrases)


@dataclass(frozen=True)
class WorldSession:
    user: str
    index: int  # the user's n-th session
    agent: str  # the domain of the agent the session runs in
    goal: str
    # τ: the goal's τ-corpus category, "paraphrase" (needs a lesson) or one of BENIGN / STRESS; realistic:
    # "taught", "restated", "paraphrase" (a later need: one of the lesson's `goals`), "multi" or "none"
    category: str
    needs: str | None  # the lesson the goal needs (the first, when it needs several)
    taught: bool  # this session teaches `needs` (its first need of it)
    base_version: int  # the agent's skill version during the session
    also_needs: tuple[str, ...] = ()  # the other lessons a goal needing several needs (written only when any)

    @property
    def need_ids(self) -> tuple[str, ...]:
        """Every lesson the goal needs."""
        return () if self.needs is None else (self.needs, *self.also_needs)


# ------------------------------------------------------------------------------------- shared words

_WORD = re.compile(r"[a-z0-9]+")


def _content_words(text: str, min_chars: int) -> set[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return {w for w in _WORD.findall(text.lower()) if len(w) >= min_chars and w not in ENGLISH_STOP_WORDS}


def shares_word(goal: str, trigger: str, min_chars: int = 3, stem_chars: int = 5) -> bool:
    """Whether a goal shares a content word with a trigger: lower-case alphanumeric runs of ≥ `min_chars`
    characters outside scikit-learn's English stop words; two words match when equal or when their first
    `stem_chars` characters are (a crude stem: "declining" matches "decline")."""
    a, b = _content_words(goal, min_chars), _content_words(trigger, min_chars)
    return bool(a & b) or bool({w[:stem_chars] for w in a} & {w[:stem_chars] for w in b})


# ------------------------------------------------------------------------------------- the τ corpus


@lru_cache(maxsize=1)
def _tau_lessons() -> tuple[WorldLesson, ...]:
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


def lessons(scale: str = "tau") -> tuple[WorldLesson, ...]:
    """The lessons a world of `scale` draws from, in id order: the τ corpus' (datasets/tau/lessons.csv), or the
    selection corpus' development set (realistic)."""
    if scale == "tau":
        return _tau_lessons()
    if scale == "realistic":
        return _realistic_lessons()
    raise ValueError(f"scale: {scale!r} is not one of {SCALES}")


@lru_cache(maxsize=1)
def _goals() -> dict[tuple[str, str], tuple[tuple[str, str], ...]]:
    """{(domain, category): ((goal, lesson_id), ...)} from the τ corpus' pairs, in file order."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    with open(dataset_path("tau", "pairs.csv"), newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            out.setdefault((r["domain"], r["category"]), []).append((r["goal"], r["lesson_id"]))
    return {k: tuple(v) for k, v in out.items()}


# ------------------------------------------------------------------------------- the selection corpus

LESSON_FIELDS = ("id", "agent", "section", "kind", "body", "taught", "restated", "goals")
GOAL_FIELDS = ("goal", "agent", "needs")


class SelectionCorpusError(ValueError):
    """A corpus file that cannot be read: names the file, the line and the field."""

    def __init__(self, path: str | Path, line: int, field: str, message: str):
        self.path, self.line, self.field = str(path), line, field
        super().__init__(f"{path}:{line}: {field}: {message}")


@dataclass(frozen=True)
class CorpusLesson:
    id: str
    agent: str
    section: str
    kind: str
    body: str
    taught: str
    restated: str
    goals: tuple[str, ...]


@dataclass(frozen=True)
class CorpusGoal:
    goal: str
    agent: str
    needs: tuple[str, ...]


@dataclass(frozen=True)
class SelectionCorpus:
    name: str
    lessons: tuple[CorpusLesson, ...]
    goals: tuple[CorpusGoal, ...]
    sections: dict[str, dict[str, str]]  # agent → section slug → the section's text (heading and body)
    skills: dict[str, Path] = field(default_factory=dict)  # agent → the SKILL.md its lessons anchor to

    def agents(self) -> list[str]:
        return sorted({lesson.agent for lesson in self.lessons})


def selection_corpus(name: str = "dev", root: str | Path | None = None) -> SelectionCorpus:
    """The selection corpus `datasets/selection/<name>` (or `root`), every line checked (FORMAT.md). The world
    reads the development set only; a held-out set is read only when a study names it."""
    base = Path(root) if root is not None else dataset_path("selection", name)
    if not base.is_dir():
        raise SelectionCorpusError(base, 0, "folder", "no such corpus")
    lessons, goals, sections, skills = [], [], {}, {}
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        skill_file = folder / "SKILL.md"
        if (folder / "skill.txt").is_file():
            skill_file = dataset_path("skills", (folder / "skill.txt").read_text(encoding="utf-8").strip(), "SKILL.md")
        skill = load_skill(skill_file)
        slugs = {s.slug: s.text for s in parse(skill.body) if s.level == 2}
        sections[folder.name], skills[folder.name] = slugs, skill_file
        for path in sorted(folder.glob("*.jsonl")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    _read_line(path, n, line, folder.name, slugs, lessons, goals)
    ids = [lesson.id for lesson in lessons]
    if len(set(ids)) != len(ids):
        raise SelectionCorpusError(base, 0, "id", f"repeated: {sorted({i for i in ids if ids.count(i) > 1})[:5]}")
    known = set(ids)
    for g in goals:
        if not set(g.needs) <= known:
            raise SelectionCorpusError(
                base, 0, "needs", f"{g.goal!r} names unknown lessons {sorted(set(g.needs) - known)}"
            )
    return SelectionCorpus(name, tuple(lessons), tuple(goals), sections, skills)


def _read_line(path: Path, n: int, line: str, agent: str, slugs: dict, lessons: list, goals: list) -> None:
    try:
        r = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SelectionCorpusError(path, n, "line", f"not JSON: {exc}") from exc
    names = LESSON_FIELDS if isinstance(r, dict) and "id" in r else GOAL_FIELDS
    if not isinstance(r, dict) or set(r) != set(names):
        raise SelectionCorpusError(path, n, "fields", f"expected {names}")
    if r["agent"] != agent:
        raise SelectionCorpusError(path, n, "agent", f"{r['agent']!r} in the folder of {agent!r}")
    if names is GOAL_FIELDS:
        if not isinstance(r["needs"], list) or not all(isinstance(x, str) for x in r["needs"]):
            raise SelectionCorpusError(path, n, "needs", "must be a list of lesson ids")
        goals.append(CorpusGoal(_text(path, n, r, "goal"), agent, tuple(r["needs"])))
        return
    if r["section"] not in slugs:
        raise SelectionCorpusError(
            path, n, "section", f"{r['section']!r} is not a ## section of the skill: {sorted(slugs)}"
        )
    if r["kind"] not in ("preference", "example"):
        raise SelectionCorpusError(path, n, "kind", "must be preference or example")
    if not isinstance(r["goals"], list) or len(r["goals"]) != 4:
        raise SelectionCorpusError(path, n, "goals", "must be a list of four goals")
    lessons.append(
        CorpusLesson(
            _text(path, n, r, "id"),
            agent,
            r["section"],
            r["kind"],
            _text(path, n, r, "body"),
            _text(path, n, r, "taught"),
            _text(path, n, r, "restated"),
            tuple(_text(path, n, {"goals": g}, "goals") for g in r["goals"]),
        )
    )


def _text(path, n, r, key) -> str:
    if not isinstance(r[key], str) or not r[key].strip():
        raise SelectionCorpusError(path, n, key, "must be non-empty text")
    return r[key].strip()


def split_of(key: str) -> str:
    """tune or eval, from the key's hash (a lesson's id; a no-need goal's text): the same on every machine."""
    return "tune" if hashlib.sha256(key.encode("utf-8")).digest()[0] % 2 == 0 else "eval"


@lru_cache(maxsize=1)
def _dev() -> SelectionCorpus:
    return selection_corpus("dev")


@lru_cache(maxsize=1)
def _realistic_lessons() -> tuple[WorldLesson, ...]:
    corpus = _dev()
    names = {agent: load_skill(path).name for agent, path in corpus.skills.items()}
    return tuple(
        sorted(
            (
                WorldLesson(
                    x.id,
                    x.agent,
                    names[x.agent],
                    x.section,
                    split_of(x.id),
                    x.taught,
                    x.body,
                    x.restated,
                    x.goals,
                )
                for x in corpus.lessons
            ),
            key=lambda lesson: lesson.id,
        )
    )


# ------------------------------------------------------------------------------------------ the world


@dataclass(frozen=True)
class World:
    version: int
    seed: int
    params: tuple[tuple[str, float | str], ...]  # build's arguments, as (name, value)
    sessions: tuple[WorldSession, ...]

    @property
    def scale(self) -> str:
        return str(dict(self.params).get("scale", "tau"))

    def lessons(self) -> tuple[WorldLesson, ...]:
        """The lessons this world draws from (`lessons(self.scale)`)."""
        return lessons(self.scale)

    def frame(self) -> pd.DataFrame:
        """One row per session; a realistic world's frame also has `also_needs`."""
        names = [f.name for f in fields(WorldSession)]
        if self.scale == "tau":
            names.remove("also_needs")
        return pd.DataFrame([{k: getattr(s, k) for k in names} for s in self.sessions], columns=names)

    def digest(self) -> str:
        return hashlib.sha256(self._text().encode("utf-8")).hexdigest()

    def _text(self) -> str:
        head = dumps({"version": self.version, "seed": self.seed, "params": dict(self.params)})
        return "\n".join([head, *(dumps(_row(s)) for s in self.sessions)]) + "\n"

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
        if not isinstance(head["params"], dict) or head["params"].get("scale", "tau") not in SCALES:
            raise WorldError(f"{path}:1: params: must be an object whose scale, if any, is one of {SCALES}")
        names = [f.name for f in fields(WorldSession)]
        required = [n for n in names if n != "also_needs"]
        sessions = []
        for n, row in enumerate(rows[1:], 2):
            if not isinstance(row, dict) or not set(required) <= set(row) or not set(row) <= set(names):
                missing = sorted(set(required) - set(row)) if isinstance(row, dict) else required
                extra = sorted(set(row) - set(names)) if isinstance(row, dict) else []
                raise WorldError(
                    f"{path}:{n}: a session needs the fields {required} (and may hold also_needs); "
                    f"missing {missing}, unknown {extra}"
                )
            sessions.append(_session(path, n, row))
        return cls(head["version"], head["seed"], tuple(sorted(head["params"].items())), tuple(sessions))


def _row(s: WorldSession) -> dict:
    """A session as its trace line: `also_needs` only when it names any."""
    row = asdict(s)
    if not s.also_needs:
        del row["also_needs"]
    return row


_TYPES = {
    "user": str,
    "index": int,
    "agent": str,
    "goal": str,
    "category": str,
    "taught": bool,
    "base_version": int,
}


def _session(path: Path, n: int, row: dict) -> WorldSession:
    for key, kind in _TYPES.items():
        value = row[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise WorldError(f"{path}:{n}: {key}: {value!r} is not {kind.__name__}")
    if row["needs"] is not None and not isinstance(row["needs"], str):
        raise WorldError(f"{path}:{n}: needs: {row['needs']!r} is neither a lesson id nor null")
    also = row.get("also_needs", [])
    if not isinstance(also, list) or not all(isinstance(x, str) for x in also) or (also and row["needs"] is None):
        raise WorldError(f"{path}:{n}: also_needs: {also!r} is not a list of lesson ids beside needs")
    return WorldSession(**{**row, "also_needs": tuple(also)})


def build(
    seed: int = 0,
    *,
    scale: str = "tau",
    users: int | None = None,
    sessions: int | None = None,
    p_need: float | None = None,
    taught_share: float = 0.5,
    adversarial_share: float = 0.1,
    update_every: int = 20,
    p_new: float = 0.7,
    p_multi: float = 0.1,
) -> World:
    """The world of `seed` at `scale` (see the module's docstring). τ: `users` users (12) of `sessions` sessions
    each (60), `p_need` 0.6; `taught_share`: the share of a user's domains' lessons they will teach;
    `adversarial_share`: the share of goals that need nothing which are adversarial. Realistic: `users` (8), each
    running up to `sessions` sessions (600), `p_need` 0.8, `p_new` and `p_multi` (the module's docstring)."""
    if scale not in SCALES:
        raise ValueError(f"scale: {scale!r} is not one of {SCALES}")
    tau = scale == "tau"
    users = users if users is not None else 12 if tau else 8
    sessions = sessions if sessions is not None else 60 if tau else 600
    p_need = p_need if p_need is not None else 0.6 if tau else 0.8
    if users < 1 or sessions < 1 or update_every < 1:
        raise ValueError("users, sessions and update_every must be at least 1")
    probabilities = [("p_need", p_need), ("taught_share", taught_share), ("adversarial_share", adversarial_share)]
    for name, p in probabilities + [("p_new", p_new), ("p_multi", p_multi)]:
        if not 0 <= p <= 1:
            raise ValueError(f"{name}: {p!r} is not a probability in [0, 1]")
    if not tau:
        return _realistic(seed, users, sessions, p_need, p_new, p_multi, update_every)
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


def _realistic(
    seed: int, users: int, sessions: int, p_need: float, p_new: float, p_multi: float, update_every: int
) -> World:
    rng = random.Random(f"world-v{WORLD_VERSION}-realistic-{seed}")
    corpus = _dev()
    by_id = {x.id: x for x in lessons("realistic")}
    agents = corpus.agents()
    mine = {a: sorted(x.id for x in corpus.lessons if x.agent == a) for a in agents}
    multi = {a: [g for g in corpus.goals if g.agent == a and g.needs] for a in agents}
    none = {a: [g.goal for g in corpus.goals if g.agent == a and not g.needs] for a in agents}
    out = []
    for u in range(users):
        user = f"user-{u:02d}"
        owns = [a for a in agents if rng.random() < 0.7] or [rng.choice(agents)]
        order = {a: rng.sample(mine[a], len(mine[a])) for a in owns}  # the order the user will teach them in
        held: dict[str, list[str]] = {a: [] for a in owns}
        uses: dict[str, int] = {}  # needs of each held lesson by its own goals (taught, restated, later)
        for i in range(rng.randint(max(1, sessions // 8), sessions)):
            agent = rng.choice(owns)
            have = held[agent]
            needs: tuple[str, ...] = ()
            taught = False
            if rng.random() < p_need:
                ready = [g for g in multi[agent] if set(g.needs) <= set(have)]
                left = len(have) < len(order[agent])
                if ready and rng.random() < p_multi:
                    g = rng.choice(ready)
                    goal, needs, category = g.goal, g.needs, "multi"
                elif left and (not have or rng.random() < p_new):
                    lesson = by_id[order[agent][len(have)]]
                    have.append(lesson.id)
                    uses[lesson.id], taught = 1, True
                    goal, needs, category = lesson.trigger, (lesson.id,), "taught"
                else:
                    lesson = by_id[rng.choice(have)]
                    uses[lesson.id] += 1
                    later = uses[lesson.id] > 2
                    goal = rng.choice(lesson.goals) if later else lesson.restated
                    needs, category = (lesson.id,), "paraphrase" if later else "restated"
            if not needs:
                goal, category = rng.choice(none[agent]), NONE[0]
            first = needs[0] if needs else None
            out.append(WorldSession(user, i, agent, goal, category, first, taught, i // update_every, tuple(needs[1:])))
    params = (
        ("p_multi", p_multi),
        ("p_need", p_need),
        ("p_new", p_new),
        ("scale", "realistic"),
        ("sessions", sessions),
        ("update_every", update_every),
        ("users", users),
    )
    return World(WORLD_VERSION, seed, params, tuple(out))


def learned_load(world: World) -> pd.DataFrame:
    """Per user: the lessons they have taught by their last session and those lessons' tokens, were every one
    resident (the most a learning budget would hold for that user; 08 prices it)."""
    pool = world.lessons()
    tokens = dict(zip((x.id for x in pool), count_many([x.body for x in pool])))
    taught = world.frame().query("taught").groupby("user")["needs"].agg(list)
    users = sorted({s.user for s in world.sessions})
    return pd.DataFrame(
        [
            {"user": u, "lessons": len(taught.get(u, [])), "learned_tokens": sum(tokens[i] for i in taught.get(u, []))}
            for u in users
        ]
    )


def figures(world: World) -> dict[str, float]:
    """What a trace holds: users, sessions per user, lessons per agent at its last session, the shares of
    sessions needing no lesson, one, or several, and of the needs of a lesson already taught (each lesson a goal
    needs counted) the share whose goal shares no word with that lesson's trigger (`shares_word`)."""
    by_id = {x.id: x for x in world.lessons()}
    f = world.frame()
    held = f[f.taught].groupby(["user", "agent"]).size()
    n_needs = np.array([len(s.need_ids) for s in world.sessions])
    later = [(s.goal, i) for s in world.sessions if not s.taught for i in s.need_ids]
    quiet = sum(not shares_word(goal, by_id[i].trigger) for goal, i in later)
    per_user = f.groupby("user").size()
    return {
        "users": int(f.user.nunique()),
        "sessions": len(f),
        "sessions_per_user_min": int(per_user.min()),
        "sessions_per_user_max": int(per_user.max()),
        "agents": len(held),
        "lessons_per_agent_min": int(held.min()) if len(held) else 0,
        "lessons_per_agent_median": float(held.median()) if len(held) else 0.0,
        "lessons_per_agent_max": int(held.max()) if len(held) else 0,
        "needs_none": float(np.mean(n_needs == 0)),
        "needs_one": float(np.mean(n_needs == 1)),
        "needs_several": float(np.mean(n_needs > 1)),
        "later_needs": len(later),
        "no_shared_word": quiet / max(len(later), 1),
    }


def describe(fig: dict[str, float]) -> str:
    """`figures` in a sentence (the module docstring states the default realistic world's)."""
    return (
        f"{fig['users']} users, {fig['sessions']:,} sessions ({fig['sessions_per_user_min']} to "
        f"{fig['sessions_per_user_max']} a user); {fig['agents']} agents holding {fig['lessons_per_agent_min']} to "
        f"{fig['lessons_per_agent_max']} lessons at their last session (median {fig['lessons_per_agent_median']:g}); "
        f"sessions needing no lesson {fig['needs_none']:.2f}, one {fig['needs_one']:.2f}, several "
        f"{fig['needs_several']:.2f}; of the {fig['later_needs']:,} needs of a lesson already taught, "
        f"{fig['no_shared_word']:.2f} open with a goal that shares no word with the lesson's trigger."
    )


# ---------------------------------------------------------------------------------------- comeback


@dataclass(frozen=True)
class Comeback:
    """`comeback`'s answer for one embedder and gate (or the shipped selection)."""

    embedder: str
    gate: str
    world: str  # the trace's digest
    split: str
    needed: int  # needing sessions counted (after the lesson was taught); realistic: needs, each lesson counted
    recall: Interval  # share of them whose needed lesson the gate brought back (resampled by lesson)
    wrong_tokens_benign: Interval  # wrong-lesson tokens per benign session (resampled by user)
    wrong_tokens_stress: Interval  # the same on adversarial goals: the stress case, reported apart
    table: pd.DataFrame  # one row per counted session: user, lesson, category, came_back, wrong_tokens
    # realistic worlds only (None on τ): the share of what is in context that the goal does not need, and the
    # learned tokens in context per goal, over every counted session (resampled by user)
    irrelevant_share: Interval | None = None
    tokens_per_goal: Interval | None = None
    needs: pd.DataFrame | None = None  # realistic: one row per counted need (need, found, no_shared_word, ...)

    def to_dict(self) -> dict:
        out = {
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
        if self.irrelevant_share is not None and self.tokens_per_goal is not None:
            out |= {
                "irrelevant_share": self.irrelevant_share.estimate,
                "tokens_per_goal": self.tokens_per_goal.estimate,
            }
        return out

    def by_category(self) -> pd.DataFrame:
        """Realistic worlds: needed-lesson recall per kind of need (restated: cold, the lesson's only trigger the
        goal it was taught at; paraphrase: after the restatement joined its triggers; multi), and among the needs
        whose goal shares no word with the trigger."""
        t = self.needs if self.needs is not None else pd.DataFrame(columns=["category", "found", "no_shared_word"])
        rows = [*t.groupby("category", sort=True), ("no shared word", t[t.no_shared_word.astype(bool)])]
        return pd.DataFrame(
            [{"needs": name, "counted": len(g), "recall": round(float(g.found.mean()), 3)} for name, g in rows]
        )


def comeback(
    world: World,
    embedder=None,
    gate: retrieval.Gate | float | None = None,
    *,
    mode: str = "gate",
    split: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> Comeback:
    """Every taught lesson retrieval-only (in its user's trigger index, none resident): for each session after
    a lesson was taught, what the gate retrieves for its goal from the user's taught lessons so far.

    `embedder`: the bundled one by default; `gate`: the embedder's shipped calibrated gate by default (a float
    is an absolute τ). `split`: count needs of lessons of this split only (τ: "test", never tuned on, by
    default; realistic: "eval" by default; "all"). Recall is resampled by lesson (the independent unit of the
    goals), wrong-lesson tokens by user.

    Realistic worlds: each agent's own taught lessons (a lesson's trigger: the goal it was taught at), every
    lesson a goal needs counted; `mode="selection"` asks the shipped selection instead of the gate
    (`selection.shipped_rule()` over every lesson taught so far, resident; triggers: the taught goal, and the
    restated goal once its session has passed; an agent holding `SHIPPED.resident_max` or fewer keeps them all)."""
    if mode not in ("gate", "selection"):
        raise ValueError(f"mode: {mode!r} is not gate or selection")
    emb = embedder or retrieval.static_embedder()
    emb_id = getattr(emb, "id", type(emb).__name__)
    if mode == "gate":
        if gate is None:
            gate = retrieval.gate_for(emb_id)[0]
        gate = retrieval.Gate.absolute(gate) if isinstance(gate, (int, float)) else gate
    if world.scale != "tau":
        return _comeback_realistic(world, emb, emb_id, gate, mode, split or "eval", n_boot, seed)
    if mode != "gate":
        raise ValueError("mode='selection' needs a realistic world (a τ agent holds at most six lessons)")
    split = split or "test"
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


class _Queries:
    """An embedder whose goals are looked up (encoded once for the whole trace): `selection.score` unchanged."""

    def __init__(self, embedder, goals: Sequence[str]):
        self.embedder = embedder
        encode = getattr(embedder, "encode_query", embedder.encode)
        self.vectors = dict(zip(goals, np.asarray(encode(list(goals)), dtype=np.float64)))

    def encode(self, items):
        return self.embedder.encode(items)

    def encode_query(self, items):
        return np.stack([self.vectors[t] for t in items])


def in_context(
    world: World,
    embedder,
    gate: retrieval.Gate | None,
    demote: Callable[[WorldSession, list[str]], Collection[str]],
) -> pd.DataFrame:
    """A realistic world's sessions with what the product puts in context for each goal, over the lessons its
    agent was taught before it: `demote(session, held)` names those of `held` that are retrieval-only (the
    budget demoted them), the rest are resident. The resident ones all stay while there are at most
    `SHIPPED.resident_max`, else the goal selects the `select_k` best (`selection.shipped_rule()`; a lesson's
    triggers: its taught goal, and its restated goal once that session has passed); a retrieval-only one comes
    back when the gate admits the goal's cosine to its trigger. One row per session whose agent holds any
    lesson (`taught` ones included): the session, `held`, `resident` (counts), `chosen` (ids in context)."""
    by_id = {x.id: x for x in world.lessons()}
    sections = _dev().sections
    goals = sorted({s.goal for s in world.sessions})
    queries = _Queries(embedder, goals)
    ids = sorted(by_id)
    column = {lid: k for k, lid in enumerate(ids)}
    row = {g: k for k, g in enumerate(goals)}
    cosine = None
    rule, vectors = sel.shipped_rule(), {}
    held: dict[tuple[str, str], list[str]] = {}
    restated: set[tuple[str, str]] = set()
    out = []
    for s in world.sessions:
        have = held.setdefault((s.user, s.agent), [])
        if have:
            out_of = set(demote(s, have))
            resident = [i for i in have if i not in out_of]
            pool = [i for i in have if i in out_of]
            chosen = list(resident)
            if len(resident) > SHIPPED.resident_max:
                candidates = [
                    sel.Candidate(
                        i,
                        (by_id[i].trigger, *((by_id[i].restated,) if (s.user, i) in restated else ())),
                        by_id[i].body,
                        sections[by_id[i].domain][by_id[i].section],
                    )
                    for i in resident
                ]
                chosen = [i for i, _ in sel.select([s.goal], candidates, queries, rule, vectors=vectors)[0]]
            if pool:
                if cosine is None:
                    triggers = embedder.encode([by_id[i].trigger for i in ids])
                    cosine = cosines(np.stack([queries.vectors[g] for g in goals]), triggers)
                admitted = gate.admit(cosine[[row[s.goal]]][:, [column[i] for i in pool]])[0]
                chosen += [pool[k] for k in np.flatnonzero(admitted)]
            out.append({"session": s, "held": len(have), "resident": len(resident), "chosen": tuple(chosen)})
        if s.taught:
            have.append(s.needs)
        if s.category == "restated":
            restated.add((s.user, s.needs))
    return pd.DataFrame(out, columns=["session", "held", "resident", "chosen"])


def _comeback_realistic(world, emb, emb_id, gate, mode, split, n_boot, seed) -> Comeback:
    by_id = {x.id: x for x in world.lessons()}
    tokens = dict(zip(by_id, count_many([x.body for x in by_id.values()])))
    rows = []
    demote = (lambda s, have: have) if mode == "gate" else (lambda s, have: ())
    for s, held, _, chosen in in_context(world, emb, gate, demote).itertuples(index=False):
        if s.taught:
            continue
        needs, got = s.need_ids, set(chosen)
        rows.append(
            {
                "user": s.user,
                "index": s.index,
                "agent": s.agent,
                "lesson": s.needs,
                "category": s.category,
                "came_back": bool(needs) and set(needs) <= got,
                "wrong_tokens": sum(tokens[i] for i in chosen if i not in needs),
                "held": held,
                "admitted": len(chosen),
                "irrelevant": len(got - set(needs)),
                "tokens": sum(tokens[i] for i in chosen),
                "need_list": list(needs),
                "found_list": [i in got for i in needs],
                "quiet_list": [not shares_word(s.goal, by_id[i].trigger) for i in needs],
            }
        )
    if not rows:
        raise ValueError(f"world {world.digest()[:12]}: no session after a lesson was taught; nothing to measure")
    table = pd.DataFrame(rows)
    per_need = table.explode(["need_list", "found_list", "quiet_list"]).dropna(subset=["need_list"])
    per_need = per_need.rename(columns={"need_list": "need", "found_list": "found", "quiet_list": "no_shared_word"})
    if split != "all":
        per_need = per_need[per_need.need.map(lambda i: by_id[i].split) == split]
    per_need = per_need.astype({"found": int, "no_shared_word": bool})
    per_lesson = per_need.groupby("need").found.agg(["sum", "count"])
    recall = ratio_ci(per_lesson["sum"], per_lesson["count"], n_resamples=n_boot, seed=seed)

    def by_user(part: pd.DataFrame, num: str, den: str | None = None) -> Interval:
        g = part.groupby("user")
        d = g[den].sum() if den else g.size()
        return ratio_ci(g[num].sum(), d, n_resamples=n_boot, seed=seed)

    return Comeback(
        emb_id,
        "shipped selection" if mode == "selection" else str(gate),
        world.digest(),
        split,
        len(per_need),
        recall,
        by_user(table[table.category.isin(NONE)], "wrong_tokens"),
        by_user(table[table.category.isin(STRESS)], "wrong_tokens"),
        table,
        by_user(table, "irrelevant", "admitted"),
        by_user(table, "tokens"),
        per_need,
    )
