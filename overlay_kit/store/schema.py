"""The schema: the ordered `MIGRATIONS` (the DDL by version, append only), the schema history's DDL, and the
helpers that split, restate and recognise that DDL (which objects overlay_kit creates: `_own_objects`,
`_own_triggers`). `Store._migrate` applies them; `files._foreign_objects` compares a file's schema with them."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ..grammar import STATUSES, TIERS

__all__ = ["BOUND_SINCE", "MIGRATIONS", "SEALED_SINCE", "TRIGGER_SOURCES", "Migration"]


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str
    edits: tuple[tuple[str, Callable[[str], str]], ...] = ()  # (table, edit of its CREATE text): `_edit_tables`
    # a step over existing rows, after `sql`, in its transaction (core's Store, which imports this module)
    rows: Callable[["Store"], None] | None = None  # noqa: F821


_STATUS_SQL = ", ".join(f"'{s}'" for s in STATUSES)
_KIND_SQL = ", ".join(f"'{k}'" for k in TIERS)

# `CHECK (column IN (constants))`: SQLite tests it through a temporary table it rebuilds for every row inserted
# (a third of a learned row's B-tree writes); written as `column = c1 OR column = c2 …` it is the same test.
_SQL_CONSTANT = re.compile(r"'(?:[^']|'')*'|-?\d+")
_IN_LIST_CHECK = re.compile(
    rf"CHECK\s*\(\s*(\w+)\s+IN\s*\(\s*((?:{_SQL_CONSTANT.pattern})"
    rf"(?:\s*,\s*(?:{_SQL_CONSTANT.pattern}))*)\s*\)\s*\)",
    re.IGNORECASE,
)


def _in_lists_as_comparisons(sql: str) -> str:
    """A CREATE statement with each `CHECK (column IN (constants))` written as comparisons (the same test)."""
    return _IN_LIST_CHECK.sub(
        lambda m: "CHECK (" + " OR ".join(f"{m.group(1)} = {c}" for c in _SQL_CONSTANT.findall(m.group(2))) + ")", sql
    )


def _edit_tables(conn: sqlite3.Connection, edits: tuple[tuple[str, Callable[[str], str]], ...]) -> None:
    """Edit tables' stored CREATE statements in place, SQLite's documented way for what ALTER TABLE cannot
    change (https://sqlite.org/lang_altertable.html#otheralter: `writable_schema`, then the schema version
    bumped so every connection reads the new text). Only for edits every stored row satisfies as before (a
    constraint restated in an equivalent form): the rows are not rewritten or checked again. Inside the
    migration's transaction."""
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    try:
        for table, edit in edits:
            (sql,) = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            conn.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", (edit(sql), table))
        conn.execute(f"PRAGMA schema_version = {version + 1}")
    finally:
        conn.execute("PRAGMA writable_schema = OFF")


