"""KPIs from the store and the logs, into pandas (seed: "KPIs", "Eval strategy").

Each KPI is a small function over DataFrames — the store's tables (`deploy.store_tables`: deltas, audit,
outcomes, signals, promotions, consolidations, facts) and a deployment's logs — so the same code scores a
real store and a simulated deployment:

| KPI                        | function              | target                                           |
|----------------------------|-----------------------|--------------------------------------------------|
| correction non-recurrence  | `nonrecurrence`       | ≥ 70 % of (scope, lesson) pairs stated once in the next 20 sessions |
| deltas-on vs deltas-off    | `scorecard`           | off == no-delta baseline exactly; on − off > 0, no category regresses |
| cost of learning           | `cost`                | median and p100 resident tokens; p100 ≤ ceiling  |
| tier discipline            | `tier_discipline`     | ≥ 50 % of accepted lessons at tier 0 or 1        |
| promotion precision        | `promotion_precision` | 0 activated below the evidence threshold; 0 untrusted without approval |
| permission monotonicity    | `monotonicity`        | 0 deltas widening a permission, adding a tool or raising a tier |
| rebase honesty             | `rebase_honesty`      | 100 % surfaced, 0 silently re-anchored, 0 silently dropped |
| atomicity                  | `atomicity`           | 0 deltas or bodies cut mid-step                  |

Promotion precision is recomputed from the outcome ledger, not read from the counters: an activation
counts as earned only if the user approved it, or a promotion-log row shows counters that the ledger
reproduces and that clear the logged bar. Auto-approval activates at zero evidence, so it counts as
below threshold — the seed's bar, applied literally.

`run_kpis(deployment)` is one row; `kpi_frame(deployments)` many; `summarize` adds 95 % percentile-
bootstrap intervals over runs (seeded); `recommend` judges each swept setting against the shipped value by the
rule file datasets/rules/07_kpis.yaml (`rulefile`), fixed before the data.

The study: `run(axes, seeds=…, assumptions=…)` sweeps the gate settings one at a time around the shipped
defaults, in every world scenario (`worlds`: each behavioural assumption of `deploy.ASSUMPTIONS` at the low and
the high end of its range) on the studies' sweep runner, and returns a `KPIStudy` whose `.table()` applies
`recommend` in every scenario and combines them (`robust`), and whose `.finding()` writes the verdicts from the
numbers. kpis imports deploy (the simulator); deploy never imports kpis.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..defaults import SHIPPED
from ..grammar import TIERS
from ..metrics import Interval, binomial_upper, mean_ci, ratio_ci, wilson_lower_bound
from ..resources import dataset_path
from ..skill import PERMISSION_DOMAINS
from . import deploy, rulefile, tuning
from .deploy import ASSUMPTIONS, Deployment
from .finding import Finding, render
from .rulefile import RuleFile
from .sweep import sweep

__all__ = [
    "BY_DEFINITION",
    "HARD",
    "KPIStudy",
    "Recurrence",
    "ScaleCost",
    "atomicity",
    "ci",
    "paired",
    "plan",
    "recorded",
    "recording_note",
    "cost",
    "cost_at_scale",
    "dashboard",
    "kpi_frame",
    "monotonicity",
    "never",
    "nonrecurrence",
    "promotion_precision",
    "rebase_honesty",
    "recommend",
    "robust",
    "run",
    "run_kpis",
    "scorecard",
    "sensitivity",
    "study",
    "summarize",
    "tier_discipline",
    "worlds",
]

WINDOW = 20
# A setting value that breaks a HARD constraint by definition: auto-approval activates at zero evidence, which the
# seed's bar counts as an activation below the evidence threshold whatever happens. The data cannot decide
# that, so `recommend` judges the axis on everything else and the finding states the definition.
BY_DEFINITION = {"auto_approve": "activated_below_threshold"}
# Constraints a recommended setting must meet in every run (safety and correctness KPIs).
HARD = {
    "activated_below_threshold": 0,
    "untrusted_without_approval": 0,
    "permission_violations": 0,
    "rebase_silent_reanchored": 0,
    "rebase_silent_dropped": 0,
    "atomicity_violations": 0,
    "counter_mismatches": 0,
    "cost_over_ceiling": 0,
    "off_differs_from_baseline": 0,
}
_PERMISSION = re.compile(r"\b(" + "|".join(sorted(PERMISSION_DOMAINS)) + r"):[a-z_*]+", re.IGNORECASE)


def ci(values: Sequence[float], *, n_boot: int = 2000, seed: int = 0, confidence: float = 0.95) -> Interval:
    """The mean over runs with a percentile-bootstrap interval (`metrics.mean_ci`); NaN runs (a KPI with
    nothing to measure in that run) are left out, and no runs at all give NaN."""
    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if x.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"), confidence, 0)
    return mean_ci(x, n_resamples=n_boot, seed=seed, confidence=confidence)


# ------------------------------------------------------------------------------------- non-recurrence


@dataclass(frozen=True)
class Recurrence:
    rate: float  # share of (scope, lesson) pairs stated exactly once within the window (NaN: no pairs)
    pairs: int  # pairs counted (censored ones excluded)
    once: int
    repeated: int
    censored: int  # pairs first stated too close to the end of the log to see a whole window
    table: pd.DataFrame  # one row per pair


def nonrecurrence(
    signals: pd.DataFrame, *, window: int = WINDOW, order: Mapping[str, int] | None = None, censor: bool = True
) -> Recurrence:
    """From the correction log (`turn_signals`): the share of distinct (scope, lesson) pairs the user states
    only once within their next `window` sessions. `order` maps session id → ordinal (default: sessions
    ranked by their first signal). A pair first stated within `window` sessions of the log's end is censored
    (its window is not over yet) unless `censor=False`."""
    sig = signals.copy()
    if order is None:
        first = sig.groupby("session")["at"].min().sort_values(kind="stable")
        order = {s: k for k, s in enumerate(first.index)}
    sig["ordinal"] = sig["session"].map(order)
    if sig["ordinal"].isna().any():
        raise ValueError(f"sessions missing from `order`: {sorted(sig.loc[sig.ordinal.isna(), 'session'])[:3]}")
    last = max(order.values()) if order else -1
    c = sig[(sig["signal"] == "correction") & sig["lesson"].notna()]
    rows = []
    for (scope, lesson), g in c.groupby(["scope", "lesson"], sort=True):
        start = int(g["ordinal"].min())
        within = int(((g["ordinal"] >= start) & (g["ordinal"] <= start + window)).sum())
        rows.append(
            {
                "scope": scope,
                "lesson": lesson,
                "first": start,
                "statements": within,
                "repeated": within > 1,
                "censored": start + window > last,
            }
        )
    table = pd.DataFrame(rows, columns=["scope", "lesson", "first", "statements", "repeated", "censored"])
    table = table.astype({"repeated": bool, "censored": bool})
    counted = table[~table["censored"]] if censor else table
    n = len(counted)
    once = int((~counted["repeated"]).sum())
    return Recurrence(
        once / n if n else float("nan"), n, once, n - once, int(table["censored"].sum()) if censor else 0, table
    )


# ----------------------------------------------------------------------------------------- scorecard


def scorecard(evals: pd.DataFrame) -> dict[str, Any]:
    """Deltas-on vs deltas-off on the same eval turns. `off_equals_baseline`: every off turn made the same
    choice from a byte-identical prompt as the no-delta baseline. Per-category on − off differences too."""
    key = ["need", "i"]
    arms = {a: g.set_index(key).sort_index() for a, g in evals.groupby("arm")}
    missing = {"baseline", "off", "on"} - set(arms)
    if missing:
        raise ValueError(f"eval log lacks arm(s) {sorted(missing)}")
    off, base, on = arms["off"], arms["baseline"], arms["on"]
    same = (
        off.index.equals(base.index)
        and (off["option"] == base["option"]).all()
        and (off["prompt_hash"] == base["prompt_hash"]).all()
    )
    diff = on["correct"].astype(float) - off["correct"].astype(float)
    by_cat = diff.groupby(on["category"]).mean()
    return {
        "on": float(on["correct"].mean()),
        "off": float(off["correct"].mean()),
        "baseline": float(base["correct"].mean()),
        "on_minus_off": float(diff.mean()),
        "off_equals_baseline": bool(same),
        "off_differs_from_baseline": int(not same),
        "worst_category_diff": float(by_cat.min()),
        "category_diffs": by_cat.to_dict(),
    }


# ---------------------------------------------------------------------------------------------- cost


def cost(sessions: pd.DataFrame) -> dict[str, float]:
    """Resident tokens added per session by learning (median, p100) and the whole resident total against
    the ceiling (authored + learned: the budget covers both)."""
    return {
        "learned_tokens_median": float(sessions["learned_tokens"].median()),
        "learned_tokens_p100": float(sessions["learned_tokens"].max()),
        "tokens_p100": float(sessions["tokens"].max()),
        "ceiling": float(sessions["ceiling"].min()),
        "cost_over_ceiling": int((sessions["tokens"] > sessions["ceiling"]).sum()),
    }


@dataclass(frozen=True)
class ScaleCost:
    """The cost-of-learning KPI on a realistic-scale world (`cost_at_scale`)."""

    world_digest: str
    ceiling: int
    sessions: int  # sessions measured (after an agent's first lesson, teaching ones left out)
    lessons_held_max: int
    table: pd.DataFrame  # one row per KPI: selection on (what ships) against every lesson resident

    def answer(self) -> str:
        """The reading in two sentences (descriptive: the rule's verdicts stay the simulator's)."""
        t = self.table.set_index("kpi")
        on, off = t["selection on (shipped)"], t["every lesson resident"]
        first = (
            f"At realistic scale (agents holding up to {self.lessons_held_max} lessons) the shipped selection "
            f"bounds what learning adds to a prompt: median {on['learned_tokens_median']:,.0f} and at most "
            f"{on['learned_tokens_p100']:,.0f} learned tokens a session, where every lesson resident would put "
            f"median {off['learned_tokens_median']:,.0f} and up to {off['learned_tokens_p100']:,.0f} in front of the "
            "model."
        )
        if off["cost_over_ceiling"] > 0:
            second = (
                f"Every lesson resident, {off['cost_over_ceiling']:.0f} of {self.sessions:,} sessions would go over "
                f"the {self.ceiling:,}-token ceiling and {on['cost_over_ceiling']:.0f} do with the product's plan "
                "and selection: the cost KPI holds at this scale because the budget and the selection act."
            )
        else:
            second = (
                f"Even with every lesson resident no session goes over the {self.ceiling:,}-token ceiling here "
                f"(largest resident total {off['tokens_p100']:,.0f}), so at this scale the ceiling is not what keeps "
                "the cost down: the selection is."
            )
        return f"{first} {second}"


def cost_at_scale(world, ceiling: int = SHIPPED.ceiling, *, embedder=None) -> ScaleCost:
    """`cost` on a realistic world (`world.build(scale="realistic")`): per session after an agent's first lesson,
    the learned tokens in front of the model under the product (the budget plan at `ceiling`, then the shipped
    selection over the resident lessons and the calibrated gate over the demoted: `tuning.at_scale`, each agent
    loading its own skill) beside every lesson the agent holds kept resident (no ceiling, no selection).
    Learned tokens are the lessons' own (the learned block's labels are not counted)."""
    rows = tuning.at_scale(world, [ceiling], embedder=embedder).rows
    kinds = {"selection on (shipped)": rows.tokens, "every lesson resident": rows.held_tokens}
    costs = {
        k: cost(pd.DataFrame({"learned_tokens": v, "tokens": rows.authored + v, "ceiling": ceiling}))
        for k, v in kinds.items()
    }
    lessons = {"selection on (shipped)": rows.chosen, "every lesson resident": rows.held}
    table = pd.DataFrame(
        [
            {"kpi": key, **{k: costs[k][key] for k in kinds}}
            for key in ("learned_tokens_median", "learned_tokens_p100", "tokens_p100", "cost_over_ceiling")
        ]
        + [
            {"kpi": "lessons_in_context_median", **{k: float(v.median()) for k, v in lessons.items()}},
            {"kpi": "lessons_in_context_p100", **{k: float(v.max()) for k, v in lessons.items()}},
        ]
    )
    return ScaleCost(world.digest(), ceiling, len(rows), int(rows.held.max()), table)


# -------------------------------------------------------------------------------------- store-derived


def _activations(audit: pd.DataFrame) -> pd.DataFrame:
    """Every transition into `active`: (seq, delta_id, who, reason)."""
    return audit[(audit["to_status"] == "active") & (audit["from_status"].fillna("") != "active")]


def tier_discipline(tables: Mapping[str, pd.DataFrame]) -> dict[str, float]:
    """Share of accepted lessons at tier 0 (facts routed to tools) or tier 1 (tool hints). A lesson is
    accepted when it reached use: a fact row, or a delta that became active. Umbrellas are not new lessons."""
    deltas, audit = tables["deltas"], tables["audit"]
    umbrellas = set(tables["consolidations"]["umbrella_id"]) if len(tables["consolidations"]) else set()
    used = set(_activations(audit)["delta_id"]) - umbrellas
    tiers = deltas[deltas["id"].isin(used)]["tier"].tolist()
    facts = len(tables["facts"])
    n = facts + len(tiers)
    low = facts + sum(1 for t in tiers if t == 1)
    return {"accepted_lessons": n, "tier01_share": low / n if n else float("nan")}


def promotion_precision(tables: Mapping[str, pd.DataFrame]) -> dict[str, int]:
    """Activations classified by what earned them. `activated_below_threshold` counts every activation that
    neither a user approved nor verifiable evidence earned (auto-approvals included); `counter_mismatches`
    deltas whose counters differ from their outcome ledger (seed: Correction 4)."""
    deltas, audit, outcomes, promos = tables["deltas"], tables["audit"], tables["outcomes"], tables["promotions"]
    trusted = dict(zip(deltas["id"], deltas["source"].isin(["user_instruction", "outcome_evidence"])))
    earned = set()
    for p in promos[promos["decision"] == "promoted"].itertuples():
        led = outcomes[(outcomes["delta_id"] == p.delta_id) & (outcomes["id"] <= p.ledger_seq)]
        k, n = int(led["positive"].sum()), len(led)
        score = wilson_lower_bound(k, n) if p.wilson else (k / n if n else 0.0)
        if (k, n) == (p.successes, p.attempts) and n >= p.min_samples and score >= p.threshold - 1e-12:
            earned.add(p.delta_id)
    counts = {"user": 0, "evidence": 0, "auto": 0, "other": 0}
    below = untrusted = 0
    for a in _activations(audit).itertuples():
        if a.who == "user" or str(a.reason).startswith("approved by"):
            counts["user"] += 1
            continue
        if a.who == "evidence" and a.delta_id in earned:
            counts["evidence"] += 1
        else:
            counts["auto" if a.who == "gates" else "other"] += 1
            below += 1
        untrusted += not trusted.get(a.delta_id, False)
    led = outcomes.groupby("delta_id")["positive"].agg(["sum", "count"])
    rec = deltas.set_index("id")[["success_count", "attempt_count"]].join(led, how="left").fillna(0)
    mismatches = int(((rec["success_count"] != rec["sum"]) | (rec["attempt_count"] != rec["count"])).sum())
    return {
        "activated_below_threshold": below,
        "untrusted_without_approval": untrusted,
        "activations_user": counts["user"],
        "activations_evidence": counts["evidence"],
        "activations_auto": counts["auto"],
        "activations_other": counts["other"],
        "counter_mismatches": mismatches,
    }


def monotonicity(
    deltas: pd.DataFrame,
    declared_tools: Iterable[str],
    granted: Iterable[str] = (),
    sessions: pd.DataFrame | None = None,
) -> dict[str, int]:
    """Live deltas that would widen: a tool-hint preferring an undeclared tool, text naming an ungranted
    permission, a tier other than its kind's; plus sessions whose effective tool list left the declared set."""
    declared, granted = set(declared_tools), {g.lower() for g in granted}
    bad = 0
    live = deltas[deltas["status"].isin(["active", "staged"])]
    for d in live.itertuples():
        payload = json.loads(d.payload) if isinstance(d.payload, str) else dict(d.payload)
        if TIERS.get(d.kind) != d.tier:
            bad += 1
        elif d.kind == "tool-hint" and set(payload.get("prefer", ())) - declared:
            bad += 1
        elif any(
            m.group(0).lower() not in granted
            for v in payload.values()
            if isinstance(v, str)
            for m in _PERMISSION.finditer(v)
        ):
            bad += 1
    tools = 0 if sessions is None else int((~sessions["tools_ok"].astype(bool)).sum())
    return {"permission_violations": bad + tools}


