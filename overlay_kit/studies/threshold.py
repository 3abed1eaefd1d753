"""The τ study: which retrieval gate a tier-3 lesson should pass, measured per embedder.

A tier-3 prose lesson enters the prompt only when the turn's goal gets it through the retrieval gate
(`retrieval.Gate`). `retrieval` *serves* a gate; this module is the *evaluation* side that picks one: labelled
(goal, trigger, relevant) pairs, scorers, gate families compared at equal false-injection cost, and a bootstrap
over lessons. The gate is a property of the embedder, so every figure is per scorer, and goals are searched
through the same FAISS `TriggerIndex` as at run time.

Pipeline: `load_pairs` → `score(pairs, scorer)` → `study_embedder` (every gate family under one `Rule`) →
`run` (several scorers side by side) → `TauStudy.table()` / `.finding()` / `.calibration(name)` (the record
`overlay-kit calibrate-tau` stores for the resolver).

Definitions:
- session model: a session is K goals of one half; each goal is searched against every lesson of the corpus
  and the gate decides which are injected, whole. Closed world: a (goal, lesson) pair not labelled relevant is
  irrelevant. False-injection cost = body tokens (bundled Llama tokenizer) of the irrelevant lessons injected,
  per session; recall = relevant (goal, lesson) pairs retrieved / relevant pairs;
- families (`retrieval.FAMILIES`): absolute τ; top-k above a floor; the best hit if it leads the runner-up
  by a margin (`gate_grid` lists every gate tried);
- the independent unit is the lesson: each goal belongs to the lesson it was written for, the halves split
  lessons, and every interval resamples lessons (with all their goals).
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .. import retrieval
from ..budget import count_many
from ..metrics import Interval
from ..resources import dataset_path
from ..retrieval import Gate

__all__ = [
    "CATEGORIES",
    "CORPUS_DIR",
    "REFERENCE_TAU",
    "SPLITS",
    "TFIDF",
    "EmbedderResult",
    "EmbedderScorer",
    "Family",
    "Goals",
    "Operating",
    "PairsError",
    "Rule",
    "Scored",
    "Scorer",
    "TauStudy",
    "TfidfScorer",
    "assign_split",
    "calibrations",
    "category_errors",
    "default_scorers",
    "examples",
    "frontier",
    "gate_grid",
    "get_scorer",
    "goals",
    "lesson_weights",
    "load_corpus",
    "load_pairs",
    "run",
    "score",
    "select",
    "study_embedder",
    "sums",
]

CATEGORIES = ("paraphrase", "near_miss", "lexical_overlap", "cross_domain", "adversarial")
SPLITS = ("calibration", "test")
CORPUS_DIR = dataset_path("tau")
TFIDF = "tfidf"
REFERENCE_TAU = 0.82  # the τ the design inherited from another corpus and embedder (shown for comparison)
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


# ------------------------------------------------------------------------------------------- goals


@dataclass(frozen=True)
class Goals:
    """One half's goals as the session model sees them: each goal searched against every lesson, and the
    lesson it was written for (its *home*, the independent unit every interval resamples)."""

    split: str
    cosine: np.ndarray          # (goals × lessons), every lesson of the corpus (closed world)
    relevant: np.ndarray        # (goals × lessons) bool
    tokens: np.ndarray          # per lesson: its body's tokens (the cost of a false injection)
    home: np.ndarray            # per goal: index into `lessons`
    lessons: tuple[str, ...]    # this half's lessons (the resampled unit)
    category: np.ndarray        # per goal: the category of the goal as written (not cross_domain)
    index: np.ndarray           # per goal: its row in `Scored.goals`


def goals(scored: Scored, split: str) -> Goals:
    """The goals written for the half's lessons, each with its home lesson: the lesson a relevant pair names,
    else the lesson of its first non-cross-domain pair (lesson = `lesson_id`, else the trigger). A goal belongs
    to its home's half, wherever else it is paired (cross-domain pairs reuse other lessons' goals)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    p = scored.pairs
    p = p.assign(unit=p["lesson_id"].fillna(p["trigger"]) if "lesson_id" in p else p["trigger"],
                 rank=np.where(p["relevant"], 0, np.where(p["category"] == "cross_domain", 2, 1)))
    first = p.sort_values(["goal_idx", "rank"], kind="stable").drop_duplicates("goal_idx")
    first = first[first["split"] == split]
    gi = first["goal_idx"].to_numpy()
    lessons = tuple(sorted(set(first["unit"])))
    pos = {u: i for i, u in enumerate(lessons)}
    return Goals(split, scored.cosine[gi].astype(np.float64), scored.relevant[gi], scored.tokens.astype(np.float64),
                 first["unit"].map(pos).to_numpy(), lessons, first["category"].to_numpy(), gi)


