"""User memory: the one surface written automatically after an ordinary task, through a guarded online path.

    writer = MemoryWriter(store, extractor=None)           # RuleExtractor unless you pass one (pick_extractor)
    future = writer.after_turn(user, messages, turn="t1", tools_used=())   # returns at once
    future.result() -> MemoryRun                           # never raises: a failure is a recorded run

The steps, in order (each is one small function with the test that fails without it):

1. explicit tools — a turn that used memory_save / memory_update / memory_delete is skipped (one write path).
2. window        — only the latest `window_pairs` (3) user–assistant pairs are looked at.
3. cue gate      — deterministic patterns decide whether the window may hold a preference, identity fact,
                   long-running project or explicit correction; without a cue the extractor is not called.
4. extraction    — a pluggable callable `(pairs) -> [Candidate]`: `RuleExtractor` by default, `LLMExtractor`
                   when a local model answers (`pick_extractor`).
5. salience      — candidates under `min_salience` are dropped (not about the user, not useful next week,
                   recoverable from files).
6. reconcile     — against current memories of the same user and type by character-bigram (Dice)
                   similarity: equivalent → no-op; related → the automatic memory is updated, but a manual
                   memory is never overwritten; otherwise added.
7. background    — all of it runs on a worker thread; a failure is recorded in `memory_runs` and the task's
                   result is untouched.

Manual memories come from the explicit tools `memory_save`, `memory_update`, `memory_delete` (real erasure).
"""

from __future__ import annotations

import json
import logging
import re
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..common import bigram_similarity, utc_now
from ..store import Memory, MemoryDecision, MemoryRun
from .routing import (
    MEMORY_KINDS,
    BackgroundService,
    SurfaceError,
    answering_model,
    ask_model,
)

if TYPE_CHECKING:
    from ..store import Store

# Memory, MemoryDecision and MemoryRun are the store's row values (overlay_kit.store); re-exported here.
__all__ = [
    "CUES",
    "MEMORY_TOOLS",
    "MEMORY_TYPES",
    "Candidate",
    "MemoryDecision",
    "ExtractionError",
    "LLMExtractor",
    "Memory",
    "MemoryRun",
    "MemorySettings",
    "MemoryWriter",
    "Message",
    "RuleExtractor",
    "UserMemoryError",
    "cue_gate",
    "last_pairs",
    "memories",
    "memory_delete",
    "memory_runs",
    "memory_save",
    "memory_update",
    "pick_extractor",
    "reconcile",
]

MEMORY_TYPES = MEMORY_KINDS  # preference, identity, project, correction
MEMORY_TOOLS = frozenset({"memory_save", "memory_update", "memory_delete"})
MEMORY_LIMIT = 400
log = logging.getLogger(__name__)


class UserMemoryError(SurfaceError):
    """Bad input to user memory (unknown type, empty content, a message that is not user/assistant text)."""


class ExtractionError(RuntimeError):
    """An extractor returned something that is not a list of candidates (recorded as a failed run)."""


@dataclass(frozen=True)
class MemorySettings:
    window_pairs: int = 3
    min_salience: float = 0.5
    equivalent: float = 0.9  # bigram Dice at or above: the same memory, a no-op
    related: float = 0.6  # at or above: the same memory, reworded (update unless manual)


@dataclass(frozen=True)
class Message:
    role: str  # user | assistant (system and tool messages are ignored by the window)
    content: str


@dataclass(frozen=True)
class Candidate:
    type: str
    content: str
    salience: float


# ------------------------------------------------------------------------------------ the window


def _messages(messages: Iterable[Message | Mapping[str, Any]]) -> tuple[Message, ...]:
    out = []
    for i, m in enumerate(messages):
        role, content = (
            (m.role, m.content)
            if isinstance(m, Message)
            else ((m.get("role"), m.get("content")) if isinstance(m, Mapping) else (None, None))
        )
        if not isinstance(role, str) or not isinstance(content, str):
            raise UserMemoryError("each message needs a string role and string content", f"messages[{i}]")
        out.append(Message(role, content))
    return tuple(out)


