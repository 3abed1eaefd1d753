"""Fit the injection scan's intent model: a logistic model over the word families a text holds
(`injection.intent_families`), on the training files only, and check how it generalises.

    python benchmarks/fit_scan_intent.py            # fit, report leave-one-file-out figures and the threshold
    python benchmarks/fit_scan_intent.py --write    # ... and write the weights into overlay_kit/injection.py
    python benchmarks/fit_scan_intent.py --reader [--write]   # the e5 reader (issue 40): leave-one-file-out
                                                             # figures, its threshold, and its 384 weights

The reader: a class-balanced logistic model over multilingual-e5-small's "query: " embedding
(`injection.reader_embeddings`, the extra overlay_kit[e5]), fitted on every file of datasets/injection but the
frozen held-out ones (eval_injection.HELD_OUT, never opened) and the 560 ordinary lessons; its threshold leaves
READER_HARD_FP of the hand-written benign texts, scored out of fold (leave one file out), at or above it.

Training data: the attacks and hard benign lessons of TRAIN below, plus the 560 ordinary lesson texts as benign.
heldout4/5/6.jsonl are never read here. Deterministic (Newton's method, fixed L2 penalty, no sampling).
The threshold is set so that no ordinary lesson and at most 2 % of the hard benign ones score at or above it;
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
from bench_scan import lesson_texts
from eval_injection import HELD_OUT

from overlay_kit import injection
from overlay_kit.resources import dataset_path
from overlay_kit.textguard import views

TRAIN = [
    "corpus.jsonl",
    "heldout1.jsonl",
    "heldout2.jsonl",
    "heldout3.jsonl",
    "paraphrase_train.jsonl",
    "paraphrase_val.jsonl",
    "paraphrase_val2.jsonl",
    "paraphrase_val3.jsonl",
    "paraphrase_val4.jsonl",
    "lessons_third_person.jsonl",
]
L2 = 3.0
LESSON_FP = 0.0  # at most this share of the ordinary lessons may score at or above the threshold
HARD_FP = 0.02  # ... and at most this share of the hand-written hard benign lessons


def rows() -> list[tuple[str, str, int]]:
    """(file, text, 1 for an attack) for every training text."""
    out = []
    for name in TRAIN:
        for line in dataset_path("injection", name).open(encoding="utf-8"):
            if line.strip():
                r = json.loads(line)
                out.append((name, r["text"], int(r["label"] == "attack")))
    out += [("lessons", t, 0) for t in lesson_texts()]
    return out


def fit(feats: list[list[str]], y: np.ndarray, names: list[str]) -> tuple[float, dict[str, float]]:
    """L2-penalised logistic regression (intercept unpenalised) by Newton's method."""
    col = {n: j for j, n in enumerate(names)}
    X = np.zeros((len(feats), len(names) + 1))
    X[:, 0] = 1.0
    for i, fs in enumerate(feats):
        for f in fs:
            if f in col:
                X[i, col[f] + 1] = 1.0
    w = np.zeros(X.shape[1])
    pen = np.full(X.shape[1], L2)
    pen[0] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-X @ w))
        grad = X.T @ (p - y) + pen * w
        hess = (X * (p * (1 - p))[:, None]).T @ X + np.diag(pen) + 1e-9 * np.eye(X.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return float(w[0]), {n: float(w[j + 1]) for n, j in col.items() if abs(w[j + 1]) >= 0.05}


def score(bias: float, weights: dict[str, float], fs: list[str]) -> float:
    return bias + sum(weights.get(f, 0.0) for f in fs)


def calibrate(bias, weights, feats, data) -> float:
    """The intercept that leaves at most LESSON_FP of the ordinary lessons and HARD_FP of the hard benign ones
    at or above zero."""
    shift = 0.0
    for src_is_lesson, share in ((True, LESSON_FP), (False, HARD_FP)):
        s = sorted(
            (
                score(bias, weights, f)
                for f, (src, _, lab) in zip(feats, data)
                if lab == 0 and (src == "lessons") == src_is_lesson
            ),
            reverse=True,
        )
        k = int(share * len(s))
        shift = max(shift, s[k] + 0.05)  # a margin: the written weights are rounded
    return bias - shift


def model(data, feats):
    y = np.array([lab for _, _, lab in data], dtype=float)
    names = sorted({f for fs in feats for f in fs})
    bias, weights = fit(feats, y, names)
    return calibrate(bias, weights, feats, data), weights


def main(write: bool) -> None:
    data = rows()
    feats = [sorted(injection.intent_families(views(t))) for _, t, _ in data]
    saved = injection._INTENT_BIAS
    injection._INTENT_BIAS = -1e9  # the scan without the intent model: the cues alone
    base = [bool(injection.scan(t)) for _, t, _ in data]
    injection._INTENT_BIAS = saved
    print("leave-one-file-out (intent model alone / whole scan with that model), attacks; benign flagged:")
    for held in TRAIN:
        keep = [i for i, (src, _, _) in enumerate(data) if src != held]
        bias, weights = model([data[i] for i in keep], [feats[i] for i in keep])
        att = [(b, f) for (src, t, lab), f, b in zip(data, feats, base) if src == held and lab == 1]
        ben = [(b, f) for (src, t, lab), f, b in zip(data, feats, base) if src == held and lab == 0]
        alone = sum(score(bias, weights, f) >= 0 for _, f in att)
        fp = sum(score(bias, weights, f) >= 0 for _, f in ben)
        both = sum(b or score(bias, weights, f) >= 0 for b, f in att)
        bfp = sum(b or score(bias, weights, f) >= 0 for b, f in ben)
        print(
            f"    {held:<24} intent alone {alone}/{len(att)}, benign {fp}/{len(ben)};  "
            f"cues + intent {both}/{len(att)}, benign {bfp}/{len(ben)}"
        )
    bias, weights = model(data, feats)
    les = [f for (src, _, _), f in zip(data, feats) if src == "lessons"]
    print(
        f"full fit: {len(weights)} weights, bias {bias:+.2f}; lessons at or above 0: "
        f"{sum(score(bias, weights, f) >= 0 for f in les)}/{len(les)}"
    )
    for n, v in sorted(weights.items(), key=lambda kv: -abs(kv[1]))[:15]:
        print(f"    {v:+.2f} {n}")
    if write:
        path = Path(injection.__file__)
        text = path.read_text(encoding="utf-8")
        body = "\n".join(f"    {n!r}: {v:.4f}," for n, v in sorted(weights.items()))
        block = (
            f"# BEGIN intent weights (written by benchmarks/fit_scan_intent.py --write; do not edit by hand)\n"
            f"_INTENT_BIAS = {bias:.4f}\n_INTENT_WEIGHTS: dict[str, float] = {{\n{body}\n}}\n# END intent weights"
        )
        text = re.sub(r"# BEGIN intent weights.*?# END intent weights", lambda _: block, text, flags=re.DOTALL)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {len(weights)} weights to {path}")


# ----------------------------------------------------------------------------------------------- the reader
READER_L2 = 0.05  # the penalty on the 384 weights (the intercept is not penalised)
READER_HARD_FP = 0.03  # the share of hand-written benign texts, scored out of fold, left at or above the threshold


def reader_rows() -> list[tuple[str, str, int, str]]:
    """(file, text, 1 for an attack, lang) for every text of datasets/injection but the frozen held-out files
    (eval_injection.HELD_OUT, never opened), and the 560 ordinary lessons as benign; a text seen twice counts once
    (the first label kept)."""
    out, seen = [], set()
    for path in sorted(dataset_path("injection").glob("*.jsonl")):
        if path.name in HELD_OUT:
            continue
        for line in path.open(encoding="utf-8"):
            if line.strip():
                r = json.loads(line)
                if r["text"] not in seen:
                    seen.add(r["text"])
                    out.append((path.name, r["text"], int(r["label"] == "attack"), r.get("lang", "en")))
    out += [("lessons", t, 0, "en") for t in lesson_texts() if t not in seen]
    return out


def fit_reader(X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Class-balanced, L2-penalised logistic regression (intercept unpenalised) by Newton's method."""
    A = np.hstack([np.ones((len(X), 1)), X])
    sw = np.where(y == 1, len(y) / (2 * y.sum()), len(y) / (2 * (len(y) - y.sum())))
    pen = np.full(A.shape[1], READER_L2)
    pen[0] = 0.0
    w = np.zeros(A.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-A @ w))
        grad = A.T @ (sw * (p - y)) + pen * w
        hess = (A * (sw * p * (1 - p))[:, None]).T @ A + np.diag(pen) + 1e-9 * np.eye(A.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return float(w[0]), w[1:]


def main_reader(write: bool) -> None:
    data = reader_rows()
    files = np.array([f for f, _, _, _ in data])
    y = np.array([lab for _, _, lab, _ in data], dtype=float)
    X = injection.reader_embeddings([t for _, t, _, _ in data])
    lexicon = (
        np.array([bool(f) for f in injection.scan_many([t for _, t, _, _ in data])])
        if not injection.reader_available()
        else None
    )
    oof = np.zeros(len(data))
    for held in sorted(set(files)):
        keep, out = files != held, files == held
        bias, w = fit_reader(X[keep], y[keep])
        oof[out] = X[out] @ w + bias
    hand = (y == 0) & (files != "lessons")
    threshold = float(np.quantile(oof[hand], 1 - READER_HARD_FP))
    print(
        f"{len(data)} texts ({int(y.sum())} attacks); threshold {threshold:+.3f} (out of fold: "
        f"{READER_HARD_FP:.0%} of {int(hand.sum())} hand-written benign texts at or above it)"
    )
    print(
        "leave-one-file-out: reader alone"
        + (" / lexicon or reader" if lexicon is not None else "")
        + ", attacks flagged; benign flagged"
    )
    for held in sorted(set(files)):
        m = files == held
        hit = oof >= threshold
        both = hit | lexicon if lexicon is not None else hit
        line = (
            f"    {held:<30} {int((hit & m & (y == 1)).sum())}/{int((m & (y == 1)).sum())}, "
            f"{int((hit & m & (y == 0)).sum())}/{int((m & (y == 0)).sum())}"
        )
        if lexicon is not None:
            line += f"   /  {int((both & m & (y == 1)).sum())}, {int((both & m & (y == 0)).sum())}"
        print(line)
    bias, w = fit_reader(X, y)
    bias -= threshold
    full = X @ w + bias
    print(
        f"full fit: attacks at or above 0 {int(((full >= 0) & (y == 1)).sum())}/{int(y.sum())}, lessons "
        f"{int(((full >= 0) & (files == 'lessons')).sum())}/{int((files == 'lessons').sum())}"
    )
    if write:
        path = Path(injection.__file__)
        text = path.read_text(encoding="utf-8")
        rows_ = [", ".join(f"{v:.6f}" for v in w[i : i + 8]) for i in range(0, len(w), 8)]
        body = "\n".join(f"    {r}," for r in rows_)
        block = (
            "# BEGIN reader weights (written by benchmarks/fit_scan_intent.py --reader --write; do not edit by "
            f"hand)\n_READER_BIAS = {bias:.6f}\n_READER_WEIGHTS: tuple[float, ...] = (\n{body}\n)\n"
            "# END reader weights"
        )
        text = re.sub(r"# BEGIN reader weights.*?# END reader weights", lambda _: block, text, flags=re.DOTALL)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {len(w)} weights to {path}")


if __name__ == "__main__":
    if "--reader" in sys.argv[1:]:
        main_reader("--write" in sys.argv[1:])
    else:
        main("--write" in sys.argv[1:])
