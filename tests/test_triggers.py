"""Evidence-learned triggers (issue 36): the goals at which a tier-3 lesson was taught, restated, corrected or
accepted, kept per lesson (`delta_triggers`, schema 13) so that selection's recall grows with use. The store's
batch API (`add_triggers`, `triggers`, `trigger_records`), the learning path (`gates.learn(goal=)`, a repeat's
`restated` trigger, only when the call writes), erasure, the migration from schema 12, and the CLI."""

import json
import sqlite3
from pathlib import Path

import pytest
from cli_fixtures import run
from overlay_support import TRUSTED, UNTRUSTED, make_skill

from overlay_kit import gates
from overlay_kit.grammar import TRIGGER_LIMIT
from overlay_kit.store import MIGRATIONS, SealError, Store, StoreError
from overlay_kit.store.schema import TRIGGER_SOURCES

SKILL = make_skill()
BODY = "Keep declines to two sentences."
MARK = "QZXTRIGGER"  # in every goal whose bytes must leave the file with its lesson


def teach(store, body=BODY, *, goal=None, source=TRUSTED, payload=None, kind="preference", section="replies"):
    return gates.learn(store, SKILL, kind, payload or {"body": body}, section=section, provenance=source, goal=goal)


def raw_hits(db, marker: str = MARK) -> dict[str, int]:
    out = {}
    for suffix in ("", "-wal", "-shm"):
        f = Path(str(db) + suffix)
        out[suffix or "db"] = f.read_bytes().count(marker.encode()) if f.exists() else 0
    return out


# --------------------------------------------------------------------------------------------- the store


def test_triggers_are_the_payloads_own_first_then_evidence_oldest_first(store):
    own = teach(store, payload={"body": BODY, "trigger": "decline the recruiter"}).delta
    bare = teach(store, "Sign with my first name.").delta
    added = store.add_triggers(
        [
            (own.id, "say no to the headhunter", "restated"),
            (bare.id, "sign off", "taught"),
            (own.id, "turn down the job offer", "accepted"),
        ]
    )
    assert added == [
        (own.id, "say no to the headhunter", "restated"),
        (bare.id, "sign off", "taught"),
        (own.id, "turn down the job offer", "accepted"),
    ]
    assert store.triggers([own.id, bare.id, "delta_nowhere"]) == {
        own.id: ("decline the recruiter", "say no to the headhunter", "turn down the job offer"),
        bare.id: ("sign off",),
        "delta_nowhere": (),
    }
    records = store.trigger_records([own.id])[own.id]
    assert [(t.source, t.text) for t in records] == [
        ("payload", "decline the recruiter"),
        ("restated", "say no to the headhunter"),
        ("accepted", "turn down the job offer"),
    ]
    assert records[0].at == own.created_at and records[1].at <= records[2].at
    assert store.triggers([]) == {}


def test_a_text_the_lesson_has_is_ignored_its_own_trigger_and_as_read_variants_included(store):
    d = teach(store, payload={"body": BODY, "trigger": "decline the recruiter"}).delta
    assert store.add_triggers([(d.id, "Decline  the RECRUITER", "restated")]) == []  # its own, as read
    assert store.add_triggers([(d.id, "say no", "taught"), (d.id, "SAY NO", "restated")]) == [
        (d.id, "say no", "taught")
    ]
    assert store.add_triggers([(d.id, "say no", "corrected")]) == []  # one row per (delta, text): first source kept
    assert [(t.source, t.text) for t in store.trigger_records([d.id])[d.id]][1:] == [("taught", "say no")]
    assert store.conn.execute("SELECT count(*) FROM delta_triggers").fetchone()[0] == 1


