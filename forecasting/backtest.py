"""Rolling-origin backtests: refit each candidate at several past origins and keep its forecasts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from capplan.forecasting.metrics import mase, smape
from capplan.forecasting.models import Model


def cutoffs(n_obs: int, horizon: int, windows: int, step: int, min_train: int) -> list[int]:
    """Training lengths of the backtest windows, latest last.

    The latest window ends ``horizon`` steps before the end; earlier ones move
    back by ``step``. Windows that would leave fewer than ``min_train``
    observations to fit on are dropped.

    Parameters
    ----------
    n_obs : int
        Length of the series. [steps]
    horizon : int
        Steps forecast in each window. [steps]
    windows : int
        Windows wanted. [count]
    step : int
        Distance between consecutive origins. [steps]
    min_train : int
        Shortest training length allowed. [steps]
    """
    latest = n_obs - horizon
    return sorted(c for c in (latest - k * step for k in range(windows)) if c >= min_train)


def run_backtest(z: np.ndarray, models: Mapping[str, Model], horizon: int,
                 season_lengths: Sequence[int], cuts: Sequence[int]) -> dict[str, np.ndarray]:
    """Each model's forecasts from every origin in ``cuts``, shape ``(len(cuts), horizon)``.

    A model that raises at an origin gets NaN there, so one failing fit counts
    against that model instead of stopping the forecast.
    """
    out = {name: np.full((len(cuts), horizon), np.nan) for name in models}
    for w, cut in enumerate(cuts):
        for name, model in models.items():
            try:
                out[name][w] = model(z[:cut], horizon, season_lengths)
            except (ValueError, np.linalg.LinAlgError, IndexError):
                pass
    return out


def actuals(z: np.ndarray, horizon: int, cuts: Sequence[int]) -> np.ndarray:
    """The observed values each backtest window forecast, shape ``(len(cuts), horizon)``."""
    return np.stack([z[c: c + horizon] for c in cuts]) if cuts else np.empty((0, horizon))


def window_mase(y_actual: np.ndarray, y_forecast: np.ndarray, scale: float) -> np.ndarray:
    """MASE of each backtest window of one method, shape ``(windows,)``; ``inf`` where a window failed. [ratio]"""
    out = np.array([mase(a, f, scale) for a, f in zip(y_actual, y_forecast)], dtype=float)
    return np.where(np.isfinite(out), out, np.inf)


def score(y_actual: np.ndarray, y_forecast: np.ndarray, scale: float) -> dict[str, float]:
    """MASE and sMAPE over all windows of one method, on the original scale.

    A method with a failed window scores ``inf`` so it is never chosen.
    """
    if not np.all(np.isfinite(y_forecast)):
        return {"mase": float("inf"), "smape": float("inf")}
    return {
        "mase": float(np.mean([mase(a, f, scale) for a, f in zip(y_actual, y_forecast)])),
        "smape": float(np.mean([smape(a, f) for a, f in zip(y_actual, y_forecast)])),
    }
