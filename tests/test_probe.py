"""The live-model arm: scenarios, prompts through the real write path, checkers, and an honest skip."""

from __future__ import annotations

import json
import math
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
        shape: threshold
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


@pytest.mark.parametrize(
    "edit, message",
    [
        (("expect: [p2]", "expect: [p1]"), "wired tool selects"),
        (("changed_lines: 400", "changed_lines: 900"), "does not change the answer"),
        (("op: greater", "op: roughly"), "rule.op"),
        (("fact: {namespace: size", "fact: {namespace: sizes"), "no namespace"),
        (("- {id: p1, changed_lines: 10}", "- {id: p1}"), "items"),
        (("shape: threshold", "shape: count"), "has shape 'threshold'"),
        (("shape: threshold\n        ", ""), "missing or malformed field 'shape'"),
        (("section: size-and-splitting", "section: approval"), "binds to 'size-and-splitting'"),
        (("tool: diff_stats", "tool: run_linter"), "does not read size"),
        (("op: greater", "op: equals"), "cannot express a threshold"),
        (("key: max_changed_lines", "key: max_lines"), "not a key of size"),
    ],
)
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


@pytest.mark.parametrize(
    "reply, passed",
    [
        ('["t5", "t1", "t3"]', True),
        ('Sure! The threads to escalate are:\n```json\n["t1", "t3", "t5"]\n```', True),
        ('<think>maybe ["t3"]</think>["t1","t3","t5"]', True),
        ('["t3"]', False),
        ("t1, t3 and t5", False),
    ],
)
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
        return httpx.Response(
            200,
            json={
                "model": "fake",
                "choices": [{"message": {"content": '["t1", "t3", "t5"]'}, "finish_reason": "stop"}],
            },
        )

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


# ------------------------------------------------------------------------------- keys, shapes, power

SHAPES_ASKED = {"count", "enumeration", "boolean", "threshold", "sender"}  # the value shapes


def test_the_scenarios_span_at_least_30_keys_across_every_value_shape(scenarios):
    keys = {s.unit for s in scenarios}
    shape_of = {s.unit: s.shape for s in scenarios}
    assert len(keys) >= 30
    assert SHAPES_ASKED <= set(shape_of.values())
    assert all(len({s.shape for s in scenarios if s.unit == k}) == 1 for k in keys)  # one shape per key
    for shape in SHAPES_ASKED:  # no shape rests on a single key
        assert sum(v == shape for v in shape_of.values()) >= 2, shape
    # a member namespace is one key, whatever member a scenario teaches
    members = [s for s in scenarios if s.member]
    assert members and all(s.unit == f"{s.domain}/{s.namespace}" for s in members)
    # the file alone powers the pre-stated difference, in keys
    assert len(keys) >= P.Power().required


def test_every_select_scenario_expects_what_its_rule_selects_and_the_shape_is_the_vocabularys(scenarios):
    from overlay_kit.studies import lessons as L

    source = L.load_source()
    select = [s for s in scenarios if s.kind == "select"]
    assert {s.shape for s in select} >= {"count", "enumeration", "boolean", "threshold", "sender"}
    for s in select:
        with P._learned_store(s, "tier0", source) as store:
            assert sorted(P.select(s, store, source)) == sorted(s.expect), s.id
        with Store.open(":memory:") as empty:
            assert set(P.select(s, empty, source)) != set(s.expect), s.id
        assert s.tool in source.registry.could_read(s.namespace, s.domain)
    for s in scenarios:
        assert s.shape == source.namespace(s.domain, s.namespace).spec(s.key).shape, s.id


