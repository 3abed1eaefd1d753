"""`overlay-kit live`: every live arm against one model, end to end against the real SmolLM2-135M with a minimal
workload; and the power arithmetic it reports. Bookkeeping only — the 135M model's answers are not judged."""

from __future__ import annotations

import json
import math

import pytest
from engine_fixtures import real_model_path

from overlay_kit.cli import main
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


def test_cli_refuses_an_unknown_arm(capsys):
    assert main(["live", "--arms", "tier2,oracle"]) == 1
    assert "unknown arm(s) oracle" in capsys.readouterr().err


@pytest.mark.engine
def test_every_arm_runs_end_to_end_against_the_real_model(tmp_path, capsys):
    out = tmp_path / "live"
    rc = main(["live", "--model", str(real_model_path()), "--out", str(out), "--limit", "1", "--max-tokens", "16",
               "--cost-sizes", "0,80", "--cost-repeats", "2"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    # every arm recorded its replies, labelled with the model, its quantization and the machine
    for arm, n_min in (("tier2", 3), ("memory", 1), ("summaries", 1), ("cost", 8)):
        recs = [json.loads(line) for line in (out / f"{arm}.jsonl").read_text().splitlines()]
        assert len(recs) >= n_min, arm
        assert all(r["model"] == "SmolLM2-135M-Instruct.Q4_1" and "Q4_1" in r["engine"] for r in recs), arm
    meta = json.loads((out / "cost.inputs.json").read_text())["meta"]
    assert meta["kind"] == "real-weight" and meta["quantization"] == "Q4_1" and meta["machine"]
    report = (out / "report.md").read_text()
    for arm in ("tier2", "memory", "summaries", "cost"):
        assert f"**{arm}**" in report and f"## {arm}" in report
    # with one unit per arm nothing is powered: the report says so instead of giving a verdict
    assert "powered." not in printed.replace("UNDERPOWERED", "").replace("underpowered", "")
    assert printed.count("UNDERPOWERED") + printed.count("FLOOR") == 3
    assert "MDE" in printed  # the cost arm reports what its baseline can detect
