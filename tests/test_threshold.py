"""τ calibration: corpus construction, pair loading, the τ pick, bootstrap, session costs, scorers, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from overlay_kit import bundled
from overlay_kit.cli import main
from overlay_kit.retrieval import EmbedderUnavailable
from overlay_kit.studies import threshold as th

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "datasets" / "tau"


@pytest.fixture(scope="module")
def corpus() -> pd.DataFrame:
    return th.load_corpus()


@pytest.fixture(scope="module")
def tfidf_scored(corpus) -> th.Scored:
    return th.score(corpus, th.TfidfScorer())


@dataclass(frozen=True)
class FixedScorer:
    """A scorer with hand-chosen vectors, so cosines (and costs) can be computed by hand."""

    table: dict
    name: str = "fixed"

    def vectors(self, goals, triggers):
        return (np.array([self.table[g] for g in goals], dtype=np.float32),
                np.array([self.table[t] for t in triggers], dtype=np.float32))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------ corpus


def test_corpus_regenerates_byte_identical(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_tau_corpus.py"), "--out", str(tmp_path)],
                         capture_output=True, text=True, check=True)
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
        authored[authored["category"] == "paraphrase"][["goal", "domain"]], on="goal", suffixes=("", "_origin"))
    assert len(cross) == (pairs["category"] == "cross_domain").sum()
    assert (cross["domain"] != cross["domain_origin"]).all()


def test_generator_refuses_unknown_slot(tmp_path):
    src = _write(tmp_path / "s.yaml", """
slots: {}
lessons:
  - {id: a, domain: d, skill: s, section: x, trigger: t, body: b,
     paraphrase: ["hello {nobody}"], near_miss: [n], lexical_overlap: [l], adversarial: [v]}
