"""Capability evolution: a runtime signal is evidence; it is routed to the update surface with the smallest scope.

    route(signal) -> Routing(surface, reason, rule)        # pure; `record_signal` stores it as evidence

`ROUTES` is read top to bottom; the first rule that applies wins, and a signal no rule claims is stored as
evidence and routed nowhere (one rule per route, so adding or removing a route is one line):

| rule          | surface       | when                                                                       |
|---------------|---------------|----------------------------------------------------------------------------|
| user_memory   | user_memory   | a preference, identity fact, long-running project or correction of a user  |
| knowledge     | knowledge     | internal material the agent was missing                                   |
| skill_overlay | skill_overlay | a procedure or policy of a named skill (written only through gates.learn)  |
| prompt        | prompt        | a role or boundary of a named agent (a draft; publish and activate later)  |
| program       | program       | a deterministic rule that holds across tasks (an engineering release)      |
| (none)        | —             | ratings, traces, failures, or a signal missing its owner: evidence only    |

Each surface keeps its own activation boundary, all in the one overlay SQLite store:

* user memory (`overlay_kit.surfaces.memory`): the only automatic writer — cue gate, bounded window, salience and
  character-bigram reconciliation, manual memory wins, background execution.
* knowledge (`overlay_kit.surfaces.knowledge`): ingest → pending; only ready documents are searchable; the summary is
  regenerated in the background and never overwrites a reviewer's.
* prompts: draft → published (immutable) → active; activation is its own step; the active version stays.
* skill packages: an upload is validated whole, advances a monotonic revision and drops cached metadata.
* feedback, traces, deliverables: evidence rows; `review_report` links them per task. They change nothing.

Memory and knowledge have their own modules because each owns a background worker and a pluggable model
callable (extractor, summarizer); this module keeps routing, evidence and the two release lifecycles.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..common import dumps, iso, utc_now
from ..skill import Skill, SkillValidationError, parse_skill
from ..store import Deliverable, Feedback, PromptVersion, TraceStep

if TYPE_CHECKING:
    from ..store import Store

# PromptVersion, Feedback, TraceStep and Deliverable are the store's row values (overlay_kit.store); re-exported
# here. SQL lives in the store: this module calls `store.prompts`, `store.packages` and `store.task_log`.
__all__ = [
    "FEEDBACK_RATINGS",
    "ROUTES",
    "SIGNAL_KINDS",
    "SURFACES",
    "SURFACE_TABLES",
    "BackgroundService",
    "Deliverable",
    "Feedback",
    "FeedbackError",
    "PackageError",
    "PackageRevision",
    "PromptError",
    "PromptVersion",
    "RouteRule",
    "Routing",
    "Signal",
    "SignalError",
    "SignalRecord",
    "SkillPackages",
    "SurfaceError",
    "TaskReview",
    "TraceStep",
    "activate",
    "create_draft",
    "delete_version",
    "edit_draft",
    "instructions",
    "prompt_versions",
    "publish",
    "record_deliverable",
    "record_feedback",
    "record_signal",
    "record_trace",
    "review_report",
    "route",
    "signals",
    "surface_digest",
]


class SurfaceError(ValueError):
    """Bad input to a surface, or a transition its lifecycle forbids. `field` names the offending field."""

    def __init__(self, message: str, field: str | None = None):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


class SignalError(SurfaceError):
    """A signal that is not well-formed (unknown kind, empty text)."""


class PromptError(SurfaceError):
    """A prompt lifecycle violation: editing a published version, activating a draft, deleting the active one."""


class PackageError(SurfaceError):
    """A skill-package upload that is not a valid file tree (no root SKILL.md, an escaping path, …)."""


class FeedbackError(SurfaceError):
    """Feedback, a trace step or a deliverable with a missing or unknown field."""


def _text(value: Any, name: str, error: type[SurfaceError], limit: int | None = None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise error("must be a non-empty string", name)
    if limit is not None and len(value) > limit:
        raise error(f"{len(value)} characters; at most {limit}", name)
    return value


# ------------------------------------------------------------------------------------------ routing

SURFACES = ("user_memory", "knowledge", "skill_overlay", "prompt", "program")
MEMORY_KINDS = ("preference", "identity", "project", "correction")
SIGNAL_KINDS = MEMORY_KINDS + (
    "missing_material",
    "procedure",
    "policy",
    "role",
    "boundary",
    "deterministic_rule",
    "rating",
    "trace",
    "failure",
    "deliverable",
    "other",
)
SIGNAL_TEXT_LIMIT = 4000


@dataclass(frozen=True)
class Signal:
    """One runtime observation. The owner fields (user, agent, skill, task) decide how small its scope is."""

    kind: str
    text: str
    user: str | None = None
    task: str | None = None
    message: str | None = None
    agent: str | None = None
    skill: str | None = None
    cross_task: bool = False  # the rule holds in every task it applies to, not just this one
    at: datetime | None = None

    def __post_init__(self):
        if self.kind not in SIGNAL_KINDS:
            raise SignalError(f"unknown kind {self.kind!r}; kinds are {', '.join(SIGNAL_KINDS)}", "kind")
        _text(self.text, "text", SignalError, SIGNAL_TEXT_LIMIT)
        for name in ("user", "task", "message", "agent", "skill"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise SignalError("must be a non-empty string or None", name)
        if self.at is not None and self.at.tzinfo is None:
            raise SignalError("must be a timezone-aware (UTC) datetime", "at")


@dataclass(frozen=True)
class Routing:
    """Where a signal goes (`surface` None: stored as evidence only), which rule decided, and why."""

    surface: str | None
    reason: str
    rule: str


@dataclass(frozen=True)
class RouteRule:
    """`applies(signal)` returns the reason when the rule claims the signal, else None."""

    name: str
    surface: str
    applies: Callable[[Signal], str | None]


def _user_memory(s: Signal) -> str | None:
    if s.kind in MEMORY_KINDS and s.user:
        return f"a durable {s.kind} of user {s.user}: the smallest scope is that user's memory"
    return None


def _knowledge(s: Signal) -> str | None:
    if s.kind == "missing_material":
        return "missing internal material belongs in the knowledge base (sourced, reviewed before visible)"
    return None


def _skill_overlay(s: Signal) -> str | None:
    if s.kind in ("procedure", "policy") and s.skill:
        return f"a {s.kind} of skill {s.skill}: a staged overlay delta through the write-path gates"
    return None


def _prompt(s: Signal) -> str | None:
    if s.kind in ("role", "boundary") and s.agent:
        return f"agent {s.agent}'s {s.kind}: a prompt draft, effective only once published and activated"
    return None


def _program(s: Signal) -> str | None:
    if s.kind == "deterministic_rule" and s.cross_task:
        return "a cross-task rule that needs deterministic execution belongs in program logic or a tool"
    return None


ROUTES: tuple[RouteRule, ...] = (
    RouteRule("user_memory", "user_memory", _user_memory),
    RouteRule("knowledge", "knowledge", _knowledge),
    RouteRule("skill_overlay", "skill_overlay", _skill_overlay),
    RouteRule("prompt", "prompt", _prompt),
    RouteRule("program", "program", _program),
)


def route(signal: Signal, rules: Iterable[RouteRule] = ROUTES) -> Routing:
    """The first rule that claims the signal; otherwise evidence only (a rating never reaches a prompt)."""
    if not isinstance(signal, Signal):
        raise SignalError(f"expected a Signal, got {type(signal).__name__}", "signal")
    for rule in rules:
        reason = rule.applies(signal)
        if reason:
            return Routing(rule.surface, reason, rule.name)
    return Routing(
        None, f"{signal.kind} signal {_why_nowhere(signal)}: stored as evidence, routed to no surface", "evidence_only"
    )


_OWNER = {
    "procedure": "skill",
    "policy": "skill",
    "role": "agent",
    "boundary": "agent",
    **{k: "user" for k in MEMORY_KINDS},
}


def _why_nowhere(s: Signal) -> str:
    owner = _OWNER.get(s.kind)
    if owner and getattr(s, owner) is None:
        return f"names no {owner}, so its scope is unknown"
    if s.kind == "deterministic_rule" and not s.cross_task:
        return "holds for one task only"
    return "records what happened, not what should change"


@dataclass(frozen=True)
class SignalRecord:
    id: int
    signal: Signal
    routing: Routing


def record_signal(store: "Store", signal: Signal, rules: Iterable[RouteRule] = ROUTES) -> SignalRecord:
    """Store a signal as evidence together with its routing. Writes to no surface."""
    routing = route(signal, rules)
    signal_id = store.task_log.add_signal(
        signal.kind,
        signal.text,
        user=signal.user,
        task=signal.task,
        message=signal.message,
        agent=signal.agent,
        skill=signal.skill,
        cross_task=signal.cross_task,
        surface=routing.surface,
        rule=routing.rule,
        reason=routing.reason,
        at=signal.at or utc_now(),
    )
    return SignalRecord(signal_id, signal, routing)


_ANY = object()


def signals(store: "Store", *, task: str | None = None, surface: Any = _ANY) -> list[SignalRecord]:
    """Stored signals, oldest first; `surface=None` selects the evidence-only ones."""
    rows = store.task_log.signals(task, ... if surface is _ANY else surface)
    return [
        SignalRecord(
            r.id,
            Signal(r.kind, r.text, r.user, r.task, r.message, r.agent, r.skill, r.cross_task, r.at),
            Routing(r.surface, r.reason, r.rule),
        )
        for r in rows
    ]


# ------------------------------------------------------------------------------------------ prompts

PROMPT_LIMIT = 32_000


def _prompt(store: "Store", version_id: int) -> PromptVersion:
    p = store.prompts.get(version_id)
    if p is None:
        raise PromptError(f"no prompt version with id {version_id!r}", "version_id")
    return p


def create_draft(store: "Store", agent: str, content: str) -> PromptVersion:
    """A new draft version for one agent (version numbers count up per agent)."""
    _text(agent, "agent", PromptError, 128)
    _text(content, "content", PromptError, PROMPT_LIMIT)
    return _prompt(store, store.prompts.add_draft(agent, content, utc_now()))


def edit_draft(store: "Store", version_id: int, content: str) -> PromptVersion:
    """Change a draft in place. Published content is immutable: make a new draft instead."""
    _text(content, "content", PromptError, PROMPT_LIMIT)
    with store.transaction():
        p = _prompt(store, version_id)
        if p.status == "published":
            raise PromptError(
                f"version {p.version} of agent {p.agent} is published and immutable; create a new draft", "version_id"
            )
        store.prompts.set_content(version_id, content)
    return _prompt(store, version_id)


def publish(store: "Store", version_id: int) -> PromptVersion:
    """draft → published. Publishing does not activate: the agent's instructions are unchanged."""
    with store.transaction():
        p = _prompt(store, version_id)
        if p.status != "draft":
            raise PromptError(f"version {p.version} of agent {p.agent} is already published", "version_id")
        store.prompts.set_published(version_id, utc_now())
    return _prompt(store, version_id)


