"""The τ study: corpus, pair loading, gate families, lesson bootstrap, the rule, shipped calibrations, CLI."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from overlay_kit import bundled, retrieval
from overlay_kit.cli import main
from overlay_kit.retrieval import FAMILIES, EmbedderUnavailable, Gate
from overlay_kit.studies import rulefile, world
from overlay_kit.studies import threshold as th

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "datasets" / "tau"


@pytest.fixture(scope="module")
def corpus() -> pd.DataFrame:
    return th.load_corpus()


@dataclass(frozen=True)
class FixedScorer:
    """A scorer with hand-chosen vectors, so cosines (and costs) can be computed by hand."""

    table: dict
    name: str = "fixed"

    def vectors(self, goals, triggers):
        return (
            np.array([self.table[g] for g in goals], dtype=np.float32),
            np.array([self.table[t] for t in triggers], dtype=np.float32),
        )


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------ corpus


def test_corpus_regenerates_byte_identical(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_tau_corpus.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "36 lessons, 648 pairs" in out.stdout
    for name in ("pairs.csv", "lessons.csv"):
        assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), name


def test_corpus_shape_labels_and_split(corpus):
    assert len(corpus) >= 600
    assert set(corpus["category"]) == set(th.CATEGORIES)
    # labels follow categories: only true paraphrases are relevant
    assert (corpus["relevant"] == (corpus["category"] == "paraphrase")).all()
    # the split is stratified by category: every category has the same count in both halves
    counts = corpus.groupby(["category", "split"]).size().unstack()
    assert (counts["calibration"] == counts["test"]).all()
    # grouped by lesson: no lesson's pairs straddle the halves, so the test half holds unseen lessons
    assert (corpus.groupby("lesson_id")["split"].nunique() == 1).all()
    lessons = pd.read_csv(CORPUS / "lessons.csv")
    assert lessons["body"].str.len().max() <= 400
    assert (corpus["body"] != corpus["trigger"]).all() and corpus.attrs["token_source"] == "body"
    assert (corpus["tokens"] > 5).all()


def test_corpus_goals_are_unique_per_origin():
    pairs = pd.read_csv(CORPUS / "pairs.csv")
    authored = pairs[pairs["category"] != "cross_domain"]
    assert not authored["goal"].str.casefold().duplicated().any()
    # a cross-domain goal is another domain's paraphrase goal, never the lesson's own domain
    cross = pairs[pairs["category"] == "cross_domain"].merge(
        authored[authored["category"] == "paraphrase"][["goal", "domain"]], on="goal", suffixes=("", "_origin")
    )
    assert len(cross) == (pairs["category"] == "cross_domain").sum()
    assert (cross["domain"] != cross["domain_origin"]).all()


def test_generator_refuses_unknown_slot(tmp_path):
    src = _write(
        tmp_path / "s.yaml",
        """
slots: {}
lessons:
  - {id: a, domain: d, skill: s, section: x, trigger: t, body: b,
     paraphrase: ["hello {nobody}"], near_miss: [n], lexical_overlap: [l], adversarial: [v]}
