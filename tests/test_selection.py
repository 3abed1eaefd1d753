"""Tier-3 selection (`overlay_kit.selection`) and its place in resolve: with a goal, an agent holding more than
`SHIPPED.resident_max` resident tier-3 lessons gets the `select_k` the goal scores best; without a goal, or with
few lessons, every lesson stays."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from resolve_fixtures import learn_active, no_network, triage_inbox  # noqa: F401

from overlay_kit import defaults
from overlay_kit import selection as sel
from overlay_kit.defaults import SHIPPED
from overlay_kit.resolve import resolve
from overlay_kit.retrieval import load_embedder
from overlay_kit.store import Store

pytestmark = pytest.mark.usefixtures("no_network")
TOPICS = [
    "invoice",
    "recruiter",
    "landlord",
    "dentist",
    "newsletter",
    "conference",
    "visa",
    "payroll",
    "garden",
    "printer",
    "insurance",
    "parking",
    "vaccine",
    "mortgage",
    "wedding",
    "laptop",
    "podcast",
    "marathon",
    "passport",
    "piano",
    "bakery",
    "museum",
    "tennis",
    "solar",
    "kayak",
]


@pytest.fixture(scope="module")
def emb():
    return load_embedder()


def _store(skill, n):
    store = Store.open(":memory:")
    ids = {
        t: learn_active(
            store,
            skill,
            "preference",
            {
                "body": f"For anything about the {t}, reply within a day and cc Sam ({t.upper()}).",
                "trigger": f"an email about the {t}",
            },
            "drafting-replies",
        ).id
        for t in TOPICS[:n]
    }
    return store, ids


def test_a_goal_selects_the_best_k_when_more_lessons_than_stay_resident(emb, monkeypatch):
    monkeypatch.setattr(defaults, "SHIPPED", replace(SHIPPED, select_k=3))  # a small k: selection is visible
    skill = triage_inbox()
    store, ids = _store(skill, SHIPPED.resident_max + 5)
    eff = resolve(skill, store, goal="answer the email about the dentist", embedder=emb)
    applied = {d.id for d in eff.applied if d.tier == 3}
    assert ids["dentist"] in applied and "(DENTIST)" in eff.text
    assert len(applied) == 3 and eff.notes_of("not_selected")[0].detail.startswith(f"{len(ids) - 3} of {len(ids)} ")
    everything = resolve(skill, store, embedder=emb)  # no goal: nothing to select by, every lesson stays
    assert {d.id for d in everything.applied if d.tier == 3} == set(ids.values())


def test_up_to_resident_max_lessons_all_stay_with_a_goal(emb):
    skill = triage_inbox()
    store, ids = _store(skill, SHIPPED.resident_max)
    eff = resolve(skill, store, goal="answer the email about the dentist", embedder=emb)
    assert {d.id for d in eff.applied if d.tier == 3} == set(ids.values()) and not eff.notes_of("not_selected")


def test_no_embedder_keeps_every_lesson_and_says_so():
    skill = triage_inbox()
    store, ids = _store(skill, SHIPPED.resident_max + 1)
    eff = resolve(skill, store, goal="answer the email about the dentist", embedder=False)
    assert {d.id for d in eff.applied if d.tier == 3} == set(ids.values())
    assert any("selection off" in n.detail for n in eff.notes_of("retrieval_dark"))


def test_the_rule_admits_the_top_k_within_floor_and_margin_best_first():
    scores = sel.Scores(np.array([[0.2, 0.9, 0.5, 0.85], [0.1, 0.1, 0.1, 0.1]]), np.zeros((2, 4)), np.zeros((2, 4)))
    assert sel.SelectionRule(floor=0.4, margin=1.0, k=2).admit(scores) == [[(1, 0.9), (3, 0.85)], []]
    assert sel.SelectionRule(floor=0.0, margin=0.1, k=5).admit(scores)[0] == [(1, 0.9), (3, 0.85)]
    assert sel.SelectionRule(floor=0.0, margin=1.0, k=5).admit(scores)[1] == [
        (0, 0.1),
        (1, 0.1),
        (2, 0.1),
        (3, 0.1),
    ]  # ties
    with pytest.raises(ValueError):
        sel.SelectionRule(k=0)


def test_evidence_triggers_bring_a_lesson_back_for_the_goal_it_was_restated_at(emb):
    lessons = [
        sel.Candidate("a", ("an email about the invoice",), "Pay within 30 days."),
        sel.Candidate("b", ("an email about the recruiter",), "Decline politely."),
    ]
    goal = "the headhunter again"
    rule = sel.SelectionRule(floor=-1.0, k=1)
    restated = [lessons[0], sel.Candidate("b", (*lessons[1].triggers, goal), lessons[1].text)]
    assert sel.select([goal], restated, emb, rule)[0][0][0] == "b"
    assert sel.select([goal], restated, emb, rule)[0][0][1] == pytest.approx(1.0, abs=1e-5)


def test_lexical_scores_match_a_name_the_embedder_has_no_sense_of(emb):
    lessons = [
        sel.Candidate("a", (), "Anything from Zorblatt goes to the legal folder."),
        sel.Candidate("b", (), "Anything from the school goes to the family folder."),
    ]
    s = sel.score(["mail from zorblatt"], lessons, emb, sel.SelectionRule(lexical=1.0))
    assert s.lexical[0, 0] > 0 and s.lexical[0, 1] == 0


def test_resolve_selects_by_the_evidence_triggers_the_store_keeps(emb, monkeypatch):
    monkeypatch.setattr(defaults, "SHIPPED", replace(SHIPPED, select_k=1))
    skill = triage_inbox()
    store, ids = _store(skill, SHIPPED.resident_max + 5)
    goal = "the recital on Saturday, reply to Mrs Ode"
    before = {d.id for d in resolve(skill, store, goal=goal, embedder=emb).applied if d.tier == 3}
    store.add_triggers([(ids["piano"], goal, "restated")])
    after = {d.id for d in resolve(skill, store, goal=goal, embedder=emb).applied if d.tier == 3}
    assert before != {ids["piano"]} and after == {ids["piano"]}


def test_tfidf_is_scikit_learns_sublinear_tfidf_cosine():
    """The oracle: `TfidfVectorizer(sublinear_tf=True)` with the same analyzer, over lessons and goals of the corpus."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from overlay_kit.studies import selection as study

    corpus = study.load("dev")
    docs = [" ".join((x.taught, x.body)) for x in corpus.lessons[:300]]
    goals = [g for x in corpus.lessons[:60] for g in x.goals] + ["", "zzz unknown words only"]
    vectorizer = TfidfVectorizer(analyzer=sel._words, sublinear_tf=True).fit(docs)
    expected = (vectorizer.transform(goals) @ vectorizer.transform(docs).T).toarray()
    assert np.allclose(sel._tfidf(goals, docs), expected, atol=1e-6)


