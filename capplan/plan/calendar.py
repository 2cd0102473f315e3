"""The plan's months and the forecast horizon that reaches the end of the last one.

The report is named after its first month. By default that is the month after
the *last complete month of data*: the latest calendar month whose last hour
holds requests. A run on 1 December 06:00 UTC with data up to that morning plans
December; data that stops on 29 November (a gap at month end) plans November,
whose remaining hours are forecast. ``--month`` overrides it; a month whose last
hour is already in the data is refused, since it is observed, not planned.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


def parse_month(month: str) -> pd.Period:
    """``'YYYY-MM'`` as a monthly period; anything else is a ``ValueError`` saying what was expected."""
    if not isinstance(month, str) or not _MONTH.match(month):
        raise ValueError(f"month {month!r} is not of the form YYYY-MM (e.g. 2026-12)")
    return pd.Period(month, freq="M")


def last_complete_month(last_hour_utc: pd.Timestamp) -> pd.Period:
    """The latest month whose last hour is at or before ``last_hour_utc`` (the hour of the newest request)."""
    hour = pd.Timestamp(last_hour_utc).floor("h")
    month = hour.to_period("M")
    month_last_hour = month.end_time.floor("h")
    return month if hour >= month_last_hour else month - 1


def plan_months(last_hour_utc: pd.Timestamp, horizon_months: int, month: str | None = None) -> list[str]:
    """The ``YYYY-MM`` months of the plan: ``horizon_months`` of them from ``month`` (default: see module).

    Raises
    ------
    ValueError
        If ``month`` is malformed or already complete in the data, or ``horizon_months < 1``.
    """
    if horizon_months < 1:
        raise ValueError(f"horizon_months must be >= 1, got {horizon_months}")
    complete = last_complete_month(last_hour_utc)
    first = complete + 1 if month is None else parse_month(month)
    if first <= complete:
        raise ValueError(f"month {first} is already complete in the data (newest request in hour "
                         f"{pd.Timestamp(last_hour_utc):%Y-%m-%d %H:00} UTC); plan {complete + 1} or later")
    return [str(first + i) for i in range(horizon_months)]


def forecast_horizon_hours(last_hour_utc: pd.Timestamp, months: list[str]) -> int:
    """Hours from the hour after ``last_hour_utc`` to the end of the last planned month. [h]"""
    end = parse_month(months[-1]).end_time.floor("h")
    return int((end - pd.Timestamp(last_hour_utc).floor("h")) / pd.Timedelta(hours=1))


def hours_in_months(frame: pd.DataFrame, months: list[str]) -> pd.DataFrame:
    """The rows of an hour-indexed ``frame`` whose hour falls in one of ``months`` (``YYYY-MM``)."""
    period = pd.DatetimeIndex(frame.index).to_period("M").astype(str)
    return frame[np.isin(period, months)]