""",
    )
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "make_tau_corpus.py"),
            "--source",
            str(src),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and "unknown slot(s) ['nobody']" in out.stderr
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------ loading


def test_load_pairs_csv_without_split_or_body(tmp_path):
    rows = ["goal,trigger,relevant,category"]
    rows += [f"goal {i},trigger {i % 8},{int(i % 2 == 0)},{'a' if i < 10 else 'b'}" for i in range(40)]
    df = th.load_pairs(_write(tmp_path / "p.csv", "\n".join(rows) + "\n"))
    assert df.attrs["token_source"] == "trigger" and (df["body"] == df["trigger"]).all()
    assert (df.groupby("trigger")["split"].nunique() == 1).all()  # split by lesson (here: by trigger)
    assert df.drop_duplicates("trigger")["split"].value_counts().tolist() == [4, 4]
    again = th.load_pairs(tmp_path / "p.csv")
    assert (again["split"] == df["split"]).all()  # deterministic
    other = th.load_pairs(tmp_path / "p.csv", seed=2)
    assert (other["split"] != df["split"]).any()  # and seeded


def test_load_pairs_jsonl_with_lessons_join(tmp_path):
    lines = [
        json.dumps(
            {
                "goal": f"g{i}",
                "trigger": "t1" if i % 2 else "t2",
                "relevant": bool(i % 3 == 0),
                "lesson_id": "L1" if i % 2 else "L2",
                "split": "calibration" if i < 6 else "test",
            }
        )
        for i in range(12)
    ]
    pairs = _write(tmp_path / "p.jsonl", "\n".join(lines) + "\n")
    lessons = _write(tmp_path / "l.csv", "lesson_id,body\nL1,one two three\nL2,a much longer lesson body here\n")
    df = th.load_pairs(pairs, lessons=lessons)
    assert df.attrs["token_source"] == "body"
    assert set(df["body"]) == {"one two three", "a much longer lesson body here"}
    assert df.loc[df["lesson_id"] == "L2", "tokens"].iloc[0] > df.loc[df["lesson_id"] == "L1", "tokens"].iloc[0]


@pytest.mark.parametrize(
    "text, line, field",
    [
        ("goal,trigger\nx,y\n", 1, "header"),
        ("goal,trigger,relevant\nx,y,1\nz,y,maybe\n", 3, "relevant"),
        ("goal,trigger,relevant\nx,y,1\n ,y,0\n", 3, "goal"),
        ("goal,trigger,relevant\nx,y,1\nx,y,0\n", 3, "relevant"),
        ("goal,trigger,relevant,split\nx,y,1,calibration\nz,y,0,\n", 3, "split"),
        ("goal,trigger,relevant,split\nx,y,1,train\n", 2, "split"),
        ("goal,trigger,relevant,split\nx,y,1,calibration\nz,y,0,calibration\nw,y,1,test\n", 0, "split"),
    ],
)
def test_load_pairs_errors_name_line_and_field(tmp_path, text, line, field):
    path = _write(tmp_path / "bad.csv", text)
    with pytest.raises(th.PairsError) as err:
        th.load_pairs(path)
    assert (err.value.line, err.value.field) == (line, field)
    assert str(path) in str(err.value)


def test_load_pairs_jsonl_and_lessons_errors(tmp_path):
    bad = _write(tmp_path / "p.jsonl", '{"goal": "g", "trigger": "t", "relevant": 1}\n{not json}\n')
    with pytest.raises(th.PairsError) as err:
        th.load_pairs(bad)
    assert (err.value.line, err.value.field) == (2, "json")
    good = _write(
        tmp_path / "q.csv",
        "goal,trigger,relevant,lesson_id\n" + "".join(f"g{i},t{i % 4},{int(i % 3 == 0)},L{i % 4}\n" for i in range(16)),
    )
    lessons = _write(tmp_path / "l.csv", "lesson_id,body\nL0,body zero\n")
    with pytest.raises(th.PairsError, match="'L1'.*no row in the lessons file"):
        th.load_pairs(good, lessons=lessons)
    with pytest.raises(th.PairsError, match="no such file"):
        th.load_pairs(tmp_path / "missing.csv")


# ------------------------------------------------------------------------------------------ gates


def test_gate_families_by_hand():
    s = np.array([[0.9, 0.85, 0.5, 0.1], [0.6, 0.3, 0.2, 0.1]])
    assert Gate.absolute(0.5).admit_sorted(s).tolist() == [[1, 1, 1, 0], [1, 0, 0, 0]]
    assert Gate("top-k", 0.5, k=2).admit_sorted(s).tolist() == [[1, 1, 0, 0], [1, 0, 0, 0]]
    assert Gate("margin", 0.5, margin=0.1).admit_sorted(s).tolist() == [[0, 0, 0, 0], [1, 0, 0, 0]]
    assert Gate("margin", 0.95, margin=0.0).admit_sorted(s).sum() == 0
    assert Gate("margin", 0.0, margin=0.3).admit_sorted(np.array([[0.4]])).tolist() == [[True]]  # no runner-up
    with pytest.raises(ValueError, match="family"):
        Gate("nearest")
    with pytest.raises(ValueError, match="k=0"):
        Gate("top-k", 0.5, k=0)
    assert str(Gate("top-k", 0.48)) == "top-1, cosine ≥ 0.48" and str(Gate.absolute(0.5)) == "τ ≥ 0.50"


def test_study_admission_equals_runtime_retrieval():
    """The study's vectorised admission and `TriggerIndex.retrieve` are the same rule."""
    rng = np.random.default_rng(5)
    triggers = rng.normal(size=(12, 8)).astype(np.float32)
    goals_ = rng.normal(size=(30, 8)).astype(np.float32)

    class Table:
        id = "table"

        def encode(self, texts):
            return np.array([goals_[int(t[1:])] if t[0] == "g" else triggers[int(t[1:])] for t in texts])

    from overlay_kit.retrieval import TriggerIndex

    ids = [f"d{i:02d}" for i in range(12)]
    index = TriggerIndex(Table(), ids, triggers)
    norm = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    cosine = norm(goals_) @ norm(triggers).T
    for gate in (Gate.absolute(0.2), Gate("top-k", 0.1, k=2), Gate("margin", 0.0, margin=0.15)):
        mask = gate.admit(cosine)
        for g in range(30):
            got = {d for d, _ in index.retrieve(f"g{g}", gate)}
            assert got == {ids[j] for j in np.flatnonzero(mask[g])}, (gate, g)


# ------------------------------------------------------------------------------------ goals, sums, rule


