"""The tier-2 collapse probe: corpus, write-site router, value-shape extractor, registry model, curve, costs."""

from __future__ import annotations

import textwrap
from collections import Counter

import pandas as pd
import pytest

from overlay_kit import budget, gates
from overlay_kit.facts import report
from overlay_kit.store import Store
from overlay_kit.studies import lessons as L


@pytest.fixture(scope="module")
def source():
    return L.load_source()


@pytest.fixture(scope="module")
def corpus():
    return L.load_corpus()


# --------------------------------------------------------------------------------------------- corpus


def test_stored_corpus_is_exactly_what_the_source_generates(source, tmp_path):
    out = L.write_corpus(L.build_corpus(source), tmp_path / "lessons.csv")
    assert out.read_bytes() == L.DEFAULT_CORPUS.read_bytes()


def test_corpus_covers_four_domains_and_every_tier(corpus):
    assert len(corpus) >= 300
    assert len({x.id for x in corpus}) == len(corpus) and len({x.text for x in corpus}) == len(corpus)
    by = Counter((x.domain, x.tier) for x in corpus)
    domains = {x.domain for x in corpus}
    assert domains == {"email", "calendar", "code-review", "research"}
    assert all(by[(d, t)] > 0 for d in domains for t in range(4))
    assert {x.split for x in corpus} == {"dev", "test"}


def test_every_gold_label_is_accepted_by_the_real_gates(source, corpus):
    """Gold representations are storable: facts route to tier 0, the rest stage as their delta kind.

    One known exception, kept because it is a finding: the write-path gate refuses a tool hint that prefers
    `run_linter` (a read-only check) because `run` is a confirmation-set verb."""
    refused = []
    with Store.open(":memory:", research=True) as store:
        for x in corpus:
            skill = source.skill(x.domain)
            if x.tier == 0:
                r = gates.learn(
                    store,
                    skill,
                    "fact",
                    {"namespace": x.namespace, "key": x.key, "value": x.value},
                    section=None,
                    provenance="user_instruction",
                    scope=x.scope,
                )
                assert r.outcome == "routed", (x.id, r.message)
                continue
            if x.tier == 1:
                kind, payload = "tool-hint", {"prefer": list(x.prefer), "drop": list(x.drop)}
            elif x.tier == 2:
                kind, payload = "parameter", L._tier2_payload(x, source)
            else:
                kind, payload = "preference", {"body": x.prose}
            r = gates.learn(store, skill, kind, payload, section=x.section, provenance="user_instruction")
            if r.outcome not in ("staged", "noop"):  # noop: a template's other lesson already stored it
                refused.append((x.template, r.rule))
    assert set(refused) <= {("cr-tool-linter", "write_path_tool")}  # nothing else; this one until the gate learns


def _source(tmp_path, body: str):
    path = tmp_path / "source.yaml"
    path.write_text(textwrap.dedent(body))
    return path


MINI = """
    seed: 1
    domains:
      email: {skill: triage-inbox, skill_dir: datasets/skills/triage-inbox}
    slots:
      sender: [alice@example.com, bob@example.com]
    namespaces:
      - {name: priority_senders, domain: email, section: classifying, members: sender, cues: [urgent]}
      - name: drafting
        domain: email
        section: drafting-replies
        why_no_tool: the model writes the draft
        keys:
          max_sentences: {shape: count, cues: [sentence]}
    tools:
      - {name: triage_inbox, domain: email, reads: [priority_senders], wired: [priority_senders]}
      - {name: set_priority_sender, domain: email, writes: priority_senders}
    lessons:
      - id: vip
        domain: email
        split: dev
        capture: setter:set_priority_sender
        n: 2
        gold: {tier: 0, namespace: priority_senders, key: "{sender}", value: true}
        prose: Treat mail from {sender} as urgent.
        phrasings: ["Anything from {sender} is urgent."]
      - id: short
        domain: email
        split: test
        capture: remember
        gold: {tier: 2, namespace: drafting, key: max_sentences, value: 2}
        prose: Keep drafts to two sentences.
        phrasings: [Keep drafts to two sentences., Two sentences per draft.]
"""


