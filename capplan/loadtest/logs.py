"""Production figures a load test is judged against or built from, read from the request logs.

A window covers a pool's log models (the pool's ``models``, :func:`capplan.plan.pools.resolve_pools`, as the
plan maps them; or one model named on the command line): the last ``days`` x 24 whole UTC hours ending with the
newest request of any of them (``sql/rpt_loadtest_window.sql``). The token mix comes from the profile's roll-ups
over the same hours, the union of the models as one distribution (:func:`capplan.profile.token_stats`); the
peak-hour rate from the pool's hourly traffic (:func:`capplan.plan.pools.pool_traffic`, the models' hourly rates
summed); the arrivals themselves from ``requests`` (``sql/rpt_loadtest_trace_rows.sql``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np
import pandas as pd

from capplan import sql


class LogsError(ValueError):
    """The logs hold nothing for the model or window asked for."""


@dataclass(frozen=True)
class Window:
    """``[since_utc, until_utc)`` of the logs of ``models`` (a pool's, named ``scope``), hour-aligned, UTC."""

    scope: str
    models: tuple[str, ...]
    since_utc: datetime
    until_utc: datetime


@dataclass(frozen=True)
class ProductionProfile:
    """The production mix and peak of a window's models, taken together (from the profile's roll-ups)."""

    requests: int
    input_tokens_mean: float  # [tokens/request]
    output_tokens_mean: float  # [tokens/request]
    input_tokens_percentiles: dict[str, float]  # p50, p90, p99 [tokens]
    output_tokens_percentiles: dict[str, float]  # [tokens]
    peak_hour_qps: float  # mean rate of the busiest UTC hour [requests/s]


@dataclass(frozen=True)
class Arrivals:
    """The arrivals of a window, in order: offsets since the first [us] and token lengths [tokens]."""

    offset_us: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray


def model_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Models in the logs, busiest first."""
    return [row[0] for row in con.execute(sql.load("rpt_loadtest_models")).fetchall()]


def recent_window(con: duckdb.DuckDBPyConnection, models: tuple[str, ...], days: int, scope: str | None = None,
                  ) -> Window:
    """The last ``days`` days of whole UTC hours of the logs of ``models``, ending with the newest of their requests.

    ``scope`` names them in messages and summaries (a pool's name; default: the one model).

    Raises
    ------
    LogsError
        The logs hold no request of any of ``models`` (the message lists the models they hold).
    """
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    models = tuple(models)
    scope = scope or ", ".join(models)
    since, until, requests = con.execute(sql.load("rpt_loadtest_window"), {"models": list(models),
                                                                           "days": days}).fetchone()
    if not requests:
        what = f"model {models[0]!r}" if len(models) == 1 else f"models {', '.join(map(repr, models))} (pool {scope})"
        raise LogsError(f"no requests of {what} in the logs; models there: {model_names(con)}")
    return Window(scope, models, since, until)


def production_profile(con: duckdb.DuckDBPyConnection, window: Window, hourly: pd.DataFrame) -> ProductionProfile:
    """Token mix of the window's models taken together, and their peak-hour rate, from the profile's roll-ups.

    ``hourly`` is the models' hourly traffic summed (:func:`capplan.plan.pools.pool_traffic` of the pool
    narrowed to ``window.models``). Read-only: the roll-ups must be current.
    """
    from capplan.profile import token_stats

    stats = token_stats(con, window.scope, window.since_utc, window.models).get(window.scope)
    if not stats or not stats["requests"]:
        raise LogsError(f"the profile holds no requests of {window.scope!r} since {window.since_utc} UTC")
    recent = hourly[(hourly["hour_utc"] >= pd.Timestamp(window.since_utc))
                    & (hourly["hour_utc"] < pd.Timestamp(window.until_utc))]
    return ProductionProfile(
        requests=int(stats["requests"]),
        input_tokens_mean=float(stats["input_tokens"]["mean"]),
        output_tokens_mean=float(stats["output_tokens"]["mean"]),
        input_tokens_percentiles={k: float(v) for k, v in stats["input_tokens"].items() if k != "mean"},
        output_tokens_percentiles={k: float(v) for k, v in stats["output_tokens"].items() if k != "mean"},
        peak_hour_qps=float(recent["avg_qps"].max()),
    )


def read_arrivals(con: duckdb.DuckDBPyConnection, window: Window) -> Arrivals:
    """Every arrival of the window's models in the window, in arrival order."""
    columns = con.execute(sql.load("rpt_loadtest_trace_rows"), {
        "models": list(window.models), "since_utc": window.since_utc, "until_utc": window.until_utc}).fetchnumpy()
    return Arrivals(np.asarray(columns["offset_us"]), np.asarray(columns["input_tokens"]),
                    np.asarray(columns["output_tokens"]))
