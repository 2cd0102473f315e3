"""Prediction intervals calibrated on backtest errors (normalised split-conformal).

Every model is judged the same way: the signed errors ``e = z − ẑ`` of its
rolling-origin backtests (modelling scale, so log errors for log-modelled
series) are divided by a per-step error scale ``s(h)``; the quantiles of the
pooled normalised errors, times ``s(h)``, give the interval at step ``h``.
Pooling over steps gives enough errors for the tails from a few backtest
windows, while ``s(h)`` keeps the widening with lead time that the backtests
show.

The errors of one window are strongly correlated (a window that starts on
a wrong level errs the same way for hours), so the unit that is exchangeable
with the future is the *window*, not the hour. With a handful of windows the
pooled quantile under-covers a new window: :func:`window_adjusted_level`
raises the quantile level until the leave-one-window-out coverage on the
backtests reaches the nominal level (the cross-validation analogue of the
conformal ``n + 1`` correction, counted in windows). Errors drift over time, so
``"window_cv_recent"`` also checks the intervals calibrated on the older windows
against the most recent one and widens them by the factor (never below 1) that
window needed (:func:`recent_window_factor`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def step_scale(errors: np.ndarray, horizon: int) -> np.ndarray:
    """Per-step error scale ``s(h)``: mean |error| over neighbouring steps, never falling with ``h``.

    Parameters
    ----------
    errors : numpy.ndarray
        Signed backtest errors, shape ``(windows, backtest_horizon)``; NaN where
        a window has no actual value.
    horizon : int
        Steps to return. Beyond the backtest horizon ``H`` the scale grows as
        ``s(H)·(h / H)^β`` with ``β`` the growth the backtests showed
        (:func:`growth_exponent`: 0 for errors that stopped growing within the
        backtest, as a stationary level's do; ½ for a random walk's).

    Returns
    -------
    numpy.ndarray
        Shape ``(horizon,)``, in the unit of the errors.
    """
    h_bt = errors.shape[1]
    absolute = np.abs(errors)
    seen = np.isfinite(absolute)
    # running sums over steps make every pool's mean O(1) (the window CV calls this often)
    sums = np.concatenate([[0.0], np.cumsum(np.where(seen, absolute, 0.0).sum(axis=0))])
    counts = np.concatenate([[0], np.cumsum(seen.sum(axis=0))])
    h = np.arange(h_bt)
    half = np.maximum(1, h // 4)  # wider pools further out, where errors are larger and noisier
    start, stop = np.maximum(0, h - half), np.minimum(h_bt, h + half + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = (sums[stop] - sums[start]) / (counts[stop] - counts[start])
    scale = np.maximum.accumulate(np.nan_to_num(scale))
    if horizon <= h_bt:
        return scale[:horizon]
    steps = np.arange(h_bt + 1, horizon + 1)
    return np.concatenate([scale, scale[-1] * (steps / h_bt) ** growth_exponent(scale)])


#: Fewest backtested steps to read the growth of the error scale from; below it random-walk growth
#: (β = ½) is assumed. [steps]
GROWTH_MIN_STEPS = 8


def growth_exponent(scale: np.ndarray) -> float:
    """``β`` of ``s(h) ∝ h^β`` over the last three quarters of the backtested steps, clipped to ``[0, ½]``. [-]

    ``β = log(s(H) / s(H/4)) / log(4)`` (steps ``H/4`` and ``H``, 1-based) on the non-decreasing
    step scale: how much the backtests' errors still grew with lead time. ½ (random-walk growth, an
    assumption) when fewer than :data:`GROWTH_MIN_STEPS` steps were backtested or the scale is 0.
    Never above ½: a faster growth read from a few windows is noise more often than a trend.
    """
    h_bt = len(scale)
    quarter = max(1, h_bt // 4)
    if h_bt < GROWTH_MIN_STEPS or not scale[quarter - 1] > 0:
        return 0.5
    with np.errstate(over="ignore"):
        ratio = scale[-1] / scale[quarter - 1]
    # the ratio of a large scale to a subnormal one overflows (hypothesis found it): then a difference of logs
    log_ratio = np.log(ratio) if np.isfinite(ratio) else np.log(scale[-1]) - np.log(scale[quarter - 1])
    return float(np.clip(log_ratio / np.log(h_bt / quarter), 0.0, 0.5))


def conformal_offsets(errors: np.ndarray, horizon: int,
                      levels: Sequence[float]) -> dict[float, tuple[np.ndarray, np.ndarray]]:
    """Lower and upper offsets from the point forecast for each level, per step.

    Uses :func:`interpolated_conformal_quantiles` of the normalised errors (the
    rounded-rank :func:`conformal_quantiles` moved in jumps with the errors), so
    the interval covers about the nominal share when errors are exchangeable.

    Returns
    -------
    dict
        level -> ``(lower, upper)``, arrays of shape ``(horizon,)`` with
        ``lower <= 0 <= upper``, in the unit of the errors.
    """
    scale_bt = step_scale(errors, errors.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        normalised = np.where(scale_bt > 0, errors / scale_bt, 0.0)
    pooled = normalised[np.isfinite(normalised)]
    scale = step_scale(errors, horizon)
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for level in sorted(levels):
        q_lo, q_hi = interpolated_conformal_quantiles(pooled, level)
        out[level] = (q_lo * scale, q_hi * scale)
    return out


#: How the interval quantiles are calibrated; ``forecast(..., interval_method=...)`` picks one.
#: ``"window_cv_recent"``: ``"window_cv"`` widened by :func:`recent_window_factor`;
#: ``"window_cv"``: quantile level raised until leave-one-window-out coverage reaches nominal
#: (:func:`window_adjusted_level`); ``"pooled"``: the nominal level's conformal quantile.
METHODS = ("window_cv_recent", "window_cv", "pooled")
#: Largest widening :func:`recent_window_factor` applies: one freak window must not blow the
#: interval up without bound. [ratio]
RECENT_FACTOR_MAX = 5.0


def calibration(errors: np.ndarray, levels: Sequence[int], method: str = "window_cv_recent") -> dict[int, tuple[float, float]]:
    """Per nominal level, the quantile level [%] and the widening factor [ratio] ``method`` uses.

    ``ValueError`` names the valid methods when ``method`` is not one of :data:`METHODS`.
    """
    if method not in METHODS:
        raise ValueError(f"unknown interval method {method!r}; valid: {METHODS}")
    return {level: (float(level) if method == "pooled" else window_adjusted_level(errors, level),
                     recent_window_factor(errors, level) if method == "window_cv_recent" else 1.0)
            for level in sorted(levels)}


def calibrated_offsets(errors: np.ndarray, horizon: int, levels: Sequence[int],
                       method: str = "window_cv_recent",
                       settings: dict[int, tuple[float, float]] | None = None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """:func:`conformal_offsets` at each level, its quantile level calibrated by ``method``.

    Parameters
    ----------
    errors : numpy.ndarray
        Signed backtest errors, shape ``(windows, backtest_horizon)``, oldest window first.
    horizon : int
        Steps to return. [steps]
    levels : sequence of int
        Nominal central interval levels. [%]
    method : str
        One of :data:`METHODS`.
    settings : dict, optional
        :func:`calibration` of these errors, levels and method, when already computed.

    Returns
    -------
    dict
        nominal level -> ``(lower, upper)`` offsets, shape ``(horizon,)``, nested across levels.
    """
    settings = calibration(errors, levels, method) if settings is None else settings
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for level, (used, factor) in settings.items():
        lo, hi = conformal_offsets(errors, horizon, [used])[used]
        out[level] = (factor * lo, factor * hi)
    return out


def recent_window_factor(errors: np.ndarray, level: float) -> float:
    """Widening the most recent window needs from intervals calibrated on the older ones. [ratio]

    The ``window_cv`` offsets of windows ``1..k−1`` (oldest first) are scaled
    by the smallest factor ``f`` that makes them cover ``level`` % of window
    ``k``'s errors; returns ``f`` clipped to ``[1,`` :data:`RECENT_FACTOR_MAX` ``]``,
    and 1 with fewer than three windows (too few to hold one out and still
    cross-validate the rest).

    Parameters
    ----------
    errors : numpy.ndarray
        Signed backtest errors, shape ``(windows, backtest_horizon)``, oldest window first.
    level : float
        Nominal central interval level. [%]
    """
    if errors.shape[0] < 3:
        return 1.0
    older, recent = errors[:-1], errors[-1]
    used = window_adjusted_level(older, level)
    lo, hi = conformal_offsets(older, errors.shape[1], [used])[used]
    seen = np.isfinite(recent)
    if not seen.any():
        return 1.0
    e, lo, hi = recent[seen], lo[seen], hi[seen]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # factor each error needs to fall inside f·[lo, hi]; 0 when already at the point forecast
        needed = np.where(e > 0, e / hi, np.where(e < 0, e / lo, 0.0))
    needed = np.nan_to_num(needed, nan=np.inf, posinf=np.inf)
    rank = int(np.ceil(level / 100 * needed.size))  # 1-based: this many errors must be covered
    factor = float(np.sort(needed)[max(rank, 1) - 1])
    return float(np.clip(factor, 1.0, RECENT_FACTOR_MAX))


def window_adjusted_level(errors: np.ndarray, level: float) -> float:
    """The quantile level at which leave-one-window-out coverage reaches ``level``. [%]

    Each backtest window in turn is held out; for each of its errors, the level
    whose interval (:func:`conformal_offsets` of the *other* windows) would just
    cover it is read off the others' normalised errors (:func:`_needed_levels`).
    The result is the ``level`` % quantile of those needed levels (the smallest
    needed level with ``level`` % of them at or below it), never below ``level``:
    a level at which ``level`` % of the held-out errors are covered. The needed
    levels come from interpolated ranks, so the result (an order statistic of
    them) moves continuously with the errors; a bisection on the step function of
    coverage jumped by several points when one error moved a little, and with
    heavy-tailed errors the upper bound, and every month peak simulated from it,
    jumped with it. ``level``
    itself with fewer than two windows; just under 100 when the held-out errors
    need more than the largest error seen.

    Parameters
    ----------
    errors : numpy.ndarray
        Signed backtest errors, shape ``(windows, backtest_horizon)``.
    level : float
        Nominal central interval level. [%]
    """
    parts = _leave_one_window_out(errors)
    needed = np.concatenate([_needed_levels(pooled, scale, held) for pooled, scale, held in parts] or [np.empty(0)])
    if needed.size == 0:
        return float(level)
    used = float(np.clip(np.quantile(needed, level / 100, method="inverted_cdf"), level, 100 - 1e-6))
    # Tied pooled errors and a held-out error a hair above them (closer than a float's rank
    # resolution) can leave the inversion one rank short: then the next needed level up is used,
    # until the leave-one-window-out coverage (rounded ranks, the figure ``fc.attrs`` reports) reaches ``level``.
    if _coverage(parts, used) >= level / 100:
        return used
    for higher in np.unique(needed[needed > used]):
        used = float(min(higher, 100 - 1e-6))
        if _coverage(parts, used) >= level / 100:
            break
    return used


def _needed_levels(pooled: np.ndarray, scale: np.ndarray, held: np.ndarray) -> np.ndarray:
    """Per held-out error, the central level [%] whose interval from ``pooled`` (times ``scale``) just covers it.

    Inverts :func:`interpolated_conformal_quantiles`: the error's normalised value is placed among
    the sorted pooled errors (fractional rank ``r``, 1-based), and ``level = 200·(r/(n+1) − ½)``
    (upper side; the mirror rank below zero). 100 beyond the extreme pooled error, 0 for a zero error.
    """
    ok = np.isfinite(held)
    held, scale = held[ok], scale[ok]
    ordered = np.sort(pooled)
    n = ordered.size
    if n == 0:
        return np.where(held == 0, 0.0, 100.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        x = np.where(scale > 0, held / scale, np.where(held == 0, 0.0, np.sign(held) * np.inf))
    position = np.interp(x, ordered, np.arange(1, n + 1, dtype=float))
    rank = np.where(x > 0, position, n + 1 - position)
    out = np.clip(200 * (rank / (n + 1) - 0.5), 0.0, 100.0)
    out[(x > ordered[-1]) & (x > 0) | (x < ordered[0]) & (x < 0)] = 100.0
    out[x == 0] = 0.0
    return out


def interpolated_conformal_quantiles(errors: np.ndarray, level: float) -> tuple[float, float]:
    """:func:`conformal_quantiles` at a fractional rank: linear between the order statistics either side.

    The upper bound sits at rank ``(n+1)(1−α/2)`` (1-based, clipped to ``[1, n]``), interpolated,
    so it moves continuously with ``level`` and with the errors; equal to
    :func:`conformal_quantiles` where that rank is a whole number.
    """
    ordered = np.sort(errors.ravel())
    n = ordered.size
    if n == 0:
        return 0.0, 0.0
    rank = min(float(n), (n + 1) * (1 - (1 - level / 100) / 2))
    positions = np.arange(1, n + 1, dtype=float)
    upper = float(np.interp(rank, positions, ordered))
    lower = float(np.interp(n + 1 - rank, positions, ordered))
    return min(lower, 0.0), max(upper, 0.0)


def conformal_quantiles(errors: np.ndarray, level: float, axis: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Finite-sample conformal bounds ``(lower <= 0, upper >= 0)`` of signed errors for one level.

    The upper bound is the ``⌈(n+1)(1−α/2)⌉``-th smallest of ``n`` errors
    (the largest when that exceeds ``n``), the lower one its mirror, with
    ``α = 1 − level/100``. Zero errors give zero-width bounds.
    """
    flat = errors.ravel() if axis is None else np.moveaxis(errors, axis, 0)
    n = flat.shape[0]
    if n == 0:
        zero = np.zeros(flat.shape[1:])
        return zero, zero
    rank = min(n, int(np.ceil((n + 1) * (1 - (1 - level / 100) / 2))))  # 1-based
    ordered = np.sort(flat, axis=0)
    return np.minimum(ordered[n - rank], 0.0), np.maximum(ordered[rank - 1], 0.0)