def _toy() -> th.Scored:
    """4 lessons (L1, L2 calibration; L3, L4 test), one goal per lesson, cosines chosen by hand."""
    e = np.eye(4)
    table = {
        "L1": e[0],
        "L2": e[1],
        "L3": e[2],
        "L4": e[3],
        "g1": 0.8 * e[0] + 0.6 * e[1],  # L1's paraphrase: 0.8 to L1, 0.6 to L2
        "g2": 0.6 * e[1] + 0.8 * e[2],  # L2's near miss: 0.6 to L2, 0.8 to L3
        "g3": 0.6 * e[2] + 0.8 * e[3],  # L4's paraphrase
        "g4": e[2],
    }  # L3's paraphrase
    rows = [
        ("g1", "L1", True, "paraphrase", "calibration"),
        ("g2", "L2", False, "near_miss", "calibration"),
        ("g1", "L3", False, "cross_domain", "test"),  # reuses g1: still L1's goal, in L1's half
        ("g3", "L4", True, "paraphrase", "test"),
        ("g4", "L3", True, "paraphrase", "test"),
    ]
    df = pd.DataFrame(rows, columns=["goal", "trigger", "relevant", "category", "split"])
    df = df.assign(lesson_id=df["trigger"], body=df["trigger"], line=range(2, 7))
    df["tokens"] = df["trigger"].map({"L1": 10, "L2": 20, "L3": 40, "L4": 30})
    return th.score(df, FixedScorer(table))


def test_goals_belong_to_their_home_lesson_and_half():
    cal, test = th.goals(_toy(), "calibration"), th.goals(_toy(), "test")
    assert cal.lessons == ("L1", "L2") and test.lessons == ("L3", "L4")
    assert len(cal.home) == 2 and len(test.home) == 2  # g1 is not counted again in the test half
    np.testing.assert_allclose(cal.cosine, [[0.8, 0.6, 0.0, 0.0], [0.0, 0.6, 0.8, 0.0]], atol=1e-6)


def test_sums_and_session_rates_by_hand():
    g = th.goals(_toy(), "calibration")
    gates = [Gate.absolute(0.7), Gate.absolute(0.5), Gate.absolute(0.9), Gate("margin", 0.0, margin=0.25)]
    s = th.sums(g, gates)
    # τ 0.7: g1 gets L1 (a hit); g2 gets L3 (40 false tokens). τ 0.5: g1 also L2 (20), g2 also L2 (20).
    assert s.hits.tolist() == [[1, 1, 0, 0], [0, 0, 0, 0]]
    assert s.false_tokens.tolist() == [[0, 20, 0, 0], [40, 60, 0, 0]]
    assert s.relevant.tolist() == [1, 0] and s.n_goals.tolist() == [1, 1]
    r = s.rates(np.array([[1.0, 1.0], [2.0, 0.0]]), k=2)
    assert r["recall"][0].tolist() == [1, 1, 0, 0] and r["false_tokens"][0].tolist() == [40, 80, 0, 0]
    assert r["precision"][0, :2].tolist() == [0.5, 0.25] and np.isnan(r["precision"][0, 2])
    assert r["false_tokens"][1].tolist() == [0, 40, 0, 0]  # a resample holding L1 twice
    assert r["injected"][0].tolist() == [2, 4, 0, 0]
    assert r["benign_tokens"][0].tolist() == r["false_tokens"][0].tolist()  # no adversarial goal in this half
    assert np.isnan(r["stress_tokens"][0]).all()


def test_benign_and_stress_costs_are_kept_apart_by_hand():
    """g2 becomes an adversarial goal: its 40 tokens at τ 0.7 leave the benign cost and make the stress cost."""
    sc = _toy()
    sc.pairs.loc[sc.pairs["goal"] == "g2", "category"] = "adversarial"
    g = th.goals(sc, "calibration")
    r = th.sums(g, [Gate.absolute(0.7), Gate.absolute(0.5)]).rates(np.array([[1.0, 1.0]]), k=10)
    # per goal: g1 (benign) 0 / 20 false tokens, g2 (adversarial) 40 / 60; one goal of each kind
    assert r["benign_tokens"][0].tolist() == [0, 200] and r["stress_tokens"][0].tolist() == [400, 600]
    assert r["false_tokens"][0].tolist() == [200, 400]  # the old, pooled cost: (0 + 40) / 2 goals × 10


def test_select_is_max_recall_among_eligible_then_the_stated_tie_break():
    gates = [
        Gate.absolute(0.48),
        Gate("top-k", 0.46),
        Gate.absolute(0.46),
        Gate("top-k", 0.46, k=2),
        Gate("margin", 0.40, margin=0.1),
        Gate.absolute(0.30),
    ]
    recall = np.array([0.25, 0.25, 0.25, 0.25, 0.20, 0.90])
    ok = np.array([True, True, True, True, True, False])
    # 0.90 is not eligible; four gates tie at 0.25: the lower floor (0.46) wins over 0.48, then the simpler
    # family (absolute before top-k), so τ ≥ 0.46 — not the cheaper τ ≥ 0.48 the old tie-break took
    assert th.select(recall, ok, gates) == 2
    assert th.select(recall, ok & (np.arange(6) != 2), gates) == 1  # then top-1 before top-2
    assert th.select(recall, np.array([1, 0, 0, 0, 1, 0], bool), gates) == 0  # recall first, floor second
    assert th.select(recall, np.zeros(6, bool), gates) == -1


