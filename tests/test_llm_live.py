"""`overlay-kit live`: every live arm against one model, end to end against the real SmolLM2-135M with a minimal
workload; and the power arithmetic it reports. Bookkeeping only — the 135M model's answers are not judged."""

from __future__ import annotations

import json
import math

import pytest
from engine_fixtures import real_model_path

from overlay_kit.cli import main
from overlay_kit.llm.client import Skipped
from overlay_kit.studies import live, probe


def test_power_is_the_probes_own_calculation():
    n = live.needed_per_arm(0.2)
    assert n == probe.Power(difference=0.2).required
    assert live.detectable_difference(n) <= 0.2 < live.detectable_difference(n - 1)
    assert live.detectable_difference(1) == math.inf and live.detectable_difference(10) > 0.4


def test_arm_status_follows_the_stated_rule():
    def result(*powers):
        return live.LiveResult("m", "src", None, powers, notes={"tier2": ""})

    floor = result(live.ArmPower("tier2", "control", 11, 0, "scenario"), live.ArmPower("tier2", "tier2", 11, 0, "s"))
    assert floor.status("tier2") == "underpowered"  # 0/11: upper bound 0.26 ≥ 0.2 — not even a floor at n=11
    assert result(live.ArmPower("tier2", "a", 40, 0, "s")).status("tier2") == "floor"  # upper bound 0.09
    assert result(live.ArmPower("tier2", "a", 40, 20, "s")).status("tier2") == "underpowered"
    assert result(live.ArmPower("tier2", "a", 120, 60, "s")).status("tier2") == "powered"
    assert result().status("tier2") == "no pass-rate (cost: see its MDE)" and result().status("x") == "not run"


def test_cli_refuses_unknown_arms_and_scenarios(capsys):
    assert main(["live", "--arms", "tier2,oracle"]) == 1
    assert "unknown arm(s) oracle" in capsys.readouterr().err
    assert main(["live", "--scenarios", "no-such-scenario", "--model", "/nonexistent.gguf"]) == 1
    assert "unknown tier-2 scenario(s): no-such-scenario" in capsys.readouterr().err


def test_cli_passes_the_workload_to_live_run(monkeypatch, tmp_path, capsys):
    seen = {}

    def fake_run(**kwargs):
        seen.update(kwargs)
        return live.LiveResult("m", "src", tmp_path, (), notes={"memory": "1 conversation"})

    monkeypatch.setattr(live, "run", fake_run)
    assert (
        main(
            [
                "live",
                "--base-url",
                "http://127.0.0.1:9",
                "--model-id",
                "x",
                "--limit",
                "2",
                "--arms",
                "memory,cost",
                "--scenarios",
                "a,b",
                "--cost-sizes",
                "0,80",
                "--cost-repeats",
                "2",
            ]
        )
        == 0
    )
    w = seen["workload"]
    assert (seen["base_url"], seen["model"], seen["model_path"]) == ("http://127.0.0.1:9", "x", None)
    assert (w.limit, w.arms, w.scenarios, w.cost_inputs.sizes, w.cost_inputs.repeats) == (
        2,
        ("memory", "cost"),
        ("a", "b"),
        (0, 80),
        2,
    )
    assert "**memory**" in capsys.readouterr().out


@pytest.mark.engine
def test_every_arm_runs_end_to_end_against_the_real_model(tmp_path):
    out = tmp_path / "live"
    # a minimal workload: one short text scenario (3 arms), one conversation, one document, 2 sizes × 2 repeats
    result = live.run(
        model_path=real_model_path(),
        out=out,
        workload=live.Workload(
            limit=1,
            max_tokens=16,
            scenarios=("calendar-agenda-items",),
            cost_inputs=live.cost_inputs((0, 80), 2, stable_chars=400),
        ),
    )
    text = result.finding()
    # every arm recorded its replies, labelled with the model, its quantization and the machine
    n_compliance = 2 * len(live.compliance.ARMS)  # one lesson, its two goals, every arm
    for arm, n in (("tier2", 3), ("memory", 1), ("summaries", 1), ("compliance", n_compliance), ("cost", 8)):
        recs = [json.loads(line) for line in (out / f"{arm}.jsonl").read_text().splitlines()]
        assert len(recs) == n, arm
        assert all(r["model"] == "SmolLM2-135M-Instruct.Q4_1" and "Q4_1" in r["engine"] for r in recs), arm
        assert all("cores" in r["engine"] for r in recs), arm  # the machine
    meta = json.loads((out / "cost.inputs.json").read_text())["meta"]
    assert meta["kind"] == "real-weight" and meta["quantization"] == "Q4_1" and meta["machine"]
    assert sorted(result.table().arm.unique()) == ["compliance", "memory", "summaries", "tier2"]
    table = result.table()
    assert table[table.arm != "compliance"].n.tolist() == [1] * 5 and set(table[table.arm == "compliance"].n) == {2}
    report = (out / "report.md").read_text()
    for arm in live.ARMS:
        assert f"**{arm}**" in report and f"## {arm}" in report
    # with one unit per arm nothing is powered: the report says so instead of giving a verdict
    assert all(result.status(a) == "underpowered" for a in ("tier2", "memory", "summaries", "compliance"))
    assert text.count("UNDERPOWERED — no verdict") == 4 and "MDE" in text


def test_the_recorded_live_run_replays_scored_by_the_same_code_and_labelled():
    model = "qwen2.5-coder-0.5b-instruct"
    for arm, n in (("tier2", 333), ("memory", 12), ("summaries", 6)):
        powers, table, note = live.replay_arm(arm, model)
        assert note.startswith(f"replayed: {arm} replies of {model} recorded 2026-12-07") and "Q4_K_M" in note
        assert sum(p.n for p in powers) == n == len(table)
    assert {p.sub: p.passed for p in live.replay_arm("tier2", model)[0]}["tier0"] == 33  # as report.md says
    with pytest.raises(Skipped, match="no recorded tier2 arm of nope"):
        live.replay("tier2", "nope")
    with pytest.raises(ValueError, match="arm must be one of"):
        live.replay_arm("cost", model)
