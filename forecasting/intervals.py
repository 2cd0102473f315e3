"""Prediction intervals calibrated on backtest errors (normalised split-conformal).

Every model is judged the same way: the signed errors ``e = z − ẑ`` of its
rolling-origin backtests (modelling scale, so log errors for log-modelled
series) are divided by a per-step error scale ``s(h)``; the quantiles of the
pooled normalised errors, times ``s(h)``, give the interval at step ``h``.
Pooling over steps gives enough errors for the tails from a few backtest
windows, while ``s(h)`` keeps the widening with lead time that the backtests
show.
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
        ``s(H)·sqrt(h / H)`` (random-walk growth, an assumption).

    Returns
    -------
    numpy.ndarray
        Shape ``(horizon,)``, in the unit of the errors.
    """
    h_bt = errors.shape[1]
    absolute = np.abs(errors)
    scale = np.empty(h_bt)
    for h in range(h_bt):
        half = max(1, h // 4)  # wider pools further out, where errors are larger and noisier
        scale[h] = np.nanmean(absolute[:, max(0, h - half): h + half + 1])
    scale = np.maximum.accumulate(np.nan_to_num(scale))
    if horizon <= h_bt:
        return scale[:horizon]
    steps = np.arange(h_bt + 1, horizon + 1)
    return np.concatenate([scale, scale[-1] * np.sqrt(steps / h_bt)])


def conformal_offsets(errors: np.ndarray, horizon: int, levels: Sequence[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Lower and upper offsets from the point forecast for each level, per step.

    Uses :func:`conformal_quantiles` of the normalised errors, so the interval
    covers at least the nominal share when errors are exchangeable.

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
        q_lo, q_hi = conformal_quantiles(pooled, level)
        out[level] = (q_lo * scale, q_hi * scale)
    return out


def conformal_quantiles(errors: np.ndarray, level: int, axis: int | None = None) -> tuple[np.ndarray, np.ndarray]:
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


def cross_validated_coverage(errors: np.ndarray, level: int) -> float | None:
    """Coverage of the ``level`` % interval on each backtest window, calibrated on the others. [fraction]

    ``None`` with fewer than two windows. An honest estimate: the window being
    scored never takes part in its own calibration.
    """
    windows = errors.shape[0]
    if windows < 2:
        return None
    hits, total = 0, 0
    for w in range(windows):
        rest = np.delete(errors, w, axis=0)
        lo, hi = conformal_offsets(rest, errors.shape[1], [level])[level]
        held = errors[w]
        ok = np.isfinite(held)
        hits += int(np.sum((held[ok] >= lo[ok]) & (held[ok] <= hi[ok])))
        total += int(ok.sum())
    return hits / total if total else None
