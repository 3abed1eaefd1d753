"""The local-model reranker of tier-3 selection (rule datasets/rules/18_reranker.yaml, notebook 18's last section):
the reply parser, the prompt the rule states, the rerank hook of `trial`, and the recorded replies replayed (no
model runs here)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from overlay_kit.llm.client import Skipped
from overlay_kit.studies import rulefile
from overlay_kit.studies import selection as study

RULE = rulefile.load(study.RERANKER_RULE)


@pytest.mark.parametrize(
    "reply, kept",
    [
        ("3, 1, 7", [2, 0, 6]),
        ("Lessons 2 and 2 and 5.", [1, 4]),
        ("1-3", [0, 2]),  # every integer names a lesson: a range is its two ends
        ("21, 0, 4", [3]),  # outside 1..20: not a lesson
        ("none", []),
        ("No lessons apply.", []),
        ("None of them, except maybe 4", [3]),  # a number wins over "none"
        ("I cannot tell.", None),
        ("", None),
    ],
)
def test_the_parser_keeps_the_lessons_a_reply_names(reply, kept):
    assert study.parse_rerank(reply, 20) == kept


def test_the_prompt_is_the_rules_to_the_word():
    words = " ".join(RULE.rule.split())
    messages = study.rerank_messages("plan the trip", ["Pack light.", "Book early."])
    assert " ".join(messages[0]["content"].split()) in words
    user = messages[1]["content"]
    assert user.startswith("Request: plan the trip\n\nSaved lessons:\n1. Pack light.\n2. Book early.\n\n")
    assert " ".join(user.split("\n\n")[-1].split()) in words


class _Fixed:
    """A client whose every reply is `content`."""

    def __init__(self, content: str):
        self.content, self.asked = content, 0

    def chat(self, model, messages, **kw):
        self.asked += 1
        return SimpleNamespace(
            content=self.content, elapsed_s=2.0, prompt_tokens=1000, replayed=False, recorded_at=None
        )


@pytest.fixture(scope="module")
def two_and_unparseable():
    return {c: study.reranker_trials(_Fixed(c), rule=RULE) for c in ("1, 2", "no idea")}


def test_the_reranker_keeps_what_the_model_names_of_the_shipped_top_20(two_and_unparseable):
    shipped, reranked, log = two_and_unparseable["1, 2"]
    assert len(shipped) == len(reranked) == len(log) == RULE.param("sample_goals")
    assert (shipped.admitted == RULE.param("top_k")).all() and (reranked.admitted == 2).all()
    assert (reranked.found <= shipped.found).all() and list(reranked.goal) == list(shipped.goal)
    fig = study.reranker_figures(shipped, reranked, log, RULE)
    assert fig["unparseable"] == 0 and fig["median_ms"] == 2000 and not fig["fast"]


def test_an_unparseable_reply_keeps_all_20_and_is_counted(two_and_unparseable):
    shipped, reranked, log = two_and_unparseable["no idea"]
    assert reranked[["found", "admitted", "tokens"]].equals(shipped[["found", "admitted", "tokens"]])
    fig = study.reranker_figures(shipped, reranked, log, RULE)
    assert fig["unparseable"] == 1.0 and fig["recall_difference"].estimate == 0
    assert fig["verdict"] == "not shipped in any form"  # nothing falls: the irrelevant margin is missed


def test_the_recorded_replies_replay_under_the_rule():
    try:
        shipped, reranked, log, provenance = study.replay_reranker()
    except Skipped as exc:
        pytest.skip(str(exc))
    assert log.replayed.all() and len(log) == RULE.param("sample_goals") == provenance["replies"]
    assert provenance["rule_sha256"] == RULE.sha256 and provenance["asset_sha256"]
    assert log.elapsed_s.notna().all() and (reranked.admitted <= shipped.admitted).all()


def test_a_missing_recording_is_named(tmp_path):
    with pytest.raises(Skipped, match="no recording at"):
        study.replay_reranker(path=tmp_path / "none.jsonl")
