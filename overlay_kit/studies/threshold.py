"""τ calibration: which retrieval threshold a tier-3 lesson gate should use, measured per scorer.

A tier-3 prose lesson enters the prompt only when the turn's goal matches its trigger at cosine ≥ τ
(`retrieval.TriggerIndex`). `retrieval` *serves* that gate with whatever τ it is given; this module is the
*evaluation* side, kept apart because it is a different concept with different inputs: labelled
(goal, trigger, relevant) pairs, a scorer, bootstrap resampling and a session cost model. τ is a property
of the embedder, so every figure here is per scorer, and the same search path as at run time is used
(the goals are searched against a `TriggerIndex`, FAISS `IndexFlatIP` over L2-normalised vectors).

Pipeline: `load_pairs` → `score(pairs, get_scorer(name))` → `calibrate` (pick τ on the calibration half
for a target precision, check it on the held-out test half) → `run_study` (several scorers side by side,
curves, the per-category error table, a finding written from the numbers).

Definitions used throughout:
- a pair is *admitted* at τ when its score ≥ τ; precision, recall and F1 are over the labelled pairs;
- τ for a target precision P is the lowest score τ whose precision is ≥ P, i.e. maximal recall subject to
  precision ≥ P (recall only falls as τ rises);
- session model (`SessionModel`): a session is K goals drawn uniformly from one half's goals; each goal is
  searched against the whole lesson store (every distinct trigger) and every lesson at cosine ≥ τ is
  injected whole. Closed world: a (goal, lesson) pair not labelled relevant counts as irrelevant. False
  injection tokens = body tokens (bundled Llama tokenizer) of admitted irrelevant lessons; missed lessons
  = relevant lessons below τ. Both are expectations per session (K × the mean per goal);
- every interval is a seeded percentile bootstrap (95 %): pairs resampled within (category, relevant)
  strata, goals within has-a-relevant-lesson strata.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .. import retrieval
from ..budget import count_many
from ..resources import dataset_path

__all__ = [
    "CATEGORIES",
    "CORPUS_DIR",
    "SPLITS",
    "TFIDF",
    "Calibration",
    "EmbedderScorer",
    "Interval",
    "Operating",
    "PairsError",
    "Scored",
    "Scorer",
    "SessionModel",
    "Study",
    "TfidfScorer",
    "assign_split",
    "calibrate",
    "category_errors",
    "curves",
    "describe",
    "examples",
    "get_scorer",
    "load_corpus",
    "load_pairs",
    "operating_point",
    "pick_tau",
    "precision_ceiling",
    "run_study",
    "score",
    "split_sensitivity",
    "strictest_target",
    "target_table",
]

CATEGORIES = ("paraphrase", "near_miss", "lexical_overlap", "cross_domain", "adversarial")
SPLITS = ("calibration", "test")
CORPUS_DIR = dataset_path("tau")
TFIDF = "tfidf"
REFERENCE_TAU = retrieval.DEFAULT_TAU  # 0.82, inherited from another corpus and embedder
DEFAULT_TARGET = 0.9
MIN_ADMITTED = 10  # a precision measured on fewer admitted pairs is not evidence enough to pick τ by
TARGETS = (0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4)  # the ladder `strictest_target` walks down
GRID = np.round(np.arange(0.0, 1.0001, 0.01), 2)
_TRUE = {"1", "true", "yes", "y", "relevant"}
_FALSE = {"0", "false", "no", "n", "irrelevant"}


# ------------------------------------------------------------------------------------------ pairs


class PairsError(ValueError):
    """A labelled-pairs file is malformed; names the file, the line (1-based, 0 = whole file) and field."""

    def __init__(self, path: str | Path, line: int, field: str, message: str):
        self.path, self.line, self.field, self.message = str(path), line, field, message
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {field}: {message}")


def _records(path: Path, required: Sequence[str] = ("goal", "trigger", "relevant")) -> list[tuple[int, dict]]:
    """(line, record) for each row of a CSV (with a header naming `required`) or JSONL file."""
    if not path.is_file():
        raise PairsError(path, 0, "path", "no such file")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        out = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise PairsError(path, n, "json", exc.msg) from exc
                if not isinstance(rec, dict):
                    raise PairsError(path, n, "json", "each line must be an object")
                out.append((n, rec))
        return out
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = set(required) - set(reader.fieldnames or ())
        if missing:
            raise PairsError(path, 1, "header", f"missing column(s) {sorted(missing)}")
        return [(reader.line_num, rec) for rec in reader]


def _text(path: Path, line: int, rec: dict, key: str, required: bool) -> str | None:
    value = rec.get(key)
    value = "" if value is None else str(value).strip()
    if not value and required:
        raise PairsError(path, line, key, "empty")
    return value or None


def load_pairs(path: str | Path, lessons: str | Path | None = None, seed: int = 0) -> pd.DataFrame:
    """Read labelled pairs (CSV with a header, or JSONL) into a frame ready for `score`.

    Columns: `goal`, `trigger`, `relevant` (1/0, true/false, yes/no) are required; `category`, `split`
    (calibration|test), `lesson_id` and `body` are optional. Without `split` a stratified split is made
    (`assign_split`). The body is what an admitted lesson costs in tokens: the `body` column, else the
    `lessons` file's body joined on `lesson_id` (or on `trigger`), else the trigger text itself.
    Raises `PairsError` on the first bad row; nothing is returned partially.
    """
    path = Path(path)
    rows = []
    for line, rec in _records(path):
        rel = str(rec.get("relevant", "")).strip().lower()
        if rel not in _TRUE | _FALSE:
            raise PairsError(path, line, "relevant", f"{rec.get('relevant')!r} is not 1/0, true/false or yes/no")
        split = _text(path, line, rec, "split", False)
        if split is not None and split not in SPLITS:
            raise PairsError(path, line, "split", f"{split!r} is not one of {SPLITS}")
        rows.append({"line": line, "goal": _text(path, line, rec, "goal", True),
                     "trigger": _text(path, line, rec, "trigger", True), "relevant": rel in _TRUE,
                     "category": _text(path, line, rec, "category", False) or "unspecified", "split": split,
                     "lesson_id": _text(path, line, rec, "lesson_id", False),
                     "body": _text(path, line, rec, "body", False)})
    if not rows:
        raise PairsError(path, 0, "rows", "no pairs")
    df = pd.DataFrame(rows)

    labels: dict[tuple[str, str], bool] = {}
    for r in df.itertuples():
        if labels.setdefault((r.goal, r.trigger), r.relevant) != r.relevant:
            raise PairsError(path, r.line, "relevant", "the same (goal, trigger) pair is labelled both ways")
    given = df["split"].notna()
    if given.any() and not given.all():
        raise PairsError(path, int(df.loc[~given, "line"].iloc[0]), "split", "given on some rows but not this one")
    if not given.any():
        df = assign_split(df, seed)
    for half in SPLITS:
        part = df[df["split"] == half]
        if not part["relevant"].any() or part["relevant"].all():
            raise PairsError(path, 0, "split", f"the {half} half needs both relevant and irrelevant pairs")

    source = "body"
    if lessons is not None and df["body"].isna().any():
        df = _join_bodies(df, Path(lessons))
    if df["body"].isna().any():
        source = "trigger" if df["body"].isna().all() else "body, else trigger"
        df["body"] = df["body"].fillna(df["trigger"])
    df["tokens"] = count_many(df["body"].tolist())
    df.attrs.update(source=str(path), token_source=source)
    return df


def _join_bodies(df: pd.DataFrame, lessons: Path) -> pd.DataFrame:
    table = {}
    by = "lesson_id" if df["lesson_id"].notna().all() else "trigger"
    for line, rec in _records(lessons, required=(by, "body")):
        key, body = _text(lessons, line, rec, by, True), _text(lessons, line, rec, "body", True)
        table[key] = body
    unknown = sorted(set(df[by]) - set(table))
    if unknown:
        line = int(df.loc[df[by] == unknown[0], "line"].iloc[0])
        raise PairsError(lessons, 0, by, f"{unknown[0]!r} (pairs line {line}) has no row in the lessons file")
    out = df.copy()
    out["body"] = out["body"].fillna(out[by].map(table))
    return out


def assign_split(df: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Deterministic calibration/test halves, stratified by (category, relevant): within each stratum the
    rows are put in a seeded random order and dealt alternately, calibration first."""
    out = df.copy()
    out["split"] = None
    rng = np.random.default_rng(seed)
    for _, idx in sorted(out.groupby(["category", "relevant"]).groups.items(), key=lambda kv: str(kv[0])):
        order = rng.permutation(np.asarray(idx))
        out.loc[order, "split"] = [SPLITS[k % 2] for k in range(len(order))]
    return out