def activate(store: "Store", version_id: int) -> PromptVersion:
    """published → active: the version's content becomes the agent's runtime instructions."""
    with store.transaction():
        p = _prompt(store, version_id)
        if p.status != "published":
            raise PromptError(
                f"version {p.version} of agent {p.agent} is a draft; publish it before activating", "version_id"
            )
        store.prompts.activate(p.agent, p.id, p.content, utc_now())
    return _prompt(store, version_id)


def delete_version(store: "Store", version_id: int) -> None:
    """Delete a draft or an inactive published version; the active version cannot be deleted."""
    with store.transaction():
        p = _prompt(store, version_id)
        if p.active:
            raise PromptError(
                f"version {p.version} is agent {p.agent}'s active prompt; activate another first", "version_id"
            )
        store.prompts.delete(version_id)


def instructions(store: "Store", agent: str) -> str:
    """The agent's runtime instructions: the active version's content ("" when none is active)."""
    return store.prompts.instructions(agent)


def prompt_versions(store: "Store", agent: str) -> list[PromptVersion]:
    """Every version of the agent's prompt, oldest first."""
    return store.prompts.versions(agent)


# ----------------------------------------------------------------------------------- skill packages

PACKAGE_LIMIT_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class PackageRevision:
    name: str
    revision: int
    digest: str
    paths: tuple[str, ...]
    uploaded_at: datetime