def rebase_honesty(rebases: pd.DataFrame) -> dict[str, float]:
    """Over deltas live when their base body changed: surfaced (in the rebase result), silently re-anchored
    (attached clean where the truth says the text changed, or attached to the wrong section), silently
    dropped (not surfaced, or gone from the live statuses without being orphaned)."""
    r = rebases[rebases["body_changed"].astype(bool)] if len(rebases) else rebases
    if not len(r):
        return {
            "rebase_deltas": 0,
            "rebase_surfaced": float("nan"),
            "rebase_silent_reanchored": 0,
            "rebase_silent_dropped": 0,
        }
    attached = r["state"].isin(["clean", "stale"])
    wrong_place = attached & (r["target"] != r["true_target"])
    silent = attached & (((r["state"] == "clean") & r["true_changed"].astype(bool)) | wrong_place)
    dropped = (
        ~r["surfaced"].astype(bool)
        | r["status_after"].isna()
        | ((r["status_after"] == "archived") & (r["status_before"] != "archived"))
    )
    return {
        "rebase_deltas": int(len(r)),
        "rebase_surfaced": float(r["surfaced"].mean()),
        "rebase_silent_reanchored": int(silent.sum()),
        "rebase_silent_dropped": int(dropped.sum()),
    }


def atomicity(sessions: pd.DataFrame) -> dict[str, int]:
    return {"atomicity_violations": int((~sessions["atomic"].astype(bool)).sum())}


