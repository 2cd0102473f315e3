"""Cost of a GPU fleet: per-option cost, the load-duration curve and the cheapest commitment.

Pure functions, numbers in and numbers out; no I/O. Prices come from the price
book (:mod:`capplan.sizing.cost.prices`), never from this module; the cost of one
request is :mod:`capplan.sizing.cost.per_request`. Units are in the
names: ``usd_per_gpu_hour`` [USD/(GPU·h)], ``gpu_hours`` [GPU·h],
``gpu_seconds`` [GPU·s], ``need_gpus`` [GPUs, one value per hour].

Pricing options
---------------
- *on-demand*: pay per GPU-hour used, no commitment.
- *reserved*: a fixed count R of GPUs for a term (1 or 3 years) at an
  effective hourly rate (upfront amortised over the term), paid whether used
  or not.
- *spot*: cheaper GPU-hours that the provider may take back; only for traffic
  marked interruptible (batch/offline), costed with its interruption overhead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing._checks import _out, choice, non_negative, positive

HOURS_PER_YEAR = 8760.0
RESERVED_TERMS_YEARS = {"1y": 1, "3y": 3}
# Costs within this relative distance of the minimum count as a tie (float rounding).
TIE_RELATIVE_TOLERANCE = 1e-9


def cost_usd(gpus: ArrayLike, usd_per_gpu_hour: float, hours: ArrayLike = 1.0) -> np.ndarray | float:
    """Cost of running a GPU count for some hours at one hourly rate.

    .. math:: C = N \\cdot p \\cdot H

    Parameters
    ----------
    gpus : array_like
        GPUs billed. [GPUs]
    usd_per_gpu_hour : float
        Hourly rate of one GPU. [USD/(GPU·h)]
    hours : array_like, default 1.0
        Hours billed. [h]

    Returns
    -------
    numpy.ndarray or float
        Cost. [USD]

    Examples
    --------
    >>> cost_usd(8, 2.5, 730)
    14600.0
    """
    return _out(non_negative("gpus", gpus) * non_negative("usd_per_gpu_hour", usd_per_gpu_hour)
                * non_negative("hours", hours))


def reserved_effective_usd_per_gpu_hour(
    hourly_usd_per_gpu_hour: float, upfront_usd_per_gpu: float, term: str,
) -> float:
    """Effective hourly rate of a reservation, with its upfront payment amortised.

    .. math:: p_{eff} = p_{hourly} + \\frac{U}{8760 \\cdot Y}

    Parameters
    ----------
    hourly_usd_per_gpu_hour : float
        Recurring hourly charge, paid every hour of the term. [USD/(GPU·h)]
    upfront_usd_per_gpu : float
        One-off payment at the start of the term. [USD/GPU]
    term : {'1y', '3y'}
        Length of the commitment (Y = 1 or 3 years of 8,760 h).

    Returns
    -------
    float
        Effective rate over the whole term. [USD/(GPU·h)]

    Raises
    ------
    ValueError
        If ``term`` is not a known term or a price is negative.

    Notes
    -----
    No discounting: a dollar paid upfront counts the same as one paid at the
    end of the term (finance may apply its cost of capital on top).

    Examples
    --------
    8,760 USD upfront plus 1 USD/h over one year is 2 USD/h effective.

    >>> reserved_effective_usd_per_gpu_hour(1.0, 8760.0, "1y")
    2.0
    """
    choice("term", term, tuple(RESERVED_TERMS_YEARS))
    non_negative("hourly_usd_per_gpu_hour", hourly_usd_per_gpu_hour)
    non_negative("upfront_usd_per_gpu", upfront_usd_per_gpu)
    term_hours = HOURS_PER_YEAR * RESERVED_TERMS_YEARS[term]
    return hourly_usd_per_gpu_hour + upfront_usd_per_gpu / term_hours


def spot_overhead_factor(interruptions_per_hour: float, work_lost_per_interruption_h: float) -> float:
    """GPU-hours bought on spot per GPU-hour of useful work.

    .. math:: k = \\frac{1}{1 - \\lambda w}

    Parameters
    ----------
    interruptions_per_hour : float
        Rate at which the provider reclaims one spot GPU. [1/h per GPU]
    work_lost_per_interruption_h : float
        Work redone after one interruption: progress since the last
        checkpoint plus restart and model-load time. [h]

    Returns
    -------
    float
        Overhead factor, >= 1. [ratio]

    Raises
    ------
    ValueError
        If a figure is negative or ``λ·w >= 1`` (no useful work would finish).

    Notes
    -----
    - Interruptions arrive at a constant rate λ per GPU-hour (Poisson), each
      losing w hours of work, so a fraction ``λ·w`` of bought hours is wasted.
    - A replacement spot GPU is available at once (capacity is not modelled).

    Examples
    --------
    One interruption per 20 GPU-hours, losing 15 minutes each: 1/(1-0.05·0.25).

    >>> round(spot_overhead_factor(0.05, 0.25), 6)
    1.012658
    """
    non_negative("interruptions_per_hour", interruptions_per_hour)
    non_negative("work_lost_per_interruption_h", work_lost_per_interruption_h)
    wasted_fraction = interruptions_per_hour * work_lost_per_interruption_h
    if wasted_fraction >= 1:
        raise ValueError(
            f"interruptions_per_hour × work_lost_per_interruption_h = {wasted_fraction:g} >= 1: "
            "spot would never finish useful work")
    return 1.0 / (1.0 - wasted_fraction)


def validate_need_gpus(need_gpus: ArrayLike, name: str = "need_gpus") -> np.ndarray:
    """The hourly need as a float array; ValueError naming the first bad hour. [GPUs]"""
    need = np.asarray(need_gpus, dtype=float)
    if need.ndim != 1 or need.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D series, one value per hour; got shape {need.shape}")
    bad = np.flatnonzero(~np.isfinite(need) | (need < 0))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] = {need[bad[0]]!r}: expected a finite GPU count >= 0")
    return need


def load_duration_curve(need_gpus: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Load-duration curve: hourly need sorted from highest to lowest.

    Parameters
    ----------
    need_gpus : array_like
        GPUs needed in each hour of the horizon. [GPUs]

    Returns
    -------
    fraction_of_hours : numpy.ndarray
        ``(i + 1) / n`` for the i-th largest need: the share of hours whose
        need is at least ``gpus[i]``. [fraction]
    gpus : numpy.ndarray
        Need sorted in descending order. [GPUs]

    Examples
    --------
    >>> load_duration_curve([1, 3, 2])
    (array([0.33333333, 0.66666667, 1.        ]), array([3., 2., 1.]))
    """
    need = validate_need_gpus(need_gpus)
    return np.arange(1, need.size + 1) / need.size, np.sort(need)[::-1]


