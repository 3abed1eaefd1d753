"""The memory-architecture benchmark: its trace, outcome classes, erasure scan, decision rule and study shape."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from overlay_kit.defaults import SHIPPED
from overlay_kit.metrics import Interval
from overlay_kit.studies import memory_bench as mb
from overlay_kit.studies import rulefile

SMALL = {"users": 2, "sessions": 42, "architectures": ["overlay", "keyword_files", "mem0_flat"], "progress": False}


@pytest.fixture(scope="module")
def study():
    return mb.run(**SMALL)


def test_classify_is_flag_blind_and_reads_what_reaches_the_model():
    assert mb.classify(False, False, "out") == "lost"
    assert mb.classify(False, True, "out") == "dropped"
    assert mb.classify(True, False, "shown") == mb.classify(True, False, "marked") == "right"
    assert mb.classify(True, True, "shown") == "wrong_in_context"  # flagged or not: it is in front of the model
    assert mb.classify(True, True, "marked") == mb.classify(True, True, "out") == "wrong_kept_out"


def test_shown_tells_a_marked_lesson_from_an_unmarked_one():
    body = "Reply within a day."
    assert mb.shown(f"- (preference) {body}", body) == "shown"
    assert mb.shown(f"- (preference) {mb.STALE_MARK}{body}", body) == "marked"
    assert mb.shown(f"- (preference) {mb.STALE_MARK}Again: {body}\n- {body}", body) == "shown"
    assert mb.shown("nothing here", body) == "out"


def test_fragments_cover_the_whole_text():
    text = "x" * 10 + "abcdefghijklmnopqrstuvwxyz0123456789"
    parts = mb.fragments(text, 24, 8)
    assert all(len(p) == 24 for p in parts) and parts[-1] == text[-24:].encode()
    assert mb.fragments("short", 24, 8) == [b"short"]


def test_trace_follows_the_truth_of_each_update():
    t = mb.trace(0, 2, 42, 20)
    assert set(t.skills) == {s.agent for s in t.world.sessions}
    for lesson, path in t.homes.items():
        domain = next(x.domain for x in mb.world.lessons() if x.id == lesson)
        for v in range(len(path) - 1):
            fate = t.truth[domain][v].get(path[v])
            if fate is not None and fate.target:
                assert path[v + 1] in fate.homes


def test_each_lesson_refers_to_a_line_of_its_section_and_is_wrong_only_when_an_edit_reaches_it():
    t = mb.trace(1, 4, 200, 20)
    by_id = {x.id: x for x in mb.world.lessons()}
    for lesson, refs in t.referents.items():
        domain = by_id[lesson].domain
        assert refs[0] == mb.referent(by_id[lesson])
        for v, ref in enumerate(refs):
            if ref is not None:  # the line is in the section the trace says holds it
                sec = {x.slug: x for x in mb.anchor_mod.parse(t.skills[domain][v].body)}[t.homes[lesson][v]]
                assert mb._norm(ref) in {mb._norm(line) for line in sec.text.splitlines()}
        for u in t.invalid[lesson]:
            assert refs[u] is not None and refs[u + 1] != refs[u]  # made wrong: its line was edited or went
        for u in range(len(refs) - 1):
            if refs[u] is not None and refs[u + 1] == refs[u]:
                assert u not in t.invalid[lesson]  # an untouched line keeps its lesson right
    assert t.wrong(lesson, len(refs) - 1, 0) == bool(t.invalid[lesson])
    assert not t.wrong(lesson, 0, 0)


def test_the_simulated_user_picks_the_section_only_among_those_shown():
    assert mb._pick(["a", "b", "c"], "b", "a") == "b"
    assert mb._pick(["a", "c"], "b", "a") == "a"  # not shown: the proposal stands


def test_verdict_comes_out_every_way():
    assert mb.verdict(Interval(0.2, 0.1, 0.3), 0.05) == "overlay better"
    assert mb.verdict(Interval(-0.2, -0.3, -0.1), 0.05) == "overlay worse"
    assert mb.verdict(Interval(0.0, -0.01, 0.01), 0.05) == "no difference detected at MDE 0.05"
    assert mb.verdict(Interval(0.02, -0.1, 0.2), 0.05) == "undecided"


def test_the_study_has_a_row_per_architecture_and_a_finding_from_its_rule(study):
    t = study.table()
    assert list(t.architecture) == SMALL["architectures"]
    assert {
        "needed_in",
        "needed_in_low",
        "irrelevant_in",
        "learned_tokens",
        "wrong_in_context",
        "lost",
        "prompts_per_update",
        "prompts_per_update_low",
        "false_alarms",
        "flag_recall",
        "residue",
        "growth",
    } <= set(t.columns)
    assert set(study.anchoring_accuracy().measure) == {"top1", "top3", "confident"}
    assert set(study.goals().goal) == set(study.rule.param("goals"))
    assert study.finding().startswith(study.rule.stamp())
    assert "Compliance arm: estimated: needed-in-context x the follow rate" in study.finding()
    c = study.comparisons()
    assert set(c.architecture) == {"keyword_files", "mem0_flat"} and set(c.metric) == set(study.rule.param("judged"))
    # the overlay erases completely; mem0's history keeps the deleted text
    assert t.set_index("architecture").loc["overlay", "residue"] == 0
    assert t.set_index("architecture").loc["mem0_flat", "residue"] > 0


def test_a_modified_rule_changes_the_verdict(study, tmp_path):
    text = study.rule.path.read_text(encoding="utf-8").replace("margins: {needed_in: 0.05,", "margins: {needed_in: 5,")
    path = tmp_path / f"{mb.RULE_NAME}.yaml"
    path.write_text(text, encoding="utf-8")
    other = replace(study, rule=rulefile.load(path))  # the same data judged under the changed rule
    before = study.comparisons().set_index(["architecture", "metric"]).verdict
    after = other.comparisons().set_index(["architecture", "metric"]).verdict
    changed = before[before != after]
    assert len(changed) and set(changed.index.get_level_values("metric")) == {"needed_in"}
    assert set(after[changed.index]) == {"no difference detected at MDE 5"}


def test_a_budget_is_named_as_a_variation_of_the_shipped_ceiling():
    s = mb.run(users=1, sessions=21, architectures=["overlay"], budget=64, progress=False)
    assert s.table().varied.iloc[0] == "ceiling: shipped → authored + 64"
    assert s.comparisons().empty  # no other architecture to compare with


def test_bad_input_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="architectures"):
        mb.run(architectures=["nope"], progress=False)
    with pytest.raises(ValueError, match="seeds"):
        mb.run(seeds=[], progress=False)


def test_the_compliance_arm_is_notebook_17s_follow_rate_per_rendering(monkeypatch):
    follow, label = mb.compliance_status()
    assert set(follow) == {"section", "tail"} and label.startswith("estimated") and "replayed" in label
    s = mb.run(users=2, sessions=40, architectures=["overlay", "mem0_flat"], progress=False)
    t = s.table().set_index("architecture")
    for arch, rendering in (("overlay", "section"), ("mem0_flat", "tail")):
        assert t.followed[arch] == pytest.approx(t.needed_in[arch] * follow[rendering].estimate, nan_ok=True)
    assert t.followed_low.overlay <= t.followed.overlay <= t.followed_high.overlay and t.followed.overlay > 0
    monkeypatch.setattr(mb.compliance, "replies", lambda model: (_ for _ in ()).throw(mb.Skipped("no recording")))
    assert mb.compliance_status() == ({}, "not run: skipped: no recording")


def test_a_recording_replays_to_the_same_figures_and_refuses_another_rule(study, tmp_path):
    mb.record(study, wall_s=1.0, n_jobs=1, folder=tmp_path, name="rec")
    again, meta = mb.recorded(folder=tmp_path, name="rec")
    assert meta["rule_sha256"] == study.rule.sha256 and meta["commit"] and "machine" in meta
    pd.testing.assert_frame_equal(again.table(), study.table())
    pd.testing.assert_frame_equal(again.comparisons(), study.comparisons())
    assert "FULL run recorded" in mb.recording_note(meta)
    text = study.rule.path.read_text(encoding="utf-8").replace("resamples: 2000", "resamples: 1999")
    (tmp_path / f"{mb.RULE_NAME}.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="recorded under rule sha256"):
        mb.recorded(rulefile.load(tmp_path / f"{mb.RULE_NAME}.yaml"), folder=tmp_path, name="rec")
    assert mb.recorded(folder=tmp_path, name="none") is None


def test_a_referent_line_is_followed_through_an_update():
    from overlay_kit.skill import parse_skill
    from overlay_kit.studies.sim import Fate

    head = "---\nname: demo\ndescription: A demo skill for tests.\n---\n"
    new = parse_skill(head + "## Inbox\n\n- Sort mail.\n- Triaging newsletters in the inbox today.\n", None)[0]
    ref = "- Triaging newsletters in the inbox."
    assert mb._follow("- Sort mail.", Fate("inbox", True), new) == ("- Sort mail.", "inbox", False)  # untouched
    assert mb._follow(ref, Fate("inbox", True), new) == ("- Triaging newsletters in the inbox today.", "inbox", True)
    assert mb._follow(ref, Fate("inbox", False), new)[2] is False  # edited, meaning kept (a typo fixed)
    assert mb._follow("- Escalate anything from the CFO within the hour.", Fate("inbox", True), new) == (
        None,
        "inbox",
        True,
    )  # its line went
    assert mb._follow(ref, Fate(None, True), new) == (None, None, True)  # its section went


def test_an_escaped_rendering_is_read_by_its_words():
    """ACE's skillbook escapes quotes: the lesson is still in front of the model, and is scored so."""
    from overlay_kit.studies.memory_bench import shown, unescaped

    body = 'Sign off with "Best, Sam".'
    assert shown(unescaped('- Sign off with \\"Best, Sam\\".'), body) == "shown"
    assert shown('- Sign off with \\"Best, Sam\\".', body) == "out"  # the raw text alone would miss it