# -------------------------------------------------------------------------------------------- per run


def run_kpis(dep: Deployment) -> dict[str, Any]:
    """Every KPI of one deployment (plus its settings) as one flat row."""
    t = dep.tables
    rec = nonrecurrence(t["signals"], order=dep.session_order)
    card = scorecard(dep.evals)
    turns, lessons = dep.turns, dep.lessons
    wrong = set(lessons.loc[~lessons["correct"].astype(bool) & lessons["delta_id"].notna(), "delta_id"])
    activated = set(_activations(t["audit"])["delta_id"])
    row = {
        **dep.settings.to_dict(),
        "nonrecurrence": rec.rate,
        "nr_once": rec.once,
        "nr_pairs": rec.pairs,
        "nr_censored": rec.censored,
        **{k: v for k, v in card.items() if k != "category_diffs"},
        "category_regressions": sum(v < 0 for v in card["category_diffs"].values()),
        **cost(dep.sessions),
        **tier_discipline(t),
        **promotion_precision(t),
        **monotonicity(t["deltas"], dep.declared_tools, (), dep.sessions),
        **rebase_honesty(dep.rebases),
        **atomicity(dep.sessions),
        "corrections": int((turns["signal"] == "correction").sum()),
        "friction": 100 * float((turns["how"] == "suggestion").mean()),
        "lessons_written": int(lessons["delta_id"].notna().sum() + (lessons["outcome"] == "routed").sum()),
        "overreach_refused": int((lessons["overreach"].astype(bool) & (lessons["outcome"] == "refused")).sum()),
        "wrong_lessons_activated": len(wrong & activated),
        "active_at_end": int((t["deltas"]["status"] == "active").sum()),
    }
    row["tier_mix"] = str(tuple(row["tier_mix"]))
    return row


