"""The table families of the store: the evidence ledger and the capability surfaces keep their rows in the
store's file too, one small class per family of tables, exposed on the store: `store.evidence`,
`store.memories`, `store.knowledge`, `store.prompts`, `store.packages`, `store.task_log`. The modules that own
the rules (overlay_kit.evidence, overlay_kit.surfaces.*) decide; these classes only read and write rows and
return values. Each write runs in `store.transaction()` (a savepoint inside the caller's), so a caller batches
several into one commit; none is audited (the audit trail records delta state changes, which these are not)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from types import EllipsisType
from typing import Any

from ..common import dumps, iso, parse_time, utc_now

__all__ = [
    "MemoryDecision",
    "Deliverable",
    "Document",
    "EvidenceLedger",
    "Feedback",
    "Heading",
    "KnowledgeTables",
    "Memory",
    "MemoryRun",
    "MemoryTables",
    "PackageTables",
    "PromptTables",
    "PromptVersion",
    "StoredSignal",
    "TaskLog",
    "TraceStep",
]


class _Tables:
    """One family of tables of a `Store` (stateless: a view onto the store's connection)."""

    def __init__(self, store: Store):  # noqa: F821 (core's Store, which imports this module: an annotation only)
        self._store = store

    @property
    def _conn(self) -> sqlite3.Connection:
        return self._store.conn


# ------------------------------------------------------------------------------------ evidence ledger


class EvidenceLedger(_Tables):
    """`turn_context`, `turn_signals`, `promotion_log`, `consolidations` (overlay_kit.evidence's rows)."""

    def sections(self, ids: Sequence[str]) -> dict[str, str]:
        """{delta id: anchor section} for the ids that exist (one query per 500 ids)."""
        out: dict[str, str] = {}
        for k in range(0, len(ids), 500):
            part = list(ids[k : k + 500])
            out.update(
                self._conn.execute(
                    f"SELECT id, json_extract(anchor, '$.section') FROM skill_deltas "
                    f"WHERE id IN ({', '.join('?' * len(part))})",
                    part,
                ).fetchall()
            )
        return out

    def add_context(self, session: str, turn: str, ids: Iterable[str], role: str, at: datetime) -> None:
        """Ledger that `ids` were in context on (session, turn) in `role`; a repeat is ignored."""
        with self._store.transaction():
            self._conn.executemany(
                "INSERT OR IGNORE INTO turn_context (session, turn, delta_id, role, at) VALUES (?, ?, ?, ?, ?)",
                [(session, turn, d, role, iso(at)) for d in ids],
            )

    def context(self, session: str, turn: str) -> list[tuple[str, str]]:
        """(delta id, role) rows of (session, turn), in the order they were ledgered."""
        return self._conn.execute(
            "SELECT delta_id, role FROM turn_context WHERE session = ? AND turn = ? ORDER BY id", (session, turn)
        ).fetchall()

    def add_signal(
        self,
        session: str,
        turn: str,
        signal: str,
        *,
        positive: bool | None,
        rating: int | None,
        scope: str,
        skill: str | None,
        section: str | None,
        lesson: str | None,
        at: datetime,
    ) -> int:
        """Ledger one user signal (not yet attributed); returns its row id."""
        with self._store.transaction():
            return self._conn.execute(
                "INSERT INTO turn_signals (session, turn, signal, positive, rating, scope, skill, section, lesson, "
                "attributed, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
                (
                    session,
                    turn,
                    signal,
                    None if positive is None else int(positive),
                    rating,
                    scope,
                    skill,
                    section,
                    lesson,
                    iso(at),
                ),
            ).lastrowid

    def set_attributed(self, signal_id: int, count: int) -> None:
        """How many deltas' counters signal `signal_id` moved."""
        with self._store.transaction():
            self._conn.execute("UPDATE turn_signals SET attributed = ? WHERE id = ?", (count, signal_id))

    def erase_signals(self, *, skill: str | None = None, scope: str | None = None, all: bool = False) -> int:
        """Delete the signals of a skill and/or scope (or all), then finish the erasure as `forget` does (the file
        rewritten, the WAL truncated: `Store.finish_erasure`, honest `erasure_pending` when it cannot). With no
        filter every signal goes. Returns how many rows were deleted."""
        where, args = [], []
        if not all:
            for column, value in (("skill", skill), ("scope", scope)):
                if value is not None:
                    where.append(f"{column} = ?")
                    args.append(value)
        with self._store.transaction():
            n = self._conn.execute(
                "DELETE FROM turn_signals" + (" WHERE " + " AND ".join(where) if where else ""), args
            ).rowcount
        self._store._compact_due = True
        self._store.finish_erasure()
        return n

    def ledger_seq(self, delta_id: str) -> int:
        """The outcome-ledger position a delta's counters cover (its latest outcome row id; 0 for none)."""
        row = self._conn.execute("SELECT max(id) FROM delta_outcomes WHERE delta_id = ?", (delta_id,)).fetchone()
        return int(row[0] or 0)

    def log_promotion(
        self,
        delta_id: str,
        decision: str,
        *,
        successes: int,
        attempts: int,
        score: float,
        threshold: float,
        min_samples: int,
        wilson: bool,
        ledger_seq: int,
        reason: str,
        at: datetime,
    ) -> None:
        """One promotion or retirement decision, with the counters it read and the ledger position."""
        with self._store.transaction():
            self._conn.execute(
                "INSERT INTO promotion_log (delta_id, decision, successes, attempts, score, threshold, "
                "min_samples, wilson, ledger_seq, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    delta_id,
                    decision,
                    successes,
                    attempts,
                    score,
                    threshold,
                    min_samples,
                    int(wilson),
                    ledger_seq,
                    reason,
                    iso(at),
                ),
            )

    def add_consolidation(
        self,
        umbrella_id: str,
        members: Sequence[str],
        *,
        skill: str,
        section: str,
        embedding_sim: float | None,
        bigram_sim: float,
        at: datetime,
    ) -> None:
        """Record an umbrella proposal: the staged umbrella delta and the members it would supersede."""
        with self._store.transaction():
            self._conn.execute(
                "INSERT INTO consolidations (umbrella_id, members, skill, section, embedding_sim, "
                "bigram_sim, proposed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (umbrella_id, dumps(list(members)), skill, section, embedding_sim, bigram_sim, iso(at)),
            )

    def consolidation_members(self, umbrella_id: str) -> tuple[str, ...] | None:
        """The member ids of an umbrella proposal (None: `umbrella_id` is not one)."""
        row = self._conn.execute("SELECT members FROM consolidations WHERE umbrella_id = ?", (umbrella_id,)).fetchone()
        return None if row is None else tuple(json.loads(row[0]))

    def pending_consolidations(self, skill: str | None = None) -> dict[str, tuple[str, ...]]:
        """{umbrella id: member ids} of proposals whose umbrella is still staged or quarantined, oldest first."""
        sql = (
            "SELECT c.umbrella_id, c.members FROM consolidations c JOIN skill_deltas d ON d.id = c.umbrella_id "
            "WHERE d.status IN ('staged', 'quarantined')"
        )
        args: list = []
        if skill is not None:
            sql, args = sql + " AND c.skill = ?", [skill]
        rows = self._conn.execute(sql + " ORDER BY c.proposed_at, c.umbrella_id", args)
        return {u: tuple(json.loads(m)) for u, m in rows}


