"""The profile in one JSON-ready dictionary: span, totals, peaks, token percentiles per model, SLI.

Read as plain values (Arrow, numpy, lists) from the report queries of :mod:`capplan.profile.queries`, by the
rules of the readers' frames (:func:`capplan.profile.read.hourly_traffic` and its exposure), without pandas or
pandera: ``capplan profile`` prints these figures, no frame leaves it (``tests/profile/test_summary.py``
checks them against the validated frames).
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import pyarrow as arrow
import pyarrow.compute as arrow_compute

from capplan import sql
from capplan.profile import queries
from capplan.profile.bins import HISTOGRAM_GAMMA
from capplan.profile.counting import ALL_MODELS, CODE_SHIFT, code_columns
from capplan.profile.exposure import EPOCH, epoch_us, exposure_s_of_hours, gap_aware_hours, observed_span_utc
from capplan.profile.freshness import require_current_rollups
from capplan.profile.queries import EMPTY_HOURS, TOKEN_QUANTILES, TTFT_QUANTILES, since_utc

_HOUR_US = 3_600_000_000
_TOKENS = ("input_tokens", "output_tokens")
MERGE_CELLS = 1 << 22
"""Most models × bins whose whole-window token histograms :func:`token_stats` merges in numpy (32 MiB of
int64 per metric); with more, DuckDB merges them (``sql/rpt_histogram_quantiles.sql``). [cells]"""
_TOKEN_COLUMNS = 1_100
"""Bin columns (bin + 1) held from the start: an int32 token count falls in bin <= 1,083 (γ = 1.02). [bins]"""
_BATCH_ROWS = 1 << 16


def _num(value: Any) -> float | int | None:
    """A JSON-friendly number: None and NaN become None, numpy scalars plain Python."""
    if value is None or value != value:  # NaN is the one value unequal to itself
        return None
    return value.item() if hasattr(value, "item") else value


def token_stats(con: duckdb.DuckDBPyConnection, model: str | None, since: date | datetime | str | None,
                models: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """{model: {"requests": n, "input_tokens": {mean, p50, p90, p99}, "output_tokens": {...}}} since ``since``.

    Means are exact (token sums / requests) [tokens]; percentiles from the merged histograms, within
    ``HISTOGRAM_RELATIVE_ERROR``. With ``models``, one entry ``model`` for the union of those log models (a pool).
    """
    sums = queries.period_token_sums(con, "all", model, since, models).fetchnumpy()
    names = sums["model"].tolist()
    quantiles = _token_quantiles(con, names, model, since, models)
    stats: dict[str, dict] = {}
    token_sums = {metric: sums[f"{metric}_sum"].tolist() for metric in _TOKENS}  # Python ints: exact division
    for i, (name, requests) in enumerate(zip(names, sums["requests"].tolist(), strict=True)):
        stats[name] = {"requests": requests}
        for metric in _TOKENS:
            entry = {"mean": token_sums[metric][i] / requests if requests else None}
            entry |= {f"p{round(q * 100)}": _num(v) for q, v in quantiles.get((name, metric), ())}
            stats[name][metric] = entry
    return stats


def _token_quantiles(con: duckdb.DuckDBPyConnection, names: list[str], model: str | None,
                     since: date | datetime | str | None, models: Sequence[str] | None,
                     merge_cells: int = MERGE_CELLS) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """{(model, metric): [(q, value) for q in TOKEN_QUANTILES]} of input and output tokens over the window,
    the figures of ``histogram_quantiles(con, ..., "all", model, since, models)``.

    Thousands of models (LoRA adapters, tenants) store tens of millions of (hour, model, bin) counts: DuckDB
    merges them one row per bin, numpy with one ``bincount`` per batch of stored rows into models × bins
    counts, several times faster. So ``names`` (the models of ``period_token_sums``) are merged in numpy while
    models × bins stays within ``merge_cells``, else by the query.
    """
    merged = _merged_token_bins(con, names, model, since, models, merge_cells)
    if merged is None:
        long = queries.histogram_quantiles(con, _TOKENS, TOKEN_QUANTILES, "all", model, since, models).fetchnumpy()
        # one pass over plain lists: a pandas groupby iterates ~60 µs per group, 2 minutes at a million models
        by_key: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for name, metric, q, value in zip(long["model"].tolist(), long["metric"].tolist(), long["q"].tolist(),
                                          long["value"].tolist(), strict=True):
            by_key.setdefault((name, metric), []).append((q, value))
        return by_key
    return {(names[i], metric): q_values for metric, counts in merged.items()
            for i, q_values in enumerate(_bin_quantiles(counts[:len(names)], TOKEN_QUANTILES)) if q_values}


def _merged_token_bins(con: duckdb.DuckDBPyConnection, names: list[str], model: str | None,
                       since: date | datetime | str | None, models: Sequence[str] | None,
                       merge_cells: int) -> dict[str, np.ndarray] | None:
    """Per metric, the counts of every model (row i: ``names[i]``; a last row for any other) by bin column
    (bin + 1), summed over the window's hours; ``None`` when models × bins would outgrow ``merge_cells``."""
    rows, width = len(names) + 1, _TOKEN_COLUMNS
    if rows * width > merge_cells:
        return None
    counts = {metric: np.zeros((rows, width), np.int64) for metric in _TOKENS}
    params = {"model": model, "since_utc": since_utc(since), "models": None if models is None else list(models)}
    known = arrow.array(names, arrow.string())
    for batch in con.sql(sql.load("rpt_histogram_token_bins"), params=params).to_arrow_reader(_BATCH_ROWS):
        row = arrow_compute.fill_null(arrow_compute.index_in(batch.column("model"), value_set=known), len(names))
        row = row.to_numpy().astype(np.int64)
        for metric in _TOKENS:
            for name in code_columns(metric):  # codes count << CODE_SHIFT | (bin + 1) (sql/ddl_profile.sql)
                lists = batch.column(name)
                parent = arrow_compute.list_parent_indices(lists).to_numpy()
                codes = lists.flatten().to_numpy().astype(np.int64)
                column = codes & ((1 << CODE_SHIFT) - 1)  # bin + 1: bin -1 -> column 0
                top = int(column.max(initial=0)) + 1
                if top > width:  # a bin beyond int32 tokens (a metrics histogram): grow, within the limit
                    if rows * top > merge_cells:
                        return None
                    counts = {m: np.pad(c, ((0, 0), (0, top - width))) for m, c in counts.items()}
                    width = top
                # float64 weights are exact below 2^53 requests per batch and bin
                counts[metric] += np.bincount(row[parent] * width + column, weights=codes >> CODE_SHIFT,
                                              minlength=rows * width).reshape(rows, width).astype(np.int64)
    return counts


