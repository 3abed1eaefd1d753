"""Tier 0: the one-line accessor, declared consumers, and the inert-fact report (the silent no-op guard)."""

from __future__ import annotations

import json

import pytest
from overlay_support import make_skill

from overlay_kit import gates
from overlay_kit.cli import main
from overlay_kit.facts import (
    Consumers,
    Facts,
    FactsError,
    UndeclaredRead,
    learns_from,
    report,
)
from overlay_kit.grammar import Provenance
from overlay_kit.skill import parse_skill
from overlay_kit.store import Store

TRUSTED = Provenance("user_instruction")


@pytest.fixture
def store():
    with Store.open(":memory:") as s:
        yield s


def put(store, ns, key, value, scope="user"):
    store.put_fact(ns, key, value, scope=scope, provenance=TRUSTED)


# ------------------------------------------------------------------------------------------ accessor


def test_get_key_prefers_the_narrow_scope_then_falls_back(store):
    put(store, "escalation", "followup_hours", 72)
    put(store, "escalation", "followup_hours", 48, scope="sender:cfo@company.com")
    facts = Facts(store)
    assert facts.get("escalation", "followup_hours", 24, scope="sender:cfo@company.com") == 48
    assert facts.get("escalation", "followup_hours", 24, scope="sender:bob@company.com") == 72
    assert facts.get("escalation", "missing_key", 24) == 24
    assert facts.get("nothing_here", "followup_hours", default=7) == 7


def test_set_default_returns_members_and_a_narrow_false_removes_one(store):
    put(store, "priority_senders", "alice@example.com", True)
    put(store, "priority_senders", "bob@example.com", True)
    put(store, "priority_senders", "bob@example.com", False, scope="session:42")
    assert Facts(store).get("priority_senders", default=frozenset()) == {"alice@example.com", "bob@example.com"}
    narrowed = Facts(store, scope=("session:42", "user"))
    assert narrowed.get("priority_senders", default=frozenset()) == {"alice@example.com"}
    assert Facts(store).get("noise_senders", default=frozenset()) == frozenset()


def test_mapping_view_is_read_only_and_current(store):
    put(store, "path_owners", "src/payments/", "Priya")
    put(store, "path_owners", "src/payments/", "Omar")  # supersedes
    view = Facts(store).get("path_owners")
    assert dict(view) == {"src/payments/": "Omar"}
    with pytest.raises(TypeError):
        view["x"] = "y"  # type: ignore[index]


def test_a_bound_tool_cannot_read_an_undeclared_namespace(store):
    put(store, "noise_senders", "deals@shop.com", True)
    consumers = Consumers({"triage_inbox": ["priority_senders"]})
    facts = Facts(store, tool="triage_inbox", consumers=consumers)
    assert facts.get("priority_senders", default=frozenset()) == frozenset()
    with pytest.raises(UndeclaredRead, match="triage_inbox.*noise_senders.*learns_from"):
        facts.get("noise_senders", default=frozenset())
    consumers.declare("triage_inbox", "noise_senders")
    assert facts.get("noise_senders", default=frozenset()) == {"deals@shop.com"}


def test_facts_needs_a_scope(store):
    with pytest.raises(FactsError):
        Facts(store, scope=())


# ----------------------------------------------------------------------------------------- consumers


def test_learns_from_decorator_registers_the_tool():
    registry = Consumers()

    @learns_from("priority_senders", "escalation", registry=registry)
    def triage_inbox():
        return None

    @learns_from("priority_senders", tool="pre_scan", registry=registry)
    def _scan():
        return None

    assert triage_inbox.learns_from == {"priority_senders", "escalation"}
    assert registry.readers("priority_senders") == ("pre_scan", "triage_inbox")
    assert registry.readers("escalation") == ("triage_inbox",)
    assert registry.readers("noise_senders") == ()


@pytest.mark.parametrize("bad", [[""], [3], {"a": 1}, None])
def test_a_bad_declaration_is_refused(bad):
    with pytest.raises(FactsError, match="learns_from"):
        Consumers({"tool": bad})


SKILL_WITH_CONSUMERS = """---
name: mail
description: test
metadata:
  gaia:
    tools:
      - name: triage_inbox
        learns_from: [priority_senders, escalation]
      - name: pre_scan_inbox
        learns_from: priority_senders
      - name: send_message
---
# Mail

## Triage

Sort.
"""