# ------------------------------------------------------------------------- the realistic-scale world


def test_a_realistic_trace_grounds_each_taught_lesson_on_its_agents_own_skill_and_section():
    t = mb.trace(0, 2, 60, 20, scale="realistic")
    assert t.world.scale == "realistic"
    corpus = mb.world.selection_corpus("dev")
    by_id = {x.id: x for x in t.world.lessons()}
    taught = {s.needs for s in t.world.sessions if s.taught}
    assert set(t.homes) == taught  # only the lessons the world teaches have a line written
    for domain, versions in t.skills.items():
        own = mb.parse_skill(corpus.skills[domain].read_text(encoding="utf-8"), None)[0]
        assert versions[0].name == own.name  # the agent's real skill is the first version
    for lesson in taught:
        x = by_id[lesson]
        assert t.homes[lesson][0] == x.section  # on the section the corpus anchors it to
        sec = {s.slug: s for s in mb.anchor_mod.parse(t.skills[x.domain][0].body)}[x.section]
        assert mb.referent(x) in sec.text.splitlines()


def test_a_realistic_run_counts_every_needed_lesson_and_what_else_is_in_context():
    s = mb.realistic(architectures=["overlay", "full_context", "keyword_files"], users=2, sessions=80, progress=False)
    assert s.params["scale"] == "realistic" and not s.skipped
    by_session = {(x.user, x.index): x for x in mb.trace(0, 2, 80, 20, scale="realistic").world.sessions}
    rows = s.sessions[s.sessions.architecture == "full_context"]
    for r in rows.itertuples():
        w = by_session[(r.user.split(":", 1)[1], r.index)]
        assert r.n_needed == (0 if w.taught else len(w.need_ids)) == len(r.need_list)
        assert r.n_present - r.n_irrelevant == r.n_needed_in == sum(r.found_list)  # the rest: not needed
    p = s.pressure().set_index("architecture")
    assert p.loc["full_context", "needed_in"] == p.loc["full_context", "needed_held"] == 1.0  # all resident
    assert p.loc["full_context", "prompts_per_update"] == 0  # a floating memory never asks
    assert p.loc["keyword_files", "in_context"] < p.loc["full_context", "in_context"]
    for arch, r in p.iterrows():
        assert r.needs == int(rows.n_needed.sum())
        for m in ("needed_in", "irrelevant_share", "learned_tokens", "wrong_in_context"):
            assert r[f"{m}_low"] <= r[m] <= r[f"{m}_high"]
    f = s.pressure_finding()
    assert f.startswith("**Default run on a realistic-scale world** (per architecture") and "- **overlay**" in f