# Append only. Never edit an entry once released: databases in the field recorded it as applied.
MIGRATIONS: list[Migration] = [
    Migration(
        1,
        "skill_deltas",
        f"""
        CREATE TABLE IF NOT EXISTS skill_deltas (
            id            TEXT PRIMARY KEY,
            base_name     TEXT NOT NULL,
            base_root     TEXT,
            base_version  TEXT,
            scope         TEXT NOT NULL,
            kind          TEXT NOT NULL CHECK (kind IN ({_KIND_SQL})),
            tier          INTEGER NOT NULL CHECK (tier BETWEEN 1 AND 3),
            anchor        TEXT NOT NULL CHECK (json_valid(anchor)),
            payload       TEXT NOT NULL CHECK (json_valid(payload)),
            provenance    TEXT NOT NULL CHECK (json_valid(provenance)),
            status        TEXT NOT NULL DEFAULT 'staged' CHECK (status IN ({_STATUS_SQL})),
            success_count INTEGER NOT NULL DEFAULT 0 CHECK (success_count >= 0),
            attempt_count INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= success_count),
            embedding     BLOB,
            superseded_by TEXT REFERENCES skill_deltas(id) ON DELETE SET NULL,
            created_at    TEXT NOT NULL,
            approved_at   TEXT,
            last_used_at  TEXT
        );
        CREATE INDEX IF NOT EXISTS idx_delta_base ON skill_deltas(base_name, scope);
        CREATE INDEX IF NOT EXISTS idx_delta_active ON skill_deltas(status) WHERE status = 'active';
        CREATE INDEX IF NOT EXISTS idx_delta_super ON skill_deltas(superseded_by)
            WHERE superseded_by IS NOT NULL;
    """,
    ),
    Migration(
        2,
        "audit, facts, base registry, outcomes",
        """
        CREATE TABLE IF NOT EXISTS delta_audit (
            seq         INTEGER PRIMARY KEY AUTOINCREMENT,
            delta_id    TEXT,
            who         TEXT NOT NULL,
            at          TEXT NOT NULL,
            from_status TEXT,
            to_status   TEXT,
            reason      TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX IF NOT EXISTS idx_audit_delta ON delta_audit(delta_id);
        CREATE TRIGGER IF NOT EXISTS delta_audit_append_only BEFORE UPDATE ON delta_audit
            BEGIN SELECT RAISE(ABORT, 'delta_audit is append-only'); END;
        CREATE TRIGGER IF NOT EXISTS delta_audit_erase_only BEFORE DELETE ON delta_audit
            WHEN NOT overlay_erasing()
            BEGIN SELECT RAISE(ABORT, 'delta_audit rows leave only through forget'); END;

        CREATE TABLE IF NOT EXISTS learned_facts (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            namespace   TEXT NOT NULL,
            key         TEXT NOT NULL,
            value       TEXT NOT NULL CHECK (json_valid(value)),
            scope       TEXT NOT NULL DEFAULT 'user',
            provenance  TEXT NOT NULL CHECK (json_valid(provenance)),
            status      TEXT NOT NULL DEFAULT 'current' CHECK (status IN ('current', 'superseded', 'retired')),
            created_at  TEXT NOT NULL
        );
        CREATE UNIQUE INDEX IF NOT EXISTS idx_fact_current ON learned_facts(namespace, key, scope)
            WHERE status = 'current';

        CREATE TABLE IF NOT EXISTS skill_bases (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            name        TEXT NOT NULL,
            root        TEXT,
            version     TEXT,
            body_digest TEXT NOT NULL,
            seen_at     TEXT NOT NULL,
            last_seen_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_bases_name ON skill_bases(name, id);

        CREATE TABLE IF NOT EXISTS delta_outcomes (
            id        INTEGER PRIMARY KEY AUTOINCREMENT,
            delta_id  TEXT NOT NULL REFERENCES skill_deltas(id) ON DELETE CASCADE,
            session   TEXT NOT NULL,
            turn      TEXT NOT NULL DEFAULT '',
            signal    TEXT NOT NULL,
            positive  INTEGER NOT NULL CHECK (positive IN (0, 1)),
            at        TEXT NOT NULL,
            UNIQUE (delta_id, session, turn, signal)
        );
    """,
    ),
    Migration(
        3,
        "findings, embedder identity",
        """
        ALTER TABLE skill_deltas ADD COLUMN findings TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE skill_deltas ADD COLUMN embedder_id TEXT;
        CREATE TABLE IF NOT EXISTS overlay_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    ),
    # budget: 0 = demoted to retrieval-only (text reaches the prompt only when a goal retrieves it)
    Migration(
        4,
        "budget residency",
        """
        ALTER TABLE skill_deltas ADD COLUMN resident INTEGER NOT NULL DEFAULT 1 CHECK (resident IN (0, 1));
    """,
    ),
    # capability evolution (overlay_kit.surfaces / memory / knowledge): evidence rows and the other surfaces
    Migration(
        5,
        "capability surfaces: signals, user memory, knowledge, prompts, skill packages, feedback",
        """
        CREATE TABLE IF NOT EXISTS surface_signals (
            id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, text TEXT NOT NULL, user_id TEXT,
            task TEXT, message TEXT, agent TEXT, skill TEXT,
            cross_task INTEGER NOT NULL DEFAULT 0 CHECK (cross_task IN (0, 1)),
            surface TEXT, rule TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_signals_task ON surface_signals(task);
        CREATE TABLE IF NOT EXISTS user_memories (
            id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL,
            type TEXT NOT NULL CHECK (type IN ('preference', 'identity', 'project', 'correction')),
            content TEXT NOT NULL, source TEXT NOT NULL CHECK (source IN ('manual', 'auto')), salience REAL,
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_memories_user ON user_memories(user_id, type);
        CREATE TABLE IF NOT EXISTS memory_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, turn TEXT NOT NULL,
            outcome TEXT NOT NULL, cues TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(cues)),
            decisions TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(decisions)), error TEXT, at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS knowledge_docs (
            id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL,
            outline TEXT NOT NULL CHECK (json_valid(outline)),
            status TEXT NOT NULL CHECK (status IN ('pending', 'ready')), revision INTEGER NOT NULL,
            summary TEXT, summary_source TEXT CHECK (summary_source IN ('auto', 'manual')),
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS knowledge_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT, doc_id TEXT NOT NULL, revision INTEGER NOT NULL,
            event TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '', at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS prompt_versions (
            id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, version INTEGER NOT NULL,
            content TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('draft', 'published')),
            created_at TEXT NOT NULL, published_at TEXT, UNIQUE (agent, version)
        );
        CREATE TABLE IF NOT EXISTS agents (
            name TEXT PRIMARY KEY, active_version INTEGER REFERENCES prompt_versions(id),
            instructions TEXT NOT NULL DEFAULT '', activated_at TEXT
        );
        CREATE TABLE IF NOT EXISTS skill_packages (
            name TEXT PRIMARY KEY, revision INTEGER NOT NULL CHECK (revision >= 1), digest TEXT NOT NULL,
            uploaded_at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS skill_package_files (
            name TEXT NOT NULL REFERENCES skill_packages(name) ON DELETE CASCADE, path TEXT NOT NULL,
            content BLOB NOT NULL, PRIMARY KEY (name, path)
        );
        CREATE TABLE IF NOT EXISTS message_feedback (
            id INTEGER PRIMARY KEY AUTOINCREMENT, task TEXT NOT NULL, message TEXT NOT NULL,
            rating TEXT NOT NULL CHECK (rating IN ('positive', 'negative', 'cleared')),
            comment TEXT NOT NULL DEFAULT '', at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_feedback_task ON message_feedback(task, message);
        CREATE TABLE IF NOT EXISTS task_traces (
            id INTEGER PRIMARY KEY AUTOINCREMENT, task TEXT NOT NULL, step TEXT NOT NULL, state TEXT NOT NULL,
            usage TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(usage)), detail TEXT NOT NULL DEFAULT '',
            at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS task_deliverables (
            id INTEGER PRIMARY KEY AUTOINCREMENT, task TEXT NOT NULL, name TEXT NOT NULL,
            ok INTEGER NOT NULL CHECK (ok IN (0, 1)), detail TEXT NOT NULL DEFAULT '', at TEXT NOT NULL
        );
    """,
    ),
    # evidence (overlay_kit.evidence): what was in context per turn, the user's outcome signals (ids and
    # lesson keys only, never message text), promotion/retirement decisions, umbrella proposals
    Migration(
        6,
        "evidence: turn context, turn signals, promotion log, consolidations",
        """
        CREATE TABLE IF NOT EXISTS turn_context (
            id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, turn TEXT NOT NULL,
            delta_id TEXT NOT NULL REFERENCES skill_deltas(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('context', 'suggested')), at TEXT NOT NULL,
            UNIQUE (session, turn, delta_id, role)
        );
        CREATE INDEX IF NOT EXISTS idx_context_turn ON turn_context(session, turn);
        CREATE TABLE IF NOT EXISTS turn_signals (
            id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, turn TEXT NOT NULL,
            signal TEXT NOT NULL CHECK (signal IN ('correction', 'undo', 'accepted', 'rating')),
            positive INTEGER CHECK (positive IN (0, 1)), rating INTEGER CHECK (rating BETWEEN 1 AND 5),
            scope TEXT NOT NULL, skill TEXT, section TEXT, lesson TEXT,
            attributed INTEGER NOT NULL DEFAULT 0, at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_turn_signals_lesson ON turn_signals(scope, lesson) WHERE lesson IS NOT NULL;
        CREATE TABLE IF NOT EXISTS promotion_log (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            delta_id TEXT NOT NULL REFERENCES skill_deltas(id) ON DELETE CASCADE,
            decision TEXT NOT NULL CHECK (decision IN ('promoted', 'retired')),
            successes INTEGER NOT NULL, attempts INTEGER NOT NULL, score REAL NOT NULL, threshold REAL NOT NULL,
            min_samples INTEGER NOT NULL, wilson INTEGER NOT NULL CHECK (wilson IN (0, 1)),
            ledger_seq INTEGER NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS consolidations (
            umbrella_id TEXT PRIMARY KEY REFERENCES skill_deltas(id) ON DELETE CASCADE,
            members TEXT NOT NULL CHECK (json_valid(members)), skill TEXT NOT NULL, section TEXT NOT NULL,
            embedding_sim REAL, bigram_sim REAL NOT NULL, proposed_at TEXT NOT NULL
        );
    """,
    ),
    Migration(
        7,
        "skill_deltas: CHECK IN lists as comparisons (SQLite rebuilds an IN list's table per row written)",
        "",
        edits=(("skill_deltas", _in_lists_as_comparisons),),
    ),
    # seals at rest (overlay_kit.seal.RowSealer): each row's MAC under a key kept outside the file, and who
    # approved it (under the MAC). Existing rows are sealed as found (`Store._seal_found_rows`).
    Migration(
        8,
        "seals at rest: each delta row's MAC and who approved it",
        """
        ALTER TABLE skill_deltas ADD COLUMN approved_by TEXT;
        ALTER TABLE skill_deltas ADD COLUMN seal BLOB;
    """,
        rows=lambda store: store._seal_found_rows(),
    ),
    # what a new lesson could repeat: the live deltas of one skill, scope, kind and section (`search(kind=,
    # section=)`; gates turn a repeat into a no-op)
    Migration(
        9,
        "skill_deltas: an index by skill, scope, kind and section",
        """
        CREATE INDEX IF NOT EXISTS idx_delta_section ON skill_deltas(base_name, scope, kind,
                                                                     json_extract(anchor, '$.section'));
    """,
    ),
    # each row's `Delta.lesson` (kind, scope and payload never change once written), indexed: a repeat is found
    # by lookup (`search(lessons=)`); 9's index made gates read every lesson of a section for each new one
    Migration(
        10,
        "skill_deltas: each row's lesson digest, indexed (replaces the section index)",
        """
        ALTER TABLE skill_deltas ADD COLUMN lesson_key TEXT;
        DROP INDEX IF EXISTS idx_delta_section;
        CREATE INDEX IF NOT EXISTS idx_delta_lesson ON skill_deltas(base_name, lesson_key);
    """,
        rows=lambda store: store._key_found_rows(),
    ),
    # a skill's rows of one status, found by lookup: resolve's orphaned rows among 100,000 active ones read the
    # index by skill and scope alone, row by row
    Migration(
        11,
        "skill_deltas: the index by skill and scope holds the status too",
        """
        DROP INDEX IF EXISTS idx_delta_base;
        CREATE INDEX IF NOT EXISTS idx_delta_base ON skill_deltas(base_name, scope, status);
    """,
    ),
    # the database's identity (a random id in overlay_meta) inside every seal, so a row copied from another
    # database does not verify; rows sealed before are re-sealed if they verify (`Store._bind_found_rows`);
    # facts sealed like deltas; a seal counter (overlay_meta) advanced with every sealed write
    Migration(
        12,
        "seals bound to the database's identity; sealed facts; the seal counter",
        """
        ALTER TABLE learned_facts ADD COLUMN seal BLOB;
    """,
        rows=lambda store: store._bind_found_rows(),
    ),
    # evidence-learned triggers (issue 36): the goals a tier-3 lesson was taught, restated, corrected or accepted
    # at, one row per distinct (delta, text); tier-3 selection matches a goal against them. Not sealed: they
    # change when an approved lesson applies, never what it says (store/core.py, `Store.add_triggers`).
    # Append-only like the audit trail: only `forget` deletes them.
    Migration(
        13,
        "delta_triggers: the goals a tier-3 lesson was taught, restated, corrected or accepted at",
        """
        CREATE TABLE IF NOT EXISTS delta_triggers (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            delta_id   TEXT NOT NULL REFERENCES skill_deltas(id) ON DELETE CASCADE,
            text       TEXT NOT NULL CHECK (length(text) > 0),
            source     TEXT NOT NULL CHECK (source = 'taught' OR source = 'restated' OR source = 'corrected'
                                            OR source = 'accepted'),
            created_at TEXT NOT NULL,
            UNIQUE (delta_id, text)
        );
        CREATE TRIGGER IF NOT EXISTS delta_triggers_append_only BEFORE UPDATE ON delta_triggers
            BEGIN SELECT RAISE(ABORT, 'delta_triggers is append-only'); END;
        CREATE TRIGGER IF NOT EXISTS delta_triggers_erase_only BEFORE DELETE ON delta_triggers
            WHEN NOT overlay_erasing()
            BEGIN SELECT RAISE(ABORT, 'delta_triggers rows leave only through forget'); END;
    """,
    ),
]
TRIGGER_SOURCES = ("taught", "restated", "corrected", "accepted")  # what migration 13's CHECK allows
SEALED_SINCE = 8  # the first schema version whose rows carry seals
_KEYED_SINCE = 10  # the first whose rows carry their lesson digests
BOUND_SINCE = 12  # the first whose seals hash the database's identity, with sealed facts and a seal counter

_HISTORY_SQL = """
    CREATE TABLE IF NOT EXISTS schema_history (
        version    INTEGER PRIMARY KEY,
        name       TEXT NOT NULL,
        applied_at TEXT NOT NULL
    );
    CREATE TRIGGER IF NOT EXISTS schema_history_no_update BEFORE UPDATE ON schema_history
        BEGIN SELECT RAISE(ABORT, 'schema_history is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS schema_history_no_delete BEFORE DELETE ON schema_history
        BEGIN SELECT RAISE(ABORT, 'schema_history is append-only'); END;
"""


def _statements(sql: str) -> list[str]:
    """Split a migration into statements (sqlite3.complete_statement keeps trigger bodies whole)."""
    out, buf = [], ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        raise ValueError(f"incomplete SQL statement in migration: {buf.strip()[:60]}…")
    return out


# ------------------------------------------------------------------------------ schema objects we create

_CREATES = re.compile(r"CREATE\s+(?:UNIQUE\s+)?(TABLE|INDEX|TRIGGER|VIEW)\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.IGNORECASE)
# SQLite's own objects: AUTOINCREMENT's counters, ANALYZE's statistics, a UNIQUE / PRIMARY KEY's index
_SQLITE_OWN = re.compile(r"sqlite_(?:sequence|stat[1-4]|autoindex_(\w+)_\d+)")


def _normal_sql(sql: str) -> str:
    """A CREATE statement as SQLite keeps it, spacing aside: without IF NOT EXISTS and the closing `;`."""
    return " ".join(
        re.sub(r"\bIF\s+NOT\s+EXISTS\s+", "", sql, count=1, flags=re.IGNORECASE).rstrip().rstrip(";").split()
    )


@lru_cache(maxsize=1)
def _own_objects() -> dict[str, tuple[str, str]]:
    """{name: (type, normalised CREATE text)} of every object a migration (or the history) creates."""
    out = {}
    for sql in (_HISTORY_SQL, *(m.sql for m in MIGRATIONS)):
        for m in _CREATES.finditer(sql):
            kind = m.group(1).lower()
            # a trigger's text runs to its END; (its body holds `;`): the only text compared
            text = _normal_sql(sql[m.start() : sql.index("END;", m.end()) + 4]) if kind == "trigger" else ""
            out[m.group(2)] = (kind, text)
    return out


@lru_cache(maxsize=1)
def _own_triggers() -> dict[str, tuple[str, str]]:
    """{name: (table, CREATE statement)} of every trigger a migration (or the history) creates."""
    out = {}
    for sql in (_HISTORY_SQL, *(m.sql for m in MIGRATIONS)):
        for stmt in _statements(sql):
            m = re.match(
                r"CREATE\s+TRIGGER\s+IF\s+NOT\s+EXISTS\s+(\w+)\s.*?\bON\s+(\w+)", stmt, re.IGNORECASE | re.DOTALL
            )
            if m:
                out[m.group(1)] = (m.group(2), stmt)
    return out
