"""The tier-3 selection study (notebook 18, datasets/rules/18_selection.yaml): which selection puts the lesson a
goal needs in front of the model, and keeps the rest out, at 20 to 300 lessons per agent?

    corpus = load("dev")                           # datasets/selection/dev (FORMAT.md), checked line by line
    arms = candidates(rule, corpus)                # resident, mem0, letta, lexical, dense-E, hybrid-E, ...
    tuned = tune(arm, corpus, rule)                # the arm's Rule, chosen on the tune split
    rows = trial(corpus, arm, tuned, split="eval", uses=0, size=300, seed=0)   # one row per goal (cold)

Every retrieval arm runs the product's own `overlay_kit.selection` (the same scores and admission); the stand-ins
(resident, Mem0's search, Letta's core block) are written here from their authors' defaults. Embeddings are
computed once per embedder and text (`Texts`), so a sweep over rules re-scores nothing.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd

from .. import retrieval
from .. import selection as sel
from ..common import cosines
from ..metrics import Interval, bootstrap_ci, ratio_ci
from ..prompt import count_many
from ..resources import dataset_path
from .world import (  # the corpus is the realistic world's too: its loader lives there
    CorpusGoal,
    CorpusLesson,
    SelectionCorpus,
    SelectionCorpusError,
    shares_word,
    split_of,
)
from .world import selection_corpus as load

__all__ = [
    "Arm",
    "Cached",
    "CorpusGoal",
    "CorpusLesson",
    "SelectionCorpus",
    "SelectionCorpusError",
    "SelectionStudy",
    "Texts",
    "arms",
    "choose",
    "equal_tokens",
    "equal_tokens_table",
    "load",
    "mem0_arm",
    "metrics_of",
    "paired_by_lesson",
    "Reranker",
    "parse_rerank",
    "record_reranker",
    "replay_reranker",
    "rerank_messages",
    "reranker_figures",
    "reranker_findings",
    "reranker_trials",
    "run",
    "split_of",
    "stand_in_verdict",
    "trial",
    "tune",
    "use_curve",
]

# ------------------------------------------------------------------------------------------ embeddings


class Texts:
    """Every text's vector under one embedder, computed once (goals as queries, lessons and sections as
    passages: e5 embeds them differently)."""

    def __init__(self, embedder):
        self.embedder = embedder
        self.passages: dict[str, np.ndarray] = {}
        self.queries: dict[str, np.ndarray] = {}

    def query(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.queries]
        if missing:
            encode = getattr(self.embedder, "encode_query", self.embedder.encode)
            self.queries.update(zip(missing, np.asarray(encode(missing), dtype=np.float64)))
        return np.stack([self.queries[t] for t in texts])

    def passage(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.passages]
        if missing:
            self.passages.update(zip(missing, np.asarray(self.embedder.encode(missing), dtype=np.float64)))
        return np.stack([self.passages[t] for t in texts])


class Cached:
    """An embedder whose vectors come from a `Texts` cache, under the cached embedder's identity: `selection.score`
    and `world.comeback` run unchanged on cached vectors."""

    def __init__(self, texts: Texts):
        self.texts = texts
        self.id = getattr(texts.embedder, "id", type(texts.embedder).__name__)

    def encode(self, items):
        return self.texts.passage(items)

    def encode_query(self, items):
        return self.texts.query(items)


@lru_cache(maxsize=None)
def texts_for(embedder_name: str) -> Texts:
    return Texts(retrieval.load_embedder(embedder_name))


# ------------------------------------------------------------------------------------------ arms


@dataclass(frozen=True)
class Arm:
    """One candidate: a product selection (`rule` tuned over `grid`) or a stand-in (`kind`)."""

    name: str
    kind: str  # "selection", "resident", "mem0", "letta"
    embedder: str | None = None
    triggers: bool = True  # the lesson's evidence triggers count (False: its text alone)
    pool: str = "max"  # how the dense score pools a lesson's triggers and text (`SelectionRule.pool`)
    weights: tuple[str, ...] = ("dense",)  # the components the rule may weigh
    params: dict = field(default_factory=dict, hash=False, compare=False)


def arms(rule, installed: Sequence[str]) -> list[Arm]:
    """The rule's candidates, for the embedders installed here."""
    p = rule.params
    out = [Arm("resident", "resident"), Arm("lexical", "selection", "wordllama", weights=("lexical",))]
    hybrid = ("dense", "lexical")
    for e in installed:  # the stand-ins search with the same embedder as the selections they are compared to
        out += [
            mem0_arm(e, p),
            Arm(f"letta-{e}", "letta", e, False, params={"chars": p["letta_block_chars"], "k": p["letta_archival_k"]}),
            Arm(f"text-only-{e}", "selection", e, triggers=False),
            Arm(f"dense-{e}", "selection", e),
            Arm(f"hybrid-{e}", "selection", e, weights=hybrid),
            Arm(f"hybrid-section-{e}", "selection", e, weights=(*hybrid, "section")),
        ]
        if p.get("pools"):  # rule v3: the centroid pooling beside each max-pooled arm with triggers
            out += [
                Arm(f"dense-centroid-{e}", "selection", e, pool="centroid"),
                Arm(f"hybrid-centroid-{e}", "selection", e, weights=hybrid, pool="centroid"),
                Arm(f"hybrid-section-centroid-{e}", "selection", e, weights=(*hybrid, "section"), pool="centroid"),
            ]
    return out