# ------------------------------------------------------------------------------------------- gates


def gate_grid() -> tuple[Gate, ...]:
    """Every gate the study tries, simplest family first: absolute τ on a 0.01 grid; top-1/2/3 with a floor on
    a 0.01 grid; the best hit with a margin of 0–0.20 (0.01 steps) over the runner-up, floor on a 0.02 grid."""
    floors = [round(float(x), 2) for x in np.arange(0.0, 1.0001, 0.01)]
    out = [Gate.absolute(f) for f in floors]
    out += [Gate("top-k", f, k=k) for k in (1, 2, 3) for f in floors]
    out += [Gate("margin", f, margin=round(float(m), 2)) for m in np.arange(0.0, 0.2001, 0.01) for f in floors[::2]]
    return tuple(out)


@dataclass(frozen=True)
class Sums:
    """Per home lesson (rows) and per gate (columns): what the gate did to that lesson's goals."""

    hits: np.ndarray          # relevant (goal, lesson) pairs retrieved
    false_tokens: np.ndarray  # tokens of irrelevant lessons injected
    admitted: np.ndarray      # lessons injected
    relevant: np.ndarray      # per lesson: relevant (goal, lesson) pairs
    n_goals: np.ndarray       # per lesson: goals

    def rates(self, w: np.ndarray, k: int) -> dict[str, np.ndarray]:
        """(rows of w × gates) recall, precision, false tokens and lessons injected per session of k goals."""
        with np.errstate(invalid="ignore", divide="ignore"):
            hits, adm, goals_ = w @ self.hits, w @ self.admitted, (w @ self.n_goals)[:, None]
            return {"recall": hits / (w @ self.relevant)[:, None], "precision": np.where(adm > 0, hits / adm, np.nan),
                    "false_tokens": k * (w @ self.false_tokens) / goals_, "injected": k * adm / goals_}


def sums(g: Goals, gates: Sequence[Gate]) -> Sums:
    order = np.argsort(-g.cosine, axis=1, kind="stable")
    s = np.take_along_axis(g.cosine, order, axis=1)
    rel = np.take_along_axis(g.relevant, order, axis=1)
    tok = g.tokens[order]
    onehot = np.zeros((len(g.lessons), len(g.home)))
    onehot[g.home, np.arange(len(g.home))] = 1.0
    per_goal = np.empty((3, len(g.home), len(gates)))
    for j, gate in enumerate(gates):
        m = gate.admit_sorted(s)
        per_goal[0, :, j] = (m & rel).sum(axis=1)
        per_goal[1, :, j] = ((m & ~rel) * tok).sum(axis=1)
        per_goal[2, :, j] = m.sum(axis=1)
    return Sums(*(onehot @ x for x in per_goal), onehot @ g.relevant.sum(axis=1).astype(np.float64),
                onehot.sum(axis=1))


