"""Queueing: how latency grows with utilisation, and the utilisation a latency target allows.

M/M/1 (one server) and M/M/c (Erlang C, ``c`` identical servers sharing one
queue). Pure functions: scalar or ndarray in, the same shape out, except the
searches (:func:`mmc_response_time_percentile_s`,
:func:`max_utilisation_for_latency_target`), which broadcast through
``numpy.vectorize``.

For an LLM pool, a *server* is one sequence slot: ``c = GPUs × seqs_per_gpu``
and the service time is the time one sequence holds its slot (the request
latency without queueing). The target utilisation used by
:func:`sizing.fleet.size_fleet` can then come from the latency SLO via
:func:`max_utilisation_for_latency_target` instead of being assumed.

Notes
-----
Assumptions common to every function here: Poisson arrivals; exponentially
distributed service times; first-come first-served; no abandonment; steady
state (utilisation < 1). Continuous batching slows each sequence as the batch
fills, which these models do not capture: they show the queueing in front of
the slots, not the batch slowdown, which belongs in the measured latency.

References
----------
.. [1] L. Kleinrock, *Queueing Systems, Volume 1: Theory*, Wiley, 1975,
   §3.2 (M/M/1) and §3.5 (M/M/m).
.. [2] M. Tanner, "The Erlang-C formula", worked example (λ = 0.2 calls/s,
   240 s per call, 55 agents → P(wait) = 0.2387, mean wait 8.184 s,
   P(wait ≤ 15 s) = 0.8459); the same values are reproduced by R. Dodier's
   Maxima ``erlang.mac`` notes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing._checks import _out, choice, fraction, non_negative, positive

#: Utilisations in the classic latency-multiplier table.
TABLE_UTILISATIONS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
#: What a latency target bounds: the wait before service, or the whole time in system.
LATENCY_KINDS: tuple[str, ...] = ("wait", "response")


def _mmc_args(servers: ArrayLike, arrival_rate_rps: ArrayLike, service_time_s: ArrayLike):
    """Checked (servers c, service time S [s], offered load A = λ·S [erlangs]) as arrays."""
    s = positive("service_time_s", service_time_s)
    return positive("servers", servers), s, non_negative("arrival_rate_rps", arrival_rate_rps) * s


def _stable_utilisation(utilisation: ArrayLike) -> np.ndarray:
    return fraction("utilisation", utilisation, low_open=False, high_open=True)


def mm1_latency_multiplier(utilisation: ArrayLike) -> np.ndarray | float:
    """Mean time in an M/M/1 system as a multiple of the service time.

    .. math:: W / S = \\frac{1}{1 - \\rho}

    Parameters
    ----------
    utilisation : array_like
        Server utilisation ρ = λ·S. [fraction, [0, 1)]

    Returns
    -------
    numpy.ndarray or float
        Latency multiplier. [ratio, >= 1]

    Raises
    ------
    ValueError
        If ρ is outside [0, 1) (at ρ >= 1 the queue grows without bound).

    Examples
    --------
    Half-busy doubles latency; 90 % busy makes it 10×:

    >>> round(mm1_latency_multiplier(0.9), 6)
    10.0
    """
    return _out(1 / (1 - _stable_utilisation(utilisation)))


def mm1_time_in_system_s(service_time_s: ArrayLike, utilisation: ArrayLike) -> np.ndarray | float:
    """Mean time in an M/M/1 system (queueing plus service).

    .. math:: W = \\frac{S}{1 - \\rho}

    Parameters
    ----------
    service_time_s : array_like
        Mean service time. [s]
    utilisation : array_like
        ρ = λ·S. [fraction, [0, 1)]

    Returns
    -------
    numpy.ndarray or float
        Mean time in system. [s]

    Examples
    --------
    >>> round(mm1_time_in_system_s(6, 0.5), 6)
    12.0
    """
    return _out(non_negative("service_time_s", service_time_s) * mm1_latency_multiplier(utilisation))


def latency_multiplier_table(
    utilisations: tuple[float, ...] = TABLE_UTILISATIONS, servers: int = 1
) -> list[dict[str, float]]:
    """Mean latency multiplier at each utilisation, for one server or a pool.

    Parameters
    ----------
    utilisations : tuple of float
        Rows of the table. [fraction, [0, 1)]
    servers : int, default 1
        Servers sharing the queue; 1 gives the M/M/1 column. [count]

    Returns
    -------
    list of dict
        ``{'utilisation', 'latency_multiplier'}`` per row.

    Examples
    --------
    >>> [round(r["latency_multiplier"], 2) for r in latency_multiplier_table((0.5, 0.99))]
    [2.0, 100.0]
    """
    rho = np.asarray(utilisations, dtype=float)
    mult = np.atleast_1d(mmc_latency_multiplier(servers, rho))
    return [{"utilisation": float(r), "latency_multiplier": float(m)} for r, m in zip(rho, mult)]


def _erlang_b(servers: float, offered_load_erlangs: float) -> float:
    """Erlang B (blocking probability of M/M/c/c) by its stable recurrence; see :func:`erlang_c`."""
    if servers != int(servers):
        return 0.0
    b = 1.0
    for k in range(1, int(servers) + 1):
        ab = offered_load_erlangs * b
        b = ab / (k + ab)
    return b


def erlang_c(servers: ArrayLike, offered_load_erlangs: ArrayLike) -> np.ndarray | float:
    """Probability an arrival has to wait in an M/M/c queue (Erlang C).

    .. math:: C(c, A) = \\frac{B(c, A)}{1 - \\frac{A}{c}(1 - B(c, A))},\\quad
              B(c, A) = \\frac{A^c / c!}{\\sum_{k=0}^{c} A^k / k!}

    Parameters
    ----------
    servers : array_like of int
        Servers c. [count, >= 1]
    offered_load_erlangs : array_like
        Offered load A = λ·S. [erlangs]

    Returns
    -------
    numpy.ndarray or float
        Probability of waiting; 1 where A >= c (no steady state). [fraction]

    Notes
    -----
    Erlang B comes from the recurrence ``B(0) = 1``,
    ``B(k) = A·B(k−1) / (k + A·B(k−1))``: positive terms only, so it neither
    overflows (``A^c / c!`` would, at thousands of servers) nor cancels; it
    agrees with 60-digit sums to 5e-15 relative up to 10^4 servers. O(c) per
    value; no SciPy import (``capplan size`` starts in a fraction of a second).
    A non-integer ``c`` has no Poisson mass, so ``B = 0`` there (as before).

    Examples
    --------
    Tanner's worked example [2]_: 48 erlangs on 55 agents.

    >>> round(erlang_c(55, 48), 4)
    0.2387
    """
    c = positive("servers", servers)
    a = non_negative("offered_load_erlangs", offered_load_erlangs)
    b = np.vectorize(_erlang_b, otypes=[float])(c, a)
    rho = a / c
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(rho < 1, b / (1 - rho * (1 - b)), 1.0)
    return _out(np.where(a == 0, 0.0, result))


def mmc_mean_wait_s(servers: ArrayLike, arrival_rate_rps: ArrayLike, service_time_s: ArrayLike) -> np.ndarray | float:
    """Mean wait before service in an M/M/c queue.

    .. math:: W_q = \\frac{C(c, A) \\, S}{c - A}

    Parameters
    ----------
    servers : array_like of int
        Servers c. [count]
    arrival_rate_rps : array_like
        Arrival rate λ. [requests/s]
    service_time_s : array_like
        Mean service time S. [s]

    Returns
    -------
    numpy.ndarray or float
        Mean wait; ``inf`` where λ·S >= c. [s]

    Examples
    --------
    >>> round(mmc_mean_wait_s(55, 0.2, 240), 3)
    8.184
    """
    c, s, a = _mmc_args(servers, arrival_rate_rps, service_time_s)
    with np.errstate(divide="ignore"):
        return _out(np.where(a < c, erlang_c(c, a) * s / np.maximum(c - a, 0), np.inf))


def mmc_wait_probability_within(
    servers: ArrayLike, arrival_rate_rps: ArrayLike, service_time_s: ArrayLike, wait_s: ArrayLike
) -> np.ndarray | float:
    """Probability an arrival waits no longer than ``wait_s`` (the call-centre "service level").

    .. math:: P(W_q \\le t) = 1 - C(c, A) \\, e^{-(c - A) t / S}

    Parameters
    ----------
    servers : array_like of int
        Servers c. [count]
    arrival_rate_rps : array_like
        Arrival rate λ. [requests/s]
    service_time_s : array_like
        Mean service time S. [s]
    wait_s : array_like
        Wait threshold t. [s]

    Returns
    -------
    numpy.ndarray or float
        Probability. [fraction]

    Examples
    --------
    >>> round(mmc_wait_probability_within(55, 0.2, 240, 15), 4)
    0.8459
    """
    c, s, a = _mmc_args(servers, arrival_rate_rps, service_time_s)
    t = non_negative("wait_s", wait_s)
    return _out(np.where(a < c, 1 - erlang_c(c, a) * np.exp(-np.maximum(c - a, 0) * t / s), 0.0))


def mmc_wait_percentile_s(
    servers: ArrayLike, arrival_rate_rps: ArrayLike, service_time_s: ArrayLike, percentile: ArrayLike
) -> np.ndarray | float:
    """Waiting-time percentile in an M/M/c queue.

    .. math:: t_p = \\max\\left(0, \\frac{S}{c - A} \\ln\\frac{C(c, A)}{1 - p}\\right)

    Parameters
    ----------
    servers : array_like of int
        Servers c. [count]
    arrival_rate_rps : array_like
        Arrival rate λ. [requests/s]
    service_time_s : array_like
        Mean service time S. [s]
    percentile : array_like
        Probability level p, e.g. 0.99 for p99. [fraction, (0, 1)]

    Returns
    -------
    numpy.ndarray or float
        Wait not exceeded by a share p of arrivals; 0 when more than p find a
        free server; ``inf`` where λ·S >= c. [s]

    Examples
    --------
    >>> round(mmc_wait_percentile_s(55, 0.2, 240, 0.9), 2)
    29.83
    """
    c, s, a = _mmc_args(servers, arrival_rate_rps, service_time_s)
    p = fraction("percentile", percentile, high_open=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = s / (c - a) * np.log(erlang_c(c, a) / (1 - p))
    return _out(np.where(a < c, np.maximum(t, 0.0), np.inf))


def mmc_response_time_exceedance(
    servers: ArrayLike, arrival_rate_rps: ArrayLike, service_time_s: ArrayLike, time_s: ArrayLike
) -> np.ndarray | float:
    """Probability the time in system (wait + service) exceeds ``time_s`` in an M/M/c queue.

    .. math:: P(T > t) = (1 - C) e^{-\\mu t} + C \\frac{\\theta e^{-\\mu t} - \\mu e^{-\\theta t}}{\\theta - \\mu},
              \\quad \\mu = 1/S,\\ \\theta = (c - A)/S

    Parameters
    ----------
    servers : array_like of int
        Servers c. [count]
    arrival_rate_rps : array_like
        Arrival rate λ. [requests/s]
    service_time_s : array_like
        Mean service time S. [s]
    time_s : array_like
        Threshold t. [s]

    Returns
    -------
    numpy.ndarray or float
        Exceedance probability; 1 where λ·S >= c. [fraction]

    Notes
    -----
    A waiting arrival's time is an Exp(θ) wait plus an Exp(μ) service, a
    hypoexponential; at θ = μ the bracket becomes ``(1 + μ t) e^{-μ t}``.

    Examples
    --------
    One server at ρ = 0.5 behaves as Exp(1/(2S)): ``P(T > 2S) = e^{-1}``.

    >>> round(mmc_response_time_exceedance(1, 0.25, 2, 4), 4)
    0.3679
    """
    c, s, a = _mmc_args(servers, arrival_rate_rps, service_time_s)
    t = non_negative("time_s", time_s)
    mu, theta = 1 / s, np.maximum(c - a, 0) / s
    wait_prob = erlang_c(c, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        queued = np.where(
            np.isclose(theta, mu),
            (1 + mu * t) * np.exp(-mu * t),
            (theta * np.exp(-mu * t) - mu * np.exp(-theta * t)) / (theta - mu),
        )
    return _out(np.where(a < c, (1 - wait_prob) * np.exp(-mu * t) + wait_prob * queued, 1.0))


def _response_percentile(c: float, lam: float, s: float, p: float) -> float:
    if lam * s >= c:
        return np.inf
    # The p-quantile of service alone is a lower bound; doubling brackets the root.
    lo, hi = -s * np.log(1 - p), -s * np.log(1 - p)
    while mmc_response_time_exceedance(c, lam, s, hi) > 1 - p:
        hi *= 2
    if hi == lo:
        return float(lo)
    from scipy import optimize  # here, not at the top: importing SciPy costs ~0.5 s of every start

    return float(optimize.brentq(lambda t: mmc_response_time_exceedance(c, lam, s, t) - (1 - p), lo, hi, xtol=1e-9 * s))


def mmc_response_time_percentile_s(
    servers: ArrayLike, arrival_rate_rps: ArrayLike, service_time_s: ArrayLike, percentile: ArrayLike
) -> np.ndarray | float:
    """Percentile of the time in system (wait + service) in an M/M/c queue.

    Solves :func:`mmc_response_time_exceedance` ``= 1 − p`` for ``t`` with
    :func:`scipy.optimize.brentq`.

    Parameters
    ----------
    servers : array_like of int
        Servers c. [count]
    arrival_rate_rps : array_like
        Arrival rate λ. [requests/s]
    service_time_s : array_like
        Mean service time S. [s]
    percentile : array_like
        Probability level p. [fraction, (0, 1)]

    Returns
    -------
    numpy.ndarray or float
        Time in system not exceeded by a share p of requests; ``inf`` where λ·S >= c. [s]

    Examples
    --------
    M/M/1 at ρ = 0.5 with S = 2 s: T ~ Exp(mean 4 s), so p90 = 4 ln 10:

    >>> round(mmc_response_time_percentile_s(1, 0.25, 2, 0.9), 3)
    9.21
    """
    positive("servers", servers)
    positive("service_time_s", service_time_s)
    non_negative("arrival_rate_rps", arrival_rate_rps)
    fraction("percentile", percentile, high_open=True)
    return _out(np.vectorize(_response_percentile, otypes=[float])(servers, arrival_rate_rps, service_time_s, percentile))


def mmc_latency_multiplier(servers: ArrayLike, utilisation: ArrayLike) -> np.ndarray | float:
    """Mean time in an M/M/c system as a multiple of the service time.

    .. math:: W / S = 1 + \\frac{C(c, c\\rho)}{c (1 - \\rho)}

    Parameters
    ----------
    servers : array_like of int
        Servers c; ``c = 1`` gives :func:`mm1_latency_multiplier`. [count]
    utilisation : array_like
        ρ = λ·S / c. [fraction, [0, 1)]

    Returns
    -------
    numpy.ndarray or float
        Latency multiplier. [ratio, >= 1]

    Examples
    --------
    Pooling helps: 100 servers at 90 % add only a few per cent to latency.

    >>> round(mmc_latency_multiplier(100, 0.9), 3)
    1.022
    """
    c = positive("servers", servers)
    rho = _stable_utilisation(utilisation)
    return _out(1 + erlang_c(c, c * rho) / (c * (1 - rho)))


def _max_utilisation(c: float, s: float, target: float, p: float, latency: str) -> float:
    def excess(rho: float) -> float:
        lam = rho * c / s
        if latency == "wait":
            return float(mmc_wait_percentile_s(c, lam, s, p)) - target
        return _response_percentile(c, lam, s, p) - target

    hi = 1 - 1e-9
    if excess(0.0) > 0:
        raise ValueError(
            f"a p{p * 100:g} {latency} target of {target} s cannot be met even with no load: the idle pool's "
            f"p{p * 100:g} is {excess(0.0) + target:.3g} s (exponential service, mean {s} s)")
    if excess(hi) <= 0:
        return hi
    from scipy import optimize

    return float(optimize.brentq(excess, 0.0, hi, xtol=1e-9))


def max_utilisation_for_latency_target(
    servers: ArrayLike,
    service_time_s: ArrayLike,
    latency_target_s: ArrayLike,
    percentile: ArrayLike = 0.99,
    latency: str = "wait",
) -> np.ndarray | float:
    """Highest utilisation of a pool of ``c`` servers at which a latency percentile meets its target.

    Solves ``t_p(ρ) = target`` for ρ with :func:`scipy.optimize.brentq`; the
    percentile grows monotonically with ρ.

    Parameters
    ----------
    servers : array_like of int
        Servers (sequence slots) in the pool. [count]
    service_time_s : array_like
        Mean time a request holds a slot. [s]
    latency_target_s : array_like
        SLO threshold. [s]
    percentile : array_like, default 0.99
        SLO percentile, e.g. 0.99 for "p99 under the target". [fraction, (0, 1)]
    latency : {'wait', 'response'}, default 'wait'
        Bound the queueing wait only (e.g. a time-to-first-token budget for
        queueing) or the whole time in system.

    Returns
    -------
    numpy.ndarray or float
        Utilisation ρ. [fraction, (0, 1)]

    Raises
    ------
    ValueError
        If ``latency`` is not one of :data:`LATENCY_KINDS`, or the target is
        below what an idle pool achieves.

    Examples
    --------
    400 slots, 6 s per request, p99 queueing wait under 0.5 s:

    >>> round(max_utilisation_for_latency_target(400, 6, 0.5, 0.99), 3)
    0.93
    """
    choice("latency", latency, LATENCY_KINDS)
    positive("servers", servers)
    positive("service_time_s", service_time_s)
    non_negative("latency_target_s", latency_target_s)
    fraction("percentile", percentile, high_open=True)
    solve = np.vectorize(_max_utilisation, otypes=[float], excluded={"latency"})
    return _out(solve(servers, service_time_s, latency_target_s, percentile, latency=latency))


def _servers_for_wait(lam: float, s: float, target: float, p: float) -> int:
    def meets(c: int) -> bool:
        return bool(mmc_wait_percentile_s(c, lam, s, p) <= target)

    lo = int(np.floor(lam * s))  # fails: at most the offered load, so the queue is unstable
    hi = max(lo + 1, 1)
    while not meets(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # the wait percentile falls as servers are added: bisect
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return hi


def servers_for_wait_target(
    arrival_rate_rps: ArrayLike, service_time_s: ArrayLike, wait_target_s: ArrayLike, percentile: ArrayLike = 0.99
) -> np.ndarray | int:
    """Fewest servers (sequence slots) for which a waiting-time percentile meets its target (Erlang C staffing).

    .. math:: c^* = \\min \\{ c : t_p(c, \\lambda, S) \\le t_{target} \\}

    Parameters
    ----------
    arrival_rate_rps : array_like
        Arrival rate λ at peak. [requests/s]
    service_time_s : array_like
        Mean time a request holds a slot. [s]
    wait_target_s : array_like
        Queueing-wait threshold of the SLO. [s]
    percentile : array_like, default 0.99
        SLO percentile. [fraction, (0, 1)]

    Returns
    -------
    numpy.ndarray or int
        Servers c*; the utilisation it implies is ``λ·S / c*``. [count]

    Notes
    -----
    The wait percentile falls monotonically as servers are added, so the
    search doubles to a bracket and bisects: O(log c) Erlang C evaluations.

    Examples
    --------
    92.6 requests/s holding a slot 6 s each (556 erlangs), p99 wait under 0.5 s:

    >>> servers_for_wait_target(92.593, 6, 0.5, 0.99)
    587
    """
    non_negative("arrival_rate_rps", arrival_rate_rps)
    positive("service_time_s", service_time_s)
    non_negative("wait_target_s", wait_target_s)
    fraction("percentile", percentile, high_open=True)
    c = np.vectorize(_servers_for_wait, otypes=[int])(arrival_rate_rps, service_time_s, wait_target_s, percentile)
    return int(c) if np.ndim(c) == 0 else c