def mem0_arm(embedder: str, params: dict) -> Arm:
    """Mem0's search stand-in with this embedder: the top `mem0_top_k` at cosine >= `mem0_threshold` (the rule's)."""
    return Arm(
        f"mem0-{embedder}",
        "mem0",
        embedder,
        False,
        params={"k": params["mem0_top_k"], "threshold": params["mem0_threshold"]},
    )


# ------------------------------------------------------------------------------------------ trials


@dataclass(frozen=True)
class _Goal:
    text: str
    needs: tuple[str, ...]
    kind: str  # need, multi, none
    index: int  # which of its lesson's four goals (-1 for a multi-need or no-need goal)
    owner: str  # the lesson whose family it belongs to ("" for a multi-need or no-need goal)
    no_shared: bool  # a needing goal that shares no word with its lesson's taught goal


def _goals(corpus: SelectionCorpus, agent: str, split: str) -> list[_Goal]:
    out = []
    for lesson in corpus.lessons:
        if lesson.agent == agent and split_of(lesson.id) == split:
            out += [
                _Goal(g, (lesson.id,), "need", k, lesson.id, not shares_word(g, lesson.taught))
                for k, g in enumerate(lesson.goals)
            ]
    for g in corpus.goals:
        if g.agent != agent:
            continue
        splits = {split_of(i) for i in g.needs} or {split_of(g.goal)}
        if splits == {split}:
            out.append(_Goal(g.goal, g.needs, "multi" if g.needs else "none", -1, "", False))
    return out


def _pool(corpus: SelectionCorpus, agent: str, size: int | None, seed: int) -> list[CorpusLesson]:
    """The agent's memory: all its lessons, or a seeded sample of `size`, in teach order (the sample's)."""
    lessons = sorted((lesson for lesson in corpus.lessons if lesson.agent == agent), key=lambda x: x.id)
    rng = random.Random(f"{agent}:{size}:{seed}")
    rng.shuffle(lessons)
    return lessons if size is None else lessons[:size]


def trial(
    corpus: SelectionCorpus,
    arm: Arm,
    rule: sel.SelectionRule | None,
    *,
    split: str,
    uses: int = 0,
    size: int | None = None,
    seed: int = 0,
    rotation: int | None = None,
    only: Collection[tuple[str, str]] | None = None,
    rerank: Callable[[str, str, list[CorpusLesson]], list[int]] | None = None,
) -> pd.DataFrame:
    """One row per goal of the split: what the arm put in context for it. `uses`: how many needs of each lesson
    since it was taught became its triggers (0, cold: taught; 1: taught and restated; 2 and 3 add its other goals
    — with `rotation` r, only goal r of each family is asked, and the evidence is drawn from the rest). `size`:
    each agent's memory sampled to that many lessons (None: all). `only`: the (agent, goal) pairs to ask (None:
    every goal). `rerank(agent, goal, admitted lessons best first)`: the positions it keeps of what the arm
    admitted (rule 18_reranker)."""
    rows = []
    for agent in corpus.agents():
        pool = _pool(corpus, agent, size, seed)
        if size is not None and len(pool) < size:
            continue
        held = {lesson.id for lesson in pool}
        goals = [g for g in _goals(corpus, agent, split) if set(g.needs) <= held]
        if not goals:
            continue
        if rotation is not None:  # one goal of each family; the others are evidence
            goals = [g for g in goals if g.kind != "need" or g.index == rotation]
        if only is not None:
            goals = [g for g in goals if (agent, g.text) in only]
            if not goals:
                continue
        triggers = [_evidence(x, uses, rotation or 0) for x in pool]
        admitted = _admit(arm, rule, pool, [g.text for g in goals], triggers, corpus.sections[agent])
        tokens = dict(zip([x.id for x in pool], count_many([x.body for x in pool])))
        for g, chosen in zip(goals, admitted):
            if rerank is not None:
                chosen = [chosen[i] for i in rerank(agent, g.text, [pool[j] for j in chosen])]
            ids = [pool[j].id for j in chosen]
            rows.append(
                {
                    "agent": agent,
                    "size": len(pool),
                    "seed": seed,
                    "goal": g.text,
                    "kind": g.kind,
                    "owner": g.owner,
                    "no_shared": g.no_shared,
                    "needs": g.needs,
                    "needed": len(g.needs),
                    "found": len(set(g.needs) & set(ids)),
                    "admitted": len(ids),
                    "irrelevant": len(set(ids) - set(g.needs)),
                    "tokens": sum(tokens[i] for i in ids),
                }
            )
    return pd.DataFrame(rows)


