"""Demand: request rates and token rates the fleet must serve.

Pure functions: scalar or ndarray in, the same shape out. Units are in the
names: ``requests_per_day`` [requests/day], ``*_qps`` [requests/s],
``*_tokens_per_s`` [tokens/s].
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing._checks import _out, non_negative, positive

SECONDS_PER_DAY = 86_400.0


def average_qps(requests_per_day: ArrayLike) -> np.ndarray | float:
    """Mean request rate over a day.

    .. math:: \\bar\\lambda = N_{day} / 86\\,400

    Parameters
    ----------
    requests_per_day : array_like
        Requests in one day. [requests/day]

    Returns
    -------
    numpy.ndarray or float
        Mean arrival rate. [requests/s]

    Examples
    --------
    >>> round(average_qps(2_000_000), 2)
    23.15
    """
    return _out(non_negative("requests_per_day", requests_per_day) / SECONDS_PER_DAY)


def peak_qps(average_qps: ArrayLike, peak_to_avg_ratio: ArrayLike) -> np.ndarray | float:
    """Peak request rate from the mean and a peak-to-average ratio.

    .. math:: \\lambda_{peak} = r \\cdot \\bar\\lambda

    Parameters
    ----------
    average_qps : array_like
        Mean arrival rate. [requests/s]
    peak_to_avg_ratio : array_like
        Peak rate over mean rate, at the resolution the fleet must absorb
        (e.g. the busiest second of the busiest hour). [ratio, >= 1]

    Returns
    -------
    numpy.ndarray or float
        Peak arrival rate. [requests/s]

    Raises
    ------
    ValueError
        If ``peak_to_avg_ratio`` < 1 (a peak below the mean) or ``average_qps`` < 0.

    Examples
    --------
    >>> round(peak_qps(23.148, 4), 1)
    92.6
    """
    ratio = np.asarray(peak_to_avg_ratio, dtype=float)
    if not np.all(ratio >= 1):
        raise ValueError(f"peak_to_avg_ratio must be >= 1, got {peak_to_avg_ratio!r}")
    return _out(non_negative("average_qps", average_qps) * ratio)


def tokens_per_s(qps: ArrayLike, tokens_per_request: ArrayLike) -> np.ndarray | float:
    """Token rate implied by a request rate and a mean length per request.

    .. math:: \\tau = \\lambda \\cdot \\bar n

    Use output tokens for the decode rate and input (prompt) tokens for the
    prefill rate.

    Parameters
    ----------
    qps : array_like
        Arrival rate. [requests/s]
    tokens_per_request : array_like
        Mean tokens per request. [tokens/request]

    Returns
    -------
    numpy.ndarray or float
        Token rate. [tokens/s]

    Notes
    -----
    The *mean* length is the right one for a rate (throughput adds up over
    requests); memory sizing uses a high quantile instead, see
    :func:`sizing.memory.sequence_tokens_at_quantile`.

    Examples
    --------
    >>> round(tokens_per_s(92.593, 400))
    37037
    """
    return _out(non_negative("qps", qps) * non_negative("tokens_per_request", tokens_per_request))


def daily_from_peak(peak_qps: ArrayLike, peak_to_avg_ratio: ArrayLike) -> np.ndarray | float:
    """Requests per day implied by a peak rate and a peak-to-average ratio (inverse of the two above).

    .. math:: N_{day} = 86\\,400 \\cdot \\lambda_{peak} / r

    Parameters
    ----------
    peak_qps : array_like
        Peak arrival rate. [requests/s]
    peak_to_avg_ratio : array_like
        Peak rate over mean rate. [ratio, >= 1]

    Returns
    -------
    numpy.ndarray or float
        Requests in one day. [requests/day]

    Examples
    --------
    >>> round(daily_from_peak(92.593, 4))
    2000009
    """
    ratio = positive("peak_to_avg_ratio", peak_to_avg_ratio)
    return _out(non_negative("peak_qps", peak_qps) / ratio * SECONDS_PER_DAY)
