"""gates.learn_many and `overlay-kit learn --from FILE.jsonl`: every rule on every row, one transaction,
each row's verdict, nothing partial."""

from __future__ import annotations

import json

import pytest
from overlay_support import MAIL_BODY, TRUSTED, UNTRUSTED
from test_gates import CASES, SKILL

from overlay_kit import gates
from overlay_kit.cli import main
from overlay_kit.store import Store, StoreError


def lesson(kw: dict) -> gates.Lesson:
    kw = dict(kw)
    kw.pop("skill", None)
    ev = kw.pop("evidence", None)
    return gates.Lesson(
        kw.pop("kind", "preference"),
        kw.pop("payload", {"body": "Keep replies short."}),
        kw.pop("section", "replies"),
        kw.pop("source", TRUSTED),
        evidence=ev,
        **kw,
    )


def counts(store) -> tuple[int, int, int]:
    q = store.conn.execute
    return (
        q("SELECT count(*) FROM skill_deltas").fetchone()[0],
        q("SELECT count(*) FROM learned_facts").fetchone()[0],
        q("SELECT count(*) FROM delta_audit").fetchone()[0],
    )


@pytest.mark.parametrize("needs_research", [False, True])
def test_every_rule_decides_its_row_in_one_batch(needs_research, store, research):
    """One batch holds a row for each rule (on this skill; capability_bearing is per skill, below): each row
    gets the verdict `learn` would give it alone, and only the accepted rows are written."""
    s = research if needs_research else store
    names = [n for n, (_, kw, r) in CASES.items() if r == needs_research and "skill" not in kw]
    rows = [lesson(CASES[n][1]) for n in names] * 2  # every rule twice, interleaved with the others
    results = gates.learn_many(s, SKILL, rows)
    expected, first = [], {}  # an accepted lesson repeating an earlier accepted one (same text and place) is a noop
    for k, (n, row) in enumerate(zip(names * 2, rows)):
        key = (row.kind, row.section, row.scope, json.dumps(row.payload, sort_keys=True))
        repeat = CASES[n][0] in ("staged", "quarantined", "active") and key in first
        expected.append(("noop", "duplicate") if repeat else (CASES[n][0], n))
        if repeat:
            assert results[k].delta.id == results[first[key]].delta.id and not results[k].persisted
        elif CASES[n][0] in ("staged", "quarantined", "active"):
            first[key] = k
    assert [(r.outcome, r.rule) for r in results] == expected
    for row, r in zip(rows, results):
        if r.outcome == "noop":
            continue
        alone = gates.check(
            s,
            SKILL,
            row.kind,
            row.payload,
            section=row.section,
            provenance=row.provenance,
            scope=row.scope,
            evidence=row.evidence,
            incognito=row.incognito,
            settings=gates.GateSettings(noop_repeats=False),
        )  # the rules' verdict: it is stored now
        assert (r.outcome, r.rule, r.message, r.warnings) == (alone.outcome, alone.rule, alone.message, alone.warnings)
    deltas = [r.delta for r in results if r.delta is not None and r.persisted]
    facts = sum(r.outcome == "routed" for r in results)
    assert counts(s) == (len(deltas), facts, len(deltas))  # one audit row per delta
    assert all(s.get(d.id) == d for d in deltas)  # each result is the stored row, without a re-read
    if not needs_research:
        assert {r.rule for r in results} - {"duplicate"} == {
            n for n, e in zip(names * 2, expected) if e != ("noop", "duplicate")
        }
        assert {"known_kind", "payload_shape", "known_section", "quotes_evidence", "stage_trusted"} <= set(names)


def test_capability_bearing_refuses_every_row_of_its_skill(store):
    _, kw, _ = CASES["capability_bearing"]
    results = gates.learn_many(
        store,
        kw["skill"],
        [lesson({}), lesson({"kind": "fact", "section": None, "payload": {"key": "tz", "value": "UTC"}})],
    )
    assert [r.rule for r in results] == ["capability_bearing"] * 2 and counts(store) == (0, 0, 0)


