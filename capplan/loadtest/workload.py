"""The maths of an exported workload: arrival rates, time scaling, length summaries and sweep rates.

Pure functions on numpy arrays; no I/O.
"""

from __future__ import annotations

import math

import numpy as np

SWEEP_LOW_FRACTION = 0.25
SWEEP_HIGH_FRACTION = 1.5
SWEEP_STEPS = 6
SQRT3 = math.sqrt(3.0)


def arrival_rate_rps(offset_us: np.ndarray) -> float:
    """Mean arrival rate of a trace: ``(n - 1) / (t_last - t_first)`` [requests/s].

    ``n - 1`` gaps span the trace, so a trace scaled to a rate replays at exactly that rate.

    Parameters
    ----------
    offset_us : ndarray
        Arrival times, ascending. [us]
    """
    if len(offset_us) < 2:
        raise ValueError("a trace needs at least two arrivals to have a rate")
    span_s = (float(offset_us[-1]) - float(offset_us[0])) / 1e6  # us -> s
    if span_s <= 0:
        raise ValueError("every arrival of the trace is at the same instant: no rate")
    return (len(offset_us) - 1) / span_s


def scaled_offsets_ms(offset_us: np.ndarray, target_rps: float | None) -> np.ndarray:
    """Arrival times [ms, int64] from the first, stretched or squeezed so the trace runs at ``target_rps``.

    ``t' = t · rate / target_rps`` keeps the pattern (bursts, diurnal shape) and the order; ``None``
    keeps the production timing. Example: a day at 0.5 requests/s scaled to 5 requests/s lasts 2.4 h.
    """
    offsets = offset_us.astype(np.float64) - float(offset_us[0])
    if target_rps is not None:
        if not target_rps > 0:
            raise ValueError(f"target rate must be > 0, got {target_rps!r}")
        offsets *= arrival_rate_rps(offset_us) / target_rps
    return np.rint(offsets / 1000.0).astype(np.int64)  # us -> ms


def length_summary(tokens: np.ndarray) -> dict[str, float]:
    """Mean, standard deviation, min, max and p50/p90/p99 of token lengths [tokens].

    Percentiles are order statistics (the ``ceil(q·n)``-th smallest), as the profile's histograms
    approximate them.
    """
    values = np.asarray(tokens, dtype=np.float64)
    if not len(values):
        raise ValueError("no lengths to summarise")
    quantiles = np.quantile(values, [0.5, 0.9, 0.99], method="inverted_cdf")
    return {"mean": float(values.mean()), "std": float(values.std()), "min": float(values.min()),
            "max": float(values.max()), "p50": float(quantiles[0]), "p90": float(quantiles[1]),
            "p99": float(quantiles[2])}


def sweep_rates_rps(peak_rps: float, replicas: int = 1, low: float = SWEEP_LOW_FRACTION,
                    high: float = SWEEP_HIGH_FRACTION, steps: int = SWEEP_STEPS) -> list[float]:
    """Open-loop rates to sweep per replica: ``steps`` evenly from ``low`` to ``high`` times the peak.

    ``rate_k = peak / replicas · (low + k · (high - low) / (steps - 1))`` [requests/s per replica].
    Example: a 12 requests/s peak over 2 replicas gives 1.5, 3, 4.5, 6, 7.5, 9.
    """
    if not peak_rps > 0 or replicas < 1 or steps < 2 or not 0 < low < high:
        raise ValueError(f"need peak_rps > 0, replicas >= 1, steps >= 2 and 0 < low < high; got "
                         f"{peak_rps!r}, {replicas!r}, {steps!r}, {low!r}, {high!r}")
    return [float(x) for x in np.linspace(low, high, steps) * peak_rps / replicas]


def uniform_for_mean_and_std(mean: float, std: float) -> tuple[float, float]:
    """The uniform ``[low, high]`` with this mean and standard deviation, floored at 0 [tokens].

    ``half-width = sqrt(3) · std``; synthetic modes of vLLM and SGLang draw lengths uniformly.
    """
    half = min(SQRT3 * std, mean)
    return mean - half, mean + half


def vllm_random_args(summary: dict[str, float]) -> tuple[int, float]:
    """``--random-*-len`` and ``--random-range-ratio`` of vLLM (uniform ``[len(1 - r), len(1 + r)]``)."""
    low, high = uniform_for_mean_and_std(summary["mean"], summary["std"])
    length = max(1, round(summary["mean"]))
    return length, min((high - low) / 2 / max(summary["mean"], 1.0), 0.99)


def sglang_random_args(summary: dict[str, float]) -> tuple[int, float]:
    """``--random-*-len`` and ``--random-range-ratio`` of SGLang (uniform ``[len · r, len]``)."""
    low, high = uniform_for_mean_and_std(summary["mean"], summary["std"])
    length = max(1, round(high))
    return length, max(low, 0.0) / length
