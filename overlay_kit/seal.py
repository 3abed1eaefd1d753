"""Seals: proof that a delta row came through the gates, and that an undo handle came from the store. `gates` mints one for each delta it writes; `store`
verifies it on insert, so a row built by hand cannot enter the overlay. Its own module because both sides need
it and the store sits below the gates."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets

from .grammar import Delta

__all__ = ["mint", "mint_undo", "verify_seal", "verify_undo"]


_SEAL_KEY = secrets.token_bytes(32)  # per process; never stored


def _seal_bytes(delta: Delta) -> bytes:
    body = json.dumps([delta.id, delta.skill, delta.kind, delta.payload, delta.anchor.to_dict(),
                       delta.provenance.to_dict(), delta.scope, delta.base_root, delta.status,
                       delta.created_at.isoformat(), list(delta.findings)],
                      sort_keys=True, ensure_ascii=False, default=str)
    return body.encode("utf-8")


def mint(delta: Delta) -> bytes:
    """The seal the gates give a delta they passed (the store accepts no row without it)."""
    return hmac.new(_SEAL_KEY, _seal_bytes(delta), hashlib.sha256).digest()


def verify_seal(delta: Delta, seal: bytes) -> bool:
    """True when `seal` was minted by `mint` in this process for exactly this delta (the store checks it on insert)."""
    return isinstance(seal, bytes) and hmac.compare_digest(seal, mint(delta))


def _undo_bytes(op: str, steps, ids) -> bytes:
    return json.dumps(["undo", op, [list(s) for s in steps], list(ids)], ensure_ascii=False, default=str).encode()


def mint_undo(op: str, steps, ids) -> bytes:
    """The token the store gives each undo handle it issues: a hand-built `Undo` cannot be applied."""
    return hmac.new(_SEAL_KEY, _undo_bytes(op, steps, ids), hashlib.sha256).digest()


def verify_undo(op: str, steps, ids, token) -> bool:
    return isinstance(token, bytes) and hmac.compare_digest(token, mint_undo(op, steps, ids))