def test_a_small_source_builds_deterministically(tmp_path):
    src = L.load_source(_source(tmp_path, MINI))
    first, again = L.build_corpus(src), L.build_corpus(src)
    assert first == again
    assert [(x.id, x.tier, x.key, x.value) for x in first] == [
        ("vip-01", 0, first[0].key, True),
        ("vip-02", 0, first[1].key, True),
        ("short-01", 2, "max_sentences", 2),
        ("short-02", 2, "max_sentences", 2),
    ]
    assert {first[0].key, first[1].key} == {"alice@example.com", "bob@example.com"}
    assert first[0].text == f"Anything from {first[0].key} is urgent."


@pytest.mark.parametrize(
    "edit, where",
    [
        (("cues: [urgent]}", "cues: [urgent], colour: red}"), "namespaces[0].colour"),
        (("section: classifying", "section: nowhere"), "section 'nowhere'"),
        (("gold: {tier: 0, namespace", "gold: {tier: 2, namespace"), "gold.tier"),
        (("why_no_tool: the model writes the draft", "why_no_tool: null"), "why_no_tool"),
        (("writes: priority_senders", "writes: inbox_noise"), "tools[1]"),
        (("{shape: count, cues: [sentence]}", "{shape: count}"), "max_sentences.cues"),
        (("key: max_sentences, value: 2", "key: max_words, value: 2"), "gold.key"),
    ],
)
def test_bad_sources_name_the_file_and_field(tmp_path, edit, where):
    path = _source(tmp_path, MINI.replace(*edit))
    with pytest.raises(L.CorpusError) as info:
        L.build_corpus(L.load_source(path))
    assert str(path) in str(info.value) and where in str(info.value)


def test_a_bad_corpus_row_names_the_line(tmp_path):
    good = L.DEFAULT_CORPUS.read_text(encoding="utf-8").splitlines(keepends=True)
    bad = good[:3] + [good[3].replace(",fact,", ",parameter,", 1)] + good[4:]
    path = tmp_path / "lessons.csv"
    path.write_text("".join(bad), encoding="utf-8")
    with pytest.raises(L.CorpusError, match=r"lessons\.csv:4: .*inconsistent"):
        L.load_corpus(path)


# ------------------------------------------------------------------------------------------ extractor


@pytest.mark.parametrize(
    "text, domain, want",
    [
        (
            "Escalate anything that's been waiting more than two days without a reply.",
            "email",
            ("escalation", "followup_hours", 48, "user", "duration"),
        ),
        (
            "72 hours is too slow; use a follow-up window of 36 hours.",
            "email",
            ("escalation", "followup_hours", 36, "user", "duration"),
        ),
        (
            "For cfo@company.com, escalate after 12 hours, not 72.",
            "email",
            ("escalation", "followup_hours", 12, "sender:cfo@company.com", "duration"),
        ),
        (
            "When you triage, look back a week, not just 24 hours.",
            "email",
            ("triage", "window_hours", 168, "user", "duration"),
        ),
        (
            "Leave half an hour between meetings.",
            "calendar",
            ("meeting_limits", "buffer_minutes", 30, "user", "duration"),
        ),
        (
            "I stop working at 4:30 pm; don't schedule past that.",
            "calendar",
            ("working_hours", "day_end", "16:30", "user", "threshold"),
        ),
        (
            "Don't archive emails from Dana (dana@globex.com); keep them.",
            "email",
            ("never_archive", "dana@globex.com", True, "user", "sender"),
        ),
        (
            "Stop listing FYI messages in the report, a count is enough.",
            "email",
            ("report", "list_fyi", False, "user", "boolean"),
        ),
        (
            "Use a casual tone when replying to anyone from @hooli.com.",
            "email",
            ("drafting", "formality", "casual", "sender:@hooli.com", "enumeration"),
        ),
        (
            "Omar owns api/auth/; always ask them to review changes there.",
            "code-review",
            ("path_owners", "api/auth/", "Omar", "user", "person"),
        ),
        ("Coverage must stay above 85 percent.", "code-review", ("coverage", "min_percent", 85, "user", "threshold")),
        ("Keep summaries under three hundred words.", "research", ("answer", "max_words", 300, "user", "count")),
    ],
)
def test_extractor_reads_value_shapes(source, text, domain, want):
    p = L.extract(text, source.vocabulary(domain))
    assert (p.namespace, p.key, p.value, p.scope, p.shape) == want