def load_corpus(directory: str | Path = CORPUS_DIR) -> pd.DataFrame:
    """The project's own labelled corpus (datasets/tau, see its README)."""
    directory = Path(directory)
    return load_pairs(directory / "pairs.csv", lessons=directory / "lessons.csv")


# ---------------------------------------------------------------------------------------- scorers


class Scorer(Protocol):
    """A retrieval scorer: a name, and unit-length vectors for goals and triggers (cosine = dot)."""

    name: str

    def vectors(self, goals: Sequence[str], triggers: Sequence[str]) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass(frozen=True)
class EmbedderScorer:
    """Any `retrieval.Embedder` (the bundled default, or a sentence-transformers name/path)."""

    embedder: Any

    @property
    def name(self) -> str:
        return self.embedder.id

    def vectors(self, goals, triggers):
        return self.embedder.encode(list(goals)), self.embedder.encode(list(triggers))


@dataclass(frozen=True)
class TfidfScorer:
    """Lexical baseline: scikit-learn TF-IDF fitted on the indexed triggers (the collection searched),
    unigrams + bigrams, sublinear tf, English stop words removed."""

    name: str = TFIDF
    ngram_range: tuple[int, int] = (1, 2)

    def vectors(self, goals, triggers):
        from sklearn.feature_extraction.text import TfidfVectorizer

        vec = TfidfVectorizer(ngram_range=self.ngram_range, sublinear_tf=True, stop_words="english")
        vec.fit(list(triggers))
        dense = lambda texts: vec.transform(list(texts)).toarray().astype(np.float32)  # noqa: E731
        return dense(goals), dense(triggers)


