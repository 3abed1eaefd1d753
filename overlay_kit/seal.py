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
The store seals each row it writes and verifies every row it reads (docs/reliability.md: the threat model)."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

__all__ = ["KEY_ENV", "SEALED_COLUMNS", "RowSealer", "SealKeyError", "key_path", "mint", "mint_undo", "row_sealer",
           "sealed_validated", "verify_seal", "verify_undo"]


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
    return isinstance(seal, bytes) and seal[:1] in (_VALIDATED, _UNCHECKED) and \
        hmac.compare_digest(seal, mint(rows, validated=seal[:1] == _VALIDATED))


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
SEALED_COLUMNS = ("id", "base_name", "base_root", "base_version", "scope", "kind", "tier", "anchor", "payload",
                  "provenance", "status", "success_count", "attempt_count", "superseded_by", "created_at",
                  "approved_at", "findings", "resident", "approved_by")
_JSON_COLUMNS = {"anchor", "payload", "provenance", "findings"}
# The MAC's input: the columns NUL-separated, each JSON column as its text (canonical JSON holds no raw NUL),
# every other one as its repr (a string, a number or None, told apart; no raw NUL either), so no two rows read
# alike. Two more values may follow a row (last_used_at and the seal itself, as the store reads them): `%.0s`
# takes each and writes nothing.
_ROW_TEXT = "\x00".join("%s" if c in _JSON_COLUMNS else "%r" for c in SEALED_COLUMNS)
_ROW_TEXT_READ = _ROW_TEXT + "%.0s%.0s"
_ROW_DOMAIN = b"overlay_kit row seal 1\x00"


class RowSealer:
    """Seals and checks `skill_deltas` rows with one key: keyed BLAKE2b (32 bytes) over `SEALED_COLUMNS`."""

    def __init__(self, key: bytes, path: Path | None = None):
        self.path = path
        h = hashlib.blake2b(key=key, digest_size=32)
        h.update(_ROW_DOMAIN)
        self._keyed = h
        self._verified: dict[bytes, tuple] = {}  # seal -> the sealed values it was checked against

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