def test_extractor_proposes_nothing_without_a_cue_or_a_value(source):
    assert L.extract("Please be nice to everyone.", source.vocabulary("email")) is None
    assert L.extract("Summaries should be short.", source.vocabulary("research")) is None  # cue, no number


# --------------------------------------------------------------------------------------------- router


def test_router_declares_the_tier_at_the_write_site(source):
    r = L.route("Anything from alice@example.com is urgent.", "setter:set_priority_sender", "email", source)
    assert (r.tier, r.rule, r.proposal.key) == (0, "setter_call", "alice@example.com")
    # the shipped agent has set_noise_sender but no tool that reads noise_senders: tier 0 would be inert
    r = L.route("Mail from deals@shop.com is noise.", "setter:set_noise_sender", "email", source)
    assert (r.tier, r.rule) == (2, "setter_call") and "inert" in r.note
    assert (
        L.route("Mail from deals@shop.com is noise.", "setter:set_noise_sender", "email", source, policy="v1").tier == 3
    )
    wired = source.registry.wire("email/triage_inbox")
    assert L.route("Mail from deals@shop.com is noise.", "setter:set_noise_sender", "email", source, wired).tier == 0
    r = L.route("Use blame_lines to find who wrote a line instead of search_code.", "remember", "code-review", source)
    assert (r.tier, r.prefer, r.drop) == (1, ("blame_lines",), ("search_code",))
    r = L.route("When a customer complains, apologize once, restate it, and give a date.", "remember", "email", source)
    assert (r.tier, r.rule) == (3, "procedural")
    assert L.route("Be kind.", "remember", "email", source).rule == "prose"
    with pytest.raises(ValueError, match="policy"):
        L.route("x", "remember", "email", source, policy="v2")


def test_confusion_counts_a_fixed_case():
    m = L.confusion([0, 0, 2, 3, 1, 2], [0, 2, 2, 3, 3, 2], (0, 1, 2, 3))
    expected = pd.DataFrame(
        [[1, 0, 1, 0], [0, 0, 0, 1], [0, 0, 2, 0], [0, 0, 0, 1]],
        index=pd.Index([0, 1, 2, 3], name="gold"),
        columns=pd.Index([0, 1, 2, 3], name="predicted"),
    )
    pd.testing.assert_frame_equal(m, expected)
    with pytest.raises(ValueError):
        L.confusion([0], [0, 1], (0, 1))
    with pytest.raises(ValueError, match="label"):
        L.confusion([5], [0], (0, 1))


def test_evaluate_on_a_small_fixed_case(source):
    def lesson(i, text, capture, tier, **gold):
        return L.LabelledLesson(
            f"x{i}",
            "t",
            "dev",
            "email",
            "triage-inbox",
            "classifying",
            capture,
            text,
            tier,
            L.TIER_KINDS[tier],
            gold.pop("shape", "none"),
            **gold,
        )

    fixed = [
        lesson(
            1,
            "Anything from alice@example.com is urgent.",
            "setter:set_priority_sender",
            0,
            shape="sender",
            namespace="priority_senders",
            key="alice@example.com",
            value=True,
        ),
        lesson(
            2,
            "Keep reply drafts to 3 sentences.",
            "remember",
            2,
            shape="count",
            namespace="drafting",
            key="max_sentences",
            value=3,
        ),
        lesson(
            3,
            "Stop opening every message with read_message; use summarize_thread instead.",
            "remember",
            1,
            prefer=("summarize_thread",),
            drop=("read_message",),
        ),
        # gold prose, but one clause break and a count: the router sends it to tier 2 (a real miss)
        lesson(4, "Recruiters get a two-sentence decline; never mention salary.", "remember", 3),
        lesson(5, "If legal is on a thread, tell me, skip the summary, and let me read it.", "remember", 3),
    ]
    ev = L.evaluate(fixed, source)
    want = pd.DataFrame(
        [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]],
        index=pd.Index([0, 1, 2, 3], name="gold"),
        columns=pd.Index([0, 1, 2, 3], name="predicted"),
    )
    pd.testing.assert_frame_equal(ev.tiers, want)
    assert ev.shapes.loc["none", "count"] == 1 and ev.shapes.loc["sender", "sender"] == 1
    acc = ev.accuracy().iloc[0]
    assert acc["tier"] == pytest.approx(4 / 5) and acc["exact"] == 1.0 and acc["tool_hint_exact"] == 1.0
    assert acc["extractor_false_positive"] == pytest.approx(1 / 3)