def get_scorer(name_or_path: str | None = None) -> Scorer:
    """`"tfidf"` → the lexical baseline; None → the bundled offline embedder; anything else → a
    sentence-transformers model name or path (local files only; `retrieval.EmbedderUnavailable` if absent)."""
    if isinstance(name_or_path, str) and name_or_path.strip().lower() == TFIDF:
        return TfidfScorer()
    return EmbedderScorer(retrieval.load_embedder(name_or_path))


# ---------------------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Scored:
    """One scorer's view of a pairs frame: every goal searched against every trigger through FAISS."""

    scorer: str
    pairs: pd.DataFrame         # the input rows plus `score`, `goal_idx`, `trigger_idx`
    goals: tuple[str, ...]
    triggers: tuple[str, ...]
    cosine: np.ndarray          # (goals × triggers)
    relevant: np.ndarray        # (goals × triggers) bool, closed world: unlabelled pairs are irrelevant
    tokens: np.ndarray          # per trigger: tokens of the lesson body it admits

    def half(self, split: str) -> pd.DataFrame:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        return self.pairs[self.pairs["split"] == split]


def score(pairs: pd.DataFrame, scorer: Scorer) -> Scored:
    goals = tuple(dict.fromkeys(pairs["goal"]))
    triggers = tuple(dict.fromkeys(pairs["trigger"]))
    gvec, tvec = scorer.vectors(goals, triggers)
    keys = [f"{i:08d}" for i in range(len(triggers))]  # sorted ids keep FAISS positions = trigger order
    index = retrieval.TriggerIndex(None, keys, np.asarray(tvec, dtype=np.float32))
    cosine = np.zeros((len(goals), len(triggers)), dtype=np.float32)
    for g, vec in enumerate(np.asarray(gvec, dtype=np.float32)):
        for hit in index.search(vec, tau=-np.inf):
            cosine[g, int(hit.delta_id)] = hit.cosine
    gpos = {g: i for i, g in enumerate(goals)}
    tpos = {t: i for i, t in enumerate(triggers)}
    out = pairs.copy()
    out["goal_idx"] = out["goal"].map(gpos)
    out["trigger_idx"] = out["trigger"].map(tpos)
    out["score"] = cosine[out["goal_idx"], out["trigger_idx"]].astype(float)
    relevant = np.zeros_like(cosine, dtype=bool)
    pos = out[out["relevant"]]
    relevant[pos["goal_idx"], pos["trigger_idx"]] = True
    tokens = out.drop_duplicates("trigger_idx").set_index("trigger_idx")["tokens"].sort_index().to_numpy()
    return Scored(scorer.name, out, goals, triggers, cosine, relevant, tokens)


# ---------------------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class Interval:
    """A point estimate with a 95 % percentile-bootstrap interval."""

    value: float
    lo: float
    hi: float

    def __str__(self) -> str:
        return self.fmt(".3f")

    def fmt(self, spec: str = ".2f") -> str:
        if not np.isfinite(self.value):
            return "n/a (nothing admitted)"
        if not (np.isfinite(self.lo) and np.isfinite(self.hi)):
            return f"{self.value:{spec}}"
        return f"{self.value:{spec}} [{self.lo:{spec}}, {self.hi:{spec}}]"


def _interval(point: float, draws: np.ndarray) -> Interval:
    draws = draws[np.isfinite(draws)]
    if not np.isfinite(point) or draws.size == 0:
        return Interval(float(point), float("nan"), float("nan"))
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return Interval(float(point), float(lo), float(hi))


def _band(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column-wise 95 % percentile band ignoring NaN draws (NaN where a column has none)."""
    lo, hi = np.full(draws.shape[1], np.nan), np.full(draws.shape[1], np.nan)
    ok = np.isfinite(draws).any(axis=0)
    if ok.any():
        lo[ok], hi[ok] = np.nanpercentile(draws[:, ok], [2.5, 97.5], axis=0)
    return lo, hi


def _boot_weights(strata: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n) resample counts: each stratum resampled with replacement to its own size."""
    w = np.zeros((n_boot, len(strata)), dtype=np.float64)
    for s in sorted(set(strata.tolist())):
        idx = np.flatnonzero(strata == s)
        draws = rng.integers(0, len(idx), size=(n_boot, len(idx)))
        flat = (np.arange(n_boot)[:, None] * len(idx) + draws).ravel()
        w[:, idx] = np.bincount(flat, minlength=n_boot * len(idx)).reshape(n_boot, len(idx))
    return w


def _strata(part: pd.DataFrame) -> np.ndarray:
    return (part["category"].astype(str) + "|" + part["relevant"].astype(str)).to_numpy()


def _prf(scores: np.ndarray, relevant: np.ndarray, taus: np.ndarray, w: np.ndarray):
    """Precision, recall, F1 of shape (len(w), len(taus)); precision is NaN where nothing is admitted."""
    admit = (scores[:, None] >= taus[None, :]).astype(np.float64)
    tp = w @ (admit * relevant[:, None])
    fp = w @ (admit * ~relevant[:, None])
    pos = (w @ relevant.astype(np.float64))[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), np.nan)
        recall = np.where(pos > 0, tp / pos, np.nan)
        f1 = np.where(tp > 0, 2 * tp / (2 * tp + fp + (pos - tp)), 0.0)
    return precision, recall, f1