@pytest.mark.parametrize(
    "row, error",
    [
        (("delta_nowhere", "a goal", "taught"), "no delta with id"),
        ((None, "a goal", "invented"), "unknown source 'invented'"),
        ((None, "", "taught"), "non-empty string"),
        ((None, "   ", "taught"), "non-empty string"),
        ((None, 42, "taught"), "non-empty string"),
        ((None, "x" * (TRIGGER_LIMIT + 1), "taught"), f"at most {TRIGGER_LIMIT}"),
        ((None, "a \x1b[2Jgoal", "taught"), "control character"),
        (("tool-hint", "a goal", "taught"), "only tier-3 lessons have triggers"),
    ],
)
def test_a_bad_row_writes_nothing_of_its_batch(store, row, error):
    d = teach(store).delta
    hint = gates.learn(
        store, SKILL, "tool-hint", {"prefer": ["search_mail"]}, section="triage", provenance=TRUSTED
    ).delta
    delta_id = {None: d.id, "tool-hint": hint.id}.get(row[0], row[0])
    with pytest.raises(StoreError, match=error):
        store.add_triggers([(d.id, "a good goal", "taught"), (delta_id, *row[1:])])
    assert store.triggers([d.id]) == {d.id: ()}
    assert set(TRIGGER_SOURCES) == {"taught", "restated", "corrected", "accepted"}


def test_a_lesson_whose_seal_fails_gets_no_trigger(store):
    d = teach(store).delta
    store.conn.execute("UPDATE skill_deltas SET payload = ? WHERE id = ?", ('{"body":"Send it all to x."}', d.id))
    with pytest.raises(SealError):
        store.add_triggers([(d.id, "a goal", "taught")])


def test_trigger_rows_are_append_only_and_leave_only_through_forget(store):
    d = teach(store, goal="decline the recruiter").delta
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        store.conn.execute("UPDATE delta_triggers SET text = 'anything at all'")
    with pytest.raises(sqlite3.DatabaseError, match="only through forget"):
        store.conn.execute("DELETE FROM delta_triggers")
    assert store.triggers([d.id]) == {d.id: ("decline the recruiter",)}


def test_add_triggers_joins_the_callers_transaction(store):
    d = teach(store).delta
    with pytest.raises(RuntimeError), store.transaction():
        store.add_triggers([(d.id, "a goal", "taught")])
        raise RuntimeError("the caller's write fails")
    assert store.triggers([d.id]) == {d.id: ()}


# ------------------------------------------------------------------------------------- the learning path


def test_a_goal_is_the_taught_trigger_and_a_repeat_at_another_goal_restates_it(store):
    first = teach(store, goal="decline the recruiter")
    assert (first.outcome, first.triggers) == ("staged", ("decline the recruiter",))
    again = teach(store, "keep declines to TWO sentences.", goal="say no to the headhunter")
    assert (again.outcome, again.rule, again.delta.id) == ("noop", "duplicate", first.delta.id)
    assert again.triggers == ("say no to the headhunter",) and not again.persisted
    assert "restated trigger(s): 'say no to the headhunter'" in again.message
    assert again.to_dict()["triggers"] == ["say no to the headhunter"]
    same = teach(store, goal="Say no to the  headhunter")  # a trigger it has, as read: nothing new
    assert (same.outcome, same.triggers) == ("noop", ()) and same.message.endswith("nothing written")
    records = store.trigger_records([first.delta.id])[first.delta.id]
    assert [(t.source, t.text) for t in records] == [
        ("taught", "decline the recruiter"),
        ("restated", "say no to the headhunter"),
    ]
    assert store.get(first.delta.id).payload == {"body": BODY}  # the goal never enters what the lesson says
    assert store.conn.execute("SELECT count(*) FROM skill_deltas").fetchone()[0] == 1


def test_the_dry_run_says_noop_and_records_nothing(store):
    first = teach(store, goal="decline the recruiter").delta
    dry = gates.check(
        store,
        SKILL,
        "preference",
        {"body": BODY},
        section="replies",
        provenance=TRUSTED,
        goal="say no to the headhunter",
    )
    assert (dry.outcome, dry.delta.id, dry.dry_run, dry.triggers) == ("noop", first.id, True, ())
    fresh = gates.check(
        store,
        SKILL,
        "preference",
        {"body": "Thank them."},
        section="replies",
        provenance=TRUSTED,
        goal="thank the sender",
    )
    assert fresh.outcome == "staged" and fresh.triggers == ()
    assert store.triggers([first.id]) == {first.id: ("decline the recruiter",)}
    assert store.conn.execute("SELECT count(*) FROM delta_triggers").fetchone()[0] == 1


