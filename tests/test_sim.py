"""overlay_kit.studies.sim: operators and their ground truth, the history generator, scoring, the real-history loader,
sweeps (joblib and dask), and the property the rebase study rests on: no shipped policy ever attaches a delta
to a section that holds none of its text, on any generated history."""

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overlay_kit import anchor, metrics, rebase
from overlay_kit.studies import rulefile, sim
from overlay_kit.studies.sweep import sweep

ROOT = Path(__file__).resolve().parents[1]
BODY_OPS = sorted(set(sim.OPERATORS) - sim.FRONTMATTER_OPERATORS)


def sections(text):
    return anchor.parse(sim._split(text)[1])


def applied(op, n=12, seed=0):
    """(old text, edit) for n skills the operator applies to."""
    out = []
    for k in range(200):
        rng = random.Random(f"{op}:{seed}:{k}")
        text = sim.make_skill(rng)
        edit = sim.apply_operator(op, text, rng)
        if edit is not None:
            out.append((text, edit))
        if len(out) == n:
            return out
    raise AssertionError(f"{op} applied to only {len(out)} of 200 skills")


# ---------------------------------------------------------------------------------------- operators


def test_make_skill_is_seeded_valid_and_has_duplicate_headings_somewhere():
    from overlay_kit.skill import parse_skill

    a, b = sim.make_skill(random.Random(5)), sim.make_skill(random.Random(5))
    assert a == b and a != sim.make_skill(random.Random(6))
    skill, problems = parse_skill(a, None)
    assert not problems and skill.tools
    numbered = [s for k in range(30) for s in sections(sim.make_skill(random.Random(k))) if s.slug[-2:] == "-1"]
    assert numbered  # repeated "Example"/"Notes"/"Tips" headings get numbered slugs


@pytest.mark.parametrize("op", sorted(sim.OPERATORS))
def test_every_operator_applies_and_its_truth_covers_every_old_section(op):
    for text, edit in applied(op, n=6):
        old, new = sections(text), sections(edit.text)
        assert edit.ops == (op,) and edit.text != text
        assert set(edit.truth) == {s.slug for s in old}
        slugs = {s.slug for s in new}
        assert all(f.target is None or f.target in slugs for f in edit.truth.values())
        assert all(set(f.heirs) <= slugs for f in edit.truth.values())


@pytest.mark.parametrize(
    "op",
    [
        "whitespace_churn",
        "rewrap",
        "heading_level",
        "section_move",
        "frontmatter_edit",
        "version_bump",
        "narrow_tools",
        "typo_fix",
        "heading_rename",
    ],
)
def test_meaning_preserving_operators_keep_every_section(op):
    for text, edit in applied(op, n=6):
        assert all(f.target is not None and not f.changed for f in edit.truth.values())


@pytest.mark.parametrize("op", ["whitespace_churn", "rewrap", "heading_level", "section_move"])
def test_text_preserving_operators_keep_every_digest(op):
    for text, edit in applied(op, n=6):
        new = {s.slug: s.digest for s in sections(edit.text)}
        assert all(new[edit.truth[s.slug].target] == s.digest for s in sections(text))


@pytest.mark.parametrize("op", ["frontmatter_edit", "version_bump", "narrow_tools"])
def test_frontmatter_operators_leave_the_body_byte_identical(op):
    for text, edit in applied(op, n=4):
        assert sim._split(text)[1] == sim._split(edit.text)[1] and sim._split(text)[0] != sim._split(edit.text)[0]


def test_structural_operator_truths():
    for text, edit in applied("section_delete"):
        assert sum(f.target is None for f in edit.truth.values()) == 1
    for text, edit in applied("section_merge"):
        targets = [f.target for f in edit.truth.values() if f.changed]
        # both went into one section; absorbing an empty section leaves the other's text as it was
        assert len(targets) in (1, 2) and len(set(targets)) == 1
    for text, edit in applied("section_split"):
        split = [f for f in edit.truth.values() if f.heirs]
        assert len(split) == 1 and split[0].changed
    for text, edit in applied("section_insert"):
        assert len(sections(edit.text)) == len(sections(text)) + 1
        assert all(f.target and not f.changed for f in edit.truth.values())


