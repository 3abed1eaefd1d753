"""Seals: proof that a delta row came through the gates, and that an undo handle came from the store. `gates`
mints one for each batch of deltas it writes; `store` verifies it on insert, so a row built by hand cannot enter
the overlay. Its own module because both sides need it and the store sits below the gates.

Every MAC here is keyed BLAKE2b (32 bytes). A gate seal (`mint`) covers the rows the store will write
(`Store._new_rows`: the values of `SEALED_COLUMNS` of each new delta, encoded by the store), each read as a row
seal reads it, under a key that lives in this process only. It also says whether the gates validated the
payloads (`validated=True`): kind, shape in canonical form and caps, exactly what `grammar.validate_payload`
checks (`gates` claims it only where its rules did that: the standard `RULES`). The claim is inside the hash, so
it cannot be added to a seal minted without it; the store then need not validate the payload again
(`sealed_validated`).

Seals at rest (`RowSealer`): every stored delta row carries a MAC of the fields that decide what a session sees
(its `seal` column), keyed by a secret kept outside the database file: `key_path()` — `$OVERLAY_KIT_KEY_FILE`,
else `${XDG_CONFIG_HOME:-~/.config}/overlay_kit/seal.key` — 32 random bytes created on first use with mode 0600.
A process that can write the database file but not read that file cannot make a changed or hand-made row verify.
The store seals each row it writes and verifies every row it reads (docs/reliability.md: the threat model).

Since schema 12 every MAC at rest is bound to the database's identity (`RowSealer.bound(db_id)`: a random id
made with the database, kept in it and hashed into every seal), so a row copied from another database under the
same key does not verify; the same bound sealer seals `learned_facts` rows (`fact_seal`) and the database's
seal counter (`counter_seal`). Beside the key, in `registry_dir()`, one small file per database identity keeps
the highest seal counter that database has committed (and one per path it was sealed at): a file whose counter
is behind it is an older copy (`recorded_counter`, `record_counter`, `recorded_at`)."""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
import secrets
import threading
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "KEY_ENV",
    "SEALED_COLUMNS",
    "RowSealer",
    "SealKeyError",
    "key_path",
    "mint",
    "mint_undo",
    "record_counter",
    "recorded_at",
    "recorded_counter",
    "registry_dir",
    "row_sealer",
    "sealed_validated",
    "verify_seal",
    "verify_undo",
]


_KEYED = hashlib.blake2b(key=secrets.token_bytes(32), digest_size=32)  # per process; the key is never stored
_VALIDATED, _UNCHECKED = b"V", b"-"  # a gate seal's first byte: the payload claim, also hashed
_GATE_DOMAIN = b"overlay_kit gate seal 1\x00"


def _mac(data: bytes) -> bytes:
    h = _KEYED.copy()
    h.update(data)
    return h.digest()


def _rows_text(rows: Sequence[Sequence]) -> bytes:
    """The rows as a row seal reads them (`_ROW_TEXT`), one after another: no raw SOH inside a row's text."""
    return "\x01".join([_ROW_TEXT % tuple(row) for row in rows]).encode("utf-8", "surrogatepass")


def mint(rows: Sequence[Sequence], *, validated: bool = False) -> bytes:
    """The seal the gates give the new rows they passed (`Store._new_rows`; the store writes no row without
    one). `validated=True` only where the gates checked the payloads as `grammar.validate_payload` does."""
    claim = _VALIDATED if validated else _UNCHECKED
    return claim + _mac(_GATE_DOMAIN + claim + _rows_text(rows))


def verify_seal(rows: Sequence[Sequence], seal) -> bool:
    """True when `seal` was minted by `mint` in this process for exactly these rows, in this order."""
    return (
        isinstance(seal, bytes)
        and seal[:1] in (_VALIDATED, _UNCHECKED)
        and hmac.compare_digest(seal, mint(rows, validated=seal[:1] == _VALIDATED))
    )


def sealed_validated(seal: bytes) -> bool:
    """Whether a (verified) seal says the gates validated the payload."""
    return seal[:1] == _VALIDATED


def _undo_bytes(op: str, steps, ids) -> bytes:
    # repr of (str, tuples of str / None / numbers): unambiguous, and the store mints and checks the same tuples
    return repr(("undo", op, steps, ids)).encode("utf-8", "surrogatepass")


def mint_undo(op: str, steps, ids) -> bytes:
    """The token the store gives each undo handle it issues: a hand-built `Undo` cannot be applied."""
    return _mac(_undo_bytes(op, steps, ids))


def verify_undo(op: str, steps, ids, token) -> bool:
    return isinstance(token, bytes) and hmac.compare_digest(token, mint_undo(op, steps, ids))


# ------------------------------------------------------------------------------------------ seals at rest

KEY_ENV = "OVERLAY_KIT_KEY_FILE"
KEY_BYTES = 32


class SealKeyError(RuntimeError):
    """The at-rest seal key cannot be read or created (names its path)."""