def test_consumers_from_a_skill_and_a_bad_one_names_the_field():
    skill, problems = parse_skill(SKILL_WITH_CONSUMERS, None)
    assert not problems
    c = Consumers.from_skill(skill)
    assert c.to_dict() == {"pre_scan_inbox": ["priority_senders"], "triage_inbox": ["escalation", "priority_senders"]}
    bad, _ = parse_skill(SKILL_WITH_CONSUMERS.replace("learns_from: priority_senders", "learns_from: [1]"), None)
    with pytest.raises(FactsError, match=r"metadata\.gaia\.tools\[1\]\.learns_from"):
        Consumers.from_skill(bad)


# --------------------------------------------------------------------------------------- the report


def test_inert_report_catches_a_fact_no_tool_reads(store):
    """The silent no-op: a setter stores a fact (the write succeeds) but no tool declares its namespace."""
    skill = make_skill()
    for ns, key in (("priority_senders", "alice@example.com"), ("noise_senders", "deals@shopmart.com")):
        result = gates.learn(
            store,
            skill,
            "fact",
            {"namespace": ns, "key": key, "value": True},
            section=None,
            provenance="user_instruction",
        )
        assert result.outcome == "routed" and result.persisted
    consumers = Consumers({"triage_inbox": ["priority_senders"], "pre_scan_inbox": ["priority_senders"]})
    rep = report(store, consumers)
    assert [(x.namespace, x.status) for x in rep.lines] == [("noise_senders", "inert"), ("priority_senders", "honored")]
    assert [x.key for x in rep.inert] == ["deals@shopmart.com"]
    assert rep.honored[0].readers == ("pre_scan_inbox", "triage_inbox")
    assert rep.summary() == [
        "noise_senders: 1 fact — INERT: no tool declares learns_from='noise_senders'; stored, but nothing reads it",
        "priority_senders: 1 fact — honored by pre_scan_inbox, triage_inbox",
    ]
    assert rep.to_dict()["summary"] == {"total": 2, "honored": 1, "inert": 1}
    consumers.declare("triage_inbox", "noise_senders")  # wire the tool: the same fact is now learned
    assert report(store, consumers).inert == ()


def test_with_no_declarations_every_fact_is_inert(store):
    put(store, "priority_senders", "alice@example.com", True)
    rep = report(store, Consumers())
    assert len(rep.inert) == 1 and rep.honored == ()


def test_superseded_facts_are_not_reported(store):
    put(store, "escalation", "followup_hours", 72)
    put(store, "escalation", "followup_hours", 48)
    rep = report(store, Consumers({"triage_inbox": ["escalation"]}))
    assert [(x.key, x.value) for x in rep.lines] == [("followup_hours", 48)]


# -------------------------------------------------------------------------------------------- CLI


def test_cli_facts_json_inert_and_consumer_file(tmp_path, capsys):
    db = tmp_path / "o.db"
    with Store.open(db) as s:
        put(s, "priority_senders", "alice@example.com", True)
        put(s, "noise_senders", "deals@shopmart.com", True)
    consumers = tmp_path / "consumers.yaml"
    consumers.write_text("triage_inbox: [priority_senders]\n")
    assert (
        main(["facts", "--db", str(db), "--consumers", str(consumers), "--skill", str(tmp_path / "none"), "--json"])
        == 1
    )  # a --skill that does not exist is an error, not an empty declaration
    capsys.readouterr()
    skill_dir = tmp_path / "mail"
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_text(SKILL_WITH_CONSUMERS)
    assert main(["facts", "--db", str(db), "--skill", str(skill_dir), "--inert", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["key"] for f in data["facts"]] == ["deals@shopmart.com"]
    assert data["summary"] == {"total": 2, "honored": 1, "inert": 1}
    assert data["consumers"]["triage_inbox"] == ["escalation", "priority_senders"]
    assert main(["facts", "--db", str(db), "--consumers", str(consumers), "--skill", str(skill_dir)]) == 0
    out = capsys.readouterr().out
    assert "noise_senders: 1 fact — INERT" in out and "priority_senders: 1 fact — honored by" in out
    assert "2 fact(s): 1 honored, 1 inert" in out


def test_cli_facts_bad_consumer_file_names_it(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("triage_inbox: 3\n")
    assert main(["facts", "--db", str(tmp_path / "o.db"), "--consumers", str(bad)]) == 1
    assert "bad.yaml" in capsys.readouterr().err