def _evidence(x: CorpusLesson, uses: int, rotation: int) -> tuple[str, ...]:
    """A lesson's triggers after `uses` needs since it was taught: its taught goal, then the goal it was restated
    at, then its other goals in turn (starting after goal `rotation`, the one being asked)."""
    later = (x.restated, *(x.goals[(rotation + k) % 4] for k in (1, 2, 3)))
    return (x.taught, *later[:uses])


def _admit(arm: Arm, rule, pool, goals, triggers, sections) -> list[list[int]]:
    if arm.kind == "resident":
        return [list(range(len(pool)))] * len(goals)
    texts = texts_for(arm.embedder)
    if arm.kind in ("mem0", "letta"):
        sims = cosines(texts.query(goals), texts.passage([x.body for x in pool]))
        order = np.lexsort((np.tile(np.arange(len(pool)), (len(goals), 1)), -sims), axis=1)
        if arm.kind == "mem0":
            return [
                [j for j in row[: arm.params["k"]] if sims[i, j] >= arm.params["threshold"]]
                for i, row in enumerate(order)
            ]
        block, used = [], 0  # the core block: the most recently taught lessons that fit
        for j in range(len(pool) - 1, -1, -1):
            if used + len(pool[j].body) + 1 > arm.params["chars"]:
                break
            block.append(j)
            used += len(pool[j].body) + 1
        archival = [[j for j in row if j not in block][: arm.params["k"]] for row in order]
        return [sorted(block + extra) for extra in archival]
    return [[j for j, _ in row] for row in rule.admit(_scores(arm, rule, pool, goals, triggers, sections, texts))]


def _scores(arm, rule, pool, goals, triggers, sections, texts) -> sel.Scores:
    lessons = [
        sel.Candidate(x.id, t if arm.triggers else (), x.body, sections.get(x.section, ""))
        for x, t in zip(pool, triggers)
    ]
    return sel.score(goals, lessons, Cached(texts), rule)


# ------------------------------------------------------------------------------------------ tuning


def rules(arm: Arm, grid: dict, floors: Sequence[float]) -> Iterator[sel.SelectionRule]:
    """The grid's rules for an arm, in the grid's order."""
    lexical = grid["lexical"] if "lexical" in arm.weights else [0.0]
    section = grid["section"] if "section" in arm.weights else [0.0]
    dense = 1.0 if "dense" in arm.weights else 0.0
    for lx, sc, floor, margin, k in product(lexical, section, floors, grid["margin"], grid["k"]):
        yield sel.SelectionRule(
            dense=dense, lexical=1.0 if dense == 0 else lx, section=sc, floor=floor, margin=margin, k=k, pool=arm.pool
        )


def tune(corpus: SelectionCorpus, arm: Arm, rule) -> pd.DataFrame:
    """The arm's grid measured on the tune split, cold, at the largest size: one row per rule (the rule file's
    procedure; `choose` picks from it)."""
    grid, size = rule.params["grid"], max(rule.params["sizes"])
    table = []
    for weights in dict.fromkeys((r.dense, r.lexical, r.section) for r in rules(arm, grid, [0.0])):
        base = sel.SelectionRule(*weights, floor=-10.0, margin=10.0, k=max(grid["k"]), pool=arm.pool)
        agents = []
        for need, cost, scores in _scored(corpus, arm, base, "tune", size):
            total = base.combine(scores)
            order = np.argsort(-total, axis=1, kind="stable")
            agents.append(tuple(np.take_along_axis(m, order, axis=1) for m in (need, cost, total)))
        every = np.concatenate([v.ravel() for _, _, v in agents])
        floors = sorted({round(float(q), 6) for q in np.quantile(every, grid["floor_quantiles"])})
        for r in rules(arm, grid, floors):
            if (r.dense, r.lexical, r.section) == weights:
                table.append({"rule": r, **_measure(r, agents)})
    return pd.DataFrame(table)


