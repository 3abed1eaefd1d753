"""Eight ways to keep what a user teaches an agent, behind one interface, for the memory benchmark
(`overlay_kit.studies.memory_bench`, notebook 10).

    arm = make("mem0_flat", skill, Config(...), workdir)   # one memory: one user's agent
    arm.ask = user_pick        # how the simulated user answers "which section?" (proposal -> slug)
    arm.teach("lesson-id", "text the user taught", goal="...", trigger="...")  # -> review prompts
    arm.context(goal)          # Context(text, learned): what is in front of the model for this goal
    arm.update(new_skill, old_skill)   # a base update: Update(prompts, placements)
    arm.review({lesson: home}, wrong)  # the simulated user answers the prompts the update raised
    arm.forget(); arm.residue()        # erase everything; the bytes the memory still persists

No arm is told where a lesson belongs: every arm gets the lesson's text, the goal that taught it and the skill.
`overlay` runs the product itself (a SQLite store, the gates, `anchoring.propose` with its shipped confidence
threshold, the budget, the calibrated retrieval gate, rebase, `rebase.confirm_stale`, forget) with the shipped
defaults; the other seven are small deterministic stand-ins written from each system's public description, at
their authors' defaults where the authors state one. Each class's docstring says what it follows, what its
stand-in replaces (an LLM step, as a rule) and what the stand-in therefore cannot show. Adapters of the real
libraries (`overlay_kit.studies.peers.PEERS`, the same interface) join the benchmark through `memory_bench.make`.

A `Placement` says where a held lesson sits after an update: `section` (None for an architecture with no
anchor: the lesson floats beside the skill) and `flagged` (someone was asked to look at it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

import numpy as np
from rapidfuzz import fuzz

from .. import anchor as anchor_mod
from .. import anchoring, evidence, gates, rebase, resolve, retrieval
from .. import budget as budget_mod
from ..common import cosines
from ..defaults import SHIPPED
from ..grammar import Provenance
from ..skill import Skill
from ..store import Store

__all__ = ["ARCHITECTURES", "Config", "Context", "MemoryArchitecture", "Placement", "Update", "make"]


@dataclass(frozen=True)
class Config:
    """The stand-ins' settings (the rule file's `caps` and `stand_ins`) and the overlay's budget.

    `budget`: None runs the overlay at the shipped ceiling; a token count sets its ceiling to authored + budget
    (a variation of `ceiling`, named in the benchmark's table)."""

    budget: int | None = None
    cheatsheet_tokens: int = 256
    letta_block_chars: int = 5000  # Letta's CORE_MEMORY_BLOCK_CHAR_LIMIT (MemGPT's was 2,000)
    keyword_top_k: int = 3
    keyword_min_hits: int = 2
    mem0_top_k: int = 10  # Mem0's `search(limit=10)` default
    mem0_search_k: int = 5
    mem0_update_cosine: float = 0.8
    mem0_threshold: float = 0.3  # the score a memory needs to be returned by search
    letta_archival_k: int = 1
    dedup_score: float = SHIPPED.consolidate_score

    def __post_init__(self):
        if self.budget is not None and (isinstance(self.budget, bool) or self.budget < 1):
            raise ValueError(f"budget: {self.budget!r} must be a positive token count or None (shipped)")
        for name in (
            "cheatsheet_tokens",
            "letta_block_chars",
            "keyword_top_k",
            "keyword_min_hits",
            "mem0_top_k",
            "mem0_search_k",
            "letta_archival_k",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: {value!r} must be a positive integer")
        if not 0 <= self.mem0_threshold < 1:
            raise ValueError(f"mem0_threshold: {self.mem0_threshold!r} is not a cosine in [0, 1)")
        if not 0 < self.mem0_update_cosine <= 1:
            raise ValueError(f"mem0_update_cosine: {self.mem0_update_cosine!r} is not a cosine in (0, 1]")
        if not 0 < self.dedup_score <= 100:
            raise ValueError(f"dedup_score: {self.dedup_score!r} is not a rapidfuzz score in (0, 100]")

    @classmethod
    def from_rule(cls, rule, budget: int | None = None) -> "Config":
        """The caps and stand-in settings a rule file fixed (`dedup_score` is the shipped one)."""
        s = {k: v for k, v in rule.param("stand_ins").items() if k not in ("dedup_score", "hermes_merge")}
        return cls(budget=budget, **rule.param("caps"), **s)


@dataclass(frozen=True)
class Context:
    text: str  # what the model sees of this memory (the overlay: the whole effective skill)
    learned: str  # the learned part alone (what `learned_tokens` counts)


@dataclass(frozen=True)
class Placement:
    section: str | None  # None: not anchored to any section
    flagged: bool = False  # a person was asked to look at it


@dataclass(frozen=True)
class Update:
    prompts: int  # review prompts the update raised
    placements: Mapping[str, Placement]  # every lesson the memory still holds


@lru_cache(maxsize=4096)
def _vector(text: str) -> np.ndarray:
    return retrieval.static_embedder().encode([text])[0]


def _cosines(query: str, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros(0)
    return cosines(np.array([_vector(t) for t in texts]), _vector(query))[:, 0]


def _top(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the k best scores, best first, ties by position (deterministic)."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]


class MemoryArchitecture:
    """One memory of one user's agent. Subclasses keep the state; this class tracks what was taught."""

    name: ClassVar[str] = ""

    def __init__(self, skill: Skill, config: Config, workdir: Path):
        self.skill, self.config, self.workdir = skill, config, Path(workdir)
        self.taught: dict[str, str] = {}  # lesson id -> the text first taught (what placements look for)
        self.trigger = ""
        self.goal: str | None = None
        # how the simulated user answers an arm that asks which section a lesson belongs in (a Proposal ->
        # a slug); None: nobody answers and the proposal stands
        self.ask = None

    def teach(
        self, lesson: str, text: str, *, section: str | None = None, trigger: str = "", goal: str | None = None
    ) -> int:
        """Keep `text` (a lesson, or a restatement of one), taught by the goal `goal` in the situation `trigger`
        describes; returns the review prompts it raised. `section` None (the benchmark's way): no one says where
        the lesson belongs, an anchored arm proposes it itself; a slug is for callers that know."""
        self.taught.setdefault(lesson, text)
        self.trigger, self.goal = trigger or text, goal
        return self._learn(lesson, text, section)

    def _learn(self, lesson: str, text: str, section: str | None) -> int:
        raise NotImplementedError

    def _place(self, text: str) -> tuple[str, int]:
        """Where an anchored arm puts `text` with nobody telling it: `anchoring.propose` over the skill's
        sections from the text and the teaching goal; a proposal under the shipped confidence is asked of the
        simulated user (`ask`), one review prompt. (section, prompts)."""
        proposal = anchoring.propose(self.skill.body, text, goal=self.goal)
        if proposal.confident or self.ask is None:
            return proposal.section, 0
        return self.ask(proposal), 1

    def context(self, goal: str) -> Context:
        raise NotImplementedError

    def after(self, context: Context, needed: str | None) -> None:
        """Outcome feedback after a session (`needed`: the needed lesson's text, if the goal needed one)."""

    def held(self) -> str:
        """Everything the memory holds, as text (growth counts its tokens; erasure of stand-ins reads it)."""
        raise NotImplementedError

    def update(self, new: Skill, old: Skill) -> Update:
        """A base update. Unanchored memories change nothing: each held lesson floats, unflagged."""
        self.skill = new
        held = self.held()
        return Update(0, {k: Placement(None) for k, body in self.taught.items() if body in held})

    def review(self, homes: Mapping[str, str], wrong: frozenset[str] = frozenset()) -> None:
        """The simulated user answers the prompts the last update raised, knowing their own lessons: `homes`
        (lesson -> the section it belongs in now) and `wrong` (the lessons the update made wrong). Nothing is
        asked of an arm that raises no prompt."""

    def forget(self) -> None:
        raise NotImplementedError

    def residue(self) -> bytes:
        """The bytes the memory persists after `forget` (stand-ins: their serialized state)."""
        return self.held().encode("utf-8")

    def close(self) -> None:
        pass


# -------------------------------------------------------------------------------------------------- 1


class Overlay(MemoryArchitecture):
    """This overlay, the real product path with the shipped defaults (`overlay_kit.defaults.SHIPPED`): a SQLite
    `Store` in `workdir`; the section of a new lesson proposed by `anchoring.learn_anchored` from its text and the
    teaching goal (a proposal under `SHIPPED.anchor_confidence` is asked: the simulated user picks the lesson's
    section when it is among the alternatives shown, else keeps the proposal; one prompt), lessons through
    `gates.learn` (user-instruction provenance: staged, one consent prompt each, approved by the user), the
    `budget.Budget` ceiling demoting tier-3 lessons to retrieval-only, `resolve.resolve` with the embedder's
    calibrated gate and the shipped `stale_policy` (a stale lesson is rendered behind `resolve.STALE_MARK`),
    `rebase.apply` with the shipped policy on every base update (its review list = the prompts), answered by the
    user: a stale lesson still right is confirmed (`rebase.confirm_stale`), a wrong one discarded
    (`rebase.discard`), an orphan put on its section (`rebase.reanchor`) or discarded; `Store.forget` for
    erasure (residue: the raw bytes of the database file and its WAL). Nothing is a stand-in; what it cannot
    show is whether a model follows a line once it is in context. `stale_touch` varies the shipped flag rule."""

    name = "overlay"

    def __init__(self, skill: Skill, config: Config, workdir: Path):
        super().__init__(skill, config, workdir)
        self.embedder = retrieval.static_embedder()
        self.path = self.workdir / "overlay.db"
        self.store = Store.open(self.path, auto_approve=SHIPPED.auto_approve)
        self.store.register_base(skill)
        authored = budget_mod.count_tokens(skill.body)
        self.ceiling = SHIPPED.ceiling if config.budget is None else authored + config.budget
        self.budget = budget_mod.Budget(
            self.store, [skill], self.ceiling, proposer=evidence.consolidation_proposer(self.embedder)
        ).install()
        self.settings = gates.GateSettings(auto_approve=SHIPPED.auto_approve)
        self.lesson_of: dict[str, str] = {}  # delta id -> lesson id
        self.pending: dict[str, str] = {}  # orphaned delta id -> lesson id, until reviewed
        self.flagged: dict[str, str] = {}  # stale delta id -> lesson id, until reviewed
        self.n = 0

    stale_touch: ClassVar[bool] = SHIPPED.stale_touch

    def _learn(self, lesson, text, section):
        self.n += 1
        payload = {"body": text, "trigger": self.trigger}
        kw = {"provenance": Provenance("user_instruction", (str(self.n),)), "settings": self.settings}
        asked = 0
        if section is None:
            proposal, r = anchoring.learn_anchored(self.store, self.skill, "preference", payload, goal=self.goal, **kw)
            if r is None:  # not confident: asked (the user picks), then learned where the user said
                section, asked = (self.ask(proposal) if self.ask else proposal.section), 1
        if section is not None:
            r = gates.learn(self.store, self.skill, "preference", payload, section=section, **kw)
        if r.delta is None:
            return asked
        self.lesson_of[r.delta.id] = lesson
        if r.delta.status == "staged":  # the consent prompt, answered yes by the user
            self.store.approve(r.delta.id)
            return asked + 1
        return asked

    def context(self, goal):
        eff = resolve.resolve(self.skill, self.store, goal=goal, embedder=self.embedder, tau=None, ceiling=self.ceiling)
        return Context(eff.text, eff.fragment)

    def _live(self, status=("active", "staged", "orphaned", "quarantined")):
        return self.store.search(self.skill.name, status=status)

    def held(self):
        return "\n".join(d.payload.get("body", "") for d in self._live())

    def update(self, new, old):
        result = rebase.apply(self.store, new, SHIPPED.rebase_policy, old=old, stale_touch=self.stale_touch)
        self.budget.set_skill(new)
        self.skill = new
        placements: dict[str, Placement] = {}
        for o in result.outcomes:  # in the store's order: a lesson's latest delta speaks for it
            lesson = self.lesson_of.get(o.delta.id)
            if lesson is None:
                continue
            if o.state == "orphaned":
                self.pending[o.delta.id] = lesson
            elif o.state == "stale":
                self.flagged[o.delta.id] = lesson
            flagged = o.state != "clean" or placements.get(lesson, Placement(None)).flagged
            placements[lesson] = Placement(None if o.state == "orphaned" else o.anchor.section, flagged)
        return Update(len(result.review), placements)

    def review(self, homes, wrong=frozenset()):
        for did, lesson in sorted(self.pending.items()):
            if lesson in wrong:
                rebase.discard(self.store, did)
            else:
                rebase.reanchor(self.store, did, self.skill, homes[lesson])
        keep = [did for did, lesson in sorted(self.flagged.items()) if lesson not in wrong]
        for did, lesson in sorted(self.flagged.items()):
            if lesson in wrong:
                rebase.discard(self.store, did)
        if keep:  # one action for every flag the user found still right
            rebase.confirm_stale(self.store, self.skill, keep)
        self.pending.clear()
        self.flagged.clear()

    def forget(self):
        self.store.forget(skill=self.skill.name)

    def residue(self):
        return b"".join(p.read_bytes() for p in sorted(self.workdir.glob("overlay.db*")) if p.is_file())

    def close(self):
        self.store.close()


# -------------------------------------------------------------------------------------------------- 2


class FullContext(MemoryArchitecture):
    """Every lesson always resident, appended beside the skill in the order taught (the no-memory-management
    baseline: a long system prompt). No stand-in; it cannot show the cost of a context that outgrows the window
    (nothing here is cut)."""

    name = "full_context"

    def __init__(self, skill, config, workdir):
        super().__init__(skill, config, workdir)
        self.lines: list[str] = []

    def _learn(self, lesson, text, section):
        self.lines.append(text)
        return 0

    def context(self, goal):
        text = "\n".join(f"- {x}" for x in self.lines)
        return Context(text, text)

    def held(self):
        return "\n".join(self.lines)

    def forget(self):
        self.lines.clear()


# -------------------------------------------------------------------------------------------------- 3

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    """a an and are as at be by do for from has have how i if in is it its me my no not of on or our
so that the their them then this to up us was we what when where which who will with you your about into over
just please can could should would""".split()
)


def _keywords(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


class KeywordFiles(MemoryArchitecture):
    """Letta's filesystem baseline: each lesson is a file; per goal the agent greps the files for the goal's
    words and opens the best `keyword_top_k` files with at least `keyword_min_hits` distinct matching words.
    Stand-in: the agent's choice of grep patterns is replaced by every content word of the goal (stop words and
    words under three letters dropped); it cannot show an agent rephrasing its search or grepping twice."""

    name = "keyword_files"

    def __init__(self, skill, config, workdir):
        super().__init__(skill, config, workdir)
        self.files: dict[str, str] = {}

    def _learn(self, lesson, text, section):
        self.files[f"lesson-{len(self.files) + 1:03d}.md"] = text  # a restatement is one more file
        return 0

    def search(self, goal: str) -> list[str]:
        want = _keywords(goal)
        hits = {name: len(want & _keywords(text)) for name, text in self.files.items()}
        ranked = sorted((n for n, h in hits.items() if h >= self.config.keyword_min_hits), key=lambda n: (-hits[n], n))
        return ranked[: self.config.keyword_top_k]

    def context(self, goal):
        text = "\n".join(f"[{n}] {self.files[n]}" for n in self.search(goal))
        return Context(text, text)

    def held(self):
        return "\n".join(self.files.values())

    def forget(self):
        self.files.clear()


# -------------------------------------------------------------------------------------------------- 4


class AcePlaybook(MemoryArchitecture):
    """ACE (Agentic Context Engineering): an itemised playbook of bullets, each with helpful/harmful counters,
    grown by a curator's delta updates and refined by de-duplication; the whole playbook is the generator's
    context; no authored base underneath (a base update does not touch it). Stand-ins: the reflector's tagging
    is "helpful" for a bullet holding the needed lesson when the goal needed it (nothing is ever tagged harmful:
    the trace has no failure signal), the curator adds the taught text as one bullet, and grow-and-refine merges
    a bullet whose rapidfuzz token-set score with an existing one reaches `dedup_score` (counters kept, the older
    text kept). It cannot show a reflector distilling a different, more general bullet from a failure, nor
    pruning harmful bullets."""

    name = "ace_playbook"

    def __init__(self, skill, config, workdir):
        super().__init__(skill, config, workdir)
        self.bullets: list[dict] = []

    def _learn(self, lesson, text, section):
        for b in self.bullets:
            if fuzz.token_set_ratio(text, b["text"]) >= self.config.dedup_score:
                return 0  # refine: the near-duplicate merges into the existing bullet
        self.bullets.append({"id": f"ctx-{len(self.bullets) + 1:05d}", "text": text, "helpful": 0, "harmful": 0})
        return 0

    def context(self, goal):
        text = "\n".join(
            f"[{b['id']}] helpful={b['helpful']} harmful={b['harmful']} :: {b['text']}" for b in self.bullets
        )
        return Context(text, text)

    def after(self, context, needed):
        if needed is None:
            return
        for b in self.bullets:
            if needed in b["text"] and b["text"] in context.text:
                b["helpful"] += 1

    def held(self):
        return "\n".join(b["text"] for b in self.bullets)

    def forget(self):
        self.bullets.clear()


# -------------------------------------------------------------------------------------------------- 5


class RewriteCheatsheet(MemoryArchitecture):
    """A rewrite-style cheatsheet (Dynamic Cheatsheet; ACE's monolithic-rewrite baseline): one text the model
    rewrites whole at every memory update, to a size. Stand-in for the LLM rewrite: near-duplicate lines merge
    (rapidfuzz `dedup_score`, the newest kept), then the newest whole lines that fit `cheatsheet_tokens` are
    kept and the rest dropped. It cannot show what an LLM rewrite does to the lines it keeps (paraphrase,
    merging several lessons into one, or the one-step collapse ACE reports); here a kept lesson stays verbatim
    and a dropped one is gone whole."""

    name = "rewrite_cheatsheet"

    def __init__(self, skill, config, workdir):
        super().__init__(skill, config, workdir)
        self.lines: list[str] = []

    def _learn(self, lesson, text, section):
        self.lines = self.rewrite(self.lines + [text])
        return 0

    def rewrite(self, lines: list[str]) -> list[str]:
        kept: list[str] = []
        for line in reversed(lines):  # newest first
            if not any(fuzz.token_set_ratio(line, k) >= self.config.dedup_score for k in kept):
                kept.append(line)
        costs = budget_mod.count_many(kept)
        out, used = [], 0
        for line, cost in zip(kept, costs):
            if used + cost > self.config.cheatsheet_tokens:
                break
            out.append(line)
            used += cost
        return out[::-1]

    def context(self, goal):
        text = "\n".join(self.lines)
        return Context(text, text)

    def held(self):
        return "\n".join(self.lines)

    def update(self, new, old):
        self.lines = self.rewrite(self.lines)  # rewritten at each update too (idempotent here: see the docstring)
        return super().update(new, old)

    def forget(self):
        self.lines.clear()


# -------------------------------------------------------------------------------------------------- 6


class Mem0Flat(MemoryArchitecture):
    """Mem0: a flat list of memories; each new fact is compared with the `mem0_search_k` most similar memories
    and the LLM picks ADD, UPDATE, DELETE or NOOP; a query retrieves the top `mem0_top_k` by vector similarity
    whose score reaches `mem0_threshold` (the authors' defaults: 10 and 0.3). Every ADD/UPDATE/DELETE appends a row to a history table holding the old and new text (Mem0's
    `db.add_history`, also on DELETE). Stand-in for the LLM decision: NOOP when a retrieved memory's rapidfuzz
    token-set score reaches `dedup_score`, UPDATE (the newer text replaces the memory) when its cosine reaches
    `mem0_update_cosine`, else ADD; DELETE only by `forget`. Vectors: the bundled static embedder. It cannot
    show an LLM merging two related but distinct lessons, nor deleting one it judges contradicted."""

    name = "mem0_flat"

    def __init__(self, skill, config, workdir):
        super().__init__(skill, config, workdir)
        self.memories: list[dict] = []
        self.history: list[dict] = []

    def decide(self, text: str) -> tuple[str, int | None]:
        """(event, index of the memory it concerns)."""
        texts = [m["text"] for m in self.memories]
        near = _top(_cosines(text, texts), self.config.mem0_search_k)
        for i in near:
            if fuzz.token_set_ratio(text, texts[i]) >= self.config.dedup_score:
                return "NOOP", i
        cos = _cosines(text, texts)
        if near and cos[near[0]] >= self.config.mem0_update_cosine:
            return "UPDATE", near[0]
        return "ADD", None

    def _learn(self, lesson, text, section):
        event, i = self.decide(text)
        if event == "ADD":
            self.memories.append({"id": f"m{len(self.history) + 1}", "text": text})
            self.history.append({"event": "ADD", "old": None, "new": text})
        elif event == "UPDATE":
            self.history.append({"event": "UPDATE", "old": self.memories[i]["text"], "new": text})
            self.memories[i] = {**self.memories[i], "text": text}
        return 0

    def context(self, goal):
        texts = [m["text"] for m in self.memories]
        scores = _cosines(goal, texts)
        text = "\n".join(
            f"- {texts[i]}" for i in _top(scores, self.config.mem0_top_k) if scores[i] >= self.config.mem0_threshold
        )
        return Context(text, text)

    def held(self):
        return "\n".join(m["text"] for m in self.memories)

    def forget(self):
        for m in self.memories:  # DELETE each: the history keeps the old text
            self.history.append({"event": "DELETE", "old": m["text"], "new": None})
        self.memories.clear()

    def residue(self):
        rows = [m["text"] for m in self.memories] + [h[k] or "" for h in self.history for k in ("old", "new")]
        return "\n".join(rows).encode("utf-8")


# -------------------------------------------------------------------------------------------------- 7


class LettaBlocks(MemoryArchitecture):
    """Letta (MemGPT): a resident core-memory block with a character limit (`letta_block_chars`: Letta's
    default block limit, 5,000 characters), plus archival memory searched by vector similarity. Stand-ins: the agent's memory edits are a FIFO — a new lesson is appended to the block
    and the oldest lines move to archival while the block is over `letta_block_chars`; every session the agent
    searches archival with the goal and reads the top `letta_archival_k` passages. It cannot show an agent
    choosing what to evict or rewriting the block, nor deciding not to search."""

    name = "letta_blocks"

    def __init__(self, skill, config, workdir):
        super().__init__(skill, config, workdir)
        self.block: list[str] = []
        self.archival: list[str] = []

    def _learn(self, lesson, text, section):
        self.block.append(text)
        while len(self.block) > 1 and len("\n".join(self.block)) > self.config.letta_block_chars:
            self.archival.append(self.block.pop(0))
        return 0

    def context(self, goal):
        found = [self.archival[i] for i in _top(_cosines(goal, self.archival), self.config.letta_archival_k)]
        text = "\n".join(["<core_memory>", *self.block, "</core_memory>", *(f"[archival] {x}" for x in found)])
        return Context(text, text)

    def held(self):
        return "\n".join(self.block + self.archival)

    def forget(self):
        self.block.clear()
        self.archival.clear()


# -------------------------------------------------------------------------------------------------- 8


class HermesInPlace(MemoryArchitecture):
    """In-place skill rewriting (Hermes Agent's skill patching): the agent patches SKILL.md itself, so a lesson
    becomes a line of the skill's text at the end of the section the agent picks (stand-in: `anchoring.propose`'s
    top proposal from the lesson and the goal, never asked); there is no overlay. On a base update the
    patched copy is 3-way merged with the new authored version (a plain replace would drop every lesson at every
    update): each lesson line goes back after the authored line it followed, when that line is found exactly once
    in the new version; otherwise it is a merge conflict, a review prompt, held out of the text until the oracle
    user puts it back at the end of its true home. Stand-in: the agent's patch is the lesson appended verbatim;
    the merge is this line-anchored one, not git's diff3 (which also conflicts when a neighbouring line changed).
    It cannot show an agent rewording the skill around a lesson, which would make the lesson and the authored
    text inseparable."""

    name = "hermes_inplace"

    def __init__(self, skill, config, workdir):
        super().__init__(skill, config, workdir)
        self.body = skill.body
        self.patches: dict[str, str] = {}  # patch line -> lesson id
        self.conflicts: dict[str, str] = {}  # held out by a merge conflict: line -> lesson id

    def _insert(self, body: str, section: str, line: str) -> str:
        sec = next((s for s in anchor_mod.parse(body) if s.slug == section), None)
        lines = body.split("\n")
        if sec is None:
            return body + ("\n" if body.endswith("\n") else "\n\n") + line + "\n"
        at = sec.end_line  # after the section's last non-blank line
        while at > sec.start_line and not lines[at - 1].strip():
            at -= 1
        return "\n".join(lines[:at] + [line] + lines[at:])

    def _learn(self, lesson, text, section):
        line = f"- {text}"
        if line not in self.patches:
            if section is None:
                section = anchoring.propose(self.body, text, goal=self.goal).section
            self.body = self._insert(self.body, section, line)
            self.patches[line] = lesson
        return 0

    def context(self, goal):
        learned = "\n".join(line for line in self.body.split("\n") if line in self.patches)
        return Context(self.body, learned)

    def held(self):
        return "\n".join([*self.patches, *self.conflicts])

    def section_of(self, line: str) -> str | None:
        lines = self.body.split("\n")
        k = lines.index(line) + 1
        return next((s.slug for s in anchor_mod.parse(self.body) if s.start_line <= k <= s.end_line), None)

    def update(self, new, old):
        lines = self.body.split("\n")
        new_lines = new.body.split("\n")
        merged = list(new_lines)
        placed: dict[str, list[str]] = {}  # authored line -> the patch lines that follow it
        for k, line in enumerate(lines):
            if line not in self.patches:
                continue
            before = next((x for x in reversed(lines[:k]) if x.strip() and x not in self.patches), None)
            if before is not None and new_lines.count(before) == 1:
                placed.setdefault(before, []).append(line)
            else:
                self.conflicts[line] = self.patches.pop(line)
        for before, group in placed.items():
            at = merged.index(before) + 1
            merged[at:at] = group
        self.body, self.skill = "\n".join(merged), new
        out = {lesson: Placement(self.section_of(line)) for line, lesson in self.patches.items()}
        out |= {lesson: Placement(None, True) for lesson in self.conflicts.values()}
        return Update(len(self.conflicts), out)

    def review(self, homes, wrong=frozenset()):
        for line, lesson in sorted(self.conflicts.items()):
            if lesson not in wrong:  # a conflict on a lesson the update made wrong: dropped
                self.body = self._insert(self.body, homes[lesson], line)
                self.patches[line] = lesson
        self.conflicts.clear()

    def forget(self):
        self.body = "\n".join(line for line in self.body.split("\n") if line not in self.patches)
        self.patches.clear()
        self.conflicts.clear()

    def residue(self):
        # what the memory persists is its patched skill: the authored text is not the lesson's
        return "\n".join([self.body, *self.conflicts]).encode("utf-8")


class OverlayTouch(Overlay):
    """The overlay with one shipped default varied: `stale_touch` on (a lesson on a changed section is flagged
    only when the edit touches what it refers to, `touch.touches`). Everything else as `overlay`."""

    name = "overlay_touch"
    stale_touch = True


ARCHITECTURES: Mapping[str, type[MemoryArchitecture]] = {
    c.name: c
    for c in (
        Overlay,
        FullContext,
        KeywordFiles,
        AcePlaybook,
        RewriteCheatsheet,
        Mem0Flat,
        LettaBlocks,
        HermesInPlace,
        OverlayTouch,
    )
}


def make(name: str, skill: Skill, config: Config, workdir: str | Path) -> MemoryArchitecture:
    """A fresh memory of architecture `name` for one user's agent (`workdir`: where it may persist files)."""
    if name not in ARCHITECTURES:
        raise ValueError(f"architecture: {name!r}; architectures are {', '.join(ARCHITECTURES)}")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    return ARCHITECTURES[name](skill, config, Path(workdir))