def test_renumbering_steps():
    text = "# T\n\n## Step 1: A\n\nalpha one.\n\n## Step 2: B\n\nbeta two.\n\n## Step 3: C\n\ngamma three.\n\n"
    edit = sim.apply_operator("section_delete", text, random.Random(0), "step-1-a")
    assert [s.heading for s in sections(edit.text)][2:] == ["Step 1: B", "Step 2: C"]
    assert edit.truth["step-2-b"] == sim.Fate("step-1-b", False) and edit.truth["step-1-a"].target is None


def test_unknown_operator_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown edit operator 'shuffle'"):
        sim.apply_operator("shuffle", "x", random.Random(0))


def test_composition_promotes_a_split_off_part_when_the_rest_is_deleted():
    text = "# T\n\n## Tone\n\nFirst paragraph here.\n\nSecond paragraph there.\n\n## End\n\nbye now.\n\n"
    split = sim.section_split(text, random.Random(1), "tone")
    first = split.truth["tone"].target
    gone = sim.section_delete(split.text, random.Random(1), first)
    fate = split.then(gone).truth["tone"]
    home = next(s for s in sections(gone.text) if s.slug == fate.target)
    assert "Second paragraph" in home.text and "First" not in home.text and fate.changed


# -------------------------------------------------------------------------------------- histories


def test_history_is_seeded_and_tracks_deltas():
    a = sim.generate_history("typical", 6, 5, seed=3)
    assert a == sim.generate_history("typical", 6, 5, seed=3) and a != sim.generate_history("typical", 6, 5, seed=4)
    assert len(a.versions) == 6 and len(a.truth) == 5 and len(a.deltas) == 5
    assert all(v.text != w.text for v, w in zip(a.versions, a.versions[1:]))
    for d in a.deltas:
        assert d.section in {s.slug for s in sections(a.versions[d.version].text)}


def test_profiles_are_calibrated_to_calibration_md():
    """Generated rates sit near sim.CALIBRATION (per update within 0.1, per section within 0.05)."""
    for name in ("typical", "metadata-heavy"):
        stats = sim.calibration_stats(sim.generate_histories(12, name, 12, 0, seed=11))
        target = sim.CALIBRATION[name]
        for key, value in stats.items():
            tol = (
                0.13
                if key in ("edited_same_heading", "sec_offset_moved")
                else 0.1
                if not key.startswith("sec_")
                else 0.05
            )
            assert abs(value - target[key]) <= tol, (name, key, value, target[key])


SAFE = ("orphan-all", "section", "fuzzy")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**9), profile=st.sampled_from(["typical", "metadata-heavy", "adversarial"]))
def test_no_policy_ever_misattaches_or_silently_reapplies(seed, profile):
    """The rebase study's safety property, over generated histories (adversarial: duplicate headings,
    moves, merges, splits, renames, inserts above namesakes)."""
    h = sim.generate_history(profile, 6, 4, seed=seed)
    for row in sim.evaluate(h, SAFE):
        assert row["misattached"] == 0 and row["silent_reapply"] == 0, row
        assert row["deltas"] == row["clean"] + row["stale"] + row["orphaned"]


def test_every_section_of_adversarial_histories_is_safe_under_all_four_policies():
    """Every old section (not only those carrying a delta) and the embedding policy too."""
    embedder = rebase.EmbeddingPolicy(embedder=BagOfWords(), min_score=0.3)
    for seed in range(4):
        h = sim.generate_history("adversarial", 6, 0, seed=seed)
        assert h.deltas == ()
        for row in sim.evaluate(h, ("orphan-all", "section", "fuzzy", embedder)):
            assert row["misattached"] == 0 and row["silent_reapply"] == 0, row


