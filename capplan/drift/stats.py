"""Statistics for distribution drift and cost attribution: series and counts in, numbers out, no I/O.

- :func:`merge_sparse_bins` and :func:`population_stability_index` compare two
  binned distributions (histogram counts over the same bins);
- :func:`chi_square_homogeneity` is the two-sample test on those counts;
- :func:`cusum_change_point` finds where the mean of a daily series shifts, and
  whether the shift is significant (OLS-residual CUSUM test);
- :func:`shapley_decomposition` splits the change of any function of a few
  factors into one part per factor that add up exactly to the total.

Pure: the database side is :mod:`capplan.drift.histogram` (the reader), the windows and alert rule
:mod:`capplan.drift.detect`, the prices :mod:`capplan.drift.pricing` and
:mod:`capplan.drift.decomposition`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import combinations
from math import factorial
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import chi2_contingency
from statsmodels.stats.diagnostic import breaks_cusumolsresid

#: A bin with no count in one sample enters the PSI with this share, not 0 (log of 0).
PSI_FLOOR_SHARE = 1e-4


def _counts(name: str, values: ArrayLike) -> NDArray[np.float64]:
    a = np.asarray(values, dtype=float)
    if a.ndim != 1 or np.any(~np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{name} must be a 1-D array of finite counts >= 0")
    return a


def merge_sparse_bins(baseline_counts: ArrayLike, window_counts: ArrayLike,
                      min_baseline_share: float = 0.01) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Join adjacent bins until each holds at least ``min_baseline_share`` of the baseline.

    Sparse bins make both the PSI (a log of tiny shares) and the chi-square test
    (expected counts below 5) unreliable; merging adjacent bins of an ordered
    histogram keeps the shape.

    Parameters
    ----------
    baseline_counts, window_counts : array_like
        Counts over the same ordered bins. [requests]
    min_baseline_share : float
        Smallest baseline share a merged bin may hold. [fraction]

    Returns
    -------
    tuple of ndarray
        Merged baseline and window counts. [requests]

    Examples
    --------
    >>> merge_sparse_bins([3, 50, 2, 40, 5], [1, 2, 3, 4, 5], 0.1)
    (array([53., 47.]), array([ 3., 12.]))
    """
    base = _counts("baseline_counts", baseline_counts)
    win = _counts("window_counts", window_counts)
    if base.shape != win.shape:
        raise ValueError(f"baseline and window need the same bins, got {base.size} and {win.size}")
    need = min_baseline_share * base.sum()
    edges, acc = [], 0.0
    for i, c in enumerate(base):
        acc += c
        if acc >= need and acc > 0:
            edges.append(i + 1)
            acc = 0.0
    if not edges:
        return np.array([base.sum()]), np.array([win.sum()])
    edges[-1] = base.size  # a thin tail joins the last full bin
    starts = np.array([0, *edges[:-1]], dtype=np.intp)
    return np.add.reduceat(base, starts), np.add.reduceat(win, starts)


def population_stability_index(baseline_counts: ArrayLike, window_counts: ArrayLike) -> float:
    """Population stability index of a window against a baseline over the same bins.

    .. math:: \\mathrm{PSI} = \\sum_i (q_i - p_i) \\ln(q_i / p_i)

    with ``p`` the baseline and ``q`` the window shares; shares of 0 enter as
    :data:`PSI_FLOOR_SHARE`.

    Parameters
    ----------
    baseline_counts, window_counts : array_like
        Counts over the same bins. [requests]

    Returns
    -------
    float
        PSI, >= 0 (the symmetric Kullback-Leibler divergence). [dimensionless]

    Notes
    -----
    - Rules of thumb: < 0.1 stable, 0.1–0.25 moderate, > 0.25 major shift.
    - For a normal (or log-normal, on the log scale) shifting by δ standard
      deviations, PSI ≈ δ²: a +30 % shift of a log-normal with σ = 0.9 is
      δ = ln 1.3 / 0.9 = 0.29, PSI ≈ 0.085.
    - Sampling noise alone gives E[PSI] ≈ (k − 1)(1/n_p + 1/n_q) for k bins.

    References
    ----------
    .. [1] Yurdakul, B. (2018). *Statistical properties of population stability
       index*. Western Michigan University dissertation 3208.

    Examples
    --------
    >>> round(population_stability_index([50, 50], [40, 60]), 4)
    0.0405
    """
    base = _counts("baseline_counts", baseline_counts)
    win = _counts("window_counts", window_counts)
    if base.shape != win.shape or base.sum() == 0 or win.sum() == 0:
        raise ValueError("baseline and window need the same bins and a non-zero total each")
    p = np.maximum(base / base.sum(), PSI_FLOOR_SHARE)
    q = np.maximum(win / win.sum(), PSI_FLOOR_SHARE)
    return float(np.sum((q - p) * np.log(q / p)))