def _bin_quantiles(counts: np.ndarray, quantiles: Sequence[float]) -> list[list[tuple[float, float]]]:
    """[(q, value)] of each row of ``counts`` (bin column = bin + 1; an empty row has none), by the rule of
    ``sql/rpt_histogram_quantiles.sql``: the bin holding the ``ceil(q·n)``-th smallest value (at least the
    first), reported as ``2·γ^(bin+1) / (1 + γ)``, computed in the same order; bin -1 reports 0."""
    cumulative = np.cumsum(counts, axis=1)
    total = cumulative[:, -1] if counts.shape[1] else np.zeros(len(counts), np.int64)
    columns = [np.argmax(cumulative >= np.maximum(np.ceil(q * total.astype(np.float64)), 1)[:, None], axis=1)
               for q in quantiles]
    value = {c: 0.0 if c == 0 else 2 * math.pow(HISTOGRAM_GAMMA, c) / (1 + HISTOGRAM_GAMMA)
             for c in np.unique(np.concatenate(columns)).tolist()}
    return [[(q, value[int(c[i])]) for q, c in zip(quantiles, columns, strict=True)] if total[i] else []
            for i in range(len(counts))]


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
    queries.check_choice("empty_hours", empty_hours, EMPTY_HOURS)
    require_current_rollups(con)
    scope = model or ALL_MODELS
    hours = _hours(con, scope, since, empty_hours)
    observed = hours["observed"]
    total = int(hours["requests"][observed].sum())
    rated = observed & ~np.isnan(hours["avg_qps"])  # hours with a rate: requests over observed seconds
    seconds = float(hours["exposure_s"][rated].sum())  # (capplan.profile.exposure)
    avg_qps = float(hours["requests"][rated].sum()) / seconds if seconds and total else None
    peak_hour_qps = _nan_max(hours["avg_qps"][observed])
    peak_second_qps = _nan_max(hours["peak_second_qps"][observed])
    tokens = token_stats(con, model, since)  # every model's: thousands are real
    # totals only: not the hourly TTFT percentiles, nor the events hour by hour
    valid, success, good = queries.sli_event_totals(con, ttft_threshold_ms, scope, since).fetchall()[0]
    ttft = queries.histogram_quantiles(con, ("ttft_ms",), TTFT_QUANTILES, "all", scope, since).fetchnumpy()
    empty_tokens = {"mean": None, **{f"p{round(q * 100)}": None for q in TOKEN_QUANTILES}}
    n_hours = len(hours["hour_us"])
    return {
        "scope": scope,
        "span_start": _iso(hours["hour_us"].min()) if n_hours else None,
        "span_end": _iso(hours["hour_us"].max() + _HOUR_US) if n_hours else None,
        "hours": n_hours,
        "gap_hours": int(hours["is_gap"].sum()),
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
            "success_rate": success / valid if valid else None,
            "good_fraction": good / valid if valid else None,
            **{f"ttft_p{round(q * 100)}_ms": None for q in TTFT_QUANTILES},
            **{f"ttft_p{round(q * 100)}_ms": _num(v) for q, v in zip(ttft["q"].tolist(), ttft["value"], strict=True)},
        },
    }