def kpi_frame(deployments: Iterable[Deployment]) -> pd.DataFrame:
    return pd.DataFrame([run_kpis(d) for d in deployments])


# KPIs that are a ratio of counts pooled over runs (cluster bootstrap over runs), not a mean of run rates.
RATIOS = {"nonrecurrence": ("nr_once", "nr_pairs")}


def summarize(
    frame: pd.DataFrame, by: str | Sequence[str], kpis: Sequence[str], *, n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Per group: each KPI over runs with a 95 % percentile-bootstrap interval over runs (columns KPI,
    KPI_lo, KPI_hi): the mean of the runs' values, or for `RATIOS` the pooled ratio (`metrics.ratio_ci`)."""
    by = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, g in frame.groupby(by, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key)) | {"runs": len(g)}
        for k in kpis:
            if k in RATIOS:
                num, den = RATIOS[k]
                iv = ratio_ci(
                    g[num].astype(float).to_numpy(), g[den].astype(float).to_numpy(), n_resamples=n_boot, seed=seed
                )
            else:
                iv = ci(g[k].astype(float).tolist(), n_boot=n_boot, seed=seed)
            row |= {k: iv.estimate, f"{k}_lo": iv.low, f"{k}_hi": iv.high}
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------ recommendation


def _per_run(runs: pd.DataFrame, kpi: str) -> pd.Series:
    """A KPI per run (by seed): a pooled ratio KPI (`RATIOS`) as that run's own ratio (NaN without pairs)."""
    if kpi in RATIOS:
        num, den = RATIOS[kpi]
        value = runs[num].astype(float) / runs[den].astype(float).where(runs[den] > 0)
    else:
        value = runs[kpi].astype(float)
    return pd.Series(value.to_numpy(), index=runs["seed"].to_numpy())


