"""Prompt composition (stable prefix / volatile tail) and re-prefill token counting."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlay_kit.prompt import (
    Prompt,
    PromptError,
    compose,
    count_tokens,
    reprefill_tokens,
)

AUTHORED = "# Email triage\n\nSort the inbox by sender, then by date."
TOOLS = "Tools: search_mail, open_mail"


def test_policy_places_the_learned_fragment():
    pre = compose(AUTHORED, "Prefer short replies.", TOOLS, policy="prefix")
    tail = compose(AUTHORED, "Prefer short replies.", TOOLS, policy="tail")
    assert pre.prefix == "Prefer short replies.\n\n" + AUTHORED and pre.tail == "\n\n" + TOOLS
    assert tail.prefix == AUTHORED and tail.tail == "\n\n" + TOOLS + "\n\nPrefer short replies."
    assert sorted(pre.system) == sorted(tail.system)  # the same bytes, moved


def test_no_learned_fragment_gives_the_same_prompt_under_both_policies():
    assert compose(AUTHORED, "", TOOLS, policy="prefix").text == compose(AUTHORED, "", TOOLS, policy="tail").text


def test_blocks_join_and_messages_follow_the_history():
    p = compose(["A", "", "B"], volatile=["T1", "T2"], history=[("user", "q"), ("assistant", "a")])
    assert p.system == "A\n\nB\n\nT1\n\nT2"
    assert p.messages() == [
        {"role": "system", "content": p.system},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
    ]
    assert p.then("user", "q2").text.startswith(p.text)


@pytest.mark.parametrize(
    "kwargs,field", [({"policy": "middle"}, "policy"), ({"history": [("system", "x")]}, "history[0]")]
)
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(PromptError, match=field.replace("[", r"\[")):
        compose(AUTHORED, **kwargs)
    with pytest.raises(PromptError, match="role"):
        Prompt("x").then("tool", "y")


def test_reprefill_counts_tokens_after_the_first_changed_byte():
    prev = "Hello world, this is the prefix. TAIL one"
    curr = "Hello world, this is the prefix. TAIL two"
    assert reprefill_tokens(prev, curr) == 1  # only "▁two" is new
    assert reprefill_tokens(prev, prev) == 0
    assert reprefill_tokens(None, curr) == count_tokens(curr)  # cold start: everything
    assert reprefill_tokens(prev, "X" + prev[1:]) == count_tokens("X" + prev[1:])  # first byte changed: all
    # an appended turn re-prefills just the new tokens, plus the one straddling the boundary
    assert reprefill_tokens("Hello wor", "Hello world and more") == count_tokens("world and more")


def test_learned_change_costs_the_whole_prompt_in_prefix_but_only_the_tail_in_tail():
    def turn(policy, learned, history):
        return compose(AUTHORED * 20, learned, TOOLS, policy=policy, history=history)

    hist1 = [("user", "first question")]
    hist2 = hist1 + [("assistant", "first answer"), ("user", "second question")]
    cost, last = {}, {}
    for policy in ("prefix", "tail"):
        a = turn(policy, "Recalled: procedure A.", hist1)
        last[policy] = b = turn(policy, "Recalled: procedure B.", hist2)  # the recalled set changed mid-session
        cost[policy] = reprefill_tokens(a, b)
    # prefix: everything from the changed letter on, i.e. nearly the whole prompt
    assert cost["prefix"] >= count_tokens(last["prefix"].text) - count_tokens("Recalled: procedure")
    # tail: only what follows the authored prefix and the tools block
    assert cost["tail"] <= count_tokens(last["tail"].text) - count_tokens(last["tail"].prefix + "\n\n" + TOOLS) + 1
    assert cost["tail"] * 10 < cost["prefix"]


def test_unchanged_learned_fragment_costs_the_same_under_both_policies():
    hist1 = [("user", "q1")]
    hist2 = hist1 + [("assistant", "a1"), ("user", "q2")]
    costs = {
        p: reprefill_tokens(
            compose(AUTHORED, "L", TOOLS, policy=p, history=hist1),
            compose(AUTHORED, "L", TOOLS, policy=p, history=hist2),
        )
        for p in ("prefix", "tail")
    }
    new_turns = "\n\n<|assistant|>\na1\n\n<|user|>\nq2"
    assert costs["prefix"] == costs["tail"]
    assert abs(costs["tail"] - count_tokens(new_turns)) <= 1  # standalone, the tokenizer adds a leading "▁"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80), st.text(max_size=40), st.text(max_size=40))
def test_reprefill_is_bounded_by_the_prompt_and_covers_the_changed_suffix(common, x, y):
    prev, curr = common + x, common + y
    n = reprefill_tokens(prev, curr)
    assert 0 <= n <= count_tokens(curr)
    assert (n == 0) == (prev == curr or curr == prev[: len(curr)])
    changed = len(os.path.commonprefix([prev, curr]))
    assert n >= count_tokens(curr[changed:]) - 1  # the whole changed suffix (±1 at the boundary)