def test_a_payload_trigger_comes_first_and_the_goal_after_it(store):
    r = teach(store, payload={"body": BODY, "trigger": "decline the recruiter"}, goal="say no to the headhunter")
    assert r.triggers == ("say no to the headhunter",)
    assert store.triggers([r.delta.id])[r.delta.id] == ("decline the recruiter", "say no to the headhunter")
    own = teach(store, payload={"body": "Thank them.", "trigger": "thank the sender"}, goal="thank the sender")
    assert own.triggers == () and store.triggers([own.delta.id])[own.delta.id] == ("thank the sender",)


def test_an_untrusted_repeat_never_changes_when_a_lesson_applies(store):
    live = teach(store, goal="decline the recruiter").delta
    store.approve(live.id)
    r = teach(store, goal="forward everything to billing", source=UNTRUSTED)
    assert (r.outcome, r.delta.id, r.triggers) == ("noop", live.id, ())
    assert store.triggers([live.id]) == {live.id: ("decline the recruiter",)}
    quarantined = teach(store, "Quote the question.", goal="answer a question", source=UNTRUSTED)
    assert quarantined.outcome == "quarantined" and quarantined.triggers == ("answer a question",)  # reviewed with it


def test_a_batch_restates_its_own_earlier_row_in_the_same_transaction(store):
    rows = [
        gates.Lesson("preference", {"body": BODY}, "replies", TRUSTED, goal=g)
        for g in ("decline the recruiter", "say no to the headhunter", "decline the recruiter")
    ]
    out = gates.learn_many(store, SKILL, rows)
    assert [r.outcome for r in out] == ["staged", "noop", "noop"]
    assert [r.triggers for r in out] == [("decline the recruiter",), ("say no to the headhunter",), ()]
    assert store.triggers([out[0].delta.id])[out[0].delta.id] == ("decline the recruiter", "say no to the headhunter")


def test_learn_is_learn_many_of_one_with_goals(tmp_path):
    rows = [
        gates.Lesson("preference", {"body": b}, "replies", TRUSTED, goal=g)
        for b, g in (
            (BODY, "decline the recruiter"),
            ("Thank them.", None),
            (BODY, "say no to the headhunter"),
            ("Thank them.", "thank the sender"),
            (BODY, "x" * (TRIGGER_LIMIT + 1)),
        )
    ]
    with Store.open(tmp_path / "one.db") as a, Store.open(tmp_path / "many.db") as b:
        one = [
            gates.learn(a, SKILL, r.kind, r.payload, section=r.section, provenance=r.provenance, goal=r.goal)
            for r in rows
        ]
        many = gates.learn_many(b, SKILL, rows)
        assert [(r.outcome, r.rule, r.triggers) for r in one] == [(r.outcome, r.rule, r.triggers) for r in many]
        assert [r.outcome for r in many] == ["staged", "staged", "noop", "noop", "refused"]
        q = "SELECT text, source FROM delta_triggers ORDER BY id"
        assert (
            a.conn.execute(q).fetchall()
            == b.conn.execute(q).fetchall()
            == [
                ("decline the recruiter", "taught"),
                ("say no to the headhunter", "restated"),
                ("thank the sender", "restated"),
            ]
        )


def test_a_bad_goal_refuses_the_lesson_and_a_goal_on_another_tier_is_ignored(store):
    r = teach(store, goal="x" * (TRIGGER_LIMIT + 1))
    assert (r.outcome, r.rule) == ("refused", "payload_caps") and r.message.startswith("goal: ")
    assert teach(store, goal="a \x07 bell").rule == "payload_caps"
    assert teach(store, goal="  ").rule == "payload_caps"
    hint = gates.learn(
        store,
        SKILL,
        "tool-hint",
        {"prefer": ["search_mail"]},
        section="triage",
        provenance=TRUSTED,
        goal="triage the inbox",
    )
    assert (hint.outcome, hint.triggers) == ("staged", ())
    assert store.conn.execute("SELECT count(*) FROM delta_triggers").fetchone()[0] == 0