def cross_validated_coverage(errors: np.ndarray, level: float) -> float | None:
    """Coverage of the ``level`` % interval on each backtest window, calibrated on the others. [fraction]

    ``None`` with fewer than two windows. An honest estimate: the window being
    scored never takes part in its own calibration.
    """
    return _coverage(_leave_one_window_out(errors), level)


def _leave_one_window_out(errors: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per window: the other windows' pooled normalised errors, their step scale, and the window's errors.

    What :func:`conformal_offsets` computes before it picks quantiles; empty
    with fewer than two windows.
    """
    if errors.shape[0] < 2:
        return []
    parts = []
    for w in range(errors.shape[0]):
        rest = np.delete(errors, w, axis=0)
        scale = step_scale(rest, errors.shape[1])
        with np.errstate(invalid="ignore", divide="ignore"):
            normalised = np.where(scale > 0, rest / scale, 0.0)
        parts.append((normalised[np.isfinite(normalised)], scale, errors[w]))
    return parts


def _coverage(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], level: float) -> float | None:
    """Share of held-out errors inside the ``level`` % bounds of :func:`_leave_one_window_out` parts. [fraction]

    The bounds are the rounded-rank :func:`conformal_quantiles` (at least as wide as the interpolated ones the
    intervals use): the coverage ``fc.attrs`` reports is an upper estimate for those intervals.
    """
    hits, total = 0, 0
    for pooled, scale, held in parts:
        q_lo, q_hi = conformal_quantiles(pooled, level)
        ok = np.isfinite(held)
        hits += int(np.sum((held[ok] >= q_lo * scale[ok]) & (held[ok] <= q_hi * scale[ok])))
        total += int(ok.sum())
    return hits / total if total else None