def _pick(scores: np.ndarray, relevant: np.ndarray, target: float, w: np.ndarray,
          min_admitted: int = 1) -> np.ndarray:
    """Per weight row: the lowest score τ with precision ≥ target among the pairs present, counting only
    cuts that admit at least `min_admitted` pairs (NaN: none)."""
    order = np.argsort(-scores, kind="stable")
    s, r, w = scores[order], relevant[order], w[:, order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])      # tie groups of equal score
    ends = np.r_[starts[1:] - 1, len(s) - 1]
    ctp = np.cumsum(w * r, axis=1)[:, ends]
    cfp = np.cumsum(w * ~r, axis=1)[:, ends]
    present = np.add.reduceat(w, starts, axis=1) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = present & (ctp + cfp >= max(min_admitted, 1)) & (ctp / np.maximum(ctp + cfp, 1e-300) >= target - 1e-12)
    last = ok.shape[1] - 1 - np.argmax(ok[:, ::-1], axis=1)
    return np.where(ok.any(axis=1), s[ends][last], np.nan)


def pick_tau(scores: Sequence[float], relevant: Sequence[bool], target_precision: float,
             min_admitted: int = 1) -> float | None:
    """The lowest τ with precision ≥ target on these pairs (maximal recall at that precision), among
    thresholds admitting at least `min_admitted` pairs; None when no threshold qualifies."""
    s = np.asarray(scores, dtype=np.float64)
    r = np.asarray(relevant, dtype=bool)
    tau = _pick(s, r, target_precision, np.ones((1, len(s))), min_admitted)[0]
    return None if np.isnan(tau) else float(tau)