def test_the_budget_is_judged_on_benign_goals_at_the_upper_bound():
    rule = th.TauRule()
    b, s = rule.budget, rule.stress_budget
    draws = lambda point, spread: np.r_[point, np.linspace(point - spread, point + spread, 20)]  # noqa: E731
    # four gates: the same benign point estimate (0.75 b) with a narrow and a wide interval, one over, one free
    rates = {
        "benign_tokens": np.c_[
            draws(0.75 * b, 0.1 * b), draws(0.75 * b, 0.5 * b), draws(1.1 * b, 0.01 * b), draws(0, 0)
        ],
        "stress_tokens": np.c_[draws(2 * s, 1), draws(0, 0), draws(0, 0), draws(0.98 * s, 0.1 * s)],
    }
    hi = np.percentile(rates["benign_tokens"][1:], rule.upper, axis=0)
    assert hi[0] <= b < hi[1] and rates["benign_tokens"][0, 1] < b  # within at the estimate, not at the bound
    lax = dataclasses.replace(rule, stress_budget=10 * s)
    assert th.eligible(rates, lax).tolist() == [True, False, False, True]
    # the adversarial cost is a constraint of its own, judged at its upper bound too: 0.98 s at the estimate fails
    assert th.eligible(rates, rule).tolist() == [False, False, False, False]
    none = {**rates, "stress_tokens": np.full(rates["stress_tokens"].shape, np.nan)}  # no adversarial goal at all
    assert th.eligible(none, rule).tolist() == [True, False, False, True]


def test_lesson_weights_resample_lessons():
    w = th.lesson_weights(8, 300, np.random.default_rng(0))
    assert w.shape == (301, 8) and (w[0] == 1).all() and (w.sum(axis=1) == 8).all()
    assert len({tuple(row) for row in w[1:]}) > 250  # actually random
    assert (th.lesson_weights(8, 300, np.random.default_rng(0)) == w).all()  # and seeded


def test_grid_has_every_family_and_a_gate_that_admits_nothing():
    grid = th.gate_grid()
    assert [f for f in dict.fromkeys(g.family for g in grid)] == list(FAMILIES)
    assert Gate.absolute(1.0) in grid and Gate("top-k", 0.5, k=3) in grid
    coarse = th.gate_grid(
        {"floor_step": 0.5, "top_k": [1], "margin_max": 0.1, "margin_step": 0.1, "margin_floor_step": 0.5}
    )
    assert [str(g) for g in coarse][:3] == ["τ ≥ 0.00", "τ ≥ 0.50", "τ ≥ 1.00"] and len(coarse) == 3 + 3 + 2 * 3


# ------------------------------------------------------------------------------------------ the rule file


def test_the_rule_is_read_from_its_file_and_a_varied_number_says_so():
    rule = th.TauRule()
    file = rulefile.load(th.RULE)
    assert rule.file.sha256 == file.sha256 and rule.budget == float(file.param("budget"))
    assert rule.stress_budget == float(file.param("stress_budget")) and rule.varied() == {}
    assert rule.stamp() == file.stamp()
    varied = th.TauRule(n_boot=50)
    assert varied.varied() == {"n_boot": (file.param("n_boot"), 50)} and "n_boot" in varied.stamp()
    labels = [c.label for c in th.candidates(rule)]
    assert labels[0] == rule.shipped_embedder and len(labels) == len(set(labels))
    assert {c.label for c in th.candidates(rule) if c.shippable} == set(rule.shippable)
    hybrids = [c for c in th.candidates(rule) if c.kind == "hybrid"]
    assert hybrids and all(c.parts[0] == th.TFIDF and abs(sum(c.weights) - 1) < 1e-12 for c in hybrids)


def _rule_copy(tmp_path: Path, **params) -> th.TauRule:
    """The rule file with some params changed, as a file of its own (the loader wants the study's name)."""
    doc = yaml.safe_load((rulefile.rules_dir() / f"{th.RULE}.yaml").read_text(encoding="utf-8"))
    doc["params"].update(params)
    folder = tmp_path / f"rule{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    path = folder / f"{th.RULE}.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    return th.TauRule.load(path)


def test_an_unknown_candidate_kind_is_refused_naming_the_file(tmp_path):
    rule = _rule_copy(tmp_path, candidates=[{"name": "x", "kind": "oracle"}])
    with pytest.raises(rulefile.RuleFileError, match="params.candidates: x: unknown kind"):
        th.candidates(rule)


# ------------------------------------------------------------------------------------------ the study


@pytest.fixture(scope="module")
def tfidf_study(corpus):
    return th.run(corpus, [th.TfidfScorer()], n_boot=200)


def test_study_table_and_finding_are_written_from_the_numbers(tfidf_study):
    res, rule = tfidf_study.results["tfidf"], tfidf_study.rule
    assert set(res.families) == set(FAMILIES) and res.winner in FAMILIES and res.reachable
    table = tfidf_study.table()
    assert len(table) == 3 and table["winner"].sum() == 1 and "nan" not in table.to_string().lower()
    fam = res.pick
    # every pick is within both costs at their upper bounds on the calibration half, and the best recall there
    for f in res.families.values():
        assert f.calibration.benign_tokens.high <= rule.budget + 1e-9
        assert f.calibration.stress_tokens.high <= rule.stress_budget + 1e-9
        assert f.calibration.recall.estimate <= fam.calibration.recall.estimate + 1e-12
    assert res.holds(rule.budget) == (fam.test.benign_tokens.high <= rule.budget and fam.test.recall.low > 0)
    text = tfidf_study.finding()
    assert f"**tfidf → {fam.calibration.gate}**" in text and "No verdict on the default" in text
    assert fam.test.recall.fmt() in text and fam.calibration.recall.fmt() in text
    assert fam.test.benign_tokens.fmt(".0f") in text and fam.test.stress_tokens.fmt(".0f") in text
    assert res.reference.recall.estimate == 0  # τ = 0.82 retrieves nothing
    assert res.n_lessons == {"calibration": 18, "test": 18} and res.n_relevant == {"calibration": 108, "test": 108}
    assert 0 < res.n_no_shared_word < 108


