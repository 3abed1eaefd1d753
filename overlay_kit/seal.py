"""Seals: proof that a delta row came through the gates, and that an undo handle came from the store. `gates`
mints one for each delta (or batch of deltas) it writes; `store` verifies it on insert, so a row built by hand
cannot enter the overlay. Its own module because both sides need it and the store sits below the gates.

A seal is an HMAC-SHA-256 (the key lives in this process only) of the sealed deltas: every field the store
writes from a delta — its identity, status, counters and times as one JSON list, then its encoded columns
(`columns`: the canonical JSON the store writes, encoded once per delta and kept on it, as
`Delta.shaped_payload` is). `mint` seals one delta, `mint_batch` a whole batch in one hash.

A seal also says whether the gates validated the payload (`validated=True`): its kind, its shape in canonical
form and its caps, exactly what `grammar.validate_payload` checks (`gates` claims it only where its rules did
that: the standard `RULES`). The claim is inside the hash, so it cannot be added to a seal minted without it;
the store then need not validate the payload again (`sealed_validated`).

Seals at rest (`RowSealer`): every stored delta row carries a MAC of the fields that decide what a session sees
(its `seal` column), keyed by a secret kept outside the database file: `key_path()` — `$OVERLAY_KIT_KEY_FILE`,
else `${XDG_CONFIG_HOME:-~/.config}/overlay_kit/seal.key` — 32 random bytes created on first use with mode 0600.
A process that can write the database file but not read that file cannot make a changed or hand-made row verify.
The store seals each row it writes and verifies every row it reads (docs/reliability.md: the threat model)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Sequence
from datetime import timezone
from functools import lru_cache
from itertools import chain
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

from .common import dumps, iso
from .grammar import Delta

__all__ = ["KEY_ENV", "Columns", "RowSealer", "SealKeyError", "columns", "columns_of", "key_path", "mint", "mint_batch",
           "mint_learn_undos", "mint_undo", "row_sealer", "sealed_validated", "verify_batch", "verify_seal",
           "verify_undo"]


_SEAL_KEY = secrets.token_bytes(32)  # per process; never stored
# Copied for each MAC (the same digest, less set-up). A seal hashes a batch's text (kilobytes a row): SHA-256, which
# OpenSSL runs on the CPU's SHA instructions, 2.5x faster there; an undo token, ~100 bytes: BLAKE2b's set-up is less.
_SEALING = hmac.new(_SEAL_KEY, digestmod="sha256")
_KEYED = hashlib.blake2b(key=_SEAL_KEY, digest_size=32)
_LOOSE = json.JSONEncoder(ensure_ascii=False, default=str)  # for values that are not strict JSON (seal only)
_HEAD = json.JSONEncoder(ensure_ascii=False, default=str, check_circular=False)  # `_SEALED_FIELDS`: no cycles
_VALIDATED, _UNCHECKED = b"V", b"-"  # a seal's first byte: the payload claim, also hashed


class Columns(NamedTuple):
    """A delta's encoded columns, as the store writes them (`payload` is None when it is not strict JSON: the
    store then encodes, and refuses, it itself)."""

    anchor: str
    payload: str | None
    provenance: str
    created_at: str
    findings: str


try:  # the C encoder `dumps` builds on each call (the same output: canonical JSON), built once per batch
    from json.encoder import c_make_encoder, encode_basestring
except ImportError:  # pragma: no cover - no C accelerator
    c_make_encoder = None


def _payload_encoder():
    """`dumps` for a batch's payloads: one C encoder (cycle checks kept: it has its own markers)."""
    if c_make_encoder is None:  # pragma: no cover
        return dumps
    encode = c_make_encoder({}, None, encode_basestring, None, ":", ",", True, False, False)
    return lambda payload: "".join(encode(payload, 0))


@lru_cache(maxsize=4096)
def _anchor_json(section: str, digest: str) -> str:
    return dumps({"section": section, "digest": digest})


def columns(delta: Delta) -> Columns:
    """The delta's encoded columns, computed once per delta object (a frozen value: `evolve` makes a new one)."""
    return columns_of((delta,))[0]


def columns_of(deltas: Sequence[Delta]) -> list[Columns]:
    """`columns` of each delta (a batch: provenances and anchors shared by its rows are encoded once)."""
    out = []
    shared: dict[int, str] = {}  # id of a provenance or anchor object → its JSON, for this call (they outlive it)
    seconds: dict[tuple, str] = {}
    utc, new, encode = timezone.utc, tuple.__new__, None
    for d in deltas:
        fields = d.__dict__
        cached = fields.get("_columns")
        if cached is None:
            encode = encode or _payload_encoder()
            try:
                text = encode(d.payload)
            except (TypeError, ValueError):  # not strict JSON
                text = None
            prov, anchor, when = d.provenance, d.anchor, d.created_at
            provenance = shared.get(id(prov))
            if provenance is None:
                provenance = shared[id(prov)] = dumps(prov.to_dict())
            anchor_text = shared.get(id(anchor))
            if anchor_text is None:
                anchor_text = shared[id(anchor)] = _anchor_json(anchor.section, anchor.digest)
            if when.tzinfo is utc:  # `iso`'s text, its part to the second shared by a batch's rows
                second = (when.year, when.month, when.day, when.hour, when.minute, when.second)
                head = seconds.get(second)
                if head is None:
                    head = seconds[second] = when.replace(microsecond=0, tzinfo=None).isoformat()
                created = f"{head}.{when.microsecond:06d}+00:00"
            else:
                created = iso(when)
            findings = d.findings
            cached = fields["_columns"] = new(Columns, (anchor_text, text, provenance, created,
                                                        dumps(list(findings)) if findings else "[]"))
        out.append(cached)
    return out


