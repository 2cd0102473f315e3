"""The report queries of the roll-ups, their parameters bound, without pandas.

Each function checks its arguments, runs one file of ``sql/`` on ``con`` and returns ``con`` holding the
result, to fetch at once: the readers (:mod:`capplan.profile.read`) take it as a frame (``.df()``) and
validate it; the summary (:mod:`capplan.profile.summary`) reads plain values (``.fetchall()``, Arrow). So
``capplan profile`` imports no pandera (tested) and pandas only where pyarrow does (its first ``to_numpy``) or a
``since`` string is parsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timezone

import duckdb

from capplan import sql
from capplan.profile.bins import HISTOGRAM_GAMMA

GRAINS = ("hour", "day", "week", "month")
"""Period lengths of the histogram readers; weeks start on Monday, all in UTC."""
EMPTY_HOURS = ("missing", "zero")
"""What an hour without rows inside a model's span means: a logging gap, or true zero traffic."""
TOKEN_QUANTILES = (0.5, 0.9, 0.99)
"""Quantiles of the token frames: p50, p90, p99."""
TTFT_QUANTILES = (0.5, 0.95, 0.99)
"""Quantiles of the TTFT columns of the SLI: p50, p95, p99."""


def check_choice(name: str, value: str, valid: Sequence[str]) -> None:
    """Raise ``ValueError`` naming the valid values unless ``value`` is one of them."""
    if value not in valid:
        raise ValueError(f"{name} must be one of {list(valid)}, got {value!r}")


def check_ttft_threshold(ttft_threshold_ms: float) -> None:
    """Raise ``ValueError`` unless the SLI's TTFT threshold is positive. [ms]"""
    if not ttft_threshold_ms > 0:
        raise ValueError(f"ttft_threshold_ms must be > 0, got {ttft_threshold_ms!r}")


def since_utc(since: date | datetime | str | None) -> datetime | None:
    """``since`` as a naive UTC datetime (a date means its midnight UTC; a string is parsed by pandas)."""
    if since is None:
        return None
    if type(since) is date:
        return datetime(since.year, since.month, since.day)
    if type(since) is not datetime:  # a string or a pandas Timestamp: pandas' parsing, as the readers always had
        import pandas as pd

        since = pd.Timestamp(since).to_pydatetime()
    if since.tzinfo is not None:
        since = since.astimezone(timezone.utc).replace(tzinfo=None)
    return since


def _listed(models: Sequence[str] | None) -> list[str] | None:
    """``models`` as a bound list parameter (``None`` stays ``None``)."""
    return None if models is None else list(models)


def hourly_traffic(con: duckdb.DuckDBPyConnection, model: str | None, since: date | datetime | str | None,
                   empty_hours: str) -> duckdb.DuckDBPyConnection:
    """``sql/rpt_hourly_traffic.sql``: traffic per UTC hour and model, rates over whole hours (before exposure)."""
    return con.execute(sql.load("rpt_hourly_traffic"),
                       {"model": model, "since_utc": since_utc(since), "empty_hours": empty_hours})


def histogram_quantiles(con: duckdb.DuckDBPyConnection, metrics: Sequence[str], quantiles: Sequence[float],
                        grain: str, model: str | None, since: date | datetime | str | None,
                        models: Sequence[str] | None = None) -> duckdb.DuckDBPyConnection:
    """``sql/rpt_histogram_quantiles.sql``: period_start_utc, model, metric, q, value, count (see
    :func:`capplan.profile.read.histogram_quantiles`)."""
    return con.execute(sql.load("rpt_histogram_quantiles"), {
        "grain": grain, "model": model, "since_utc": since_utc(since), "metrics": list(metrics),
        "quantiles": list(quantiles), "gamma": HISTOGRAM_GAMMA, "models": _listed(models),
    })


def period_token_sums(con: duckdb.DuckDBPyConnection, grain: str, model: str | None,
                      since: date | datetime | str | None, models: Sequence[str] | None = None
                      ) -> duckdb.DuckDBPyConnection:
    """``sql/rpt_period_token_sums.sql``: period_start_utc, model, requests, input/output token sums."""
    return con.execute(sql.load("rpt_period_token_sums"), {
        "grain": grain, "model": model, "since_utc": since_utc(since), "models": _listed(models)})


def sli_event_counts(con: duckdb.DuckDBPyConnection, ttft_threshold_ms: float, model: str | None,
                     since: date | datetime | str | None) -> duckdb.DuckDBPyConnection:
    """``sql/rpt_hourly_sli.sql``: hour_utc, model, valid_events, good_events, success_rate, good_fraction."""
    check_ttft_threshold(ttft_threshold_ms)
    return con.execute(sql.load("rpt_hourly_sli"), {
        "ttft_threshold_ms": ttft_threshold_ms, "model": model, "since_utc": since_utc(since)})


def sli_event_totals(con: duckdb.DuckDBPyConnection, ttft_threshold_ms: float, model: str,
                     since: date | datetime | str | None) -> duckdb.DuckDBPyConnection:
    """``sql/rpt_profile_sli_totals.sql``: valid_events, success_events, good_events of one model (or
    ``"__all__"``) over the window: the sums of :func:`sli_event_counts` over its hours, in one row."""
    check_ttft_threshold(ttft_threshold_ms)
    return con.execute(sql.load("rpt_profile_sli_totals"), {
        "ttft_threshold_ms": ttft_threshold_ms, "model": model, "since_utc": since_utc(since)})
