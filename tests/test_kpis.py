"""overlay_kit.studies.kpis: each KPI on hand-made inputs with a known answer, from a real store, and from a seed."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from overlay_support import TRUSTED, UNTRUSTED, make_skill, rule_copy

from overlay_kit import evidence, gates
from overlay_kit.store import Store, StoreError
from overlay_kit.studies import deploy, kpis, rulefile

SKILL = make_skill()


def sig(rows):
    return pd.DataFrame(rows, columns=["session", "signal", "scope", "lesson", "at"])


# --------------------------------------------------------------------------------- non-recurrence


def test_nonrecurrence_counts_pairs_stated_again_within_the_window():
    order = {f"s{n}": n for n in range(60)}
    rows = [
        ("s0", "correction", "user", "tone=formal", "t"),  # once
        ("s1", "correction", "user", "length=short", "t"),  # again at s15: repeated
        ("s15", "correction", "user", "length=short", "t"),
        ("s2", "correction", "user", "cc=owner", "t"),  # again at s30: outside the window
        ("s30", "correction", "user", "cc=owner", "t"),
        ("s3", "correction", "other", "tone=formal", "t"),  # another scope: its own pair
        ("s3", "correction", "other", "tone=formal", "t"),  # the same session counts too
        ("s4", "undo", "user", None, "t"),  # not a correction
        ("s5", "correction", "user", None, "t"),  # no lesson key: not counted
        ("s50", "correction", "user", "late=pair", "t"),
    ]  # window not over: censored
    r = kpis.nonrecurrence(sig(rows), order=order)
    assert (r.pairs, r.once, r.repeated, r.censored) == (4, 2, 2, 1) and r.rate == 0.5
    assert kpis.nonrecurrence(sig(rows), order=order, censor=False).pairs == 5
    assert kpis.nonrecurrence(sig(rows), order=order, window=40).once == 1  # cc=owner now repeats
    with pytest.raises(ValueError, match="missing"):
        kpis.nonrecurrence(sig(rows), order={"s0": 0})
    assert math.isnan(kpis.nonrecurrence(sig(rows[7:9]), order=order).rate)


# -------------------------------------------------------------------------------------- scorecard


def _evals(off_hash="h0", on_correct=(1, 1, 0, 1)):
    rows = []
    for arm, correct, h in (
        ("baseline", (0, 1, 0, 0), "h0"),
        ("off", (0, 1, 0, 0), off_hash),
        ("on", on_correct, "h1"),
    ):
        for k, c in enumerate(correct):
            rows.append(
                {
                    "arm": arm,
                    "need": f"n{k // 2}",
                    "category": "fact" if k < 2 else "preference",
                    "i": k % 2,
                    "option": c,
                    "correct": bool(c),
                    "prompt_hash": h,
                }
            )
    return pd.DataFrame(rows)


def test_scorecard_checks_off_against_baseline_exactly():
    good = kpis.scorecard(_evals())
    assert good["off_equals_baseline"] and good["off_differs_from_baseline"] == 0
    assert good["on_minus_off"] == pytest.approx(0.5) and good["category_diffs"] == {"fact": 0.5, "preference": 0.5}
    bad = kpis.scorecard(_evals(off_hash="h9"))
    assert not bad["off_equals_baseline"] and bad["off_differs_from_baseline"] == 1
    worse = kpis.scorecard(_evals(on_correct=(0, 1, 0, 0)))
    assert worse["on_minus_off"] == 0 and worse["worst_category_diff"] == 0
    with pytest.raises(ValueError, match="arm"):
        kpis.scorecard(_evals().query("arm != 'off'"))


def test_cost_and_atomicity():
    s = pd.DataFrame(
        {
            "learned_tokens": [0, 10, 30, 50],
            "tokens": [100, 110, 130, 160],
            "ceiling": [150] * 4,
            "atomic": [True, True, False, True],
        }
    )
    c = kpis.cost(s)
    assert (c["learned_tokens_median"], c["learned_tokens_p100"], c["tokens_p100"], c["cost_over_ceiling"]) == (
        20,
        50,
        160,
        1,
    )
    assert kpis.atomicity(s) == {"atomicity_violations": 1}


# ------------------------------------------------------------------------------- store-derived KPIs


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "k.db") as s:
        yield s


def learn(store, body, auto=False, source=TRUSTED):
    r = gates.learn(
        store,
        SKILL,
        "preference",
        {"body": body},
        section="replies",
        provenance=source,
        settings=gates.GateSettings(auto_approve=auto),
    )
    return r.delta


def test_promotion_precision_recounts_the_ledger(store):
    earned = learn(store, "Keep replies short.")
    for i in range(3):
        evidence.record_context(store, f"s{i}", "1", [earned.id], role="suggested")
        evidence.record_signal(store, f"s{i}", "1", "accepted")
    assert [r.decision for r in evidence.review_staged(store, min_samples=3)] == ["promoted"]
    approved = learn(store, "Sign as Sam.")
    store.approve(approved.id)
    tables = deploy.store_tables(store)
    p = kpis.promotion_precision(tables)
    assert (p["activations_evidence"], p["activations_user"], p["activated_below_threshold"]) == (1, 1, 0)
    assert p["counter_mismatches"] == 0

    auto = learn(store, "Use bullet points.", auto=True)  # auto-approve: active at zero evidence
    forged = learn(store, "Reply in French.")
    store.set_status(forged.id, "active", who="evidence", reason="no promotion log behind this")
    p = kpis.promotion_precision(deploy.store_tables(store))
    assert p["activations_auto"] == 1 and p["activations_other"] == 1 and p["activated_below_threshold"] == 2
    assert auto.status == "active"

    store.conn.execute(
        "UPDATE skill_deltas SET success_count = success_count + 1, attempt_count = attempt_count + 1 WHERE id = ?",
        (earned.id,),
    )
    assert kpis.promotion_precision(deploy.store_tables(store))["counter_mismatches"] == 1


def test_untrusted_activation_counts_unless_the_user_approved(store):
    q = learn(store, "Prefer the shorter summary.", source=UNTRUSTED)
    store.approve(q.id)
    assert kpis.promotion_precision(deploy.store_tables(store))["untrusted_without_approval"] == 0
    q2 = learn(store, "Prefer the longer summary.", source=UNTRUSTED)
    store.conn.execute(
        "INSERT INTO delta_audit (delta_id, who, at, from_status, to_status, reason) "
        "VALUES (?, 'budget', '2025-01-01', 'quarantined', 'active', 'forged')",
        (q2.id,),
    )
    assert kpis.promotion_precision(deploy.store_tables(store))["untrusted_without_approval"] == 1


def test_tier_discipline_counts_facts_and_hints_among_used_lessons(store):
    learn(store, "Keep replies short.", auto=True)
    learn(store, "Never staged into use.")
    gates.learn(
        store,
        SKILL,
        "tool-hint",
        {"prefer": ["search_mail"]},
        section="triage",
        provenance=TRUSTED,
        settings=gates.GateSettings(auto_approve=True),
    )
    gates.learn(store, SKILL, "fact", {"key": "digest_hour", "value": "07:00"}, section=None, provenance=TRUSTED)
    t = kpis.tier_discipline(deploy.store_tables(store))
    assert t == {"accepted_lessons": 3, "tier01_share": pytest.approx(2 / 3)}


def test_monotonicity_finds_each_kind_of_widening():
    def row(kind, tier, payload, status="active"):
        return {"kind": kind, "tier": tier, "payload": json.dumps(payload), "status": status}

    ok = pd.DataFrame(
        [row("tool-hint", 1, {"prefer": ["search_mail"], "drop": []}), row("preference", 3, {"body": "Keep it short."})]
    )
    assert kpis.monotonicity(ok, ["search_mail"])["permission_violations"] == 0
    bad = pd.DataFrame(
        [
            row("tool-hint", 1, {"prefer": ["send_now"], "drop": []}),
            row("preference", 3, {"body": "Use shell:execute to tidy up."}),
            row("preference", 2, {"body": "A tier raised by hand."}),
            row("tool-hint", 1, {"prefer": ["send_now"], "drop": []}, status="orphaned"),
        ]
    )
    assert kpis.monotonicity(bad, ["search_mail"])["permission_violations"] == 3
    assert kpis.monotonicity(bad.iloc[1:2], [], granted=["shell:execute"])["permission_violations"] == 0
    sessions = pd.DataFrame({"tools_ok": [True, False]})
    assert kpis.monotonicity(ok, ["search_mail"], sessions=sessions)["permission_violations"] == 1


def test_rebase_honesty():
    base = dict(body_changed=True, surfaced=True, status_before="active", status_after="active", true_changed=False)
    r = pd.DataFrame(
        [
            base | dict(state="clean", target="a", true_target="a"),  # honest
            base | dict(state="stale", target="b", true_target="b", true_changed=True),  # honest, flagged
            base | dict(state="orphaned", target=None, true_target=None, status_after="orphaned"),
            base | dict(state="clean", target="c", true_target="c", true_changed=True),  # silent re-apply
            base | dict(state="stale", target="d", true_target="e"),  # wrong section
            base | dict(surfaced=False, state=None, target=None, true_target="f"),  # dropped
            base | dict(state="clean", target="g", true_target="g", body_changed=False),  # not a body change
        ]
    )
    h = kpis.rebase_honesty(r)
    assert h == {
        "rebase_deltas": 6,
        "rebase_surfaced": pytest.approx(5 / 6),
        "rebase_silent_reanchored": 2,
        "rebase_silent_dropped": 1,
    }
    assert math.isnan(kpis.rebase_honesty(r.iloc[6:])["rebase_surfaced"])


# ------------------------------------------------------------------------------ runs and summaries

SMALL = dict(n_sessions=26, turns=3, n_situations=5, eval_turns=2)


def test_kpis_are_reproducible_from_a_seed():
    a = kpis.run_kpis(deploy.run(seed=7, headroom=96, tau=0.7, **SMALL))
    b = kpis.run_kpis(deploy.run(seed=7, headroom=96, tau=0.7, **SMALL))
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])), k
    c = kpis.run_kpis(deploy.run(seed=8, headroom=96, tau=0.7, **SMALL))
    assert any(a[k] != c[k] for k in ("corrections", "friction", "learned_tokens_median", "on"))
    assert a["off_equals_baseline"] and a["counter_mismatches"] == 0 and a["activated_below_threshold"] == 0


def test_summarize_gives_intervals_and_pools_ratios():
    f = pd.DataFrame(
        {
            "g": ["a"] * 4 + ["b"] * 4,
            "x": [1.0, 2.0, 3.0, 4.0, 5, 5, 5, 5],
            "nr_once": [1, 2, 3, 0, 1, 1, 1, 1],
            "nr_pairs": [2, 2, 4, 0, 1, 1, 1, 1],
            "nonrecurrence": [0.5, 1.0, 0.75, float("nan"), 1, 1, 1, 1],
        }
    )
    s = kpis.summarize(f, "g", ["x", "nonrecurrence"]).set_index("g")
    assert s.loc["a", "x"] == 2.5 and s.loc["a", "x_lo"] <= 2.5 <= s.loc["a", "x_hi"] and s.loc["a", "x_hi"] > 2.5
    assert s.loc["a", "nonrecurrence"] == pytest.approx(6 / 8)  # pooled, not the mean of run rates
    assert s.loc["b", "x_lo"] == s.loc["b", "x_hi"] == 5 and s.loc["a", "runs"] == 4


def _frame(axis, values, noise=(-0.01, 0.0, 0.01)):
    """Runs of one axis: per value (utility, non-recurring pairs of 10, friction, hard breaks, per-seed jitter
    of the utility or None for the shared `noise`)."""
    rows = []
    for v, (util, nr, friction, broken, *jitter) in values.items():
        for seed, e in enumerate(jitter[0] if jitter else noise):
            rows.append(
                {
                    "axis": axis,
                    "value": v,
                    "seed": seed,
                    "on_minus_off": util + e,
                    "nr_once": nr,
                    "nr_pairs": 10,
                    "nonrecurrence": nr / 10,
                    "friction": friction,
                    "learned_tokens_median": 10.0,
                    "activated_below_threshold": broken,
                }
            )
    return pd.DataFrame(rows)


def _rule(tmp_path, **params):
    """The committed 07 rule with some params changed (a copy under tmp_path)."""
    return rule_copy("07_kpis", tmp_path, **params)


def test_recommend_judges_each_value_against_the_shipped_one_seed_by_seed():
    f = pd.concat(
        [
            _frame("a", {"'x'": (0.9, 9, 1.0, 1), "'y'": (0.5, 8, 1.0, 0), "'z'": (0.3, 8, 0.5, 0)}),
            _frame("b", {"1": (0.5, 8, 3.0, 0, (0.05, -0.05, 0.0)), "3": (0.5, 8, 2.0, 0)}),
            _frame("c", {"1": (0.5, 9, 3.0, 0), "2": (0.2, 9, 1.0, 0)}),
        ]
    )
    r = kpis.recommend(f, defaults={"a": "z", "b": 3, "c": 1}).set_index("axis")
    assert r.loc["a", "verdict"] == "switch to 'y'" and r.loc["a", "diff"] == pytest.approx(0.2)
    assert "'x': activated_below_threshold" in r.loc["a", "excluded"] and "'x'" not in r.loc["a", "compared"]
    b = r.loc["b"]
    assert b["verdict"].startswith("no difference detected at MDE") and b["seeds"] == 3
    sd = np.std([0.06, -0.05, -0.01], ddof=1)  # the paired differences: jitter minus the shared noise
    assert b["mde"] == pytest.approx((1.959964 + 0.841621) * sd / np.sqrt(3), rel=1e-4)
    assert r.loc["c", "verdict"] == "shipped wins" and r.loc["c", "value"] == "1"
    assert kpis.recommend(f, defaults={"b": 3}, axes=["b"])["axis"].tolist() == ["b"]
    broken_shipped = _frame("d", {"1": (0.5, 8, 1.0, 2), "2": (0.5, 8, 1.0, 0)})
    assert (
        kpis.recommend(broken_shipped, defaults={"d": 1})["verdict"].iloc[0]
        == "the shipped value breaks a hard constraint"
    )


def test_the_verdict_is_computed_from_the_rule_file(tmp_path):
    """A value better on the primary utility but worse on non-recurrence by 0.2: not a switch under the
    committed margin (0.05); a rule file with a margin of 0.5 lets it through."""
    f = _frame("m", {"1": (0.5, 9, 1.0, 0), "2": (0.7, 7, 1.0, 0)})
    committed = kpis.recommend(f, defaults={"m": 1}).set_index("axis")
    assert committed.loc["m", "verdict"].startswith("no difference detected")
    loose = kpis.recommend(f, defaults={"m": 1}, rule=_rule(tmp_path, margin=0.5)).set_index("axis")
    assert loose.loc["m", "verdict"] == "switch to 2"


def test_recommend_sets_aside_only_the_constraint_a_value_breaks_by_definition():
    f = _frame("auto_approve", {"True": (0.9, 9, 1.0, 1), "False": (0.5, 8, 1.0, 0)})
    r = kpis.recommend(f, defaults={"auto_approve": False}).set_index("axis")
    assert r.loc["auto_approve", "verdict"] == "switch to True" and r.loc["auto_approve", "excluded"] == ""
    strict = kpis.recommend(f, defaults={"auto_approve": False}, by_definition={}).set_index("axis")
    assert strict.loc["auto_approve", "verdict"] == "shipped wins"


def test_robust_switches_only_where_every_world_switches():
    agree = _frame("b", {"1": (0.9, 9, 1.0, 0), "2": (0.5, 9, 1.0, 0)})
    split = {"p_obey=0.6": (0.5, 0.9), "default": (0.9, 0.5)}  # which value wins, per world
    rows = [agree.assign(world=w) for w in ("default", "p_obey=0.6")]
    rows += [_frame("c", {"1": (u1, 9, 1.0, 0), "2": (u2, 9, 1.0, 0)}).assign(world=w) for w, (u1, u2) in split.items()]
    rows += [
        _frame("e", {"1": (0.5, 9, 1.0, 0, (0.05, -0.05, 0.0)), "2": (0.5, 9, 1.0, 0)}).assign(world=w)
        for w in ("default", "p_obey=0.6")
    ]
    r = kpis.robust(pd.concat(rows), defaults={"b": 2, "c": 2, "e": 2}).set_index("axis")
    assert r.loc["b", "verdict"] == "switch to 1" and r.loc["b", "scenarios"] == 2
    assert r.loc["c", "verdict"] == "depends on p_obey" and r.loc["c", "at_defaults"] == "switch to 1"
    assert r.loc["e", "verdict"] == f"no difference detected at MDE {r.loc['e', 'mde']:.3f}"


def test_assumptions_are_settings_with_their_defaults_inside_the_stated_range():
    s = deploy.Settings()
    for name, a in deploy.ASSUMPTIONS.items():
        assert a.low <= getattr(s, name) <= a.high and a.what, name
    worlds = kpis.worlds(["p_obey", "review_every"])
    assert worlds == {
        "default": {},
        "p_obey=0.6": {"p_obey": 0.6},
        "p_obey=0.99": {"p_obey": 0.99},
        "review_every=5": {"review_every": 5},
        "review_every=40": {"review_every": 40},
    }
    with pytest.raises(KeyError):
        kpis.worlds(["obedience"])
    for assumed in kpis.worlds().values():  # every end of every range is a valid world
        deploy.settings(**assumed)


def test_study_dedupes_identical_configurations_and_validates_first(monkeypatch):
    calls = []
    real = kpis._kpi_row

    def counting(**params):
        calls.append(params)
        return real(**params)

    monkeypatch.setattr(kpis, "_kpi_row", counting)
    tiny = dict(n_sessions=6, turns=2, n_situations=3, eval_turns=1)
    frame = kpis.study(
        {"auto_approve": [False, True], "min_samples": [3, 5]},
        seeds=[0],
        base=tiny,
        backend="sequential",
        progress=False,
    )
    assert len(frame) == 4 and len(calls) == 3  # auto_approve=False and min_samples=3 are the same run
    assert list(frame["axis"]) == ["auto_approve", "auto_approve", "min_samples", "min_samples"]
    assert list(frame["value"]) == ["False", "True", "3", "5"] and set(frame["world"]) == {"default"}
    with pytest.raises(ValueError, match="not swept"):
        kpis.study({"tau": [0.5]}, seeds=[0], fixed={"headroom": {"x": 1}})
    with pytest.raises(TypeError, match="colour"):
        kpis.study({"colour": ["red"]}, seeds=[0], backend="sequential", progress=False)
    assert len(calls) == 3  # nothing ran for the bad grid


def test_kpi_study_reads_its_runs():
    st = kpis.run(
        {"auto_approve": [False, True]},
        seeds=[0, 1],
        assumptions=["p_obey"],
        base=dict(n_sessions=24, turns=3, n_situations=4, eval_turns=1),
        backend="sequential",
        progress=False,
        n_boot=200,
    )
    assert set(st.frame["world"]) == {"default", "p_obey=0.6", "p_obey=0.99"} and len(st.at_defaults()) == 2
    board = st.dashboard().set_index("kpi")
    assert board.loc["off_differs_from_baseline", "met"] and board.loc["activated_below_threshold", "estimate"] == 0
    n = st.never().set_index("kpi")
    assert n.loc["off_differs_from_baseline", "out_of"] == 12  # 3 worlds × 2 values × 2 seeds, each run once
    assert n.loc["activated_below_threshold", "count"] > 0
    assert (st.frame.query("value == 'False'")["activated_below_threshold"] == 0).all()
    t = st.table().set_index("axis")
    assert t.loc["auto_approve", "scenarios"] == 3 and t.loc["auto_approve", "shipped"] == "False"
    text = st.finding()
    assert "only where auto_approve = True" in text and "`auto_approve` (ships False)" in text
    assert "by definition" in text and text.startswith(st.rule.stamp())
    need = st.seeds_needed().set_index("axis")
    assert need.loc["auto_approve", "seeds"] == 2


def test_store_exports_are_named_and_read_only(store):
    with pytest.raises(StoreError, match="unknown export"):
        store.export("skill_deltas; DROP TABLE x")
    cols, rows = store.export("deltas")
    assert cols[:3] == ["id", "skill", "scope"] and rows == []


def test_the_study_plan_comes_from_the_rule_file(tmp_path):
    rule = rulefile.load("07_kpis")
    smoke, full = kpis.plan(rule), kpis.plan(rule, full=True)
    assert smoke["axes"] == rule.param("axes") and len(smoke["seeds"]) == rule.param("default_run")["seeds"]
    assert set(full["axes"]) == set(rule.param("axes")) | set(rule.param("full_axes"))
    assert len(full["seeds"]) == rule.param("max_seeds") and full["assumptions"] == list(deploy.ASSUMPTIONS)
    other = kpis.plan(_rule(tmp_path, default_run={"seeds": 7, "n_sessions": 12}))
    assert len(other["seeds"]) == 7 and other["base"] == {"n_sessions": 12}


def test_a_recording_is_judged_like_the_run_it_recorded_and_against_what_shipped_then(tmp_path):
    st = kpis.run(
        {"min_samples": [3], "retire_below": [0.5]},
        seeds=[0, 1],
        base=dict(n_sessions=24, turns=3, n_situations=4, eval_turns=1),
        backend="sequential",
        progress=False,
    )
    path = tmp_path / "07_kpis_full.csv.gz"
    st.frame.to_csv(path, index=False, compression="gzip")
    shipped = {"min_samples": 3, "retire_below": None}
    meta = {"rule_sha256": st.rule.sha256, "shipped": shipped, "seeds": 2}
    kpis.RECORDED_META(path).write_text(json.dumps(meta))
    again, read_meta = kpis.recorded(path)
    assert read_meta == meta and again.defaults == shipped  # the baseline is what shipped then
    assert set(again.frame.value) == {"3", "5", "None", "0.5"}  # a value "None" is a value, not a missing one
    live = kpis.KPIStudy(st.frame, shipped, st.axes, st.fixed, st.rule, st.n_boot, st.seed)
    pd.testing.assert_frame_equal(again.table(), live.table())
    assert kpis.recorded(tmp_path / "none.csv.gz") is None
    other = _rule(tmp_path, margin=0.2)
    with pytest.raises(ValueError, match="recorded under rule sha256"):
        kpis.recorded(path, rule=other)


def test_a_recording_says_when_it_was_cut_short():
    meta = {
        "recorded": "2026-12-05T06:29:53+00:00",
        "commit": "b9e4270d07",
        "rule_sha256": "c4d946e3d2e7e408",
        "seeds": 10,
        "planned_seeds": 60,
        "worlds": 21,
        "n_sessions": 100,
        "rows": 4410,
        "machine": "x86_64, 2 CPUs",
        "n_jobs": 2,
    }
    assert "cut short at 10 of the 60 planned seeds" in kpis.recording_note(meta)
    assert "cut short" not in kpis.recording_note(meta | {"seeds": 60})
    assert kpis.recording_note(meta).startswith("FULL run recorded 2026-12-05 at commit b9e4270")


def test_the_cost_kpi_at_realistic_scale_is_the_kpis_own_cost_over_the_products_plan():
    from overlay_kit.defaults import SHIPPED
    from overlay_kit.studies import tuning, world

    w = world.build(1, scale="realistic", users=2, sessions=200)
    got = kpis.cost_at_scale(w, 1500)
    t = got.table.set_index("kpi")
    rows = tuning.at_scale(w, [1500]).rows
    assert got.sessions == len(rows) and got.lessons_held_max == rows.held.max() > SHIPPED.resident_max
    on, off = t["selection on (shipped)"], t["every lesson resident"]
    assert on["learned_tokens_median"] == rows.tokens.median() and off["learned_tokens_p100"] == rows.held_tokens.max()
    assert on["lessons_in_context_p100"] <= SHIPPED.select_k + rows.held.max() - rows.resident.min()
    assert on["learned_tokens_median"] <= off["learned_tokens_median"] and off["cost_over_ceiling"] > 0
    assert on["cost_over_ceiling"] == ((rows.authored + rows.tokens) > 1500).sum()
    assert "realistic scale" in got.answer() and "because the budget and the selection act" in got.answer()
