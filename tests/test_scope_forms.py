"""Issue 40 §4: a scope no reader reads (`USER`, `admin`, `"user "`, `*`, `agent:`) was accepted, reported
"active next session" and never applied. Every write boundary now refuses it, naming the valid forms, and writes
nothing: `gates.learn` / `check` / `learn_many`, `learn --scope`, a `learn --from` line."""

import json

import pytest
from cli_fixtures import run
from overlay_support import TRUSTED, make_skill

from overlay_kit import gates
from overlay_kit.common import FieldError
from overlay_kit.grammar import SCOPE_FORMS, ScopeError, check_scope
from overlay_kit.resolve import resolve
from overlay_kit.store import Store

SKILL = make_skill()
BAD = [
    "USER",
    "admin",
    "user ",
    " user",
    "*",
    "agent:",
    "agent:Bob",
    "agent:-x",
    "Agent:bob",
    "sender:",
    "sender: x@y.z",
    "user:work\n",
    "path:a\u202eb",
    "",
    "x" * 300,
    "user\u200b",
]
GOOD = [
    "user",
    "agent:triage",
    "agent:mail.bot_2",
    "user:work",
    "sender:cfo@company.com",
    "sender:@hooli.com",
    "person:Mary Ann",
    "path:third_party/",
]


def rows(store) -> int:
    return sum(
        store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("skill_deltas", "learned_facts", "delta_audit")
    )


@pytest.mark.parametrize("scope", BAD)
def test_check_scope_refuses_what_no_reader_reads(scope):
    with pytest.raises(ScopeError) as exc:
        check_scope(scope)
    assert isinstance(exc.value, FieldError) and exc.value.field == "scope"
    assert "'user'" in str(exc.value) and "'agent:NAME'" in str(exc.value) and "sender:ADDRESS" in str(exc.value)


@pytest.mark.parametrize("scope", GOOD)
def test_check_scope_keeps_every_valid_form_as_given(scope):
    assert check_scope(scope) == scope


def test_the_forms_are_listed():
    assert SCOPE_FORMS[:2] == ("user", "agent:NAME")


@pytest.mark.parametrize("scope", ["USER", "admin", "user ", "*", "agent:"])
@pytest.mark.parametrize(
    "kind, payload, section",
    [("preference", {"body": "Keep replies short."}, "replies"), ("fact", {"key": "tz", "value": "UTC"}, None)],
)
def test_gates_refuse_a_bad_scope_and_write_nothing(store, scope, kind, payload, section):
    before = rows(store)
    with pytest.raises(ScopeError, match="is not a scope"):
        gates.learn(store, SKILL, kind, payload, section=section, provenance=TRUSTED, scope=scope)
    with pytest.raises(ScopeError):
        gates.check(store, SKILL, kind, payload, section=section, provenance=TRUSTED, scope=scope)
    assert rows(store) == before


def test_learn_many_refuses_the_whole_batch_naming_the_row(store):
    good = gates.Lesson("preference", {"body": "Keep replies short."}, "replies", TRUSTED, "user")
    bad = gates.Lesson("preference", {"body": "Sign off with Best."}, "replies", TRUSTED, "admin")
    with pytest.raises(ScopeError, match=r"^lesson 1: scope: 'admin' is not a scope") as exc:
        gates.learn_many(store, SKILL, [good, bad])
    assert exc.value.field == "scope"
    with pytest.raises(ScopeError, match=r"^lesson 0: scope: '\*'"):
        gates.learn_many(
            store,
            SKILL,
            [
                {
                    "kind": "preference",
                    "payload": {"body": "x"},
                    "section": "replies",
                    "provenance": TRUSTED,
                    "scope": "*",
                }
            ],
        )
    assert rows(store) == 0


def test_a_valid_scope_is_applied_where_it_is_read(tmp_path):
    """What is accepted is read: `agent:NAME` by that agent's handle, `user` by everyone; a qualified scope by a
    resolve that names it, and its write says so."""
    with Store.open(tmp_path / "o.db", auto_approve=True) as s:
        mine = gates.learn(
            s, SKILL, "preference", {"body": "Mine only."}, section="replies", provenance=TRUSTED, scope="agent:triage"
        )
        work = gates.learn(
            s, SKILL, "preference", {"body": "Work only."}, section="replies", provenance=TRUSTED, scope="user:work"
        )
        assert mine.outcome == work.outcome == "active" and not mine.warnings
        assert any("applied only where a resolve names this scope" in w for w in work.warnings)
    with Store.open(tmp_path / "o.db", agent="triage") as s:
        assert "Mine only." in resolve(SKILL, s, embedder=False).text
        assert "Work only." not in resolve(SKILL, s, embedder=False).text
        assert "Work only." in resolve(SKILL, s, scope=["user", "user:work"], embedder=False).text


@pytest.mark.parametrize("scope", ["USER", "admin", "user ", "*", "agent:"])
def test_cli_learn_scope_refused_in_one_line(capsys, skill_dir, tmp_path, scope):
    db = tmp_path / "o.db"
    args = [
        "learn",
        skill_dir,
        "--kind",
        "preference",
        "--section",
        "replies",
        "--body",
        "Keep it short.",
        "--source",
        "user_instruction",
        "--auto-approve",
        "--scope",
        scope,
        "--db",
        db,
    ]
    code, out, err = run(capsys, *args)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("overlay-kit learn: error: scope: ") and "'agent:NAME'" in err
    assert "active" not in err
    code, out, err = run(capsys, *args, "--json")
    assert code == 1 and out == ""
    assert json.loads(err)["error"]["type"] == "ScopeError"
    if db.exists():
        with Store.open(db) as s:
            assert rows(s) == 0


def test_cli_learn_from_file_with_a_bad_scope_writes_nothing(capsys, skill_dir, tmp_path):
    db = tmp_path / "o.db"
    f = tmp_path / "lessons.jsonl"
    f.write_text(
        json.dumps(
            {"kind": "preference", "payload": {"body": "One."}, "section": "replies", "provenance": "user_instruction"}
        )
        + "\n"
        + json.dumps(
            {
                "kind": "preference",
                "payload": {"body": "Two."},
                "section": "replies",
                "provenance": "user_instruction",
                "scope": "USER",
            }
        )
        + "\n"
    )
    code, out, err = run(capsys, "learn", skill_dir, "--from", f, "--db", db, "--json")
    assert code == 1 and out == ""
    error = json.loads(err)["error"]
    assert error["where"] == f"{f}:2 [scope]" and "'USER' is not a scope" in error["message"]
    assert not db.exists()
