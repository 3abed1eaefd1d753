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


# ------------------------------------------------------------------------------------------- power


def test_power_needs_49_text_scenarios_for_a_difference_of_0_2():
    """Checked against the normal approximation it inverts: 49 reaches 80% power at h(0.4, 0.6), 48 does not."""
    from math import asin, sqrt
    from statistics import NormalDist

    power = P.Power()
    assert power.required == 49 and not power.powered and "needs 49" in str(power)
    assert "0 of 53 were — underpowered" in str(P.Power(available=53))
    h, z = 2 * asin(sqrt(0.6)) - 2 * asin(sqrt(0.4)), NormalDist()
    achieved = lambda n: z.cdf(h * sqrt(n) - z.inv_cdf(0.975))
    assert achieved(49) >= 0.8 > achieved(48)
    assert P.Power(baseline=0.7).required == 30  # rates far from 0.5 need fewer
    assert P.Power(have=49, available=53).powered and "underpowered" not in str(P.Power(have=49, available=53))


def test_the_scenario_file_holds_enough_text_scenarios_each_a_leftover_value(scenarios):
    from overlay_kit.studies import lessons as L

    source = L.load_source()
    text = [s for s in scenarios if s.kind == "text"]
    assert len(text) >= P.Power().required
    assert len({s.id for s in scenarios}) == len(scenarios)
    assert len({s.task for s in text}) == len(text)  # no task written twice
    for s in text:
        ns = source.namespace(s.domain, s.namespace)
        assert ns.why_no_tool and ns.section == s.section and s.check["at_most"] == s.value
    assert {s.domain for s in text} == {"email", "calendar", "code-review", "research"}


TEXT = """
    scenarios:
      - id: short-draft
        domain: email
        section: drafting-replies
        fact: {namespace: drafting, key: max_sentences, value: 2}
        prose: Two sentences at most.
        check: {measure: sentences, at_most: 2}
        task: Draft a reply.
"""


@pytest.mark.parametrize("edit, message", [
    (("at_most: 2}", "at_most: 3}"), "check.at_most: 3 but the learned value is 2"),
    (("key: max_sentences", "key: formality"), "not a count key"),
    (("section: drafting-replies", "section: escalation"), "binds to 'drafting-replies'"),
    (("namespace: drafting, key: max_sentences", "namespace: escalation, key: followup_hours"),
     "a tool could read 'escalation'"),
    (("measure: sentences", "measure: vibes"), "check: needs measure"),
])
def test_bad_text_scenarios_are_refused_with_a_named_field(tmp_path, edit, message):
    assert P.load_scenarios(_write(tmp_path, TEXT))
    with pytest.raises(P.ProbeError, match=message):
        P.load_scenarios(_write(tmp_path, TEXT.replace(*edit)))
    with pytest.raises(P.ProbeError, match="used twice"):
        P.load_scenarios(_write(tmp_path, TEXT + TEXT.split("scenarios:")[1]))


def _obeys_typed_lines(request: httpx.Request) -> httpx.Response:
    """A test double (not a model): it keeps to a limit only when the limit is a typed `key = n` line, and
    otherwise writes ten bulleted sentences — so the compliance difference is known (+100%)."""
    if request.method == "GET":
        return httpx.Response(200, json={"status": "ok", "all_models_loaded": [{"model_name": "fake"}],
                                         "data": [{"id": "fake", "recipe": "llamacpp"}]})
    system = json.loads(request.content)["messages"][0]["content"]
    typed = any(line.startswith("- ") and " = " in line for line in system.split("_Learned for this section:_")[-1]
                .splitlines()[:3]) if "_Learned for this section:_" in system else False
    reply = "Done." if typed else "\n".join(f"- Point number {i} is worth a sentence." for i in range(10))
    return httpx.Response(200, json={"model": "fake", "choices": [{"message": {"content": reply},
                                                                   "finish_reason": "stop"}]})


def test_no_compliance_verdict_without_power(scenarios):
    client = LemonadeClient(base_url="http://fake/api/v1", transport=httpx.MockTransport(_obeys_typed_lines),
                            retries=0)
    text = [s for s in scenarios if s.kind == "text"][:5]
    run = P.run(client, scenarios=text, arms=("tier2", "tier3"))
    assert run.status == "ran" and run.power.have == 5 and run.power.available == 5 and not run.power.powered
    assert run.compliance()[0] is None
    assert "needs 49" in run.finding() and "underpowered, so no verdict" in run.finding()


def test_a_powered_run_reports_the_compliance_difference_and_it_enters_the_tier2_verdict(scenarios):
    from overlay_kit.studies import lessons as L

    client = LemonadeClient(base_url="http://fake/api/v1", transport=httpx.MockTransport(_obeys_typed_lines),
                            retries=0)
    text = [s for s in scenarios if s.kind == "text"]
    run = P.run(client, scenarios=text, arms=("tier2", "tier3"))
    assert run.power.powered and run.power.have == len(text)
    comp, _ = run.compliance()
    assert comp.estimate == 1.0 and comp.n == len(text)
    assert "the typed line is followed more often" in run.finding()
    study = L.run(live=run, n_boot=200)
    assert study.verdict() == "does not hold"
    assert "compliance, tier 2 − tier 3 (text scenarios)" in study.table().index
    assert "**does not hold**" in study.finding() and "the typed line earns its keep in compliance" in study.finding()