def key_path() -> Path:
    """Where the at-rest seal key lives: `$OVERLAY_KIT_KEY_FILE`, else `${XDG_CONFIG_HOME:-~/.config}/overlay_kit/
    seal.key` (never inside a database)."""
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME")
    return (Path(config).expanduser() if config else Path.home() / ".config") / "overlay_kit" / "seal.key"


def _read_key(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(KEY_BYTES + 1)


def _load_key(path: Path) -> bytes:
    """The key at `path`, created when there is none (32 random bytes, mode 0600; two processes racing get one
    key: each links its own complete file into place, and the one that loses reads the winner's)."""
    try:
        key = _read_key(path)
    except FileNotFoundError:
        key = None
    except OSError as exc:
        raise SealKeyError(f"seal key {path}: cannot read it ({exc.strerror or exc})") from exc
    if key is None:  # written whole under a private name, then linked into place: no reader sees it half done
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, new := secrets.token_bytes(KEY_BYTES))
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, path)  # fails if another process linked its key first: that one is the key
                key = new
            except FileExistsError:
                key = _read_key(path)
        except OSError as exc:
            raise SealKeyError(f"seal key {path}: cannot create it ({exc.strerror or exc})") from exc
        finally:
            tmp.unlink(missing_ok=True)
    if len(key) != KEY_BYTES:
        raise SealKeyError(f"seal key {path}: holds {len(key)} bytes, not {KEY_BYTES}; refusing to use it")
    return key


# What a row seal covers, in this order: every `skill_deltas` column that decides what a session sees or what the
# consent gate shows (not last_used_at, the embedding or its embedder: they pick among approved rows only).
SEALED_COLUMNS = (
    "id",
    "base_name",
    "base_root",
    "base_version",
    "scope",
    "kind",
    "tier",
    "anchor",
    "payload",
    "provenance",
    "status",
    "success_count",
    "attempt_count",
    "superseded_by",
    "created_at",
    "approved_at",
    "findings",
    "resident",
    "approved_by",
)
_JSON_COLUMNS = {"anchor", "payload", "provenance", "findings"}
# The MAC's input: the columns NUL-separated, each JSON column as its text (canonical JSON holds no raw NUL),
# every other one as its repr (a string, a number or None, told apart; no raw NUL either), so no two rows read
# alike. Two more values may follow a row (last_used_at and the seal itself, as the store reads them): `%.0s`
# takes each and writes nothing.
_ROW_TEXT = "\x00".join("%s" if c in _JSON_COLUMNS else "%r" for c in SEALED_COLUMNS)
_ROW_TEXT_READ = _ROW_TEXT + "%.0s%.0s"
_ROW_DOMAIN = b"overlay_kit row seal 1\x00"


_BOUND_DOMAIN = b"overlay_kit row seal 2\x00"  # schema 12: the database's identity follows, then NUL
_FACT_COLUMNS = ("id", "namespace", "key", "value", "scope", "provenance", "status", "created_at")