def test_centroid_pooling_scores_the_mean_direction_of_a_lessons_evidence(emb):
    lesson = sel.Candidate("a", ("email from the landlord", "the radiator is broken again"), "Cc Sam on repairs.")
    goal = ["the heating in the flat stopped working"]
    got = sel.score(goal, [lesson], emb, sel.SelectionRule(pool="centroid")).dense[0, 0]
    units = [v / np.linalg.norm(v) for v in emb.encode([*lesson.triggers, lesson.text])]
    expected = np.dot(emb.encode(goal)[0], np.mean(units, axis=0)) / (
        np.linalg.norm(emb.encode(goal)[0]) * np.linalg.norm(np.mean(units, axis=0))
    )
    assert got == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ValueError):
        sel.SelectionRule(pool="mean")


def _score_unkept(goals, lessons, embedder, rule):
    """The oracle: the scores as computed before the lesson side was kept — every side from its vectors, the
    cosines in one `common.cosines` call, "max" pooled by `np.maximum.at`."""
    from overlay_kit.common import cosines

    q = np.asarray(embedder.encode(goals), dtype=np.float64)
    texts = [t for x in lessons for t in (*x.triggers, x.text)]
    owner = np.repeat(np.arange(len(lessons)), [len(x.triggers) + 1 for x in lessons])
    vectors = np.asarray(embedder.encode(texts), dtype=np.float64)
    if rule.pool == "centroid":
        units = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        dense = cosines(q, np.stack([units[owner == j].sum(axis=0) for j in range(len(lessons))]))
    else:
        dense = np.full((len(goals), len(lessons)), -1.0)
        np.maximum.at(dense.T, owner, cosines(q, vectors).T)
    return dense


@pytest.mark.parametrize("pool", ["centroid", "max"])
def test_the_kept_lesson_side_scores_exactly_as_one_made_afresh(emb, pool):
    """A session's goals score the same lessons: their side is kept (`selection._SIDES`). Kept or made afresh, and
    against the scores as computed before it was kept, every score is the same to the bit; a lesson whose evidence
    grows is scored from its new side."""
    rule = sel.SelectionRule(lexical=1.0, pool=pool)
    lessons = [
        sel.Candidate(t, (f"an email about the {t}", f"the {t} again"), f"Reply about the {t} within a day.")
        for t in TOPICS
    ]
    goals = ["the printer jammed", "book the kayak trip", "a question about my mortgage rate"]
    sel._SIDES.clear()
    sel._fitted.cache_clear()
    fresh = sel.score(goals, lessons, emb, rule)
    kept = sel.score(goals, lessons, emb, rule)
    assert any(k[1] == pool for k in sel._SIDES)
    for a, b in ((fresh.dense, kept.dense), (fresh.lexical, kept.lexical)):
        assert np.array_equal(a, b)
    assert np.array_equal(fresh.dense, _score_unkept(goals, lessons, emb, rule))
    grown = [replace(lessons[0], triggers=(*lessons[0].triggers, "the printer jammed")), *lessons[1:]]
    assert np.array_equal(sel.score(goals, grown, emb, rule).dense, _score_unkept(goals, grown, emb, rule))
    assert sel.score(goals, grown, emb, rule).dense[0, 0] != kept.dense[0, 0]


def test_the_kept_sides_serve_threads_that_score_many_lesson_sets(emb):
    """More lesson sets than are kept, scored from eight threads at once: every score is its set's own (eviction
    under contention never raises nor mixes sides up)."""
    from concurrent.futures import ThreadPoolExecutor

    rule = sel.SelectionRule(lexical=1.0, pool="centroid")
    sets = [
        [sel.Candidate(f"{k}-{t}", (f"an email about the {t}",), f"Reply about the {t}, set {k}.") for t in TOPICS]
        for k in range(3 * sel._SIDES_MAX)
    ]
    goal = ["the printer jammed"]
    expected = [_score_unkept(goal, s, emb, rule) for s in sets]

    def same(k: int) -> bool:
        return np.array_equal(sel.score(goal, sets[k % len(sets)], emb, rule).dense, expected[k % len(sets)])

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(same, range(10 * len(sets))))