def _compliant(s) -> str:
    """A hand-written reply that keeps to the scenario's learned value (used by the checker test and the
    test double below; not a model's output)."""
    if s.kind == "select":
        return json.dumps(list(s.expect))
    c = s.check
    if s.shape == "count":
        return "Done."
    if c["measure"] == "language":
        return {
            "german": "Ja, das passt mir gut, und ich bringe die Zahlen mit. Danke für die Nachricht!",
            "spanish": "Gracias por la llamada, te envío la lista y es una buena idea.",
            "french": "Merci pour le message, je vous envoie les chiffres et nous sommes prêts.",
        }[c["equals"]]
    if c["measure"] == "list_style":
        return "1. Goals\n2. Risks" if c["equals"] == "numbered" else "- Goals\n- Risks"
    return {
        "nit_prefix": "- nit: rename to `fetchUsers`\n- **Nit:** add the semicolon",
        "severity_labels": "- Blocking: the filename is not sanitised\n- non-blocking: log at debug",
        "label_claims": "- Two cups a day go with lower mortality (confidence: medium)\n- No effect on blood "
        "pressure (low confidence)",
    }[s.key]


def _violating(s) -> str:
    """A hand-written reply that ignores the learned value: fifteen plain English bullets (a numbered list
    where the learned style is bullets), or no ids at all."""
    if s.kind == "select":
        return "[]"
    if s.check.get("equals") == "bulleted":
        return "\n".join(f"{i}. Point number {i} is worth a full sentence." for i in range(1, 16))
    return "\n".join(f"- Point number {i} is worth a full sentence." for i in range(15))


def test_every_checker_can_pass_and_can_fail(scenarios):
    for s in scenarios:
        assert P.check(s, _compliant(s), s.expect)[0] is True, s.id
        assert P.check(s, _violating(s), s.expect)[0] is False, s.id


def test_text_measures_for_enumerations_and_booleans():
    assert P.language("Hallo Marcus, ja, die Planung am Donnerstag findet statt. Ich bringe die Zahlen.") == "german"
    assert P.language("Hola Priya, gracias por la llamada. Te envío la lista y tu compañera es Dana.") == "spanish"
    assert P.language("Les toits verts retiennent la pluie, mais le type de plantes compte peu.") == "french"
    assert P.language("Yes, we are still on for Thursday and I will bring the numbers.") == "english"
    assert P.language("```python\ndef f(x): return x\n```") == "unknown"  # code is not language
    assert P.list_style("# Agenda\n1. Renewal\n2. Tickets\n   - detail\n3. Price") == "numbered"  # nested: top level
    assert P.list_style("- a\n- b") == "bulleted" and P.list_style("1. a\n- b") == "mixed"
    assert P.list_style("no list here") == "none"
    assert P.items_matching("- **Nit:** use const\n- nit: semicolons\n- naming", r"^nit\b") == (2, 3)
    assert P.items_matching("```\n- nit: inside a fence\n```\n- nit: outside", r"^nit\b") == (1, 1)


# -------------------------------------------------------------------------------------------- power


def test_power_in_keys_matches_cohens_tables_and_round_trips():
    """Cohen (1988), table 6.4.1: two-sided α 0.05, power 0.8 needs n = 63 per group for h = 0.5, 25 for
    h = 0.8 and 16 for h = 1.0; the minimum detectable difference inverts `required`."""
    from math import asin

    power = P.Power()
    for n, h in ((63, 0.5), (25, 0.8), (16, 1.0)):
        assert 2 * asin(power.detectable(n)) == pytest.approx(h, abs=0.01)
    for n in (15, 30, 47, 57):
        d = power.detectable(n)
        assert P.Power(difference=d + 1e-6).required <= n < P.Power(difference=d - 0.005).required
    assert power.detectable(0) == math.inf and power.detectable(1) == math.inf  # even 0 vs 1 is out of reach
    assert power.detectable(2) > 0.95
    assert power.baseline == pytest.approx(0.35) and P.Power(difference=0.2).baseline == pytest.approx(0.4)
    assert power.required == math.ceil(2 * ((1.959964 + 0.841621) / (2 * asin(0.3))) ** 2)


def test_the_minimum_detectable_difference_has_80_percent_power_in_simulation():
    """At the MDE for 47 keys (one Bernoulli outcome per key and arm, rates centred on 0.5), a two-sided
    5% test rejects about 80% of the time."""
    import numpy as np

    n = 47
    d = P.Power().detectable(n)
    rng = np.random.default_rng(0)
    p2, p3 = rng.binomial(n, 0.5 + d / 2, 40_000) / n, rng.binomial(n, 0.5 - d / 2, 40_000) / n
    z = (2 * np.arcsin(np.sqrt(p2)) - 2 * np.arcsin(np.sqrt(p3))) / np.sqrt(2 / n)
    assert 0.77 < np.mean(np.abs(z) > 1.959964) < 0.83