def overflow_gpu_hours(need_gpus: ArrayLike, reserved_gpus: ArrayLike) -> np.ndarray:
    """GPU-hours of need above each candidate reserved count, for all candidates at once.

    .. math:: O(R) = \\sum_t \\max(0, n_t - R)

    Parameters
    ----------
    need_gpus : array_like
        GPUs needed in each hour. [GPUs]
    reserved_gpus : array_like
        Candidate reserved counts R. [GPUs]

    Returns
    -------
    numpy.ndarray
        Overflow for each R, shaped like ``reserved_gpus``. [GPU·h]

    Notes
    -----
    Sorting once and using prefix sums gives ``O((n + m) log n)`` for n hours
    and m candidates, instead of ``O(n·m)``: with ``k(R)`` hours above R and
    ``S(R)`` their summed need, ``O(R) = S(R) - R·k(R)``.

    Examples
    --------
    >>> overflow_gpu_hours([1, 3, 2], [0, 1, 2, 3])
    array([6., 3., 1., 0.])
    """
    need = np.sort(validate_need_gpus(need_gpus))
    candidates = np.asarray(reserved_gpus, dtype=float)
    prefix = np.concatenate(([0.0], np.cumsum(need)))
    first_above = np.searchsorted(need, candidates, side="right")
    hours_above = need.size - first_above
    need_above = prefix[-1] - prefix[first_above]
    # Clip tiny negatives left by cancellation in the prefix sums.
    return np.maximum(need_above - candidates * hours_above, 0.0)


