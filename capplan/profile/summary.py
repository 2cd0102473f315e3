"""The profile in one JSON-ready dictionary: span, totals, peaks, token percentiles per model, SLI."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from collections.abc import Sequence
from typing import Any

import duckdb
import pandas as pd

from capplan.profile.read import (
    TOKEN_QUANTILES,
    TTFT_QUANTILES,
    histogram_quantiles,
    hourly_traffic,
    period_token_sums,
    sli_event_counts,
)
from capplan.profile.schemas import ALL_MODELS

_HOUR = timedelta(hours=1)


def _num(value: Any) -> float | int | None:
    """A JSON-friendly number: NaN/NA become None, numpy scalars plain Python."""
    if value is None or pd.isna(value):
        return None
    return value.item() if hasattr(value, "item") else value


def token_stats(con: duckdb.DuckDBPyConnection, model: str | None, since: date | datetime | str | None,
                models: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """{model: {"requests": n, "input_tokens": {mean, p50, p90, p99}, "output_tokens": {...}}} since ``since``.

    Means are exact (token sums / requests) [tokens]; percentiles from the merged histograms, within
    ``HISTOGRAM_RELATIVE_ERROR``. With ``models``, one entry ``model`` for the union of those log models (a pool).
    """
    long = histogram_quantiles(con, ("input_tokens", "output_tokens"), TOKEN_QUANTILES, "all", model, since, models)
    sums = period_token_sums(con, "all", model, since, models)
    stats: dict[str, dict] = {}
    empty = long.iloc[:0]
    by_key = dict(iter(long.groupby(["model", "metric"], sort=False)))  # one pass: thousands of models are real
    for row in sums.itertuples():
        stats[row.model] = {"requests": int(row.requests)}
        for metric in ("input_tokens", "output_tokens"):
            mine = by_key.get((row.model, metric), empty)
            entry = {"mean": _num(getattr(row, f"{metric}_sum") / row.requests) if row.requests else None}
            entry |= {f"p{round(q * 100)}": _num(v) for q, v in zip(mine["q"], mine["value"], strict=True)}
            stats[row.model][metric] = entry
    return stats


def profile_summary(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    since: date | datetime | str | None = None,
    *,
    ttft_threshold_ms: float = 2_000.0,
    empty_hours: str = "missing",
) -> dict[str, Any]:
    """A compact, JSON-ready summary of the traffic profile; the keys are stable.

    Reads only (a read-only connection is enough), from roll-ups that must be current, as every
    reader of :mod:`capplan.profile.read`.

    Keys
    ----
    ``scope`` (the model, or ``"__all__"``), ``span_start`` / ``span_end`` (ISO UTC, end exclusive),
    ``hours``, ``gap_hours`` [hours], ``total_requests`` [requests], ``avg_qps`` (over observed seconds, :mod:`capplan.profile.exposure`),
    ``peak_hour_qps``, ``peak_second_qps`` [requests/s], ``peak_to_avg`` (peak hour / average) and
    ``peak_second_to_avg`` [ratio]; ``input_tokens`` / ``output_tokens`` of the scope, each
    ``{mean, p50, p90, p99}`` [tokens]; ``models``: the same per model (and ``__all__``) with
    ``requests``; ``sli``: ``ttft_threshold_ms``, ``valid_events``, ``good_events``,
    ``success_rate``, ``good_fraction`` [fraction], ``ttft_p50_ms``, ``ttft_p95_ms``, ``ttft_p99_ms``.
    Figures of an empty window are ``None`` (counts 0).
    """
    scope = model or ALL_MODELS
    hourly = hourly_traffic(con, scope, since, empty_hours=empty_hours)
    observed = hourly[hourly["requests"].notna()]
    total = int(observed["requests"].sum())
    rated = observed[observed["avg_qps"].notna()]  # hours with a rate: requests over observed seconds
    seconds = float(rated["exposure_s"].sum())  # (capplan.profile.exposure)
    avg_qps = float(rated["requests"].sum()) / seconds if seconds and total else None
    peak_hour_qps = _num(observed["avg_qps"].max()) if len(observed) else None
    peak_second_qps = _num(observed["peak_second_qps"].max()) if len(observed) else None
    tokens = token_stats(con, model, since)
    sli = sli_event_counts(con, ttft_threshold_ms, scope, since)  # totals only: not the hourly TTFT percentiles
    ttft = histogram_quantiles(con, ("ttft_ms",), TTFT_QUANTILES, "all", scope, since)
    valid, good = int(sli["valid_events"].sum()), int(sli["good_events"].sum())
    success = float((sli["success_rate"].fillna(0) * sli["valid_events"]).sum())
    empty_tokens = {"mean": None, **{f"p{round(q * 100)}": None for q in TOKEN_QUANTILES}}
    return {
        "scope": scope,
        "span_start": hourly["hour_utc"].min().isoformat() if len(hourly) else None,
        "span_end": (hourly["hour_utc"].max() + _HOUR).isoformat() if len(hourly) else None,
        "hours": len(hourly),
        "gap_hours": int(hourly["is_gap"].sum()),
        "total_requests": total,
        "avg_qps": avg_qps,
        "peak_hour_qps": peak_hour_qps,
        "peak_second_qps": peak_second_qps,
        "peak_to_avg": peak_hour_qps / avg_qps if avg_qps else None,
        "peak_second_to_avg": peak_second_qps / avg_qps if avg_qps else None,
        "input_tokens": tokens.get(scope, {}).get("input_tokens", empty_tokens),
        "output_tokens": tokens.get(scope, {}).get("output_tokens", empty_tokens),
        "models": tokens,
        "sli": {
            "ttft_threshold_ms": ttft_threshold_ms,
            "valid_events": valid,
            "good_events": good,
            "success_rate": round(success) / valid if valid else None,
            "good_fraction": good / valid if valid else None,
            **{f"ttft_p{round(q * 100)}_ms": None for q in TTFT_QUANTILES},
            **{f"ttft_p{round(q * 100)}_ms": _num(v) for q, v in zip(ttft["q"], ttft["value"], strict=True)},
        },
    }