def choose(
    table: pd.DataFrame,
    *,
    irrelevant_bound: float | None = None,
    k_max: int | None = None,
    tokens_max: float | None = None,
) -> sel.SelectionRule | None:
    """The rule of `table` with the highest needed-in-context within the bounds (ties: fewer tokens, then the
    grid's order); None when no rule is within them."""
    ok = table
    if irrelevant_bound is not None:
        ok = ok[ok.irrelevant_share <= irrelevant_bound]
    if k_max is not None:
        ok = ok[[r.k <= k_max for r in ok["rule"]]]
    if tokens_max is not None:
        ok = ok[ok.tokens <= tokens_max]
    if ok.empty:
        return None
    return ok.sort_values(["needed_in_context", "tokens"], ascending=[False, True], kind="stable").iloc[0]["rule"]


def _scored(corpus, arm, base, split, size) -> list:
    out = []
    for agent in corpus.agents():
        pool = _pool(corpus, agent, size, 0)
        if size is not None and len(pool) < size:
            continue
        goals = [g for g in _goals(corpus, agent, split) if set(g.needs) <= {x.id for x in pool}]
        need = np.array([[x.id in g.needs for x in pool] for g in goals], dtype=bool).reshape(len(goals), len(pool))
        tokens = np.array(count_many([x.body for x in pool]), dtype=float)
        out.append(
            (
                need,
                np.broadcast_to(tokens, need.shape),
                _scores(
                    arm,
                    base,
                    pool,
                    [g.text for g in goals],
                    [(x.taught,) for x in pool],
                    corpus.sections[agent],
                    texts_for(arm.embedder),
                ),
            )
        )
    return out


def _measure(r: sel.SelectionRule, agents) -> dict:
    """needed-in-context, irrelevant share and tokens per goal of a rule over sorted (need, cost, score) rows."""
    found = needed = admitted = irrelevant = tokens = goals = 0
    for need, cost, values in agents:
        mask = r.admit_sorted(values)
        found += int((mask & need).sum())
        needed += int(need.sum())
        admitted += int(mask.sum())
        irrelevant += int((mask & ~need).sum())
        tokens += float(cost[mask].sum())
        goals += len(need)
    return {
        "needed_in_context": found / max(needed, 1),
        "irrelevant_share": irrelevant / max(admitted, 1),
        "tokens": tokens / max(goals, 1),
    }


# ------------------------------------------------------------------------------------------ figures


def metrics_of(rows: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0) -> dict[str, Interval]:
    """The rule's metrics with their intervals (needed-in-context over lessons, the rest over goals)."""
    need = rows[rows.kind == "need"]
    per_lesson = need.groupby("owner")[["found", "needed"]].sum()
    quiet = need[need.no_shared].groupby("owner")[["found", "needed"]].sum()

    def ratio(frame, num, den):
        return ratio_ci(frame[num], frame[den], n_resamples=n_boot, seed=seed)

    return {
        "needed_in_context": ratio(per_lesson, "found", "needed"),
        "no_shared_word": ratio(quiet, "found", "needed"),
        "irrelevant_share": ratio(rows, "irrelevant", "admitted"),
        "tokens_per_goal": bootstrap_ci(
            rows["tokens"].to_numpy(float), statistic=lambda a, axis=-1: a.mean(axis), n_resamples=n_boot, seed=seed
        ),
    }


# ------------------------------------------------------------------------------------------ the study


@dataclass
class SelectionStudy:
    """Everything notebook 18 shows: each arm's tuned rule and figures, the pick, and the comparisons."""

    rule: object
    arms: list[Arm]
    tuned: dict[str, sel.SelectionRule | None]  # arm name → its rule (None: no rule within the bounds)
    fallback: bool  # no arm met the irrelevant bound: rules chosen under k_safe and the token reserve
    figures: pd.DataFrame  # arm × mode: the eval figures at the largest size
    latency: dict[str, float]  # arm name → median ms per goal at 300 lessons (benchmarks/bench_selection.py)
    pick: str | None


def latency_ms(arm: Arm, record: dict) -> float | None:
    """The arm's measured median selection time per goal (None: not measured)."""
    if arm.kind != "selection":
        return 0.0 if arm.kind == "resident" else None
    config = "hybrid-section" if "section" in arm.weights else "hybrid" if "lexical" in arm.weights else "dense"
    config += "" if arm.pool == "max" else f"-{arm.pool}"
    for row in record["results"]:
        if row["embedder"] == arm.embedder and config in row:
            return row[config]["median_ms"]
    return None