def last_pairs(messages: Iterable[Message | Mapping[str, Any]], n: int = 3) -> tuple[tuple[Message, Message], ...]:
    """The latest `n` (user, assistant) pairs; a trailing user message pairs with an empty reply."""
    pairs: list[tuple[Message, Message]] = []
    user: Message | None = None
    for m in _messages(messages):
        if m.role == "user":
            if user is not None:
                pairs.append((user, Message("assistant", "")))
            user = m
        elif m.role == "assistant" and user is not None:
            pairs.append((user, m))
            user = None
    if user is not None:
        pairs.append((user, Message("assistant", "")))
    return tuple(pairs[-n:]) if n > 0 else ()


# ------------------------------------------------------------------------------------ the cue gate

# Deterministic cues per memory type, matched in the user's own words (case-insensitive).
CUES: dict[str, re.Pattern] = {
    "identity": re.compile(
        r"\b(my name is|call me|i am an? |i'?m an? |i work (?:at|as|for|in)|i live in|"
        r"my (?:role|title|team|pronouns) (?:is|are))",
        re.I,
    ),
    "project": re.compile(
        r"\b(i'?m working on|i am working on|my project|our project|we'?re building|"
        r"for the next (?:few )?(?:weeks|months)|this quarter)",
        re.I,
    ),
    "preference": re.compile(
        r"\b(i (?:really |always |usually |generally )?(?:prefer|like|love|hate|dislike|want)|"
        r"i'?d rather|please (?:always|never)|from now on|don'?t ever)",
        re.I,
    ),
    # last: a sentence that is only a correction (no identity/project/preference cue) is typed as one
    "correction": re.compile(
        r"\b(actually|that'?s (?:wrong|not right|incorrect)|i meant|correction|"
        r"no,? (?:i|it'?s|my)\b)",
        re.I,
    ),
}
_FIRST_PERSON = re.compile(r"\b(i|i'm|i'd|i've|my|me|mine|we|our)\b", re.I)
_DURABLE = re.compile(r"\b(always|never|from now on|remember|every time|in general|by default)\b", re.I)
_TRANSIENT = re.compile(
    r"\b(today|tonight|this time|just this once|right now|for now|at the moment|"
    r"this morning|this afternoon)\b",
    re.I,
)
_RECOVERABLE = re.compile(
    r"(https?://|\b[\w-]+\.(?:pdf|docx?|xlsx?|csv|md|txt|py)\b|\battach(?:ed|ment)\b|"
    r"\bthe (?:file|folder|spreadsheet)\b)",
    re.I,
)


def cue_gate(pairs: Sequence[tuple[Message, Message]]) -> tuple[str, ...]:
    """The memory types cued in the user turns of the window, in CUES order (empty: do not extract)."""
    text = "\n".join(u.content for u, _ in pairs)
    return tuple(t for t, pattern in CUES.items() if pattern.search(text))


# ------------------------------------------------------------------------------------ extractors

Extractor = Callable[[Sequence[tuple[Message, Message]]], Sequence[Candidate]]
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _salience(sentence: str, type_: str) -> float:
    score = {"identity": 0.8, "correction": 0.7}.get(type_, 0.6)
    if _DURABLE.search(sentence):
        score += 0.3
    if _TRANSIENT.search(sentence):
        score -= 0.4  # not useful next week
    if _RECOVERABLE.search(sentence):
        score -= 0.3  # recoverable from files or connected systems
    return round(min(1.0, max(0.0, score)), 2)


class RuleExtractor:
    """Deterministic: each first-person user sentence carrying a cue becomes one candidate of that type."""

    def __call__(self, pairs: Sequence[tuple[Message, Message]]) -> list[Candidate]:
        out = []
        for user, _ in pairs:
            for sentence in _SENTENCE.split(user.content):
                sentence = " ".join(sentence.split())
                if not sentence or not _FIRST_PERSON.search(sentence):
                    continue  # a memory must be about the user
                for type_, pattern in CUES.items():
                    if pattern.search(sentence):
                        out.append(Candidate(type_, sentence[:MEMORY_LIMIT], _salience(sentence, type_)))
                        break
        return out


_EXTRACT_SYSTEM = (
    "You extract durable facts about the user from a conversation. Reply with a JSON array only. Each item is "
    '{"type": "preference" | "identity" | "project" | "correction", "content": one short sentence, '
    '"salience": a number from 0 to 1}. Keep an item only if it is about the user, will still be useful next '
    "week, and cannot be recovered from files or connected systems. Reply [] when nothing qualifies."
)