_SEALED_FIELDS = attrgetter("id", "skill", "kind", "scope", "base_root", "status", "anchor.base_version",
                            "success_count", "attempt_count", "superseded_by", "approved_at", "last_used_at")


def _sealed_text(deltas: Sequence[Delta]) -> str:
    """What a seal covers: the deltas' identities, statuses, counters and times as one JSON list of columns (a
    field's value for each delta, or `{"all": value}` where every delta holds that one value: a batch's rows
    share most of them), then a NUL and the encoded columns of each delta, NUL-separated. JSON and ISO text
    hold no raw NUL, so no two batches give the same text."""
    n, head = len(deltas), []
    for values in zip(*map(_SEALED_FIELDS, deltas)):  # each delta read once (a batch's objects span megabytes)
        first = values[0]
        # one value: equal, and encoded alike (0, 0.0 and False are equal, not alike; str subclasses are alike)
        one = values.count(first) == n and (first is None or isinstance(first, str) or
                                            len(set(map(type, values))) == 1)
        head.append({"all": first} if one else values)
    cols = columns_of(deltas)
    if any([c.payload is None for c in cols]):  # not strict JSON: the seal reads it as loose JSON
        cols = [c if c.payload is not None else c._replace(payload=_LOOSE.encode(d.payload))
                for d, c in zip(deltas, cols)]
    return "\x00".join(chain((_HEAD.encode(head),), chain.from_iterable(cols)))


def _seal(kind: bytes, deltas: Sequence[Delta], validated: bool) -> bytes:
    claim = _VALIDATED if validated else _UNCHECKED
    h = _SEALING.copy()
    h.update(claim + kind + _sealed_text(deltas).encode("utf-8", "surrogatepass"))
    return claim + h.digest()


def mint(delta: Delta, *, validated: bool = False) -> bytes:
    """The seal the gates give a delta they passed (the store accepts no row without it). `validated=True`
    only where the gates checked its payload as `grammar.validate_payload` does."""
    return _seal(b"1\x00", (delta,), validated)


def mint_batch(deltas: Sequence[Delta], *, validated: bool = False) -> bytes:
    """One seal for a batch of deltas, in order (`Store._insert_deltas` takes the batch with it): one hash."""
    return _seal(b"n\x00", deltas, validated)


def _verify(kind: bytes, deltas: Sequence[Delta], seal) -> bool:
    return isinstance(seal, bytes) and seal[:1] in (_VALIDATED, _UNCHECKED) and \
        hmac.compare_digest(seal, _seal(kind, deltas, seal[:1] == _VALIDATED))


def verify_seal(delta: Delta, seal: bytes) -> bool:
    """True when `seal` was minted by `mint` in this process for exactly this delta (the store checks it on insert)."""
    return _verify(b"1\x00", (delta,), seal)


def verify_batch(deltas: Sequence[Delta], seal: bytes) -> bool:
    """True when `seal` was minted by `mint_batch` in this process for exactly these deltas, in this order."""
    return _verify(b"n\x00", deltas, seal)


def sealed_validated(seal: bytes) -> bool:
    """Whether a (verified) seal says the gates validated the payload."""
    return seal[:1] == _VALIDATED


def _undo_bytes(op: str, steps, ids) -> bytes:
    # repr of (str, tuples of str / None / numbers): unambiguous, and the store mints and checks the same tuples
    return repr(("undo", op, steps, ids)).encode("utf-8", "surrogatepass")


def _mac(data: bytes) -> bytes:
    h = _KEYED.copy()
    h.update(data)
    return h.digest()


def mint_undo(op: str, steps, ids) -> bytes:
    """The token the store gives each undo handle it issues: a hand-built `Undo` cannot be applied."""
    return _mac(_undo_bytes(op, steps, ids))


def mint_learn_undos(deltas: Sequence[tuple[str, str]]) -> list[bytes]:
    """For each (delta id, status) of a batch of learned deltas, the token of its undo handle: what
    `mint_undo("learn", (("skill_deltas", delta_id, "status", "archived", status),), (delta_id,))` gives."""
    fill = _learn_undo_format().format
    statuses = {status: repr(status) for status in {status for _, status in deltas}}  # a batch has one or two
    return [_mac(fill(repr(delta_id), statuses[status]).encode("utf-8", "surrogatepass"))
            for delta_id, status in deltas]


@lru_cache(maxsize=1)
def _learn_undo_format() -> str:
    """`_undo_bytes` of a learn's undo as text, with its delta id and status (each written as its repr) as
    format fields."""
    return _undo_bytes("learn", (("skill_deltas", "\0", "status", "archived", "\1"),), ("\0",)).decode() \
        .replace(repr("\0"), "{0}").replace(repr("\1"), "{1}")


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