def test_a_failure_while_writing_leaves_nothing(store, monkeypatch):
    """Two rows minted with one id collide on insert: the routed fact and the rows before the collision roll
    back with them."""
    monkeypatch.setattr(gates, "new_delta_ids", lambda n: ["delta_0000000000004000"] * n)
    rows = [
        lesson({}),
        lesson(CASES["route_fact"][1]),
        lesson({"source": UNTRUSTED, "payload": {"body": "Other."}}),
        lesson({"payload": {"body": "A third."}}),
    ]
    with pytest.raises(StoreError):
        gates.learn_many(store, SKILL, rows)
    assert counts(store) == (0, 0, 0)


def test_a_malformed_row_is_named_and_nothing_is_written(store):
    with pytest.raises(ValueError, match="lesson 1: missing field 'payload'"):
        gates.learn_many(
            store,
            SKILL,
            [
                {"kind": "preference", "payload": {"body": "Short."}, "section": "triage", "provenance": TRUSTED},
                {"kind": "preference"},
            ],
        )
    assert counts(store) == (0, 0, 0)


def test_change_hooks_fire_once_for_the_batch(store):
    seen = []
    store.on_change(seen.append)
    results = gates.learn_many(store, SKILL, [lesson({}), lesson({"source": UNTRUSTED}), lesson({"section": "x"})])
    assert seen == [[r.delta.id for r in results if r.persisted]]


def test_auto_approved_rows_are_active_with_an_approval_time(tmp_path):
    with Store.open(tmp_path / "a.db", auto_approve=True) as s:
        (r,) = gates.learn_many(s, SKILL, [lesson({})])
        assert r.outcome == "active" and r.delta.approved_at is not None and s.get(r.delta.id) == r.delta


def test_batch_rows_match_single_learns(tmp_path):
    """The rows a batch writes are the rows `learn` writes, column for column (ids and times aside)."""
    rows = [
        lesson({}),
        lesson({"source": UNTRUSTED, "payload": {"body": "See https://example.com first."}}),
        lesson({"section": "triage", "payload": {"body": "Urgent first.", "trigger": "urgent mail"}}),
    ]
    cols = "base_name, base_root, base_version, scope, kind, tier, anchor, payload, provenance, status, findings"
    with Store.open(tmp_path / "one.db") as a, Store.open(tmp_path / "many.db") as b:
        for row in rows:
            gates.learn(a, SKILL, row.kind, row.payload, section=row.section, provenance=row.provenance)
        gates.learn_many(b, SKILL, rows)
        got = [
            b.conn.execute(f"SELECT {cols} FROM skill_deltas ORDER BY rowid").fetchall(),
            b.conn.execute("SELECT who, from_status, to_status, reason FROM delta_audit ORDER BY seq").fetchall(),
        ]
        want = [
            a.conn.execute(f"SELECT {cols} FROM skill_deltas ORDER BY rowid").fetchall(),
            a.conn.execute("SELECT who, from_status, to_status, reason FROM delta_audit ORDER BY seq").fetchall(),
        ]
    assert got == want


# ------------------------------------------------------------------------------------------------ CLI


def skill_dir(tmp_path):
    d = tmp_path / "mail"
    d.mkdir()
    (d / "SKILL.md").write_text(
        "---\nname: mail\ndescription: test skill\nmetadata:\n  gaia:\n    version: '1.0'\n"
        "    tools: [search_mail, draft_reply, send_email, archive_thread]\n---\n" + MAIL_BODY,
        encoding="utf-8",
    )
    return d


def write_jsonl(path, rows) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return str(path)


GOOD = [
    {
        "kind": "preference",
        "payload": {"body": "Keep replies short."},
        "section": "replies",
        "provenance": "user_instruction",
    },
    {
        "kind": "preference",
        "payload": {"body": "Label invoices."},
        "section": "triage",
        "provenance": {"source": "observed_content", "turns": ["s1/t2"]},
    },
    {"kind": "preference", "payload": {"body": "Nowhere."}, "section": "signatures", "provenance": "user_instruction"},
]


