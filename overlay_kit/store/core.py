"""`Store`: a handle on one overlay database (the public API is overlay_kit.store's docstring): opening and
migrating it, its transactions and seals, the deltas and their state changes, undo, audit, erasure, facts, bases,
outcomes, embeddings, tier-3 evidence triggers and token counts; the value objects its methods return; how a delta
row is read back. The schema is overlay_kit.store.schema, the file and its faults overlay_kit.store.files, the
other table families overlay_kit.store.surfaces.

Evidence triggers (`delta_triggers`, schema 13: `add_triggers`, `triggers`, `trigger_records`) are NOT sealed, on
purpose. A trigger row changes WHEN an approved lesson applies (which goals select it), never WHAT it says: the
text a session sees is the lesson's own sealed row, and only an active row whose seal verifies is ever selected.
So a forged or dropped trigger row can at most put an approved lesson in front of the model for more goals, or
fewer — never more than the resident overlay did before tier-3 selection (every lesson, every goal) — and sealing
it would buy no integrity of content for a MAC and a seal-counter step per goal recorded. They are append-only
(SQL triggers, as the audit trail) and `forget` erases them with their lesson."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..anchor import Anchor
from ..common import dumps, iso, lazy_logger, parse_time, utc_now
from ..defaults import SHIPPED
from ..grammar import (
    AGENT_NAME,
    RESEARCH_KINDS,
    STATUSES,
    TIERS,
    Delta,
    GrammarError,
    Provenance,
    as_read,
    cap_violations,
    check_shape,
    lesson_digest,
    validate_payload,
)
from ..seal import (
    KEY_ENV,
    SEALED_COLUMNS,
    RowSealer,
    SealKeyError,
    key_path,
    mint_undo,
    record_counter,
    recorded_at,
    recorded_counter,
    registry_dir,
    row_sealer,
    sealed_validated,
    verify_seal,
    verify_undo,
)
from .errors import (
    DiskFullError,
    GateBypassError,
    LostKeyError,
    ReadOnlyError,
    RollbackError,
    SealError,
    StoreError,
    UnsealedStoreError,
)
from .files import (
    SQLITE_MAGIC,
    _fault,
    _fault_error,
    _foreign,
    _inspect,
    _regular_file,
    _schema_problem,
    _unwritable,
    default_db_path,
)
from .schema import (
    _HISTORY_SQL,
    _KEYED_SINCE,
    BOUND_SINCE,
    MIGRATIONS,
    SEALED_SINCE,
    TRIGGER_SOURCES,
    _edit_tables,
    _own_triggers,
    _statements,
)
from .surfaces import (
    EvidenceLedger,
    KnowledgeTables,
    MemoryTables,
    PackageTables,
    PromptTables,
    TaskLog,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = ["AuditEntry", "BaseChange", "Fact", "Outcome", "Store", "Trigger", "Undo", "trigger_problem"]

log = lazy_logger(__package__)  # "overlay_kit.store", the name it logged under before the package split

BUSY_TIMEOUT_MS = 30_000
_FACT_COLUMNS = "id, namespace, key, value, scope, provenance, status, created_at"

# What `Store.forget` erases. Rows tied to an erased delta by id (foreign keys cascade too, but not every table
# has one):
_ERASE_BY_DELTA = (
    ("delta_audit", "delta_id"),
    ("delta_outcomes", "delta_id"),
    ("turn_context", "delta_id"),
    ("promotion_log", "delta_id"),
    ("consolidations", "umbrella_id"),
    ("delta_triggers", "delta_id"),
)
# Every other table that holds learned or observed user data: (table, skill column, scope column). A table
# with no skill (scope) column is erased only by `forget(all=True)` or a filter it does have.
_ERASURE = (
    ("learned_facts", "namespace", "scope"),
    ("turn_signals", "skill", "scope"),
    ("consolidations", "skill", None),
    ("surface_signals", "skill", None),
    ("skill_bases", "name", None),
    ("user_memories", None, None),
    ("memory_runs", None, None),
    ("message_feedback", None, None),
    ("task_traces", None, None),
    ("task_deliverables", None, None),
)

# ------------------------------------------------------------------------------------- value objects


@dataclass(frozen=True)
class Undo:
    """A handle that reverses one store write. `steps` are (table, row id, column, before, after)."""

    op: str
    steps: tuple[tuple[str, Any, str, Any, Any], ...]
    ids: tuple[str, ...] = ()
    token: bytes = field(default=b"", repr=False, compare=False)  # minted by the store; a forged handle has none

    def __bool__(self) -> bool:
        return bool(self.steps)


@dataclass(frozen=True)
class NewRows:
    """New deltas the gates passed, checked and encoded by the store (`Store._new_rows`): `rows` are the values
    of `seal.SEALED_COLUMNS` the store will write, what the gates' seal covers; `validated` is the claim the
    rows were checked under."""

    deltas: tuple[Delta, ...]
    rows: tuple[tuple, ...]
    validated: bool


@dataclass(frozen=True)
class AuditEntry:
    seq: int
    delta_id: str | None
    who: str
    at: datetime
    from_status: str | None
    to_status: str | None
    reason: str


@dataclass(frozen=True)
class Fact:
    namespace: str
    key: str
    value: Any
    scope: str
    provenance: Provenance
    created_at: datetime
    id: int = 0


@dataclass(frozen=True)
class BaseChange:
    """What `register_base` saw: `changed` is True when a known base's root, version or body moved."""

    name: str
    root: str | None
    old_digest: str | None
    new_digest: str
    version: str | None
    changed: bool
    old_root: str | None = None
    old_version: str | None = None

    @property
    def new(self) -> bool:
        return self.old_digest is None


@dataclass(frozen=True)
class Trigger:
    """One trigger of a tier-3 lesson (`Store.trigger_records`): its text, where it came from (`payload`: the
    lesson's own, sealed with it; else one of `TRIGGER_SOURCES`, an evidence row) and when it was recorded (the
    lesson's `created_at` for its own)."""

    text: str
    source: str
    at: datetime


def trigger_problem(text: Any) -> str | None:
    """Why `text` cannot be a trigger, or None: a non-empty string within a payload trigger's caps (length, no
    control character: `grammar.cap_violations`, so a listing prints it as it is)."""
    if not isinstance(text, str) or not text.strip():
        return "must be a non-empty string"
    problems = cap_violations("preference", {"body": ".", "trigger": text})
    return "; ".join(str(e).removeprefix("payload.trigger: ") for e in problems) or None


@dataclass(frozen=True)
class Outcome:
    delta_id: str
    session: str
    turn: str
    signal: str
    positive: bool
    at: datetime


# --------------------------------------------------------------------------------------------- store

# A delta row as the store reads and writes it: the sealed columns (`seal.SEALED_COLUMNS`), then last_used_at
# and the seal. A database from before the seals (read-only: not migrated) reads NULL for the columns it lacks.
_SEALED = ", ".join(SEALED_COLUMNS)
_ROW_COLUMNS = _SEALED + ", last_used_at, seal"
_UNSEALED_ROW_COLUMNS = _SEALED.replace("approved_by", "NULL") + ", last_used_at, NULL"
_ROW_WIDTH = len(SEALED_COLUMNS) + 2
_INSERT_COLUMNS = _ROW_COLUMNS + ", lesson_key"  # a row as written: with its lesson digest (never read back)
# Which status a transition may start from. `approve` is the only way out of quarantine into use.
_APPROVABLE = ("staged", "quarantined", "orphaned")
_LIVE = ("staged", "active", "quarantined", "orphaned")


# (kind, payload JSON) -> (the payload `check_shape` makes of it, whether its values are all scalars): a row's
# payload is checked once per process, not at every read (a payload that fails the check is never added, so it
# keeps failing every read). Readers get copies; the kept one vouches for the deltas read (`Delta.vouched`), so
# composing them does not check them again.
_CANONICAL: dict[tuple[str, str], tuple[dict, bool]] = {}
_CANONICAL_MAX = 100_000


def _checked(kind: str, text: str) -> tuple[dict, bool]:
    known = _CANONICAL.get((kind, text))
    if known is None:
        shaped = check_shape(kind, json.loads(text))
        known = shaped, all(v is None or isinstance(v, (str, int, float, bool)) for v in shaped.values())
        if len(_CANONICAL) >= _CANONICAL_MAX:
            _CANONICAL.clear()
        _CANONICAL[(kind, text)] = known
    return known


def _payload(kind: str, text: str) -> tuple[dict, dict]:
    """A row's payload as `check_shape` makes it: the caller's own copy of the kept one (`_checked`), and the kept
    one (which vouches for the delta read: `Delta.vouched`)."""
    shaped, flat = _checked(kind, text)
    return (dict(shaped) if flat else {k: list(v) if isinstance(v, list) else v for k, v in shaped.items()}), shaped


@lru_cache(maxsize=4096)
def _anchor_of(text: str, version: str | None) -> Anchor:
    """A row's anchor (its JSON column and its base version): one frozen `Anchor`, shared by the rows that name it."""
    a = json.loads(text)
    return Anchor(a["section"], a["digest"], version)


@lru_cache(maxsize=1024)
def _provenance(text: str) -> Provenance:
    try:
        return Provenance.from_dict(json.loads(text))
    except ValueError:
        return Provenance()  # unreadable provenance is untrusted, never trusted by default


def _text(value: Any) -> str | None:
    """A text column's value as SQLite hands it back: None, or an exact `str` (a subclass or a number converted)."""
    return value if value is None or type(value) is str else str(value)


def _texts(column: Sequence) -> Sequence:
    """`_text` of each value of a column (the column itself when every value already is one)."""
    return column if set(map(type, column)) <= {str, type(None)} else tuple(map(_text, column))


def _row_to_delta(row: sqlite3.Row | tuple) -> Delta:
    (
        id_,
        name,
        root,
        version,
        scope,
        kind,
        _tier,
        anchor,
        payload,
        prov,
        status,
        succ,
        att,
        sup,
        created,
        approved,
        findings,
        _resident,
        _approved_by,
        used,
        _seal,
    ) = row
    payload, shaped = _payload(kind, payload)
    return Delta(  # its payload is in check_shape's canonical form (`_payload`), and vouched for as such
        skill=name,
        kind=kind,
        payload=payload,
        anchor=_anchor_of(anchor, version),
        provenance=_provenance(prov),
        scope=scope,
        base_root=root,
        status=status,
        id=id_,
        created_at=parse_time(created),
        approved_at=parse_time(approved),
        last_used_at=parse_time(used),
        success_count=succ,
        attempt_count=att,
        superseded_by=sup,
        findings=tuple(json.loads(findings)) if findings and findings != "[]" else (),
    ).vouched(shaped)


def _connect(target: str, *, readonly: bool) -> sqlite3.Connection:
    if not readonly:
        return sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    uri = Path(target).resolve().as_uri()
    try:  # mode=ro reads the WAL too; on media where even the -shm cannot be created, immutable=1 still reads
        conn = sqlite3.connect(
            f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)