def test_power_is_stated_in_keys_and_no_scenario_file_could_power_a_difference_of_0_2():
    from overlay_kit.studies import lessons as L

    source = L.load_source()
    vocabulary = sum(1 if any(k.key is None for k in ns.keys) else len(ns.keys) for ns in source.namespaces.values())
    assert P.Power(difference=0.2).required > vocabulary  # why the pre-stated difference is 0.3
    assert P.Power().required <= vocabulary
    text = str(P.Power(available=47))
    assert f"needs {P.Power().required} keys" in text and "given 47 keys" in text and "underpowered" in text
    assert f"{P.Power().detectable(47):.2f}" in text
    assert "underpowered" not in str(P.Power(have=P.Power().required, available=47))


def _synthetic_run(per_key: dict[str, tuple[bool, bool]], scenarios_per_key: int) -> P.ProbeRun:
    """A table, not replies: every scenario of key k passes tier 2 / tier 3 as `per_key[k]` says."""
    rows = []
    for k, (t2, t3) in per_key.items():
        for j in range(scenarios_per_key):
            for arm, passed in (("tier2", t2), ("tier3", t3)):
                rows.append(P.ArmResult(f"{k}-s{j}", "text", arm, 0, passed, "", "", "m", False, "", k, "count"))
    return P.ProbeRun("ran", "synthetic table", "m", tuple(rows), keys=len(per_key))


def test_the_compliance_interval_resamples_keys_not_scenarios():
    from overlay_kit.metrics import mean_ci

    # 50 keys, 6 scenarios each, all scenarios of a key agreeing: 20 keys favour tier 2, 10 tier 3, 20 tie
    per_key = {
        f"k{i:02}": (True, False) if i < 20 else (False, True) if i < 30 else (i % 2 == 0, i % 2 == 0)
        for i in range(50)
    }
    run = _synthetic_run(per_key, 6)
    assert run.power.have == 50 and run.power.powered
    comp, why = run.compliance()
    assert why == "" and comp.n == 50 and comp.estimate == pytest.approx(0.2)
    paired = run._paired()
    assert len(paired) == 300
    scenario_level = mean_ci((paired.tier2 - paired.tier3).to_numpy(), n_resamples=2000, seed=0)
    assert scenario_level.estimate == pytest.approx(comp.estimate)
    assert comp.high - comp.low > 1.8 * (scenario_level.high - scenario_level.low)  # √6 ≈ 2.4 in expectation
    assert comp == P.clustered_difference(paired)
    assert "on 50 keys (300 scenarios)" in run.finding() and "keys resampled" in run.finding()


def test_a_key_with_many_scenarios_weighs_as_much_as_a_key_with_one():
    run = _synthetic_run({"big": (True, False)}, 9)
    small = _synthetic_run({"small": (False, False)}, 1)
    both = P.ProbeRun("ran", "synthetic", "m", run.results + small.results, keys=2)
    assert P.clustered_difference(both._paired()).estimate == pytest.approx(0.5)  # not 9/10


TEXT = """
    scenarios:
      - id: short-draft
        domain: email
        section: drafting-replies
        shape: count
        fact: {namespace: drafting, key: max_sentences, value: 2}
        prose: Two sentences at most.
        check: {measure: sentences, at_most: 2}
        task: Draft a reply.
"""