def _package_path(path: Any) -> str:
    """A relative POSIX path inside the package, or PackageError naming it."""
    if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
        raise PackageError(f"{path!r} is not a relative POSIX path", "path")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path) or any(p in ("", ".", "..") for p in path.split("/")):
        raise PackageError(f"{path!r} escapes or is not normalized inside the package", "path")
    return path


def _package_files(source: str | os.PathLike | Mapping[str, bytes | str]) -> tuple[dict[str, bytes], str | None]:
    """(files by path, the directory the tree came from, if any)."""
    if isinstance(source, Mapping):
        files = {}
        for path, data in source.items():
            if isinstance(data, str):
                data = data.encode("utf-8")
            if not isinstance(data, (bytes, bytearray)):
                raise PackageError(f"{path!r}: content must be bytes or str", "files")
            files[_package_path(path)] = bytes(data)
        return files, None
    root = Path(source)
    if not root.is_dir():
        raise PackageError(f"{root}: not a directory", "source")
    files = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            raise PackageError(f"{p}: symbolic links are not allowed in a package", "path")
        if p.is_file():
            files[_package_path(p.relative_to(root).as_posix())] = p.read_bytes()
    return files, str(root)


class SkillPackages:
    """Uploaded skill packages: same-name content is replaced whole, and each upload issues the next revision.

    `metadata(name)` is cached per name; an upload here drops that entry. A reader elsewhere observes
    `revision(name)` and calls `refresh(name)`. The revision is a counter, not a history snapshot.
    """

    def __init__(self, store: "Store"):
        self.store = store
        self._meta: dict[str, tuple[int, Skill]] = {}

    def upload(self, source: str | os.PathLike | Mapping[str, bytes | str]) -> PackageRevision:
        """Validate a complete file tree (root SKILL.md, frontmatter, paths), then replace the package.
        Invalid uploads raise (SkillError with file/line, or PackageError) and store nothing."""
        files, directory = _package_files(source)
        if "SKILL.md" not in files:
            raise PackageError("a package needs SKILL.md at its root", "SKILL.md")
        total = sum(len(b) for b in files.values())
        if total > PACKAGE_LIMIT_BYTES:
            raise PackageError(f"{total} bytes; at most {PACKAGE_LIMIT_BYTES}", "files")
        where = Path(directory, "SKILL.md") if directory else Path("SKILL.md")
        try:
            text = files["SKILL.md"].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PackageError(f"SKILL.md is not UTF-8 ({exc})", "SKILL.md") from exc
        skill, problems = parse_skill(text, where, check_directory=directory is not None)
        if problems:
            raise SkillValidationError(problems, where)
        digest = hashlib.sha256(
            dumps({p: hashlib.sha256(b).hexdigest() for p, b in files.items()}).encode()
        ).hexdigest()
        now = utc_now()
        revision = self.store.packages.replace(skill.name, digest, files, now)
        self._meta.pop(skill.name, None)  # cache invalidation: the next metadata() reparses
        return PackageRevision(skill.name, revision, digest, tuple(sorted(files)), now)

    def revision(self, name: str) -> int:
        """The server-side revision (0 for an unknown package)."""
        return self.store.packages.revision(name)

    def files(self, name: str) -> dict[str, bytes]:
        files = self.store.packages.files(name)
        if not files:
            raise PackageError(f"no package named {name!r}", "name")
        return files

    def metadata(self, name: str) -> Skill:
        """The package's parsed SKILL.md (frontmatter + body), from the cache when present."""
        if name not in self._meta:
            revision = self.revision(name)
            skill, _ = parse_skill(self.files(name)["SKILL.md"].decode("utf-8"), None)
            self._meta[name] = (revision, skill)
        return self._meta[name][1]

    def refresh(self, name: str) -> bool:
        """Drop the cached metadata when the stored revision moved on (another writer); True if dropped."""
        cached = self._meta.get(name)
        if cached is not None and cached[0] != self.revision(name):
            del self._meta[name]
            return True
        return False


# ----------------------------------------------------------------------------- feedback and review

FEEDBACK_RATINGS = ("positive", "negative", "cleared")


def _when(at: datetime | None) -> datetime:
    if at is not None and at.tzinfo is None:
        raise FeedbackError("must be a timezone-aware (UTC) datetime", "at")
    return at or utc_now()


def record_feedback(
    store: "Store", task: str, message: str, rating: str, *, comment: str = "", at: datetime | None = None
) -> Feedback:
    """Store a rating against one message of one task, and the matching evidence-only signal. Nothing else."""
    _text(task, "task", FeedbackError, 200)
    _text(message, "message", FeedbackError, 200)
    if rating not in FEEDBACK_RATINGS:
        raise FeedbackError(f"unknown rating {rating!r}; ratings are {', '.join(FEEDBACK_RATINGS)}", "rating")
    if not isinstance(comment, str) or len(comment) > SIGNAL_TEXT_LIMIT:
        raise FeedbackError(f"must be a string of at most {SIGNAL_TEXT_LIMIT} characters", "comment")
    when = _when(at)
    with store.transaction():
        feedback = store.task_log.add_feedback(task, message, rating, comment, when)
        record_signal(
            store,
            Signal(
                "rating",
                f"{rating} rating" + (f": {comment}" if comment else ""),
                task=task,
                message=message,
                at=feedback.at,
            ),
        )
    return feedback


