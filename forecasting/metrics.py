"""Forecast-error measures as defined for the M4 competition, plus interval coverage."""

from __future__ import annotations

import numpy as np


def mase_scale(y: np.ndarray, season_length: int | None) -> float:
    """In-sample mean absolute error of the seasonal naive forecast, the MASE denominator.

    ``mean |y_t − y_{t−m}|`` with ``m = season_length`` (1, the naive
    forecast, when no season fits twice into the series). Returns 1.0 for a
    series whose seasonal differences are all zero, so MASE stays finite.
    """
    m = season_length if season_length and len(y) > season_length else 1
    diffs = np.abs(y[m:] - y[:-m])
    diffs = diffs[np.isfinite(diffs)]
    scale = float(np.mean(diffs)) if diffs.size else 0.0
    return scale if scale > 0 else 1.0


def mase(actual: np.ndarray, predicted: np.ndarray, scale: float) -> float:
    """Mean absolute scaled error: ``mean |y − ŷ| / scale`` (scale from :func:`mase_scale`). [ratio]"""
    return float(np.mean(np.abs(np.asarray(actual) - np.asarray(predicted))) / scale)


def smape(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Symmetric MAPE as in M4: ``mean 200·|y − ŷ| / (|y| + |ŷ|)``; a 0/0 term counts as 0. [%]"""
    a, f = np.asarray(actual, dtype=float), np.asarray(predicted, dtype=float)
    denom = np.abs(a) + np.abs(f)
    terms = np.divide(200 * np.abs(a - f), denom, out=np.zeros_like(denom), where=denom > 0)
    return float(np.mean(terms))


def coverage(actual: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> float:
    """Fraction of actual values inside ``[lower, upper]``. [fraction]"""
    a = np.asarray(actual)
    return float(np.mean((a >= np.asarray(lower)) & (a <= np.asarray(upper))))