class Store:
    """A handle on one overlay database. Use `Store.open(...)`; thread-safe for one process."""

    def __init__(
        self, conn: sqlite3.Connection, path: str, *, research: bool, auto_approve: bool, agent: str | None = None
    ):
        self.conn = conn
        self.path = path
        self.research = research
        self.auto_approve = auto_approve
        self.agent = agent  # the agent this handle writes and reads for (`write_scope`, `read_scopes`)
        self._lock = threading.RLock()
        self._depth = 0
        self._erasing = False
        self.erasure_pending = False  # a forget's erased rows may still be in the file or its WAL (a reader held it)
        self._compact_due = False  # a forget erased rows: the file is rewritten (VACUUM) before it is done
        self.readonly = False
        self._forget_hooks: list[Callable[[list[str]], None]] = []
        self._change_hooks: list[Callable[[list[str]], None]] = []
        self._changed: list[str] = []  # delta ids whose state changed in the open transaction
        # What the store left out and why, one line each (a row whose seal does not verify, a damaged row): the
        # resolver's and the CLI's callers print them; each is logged as a warning once.
        self.integrity_notes: list[str] = []
        self._sealed = True  # the rows carry seals (schema >= SEALED_SINCE); False: a read-only older file
        self._keyed = True  # the rows carry lesson digests (schema >= _KEYED_SINCE); False: likewise
        self._bound_ids = True  # seals hash the database's identity (schema >= BOUND_SINCE); False: older file
        self._base_sealer: RowSealer | None = None  # the key's sealer, unbound
        self._db_id: str | None = None
        self._bump = False  # the open transaction sealed or erased rows: it advances the seal counter
        self._counter_floor = 0  # a rollback accepted on purpose: the counter continues above the recorded one
        self._path_recorded = False
        self._key_checked = False  # the file holds its key check (`_advance_counter` writes it once)
        self._registry: Path | None = None  # `seal.registry_dir()`, once per store
        self.accept_unsealed = False
        self.accept_rollback = False
        self._unsealed_refused: str | None = None  # read-only: why an older file's rows are all left out
        self._erased_ids: list[str] = []  # the last forget's, for `finish_erasure`'s report
        self.erasure_where: str | None = None  # while `erasure_pending`: which files still hold the erased text

    # ----------------------------------------------------------------------------- open / close

    @classmethod
    def open(
        cls,
        path: str | os.PathLike | None = None,
        *,
        research: bool = False,
        auto_approve: bool = SHIPPED.auto_approve,
        readonly: bool = False,
        create: bool = True,
        agent: str | None = None,
        accept_unsealed: bool = False,
        accept_rollback: bool = False,
    ) -> "Store":
        """Open (creating or migrating forward) the database at `path` (default: `default_db_path()`).

        Before any write, a read-only look: a path that is a directory, FIFO, socket or device is refused without
        being opened (`NotAFileError`); a file that is not SQLite, is corrupt, was written by a newer overlay_kit,
        holds another program's schema (a GAIA memory.db) or schema objects overlay_kit did not create (a planted
        trigger or view: `SchemaObjectError`) is refused with its bytes untouched. A row that breaks its table's
        constraints (written by hand) does not refuse the file: reads leave it out with a note.
        `readonly=True` opens without writing anything (read-only media; writes raise `StoreError`);
        `create=False` (and `readonly`) refuse a missing file with "no database at PATH" instead of creating
        it and its folders. A writable open of a file or folder that cannot be written is a `ReadOnlyError`
        ("read-only: cannot write PATH"); a full disk a `DiskFullError`. `agent`: the agent this handle learns and
        resolves for (a name like a skill's: `[a-z0-9._-]`, at most 64), when several agents share the file;
        it decides the scope of a lesson written without one (`write_scope`) and the scopes a resolve reads
        (`read_scopes`).

        Tamper at rest (docs/reliability.md): a file from before the row seals that presents itself as a
        database this key sealed (its identity, or a path one was sealed at) is not sealed as found
        (`UnsealedStoreError`; read-only: its rows are left out with a note) unless `accept_unsealed=True`; a
        file whose seal counter is behind the one recorded beside the key is an older copy (`RollbackError`
        naming both) unless `accept_rollback=True`; a dropped trigger of overlay_kit's is re-created (audited)."""
        if agent is not None and not AGENT_NAME.fullmatch(agent):
            raise StoreError(
                f"agent: {agent!r} is not an agent name (lowercase letters, digits, '.', '_', '-'; "
                "1 to 64, starting and ending with a letter or digit)"
            )
        target = str(default_db_path() if path is None else Path(path).expanduser())
        memory = target == ":memory:"
        if not memory:
            p = Path(target)
            exists = _regular_file(target)
            looked = False
            if not exists and (readonly or not create):
                raise StoreError(f"no database at {target}")
            if exists and p.stat().st_size > 0:
                with open(p, "rb") as fh:
                    if fh.read(16) != SQLITE_MAGIC:
                        raise StoreError(f"{target}: not an SQLite database (bad header); refusing to touch it")
                looked = _inspect(p)
            if not exists and not readonly:
                try:
                    p.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreError(f"{target}: cannot create its folder: {exc.strerror or exc}") from exc
            if not readonly:
                blocked = _unwritable(target, exists)
                if blocked is not None:
                    raise ReadOnlyError(
                        f"{target}: read-only: cannot write {blocked} (open it with readonly=True to read it)"
                    )
        store = None
        try:
            conn = _connect(target, readonly=readonly and not memory)
        except sqlite3.Error as exc:
            raise (
                _fault_error(target, exc)
                if _fault(exc) and "unable to open" not in str(exc)
                else StoreError(f"{target}: cannot open: {exc}")
            ) from exc
        try:
            store = cls(conn, target, research=research, auto_approve=auto_approve, agent=agent)
            store.readonly = readonly
            store.accept_unsealed, store.accept_rollback = accept_unsealed, accept_rollback
            conn.create_function("overlay_erasing", 0, lambda: 1 if store._erasing else 0)
            store._quick_check()
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            if readonly:
                conn.execute("PRAGMA query_only = ON")
                store._check_schema()
                why = store._unsealed_file()
                if why is not None and not accept_unsealed:
                    store._unsealed_refused = why
                    store._note(f"{why}; every delta row is left out (read-only: nothing written)")
                store._check_unbound_copy()
                store._check_triggers()
                store._check_counter()
                return store
            if not memory and not looked:  # `_inspect` could not peek at it (or it was empty)
                _schema_problem(conn, target)
            if not memory:
                why = store._unsealed_file()
                if why is not None and not accept_unsealed:
                    raise UnsealedStoreError(
                        f"{why}; refusing to seal it as found (nothing was written). To "
                        "use it on purpose: Store.open(..., accept_unsealed=True) (CLI: "
                        "--accept-unsealed)"
                    )
                if why is None:
                    store._check_unbound_copy()
            if not memory:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"{target}: cannot switch to WAL journal (got {mode})")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA secure_delete = ON")
            store._migrate()
            store._check_triggers()
            if not memory:
                store._check_counter()
            store._resume_erasure()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _fault_error(target, exc) from exc
        except BaseException:
            conn.close()
            raise
        return store

    # quick_check lines that name one row breaking its table's constraints (a hand edit), not a damaged file
    _ROW_DAMAGE = re.compile(r"(?:CHECK constraint failed in|NULL value in|NOT NULL constraint failed:?) (\w+)")

    def _quick_check(self) -> None:
        """`PRAGMA quick_check`: a damaged file is refused; rows that break their table's CHECK or NOT NULL
        constraints (written by hand) are not: the read paths leave a delta row like that out with a note (its
        seal does not verify), and the write paths refuse it (`get`), so both agree on the same file."""
        try:
            lines = [r[0] for r in self.conn.execute("PRAGMA quick_check(100)")]
        except sqlite3.DatabaseError as exc:
            fault = _fault_error(self.path, exc)
            if isinstance(fault, (DiskFullError, ReadOnlyError)):
                raise fault from exc
            raise StoreError(f"{self.path}: not a usable SQLite database ({exc}); refusing to touch it") from exc
        if lines == ["ok"]:
            return
        damaged = [self._ROW_DAMAGE.match(line) for line in lines]
        if not all(damaged):
            bad = next(line for line, m in zip(lines, damaged) if not m)
            raise StoreError(f"{self.path}: database is corrupt ({bad}); refusing to touch it")
        for table in sorted({m.group(1) for m in damaged}):
            self._note(
                f"{self.path}: rows of {table} break its constraints (written outside overlay_kit?); "
                + (
                    "each such delta row is left out where it is read"
                    if table == "skill_deltas"
                    else "they are read as they are"
                )
            )

    def _check_schema(self) -> None:
        """Read-only: the file is ours and not newer than this code (a missing history = an empty store), holds
        no object overlay_kit did not create, and says whether its rows carry seals."""
        tables = {n for (n,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "schema_history" not in tables:
            if tables:
                raise StoreError(f"{self.path}: not an overlay_kit database ({_foreign(tables)})")
            raise StoreError(f"{self.path}: an empty database; nothing to read")
        _schema_problem(self.conn, self.path)
        columns = {r[1] for r in self.conn.execute("PRAGMA table_info(skill_deltas)")}
        self._sealed, self._keyed = "seal" in columns, "lesson_key" in columns
        self._bound_ids = "seal" in {r[1] for r in self.conn.execute("PRAGMA table_info(learned_facts)")}
        if not self._sealed:
            self._note(
                f"{self.path}: written before row seals (schema < {SEALED_SINCE}); read as found, not "
                "verified (a writable open seals it)",
                error=False,
            )

    def close(self) -> None:
        if self.erasure_pending:
            try:
                self.finish_erasure()
            except sqlite3.Error:
                pass
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        agent = f", agent={self.agent!r}" if self.agent else ""
        return f"Store({self.path!r}, research={self.research}, auto_approve={self.auto_approve}{agent})"

    # ----------------------------------------------------------------------------- scopes

    def write_scope(self, scope: str | None = None) -> str:
        """The scope a lesson is written with: `scope` when given; else the shipped default (`SHIPPED.scope`):
        "agent" keeps it with this handle's agent (`agent:<name>`), "user" shares it with every agent of the
        user. A handle opened for no agent has one reader, and its lessons are written "user"."""
        if scope is not None:
            return scope
        return f"agent:{self.agent}" if SHIPPED.scope == "agent" and self.agent else "user"

    def read_scopes(self, scope: str | Iterable[str] | None = None) -> str | tuple[str, ...]:
        """The scopes a resolve (or a `Facts` chain) reads: `scope` when given; else, for a handle opened for an
        agent, that agent's own `agent:<name>` first, then "user" (lessons shared on purpose); else "user"."""
        if scope is not None:
            return scope
        return (f"agent:{self.agent}", "user") if self.agent else "user"

    def _migrate(self, upto: int | None = None) -> list[int]:
        """Apply the missing MIGRATIONS (all, or up to version `upto`); return the versions applied."""
        known = {m.version for m in MIGRATIONS}
        with self.transaction():
            for stmt in _statements(_HISTORY_SQL):
                self.conn.execute(stmt)
            done = {v for (v,) in self.conn.execute("SELECT version FROM schema_history")}
            self._sealed, self._bound_ids = SEALED_SINCE in done, BOUND_SINCE in done
            newer = sorted(done - known)
            if newer:
                raise StoreError(
                    f"{self.path}: written by a newer overlay_kit (schema {newer}); "
                    "refusing to open it with this version"
                )
            applied = []
            for m in MIGRATIONS:
                if m.version in done or (upto is not None and m.version > upto):
                    continue
                for stmt in _statements(m.sql):
                    self.conn.execute(stmt)
                if m.edits:
                    _edit_tables(self.conn, m.edits)
                if m.rows is not None:
                    m.rows(self)
                self.conn.execute(
                    "INSERT INTO schema_history (version, name, applied_at) VALUES (?, ?, ?)",
                    (m.version, m.name, iso(utc_now())),
                )
                applied.append(m.version)
                done.add(m.version)
            self._sealed, self._keyed = SEALED_SINCE in done, _KEYED_SINCE in done
            self._bound_ids = BOUND_SINCE in done
        return applied

    def schema_history(self) -> list[tuple[int, str, str]]:
        return list(self.conn.execute("SELECT version, name, applied_at FROM schema_history ORDER BY version"))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic unit of writes (`BEGIN IMMEDIATE`); nested calls become savepoints. A fault of the medium
        (disk full, read-only, I/O error, locked past the timeout) rolls back and raises `StoreError` naming
        the path (`DiskFullError`, `ReadOnlyError`): nothing partial is written."""
        with self._lock:
            depth = self._depth
            self._depth += 1
            try:
                if depth == 0:
                    self._fault_safe("BEGIN IMMEDIATE")
                else:
                    self.conn.execute(f"SAVEPOINT sp{depth}")
                counter = None
                try:
                    yield self.conn
                    if depth == 0 and self._bump:
                        counter = self._advance_counter()
                except BaseException as exc:
                    try:
                        if depth == 0:
                            self.conn.execute("ROLLBACK")
                            self._changed.clear()
                        else:
                            self.conn.execute(f"ROLLBACK TO sp{depth}")
                            self.conn.execute(f"RELEASE sp{depth}")
                    except sqlite3.Error:
                        pass  # the failed statement already ended the transaction
                    if _fault(exc):
                        raise _fault_error(self.path, exc, "; nothing was written") from exc
                    raise
                if depth == 0:
                    try:
                        self._fault_safe("COMMIT")
                    except StoreError:
                        try:
                            self.conn.execute("ROLLBACK")
                        except sqlite3.Error:
                            pass
                        self._changed.clear()
                        raise
                else:
                    self.conn.execute(f"RELEASE sp{depth}")
            finally:
                self._depth -= 1
                if self._depth == 0:
                    changed, self._changed = self._changed, []
                    self._bump = False
        if depth == 0 and counter is not None:
            self._record_counter(counter)
        if depth == 0 and changed and not self._erasing:
            for hook in self._change_hooks:
                hook(list(dict.fromkeys(changed)))

    def _fault_safe(self, sql: str) -> None:
        try:
            self.conn.execute(sql)
        except sqlite3.Error as exc:
            if _fault(exc):
                raise _fault_error(self.path, exc, "; nothing was written") from exc
            raise

    # ------------------------------------------------------------------------------------ seals at rest

    def _note(self, text: str, *, error: bool = True) -> None:
        """One integrity note: kept in `integrity_notes` and logged (an error: something was left out; else a
        warning), once per store."""
        if text not in self.integrity_notes:
            self.integrity_notes.append(text)
            (log.error if error else log.warning)("%s", text)

    def _write_sealer(self) -> RowSealer:
        """The key's sealer for a write, bound to this database's identity (schema >= BOUND_SINCE). `StoreError`
        naming the key file when it can be neither read nor made; `LostKeyError` when the database holds sealed
        rows and the key is not there or is another one (no new key is made over sealed rows)."""
        base = self._key_sealer()
        if not self._bound_ids:
            return base
        return base.bound(self._database_id())

    def _meta(self, key: str) -> str | None:
        try:
            row = self.conn.execute("SELECT value FROM overlay_meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:  # a file from before overlay_meta
            return None
        return None if row is None else row[0]

    def _database_id(self) -> str:
        """This database's identity (made by migration 12, kept in `overlay_meta`, hashed into every seal)."""
        if self._db_id is None:
            found = self._meta("db_id")
            if not isinstance(found, str) or not re.fullmatch(r"[0-9a-f]{32}", found):
                raise StoreError(
                    f"{self.path}: cannot seal rows: its identity (overlay_meta db_id) is missing or "
                    "malformed (changed outside overlay_kit?); every sealed row is left out"
                )
            self._db_id = found
        return self._db_id

    def _holds_seals(self) -> bool:
        """Whether the file holds any sealed row (a delta or a fact) or a record of having sealed one."""
        try:
            if (
                self._sealed
                and self.conn.execute("SELECT 1 FROM skill_deltas WHERE seal IS NOT NULL LIMIT 1").fetchone()
            ):
                return True
            if (
                self._bound_ids
                and self.conn.execute("SELECT 1 FROM learned_facts WHERE seal IS NOT NULL LIMIT 1").fetchone()
            ):
                return True
        except sqlite3.OperationalError:
            return False
        return False

    def _lost_key(self, path: Path, check: str | None, mine: str | None = None) -> str:
        what = (
            f"seal key {path} is not there"
            if mine is None
            else f"the seal key at {path} (key check {mine}) is not the key"
        )
        return (
            f"{self.path}: cannot seal rows: {what} this database's rows were sealed under (key check "
            f"{check or 'not recorded'}): the key was deleted, or the database was moved from another account "
            f"or machine. Its sealed rows are left out, nothing is lost from the file, and no new key is made "
            f"over them: put that key back at {path} (or point ${KEY_ENV} at it), or move the lessons with "
            "`overlay-kit export` at their old home and `overlay-kit import` here"
        )

    def _key_sealer(self) -> RowSealer:
        if self._base_sealer is None:
            path = key_path()
            check = self._meta("seal_key_check")
            if not os.path.isfile(path) and self._holds_seals():
                raise LostKeyError(self._lost_key(path, check))
            try:
                base = row_sealer()
            except SealKeyError as exc:
                raise StoreError(f"{self.path}: cannot seal rows: {exc}") from exc
            if check is not None and check != base.key_check and self._holds_seals():
                raise LostKeyError(self._lost_key(path, check, base.key_check))
            self._base_sealer = base
        return self._base_sealer

    def _advance_counter(self) -> int | None:
        """Inside the transaction of a write that sealed or erased rows, just before its COMMIT: the seal counter
        (`overlay_meta`, sealed under the database's identity) one higher; the key check recorded once. The
        value is recorded beside the key after the commit (`_record_counter`)."""
        if not self._bound_ids or self.readonly:
            return None
        sealer = self._write_sealer()
        now = self._counter_value(sealer)[0]
        counter = max(now, self._counter_floor) + 1
        self.conn.execute(
            "INSERT OR REPLACE INTO overlay_meta (key, value) VALUES ('seal_counter', ?)",
            (f"{counter}:{sealer.counter_seal(counter)}",),
        )
        if not self._key_checked and self._meta("seal_key_check") is None:
            self.conn.execute("INSERT INTO overlay_meta (key, value) VALUES ('seal_key_check', ?)", (sealer.key_check,))
        self._key_checked = True
        return counter

    def _counter_value(self, sealer: RowSealer) -> tuple[int, bool | None]:
        """(the file's seal counter, whether its seal verifies: None when there is none)."""
        raw = self._meta("seal_counter")
        if raw is None:
            return 0, None
        number, _, mark = str(raw).partition(":")
        try:
            counter = int(number)
        except ValueError:
            return 0, False
        return counter, hmac.compare_digest(mark, sealer.counter_seal(counter))

    def _record_counter(self, counter: int) -> None:
        """After a commit: the counter it reached, recorded beside the key (monotonic; with this path once)."""
        if self.path == ":memory:":
            return
        try:
            if self._registry is None:
                self._registry = registry_dir()
            record_counter(self._database_id(), counter, None if self._path_recorded else self.path, self._registry)
            self._path_recorded = True
        except (OSError, StoreError) as exc:
            self._note(
                f"{self.path}: cannot record its seal counter beside the key in {registry_dir()} ({exc}): "
                "an older copy of this file put in its place would not be detected",
                error=False,
            )

    def _check_counter(self) -> None:
        """At open: a file whose seal counter is behind the one recorded beside the key for its identity is an
        older copy (a restored backup, or commits lost with a torn WAL): `RollbackError` naming both counters,
        unless `accept_rollback` (then noted, audited, and the counter continues above the recorded one)."""
        if not self._bound_ids or self.path == ":memory:":
            return
        try:
            db_id = self._database_id()
            recorded = recorded_counter(db_id)
        except (StoreError, SealKeyError) as exc:
            self._note(str(exc), error=False)
            return
        if recorded is None:
            return
        try:
            sealer = self._write_sealer()
        except StoreError:
            return  # the key is lost or another one: every read says so
        counter, fine = self._counter_value(sealer)
        if fine and counter >= recorded:
            return
        what = (
            f"its seal counter is {counter}"
            if fine
            else "it holds no seal counter"
            if fine is None
            else f"its seal counter ({counter}) does not verify (changed outside overlay_kit?)"
        )
        said = (
            f"{self.path}: {what}, but the record beside the key ({registry_dir() / ('db-' + db_id)}) says "
            f"this database reached {recorded}: this file is an older copy of it (restored from a backup or "
            "snapshot, or its last commits were lost with a torn WAL), so the reverts, forgets and approvals "
            "written after that copy would be silently undone"
        )
        self._older_copy(said, "used as current from now on")
        if not self.readonly:
            with self.transaction():
                self._counter_floor = recorded
                self._bump = True
                self._log(
                    None,
                    "user",
                    None,
                    None,
                    f"accepted a rollback: seal counter {counter} behind the recorded {recorded}",
                )

    def _check_unbound_copy(self) -> None:
        """Before any write: a sealed file from before database identities (schema 8 to 11) at a path where a
        database this key sealed with an identity lived is an older copy of it (a backup from before the
        upgrade put back): `RollbackError`, unless `accept_rollback` (then noted)."""
        if self.path == ":memory:":
            return
        try:
            versions = {v for (v,) in self.conn.execute("SELECT version FROM schema_history")}
        except sqlite3.DatabaseError:
            return
        if not versions or BOUND_SINCE in versions or SEALED_SINCE not in versions:
            return
        try:
            at = recorded_at(self.path)
            counter = recorded_counter(at) if at else None
        except SealKeyError:
            return
        if at is None:
            return
        said = (
            f"{self.path}: a file from before database identities (schema {max(versions)}) where a database "
            f"this key sealed (identity {at}, seal counter {counter} recorded beside the key) lived: an older "
            "copy of it (a backup from before the upgrade put back?), so the reverts, forgets and approvals "
            "written after it would be silently undone"
        )
        self._older_copy(said)

    def _older_copy(self, said: str, then: str = "") -> None:
        """An older copy of this database was found (`said`): `RollbackError`, unless `accept_rollback` (noted)."""
        if not self.accept_rollback:
            raise RollbackError(
                f"{said}. Nothing was changed. To use this copy as current on purpose: "
                "Store.open(..., accept_rollback=True) (CLI: --accept-rollback)"
            )
        self._note(f"{said}; accepted on purpose (accept_rollback)" + (f": {then}" if then else ""), error=False)

    def _unsealed_file(self) -> str | None:
        """Why a file from before the row seals may not be sealed as found: it presents itself as a database this
        key sealed (it carries that database's identity, or a database this key sealed lived at its path), so it
        is a downgrade or a replacement, not an upgrade. None for any other file (trust on first use)."""
        if self.path == ":memory:":
            return None
        try:
            tables = {n for (n,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "schema_history" not in tables:
                return None
            versions = {v for (v,) in self.conn.execute("SELECT version FROM schema_history")}
        except sqlite3.DatabaseError:
            return None
        if not versions or SEALED_SINCE in versions:
            return None
        found = self._meta("db_id") if "overlay_meta" in tables else None
        why = []
        try:
            if isinstance(found, str) and recorded_counter(found) is not None:
                why.append(f"it carries the identity {found} of a database this key sealed")
            at = recorded_at(self.path)
        except SealKeyError:
            at = None
        if at is not None:
            why.append(f"a database this key sealed (identity {at}) lived at this path")
        if not why:
            return None
        return (
            f"{self.path}: a file from before row seals (schema {max(versions)}) where {' and '.join(why)}: "
            "sealing its rows as found would make a downgraded or replaced file's lessons apply"
        )

    def _read_sealer(self) -> RowSealer | None:
        """The key's sealer for a read; None (with a note) when the key can be neither read nor made."""
        try:
            return self._write_sealer()
        except StoreError as exc:
            self._note(f"{exc}: every delta row is left out (their seals cannot be checked)")
            return None

    def _refusal(self, row: tuple, sealer: RowSealer | None) -> str | None:
        """None when a row as read may be used; else why not (the note's text). A row whose seal does not verify
        is left out, and so is an active row of untrusted provenance without a recorded approval."""
        if self._sealed:
            if sealer is None or not sealer.verify(row):
                why = "seal does not verify"
                if row[10] not in STATUSES:
                    why += f" (status {row[10]!r} is not a status)"
                return f"delta {row[0]}: {why}: left out (changed outside overlay_kit?)"
        elif self._unsealed_refused is not None:
            return (
                f"delta {row[0]}: written before row seals in a file that presents itself as a sealed "
                "database: left out (open it with accept_unsealed=True to use it)"
            )
        elif row[10] not in STATUSES or row[5] not in TIERS:
            return f"delta {row[0]}: status {row[10]!r} / kind {row[5]!r} is not one overlay_kit writes: left out"
        if (
            row[10] == "active"
            and row[18] is None
            and not _provenance(row[9]).trusted
            and (self._sealed or self._approver(row[0]) is None)
        ):
            return (
                f"delta {row[0]}: active with untrusted provenance but no recorded approval: left out "
                "(changed outside overlay_kit?)"
            )
        return None

    def _approver(self, delta_id: str) -> str | None:
        """Who last moved a delta into `active` by hand, as the audit trail says (a row from before the seals)."""
        row = self.conn.execute(
            "SELECT who FROM delta_audit WHERE delta_id = ? AND to_status = 'active' AND "
            "who != 'gates' ORDER BY seq DESC LIMIT 1",
            (delta_id,),
        ).fetchone()
        return None if row is None else row[0]

    def _usable(self, rows: Iterable[tuple], refusal, sealer) -> list[tuple]:
        """The rows `refusal(row, sealer)` lets through, in the order read; each other one noted with its reason
        (`integrity_notes`). Every read and every write's pre-check of delta and fact rows goes through it."""
        out = []
        for row in rows:
            why = refusal(row, sealer)
            if why is None:
                out.append(row)
            else:
                self._note(why)
        return out

    def _deltas(self, rows: Iterable[tuple]) -> list[Delta]:
        """The rows that may be used, as deltas (the others noted: `_refusal`), in the order read."""
        out = []
        for row in self._usable(rows, self._refusal, self._read_sealer() if self._sealed else None):
            try:
                out.append(_row_to_delta(row))
            except (ValueError, KeyError, TypeError) as exc:
                self._note(f"delta {row[0]}: unreadable ({exc}): left out")
        return out

    @property
    def _row_columns(self) -> str:
        return _ROW_COLUMNS if self._sealed else _UNSEALED_ROW_COLUMNS

    def _rows(self, tail: str, args: Sequence = ()) -> list[tuple]:
        """`SELECT <a delta row's columns> FROM skill_deltas <tail>`. A row whose text is not UTF-8 (written by
        hand: Python cannot read it) would fail the whole query: then the rows are read one by one and that
        one is left out with a note naming it."""
        try:
            return self.conn.execute(f"SELECT {self._row_columns} FROM skill_deltas {tail}", args).fetchall()
        except sqlite3.OperationalError as exc:
            if "decode" not in str(exc):
                raise
        out = []
        for (rowid,) in self.conn.execute(f"SELECT rowid FROM skill_deltas {tail}", args).fetchall():
            try:
                out += self.conn.execute(
                    f"SELECT {self._row_columns} FROM skill_deltas WHERE rowid = ?", (rowid,)
                ).fetchall()
            except sqlite3.OperationalError as exc:
                (name,) = self.conn.execute(
                    "SELECT CAST(id AS BLOB) FROM skill_deltas WHERE rowid = ?", (rowid,)
                ).fetchone()
                self._note(
                    f"delta {bytes(name or b'').decode('utf-8', 'replace')}: unreadable ({exc}): left out "
                    "(changed outside overlay_kit?)"
                )
        return out

    def _checked(self, ids: Iterable[str]) -> list[str]:
        """Of `ids`, those whose rows may be written (their seals verify); the others noted. Inside the write's
        transaction, before it changes them: a row is re-sealed only after its seal was checked, so a legitimate
        write never seals over a change made outside overlay_kit."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        sealer, ok = self._write_sealer(), []
        for at in range(0, len(ids), 500):
            part = ids[at : at + 500]
            rows = self._rows(f"WHERE id IN ({', '.join('?' * len(part))})", part)
            ok += [row[0] for row in self._usable(rows, self._refusal, sealer)]
        return ok

    def _reseal(self, ids: Iterable[str]) -> None:
        """Inside a write's transaction: seal each row as it now stands (rows checked before the write)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return
        sealer = self._write_sealer()
        self._bump = True
        for at in range(0, len(ids), 500):
            part = ids[at : at + 500]
            rows = self.conn.execute(
                f"SELECT {_SEALED} FROM skill_deltas WHERE id IN ({', '.join('?' * len(part))})", part
            ).fetchall()
            self.conn.executemany(
                "UPDATE skill_deltas SET seal = ? WHERE id = ?", list(zip(sealer.seal_many(rows), (r[0] for r in rows)))
            )

    def _seal_found_rows(self) -> None:
        """Migration 8: seal the rows a file holds as they are found (trust on first use, as at the upgrade).
        Not sealed, so left out with a note on every read: a row with a status or kind overlay_kit never writes,
        and an active row of untrusted provenance with no approval in the audit trail. `approved_by` of an
        active row is who the audit trail says approved it."""
        rows = self.conn.execute(f"SELECT {_SEALED.replace('approved_by', 'NULL')} FROM skill_deltas").fetchall()
        if not rows:
            return
        keep, left = [], []
        for row in rows:
            row = list(row)
            if row[10] not in STATUSES or row[5] not in TIERS:
                left.append(row[0])
                continue
            if row[10] == "active":
                row[18] = self._approver(row[0])
                if row[18] is None and not _provenance(row[9]).trusted:
                    left.append(row[0])
                    continue
            keep.append(row)
        sealed = list(zip((r[18] for r in keep), self._write_sealer().seal_many(keep), (r[0] for r in keep)))
        self.conn.executemany("UPDATE skill_deltas SET approved_by = ?, seal = ? WHERE id = ?", sealed)
        self._bump = True
        said = (
            f"schema {SEALED_SINCE}: sealed {len(sealed)} delta rows as found; left unsealed (never read): "
            f"{', '.join(left) if left else 'none'}"
            + (
                "; a file that presents itself as a sealed database, accepted on purpose (accept_unsealed)"
                if self.accept_unsealed and self._unsealed_file()
                else ""
            )
        )
        self._log(None, "overlay_kit", None, None, said)
        self._note(f"{self.path}: {said}", error=bool(left))

    def _bind_found_rows(self) -> None:
        """Migration 12: give the database its identity, re-seal bound to it every delta row whose seal verifies
        under the unbound scheme (the others stay unverifiable), and seal the facts as found. The key must be
        there when the file holds sealed rows (`LostKeyError`, nothing written): none is made over them, and a
        file none of whose sealed rows verifies under the key at hand is refused the same way."""
        db_id = self._meta("db_id")
        if not isinstance(db_id, str) or not re.fullmatch(r"[0-9a-f]{32}", db_id):
            db_id = secrets.token_hex(16)
            self.conn.execute("INSERT OR REPLACE INTO overlay_meta (key, value) VALUES ('db_id', ?)", (db_id,))
        self._db_id = db_id
        rows = self.conn.execute(f"SELECT {_ROW_COLUMNS} FROM skill_deltas WHERE seal IS NOT NULL").fetchall()
        self._bound_ids = False
        legacy = self._key_sealer() if rows else None
        ok = [r for r in rows if legacy.verify(r)] if legacy else []
        if rows and not ok:
            raise LostKeyError(
                self._lost_key(key_path(), None, legacy.key_check).replace(
                    "cannot seal rows:", f"none of its {len(rows)} sealed delta rows verifies:", 1
                )
                + f"; schema {BOUND_SINCE} not applied, nothing written"
            )
        self._bound_ids = True
        bound = self._write_sealer()
        self.conn.executemany(
            "UPDATE skill_deltas SET seal = ? WHERE id = ?",
            list(zip(bound.seal_many([r[:-2] for r in ok]), (r[0] for r in ok))),
        )
        facts = self.conn.execute(f"SELECT {_FACT_COLUMNS} FROM learned_facts").fetchall()
        self.conn.executemany(
            "UPDATE learned_facts SET seal = ? WHERE id = ?", [(bound.fact_seal(f), f[0]) for f in facts]
        )
        self._bump = True
        if rows or facts:
            said = (
                f"schema {BOUND_SINCE}: database identity {db_id}; re-sealed {len(ok)} delta rows bound to it "
                f"({len(rows) - len(ok)} did not verify and stay unverifiable); sealed {len(facts)} facts as "
                "found"
            )
            self._log(None, "overlay_kit", None, None, said)
            self._note(f"{self.path}: {said}", error=len(ok) < len(rows))

    def _check_triggers(self) -> None:
        """Each trigger overlay_kit creates (append-only audit trail and schema history) is in the file; one
        dropped outside overlay_kit is re-created, audited and noted (read-only: noted)."""
        present = {n for (n,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        tables = {n for (n,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [
            (name, table, sql)
            for name, (table, sql) in _own_triggers().items()
            if name not in present and table in tables
        ]
        if not missing:
            return
        names = ", ".join(name for name, _, _ in missing)
        if self.readonly:
            self._note(
                f"{self.path}: trigger(s) {names} missing (dropped outside overlay_kit?); a writable open "
                "re-creates them"
            )
            return
        with self.transaction():
            for _, _, sql in missing:
                self.conn.execute(sql)
            self._log(
                None,
                "overlay_kit",
                None,
                None,
                f"trigger(s) {names} were missing (dropped outside overlay_kit?): re-created",
            )
        self._note(f"{self.path}: trigger(s) {names} were missing (dropped outside overlay_kit?): re-created")

    def _key_found_rows(self) -> None:
        """Migration 10: each row's lesson digest, from its kind, scope and payload as found (a payload that
        is not a JSON object keeps none: that row is never found as a repeat)."""
        keys = []
        for delta_id, kind, scope, text in self.conn.execute("SELECT id, kind, scope, payload FROM skill_deltas"):
            try:
                payload = json.loads(text)
            except (TypeError, ValueError):
                continue
            if isinstance(payload, dict):
                keys.append((lesson_digest(kind, scope, payload), delta_id))
        self.conn.executemany("UPDATE skill_deltas SET lesson_key = ? WHERE id = ?", keys)

    # ---------------------------------------------------------------------------------- audit

    def _log(
        self,
        delta_id: str | None,
        who: str,
        from_status: str | None,
        to_status: str | None,
        reason: str = "",
        at: datetime | None = None,
    ) -> None:
        if delta_id is not None:
            self._changed.append(delta_id)
        self.conn.execute(
            "INSERT INTO delta_audit (delta_id, who, at, from_status, to_status, reason) VALUES (?,?,?,?,?,?)",
            (delta_id, who, iso(at or utc_now()), from_status, to_status, reason),
        )

    def audit(self, delta_id: str | None = None) -> list[AuditEntry]:
        """The audit trail (oldest first), of one delta or of the whole store."""
        sql = "SELECT seq, delta_id, who, at, from_status, to_status, reason FROM delta_audit"
        rows = (
            self.conn.execute(sql + " WHERE delta_id = ? ORDER BY seq", (delta_id,))
            if delta_id
            else self.conn.execute(sql + " ORDER BY seq")
        )
        return [AuditEntry(s, d, w, parse_time(a), f, t, r) for s, d, w, a, f, t, r in rows]

    # --------------------------------------------------------------------------------- deltas

    def _new_rows(self, deltas: Sequence[Delta], *, validated: bool) -> NewRows:
        """Private: the rows of deltas the gates passed, before they are sealed: each delta's start checked
        (`_starts`, every row before anything is built), then encoded as `skill_deltas` will hold it (the values
        of `SEALED_COLUMNS`, as SQLite hands them back). The gates seal exactly these rows (`seal.mint`) and
        hand both to `_insert_deltas`."""
        stored, rows = [], []
        for delta in deltas:
            payload = self._starts(delta, validated)
            approved = delta.approved_at or (utc_now() if delta.status == "active" else None)
            if payload != delta.payload or approved is not delta.approved_at:
                delta = replace(delta, payload=payload, approved_at=approved)
            stored.append(delta)
            rows.append(
                (
                    *_texts(
                        (delta.id, delta.skill, delta.base_root, delta.anchor.base_version, delta.scope, delta.kind)
                    ),
                    delta.tier,
                    dumps({"section": delta.anchor.section, "digest": delta.anchor.digest}),
                    dumps(payload),
                    dumps(delta.provenance.to_dict()),
                    _text(delta.status),
                    int(delta.success_count),
                    int(delta.attempt_count),
                    None,
                    iso(delta.created_at),
                    iso(approved),
                    dumps(list(delta.findings)),
                    1,
                    "gates" if delta.status == "active" else None,
                )
            )
        return NewRows(tuple(stored), tuple(rows), validated)

    def _insert_deltas(self, new: NewRows, seal: bytes) -> list[tuple[Delta, Undo]]:
        """Private: write the rows of `_new_rows` that the gates sealed (`seal.mint` of exactly these rows, with
        the claim they were made with; `GateBypassError` otherwise), each with its seal at rest, its lesson
        digest and an audit row, in one transaction. Returns each delta as stored, with the undo that archives
        it (learning operations never delete)."""
        if not verify_seal(new.rows, seal) or sealed_validated(seal) != new.validated:
            raise GateBypassError(
                f"{len(new.rows)} delta row(s): writes go through overlay_kit.gates.learn; "
                "these have no valid gate seal"
            )
        if not new.rows:
            return []
        sealed = self._write_sealer().seal_many(new.rows)
        rows = [(*row, iso(d.last_used_at), mark, d.lesson) for d, row, mark in zip(new.deltas, new.rows, sealed)]
        audit = [
            (d.id, "gates", iso(d.created_at), None, d.status, f"learned {d.kind} from {d.provenance.source}")
            for d in new.deltas
        ]
        with self.transaction():
            try:
                self.conn.executemany(
                    f"INSERT INTO skill_deltas ({_INSERT_COLUMNS}) VALUES ({', '.join('?' * (_ROW_WIDTH + 1))})", rows
                )
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"learn batch of {len(rows)}: {exc}") from exc
            self.conn.executemany(
                "INSERT INTO delta_audit (delta_id, who, at, from_status, to_status, reason) VALUES (?,?,?,?,?,?)",
                audit,
            )
            self._changed.extend(d.id for d in new.deltas)
            self._bump = True
        return [
            (d, self._handle("learn", (("skill_deltas", d.id, "status", "archived", d.status),), (d.id,)))
            for d in new.deltas
        ]

    def _starts(self, delta: Delta, validated: bool) -> dict:
        """A new delta's start: a starting status; untrusted provenance starts quarantined and trusted never
        does; a scan-flagged delta never starts active; the payload valid for its kind (`validate_payload`).
        Returns the payload in canonical form.

        The payload is not validated again where the gates say they validated it (`validated`, a claim their
        seal carries): they claim that only where their rules checked exactly what `validate_payload` checks
        (kind, research-only tier, shape, caps) and the delta carries the canonical form they computed. A seal
        without the claim (custom research rules) gets the full check here."""
        if delta.status not in ("staged", "quarantined", "active"):
            raise StoreError(f"delta {delta.id}: a new delta cannot start as {delta.status!r}")
        if (delta.status == "quarantined") == delta.provenance.trusted:  # whatever rules sealed it
            raise StoreError(
                f"delta {delta.id}: {delta.provenance.source} provenance starts "
                f"{'staged or active' if delta.provenance.trusted else 'quarantined'}, not "
                f"{delta.status}"
            )
        if delta.status == "active" and delta.findings:
            raise StoreError(f"delta {delta.id}: the injection scan flagged it; it starts staged, never active")
        if validated and (self.research or delta.kind not in RESEARCH_KINDS):  # the gates' claim held for this
            return delta.payload  # store's setting (a research-only kind validated on a research store: checked)
        try:
            return validate_payload(delta.kind, delta.payload, research=self.research)
        except GrammarError as exc:  # defence in depth: the gates already checked this
            raise StoreError(f"delta {delta.id}: {exc}") from exc

    # ------------------------------------------------------------------- moving a store (overlay_kit.portable)

    def key_sealer(self) -> RowSealer:
        """The seal key's sealer, not bound to this database (`overlay_kit.portable` MACs an export with it).
        `LostKeyError` when this database holds rows sealed under a key that is not there."""
        return self._key_sealer()

    def lesson_records(self, skill: str | None = None) -> list[dict]:
        """Every delta row that verifies (all statuses, superseded ones too), oldest first, as a record of its
        sealed columns (JSON columns decoded) with its review history (`audit`: who, at, from, to, reason). A
        row that may not be used is left out with a note (`integrity_notes`)."""
        rows = self._rows(
            "WHERE base_name = ? ORDER BY created_at, id" if skill else "ORDER BY created_at, id",
            (skill,) if skill else (),
        )
        out = []
        for row in self._usable(rows, self._refusal, self._read_sealer() if self._sealed else None):
            rec = dict(zip(SEALED_COLUMNS, row[: len(SEALED_COLUMNS)]))
            try:
                for column in ("anchor", "payload", "provenance", "findings"):
                    rec[column] = json.loads(rec[column])
            except (TypeError, ValueError) as exc:
                self._note(f"delta {row[0]}: unreadable ({exc}): left out")
                continue
            rec["audit"] = []
            out.append(rec)
        by_id = {rec["id"]: rec for rec in out}
        ids = list(by_id)
        for at in range(0, len(ids), 500):
            part = ids[at : at + 500]
            for did, who, when, frm, to, reason in self.conn.execute(
                f"SELECT delta_id, who, at, from_status, to_status, reason FROM delta_audit WHERE delta_id IN "
                f"({', '.join('?' * len(part))}) ORDER BY seq",
                part,
            ):
                by_id[did]["audit"].append({"who": who, "at": when, "from": frm, "to": to, "reason": reason})
        return out

    def known_ids(self, ids: Iterable[str]) -> set[str]:
        """Of `ids`, those a delta row of this database holds (verified or not)."""
        return {
            i
            for (i,) in self.conn.execute(
                "SELECT id FROM skill_deltas WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),)
            )
        }

    def _imported_rows(
        self, deltas: Sequence[Delta], approvals: Sequence[str | None], *, resident: Sequence[int]
    ) -> NewRows:
        """Private (`overlay_kit.portable`): the rows of imported lessons the gates re-validated, as
        `_new_rows` encodes them, keeping each one's status, counters, times and approval. An active row of
        untrusted provenance needs its approval; a quarantined one untrusted provenance; lineage is set
        after the insert (`_import_deltas`)."""
        rows = []
        for d, who, res in zip(deltas, approvals, resident):
            if d.status not in STATUSES:
                raise StoreError(f"delta {d.id}: status {d.status!r} is not a status")
            if d.status == "active" and not d.provenance.trusted and who is None:
                raise StoreError(f"delta {d.id}: active with untrusted provenance needs a recorded approval")
            try:
                payload = validate_payload(d.kind, d.payload, research=self.research)
            except GrammarError as exc:
                raise StoreError(f"delta {d.id}: {exc}") from exc
            rows.append(
                (
                    *_texts((d.id, d.skill, d.base_root, d.anchor.base_version, d.scope, d.kind)),
                    d.tier,
                    dumps({"section": d.anchor.section, "digest": d.anchor.digest}),
                    dumps(payload),
                    dumps(d.provenance.to_dict()),
                    _text(d.status),
                    int(d.success_count),
                    int(d.attempt_count),
                    None,
                    iso(d.created_at),
                    iso(d.approved_at),
                    dumps(list(d.findings)),
                    int(res),
                    who,
                )
            )
        return NewRows(tuple(deltas), tuple(rows), True)

    def _import_deltas(self, new: NewRows, seal: bytes, lineage: Mapping[str, str], audits: Sequence[tuple]) -> None:
        """Private: write imported rows the gates sealed (`seal.mint` of exactly these rows), each sealed at
        rest with its lesson digest, then their lineage (`lineage`: id -> the imported id that superseded it)
        and their audit rows, all in one transaction: nothing partial. A row whose id is already here is a
        `StoreError` (nothing written)."""
        if not verify_seal(new.rows, seal) or not sealed_validated(seal):
            raise GateBypassError(f"{len(new.rows)} imported row(s): these have no valid gate seal")
        if not new.rows:
            return
        taken = self.known_ids(d.id for d in new.deltas)
        if taken:
            raise StoreError(
                f"{self.path}: import: delta id(s) {', '.join(sorted(taken)[:5])} already here; nothing was written"
            )
        sealed = self._write_sealer().seal_many(new.rows)
        rows = [(*row, None, mark, d.lesson) for d, row, mark in zip(new.deltas, new.rows, sealed)]
        with self.transaction():
            self.conn.executemany(
                f"INSERT INTO skill_deltas ({_INSERT_COLUMNS}) VALUES ({', '.join('?' * (_ROW_WIDTH + 1))})", rows
            )
            if lineage:
                self.conn.executemany(
                    "UPDATE skill_deltas SET superseded_by = ? WHERE id = ?",
                    [(new_id, old) for old, new_id in lineage.items()],
                )
                self._reseal(lineage)
            self.conn.executemany(
                "INSERT INTO delta_audit (delta_id, who, at, from_status, to_status, reason) VALUES (?,?,?,?,?,?)",
                audits,
            )
            self._changed.extend(d.id for d in new.deltas)
            self._bump = True

    def get(self, delta_id: str) -> Delta:
        """The delta with this id: `StoreError` if there is none, `SealError` (and a note) if its row may not be
        used (`integrity_notes`): every write that starts from `get` refuses that row too."""
        rows = self._rows("WHERE id = ?", (delta_id,))
        if not rows:
            if self.conn.execute("SELECT 1 FROM skill_deltas WHERE id = ?", (delta_id,)).fetchone():
                raise SealError(f"{self.path}: delta {delta_id}: unreadable: left out (changed outside overlay_kit?)")
            raise StoreError(f"no delta with id {delta_id!r} in {self.path}")
        row = rows[0]
        why = self._refusal(row, self._read_sealer() if self._sealed else None)
        if why is not None:
            self._note(why)
            raise SealError(f"{self.path}: {why}")
        try:
            return _row_to_delta(row)
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"delta {delta_id} in {self.path} is unreadable: {exc}") from exc

    def search(
        self,
        skill: str | None = None,
        scope: str | Iterable[str] | None = None,
        status: str | Iterable[str] | None = None,
        *,
        kind: str | None = None,
        section: str | None = None,
        lessons: Iterable[str] | None = None,
        include_superseded: bool = False,
        limit: int | None = None,
        ids: Iterable[str] | None = None,
    ) -> list[Delta]:
        """Deltas matching every given filter (`section`: the anchor's section; `lessons`: `Delta.lesson`
        digests, through the index of them; `ids`: delta ids), in `Delta.sort_key` order.

        There is no default limit. With `limit`, the newest `limit` rows are kept (never the oldest), then
        sorted. A row whose seal does not verify, an active untrusted row without a recorded approval, and a
        row whose payload no longer parses are left out, each with a note (`integrity_notes`, and a logged
        error), never guessed at. To page through a listing instead: `iter_deltas`.
        """
        where, args = self._where(skill, scope, status, kind, section, lessons, include_superseded)
        if ids is not None:  # one parameter however many ids, looked up by id: every other term a filter (`+`)
            where = ["id IN (SELECT value FROM json_each(?))", *(f"+{w}" for w in where)]
            args = [json.dumps(list(ids)), *args]
        tail = ("WHERE " + " AND ".join(where)) if where else ""
        if limit is not None:
            tail += " ORDER BY created_at DESC, id DESC LIMIT ?"
            args.append(int(limit))
        return sorted(self._deltas(self._rows(tail, args)), key=lambda d: d.sort_key)

    def iter_deltas(
        self,
        skill: str | None = None,
        scope: str | Iterable[str] | None = None,
        status: str | Iterable[str] | None = None,
        *,
        kind: str | None = None,
        section: str | None = None,
        include_superseded: bool = False,
        after: str | None = None,
        limit: int | None = None,
    ) -> Iterator[Delta]:
        """`search`'s deltas (the same filters, rows left out the same way) in the order their rows were
        written: the table's own key (rowid), walked a range at a time, so no sort and no whole list in memory
        (`overlay-kit deltas` streams it). `after`: only rows written after that delta's, keyset paging
        (`StoreError` naming it when there is no delta with that id); `limit`: at most that many deltas.
        Bad arguments raise here, before the first row is read."""
        if limit is not None and (type(limit) is not int or limit < 0):
            raise StoreError(f"limit: a whole number ≥ 0, not {limit!r}")
        where, args = self._where(skill, scope, status, kind, section, None, include_superseded)
        start = 0
        if after is not None:
            found = self.conn.execute("SELECT rowid FROM skill_deltas WHERE id = ?", (str(after),)).fetchone()
            if found is None:
                raise StoreError(f"after: no delta with id {after!r} in {self.path}")
            start = found[0]
        # every filter term `+`: a rowid range, never an index by skill read whole and sorted for each page
        keys = (
            f"SELECT rowid FROM skill_deltas WHERE {' AND '.join([*(f'+{w}' for w in where), 'rowid > ?'])} "
            "ORDER BY rowid LIMIT ?"
        )
        return self._walk(keys, args, start, limit)

    _PAGE = 500  # rows `iter_deltas` reads at a time

    def _walk(self, keys: str, args: list, start: int, limit: int | None) -> Iterator[Delta]:
        while limit is None or limit > 0:
            page = [k for (k,) in self.conn.execute(keys, [*args, start, min(self._PAGE, limit or self._PAGE)])]
            if not page:
                return
            start = page[-1]
            got = self._deltas(
                self._rows("WHERE rowid IN (SELECT value FROM json_each(?)) ORDER BY rowid", (json.dumps(page),))
            )
            if limit is not None:
                limit -= len(got)
            yield from got

    def _where(self, skill, scope, status, kind, section, lessons, include_superseded) -> tuple[list[str], list]:
        """The SQL terms (joined by AND) and their arguments of `search`'s filters."""
        where, args = [], []
        if skill is not None:
            where.append("base_name = ?")
            args.append(skill)
        for column, value in (("scope", scope), ("status", status)):
            if value is None:
                continue
            values = [value] if isinstance(value, str) else list(value)
            if column == "status":
                bad = sorted(set(values) - set(STATUSES))
                if bad:
                    raise StoreError(f"unknown status {bad}; statuses are {', '.join(STATUSES)}")
            where.append(f"{column} IN ({', '.join('?' * len(values))})")
            args += values
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        if section is not None:
            where.append("json_extract(anchor, '$.section') = ?")
            args.append(section)
        if lessons is not None:
            if not self._keyed:
                raise StoreError(
                    f"{self.path}: written before lesson digests (schema < {_KEYED_SINCE}): a writable open adds them"
                )
            lessons = list(lessons)
            where.append(f"lesson_key IN ({', '.join('?' * len(lessons))})")
            args += lessons
        if not include_superseded:
            where.append("superseded_by IS NULL")
        return where, args

    def budget_order(self, skill: str, scope: str | Iterable[str]) -> list[tuple[str, int, int, int]]:
        """(id, tier, superseded 0/1, resident 0/1) of a skill's active rows in these scopes: tiers 1-2 first,
        then tier 3 highest value first, `budget.value_key` descending (evidence, last use, creation, id): the
        order in which the budget keeps lessons. Read without decoding or verifying a row: it only chooses which
        rows to read (`search(ids=)` verifies and decodes them)."""
        scopes = [scope] if isinstance(scope, str) else list(scope)
        sql = (
            "SELECT id, tier, superseded_by IS NOT NULL, resident != 0 FROM skill_deltas "
            f"WHERE base_name = ? AND scope IN ({', '.join('?' * len(scopes))}) AND status = 'active' "
            "ORDER BY tier = 3, (success_count + 1.0) / (attempt_count + 2) DESC, "
            "coalesce(last_used_at, approved_at, created_at) DESC, created_at DESC, id DESC"
        )
        return self.conn.execute(sql, [skill, *scopes]).fetchall()

    def kept_line_tokens(self, ids: Sequence[str]) -> dict[str, int]:
        """The token counts `line_tokens` keeps for these deltas' learned lines, by id, where one is kept: as
        kept, not checked against the line (what to read is chosen by them; what is read is counted exactly)."""
        return {k: n for k, (n, _) in self.kept_lines(ids).items()}

    def kept_lines(self, keys: Iterable[str]) -> dict[str, tuple[int, str]]:
        """{key: (count, the counted line's digest)} of the `line_tokens` kept under these keys (a delta's id or a
        scaffold line's key), as kept: `line_tokens(lines, kept)` checks each digest against its line."""
        keys, out = list(keys), {}
        for at in range(0, len(keys), 500):
            part = [f"line_tokens:{k}" for k in keys[at : at + 500]]
            for key, value in self.conn.execute(
                f"SELECT key, value FROM overlay_meta WHERE key IN ({', '.join('?' * len(part))})", part
            ):
                n, _, digest = value.partition(" ")
                out[key.partition(":")[2]] = (int(n), digest)
        return out

    def skills(self) -> list[str]:
        """Base names that have at least one delta row."""
        return [n for (n,) in self.conn.execute("SELECT DISTINCT base_name FROM skill_deltas ORDER BY base_name")]

    def _status_change(self, delta: Delta, to: str, who: str, reason: str, restore: bool = True) -> list[tuple]:
        """Apply one status transition inside an open transaction; return its undo steps. Archiving a delta
        restores the live deltas it superseded (`restore=False`: not when they are being archived too). Into
        `active`: the approval (when, and who) is recorded under the row's seal, if the row has none yet.
        `delta` was read (its seal checked) in the same transaction; every row changed is sealed again."""
        steps = [("skill_deltas", delta.id, "status", delta.status, to)]
        self.conn.execute("UPDATE skill_deltas SET status = ? WHERE id = ?", (to, delta.id))
        if to == "active":
            at, by = self.conn.execute(
                "SELECT approved_at, approved_by FROM skill_deltas WHERE id = ?", (delta.id,)
            ).fetchone()
            if at is None:
                now = iso(utc_now())
                self.conn.execute("UPDATE skill_deltas SET approved_at = ? WHERE id = ?", (now, delta.id))
                steps.append(("skill_deltas", delta.id, "approved_at", None, now))
            if by is None:
                self.conn.execute("UPDATE skill_deltas SET approved_by = ? WHERE id = ?", (str(who), delta.id))
                steps.append(("skill_deltas", delta.id, "approved_by", None, str(who)))
        self._log(delta.id, who, delta.status, to, reason)
        changed = [delta.id]
        if to == "archived" and restore:  # an archived delta replaces nothing: what it superseded comes back
            members = [
                m
                for (m,) in self.conn.execute(
                    "SELECT id FROM skill_deltas WHERE superseded_by = ? AND status != 'archived' ORDER BY id",
                    (delta.id,),
                )
            ]
            for mid in self._checked(members):
                self.conn.execute("UPDATE skill_deltas SET superseded_by = NULL WHERE id = ?", (mid,))
                self._log(mid, who, None, None, f"restored: {delta.id}, which superseded it, was archived")
                steps.append(("skill_deltas", mid, "superseded_by", delta.id, None))
                changed.append(mid)
        self._reseal(changed)
        return steps

    def approve(self, delta_id: str, who: str = "user") -> Undo:
        """The consent gate: an explicit, per-delta approval. The only way out of quarantine into use. A batch
        of one (`approve_many`)."""
        return self.approve_many([delta_id], who=who)

    def approve_many(self, delta_ids: Iterable[str], who: str = "user") -> Undo:
        """Approve every delta named (each named on purpose: an id given twice counts once), in one transaction
        with one undo handle for the whole batch. All or nothing: an unknown id, a delta that is not staged,
        quarantined or orphaned, or a superseded one refuses the batch (`StoreError` naming it) and nothing is
        approved."""
        ids = tuple(dict.fromkeys(delta_ids))
        if not ids:
            raise StoreError("approve needs at least one delta id")
        steps: list[tuple] = []
        with self.transaction():
            for delta_id in ids:
                d = self.get(delta_id)
                if d.status not in _APPROVABLE:
                    raise StoreError(f"delta {delta_id} is {d.status}; only {', '.join(_APPROVABLE)} can be approved")
                if d.superseded_by:
                    raise StoreError(f"delta {delta_id} is superseded by {d.superseded_by}; approve that one")
                steps += self._status_change(d, "active", who, f"approved by {who}")
        return self._handle("approve", tuple(steps), ids)

    def revert(self, delta_id: str, who: str = "user") -> Undo:
        """Archive one delta (never a hard delete)."""
        with self.transaction():
            d = self.get(delta_id)
            if d.status == "archived":
                raise StoreError(f"delta {delta_id} is already archived")
            steps = self._status_change(d, "archived", who, f"reverted by {who}")
        return self._handle("revert", tuple(steps), (delta_id,))

    def reset(self, skill: str, who: str = "user") -> Undo:
        """Archive every live delta of a skill: the pure authored base again, history kept."""
        steps: list[tuple] = []
        with self.transaction():
            for d in self.search(skill, status=_LIVE, include_superseded=True):
                steps += self._status_change(d, "archived", who, f"reset of {skill} by {who}", restore=False)
        return self._handle("reset", tuple(steps), tuple(dict.fromkeys(s[1] for s in steps)))

    def set_status(self, delta_id: str, status: str, *, who: str, reason: str) -> Undo:
        """Move a delta between statuses for rebase / budget / evidence, along `_transition` only: never out
        of quarantine (that is `approve`, or `revert`), never untrusted into `active`, never back from
        `archived` (that is `undo`), and an orphan only back to the status it had before it was orphaned."""
        if status not in STATUSES:
            raise StoreError(f"unknown status {status!r}; statuses are {', '.join(STATUSES)}")
        with self.transaction():
            d = self.get(delta_id)
            if d.status == status:
                return self._handle("set_status", (), (delta_id,))
            why = self._transition(d, status)
            if why:
                raise StoreError(f"delta {delta_id}: {d.status} -> {status} refused: {why}")
            steps = self._status_change(d, status, who, reason)
        return self._handle("set_status", tuple(steps), (delta_id,))

    def _transition(self, d: Delta, to: str) -> str | None:
        """The status state machine for `set_status`; None when `d.status -> to` is allowed, else why not.

        staged | active | quarantined -> orphaned     (rebase)
        orphaned -> the status it had before          (rebase restores; untrusted active needs approve)
        staged -> active                              (trusted only: promotion on evidence)
        any live status -> archived                   (budget, retirement; like revert)
        """
        if d.status == "archived":
            return "archived deltas come back only by undoing the archiving"
        if to == "archived":
            return None
        if to == "orphaned":
            return None if d.status in ("staged", "active", "quarantined") else f"{d.status} cannot be orphaned"
        if d.status == "orphaned":
            before = self._before_orphaned(d.id)
            if to != before:
                return f"an orphan goes back only to what it was before ({before}); approve it otherwise"
            if to == "active" and not d.provenance.trusted:
                return "untrusted deltas become active only by an explicit approve"
            return None
        if d.status == "quarantined":
            return "quarantine is left only by approve (or revert)"
        if to == "quarantined":
            return "quarantine is set only by the gates, when an untrusted lesson is written"
        if (d.status, to) == ("staged", "active"):
            return None if d.provenance.trusted else "untrusted deltas become active only by an explicit approve"
        return "not a transition set_status makes (approve, revert and undo are the other doors)"

    def _before_orphaned(self, delta_id: str) -> str:
        row = self.conn.execute(
            "SELECT from_status FROM delta_audit WHERE delta_id = ? AND to_status = 'orphaned' "
            "AND from_status IS NOT NULL AND from_status != 'orphaned' ORDER BY seq DESC "
            "LIMIT 1",
            (delta_id,),
        ).fetchone()
        return row[0] if row else "quarantined"  # unknown history: the most restrictive

    def supersede(self, old_ids: Iterable[str], new_id: str, who: str = "user") -> Undo:
        """Record lineage: each old delta is replaced by `new_id` (same skill). Rows are kept."""
        old_ids = list(dict.fromkeys(old_ids))
        steps = []
        with self.transaction():
            new = self.get(new_id)
            if new.status == "archived":
                raise StoreError(f"delta {new_id} is archived; an archived delta cannot supersede anything")
            chain, at = [], new
            while at.superseded_by is not None and len(chain) < 10_000:  # what new_id is itself replaced by
                chain.append(at.superseded_by)
                at = self.get(at.superseded_by)
            for oid in old_ids:
                if oid == new_id:
                    raise StoreError(f"delta {oid} cannot supersede itself")
                if oid in chain:
                    raise StoreError(
                        f"delta {oid} already (indirectly) supersedes {new_id}: a supersede cycle "
                        f"{' -> '.join([new_id, *chain[: chain.index(oid) + 1]])}"
                    )
                old = self.get(oid)
                if old.skill != new.skill:
                    raise StoreError(f"delta {oid} ({old.skill}) and {new_id} ({new.skill}) are on different skills")
                if old.superseded_by:
                    raise StoreError(f"delta {oid} is already superseded by {old.superseded_by}")
                self.conn.execute("UPDATE skill_deltas SET superseded_by = ? WHERE id = ?", (new_id, oid))
                self._log(oid, who, old.status, old.status, f"superseded by {new_id}")
                steps.append(("skill_deltas", oid, "superseded_by", None, new_id))
            self._reseal(old_ids)
        return self._handle("supersede", tuple(steps), tuple(old_ids))

    def touch(self, ids: Iterable[str], when: datetime | None = None) -> Undo:
        """Stamp last_used_at (decay and consolidation input); not a state change, so not audited."""
        stamp = iso(when or utc_now())
        steps = []
        with self.transaction():
            for did in dict.fromkeys(ids):
                row = self.conn.execute("SELECT last_used_at FROM skill_deltas WHERE id = ?", (did,)).fetchone()
                if row is None:
                    raise StoreError(f"no delta with id {did!r} in {self.path}")
                self.conn.execute("UPDATE skill_deltas SET last_used_at = ? WHERE id = ?", (stamp, did))
                steps.append(("skill_deltas", did, "last_used_at", row[0], stamp))
        return self._handle("touch", tuple(steps), tuple(s[1] for s in steps))

    def set_resident(self, ids: Iterable[str], resident: bool, *, who: str, reason: str) -> Undo:
        """Budget residency: False demotes deltas to retrieval-only, True makes them resident again.
        Audited like a state change (status unchanged); unknown ids raise with nothing changed."""
        flag, steps = int(bool(resident)), []
        with self.transaction():
            for did in dict.fromkeys(ids):
                row = self.conn.execute("SELECT resident, status FROM skill_deltas WHERE id = ?", (did,)).fetchone()
                if row is None:
                    raise StoreError(f"no delta with id {did!r} in {self.path}")
                if row[0] == flag:
                    continue
                self.get(did)  # its seal checked before it is sealed again
                self.conn.execute("UPDATE skill_deltas SET resident = ? WHERE id = ?", (flag, did))
                self._log(did, who, row[1], row[1], reason)
                steps.append(("skill_deltas", did, "resident", row[0], flag))
            self._reseal(s[1] for s in steps)
        return self._handle("set_resident", tuple(steps), tuple(s[1] for s in steps))

    def set_anchor(self, delta_id: str, anchor: Anchor, *, who: str, reason: str) -> Undo:
        """Re-key a delta onto `anchor` (section, digest, base_version) — rebase and re-anchoring. Audited
        like a state change (status unchanged), even when the anchor is already `anchor`: an explicit
        re-anchoring is recorded. Unknown ids raise with nothing changed."""
        if not isinstance(anchor, Anchor) or not isinstance(anchor.section, str) or not anchor.section:
            raise StoreError(f"delta {delta_id}: set_anchor needs an Anchor with a section, not {anchor!r}")
        stored = dumps({"section": anchor.section, "digest": anchor.digest})
        with self.transaction():
            row = self.conn.execute(
                "SELECT anchor, base_version, status FROM skill_deltas WHERE id = ?", (delta_id,)
            ).fetchone()
            if row is None:
                raise StoreError(f"no delta with id {delta_id!r} in {self.path}")
            steps = []
            version = _text(anchor.base_version)
            if (row[0], row[1]) != (stored, version):  # both columns, so undo audits once
                self.get(delta_id)  # its seal checked before it is sealed again
                steps = [
                    ("skill_deltas", delta_id, "anchor", row[0], stored),
                    ("skill_deltas", delta_id, "base_version", row[1], version),
                ]
                self.conn.execute(
                    "UPDATE skill_deltas SET anchor = ?, base_version = ? WHERE id = ?", (stored, version, delta_id)
                )
                self._reseal([delta_id])
            self._log(delta_id, who, row[2], row[2], reason)
        return self._handle("set_anchor", tuple(steps), (delta_id,))

    def retrieval_only(self, skill: str | None = None) -> frozenset[str]:
        """Ids of deltas the budget demoted to retrieval-only (of one skill, or all)."""
        sql, args = "SELECT id FROM skill_deltas WHERE resident = 0", []
        if skill is not None:
            sql, args = sql + " AND base_name = ?", [skill]
        return frozenset(i for (i,) in self.conn.execute(sql, args))

    def on_change(self, callback: Callable[[list[str]], None]) -> None:
        """Register a hook called with the changed delta ids after each commit that changed a delta's state
        (learn, approve, revert, reset, set_status, supersede, set_resident, set_anchor, undo). The budget
        uses it."""
        self._change_hooks.append(callback)

    _UNDOABLE = {
        ("skill_deltas", "status"),
        ("skill_deltas", "approved_at"),
        ("skill_deltas", "approved_by"),
        ("skill_deltas", "superseded_by"),
        ("skill_deltas", "last_used_at"),
        ("skill_deltas", "resident"),
        ("skill_deltas", "anchor"),
        ("skill_deltas", "base_version"),
        ("learned_facts", "status"),
    }

    @staticmethod
    def _handle(op: str, steps: tuple, ids: tuple = ()) -> Undo:
        steps, ids = tuple(tuple(s) for s in steps), tuple(ids)
        return Undo(op, steps, ids, mint_undo(op, steps, ids))

    def combine(self, op: str, *handles: Undo, ids: Iterable[str] | None = None) -> Undo:
        """One handle that reverses several this store issued (e.g. approve + supersede of an umbrella)."""
        for h in handles:
            self._check_handle(h)
        steps = tuple(s for h in handles for s in h.steps)
        return self._handle(
            op, steps, tuple(ids) if ids is not None else tuple(dict.fromkeys(i for h in handles for i in h.ids))
        )

    @staticmethod
    def _check_handle(handle: Undo) -> None:
        if not isinstance(handle, Undo) or not verify_undo(handle.op, handle.steps, handle.ids, handle.token):
            raise StoreError("not an undo handle this store issued (handles cannot be built or edited by hand)")

    def undo(self, handle: Undo, who: str = "user") -> None:
        """Reverse a write. Refused, with nothing changed, if any row has moved on since that write, or if the
        handle was not issued by the store (in this process)."""
        self._check_handle(handle)
        with self.transaction():
            rows = [rid for table, rid, *_ in handle.steps if table == "skill_deltas"]
            for rid in dict.fromkeys(rows):  # each row's seal checked before it is sealed again
                if self.conn.execute("SELECT 1 FROM skill_deltas WHERE id = ?", (rid,)).fetchone() is not None:
                    self.get(rid)
            facts = list(dict.fromkeys(rid for table, rid, *_ in handle.steps if table == "learned_facts"))
            present = (
                [
                    r
                    for (r,) in self.conn.execute(
                        f"SELECT id FROM learned_facts WHERE id IN ({', '.join('?' * len(facts))})", facts
                    )
                ]
                if facts
                else []
            )
            if len(self._fact_checked(present)) < len(present):
                raise SealError(
                    f"{self.path}: cannot undo {handle.op}: a fact row's seal does not verify "
                    "(changed outside overlay_kit?)"
                )
            for table, rid, column, before, after in reversed(handle.steps):
                if (table, column) not in self._UNDOABLE:
                    raise StoreError(f"cannot undo a change to {table}.{column}")
                row = self.conn.execute(f"SELECT {column} FROM {table} WHERE id = ?", (rid,)).fetchone()
                if row is None:
                    raise StoreError(f"cannot undo {handle.op}: {table} row {rid} no longer exists (forgotten?)")
                if row[0] != after:
                    raise StoreError(
                        f"cannot undo {handle.op}: {table} row {rid} {column} is {row[0]!r} now, not {after!r}"
                    )
                self.conn.execute(f"UPDATE {table} SET {column} = ? WHERE id = ?", (before, rid))
                if table == "skill_deltas" and column == "status":
                    self._log(rid, who, after, before, f"undo of {handle.op}")
                elif table == "skill_deltas" and column == "superseded_by":
                    self._log(rid, who, None, None, f"undo of {handle.op}: lineage {after} -> {before}")
                elif table == "skill_deltas" and column == "anchor":
                    self._log(rid, who, None, None, f"undo of {handle.op}: anchor {after} -> {before}")
            self._reseal(rows)
            self._reseal_facts(present)

    # -------------------------------------------------------------------------------- erasure

    def on_forget(self, callback: Callable[[list[str]], None]) -> None:
        """Register an erasure hook (e.g. the FAISS index): called with the erased delta ids after commit."""
        self._forget_hooks.append(callback)

    def forget(self, *, skill: str | None = None, scope: str | None = None, all: bool = False) -> int:
        """TRUE erasure (user-initiated), the one erasure function: every row of every table that holds what
        was learned for the skill and/or scope (`_ERASURE`), then a TRUNCATE checkpoint so no erased byte
        stays in the WAL (`secure_delete` zeroes freed space in the file). Returns how many deltas were erased.

        Facts belong to a skill when their namespace is the skill's name (how the gates route them). A
        reader holding an open read transaction stops the checkpoint: the erased text then stays in the pages
        the file and its WAL held before (`finish_erasure` says which), `erasure_pending` is True, and
        `finish_erasure()` or `close()` retries — so does the next writable open, if this process ends first.
        Needs a filter or `all=True`."""
        if not all and skill is None and scope is None:
            raise StoreError("forget needs skill=, scope= or all=True")
        counts: dict[str, int] = {}
        with self.transaction():
            where, args = self._erasure_filter("base_name", "scope", skill, scope, all)
            ids = [i for (i,) in self.conn.execute(f"SELECT id FROM skill_deltas{where}", args)]
            self._bump = True  # a restored copy from before this erasure is then an older copy (`_check_counter`)
            self._erasing = True
            try:
                for chunk in range(0, len(ids), 500):
                    part = ids[chunk : chunk + 500]
                    marks = ", ".join("?" * len(part))
                    for table, column in _ERASE_BY_DELTA:
                        n = self.conn.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", part).rowcount
                        counts[table] = counts.get(table, 0) + n
                    # lineage pointing at an erased row would name it: clear before deleting (a row whose seal
                    # verified is sealed again; one that did not stays unverifiable)
                    pointing = [
                        i
                        for (i,) in self.conn.execute(
                            f"SELECT id FROM skill_deltas WHERE superseded_by IN ({marks}) AND id NOT IN ({marks})",
                            part + part,
                        )
                    ]
                    kept = self._checked(pointing)
                    self.conn.execute(
                        f"UPDATE skill_deltas SET superseded_by = NULL WHERE superseded_by IN ({marks})", part
                    )
                    self._reseal(kept)
                    self.conn.execute(f"DELETE FROM skill_deltas WHERE id IN ({marks})", part)
                    self.conn.execute(
                        f"DELETE FROM overlay_meta WHERE key IN ({marks})", [f"line_tokens:{i}" for i in part]
                    )  # Store.line_tokens
                for table, skill_col, scope_col in _ERASURE:
                    if not all and (
                        (skill is not None and skill_col is None) or (scope is not None and scope_col is None)
                    ):
                        continue  # this table is not kept per skill (or per scope): only `all` erases it
                    tw, ta = self._erasure_filter(skill_col, scope_col, skill, scope, all)
                    counts[table] = counts.get(table, 0) + self.conn.execute(f"DELETE FROM {table}{tw}", ta).rowcount
            finally:
                self._erasing = False
            what = "all" if all else ", ".join(f"{k}={v}" for k, v in (("skill", skill), ("scope", scope)) if v)
            rows = ", ".join(f"{n} {t}" for t, n in sorted(counts.items()) if n)
            self._log(
                None, "user", None, None, f"forget {what}: erased {len(ids)} deltas" + (f", {rows}" if rows else "")
            )
        self._erased_ids = ids
        self._compact_due = True
        self.finish_erasure()
        for hook in self._forget_hooks:
            hook(list(ids))
        return len(ids)

    @staticmethod
    def _erasure_filter(skill_col, scope_col, skill, scope, all) -> tuple[str, list]:
        where, args = [], []
        if not all:
            for column, value in ((skill_col, skill), (scope_col, scope)):
                if value is not None:
                    where.append(f"{column} = ?")
                    args.append(value)
        return (" WHERE " + " AND ".join(where)) if where else "", args

    def finish_erasure(self) -> bool:
        """Rewrite the file (`VACUUM`), then checkpoint and truncate the WAL. `secure_delete` zeroes a deleted
        row's own bytes, but SQLite leaves stale copies of rows it moved while they were alive (a page rebuilt
        by a balance keeps its old cells in the gap below its cell area): in a store kept open across many
        writes, an erased lesson's text could survive there, in the file and then in the WAL. VACUUM copies only
        the live rows into fresh pages, so no such copy outlives the erasure; the TRUNCATE checkpoint then moves
        them into the file and empties the WAL. False (and `erasure_pending`, with `erasure_where`) when it
        cannot finish: another connection's open read transaction stops the checkpoint, or this handle is inside
        a transaction or mid-statement (no VACUUM then); the warning says in which files the erased rows' bytes
        are (a raw scan for the erased ids), the pending erasure is recorded in the database, and the next
        call, `close()`, or the next writable open tries again."""
        if self.path == ":memory:" or self.readonly:
            self._compact_due = False
            return True
        failed: object = None
        with self._lock:  # no other thread of this process starts a transaction on the handle meanwhile
            if self._compact_due:
                if self._depth:
                    failed = "this handle is inside a transaction"
                else:
                    try:
                        self.conn.execute("VACUUM")
                        self._compact_due = False
                    except sqlite3.Error as exc:  # a statement still open on this handle, a full disk, a lock
                        failed = exc
            try:
                busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error as exc:  # e.g. disk full: the rows are gone, the files keep them until it works
                busy, failed = (1,), failed or exc
        self.erasure_pending = bool(busy and busy[0]) or self._compact_due
        if self.erasure_pending:
            where = self.erasure_where = self._erased_bytes_at()
            why = (
                f"the file could not be rewritten ({failed})"
                if self._compact_due
                else f"the checkpoint failed ({failed})"
                if failed
                else "another connection holds a read transaction"
            )
            log.warning(
                "%s: %s; %s until it succeeds (Store.finish_erasure(), close() or the next writable open retries)",
                self.path,
                why,
                where,
            )
            self._remember_erasure(True)
        else:
            self._remember_erasure(False)
            self._erased_ids, self.erasure_where = [], None
        return not self.erasure_pending

    def _erased_bytes_at(self) -> str:
        """Where the last forget's erased rows still are, by a raw scan of the file and its WAL for their ids."""
        ids = [i.encode("utf-8", "surrogatepass") for i in self._erased_ids[:64]]
        files = [(self.path, "the database file"), (self.path + "-wal", "its WAL")]
        if not ids:
            return f"the erased text may still be in {self.path} (the database file) and {self.path}-wal (its WAL)"
        found = []
        for name, what in files:
            try:
                data = Path(name).read_bytes()
            except OSError:
                continue
            if any(i in data for i in ids):
                found.append(f"{name} ({what})")
        if not found:
            return f"no erased id is left in {self.path} or its WAL, but freed pages may still hold erased text"
        return "the erased text is still in " + " and ".join(found)

    def _remember_erasure(self, pending: bool) -> None:
        """Record (or clear) in `overlay_meta` that an erasure waits for its checkpoint, so that another process
        finishes it if this one ends first. Best effort: never waits for a lock."""
        try:
            with self._lock:
                if self._depth:
                    return
                marked = self.conn.execute("SELECT 1 FROM overlay_meta WHERE key = 'erasure_pending'").fetchone()
                if bool(marked) == pending:
                    return
                self.conn.execute("PRAGMA busy_timeout = 0")
                try:
                    if pending:
                        self.conn.execute(
                            "INSERT OR REPLACE INTO overlay_meta (key, value) VALUES ('erasure_pending', ?)",
                            (iso(utc_now()),),
                        )
                    else:
                        self.conn.execute("DELETE FROM overlay_meta WHERE key = 'erasure_pending'")
                        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                finally:
                    self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        except sqlite3.Error:
            pass

    def _resume_erasure(self) -> None:
        """At a writable open: finish an erasure an earlier process recorded as waiting for its checkpoint."""
        try:
            marked = self.conn.execute("SELECT 1 FROM overlay_meta WHERE key = 'erasure_pending'").fetchone()
        except sqlite3.Error:
            return
        if marked:
            self._compact_due = True  # the process that erased may have ended before its VACUUM
            self.finish_erasure()

    # ----------------------------------------------------------------------------- token counts

    def authored_tokens(self, body: str) -> int:
        """Llama tokens of an authored skill body, kept with the base registry by body digest (`overlay_meta`
        key `authored_tokens:<digest>`): counted once per body per database, so a fresh process resolving a
        known base never runs the tokenizer over it. Remembering never waits for a lock: when another
        process holds the database, the count is just returned."""
        import hashlib

        key = "authored_tokens:" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]  # Skill.body_digest
        row = self.conn.execute("SELECT value FROM overlay_meta WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return int(row[0])
        from ..budget import count_tokens

        n = count_tokens(body)
        with self._lock:
            nested = self._depth > 0
            try:
                if not nested:
                    self.conn.execute("PRAGMA busy_timeout = 0")
                self.conn.execute("INSERT OR IGNORE INTO overlay_meta (key, value) VALUES (?, ?)", (key, str(n)))
            except sqlite3.Error:
                pass  # locked or read-only: the count is still right, only not remembered
            finally:
                if not nested:
                    self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return n

    def line_tokens(
        self, lines: Mapping[str, str], kept: Mapping[str, tuple[int, str]] | None = None
    ) -> dict[str, int]:
        """`budget.count_following` of each line of `lines` (key → line), kept in `overlay_meta` under
        `line_tokens:<key>` with the line's digest, so a fresh process resolving known deltas never loads the
        tokenizer. The key is a delta's id for its learned line (`forget` erases it with the delta; a
        rendering that changed since is counted again) or a digest for a fixed scaffold line. Lines not kept
        yet are counted in one batch and remembered without waiting for a lock (as `authored_tokens`).
        `kept`: what `kept_lines` read already for some of these keys (not read again; checked the same way)."""
        import hashlib

        digests = {k: hashlib.sha256(line.encode("utf-8")).hexdigest()[:16] for k, line in lines.items()}
        found = {k: kept[k] for k in lines if k in kept} if kept else {}
        if len(found) < len(lines):
            found |= self.kept_lines([k for k in lines if k not in found])
        out = {k: n for k, (n, digest) in found.items() if digest == digests[k]}
        missing = [k for k in lines if k not in out]
        if not missing:
            return out
        from ..budget import count_many_following

        counted = dict(zip(missing, count_many_following([lines[k] for k in missing])))
        out.update(counted)
        with self._lock:
            nested = self._depth > 0
            try:
                if not nested:
                    self.conn.execute("PRAGMA busy_timeout = 0")
                    self.conn.execute("BEGIN IMMEDIATE")
                self.conn.executemany(
                    "INSERT OR REPLACE INTO overlay_meta (key, value) VALUES (?, ?)",
                    [(f"line_tokens:{k}", f"{n} {digests[k]}") for k, n in counted.items()],
                )
                if not nested:
                    self.conn.execute("COMMIT")
            except sqlite3.Error:  # locked or read-only: the counts are still right, only not remembered
                if not nested and self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
            finally:
                if not nested:
                    self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return out

    # ----------------------------------------------------------------------------- embeddings

    @property
    def embedder_id(self) -> str | None:
        row = self.conn.execute("SELECT value FROM overlay_meta WHERE key = 'embedder_id'").fetchone()
        return None if row is None else row[0]

    def set_embedding(self, delta_id: str, vector: np.ndarray, embedder_id: str) -> None:
        """Store a tier-3 trigger vector (float32). The store holds vectors of one embedder only."""
        import numpy as np  # imported on use: only embeddings need it

        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vec.size == 0 or not np.all(np.isfinite(vec)):
            raise StoreError(f"delta {delta_id}: embedding must be a non-empty finite vector")
        with self.transaction():
            current = self.embedder_id
            if current is None:
                self.conn.execute("INSERT INTO overlay_meta (key, value) VALUES ('embedder_id', ?)", (embedder_id,))
            elif current != embedder_id:
                raise StoreError(
                    f"{self.path}: vectors belong to embedder {current!r}, not {embedder_id!r}; "
                    "call invalidate_embeddings() first"
                )
            d = self.get(delta_id)
            if d.tier != 3:
                raise StoreError(f"delta {delta_id} is tier {d.tier}; only tier-3 triggers carry embeddings")
            dim = self.conn.execute(
                "SELECT length(embedding) FROM skill_deltas WHERE embedding IS NOT NULL LIMIT 1"
            ).fetchone()
            if dim and dim[0] != vec.nbytes:
                raise StoreError(f"delta {delta_id}: {vec.size}-dim vector, store holds {dim[0] // 4}-dim vectors")
            self.conn.execute(
                "UPDATE skill_deltas SET embedding = ?, embedder_id = ? WHERE id = ?",
                (vec.astype("<f4").tobytes(), embedder_id, delta_id),
            )

    def embeddings(self, embedder_id: str, status: str | Iterable[str] | None = None) -> tuple[list[str], np.ndarray]:
        """(ids, float32 matrix) of stored vectors from `embedder_id`, ordered by id. Empty for another
        embedder: stale vectors never answer."""
        import numpy as np

        sql = "SELECT id, embedding FROM skill_deltas WHERE embedding IS NOT NULL AND embedder_id = ?"
        args: list = [embedder_id]
        if status is not None:
            values = [status] if isinstance(status, str) else list(status)
            sql += f" AND status IN ({', '.join('?' * len(values))})"
            args += values
        rows = list(self.conn.execute(sql + " ORDER BY id", args))
        if not rows or self.embedder_id != embedder_id:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [r[0] for r in rows], np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows]).astype(np.float32)

    def invalidate_embeddings(self, new_embedder_id: str) -> int:
        """An embedder change: every vector becomes NULL (tier 3 dark until re-embedded). Returns how many."""
        with self.transaction():
            n = self.conn.execute(
                "UPDATE skill_deltas SET embedding = NULL, embedder_id = NULL WHERE embedding IS NOT NULL"
            ).rowcount
            self.conn.execute(
                "INSERT INTO overlay_meta (key, value) VALUES ('embedder_id', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (new_embedder_id,),
            )
        return n

    # -------------------------------------------------------------------- evidence triggers (tier 3)

    def add_triggers(
        self, rows: Iterable[tuple[str, str, str]], *, at: datetime | None = None
    ) -> list[tuple[str, str, str]]:
        """Record evidence triggers: each row `(delta_id, text, source)`, `source` one of `TRIGGER_SOURCES`
        (taught, restated, corrected, accepted: the goal at which the lesson was). A text the lesson already
        has — its payload's own trigger or an evidence trigger, compared as read (`grammar.as_read`: case, white
        space, NFKC), or an earlier row of the batch — is ignored: one row per distinct (delta, text), the first
        source kept. Returns the rows recorded, in the order given (`at`: their time, default now).

        One transaction (inside the caller's, if one is open); nothing is written if a row is bad: `StoreError`
        for an unknown delta, a delta that is not tier 3, an unknown source or a text that cannot be a trigger
        (`trigger_problem`), `SealError` for a delta whose row may not be used. Not sealed (docs/reliability.md):
        a trigger changes when an approved lesson applies, never what it says. Append-only: only `forget`
        removes them, with their lesson."""
        rows = [tuple(r) for r in rows]
        for i, row in enumerate(rows):
            if len(row) != 3:
                raise StoreError(f"trigger row {i}: (delta_id, text, source), not {row!r}")
            delta_id, text, source = row
            if source not in TRIGGER_SOURCES:
                raise StoreError(
                    f"trigger row {i}: unknown source {source!r}; sources are {', '.join(TRIGGER_SOURCES)}"
                )
            why = trigger_problem(text)
            if why is not None:
                raise StoreError(f"trigger row {i} ({delta_id}): text {why}")
        if not rows:
            return []
        when = iso(at or utc_now())
        with self.transaction():
            ids = list(dict.fromkeys(r[0] for r in rows))
            found = {d.id: d for d in self.search(ids=ids, include_superseded=True)}
            for delta_id in ids:
                if delta_id not in found:  # StoreError (unknown) or SealError (its row may not be used)
                    found[delta_id] = self.get(delta_id)
                if found[delta_id].tier != 3:
                    raise StoreError(
                        f"delta {delta_id} is tier {found[delta_id].tier}; only tier-3 lessons have triggers"
                    )
            have = {i: {as_read(t) for t in texts} for i, texts in self.triggers(ids).items()}
            new = []
            for delta_id, text, source in rows:
                key = as_read(text)
                if key not in have[delta_id]:
                    have[delta_id].add(key)
                    new.append((delta_id, text, source))
            self.conn.executemany(
                "INSERT OR IGNORE INTO delta_triggers (delta_id, text, source, created_at) VALUES (?, ?, ?, ?)",
                [(*row, when) for row in new],
            )
        return new

    def triggers(self, ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Each lesson's triggers, for every id asked (empty for one with none, or unknown): its payload's own
        trigger first when it has one, then its evidence triggers oldest first (`add_triggers`). What tier-3
        selection matches a goal against (`selection.Lesson.triggers`). Reads rows as they are: the caller
        holds the lessons themselves, read and verified (a row whose seal fails is never selected)."""
        return {i: tuple(t.text for t in ts) for i, ts in self.trigger_records(ids).items()}

    def trigger_records(self, ids: Iterable[str]) -> dict[str, tuple[Trigger, ...]]:
        """`triggers` with each one's source and time (`Trigger`): `overlay-kit triggers ID`."""
        ids = list(dict.fromkeys(ids))
        out: dict[str, list[Trigger]] = {i: [] for i in ids}
        if not ids:
            return {}
        keys = json.dumps(ids)
        for delta_id, text, created in self.conn.execute(
            "SELECT id, json_extract(payload, '$.trigger'), created_at FROM skill_deltas WHERE id IN "
            "(SELECT value FROM json_each(?)) AND json_valid(payload)",
            (keys,),
        ):
            if isinstance(text, str) and text:
                out[delta_id].append(Trigger(text, "payload", parse_time(created)))
        try:
            evidence = self.conn.execute(
                "SELECT delta_id, text, source, created_at FROM delta_triggers WHERE "
                "delta_id IN (SELECT value FROM json_each(?)) ORDER BY created_at, id",
                (keys,),
            ).fetchall()
        except sqlite3.OperationalError:  # a read-only file from before schema 13: no evidence triggers yet
            evidence = []
        for delta_id, text, source, created in evidence:
            out[delta_id].append(Trigger(_text(text), source, parse_time(created)))
        return {i: tuple(ts) for i, ts in out.items()}

    # ----------------------------------------------------------------------------------- facts

    def put_fact(
        self, namespace: str, key: str, value: Any, *, scope: str = "user", provenance: Provenance | None = None
    ) -> Undo:
        """Tier 0: set a value a tool can read. The previous value is kept as `superseded`."""
        for name, text in (("namespace", namespace), ("key", key), ("scope", scope)):
            if not isinstance(text, str) or not text.strip():
                raise StoreError(f"fact {name} must be a non-empty string")
        try:
            encoded = dumps(value)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"fact {namespace}/{key}: value is not JSON-serialisable ({exc})") from exc
        prov = provenance or Provenance()
        steps = []
        with self.transaction():
            old = self.conn.execute(
                "SELECT id FROM learned_facts WHERE namespace = ? AND key = ? AND scope = ? AND status = 'current'",
                (namespace, key, scope),
            ).fetchone()
            sealed = []
            if old:
                if self._fact_checked([old[0]]):  # a fact changed outside overlay_kit is never sealed over
                    sealed.append(old[0])
                self.conn.execute("UPDATE learned_facts SET status = 'superseded' WHERE id = ?", (old[0],))
                steps.append(("learned_facts", old[0], "status", "current", "superseded"))
            cur = self.conn.execute(
                "INSERT INTO learned_facts (namespace, key, value, scope, provenance, status, created_at) "
                "VALUES (?, ?, ?, ?, ?, 'current', ?)",
                (namespace, key, encoded, scope, dumps(prov.to_dict()), iso(utc_now())),
            )
            steps.append(("learned_facts", cur.lastrowid, "status", "retired", "current"))
            self._reseal_facts([*sealed, cur.lastrowid])
        return self._handle("put_fact", tuple(steps))

    _FACT_READ = f"SELECT {_FACT_COLUMNS}, seal FROM learned_facts"

    def _fact_refusal(self, row: tuple, sealer: RowSealer | None) -> str | None:
        """None when a fact row as read (`_FACT_COLUMNS`, then its seal) may be used; else the note's text."""
        if not self._bound_ids:
            return None
        if (
            sealer is None
            or not isinstance(row[-1], bytes)
            or not hmac.compare_digest(sealer.fact_seal(row[:-1]), row[-1])
        ):
            return (
                f"fact {row[1]}/{row[2]} ({row[4]}, row {row[0]}): seal does not verify: left out (changed "
                "outside overlay_kit?)"
            )
        return None

    def _fact_sealer(self) -> RowSealer | None:
        return self._read_sealer() if self._bound_ids else None

    def _fact_checked(self, ids: Sequence[int]) -> list[int]:
        """Of fact row ids, those whose seals verify (the others noted), before a write changes them."""
        if not self._bound_ids or not ids:
            return list(ids)
        sealer = self._write_sealer()
        rows = self.conn.execute(f"{self._FACT_READ} WHERE id IN ({', '.join('?' * len(ids))})", list(ids))
        return [row[0] for row in self._usable(rows, self._fact_refusal, sealer)]

    def _reseal_facts(self, ids: Sequence[int]) -> None:
        """Inside a write's transaction: seal each fact row as it now stands (rows checked before the write)."""
        if not self._bound_ids or not ids:
            return
        sealer = self._write_sealer()
        self._bump = True
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM learned_facts WHERE id IN ({', '.join('?' * len(ids))})", list(ids)
        ).fetchall()
        self.conn.executemany(
            "UPDATE learned_facts SET seal = ? WHERE id = ?", [(sealer.fact_seal(r), r[0]) for r in rows]
        )

    def _fact_rows(self, where: str, args: Sequence) -> list[tuple]:
        """Fact rows (`_FACT_COLUMNS` + seal) that may be used; a row whose seal does not verify is left out
        with a note (`integrity_notes`)."""
        if self._bound_ids:
            rows = self.conn.execute(f"{self._FACT_READ} {where}", args).fetchall()
        else:
            rows = [(*r, None) for r in self.conn.execute(f"SELECT {_FACT_COLUMNS} FROM learned_facts {where}", args)]
        if not rows:
            return rows
        return self._usable(rows, self._fact_refusal, self._fact_sealer())

    def get_fact(self, namespace: str, key: str, default: Any = None, scope: str = "user") -> Any:
        """A current fact's value; `default` when there is none, or when its row's seal does not verify (noted)."""
        rows = self._fact_rows(
            "WHERE namespace = ? AND key = ? AND scope = ? AND status = 'current'", (namespace, key, scope)
        )
        return default if not rows else json.loads(rows[0][3])

    def facts(self, namespace: str | None = None) -> list[Fact]:
        """Current facts, by (namespace, key, scope). A fact whose seal does not verify is left out, noted."""
        where, args = "WHERE status = 'current'", []
        if namespace is not None:
            where += " AND namespace = ?"
            args.append(namespace)
        rows = self._fact_rows(where + " ORDER BY namespace, key, scope", args)
        return [
            Fact(ns, k, json.loads(v), sc, Provenance.from_dict(json.loads(p)), parse_time(c), i)
            for i, ns, k, v, sc, p, _status, c, _seal in rows
        ]

    # ------------------------------------------------------------------------------ base registry

    def register_base(self, skill) -> BaseChange:
        """Record the base a session sees. A new history row when root, version or body changed. The root is
        `skill.root_key` (label and directory); a row holding the label alone (written before roots were keyed
        by directory) is the same root, and takes the key."""
        now = iso(utc_now())
        root = skill.root_key
        with self.transaction():
            row = self.conn.execute(
                "SELECT id, root, version, body_digest FROM skill_bases WHERE name = ? ORDER BY id DESC LIMIT 1",
                (skill.name,),
            ).fetchone()
            digest = skill.body_digest
            if row is not None and row[1] == skill.root and root != skill.root:  # a label-only row: same root
                row = (row[0], root, row[2], row[3])
                self.conn.execute("UPDATE skill_bases SET root = ? WHERE id = ?", (root, row[0]))
            if row is not None and (row[1], row[2], row[3]) == (root, skill.version, digest):
                self.conn.execute("UPDATE skill_bases SET last_seen_at = ? WHERE id = ?", (now, row[0]))
                return BaseChange(skill.name, root, digest, digest, skill.version, False, row[1], row[2])
            self.conn.execute(
                "INSERT INTO skill_bases (name, root, version, body_digest, seen_at, last_seen_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (skill.name, root, skill.version, digest, now, now),
            )
        if row is None:
            return BaseChange(skill.name, root, None, digest, skill.version, False)
        return BaseChange(skill.name, root, row[3], digest, skill.version, True, row[1], row[2])

    def base_history(self, name: str) -> list[dict]:
        rows = self.conn.execute(
            "SELECT root, version, body_digest, seen_at, last_seen_at FROM skill_bases WHERE name = ? ORDER BY id",
            (name,),
        )
        return [dict(zip(("root", "version", "body_digest", "seen_at", "last_seen_at"), r)) for r in rows]

    # --------------------------------------------------------------------------- outcome ledger

    def record_outcome(
        self, delta_id: str, *, session: str, signal: str, positive: bool, turn: str = "", at: datetime | None = None
    ) -> bool:
        """Ledger one user-observable outcome for a delta and bump its counters. A repeat of the same
        (delta, session, turn, signal) is ignored and returns False."""
        if not signal or not session:
            raise StoreError("an outcome needs a session and a signal")
        with self.transaction():
            self.get(delta_id)
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO delta_outcomes (delta_id, session, turn, signal, positive, at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (delta_id, session, str(turn), signal, int(bool(positive)), iso(at or utc_now())),
            )
            if cur.rowcount == 0:
                return False
            self.conn.execute(
                "UPDATE skill_deltas SET attempt_count = attempt_count + 1, "
                "success_count = success_count + ? WHERE id = ?",
                (int(bool(positive)), delta_id),
            )
            self._reseal([delta_id])
        return True

    def outcomes(self, delta_id: str | None = None) -> list[Outcome]:
        sql = "SELECT delta_id, session, turn, signal, positive, at FROM delta_outcomes"
        rows = (
            self.conn.execute(sql + " WHERE delta_id = ? ORDER BY id", (delta_id,))
            if delta_id
            else self.conn.execute(sql + " ORDER BY id")
        )
        return [Outcome(d, s, t, g, bool(p), parse_time(a)) for d, s, t, g, p, a in rows]

    def counts(self) -> dict[str, int]:
        """Delta rows per status (for status lines and tests)."""
        return dict(self.conn.execute("SELECT status, count(*) FROM skill_deltas GROUP BY status"))

    # ---------------------------------------------------------------- read-only exports (the KPI studies)

    # name → the query behind it: the tables the KPIs read (overlay_kit.studies.kpis), in a fixed order.
    EXPORTS: ClassVar[dict[str, str]] = {
        "deltas": "SELECT id, base_name AS skill, scope, kind, tier, status, success_count, attempt_count, "
        "superseded_by, resident, json_extract(anchor, '$.section') AS section, "
        "json_extract(provenance, '$.source') AS source, payload FROM skill_deltas ORDER BY created_at, id",
        "audit": "SELECT seq, delta_id, who, from_status, to_status, reason FROM delta_audit ORDER BY seq",
        "outcomes": "SELECT id, delta_id, session, turn, signal, positive, at FROM delta_outcomes ORDER BY id",
        "signals": "SELECT id, session, turn, signal, positive, rating, scope, skill, section, lesson, attributed, "
        "at FROM turn_signals ORDER BY id",
        "context": "SELECT session, turn, delta_id, role, at FROM turn_context ORDER BY id",
        "promotions": "SELECT id, delta_id, decision, successes, attempts, score, threshold, min_samples, wilson, "
        "ledger_seq, at FROM promotion_log ORDER BY id",
        "consolidations": "SELECT umbrella_id, members, skill, section, embedding_sim, bigram_sim FROM "
        "consolidations ORDER BY proposed_at, umbrella_id",
        "facts": "SELECT namespace, key, value, scope, status, json_extract(provenance, '$.source') AS source "
        "FROM learned_facts ORDER BY id",
    }

    def export(self, name: str) -> tuple[list[str], list[tuple]]:
        """One table of `EXPORTS` as (column names, rows); nothing is written."""
        if name not in self.EXPORTS:
            raise StoreError(f"unknown export {name!r}; exports are {', '.join(self.EXPORTS)}")
        cur = self.conn.execute(self.EXPORTS[name])
        return [c[0] for c in cur.description], cur.fetchall()

    # ------------------------------------------------ table families (classes below) and whole-table reads

    @cached_property
    def evidence(self) -> EvidenceLedger:
        """Turn context, turn signals, promotion log, consolidations."""
        return EvidenceLedger(self)

    @cached_property
    def memories(self) -> MemoryTables:
        """User memories and memory runs."""
        return MemoryTables(self)

    @cached_property
    def knowledge(self) -> KnowledgeTables:
        """Knowledge documents and their events."""
        return KnowledgeTables(self)

    @cached_property
    def prompts(self) -> PromptTables:
        """Prompt versions and agents' active instructions."""
        return PromptTables(self)

    @cached_property
    def packages(self) -> PackageTables:
        """Uploaded skill packages and their files."""
        return PackageTables(self)

    @cached_property
    def task_log(self) -> TaskLog:
        """Surface signals, message feedback, trace steps, deliverables."""
        return TaskLog(self)

    def table_digest(self, tables: Iterable[str]) -> str:
        """sha256 over every row of the named tables, in order: equal digests mean none of them changed."""
        known = {n for (n,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        h = hashlib.sha256()
        for table in tables:
            if table not in known:
                raise StoreError(f"{self.path}: no table {table!r}")
            h.update(table.encode())
            for row in self.conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2"):
                h.update(repr(tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)).encode())
        return h.hexdigest()
