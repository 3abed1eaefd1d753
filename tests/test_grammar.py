"""overlay_kit.grammar: kinds, shapes, caps, provenance trust and the Delta value object."""

from datetime import datetime, timedelta, timezone

import pytest

from overlay_kit.anchor import Anchor
from overlay_kit.grammar import (
    KINDS,
    PROSE_LIMIT,
    RESTRICTIVE_ACTIONS,
    TIERS,
    TOOL_LIMIT,
    Delta,
    GrammarError,
    Provenance,
    cap_violations,
    cap_violations_many,
    check_shape,
    validate_fact,
    validate_payload,
)

GOOD = {
    "tool-hint": {"prefer": ["search_mail"], "drop": ["send_email"]},
    "parameter": {"key": "followup_hours", "value": 48, "scope": "recruiters"},
    "exception": {"condition": "the sender is a recruiter", "action": "decline"},
    "preference": {"body": "Keep replies to two sentences.", "trigger": "writing a reply"},
    "example": {"input": "Can we meet Tuesday?", "output": "Tuesday works; 10:00?"},
}


def test_tiers_match_the_grammar_table():
    assert dict(TIERS) == {"tool-hint": 1, "parameter": 2, "exception": 2, "preference": 3, "example": 3}
    assert "fact" not in KINDS


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_validates_to_canonical_form(kind):
    out = validate_payload(kind, GOOD[kind], research=True)
    assert out == GOOD[kind]


def test_fact_is_never_a_delta():
    with pytest.raises(GrammarError) as e:
        validate_payload("fact", {"key": "tz", "value": "UTC"}, research=True)
    assert e.value.field == "kind" and "learned_facts" in str(e.value)


@pytest.mark.parametrize("kind", ["parameter", "exception"])
def test_tier2_needs_research(kind):
    with pytest.raises(GrammarError, match="research=True"):
        validate_payload(kind, GOOD[kind])


def test_unknown_kind_and_unknown_field_are_named():
    with pytest.raises(GrammarError, match="unknown kind 'recipe'"):
        validate_payload("recipe", {})
    with pytest.raises(GrammarError) as e:
        validate_payload("preference", {"body": "x", "tone": "warm"})
    assert e.value.field == "payload.tone"


def test_exception_action_must_be_restrictive():
    with pytest.raises(GrammarError) as e:
        validate_payload("exception", {"condition": "a recruiter writes", "action": "send"}, research=True)
    assert e.value.field == "payload.action"
    assert "decline" in RESTRICTIVE_ACTIONS


@pytest.mark.parametrize(
    "kind,payload,field",
    [
        ("preference", {"body": "x" * (PROSE_LIMIT + 1)}, "payload.body"),
        ("preference", {"body": "ok", "trigger": "t" * 201}, "payload.trigger"),
        ("example", {"input": "i" * 200, "output": "o" * 201}, "payload.output"),
        ("parameter", {"key": "k" * 65, "value": 1}, "payload.key"),
        ("parameter", {"key": "k", "value": "v" * 201}, "payload.value"),
        ("exception", {"condition": "c" * 401, "action": "skip"}, "payload.condition"),
        ("tool-hint", {"prefer": [f"t{i}" for i in range(TOOL_LIMIT + 1)]}, "payload.prefer"),
    ],
)
def test_caps_are_enforced_and_separate_from_shape(kind, payload, field):
    assert check_shape(kind, payload)  # well shaped …
    problems = cap_violations(kind, payload)  # … but too big
    assert problems and problems[0].field == field
    with pytest.raises(GrammarError) as e:
        validate_payload(kind, payload, research=True)
    assert e.value.field == field


def test_cap_violations_of_a_batch_are_each_payloads():
    """`cap_violations_many` clears a batch of short plain payloads in whole-batch passes; any payload at or
    over a cap, or holding a control character, sends the batch through payload by payload."""
    fits = [
        ("preference", {"body": "b" * 200, "trigger": "t" * 200}),
        ("example", {"input": "i" * 200, "output": "o"}),
        ("exception", {"condition": "c" * 200, "action": "skip"}),
        ("parameter", {"key": "k" * 64, "value": "v"}),
    ]
    assert cap_violations_many(fits) == [[], [], [], []]
    wanted = {  # one payload added to the batch above → what the batch reports for it
        ("preference", "body", "b" * 401): ["payload.body: 401 characters; at most 400"],
        ("preference", "body", "b" * 400): [],
        ("preference", "trigger", "t" * 201): ["payload.trigger: 201 characters; at most 200"],
        ("example", "output", "o" * 201): ["payload.output: input + output are 401 characters; at most 400"],
        ("parameter", "key", "k" * 65): ["payload.key: 65 characters; at most 64"],
        ("parameter", "value", "v" * 200): [],
        ("preference", "body", "tab\tand\nline"): [],
        ("preference", "body", "a\x1bb\x85"): [
            "payload.body: control character U+001B (2 in all); lessons are plain text"
        ],
    }
    for (kind, field, text), errors in wanted.items():
        payload = {"body": "b", "trigger": "t", "input": "i" * 200, "output": "o", "key": "k", "value": "v"}
        payload = {
            f: payload[f]
            for f in {"preference": ("body",), "example": ("input", "output"), "parameter": ("key", "value")}[kind]
        } | {field: text}
        got = cap_violations_many(fits + [(kind, payload)])
        assert got[:4] == [[], [], [], []] and [str(e) for e in got[4]] == errors, (kind, field)
        assert [str(e) for e in cap_violations(kind, payload)] == errors