def chi_square_homogeneity(baseline_counts: ArrayLike, window_counts: ArrayLike) -> tuple[float, float]:
    """Chi-square test that two samples come from one distribution over the same bins.

    Parameters
    ----------
    baseline_counts, window_counts : array_like
        Counts over the same bins; merge sparse bins first. [requests]

    Returns
    -------
    statistic : float
        Pearson chi-square. [dimensionless]
    p_value : float
        Probability of a statistic at least this large with no drift. [probability]

    Notes
    -----
    On millions of requests any shift is "significant": use the p-value only
    together with an effect size (PSI, relative mean change).

    Examples
    --------
    >>> stat, p = chi_square_homogeneity([500, 500], [500, 500])
    >>> round(stat, 6), round(p, 6)
    (0.0, 1.0)
    """
    table = np.vstack([_counts("baseline_counts", baseline_counts), _counts("window_counts", window_counts)])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 0.0, 1.0
    result = chi2_contingency(table, correction=False)
    return float(result.statistic), float(result.pvalue)


@dataclass(frozen=True)
class ChangePoint:
    """Where a series' mean shifts.

    Attributes
    ----------
    index : int
        First position of the new regime (``values[index:]``).
    p_value : float
        OLS-residual CUSUM test of a stable mean (Ploberger & Krämer 1992). [probability]
    mean_before, mean_after : float
        Means of the two segments. [unit of the series]
    """

    index: int
    p_value: float
    mean_before: float
    mean_after: float

    @property
    def relative_change(self) -> float:
        """``mean_after / mean_before − 1``. [fraction]"""
        return self.mean_after / self.mean_before - 1.0


def cusum_change_point(values: ArrayLike) -> ChangePoint:
    """Locate the single mean shift of a series by CUSUM, and test it.

    The location maximises ``|S_k|`` with ``S_k = Σ_{i<k} (x_i − x̄)``, the
    least-squares estimate of one shift in the mean; the p-value is
    statsmodels' ``breaks_cusumolsresid`` on ``x − x̄`` (a Brownian-bridge
    limit, so it wants a few tens of points).

    Parameters
    ----------
    values : array_like
        The series, e.g. daily mean input tokens; at least 4 finite values.
        [any unit]

    Returns
    -------
    ChangePoint

    Examples
    --------
    >>> cp = cusum_change_point([10, 10, 10, 10, 20, 20, 20, 20])
    >>> cp.index, cp.mean_before, cp.mean_after
    (4, 10.0, 20.0)
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size < 4 or np.any(~np.isfinite(x)):
        raise ValueError(f"need a 1-D series of at least 4 finite values, got shape {x.shape}")
    resid = x - x.mean()
    s = np.cumsum(resid)[:-1]  # S_k for k = 1 … n−1: a split leaves at least one point each side
    k = int(np.argmax(np.abs(s))) + 1
    p_value = float(breaks_cusumolsresid(resid, ddof=1)[1]) if np.any(resid) else 1.0
    return ChangePoint(index=k, p_value=p_value, mean_before=float(x[:k].mean()), mean_after=float(x[k:].mean()))


def shapley_decomposition(before: Mapping[str, Any], after: Mapping[str, Any],
                          value: Callable[[Mapping[str, Any]], float]) -> dict[str, float]:
    """Split ``value(after) − value(before)`` into one part per factor (Shapley values).

    Each factor's part is its marginal effect of switching from ``before`` to
    ``after``, averaged over every order of switching the factors:

    .. math:: \\phi_i = \\sum_{S \\subseteq N \\setminus i} \\frac{|S|!\\,(n-|S|-1)!}{n!}
              \\left[v(S \\cup i) - v(S)\\right]

    where ``v(S)`` is ``value`` with the factors in S at their ``after`` values.
    The parts add up exactly to the total (efficiency), a factor that does not
    change gets 0, and for a product of two factors this is the symmetric
    (Bennet) index decomposition ``ΔV·(c₀+c₁)/2 + Δc·(V₀+V₁)/2``.

    Parameters
    ----------
    before, after : Mapping[str, Any]
        Factor values in the two periods, same keys; a value may itself be
        structured (e.g. a share per model), it is switched as a whole.
    value : callable
        The quantity as a function of the factors, e.g. monthly cost.

    Returns
    -------
    dict[str, float]
        Part of the change due to each factor, in the unit of ``value``.

    References
    ----------
    .. [1] Shapley, L. S. (1953). A value for n-person games. *Contributions to
       the Theory of Games* II, 307–317.
    .. [2] Ang, B. W. et al. (2009). Properties and linkages of some index
       decomposition analysis methods. *Energy Policy* 37(11), 4624–4632.

    Examples
    --------
    >>> parts = shapley_decomposition({"v": 100, "c": 2.0}, {"v": 120, "c": 2.5}, lambda f: f["v"] * f["c"])
    >>> parts
    {'v': 45.0, 'c': 55.0}
    """
    names = list(before)
    if set(names) != set(after):
        raise ValueError(f"before and after need the same factors, got {sorted(before)} and {sorted(after)}")
    n = len(names)

    def v(switched: frozenset[str]) -> float:  # value with the factors in `switched` at their after-values
        return value({k: (after[k] if k in switched else before[k]) for k in names})

    parts = {}
    for name in names:
        others = [k for k in names if k != name]
        parts[name] = sum(
            factorial(size) * factorial(n - size - 1) / factorial(n) * (v(frozenset(s) | {name}) - v(frozenset(s)))
            for size in range(n) for s in combinations(others, size))
    return parts
