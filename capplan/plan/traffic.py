"""Hourly and daily traffic of all models from the profile, and its forecast to the end of the plan."""

from __future__ import annotations

import duckdb
import pandas as pd

from capplan.config import CapplanConfig
from capplan.forecasting.api import forecast
from capplan.plan.calendar import forecast_horizon_hours
from capplan.profile import ALL_MODELS, hourly_traffic

SEASONS_HOURLY = (24, 168)  # day and week [h]


def all_models_traffic(con: duckdb.DuckDBPyConnection, cfg: CapplanConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hourly traffic of all models from the profile roll-ups, and its daily peak and mean.

    Reads only: the flow refreshes the roll-ups first (``refresh_profile``). The daily
    frame has ``day`` (UTC date), ``peak_qps`` (busiest second of the day) and
    ``avg_qps`` (mean over the day's hours with data). [requests/s]
    """
    hourly = hourly_traffic(con, model=ALL_MODELS, empty_hours=cfg.profile.empty_hours)
    if hourly.empty:
        raise ValueError("the requests table is empty: no traffic to plan from; ingest logs first")
    daily = hourly.groupby(hourly["hour_utc"].dt.floor("D").rename("day")).agg(
        peak_qps=("peak_second_qps", "max"), avg_qps=("avg_qps", "mean")).reset_index()
    return hourly.reset_index(drop=True), daily


def forecast_hourly_qps(hourly: pd.DataFrame, months: list[str], cfg: CapplanConfig) -> pd.DataFrame:
    """The forecasting stage's forecast of hourly mean QPS, from the hour after the data to the last planned month.

    ``hourly`` has ``hour_utc`` and ``avg_qps`` [requests/s]; gap hours are NaN when
    ``[profile].empty_hours = "missing"`` (the stage fills them instead of learning a
    false zero) and 0 when ``"zero"``. The 80 % level is always included: P10/P90 are its bounds.
    """
    y = hourly.set_index("hour_utc")["avg_qps"].astype(float).asfreq("h")
    levels = tuple(sorted(set(cfg.forecast.levels) | {80}))
    horizon = forecast_horizon_hours(y.index[-1], months)
    return forecast(y, horizon, season_lengths=SEASONS_HOURLY, levels=levels)