def test_example_at_exactly_the_cap_passes():
    assert validate_payload("example", {"input": "i" * 200, "output": "o" * 200})


@pytest.mark.parametrize(
    "payload,field",
    [
        ({"prefer": [], "drop": []}, "payload.prefer"),
        ({"prefer": ["a"], "drop": ["a"]}, "payload.drop"),
        ({"prefer": "search_mail"}, "payload.prefer"),
        ({"prefer": [""]}, "payload.prefer"),
    ],
)
def test_tool_hint_shape(payload, field):
    with pytest.raises(GrammarError) as e:
        check_shape("tool-hint", payload)
    assert e.value.field == field


def test_tool_hint_names_are_deduplicated_in_order():
    assert check_shape("tool-hint", {"prefer": ["b", "a", "b"]}) == {"prefer": ["b", "a"], "drop": []}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), None, [1], {"a": 1}, "  "])
def test_parameter_value_must_be_a_finite_scalar(value):
    with pytest.raises(GrammarError) as e:
        check_shape("parameter", {"key": "k", "value": value})
    assert e.value.field == "payload.value"


def test_validate_fact():
    assert validate_fact({"key": "tz", "value": "UTC"}) == (None, "tz", "UTC")
    assert validate_fact({"namespace": "mail", "key": "vip", "value": ["a@b"]}) == ("mail", "vip", ["a@b"])
    for bad, field in [
        ({"key": "tz"}, "payload.value"),
        ({"value": 1}, "payload.key"),
        ({"key": "k", "value": "v" * 2000}, "payload.value"),
        ({"key": "k", "value": 1, "extra": 2}, "payload.extra"),
        ({"key": "k", "value": float("nan")}, "payload.value"),
    ]:
        with pytest.raises(GrammarError) as e:
            validate_fact(bad)
        assert e.value.field == field


@pytest.mark.parametrize(
    "data,source,trusted",
    [
        ({"source": "user_instruction", "turns": ["s1/t3"]}, "user_instruction", True),
        ({"source": "outcome_evidence"}, "outcome_evidence", True),
        ({"source": "observed_content"}, "observed_content", False),
        ({"source": "unknown"}, "unknown", False),
        ({"source": "admin"}, "unknown", False),  # unparseable → untrusted, never trusted by default
        (None, "unknown", False),
        ("user_instruction", "unknown", False),
    ],
)
def test_provenance_trust_classes(data, source, trusted):
    p = Provenance.from_dict(data)
    assert (p.source, p.trusted) == (source, trusted)


def _delta(kind, created, id_):
    return Delta("mail", kind, GOOD[kind], Anchor("replies", "d" * 16, "1.0"), id=id_, created_at=created)


def test_sort_key_is_tier_kind_time_id_with_utc_instants():
    t0 = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
    other_tz = (t0 + timedelta(minutes=1)).astimezone(timezone(timedelta(hours=-5)))  # later instant, earlier clock
    ds = [
        _delta("preference", other_tz, "b"),
        _delta("preference", t0, "z"),
        _delta("example", t0, "a"),
        _delta("tool-hint", t0 + timedelta(days=1), "y"),
        _delta("parameter", t0, "c"),
    ]
    order = [d.id for d in sorted(ds, key=lambda d: d.sort_key)]
    assert order == ["y", "c", "a", "z", "b"]


def test_delta_text_and_trigger():
    d = _delta("preference", datetime.now(timezone.utc), "x")
    assert d.tier == 3 and d.trigger == "writing a reply" and d.text == GOOD["preference"]["body"]
    assert _delta("tool-hint", d.created_at, "y").trigger is None
    assert _delta("tool-hint", d.created_at, "y").text == "prefer search_mail; drop send_email"
    assert _delta("exception", d.created_at, "z").text == "When the sender is a recruiter: decline."


def test_to_dict_is_json_ready():
    import json

    d = _delta("example", datetime(2024, 1, 1, tzinfo=timezone.utc), "x")
    out = json.loads(json.dumps(d.to_dict()))
    assert out["anchor"] == {"section": "replies", "digest": "d" * 16, "base_version": "1.0"}
    assert out["created_at"] == "2024-01-01T00:00:00.000000+00:00" and out["tier"] == 3 and not out["trusted"]