def _parse_candidates(text: str) -> list[Candidate]:
    body = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", text.strip())
    try:
        items = json.loads(body)
    except ValueError as exc:
        raise ExtractionError(f"the model's reply is not JSON: {text[:120]!r}") from exc
    if not isinstance(items, list):
        raise ExtractionError(f"the model's reply is not a JSON array: {text[:120]!r}")
    out = []
    for item in items:
        if not isinstance(item, Mapping):
            raise ExtractionError(f"candidate {item!r} is not an object")
        sal = item.get("salience")
        out.append(
            Candidate(
                str(item.get("type", "")),
                str(item.get("content", "")),
                float(sal) if isinstance(sal, (int, float)) else 0.0,
            )
        )
    return out


class LLMExtractor:
    """Asks a local model (an `overlay_kit.llm.LemonadeClient`) for candidates. Unparsable replies raise."""

    def __init__(self, client: Any, model: str, *, max_tokens: int = 512):
        self.client, self.model, self.max_tokens = client, model, max_tokens

    def __call__(self, pairs: Sequence[tuple[Message, Message]]) -> list[Candidate]:
        convo = "\n".join(f"User: {u.content}\nAssistant: {a.content}" for u, a in pairs)
        return _parse_candidates(ask_model(self.client, self.model, _EXTRACT_SYSTEM, convo, max_tokens=self.max_tokens))


def pick_extractor(client: Any = None, model: str | None = None) -> Extractor:
    """`LLMExtractor` when `client` answers (health up and a model to use), else the `RuleExtractor`."""
    name = answering_model(client, model)
    return LLMExtractor(client, name) if name else RuleExtractor()


# ------------------------------------------------------------------------------------ reconciliation


def _check(user: str, type_: str, content: str) -> str:
    if not isinstance(user, str) or not user.strip():
        raise UserMemoryError("must be a non-empty string", "user")
    if type_ not in MEMORY_TYPES:
        raise UserMemoryError(f"unknown type {type_!r}; types are {', '.join(MEMORY_TYPES)}", "type")
    if not isinstance(content, str) or not content.strip():
        raise UserMemoryError("must be a non-empty string", "content")
    if len(content) > MEMORY_LIMIT:
        raise UserMemoryError(f"{len(content)} characters; at most {MEMORY_LIMIT}", "content")
    return " ".join(content.split())


def memories(store: "Store", user: str, type: str | None = None) -> list[Memory]:
    """A user's memories (optionally one type), oldest first."""
    return store.memories.of_user(user, type)


def reconcile(
    store: "Store", user: str, candidates: Iterable[Candidate], settings: MemorySettings = MemorySettings()
) -> list[MemoryDecision]:
    """Write the candidates that survive salience and similarity; one transaction; return every decision."""
    decisions = []
    with store.transaction():
        for c in candidates:
            if c.type not in MEMORY_TYPES or not c.content.strip() or len(c.content) > MEMORY_LIMIT:
                decisions.append(MemoryDecision("invalid", c.type, c.content[:MEMORY_LIMIT]))
                continue
            content = " ".join(c.content.split())
            if c.salience < settings.min_salience:
                decisions.append(MemoryDecision("low_salience", c.type, content))
                continue
            best, score = None, 0.0
            for m in memories(store, user, c.type):
                s = bigram_similarity(content, m.content)
                if s > score:
                    best, score = m, s
            now = utc_now()
            if best is not None and score >= settings.equivalent:
                decisions.append(MemoryDecision("noop", c.type, content, best.id, round(score, 3)))
            elif best is not None and score >= settings.related and best.source == "manual":
                decisions.append(MemoryDecision("manual_kept", c.type, content, best.id, round(score, 3)))
            elif best is not None and score >= settings.related:
                store.memories.revise(best.id, content, salience=c.salience, at=now)
                decisions.append(MemoryDecision("updated", c.type, content, best.id, round(score, 3)))
            else:
                new_id = store.memories.add(user, c.type, content, source="auto", salience=c.salience, at=now)
                decisions.append(MemoryDecision("added", c.type, content, new_id, round(score, 3) if best else None))
    return decisions


# ------------------------------------------------------------------------------ explicit tools