@dataclass(frozen=True)
class Commitment:
    """The cheapest reserved count for a need series, with the curves behind it.

    Attributes
    ----------
    reserved_gpus : int
        The optimal reserved count R*. [GPUs]
    candidates_gpus : numpy.ndarray
        Every R considered, ``0 … ceil(max need)``. [GPUs]
    cost_by_reserved_usd : numpy.ndarray
        Horizon cost of reserved + on-demand for each candidate R. [USD]
    duration_fraction, duration_gpus : numpy.ndarray
        The load-duration curve (:func:`load_duration_curve`). [fraction], [GPUs]
    break_even_fraction : float
        ``p_reserved / p_on_demand``: a GPU is worth reserving when at least
        this share of hours needs it. [fraction]
    hours : int
        Hours in the horizon. [h]
    """

    reserved_gpus: int
    candidates_gpus: np.ndarray
    cost_by_reserved_usd: np.ndarray
    duration_fraction: np.ndarray
    duration_gpus: np.ndarray
    break_even_fraction: float
    hours: int

    @property
    def cost_usd(self) -> float:
        """Horizon cost at the optimal R. [USD]"""
        return float(self.cost_by_reserved_usd[self.reserved_gpus])

    @property
    def all_on_demand_cost_usd(self) -> float:
        """Horizon cost with nothing reserved (R = 0). [USD]"""
        return float(self.cost_by_reserved_usd[0])


def optimal_commitment(
    need_gpus: ArrayLike, *, reserved_usd_per_gpu_hour: float, on_demand_usd_per_gpu_hour: float,
) -> Commitment:
    """The reserved GPU count that minimises reserved plus on-demand cost.

    .. math:: R^* = \\arg\\min_{R \\in \\{0,1,\\ldots\\}}\\; R\\,p_r H + p_{od} \\sum_t \\max(0, n_t - R)

    Parameters
    ----------
    need_gpus : array_like
        GPUs needed in each hour of the horizon (H = its length). [GPUs]
    reserved_usd_per_gpu_hour : float
        Effective hourly rate of a reserved GPU, paid every hour. [USD/(GPU·h)]
    on_demand_usd_per_gpu_hour : float
        On-demand rate, paid only for hours used. [USD/(GPU·h)]

    Returns
    -------
    Commitment
        R*, the cost-vs-R curve and the load-duration curve.

    Raises
    ------
    ValueError
        If the need is empty, negative or not finite, or a price is not > 0.

    Notes
    -----
    - Break-even: the cost changes by ``p_r·H - p_od·#{t: n_t >= R+1}`` from
      R to R+1 (integer need), so R* is the largest R whose hours-share
      with need >= R is above ``p_r / p_od``: read it off the load-duration
      curve where the curve's fraction equals that ratio.
    - Ties (equal cost within ``TIE_RELATIVE_TOLERANCE``) go to the smaller
      R: the same money with less commitment risk.
    - The cost is convex in R, and with ``p_r < p_od`` R* lies between
      ``floor(min need)`` and ``ceil(max need)``; with ``p_r >= p_od``
      nothing is worth reserving and R* = 0.
    - The horizon's hourly pattern stands for the whole term; a term longer
      than the horizon is assumed to see the same pattern.

    Examples
    --------
    Need 1, 2, 3 GPUs over three hours; reserved 1.0, on-demand 2.0 USD/h:
    R=0 costs 12, R=1 costs 3+6=9, R=2 costs 6+2=8, R=3 costs 9, so R* = 2.

    >>> optimal_commitment([1, 2, 3], reserved_usd_per_gpu_hour=1.0, on_demand_usd_per_gpu_hour=2.0).reserved_gpus
    2
    """
    positive("reserved_usd_per_gpu_hour", reserved_usd_per_gpu_hour)
    positive("on_demand_usd_per_gpu_hour", on_demand_usd_per_gpu_hour)
    need = np.sort(validate_need_gpus(need_gpus))  # sorted once; re-sorting sorted data is cheap
    candidates = np.arange(int(np.ceil(need[-1])) + 1)
    hours = need.size
    cost = (candidates * reserved_usd_per_gpu_hour * hours  # reserved, paid every hour
            + on_demand_usd_per_gpu_hour * overflow_gpu_hours(need, candidates))  # on-demand above R
    tolerance = TIE_RELATIVE_TOLERANCE * max(float(cost.max()), 1.0)
    best = int(np.flatnonzero(cost <= cost.min() + tolerance)[0])
    fraction, gpus = load_duration_curve(need)
    return Commitment(
        reserved_gpus=best, candidates_gpus=candidates, cost_by_reserved_usd=cost,
        duration_fraction=fraction, duration_gpus=gpus,
        break_even_fraction=reserved_usd_per_gpu_hour / on_demand_usd_per_gpu_hour, hours=hours)