def record_trace(
    store: "Store",
    task: str,
    step: str,
    state: str,
    *,
    usage: Mapping[str, Any] | None = None,
    detail: str = "",
    at: datetime | None = None,
) -> TraceStep:
    """One step of a task's trace (state such as ok / failed / skipped, token usage, a short detail)."""
    for name, value in (("task", task), ("step", step), ("state", state)):
        _text(value, name, FeedbackError, 200)
    try:
        usage = dict(usage or {})
        dumps(usage)  # refused here, before anything is written
    except (TypeError, ValueError) as exc:
        raise FeedbackError(f"not JSON-serialisable ({exc})", "usage") from exc
    return store.task_log.add_trace(task, step, state, usage, str(detail), _when(at))


def record_deliverable(
    store: "Store", task: str, name: str, ok: bool, *, detail: str = "", at: datetime | None = None
) -> Deliverable:
    """What a task produced (or failed to): evidence for review, never a trigger."""
    _text(task, "task", FeedbackError, 200)
    _text(name, "name", FeedbackError, 200)
    return store.task_log.add_deliverable(task, name, ok, str(detail), _when(at))


@dataclass(frozen=True)
class TaskReview:
    """Everything recorded about one task, linked for a reviewer. `rating` is the latest per message."""

    task: str
    feedback: tuple[Feedback, ...]
    traces: tuple[TraceStep, ...]
    deliverables: tuple[Deliverable, ...]
    signals: tuple[SignalRecord, ...]

    @property
    def ratings(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for f in self.feedback:
            out[f.message] = f.rating
        return {m: r for m, r in out.items() if r != "cleared"}

    def to_dict(self) -> dict:
        return {
            "task": self.task,
            "ratings": self.ratings,
            "feedback": [
                {"message": f.message, "rating": f.rating, "comment": f.comment, "at": iso(f.at)} for f in self.feedback
            ],
            "traces": [
                {"step": t.step, "state": t.state, "usage": dict(t.usage), "detail": t.detail} for t in self.traces
            ],
            "deliverables": [{"name": d.name, "ok": d.ok, "detail": d.detail} for d in self.deliverables],
            "signals": [
                {"kind": s.signal.kind, "surface": s.routing.surface, "rule": s.routing.rule} for s in self.signals
            ],
        }


def review_report(store: "Store", task: str | None = None) -> list[TaskReview]:
    """Feedback, trace steps, deliverables and signals linked per task (one task, or every task seen)."""
    log = store.task_log
    return [
        TaskReview(t, log.feedback(t), log.traces(t), log.deliverables(t), tuple(signals(store, task=t)))
        for t in ([task] if task is not None else log.tasks())
    ]


# --------------------------------------------------------------------------------- surface state

# The tables that change what a later run sees. Evidence tables are deliberately absent.
SURFACE_TABLES = (
    "user_memories",
    "knowledge_docs",
    "prompt_versions",
    "agents",
    "skill_packages",
    "skill_package_files",
    "skill_deltas",
    "learned_facts",
)


def surface_digest(store: "Store") -> str:
    """sha256 over every row of every surface table: equal digests mean no surface changed."""
    return store.table_digest(SURFACE_TABLES)


# ------------------------------------------------------------------------- background and local model


class BackgroundService:
    """A surface service whose slow, non-critical work runs on one worker thread (its own unless an executor
    is passed), so results stay in submission order and never block the caller."""

    def __init__(self, executor: ThreadPoolExecutor | None, name: str):
        self._own = executor is None
        self._executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    def close(self, wait: bool = True) -> None:
        if self._own:
            self._executor.shutdown(wait=wait)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def answering_model(client: Any, model: str | None = None) -> str | None:
    """The model to use when `client` (an `overlay_kit.llm.LemonadeClient`) answers, else None."""
    if client is None:
        return None
    import httpx

    from ..llm.client import (
        LLMError,  # llm sits below this module in the pipeline; imported only when a client is given
    )

    try:
        health = client.health()
        if not health.up:
            return None
        if model:
            return model
        if health.loaded:
            return health.loaded[0][0]
        models = client.models()
        return models[0].id if models else None
    except (LLMError, httpx.HTTPError):
        return None


def ask_model(client: Any, model: str, system: str, user: str, *, max_tokens: int = 512) -> str:
    """One deterministic chat turn (temperature 0, seed 0); the reply text. Errors propagate to the caller."""
    reply = client.chat(
        model,
        [{"role": "system", "content": system}, {"role": "user", "content": user}],
        temperature=0.0,
        seed=0,
        max_completion_tokens=max_tokens,
    )
    return reply.content
