"""Rates with honest uncertainty: cluster-bootstrap confidence intervals, and exact binomial bounds for zeros.

Generic on purpose — any study reuses these. Observations come in clusters (e.g. the updates of one synthetic
history are correlated), so the bootstrap resamples clusters: `ratio_ci(num, den)` takes one numerator and one
denominator *per cluster* and bootstraps the ratio of sums. A rate whose count is zero has a degenerate
bootstrap interval ([0, 0]); `binomial_upper` gives the exact one-sided (Clopper–Pearson) upper bound instead,
which is what a "never happens" claim should quote.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Interval", "binomial_upper", "bootstrap_ci", "mean_ci", "rate_table", "ratio_ci", "wilson_lower_bound"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval."""

    estimate: float
    low: float
    high: float
    confidence: float = 0.95
    n: int = 0  # clusters (bootstrap) or trials (binomial)

    def __str__(self) -> str:
        return self.fmt(".3f")

    def fmt(self, spec: str = ".2f", empty: str = "n/a") -> str:
        """`0.42 [0.12, 0.71]`; `empty` when there is no estimate (e.g. precision with nothing admitted)."""
        if not np.isfinite(self.estimate):
            return empty
        if not (np.isfinite(self.low) and np.isfinite(self.high)):
            return f"{self.estimate:{spec}}"
        return f"{self.estimate:{spec}} [{self.low:{spec}}, {self.high:{spec}}]"

    @classmethod
    def percentile(cls, estimate: float, draws: np.ndarray, confidence: float = 0.95, n: int = 0) -> "Interval":
        """A point estimate and the percentile interval of its resampled draws (NaN draws ignored)."""
        draws = np.asarray(draws, dtype=float)
        draws = draws[np.isfinite(draws)]
        if not np.isfinite(estimate) or draws.size == 0:
            return cls(float(estimate), float("nan"), float("nan"), confidence, n)
        tail = 50 * (1 - confidence)
        lo, hi = np.percentile(draws, [tail, 100 - tail])
        return cls(float(estimate), float(lo), float(hi), confidence, n)

    def to_dict(self) -> dict:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "n": self.n,
        }


def bootstrap_ci(
    *samples: Sequence[float],
    statistic: Callable[..., np.ndarray],
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap of `statistic(*samples, axis=-1)` (scipy.stats.bootstrap). Several samples are
    resampled together: entry i of each is cluster i. `statistic` must be vectorized over `axis`."""
    from scipy import (
        stats,  # scipy and pandas load only for the studies that need them (the gates import this module)
    )

    arrays = [np.asarray(s, dtype=float) for s in samples]
    n = len(arrays[0]) if arrays else 0
    if n == 0 or any(a.ndim != 1 or len(a) != n for a in arrays):
        raise ValueError(f"bootstrap needs equal-length, non-empty 1-d samples; got {[a.shape for a in arrays]}")
    estimate = float(statistic(*arrays, axis=-1))
    if n == 1:
        return Interval(estimate, estimate, estimate, confidence, n)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)  # constant data: handled below
        res = stats.bootstrap(
            arrays,
            statistic,
            paired=True,
            vectorized=True,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if np.isnan(low) or np.isnan(high):  # a constant statistic: no spread to resample
        low = high = estimate
    return Interval(estimate, min(low, estimate), max(high, estimate), confidence, n)


def _ratio(num: np.ndarray, den: np.ndarray, axis: int = -1) -> np.ndarray:
    d = np.sum(den, axis=axis)
    return np.sum(num, axis=axis) / np.where(d == 0, np.nan, d)


def ratio_ci(num: Sequence[float], den: Sequence[float], **kw) -> Interval:
    """Σnum / Σden with a cluster-bootstrap interval (one entry of each per cluster)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if den.sum() == 0:
        return Interval(float("nan"), float("nan"), float("nan"), kw.get("confidence", 0.95), len(den))
    return bootstrap_ci(num, den, statistic=_ratio, **kw)


def mean_ci(values: Sequence[float], **kw) -> Interval:
    """The mean with a bootstrap interval."""
    return bootstrap_ci(values, statistic=np.mean, **kw)


def binomial_upper(k: int, n: int, confidence: float = 0.95) -> Interval:
    """The exact (Clopper–Pearson) one-sided interval [0, upper] for a rate seen k times in n trials.
    For k = 0 the upper bound is 1 − (1 − confidence)^(1/n) (≈ 3/n at 95%)."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"binomial_upper needs 0 <= k <= n and n > 0; got k={k}, n={n}")
    from scipy import stats

    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=2 * confidence - 1, method="exact")
    return Interval(k / n, 0.0, float(ci.high), confidence, n)


def rate_table(
    df: pd.DataFrame, by: str | Sequence[str], cluster: str, rates: Mapping[str, tuple[str, str]], **kw
) -> pd.DataFrame:
    """One row per group of `by`; for each `name: (numerator column, denominator column)` the rate of sums
    and its cluster-bootstrap interval (`name`, `name_low`, `name_high`). Clusters are summed first."""
    by = [by] if isinstance(by, str) else list(by)
    cols = sorted({c for pair in rates.values() for c in pair})
    per = df.groupby(by + [cluster], sort=True)[cols].sum().reset_index()
    rows = []
    for key, g in per.groupby(by, sort=True):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        for name, (num, den) in rates.items():
            ci = ratio_ci(g[num].to_numpy(), g[den].to_numpy(), **kw)
            row |= {name: ci.estimate, f"{name}_low": ci.low, f"{name}_high": ci.high}
        rows.append(row)
    import pandas as pd

    return pd.DataFrame(rows)


def wilson_lower_bound(successes: int, n: int, z: float = 1.96) -> float:
    """Lower end of the Wilson score interval for a success rate (0 when n == 0)."""
    if n == 0:
        return 0.0
    phat = successes / n
    denom = 1 + z * z / n
    centre = phat + z * z / (2 * n)
    margin = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n))
    return (centre - margin) / denom