def test_cli_learn_from_reports_each_line(tmp_path, capsys):
    db, src = tmp_path / "o.db", write_jsonl(tmp_path / "l.jsonl", [GOOD[0], "", GOOD[1], GOOD[2]])
    code = main(["learn", str(skill_dir(tmp_path)), "--from", src, "--db", str(db), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1  # a refused row makes the exit status 1, like a refused `learn`
    assert [(r["line"], r["outcome"]) for r in out] == [(1, "staged"), (3, "quarantined"), (4, "refused")]
    assert out[2]["rule"] == "known_section"
    with Store.open(db) as s:
        assert sorted(d.id for d in s.search("mail")) == sorted(r["delta_id"] for r in out[:2])


def test_cli_learn_from_text_output(tmp_path, capsys):
    src = write_jsonl(tmp_path / "l.jsonl", GOOD[:2])
    assert main(["learn", str(skill_dir(tmp_path)), "--from", src, "--db", str(tmp_path / "o.db")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{src}:1: staged delta_") and out[1].startswith(f"{src}:2: quarantined delta_")
    assert out[-1] == "2 lessons: 1 quarantined, 1 staged"


@pytest.mark.parametrize(
    "bad, why",
    [
        ("{not json", "Expecting property name"),
        ('{"kind": "preference"}', "missing field 'payload'"),
        ('["a list"]', "a lesson is a JSON object"),
        ('{"kind": "preference", "payload": {}, "colour": 1}', "unknown field"),
    ],
)
def test_cli_learn_from_a_bad_line_names_it_and_writes_nothing(tmp_path, capsys, bad, why):
    db = tmp_path / "o.db"
    src = write_jsonl(tmp_path / "l.jsonl", [GOOD[0], GOOD[1], bad, GOOD[0]])
    assert main(["learn", str(skill_dir(tmp_path)), "--from", src, "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert f"{src}:3:" in err and why in err
    assert not db.exists()  # read and checked before the store is opened


def test_cli_learn_from_refuses_single_lesson_flags(tmp_path, capsys):
    src = write_jsonl(tmp_path / "l.jsonl", GOOD[:1])
    with pytest.raises(SystemExit) as exc:
        main(["learn", str(skill_dir(tmp_path)), "--from", src, "--kind", "preference", "--db", str(tmp_path / "o")])
    assert exc.value.code == 2 and "--kind does not go with --from" in capsys.readouterr().err


def test_cli_learn_without_from_still_needs_kind_and_source(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["learn", str(skill_dir(tmp_path)), "--body", "x", "--db", str(tmp_path / "o.db")])
    assert exc.value.code == 2 and "--kind, --source" in capsys.readouterr().err


def test_batch_ids_have_the_form_of_single_ones(monkeypatch):
    import re
    import uuid

    from overlay_kit.grammar import new_delta_id, new_delta_ids

    form = re.compile(r"delta_[0-9a-f]{12}4[0-9a-f]{3}")  # the first 8 bytes of a uuid4
    ids = new_delta_ids(500)
    assert all(form.fullmatch(i) for i in ids + [new_delta_id()]) and len(set(ids)) == 500
    assert ids == sorted(ids) and len({i[6] for i in ids}) == 16  # in key order, drawn over the whole range
    drawn = iter(range(1, 10))  # a seeded study replaces uuid.uuid4: the batch draws through it, in order
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(drawn) << 64, version=4))
    assert new_delta_ids(2) == [f"delta_{uuid.UUID(int=k << 64, version=4).hex[:16]}" for k in (1, 2)]
    drawn = iter(range(9, 0, -1))
    assert new_delta_ids(2) == [f"delta_{uuid.UUID(int=k << 64, version=4).hex[:16]}" for k in (8, 9)]


def test_the_collector_is_back_as_it_was_after_a_batch(store):
    import gc

    gates.learn_many(store, SKILL, [lesson({})])
    assert gc.isenabled()
    gc.disable()
    try:
        gates.learn_many(store, SKILL, [lesson({})])
        assert not gc.isenabled()
    finally:
        gc.enable()