def memory_save(store: "Store", user: str, type: str, content: str) -> Memory:
    """The explicit tool: a manual memory (automatic extraction never overwrites it)."""
    content = _check(user, type, content)
    new_id = store.memories.add(user, type, content, source="manual", salience=None, at=utc_now())
    return store.memories.get(new_id)


def memory_update(store: "Store", memory_id: int, content: str) -> Memory:
    """The explicit tool: rewrite a memory; it becomes manual."""
    with store.transaction():
        memory = store.memories.get(memory_id)
        if memory is None:
            raise UserMemoryError(f"no memory with id {memory_id!r}", "memory_id")
        content = _check(memory.user, memory.type, content)
        store.memories.rewrite(memory_id, content, at=utc_now())
    return store.memories.get(memory_id)


def memory_delete(store: "Store", memory_id: int) -> None:
    """The explicit tool: erase a memory (a real DELETE; it is the user's own data)."""
    if not store.memories.delete(memory_id):
        raise UserMemoryError(f"no memory with id {memory_id!r}", "memory_id")


# ------------------------------------------------------------------------------------ the writer


def memory_runs(store: "Store", user: str | None = None) -> list[MemoryRun]:
    """Recorded after-turn passes (of one user, or all), oldest first."""
    return store.memories.runs(user)


class MemoryWriter(BackgroundService):
    """Runs the guarded path after each turn on a background worker (one thread: runs stay in turn order)."""

    def __init__(
        self,
        store: "Store",
        extractor: Extractor | None = None,
        *,
        settings: MemorySettings = MemorySettings(),
        executor: ThreadPoolExecutor | None = None,
    ):
        self.store = store
        self.extractor = extractor if extractor is not None else RuleExtractor()
        self.settings = settings
        super().__init__(executor, "overlay-memory")

    def after_turn(
        self, user: str, messages: Iterable[Message | Mapping[str, Any]], *, turn: str, tools_used: Iterable[str] = ()
    ) -> Future:
        """Schedule the guarded path and return at once; the future yields the recorded `MemoryRun`.
        Bad input (no user, malformed messages) raises here, before anything is scheduled."""
        if not isinstance(user, str) or not user.strip():
            raise UserMemoryError("must be a non-empty string", "user")
        msgs, used = _messages(messages), frozenset(tools_used)
        return self._executor.submit(self._guarded, user, msgs, str(turn), used)

    def _guarded(self, user: str, msgs: tuple[Message, ...], turn: str, used: frozenset[str]) -> MemoryRun:
        try:
            return self.run(user, msgs, turn=turn, tools_used=used)
        except Exception as exc:  # recorded, never raised into the task
            detail = f"{type(exc).__name__}: {exc}"
            try:
                return self._record(user, turn, "failed", (), [], detail + "\n" + traceback.format_exc(limit=3))
            except Exception:  # the store itself failed: log it; the task is still untouched
                log.exception("memory run for %s/%s failed and could not be recorded", user, turn)
                return MemoryRun(0, user, turn, "failed", (), (), detail, utc_now())

    def run(
        self, user: str, messages: Iterable[Message | Mapping[str, Any]], *, turn: str, tools_used: Iterable[str] = ()
    ) -> MemoryRun:
        """The guarded path, synchronously (the worker calls this)."""
        if MEMORY_TOOLS & frozenset(tools_used):
            return self._record(user, turn, "skipped_explicit", (), [])
        pairs = last_pairs(messages, self.settings.window_pairs)
        cues = cue_gate(pairs)
        if not cues:
            return self._record(user, turn, "no_cue", (), [])
        candidates = self.extractor(pairs)
        if not isinstance(candidates, (list, tuple)) or not all(isinstance(c, Candidate) for c in candidates):
            raise ExtractionError(f"extractor returned {type(candidates).__name__}, not a list of Candidate")
        with self.store.transaction():  # the memories and the run row that explains them commit together
            return self._record(user, turn, "extracted", cues, reconcile(self.store, user, candidates, self.settings))

    def _record(
        self,
        user: str,
        turn: str,
        outcome: str,
        cues: tuple[str, ...],
        decisions: list[MemoryDecision],
        error: str | None = None,
    ) -> MemoryRun:
        now = utc_now()
        run_id = self.store.memories.add_run(user, turn, outcome, cues, decisions, error, now)
        return MemoryRun(run_id, user, turn, outcome, cues, tuple(decisions), error, now)