@dataclass(frozen=True)
class SharedCommitment:
    """Reserved GPUs of one type shared by several pools, against each pool committing alone.

    Attributes
    ----------
    reserved_gpus : int
        R* of the summed hourly need of the pools. [GPUs]
    cost_usd : float
        Reserved + on-demand horizon cost of the summed need at that R*. [USD]
    per_pool_reserved_gpus : dict of str to int
        Each pool's own R*. [GPUs]
    per_pool_cost_usd : float
        The sum of each pool's own optimal horizon cost. [USD]
    """

    reserved_gpus: int
    cost_usd: float
    per_pool_reserved_gpus: dict[str, int]
    per_pool_cost_usd: float

    @property
    def saving_usd(self) -> float:
        """What sharing saves: per-pool cost − shared cost (>= 0). [USD]"""
        return self.per_pool_cost_usd - self.cost_usd


def shared_commitment(need_by_pool: dict[str, ArrayLike], *, reserved_usd_per_gpu_hour: float,
                      on_demand_usd_per_gpu_hour: float) -> SharedCommitment:
    """The reserved count for pools of one GPU type, optimised on their summed hourly need.

    .. math:: R^*_{shared} = \\arg\\min_R R p_r H + p_{od} \\sum_t \\max(0, \\textstyle\\sum_p n_{p,t} - R)

    Reserved GPUs of one type are interchangeable between its pools, so the pools' peaks that do
    not coincide share reserved GPUs. Never dearer than committing per pool: ``R = Σ_p R*_p`` is
    one of the shared candidates, and ``max(0, Σ_p n_p − Σ_p R_p) <= Σ_p max(0, n_p − R_p)``.

    Parameters
    ----------
    need_by_pool : dict of str to array_like
        Each pool's hourly need over the same hours. [GPUs]

    Raises
    ------
    ValueError
        If there is no pool, or the pools' series differ in length.
    """
    if not need_by_pool:
        raise ValueError("shared_commitment needs at least one pool")
    needs = {name: validate_need_gpus(n, f"need_gpus of pool {name!r}") for name, n in need_by_pool.items()}
    lengths = {n.size for n in needs.values()}
    if len(lengths) != 1:
        raise ValueError(f"the pools' hourly needs must cover the same hours; lengths {sorted(lengths)}")
    prices = {"reserved_usd_per_gpu_hour": reserved_usd_per_gpu_hour,
              "on_demand_usd_per_gpu_hour": on_demand_usd_per_gpu_hour}
    alone = {name: optimal_commitment(n, **prices) for name, n in needs.items()}
    shared = optimal_commitment(np.sum(list(needs.values()), axis=0), **prices)
    return SharedCommitment(
        reserved_gpus=shared.reserved_gpus, cost_usd=shared.cost_usd,
        per_pool_reserved_gpus={name: c.reserved_gpus for name, c in alone.items()},
        per_pool_cost_usd=float(sum(c.cost_usd for c in alone.values())))