def run(rule, installed: Sequence[str], corpus: SelectionCorpus | None = None) -> SelectionStudy:
    """The rule file's procedure on the dev corpus."""
    corpus = corpus or load("dev")
    p, size = rule.params, max(rule.params["sizes"])
    candidates = arms(rule, installed)
    tables = {a.name: tune(corpus, a, rule) for a in candidates if a.kind == "selection"}
    tuned = {n: choose(t, irrelevant_bound=p["irrelevant_bound"]) for n, t in tables.items()}
    fallback = all(r is None for r in tuned.values())
    if fallback:
        tuned = {n: choose(t, k_max=p["k_safe"], tokens_max=p["token_reserve"]) for n, t in tables.items()}
    record = json.loads(dataset_path("selection", "latency.json").read_text(encoding="utf-8"))
    rows, latency = [], {}
    for a in candidates:
        latency[a.name] = latency_ms(a, record)
        if a.kind == "selection" and tuned[a.name] is None:
            continue
        for uses, mode in enumerate(("cold", "warm")):
            figures = metrics_of(
                trial(corpus, a, tuned.get(a.name), split="eval", uses=uses, size=size),
                n_boot=p["n_boot"],
                seed=p["seed"],
            )
            rows.append(
                {
                    "arm": a.name,
                    "mode": mode,
                    **{k: v.estimate for k, v in figures.items()},
                    **{f"{k}_ci": (round(v.low, 3), round(v.high, 3)) for k, v in figures.items()},
                }
            )
    figures = pd.DataFrame(rows)
    cold = figures[figures["mode"] == "cold"].set_index("arm")
    fast = [
        a.name
        for a in candidates
        if a.kind == "selection"
        and tuned[a.name] is not None
        and latency[a.name] is not None
        and latency[a.name] <= p["latency_ms"]
    ]
    pick = None
    if fast:
        best = max(cold.loc[fast, "needed_in_context"])
        near = cold.loc[[n for n in fast if cold.loc[n, "needed_in_context"] >= best - p["tie_margin"]]]
        pick = min(near.index, key=lambda n: (round(near.loc[n, "tokens_per_goal"], 6), latency[n]))
    return SelectionStudy(rule, candidates, tuned, fallback, figures, latency, pick)


def paired_by_lesson(a: pd.DataFrame, b: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0) -> tuple[Interval, float]:
    """a − b in needed-in-context, paired by lesson (their needing goals' trials), and the MDE at 80 % power,
    two-sided 0.05: 2.8 × sd(per-lesson differences) / √n."""
    rate = [
        x[x.kind == "need"].groupby("owner")["found"].sum() / x[x.kind == "need"].groupby("owner")["needed"].sum()
        for x in (a, b)
    ]
    diff = (rate[0] - rate[1]).dropna().to_numpy(float)
    ci = bootstrap_ci(diff, statistic=lambda d, axis=-1: d.mean(axis), n_resamples=n_boot, seed=seed)
    return ci, float(2.8 * diff.std(ddof=1) / np.sqrt(len(diff)))


def stand_in_verdict(ci: Interval, mde: float, tokens_a: float, tokens_b: float) -> str:
    """The rule's words for the pick against a stand-in."""
    if ci.low > 0:
        return (
            "higher"
            if tokens_a <= tokens_b
            else "more needed lessons, at more tokens per goal (not 'higher' by the rule)"
        )
    if ci.high < 0:
        return "lower"
    return f"no difference detected at MDE {mde:.2f}"