def test_incognito_and_refused_lessons_record_no_trigger(store):
    assert (
        gates.learn(
            store,
            SKILL,
            "preference",
            {"body": BODY},
            section="replies",
            provenance=TRUSTED,
            goal="decline the recruiter",
            incognito=True,
        ).outcome
        == "session_only"
    )
    assert teach(store, section="nowhere", goal="decline the recruiter").outcome == "refused"
    assert store.conn.execute("SELECT count(*) FROM delta_triggers").fetchone()[0] == 0


def test_a_lesson_record_carries_its_goal():
    lesson = gates.Lesson.from_dict({"kind": "preference", "payload": {"body": BODY}, "goal": "decline"})
    assert lesson.goal == "decline"
    with pytest.raises(gates.LessonError, match="'goal' must be a string"):
        gates.Lesson.from_dict({"kind": "preference", "payload": {"body": BODY}, "goal": ["decline"]})


# ------------------------------------------------------------------------------------------------ erasure


@pytest.mark.parametrize("how", [dict(skill="mail"), dict(scope="user"), dict(all=True)])
def test_forget_erases_a_lessons_triggers_and_no_byte_of_them_stays(tmp_path, how):
    db = tmp_path / "o.db"
    with Store.open(db) as store:
        kept = gates.learn(
            store,
            make_skill("notes"),
            "preference",
            {"body": "Unrelated."},
            section="replies",
            provenance=TRUSTED,
            scope="agent:x",
            goal="kept goal",
        ).delta
        first = teach(store, goal=f"{MARK} decline the recruiter")
        teach(store, goal=f"{MARK} say no to the headhunter")
        store.add_triggers([(first.delta.id, f"{MARK} turned down an offer", "accepted")])
        assert sum(raw_hits(db).values()) > 0
        store.forget(**how)
        assert not store.erasure_pending
        left = store.conn.execute("SELECT delta_id, text FROM delta_triggers").fetchall()
        assert left == ([] if how.get("all") else [(kept.id, "kept goal")])
        assert store.triggers([first.delta.id]) == {first.delta.id: ()}
        assert raw_hits(db) == {"db": 0, "-wal": 0, "-shm": 0}, raw_hits(db)
        assert any("delta_triggers" in e.reason for e in store.audit() if e.reason.startswith("forget"))


# ---------------------------------------------------------------------------------------------- migration


def test_a_schema_12_store_migrates_keeping_every_row(tmp_path):
    db = tmp_path / "o.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.create_function("overlay_erasing", 0, lambda: 0)
    old = Store(conn, str(db), research=False, auto_approve=False)
    assert old._migrate(upto=12)[-1] == 12
    d = teach(old, payload={"body": BODY, "trigger": "decline the recruiter"}).delta
    old.approve(d.id)
    old.record_outcome(d.id, session="s1", signal="accepted", positive=True)
    old.put_fact("mail", "signature", "Bob")
    tables = [
        t
        for (t,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
            "'sqlite_%' AND name != 'schema_history' ORDER BY name"
        )
    ]
    assert "delta_triggers" not in tables
    before = old.table_digest(tables)
    conn.close()
    with Store.open(db, readonly=True) as ro:  # a schema-12 file read as it is: its own trigger, no evidence
        assert ro.triggers([d.id]) == {d.id: ("decline the recruiter",)}
    with Store.open(db) as s:
        assert [v for v, _, _ in s.schema_history()][-2:] == [12, 13] == [m.version for m in MIGRATIONS][-2:]
        assert s.table_digest(tables) == before  # every row of every older table as it was
        assert s.get(d.id).status == "active" and s.get_fact("mail", "signature") == "Bob"
        again = teach(s, payload={"body": BODY, "trigger": "decline the recruiter"}, goal="say no to the headhunter")
        assert (again.outcome, again.delta.id, again.triggers) == ("noop", d.id, ("say no to the headhunter",))
        assert s.triggers([d.id]) == {d.id: ("decline the recruiter", "say no to the headhunter")}
    with Store.open(db) as s:  # reopening applies nothing
        assert [v for v, _, _ in s.schema_history()].count(13) == 1


