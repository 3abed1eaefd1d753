"""Shared helpers for the resolve / retrieval / budget / tools tests."""

from __future__ import annotations

import socket
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from overlay_kit import gates
from overlay_kit.anchor import anchor_for
from overlay_kit.grammar import Delta, Provenance
from overlay_kit.skill import load_skill, parse_skill

ROOT = Path(__file__).resolve().parents[1]
SKILLS = ROOT / "datasets" / "skills"

BODY = """# Mail triage

Sort the inbox.

## Triage

Label urgent mail first.

## Replies

Draft replies; never send without asking.
"""


def triage_inbox():
    return load_skill(SKILLS / "triage-inbox")


def make_skill(
    name: str = "mail",
    body: str = BODY,
    tools=("search_mail", "draft_reply", "archive_thread"),
    root: str | None = None,
):
    text = (
        f"---\nname: {name}\ndescription: test skill\nmetadata:\n  gaia:\n    version: '1.0'\n"
        f"    tools: [{', '.join(tools)}]\n---\n{body}"
    )
    skill, problems = parse_skill(text, None, root=root)
    assert not problems, problems
    return skill


def delta(
    skill,
    kind: str,
    payload: dict,
    section: str,
    *,
    status: str = "active",
    created_at=None,
    id: str | None = None,
    **kw,
) -> Delta:
    """A Delta built directly (for the pure core; store-backed tests go through gates.learn)."""
    extra = {"id": id} if id else {}
    return Delta(
        skill=skill.name,
        kind=kind,
        payload=payload,
        anchor=anchor_for(skill.body, section, skill.version),
        provenance=Provenance("user_instruction"),
        status=status,
        created_at=created_at or datetime(2026, 1, 1, tzinfo=timezone.utc),
        base_root=skill.root,
        **extra,
        **kw,
    )


def learn_active(store, skill, kind, payload, section, **kw):
    """Write through the gates and approve: the only way a delta becomes active in a store."""
    r = gates.learn(store, skill, kind, payload, section=section, provenance="user_instruction", **kw)
    assert r.delta is not None, r.message
    if r.delta.status != "active":
        store.approve(r.delta.id)
    return store.get(r.delta.id)


class FakeEmbedder:
    """A deterministic stand-in with chosen vectors (for threshold / identity logic, not for semantics)."""

    def __init__(self, table: dict[str, list[float]], id: str = "fake/embedder", dim: int = 4):
        self.table = table
        self.id = id
        self.dim = dim
        self.calls = 0

    def encode(self, texts):
        self.calls += 1
        out = []
        for t in texts:
            v = np.asarray(self.table.get(t, [0.0] * (self.dim - 1) + [1.0]), dtype=np.float32)
            out.append(v / np.linalg.norm(v))
        return np.stack(out) if out else np.zeros((0, self.dim), np.float32)


class BrokenEmbedder:
    id = "broken/embedder"

    def encode(self, texts):
        raise RuntimeError("embedding backend is down")


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a non-loopback connection fails the test."""
    real = socket.socket.connect

    def guard(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1", "localhost") and not isinstance(address, (str, bytes)):
            raise AssertionError(f"network access attempted: {address!r}")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", guard)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield
