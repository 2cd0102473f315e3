"""Capacity: requests in flight (Little's law) and fractional GPU needs by throughput and by concurrency.

Pure functions: scalar or ndarray in, the same shape out. Results are
*fractional* GPU counts; rounding to whole replicas and adding headroom happen
once, in :func:`sizing.fleet.size_fleet`, so each step stays checkable.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing._checks import _out, fraction, non_negative, positive


def concurrency_from_littles_law(arrival_rate_rps: ArrayLike, latency_s: ArrayLike) -> np.ndarray | float:
    """Mean number of requests in flight.

    .. math:: L = \\lambda \\cdot W

    Parameters
    ----------
    arrival_rate_rps : array_like
        Mean arrival rate over the window sized for (use the peak). [requests/s]
    latency_s : array_like
        Mean time a request spends in the system, first byte in to last token
        out. [s]

    Returns
    -------
    numpy.ndarray or float
        Mean requests in flight. [requests]

    Notes
    -----
    - Holds for any stable system in steady state, whatever the arrival or
      service distributions [1]_; it gives the *mean*, so the instantaneous
      count fluctuates around it (see :mod:`sizing.queueing`).
    - ``latency_s`` should be the end-to-end time including queueing, as
      measured at the serving layer.

    References
    ----------
    .. [1] J. D. C. Little, "A proof for the queuing formula L = λW",
       Operations Research 9(3), 383–387, 1961.

    Examples
    --------
    92.6 requests/s for 6 s each keep about 556 requests in flight:

    >>> round(concurrency_from_littles_law(92.593, 6))
    556
    """
    return _out(non_negative("arrival_rate_rps", arrival_rate_rps) * non_negative("latency_s", latency_s))


def arrival_rate_from_littles_law(concurrency: ArrayLike, latency_s: ArrayLike) -> np.ndarray | float:
    """Arrival rate a concurrency sustains at a given latency (Little's law solved for λ).

    .. math:: \\lambda = L / W

    Parameters
    ----------
    concurrency : array_like
        Mean requests in flight. [requests]
    latency_s : array_like
        Mean time in system. [s]

    Returns
    -------
    numpy.ndarray or float
        Arrival rate. [requests/s]

    Examples
    --------
    >>> round(arrival_rate_from_littles_law(555.6, 6), 1)
    92.6
    """
    return _out(non_negative("concurrency", concurrency) / positive("latency_s", latency_s))


def gpus_for_throughput(
    required_tokens_per_s: ArrayLike, gpu_tokens_per_s: ArrayLike, target_utilisation: ArrayLike
) -> np.ndarray | float:
    """GPUs needed to generate (or prefill) a token rate at a target utilisation.

    .. math:: G_{tput} = \\frac{\\tau}{r_{gpu} \\cdot u}

    Parameters
    ----------
    required_tokens_per_s : array_like
        Token rate to serve at peak. [tokens/s]
    gpu_tokens_per_s : array_like
        Aggregate throughput of one GPU at the serving batch size (all
        sequences together, not one stream). [tokens/(s·GPU)]
    target_utilisation : array_like
        Fraction of that throughput the fleet may use at peak. [fraction, (0, 1]]

    Returns
    -------
    numpy.ndarray or float
        Fractional GPUs. [GPUs]

    Notes
    -----
    - A tensor-parallel replica of ``t`` GPUs is taken to deliver ``t`` times
      the per-GPU rate; quote ``gpu_tokens_per_s`` per GPU of the replica.
    - Decode and prefill time-share a GPU, so their two counts add (see
      :func:`sizing.fleet.size_fleet`).

    Examples
    --------
    37,037 output tokens/s at 2,000 tokens/s per GPU and 60 % utilisation:

    >>> round(gpus_for_throughput(37_037, 2_000, 0.6), 1)
    30.9
    """
    rate = non_negative("required_tokens_per_s", required_tokens_per_s)
    per_gpu = positive("gpu_tokens_per_s", gpu_tokens_per_s)
    return _out(rate / (per_gpu * fraction("target_utilisation", target_utilisation)))


def gpus_for_concurrency(
    concurrency: ArrayLike, seqs_per_gpu: ArrayLike, target_utilisation: ArrayLike
) -> np.ndarray | float:
    """GPUs needed to hold the in-flight sequences, keeping slots at a target utilisation.

    .. math:: G_{conc} = \\frac{L}{s_{gpu} \\cdot u}

    Parameters
    ----------
    concurrency : array_like
        Mean requests in flight at peak (from :func:`concurrency_from_littles_law`). [requests]
    seqs_per_gpu : array_like
        Sequences one GPU can hold at once, by KV-cache memory or by the
        engine's batch limit. [sequences/GPU]
    target_utilisation : array_like
        Fraction of the slots used at peak; the rest absorbs fluctuation
        around the mean concurrency. [fraction, (0, 1]]

    Returns
    -------
    numpy.ndarray or float
        Fractional GPUs. [GPUs]

    Examples
    --------
    556 in flight, 40 slots per GPU, 60 % utilisation:

    >>> round(gpus_for_concurrency(555.56, 40, 0.6), 1)
    23.1
    """
    slots = positive("seqs_per_gpu", seqs_per_gpu) * fraction("target_utilisation", target_utilisation)
    return _out(non_negative("concurrency", concurrency) / slots)