def lesson_weights(n_lessons: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot + 1, n_lessons) resample counts, row 0 the observed data: lessons drawn with replacement."""
    draws = rng.integers(0, n_lessons, size=(n_boot, n_lessons))
    w = np.zeros((n_boot, n_lessons))
    np.add.at(w, (np.repeat(np.arange(n_boot), n_lessons), draws.ravel()), 1.0)
    return np.vstack([np.ones((1, n_lessons)), w])


def select(recall: np.ndarray, cost: np.ndarray, budget: float) -> np.ndarray:
    """Per row: the gate (column) with the highest recall among those whose false-injection cost is within
    the budget; ties → lower cost → earlier column (simpler family, lower parameters). -1: none is within."""
    ok = cost <= budget + 1e-9
    r = np.where(ok, np.nan_to_num(np.round(recall, 12), nan=0.0), -np.inf)
    best = ok & (r == r.max(axis=1, keepdims=True))
    c = np.where(best, cost, np.inf)
    pick = np.argmax(best & (c == c.min(axis=1, keepdims=True)), axis=1)
    return np.where(ok.any(axis=1), pick, -1)


# ------------------------------------------------------------------------------------------- study


@dataclass(frozen=True)
class Rule:
    """The decision rule, fixed before any number is looked at (the notebook prints it first).

    * cost: expected false-injection tokens per session of `goals_per_session` goals (tokens of irrelevant
      lessons let in; every goal is searched against every lesson);
    * pick: per embedder and per family, the gate with the highest calibration-half recall whose calibration
      cost is ≤ `budget`; the family whose pick has the highest recall wins (ties: lower cost, simpler family);
    * confirm on the held-out half: the pick holds if its test cost interval reaches down to the budget
      (lo ≤ budget) and its test recall interval excludes 0; it beats absolute τ only if the interval of the
      paired test-recall difference excludes 0, else the study says it cannot tell them apart;
    * intervals: 95 % percentile bootstrap resampling *lessons* (a lesson and all the goals written for it);
      the pick is re-run on every calibration resample: `unreachable` = share where no gate retrieves anything
      within the budget, `over_budget` = share where the recommended gate costs more than the budget.
    """

    budget: float = 40.0          # ≈ one irrelevant lesson body (median 36 tokens) per session
    goals_per_session: int = 10
    n_boot: int = 1000
    seed: int = 0

    def describe(self) -> str:
        return (f"highest calibration recall with ≤ {self.budget:g} false-injection tokens per session of "
                f"{self.goals_per_session} goals; confirmed on the held-out half; 95 % intervals resample "
                f"lessons ({self.n_boot} resamples, seed {self.seed})")


@dataclass(frozen=True)
class Operating:
    """What one gate does on one half, per session, each with its lesson-bootstrap interval."""

    gate: Gate
    split: str
    recall: Interval
    precision: Interval
    false_tokens: Interval
    injected: Interval

    def to_dict(self) -> dict:
        return {"gate": self.gate.to_dict(), "split": self.split,
                **{k: _iv(getattr(self, k)) for k in ("recall", "precision", "false_tokens", "injected")}}


def _iv(i: Interval) -> list:
    return [None if not np.isfinite(x) else round(float(x), 4) for x in (i.estimate, i.low, i.high)]


@dataclass(frozen=True)
class Family:
    """One gate family's pick for one embedder, on both halves."""

    family: str
    calibration: Operating
    test: Operating
    over_budget: float   # share of calibration resamples in which this gate costs more than the budget


@dataclass(frozen=True)
class EmbedderResult:
    """The study for one embedder: each family's pick, the winner, and how stable the winner is."""

    scorer: str
    families: dict            # family → Family (a family with no gate within the budget is absent)
    winner: str | None        # None: no gate of any family is within the budget
    unreachable: float        # share of calibration resamples where nothing is retrieved within the budget
    same_family: float        # share of calibration resamples whose own pick is the winner's family
    vs_absolute: Interval     # test recall: winner − absolute τ (paired, lessons resampled)
    reference: Operating      # τ = 0.82 (the inherited default) on the test half
    top1: Interval            # test half: share of relevant goals whose lesson ranks first …
    top3: Interval            # … and in the top 3
    n_lessons: dict           # lessons per half
    n_relevant: dict          # relevant goals per half

    @property
    def gate(self) -> Gate | None:
        return self.families[self.winner].calibration.gate if self.winner else None

    @property
    def reachable(self) -> bool:
        """Some gate within the budget retrieves at least one relevant lesson on the calibration half."""
        return self.winner is not None and self.families[self.winner].calibration.recall.estimate > 0

    def holds(self, budget: float) -> bool:
        t = self.families[self.winner].test
        return bool(self.reachable and t.false_tokens.low <= budget + 1e-9 and t.recall.low > 0)


def _operating(gate: Gate, split: str, rates: dict, j: int) -> Operating:
    return Operating(gate, split, *(Interval.percentile(rates[k][0, j], rates[k][1:, j])
                                    for k in ("recall", "precision", "false_tokens", "injected")))


def _rank_share(g: Goals, w: np.ndarray, top: int) -> Interval:
    rel_rows = g.relevant.any(axis=1)
    order = np.argsort(-g.cosine, axis=1, kind="stable")
    hit = np.take_along_axis(g.relevant, order, axis=1)[:, :top].any(axis=1)
    onehot = np.zeros((len(g.lessons), len(g.home)))
    onehot[g.home, np.arange(len(g.home))] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (w @ (onehot @ (hit & rel_rows))) / (w @ (onehot @ rel_rows))
    return Interval.percentile(share[0], share[1:])


def study_embedder(scored: Scored, rule: Rule = Rule(), gates: Sequence[Gate] | None = None) -> EmbedderResult:
    """Run the rule for one scorer (see `Rule`)."""
    gates = tuple(gate_grid() if gates is None else gates)
    fam = np.array([g.family for g in gates])
    rng = np.random.default_rng(rule.seed)
    halves = {h: goals(scored, h) for h in SPLITS}
    w = {h: lesson_weights(len(halves[h].lessons), rule.n_boot, rng) for h in SPLITS}
    rates = {h: sums(halves[h], gates).rates(w[h], rule.goals_per_session) for h in SPLITS}
    cal = rates["calibration"]
    families = {}
    for f in dict.fromkeys(fam):
        cols = np.flatnonzero(fam == f)
        pick = select(cal["recall"][:1, cols], cal["false_tokens"][:1, cols], rule.budget)[0]
        if pick < 0:
            continue
        j = cols[pick]
        families[f] = Family(f, _operating(gates[j], "calibration", cal, j),
                             _operating(gates[j], "test", rates["test"], j),
                             float((cal["false_tokens"][1:, j] > rule.budget + 1e-9).mean()))
    picks = select(cal["recall"], cal["false_tokens"], rule.budget)
    winner = str(fam[picks[0]]) if picks[0] >= 0 else None
    chosen_recall = np.where(picks >= 0, cal["recall"][np.arange(len(picks)), picks], 0.0)
    test = rates["test"]
    diff = np.full(len(picks), np.nan)
    if winner and "absolute" in families:
        win_j, abs_j = gates.index(families[winner].test.gate), gates.index(families["absolute"].test.gate)
        diff = test["recall"][:, win_j] - test["recall"][:, abs_j]
    ref = Gate.absolute(REFERENCE_TAU)
    ref_rates = sums(halves["test"], [ref]).rates(w["test"], rule.goals_per_session)
    return EmbedderResult(
        scored.scorer, families, winner, unreachable=float((~(chosen_recall[1:] > 0)).mean()),
        same_family=float(((picks[1:] >= 0) & (fam[picks[1:]] == winner)).mean()),
        vs_absolute=Interval.percentile(diff[0], diff[1:]),
        reference=_operating(ref, "test", ref_rates, 0),
        top1=_rank_share(halves["test"], w["test"], 1), top3=_rank_share(halves["test"], w["test"], 3),
        n_lessons={h: len(halves[h].lessons) for h in SPLITS},
        n_relevant={h: int(halves[h].relevant.any(axis=1).sum()) for h in SPLITS})


def category_errors(scored: Scored, gate: Gate, split: str = "test", *, n_boot: int = 1000,
                    seed: int = 0) -> pd.DataFrame:
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
        rows.append({"scorer": scored.scorer, "gate": str(gate), "category": cat,
                     "error": "relevant kept out" if g.relevant[m].any() else "irrelevant let in",
                     "goals": int(m.sum()), "errors": int(wrong[m].sum()), "rate": ci.estimate,
                     "rate_lo": ci.low, "rate_hi": ci.high})
    return pd.DataFrame(rows)


def examples(scored: Scored, gate: Gate, split: str = "test", n: int = 3) -> pd.DataFrame:
    """The gate's worst calls on one half: irrelevant lessons let in with the highest cosine, relevant ones
    kept out with the lowest."""
    g = goals(scored, split)
    admit = gate.admit(g.cosine)
    gi = g.index
    rows = []
    for label, mask, best in (("let in, irrelevant", admit & ~g.relevant, True),
                              ("kept out, relevant", ~admit & g.relevant, False)):
        r, c = np.nonzero(mask)
        order = np.argsort(-g.cosine[r, c] if best else g.cosine[r, c], kind="stable")[:n]
        rows += [{"outcome": label, "category": g.category[r[i]], "cosine": round(float(g.cosine[r[i], c[i]]), 3),
                  "goal": scored.goals[gi[r[i]]], "trigger": scored.triggers[c[i]]} for i in order]
    return pd.DataFrame(rows, columns=["outcome", "category", "cosine", "goal", "trigger"])


def frontier(scored: Scored, rule: Rule = Rule(), split: str = "test") -> pd.DataFrame:
    """Per family, the best recall reachable at each false-injection cost on one half (point values over the
    gate grid): the curve the families are compared on."""
    gates = gate_grid()
    g = goals(scored, split)
    r = sums(g, gates).rates(np.ones((1, len(g.lessons))), rule.goals_per_session)
    df = pd.DataFrame({"scorer": scored.scorer, "split": split, "family": [x.family for x in gates],
                       "gate": [str(x) for x in gates], "false_tokens": r["false_tokens"][0], "recall": r["recall"][0]})
    df = df.sort_values(["family", "false_tokens", "recall"], ascending=[True, True, False], kind="stable")
    best = df.groupby("family")["recall"].cummax()
    return df[df["recall"] >= best].drop_duplicates(["family", "false_tokens"]).reset_index(drop=True)


