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


def simulated_spans(arrivals_per_step: np.ndarray, step_s: int, start_s: int, latency_le: Sequence[float],
                    latency_cumulative: np.ndarray, mean_latency_s: np.ndarray,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Arrival and completion times of requests re-drawn from what the metrics measured. [µs since the epoch]

    The requests of each step are the step's counted arrivals, placed uniformly inside it (the finest
    time a counter gives); each one's latency is drawn from its hour's latency histogram
    (``latency_cumulative[:, h]``: requests ``≤ latency_le[j]``; uniform inside a bucket, ``lo`` for
    ``+Inf``) and the hour's draws are scaled so their mean is the measured mean (``_sum / _count``).
    An hour without latency buckets gets its mean latency for every request. The sweep of these spans
    (:func:`capplan.profile.counting.peak_in_flight_by_model`) models the hour's busiest moment, which a
    gauge scraped every ``step_s`` cannot see.
    """
    per_hour_steps = HOUR_S // step_s
    counts = np.rint(np.asarray(arrivals_per_step, dtype=float)).clip(min=0).astype(np.int64)
    step = np.repeat(np.arange(counts.size), counts)
    arrive_s = start_s + (step + rng.random(step.size)) * step_s
    hour = step // per_hour_steps
    le = np.asarray(latency_le, dtype=float)
    hours = len(mean_latency_s)
    latency = np.asarray(mean_latency_s, dtype=float)[hour]
    if le.size and hours:
        per_bucket = np.diff(np.vstack([np.zeros((1, hours)), np.asarray(latency_cumulative, dtype=float)]),
                             axis=0).clip(min=0)  # (buckets, hours)
        total = per_bucket.sum(axis=0)
        has = total > 0
        cdf = np.cumsum(per_bucket, axis=0) / np.where(has, total, 1.0)
        # one searchsorted over all hours: hour h's CDF shifted to [h, h + 1]
        flat = (cdf + np.arange(hours)).T.ravel()
        j = np.searchsorted(flat, hour + rng.random(step.size), side="left") - hour * le.size
        j = j.clip(0, le.size - 1)
        lo = np.concatenate([[0.0], le[:-1]])[j]
        hi = np.where(np.isinf(le[j]), lo, le[j])
        drawn = lo + (hi - lo) * rng.random(step.size)
        drawn_mean = np.bincount(hour, weights=drawn, minlength=hours) / np.maximum(np.bincount(hour, minlength=hours), 1)
        scale = np.where(drawn_mean > 0, np.asarray(mean_latency_s, dtype=float) / np.where(drawn_mean > 0, drawn_mean, 1.0), 1.0)
        latency = np.where(has[hour], drawn * scale[hour], latency)
    start_us = np.rint(arrive_s * 1e6).astype(np.int64)
    return start_us, start_us + np.maximum(np.rint(latency * 1e6).astype(np.int64), 1)