# ---------------------------------------------------------------------------------------- user memory


@dataclass(frozen=True)
class Memory:
    id: int
    user: str
    type: str
    content: str
    source: str  # manual | auto
    salience: float | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class MemoryDecision:
    """What reconciliation did with one candidate: added, updated, noop, manual_kept, low_salience, invalid."""

    action: str
    type: str
    content: str
    memory_id: int | None = None
    similarity: float | None = None


@dataclass(frozen=True)
class MemoryRun:
    """One after-turn pass: outcome is skipped_explicit, no_cue, extracted or failed."""

    id: int
    user: str
    turn: str
    outcome: str
    cues: tuple[str, ...]
    decisions: tuple[MemoryDecision, ...]
    error: str | None
    at: datetime

    @property
    def written(self) -> int:
        return sum(d.action in ("added", "updated") for d in self.decisions)


_MEMORY_SQL = "SELECT id, user_id, type, content, source, salience, created_at, updated_at FROM user_memories"


def _memory(row: tuple) -> Memory:
    i, u, t, c, s, sal, cr, up = row
    return Memory(i, u, t, c, s, sal, parse_time(cr), parse_time(up))


def _decision(d: Mapping[str, Any]) -> MemoryDecision:
    return MemoryDecision(d["action"], d["type"], d["content"], d.get("memory_id"), d.get("similarity"))