@pytest.mark.parametrize(
    "edit, message",
    [
        (("at_most: 2}", "at_most: 3}"), "check.at_most: 3 but the learned value is 2"),
        (("key: max_sentences", "key: formality"), "has shape 'enumeration'"),
        (("section: drafting-replies", "section: escalation"), "binds to 'drafting-replies'"),
        (
            (
                "section: drafting-replies\n        shape: count\n        fact: {namespace: drafting, key: max_sentences",
                "section: reading-the-inbox\n        shape: count\n        fact: {namespace: summaries, key: bullets",
            ),
            "a tool could read 'summaries'",
        ),
        (("measure: sentences", "measure: vibes"), "check: needs measure"),
        (("measure: sentences", "measure: language"), "check: needs measure"),  # a count is not measured by language
    ],
)
def test_bad_text_scenarios_are_refused_with_a_named_field(tmp_path, edit, message):
    assert P.load_scenarios(_write(tmp_path, TEXT))
    with pytest.raises(P.ProbeError, match=message):
        P.load_scenarios(_write(tmp_path, TEXT.replace(*edit)))
    with pytest.raises(P.ProbeError, match="used twice"):
        P.load_scenarios(_write(tmp_path, TEXT + TEXT.split("scenarios:")[1]))


def _obeys_typed_lines(scenarios):
    """A test double (not a model): it keeps to a learned value only when the value is a typed `key = value`
    line under its section (a hand-written compliant reply), and otherwise ignores it — so the compliance
    difference is known (+100% on every key)."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(
                200,
                json={
                    "status": "ok",
                    "all_models_loaded": [{"model_name": "fake"}],
                    "data": [{"id": "fake", "recipe": "llamacpp"}],
                },
            )
        system, user = (m["content"] for m in json.loads(request.content)["messages"])
        s = next(
            s for s in scenarios if s.task in user and all(json.dumps(x, ensure_ascii=False) in user for x in s.items)
        )
        learned = system.split("_Learned for this section:_")[1:]
        typed = any(line.startswith("- ") and " = " in line for block in learned for line in block.splitlines()[:3])
        reply = _compliant(s) if typed else _violating(s)
        return httpx.Response(
            200, json={"model": "fake", "choices": [{"message": {"content": reply}, "finish_reason": "stop"}]}
        )

    return handler


def _client(handler):
    return LemonadeClient(base_url="http://fake/api/v1", transport=httpx.MockTransport(handler), retries=0)


def test_no_compliance_verdict_without_power(scenarios):
    text = [s for s in scenarios if s.kind == "text"][:5]
    run = P.run(_client(_obeys_typed_lines(scenarios)), scenarios=text, arms=("tier2", "tier3"))
    keys = len({s.unit for s in text})
    assert keys < len(text)  # the first five text scenarios share keys
    assert run.status == "ran" and run.power.have == keys == run.power.available and not run.power.powered
    assert run.compliance()[0] is None
    finding = run.finding()
    assert f"needs {P.Power().required} keys" in finding and "underpowered, so no verdict" in finding


def test_a_powered_run_reports_the_compliance_difference_and_it_enters_the_tier2_verdict(scenarios):
    from overlay_kit.studies import lessons as L

    one_per_key = list({s.unit: s for s in scenarios}.values())  # the unit is the key: one scenario each
    run = P.run(_client(_obeys_typed_lines(scenarios)), scenarios=one_per_key, arms=("tier2", "tier3"))
    assert run.power.powered and run.power.have == len(one_per_key) == run.keys
    table = run.table()
    assert set(table["key"]) == {s.unit for s in one_per_key} and set(table["shape"]) >= SHAPES_ASKED
    assert table[table.arm == "tier2"].passed.all() and not table[table.arm == "tier3"].passed.any()
    comp, _ = run.compliance()
    assert comp.estimate == 1.0 and comp.n == len(one_per_key)
    assert "the typed line is followed more often" in run.finding()
    by_shape = run.summary(by="shape").set_index(["arm", "shape"])
    assert by_shape.loc[("tier2", "boolean"), "rate"] == 1.0 and by_shape.loc[("tier3", "sender"), "rate"] == 0.0
    study = L.run(live=run, n_boot=200)
    assert study.verdict() == "does not hold"
    row = study.table().loc["compliance, tier 2 − tier 3 (live arm, per key)"]
    assert row.estimate == 1.0 and row.resampled == f"{len(one_per_key)} keys"
    assert "**does not hold**" in study.finding() and "the typed line earns its keep in compliance" in study.finding()