def precision_ceiling(scores: Sequence[float], relevant: Sequence[bool], min_admitted: int = 1
                      ) -> tuple[float, float]:
    """(best precision, its lowest τ) over thresholds admitting at least `min_admitted` pairs."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    s, r = np.asarray(scores, dtype=np.float64)[order], np.asarray(relevant, dtype=bool)[order]
    ends = np.r_[np.flatnonzero(s[1:] != s[:-1]), len(s) - 1]
    admitted = ends + 1
    prec = np.cumsum(r)[ends] / admitted
    prec = np.where(admitted >= max(min_admitted, 1), prec, -1.0)
    best = prec.max()
    return float(best), float(s[ends][np.flatnonzero(prec == best)[-1]])


@dataclass(frozen=True)
class SessionModel:
    """K goals per session, each searched against the whole lesson store (see the module docstring)."""

    goals_per_session: int = 10

    def describe(self, n_lessons: int) -> str:
        return (f"a session = {self.goals_per_session} goals drawn uniformly from the half's goals, each "
                f"searched against all {n_lessons} lessons; unlabelled goal-lesson pairs count as irrelevant")


def _goal_costs(scored: Scored, split: str, taus: np.ndarray):
    """Per goal of the half and per τ: false-injection tokens, missed lessons, injected lessons."""
    gi = np.unique(scored.half(split)["goal_idx"].to_numpy())
    cos, rel = scored.cosine[gi], scored.relevant[gi]
    admit = cos[:, :, None] >= taus[None, None, :]
    false_tokens = np.einsum("gtk,t->gk", admit & ~rel[:, :, None], scored.tokens.astype(np.float64))
    missed = (~admit & rel[:, :, None]).sum(axis=1).astype(np.float64)
    injected = admit.sum(axis=1).astype(np.float64)
    return false_tokens, missed, injected, rel.any(axis=1)


@dataclass(frozen=True)
class Operating:
    """What one τ does on one half: pair-level quality and per-session cost, each with its interval."""

    tau: float
    split: str
    precision: Interval
    recall: Interval
    f1: Interval
    false_tokens: Interval   # expected false-injection tokens per session
    missed: Interval         # expected relevant lessons missed per session
    injected: Interval       # expected lessons injected per session


def operating_point(scored: Scored, tau: float, split: str = "test", *, n_boot: int = 1000, seed: int = 0,
                    session: SessionModel = SessionModel()) -> Operating:
    part = scored.half(split)
    s, r = part["score"].to_numpy(), part["relevant"].to_numpy(dtype=bool)
    t = np.array([tau], dtype=np.float64)
    rng = np.random.default_rng(seed)
    point = _prf(s, r, t, np.ones((1, len(s))))
    boot = _prf(s, r, t, _boot_weights(_strata(part), n_boot, rng))
    ft, mi, inj, has = _goal_costs(scored, split, t)
    gw = _boot_weights(has.astype(str), n_boot, rng)
    k = session.goals_per_session
    per = lambda m, w: k * (w @ m)[:, 0] / w.sum(axis=1)  # noqa: E731
    ones = np.ones((1, len(has)))
    return Operating(float(tau), split,
                     *(_interval(p[0, 0], b[:, 0]) for p, b in zip(point, boot)),
                     *(_interval(per(m, ones)[0], per(m, gw)) for m in (ft, mi, inj)))


@dataclass(frozen=True)
class Calibration:
    """τ for a target precision, picked on the calibration half and checked on the held-out half.

    `tau_ci`: the pick's spread over bootstrap resamples of the calibration half; `held_out_tau`: the τ the
    test half itself would pick, with its interval over resamples of the test half — the recommended τ
    holds when it falls inside. `test` is the recommended τ on the test half; `reference` is τ = 0.82 there.
    """

    scorer: str
    target_precision: float
    tau: float | None
    tau_ci: Interval | None
    held_out_tau: Interval | None
    unreachable: float            # share of calibration resamples where the target cannot be met
    held_out_unreachable: float   # ... and of test-half resamples
    ceiling: float                # best precision the calibration half reaches (≥ min_admitted admitted)
    ceiling_tau: float            # ... and the lowest τ where it does
    f1_tau: float                 # the calibration half's F1-maximising τ, for comparison
    calibration: Operating | None
    test: Operating | None
    reference: Operating
    n_pairs: dict = field(default_factory=dict)
    n_lessons: int = 0
    n_boot: int = 1000
    seed: int = 0
    min_admitted: int = MIN_ADMITTED
    session: SessionModel = SessionModel()
    token_source: str = "body"

    @property
    def reachable(self) -> bool:
        return self.tau is not None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["session"] = {"goals_per_session": self.session.goals_per_session,
                        "model": self.session.describe(self.n_lessons)}
        return _clean(d)


def _clean(obj):
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, float):
        return None if not np.isfinite(obj) else round(obj, 4)
    return obj


def _validate(target_precision: float, n_boot: int, min_admitted: int) -> None:
    if not 0 < target_precision <= 1:
        raise ValueError(f"target precision must be in (0, 1], got {target_precision}")
    if n_boot < 10:
        raise ValueError(f"n_boot must be at least 10, got {n_boot}")
    if min_admitted < 1:
        raise ValueError(f"min_admitted must be at least 1, got {min_admitted}")


def describe(cal: Calibration, source: str = "") -> str:
    """A plain-text report of one calibration (what `overlay-kit calibrate-tau` prints)."""
    k = cal.session.goals_per_session
    lines = [f"scorer     {cal.scorer}" + (f"  on {source}" if source else ""),
             f"pairs      {cal.n_pairs.get('calibration', 0)} calibration / {cal.n_pairs.get('test', 0)} test, "
             f"{cal.n_lessons} lessons, lesson tokens from {cal.token_source}",
             f"target     precision ≥ {cal.target_precision:.2f} (cuts admitting ≥ {cal.min_admitted} pairs)"]
    if cal.tau is None:
        lines.append(f"tau        unreachable on the calibration half (best precision {cal.ceiling:.3f} "
                     f"at τ = {cal.ceiling_tau:.3f})")
    else:
        lines.append(f"tau        {cal.tau:.3f}  bootstrap {cal.tau_ci.lo:.3f}-{cal.tau_ci.hi:.3f} (calibration half)")
        lines.append("held-out   " + (f"the test half picks {cal.held_out_tau.fmt('.3f')}" if cal.held_out_tau
                                      else "the test half cannot reach the target"))
    rows = [("at tau", cal.test), (f"at {REFERENCE_TAU}", cal.reference)]
    for label, op in rows:
        if op is None:
            continue
        lines.append(f"{label:<10} test precision {op.precision.fmt()}, recall {op.recall.fmt()}, "
                     f"F1 {op.f1.fmt()}")
        lines.append(f"{'':<10} per session of {k} goals: {op.false_tokens.fmt('.0f')} false-injection "
                     f"tokens, {op.missed.fmt()} missed, {op.injected.fmt()} injected")
    lines.append(f"intervals  95 % bootstrap, {cal.n_boot} resamples, seed {cal.seed}")
    return "\n".join(lines)


def calibrate(scored: Scored, target_precision: float = DEFAULT_TARGET, *, n_boot: int = 1000, seed: int = 0,
              min_admitted: int = MIN_ADMITTED, session: SessionModel = SessionModel(),
              reference_tau: float = REFERENCE_TAU) -> Calibration:
    _validate(target_precision, n_boot, min_admitted)
    rng = np.random.default_rng(seed)
    picks = {}
    for half in SPLITS:
        part = scored.half(half)
        s, r = part["score"].to_numpy(), part["relevant"].to_numpy(dtype=bool)
        point = _pick(s, r, target_precision, np.ones((1, len(s))), min_admitted)[0]
        draws = _pick(s, r, target_precision, _boot_weights(_strata(part), n_boot, rng), min_admitted)
        picks[half] = (point, draws)
    point, draws = picks["calibration"]
    cal = scored.half("calibration")
    s, r = cal["score"].to_numpy(), cal["relevant"].to_numpy(dtype=bool)
    cands = np.unique(s)
    f1 = _prf(s, r, cands, np.ones((1, len(s))))[2][0]
    ceiling, ceiling_tau = precision_ceiling(s, r, min_admitted)
    kw = dict(n_boot=n_boot, seed=seed, session=session)
    tau = None if np.isnan(point) else float(point)
    return Calibration(
        scorer=scored.scorer, target_precision=float(target_precision), tau=tau,
        tau_ci=None if tau is None else _interval(point, draws),
        held_out_tau=_interval(*picks["test"]) if np.isfinite(picks["test"][0]) else None,
        unreachable=float(np.isnan(draws).mean()), held_out_unreachable=float(np.isnan(picks["test"][1]).mean()),
        ceiling=ceiling, ceiling_tau=ceiling_tau,
        f1_tau=float(cands[int(np.argmax(f1))]),
        calibration=None if tau is None else operating_point(scored, tau, "calibration", **kw),
        test=None if tau is None else operating_point(scored, tau, "test", **kw),
        reference=operating_point(scored, reference_tau, "test", **kw),
        n_pairs={h: int((scored.pairs["split"] == h).sum()) for h in SPLITS},
        n_lessons=len(scored.triggers), n_boot=n_boot, seed=seed, min_admitted=min_admitted, session=session,
        token_source=scored.pairs.attrs.get("token_source", "body"))


def curves(scored: Scored, split: str = "test", taus: Iterable[float] = GRID, *, n_boot: int = 1000,
           seed: int = 0, session: SessionModel = SessionModel()) -> pd.DataFrame:
    """Per τ: precision/recall/F1 and per-session costs, each with a bootstrap interval (lo/hi columns)."""
    taus = np.asarray(list(taus), dtype=np.float64)
    part = scored.half(split)
    s, r = part["score"].to_numpy(), part["relevant"].to_numpy(dtype=bool)
    rng = np.random.default_rng(seed)
    out = {"scorer": scored.scorer, "split": split, "tau": taus}
    point = _prf(s, r, taus, np.ones((1, len(s))))
    boot = _prf(s, r, taus, _boot_weights(_strata(part), n_boot, rng))
    for name, p, b in zip(("precision", "recall", "f1"), point, boot):
        out[name] = p[0]
        out[name + "_lo"], out[name + "_hi"] = _band(b)
    ft, mi, inj, has = _goal_costs(scored, split, taus)
    gw = _boot_weights(has.astype(str), n_boot, rng)
    k = session.goals_per_session
    for name, m in (("false_tokens", ft), ("missed", mi), ("injected", inj)):
        out[name] = k * m.mean(axis=0)
        draws = k * (gw @ m) / gw.sum(axis=1, keepdims=True)
        out[name + "_lo"], out[name + "_hi"] = np.percentile(draws, [2.5, 97.5], axis=0)
    return pd.DataFrame(out)


def category_errors(scored: Scored, tau: float, split: str = "test", *, n_boot: int = 1000,
                    seed: int = 0) -> pd.DataFrame:
    """Per category at τ: how many pairs the gate gets wrong (relevant kept out, irrelevant let in)."""
    part = scored.half(split)
    wrong = (part["score"].to_numpy() >= tau) != part["relevant"].to_numpy(dtype=bool)
    rng = np.random.default_rng(seed)
    rows = []
    for cat in sorted(set(part["category"]), key=lambda c: (CATEGORIES + (c,)).index(c)):
        mask = (part["category"] == cat).to_numpy()
        err = wrong[mask].astype(np.float64)
        draws = err[rng.integers(0, len(err), size=(n_boot, len(err)))].mean(axis=1)
        ci = _interval(err.mean(), draws)
        relevant = bool(part.loc[mask, "relevant"].iloc[0]) if part.loc[mask, "relevant"].nunique() == 1 else None
        rows.append({"scorer": scored.scorer, "tau": round(float(tau), 3), "category": cat,
                     "error": {True: "relevant kept out", False: "irrelevant let in"}.get(relevant, "mixed"),
                     "pairs": int(mask.sum()), "errors": int(err.sum()), "rate": ci.value,
                     "rate_lo": ci.lo, "rate_hi": ci.hi,
                     "median_score": float(np.median(part.loc[mask, "score"]))})
    return pd.DataFrame(rows)


def examples(scored: Scored, tau: float, split: str = "test", n: int = 4) -> pd.DataFrame:
    """Concrete pairs around τ: the highest-scoring irrelevant pairs let in and the lowest-scoring relevant
    pairs kept out (the gate's worst mistakes), then the closest correct calls on each side of τ."""
    part = scored.half(split)
    cols = ["outcome", "category", "score", "goal", "trigger"]
    admitted = part["score"] >= tau
    groups = [
        ("let in, irrelevant", part[admitted & ~part["relevant"]].nlargest(n, "score")),
        ("kept out, relevant", part[~admitted & part["relevant"]].nsmallest(n, "score")),
        ("let in, relevant", part[admitted & part["relevant"]].nsmallest(n, "score")),
        ("kept out, irrelevant", part[~admitted & ~part["relevant"]].nlargest(n, "score")),
    ]
    frames = [g.assign(outcome=label)[cols] for label, g in groups if len(g)]
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)
    return out.assign(score=out["score"].astype(float).round(3))