""")
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_tau_corpus.py"), "--source", str(src),
                          "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert out.returncode == 1 and "unknown slot(s) ['nobody']" in out.stderr
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------ loading


def test_load_pairs_csv_without_split_or_body(tmp_path):
    rows = ["goal,trigger,relevant,category"]
    rows += [f"goal {i},trigger {i % 3},{int(i % 2 == 0)},{'a' if i < 10 else 'b'}" for i in range(20)]
    df = th.load_pairs(_write(tmp_path / "p.csv", "\n".join(rows) + "\n"))
    assert df.attrs["token_source"] == "trigger" and (df["body"] == df["trigger"]).all()
    per = df.groupby(["category", "relevant", "split"]).size().unstack()
    assert ((per["calibration"] - per["test"]).abs() <= 1).all()
    again = th.load_pairs(tmp_path / "p.csv")
    assert (again["split"] == df["split"]).all()                       # deterministic
    other = th.load_pairs(tmp_path / "p.csv", seed=1)
    assert (other["split"] != df["split"]).any()                       # and seeded


def test_load_pairs_jsonl_with_lessons_join(tmp_path):
    lines = [json.dumps({"goal": f"g{i}", "trigger": "t1" if i % 2 else "t2", "relevant": bool(i % 3 == 0),
                         "lesson_id": "L1" if i % 2 else "L2", "split": "calibration" if i < 6 else "test"})
             for i in range(12)]
    pairs = _write(tmp_path / "p.jsonl", "\n".join(lines) + "\n")
    lessons = _write(tmp_path / "l.csv", "lesson_id,body\nL1,one two three\nL2,a much longer lesson body here\n")
    df = th.load_pairs(pairs, lessons=lessons)
    assert df.attrs["token_source"] == "body"
    assert set(df["body"]) == {"one two three", "a much longer lesson body here"}
    assert df.loc[df["lesson_id"] == "L2", "tokens"].iloc[0] > df.loc[df["lesson_id"] == "L1", "tokens"].iloc[0]


@pytest.mark.parametrize("text, line, field", [
    ("goal,trigger\nx,y\n", 1, "header"),
    ("goal,trigger,relevant\nx,y,1\nz,y,maybe\n", 3, "relevant"),
    ("goal,trigger,relevant\nx,y,1\n ,y,0\n", 3, "goal"),
    ("goal,trigger,relevant\nx,y,1\nx,y,0\n", 3, "relevant"),
    ("goal,trigger,relevant,split\nx,y,1,calibration\nz,y,0,\n", 3, "split"),
    ("goal,trigger,relevant,split\nx,y,1,train\n", 2, "split"),
    ("goal,trigger,relevant,split\nx,y,1,calibration\nz,y,0,calibration\nw,y,1,test\n", 0, "split"),
])
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
    good = _write(tmp_path / "q.csv", "goal,trigger,relevant,lesson_id\n" +
                  "".join(f"g{i},t,{i % 2},L{i % 2}\n" for i in range(8)))
    lessons = _write(tmp_path / "l.csv", "lesson_id,body\nL0,body zero\n")
    with pytest.raises(th.PairsError, match="'L1'.*no row in the lessons file"):
        th.load_pairs(good, lessons=lessons)
    with pytest.raises(th.PairsError, match="no such file"):
        th.load_pairs(tmp_path / "missing.csv")


# ------------------------------------------------------------------------------------------ the pick


def test_pick_tau_is_max_recall_at_target_precision():
    s = [0.9, 0.8, 0.7, 0.6, 0.5]
    r = [True, True, False, True, False]
    assert th.pick_tau(s, r, 1.0) == 0.8
    assert th.pick_tau(s, r, 0.75) == 0.6         # 3 of 4 admitted are relevant
    assert th.pick_tau(s, r, 0.6) == 0.5          # 3 of 5
    assert th.pick_tau(s, r, 1.0, min_admitted=3) is None
    assert th.pick_tau([0.8, 0.8, 0.1], [True, False, False], 1.0) is None   # a tie cannot be split
    assert th.precision_ceiling(s, r, min_admitted=3) == (0.75, 0.6)


def test_weighted_pick_equals_pick_on_the_resampled_rows():
    rng = np.random.default_rng(3)
    s = np.round(rng.random(60), 2)
    r = rng.random(60) < 0.4
    counts = rng.integers(0, 3, size=60)
    expected = th.pick_tau(np.repeat(s, counts), np.repeat(r, counts), 0.5, min_admitted=5)
    got = th._pick(s, r, 0.5, counts[None, :].astype(float), 5)[0]
    assert (expected is None and np.isnan(got)) or got == pytest.approx(expected)


def test_prf_matches_scikit_learn(tfidf_scored):
    from sklearn.metrics import f1_score, precision_score, recall_score

    part = tfidf_scored.half("test")
    s, r = part["score"].to_numpy(), part["relevant"].to_numpy(dtype=bool)
    p, rec, f1 = (m[0, 0] for m in th._prf(s, r, np.array([0.2]), np.ones((1, len(s)))))
    pred = s >= 0.2
    assert p == pytest.approx(precision_score(r, pred))
    assert rec == pytest.approx(recall_score(r, pred))
    assert f1 == pytest.approx(f1_score(r, pred))


def test_bootstrap_weights_keep_stratum_sizes():
    strata = np.array(["a"] * 5 + ["b"] * 3 + ["c"] * 2)
    w = th._boot_weights(strata, 200, np.random.default_rng(0))
    assert w.shape == (200, 10)
    assert (w[:, :5].sum(axis=1) == 5).all() and (w[:, 5:8].sum(axis=1) == 3).all()
    assert len({tuple(row) for row in w}) > 50                    # actually random
    again = th._boot_weights(strata, 200, np.random.default_rng(0))
    assert (again == w).all()                                     # and seeded


# ------------------------------------------------------------------------------------- scoring, costs


def _toy() -> tuple[pd.DataFrame, FixedScorer]:
    """2 goals × 3 lessons with chosen cosines. g1 is relevant to L1 only."""
    e = np.eye(3)
    table = {"L1": e[0], "L2": e[1], "L3": e[2],
             "g1": 0.8 * e[0] + 0.6 * e[1],          # cos 0.8 to L1, 0.6 to L2, 0 to L3
             "g2": 0.6 * e[1] + 0.8 * e[2]}          # cos 0.6 to L2, 0.8 to L3
    rows = []
    for split in th.SPLITS:
        rows += [dict(goal="g1", trigger="L1", relevant=True), dict(goal="g1", trigger="L2", relevant=False),
                 dict(goal="g2", trigger="L3", relevant=False)]
        for row in rows[-3:]:
            row["split"] = split
    df = pd.DataFrame(rows).assign(category="x", body=lambda d: d["trigger"])
    df["tokens"] = df["trigger"].map({"L1": 10, "L2": 20, "L3": 40})
    return df.drop_duplicates(["goal", "trigger"]).reset_index(drop=True), FixedScorer(table)


def test_score_searches_all_pairs_through_faiss():
    df, scorer = _toy()
    sc = th.score(df, scorer)
    assert sc.goals == ("g1", "g2") and sc.triggers == ("L1", "L2", "L3")
    np.testing.assert_allclose(sc.cosine, [[0.8, 0.6, 0.0], [0.0, 0.6, 0.8]], atol=1e-6)
    assert sc.relevant.tolist() == [[True, False, False], [False, False, False]]
    assert sc.tokens.tolist() == [10, 20, 40]


def test_session_costs_by_hand():
    df, scorer = _toy()
    sc = th.score(df, scorer)
    c = th.curves(sc, "calibration", [0.5, 0.7, 0.9], n_boot=20, session=th.SessionModel(goals_per_session=4))
    # τ=0.5: g1 admits L1 (relevant) + L2 (20 false tokens); g2 admits L2 + L3 (60). Mean 40/goal × 4 goals.
    # τ=0.7: g1 admits L1; g2 admits L3 (40). τ=0.9: nothing; g1 misses L1.
    assert c["false_tokens"].tolist() == pytest.approx([160, 80, 0])
    assert c["missed"].tolist() == pytest.approx([0, 0, 2])
    assert c["injected"].tolist() == pytest.approx([8, 4, 0])


def test_tfidf_scores_match_scikit_cosine(tfidf_scored, corpus):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, stop_words="english")
    vec.fit(list(tfidf_scored.triggers))
    expected = cosine_similarity(vec.transform(tfidf_scored.goals), vec.transform(tfidf_scored.triggers))
    np.testing.assert_allclose(tfidf_scored.cosine, expected, atol=1e-5)
    # cross-domain goals share (almost) no trigger words
    per = tfidf_scored.pairs.groupby("category")["score"].median()
    assert per["cross_domain"] < per["paraphrase"]


# ------------------------------------------------------------------------------------- calibration


def test_calibrate_holds_out_and_serialises(tfidf_scored):
    ceiling = th.calibrate(tfidf_scored, 0.9, n_boot=200).ceiling
    cal = th.calibrate(tfidf_scored, round(ceiling - 0.05, 2), n_boot=200, seed=4)
    assert cal.tau is not None and cal.tau_ci.lo <= cal.tau <= cal.tau_ci.hi
    part = tfidf_scored.half("calibration")
    assert (part.loc[part["score"] >= cal.tau, "relevant"].mean() >= cal.target_precision)
    test = tfidf_scored.half("test")
    admitted = test[test["score"] >= cal.tau]
    assert cal.test.precision.value == pytest.approx(admitted["relevant"].mean())
    assert cal.test.recall.value == pytest.approx(admitted["relevant"].sum() / test["relevant"].sum())
    assert cal.reference.tau == 0.82
    d = cal.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["tau"] == round(cal.tau, 4) and d["session"]["goals_per_session"] == 10
    again = th.calibrate(tfidf_scored, cal.target_precision, n_boot=200, seed=4)
    assert again.to_dict() == d                                      # seeded end to end


def test_calibrate_unreachable_target(tfidf_scored):
    cal = th.calibrate(tfidf_scored, 0.99, n_boot=50)
    assert cal.tau is None and cal.test is None and cal.unreachable == 1.0
    assert cal.ceiling < 0.99 and "unreachable" in th.describe(cal)
    with pytest.raises(ValueError, match="target precision"):
        th.calibrate(tfidf_scored, 1.5)


def test_category_errors_and_examples(tfidf_scored):
    tau = 0.2
    cats = th.category_errors(tfidf_scored, tau, n_boot=100)
    assert list(cats["category"]) == list(th.CATEGORIES)
    test = tfidf_scored.half("test")
    para = test[test["category"] == "paraphrase"]
    row = cats.set_index("category").loc["paraphrase"]
    assert row["error"] == "relevant kept out" and row["errors"] == (para["score"] < tau).sum()
    assert row["rate_lo"] <= row["rate"] <= row["rate_hi"]
    ex = th.examples(tfidf_scored, tau, n=3)
    let_in = ex[ex["outcome"] == "let in, irrelevant"]
    assert (let_in["score"] >= tau).all() and len(let_in) == 3
    assert (ex.loc[ex["outcome"] == "kept out, relevant", "score"] < tau).all()


def test_study_finding_is_written_from_the_numbers(corpus):
    study = th.run_study(corpus, [th.TfidfScorer()], n_boot=100)
    sc, cal = study.scored["tfidf"], study.calibrations["tfidf"]
    assert study.target_precision == (th.strictest_target(sc) or min(th.TARGETS))
    assert set(study.curves["split"]) == set(th.SPLITS) and len(study.summary()) == 1
    assert set(study.targets["target"]) >= set(th.TARGETS)
    text = study.finding()
    assert f"{cal.ceiling:.2f}" in text and f"{sc.pairs['score'].max():.3f}" in text
    assert cal.reference.recall.fmt() in text

    reachable = th.run_study(corpus, [th.TfidfScorer()], target_precision=0.3, n_boot=100)
    cal = reachable.calibrations["tfidf"]
    text = reachable.finding()
    assert cal.tau is not None and f"τ = {cal.tau:.3f}" in text
    assert cal.test.false_tokens.fmt(".0f") in text and cal.test.recall.fmt() in text
    assert f"{abs(0.82 - cal.tau):.3f} above" in text
    assert not reachable.category_table().empty


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


def test_default_embedder_study_end_to_end(default_scorer, corpus):
    sc = th.score(corpus, default_scorer)
    med = sc.pairs.groupby("category")["score"].median()
    assert med["cross_domain"] < med["paraphrase"]
    target = th.strictest_target(sc)
    assert target is not None
    cal = th.calibrate(sc, target, n_boot=200)
    assert cal.tau_ci.lo <= cal.tau <= cal.tau_ci.hi
    assert cal.test.precision.lo <= cal.test.precision.value <= cal.test.precision.hi


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_calibrate_tau_json(capsys):
    rc = main(["calibrate-tau", str(CORPUS / "pairs.csv"), "--lessons", str(CORPUS / "lessons.csv"),
               "--embedder", "tfidf", "--target-precision", "0.3", "--n-boot", "100", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["scorer"] == "tfidf" and out["target_precision"] == 0.3
    assert out["tau"] is not None and out["token_source"] == "body"
    assert set(out["test"]) >= {"precision", "recall", "f1", "false_tokens", "missed", "injected"}
    assert set(out["test"]["precision"]) == {"value", "lo", "hi"}


def test_cli_calibrate_tau_text_unreachable_and_errors(capsys, tmp_path):
    rc = main(["calibrate-tau", str(CORPUS / "pairs.csv"), "--embedder", "tfidf", "--target-precision", "0.99",
               "--n-boot", "50"])
    captured = capsys.readouterr()
    assert rc == 1 and "unreachable" in captured.err and "scorer     tfidf" in captured.out
    bad = _write(tmp_path / "bad.csv", "goal,trigger,relevant\nx,y,perhaps\n")
    assert main(["calibrate-tau", str(bad), "--embedder", "tfidf"]) == 1
    assert f"{bad}:2: relevant" in capsys.readouterr().err
    assert main(["calibrate-tau", str(CORPUS / "pairs.csv"), "--embedder", str(tmp_path / "nope")]) == 1
    assert "unavailable" in capsys.readouterr().err