class RowSealer:
    """Seals and checks `skill_deltas` rows with one key: keyed BLAKE2b (32 bytes) over `SEALED_COLUMNS`; bound to
    one database's identity (`bound`), also its facts, its seal counter and nothing else."""

    def __init__(self, key: bytes, path: Path | None = None, db_id: str | None = None):
        self.path = path
        self.db_id = db_id
        self._key = key
        h = hashlib.blake2b(key=key, digest_size=32)
        h.update(_ROW_DOMAIN if db_id is None else _BOUND_DOMAIN + db_id.encode("utf-8", "surrogatepass") + b"\x00")
        self._keyed = h
        self._verified: dict[bytes, tuple] = {}  # seal -> the sealed values it was checked against
        self._bound: dict[str, RowSealer] = {}

    def bound(self, db_id: str) -> "RowSealer":
        """The sealer of this key for the database whose identity is `db_id` (every MAC hashes it)."""
        sealer = self._bound.get(db_id)
        if sealer is None:
            sealer = self._bound[db_id] = RowSealer(self._key, self.path, db_id)
        return sealer

    @property
    def key_check(self) -> str:
        """A short public fingerprint of the key (a MAC of a constant): which key a database was sealed under."""
        return hashlib.blake2b(b"overlay_kit key check", key=self._key, digest_size=8).hexdigest()

    def _mac(self, what: bytes, text: str) -> bytes:
        h = self._keyed.copy()
        h.update(what + b"\x00" + text.encode("utf-8", "surrogatepass"))
        return h.digest()

    def fact_seal(self, values: Sequence) -> bytes:
        """The seal of a `learned_facts` row's `_FACT_COLUMNS` values."""
        return self._mac(b"fact", repr(tuple(values)))

    def counter_seal(self, counter: int) -> str:
        return self._mac(b"counter", str(int(counter))).hex()

    def export_mac(self, text: str) -> str:
        """A MAC of an exported record under the key alone (a same-user move to another database verifies)."""
        h = hashlib.blake2b(key=self._key, digest_size=32)
        h.update(b"overlay_kit export 1\x00" + text.encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def seal_many(self, rows: Sequence[Sequence]) -> list[bytes]:
        """The seal of each row's `SEALED_COLUMNS` values, as SQLite stores them (str, int or None)."""
        keyed, text = self._keyed, _ROW_TEXT
        out = []
        for values in rows:
            h = keyed.copy()
            h.update((text % tuple(values)).encode("utf-8", "surrogatepass"))
            out.append(h.digest())
        return out

    def verify(self, row: tuple) -> bool:
        """Whether a row as read (`SEALED_COLUMNS`, then last_used_at, then the seal) carries its own seal. A
        seal checked once against exactly these values is not hashed again (equal tuples: one comparison)."""
        stored = row[-1]
        if not stored or not isinstance(stored, bytes):  # NULL, or a seal written as text or a number by hand
            return False
        known = self._verified.get(stored)
        if known is not None and known == row[:-2]:
            return True
        h = self._keyed.copy()
        try:
            h.update((_ROW_TEXT_READ % row).encode("utf-8", "surrogatepass"))
        except (TypeError, ValueError):
            return False
        if not hmac.compare_digest(h.digest(), stored):
            return False
        if len(self._verified) >= 100_000:
            self._verified.clear()
        self._verified[stored] = row[:-2]
        return True


_SEALERS: dict[str, RowSealer] = {}


def row_sealer() -> RowSealer:
    """The `RowSealer` of the key at `key_path()` (read, or created, once per process and path).
    `SealKeyError` when it can be neither read nor created."""
    path = key_path()
    name = str(path)
    sealer = _SEALERS.get(name)
    if sealer is None:
        sealer = _SEALERS[name] = RowSealer(_load_key(path), path)
    return sealer


# ------------------------------------------------------------------------------- the registry beside the key


def registry_dir(path: Path | None = None) -> Path:
    """The folder beside the key (`<key>.stores`) holding one record per database this key sealed."""
    path = key_path() if path is None else path
    return path.with_name(path.name + ".stores")


def _path_name(db_path: str) -> str:
    return "path-" + hashlib.sha256(os.path.realpath(db_path).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _safe_id(db_id: str) -> bool:
    return 8 <= len(db_id) <= 64 and all(c in "0123456789abcdef" for c in db_id)


def recorded_counter(db_id: str) -> int | None:
    """The highest seal counter recorded for the database `db_id`; None when this key never sealed it."""
    if not _safe_id(db_id):
        return None
    try:
        text = (registry_dir() / f"db-{db_id}").read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise SealKeyError(f"seal registry {registry_dir()}: cannot read it ({exc.strerror or exc})") from exc
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


def recorded_at(db_path: str) -> str | None:
    """The identity of the database this key last sealed at `db_path` (its real path); None if none."""
    try:
        text = (registry_dir() / _path_name(db_path)).read_text().strip()
    except OSError:
        return None
    return text if _safe_id(text) else None


_OPEN_RECORDS: dict[str, int] = {}  # a record's path -> an open descriptor (a write is then four system calls)
_RECORDS_LOCK = threading.Lock()  # flock excludes processes, not threads sharing one descriptor


def _forget_records() -> None:
    """In a forked child: its own descriptors (an inherited one shares the parent's flock)."""
    for fd in _OPEN_RECORDS.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _OPEN_RECORDS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_records)


def _record_fd(name: str) -> int:
    fd = _OPEN_RECORDS.get(name)
    if fd is not None:
        return fd
    if len(_OPEN_RECORDS) >= 64:
        for old in list(_OPEN_RECORDS)[:32]:
            os.close(_OPEN_RECORDS.pop(old))
    Path(name).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = _OPEN_RECORDS[name] = os.open(name, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    return fd


def record_counter(db_id: str, counter: int, db_path: str | None = None, folder: Path | None = None) -> None:
    """Record that the database `db_id` committed seal counter `counter` (kept only if higher than the record:
    concurrent writers never move it back, under an exclusive lock), and, with `db_path`, that it lives there.
    `folder`: `registry_dir()` when not given. `OSError` on failure."""
    if not _safe_id(db_id):
        return
    folder = registry_dir() if folder is None else folder
    with _RECORDS_LOCK:
        fd = _record_fd(os.path.join(folder, f"db-{db_id}"))
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            old = os.pread(fd, 64, 0).split()
            try:
                known = int(old[0]) if old else -1
            except ValueError:
                known = -1
            if counter > known:  # fixed width: the new text covers the old one whole
                os.pwrite(fd, f"{int(counter):020d}\n".encode(), 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    if db_path is not None:
        name = folder / _path_name(db_path)
        try:
            if name.read_text().strip() == db_id:
                return
        except OSError:
            pass
        tmp = name.with_name(f".{name.name}.{os.getpid()}.{secrets.token_hex(4)}")
        tmp.write_text(db_id + "\n")
        os.replace(tmp, name)