def test_a_realistic_run_refuses_an_unknown_scale():
    with pytest.raises(ValueError, match="scale"):
        mb.run(scale="huge", progress=False)


REAL_SMALL = {"users": 2, "sessions": 80, "architectures": ["overlay", "full_context", "keyword_files"]}


@pytest.fixture(scope="module")
def real():
    return mb.realistic(**REAL_SMALL, progress=False)


def test_the_realistic_run_is_judged_by_its_own_rule_with_the_same_code(real):
    assert real.rule.study == mb.REALISTIC_RULE and real.params["scale"] == "realistic"
    assert not real.params["full"] and real.finding().startswith(real.rule.stamp())
    assert "Smoke run (not the verdict run" in real.finding()
    c = real.comparisons()
    judged = real.rule.param("judged")
    assert set(c.metric) == set(judged) and set(c.architecture) == {"full_context", "keyword_files"}
    assert {"needs_in_context", "irrelevant_share"} <= set(judged)
    # each lesson a goal needs, counted as the oracle counts it from the session rows (every need, not the first)
    t = real.table().set_index("architecture")
    for arch, rows in real.sessions.groupby("architecture"):
        found = [f for r in rows.found_list for f in r]
        assert t.needs_in_context[arch] == pytest.approx(sum(found) / len(found))
        assert t.irrelevant_share[arch] == pytest.approx(rows.n_irrelevant.sum() / rows.n_present.sum())
    # the needs are resampled by lesson: one cluster per (history, lesson) a goal needed
    keyword = c[(c.architecture == "keyword_files") & (c.metric == "needs_in_context")].iloc[0]
    needs = real.sessions[real.sessions.architecture == "overlay"]
    assert keyword.clusters == len({(h, x) for h, xs in zip(needs.history, needs.need_list) for x in xs})
    g = real.goals().set_index("goal")
    assert set(g.index) == set(real.rule.param("goals"))
    assert g.side["needs_in_context"] == "≥" and g.side["irrelevant_share"] == g.side["learned_tokens"] == "≤"
    for name, r in g.iterrows():  # met by the far end; missed says by how much
        far = r.low if r.side == "≥" else r.high
        assert r.met == (far >= r.bound if r.side == "≥" else far <= r.bound)
        assert r.met == pd.isna(r.missed_by) or not np.isfinite(far)
        if not r.met and np.isfinite(far):
            assert r.missed_by == pytest.approx(abs(far - r.bound))