def split_sensitivity(scored: Scored, target_precision: float, seeds: Iterable[int] = range(10), *,
                      min_admitted: int = MIN_ADMITTED) -> pd.DataFrame:
    """τ re-picked on random stratified re-splits (`assign_split` per seed) and what it does on each
    re-split's test half (point values, indexed by seed): the split's share of τ's uncertainty."""
    rows = []
    for seed in seeds:
        pairs = assign_split(scored.pairs, seed)
        cal, test = (pairs[pairs["split"] == h] for h in SPLITS)
        tau = pick_tau(cal["score"], cal["relevant"], target_precision, min_admitted)
        admitted = test[test["score"] >= tau] if tau is not None else test.iloc[:0]
        rows.append({"seed": seed, "tau": np.nan if tau is None else tau,
                     "test_precision": admitted["relevant"].mean() if len(admitted) else np.nan,
                     "test_recall": admitted["relevant"].sum() / test["relevant"].sum() if tau is not None
                     else np.nan})
    return pd.DataFrame(rows).set_index("seed")


# ------------------------------------------------------------------------------------------ study


def strictest_target(scored: Scored, targets: Sequence[float] = TARGETS, min_admitted: int = MIN_ADMITTED
                     ) -> float | None:
    """The highest precision on the ladder that the calibration half reaches (None: not even the lowest)."""
    cal = scored.half("calibration")
    s, r = cal["score"].to_numpy(), cal["relevant"].to_numpy(dtype=bool)
    return next((float(t) for t in sorted(targets, reverse=True) if pick_tau(s, r, t, min_admitted) is not None),
                None)


