"""One SQLite file for the learned overlay: deltas, tier-0 facts, base registry, outcomes, audit, schema history.

Public API (other modules code against exactly this; grow it, don't rename it)::

    with Store.open(path, research=False, auto_approve=False) as store:   # or default_db_path()
        store.conn                                   # the sqlite3 connection: tests and diagnostics only;
                                                     #    no other module runs SQL (tests/test_layering.py)
        store.get(id) -> Delta                       # StoreError if unknown; SealError if its row may not be used
        store.integrity_notes                        # list[str]: each row left out, and why (`SealError`'s text)
        store.search(skill=None, scope=None, status=None, *, include_superseded=False, limit=None)
                                                     # -> list[Delta] in Delta.sort_key order; `limit` keeps
                                                     #    the NEWEST rows, and there is no default limit
        store.iter_deltas(skill=None, scope=None, status=None, *, include_superseded=False, after=None,
                          limit=None) -> Iterator[Delta]   # search's rows in the order written (rowid),
                                                     #    read a page at a time; `after` ID: keyset paging
        store.approve(id, who="user") -> Undo        # staged|quarantined|orphaned -> active (consent gate)
        store.approve_many(ids, who="user") -> Undo  # the same for many ids: one transaction, one handle
        store.revert(id, who="user") -> Undo         # -> archived (never deleted)
        store.reset(skill, who="user") -> Undo       # archive every live delta of a skill
        store.supersede(old_ids, new_id, who=...) -> Undo   # lineage; rows kept
        store.set_status(id, status, *, who, reason) -> Undo  # rebase / budget transitions
        store.set_anchor(id, anchor, *, who, reason) -> Undo  # rebase: re-key a delta's Anchor (section,
                                                     #    digest, base_version); audited, status unchanged
        store.touch(ids, when=None) -> Undo          # last_used_at
        store.set_resident(ids, resident, *, who, reason) -> Undo   # budget: retrieval-only or resident
        store.retrieval_only(skill=None) -> frozenset[str]          # ids demoted to retrieval-only
        store.on_change(callback)                    # callback(changed_ids: list[str]) after each commit
                                                     #    that changed a delta's state (the budget hook)
        store.undo(handle)                           # reverse any Undo (refused if the rows moved on since)
        store.forget(*, skill=None, scope=None, all=False) -> int   # TRUE erasure; see below
        store.erasure_pending; store.erasure_where   # a reader stopped the checkpoint: which files hold the text
        store.on_forget(callback)                    # callback(erased_ids: list[str]) after each forget
        store.audit(delta_id=None) -> list[AuditEntry]   # append-only: who, when (UTC), from -> to, reason
        store.set_embedding(id, vector, embedder_id); store.embeddings(embedder_id) -> (ids, float32 matrix)
        store.embedder_id; store.invalidate_embeddings(new_embedder_id)
        store.add_triggers([(delta_id, text, source), ...], *, at=None) -> list[(delta_id, text, source)]
                                                     #    tier-3 evidence triggers: the goals a lesson was
                                                     #    taught | restated | corrected | accepted at; a text
                                                     #    it has already is ignored; returns the rows added
        store.triggers(ids) -> {id: (text, ...)}     # its payload trigger first, then evidence by time
        store.trigger_records(ids) -> {id: (Trigger(text, source, at), ...)}   # the same, with source and time
        store.put_fact(namespace, key, value, *, scope="user", provenance) -> Undo
        store.get_fact(namespace, key, default=None, scope="user"); store.facts(namespace=None) -> list[Fact]
        store.register_base(skill) -> BaseChange     # name, root, version, body digest; history rows kept
        store.record_outcome(delta_id, *, session, turn="", signal, positive, at=None) -> bool
        store.outcomes(delta_id=None) -> list[Outcome]
        store.transaction()                          # context manager: batch many writes in one commit
        store.authored_tokens(body); store.line_tokens({key: line})  # token counts kept by digest / delta id
        store.table_digest(tables) -> str            # sha256 over every row of the named tables
        store.lesson_records(skill=None) -> list[dict]   # verified rows with their audit (overlay_kit.portable)
        store.key_sealer(); store.known_ids(ids)     # the key's unbound sealer (export MACs); ids held here
    Store.open(..., accept_unsealed=False, accept_rollback=False)   # see below: downgrades and older copies

    One small class per family of the other tables (overlay_kit.store.surfaces), exposed on the store:

        store.evidence    # EvidenceLedger: turn_context, turn_signals, promotion_log, consolidations
        store.memories    # MemoryTables: user_memories, memory_runs
        store.knowledge   # KnowledgeTables: knowledge_docs, knowledge_events
        store.prompts     # PromptTables: prompt_versions, agents
        store.packages    # PackageTables: skill_packages, skill_package_files
        store.task_log    # TaskLog: surface_signals, message_feedback, task_traces, task_deliverables

Deltas enter only through `overlay_kit.gates.learn`: the store encodes a new delta's row (`_new_rows`), the gates
seal exactly that row, and the private insert checks the seal, so a write that bypasses the gates (or edits a row
after they passed it) raises `GateBypassError`.

Seals at rest: every `skill_deltas` row carries a MAC (`seal` column) of the fields that decide what a session
sees (`seal.SEALED_COLUMNS`: identity, anchor, canonical payload, provenance, scope, status, tier, lineage, times,
counters, residency, findings, and who approved it), keyed by a secret outside the file (`seal.key_path()`).
Every write seals the rows it changed, in its transaction, after checking their seals first (a legitimate write
never seals over a change made outside overlay_kit). Every read of deltas checks them: a row whose seal does not
verify, or an active row of untrusted provenance without a recorded approval, is left out with a note naming it
(`integrity_notes`, logged as an error), and `get` raises `SealError` for it, so no write starts from it; only
`forget` removes it. Since schema 12 every seal hashes the database's identity (a random id in `overlay_meta`),
facts are sealed too, and a seal counter advances with every write that seals or erases rows; the highest one
committed is recorded beside the key, so an older copy of the file is refused (`RollbackError`), as is a file
from before the seals that presents itself as a sealed database (`UnsealedStoreError`); with sealed rows and no
key (or another one) nothing is read or written and no key is made (`LostKeyError`). docs/reliability.md states
the threat model. Evidence triggers (`delta_triggers`) are not sealed: they change when an approved lesson applies,
never what it says (core.py's docstring says why that is enough).

Learning operations never DELETE: revert/reset/supersede/undo change status or lineage, and every state
change appends an audit row in the same transaction. Only `forget` deletes — rows, their vectors, their
outcomes, evidence triggers and audit rows — with `secure_delete` on, then the file rewritten (VACUUM: no stale
copy of a row SQLite moved survives in a page gap) and a TRUNCATE checkpoint, so the erased text is left in no
page of the file or its WAL (`finish_erasure`); registered `on_forget` hooks (the FAISS index) are purged too.

The schema is the ordered `MIGRATIONS` list; each applied migration appends one `schema_history` row (never
updated). Opening an older database applies the missing migrations with CREATE / ALTER ... ADD, and no
existing column is rewritten; migration 8 fills the two columns it adds (`approved_by`, `seal`) of the rows it
finds (`_seal_found_rows`). Before any write, `open` looks read-only: a path that is not a regular file (a FIFO,
socket, device or directory: `NotAFileError`, found with stat, never opened), a database from a newer
overlay_kit, another program's (a GAIA memory.db, which has its own `skill_deltas`), or one holding schema
objects overlay_kit did not create (a planted trigger or view: `SchemaObjectError`) is refused with no byte
changed (`read_gaia_deltas` reads GAIA's rows). A fault of the medium (disk full: `DiskFullError`, read-only:
`ReadOnlyError`, I/O) is a `StoreError` naming the path, with the transaction rolled back; `readonly=True` opens
read-only media for reading, and `create=False` refuses a missing file ("no database at PATH") instead of
creating it. A file that is not SQLite, or is corrupt, raises `StoreError` naming the path and is never written
to; a row that breaks its table's constraints (written by hand) is not a corrupt file: it is left out where
read. Connections use WAL, a busy timeout, foreign keys and `synchronous=NORMAL` (a killed process loses
nothing committed; a power cut may lose the last commits but never corrupts). All timestamps are UTC ISO-8601 with microseconds, so they sort as text.

The package, one file per concern (this file re-exports the public names above)::

    errors.py     StoreError and its kinds
    schema.py     MIGRATIONS (the DDL by version), the schema history, and the helpers that read that DDL
    files.py      the database file: default_db_path, what a path holds before it is opened for writing, faults
                  of the medium (disk full, read-only), read_gaia_deltas
    surfaces.py   the table families: EvidenceLedger, MemoryTables, KnowledgeTables, PromptTables, PackageTables,
                  TaskLog and the row values they return
    core.py       Store, and the value objects its methods return (Undo, AuditEntry, Fact, BaseChange, Outcome)
"""

