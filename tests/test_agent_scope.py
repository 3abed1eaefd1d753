"""Whose a lesson is: an unscoped lesson is kept by the agent that learned it (`SHIPPED.scope` "agent", notebook
11's verdict); a store handle opened for an agent writes `agent:<name>` and reads its own scope and "user"; a
handle opened for no agent has one reader and keeps "user" (everything written before this default still reads)."""

from __future__ import annotations

import json

import pytest
from overlay_support import make_skill

from overlay_kit import gates, resolve
from overlay_kit.cli import main
from overlay_kit.defaults import SHIPPED
from overlay_kit.facts import Facts
from overlay_kit.store import Store, StoreError

BODY = {"body": "Keep replies to two sentences."}


def _learn(store, skill, scope=None, body=BODY):
    r = gates.learn(store, skill, "preference", body, section="replies", provenance="user_instruction", scope=scope)
    store.approve(r.delta.id)
    return r.delta


def test_an_agents_unscoped_lesson_stays_with_it_and_a_user_lesson_is_shared(tmp_path):
    assert SHIPPED.scope == "agent"
    skill, path = make_skill("mail"), tmp_path / "o.db"
    with Store.open(path, agent="work-mail") as work:
        own = _learn(work, skill)
        shared = _learn(work, skill, scope="user", body={"body": "Sign as Sam."})
        assert (own.scope, shared.scope) == ("agent:work-mail", "user")
        assert work.read_scopes() == ("agent:work-mail", "user")
        assert {d.id for d in resolve.resolve(skill, work, embedder=False).applied} == {own.id, shared.id}
    with Store.open(path, agent="home-mail") as home:
        assert [d.id for d in resolve.resolve(skill, home, embedder=False).applied] == [shared.id]
        assert [d.id for d in resolve.resolve(skill, home, embedder=False, scope="agent:work-mail").applied] == [
            own.id
        ]  # an explicit scope reads what it names
    with Store.open(path) as anyone:  # no agent: one reader, "user" only
        assert anyone.write_scope() == "user" and anyone.read_scopes() == "user"
        assert [d.id for d in resolve.resolve(skill, anyone, embedder=False).applied] == [shared.id]


def test_a_batch_and_a_routed_fact_take_the_same_scope_as_one_learn(tmp_path):
    skill = make_skill("mail")
    with Store.open(tmp_path / "o.db", agent="work-mail") as s:
        rows = gates.learn_many(
            s,
            skill,
            [
                {"kind": "preference", "payload": BODY, "section": "replies", "provenance": "user_instruction"},
                {
                    "kind": "preference",
                    "payload": BODY,
                    "section": "replies",
                    "provenance": "user_instruction",
                    "scope": "user",
                },
            ],
        )
        assert [r.delta.scope for r in rows] == ["agent:work-mail", "user"]
        fact = gates.learn(
            s,
            skill,
            "fact",
            {"namespace": "mail", "key": "timezone", "value": "Europe/Berlin"},
            section=None,
            provenance="user_instruction",
        ).fact
        assert fact.scope == "agent:work-mail" and Facts(s).get("mail", "timezone") == "Europe/Berlin"


@pytest.mark.parametrize("name", ["", "Mail", "-mail", "mail-", "a b", "x" * 65, "mail/../x"])
def test_an_agent_name_that_is_not_one_is_refused_naming_the_field(tmp_path, name):
    with pytest.raises(StoreError, match="^agent: "):
        Store.open(tmp_path / "o.db", agent=name)
    assert not (tmp_path / "o.db").exists()


def test_the_cli_learns_and_resolves_for_an_agent(capsys, skill_dir, tmp_path):
    db = str(tmp_path / "o.db")

    def run(*argv):
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = run(
        "learn",
        skill_dir,
        "--kind",
        "preference",
        "--section",
        "replies",
        "--body",
        "Keep replies to two sentences.",
        "--source",
        "user_instruction",
        "--agent",
        "work-mail",
        "--db",
        db,
        "--json",
    )
    learned = json.loads(out)
    assert code == 0 and learned["delta"]["scope"] == "agent:work-mail"
    run("approve", learned["delta"]["id"], "--db", db)
    assert "two sentences" in run("resolve", skill_dir, "--agent", "work-mail", "--db", db)[1]
    assert "two sentences" not in run("resolve", skill_dir, "--agent", "home-mail", "--db", db)[1]
    assert "two sentences" not in run("resolve", skill_dir, "--db", db)[1]