def target_table(calibrations: Iterable[Calibration]) -> pd.DataFrame:
    """One row per (scorer, target): τ picked on calibration, the held-out τ, and how τ does on test."""
    rows = []
    for c in calibrations:
        t = c.test
        rows.append({"scorer": c.scorer, "target": c.target_precision, "tau": c.tau,
                     "tau_lo": c.tau_ci.lo if c.tau_ci else None, "tau_hi": c.tau_ci.hi if c.tau_ci else None,
                     "held_out_tau": c.held_out_tau.value if c.held_out_tau else None,
                     "test_precision": t.precision.value if t else None,
                     "test_precision_lo": t.precision.lo if t else None,
                     "test_recall": t.recall.value if t else None,
                     "false_tokens": t.false_tokens.value if t else None,
                     "missed": t.missed.value if t else None})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Study:
    """Several scorers on the same pairs: calibrations, curves and per-category errors side by side.

    `primary` is the first scorer; `target_precision` the target every scorer is calibrated at (by default
    the strictest rung of `TARGETS` the primary reaches on the calibration half); `targets` holds every
    scorer calibrated at every rung.
    """

    pairs: pd.DataFrame
    scored: dict
    calibrations: dict
    curves: pd.DataFrame
    targets: pd.DataFrame
    target_precision: float | None
    session: SessionModel
    n_boot: int
    seed: int

    @property
    def primary(self) -> str:
        return next(iter(self.scored))

    def summary(self) -> pd.DataFrame:
        rows = []
        for name, c in self.calibrations.items():
            t, ref = c.test, c.reference
            rows.append({"scorer": name, "target": c.target_precision, "tau": c.tau,
                         "tau_ci": c.tau_ci.fmt(".3f") if c.tau_ci else "unreachable",
                         "held_out_tau": c.held_out_tau.fmt(".3f") if c.held_out_tau else "unreachable",
                         "test_precision": t.precision.fmt() if t else None,
                         "test_recall": t.recall.fmt() if t else None,
                         "false_tokens/session": t.false_tokens.fmt(".0f") if t else None,
                         "missed/session": t.missed.fmt() if t else None,
                         f"precision@{REFERENCE_TAU}": ref.precision.fmt(),
                         f"recall@{REFERENCE_TAU}": ref.recall.fmt(),
                         "precision_ceiling": round(c.ceiling, 3)})
        return pd.DataFrame(rows)

    def category_table(self) -> pd.DataFrame:
        frames = [category_errors(self.scored[name], c.tau, n_boot=self.n_boot, seed=self.seed)
                  for name, c in self.calibrations.items() if c.tau is not None]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def finding(self) -> str:
        """Markdown prose written from the numbers (no figure in it is typed by hand)."""
        name = self.primary
        c = self.calibrations[name]
        k, ref = self.session.goals_per_session, c.reference
        at = self.targets[self.targets["target"] == DEFAULT_TARGET].set_index("scorer")
        reached = [n for n in at.index if pd.notna(at.loc[n, "tau"])]
        lines = [f"**Can a threshold deliver {DEFAULT_TARGET:.0%} precision?** Best precision on the "
                 f"calibration half (cuts admitting at least {c.min_admitted} pairs): "
                 + ", ".join(f"{n} {x.ceiling:.2f}" for n, x in self.calibrations.items()) + ". "
                 + ("; ".join(f"{n} reaches {DEFAULT_TARGET:.0%} at τ = {at.loc[n, 'tau']:.3f}, but on the "
                              f"held-out half that τ gives precision {at.loc[n, 'test_precision']:.2f}"
                              for n in reached) + "." if reached else "None reaches it.")]
        if c.tau is None:
            lines.append(f"**{name}** reaches none of the targets {list(TARGETS)}, so no τ is recommended.")
        else:
            t = c.test
            holds = c.held_out_tau is not None and c.held_out_tau.lo <= c.tau <= c.held_out_tau.hi
            held = (f"the held-out half's own pick for the same target is τ = {c.held_out_tau.fmt('.3f')}, "
                    f"so the recommendation {'holds' if holds else '**does not hold**'}"
                    if c.held_out_tau else
                    f"no τ reaches that target (nor in {c.held_out_unreachable:.0%} of its bootstrap resamples)")
            lines.append(
                f"**Recommended for {name}: τ = {c.tau:.3f}** (target precision {c.target_precision:.0%}, the "
                f"strictest of {list(TARGETS)} its calibration half reaches; bootstrap "
                f"{c.tau_ci.lo:.3f}–{c.tau_ci.hi:.3f}). On the held-out half {held}. There τ = {c.tau:.3f} "
                f"gives precision {t.precision.fmt()} and recall {t.recall.fmt()}; a session of {k} goals "
                f"against {c.n_lessons} lessons gets {t.false_tokens.fmt('.0f')} tokens of irrelevant lessons "
                f"and misses {t.missed.fmt()} of its relevant lessons.")
            cats = category_errors(self.scored[name], c.tau, n_boot=self.n_boot, seed=self.seed)
            neg = cats[cats["error"] == "irrelevant let in"].sort_values("rate", ascending=False)
            if len(neg):
                worst, best = neg.iloc[0], neg.iloc[-1]
                lines.append(f"At that τ its false admissions come mostly from **{worst['category']}** goals "
                             f"({worst['rate']:.0%} of them let in; {best['category']}: {best['rate']:.0%}).")
        f1 = operating_point(self.scored[name], c.f1_tau, n_boot=self.n_boot, seed=self.seed, session=self.session)
        lines.append(f"Trading precision for recall instead, the calibration half's F1-best τ = {c.f1_tau:.3f} gives "
                     f"held-out precision {f1.precision.fmt()} and recall {f1.recall.fmt()}, at "
                     f"{f1.false_tokens.fmt('.0f')} irrelevant tokens and {f1.missed.fmt()} missed lessons per "
                     f"session.")
        gap = None if c.tau is None else REFERENCE_TAU - c.tau
        lines.append(
            (f"**τ = {REFERENCE_TAU} is {abs(gap):.3f} {'above' if gap > 0 else 'below'} that.** " if gap is not None
             else f"**τ = {REFERENCE_TAU}.** ")
            + f"The highest score {name} gives any labelled pair is {self.scored[name].pairs['score'].max():.3f}; "
            f"at {REFERENCE_TAU} the held-out half has precision {ref.precision.fmt()} and recall "
            f"{ref.recall.fmt()}; per session {ref.missed.fmt()} relevant lessons are missed and "
            f"{ref.false_tokens.fmt('.0f')} irrelevant tokens admitted"
            + (" — tier 3 is effectively dark." if ref.recall.value == 0 else "."))
        for other, o in self.calibrations.items():
            if other == name:
                continue
            if o.tau is None:
                lines.append(f"**{other}** cannot reach {c.target_precision:.0%} precision on the calibration "
                             f"half (its best is {o.ceiling:.2f} at τ = {o.ceiling_tau:.3f}).")
                continue
            ot = o.test
            lines.append(f"**{other}** at the same target: τ = {o.tau:.3f} (bootstrap {o.tau_ci.lo:.3f}–"
                         f"{o.tau_ci.hi:.3f}); held-out precision {ot.precision.fmt()}, recall "
                         f"{ot.recall.fmt()}, {ot.false_tokens.fmt('.0f')} irrelevant tokens and "
                         f"{ot.missed.fmt()} missed lessons per session.")
        lines.append(f"Session model: {self.session.describe(c.n_lessons)}. Intervals: 95 % percentile "
                     f"bootstrap, {self.n_boot} resamples, seed {self.seed}.")
        return "\n\n".join(lines)


