"""The live-model arm: scenarios, prompts through the real write path, checkers, and an honest skip."""

from __future__ import annotations

import json
import textwrap

import httpx
import pytest

from overlay_kit.llm import Cassette, LemonadeClient
from overlay_kit.store import Store
from overlay_kit.studies import probe as P


@pytest.fixture(scope="module")
def scenarios():
    return P.load_scenarios()


def by_id(scenarios, sid):
    return next(s for s in scenarios if s.id == sid)


def test_scenarios_load_and_every_select_scenario_discriminates(scenarios):
    assert {s.domain for s in scenarios} == {"email", "calendar", "code-review", "research"}
    select = [s for s in scenarios if s.kind == "select"]
    assert len(select) >= 8 and all(s.expect for s in select)
    for s in select:
        with Store.open(":memory:") as empty:
            assert set(P.select(s, empty)) != set(s.expect)  # the control answer differs (checked on load too)


def test_the_wired_tool_reads_the_fact_through_the_scoped_accessor(scenarios):
    s = by_id(scenarios, "email-escalation")
    with P._learned_store(s, "tier0", P.load_source()) as store:
        assert P.select(s, store) == ["t1", "t3", "t5"]  # 48h for the CFO, 72h for everyone else
    with Store.open(":memory:") as empty:
        assert P.select(s, empty) == ["t3"]


def _write(tmp_path, text):
    path = tmp_path / "scenarios.yaml"
    path.write_text(textwrap.dedent(text))
    return path


BASE = """
    scenarios:
      - id: pr-size
        domain: code-review
        section: size-and-splitting
        fact: {namespace: size, key: max_changed_lines, value: 300}
        default: 800
        prose: Split PRs over 300 lines.
        tool: diff_stats
        rule: {op: greater, attr: changed_lines}
        expect: [p2]
        task: Which PRs should be split?
        items:
          - {id: p1, changed_lines: 10}
          - {id: p2, changed_lines: 400}
"""


@pytest.mark.parametrize("edit, message", [
    (("expect: [p2]", "expect: [p1]"), "wired tool selects"),
    (("changed_lines: 400", "changed_lines: 900"), "does not change the answer"),
    (("op: greater", "op: roughly"), "rule.op"),
    (("fact: {namespace: size", "fact: {namespace: sizes"), "no namespace"),
    (("- {id: p1, changed_lines: 10}", "- {id: p1}"), "items"),
])
def test_bad_scenarios_are_refused_with_a_named_field(tmp_path, edit, message):
    assert P.load_scenarios(_write(tmp_path, BASE))  # the base file is valid
    with pytest.raises((P.ProbeError, ValueError), match=message):
        P.load_scenarios(_write(tmp_path, BASE.replace(*edit)))


def test_prompts_render_each_representation_through_resolve(scenarios):
    s = by_id(scenarios, "email-escalation")
    system = {arm: P.prompts(s, arm)[0]["content"] for arm in P.ARMS}
    line = "- followup_hours = 48 (for sender:cfo@company.com)"
    assert line in system["tier2"] and s.prose not in system["tier2"]
    assert s.prose in system["tier3"] and line not in system["tier3"]
    assert system["control"] == system["tier0"] and line not in system["control"] and s.prose not in system["control"]
    esc = system["tier2"].index("## Escalation")
    assert esc < system["tier2"].index(line) < system["tier2"].index("## Drafting replies")
    user = P.prompts(s, "tier0")[1]["content"]
    assert 'selected: ["t1", "t3", "t5"]' in user and "selected:" not in P.prompts(s, "tier2")[1]["content"]


@pytest.mark.parametrize("reply, passed", [
    ('["t5", "t1", "t3"]', True),
    ('Sure! The threads to escalate are:\n```json\n["t1", "t3", "t5"]\n```', True),
    ('<think>maybe ["t3"]</think>["t1","t3","t5"]', True),
    ('["t3"]', False),
    ("t1, t3 and t5", False),
])
def test_select_checker(scenarios, reply, passed):
    s = by_id(scenarios, "email-escalation")
    assert P.check(s, reply, ["t1", "t3", "t5"])[0] is passed


def test_text_checkers_count_deterministically(scenarios):
    draft = by_id(scenarios, "email-draft-sentences")
    reply = "Hi Marcus,\n\nThe Q3 numbers are attached. Yes, the offsite is on.\n\nBest,\nDana"
    assert P.measure(reply, "sentences") == 2
    assert P.check(draft, "Numbers attached. Offsite is on. Priya presents.")[0] is False
    assert P.check(draft, "Numbers attached (v2.1). Offsite is on!")[0] is True
    assert P.measure("one two three-four it's", "words") == 4
    assert P.measure("# Agenda\n1. Goals\n2. Budget\n- Hiring\nnot an item", "list_items") == 3


def test_run_says_skipped_when_no_server_answers():
    with LemonadeClient(base_url="http://127.0.0.1:9/api/v1", retries=0) as client:
        run = P.run(client)
    assert run.status == "skipped" and "no model server answered" in run.reason and not run.results
    assert str(run).startswith("live-model arm skipped:")
    assert run.summary().empty


def test_run_in_replay_mode_without_recordings_is_skipped(tmp_path, scenarios):
    client = LemonadeClient(cassette=Cassette(tmp_path / "none.jsonl"), mode="replay")
    run = P.run(client, model="m", scenarios=scenarios[:2])
    assert run.status == "skipped" and "holds no recording" in run.reason
    assert all(r.passed is None for r in run.results) and len(run.results) == 8


def test_run_scores_replies_from_a_scripted_server(scenarios):
    """A test double (not a model): it answers every chat with the same id list, so the scoring is known."""
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/health"):
            return httpx.Response(200, json={"status": "ok", "all_models_loaded": [{"model_name": "fake"}]})
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "fake", "recipe": "llamacpp"}]})
        if request.method == "GET":  # /stats and the like
            return httpx.Response(200, json={})
        body = json.loads(request.content)
        seen.append(body)
        return httpx.Response(200, json={"model": "fake", "choices": [{"message": {"content": '["t1", "t3", "t5"]'},
                                                                       "finish_reason": "stop"}]})

    client = LemonadeClient(base_url="http://fake/api/v1", transport=httpx.MockTransport(handler), retries=0)
    chosen = [by_id(scenarios, "email-escalation"), by_id(scenarios, "email-draft-sentences")]
    run = P.run(client, scenarios=chosen, seeds=(0, 1))
    assert run.status == "ran" and run.model == "fake"
    table = run.table()
    assert len(table) == 4 * 2 + 3 * 2
    assert table[table.scenario == "email-escalation"].passed.all()
    assert table[table.scenario == "email-draft-sentences"].passed.all()  # '["t1", "t3", "t5"]': 0 sentences
    assert all(b["temperature"] == 0.0 for b in seen) and {b["seed"] for b in seen} == {0, 1}
    summary = run.summary().set_index(["arm", "kind"])
    assert summary.loc[("tier0", "select"), "n"] == 2 and summary.loc[("tier2", "select"), "rate"] == 1.0
    assert 0 < summary.loc[("tier2", "select"), "low"] < 1 == summary.loc[("tier2", "select"), "high"]
