"""Counter samples -> hourly increases, and Prometheus ``le`` buckets -> the profile's histogram bins (pure).

Counter increases are computed from the raw samples on the query grid, not with PromQL's
``increase()`` (which extrapolates to the window's edges and so is not an integer count):

    Δ_i = v_i − v_(i−1)   if v_i ≥ v_(i−1)
    Δ_i = v_i              otherwise (a reset: the counter restarted from 0)

and ``Δ_i`` is counted in the UTC hour of ``t_(i−1)``: it holds the events of ``[t_(i−1), t_i)``.
With a step that divides 3600 s and samples on the hour boundaries, the hourly sums are exact,
except for events counted after a process's last scrape before it restarted (no method can see
those; ``increase()`` loses them too).

A bucket ``(lo, hi]`` of a Prometheus histogram is placed in the profile bin of its harmonic midpoint
``h = 2·lo·hi/(lo+hi)`` (``hi`` for the first bucket, ``lo`` for ``+Inf``); a quantile read off the profile
histogram is then within ``β = (hi − lo)/(hi + lo)`` of the true value from the bucket, and within
``(1 + β)(1 + α) − 1`` overall (α: :data:`capplan.profile.bins.HISTOGRAM_RELATIVE_ERROR`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from capplan.profile.bins import HISTOGRAM_GAMMA, HISTOGRAM_RELATIVE_ERROR
from capplan.profile.counting import log_bins

HOUR_S = 3600


def interval_increases(value: np.ndarray) -> np.ndarray:
    """``Δ_i`` for ``i = 1 .. n−1`` of one counter's samples, resets detected (see the module docstring). [count]"""
    d = np.diff(value)
    return np.where(d >= 0, d, value[1:])


def hourly_increases(ts_s: np.ndarray, value: np.ndarray, start_s: int, hours: int, step_s: int) -> np.ndarray:
    """Per-step increases on the grid ``start_s + k·step_s`` (length ``hours·3600/step_s``), interval k = [t_k, t_k+1).

    Intervals that span missing samples are credited to the step of their first sample.
    """
    steps = hours * HOUR_S // step_s
    out = np.zeros(steps)
    if len(ts_s) < 2:
        return out
    k = np.rint((ts_s[:-1] - start_s) / step_s).astype(np.int64)
    keep = (k >= 0) & (k < steps)
    np.add.at(out, k[keep], interval_increases(value)[keep])
    return out


def per_hour(steps: np.ndarray, step_s: int) -> np.ndarray:
    """Sum of per-step increases per hour: shape ``(hours,)``. [count]"""
    return steps.reshape(-1, HOUR_S // step_s).sum(axis=1)


def peak_rate_per_hour(steps: np.ndarray, step_s: int) -> np.ndarray:
    """Busiest step's arrivals per second in each hour, rounded up: ``ceil(max_k Δ_k / step_s)``. [requests/s]

    Not a measured busiest second: the peak of a ``step_s`` average (a lower bound of it).
    """
    return np.ceil(steps.reshape(-1, HOUR_S // step_s).max(axis=1) / step_s - 1e-9).clip(min=0)


def bucket_representatives(le: Sequence[float]) -> np.ndarray:
    """The value standing for each bucket ``(le_(j−1), le_j]`` (sorted ``le``, last may be ``inf``)."""
    le = np.asarray(le, dtype=float)
    lo = np.concatenate([[0.0], le[:-1]])
    finite_hi = np.where(np.isinf(le), 1.0, le)
    rep = np.where(lo > 0, 2 * lo * finite_hi / np.maximum(lo + finite_hi, 1e-300), le)
    return np.where(np.isinf(le), lo, rep)


def bucket_relative_error(le: Sequence[float]) -> float:
    """Worst ``β = (hi − lo)/(hi + lo)`` over the finite buckets with ``lo > 0``, composed with the profile's α.

    The first bucket ``(0, le_0]`` and ``+Inf`` have no relative bound; the result is the bound of a
    quantile falling in any other bucket: ``(1 + β)(1 + α) − 1``.
    """
    le = [x for x in le if math.isfinite(x)]
    betas = [(hi - lo) / (hi + lo) for lo, hi in zip(le[:-1], le[1:]) if lo > 0]
    return (1 + max(betas, default=0.0)) * (1 + HISTOGRAM_RELATIVE_ERROR) - 1


def buckets_to_bins(le: Sequence[float], cumulative: np.ndarray, scale: float = 1.0) -> dict[int, int]:
    """Profile bin -> count of one hour's cumulative bucket increases (``cumulative[j]``: events ``≤ le_j``).

    ``scale`` converts the bucket unit to the profile's (1000 for seconds -> ms).
    """
    counts = np.diff(np.concatenate([[0.0], np.asarray(cumulative, dtype=float)])).clip(min=0)
    bins = log_bins(bucket_representatives(le) * scale, 1 / math.log(HISTOGRAM_GAMMA))
    out: dict[int, int] = {}
    for b, c in zip(bins.tolist(), np.rint(counts).astype(np.int64).tolist()):
        if c:
            out[b] = out.get(b, 0) + c
    return out