def test_measured_accuracy_is_consistent_with_its_rows(source, corpus):
    ev = L.evaluate(corpus, source)
    rows = ev.rows
    assert int(ev.tiers.values.sum()) == len(corpus) == int(ev.shapes.values.sum())
    assert ev.accuracy().iloc[0]["tier"] == pytest.approx((rows.gold_tier == rows.tier).mean())
    assert (ev.tiers.values.trace() / len(corpus)) == pytest.approx(rows.tier_ok.mean())
    by_split = ev.accuracy("split")
    assert set(by_split.index) == {"dev", "test"} and by_split.lessons.sum() == len(corpus)


# ---------------------------------------------------------------------------------- registry & curve


def test_registry_switches_and_consumers(source):
    reg = source.registry
    assert reg.readers("priority_senders", "email") == ("pre_scan_inbox", "triage_inbox")
    assert reg.readers("noise_senders", "email") == ()
    on = reg.wire("email/triage_inbox")
    assert on.readers("noise_senders", "email") == ("triage_inbox",)
    off = reg.wire("email/triage_inbox", on=False)
    assert off.readers("priority_senders", "email") == ("pre_scan_inbox",)
    assert reg.with_wired([]).wiring == frozenset()
    with pytest.raises(KeyError):
        reg.wire("email/no_such_tool")
    assert reg.consumers("email").to_dict() == {
        "pre_scan_inbox": ["priority_senders"],
        "triage_inbox": ["priority_senders"],
    }


def test_inert_facts_at_baseline_are_exactly_the_lessons_needing_tier2(source, corpus):
    """Store every value-shaped email lesson as a fact: the inert report flags exactly the tier-2 ones."""
    email = [x for x in corpus if x.domain == "email" and x.value_shaped]
    with Store.open(":memory:") as store:
        for x in email:
            store.put_fact(x.namespace, x.key, x.value, scope=x.scope)
        rep = report(store, source.registry.consumers("email"))
    inert = {(x.namespace, x.key, x.scope) for x in rep.inert}
    tier2 = {(x.namespace, x.key, x.scope) for x in L.needs_tier2(email, source.registry)}
    assert inert == tier2 and inert
    assert {x.namespace for x in rep.honored} == {"priority_senders"}


def test_collapse_curve_on_a_fixed_case(tmp_path):
    unwired = MINI.replace(
        "reads: [priority_senders], wired: [priority_senders]}",
        "reads: [priority_senders], why: a sender list}\n"
        "      - {name: pre_scan_inbox, domain: email, reads: [priority_senders],"
        " why: the same list}",
    ).replace("gold: {tier: 0, namespace", "gold: {tier: 2, namespace")
    src = L.load_source(_source(tmp_path, unwired))
    corpus = L.build_corpus(src)  # 2 priority-sender lessons (no shipped reader now), 2 draft-length lessons
    curve = L.collapse_curve(corpus, src.registry)
    assert curve.tier2_lessons.tolist() == [4, 2, 2]
    assert curve.wired.tolist() == ["(start)", "email/pre_scan_inbox", "email/triage_inbox"]
    assert curve.share_of_all.tolist() == [1.0, 0.5, 0.5]
    res = L.residual(corpus, src)
    assert res.to_dict("records") == [
        {
            "domain": "email",
            "namespace": "drafting",
            "key": "max_sentences",
            "shape": "count",
            "why_no_tool": "the model writes the draft",
            "lessons": 2,
        }
    ]


def test_collapse_curve_on_the_corpus_ends_at_the_residual(source, corpus):
    curve = L.collapse_curve(corpus, source.registry)
    assert curve.tier2_lessons.is_monotonic_decreasing
    assert curve.tier2_lessons.iloc[0] == len(L.needs_tier2(corpus, source.registry))
    assert curve.tier2_lessons.iloc[-1] == L.residual(corpus, source).lessons.sum()
    assert curve.absorbed.iloc[1:].sum() == curve.tier2_lessons.iloc[0] - curve.tier2_lessons.iloc[-1]


# ------------------------------------------------------------------------------------------- costs


