"""overlay_kit.store: schema and migrations, accessors, undo, audit, erasure, embeddings, facts, bases."""

import json
import sqlite3
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from overlay_support import TRUSTED, UNTRUSTED, make_skill

from overlay_kit import gates, seal
from overlay_kit.anchor import Anchor
from overlay_kit.grammar import RESEARCH_KINDS, Provenance
from overlay_kit.store import (
    MIGRATIONS,
    GateBypassError,
    Store,
    StoreError,
    default_db_path,
)
from overlay_kit.store import core as store_core
from overlay_kit.store import schema as store_schema


@pytest.fixture
def db(tmp_path):
    return tmp_path / "overlay.db"


@pytest.fixture
def store(db):
    with Store.open(db) as s:
        yield s


@pytest.fixture
def skill():
    return make_skill()


def learn(
    store, skill, body="Keep replies short.", source=TRUSTED, section="replies", scope="user", kind=None, payload=None
):
    r = gates.learn(
        store, skill, kind or "preference", payload or {"body": body}, section=section, provenance=source, scope=scope
    )
    assert r.delta is not None, r.message
    return r.delta


# ------------------------------------------------------------------------------------------ opening


def test_open_sets_wal_fk_busy_and_records_every_migration(store, db):
    c = store.conn
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert c.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert c.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    assert [v for v, _, _ in store.schema_history()] == [m.version for m in MIGRATIONS]
    store.close()
    with Store.open(db) as again:  # reopening applies nothing and appends no rows
        assert len(again.schema_history()) == len(MIGRATIONS)