def test_the_realistic_verdict_can_come_out_the_other_way(real, tmp_path):
    """A margin the data cannot clear turns "better"/"worse" into "no difference" or "undecided": the verdict
    comes from the rule file, not from the code."""
    text = real.rule.path.read_text(encoding="utf-8")
    wide = text.replace("margins: {needs_in_context: 0.05,", "margins: {needs_in_context: 5,")
    assert wide != text
    path = tmp_path / f"{mb.REALISTIC_RULE}.yaml"
    path.write_text(wide, encoding="utf-8")
    other = replace(real, rule=rulefile.load(path))  # the same data judged under the changed rule
    before = real.comparisons().set_index(["architecture", "metric"]).verdict
    after = other.comparisons().set_index(["architecture", "metric"]).verdict
    assert before["keyword_files", "needs_in_context"] == "overlay better"
    assert after["keyword_files", "needs_in_context"] == "no difference detected at MDE 5"
    assert (
        before.drop(index="needs_in_context", level="metric") == after.drop(index="needs_in_context", level="metric")
    ).all()
    strict = text.replace("goals: {needs_in_context: 0.8,", "goals: {needs_in_context: 1.01,")
    path.write_text(strict, encoding="utf-8")
    g = replace(real, rule=rulefile.load(path)).goals().set_index("goal")
    assert not g.met["needs_in_context"] and g.missed_by["needs_in_context"] > 0


def test_a_realistic_recording_replays_under_its_own_rule_and_refuses_another(real, tmp_path):
    mb.record(real, wall_s=1.0, n_jobs=1, folder=tmp_path, name="real")
    again, meta = mb.recorded(folder=tmp_path, name="real")  # the rule the recording names
    assert meta["rule"] == f"{mb.REALISTIC_RULE}.yaml" and meta["params"]["scale"] == "realistic"
    assert again.rule.sha256 == real.rule.sha256
    for frame in ("table", "comparisons", "goals", "pressure"):
        pd.testing.assert_frame_equal(getattr(again, frame)(), getattr(real, frame)())
    assert again.finding() == real.finding()
    assert "on the realistic-scale world" in mb.recording_note(meta)
    with pytest.raises(ValueError, match="recorded under rule sha256"):
        mb.recorded(rulefile.load(mb.RULE_NAME), folder=tmp_path, name="real")