def test_token_costs_count_exactly_the_rendered_text(source, corpus):
    sample = [
        x
        for x in corpus
        if x.id
        in (
            "email-followup-window-sender-01",
            "email-priority-sender-01",
            "email-tool-summarize-01",
            "email-complaint-01",
        )
    ]
    costs = L.representation_costs(sample, source).set_index("lesson_id")
    for x in sample:
        text = L.renderings(x, source)
        assert costs.loc[x.id, "tier3"] == budget.count_tokens(text["tier3"])
        if x.value_shaped:
            assert costs.loc[x.id, "tier0"] == 0
            assert costs.loc[x.id, "tier2"] == budget.count_tokens(text["tier2"])
        else:
            assert pd.isna(costs.loc[x.id, "tier2"])
    member = next(x for x in sample if x.namespace == "priority_senders")
    assert L.renderings(member, source)["tier2"] == f'- priority_senders = "{member.key}"\n'
    scoped = next(x for x in sample if x.scope != "user")
    assert L.renderings(scoped, source)["tier2"] == f"- followup_hours = {scoped.value} (for {scoped.scope})\n"
    hint = costs.loc["email-tool-summarize-01"]
    assert hint.tier1 == 0 and hint.tier1_schema_max > 0
    summary = L.cost_summary(L.representation_costs(corpus, source))
    assert summary.loc["tier0", "max"] == 0 and summary.loc["tier2", "lessons"] == sum(x.value_shaped for x in corpus)


def test_registry_three_state_switch(source):
    reg = source.registry
    assert reg.state("email/triage_inbox") == "shipped" and reg.state("email/archive_message") == "off"
    on = reg.switch("email/triage_inbox", "on")
    assert on.state("email/triage_inbox") == "on" and on.switch("email/triage_inbox", "shipped").wiring == reg.wiring
    with pytest.raises(ValueError, match="switch state"):
        reg.switch("email/triage_inbox", "maybe")


def test_wiring_panel_recomputes_what_needs_tier2(source, corpus):
    from overlay_widgets.wiring import WiringPanel

    panel = WiringPanel(corpus, source.registry)
    start = len(L.needs_tier2(corpus, source.registry))
    assert panel.summary().startswith(f"9 of 24 tools reading learned facts: {start} of ")
    panel.toggles["email/triage_inbox"].value = "on"
    expected = len(L.needs_tier2(corpus, source.registry.wire("email/triage_inbox")))
    assert panel.remaining().lessons.sum() == expected < start
    assert panel.registry.readers("noise_senders", "email") == ("triage_inbox",)
    panel.set_all("all")
    assert panel.remaining().lessons.sum() == L.residual(corpus, source).lessons.sum()
    panel.set_all("shipped")
    assert panel.registry.wiring == source.registry.wiring
    panel.set_all("none")
    assert panel.remaining().lessons.sum() == sum(x.value_shaped for x in corpus)
    assert panel.out.outputs[0]["text"].startswith("0 of 24 tools")


# ------------------------------------------------------------------------------------------ verdict


def test_the_decision_rule_can_come_out_either_way():
    from overlay_kit.metrics import Interval

    rule = L.DecisionRule(max_leftover=0.5, worth_tokens=10)
    small, large, straddle = Interval(0.2, 0.1, 0.3), Interval(0.7, 0.6, 0.8), Interval(0.4, 0.2, 0.6)
    cheap, dear = Interval(2, 1, 4), Interval(14, 12, 16)
    assert rule.verdict(small, cheap) == "holds"
    assert rule.verdict(large, cheap) == "does not hold"
    assert rule.verdict(small, dear) == "does not hold"
    assert rule.verdict(straddle, cheap) == "undecided"
    assert rule.verdict(small, Interval(9, 5, 12)) == "undecided"
    assert rule.verdict(small, cheap, Interval(0.3, 0.1, 0.5)) == "does not hold"  # typed line followed more
    assert rule.verdict(small, cheap, Interval(0.0, -0.2, 0.2)) == "holds"