class MemoryTables(_Tables):
    """`user_memories` and `memory_runs` (overlay_kit.surfaces.memory's rows)."""

    def get(self, memory_id: int) -> Memory | None:
        row = self._conn.execute(_MEMORY_SQL + " WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else _memory(row)

    def of_user(self, user: str, type: str | None = None) -> list[Memory]:
        """A user's memories (optionally of one type), oldest first."""
        sql, args = _MEMORY_SQL + " WHERE user_id = ?", [user]
        if type is not None:
            sql, args = sql + " AND type = ?", args + [type]
        return [_memory(r) for r in self._conn.execute(sql + " ORDER BY id", args)]

    def total(self, source: str | None = None) -> int:
        """How many memories there are (of one source: manual | auto)."""
        sql, args = "SELECT count(*) FROM user_memories", []
        if source is not None:
            sql, args = sql + " WHERE source = ?", [source]
        return self._conn.execute(sql, args).fetchone()[0]

    def add(self, user: str, type: str, content: str, *, source: str, salience: float | None, at: datetime) -> int:
        """A new memory (created and updated at `at`); returns its id."""
        with self._store.transaction():
            return self._conn.execute(
                "INSERT INTO user_memories (user_id, type, content, source, salience, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (user, type, content, source, salience, iso(at), iso(at)),
            ).lastrowid

    def revise(self, memory_id: int, content: str, *, salience: float | None, at: datetime) -> None:
        """Automatic reconciliation rewords a memory: content and salience change, the source stays."""
        with self._store.transaction():
            self._conn.execute(
                "UPDATE user_memories SET content = ?, salience = ?, updated_at = ? WHERE id = ?",
                (content, salience, iso(at), memory_id),
            )

    def rewrite(self, memory_id: int, content: str, *, at: datetime) -> None:
        """The user rewrites a memory: it becomes manual (automatic extraction never overwrites it again)."""
        with self._store.transaction():
            self._conn.execute(
                "UPDATE user_memories SET content = ?, source = 'manual', updated_at = ? WHERE id = ?",
                (content, iso(at), memory_id),
            )

    def delete(self, memory_id: int) -> bool:
        """Erase a memory (a real DELETE: it is the user's own data). False if there was none."""
        with self._store.transaction():
            return self._conn.execute("DELETE FROM user_memories WHERE id = ?", (memory_id,)).rowcount > 0

    def add_run(
        self,
        user: str,
        turn: str,
        outcome: str,
        cues: Sequence[str],
        decisions: Sequence[MemoryDecision],
        error: str | None,
        at: datetime,
    ) -> int:
        """Record one after-turn pass and the decisions it took; returns the run's id."""
        with self._store.transaction():
            return self._conn.execute(
                "INSERT INTO memory_runs (user_id, turn, outcome, cues, decisions, error, at) VALUES (?,?,?,?,?,?,?)",
                (user, turn, outcome, dumps(list(cues)), dumps([asdict(d) for d in decisions]), error, iso(at)),
            ).lastrowid

    def runs(self, user: str | None = None) -> list[MemoryRun]:
        """Recorded passes (of one user, or all), oldest first."""
        sql = "SELECT id, user_id, turn, outcome, cues, decisions, error, at FROM memory_runs"
        rows = (
            self._conn.execute(sql + " WHERE user_id = ? ORDER BY id", (user,))
            if user is not None
            else self._conn.execute(sql + " ORDER BY id")
        )
        return [
            MemoryRun(i, u, t, o, tuple(json.loads(c)), tuple(_decision(d) for d in json.loads(ds)), e, parse_time(a))
            for i, u, t, o, c, ds, e, a in rows
        ]


# ------------------------------------------------------------------------------------------ knowledge


@dataclass(frozen=True)
class Heading:
    slug: str
    heading: str
    level: int
    line: int


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    body: str
    outline: tuple[Heading, ...]
    status: str  # pending | ready
    revision: int
    summary: str | None
    summary_source: str | None  # auto | manual | None
    updated_at: datetime


_DOC_SQL = "SELECT id, title, body, outline, status, revision, summary, summary_source, updated_at FROM knowledge_docs"


def _doc(row: tuple) -> Document:
    i, title, body, out, status, rev, summary, source, updated = row
    return Document(
        i, title, body, tuple(Heading(**h) for h in json.loads(out)), status, rev, summary, source, parse_time(updated)
    )


class KnowledgeTables(_Tables):
    """`knowledge_docs` and `knowledge_events` (overlay_kit.surfaces.knowledge's rows)."""

    def get(self, doc_id: str) -> Document | None:
        row = self._conn.execute(_DOC_SQL + " WHERE id = ?", (doc_id,)).fetchone()
        return None if row is None else _doc(row)

    def documents(self, status: str | None = None) -> list[Document]:
        """Every document (or those of one status: pending | ready), by id."""
        sql, args = (_DOC_SQL + " WHERE status = ?", (status,)) if status else (_DOC_SQL, ())
        return [_doc(r) for r in self._conn.execute(sql + " ORDER BY id", args)]

    def revision(self, doc_id: str) -> int:
        """The document's current revision (0: no such document)."""
        row = self._conn.execute("SELECT revision FROM knowledge_docs WHERE id = ?", (doc_id,)).fetchone()
        return 0 if row is None else row[0]

    def summary_state(self, doc_id: str) -> tuple[int, str | None] | None:
        """(revision, summary source) as stored now (None: no such document) — a summary job's reread."""
        row = self._conn.execute(
            "SELECT revision, summary_source FROM knowledge_docs WHERE id = ?", (doc_id,)
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def put(
        self, doc_id: str, *, title: str, body: str, outline: Sequence[Heading], revision: int, at: datetime
    ) -> None:
        """Insert or replace a document's content as `pending` at `revision`; its summary is cleared."""
        with self._store.transaction():
            self._conn.execute(
                "INSERT INTO knowledge_docs (id, title, body, outline, status, revision, summary, summary_source, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, 'pending', ?, NULL, NULL, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET title = excluded.title, body = excluded.body, "
                "outline = excluded.outline, status = 'pending', revision = excluded.revision, summary = NULL, "
                "summary_source = NULL, updated_at = excluded.updated_at",
                (doc_id, title, body, dumps([asdict(h) for h in outline]), revision, iso(at), iso(at)),
            )

    def set_ready(self, doc_id: str, at: datetime) -> None:
        with self._store.transaction():
            self._conn.execute(
                "UPDATE knowledge_docs SET status = 'ready', updated_at = ? WHERE id = ?", (iso(at), doc_id)
            )

    def set_manual_summary(self, doc_id: str, text: str, at: datetime) -> None:
        """A reviewer's summary (an update of the document: `updated_at` moves)."""
        with self._store.transaction():
            self._conn.execute(
                "UPDATE knowledge_docs SET summary = ?, summary_source = 'manual', updated_at = ? WHERE id = ?",
                (text, iso(at), doc_id),
            )

    def set_auto_summary(self, doc_id: str, text: str) -> None:
        """A generated summary (an enhancement, not an update: `updated_at` stays)."""
        with self._store.transaction():
            self._conn.execute(
                "UPDATE knowledge_docs SET summary = ?, summary_source = 'auto' WHERE id = ?", (text, doc_id)
            )

    def add_event(self, doc_id: str, revision: int, event: str, detail: str = "", at: datetime | None = None) -> None:
        with self._store.transaction():
            self._conn.execute(
                "INSERT INTO knowledge_events (doc_id, revision, event, detail, at) VALUES (?,?,?,?,?)",
                (doc_id, revision, event, detail, iso(at or utc_now())),
            )

    def events(self, doc_id: str | None = None) -> list[tuple[str, int, str, str]]:
        """(doc id, revision, event, detail) rows (of one document, or all), oldest first."""
        sql = "SELECT doc_id, revision, event, detail FROM knowledge_events"
        rows = (
            self._conn.execute(sql + " WHERE doc_id = ? ORDER BY id", (doc_id,))
            if doc_id
            else self._conn.execute(sql + " ORDER BY id")
        )
        return [tuple(r) for r in rows]


# -------------------------------------------------------------------------------------------- prompts


@dataclass(frozen=True)
class PromptVersion:
    id: int
    agent: str
    version: int
    content: str
    status: str  # draft | published
    active: bool
    created_at: datetime
    published_at: datetime | None


_PROMPT_SQL = (
    "SELECT p.id, p.agent, p.version, p.content, p.status, a.active_version IS NOT NULL, p.created_at, "
    "p.published_at FROM prompt_versions p LEFT JOIN agents a ON a.active_version = p.id"
)


def _prompt(row: tuple) -> PromptVersion:
    i, agent, version, content, status, active, created, published = row
    return PromptVersion(i, agent, version, content, status, bool(active), parse_time(created), parse_time(published))


class PromptTables(_Tables):
    """`prompt_versions` and `agents` (the prompt lifecycle of overlay_kit.surfaces.routing)."""

    def get(self, version_id: int) -> PromptVersion | None:
        row = self._conn.execute(_PROMPT_SQL + " WHERE p.id = ?", (version_id,)).fetchone()
        return None if row is None else _prompt(row)

    def versions(self, agent: str) -> list[PromptVersion]:
        """Every version of one agent's prompt, by version number."""
        return [_prompt(r) for r in self._conn.execute(_PROMPT_SQL + " WHERE p.agent = ? ORDER BY p.version", (agent,))]

    def add_draft(self, agent: str, content: str, at: datetime) -> int:
        """A new draft numbered one past the agent's latest version; returns its id."""
        with self._store.transaction():
            (last,) = self._conn.execute(
                "SELECT COALESCE(MAX(version), 0) FROM prompt_versions WHERE agent = ?", (agent,)
            ).fetchone()
            return self._conn.execute(
                "INSERT INTO prompt_versions (agent, version, content, status, created_at) "
                "VALUES (?, ?, ?, 'draft', ?)",
                (agent, last + 1, content, iso(at)),
            ).lastrowid

    def set_content(self, version_id: int, content: str) -> None:
        with self._store.transaction():
            self._conn.execute("UPDATE prompt_versions SET content = ? WHERE id = ?", (content, version_id))

    def set_published(self, version_id: int, at: datetime) -> None:
        with self._store.transaction():
            self._conn.execute(
                "UPDATE prompt_versions SET status = 'published', published_at = ? WHERE id = ?", (iso(at), version_id)
            )

    def activate(self, agent: str, version_id: int, instructions: str, at: datetime) -> None:
        """Make `version_id` the agent's active version and `instructions` its runtime instructions."""
        with self._store.transaction():
            self._conn.execute(
                "INSERT INTO agents (name, active_version, instructions, activated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET active_version = excluded.active_version, "
                "instructions = excluded.instructions, activated_at = excluded.activated_at",
                (agent, version_id, instructions, iso(at)),
            )

    def delete(self, version_id: int) -> None:
        with self._store.transaction():
            self._conn.execute("DELETE FROM prompt_versions WHERE id = ?", (version_id,))

    def instructions(self, agent: str) -> str:
        """The agent's runtime instructions ("" when no version is active)."""
        row = self._conn.execute("SELECT instructions FROM agents WHERE name = ?", (agent,)).fetchone()
        return "" if row is None else row[0]


# ------------------------------------------------------------------------------------- skill packages


class PackageTables(_Tables):
    """`skill_packages` and `skill_package_files` (uploaded skill packages, overlay_kit.surfaces.routing)."""

    def revision(self, name: str) -> int:
        """The package's revision (0: no such package)."""
        row = self._conn.execute("SELECT revision FROM skill_packages WHERE name = ?", (name,)).fetchone()
        return 0 if row is None else row[0]

    def replace(self, name: str, digest: str, files: Mapping[str, bytes], at: datetime) -> int:
        """Replace the package's whole file tree, advancing its revision by one; returns the new revision."""
        with self._store.transaction():
            revision = self.revision(name) + 1
            self._conn.execute(
                "INSERT INTO skill_packages (name, revision, digest, uploaded_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET revision = excluded.revision, digest = excluded.digest, "
                "uploaded_at = excluded.uploaded_at",
                (name, revision, digest, iso(at)),
            )
            self._conn.execute("DELETE FROM skill_package_files WHERE name = ?", (name,))
            self._conn.executemany(
                "INSERT INTO skill_package_files (name, path, content) VALUES (?, ?, ?)",
                [(name, p, b) for p, b in sorted(files.items())],
            )
        return revision

    def files(self, name: str) -> dict[str, bytes]:
        """{path: content} of the package ({} for an unknown package)."""
        rows = self._conn.execute(
            "SELECT path, content FROM skill_package_files WHERE name = ? ORDER BY path", (name,)
        ).fetchall()
        return {p: bytes(b) for p, b in rows}


# -------------------------------------------------------------- surface signals, feedback, traces, deliverables


@dataclass(frozen=True)
class StoredSignal:
    """One `surface_signals` row: a runtime signal and the routing decided for it."""

    id: int
    kind: str
    text: str
    user: str | None
    task: str | None
    message: str | None
    agent: str | None
    skill: str | None
    cross_task: bool
    surface: str | None
    rule: str
    reason: str
    at: datetime


@dataclass(frozen=True)
class Feedback:
    id: int
    task: str
    message: str
    rating: str
    comment: str
    at: datetime


@dataclass(frozen=True)
class TraceStep:
    id: int
    task: str
    step: str
    state: str
    usage: Mapping[str, Any]
    detail: str
    at: datetime


@dataclass(frozen=True)
class Deliverable:
    id: int
    task: str
    name: str
    ok: bool
    detail: str
    at: datetime


class TaskLog(_Tables):
    """`surface_signals`, `message_feedback`, `task_traces`, `task_deliverables`: evidence rows per task, which
    change no surface (overlay_kit.surfaces.routing records and links them)."""

    def add_signal(
        self,
        kind: str,
        text: str,
        *,
        user: str | None,
        task: str | None,
        message: str | None,
        agent: str | None,
        skill: str | None,
        cross_task: bool,
        surface: str | None,
        rule: str,
        reason: str,
        at: datetime,
    ) -> int:
        """Store one signal with its routing; returns its id."""
        with self._store.transaction():
            return self._conn.execute(
                "INSERT INTO surface_signals (kind, text, user_id, task, message, agent, skill, cross_task, "
                "surface, rule, reason, at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (kind, text, user, task, message, agent, skill, int(cross_task), surface, rule, reason, iso(at)),
            ).lastrowid

    def signals(self, task: str | None = None, surface: str | None | EllipsisType = ...) -> list[StoredSignal]:
        """Stored signals (of one task; of one surface, `None` for evidence-only ones, `...` for any), oldest
        first."""
        sql = (
            "SELECT id, kind, text, user_id, task, message, agent, skill, cross_task, surface, rule, reason, at "
            "FROM surface_signals"
        )
        where, args = [], []
        if task is not None:
            where.append("task = ?")
            args.append(task)
        if surface is None:
            where.append("surface IS NULL")
        elif surface is not ...:
            where.append("surface = ?")
            args.append(surface)
        rows = self._conn.execute(sql + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id", args)
        return [
            StoredSignal(i, k, t, u, ta, m, a, s, bool(c), sf, r, rs, parse_time(at))
            for i, k, t, u, ta, m, a, s, c, sf, r, rs, at in rows
        ]

    def add_feedback(self, task: str, message: str, rating: str, comment: str, at: datetime) -> Feedback:
        with self._store.transaction():
            cur = self._conn.execute(
                "INSERT INTO message_feedback (task, message, rating, comment, at) VALUES (?, ?, ?, ?, ?)",
                (task, message, rating, comment, iso(at)),
            )
        return Feedback(cur.lastrowid, task, message, rating, comment, parse_time(iso(at)))

    def add_trace(
        self, task: str, step: str, state: str, usage: Mapping[str, Any], detail: str, at: datetime
    ) -> TraceStep:
        """One trace step; `usage` is stored as canonical JSON (TypeError/ValueError if it is not JSON)."""
        encoded = dumps(dict(usage))
        with self._store.transaction():
            cur = self._conn.execute(
                "INSERT INTO task_traces (task, step, state, usage, detail, at) VALUES (?,?,?,?,?,?)",
                (task, step, state, encoded, detail, iso(at)),
            )
        return TraceStep(cur.lastrowid, task, step, state, json.loads(encoded), detail, parse_time(iso(at)))

    def add_deliverable(self, task: str, name: str, ok: bool, detail: str, at: datetime) -> Deliverable:
        with self._store.transaction():
            cur = self._conn.execute(
                "INSERT INTO task_deliverables (task, name, ok, detail, at) VALUES (?,?,?,?,?)",
                (task, name, int(bool(ok)), detail, iso(at)),
            )
        return Deliverable(cur.lastrowid, task, name, bool(ok), detail, parse_time(iso(at)))

    def tasks(self) -> list[str]:
        """Every task that has feedback, a trace step, a deliverable or a signal, sorted."""
        return [
            t
            for (t,) in self._conn.execute(
                "SELECT task FROM message_feedback UNION SELECT task FROM task_traces UNION "
                "SELECT task FROM task_deliverables UNION SELECT task FROM surface_signals WHERE task IS NOT NULL "
                "ORDER BY task"
            )
        ]

    def feedback(self, task: str) -> tuple[Feedback, ...]:
        return tuple(
            Feedback(i, task, m, r, c, parse_time(a))
            for i, m, r, c, a in self._conn.execute(
                "SELECT id, message, rating, comment, at FROM message_feedback WHERE task = ? ORDER BY at, id", (task,)
            )
        )

    def count_feedback(self, rating: str | None = None) -> int:
        """How many feedback rows there are (of one rating)."""
        sql, args = "SELECT count(*) FROM message_feedback", []
        if rating is not None:
            sql, args = sql + " WHERE rating = ?", [rating]
        return self._conn.execute(sql, args).fetchone()[0]

    def traces(self, task: str) -> tuple[TraceStep, ...]:
        return tuple(
            TraceStep(i, task, s, st, json.loads(u), d, parse_time(a))
            for i, s, st, u, d, a in self._conn.execute(
                "SELECT id, step, state, usage, detail, at FROM task_traces WHERE task = ? ORDER BY at, id", (task,)
            )
        )

    def deliverables(self, task: str) -> tuple[Deliverable, ...]:
        return tuple(
            Deliverable(i, task, n, bool(o), d, parse_time(a))
            for i, n, o, d, a in self._conn.execute(
                "SELECT id, name, ok, detail, at FROM task_deliverables WHERE task = ? ORDER BY at, id", (task,)
            )
        )