def test_the_verdict_can_come_out_the_other_way(corpus):
    none = th.run(corpus, [th.TfidfScorer()], budget=0, n_boot=50)
    res = none.results["tfidf"]
    assert not res.reachable and "unreachable" in none.finding()
    assert "nan" not in none.table().to_string().lower()  # recall 0.00, "nothing admitted": never NaN
    assert none.rule.varied() == {
        "budget": (none.rule.file.param("budget"), 0.0),
        "n_boot": (none.rule.file.param("n_boot"), 50),
    }
    generous = th.run(corpus, [th.TfidfScorer()], budget=400, n_boot=50).results["tfidf"]
    default = th.run(corpus, [th.TfidfScorer()], n_boot=50).results["tfidf"]
    assert (
        generous.families[generous.winner].calibration.recall.estimate
        > default.families[default.winner].calibration.recall.estimate
    )


def test_the_pick_is_the_lowest_floor_among_eligible_gates_of_equal_recall(tfidf_study):
    """The tie-break at work on the corpus: recomputed from the parts, no eligible gate with the pick's
    calibration recall has a lower floor, and none has a higher recall."""
    rule, sc = tfidf_study.rule, tfidf_study.scored["tfidf"]
    gates = th.gate_grid(rule.grid)
    halves = {h: th.goals(sc, h) for h in th.SPLITS}
    cal = th.sums(halves["calibration"], gates).rates(th._weights(halves, rule)["calibration"], rule.goals_per_session)
    ok = th.eligible(cal, rule)
    recall = np.round(cal["recall"][0], 12)
    ties = [g for g, r, e in zip(gates, recall, ok) if e and r == recall[ok].max()]
    pick = tfidf_study.results["tfidf"].gate
    assert pick in ties and pick.floor == min(g.floor for g in ties)
    assert tfidf_study.results["tfidf"].pick.calibration.recall.estimate == pytest.approx(recall[ok].max())


def test_shares_word_by_hand():
    assert th.shares_word("Declining recruiter reply rules apply here", "Replying to decline a recruiter's outreach")
    assert th.shares_word("declined offers", "Decline")  # the first five characters match
    assert not th.shares_word(
        "the all-hands collides with the vendor demo, fix it", "Resolving a double-booked slot on my calendar."
    )
    assert not th.shares_word("it is in the", "it is in the")  # stop words only: no content word
    assert not th.shares_word("a to do", "to do a", min_chars=3) and th.shares_word("ab cd", "cd", min_chars=2)


