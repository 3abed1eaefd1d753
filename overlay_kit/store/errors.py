"""The store's errors: every one a `StoreError`, so a caller catches one class; each names the path or delta id."""

from __future__ import annotations

__all__ = [
    "DiskFullError",
    "GateBypassError",
    "LostKeyError",
    "NotAFileError",
    "ReadOnlyError",
    "RollbackError",
    "SchemaObjectError",
    "SealError",
    "StoreError",
    "UnsealedStoreError",
]


class StoreError(RuntimeError):
    """The database cannot be used, or a store operation is not allowed. Names the path or delta id."""


class GateBypassError(StoreError):
    """A delta write that did not come through `overlay_kit.gates` (or was altered after it did)."""


class SealError(StoreError):
    """A stored delta row whose seal does not verify (changed outside overlay_kit), or an active untrusted row
    without a recorded approval: never read, never written."""


class LostKeyError(StoreError):
    """The database holds sealed rows but the seal key they were sealed under is not at `seal.key_path()` (deleted,
    or the database moved to another account or machine): names the path; no new key is made over them."""


class RollbackError(StoreError):
    """The file is an older copy of a database this key sealed (its seal counter is behind the one recorded
    beside the key): a restored backup or lost last commits. Names both counters; `accept_rollback=True` uses it."""


class UnsealedStoreError(StoreError):
    """A file from before the row seals that presents itself as a database this key sealed (its identity, or
    its path): not sealed as found unless `accept_unsealed=True`."""


class SchemaObjectError(StoreError):
    """The file holds a schema object (table, index, trigger, view) overlay_kit did not create: refused unopened."""


class NotAFileError(StoreError):
    """The database path (or its -wal, -shm or -journal file) is a directory, FIFO, socket or device."""


class DiskFullError(StoreError):
    """The medium is full: nothing was written."""


class ReadOnlyError(StoreError):
    """The database, or its folder, cannot be written."""
