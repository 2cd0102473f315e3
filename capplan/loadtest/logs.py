"""Production figures a load test is judged against or built from, read from the request logs.

The window is the last ``days`` x 24 whole UTC hours of one model's logs (``sql/rpt_loadtest_window.sql``);
the token mix and the peak-hour rate come from the profile's roll-ups (:func:`capplan.profile.profile_summary`)
over the same hours, the arrivals themselves from ``requests`` (``sql/rpt_loadtest_trace_rows.sql``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np

from capplan import sql


class LogsError(ValueError):
    """The logs hold nothing for the model or window asked for."""


@dataclass(frozen=True)
class Window:
    """``[since_utc, until_utc)`` of one model's logs, hour-aligned, UTC."""

    model: str
    since_utc: datetime
    until_utc: datetime


@dataclass(frozen=True)
class ProductionProfile:
    """The production mix and peak of one model over a window (from the profile's roll-ups)."""

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


def recent_window(con: duckdb.DuckDBPyConnection, model: str, days: int) -> Window:
    """The last ``days`` days of whole UTC hours of ``model``'s logs.

    Raises
    ------
    LogsError
        The logs hold no request of ``model`` (the message lists the models they hold).
    """
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    since, until, requests = con.execute(sql.load("rpt_loadtest_window"), {"model": model, "days": days}).fetchone()
    if not requests:
        raise LogsError(f"no requests of model {model!r} in the logs; models there: {model_names(con)}")
    return Window(model, since, until)


def production_profile(con: duckdb.DuckDBPyConnection, window: Window) -> ProductionProfile:
    """Token mix and peak-hour rate of the window's model, from the profile's roll-ups.

    The connection must be writable the first time (the roll-ups are refreshed before reading).
    """
    from capplan.profile import profile_summary

    summary = profile_summary(con, window.model, window.since_utc)
    stats = summary["models"].get(window.model)
    if not stats or not stats["requests"]:
        raise LogsError(f"the profile holds no requests of model {window.model!r} since {window.since_utc} UTC")
    return ProductionProfile(
        requests=int(stats["requests"]),
        input_tokens_mean=float(stats["input_tokens"]["mean"]),
        output_tokens_mean=float(stats["output_tokens"]["mean"]),
        input_tokens_percentiles={k: float(v) for k, v in stats["input_tokens"].items() if k != "mean"},
        output_tokens_percentiles={k: float(v) for k, v in stats["output_tokens"].items() if k != "mean"},
        peak_hour_qps=float(summary["peak_hour_qps"]),
    )


def read_arrivals(con: duckdb.DuckDBPyConnection, window: Window) -> Arrivals:
    """Every arrival of the window's model in the window, in arrival order."""
    columns = con.execute(sql.load("rpt_loadtest_trace_rows"), {
        "model": window.model, "since_utc": window.since_utc, "until_utc": window.until_utc}).fetchnumpy()
    return Arrivals(np.asarray(columns["offset_us"]), np.asarray(columns["input_tokens"]),
                    np.asarray(columns["output_tokens"]))