class BagOfWords:
    def encode(self, texts):
        out = np.zeros((len(texts), 64), dtype="float32")
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, sum(map(ord, w)) % 64] += 1
        return out


def test_tally_counts_against_truth():
    old = "# T\n\n## A\n\nalpha beta gamma delta.\n\n## B\n\nepsilon zeta eta theta.\n\n"
    new = "# T\n\n## A\n\nalpha beta gamma delta iota.\n\n## Bee\n\nepsilon zeta eta theta.\n\n"
    truth = {
        "_preamble": sim.Fate("_preamble", False),
        "t": sim.Fate("t", False),
        "a": sim.Fate("a", True),
        "b": sim.Fate("bee", False),
    }
    c = sim.tally(rebase.plan(old, new, "fuzzy"), ["t", "a", "b", "b"], truth)
    assert c["correct_clean"] == 1 and c["correct_stale"] == 1 and c["false_orphan"] == 2 and c["rescued"] == 2
    assert c["review"] == 3 and c["misattached"] == 0 and c["correct_proposals"] == 2
    wrong = {**truth, "a": sim.Fate(None, True)}
    assert sim.tally(rebase.plan(old, new, "section"), ["a"], wrong)["misattached"] == 1


def test_operator_trials_rows():
    rows = sim.operator_trials("heading_rename", ("section", "fuzzy"), n=6)
    by = {(r["trial"], r["policy"]): r for r in rows}
    assert len(by) == 12
    # one heading renamed per trial: orphaned (a rename) or flagged stale (a renumbered step), never clean
    assert all(r["false_orphan"] + r["over_flagged"] == 1 and r["misattached"] == 0 for r in rows)
    orphans = [r for r in rows if r["policy"] == "fuzzy" and r["false_orphan"]]
    assert orphans and sum(r["rescued"] for r in orphans) >= len(orphans) - 1


def test_synthetic_skills_are_written_from_the_example_skills_sentences():
    c = sim.corpus()
    pool = {t for per in c.sentences for t in per}
    assert len(c.sentences) >= 8 and len(pool) > 100 and len(c.steps) >= 100
    text = sim.make_skill(random.Random(3))
    prose = [s for s in sections(text) if s.level]
    lines = " ".join(s.body_text for s in prose)
    assert sum(t in lines for t in pool) >= 5  # the sentences are the examples' own
    headings = [s.heading for k in range(20) for s in sections(sim.make_skill(random.Random(k))) if s.level == 2]
    shared = [h for h in headings if any(h != o and h.split()[0] == o.split()[0] for o in headings)]
    assert shared and any(
        h.startswith("Step ")
        for k in range(20)
        for h in (s.heading for s in sections(sim.make_skill(random.Random(k))))
    )


def test_touched_is_every_section_not_at_its_slug_with_its_text():
    old = "# T\n\n## A\n\nalpha beta.\n\n## B\n\ngamma delta.\n\n## C\n\nepsilon.\n\n"
    new = "# T\n\n## A\n\nalpha beta.  \n\n## Bee\n\ngamma delta.\n\n## C\n\nepsilon.\n\n"
    assert sim.touched(rebase.Update.of(old, new)) == {"a", "b"}  # whitespace counts; C and T are untouched


def test_needed_is_the_smallest_denominator_a_zero_count_bounds_below_target():
    n = sim.needed(0.005)
    assert n == 598 and metrics.binomial_upper(0, n).high < 0.005 <= metrics.binomial_upper(0, n - 1).high


def test_safety_bounds_each_policy_over_touched_deltas_only():
    import pandas as pd

    rows = pd.DataFrame(
        [
            {
                "policy": p,
                "updates": 1,
                "deltas": 20,
                "touched": 1,
                "misattached": 0,
                "touched_misattached": int(p == "b" and k < 3),
            }
            for p in "ab"
            for k in range(700)
        ]
    )
    s = sim.safety(rows).set_index("policy")
    assert s.loc["a", "touched"] == 700 and s.loc["a", "below_target"] and s.loc["a", "bound"] < 0.005
    assert not s.loc["b", "below_target"] and s.loc["b", "bound"] > 0.005  # 3 of 700 is not "never"


