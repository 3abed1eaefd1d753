"""The tool loader: CORE > SKILL > SEMANTIC, the cap, LRU eviction, registry filter, tool-hint deltas."""

from __future__ import annotations

import hashlib

import pytest
from resolve_fixtures import FakeEmbedder, learn_active, make_skill, triage_inbox

from overlay_kit import prompt
from overlay_kit.defaults import SHIPPED
from overlay_kit.resolve import resolve
from overlay_kit.store import Store
from overlay_kit.tools import SEMANTIC_THRESHOLD, ToolLoader

REGISTRY = {f"tool_{i:02d}": f"does thing {i}" for i in range(30)}
CORE = ("tool_00", "tool_01")


def test_defaults_match_the_design():
    assert SHIPPED.max_tools == 14 and SEMANTIC_THRESHOLD == 0.20


def test_core_always_first_then_skill_then_semantic():
    emb = FakeEmbedder(
        {
            "find invoices": [1, 0, 0, 0],
            "tool 05: does thing 5": [0.9, 0.436, 0, 0],
            "tool 06: does thing 6": [0.3, 0.954, 0, 0],
            "tool 07: does thing 7": [0.1, 0.995, 0, 0],
        }
    )
    loader = ToolLoader(REGISTRY, CORE, embedder=emb)
    sel = loader.select("find invoices", skill_tools=["tool_10", "tool_05", "tool_00"])
    # tool_07's cosine (0.1) is under the 0.20 threshold; tool_05 is already a SKILL tool
    assert sel.tools == ("tool_00", "tool_01", "tool_10", "tool_05", "tool_06")
    assert sel.sources == {
        "tool_00": "core",
        "tool_01": "core",
        "tool_10": "skill",
        "tool_05": "skill",
        "tool_06": "semantic",
    }
    assert sel.scores["tool_06"] == pytest.approx(0.3, abs=1e-3) and "tool_07" not in sel.scores


def test_names_absent_from_the_live_registry_are_dropped():
    loader = ToolLoader(REGISTRY, CORE + ("ghost_core",))
    sel = loader.select(skill_tools=["tool_03", "delete_everything"])
    assert "delete_everything" not in sel.tools and "ghost_core" not in sel.tools
    assert ("delete_everything", "not in the live registry") in sel.dropped
    assert any(n == "ghost_core" for n, _ in sel.dropped)


def test_cap_and_lru_eviction_of_non_core_tools():
    loader = ToolLoader(REGISTRY, CORE, max_tools=5)
    first = loader.select(skill_tools=["tool_02", "tool_03", "tool_04"])
    assert first.tools == CORE + ("tool_02", "tool_03", "tool_04") and len(first.tools) == 5
    second = loader.select(skill_tools=["tool_03", "tool_05"])  # tool_02 is least recently used
    assert second.evicted == ("tool_02",)
    assert second.tools == CORE + ("tool_03", "tool_05", "tool_04")
    assert second.sources["tool_04"] == "carried"
    # more SKILL tools than room: lower-precedence candidates wait, core is never evicted
    third = loader.select(skill_tools=["tool_06", "tool_07", "tool_08", "tool_09"])
    assert third.tools[:2] == CORE and len(third.tools) == 5
    assert third.tools[2:] == ("tool_06", "tool_07", "tool_08")
    assert ("tool_09", "cap of 5 tools reached by higher-precedence tools") in third.dropped


def test_skill_beats_semantic_at_the_cap():
    emb = FakeEmbedder({"goal": [1, 0, 0, 0]} | {f"tool {i:02d}: does thing {i}": [1, 0, 0, 0] for i in range(30)})
    loader = ToolLoader(REGISTRY, CORE, max_tools=4, embedder=emb)
    sel = loader.select("goal", skill_tools=["tool_20", "tool_21"])
    assert sel.tools == CORE + ("tool_20", "tool_21")
    assert all(src != "semantic" for src in sel.sources.values())


def test_withheld_tools_leave_skill_and_semantic_and_are_evicted_but_core_stays():
    emb = FakeEmbedder({"goal": [1, 0, 0, 0], "tool 09: does thing 9": [1, 0, 0, 0]})
    loader = ToolLoader(REGISTRY, CORE, embedder=emb)
    loader.select(skill_tools=["tool_05"])
    sel = loader.select("goal", skill_tools=["tool_05", "tool_06"], withheld=["tool_05", "tool_09", "tool_00"])
    assert "tool_05" not in sel.tools and "tool_09" not in sel.tools and "tool_00" in sel.tools
    assert "tool_05" in sel.evicted
    assert ("tool_05", "withheld by a learned tool-hint") in sel.dropped


def test_a_tier1_delta_changes_tool_selection_without_changing_any_prompt_byte_elsewhere():
    skill = triage_inbox()
    registry = {t: f"{t.replace('_', ' ')}" for t in skill.tools} | {"get_time": "current time"}
    with Store.open(":memory:") as store:
        before = resolve(skill, store, embedder=False)
        learn_active(
            store,
            skill,
            "tool-hint",
            {"prefer": ["summarize_thread"], "drop": ["forward_message"]},
            "reading-the-inbox",
        )
        after = resolve(skill, store, embedder=False)
    assert after.text == before.text  # not one byte of skill text changed
    assert after.skill_tools != before.skill_tools and after.skill_tools[0] == "summarize_thread"
    sel_before = ToolLoader(registry, ["get_time"], max_tools=6).select(
        skill_tools=before.skill_tools, withheld=before.withheld_tools
    )
    sel_after = ToolLoader(registry, ["get_time"], max_tools=6).select(
        skill_tools=after.skill_tools, withheld=after.withheld_tools
    )
    assert sel_before.tools != sel_after.tools and "summarize_thread" in sel_after.tools

    def system(eff, sel):
        return prompt.compose(stable=eff.text, volatile="TOOLS:\n" + "\n".join(sel.tools), policy="tail")

    p0, p1 = system(before, sel_before), system(after, sel_after)
    assert hashlib.sha256(p0.prefix.encode()).digest() == hashlib.sha256(p1.prefix.encode()).digest()
    assert p0.tail != p1.tail  # the change lives in the volatile tools block only


def test_a_tool_hint_cannot_add_a_tool_the_agent_does_not_have():
    skill = make_skill(tools=("search_mail", "draft_reply"))
    from resolve_fixtures import delta

    from overlay_kit.resolve import compose

    eff = compose(skill, [delta(skill, "tool-hint", {"prefer": ["rm_rf"]}, "triage")])
    assert eff.skill_tools[0] == "rm_rf"  # the hint is passed on (gates refuse it at write time) …
    sel = ToolLoader({"search_mail": "", "draft_reply": ""}).select(skill_tools=eff.skill_tools)
    assert "rm_rf" not in sel.tools  # … and the loader can never render it