def test_write_path_tools_are_what_the_gates_refuse_to_steer_toward(source):
    forbidden = L.write_path_tools(source)
    wireable = {t.id for t in source.registry.wireable}
    assert forbidden & wireable == {
        "email/schedule_send",
        "email/archive_message",
        "calendar/decline_invite",
        "code-review/run_linter",
        "code-review/run_tests",
    }
    for tid in sorted(forbidden):  # the rule refuses a tool-hint preferring it, naming the confirmation set
        domain, name = tid.split("/", 1)
        rule = (gates.Rule("write_path_tool", gates.write_path_tool),)
        r = gates.check(
            None,
            source.skill(domain),
            "tool-hint",
            {"prefer": [name]},
            section=None,
            provenance="user_instruction",
            rules=rule,
        )
        assert r.outcome == "refused" and "confirmation set" in r.message
    narrower = gates.GateSettings(confirmation_tools=frozenset({"archive"}))  # the gates' setting decides
    assert L.write_path_tools(source, narrower) & wireable == {"email/archive_message"}


def test_coverage_under_the_three_wirings_resamples_namespaces(source, corpus):
    st = L.run(corpus, source, n_boot=200)
    regs = L.wirings(source)
    cov = st.coverage.set_index("wiring")
    value = [x for x in corpus if x.value_shaped]
    for w, reg in regs.items():
        assert cov.loc[w, "lessons"] == len(L.needs_tier2(corpus, reg))
        assert st.intervals[f"leftover_{w}"].n == len({(x.domain, x.namespace) for x in value})
    assert cov.loc["all wired", "lessons"] <= cov.loc["gate-allowed", "lessons"] <= cov.loc["shipped", "lessons"]
    assert not any(regs["gate-allowed"].is_on(t) for t in st.forbidden)
    assert len(st.forbidden) == 5 and set(st.forbidden) <= L.write_path_tools(source)
    table = st.table()
    assert table.loc["leftover share, gate-allowed", "estimate"] == cov.loc["gate-allowed", "share"]
    left = {x.id for x in L.needs_tier2(corpus, regs["gate-allowed"])}
    costs = st.costs[st.costs.lesson_id.isin(left)]
    saving = table.loc["tokens a typed line saves per leftover lesson, gate-allowed"]
    assert saving.estimate == pytest.approx((costs.tier3 - costs.tier2).mean())
    assert saving.resampled == f"{len({(x.domain, x.namespace) for x in value if x.id in left})} leftover namespaces"


def test_the_finding_is_the_rule_applied_to_the_table(source, corpus):
    from dataclasses import replace

    st = L.run(corpus, source, n_boot=200)
    lenient, strict = L.DecisionRule(max_leftover=0.99, worth_tokens=100), L.DecisionRule(0.01, 100)
    assert replace(st, rule=lenient).verdict() == "holds" and "**holds**" in replace(st, rule=lenient).finding()
    assert replace(st, rule=strict).verdict() == "does not hold"
    assert "wiring leaves too many values without a reader" in replace(st, rule=strict).finding()
    assert replace(st, rule=L.DecisionRule(0.99, 0.5)).verdict() == "does not hold"  # saving ≥ 0.5 token
    assert f"{st.table().loc['leftover share, gate-allowed', 'estimate']:.1%}" in st.finding()
    assert "Not in the verdict: the live-model arm was not run" in st.finding()


def test_wiring_panel_gates_button_is_the_gate_allowed_wiring(source, corpus):
    from overlay_widgets.wiring import WiringPanel

    panel = WiringPanel(corpus, source.registry, L.write_path_tools(source))
    panel.set_all("gates")
    assert panel.registry.wiring == L.wirings(source)["gate-allowed"].wiring
    assert panel.remaining().lessons.sum() == len(L.needs_tier2(corpus, L.wirings(source)["gate-allowed"]))


def test_the_verdict_is_computed_from_the_rule_file(source, corpus, tmp_path):
    """The committed rule gives the stored verdict; a copy of the file with other thresholds gives another."""
    import yaml

    from overlay_kit.studies import probe, rulefile

    committed = rulefile.load("02_tier2_collapse")
    assert L.RULE.file == committed and L.RULE.max_leftover == committed.param("max_leftover")
    assert probe.Power().difference == committed.param("live_difference")
    st = L.run(corpus, source, n_boot=200, rule=L.DecisionRule.load(committed))
    doc = yaml.safe_load(committed.path.read_text(encoding="utf-8"))
    doc["params"] |= {"max_leftover": 0.99, "worth_tokens": 100}
    path = tmp_path / "02_tier2_collapse.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    lenient = L.run(corpus, source, n_boot=200, rule=L.DecisionRule.load(path))
    assert (st.verdict(), lenient.verdict()) == ("undecided", "holds")
