"""The one read path of the mergeable roll-ups, whether rows came by file ingest or as partitions.

Some of the plan's inputs are roll-ups of ``requests`` that are cheap to compute on read: the
hourly request mix, KV tokens per sequence, the SLO's per-minute counts and the drift's daily
token histograms (``sql/<name>.sql`` for each name of :data:`PLAN_INPUTS`). Rows rolled up
where they live (``capplan.partitioned``) never reach ``requests``: each partition's rows of
the same roll-up are stored in the table :data:`PLAN_INPUTS` names. Every reader (SLO, drift,
plan) reads through :func:`rollup_views`, which appends the two, so one code path serves file
ingest, partitions, or both. This module only reads: it never creates or writes a table.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta

import duckdb
import numpy as np
import pyarrow as arrow
import pyarrow.compute as compute

from capplan import sql
from capplan.db import create_macros
from capplan.profile.bins import HISTOGRAM_GAMMA

PLAN_INPUTS = {"int_plan_request_mix_hourly": "partition_request_mix_hourly",
               "int_plan_kv_tokens_hourly": "partition_kv_tokens_hourly",
               "int_slo_minute_rollup": "partition_slo_minute",
               "int_drift_daily_histogram": "partition_drift_daily_histogram"}
"""Mergeable roll-up of the plan's other inputs (``sql/<name>.sql`` over ``requests``) -> the per-partition
table that keeps each partition's rows of it; readers sum the two (:func:`rollup_with_partitions`)."""
DRIFT_BINS_MERGED = 9
"""Profile histogram bins (:data:`capplan.profile.bins.HISTOGRAM_GAMMA`) per bin of the drift roll-up
(``sql/int_drift_daily_histogram.sql``): its bin ``j`` is the profile's bins ``9j .. 9j+8``."""
_STORED_ROWS_SQL = {"int_plan_request_mix_hourly": "int_rollups_stored_request_mix_hourly",
                    "int_plan_kv_tokens_hourly": "int_rollups_stored_kv_tokens_hourly",
                    "int_slo_minute_rollup": "int_rollups_stored_slo_minute",
                    "int_drift_daily_histogram": "int_rollups_stored_drift_daily_histogram"}
"""Roll-up query -> the SQL reading every stored partition's rows of it (its table of :data:`PLAN_INPUTS`)."""
_METRICS_ROWS_SQL = {"int_plan_request_mix_hourly": "int_rollups_metrics_request_mix_hourly",
                     "int_plan_kv_tokens_hourly": "int_rollups_metrics_kv_tokens_hourly"}
"""Roll-up query -> the SQL giving the hours fed by metrics (``metrics_ledger``, :mod:`capplan.metrics`) in its
columns. The SLO's per-minute counts get the hours with an error counter spread over their minutes
(:func:`metrics_slo_hours`, :func:`spread_over_minutes`); the drift's daily histograms get none: metrics hold no
per-request token sums (docs/metrics.md)."""
_METRICS_SLO_TABLES = ("metrics_ledger", "metrics_ttft_buckets_hourly")
"""What :func:`metrics_slo_hours` reads besides the ``fct_*`` roll-ups (a database whose metrics were ingested
before the TTFT buckets were kept gets the table at its next ``ingest-metrics``)."""
MINUTES_PER_HOUR = 60
NO_TTFT_THRESHOLD_MS = float("inf")
"""The SLO roll-up's threshold for an SLO without a TTFT threshold: every 2xx is good. [ms]"""


def rollup_with_partitions(con: duckdb.DuckDBPyConnection, query: str, params: Mapping | None = None) -> arrow.Table:
    """The roll-up ``sql/<query>.sql`` of ``requests``, with every stored partition's rows of it and the
    rows of the hours fed by metrics (:data:`_METRICS_ROWS_SQL`) appended.

    One code path for the plan's readers: rows from file ingest and from partitions have the same
    columns and are summed by key by the reader's SQL (a key may repeat: hours fed by several partitions).

    Parameters
    ----------
    query : str
        A key of :data:`PLAN_INPUTS`.
    params : mapping, optional
        The query's bound parameters (filters apply to ``requests`` only; the reader filters the rest).
    """
    # a cursor: the caller's connection may hold an unread result, which blocks relations on it
    with con.cursor() as cur:
        create_macros(cur)  # a cursor does not see its connection's temp macros (sli_valid, ...)
        rows = cur.sql(sql.load(query), params=dict(params or {})).to_arrow_table()
        extra = []
        if _has_table(cur, PLAN_INPUTS[query]):  # a database that stored partitions
            extra.append(cur.sql(sql.load(_STORED_ROWS_SQL[query])).to_arrow_table())
        if query in _METRICS_ROWS_SQL and _has_table(cur, "metrics_ledger"):  # hours fed by metrics
            extra.append(cur.sql(sql.load(_METRICS_ROWS_SQL[query]), params=_metrics_params(query)).to_arrow_table())
        if query == "int_slo_minute_rollup" and (hours := metrics_slo_hours(cur, params["ttft_thresholds_ms"])):
            extra.append(spread_over_minutes(hours))
    return arrow.concat_tables([rows, *(part.cast(rows.schema) for part in extra)])


def _metrics_params(query: str) -> dict:
    return {"gamma": HISTOGRAM_GAMMA} if query == "int_plan_kv_tokens_hourly" else {}