def _hours(con: duckdb.DuckDBPyConnection, scope: str, since: date | datetime | str | None,
           empty_hours: str) -> dict[str, np.ndarray]:
    """The columns of ``hourly_traffic(con, scope, since, empty_hours=...)`` the summary reads, as numpy arrays
    (``hour_us`` µs since the epoch; ``requests`` 0 where null, ``observed`` where not; ``avg_qps`` and
    ``peak_second_qps`` NaN where null), with the exposure of :func:`capplan.profile.exposure.apply_exposure`:
    a gap hour keeps the query's rate and has ``exposure_s`` 0, any other hour's rate is over its exposure."""
    hourly = queries.hourly_traffic(con, scope, since, empty_hours).fetchnumpy()  # masked arrays where null
    hour_us = hourly["hour_utc"].astype("datetime64[us]").astype(np.int64)
    requests, is_gap = hourly["requests"], hourly["is_gap"].astype(bool)
    rate_qps, exposure_s = gap_aware_hours(is_gap, _floats(requests), exposure_s_of_hours(
        hour_us, [(epoch_us(a), epoch_us(b)) for a, b in observed_span_utc(con)]))
    return {
        "hour_us": hour_us, "is_gap": is_gap,
        "observed": ~np.ma.getmaskarray(requests),
        "requests": np.ma.filled(requests, 0),
        "avg_qps": np.where(is_gap, _floats(hourly["avg_qps"]), rate_qps),
        "exposure_s": exposure_s,
        "peak_second_qps": _floats(hourly["peak_second_qps"]),
    }


def _floats(column: np.ndarray) -> np.ndarray:
    """A numeric column of ``fetchnumpy`` (masked where null) as float64, NaN where null."""
    return np.ma.filled(np.ma.asarray(column).astype(np.float64), np.nan)


def _nan_max(values: np.ndarray) -> float | None:
    """The largest value that is not NaN, as a plain float; ``None`` if there is none."""
    values = values[~np.isnan(values)]
    return float(values.max()) if len(values) else None


def _iso(hour_us: np.int64) -> str:
    """An hour in µs since the epoch as the ISO text of a naive UTC datetime (``2026-01-01T00:00:00``)."""
    return (EPOCH + timedelta(microseconds=int(hour_us))).isoformat()