from __future__ import annotations

from .core import AuditEntry, BaseChange, Fact, Outcome, Store, Trigger, Undo
from .errors import (
    DiskFullError,
    GateBypassError,
    LostKeyError,
    NotAFileError,
    ReadOnlyError,
    RollbackError,
    SchemaObjectError,
    SealError,
    StoreError,
    UnsealedStoreError,
)
from .files import default_db_path, read_gaia_deltas
from .schema import MIGRATIONS, Migration
from .surfaces import (
    Deliverable,
    Document,
    EvidenceLedger,
    Feedback,
    Heading,
    KnowledgeTables,
    Memory,
    MemoryDecision,
    MemoryRun,
    MemoryTables,
    PackageTables,
    PromptTables,
    PromptVersion,
    StoredSignal,
    TaskLog,
    TraceStep,
)

__all__ = [
    "MIGRATIONS",
    "AuditEntry",
    "BaseChange",
    "MemoryDecision",
    "Deliverable",
    "DiskFullError",
    "Document",
    "EvidenceLedger",
    "Fact",
    "Feedback",
    "GateBypassError",
    "Heading",
    "LostKeyError",
    "KnowledgeTables",
    "Memory",
    "MemoryRun",
    "MemoryTables",
    "Migration",
    "NotAFileError",
    "Outcome",
    "PackageTables",
    "PromptTables",
    "PromptVersion",
    "ReadOnlyError",
    "RollbackError",
    "SchemaObjectError",
    "SealError",
    "Store",
    "StoreError",
    "StoredSignal",
    "TaskLog",
    "TraceStep",
    "Trigger",
    "Undo",
    "UnsealedStoreError",
    "default_db_path",
    "read_gaia_deltas",
]
