"""Traffic forecasting: series in, forecast with calibrated prediction intervals out; no I/O.

>>> from forecasting import forecast
>>> fc = forecast(y, horizon=48, season_lengths=(24,), levels=(80, 95))  # doctest: +SKIP

``fc`` has columns ``mean, lo_80, hi_80, lo_95, hi_95`` (:class:`ForecastFrame`);
``fc.attrs`` says which model was chosen, how every candidate did in the
backtests and how the intervals were made. ``month_peaks(fit(...))`` gives the
P10/P50/P90 of each month's peak and total from sample paths. See ``docs/forecasting.md``.
"""

from capplan.forecasting.api import (
    DEFAULT_CANDIDATES,
    Fit,
    ShortHistoryWarning,
    fit,
    forecast,
    forecast_monthly,
)
from capplan.forecasting.models import MODELS
from capplan.forecasting.paths import month_peaks, period_peaks, sample_paths
from capplan.forecasting.schema import ForecastFrame

__all__ = [
    "DEFAULT_CANDIDATES",
    "MODELS",
    "Fit",
    "ForecastFrame",
    "ShortHistoryWarning",
    "fit",
    "forecast",
    "forecast_monthly",
    "month_peaks",
    "period_peaks",
    "sample_paths",
]
