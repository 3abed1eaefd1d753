"""Issue 42: a stored payload is validated once (`check_shape`, when its row is first read), not on every compose.
The store vouches for each delta it reads (`Delta.vouched`); `compose` skips the check for a vouched delta whose
payload is unchanged. The oracle: the same deltas unvouched (`evolve()` drops it), every payload checked."""

from __future__ import annotations

import pytest
from overlay_support import TRUSTED, make_skill, sql_shell

from overlay_kit import gates, grammar
from overlay_kit import resolve as resolve_mod
from overlay_kit.resolve import compose, resolve
from overlay_kit.store import Store
from overlay_kit.store import core as store_module  # where Store reads a row's payload (`_checked`)

SKILL = make_skill()
LESSONS = [
    ("tool-hint", {"prefer": ["search_mail"], "drop": ["send_email"]}, "triage"),
    ("parameter", {"key": "followup_hours", "value": 48, "scope": "recruiters"}, "triage"),
    ("exception", {"condition": "the sender is a recruiter", "action": "decline"}, "replies"),
    *(("preference", {"body": f"Keep replies to {n} sentences."}, "replies") for n in range(2, 6)),
    ("example", {"input": "Meet Tuesday?", "output": "Tuesday 10:00 works."}, "replies"),
]


def _fill(s: Store) -> list[str]:
    ids = []
    for kind, payload, section in LESSONS:
        r = gates.learn(s, SKILL, kind, payload, section=section, provenance=TRUSTED)
        assert r.delta is not None, r.message
        ids.append(r.delta.id)
    return ids


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "o.db"
    with Store.open(path, research=True, auto_approve=True) as s:
        _fill(s)
    return path


def _same(a, b) -> None:
    assert a.text == b.text and a.notes == b.notes and [d.id for d in a.applied] == [d.id for d in b.applied]
    assert a.skill_tools == b.skill_tools


@pytest.fixture
def checks(monkeypatch):
    """Every `check_shape` call (the store's and the resolver's), by kind; the store's memory of checked payloads
    emptied first."""
    calls = []
    real = grammar.check_shape

    def counted(kind, payload):
        calls.append(kind)
        return real(kind, payload)

    monkeypatch.setattr(store_module, "_CANONICAL", {})
    monkeypatch.setattr(store_module, "check_shape", counted)
    monkeypatch.setattr(resolve_mod, "check_shape", counted)
    return calls


def test_composing_what_the_store_read_is_composing_every_payload_checked(db, checks):
    with Store.open(db) as s:
        read = s.search(SKILL.name)
    assert all(d.shape_checked for d in read) and not any(d.evolve().shape_checked for d in read)
    other = make_skill(body=SKILL.body.replace("Label urgent mail first.", "Label urgent mail first, then VIPs."))
    for skill in (SKILL, other):  # clean and stale anchors alike
        for kw in ({}, {"scope": "agent:x"}, {"ceiling": resolve_mod._authored_tokens(skill.body) + 40}):
            _same(compose(skill, read, **kw), compose(skill, [d.evolve() for d in read], **kw))
    assert checks.count("preference") > 4  # the oracle checked its payloads (the store's reads once each)


def test_check_shape_runs_once_per_row_however_often_it_is_composed(db, checks):
    with Store.open(db) as s:
        read = s.search(SKILL.name)
        assert len(checks) == len(LESSONS)  # the first read checks each row's payload
        for _ in range(3):
            compose(SKILL, read)
            compose(SKILL, s.search(SKILL.name))
            resolve(SKILL, s, embedder=False)
    assert len(checks) == len(LESSONS)


def test_a_payload_changed_after_the_read_is_checked_again_and_refused(db, checks):
    with Store.open(db) as s:
        read = s.search(SKILL.name)
    changed = next(d for d in read if d.kind == "preference")
    changed.payload["body"] = ""  # a caller edits what it was handed: no longer what the store checked
    tool = next(d for d in read if d.kind == "tool-hint")
    tool.payload["prefer"].append("send_email")  # a list inside the payload: preferred and dropped now
    before = len(checks)
    got, want = compose(SKILL, read), compose(SKILL, [d.evolve() for d in read])
    _same(got, want)
    assert {n.delta_id for n in got.notes_of("malformed_payload")} == {changed.id, tool.id}
    assert checks[before:].count("preference") == 1 + 4  # got: the changed one only; want: all four


@pytest.mark.parametrize("resealed", [False, True], ids=["seal-broken", "seal-renewed"])
def test_an_invalid_payload_planted_by_sql_is_still_left_out(tmp_path, checks, resealed):
    """A payload made invalid outside overlay_kit: its seal fails, or (the key's holder re-sealed it) its
    check fails at the read. Either way the row is left out with a note, at every read, never applied."""
    path = tmp_path / "o.db"
    with Store.open(path, research=True, auto_approve=True) as s:
        ids = _fill(s)
        resolve(SKILL, s, embedder=False)  # its payload checked and remembered while it was valid
    bad = ids[3]
    sql_shell(path, f"UPDATE skill_deltas SET payload = '{{\"body\": \"\"}}' WHERE id = '{bad}'")
    with Store.open(path, research=True) as s:
        if resealed:
            with s.transaction():
                s._reseal([bad])
        for _ in range(2):
            eff = resolve(SKILL, s, embedder=False)
            assert bad not in {d.id for d in eff.applied}
            assert any(bad in n.detail for n in eff.notes_of("left_out"))
            s.integrity_notes.clear()
        read = s.search(SKILL.name)
    assert bad not in {d.id for d in read} and len(read) == len(LESSONS) - 1
    _same(compose(SKILL, read), compose(SKILL, [d.evolve() for d in read]))