@dataclass(frozen=True)
class TauStudy:
    """`run`'s result: every embedder under one rule. `.table()` is the evidence, `.finding()` the verdict."""

    pairs: pd.DataFrame
    scored: dict           # scorer name → Scored
    results: dict          # scorer name → EmbedderResult
    rule: Rule

    def table(self) -> pd.DataFrame:
        """One row per (embedder, family): its pick, on the calibration and the held-out half."""
        rows = []
        for name, res in self.results.items():
            if not res.families:
                rows.append({"scorer": name, "family": "(any)", "gate": "unreachable: no gate within the budget",
                             "winner": False})
            for f, fam in res.families.items():
                c, t = fam.calibration, fam.test
                rows.append({"scorer": name, "family": f, "gate": str(c.gate), "winner": f == res.winner,
                             "cal_recall": c.recall.fmt(), "cal_false_tokens": c.false_tokens.fmt(".0f"),
                             "cal_precision": c.precision.fmt(empty="nothing admitted"),
                             "test_recall": t.recall.fmt(), "test_false_tokens": t.false_tokens.fmt(".0f"),
                             "test_precision": t.precision.fmt(empty="nothing admitted"),
                             "over_budget": f"{fam.over_budget:.0%}"})
        return pd.DataFrame(rows).set_index(["scorer", "family"])

    def summary(self) -> pd.DataFrame:
        """One row per embedder: the winner and the numbers the finding weighs it by."""
        rows = []
        for name, r in self.results.items():
            rows.append({"scorer": name, "winner": r.winner or "none within budget",
                         "gate": str(r.gate) if r.gate else "unreachable", "holds_on_test": r.holds(self.rule.budget),
                         "test_recall_vs_absolute": r.vs_absolute.fmt(empty="n/a"),
                         "same_family_in_resamples": f"{r.same_family:.0%}",
                         "unreachable_in_resamples": f"{r.unreachable:.0%}",
                         "test_top1": r.top1.fmt(), "test_top3": r.top3.fmt(),
                         f"test_recall_at_{REFERENCE_TAU}": r.reference.recall.fmt()})
        return pd.DataFrame(rows).set_index("scorer")

    def frontier(self, split: str = "test") -> pd.DataFrame:
        return pd.concat([frontier(sc, self.rule, split) for sc in self.scored.values()], ignore_index=True)

    def category_table(self) -> pd.DataFrame:
        return pd.concat([category_errors(self.scored[n], r.gate, n_boot=self.rule.n_boot, seed=self.rule.seed)
                          for n, r in self.results.items() if r.reachable], ignore_index=True)

    def calibration(self, name: str, corpus: str = "datasets/tau/pairs.csv") -> dict:
        """The record `retrieval.write_calibration` stores for one embedder (no timestamp: reproducible)."""
        res = self.results[name]
        fam = res.families[res.winner]
        return {"embedder": name, "gate": res.gate.to_dict(), "family": res.winner,
                "rule": {"budget_false_tokens_per_session": self.rule.budget,
                         "goals_per_session": self.rule.goals_per_session, "n_boot": self.rule.n_boot,
                         "seed": self.rule.seed, "selection": self.rule.describe()},
                "corpus": {"pairs": corpus, "sha256": self.pairs.attrs.get("sha256"),
                           "lessons": res.n_lessons},
                "calibration": fam.calibration.to_dict(), "test": fam.test.to_dict(),
                "holds_on_test": res.holds(self.rule.budget), "unreachable_in_resamples": round(res.unreachable, 4),
                "over_budget_in_resamples": round(fam.over_budget, 4),
                "by": "overlay-kit calibrate-tau (overlay_kit.studies.threshold)"}

    def finding(self) -> str:
        """Markdown written from the numbers by the rule (no figure in it is typed by hand)."""
        b = self.rule.budget
        lines = [f"**Rule** (fixed before the data): {self.rule.describe()}."]
        for name, r in self.results.items():
            if not r.reachable:
                lines.append(f"**{name}**: no gate retrieves anything within {b:g} tokens per session — "
                             f"unreachable; no gate is recommended.")
                continue
            fam, absolute = r.families[r.winner], r.families.get("absolute")
            c, t = fam.calibration, fam.test
            verdict = ("**holds** on the held-out half" if r.holds(b) else "**does not hold** on the held-out half")
            if r.winner == "absolute":
                versus = "absolute τ is itself the best family on the calibration half"
            elif absolute is None:
                versus = "no absolute τ is within the budget"
            elif r.vs_absolute.low == r.vs_absolute.high == 0:
                versus = (f"on the test half it makes the same calls as absolute τ ({absolute.calibration.gate}) "
                          f"on every resample — the families do not differ here")
            elif r.vs_absolute.low > 0:
                versus = (f"it beats absolute τ ({absolute.calibration.gate}) on the test half by "
                          f"{r.vs_absolute.fmt()} recall")
            else:
                versus = (f"but the test half **cannot separate** it from absolute τ ({absolute.calibration.gate}): "
                          f"recall difference {r.vs_absolute.fmt()} includes 0 — no power for that claim")
            lines.append(
                f"**{name} → {c.gate}** ({r.winner}). Calibration half: recall {c.recall.fmt()} at "
                f"{c.false_tokens.fmt('.0f')} false-injection tokens per session. Held-out half: recall "
                f"{t.recall.fmt()}, {t.false_tokens.fmt('.0f')} tokens, precision {t.precision.fmt()} — the pick "
                f"{verdict}; {versus}. Re-picking on {self.rule.n_boot} lesson resamples: the same family wins in "
                f"{r.same_family:.0%}, nothing is reachable within budget in {r.unreachable:.0%}, and this gate "
                f"breaks the budget in {fam.over_budget:.0%}. Ranking alone puts the relevant lesson first for "
                f"{r.top1.fmt()} of held-out relevant goals and in the top 3 for {r.top3.fmt()}; the inherited "
                f"τ = {REFERENCE_TAU} retrieves {r.reference.recall.fmt()} of them"
                + (" — dark." if r.reference.recall.estimate == 0 else "."))
        if not any(r.reachable for r in self.results.values()):
            return "\n\n".join(lines)
        n = next(iter(self.results.values()))
        lines.append(f"Power: each half holds {n.n_lessons['test']} lessons and {n.n_relevant['test']} relevant "
                     f"goals, so a recall interval spans about ±{_halfwidth(self):.2f}; differences between "
                     f"families smaller than that are not resolved here.")
        return "\n\n".join(lines)