RULE_FILE = ROOT / "datasets" / "rules" / "03_anchor_stability.yaml"


def tmp_rule(tmp_path, **params):
    """A copy of notebook 03's rule file with some params replaced (same study name, so it loads)."""
    import yaml

    doc = yaml.safe_load(RULE_FILE.read_text(encoding="utf-8"))
    doc["params"] |= params
    path = tmp_path / "03_anchor_stability.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return rulefile.load(path)


def test_the_rule_file_classes_are_the_operators_edit_classes():
    rule = rulefile.load(sim.RULE)
    classes = sim._rule_classes(rule)
    assert {c: set(ops) for c, ops in classes.items()} == {
        "textual": set(sim.TEXTUAL_OPERATORS),
        "structural": set(sim.STRUCTURAL_OPERATORS),
        "frontmatter": set(sim.FRONTMATTER_OPERATORS),
    }
    assert "namesake_above" in classes["structural"] and "typo_fix" in classes["textual"]
    assert sim.edit_class("sentence_reword") == "textual" and sim.edit_class("section_move") == "structural"
    with pytest.raises(ValueError, match="unknown edit operator"):
        sim.edit_class("shuffle")


@pytest.mark.parametrize("op", sorted(sim.TEXTUAL_OPERATORS))
def test_textual_operators_keep_every_section_at_its_slug_under_its_heading(op):
    for text, edit in applied(op, n=8):
        new = {s.slug: s for s in sections(edit.text)}
        for s in sections(text):
            assert edit.truth[s.slug].target == s.slug and not edit.truth[s.slug].heirs
            assert new[s.slug].heading_source == s.heading_source and new[s.slug].level == s.level


@pytest.mark.parametrize("op", sorted(sim.STRUCTURAL_OPERATORS))
def test_structural_operators_move_a_slug_or_change_a_heading(op):
    """Every edit a structural operator makes leaves some section off its slug or under another heading line,
    or changes the document's list of slugs (a section added, removed or moved) — what a textual edit never
    does."""
    for text, edit in applied(op, n=8):
        old, new = sections(text), sections(edit.text)
        by = {s.slug: s for s in new}
        moved = any(edit.truth[s.slug].target != s.slug or edit.truth[s.slug].heirs for s in old)
        retitled = any(
            s.slug in by and (by[s.slug].heading_source, by[s.slug].level) != (s.heading_source, s.level) for s in old
        )
        assert moved or retitled or [s.slug for s in old] != [s.slug for s in new]


def test_namesake_above_is_the_second_notes_above_the_first():
    for seed in range(6):
        edit = sim.namesake_above(sim.TRAP_OLD, random.Random(seed), "notes")
        new = {s.slug: s for s in sections(edit.text)}
        assert edit.ops == ("namesake_above",) and [s.heading for s in sections(edit.text)].count("Notes") == 3
        assert edit.truth["notes"].target == "notes-1" and edit.truth["notes-1"].target == "notes-2"
        first = sections(sim.TRAP_OLD)[3]
        assert first.slug == "notes" and new["notes"].digest != first.digest  # the slug names the newcomer
        assert edit.truth["notes"].changed == (new["notes-1"].digest != first.digest)
        assert edit.truth["notes"].changed or new["notes-1"].text == first.text
    assert any(sim.namesake_above(sim.TRAP_OLD, random.Random(k), "notes").truth["notes"].changed for k in range(6))


def _oracle_kept(rule, ops):
    """The stopping rule done the slow, obvious way: `trials_step` more at a time, counting touching trials."""
    p = rule.params
    groups = {"textual": [o for o in ops if sim.edit_class(o) == "textual"]}
    groups |= {o: [o] for o in ops if sim.edit_class(o) == "structural"}
    kept = {o: p["trials_first"] for o in ops}
    for members in (g for g in groups.values() if g):
        while True:
            rows = [r for m in members for r in sim.operator_trials(m, ("section",), kept[m], p["seed"])]
            if sum(r["touched"] > 0 for r in rows) >= p["units_needed"] or kept[members[0]] >= p["max_trials"]:
                break
            kept |= {m: min(kept[m] + p["trials_step"], p["max_trials"]) for m in members}
    return kept


