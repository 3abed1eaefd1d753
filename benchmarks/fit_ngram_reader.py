"""Fit and judge the n-gram + e5 reader candidate v2 (ngram_reader.py) on development data only.

    python benchmarks/fit_ngram_reader.py            # leave-one-file-out figures per language, and the threshold
    python benchmarks/fit_ngram_reader.py --write    # ... and write ngram_reader_v2_weights.json.gz

Data: every file of datasets/injection but the frozen held-out ones (eval_injection.HELD_OUT, never opened; since
heldout11 was measured, that is heldout12 alone) and the 560 ordinary lessons as benign
(fit_scan_intent.reader_rows). Model: scikit-learn's CountVectorizer (char_wb 2-5, binary, min_df 2) scaled to unit
length, next to e5's unit embedding, into a class-balanced LogisticRegression (C 10). Validation: leave one file
out (a file's scenarios, in every language, are never both fitted on and judged); the vectorizer is fitted inside
each fold. The threshold leaves HARD_FP of the hand-written benign texts, scored out of fold, at or above it: the
written one over every file; in the per-file figures, over every other file (the judged file's own scores never
set its threshold). Figures are the candidate scan's (ngram_reader.scan_many(v2=True): the product's scan less
every `instruction-override` finding, plus the model), per language: attacks flagged, benign flagged. heldout9,
heldout10 and heldout11 are the fairest of these files (independent authors; the lexicon was never tuned on them).

v1 (ngram_reader_weights.json.gz) was written by this script at 2d4445b, before heldout11 was opened: the same
model, fitted without heldout11, keeping the product's canonical English phrase findings.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict

import ngram_reader
import numpy as np
import scipy.sparse as sp
from fit_scan_intent import reader_rows
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from overlay_kit import injection

NGRAM_RANGE = (2, 5)
MIN_DF = 2
C = 10.0
HARD_FP = 0.03
LANGS = ("en", "de", "fr", "es", "pt", "it", "nl", "pl", "ru", "zh-Hans", "ja", "ko")
FAIR = ("heldout9_multilingual.jsonl", "heldout10_multilingual.jsonl", "heldout11_multilingual.jsonl")


def char_pipeline(vocabulary=None):
    """The n-gram features as scikit-learn computes them (the oracle of `ngram_reader.char_scores`)."""
    return make_pipeline(
        CountVectorizer(analyzer="char_wb", ngram_range=NGRAM_RANGE, binary=True, min_df=MIN_DF, vocabulary=vocabulary),
        Normalizer(),
    )


def fit(texts: list[str], E: np.ndarray, y: np.ndarray):
    """(the fitted n-gram pipeline, the logistic model) on these texts and embeddings."""
    chars = char_pipeline()
    X = sp.hstack([chars.fit_transform(texts), sp.csr_matrix(E)]).tocsr()
    return chars, LogisticRegression(C=C, class_weight="balanced", max_iter=5000).fit(X, y)


def decision(chars, lr, texts: list[str], E: np.ndarray) -> np.ndarray:
    return lr.decision_function(sp.hstack([chars.transform(texts), sp.csr_matrix(E)]).tocsr())


def per_language(flag: np.ndarray, y: np.ndarray, lang: np.ndarray, mask: np.ndarray) -> tuple[int, list[str]]:
    """(languages meeting the bar, one `lang a/n b/m` cell per language)."""
    met, cells = 0, []
    for code in LANGS:
        m = mask & (lang == code)
        a, n = int((flag & m & (y == 1)).sum()), int((m & (y == 1)).sum())
        b, k = int((flag & m & (y == 0)).sum()), int((m & (y == 0)).sum())
        met += n > 0 and a / n >= 0.8 and b / max(k, 1) <= 0.05
        cells.append(f"{code} {a}/{n} {b}/{k}")
    return met, cells


def main(write: bool) -> None:
    data = reader_rows()
    texts = [t for _, t, _, _ in data]
    files = np.array([f for f, _, _, _ in data])
    y = np.array([lab for _, _, lab, _ in data])
    lang = np.array([g for _, _, _, g in data])
    E = injection.reader_embeddings(texts)
    rest = np.array([bool(ngram_reader.kept(f, v2=True)) for f in injection.scan_many(texts)])
    oof = np.zeros(len(data))
    for held in sorted(set(files)):
        tr, te = np.flatnonzero(files != held), np.flatnonzero(files == held)
        chars, lr = fit([texts[i] for i in tr], E[tr], y[tr])
        oof[te] = decision(chars, lr, [texts[i] for i in te], E[te])
    hand = (y == 0) & (files != "lessons")
    threshold = float(np.quantile(oof[hand], 1 - HARD_FP))
    own = np.array([np.quantile(oof[hand & (files != f)], 1 - HARD_FP) for f in sorted(set(files))])
    flag = rest | (oof >= own[np.searchsorted(sorted(set(files)), files)])
    print(
        f"{len(data)} texts ({int(y.sum())} attacks); threshold {threshold:+.3f} (out of fold: {HARD_FP:.0%} of "
        f"{int(hand.sum())} hand-written benign texts at or above it); ordinary lessons flagged "
        f"{int((flag & (files == 'lessons')).sum())}/{int((files == 'lessons').sum())}"
    )
    print("leave-one-file-out, the candidate scan: per language attacks flagged, benign flagged")
    for name, mask in [("every file", np.ones(len(y), bool))] + [(f, files == f) for f in FAIR]:
        met, cells = per_language(flag, y, lang, mask)
        print(f"  {name}: {met} languages meet the bar")
        print("    " + "; ".join(cells))
    by: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for f, hit, lab in zip(files, flag, y):
        by[f][0 if lab else 2] += int(hit)
        by[f][1 if lab else 3] += 1
    for f, (a, n, b, k) in sorted(by.items()):
        print(f"    {f:<30} attacks {a}/{n}, benign {b}/{k}")
    chars, lr = fit(texts, E, y)
    vec = chars.named_steps["countvectorizer"]
    vocab = vec.get_feature_names_out().tolist()
    coef = lr.coef_[0]
    print(f"full fit: {len(vocab)} n-grams + 384 e5 weights")
    if write:
        out = {
            "ngram_range": list(NGRAM_RANGE),
            "vocabulary": vocab,
            "char_weights": [round(float(v), 6) for v in coef[: len(vocab)]],
            "e5_weights": [round(float(v), 6) for v in coef[len(vocab) :]],
            "bias": round(float(lr.intercept_[0]) - threshold, 6),
        }
        with gzip.GzipFile(ngram_reader.WEIGHTS_V2, "wb", mtime=0) as f:
            f.write(json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        print(f"wrote {ngram_reader.WEIGHTS_V2}")


if __name__ == "__main__":
    main("--write" in sys.argv[1:])