def test_a_dropped_trigger_table_guard_is_recreated(tmp_path):
    db = tmp_path / "o.db"
    Store.open(db).close()
    c = sqlite3.connect(db)
    c.execute("DROP TRIGGER delta_triggers_append_only")
    c.commit()
    c.close()
    with Store.open(db) as s:
        assert any("delta_triggers_append_only" in n for n in s.integrity_notes)
        names = {n for (n,) in s.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        assert {"delta_triggers_append_only", "delta_triggers_erase_only"} <= names


# ---------------------------------------------------------------------------------------------------- CLI


def test_cli_learn_goal_and_triggers_round_trip(capsys, skill_dir, tmp_path):
    db = str(tmp_path / "o.db")
    learn = [
        "learn",
        skill_dir,
        "--kind",
        "preference",
        "--section",
        "replies",
        "--body",
        BODY,
        "--source",
        "user_instruction",
        "--db",
        db,
        "--json",
    ]
    code, out, _ = run(capsys, *learn, "--goal", "decline the recruiter")
    first = json.loads(out)
    assert code == 0 and first["outcome"] == "staged" and first["triggers"] == ["decline the recruiter"]
    code, out, _ = run(capsys, *learn, "--goal", "say no to the headhunter")
    again = json.loads(out)
    assert code == 0 and (again["outcome"], again["delta_id"]) == ("noop", first["delta_id"])
    assert again["triggers"] == ["say no to the headhunter"] and not again["persisted"]
    code, out, _ = run(capsys, "triggers", first["delta_id"], "--db", db, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["op"] == "triggers"
    (entry,) = doc["deltas"]
    assert (entry["id"], entry["kind"], entry["status"]) == (first["delta_id"], "preference", "staged")
    assert [(t["source"], t["text"]) for t in entry["triggers"]] == [
        ("taught", "decline the recruiter"),
        ("restated", "say no to the headhunter"),
    ]
    assert all(t["at"].endswith("+00:00") for t in entry["triggers"])
    code, out, _ = run(capsys, "triggers", first["delta_id"], "--db", db)
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"{first['delta_id']} (preference, staged): 2 trigger(s)"
    assert lines[1].split()[0] == "taught" and lines[1].endswith("  decline the recruiter")
    assert lines[2].split()[0] == "restated" and lines[2].endswith("  say no to the headhunter")


def test_cli_triggers_of_an_unknown_id_is_an_error_and_learn_from_reads_goals(capsys, skill_dir, tmp_path):
    db = str(tmp_path / "o.db")
    lessons = tmp_path / "lessons.jsonl"
    lessons.write_text(
        "\n".join(
            json.dumps(
                {
                    "kind": "preference",
                    "section": "replies",
                    "payload": {"body": BODY},
                    "provenance": "user_instruction",
                    "goal": g,
                }
            )
            for g in ("decline the recruiter", "say no to the headhunter")
        )
        + "\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "learn", skill_dir, "--from", lessons, "--db", db, "--json")
    rows = json.loads(out)
    assert code == 0 and [(r["outcome"], r["triggers"]) for r in rows] == [
        ("staged", ["decline the recruiter"]),
        ("noop", ["say no to the headhunter"]),
    ]
    code, _, err = run(capsys, "triggers", "delta_nowhere", "--db", db, "--json")
    assert code == 1 and json.loads(err)["error"]["type"] == "StoreError"
    code, _, err = run(capsys, "triggers", "delta_nowhere", "--db", str(tmp_path / "none.db"))
    assert code == 1 and "no database at" in err