def metrics_slo_hours(con: duckdb.DuckDBPyConnection, ttft_thresholds_ms: Sequence[float]) -> arrow.Table | None:
    """The SLO's events of the hours fed by metrics with an error counter, per hour, model and TTFT threshold.

    ``sql/int_rollups_metrics_slo_hourly.sql``: ``valid``, ``bad``, ``successes`` [requests] and the TTFT bucket
    ``(lo_ms, le_ms]`` holding the threshold with the successes it splits (``in_bucket``). ``None`` when the
    database has no metrics tables; an empty table when no hour has an error counter.
    """
    if not all(_has_table(con, t) for t in _METRICS_SLO_TABLES):
        return None
    return con.sql(sql.load("int_rollups_metrics_slo_hourly"),
                   params={"ttft_thresholds_ms": list(ttft_thresholds_ms)}).to_arrow_table()


def spread_over_minutes(hours: arrow.Table) -> arrow.Table:
    """Hourly SLO events as whole per-minute events, in the columns of ``sql/int_slo_minute_rollup.sql``.

    Each hour's ``n`` valid (and bad) events give ``n // 60`` to every minute and one more to the first
    ``n % 60``: the hour's totals are exact, a minute never holds more bad than valid events, and a
    window of whole hours sees the hour's counts (resolution 1 h). Client errors: 0 (a counter cannot
    tell them apart).
    """
    minute = np.tile(np.arange(MINUTES_PER_HOUR), hours.num_rows)

    def per_minute(column: str) -> np.ndarray:
        n = np.repeat(hours[column].to_numpy(), MINUTES_PER_HOUR)
        return n // MINUTES_PER_HOUR + (minute < n % MINUTES_PER_HOUR)

    start = np.repeat(hours["hour_utc"].to_numpy().astype("datetime64[us]"), MINUTES_PER_HOUR)
    valid = per_minute("valid")
    return arrow.table({"minute_utc": start + minute.astype("timedelta64[m]"),
                        "model": np.repeat(hours["model"].to_numpy(zero_copy_only=False), MINUTES_PER_HOUR),
                        "ttft_threshold_ms": np.repeat(hours["ttft_threshold_ms"].to_numpy(), MINUTES_PER_HOUR),
                        "requests": valid, "client_errors": np.zeros(valid.size, dtype=np.int64),
                        "good": valid - per_minute("bad")})


@contextmanager
def rollup_views(con: duckdb.DuckDBPyConnection,
                 views: Mapping[str, tuple[str, Mapping]]) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of ``con`` on which each ``view`` is :func:`rollup_with_partitions` ``(query, params)``.

    The views vanish with the cursor when the block ends.
    """
    with con.cursor() as cur:
        for view, (query, params) in views.items():
            cur.register(view, rollup_with_partitions(cur, query, params))
        yield cur


def drift_histogram_params() -> dict[str, float]:
    """The bound parameters of the drift roll-up ``sql/int_drift_daily_histogram.sql`` that fix its grid.

    ``inv_ln_gamma = 1 / (DRIFT_BINS_MERGED · ln HISTOGRAM_GAMMA)``: a drift bin is
    ``floor(ln x · inv_ln_gamma) = floor(profile bin / DRIFT_BINS_MERGED)``, whole runs of the profile's bins.
    File ingest and partitions bin with these same parameters, so their rows add up.
    """
    return {"inv_ln_gamma": 1 / (DRIFT_BINS_MERGED * math.log(HISTOGRAM_GAMMA))}


def partition_minute_span(con: duckdb.DuckDBPyConnection, model: str | None) -> tuple[datetime | None, datetime | None]:
    """First and last minute with requests (of ``model``, or all) in the stored partitions' SLO roll-ups (UTC).

    ``(None, None)`` without partitions: a min/max over the small per-minute table, not a new roll-up.
    """
    if not _has_table(con, PLAN_INPUTS["int_slo_minute_rollup"]):
        return None, None
    return con.execute(sql.load("int_rollups_partition_minute_span"), {"model": model}).fetchone()


def metrics_minute_span(con: duckdb.DuckDBPyConnection, model: str | None) -> tuple[datetime | None, datetime | None]:
    """First and last minute of the hours fed by metrics with an error counter (of ``model``, or all) (UTC).

    ``(None, None)`` without such hours (:func:`metrics_slo_hours`).
    """
    hours = metrics_slo_hours(con, [NO_TTFT_THRESHOLD_MS])
    if hours is not None and model is not None:
        hours = hours.filter(compute.equal(hours["model"], model))
    if not hours:
        return None, None
    first, last = (x.as_py() for x in compute.min_max(hours["hour_utc"]).values())
    return first, last + timedelta(minutes=MINUTES_PER_HOUR - 1)


def partition_ttft_thresholds_ms(con: duckdb.DuckDBPyConnection) -> list[float]:
    """The TTFT thresholds the stored partitions' SLO roll-ups hold (``[]`` without partitions). [ms]"""
    if not _has_table(con, PLAN_INPUTS["int_slo_minute_rollup"]):
        return []
    return [t for (t,) in con.execute(sql.load("int_rollups_partition_ttft_thresholds")).fetchall()]


def has_histograms(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the profile's merged hourly histograms (``fct_histogram_hourly``) exist on ``con``."""
    return _has_table(con, "fct_histogram_hourly")


def _has_table(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return bool(con.execute(sql.load("int_rollups_has_table"), {"table": table}).fetchall()[0][0])