def test_the_stored_realistic_recording_is_the_rules_full_grid_with_its_provenance():
    got = mb.recorded(name=mb.REALISTIC_RECORDING)
    assert got is not None, "datasets/recorded/10_memory_realistic_full.* is missing"
    study, meta = got
    rule = rulefile.load(mb.REALISTIC_RULE)
    full = rule.param("full")
    assert meta["rule_sha256"] == rule.sha256 and meta["commit"] and meta["machine"]
    p = study.params
    assert p["full"] and p["scale"] == "realistic"
    assert (list(p["seeds"]), p["users"], p["sessions"]) == (full["seeds"], full["users"], full["sessions"])
    ran = set(p["architectures"])
    assert set(rule.param("architectures")) <= ran
    peers = set(mb.peers_mod.PEERS) if mb.peers_mod else set()
    assert ran | set(meta["skipped"]) >= peers  # every real library either ran or is named with its reason
    assert set(study.sessions.architecture) == ran and {k: v for k, v in meta["rows"].items()} == {
        k: len(getattr(study, k)) for k in mb.FRAMES
    }
    files = list(mb.RECORDED.glob(f"{mb.REALISTIC_RECORDING}.*"))
    assert sum(f.stat().st_size for f in files) < 2_500_000  # small enough to live in the repository


def test_the_shipped_stale_flag_is_the_decision_of_its_rule_on_its_recorded_runs():
    """Rule 10_stale_touch decides `SHIPPED.stale_touch` from two recorded runs (fresh seeds of both worlds): each
    is the rule's grid, and the shipped default is what the decision says."""
    rule = rulefile.load(mb.STALE_TOUCH_RULE)
    studies = mb.stale_touch_recorded()
    assert set(studies) == set(mb.STALE_TOUCH_WORLDS), "datasets/recorded/10_stale_touch_*.json is missing"
    for w, study in studies.items():
        grid = rule.param(w)
        assert study.rule.study == grid["rule"] and study.params["scale"] == w
        assert (list(study.params["seeds"]), study.params["users"], study.params["sessions"]) == (
            grid["seeds"],
            grid["users"],
            grid["sessions"],
        )
        assert list(study.params["architectures"]) == rule.param("arms")
    d, said = mb.stale_touch_decision(studies)
    adopt = bool(d.non_inferior.all() and d.fewer_prompts.all())
    assert SHIPPED.stale_touch == adopt
    assert said.startswith(rule.stamp()) and ("ships on" if adopt else "stays off") in said
    # the perfect flag raises a prompt for each held lesson an update made wrong: never above what was wrong
    assert (d.perfect_prompts > 0).all()


def test_the_stale_flag_decision_can_come_out_the_other_way(tmp_path):
    """The same recorded data under a world rule whose margins differ turn each condition the other way."""
    studies = mb.stale_touch_recorded()
    for w, study in studies.items():
        text = study.rule.path.read_text(encoding="utf-8")
        for wrong_margin, prompts_margin in ((5, 0.01), (0, 50)):
            changed = re.sub(r"(margins: \{[^}]*?wrong_in_context: )0\.02", rf"\g<1>{wrong_margin}", text)
            changed = changed.replace("prompts_per_update: 0.25}", f"prompts_per_update: {prompts_margin}}}")
            assert rulefile.load(_write(tmp_path / study.rule.path.name, changed)).param("margins") == {
                **study.rule.param("margins"),
                "wrong_in_context": wrong_margin,
                "prompts_per_update": prompts_margin,
            }
            other = dict(studies, **{w: replace(study, rule=rulefile.load(tmp_path / study.rule.path.name))})
            row = mb.stale_touch_decision(other)[0].set_index("world").loc[w]
            assert row.non_inferior == (wrong_margin == 5)
            assert row.fewer_prompts == (prompts_margin == 0.01)


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path