def test_operator_study_keeps_exactly_the_trials_of_the_stepwise_stopping_rule(tmp_path):
    rule = tmp_rule(tmp_path, units_needed=9, trials_first=3, trials_step=2, max_trials=11, n_boot=50)
    ops = ["typo_fix", "whitespace_churn", "heading_level", "section_insert", "section_append", "version_bump"]
    st = sim.operator_study(rule, operators=ops, policies=("section",), chunk=4, backend="sequential", progress=False)
    kept = st.rows.groupby("operator")["trial"].max() + 1
    assert kept.to_dict() == _oracle_kept(rule, ops)
    assert kept["version_bump"] == 3 and kept["section_append"] == 11  # never grown; grown to the cap
    assert st.rule is rule and set(st.rows["policy"]) == {"section"}


def _rows(spec):
    """Synthetic trial rows: {operator: (trials, touching, failing)} under policy `section`."""
    import pandas as pd

    out = []
    for op, (n, touching, failing) in spec.items():
        for t in range(n):
            out.append(
                {
                    **dict.fromkeys(sim.COUNTS + sim.OUTCOMES, 0),
                    "operator": op,
                    "trial": t,
                    "unit": f"{op}:{t}",
                    "policy": "section",
                    "updates": 1,
                    "deltas": 5,
                    "touched": int(t < touching),
                    "touched_misattached": int(t < failing),
                    "misattached": int(t < failing),
                }
            )
    return pd.DataFrame(out)


def test_the_verdict_is_computed_from_the_rule_file_and_can_come_out_every_way(tmp_path):
    rows = _rows(
        {
            "heading_rename": (700, 700, 0),
            "section_move": (700, 700, 6),
            "section_insert": (900, 300, 0),
            "section_append": (50, 0, 0),
            "typo_fix": (400, 400, 0),
            "rewrap": (400, 400, 0),
        }
    )
    st = sim.OperatorStudy(rows, rulefile.load(sim.RULE))
    v = st.verdicts().set_index("operator")["verdict"].to_dict()
    assert v == {
        sim.POOLED: "meets",
        "heading_rename": "meets",
        "section_move": "exceeds",
        "section_insert": "lacks power",
        "section_append": "untested",
    }
    assert set(st.textual().index.get_level_values(0)) == {"typo_fix", "rewrap", sim.POOLED}
    assert set(st.structural().index.get_level_values(0)) == {
        "heading_rename",
        "section_move",
        "section_insert",
        "section_append",
    }
    f = st.finding()
    assert (
        "**exceeds** — 6 of 700 touching trials failing" in f
        and "`section_insert` under `section`: lacks power" in f
        and "Too few trials to decide** for `section_insert`" in f
        and "untested" in f
    )
    # the same rows under a modified copy of the file: a looser target flips two verdicts
    loose = sim.OperatorStudy(rows, tmp_rule(tmp_path, target=0.05))
    v2 = loose.verdicts().set_index("operator")["verdict"].to_dict()
    assert v2["section_move"] == "meets" and v2["section_insert"] == "meets"
    assert loose.verdicts()["bound"].equals(st.verdicts()["bound"])  # same bounds, another target


def test_a_rule_that_misfiles_an_operator_is_refused(tmp_path):
    classes = rulefile.load(sim.RULE).param("classes")
    moved = {
        "textual": [*classes["textual"], "namesake_above"],
        "structural": [o for o in classes["structural"] if o != "namesake_above"],
        "frontmatter": classes["frontmatter"],
    }
    with pytest.raises(rulefile.RuleFileError, match="namesake_above is structural") as err:
        sim.operator_study(tmp_rule(tmp_path, classes=moved), operators=["typo_fix"], progress=False)
    assert err.value.field == "params.classes"


