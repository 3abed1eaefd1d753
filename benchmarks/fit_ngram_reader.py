"""Fit and judge the n-gram + e5 reader candidate v3 (ngram_reader.py) on development data only.

    python benchmarks/fit_ngram_reader.py            # leave-one-file-out figures per language, and the threshold
    python benchmarks/fit_ngram_reader.py --write    # ... and write ngram_reader_v3_weights.json.gz

Data: every file of datasets/injection but the frozen held-out ones (eval_injection.HELD_OUT, never opened; since
heldout12 was measured, that is heldout13 alone) and the 560 ordinary lessons as benign
(fit_scan_intent.reader_rows). Model: scikit-learn's CountVectorizer (char_wb 3-6, binary, min_df 2) scaled to unit
length, next to e5's unit embedding and the scan's word families (`injection.intent_families`, each 0.5 where
present), into a class-balanced LogisticRegression (C 10), the hand-written `benign_hard` texts weighted 3.
Validation: leave one file out (a file's scenarios, in every language, are never both fitted on and judged); the
vectorizer is fitted inside each fold. The threshold leaves HARD_FP of the hand-written benign texts, scored out of
fold, at or above it: the written one over every file; in the per-file figures, over every other file (the judged
file's own scores never set its threshold). Figures are the candidate scan's (ngram_reader.scan_many(version=3): the
product's scan less every `instruction-override` finding, plus the model), per language: attacks flagged, benign
flagged; English meets the bar only with its exfiltration at 0.8 too. heldout9-12 are the fairest of these files
(independent authors; the lexicon was never tuned on them).

v1 (ngram_reader_weights.json.gz) and v2 (ngram_reader_v2_weights.json.gz) were written by this script at 2d4445b
and 254d16b, before heldout11 and heldout12 were opened: char_wb 2-5 and e5 alone, C 10, no weighting, without
heldout11 (v1) or heldout12 (v2); v1 keeps the product's canonical English phrase findings.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict

import eval_injection
import ngram_reader
import numpy as np
import scipy.sparse as sp
from fit_scan_intent import reader_rows
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from overlay_kit import injection
from overlay_kit.textguard import views

NGRAM_RANGE = (2, 5)  # v1's and v2's
NGRAM_RANGE_V3 = (3, 6)
MIN_DF = 2
C = 10.0
HARD_FP = 0.03
HARD_WEIGHT = 3.0  # the sample weight of a hand-written `benign_hard` text
FAMILY = 0.5  # a word family's feature value where present
LANGS = ("en", "de", "fr", "es", "pt", "it", "nl", "pl", "ru", "zh-Hans", "ja", "ko")
FAIR = tuple(f"heldout{i}_multilingual.jsonl" for i in (9, 10, 11, 12))


def char_pipeline(vocabulary=None, ngram_range=NGRAM_RANGE):
    """The n-gram features as scikit-learn computes them (the oracle of `ngram_reader.char_scores`)."""
    return make_pipeline(
        CountVectorizer(analyzer="char_wb", ngram_range=ngram_range, binary=True, min_df=MIN_DF, vocabulary=vocabulary),
        Normalizer(),
    )


def classes() -> dict[tuple[str, str], str]:
    """(file, text) -> class, for every file but the held-out ones (never opened)."""
    out: dict[tuple[str, str], str] = {}
    for path in eval_injection.files():
        for line in path.open(encoding="utf-8"):
            if line.strip():
                r = json.loads(line)
                out.setdefault((path.name, r["text"]), r.get("class", ""))
    return out


def fit(texts: list[str], E: np.ndarray, F: sp.csr_matrix, y: np.ndarray, w: np.ndarray):
    """(the fitted n-gram pipeline, the logistic model) on these texts, embeddings, families and sample weights."""
    chars = char_pipeline(ngram_range=NGRAM_RANGE_V3)
    X = sp.hstack([chars.fit_transform(texts), sp.csr_matrix(E), F]).tocsr()
    return chars, LogisticRegression(C=C, class_weight="balanced", max_iter=5000).fit(X, y, sample_weight=w)


def decision(chars, lr, texts: list[str], E: np.ndarray, F: sp.csr_matrix) -> np.ndarray:
    return lr.decision_function(sp.hstack([chars.transform(texts), sp.csr_matrix(E), F]).tocsr())


def per_language(flag, y, lang, mask, exfil) -> tuple[int, list[str]]:
    """(languages meeting the bar, one `lang a/n b/m` cell per language; English's with its exfiltration)."""
    met, cells = 0, []
    for code in LANGS:
        m = mask & (lang == code)
        a, n = int((flag & m & (y == 1)).sum()), int((m & (y == 1)).sum())
        b, k = int((flag & m & (y == 0)).sum()), int((m & (y == 0)).sum())
        ok = n > 0 and a / n >= 0.8 and b / max(k, 1) <= 0.05
        cell = f"{code} {a}/{n} {b}/{k}"
        if code == "en":
            xa, xn = int((flag & m & exfil).sum()), int((m & exfil).sum())
            ok = ok and (xn == 0 or xa / xn >= 0.8)
            cell += f" (exfiltration {xa}/{xn})"
        met += ok
        cells.append(cell + " *" * ok)
    return met, cells


def main(write: bool) -> None:
    data = reader_rows()
    texts = [t for _, t, _, _ in data]
    files = np.array([f for f, _, _, _ in data])
    y = np.array([lab for _, _, lab, _ in data])
    lang = np.array([g for _, _, _, g in data])
    cls = classes()
    kind = np.array([cls.get((f, t), "lesson") for f, t, _, _ in data])
    w = np.where(kind == "benign_hard", HARD_WEIGHT, 1.0)
    E = injection.reader_embeddings(texts)
    fams = [injection.intent_families(views(t)) for t in texts]
    names = sorted(set().union(*fams))
    F = sp.csr_matrix(np.array([[FAMILY * (n in f) for n in names] for f in fams]))
    rest = np.array([bool(ngram_reader.kept(f, version=3)) for f in injection.scan_many(texts)])
    oof = np.zeros(len(data))
    for held in sorted(set(files)):
        tr, te = np.flatnonzero(files != held), np.flatnonzero(files == held)
        chars, lr = fit([texts[i] for i in tr], E[tr], F[tr], y[tr], w[tr])
        oof[te] = decision(chars, lr, [texts[i] for i in te], E[te], F[te])
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
        met, cells = per_language(flag, y, lang, mask, kind == "exfiltration")
        print(f"  {name}: {met} languages meet the bar")
        print("    " + "; ".join(cells))
    by: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for f, hit, lab in zip(files, flag, y):
        by[f][0 if lab else 2] += int(hit)
        by[f][1 if lab else 3] += 1
    for f, (a, n, b, k) in sorted(by.items()):
        print(f"    {f:<30} attacks {a}/{n}, benign {b}/{k}")
    chars, lr = fit(texts, E, F, y, w)
    vec = chars.named_steps["countvectorizer"]
    vocab = vec.get_feature_names_out().tolist()
    coef = lr.coef_[0]
    k = len(vocab) + 384
    print(f"full fit: {len(vocab)} n-grams + 384 e5 weights + {len(names)} word families")
    if write:
        out = {
            "ngram_range": list(NGRAM_RANGE_V3),
            "vocabulary": vocab,
            "char_weights": [round(float(v), 6) for v in coef[: len(vocab)]],
            "e5_weights": [round(float(v), 6) for v in coef[len(vocab) : k]],
            "family_weights": {n: round(FAMILY * float(v), 6) for n, v in zip(names, coef[k:])},
            "bias": round(float(lr.intercept_[0]) - threshold, 6),
        }
        with gzip.GzipFile(ngram_reader.WEIGHTS_V3, "wb", mtime=0) as f:
            f.write(json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        print(f"wrote {ngram_reader.WEIGHTS_V3}")


if __name__ == "__main__":
    main("--write" in sys.argv[1:])