def _halfwidth(study: TauStudy) -> float:
    w = [(r.families[r.winner].test.recall.high - r.families[r.winner].test.recall.low) / 2
         for r in study.results.values() if r.reachable]
    return float(np.median(w)) if w else float("nan")


def calibrations(directory: str | Path | None = None) -> pd.DataFrame:
    """The stored calibrations (default: the ones the project ships, `datasets/tau/gates`), one row each."""
    rows = []
    for path in sorted(Path(directory or CORPUS_DIR / "gates").glob("*.json")):
        rec = retrieval.load_calibration(path)
        cal, test = rec.get("calibration", {}), rec.get("test", {})
        fmt = lambda v, spec=".2f": Interval(*v).fmt(spec) if v and v[0] is not None else "n/a"  # noqa: E731
        rows.append({"embedder": rec["embedder"], "gate": str(rec["gate"]), "cal_recall": fmt(cal.get("recall")),
                     "cal_false_tokens": fmt(cal.get("false_tokens"), ".0f"), "test_recall": fmt(test.get("recall")),
                     "test_false_tokens": fmt(test.get("false_tokens"), ".0f"),
                     "holds_on_test": rec.get("holds_on_test"), "file": path.name})
    return pd.DataFrame(rows).set_index("embedder")


def default_scorers() -> list[Scorer]:
    """The bundled embedder, the TF-IDF baseline, and all-MiniLM-L6-v2 when the optional extra is installed."""
    out = [get_scorer(None), get_scorer(TFIDF)]
    try:
        out.append(get_scorer(retrieval.MINILM))
    except retrieval.EmbedderUnavailable:
        pass
    return out


def run(pairs: pd.DataFrame | None = None, scorers: Sequence[Scorer] | None = None, *, budget: float = Rule.budget,
        goals_per_session: int = Rule.goals_per_session, n_boot: int = Rule.n_boot, seed: int = Rule.seed) -> TauStudy:
    """The τ study: every scorer (default: `default_scorers()`) on `pairs` (default: the project's corpus),
    every gate family, under one `Rule`."""
    if budget < 0 or goals_per_session < 1 or n_boot < 10:
        raise ValueError(f"need budget ≥ 0, goals_per_session ≥ 1 and n_boot ≥ 10; got {budget}, "
                         f"{goals_per_session}, {n_boot}")
    pairs = load_corpus() if pairs is None else pairs
    rule = Rule(float(budget), int(goals_per_session), int(n_boot), int(seed))
    scored = {}
    for scorer in default_scorers() if scorers is None else scorers:
        sc = score(pairs, scorer)
        scored[sc.scorer] = sc
    if not scored:
        raise ValueError("run needs at least one scorer")
    return TauStudy(pairs, scored, {n: study_embedder(sc, rule) for n, sc in scored.items()}, rule)