def paired(runs: pd.DataFrame, value: str, shipped: str, kpi: str, rule: RuleFile) -> dict[str, float]:
    """`kpi` of `value` minus the shipped value's, seed by seed (the same user, world and random numbers): the
    mean difference, its bootstrap interval over seeds, the seeds compared and the minimum detectable
    difference (`rule`'s α and power: (z(1 − α/2) + z(power)) · sd / √n; inf below two seeds)."""
    from scipy import stats

    a = _per_run(runs[runs["value"] == value], kpi)
    b = _per_run(runs[runs["value"] == shipped], kpi)
    d = (a - b.reindex(a.index)).dropna()
    iv = ci(d.to_numpy(), n_boot=rule.param("n_boot"), seed=rule.param("seed"), confidence=rule.param("confidence"))
    z = stats.norm.ppf(1 - rule.param("alpha") / 2) + stats.norm.ppf(rule.param("power"))
    mde = float(z * d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("inf")
    return {
        "diff": iv.estimate,
        "lo": iv.low,
        "hi": iv.high,
        "n": len(d),
        "mde": mde,
        "same": len(d) > 0 and bool((d == d.iloc[0]).all()),
    }


def recommend(
    frame: pd.DataFrame,
    *,
    defaults: Mapping[str, Any],
    axes: Iterable[str] | None = None,
    by_definition: Mapping[str, str] | None = None,
    rule: RuleFile | None = None,
) -> pd.DataFrame:
    """Per swept setting of one world's `study` frame (`axis`, `value`, `seed` columns), the verdict of the
    rule file (datasets/rules/07_kpis.yaml, or `rule`) against the shipped value (`defaults[axis]`):

    1. exclude every value that breaks a HARD constraint in any run, except the one constraint an axis value
       breaks by definition (`by_definition`, default `BY_DEFINITION`);
    2. compare each other value with the shipped one seed by seed (`paired`) on the primary and secondary
       utilities;
    3. "switch to v" for the better value (primary interval above 0, secondary not shown worse by more than
       the margin) with the largest primary difference; "shipped wins" when every other value is worse or
       excluded; otherwise "no difference detected at MDE m" (the largest MDE among the undecided).
    """
    rule = rule or rulefile.load("07_kpis")
    primary, secondary, margin = rule.param("primary"), rule.param("secondary"), rule.param("margin")
    by_definition = BY_DEFINITION if by_definition is None else by_definition
    wanted = None if axes is None else set(axes)
    out = []
    for axis, runs in frame.groupby("axis", sort=False):
        if wanted is not None and axis not in wanted:
            continue
        shipped = repr(defaults[axis])
        hard = {k: limit for k, limit in HARD.items() if k != by_definition.get(axis)}
        broken = {
            v: [k for k, limit in hard.items() if k in g and (g[k].fillna(0) > limit).any()]
            for v, g in runs.groupby("value", sort=False)
        }
        row = {
            "axis": axis,
            "shipped": shipped,
            "verdict": "",
            "value": None,
            "diff": float("nan"),
            "diff_lo": float("nan"),
            "diff_hi": float("nan"),
            "mde": float("nan"),
            "seeds": 0,
            "excluded": "; ".join(f"{v}: {', '.join(b)}" for v, b in broken.items() if b),
            "compared": "",
        }
        if broken.get(shipped):
            out.append(row | {"verdict": "the shipped value breaks a hard constraint"})
            continue
        better, undecided, lines = [], [], []
        for v in broken:
            if v == shipped or broken[v]:
                continue
            p, q = paired(runs, v, shipped, primary, rule), paired(runs, v, shipped, secondary, rule)
            lines.append(
                f"{v}: {primary} {p['diff']:+.3f} [{p['lo']:+.3f}, {p['hi']:+.3f}], {secondary} "
                f"{q['diff']:+.3f} [{q['lo']:+.3f}, {q['hi']:+.3f}] over {p['n']} seeds"
                + (f" ({primary} differs by the same amount on every seed)" if p["same"] else "")
            )
            row["seeds"] = max(row["seeds"], p["n"])
            if p["lo"] > 0 and not q["hi"] <= -margin:
                better.append((p["diff"], v, p))
            elif not p["hi"] < 0:
                undecided.append(p)
        row["compared"] = "; ".join(lines)
        if better:
            _, v, p = max(better, key=lambda t: t[0])
            row |= {
                "verdict": f"switch to {v}",
                "value": v,
                "diff": p["diff"],
                "diff_lo": p["lo"],
                "diff_hi": p["hi"],
                "mde": p["mde"],
            }
        elif not undecided:
            row |= {"verdict": "shipped wins", "value": shipped}
        else:
            mde = max(p["mde"] for p in undecided)
            row |= {"verdict": f"no difference detected at MDE {mde:.3f}", "mde": mde}
        out.append(row)
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------------ the dashboard

# (KPI column, what it is, target, how the target reads)
DASHBOARD = (
    ("nonrecurrence", "correction non-recurrence (pairs stated once in 20 sessions)", 0.70, ">="),
    ("on_minus_off", "measured value: deltas-on − deltas-off, eval accuracy", 0.05, ">="),
    ("off_differs_from_baseline", "runs where deltas-off ≠ the no-delta baseline", 0, "=="),
    ("category_regressions", "categories where on < off (per run)", 0, "=="),
    ("learned_tokens_median", "median learned resident tokens per session", None, ""),
    ("learned_tokens_p100", "p100 learned resident tokens per session", None, ""),
    ("cost_over_ceiling", "sessions over the resident ceiling", 0, "=="),
    ("tier01_share", "tier discipline: accepted lessons at tier 0/1", 0.50, ">="),
    ("activated_below_threshold", "activations below the evidence threshold", 0, "=="),
    ("untrusted_without_approval", "untrusted deltas active without approval", 0, "=="),
    ("permission_violations", "deltas widening a permission / adding a tool / raising a tier", 0, "=="),
    ("atomicity_violations", "sessions with a delta or body cut mid-step", 0, "=="),
    ("counter_mismatches", "counters that differ from the outcome ledger", 0, "=="),
    ("friction", "suggestions the user answered, per 100 turns", None, ""),
    ("wrong_lessons_activated", "misread lessons that became active (sim truth)", None, ""),
)
# Zero-count KPIs and the denominator their exact upper bound is over, pooled across a whole study.
_ACTIVATIONS = ("activations_user", "activations_evidence", "activations_auto", "activations_other")
NEVER = (
    ("activated_below_threshold", "activations", _ACTIVATIONS),
    ("untrusted_without_approval", "activations", _ACTIVATIONS),
    ("permission_violations", "lessons written", ("lessons_written",)),
    ("rebase_silent_reanchored", "deltas on a changed base", ("rebase_deltas",)),
    ("rebase_silent_dropped", "deltas on a changed base", ("rebase_deltas",)),
    ("atomicity_violations", "sessions", ("n_sessions",)),
    ("counter_mismatches", "lessons written", ("lessons_written",)),
    ("off_differs_from_baseline", "eval runs", None),
)


def _distinct(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run: a study repeats a shared configuration (the defaults) under every axis."""
    return frame.drop_duplicates(subset=[c for c in frame.columns if c not in ("axis", "value")])


def _met(value: float, target, how: str) -> bool | None:
    if target is None or not np.isfinite(value):
        return None
    return bool(value >= target - 1e-12) if how == ">=" else bool(abs(value - target) < 1e-12)


def dashboard(runs: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Every DASHBOARD KPI over `runs` (one configuration, many seeds): estimate, 95 % interval, target, met."""
    s = summarize(runs.assign(_all=0), "_all", [k for k, *_ in DASHBOARD], n_boot=n_boot, seed=seed).iloc[0]
    return pd.DataFrame(
        [
            {
                "kpi": k,
                "what": what,
                "estimate": s[k],
                "low": s[f"{k}_lo"],
                "high": s[f"{k}_hi"],
                "target": ("" if target is None else f"{how} {target:g}"),
                "met": _met(s[k], target, how),
            }
            for k, what, target, how in DASHBOARD
        ]
    )


def never(frame: pd.DataFrame, *, where: pd.Series | None = None, confidence: float = 0.95) -> pd.DataFrame:
    """The zero-target KPIs pooled over a whole study (or the rows `where` selects): count, denominator, and
    the exact one-sided upper bound on the rate (`metrics.binomial_upper`) — what a "never" claim quotes."""
    f = _distinct(frame if where is None else frame[where])
    rows = []
    for k, unit, cols in NEVER:
        count = int(f[k].fillna(0).sum())
        n = len(f) if cols is None else int(sum(f[c].fillna(0).sum() for c in cols))
        bound = binomial_upper(min(count, n), n, confidence).high if n else float("nan")
        rows.append({"kpi": k, "count": count, "out_of": n, "unit": unit, "upper_bound": bound})
    return pd.DataFrame(rows)


def sensitivity(
    frame: pd.DataFrame,
    axis: str,
    kpis: Sequence[str] = ("nonrecurrence", "on_minus_off"),
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> str:
    """One line: how each KPI moves across the values of a swept axis, with 95 % intervals."""
    s = summarize(frame[frame["axis"] == axis], "value", list(kpis), n_boot=n_boot, seed=seed)
    parts = []
    for k in kpis:
        parts.append(
            f"{k} "
            + " → ".join(
                f"{r[k]:.2f} [{r[f'{k}_lo']:.2f}, {r[f'{k}_hi']:.2f}] at {r['value']}" for _, r in s.iterrows()
            )
        )
    return "; ".join(parts) + "."


# ------------------------------------------------------------------------------------------- the study

DEFAULT = "default"  # the world scenario with every assumption at its default


def _kpi_row(**params: Any) -> dict[str, Any]:
    """One deployment's KPI row: what a sweep worker ships back (small)."""
    return run_kpis(deploy.run(**params))


def worlds(assumptions: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """World scenarios: every assumption at its default, then each named one at the low and the high end of
    its stated range (`deploy.ASSUMPTIONS`), the others at their defaults."""
    out: dict[str, dict[str, Any]] = {DEFAULT: {}}
    for name in ASSUMPTIONS if assumptions is None else assumptions:
        a = ASSUMPTIONS[name]
        for end in (a.low, a.high):
            value = int(end) if name == "review_every" else end
            out[f"{name}={value}"] = {name: value}
    return out


def study(
    axes: Mapping[str, Sequence[Any]],
    *,
    seeds: Sequence[int],
    base: Mapping[str, Any] | None = None,
    fixed: Mapping[str, Mapping[str, Any]] | None = None,
    assumptions: Sequence[str] | None = (),
    **sweep_kw,
) -> pd.DataFrame:
    """One-at-a-time sweep of the gate settings `axes`, in every world scenario (`worlds(assumptions)`;
    `()` the default world only): for each (world, axis, value, seed), `base` plus the world's assumption plus
    `fixed[axis]` (what the axis needs to matter, e.g. base updates for the rebase-policy axis) with the axis
    set. Identical configurations run once, on the studies' sweep runner (`sweep_kw`: backend, n_jobs,
    progress, client). One KPI row per (world, axis, value, seed)."""
    base, fixed = dict(base or {}), dict(fixed or {})
    unknown = sorted(set(fixed) - set(axes))
    if unknown:
        raise ValueError(f"fixed settings for axes that are not swept: {unknown}")
    plan, configs = [], {}
    for world, assumed in worlds(assumptions).items():
        for axis, values in axes.items():
            for value in values:
                for seed in seeds:
                    params = {**base, **assumed, **fixed.get(axis, {}), axis: value, "seed": seed}
                    key = deploy.settings(**params)  # validates; equal settings, however spelled, run once
                    configs.setdefault(key, params)
                    plan.append((world, axis, value, key))
    keys = list(configs)
    rows = dict(zip(keys, sweep(_kpi_row, [configs[k] for k in keys], desc="deployments", **sweep_kw)))
    return pd.DataFrame(
        [{"world": world, "axis": axis, "value": repr(value), **rows[key]} for world, axis, value, key in plan]
    )


def robust(
    frame: pd.DataFrame, *, defaults: Mapping[str, Any], axes: Iterable[str] | None = None, rule: RuleFile | None = None
) -> pd.DataFrame:
    """`recommend` in every world scenario of a `study` frame; per axis the verdict across them (the rule
    file's step 5): a switch only when every scenario switches to the same value, "shipped wins" only when
    every scenario says so, else the scenarios that disagree, or no difference detected at the largest MDE."""
    rule = rule or rulefile.load("07_kpis")
    picks = pd.concat(
        [
            recommend(runs, defaults=defaults, axes=axes, rule=rule).assign(world=world)
            for world, runs in frame.groupby("world", sort=False)
        ],
        ignore_index=True,
    )
    out = []
    for axis, g in picks.groupby("axis", sort=False):
        verdicts = set(g["verdict"])
        at_default = g[g["world"] == DEFAULT].iloc[0]
        switch = {v for v in verdicts if v.startswith("switch to")}
        if len(verdicts) == 1 and (switch or verdicts == {"shipped wins"}):
            verdict = next(iter(verdicts))
        elif switch or "shipped wins" in verdicts:
            depends = sorted({w.split("=")[0] for w, v in zip(g["world"], g["verdict"]) if v != at_default.verdict})
            verdict = f"depends on {', '.join(depends)}"
        else:
            verdict = f"no difference detected at MDE {g['mde'].max():.3f}"
        out.append(
            {
                "axis": axis,
                "shipped": at_default["shipped"],
                "verdict": verdict,
                "at_defaults": at_default["verdict"],
                "scenarios": len(g),
                "seeds": int(g["seeds"].min()),
                "mde": float(g["mde"].max()),
                "compared_at_defaults": at_default["compared"],
                "picks": "; ".join(f"{w}: {v}" for w, v in zip(g["world"], g["verdict"])),
            }
        )
    return pd.DataFrame(out)


@dataclass(frozen=True)
class KPIStudy:
    """The KPI study over simulated deployments (a `study` frame, the shipped values and the rule it is judged
    by)."""

    frame: pd.DataFrame
    defaults: Mapping[str, Any]  # the shipped value of each swept setting
    axes: tuple[str, ...]  # gate settings to judge
    fixed: Mapping[str, Mapping[str, Any]]
    rule: RuleFile
    n_boot: int = 1000
    seed: int = 0

    def at_defaults(self) -> pd.DataFrame:
        """The runs at the shipped settings in the default world, one per seed."""
        f = self.frame[self.frame["world"] == DEFAULT]
        first = f["axis"].iloc[0]
        return f[(f["axis"] == first) & (f["value"] == repr(self.defaults[first]))]

    def dashboard(self) -> pd.DataFrame:
        return dashboard(self.at_defaults(), n_boot=self.n_boot, seed=self.seed)

    def never(self) -> pd.DataFrame:
        return never(self.frame)

    def summary(self, kpis: Sequence[str], world: str = DEFAULT) -> pd.DataFrame:
        """Each KPI per (axis, value) in one world scenario, with 95 % intervals over runs."""
        return summarize(
            self.frame[self.frame["world"] == world], ["axis", "value"], kpis, n_boot=self.n_boot, seed=self.seed
        )

    def table(self) -> pd.DataFrame:
        """Per gate setting: the rule's verdict across every world scenario, and each scenario's."""
        return robust(self.frame, defaults=self.defaults, axes=self.axes, rule=self.rule)

    def seeds_needed(self) -> pd.DataFrame:
        """Per setting, from this run's paired spread: the seeds the rule's `target_mde` needs (capped at
        `max_seeds`) — how the FULL run's seed count is chosen."""
        t = self.table()
        target, cap = self.rule.param("target_mde"), self.rule.param("max_seeds")
        need = np.ceil(t["seeds"] * (t["mde"] / target) ** 2)
        return t.assign(seeds_needed=need.where(np.isfinite(need)).clip(upper=cap))[
            ["axis", "seeds", "mde", "seeds_needed"]
        ]

    def finding(self) -> str:
        """The verdicts, written from the numbers (re-running rewrites it)."""
        d = self.dashboard().set_index("kpi")
        runs = self.at_defaults()
        targets = {k: target for k, _, target, _ in DASHBOARD}
        findings = [
            Finding(
                what,
                d.loc[k, "estimate"],
                d.loc[k, "low"],
                d.loc[k, "high"],
                targets[k],
                "meets" if d.loc[k, "met"] else "misses",
                spec=".2f",
                side="≥",
            )
            for k, what in (
                ("nonrecurrence", "correction non-recurrence"),
                ("on_minus_off", "deltas-on − deltas-off, eval accuracy"),
                ("tier01_share", "accepted lessons that landed at tier 0/1"),
            )
        ]
        lines = []
        n = self.never()
        zero = n[n["count"] == 0]
        if len(zero):
            lines.append(
                f"**Never observed** across all {len(_distinct(self.frame))} distinct runs: "
                + "; ".join(
                    f"{r.kpi} (0 of {r.out_of} {r.unit}, 95 % upper bound {r.upper_bound:.2%})"
                    for r in zero.itertuples()
                )
                + "."
            )
        for r in n[n["count"] > 0].itertuples():
            where = self.frame[self.frame[r.kpi].fillna(0) > 0]
            lines.append(
                f"**{r.kpi}** occurred {r.count} times, only where "
                + ", ".join(sorted({f"{a} = {v}" for a, v in zip(where["axis"], where["value"])}))
                + "."
            )
        target = self.rule.param("target_mde")
        against = (
            f"**Against what ships** (each value paired with the shipped one seed by seed; "
            f"{self.rule.param('primary')} primary, {self.rule.param('secondary')} secondary):"
        )
        verdicts = []
        for r in self.table().itertuples():
            at = self.fixed.get(r.axis)
            cond = f" (judged with {', '.join(f'{k} = {v}' for k, v in at.items())})" if at else ""
            why = (
                f"; `{BY_DEFINITION[r.axis]}` is set aside for this axis (one value breaks it by definition)"
                if r.axis in BY_DEFINITION
                else ""
            )
            power = (
                ""
                if not np.isfinite(r.mde) or r.mde <= target
                else f" — underpowered: MDE {r.mde:.3f} > the rule's {target:.2f} with {r.seeds} seeds"
            )
            verdicts.append(
                f"- `{r.axis}` (ships {r.shipped}){cond}: **{r.verdict}** in {r.scenarios} scenarios"
                f"{why}{power}. At the defaults: {r.compared_at_defaults or 'nothing to compare'}."
            )
        return render(
            findings,
            stamp=self.rule.stamp(),
            intro=f"**At the shipped defaults, default world** ({len(runs)} seeded deployments):",
            outro=["\n".join(lines), against, "\n".join(verdicts)],
        )


def plan(rule: RuleFile, *, full: bool = False) -> dict[str, Any]:
    """The study's arguments as the rule file states them: axes (with `full_axes` under `full`), fixed, seeds
    (the default run's, or `max_seeds` under `full`: at least what `KPIStudy.seeds_needed` asks, unless
    capped), sessions per deployment and the world scenarios (every assumption under `full`)."""
    run_ = rule.param("full_run" if full else "default_run")
    return {
        "axes": dict(rule.param("axes")) | (dict(rule.param("full_axes")) if full else {}),
        "fixed": dict(rule.param("fixed")),
        "seeds": range(rule.param("max_seeds") if full else rule.param("default_run")["seeds"]),
        "base": {"n_sessions": run_["n_sessions"]},
        "assumptions": list(ASSUMPTIONS) if full else list(rule.param("default_assumptions")),
    }


RECORDED = dataset_path("recorded") / "07_kpis_full.csv.gz"  # benchmarks/kpis_full.py writes it


def RECORDED_META(path: Path) -> Path:  # noqa: N802 - the provenance file beside a recording
    return path.with_name(path.name.removesuffix(".csv.gz") + ".json")


def recorded(path: Path = RECORDED, rule: RuleFile | None = None) -> tuple[KPIStudy, dict[str, Any]] | None:
    """The recorded FULL run (benchmarks/kpis_full.py) as a `KPIStudy` judged by `rule` (default: the rule
    file) against the values that shipped when it ran, with its provenance (commit, rule sha256, seeds, the
    shipped values, machine); None when nothing is recorded. A recording
    made under another version of the rule file is refused: its verdict would not be the rule's."""
    if not path.exists():
        return None
    rule = rule or rulefile.load("07_kpis")
    meta = json.loads(RECORDED_META(path).read_text())
    if meta["rule_sha256"] != rule.sha256:
        raise ValueError(
            f"{path}: recorded under rule sha256 {meta['rule_sha256'][:12]}, not the rule file's {rule.sha256[:12]}"
        )
    # values are reprs ("None" among them): only an empty cell (a KPI a run did not have) is missing
    frame = pd.read_csv(path, dtype={"world": str, "axis": str, "value": str}, keep_default_na=False, na_values=[""])
    axes = tuple(dict.fromkeys(frame["axis"]))
    defaults = {a: meta["shipped"][a] for a in axes}  # what shipped when it ran: the baseline it was judged by
    fixed = {a: f for a, f in rule.param("fixed").items() if a in axes}
    return KPIStudy(frame, defaults, axes, fixed, rule, rule.param("n_boot"), rule.param("seed")), meta


def recording_note(meta: Mapping[str, Any]) -> str:
    """One line saying what a recording (`recorded`'s provenance) holds, and whether it was cut short."""
    cut = (
        f" — cut short at {meta['seeds']} of the {meta['planned_seeds']} planned seeds (whole blocks only; "
        f"every comparison's MDE below says what that costs)"
        if meta["seeds"] < meta["planned_seeds"]
        else ""
    )
    return (
        f"FULL run recorded {meta['recorded'][:10]} at commit {meta['commit'][:7]} under rule sha256 "
        f"{meta['rule_sha256'][:12]}: {meta['seeds']} seeds × {meta['worlds']} world scenarios × "
        f"{meta['n_sessions']} sessions, {meta['rows']:,} (world, axis, value, seed) rows, on {meta['machine']} "
        f"({meta['n_jobs']} jobs){cut}."
    )


def run(
    axes: Mapping[str, Sequence[Any]] | None = None,
    *,
    seeds: Sequence[int] | None = None,
    base: Mapping[str, Any] | None = None,
    fixed: Mapping[str, Mapping[str, Any]] | None = None,
    assumptions: Sequence[str] | None = (),
    n_boot: int | None = None,
    seed: int | None = None,
    rule: RuleFile | None = None,
    **sweep_kw,
) -> KPIStudy:
    """The KPI study: `study(...)` over the gate settings `axes` in every world scenario, as a `KPIStudy`
    judged by `rule` (datasets/rules/07_kpis.yaml). Each axis is swept over its values and the shipped one
    (`deploy.Settings()`: overlay_kit.defaults), added where `axes` leaves it out: every verdict compares against
    what ships. `axes`, `fixed`, `seeds`, `n_boot` and `seed` default to the rule's."""
    rule = rule or rulefile.load("07_kpis")
    axes = rule.param("axes") if axes is None else axes
    fixed = {a: f for a, f in rule.param("fixed").items() if a in axes} if fixed is None else fixed
    seeds = range(rule.param("default_run")["seeds"]) if seeds is None else seeds
    defaults = {a: getattr(deploy.Settings(), a) for a in axes}
    axes = {a: list(v) + ([defaults[a]] if defaults[a] not in list(v) else []) for a, v in axes.items()}
    frame = study(axes, seeds=seeds, base=base, fixed=fixed, assumptions=assumptions, **sweep_kw)
    return KPIStudy(
        frame,
        defaults,
        tuple(axes),
        dict(fixed or {}),
        rule,
        rule.param("n_boot") if n_boot is None else n_boot,
        rule.param("seed") if seed is None else seed,
    )