def use_curve(
    corpus: SelectionCorpus,
    arm: Arm,
    rule: sel.SelectionRule | None,
    *,
    split: str,
    size: int | None = None,
    uses: Sequence[int] = (0, 1, 2, 3),
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Needed-in-context as evidence accumulates: each goal of a family asked in turn, its lesson's triggers the
    taught goal plus `uses` of the others (restated first). One row per number of uses."""
    rows = []
    for u in uses:
        trials = pd.concat([trial(corpus, arm, rule, split=split, uses=u, size=size, rotation=r) for r in range(4)])
        f = metrics_of(trials, n_boot=n_boot, seed=seed)["needed_in_context"]
        rows.append({"uses": u, "needed_in_context": f.estimate, "low": f.low, "high": f.high})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ the local model as a reranker (18_reranker)

RERANKER_RULE = "18_reranker"
RERANK_MODEL = "qwen2.5-coder-0.5b-instruct"
RERANK_SYSTEM = (
    "You choose which of a user's saved lessons apply to their request. Reply only with the numbers of the lessons "
    "that the request needs, separated by commas, or the word none."
)
RERANK_USER = (
    "Request: {goal}\n\nSaved lessons:\n{lessons}\n\nWhich of these lessons does this request need? Reply with "
    "their numbers separated by commas, or none."
)
_NONE = re.compile(r"\bnone\b|\bno lessons?\b", re.I)


def rerank_messages(goal: str, bodies: Sequence[str]) -> list[dict]:
    """The rule's prompt: the goal and the admitted lessons numbered from 1, best first."""
    lessons = "\n".join(f"{i}. {b}" for i, b in enumerate(bodies, 1))
    return [
        {"role": "system", "content": RERANK_SYSTEM},
        {"role": "user", "content": RERANK_USER.format(goal=goal, lessons=lessons)},
    ]


def parse_rerank(reply: str, n: int) -> list[int] | None:
    """The positions (0-based, in the order named, each once) of the lessons a reply names among `n`; [] when it
    names none and says "none"; None when it is unparseable (the caller then keeps all `n`)."""
    named = [int(x) - 1 for x in re.findall(r"\d+", reply) if 1 <= int(x) <= n]
    if named:
        return list(dict.fromkeys(named))
    return [] if _NONE.search(reply) else None


@dataclass
class Reranker:
    """`trial`'s `rerank`: one greedy reply of `model` through `client` (live, recording or replaying) per goal;
    every reply is logged (`log`: its text, what it kept, whether it parsed, its wall time)."""

    client: object  # llm.client.LemonadeClient
    model: str
    max_tokens: int
    log: list[dict] = field(default_factory=list)

    def __call__(self, agent: str, goal: str, lessons: list[CorpusLesson]) -> list[int]:
        r = self.client.chat(
            self.model,
            rerank_messages(goal, [x.body for x in lessons]),
            max_completion_tokens=self.max_tokens,
            temperature=0.0,
            seed=0,
        )
        kept = parse_rerank(r.content, len(lessons))
        self.log.append(
            {
                "agent": agent,
                "goal": goal,
                "reply": r.content,
                "unparseable": kept is None,
                "kept": len(lessons) if kept is None else len(kept),
                "elapsed_s": r.elapsed_s,
                "prompt_tokens": r.prompt_tokens,
                "replayed": r.replayed,
                "recorded_at": r.recorded_at,
            }
        )
        return list(range(len(lessons))) if kept is None else kept


def shipped_arm() -> Arm:
    """The shipped selection as a study arm (rule 18's pick: hybrid, the bundled embedder, SHIPPED's pooling)."""
    from ..defaults import SHIPPED

    weights = ("dense", "lexical", "section") if SHIPPED.select_section else ("dense", "lexical")
    name = "-".join(["hybrid", *(["section"] if SHIPPED.select_section else []), SHIPPED.select_pool])
    return Arm(f"{name}-{SHIPPED.embedder}", "selection", SHIPPED.embedder, weights=weights, pool=SHIPPED.select_pool)


def equal_tokens(rule, corpus: SelectionCorpus | None = None, held_out: SelectionCorpus | None = None) -> dict:
    """Rule 18_equal_tokens: the shipped selection cut to Mem0's token spend against Mem0's search. k_eq is the
    largest k (1 .. the shipped k) whose mean tokens per goal on the dev tune split stay within Mem0's there; the
    cut and Mem0 are then judged on the eval split, paired by lesson, and shown beside on `held_out` (both
    splits, every lesson). No k fits: `k_eq` None and no verdict."""
    p = rule.params
    corpus = corpus or load("dev")
    arm, base = shipped_arm(), sel.shipped_rule()
    mem0 = mem0_arm(arm.embedder, p)
    budget = float(trial(corpus, mem0, None, split="tune", size=p["size"]).tokens.mean())
    spend = {
        k: float(trial(corpus, arm, replace(base, k=k), split="tune", size=p["size"]).tokens.mean())
        for k in range(1, base.k + 1)
    }
    fits = [k for k, t in spend.items() if t <= budget]
    out = {
        "mem0_tune_tokens": budget,
        "tune_tokens": spend,
        "k_eq": max(fits) if fits else None,
        "arm": arm.name,
        "mem0": mem0.name,
    }
    if out["k_eq"] is None:
        return out
    cut = replace(base, k=out["k_eq"])

    def judged(data: SelectionCorpus, splits: Sequence[str], size: int | None) -> dict:
        runs = {
            name: pd.concat([trial(data, a, r, split=s, size=size) for s in splits])
            for name, a, r in (("cut", arm, cut), ("shipped", arm, base), ("mem0", mem0, None))
        }
        ci, mde = paired_by_lesson(runs["cut"], runs["mem0"], n_boot=p["n_boot"], seed=p["seed"])
        tokens = {name: float(rows.tokens.mean()) for name, rows in runs.items()}
        return {
            "metrics": {name: metrics_of(rows, n_boot=p["n_boot"], seed=p["seed"]) for name, rows in runs.items()},
            "tokens": tokens,
            "difference": ci,
            "mde": mde,
            "verdict": stand_in_verdict(ci, mde, tokens["cut"], tokens["mem0"]),
        }

    out["eval"] = judged(corpus, ("eval",), p["size"])
    if held_out is not None:
        out["held_out"] = judged(held_out, ("tune", "eval"), None)
    return out


def equal_tokens_table(judged: dict) -> pd.DataFrame:
    """`equal_tokens`' figures, one row per corpus and arm: the cut, the shipped top k and Mem0."""
    rows = []
    for where, label in (("eval", "dev eval (judged)"), ("held_out", "held-out 2 (beside)")):
        part = judged.get(where)
        for name, m in (part or {}).get("metrics", {}).items():
            ci = part["difference"]
            rows.append(
                {
                    "corpus": label,
                    "arm": {"cut": f"shipped, top {judged['k_eq']}", "shipped": "shipped, top k", "mem0": "Mem0"}[name],
                    **{k: round(v.estimate, 3) for k, v in m.items()},
                    "cut − Mem0": f"{ci.estimate:+.3f} [{ci.low:+.3f}, {ci.high:+.3f}]" if name == "cut" else "",
                    "verdict": part["verdict"] if name == "cut" else "",
                }
            )
    return pd.DataFrame(rows)


def reranker_sample(corpus: SelectionCorpus, n: int, seed: int) -> frozenset[tuple[str, str]]:
    """The rule's seeded sample of (agent, goal) pairs: random.Random(seed).sample of the sorted distinct pairs."""
    pairs = sorted({(a, g.text) for a in corpus.agents() for s in ("tune", "eval") for g in _goals(corpus, a, s)})
    return frozenset(random.Random(seed).sample(pairs, min(n, len(pairs))))


def reranker_trials(client, model: str = RERANK_MODEL, rule=None, corpus: SelectionCorpus | None = None):
    """The shipped top 20 and the reranked selection on the rule's sample of held-out 2, cold: (shipped rows,
    reranked rows, the reranker's log), rows as `trial`'s, in the same goal order."""
    from . import rulefile

    rule = rule or rulefile.load(RERANKER_RULE)
    corpus = corpus or load("heldout2")
    only = reranker_sample(corpus, rule.param("sample_goals"), rule.param("sample_seed"))
    arm, chosen = shipped_arm(), sel.shipped_rule()
    assert chosen.k == rule.param("top_k"), "the shipped k is not the rule's"
    reranker = Reranker(client, model, rule.param("max_tokens"))
    both = [
        pd.concat(
            [trial(corpus, arm, chosen, split=s, only=only, rerank=f) for s in ("tune", "eval")], ignore_index=True
        )
        for f in (None, reranker)
    ]
    return both[0], both[1], pd.DataFrame(reranker.log)


def reranker_path(model: str = RERANK_MODEL) -> Path:
    return dataset_path("recorded") / f"18_reranker_{model}.jsonl"


def record_reranker(model: str = RERANK_MODEL, *, out: Path | None = None):
    """Ask the installed `model` live, through the project's llama.cpp engine, and record every reply (a cassette
    labelled with model, engine, machine and date, and a provenance file beside): the compliance study's
    machinery (`studies.compliance.record_live`). Returns (shipped rows, reranked rows, log)."""
    from . import rulefile
    from .compliance import record_live

    rule = rulefile.load(RERANKER_RULE)
    return record_live(model, rule, out or reranker_path(model), lambda client: reranker_trials(client, model, rule))


def replay_reranker(model: str = RERANK_MODEL, *, path: Path | None = None):
    """The recorded replies replayed (no model, no network): (shipped rows, reranked rows, log, provenance)."""
    from ..llm.client import Cassette, LemonadeClient, Skipped

    path = path or reranker_path(model)
    if not path.is_file():
        raise Skipped(f"no recording at {path} (record it: python -m overlay_kit.studies.selection --rerank)")
    client = LemonadeClient("http://127.0.0.1:9/v1", cassette=Cassette(path), mode="replay")
    shipped, reranked, log = reranker_trials(client, model)
    return shipped, reranked, log, json.loads(path.with_suffix(".provenance.json").read_text())


def reranker_figures(shipped: pd.DataFrame, reranked: pd.DataFrame, log: pd.DataFrame, rule) -> dict:
    """The rule's figures and decision: each arm's metrics, the paired differences, latency and unparseable share."""
    n_boot, seed = rule.param("n_boot"), rule.param("seed")
    arms_ = {"shipped top 20": metrics_of(shipped, n_boot=n_boot, seed=seed)}
    arms_["reranked"] = metrics_of(reranked, n_boot=n_boot, seed=seed)
    recall, mde = paired_by_lesson(reranked, shipped, n_boot=n_boot, seed=seed)
    assert list(shipped.goal) == list(reranked.goal), "the two arms' goals are not paired"

    def fall(i_s, a_s, i_r, a_r, axis=-1):
        return np.sum(i_s, axis=axis) / np.sum(a_s, axis=axis) - np.sum(i_r, axis=axis) / np.where(
            np.sum(a_r, axis=axis) == 0, np.nan, np.sum(a_r, axis=axis)
        )

    irrelevant_fall = bootstrap_ci(
        shipped.irrelevant, shipped.admitted, reranked.irrelevant, reranked.admitted,
        statistic=fall, n_resamples=n_boot, seed=seed,
    )  # fmt: skip
    seconds = log.elapsed_s.to_numpy(float)
    median_ms = float(np.median(seconds) * 1000)
    ok_recall = recall.low >= -rule.param("recall_margin")
    ok_irrelevant = irrelevant_fall.low >= rule.param("irrelevant_margin")
    fast = median_ms <= rule.param("latency_ms")
    if ok_recall and ok_irrelevant:
        verdict = "ships as the default" if fast else "an opt-in for long-lived sessions, not the default (latency)"
    else:
        verdict = "not shipped in any form"
    return {
        "metrics": arms_,
        "recall_difference": recall,
        "recall_mde": mde,
        "irrelevant_fall": irrelevant_fall,
        "median_ms": median_ms,
        "p90_ms": float(np.percentile(seconds, 90) * 1000),
        "unparseable": float(log.unparseable.mean()),
        "unparseable_n": int(log.unparseable.sum()),
        "kept_mean": float(log.kept.mean()),
        "goals": len(log),
        "ok_recall": bool(ok_recall),
        "ok_irrelevant": bool(ok_irrelevant),
        "fast": bool(fast),
        "verdict": verdict,
    }


def reranker_findings(fig: dict, rule) -> list:
    """`reranker_figures` against the rule, as findings (notebook 18's last section)."""
    from .finding import Finding

    p, m = rule.params, fig["metrics"]
    goal_met = m["reranked"]["irrelevant_share"].high <= p["irrelevant_goal"]
    return [
        Finding.of(
            "needed-in-context, reranked minus top 20 (paired by lesson)",
            fig["recall_difference"],
            spec="+.2f",
            bound=-p["recall_margin"],
            side="≥",
            note=f"MDE {fig['recall_mde']:.2f}",
            verdict="within the margin" if fig["ok_recall"] else "drops by more than the margin",
        ),
        Finding.of(
            "irrelevant share, top 20 minus reranked (paired by goal)",
            fig["irrelevant_fall"],
            spec="+.2f",
            bound=p["irrelevant_margin"],
            side="≥",
            verdict="falls by the margin" if fig["ok_irrelevant"] else "does not fall by the margin",
        ),
        Finding.of(
            "irrelevant share, reranked",
            m["reranked"]["irrelevant_share"],
            spec=".2f",
            bound=p["irrelevant_goal"],
            verdict="the issue's goal met" if goal_met else "the issue's goal missed",
        ),
        Finding.of(
            "learned tokens per goal, reranked",
            m["reranked"]["tokens_per_goal"],
            spec=".0f",
            note=f"top 20: {m['shipped top 20']['tokens_per_goal'].estimate:.0f}",
        ),
        Finding(
            "median latency per goal",
            fig["median_ms"],
            unit="ms",
            spec=".0f",
            bound=p["latency_ms"],
            verdict="within rule 18's bound" if fig["fast"] else "over rule 18's bound: not eligible as the default",
            note=f"90th percentile {fig['p90_ms']:.0f} ms",
        ),
        Finding(
            "unparseable replies (all 20 kept)",
            fig["unparseable"],
            spec=".2f",
            note=f"{fig['unparseable_n']} of {fig['goals']}; {fig['kept_mean']:.1f} lessons kept a goal on average",
        ),
    ]


if __name__ == "__main__":  # python -m overlay_kit.studies.selection --rerank [model]
    import sys

    if sys.argv[1:2] == ["--rerank"]:
        s_, r_, log_ = record_reranker(*(sys.argv[2:3] or [RERANK_MODEL]))
        print(len(log_), "replies recorded;", int(log_.unparseable.sum()), "unparseable")