# ------------------------------------------------------------------------------------ real histories


def git(repo, *args, date=None):
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin",
    }
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def test_history_loader_on_a_git_repository_of_skills(tmp_path):
    repo = tmp_path / "skills-repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    rng = random.Random(9)
    texts = {"alpha": [sim.make_skill(rng, "alpha")], "beta": [sim.make_skill(rng, "beta")]}
    for name in texts:  # four updates each, drawn from the typical profile
        for _ in range(4):
            texts[name].append(sim._update(texts[name][-1], sim.PROFILES["typical"], rng).text)
    for k in range(5):
        for name, versions in texts.items():
            d = repo / "skills" / name
            d.mkdir(parents=True, exist_ok=True)
            (d / "SKILL.md").write_text(versions[k], encoding="utf-8")
        (repo / "README.md").write_text(f"rev {k}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"rev {k}", date=f"2024-0{k + 1}-01T12:00:00+02:00")
    (repo / "README.md").write_text("unrelated\n")  # a commit that touches no skill
    git(repo, "commit", "-qam", "docs")
    git(repo, "mv", "skills/beta", "skills/gamma")  # a rename is followed
    git(repo, "commit", "-qm", "rename")
    out = tmp_path / "h.jsonl"
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "extract_skill_history.py"), str(repo), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    hs = {h.path: h for h in sim.load_histories(out)}
    assert set(hs) == {"skills/alpha/SKILL.md", "skills/gamma/SKILL.md"}
    assert [v.text for v in hs["skills/alpha/SKILL.md"].versions] == texts["alpha"]
    assert [v.text for v in hs["skills/gamma/SKILL.md"].versions] == texts["beta"]
    assert hs["skills/alpha/SKILL.md"].versions[0].date == "2024-01-01T10:00:00+00:00"  # UTC
    rows = sim.evaluate(hs["skills/alpha/SKILL.md"], ("orphan-all", "section"))
    assert len(rows) == 8 and all(r["deltas"] > 0 for r in rows)
    assert all(r["misattached"] == 0 and r["correct_clean"] == 0 for r in rows)  # no truth: states only
    assert sum(r["orphaned"] for r in rows if r["policy"] == "orphan-all") >= sum(
        r["orphaned"] for r in rows if r["policy"] == "section"
    )
    stats = sim.calibration_stats(hs.values())
    assert 0 <= stats["sec_unchanged"] <= 1