def run_study(pairs: pd.DataFrame, scorers: Sequence[Scorer], *, target_precision: float | None = None,
              targets: Sequence[float] = TARGETS, n_boot: int = 1000, seed: int = 0,
              min_admitted: int = MIN_ADMITTED, session: SessionModel = SessionModel(),
              taus: Iterable[float] = GRID) -> Study:
    """Score `pairs` with every scorer and calibrate each at `target_precision` (None: the strictest rung
    of `targets` the first scorer reaches on the calibration half)."""
    if not scorers:
        raise ValueError("run_study needs at least one scorer")
    scored = {}
    for scorer in scorers:
        sc = score(pairs, scorer)
        scored[sc.scorer] = sc
    primary = next(iter(scored.values()))
    if target_precision is None:
        target_precision = strictest_target(primary, targets, min_admitted) or min(targets)
    kw = dict(n_boot=n_boot, seed=seed, min_admitted=min_admitted, session=session)
    ladder = sorted(set(targets) | {target_precision}, reverse=True)
    by_target = {(name, t): calibrate(sc, t, **kw) for name, sc in scored.items() for t in ladder}
    taus = list(taus)
    frames = [curves(sc, half, taus, n_boot=n_boot, seed=seed, session=session)
              for sc in scored.values() for half in SPLITS]
    return Study(pairs, scored, {name: by_target[name, target_precision] for name in scored},
                 pd.concat(frames, ignore_index=True), target_table(by_target.values()), target_precision,
                 session, n_boot, seed)
