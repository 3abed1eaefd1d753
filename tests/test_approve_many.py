"""Issue 40 §2: `approve` takes many ids or a filter. `Store.approve` is `Store.approve_many` with one id (a batch of
one): one transaction, one undo handle, all or nothing. The CLI: `approve ID [ID ...]`, or `approve --pending |
--orphaned [--skill S] [--source SRC]`, which lists what matches and approves it once confirmed (`--yes`, or `y`)."""

import io
import json

import pytest
from cli_fixtures import run
from overlay_support import TRUSTED, UNTRUSTED, make_skill

from overlay_kit import gates
from overlay_kit.skill import find_skill
from overlay_kit.store import Store, StoreError

SKILL, OTHER = make_skill(), make_skill("other")


def learn(store, body, *, skill=SKILL, source=TRUSTED):
    return gates.learn(store, skill, "preference", {"body": body}, section="triage", provenance=source).delta.id


def statuses(store, ids):
    return [store.get(i).status for i in ids]


def test_approve_many_is_one_transaction_with_one_undo(store):
    ids = [learn(store, f"Lesson {n}.") for n in range(3)] + [learn(store, "Odd one.", source=UNTRUSTED)]
    audit = len(store.audit())
    undo = store.approve_many(ids + ids[:1])  # an id twice counts once
    assert undo.op == "approve" and undo.ids == tuple(ids)
    assert statuses(store, ids) == ["active"] * 4
    assert len(store.audit()) == audit + 4
    store.undo(undo)
    assert statuses(store, ids) == ["staged", "staged", "staged", "quarantined"]


def test_one_bad_id_refuses_the_whole_batch(store):
    ids = [learn(store, f"Lesson {n}.") for n in range(2)]
    store.revert(ids[1])
    with pytest.raises(StoreError, match=f"delta {ids[1]} is archived"):
        store.approve_many(ids)
    with pytest.raises(StoreError):
        store.approve_many([ids[0], "delta_nope"])
    assert statuses(store, ids) == ["staged", "archived"]
    with pytest.raises(StoreError, match="at least one"):
        store.approve_many([])


def test_approve_of_one_id_is_the_batch_form(store, monkeypatch):
    """One implementation: `approve(id)` goes through `approve_many([id])`, and its handle is as before."""
    seen = []
    real = Store.approve_many
    monkeypatch.setattr(
        Store, "approve_many", lambda self, ids, who="user": seen.append(list(ids)) or real(self, ids, who=who)
    )
    i = learn(store, "Keep it short.")
    undo = store.approve(i)
    assert seen == [[i]] and undo.op == "approve" and undo.ids == (i,)
    with pytest.raises(StoreError, match="is active; only staged, quarantined, orphaned can be approved"):
        store.approve(i)


# ---------------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def db(tmp_path, skill_dir):
    """A database with three pending lessons of `mail` (two trusted, one quarantined), one of `other`, one active."""
    path = tmp_path / "o.db"
    with Store.open(path) as s:
        mail = find_skill(str(skill_dir))
        ids = {
            "a": learn(s, "Reply within a day.", skill=mail),
            "b": learn(s, "Sign off with Best.", skill=mail),
            "q": learn(s, "Forward invoices to billing.", skill=mail, source=UNTRUSTED),
            "o": learn(s, "Keep threads short.", skill=OTHER),
            "done": learn(s, "Already on.", skill=mail),
        }
        s.approve(ids["done"])
    return path, ids


def test_cli_approve_one_id_output_is_unchanged(capsys, db):
    path, ids = db
    code, out, _ = run(capsys, "approve", ids["a"], "--db", path, "--json")
    assert code == 0 and json.loads(out) == {"op": "approve", "deltas": [{"id": ids["a"], "status": "active"}]}
    code, out, _ = run(capsys, "approve", ids["b"], "--db", path)
    assert code == 0 and out == f"approve: {ids['b']} is now active\n"


def test_cli_approve_many_ids_all_or_nothing(capsys, db):
    path, ids = db
    code, out, _ = run(capsys, "approve", ids["a"], ids["q"], "--db", path, "--json")
    assert code == 0 and json.loads(out)["deltas"] == [
        {"id": ids["a"], "status": "active"},
        {"id": ids["q"], "status": "active"},
    ]
    code, _, err = run(capsys, "approve", ids["b"], ids["done"], "--db", path)
    assert code == 1 and f"delta {ids['done']} is active" in err and err.count("\n") == 1
    with Store.open(path) as s:
        assert s.get(ids["b"]).status == "staged"  # nothing of the refused batch was approved


def test_cli_approve_a_filter_lists_then_needs_confirmation(capsys, db, monkeypatch):
    path, ids = db
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # no answer: not approved
    code, out, err = run(capsys, "approve", "--pending", "--skill", "mail", "--db", path)
    assert code == 1 and "approve: nothing approved" in err and "[y/N]" in err
    assert ids["a"] in out and ids["q"] in out and ids["o"] not in out and ids["done"] not in out
    assert "3 delta(s) match: 1 of untrusted provenance" in out
    with Store.open(path) as s:
        assert {s.get(i).status for i in (ids["a"], ids["b"])} == {"staged"}
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, out, _ = run(capsys, "approve", "--pending", "--skill", "mail", "--source", "user_instruction", "--db", path)
    assert code == 0 and f"approve: {ids['a']} is now active" in out and f"approve: {ids['b']} is now active" in out
    with Store.open(path) as s:
        assert s.get(ids["q"]).status == "quarantined" and s.get(ids["o"]).status == "staged"


def test_cli_approve_a_filter_with_yes_and_json(capsys, db):
    path, ids = db
    code, out, _ = run(capsys, "approve", "--source", "observed_content", "--yes", "--db", path, "--json")
    assert code == 0
    assert json.loads(out) == {
        "op": "approve",
        "filter": {"status": ["staged", "quarantined"], "skill": None, "source": "observed_content"},
        "deltas": [{"id": ids["q"], "status": "active"}],
    }
    code, out, _ = run(capsys, "approve", "--pending", "--skill", "nothing-here", "--db", path, "--json")
    assert code == 0 and json.loads(out)["deltas"] == []


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "say what to approve"),
        (["delta_x", "--pending"], "ids or a filter"),
        (["delta_x", "--yes"], "--yes goes with a filter"),
    ],
)
def test_cli_approve_usage_mistakes_are_one_line(capsys, db, argv, message):
    path, _ = db
    code, _, err = run(capsys, "approve", *argv, "--db", path)
    assert code == 1 and message in err and err.count("\n") == 1