def test_default_db_path_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv("OVERLAY_KIT_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"
    monkeypatch.delenv("OVERLAY_KIT_DB")
    assert default_db_path() == __import__("pathlib").Path.home() / ".overlay_kit" / "overlay.db"


def test_migrations_are_ordered_and_unique():
    versions = [m.version for m in MIGRATIONS]
    assert versions == sorted(set(versions)) == list(range(1, len(MIGRATIONS) + 1))


def test_history_is_append_only(store):
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store.conn.execute("UPDATE schema_history SET name = 'x'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store.conn.execute("DELETE FROM schema_history")


@pytest.mark.parametrize(
    "content", [b"hello, not a database\n", b"\x00" * 4096, b"SQLite format 3\x00" + b"\xff" * 200]
)
def test_non_sqlite_or_corrupt_file_is_refused_and_untouched(tmp_path, content):
    bad = tmp_path / "bad.db"
    bad.write_bytes(content)
    with pytest.raises(StoreError) as e:
        Store.open(bad)
    assert str(bad) in str(e.value)
    assert bad.read_bytes() == content
    assert not (tmp_path / "bad.db-wal").exists()


def test_corrupt_pages_in_a_real_database_are_refused(tmp_path, skill):
    path = tmp_path / "c.db"
    with Store.open(path) as s:
        for i in range(40):
            learn(s, skill, body=f"lesson number {i}")
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        s.conn.execute("PRAGMA journal_mode = DELETE")
    raw = bytearray(path.read_bytes())
    page = int.from_bytes(raw[16:18], "big")
    raw[page * 2 : page * 2 + 400] = b"\xa5" * 400  # smash page 3's b-tree header
    path.write_bytes(bytes(raw))
    with pytest.raises(StoreError, match=str(path)):
        Store.open(path)
    assert path.read_bytes() == bytes(raw)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(StoreError, match="directory"):
        Store.open(tmp_path)


def test_newer_schema_is_refused(db):
    Store.open(db).close()
    c = sqlite3.connect(db)
    c.execute("INSERT INTO schema_history VALUES (999, 'from the future', '2030-01-01T00:00:00+00:00')")
    c.commit()
    c.close()
    with pytest.raises(StoreError, match="newer"):
        Store.open(db)


# ---------------------------------------------------------------------------------------- migrations

V1_DDL = """
CREATE TABLE schema_history (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL);
CREATE TABLE skill_deltas (
    id TEXT PRIMARY KEY, base_name TEXT NOT NULL, base_root TEXT, base_version TEXT, scope TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('tool-hint','parameter','exception','preference','example')),
    tier INTEGER NOT NULL CHECK (tier BETWEEN 1 AND 3), anchor TEXT NOT NULL CHECK (json_valid(anchor)),
    payload TEXT NOT NULL CHECK (json_valid(payload)), provenance TEXT NOT NULL CHECK (json_valid(provenance)),
    status TEXT NOT NULL DEFAULT 'staged'
        CHECK (status IN ('staged','active','quarantined','orphaned','archived')),
    success_count INTEGER NOT NULL DEFAULT 0 CHECK (success_count >= 0),
    attempt_count INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= success_count),
    embedding BLOB, superseded_by TEXT REFERENCES skill_deltas(id) ON DELETE SET NULL,
    created_at TEXT NOT NULL, approved_at TEXT, last_used_at TEXT);
INSERT INTO schema_history VALUES (1, 'skill_deltas', '2024-01-01T00:00:00.000000+00:00');
"""
V1_ROWS = [
    (
        "delta_a",
        "mail",
        "project",
        "1.0",
        "user",
        "preference",
        3,
        '{"digest":"0123456789abcdef","section":"replies"}',
        '{"body":"Keep replies short."}',
        '{"source":"user_instruction","turns":["s1/t2"]}',
        "active",
        4,
        5,
        np.arange(4, dtype="<f4").tobytes(),
        None,
        "2024-01-02T03:04:05.000006+00:00",
        "2024-01-03T00:00:00.000000+00:00",
        None,
    ),
    (
        "delta_b",
        "mail",
        None,
        None,
        "agent:x",
        "tool-hint",
        1,
        '{"digest":"fedcba9876543210","section":"triage"}',
        '{"drop":[],"prefer":["search_mail"]}',
        '{"source":"observed_content","turns":[]}',
        "quarantined",
        0,
        0,
        None,
        None,
        "2024-01-02T03:04:06.000000+00:00",
        None,
        None,
    ),
]


def _dump(path, table):
    c = sqlite3.connect(path)
    rows = c.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
    c.close()
    return rows


def test_v1_database_migrates_forward_without_rewriting_rows(tmp_path):
    path = tmp_path / "v1.db"
    c = sqlite3.connect(path)
    c.executescript(V1_DDL)
    c.executemany(f"INSERT INTO skill_deltas VALUES ({', '.join('?' * 18)})", V1_ROWS)
    c.commit()
    c.close()
    before_rows, before_history = _dump(path, "skill_deltas"), _dump(path, "schema_history")
    with Store.open(path) as s:
        history = s.schema_history()
        assert history[0] == before_history[0]  # the v1 row is untouched …
        assert [v for v, _, _ in history] == [m.version for m in MIGRATIONS]  # … later ones appended
        a = s.get("delta_a")
        assert a.status == "active" and a.findings == () and a.anchor.section == "replies"
        assert (a.success_count, a.attempt_count) == (4, 5) and a.provenance.turns == ("s1/t2",)
        assert not s.get("delta_b").provenance.trusted
        sql = s.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'skill_deltas'").fetchone()[0]
        assert " IN (" not in sql.upper() and "kind = 'example'" in sql and "status = 'archived'" in sql
        assert s.conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        _refuses_bad_rows(s.conn)
        s.conn.execute("DELETE FROM skill_deltas WHERE id = 'ok'")
    after = _dump(path, "skill_deltas")
    assert [r[:18] for r in after] == before_rows  # every original column byte-identical
    assert [r[18:20] for r in after] == [("[]", None)] * 2  # findings, embedder_id: their defaults


# A GAIA memory.db as amd-gaia 0.25.1 writes it (its tables, reduced to the columns that matter here): it has
# its own `skill_deltas` (learn_tier, anchor_section, …), which our migrations used to ALTER and then crash on.
GAIA_DDL = """
PRAGMA journal_mode = WAL;
CREATE TABLE schema_version (version INTEGER NOT NULL, migrated_at TEXT NOT NULL);
INSERT INTO schema_version VALUES (7, '2026-01-01T00:00:00+00:00');
CREATE TABLE knowledge (id TEXT PRIMARY KEY, category TEXT NOT NULL, content TEXT NOT NULL, context TEXT,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, embedding BLOB, superseded_by TEXT);
CREATE TABLE procedures (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, when_to_use TEXT NOT NULL, markdown_body TEXT NOT NULL,
    provenance TEXT, success_count INTEGER DEFAULT 0, attempt_count INTEGER DEFAULT 0, embedding BLOB,
    superseded_by TEXT, enabled INTEGER DEFAULT 1, created_at TEXT, last_used_at TEXT);
CREATE TABLE skill_deltas (id TEXT PRIMARY KEY, base_name TEXT NOT NULL, base_root TEXT, base_version TEXT,
    scope TEXT NOT NULL, kind TEXT NOT NULL, learn_tier INTEGER NOT NULL DEFAULT 3, anchor_section TEXT NOT NULL,
    anchor_digest TEXT NOT NULL, payload TEXT NOT NULL, provenance TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'staged', success_count INTEGER NOT NULL DEFAULT 0,
    attempt_count INTEGER NOT NULL DEFAULT 0, embedding BLOB, superseded_by TEXT, created_at TEXT NOT NULL,
    approved_at TEXT, last_used_at TEXT);
"""


def _gaia_db(path):
    c = sqlite3.connect(path)
    c.executescript(GAIA_DDL)
    rng = np.random.default_rng(7)
    for i in range(25):
        c.execute(
            "INSERT INTO procedures VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                f"proc_{i}",
                f"p{i}",
                "when asked — ünïcode ✓",
                "# Steps\n1. do\r\n2. done\n",
                '{"source": "synthesized"}',
                i,
                i + 1,
                rng.standard_normal(8).astype("<f4").tobytes(),
                None if i % 3 else f"proc_{i + 1}",
                i % 2,
                "2024-01-01 00:00:00",
                None,
            ),
        )
        c.execute("INSERT INTO knowledge VALUES (?, 'fact', ?, 'global', 't', 't', NULL, NULL)", (f"k{i}", f"fact {i}"))
    c.execute(
        "INSERT INTO skill_deltas (id, base_name, scope, kind, anchor_section, anchor_digest, payload, "
        "provenance, created_at) VALUES ('delta_g1', 'mail', 'user', 'replace_snippet', 'replies', 'abc', "
        '\'{"old": "a", "new": "b"}\', \'{"source": "user"}\', \'2026-01-01T00:00:00\')'
    )
    c.commit()
    c.close()


def _files(path) -> dict:
    from pathlib import Path

    return {p.name: p.read_bytes() for p in Path(path).parent.iterdir() if p.name.startswith(Path(path).name)}


def test_a_gaia_memory_db_is_never_altered_and_its_deltas_can_be_read(tmp_path, capsys):
    # Was: our migrations ran inside GAIA's file (CREATE next to its tables, ALTER on its skill_deltas) and then
    # crashed with "no such column: tier" (issue 18). Now a foreign schema is refused without touching a byte.
    from overlay_kit.cli import main
    from overlay_kit.store import read_gaia_deltas

    path = tmp_path / "memory.db"
    _gaia_db(path)
    before = _files(path)
    with pytest.raises(StoreError, match="GAIA memory.db"):
        Store.open(path)
    with pytest.raises(StoreError, match="GAIA memory.db"):
        Store.open(path, readonly=True)
    assert main(["deltas", "--db", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GAIA memory.db" in err
    (row,) = read_gaia_deltas(path)
    assert row["kind"] == "replace_snippet" and row["learn_tier"] == 3
    assert _files(path) == before  # no byte changed, no -wal/-shm left behind


def test_a_newer_schema_is_refused_without_touching_a_byte(tmp_path):
    path = tmp_path / "new.db"
    with Store.open(path):
        pass
    c = sqlite3.connect(path)
    c.execute("PRAGMA journal_mode = DELETE")  # a rollback-journal file: opening it used to rewrite the header
    c.execute("DROP TRIGGER schema_history_no_update")
    c.execute("INSERT INTO schema_history VALUES (999, 'from the future', 't')")
    c.commit()
    c.close()
    before = _files(path)
    for kw in ({}, {"readonly": True}, {"create": False}):
        with pytest.raises(StoreError, match="newer overlay_kit"):
            Store.open(path, **kw)
    assert _files(path) == before


# ------------------------------------------------------------------------------------------- deltas


def test_insert_without_the_gates_is_refused(store, skill):
    d = learn(store, skill)
    forged = store._new_rows([d.evolve(id="delta_forged")], validated=True)
    with pytest.raises(GateBypassError):
        store._insert_deltas(forged, None)
    other = store._new_rows([d.evolve(id="delta_other")], validated=True)
    with pytest.raises(GateBypassError):  # a seal for other rows does not transfer
        store._insert_deltas(forged, seal.mint(other.rows, validated=True))
    assert len(store.search()) == 1


def test_a_seal_covers_every_field_the_store_writes(store, skill):
    """Counters, times and lineage are written from the delta too: a seal does not transfer to a copy that
    changes them (a delta cannot enter with forged outcome counters and be promoted on them)."""
    d = gates.check(
        store, skill, "preference", {"body": "Keep replies short."}, section="replies", provenance=TRUSTED
    ).delta
    s = seal.mint(store._new_rows([d], validated=True).rows, validated=True)
    for change in (
        {"success_count": 9, "attempt_count": 9},
        {"approved_at": d.created_at},
        {"scope": "team"},
        {"status": "active"},
        {"findings": ("payload.body: x",)},
        {"payload": {"body": "Keep replies shorter."}},
    ):
        assert not seal.verify_seal(store._new_rows([d.evolve(**change)], validated=True).rows, s), change
    assert seal.verify_seal(store._new_rows([d.evolve()], validated=True).rows, s)  # an equal copy: the same rows


def test_a_seal_tells_apart_every_value_of_every_row(store, skill):
    ds = [
        gates.check(
            store, skill, "preference", {"body": f"Keep replies short {i}."}, section="replies", provenance=TRUSTED
        ).delta
        for i in range(3)
    ]
    rows = store._new_rows(ds, validated=True).rows
    good = seal.mint(rows, validated=True)
    for at in (0, 2):
        for column, value in enumerate(rows[at]):
            changed = value + 1 if isinstance(value, int) else "x" if value is None else value + "x"
            bad = [r if k != at else (*r[:column], changed, *r[column + 1 :]) for k, r in enumerate(rows)]
            assert not seal.verify_seal(bad, good), (at, column)
    assert not seal.verify_seal(rows[::-1], good) and not seal.verify_seal(rows[:2], good)


def test_a_batch_insert_without_its_seal_is_refused(store, skill):
    """`_insert_deltas` takes one seal for exactly its rows, in order: a missing, forged, reused or
    re-ordered one, or any row changed after minting, is refused and nothing is written."""
    ds = [
        gates.check(
            store, skill, "preference", {"body": f"Keep replies short {i}."}, section="replies", provenance=TRUSTED
        ).delta
        for i in range(3)
    ]
    new = store._new_rows(ds, validated=True)
    good = seal.mint(new.rows, validated=True)
    forged = [
        None,
        b"",
        b"V" + bytes(32),
        seal.mint(new.rows[:2], validated=True),
        seal.mint(new.rows[:1], validated=True),
        b"V" + seal.mint(new.rows)[1:],
    ]  # the last: the validated claim added to an unclaimed seal
    for bad in forged:
        with pytest.raises(GateBypassError):
            store._insert_deltas(new, bad)
    for batch in (
        ds[::-1],
        ds[:2] + [ds[2].evolve(payload={"body": "tampered"})],
        ds[:2] + [ds[2].evolve(status="active")],
    ):
        with pytest.raises(GateBypassError):
            store._insert_deltas(store._new_rows(batch, validated=True), good)
    with pytest.raises(GateBypassError):  # the claim the rows were checked under is the seal's
        store._insert_deltas(store._new_rows(ds, validated=False), good)
    assert store.search() == [] and store.audit() == []
    stored = store._insert_deltas(new, good)
    assert [d.id for d, _ in stored] == [d.id for d in ds] and len(store.search()) == 3


def test_a_seal_without_the_validated_claim_gets_the_payload_checked(tmp_path, skill):
    """Custom research rules claim nothing for the payload (`gates._validates`): the store checks it itself, so
    an over-long lesson that such rules accept is refused, one row or a batch."""
    yes = gates.Rule("yes", lambda p: gates.Verdict("staged", "yes", "ok"))
    body = {"body": "x" * 401}
    with Store.open(tmp_path / "r.db", research=True) as store:
        with pytest.raises(StoreError, match="payload.body: 401 characters"):
            gates.learn(
                store, skill, "preference", body, section="replies", provenance=TRUSTED, rules=[yes], custom_rules=True
            )
        with pytest.raises(StoreError, match="payload.body: 401 characters"):
            gates.learn_many(
                store,
                skill,
                [
                    gates.Lesson("preference", {"body": "fine"}, "replies", TRUSTED),
                    gates.Lesson("preference", body, "replies", TRUSTED),
                ],
                rules=[yes],
                custom_rules=True,
            )
        assert store.counts() == {}
        d = gates.check(store, skill, "preference", body, section="replies", provenance=TRUSTED, rules=[yes]).delta
        with pytest.raises(StoreError, match="payload.body"):  # rows made without the claim
            store._new_rows([d], validated=False)


def test_a_validated_claim_made_on_a_research_store_does_not_carry_to_another(tmp_path, skill):
    """The gates validated a research-only kind under a research store's setting: a store without research
    mode checks the payload itself and refuses it, whatever the seal claims."""
    with Store.open(tmp_path / "r.db", research=True) as research:
        d = gates.check(
            research, skill, "parameter", {"key": "followup_hours", "value": 48}, section="triage", provenance=TRUSTED
        ).delta
    assert d is not None and d.kind in RESEARCH_KINDS
    with Store.open(tmp_path / "plain.db") as plain:
        with pytest.raises(StoreError, match="research"):
            plain._new_rows([d], validated=True)
        assert plain.counts() == {}


def _refuses_bad_rows(conn):
    """skill_deltas' CHECKs refuse an unknown status, an unknown kind (at a valid tier) and a tier out of range,
    and take a valid row."""
    insert = (
        "INSERT INTO skill_deltas (id, base_name, scope, kind, tier, anchor, payload, provenance, status, "
        "created_at) VALUES (?, 'm', 'user', ?, ?, '{}', '{}', '{}', ?, 't')"
    )
    for bad in (("preference", 3, "bogus"), ("fact", 1, "staged"), ("preference", 0, "staged")):
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
            conn.execute(insert, ("x", *bad))
    conn.execute(insert, ("ok", "preference", 3, "staged"))


def test_check_constraints_refuse_bad_rows(store):
    _refuses_bad_rows(store.conn)


def test_in_list_checks_are_restated_as_comparisons():
    """Migration 7 rewrites `CHECK (column IN (constants))` as comparisons (SQLite rebuilds an IN list's table
    for every row inserted), whatever the spacing and case its CREATE text was written with."""
    sql = (
        "CREATE TABLE t (k TEXT CHECK (k IN ('a','b')), s TEXT check( s in ( 'it''s' , 'x' ) ), "
        "w INTEGER CHECK (w IN (0, -1)), j TEXT CHECK (json_valid(j)), n INTEGER CHECK (n BETWEEN 1 AND 3))"
    )
    assert store_schema._in_lists_as_comparisons(sql) == (
        "CREATE TABLE t (k TEXT CHECK (k = 'a' OR k = 'b'), s TEXT CHECK (s = 'it''s' OR s = 'x'), "
        "w INTEGER CHECK (w = 0 OR w = -1), j TEXT CHECK (json_valid(j)), n INTEGER CHECK (n BETWEEN 1 AND 3))"
    )


def test_search_filters_and_sort_order(store, skill):
    other = make_skill("notes")
    a = learn(store, skill, body="one")
    b = learn(store, skill, kind="tool-hint", payload={"prefer": ["search_mail"]}, section="triage")
    c = learn(store, skill, body="two", source=UNTRUSTED)
    d = learn(store, other, body="three", section="replies", scope="agent:x")
    assert [x.id for x in store.search("mail")] == [b.id, a.id, c.id]  # tier 1 first, then by time
    assert [x.id for x in store.search(status="quarantined")] == [c.id]
    assert [x.id for x in store.search(status=["staged", "quarantined"], skill="mail")] == [b.id, a.id, c.id]
    assert [x.id for x in store.search(scope="agent:x")] == [d.id]
    assert [x.id for x in store.search(scope=["user", "agent:x"], skill="notes")] == [d.id]
    assert store.search("nothing") == []
    with pytest.raises(StoreError, match="unknown status"):
        store.search(status="enabled")
    assert store.skills() == ["mail", "notes"]


def test_search_limit_keeps_the_newest(store, skill):
    ids = [learn(store, skill, body=f"lesson {i}").id for i in range(12)]
    assert len(store.search("mail")) == 12  # no default limit
    kept = store.search("mail", limit=5)
    assert {d.id for d in kept} == set(ids[-5:])


def test_approve_revert_reset_and_their_undo(store, skill):
    a, b = learn(store, skill, body="a"), learn(store, skill, body="b", source=UNTRUSTED)
    u1 = store.approve(a.id)
    assert store.get(a.id).status == "active" and store.get(a.id).approved_at is not None
    u2 = store.approve(b.id, who="alice")  # quarantine leaves by explicit per-delta approval
    assert store.get(b.id).status == "active"
    with pytest.raises(StoreError, match="only staged, quarantined, orphaned"):
        store.approve(a.id)
    store.undo(u2)
    assert store.get(b.id).status == "quarantined" and store.get(b.id).approved_at is None
    u3 = store.revert(a.id)
    assert store.get(a.id).status == "archived"
    with pytest.raises(StoreError, match="cannot undo"):  # a moved on since it was approved
        store.undo(u1)
    store.undo(u3)
    assert store.get(a.id).status == "active"
    u4 = store.reset("mail")
    assert {store.get(i).status for i in (a.id, b.id)} == {"archived"} and set(u4.ids) == {a.id, b.id}
    store.undo(u4)
    assert (store.get(a.id).status, store.get(b.id).status) == ("active", "quarantined")
    assert store.conn.execute("SELECT count(*) FROM skill_deltas").fetchone()[0] == 2  # nothing deleted


def test_undo_of_learn_archives(store, skill):
    r = gates.learn(store, skill, "preference", {"body": "x"}, section="replies", provenance=TRUSTED)
    store.undo(r.undo)
    assert store.get(r.delta.id).status == "archived"


def test_every_state_change_is_audited_and_the_log_is_append_only(store, skill):
    a = learn(store, skill)
    store.approve(a.id, who="bob")
    store.undo(store.revert(a.id))
    trail = [(e.who, e.from_status, e.to_status) for e in store.audit(a.id)]
    assert trail == [
        ("gates", None, "staged"),
        ("bob", "staged", "active"),
        ("user", "active", "archived"),
        ("user", "archived", "active"),
    ]
    assert all(e.at.tzinfo is not None and e.at.utcoffset() == timedelta(0) for e in store.audit())
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store.conn.execute("UPDATE delta_audit SET who = 'mallory'")
    with pytest.raises(sqlite3.DatabaseError, match="forget"):
        store.conn.execute("DELETE FROM delta_audit")
    raw = sqlite3.connect(store.path)  # another client cannot delete audit rows either
    with pytest.raises(sqlite3.DatabaseError):
        raw.execute("DELETE FROM delta_audit")
    raw.close()


def test_set_status_guards(store, skill):
    trusted, untrusted = learn(store, skill, body="t"), learn(store, skill, body="u", source=UNTRUSTED)
    for target in ("active", "staged"):
        with pytest.raises(StoreError, match="approve"):
            store.set_status(untrusted.id, target, who="rebase", reason="x")
    with pytest.raises(StoreError, match="trusted"):
        store.set_status(trusted.id, "quarantined", who="rebase", reason="x")
    store.set_status(trusted.id, "orphaned", who="rebase", reason="section vanished")
    assert store.get(trusted.id).status == "orphaned"
    store.set_status(untrusted.id, "orphaned", who="rebase", reason="section vanished")
    with pytest.raises(StoreError, match="approve"):  # orphaning does not launder quarantine
        store.set_status(untrusted.id, "active", who="rebase", reason="x")
    store.revert(trusted.id)
    with pytest.raises(StoreError, match="archived"):
        store.set_status(trusted.id, "staged", who="budget", reason="x")
    with pytest.raises(StoreError, match="unknown status"):
        store.set_status(trusted.id, "enabled", who="x", reason="x")
    assert not store.set_status(untrusted.id, "orphaned", who="x", reason="no-op")


def test_supersede_keeps_rows_and_hides_them(store, skill):
    a, b, c = (learn(store, skill, body=x) for x in "abc")
    u = store.supersede([a.id, b.id], c.id)
    assert [d.id for d in store.search("mail")] == [c.id]
    assert {d.id for d in store.search("mail", include_superseded=True)} == {a.id, b.id, c.id}
    assert store.get(a.id).superseded_by == c.id
    with pytest.raises(StoreError, match="already superseded"):
        store.supersede([a.id], c.id)
    with pytest.raises(StoreError, match="itself"):
        store.supersede([c.id], c.id)
    with pytest.raises(StoreError, match="different skills"):
        store.supersede([learn(store, make_skill("notes"), body="n").id], c.id)
    store.undo(u)
    assert store.get(a.id).superseded_by is None


def test_touch_and_undo(store, skill):
    a = learn(store, skill)
    when = datetime(2025, 5, 5, tzinfo=timezone.utc)
    u = store.touch([a.id], when)
    assert store.get(a.id).last_used_at == when
    store.undo(u)
    assert store.get(a.id).last_used_at is None
    with pytest.raises(StoreError, match="no delta"):
        store.touch(["delta_missing"])


def test_set_anchor_is_audited_fires_the_hook_and_undoes(store, skill):
    a = learn(store, skill)
    seen = []
    store.on_change(seen.append)
    before, trail_len = a.anchor, len(store.audit(a.id))
    target = Anchor("replies", "f" * 16, "2.0.0")
    u = store.set_anchor(a.id, target, who="rebase", reason="section renamed")
    d = store.get(a.id)
    assert d.anchor == target and d.status == a.status == "staged"
    last = store.audit(a.id)[-1]
    assert len(store.audit(a.id)) == trail_len + 1
    assert (last.who, last.from_status, last.to_status, last.reason) == (
        "rebase",
        "staged",
        "staged",
        "section renamed",
    )
    assert seen == [[a.id]]
    with store.transaction():  # inside a caller's transaction: one commit, the hook fires once after it
        store.set_anchor(a.id, Anchor("tone", "e" * 16, "3.0.0"), who="rebase", reason="moved")
        assert seen == [[a.id]]
    assert seen == [[a.id], [a.id]] and store.get(a.id).anchor.section == "tone"
    with pytest.raises(StoreError, match="cannot undo set_anchor"):  # the row moved on since `u`
        store.undo(u)
    store.set_anchor(a.id, target, who="rebase", reason="back")
    store.undo(u)
    assert store.get(a.id).anchor == before
    assert store.audit(a.id)[-1].reason.startswith("undo of set_anchor: anchor ")


def test_set_anchor_refuses_unknown_ids_and_non_anchors(store, skill):
    a = learn(store, skill)
    with pytest.raises(StoreError, match="delta_missing"):
        store.set_anchor("delta_missing", Anchor("replies", "0" * 16, None), who="rebase", reason="x")
    with pytest.raises(StoreError, match="Anchor"):
        store.set_anchor(a.id, {"section": "replies"}, who="rebase", reason="x")
    with pytest.raises(StoreError, match="Anchor"):
        store.set_anchor(a.id, Anchor("", "0" * 16, None), who="rebase", reason="x")
    assert store.get(a.id).anchor == a.anchor and len(store.audit(a.id)) == 1
    same = store.set_anchor(a.id, a.anchor, who="user", reason="re-anchored in place")
    assert not same and store.audit(a.id)[-1].reason == "re-anchored in place"  # recorded, nothing to undo


def test_get_unknown_names_the_id(store):
    with pytest.raises(StoreError, match="delta_nope"):
        store.get("delta_nope")


def test_unreadable_row_is_skipped_not_guessed(store, skill, caplog):
    """A row edited outside the store fails its seal; one sealed by the store that no longer parses (a payload an
    older grammar allowed: simulated by sealing the edit) is left out too, with a note naming it."""
    a, b = learn(store, skill, body="a"), learn(store, skill, body="b")
    store.conn.execute("UPDATE skill_deltas SET payload = '{\"wrong\": 1}' WHERE id = ?", (a.id,))
    with caplog.at_level("WARNING"):
        assert [d.id for d in store.search("mail")] == [b.id]
    assert f"delta {a.id}: seal does not verify" in caplog.text
    with store.transaction():
        store._reseal([a.id])
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert [d.id for d in store.search("mail")] == [b.id]
    assert a.id in caplog.text and "payload.wrong" in caplog.text
    assert any(a.id in n and "unreadable" in n for n in store.integrity_notes)
    with pytest.raises(StoreError, match="unreadable"):
        store.get(a.id)


# ------------------------------------------------------------------------------------------ forget


def test_forget_is_true_erasure(db, skill):
    secret = "Reply to the dentist about Tuesday's root canal appointment"
    with Store.open(db) as s:
        erased = []
        s.on_forget(erased.extend)
        keep = learn(s, make_skill("notes"), body="unrelated lesson")
        a = learn(s, skill, body=secret)
        s.set_embedding(a.id, np.ones(8, dtype=np.float32), "emb-1")
        s.record_outcome(a.id, session="s1", signal="accepted", positive=True)
        s.approve(a.id)
        assert s.forget(skill="mail") == 1
        assert erased == [a.id]
        with pytest.raises(StoreError):
            s.get(a.id)
        assert s.audit(a.id) == [] and s.outcomes(a.id) == []
        assert [d.id for d in s.search()] == [keep.id]
        assert s.embeddings("emb-1")[0] == []
        assert "forget skill=mail" in s.audit()[-1].reason
    raw = b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))
    assert secret.encode() not in raw  # secure_delete + checkpoint: not left in free pages


def test_forget_scope_and_all_cover_facts(store, skill):
    learn(store, skill, scope="agent:x")
    b = learn(store, skill, scope="user")
    store.put_fact("mail", "tz", "UTC", scope="agent:x", provenance=Provenance(TRUSTED))
    store.put_fact("mail", "lang", "en", provenance=Provenance(TRUSTED))
    assert store.forget(scope="agent:x") == 1
    assert [d.id for d in store.search()] == [b.id]
    assert store.get_fact("mail", "tz", scope="agent:x") is None and store.get_fact("mail", "lang") == "en"
    assert store.forget(all=True) == 1
    assert store.search() == [] and store.facts() == []
    assert store.conn.execute("SELECT count(*) FROM learned_facts").fetchone()[0] == 0
    with pytest.raises(StoreError, match="needs"):
        store.forget()


def test_forget_clears_lineage_pointing_at_erased_rows(store, skill):
    old = learn(store, make_skill("mail"), body="old", scope="user")
    new = learn(store, skill, body="new", scope="agent:x")
    store.supersede([old.id], new.id)
    store.forget(scope="agent:x")
    assert store.get(old.id).superseded_by is None


SECRET = "Reply to the dentist about the root canal on Tuesday"


def _hits(db) -> dict[str, int]:
    """How often the erased text's bytes occur in the database file, its WAL and its shared-memory file."""
    out = {}
    for suffix in ("", "-wal", "-shm"):
        f = db.parent / (db.name + suffix)
        out[suffix or "db"] = f.read_bytes().count(SECRET.encode()) if f.exists() else 0
    return out


def _reader(db):
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM skill_deltas").fetchone()  # holds a read snapshot
    return reader


def test_forget_with_a_reader_open_says_where_the_text_is_and_finishing_removes_it(db, skill, caplog):
    """Issue 29: the text was in the main file, the warning said `-wal`; now it names the files that hold it."""
    with Store.open(db) as s:
        learn(s, skill, body=SECRET)  # checkpointed at close: the text is in the database file only
    assert _hits(db) == {"db": 1, "-wal": 0, "-shm": 0}
    store = Store.open(db)
    reader = _reader(db)
    store.conn.execute("PRAGMA busy_timeout = 100")
    with caplog.at_level("WARNING"):
        assert store.forget(skill="mail") == 1
    assert store.erasure_pending
    (warning,) = [r.getMessage() for r in caplog.records if "erased text" in r.getMessage()]
    assert f"the erased text is still in {db} (the database file) until" in warning, warning
    assert store.erasure_where == f"the erased text is still in {db} (the database file)"  # not its WAL
    reader.execute("COMMIT")  # the reader's transaction ends; its connection stays open
    assert store.finish_erasure() and not store.erasure_pending
    assert _hits(db) == {"db": 0, "-wal": 0, "-shm": 0}
    reader.close()
    store.close()


def test_an_erasure_still_pending_when_its_process_ends_is_finished_by_the_next_open(db, skill):
    with Store.open(db) as s:
        learn(s, skill, body=SECRET)
    store = Store.open(db)
    reader = _reader(db)
    store.conn.execute("PRAGMA busy_timeout = 100")
    store.forget(skill="mail")
    store.close()  # the reader still reads: close cannot finish it either
    assert _hits(db)["db"] == 1
    reader.execute("COMMIT")  # the reader's transaction ends, its connection stays open (a long-lived reader)
    assert _hits(db)["db"] == 1  # nothing finishes it by itself
    with Store.open(db) as again:  # the next writable open does
        assert not again.erasure_pending
        assert again.conn.execute("SELECT count(*) FROM overlay_meta WHERE key = 'erasure_pending'").fetchone() == (0,)
    assert _hits(db) == {"db": 0, "-wal": 0, "-shm": 0}
    reader.close()


# -------------------------------------------------------------------------------------- embeddings


def test_embeddings_roundtrip_order_and_invalidation(store, skill):
    ids = sorted(learn(store, skill, body=f"lesson {i}").id for i in range(3))
    rng = np.random.default_rng(0)
    vecs = {i: rng.standard_normal(6).astype(np.float32) for i in ids}
    for i in reversed(ids):
        store.set_embedding(i, vecs[i], "emb-1")
    assert store.embedder_id == "emb-1"
    got_ids, mat = store.embeddings("emb-1")
    assert got_ids == ids and mat.dtype == np.float32 and np.array_equal(mat, np.stack([vecs[i] for i in ids]))
    assert store.embeddings("emb-2")[0] == []  # another embedder's vectors never answer
    with pytest.raises(StoreError, match="invalidate"):
        store.set_embedding(ids[0], vecs[ids[0]], "emb-2")
    with pytest.raises(StoreError, match="dim"):
        store.set_embedding(ids[0], np.ones(5), "emb-1")
    assert store.invalidate_embeddings("emb-2") == 3
    assert store.embedder_id == "emb-2" and store.embeddings("emb-1")[0] == store.embeddings("emb-2")[0] == []
    assert store.conn.execute("SELECT count(*) FROM skill_deltas WHERE embedding IS NOT NULL").fetchone()[0] == 0
    store.set_embedding(ids[1], np.ones(3), "emb-2")
    assert store.embeddings("emb-2")[0] == [ids[1]]


def test_only_tier3_carries_embeddings(store, skill):
    hint = learn(store, skill, kind="tool-hint", payload={"prefer": ["search_mail"]}, section="triage")
    with pytest.raises(StoreError, match="tier-3"):
        store.set_embedding(hint.id, np.ones(4), "emb")
    with pytest.raises(StoreError, match="finite"):
        store.set_embedding(learn(store, skill).id, np.array([np.nan, 1.0]), "emb")


# ------------------------------------------------------------------------------------------- facts


def test_facts_versioned_and_undoable(store):
    u1 = store.put_fact("mail", "vip", ["a@x"], provenance=Provenance(TRUSTED))
    u2 = store.put_fact("mail", "vip", ["a@x", "b@y"], provenance=Provenance(TRUSTED))
    assert store.get_fact("mail", "vip") == ["a@x", "b@y"]
    assert store.get_fact("mail", "nope", default=frozenset()) == frozenset()
    assert [(f.key, f.value) for f in store.facts("mail")] == [("vip", ["a@x", "b@y"])]
    store.undo(u2)
    assert store.get_fact("mail", "vip") == ["a@x"]
    store.undo(u1)
    assert store.get_fact("mail", "vip") is None
    assert store.conn.execute("SELECT count(*) FROM learned_facts").fetchone()[0] == 2  # kept, retired
    with pytest.raises(StoreError, match="JSON"):
        store.put_fact("mail", "bad", object())


# ---------------------------------------------------------------------------------- bases, outcomes


def test_register_base_tracks_changes_with_history(store):
    v1 = make_skill(version="1.0")
    first = store.register_base(v1)
    assert first.new and not first.changed and first.new_digest == v1.body_digest
    same = store.register_base(v1)
    assert not same.changed and not same.new
    v2 = make_skill(version="1.1", body=v1.body + "\n## Escalation\n\nAsk a human.\n")
    moved = store.register_base(v2)
    assert moved.changed and moved.old_digest == v1.body_digest and moved.new_digest == v2.body_digest
    assert moved.old_version == "1.0" and moved.version == "1.1"
    assert [h["version"] for h in store.base_history("mail")] == ["1.0", "1.1"]


def test_outcome_ledger_moves_counters_once(store, skill):
    a = learn(store, skill)
    assert store.record_outcome(a.id, session="s1", turn="3", signal="accepted", positive=True)
    assert store.record_outcome(a.id, session="s1", turn="4", signal="corrected", positive=False)
    assert not store.record_outcome(a.id, session="s1", turn="3", signal="accepted", positive=True)
    d = store.get(a.id)
    assert (d.success_count, d.attempt_count) == (1, 2)
    assert [(o.signal, o.positive) for o in store.outcomes(a.id)] == [("accepted", True), ("corrected", False)]
    with pytest.raises(StoreError):
        store.record_outcome("delta_missing", session="s", signal="x", positive=True)


def test_memory_store(skill):
    with Store.open(":memory:") as s:
        learn(s, skill)
        assert len(s.search()) == 1


def test_transaction_batches_and_rolls_back(store, skill):
    with pytest.raises(RuntimeError):
        with store.transaction():
            learn(store, skill, body="a")
            learn(store, skill, body="b")
            raise RuntimeError("boom")
    assert store.search() == []
    with store.transaction():
        for i in range(5):
            learn(store, skill, body=f"x{i}")
    assert len(store.search()) == 5


@pytest.mark.parametrize(
    "kind, text",
    [
        ("preference", '{"body":"Keep replies short."}'),
        ("preference", '{"body": "Keep replies short.", "trigger": "a reply"}'),  # not canonical JSON text
        ("tool-hint", '{"drop":[],"prefer":["search_mail"]}'),  # a list inside: parsed again each read
        ("example", '{"input":"a","output":"b"}'),
        ("preference", '{"body":3}'),  # malformed: refused on every read, never remembered
        ("preference", '{"text":"x"}'),
    ],
)
def test_a_stored_payload_reads_as_parsing_and_checking_it_would(kind, text):
    """`store._payload` remembers the (kind, text) pairs it has checked (a read of 90 rows spends a quarter
    of its time parsing and checking them otherwise): each read is what `check_shape(kind, json.loads(text))`
    gives (the oracle), the first read and every later one, and a caller that changes what it got does not
    change the next read."""
    from overlay_kit.grammar import GrammarError, check_shape

    try:
        want = check_shape(kind, json.loads(text))
    except GrammarError as exc:
        for _ in range(2):
            with pytest.raises(GrammarError, match=str(exc)[:20]):
                store_core._payload(kind, text)
        assert (kind, text) not in store_core._CANONICAL
        return
    for _ in range(3):
        got = store_core._payload(kind, text)[0]
        assert got == want
        got["body"] = "changed by the caller"
    assert store_core._payload(kind, text)[0] == want