def test_a_hybrid_score_is_the_weighted_sum_of_its_parts_exactly():
    goals_ = ["decline the recruiter politely", "what is the weather in Lisbon", "zzz qqq"]  # the last: no TF-IDF word
    triggers = [
        "Replying to decline a recruiter's job outreach.",
        "Filing tax and financial documents.",
        "Checking the weather before travel.",
    ]
    rng = np.random.default_rng(3)
    dense = FixedScorer({t: rng.normal(size=5) for t in goals_ + triggers}, name="dense")
    hybrid = th.CombinedScorer("hybrid", (th.TfidfScorer(), dense), (0.3, 0.7))
    g, t = hybrid.vectors(goals_, triggers)
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    tg, tt = th.TfidfScorer().vectors(goals_, triggers)
    dg, dt = dense.vectors(goals_, triggers)
    assert not tg[2].any()  # the padding case is exercised
    np.testing.assert_allclose(g @ t.T, 0.3 * (tg @ tt.T) + 0.7 * (unit(dg) @ unit(dt).T), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(g, axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1, atol=1e-6)
    pairs = pd.DataFrame(
        {
            "goal": goals_,
            "trigger": triggers,
            "relevant": [True, False, False],
            "tokens": 10,
            "split": "calibration",
            "category": "paraphrase",
        }
    )
    np.testing.assert_allclose(th.score(pairs, hybrid).cosine, g @ t.T, atol=1e-5)  # through the FAISS index too
    emb = th.CollectionEmbedder(hybrid, triggers)  # what world.comeback sees: the same scores
    np.testing.assert_allclose(emb.encode(goals_) @ emb.encode(triggers[::-1]).T, (g @ t.T)[:, ::-1], atol=1e-6)
    with pytest.raises(ValueError, match="summing to 1"):
        th.CombinedScorer("bad", (dense, dense), (0.5, 0.6))


def test_category_errors_and_examples(tfidf_study):
    sc, gate = tfidf_study.scored["tfidf"], tfidf_study.results["tfidf"].gate
    cats = th.category_errors(sc, gate, n_boot=100)
    assert set(cats["category"]) == {"paraphrase", "near_miss", "lexical_overlap", "adversarial"}
    assert cats["goals"].sum() == len(th.goals(sc, "test").home)
    ex = th.examples(sc, gate)
    assert set(ex["outcome"]) <= {"let in, irrelevant", "kept out, relevant"} and len(ex) <= 6
    fr = th.frontier(sc)
    assert set(fr["family"]) == set(FAMILIES)
    for _, part in fr.groupby("family"):
        assert part["recall"].is_monotonic_increasing and part["benign_tokens"].is_monotonic_increasing


# ------------------------------------------------------------------------------------------ embedders


@pytest.fixture(scope="module")
def default_scorer():
    return th.get_scorer(None)


def test_default_embedder_and_a_model_named_by_path(default_scorer, corpus, tmp_path_factory):
    assert default_scorer.name == bundled.EMBEDDER_ID
    small = corpus.groupby("category", group_keys=False).head(6)
    base = th.score(small, default_scorer)
    path = tmp_path_factory.mktemp("model") / "wordllama-copy"
    default_scorer.embedder.model.save(str(path))
    named = th.get_scorer(str(path))
    assert named.name != default_scorer.name and str(path) in named.name
    np.testing.assert_allclose(th.score(small, named).cosine, base.cosine, atol=1e-5)
    with pytest.raises(EmbedderUnavailable):
        th.get_scorer(str(tmp_path_factory.mktemp("empty") / "no-such-model"))


def _shipped(embedder_id: str) -> dict:
    return json.loads(retrieval.calibration_path(embedder_id, CORPUS / "gates").read_text(encoding="utf-8"))


def test_the_shipped_calibration_is_the_studys_output(default_scorer, corpus):
    """Recompute the bundled embedder's calibration: the shipped file must be exactly what the study writes."""
    study = th.run(corpus, [default_scorer])
    record = json.loads(json.dumps(study.calibration(default_scorer.name), ensure_ascii=False))
    assert _shipped(default_scorer.name) == record
    assert record["holds_on_test"] and record["calibration"]["recall"][0] > 0


@pytest.mark.parametrize(
    "name, ident, package, weights, located",
    [
        ("e5-small", bundled.E5_ID, bundled.E5_PACKAGE, "e5-small-q4.bin", bundled.e5_path),
        ("minilm", bundled.MINILM_ID, bundled.MINILM_PACKAGE, "model/model.safetensors", bundled.minilm_path),
    ],
)
def test_an_optional_embedder_is_checksum_pinned(tmp_path, monkeypatch, name, ident, package, weights, located):
    shipped = _shipped(ident)  # computed by the study where the extra was installed
    assert shipped["embedder"] == ident and shipped["corpus"]["sha256"] == th.load_corpus().attrs["sha256"]
    fake = tmp_path / package / weights
    fake.parent.mkdir(parents=True)
    (tmp_path / package / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    fake.write_bytes(b"not the pinned weights")
    monkeypatch.delitem(sys.modules, package, raising=False)  # imported by an earlier test: find_spec would reuse it
    monkeypatch.syspath_prepend(str(tmp_path))
    located.cache_clear()
    retrieval._load.cache_clear()
    try:
        with pytest.raises(EmbedderUnavailable, match="is not the pinned"):
            retrieval.load_embedder(name)
    finally:
        located.cache_clear()
        retrieval._load.cache_clear()


@pytest.mark.skipif(
    importlib.util.find_spec(bundled.E5_PACKAGE) is None, reason="the optional extra overlay_kit[e5] is not installed"
)
def test_e5_embeds_goals_as_queries_and_reproduces_its_shipped_calibration(corpus):
    scorer = th.get_scorer("e5-small")
    emb = scorer.embedder
    assert scorer.name == retrieval.E5_ID and emb.encode(["x"]).shape == (1, emb.dim)
    q, p = emb.encode_query(["file my tax papers"]), emb.encode(["file my tax papers"])
    assert not np.allclose(q, p) and np.allclose(np.linalg.norm(q), 1, atol=1e-5)  # two prefixes, unit vectors
    index = retrieval.TriggerIndex(
        emb, ["a", "b"], emb.encode(["Filing tax and financial documents.", "Triaging newsletters in the inbox."])
    )
    assert index.retrieve("file my tax papers", Gate("top-k", -1.0))[0][0] == "a"
    study = th.run(corpus, [scorer])
    assert json.loads(json.dumps(study.calibration(scorer.name), ensure_ascii=False)) == _shipped(scorer.name)


@pytest.mark.skipif(
    importlib.util.find_spec(bundled.MINILM_PACKAGE) is None,
    reason="the optional extra overlay_kit[minilm] is not installed",
)
def test_minilm_loads_offline_and_reproduces_its_shipped_calibration(corpus):
    scorer = th.get_scorer("minilm")
    assert scorer.name == bundled.MINILM_ID
    study = th.run(corpus, [scorer])
    assert json.loads(json.dumps(study.calibration(scorer.name), ensure_ascii=False)) == _shipped(scorer.name)


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_calibrate_tau_json_dry_run(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("OVERLAY_KIT_GATES", str(tmp_path / "gates"))
    rc = main(["calibrate-tau", "--embedder", "tfidf", "--n-boot", "50", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["embedder"] == "tfidf" and out["reachable"] and out["written"] is None
    assert set(out["families"]) == set(FAMILIES)
    assert out["rule"]["budget_benign_tokens_per_session"] == th.TauRule().budget
    assert out["rule"]["sha256"] == th.TauRule().file.sha256[:12]
    assert set(out["test"]) >= {"recall", "precision", "false_tokens", "injected", "benign_tokens", "stress_tokens"}
    assert not (tmp_path / "gates").exists()


def test_cli_calibrate_tau_writes_what_the_resolver_reads(capsys, tmp_path, monkeypatch, corpus):
    monkeypatch.setenv("OVERLAY_KIT_GATES", str(tmp_path / "gates"))
    small = corpus[corpus["lesson_id"].isin(sorted(set(corpus["lesson_id"]))[::3])]
    pairs = tmp_path / "pairs.csv"
    small.drop(columns=["line", "tokens"]).to_csv(pairs, index=False)
    assert main(["calibrate-tau", str(pairs), "--n-boot", "50", "--budget", "80"]) == 0
    out = capsys.readouterr().out
    assert "wrote " in out and "nan" not in out.lower()
    gate, path = retrieval.gate_for(bundled.EMBEDDER_ID)  # the user's calibration wins over the shipped one
    assert path.parent == tmp_path / "gates" and str(gate) in out


def test_cli_calibrate_tau_unreachable_and_errors(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("OVERLAY_KIT_GATES", str(tmp_path / "gates"))
    rc = main(["calibrate-tau", "--embedder", "tfidf", "--budget", "0", "--n-boot", "50"])
    captured = capsys.readouterr()
    assert rc == 1 and "unreachable" in captured.err and "nan" not in captured.out.lower()
    assert "unreachable" in captured.out and not (tmp_path / "gates").exists()
    bad = _write(tmp_path / "bad.csv", "goal,trigger,relevant\nx,y,perhaps\n")
    assert main(["calibrate-tau", str(bad), "--embedder", "tfidf"]) == 1
    assert f"{bad}:2: relevant" in capsys.readouterr().err
    assert main(["calibrate-tau", "--embedder", str(tmp_path / "nope")]) == 1
    assert "unavailable" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ the verdict


def test_the_verdict_is_computed_from_the_rule_file(tmp_path, corpus, default_scorer):
    """Two copies of the rule that differ in one param, two verdicts: which embedder ships decides whether the
    better candidate is a switch, and the goal threshold decides the goal — both read from the file."""
    common = {
        "candidates": [{"name": "wordllama", "kind": "dense"}, {"name": "tfidf", "kind": "lexical"}],
        "shippable": ["wordllama", "tfidf"],
        "n_boot": 200,
    }
    stay = th.run(corpus, rule=_rule_copy(tmp_path, shipped_embedder="wordllama", goal_recall=1.01, **common))
    v = stay.verdict()
    best = max(("wordllama", "tfidf"), key=lambda x: stay.result(x).pick.calibration.recall.estimate)
    assert stay.complete and v.winner == best == v.shippable and stay.rule.file.sha256 != th.TauRule().file.sha256
    if best == "wordllama":
        assert not v.switch and "itself" in v.reasons[0] and v.default == "wordllama"
    assert v.goal == "not met"  # no recall interval reaches above 1.01
    assert f"**No switch: the default stays {v.default}**" in stay.finding() or v.switch

    moved = th.run(corpus, rule=_rule_copy(tmp_path, shipped_embedder="tfidf", goal_recall=0.0, **common))
    m = moved.verdict()
    assert m.shipped == "tfidf" and m.winner == best
    d = moved.result(best).test_recall_draws - moved.result("tfidf").test_recall_draws
    assert m.difference.estimate == pytest.approx(d[0])  # paired: the same lesson resamples for both
    held = moved.result(best).holds(moved.rule.budget)
    assert m.holds == held
    if best != "tfidf":
        assert m.switch == (held and m.difference.low > 0) and m.default == (best if m.switch else "tfidf")
        assert not any("itself" in r for r in m.reasons)  # the rule file, not the data, moved it
    default = moved.result(m.default)
    assert m.goal == (
        "met"
        if default.holds(moved.rule.budget)
        else "not met"
        if default.pick.test.benign_tokens.low > moved.rule.budget
        else "undecided"
    )
    table = moved.comeback()
    assert "previous default" in " ".join(table.index) and set(table["candidate"]) <= {"wordllama", "tfidf"}
    assert (table["needed"] > 0).all()
    text = moved.finding()
    assert m.goal in text and moved.rule.file.path.name in text
    for label, interval in m.goal_figures.items():  # a zero-width interval is said once (`Finding.figure`)
        same = interval.low == interval.high == interval.estimate
        assert f"{label} {f'{interval.estimate:.2f} in every resample' if same else interval.fmt()}" in text


def test_the_world_comeback_of_a_candidate_equals_the_world_modules_own(corpus, default_scorer, tmp_path):
    """The study hands `world.comeback` its candidates through `CollectionEmbedder`: for the bundled embedder
    that is the same number the world module computes with the embedder itself."""
    rule = _rule_copy(
        tmp_path, candidates=[{"name": "wordllama", "kind": "dense"}], shippable=["wordllama"], n_boot=100
    )
    study = th.run(corpus, rule=rule)
    gate = study.result("wordllama").gate
    ours = next(cb for role, label, cb in study._comebacks if label == "wordllama" and cb.gate == str(gate))
    theirs = world.comeback(study.world, default_scorer.embedder, gate, split="test", n_boot=100, seed=rule.seed)
    assert ours.recall == theirs.recall and ours.wrong_tokens_benign == theirs.wrong_tokens_benign


# ---------------------------------------------------------------------------------- at realistic scale


@pytest.fixture(scope="module")
def realistic():
    return world.build(1, scale="realistic", users=2, sessions=160)


@pytest.fixture(scope="module")
def at_scale(realistic):
    return th.at_scale(realistic, [retrieval.BUNDLED, "no-such-embedder"], n_boot=200)


class CountingEmbedder:
    """The bundled embedder, counting the texts it is asked to embed."""

    id = bundled.EMBEDDER_ID

    def __init__(self):
        self.inner, self.calls = retrieval.static_embedder(), []

    def encode(self, texts):
        self.calls.append(list(texts))
        return self.inner.encode(texts)


def test_world_vectors_embed_the_world_up_front_and_give_the_embedders_own_vectors(realistic):
    emb = CountingEmbedder()
    vectors = th.world_vectors(emb, realistic)
    assert len(emb.calls) == 2 and vectors.id == bundled.EMBEDDER_ID  # passages, then goals as queries
    lesson = realistic.lessons()[0]
    texts = [lesson.trigger, realistic.sessions[0].goal, lesson.trigger]
    assert np.array_equal(vectors.encode(texts[:1]), emb.inner.encode(texts[:1]))
    assert np.array_equal(vectors.encode_query(texts[1:2]), emb.inner.encode(texts[1:2]))
    assert len(emb.calls) == 2  # both seen up front
    assert np.array_equal(
        vectors.encode(["a text no world holds", lesson.trigger])[0], emb.inner.encode(["a text no world holds"])[0]
    )
    assert emb.calls[-1] == ["a text no world holds"]  # only what it lacked


def test_at_scale_reads_comeback_for_the_gate_and_the_selection(realistic, at_scale):
    rows = at_scale.rows.set_index("mechanism")
    assert list(rows.index) == ["gate", "selection"] and set(at_scale.rows.embedder) == {retrieval.BUNDLED}
    assert at_scale.missing == ("no-such-embedder: not installed",)
    for mode in ("gate", "selection"):
        cb = world.comeback(realistic, mode=mode, n_boot=200)  # the oracle: comeback with the bundled embedder
        r = rows.loc[mode]
        assert (r.needed, r.needed_low, r.needed_high, r.needed_n) == (
            cb.recall.estimate,
            cb.recall.low,
            cb.recall.high,
            cb.needed,
        )
        np.testing.assert_equal([r.irrelevant, r.tokens], [cb.irrelevant_share.estimate, cb.tokens_per_goal.estimate])
        point = cb.by_category().set_index("needs")
        for kind, category in (("cold", "restated"), ("after one restatement", "paraphrase"), ("multi-need", "multi")):
            if category in point.index:
                assert r[f"{kind}_n"] == point.loc[category, "counted"]
                assert (
                    round(r[kind], 3) == point.loc[category, "recall"]
                    and r[f"{kind}_low"] <= r[kind] <= r[f"{kind}_high"]
                )
        assert r["no shared word_n"] == point.loc["no shared word", "counted"]
    assert rows.loc["gate", "how"] == str(retrieval.gate_for(bundled.EMBEDDER_ID)[0])


def test_at_scale_states_its_answer_from_its_table(at_scale):
    t = at_scale.table()
    assert list(t.index.names) == ["embedder", "mechanism"] and len(t) == 2
    needed = next(c for c in t.columns if c.startswith("needed in context ("))
    sel = at_scale.rows.set_index("mechanism").loc["selection"]
    assert (
        t.loc[(retrieval.BUNDLED, "selection"), needed]
        == f"{sel.needed:.2f} [{sel.needed_low:.2f}, {sel.needed_high:.2f}]"
    )
    answer = at_scale.answer()
    assert answer.count(". ") == 1 and answer.endswith(".")  # two sentences
    assert (
        t.loc[(retrieval.BUNDLED, "selection"), needed] in answer
        and t.loc[(retrieval.BUNDLED, "gate"), needed] in answer
    )
    assert f"{sel.irrelevant:.2f}" in answer


def test_at_scale_needs_a_realistic_world():
    with pytest.raises(ValueError, match="realistic"):
        th.at_scale(world.build(0, users=1, sessions=5))
