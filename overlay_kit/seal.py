"""Seals: proof that a delta row came through the gates, and that an undo handle came from the store. `gates` mints one for each delta it writes; `store`
verifies it on insert, so a row built by hand cannot enter the overlay. Its own module because both sides need
it and the store sits below the gates.

A seal is a keyed BLAKE2b hash of the delta's identity and of its encoded columns (`columns`: the canonical JSON
the store writes), encoded once per delta and kept on it (as `Delta.shaped_payload` is), so minting, verifying
and inserting a row encode it once."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import timezone
from functools import lru_cache
from typing import NamedTuple

from .common import dumps, iso
from .grammar import Delta, Provenance

__all__ = ["Columns", "columns", "mint", "mint_undo", "verify_seal", "verify_undo"]


_SEAL_KEY = secrets.token_bytes(32)  # per process; never stored
_LOOSE = json.JSONEncoder(ensure_ascii=False, default=str)  # for values that are not strict JSON (seal only)


class Columns(NamedTuple):
    """A delta's encoded columns, as the store writes them (`payload` is None when it is not strict JSON: the
    store then encodes, and refuses, it itself)."""

    anchor: str
    payload: str | None
    provenance: str
    created_at: str
    findings: str


try:  # one C encoder for every payload: `dumps` builds a new one per call (same output: canonical JSON)
    from json.encoder import c_make_encoder, encode_basestring

    _ENCODE = c_make_encoder(None, None, encode_basestring, None, ":", ",", True, False, False)
except (ImportError, TypeError):  # pragma: no cover - no C accelerator
    _ENCODE = None


def _payload_json(payload) -> str:
    """`dumps(payload)` for a payload the grammar shaped (a flat mapping of JSON scalars: no cycle to watch)."""
    if _ENCODE is None or type(payload) is not dict or not all(type(v) in _SCALARS for v in payload.values()):
        return dumps(payload)
    return "".join(_ENCODE(payload, 0))


_SCALARS = {str, int, bool}


@lru_cache(maxsize=4096)
def _anchor_json(section: str, digest: str) -> str:
    return dumps({"section": section, "digest": digest})


@lru_cache(maxsize=1024)
def _provenance_json(provenance: Provenance) -> str:
    return dumps(provenance.to_dict())


def columns(delta: Delta) -> Columns:
    """The delta's encoded columns, computed once per delta object (a frozen value: `evolve` makes a new one)."""
    cached = delta.__dict__.get("_columns")
    if cached is None:
        try:
            payload = _payload_json(delta.payload)
        except (TypeError, ValueError):
            payload = None
        try:
            provenance = _provenance_json(delta.provenance)
        except TypeError:  # turns held in a list: not hashable
            provenance = dumps(delta.provenance.to_dict())
        when = delta.created_at
        # `iso`: a UTC instant with a microsecond part needs no `timespec` (half the cost; the same text)
        created = (when.isoformat() if when.microsecond else when.isoformat(timespec="microseconds")) \
            if when.tzinfo is timezone.utc else iso(when)
        findings = dumps(list(delta.findings)) if delta.findings else "[]"
        cached = Columns(_anchor_json(delta.anchor.section, delta.anchor.digest), payload, provenance, created,
                         findings)
        delta.__dict__["_columns"] = cached
    return cached


@lru_cache(maxsize=1024)
def _head(*fields) -> str:
    return _LOOSE.encode(fields)


def _seal_bytes(delta: Delta) -> bytes:
    """The delta's identity (one JSON list) and its encoded columns, NUL-separated (JSON text holds no raw NUL,
    so no two deltas give the same bytes); encoded once per delta object, like its columns."""
    cached = delta.__dict__.get("_seal_bytes")
    if cached is None:
        c = columns(delta)
        head = _head(delta.skill, delta.kind, delta.scope, delta.base_root, delta.status, delta.anchor.base_version)
        payload = c.payload if c.payload is not None else _LOOSE.encode(delta.payload)
        cached = "\x00".join((_LOOSE.encode(delta.id), head, c.anchor, payload, c.provenance, c.created_at,
                               c.findings)).encode("utf-8", "surrogatepass")
        delta.__dict__["_seal_bytes"] = cached
    return cached


def mint(delta: Delta) -> bytes:
    """The seal the gates give a delta they passed (the store accepts no row without it)."""
    return hashlib.blake2b(_seal_bytes(delta), key=_SEAL_KEY, digest_size=32).digest()


def verify_seal(delta: Delta, seal: bytes) -> bool:
    """True when `seal` was minted by `mint` in this process for exactly this delta (the store checks it on insert)."""
    return isinstance(seal, bytes) and hmac.compare_digest(seal, mint(delta))


def _undo_bytes(op: str, steps, ids) -> bytes:
    # repr of (str, tuples of str / None / numbers): unambiguous, and the store mints and checks the same tuples
    return repr(("undo", op, steps, ids)).encode("utf-8", "surrogatepass")


def mint_undo(op: str, steps, ids) -> bytes:
    """The token the store gives each undo handle it issues: a hand-built `Undo` cannot be applied."""
    return hashlib.blake2b(_undo_bytes(op, steps, ids), key=_SEAL_KEY, digest_size=32).digest()


def verify_undo(op: str, steps, ids, token) -> bool:
    return isinstance(token, bytes) and hmac.compare_digest(token, mint_undo(op, steps, ids))
