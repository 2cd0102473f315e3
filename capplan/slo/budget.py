"""Error budgets and burn rates: pure arithmetic on SLO targets and event counts.

An SLO promises that a fraction ``target`` of valid events is good over a
rolling window. The error budget is what the promise leaves:

* budget fraction ``b = 1 − target`` (99.9 % → 0.001);
* budget in events ``b · N_valid``;
* budget in minutes of full outage ``b · window_minutes`` (99.9 % over 30 days → 43.2 min).

The burn rate is how fast an error rate spends it: ``burn = error_rate / b``. A
burn of 1 spends exactly the budget over the window; a burn ``B`` held for a
time ``t`` spends ``B · t / window`` of it and would exhaust a full budget in
``window / B``.

Multi-window, multi-burn-rate alerting (Google SRE Workbook, ch. 5 "Alerting on
SLOs", table 5-8) fires a rule when the burn rate over a long window *and* over
a short window both reach the rule's threshold: the long window gives
significance, the short one makes the alert reset soon after the errors stop.

References
----------
.. [1] Beyer, B. et al. (2018). *The Site Reliability Workbook*, ch. 5
   "Alerting on SLOs". O'Reilly. https://sre.google/workbook/alerting-on-slos/
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

MINUTES_PER_DAY = 24 * 60
SEVERITIES = ("page", "ticket")


@dataclass(frozen=True)
class BurnRateRule:
    """One multi-window burn-rate alert rule.

    Attributes
    ----------
    severity : str
        ``'page'`` or ``'ticket'``.
    long_window_min : int
        Long window. [min]
    short_window_min : int
        Short window; the Workbook uses 1/12 of the long one. [min]
    burn_rate_threshold : float
        Both windows' burn rates must reach this. [ratio to budget rate]
    """

    severity: str
    long_window_min: int
    short_window_min: int
    burn_rate_threshold: float

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")
        if not 0 < self.short_window_min <= self.long_window_min:
            raise ValueError(
                f"need 0 < short_window_min ({self.short_window_min}) <= long_window_min ({self.long_window_min})")
        if self.burn_rate_threshold <= 0:
            raise ValueError(f"burn_rate_threshold must be > 0, got {self.burn_rate_threshold}")


#: The Workbook's recommended rules for a 30-day SLO (table 5-8): 2 % of the
#: budget in 1 h and 5 % in 6 h page; 10 % in 3 days opens a ticket.
WORKBOOK_RULES: tuple[BurnRateRule, ...] = (
    BurnRateRule("page", 60, 5, 14.4),
    BurnRateRule("page", 360, 30, 6.0),
    BurnRateRule("ticket", 3 * MINUTES_PER_DAY, 360, 1.0),
)


def _check_target(target: float) -> None:
    if not 0 < target < 1:
        raise ValueError(f"SLO target must be a fraction strictly between 0 and 1, got {target!r}")


def error_budget_fraction(target: float) -> float:
    """Fraction of events allowed to be bad, ``b = 1 − target``.

    Parameters
    ----------
    target : float
        SLO target, e.g. 0.999. [fraction]

    Returns
    -------
    float
        Error budget. [fraction of valid events]

    Examples
    --------
    >>> round(error_budget_fraction(0.999), 6)
    0.001
    """
    _check_target(target)
    return 1.0 - target


def error_budget_events(valid_events: ArrayLike, target: float) -> NDArray[np.float64] | float:
    """Bad events the SLO allows among ``valid_events``: ``b · N``.

    Parameters
    ----------
    valid_events : float or array_like
        Valid events in the SLO window. [events]
    target : float
        SLO target. [fraction]

    Returns
    -------
    float or ndarray
        Allowed bad events. [events]

    Examples
    --------
    >>> round(float(error_budget_events(1_000_000, 0.999)), 6)
    1000.0
    """
    return np.asarray(valid_events, dtype=float) * error_budget_fraction(target)


def error_budget_minutes(window_days: float, target: float) -> float:
    """The budget expressed as minutes of full outage: ``b · window_days · 1440``.

    Parameters
    ----------
    window_days : float
        SLO window. [days]
    target : float
        SLO target. [fraction]

    Returns
    -------
    float
        Minutes of total unavailability the budget covers. [min]

    Examples
    --------
    >>> round(error_budget_minutes(30, 0.999), 6)
    43.2
    """
    if window_days <= 0:
        raise ValueError(f"window_days must be > 0, got {window_days!r}")
    return error_budget_fraction(target) * window_days * MINUTES_PER_DAY


def burn_rate(error_rate: ArrayLike, target: float) -> NDArray[np.float64] | float:
    """Burn rate ``B = error_rate / (1 − target)``.

    Parameters
    ----------
    error_rate : float or array_like
        Observed fraction of bad events. [fraction]
    target : float
        SLO target. [fraction]

    Returns
    -------
    float or ndarray
        How many times faster than sustainable the budget is being spent. [ratio]

    Examples
    --------
    >>> round(float(burn_rate(0.0144, 0.999)), 6)
    14.4
    """
    return np.asarray(error_rate, dtype=float) / error_budget_fraction(target)


def budget_spent_fraction(burn: ArrayLike, duration_min: ArrayLike, window_days: float) -> NDArray[np.float64] | float:
    """Share of a window's budget spent by burning at ``burn`` for ``duration_min``.

    ``spent = B · t / T``, with ``T`` the SLO window.

    Parameters
    ----------
    burn : float or array_like
        Burn rate. [ratio]
    duration_min : float or array_like
        How long the burn lasts. [min]
    window_days : float
        SLO window. [days]

    Returns
    -------
    float or ndarray
        Budget spent. [fraction of the window's budget]

    Examples
    --------
    >>> round(float(budget_spent_fraction(14.4, 60, 30)), 6)
    0.02
    """
    if window_days <= 0:
        raise ValueError(f"window_days must be > 0, got {window_days!r}")
    return np.asarray(burn, dtype=float) * np.asarray(duration_min, dtype=float) / (window_days * MINUTES_PER_DAY)


def time_to_exhaustion_h(burn: ArrayLike, window_days: float, remaining_fraction: float = 1.0) -> NDArray[np.float64] | float:
    """Hours until ``remaining_fraction`` of the budget is gone at a constant burn.

    ``t = remaining · T / B``; infinite when ``B = 0``.

    Parameters
    ----------
    burn : float or array_like
        Burn rate. [ratio]
    window_days : float
        SLO window. [days]
    remaining_fraction : float
        Budget left. [fraction of the window's budget]

    Returns
    -------
    float or ndarray
        Time to exhaustion. [h]

    Examples
    --------
    >>> round(float(time_to_exhaustion_h(50, 30)), 6)
    14.4
    """
    b = np.asarray(burn, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(b > 0, remaining_fraction * window_days * 24 / np.where(b > 0, b, 1), np.inf)


def budget_consumed_fraction(bad_events: ArrayLike, valid_events: ArrayLike, target: float) -> NDArray[np.float64] | float:
    """Share of the budget that ``bad_events`` among ``valid_events`` consumed.

    ``consumed = bad / (b · valid)``; it exceeds 1 once the SLO is missed, and
    the remaining budget ``1 − consumed`` is then negative. Zero valid events
    consume nothing.

    Parameters
    ----------
    bad_events : float or array_like
        Bad events in the window. [events]
    valid_events : float or array_like
        Valid events in the window. [events]
    target : float
        SLO target. [fraction]

    Returns
    -------
    float or ndarray
        Budget consumed. [fraction of the budget]

    Examples
    --------
    >>> round(float(budget_consumed_fraction(500, 1_000_000, 0.999)), 6)
    0.5
    """
    bad = np.asarray(bad_events, dtype=float)
    allowed = np.asarray(error_budget_events(valid_events, target), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(allowed > 0, bad / np.where(allowed > 0, allowed, 1), 0.0)


def trailing_sum(per_minute: ArrayLike, window_min: int) -> NDArray[np.float64]:
    """Sum over the trailing ``window_min`` minutes ending at (and including) each minute.

    The first minutes sum over what history there is.

    Parameters
    ----------
    per_minute : array_like
        A dense per-minute series (one value per minute, no gaps). [events]
    window_min : int
        Window length. [min]

    Returns
    -------
    ndarray
        Trailing sums, same length. [events]
    """
    if window_min < 1:
        raise ValueError(f"window_min must be >= 1, got {window_min}")
    c = np.concatenate([[0.0], np.cumsum(np.asarray(per_minute, dtype=float))])
    end = np.arange(1, len(c))
    return c[end] - c[np.maximum(end - window_min, 0)]


def windowed_burn_rate(bad_per_min: ArrayLike, valid_per_min: ArrayLike, window_min: int,
                       target: float) -> NDArray[np.float64]:
    """Burn rate over the trailing ``window_min`` minutes at each minute.

    Parameters
    ----------
    bad_per_min, valid_per_min : array_like
        Dense per-minute counts. [events]
    window_min : int
        Window length. [min]
    target : float
        SLO target. [fraction]

    Returns
    -------
    ndarray
        Burn rate; 0 where the window holds no valid event. [ratio]
    """
    bad = trailing_sum(bad_per_min, window_min)
    valid = trailing_sum(valid_per_min, window_min)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(valid > 0, bad / np.where(valid > 0, valid, 1), 0.0)
    return np.asarray(burn_rate(rate, target))


def rule_firing(bad_per_min: ArrayLike, valid_per_min: ArrayLike, rule: BurnRateRule,
                target: float) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """Minutes at which a multi-window rule fires, and the long-window burn rate.

    A rule fires at minute *t* when the burn rates over both the long and the
    short window ending at *t* reach ``rule.burn_rate_threshold`` [1]_. It
    cannot fire before the series covers one long window: a 3-day rule over
    the first hour of a log would judge one quiet hour as if it were 3 days.

    Parameters
    ----------
    bad_per_min, valid_per_min : array_like
        Dense per-minute counts. [events]
    rule : BurnRateRule
        The rule.
    target : float
        SLO target. [fraction]

    Returns
    -------
    firing : ndarray of bool
        True where the rule fires.
    long_burn : ndarray
        Long-window burn rate. [ratio]
    """
    long_burn = windowed_burn_rate(bad_per_min, valid_per_min, rule.long_window_min, target)
    short_burn = windowed_burn_rate(bad_per_min, valid_per_min, rule.short_window_min, target)
    # a tiny tolerance so a burn of exactly the threshold (14.4 from 1.44 %) counts despite rounding
    tol = 1e-9 * rule.burn_rate_threshold
    firing = (long_burn >= rule.burn_rate_threshold - tol) & (short_burn >= rule.burn_rate_threshold - tol)
    firing[: rule.long_window_min - 1] = False
    return firing, long_burn


def runs(mask: ArrayLike) -> list[tuple[int, int]]:
    """Maximal runs of True as half-open index ranges ``[start, stop)``.

    Examples
    --------
    >>> runs([False, True, True, False, True])
    [(1, 3), (4, 5)]
    """
    m = np.asarray(mask, dtype=np.int8)
    edges = np.diff(np.concatenate([[0], m, [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))