def test_history_loader_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"repo": "r", "path": "p", "versions": [{"commit": "a", "date": "d", "text": "x"}]})
        + "\n{not json\n"
    )
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not a history record"):
        sim.load_histories(bad)
    bad.write_text(json.dumps({"repo": "r", "path": "p", "versions": [{"commit": "a"}]}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:1"):
        sim.load_histories(bad)


def test_extract_script_reports_a_non_repository(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "extract_skill_history.py"), str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1 and "extract_skill_history" in run.stderr


# ------------------------------------------------------------------------------------------- sweeps


def _cell(profile, seed):
    h = sim.generate_history(profile, 4, 3, seed=seed)
    return sum(r["orphaned"] for r in sim.evaluate(h, ("orphan-all",)))


GRID = [{"profile": p, "seed": s} for p in ("typical", "metadata-heavy") for s in range(2)]


def test_sweep_backends_agree_and_dask_starts_its_own_loopback_cluster():
    expected = [_cell(**g) for g in GRID]
    assert sweep(_cell, GRID, backend="sequential", progress=False) == expected
    assert sweep(_cell, GRID, backend="threading", n_jobs=2, progress=False) == expected
    assert sweep(_cell, GRID, backend="dask", n_jobs=1, progress=False) == expected  # its own LocalCluster


def test_sweep_on_a_dask_local_cluster_bound_to_loopback():
    pytest.importorskip("dask.distributed")
    from dask.distributed import Client, LocalCluster

    expected = [_cell(**g) for g in GRID]
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        assert client.scheduler_info()["address"].startswith("tcp://127.0.0.1:")
        assert all(w.startswith("tcp://127.0.0.1:") for w in client.scheduler_info()["workers"])
        assert sweep(_cell, GRID, backend="dask", client=client, progress=False) == expected


# ------------------------------------------------------------------------------------------ metrics


def test_ratio_ci_resamples_clusters_and_covers_the_estimate():
    num, den = [1, 2, 0, 3, 4, 0, 1, 2], [10] * 8
    ci = metrics.ratio_ci(num, den, seed=1)
    assert ci.estimate == pytest.approx(13 / 80) and ci.low < ci.estimate < ci.high and ci.n == 8
    assert metrics.ratio_ci(num, den, seed=1) == ci  # seeded
    zero = metrics.ratio_ci([0, 0, 0], [5, 5, 5])
    assert (zero.estimate, zero.low, zero.high) == (0, 0, 0)
    assert np.isnan(metrics.ratio_ci([0, 0], [0, 0]).estimate)


def test_mean_ci_and_binomial_upper():
    ci = metrics.mean_ci([1, 2, 3, 4, 5])
    assert ci.estimate == 3 and 1 <= ci.low < 3 < ci.high <= 5
    up = metrics.binomial_upper(0, 1000)
    assert up.estimate == 0 and up.high == pytest.approx(1 - 0.05 ** (1 / 1000))
    assert metrics.binomial_upper(5, 100).high > 0.05
    with pytest.raises(ValueError):
        metrics.binomial_upper(3, 2)
    with pytest.raises(ValueError, match="equal-length"):
        metrics.bootstrap_ci([1, 2], [1], statistic=np.mean)


def test_rate_table():
    import pandas as pd

    df = pd.DataFrame(
        {"g": ["a"] * 4 + ["b"] * 4, "c": [1, 1, 2, 2, 3, 3, 4, 4], "k": [1, 0, 1, 1, 0, 0, 0, 1], "n": [1] * 8}
    )
    t = metrics.rate_table(df, "g", "c", {"rate": ("k", "n")}, n_resamples=200)
    assert list(t["g"]) == ["a", "b"] and list(t["rate"]) == [0.75, 0.25]
    assert (t["rate_low"] <= t["rate"]).all() and (t["rate"] <= t["rate_high"]).all()


def test_extract_script_keeps_deleted_skills_and_survives_a_missing_blob(tmp_path):
    """Issue 18: a skill deleted before HEAD is a history too, and one unreadable blob does not stop the run."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for k, name in enumerate(("alpha", "gone")):
        d = repo / "skills" / name
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\n# {name}\n\nv1\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one", date="2024-01-01T12:00:00+00:00")
    (repo / "skills" / "gone" / "SKILL.md").write_text("---\nname: gone\ndescription: d\n---\n# gone\n\nv2\n")
    (repo / "skills" / "alpha" / "SKILL.md").write_text("---\nname: alpha\ndescription: d\n---\n# alpha\n\nv2\n")
    git(repo, "commit", "-qam", "two", date="2024-02-01T12:00:00+00:00")
    git(repo, "rm", "-q", "-r", "skills/gone")
    git(repo, "commit", "-qm", "delete", date="2024-03-01T12:00:00+00:00")
    # lose the first version's blob of alpha (as in a partial clone)
    blob = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD~2:skills/alpha/SKILL.md"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    out = tmp_path / "h.jsonl"
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "extract_skill_history.py"), str(repo), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    recs = {r["path"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert recs["skills/gone/SKILL.md"]["deleted"] and len(recs["skills/gone/SKILL.md"]["versions"]) == 2
    alpha = recs["skills/alpha/SKILL.md"]
    assert not alpha["deleted"] and len(alpha["versions"]) == 1 and len(alpha["missing"]) == 1
    assert "skills/gone/SKILL.md" in {h.path for h in sim.load_histories(out)}  # the loader reads the new fields
