"""The traffic profile: hourly rollups of the ``requests`` table in DuckDB, and the frames read from them.

Raw rows are rolled up once into per-hour tables (``sql/ddl_profile.sql``):

* ``fct_traffic_hourly``: counts, token and time sums, busiest second, per UTC hour and model;
* ``fct_histogram_hourly``: sparse log-binned histograms of input/output tokens, TTFT and latency;
* ``fct_concurrency_hourly``: peak requests in flight (a sweep over ``[arrival, arrival + latency)``).

Every row exists per model and for ``model == "__all__"`` (all models together). Days, weeks and
months are sums of hours, so their percentiles come from merged histograms, never from averaged
percentiles. :func:`refresh_rollups` recomputes only the hours touched by files that appeared,
changed or vanished since the last refresh; readers call it first, so the first reader after an
ingest brings the rollups up to date.

The mergeable contract (:func:`rollup_partition`, :func:`merge_rollups`): a partition of raw rows
rolls up on its own, and summing counts, sums and bins (max of the busiest second) over partitions
gives exactly the single-process tables, provided partitions hold whole hours (whole days, say).
The concurrency sweep is not part of it (a request in flight across a partition boundary is seen by
one side only).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pandera.pandas as pa
import pyarrow as pa_arrow
from pandera.typing import DataFrame, Series

import sql

ALL_MODELS = "__all__"
HISTOGRAM_GAMMA = 1.02
"""Ratio of consecutive histogram bin edges: bin k holds ``[gamma^k, gamma^(k+1))``."""
HISTOGRAM_RELATIVE_ERROR = (HISTOGRAM_GAMMA - 1) / (HISTOGRAM_GAMMA + 1)
"""Bound on the relative error of a histogram quantile against the exact order statistic (≈ 0.99 %)."""
METRICS = ("input_tokens", "output_tokens", "ttft_ms", "latency_ms")
GRAINS = ("hour", "day", "week", "month")
EMPTY_HOURS = ("missing", "zero")
ROLLUP_TABLES = ("fct_traffic_hourly", "fct_histogram_hourly", "fct_concurrency_hourly")
_HOUR = timedelta(hours=1)
_SOURCE_VIEW = "profile_source"


class ProfileError(ValueError):
    """The database cannot be profiled (no ``requests`` table, read-only and never rolled up, ...)."""


# --------------------------------------------------------------------------- frame contracts


class HourlyTraffic(pa.DataFrameModel):
    """One UTC hour of one model (or ``"__all__"``); gap hours carry nulls or zeros per ``empty_hours``."""

    hour_utc: Series[pd.Timestamp] = pa.Field(description="Start of the hour, UTC.")
    model: Series[str] = pa.Field(description="Model name, or '__all__'.")
    requests: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="Arrivals. [requests]")
    errors: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="Non-2xx arrivals. [requests]")
    avg_qps: Series[float] = pa.Field(ge=0, nullable=True, description="requests / 3600. [requests/s]")
    peak_second_qps: Series[float] = pa.Field(
        ge=0, nullable=True, description="Arrivals in the busiest aligned second. [requests/s]")
    input_tokens_sum: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="[tokens]")
    output_tokens_sum: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="[tokens]")
    mean_ttft_ms: Series[float] = pa.Field(ge=0, nullable=True, description="Over rows with TTFT. [ms]")
    mean_latency_ms: Series[float] = pa.Field(ge=0, nullable=True, description="Over rows with latency. [ms]")
    concurrency_littles: Series[float] = pa.Field(
        ge=0, nullable=True, description="Little's law avg_qps * mean latency. [requests in flight]")
    concurrency_measured_peak: Series[pd.Int64Dtype] = pa.Field(
        ge=0, nullable=True, description="Peak of the sweep over [arrival, arrival+latency). [requests in flight]")
    is_gap: Series[bool] = pa.Field(description="No rows in this hour inside the model's span.")

    class Config:
        coerce = True
        strict = True
        ordered = True


# --------------------------------------------------------------------------- rollups


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the rollup tables if they do not exist (``sql/ddl_profile.sql``)."""
    con.execute(sql.load("ddl_profile"))


def _use_source(con: duckdb.DuckDBPyConnection, source: str | os.PathLike | duckdb.DuckDBPyRelation) -> None:
    """Point the temporary view ``profile_source`` at a table name, a Parquet path or a relation."""
    if isinstance(source, duckdb.DuckDBPyRelation):
        rel = source
    elif isinstance(source, os.PathLike):
        rel = con.read_parquet(os.fspath(source))
    else:
        rel = con.table(source)
    rel.create_view(_SOURCE_VIEW, replace=True)


def _rollup_params(start_utc: datetime, end_utc: datetime) -> dict[str, Any]:
    return {"start_utc": start_utc, "end_utc": end_utc}


def rollup_partition(
    con: duckdb.DuckDBPyConnection,
    source: str | os.PathLike | duckdb.DuckDBPyRelation,
    *,
    start_utc: datetime = datetime(1, 1, 1),
    end_utc: datetime = datetime(9999, 1, 1),
) -> dict[str, pa_arrow.Table]:
    """Roll up raw request rows on their own: the mergeable part of the profile.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Any DuckDB connection, e.g. a fresh in-memory one per Dask partition.
    source : str, os.PathLike or duckdb.DuckDBPyRelation
        A table name (``str``), a Parquet file or glob (``pathlib.Path``), or a relation, with the
        columns of ``sql/ddl_requests.sql``.
    start_utc, end_utc : datetime
        Only rows arriving in ``[start_utc, end_utc)`` count. [UTC]

    Returns
    -------
    dict of str to pyarrow.Table
        ``"fct_traffic_hourly"`` and ``"fct_histogram_hourly"``, with the columns of those tables.
        Combine partitions with :func:`merge_rollups`; partitions must hold whole UTC hours for the
        busiest-second max to be exact.
    """
    _use_source(con, source)
    params = _rollup_params(start_utc, end_utc)
    return {
        "fct_traffic_hourly": con.execute(sql.load("int_profile_traffic"), params).to_arrow_table(),
        "fct_histogram_hourly": con.execute(
            sql.load("int_profile_histogram"), params | {"inv_ln_gamma": 1 / math.log(HISTOGRAM_GAMMA)}
        ).to_arrow_table(),
    }


def merge_rollups(con: duckdb.DuckDBPyConnection, parts: Iterable[dict[str, pa_arrow.Table]]) -> dict[str, pa_arrow.Table]:
    """Merge partition rollups: sum counts, sums and bins; max of the busiest second per hour.

    The result equals :func:`rollup_partition` over the union of the partitions' rows when every UTC
    hour lies wholly in one partition.
    """
    parts = list(parts)
    if not parts:
        raise ValueError("merge_rollups needs at least one partition rollup")
    merged = {}
    for table, query in (("fct_traffic_hourly", "int_profile_merge_traffic"),
                         ("fct_histogram_hourly", "int_profile_merge_histogram")):
        con.register("profile_parts", pa_arrow.concat_tables([p[table] for p in parts]))
        try:
            merged[table] = con.execute(sql.load(query)).to_arrow_table()
        finally:
            con.unregister("profile_parts")
    return merged


def _hour_runs(hours: Iterable[datetime]) -> list[tuple[datetime, datetime]]:
    """Contiguous runs ``[start, end)`` of whole hours, so each run is one range query."""
    runs: list[list[datetime]] = []
    for h in sorted(set(hours)):
        if runs and h == runs[-1][1]:
            runs[-1][1] = h + _HOUR
        else:
            runs.append([h, h + _HOUR])
    return [(a, b) for a, b in runs]


def _require_requests(con: duckdb.DuckDBPyConnection) -> None:
    found = con.execute(
        "select count(*) from duckdb_tables() where table_name = 'requests' and not temporary").fetchone()[0]
    if not found:
        raise ProfileError("the database has no 'requests' table: run `capplan ingest` first")


def _floor_hour(ts: datetime) -> datetime:
    return ts.replace(minute=0, second=0, microsecond=0)


def refresh_rollups(
    con: duckdb.DuckDBPyConnection,
    *,
    hours: Iterable[datetime] | None = None,
    full: bool = False,
) -> int:
    """Bring the rollup tables up to date with ``requests``; idempotent.

    Files (``requests.file_id``) whose row count differs from what the last refresh saw (new,
    replaced or deleted files) mark the hours they touch as dirty: the hours their rows arrive in and
    the hours those requests are still in flight. Only dirty hours are recomputed.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        A writable connection to a database with a ``requests`` table.
    hours : iterable of datetime, optional
        Extra hours to recompute (floored to the hour). [UTC]
    full : bool
        Drop every rollup row and rebuild from all of ``requests``; gives the same tables as any
        sequence of incremental refreshes.

    Returns
    -------
    int
        Number of hours recomputed. [hours]
    """
    _require_requests(con)
    ensure_tables(con)
    con.begin()
    try:
        dirty = _refresh(con, hours=hours, full=full)
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return dirty


def _refresh(con: duckdb.DuckDBPyConnection, *, hours: Iterable[datetime] | None, full: bool) -> int:
    if full:
        for table in (*ROLLUP_TABLES, "profile_file_hours"):
            con.execute(f"delete from {table}")  # noqa: S608 - fixed table names, no values
        changed = [r[0] for r in con.execute("select distinct file_id from requests").fetchall()]
    else:
        changed = [r[0] for r in con.execute(sql.load("int_profile_changed_files")).fetchall()]
    dirty = {_floor_hour(h) for h in hours or ()}
    if changed:
        dirty |= {r[0] for r in con.execute(
            "select distinct hour_utc from profile_file_hours where file_id in (select unnest(?::integer[]))",
            [changed]).fetchall()}
        con.execute("delete from profile_file_hours where file_id in (select unnest(?::integer[]))", [changed])
        con.execute("insert into profile_file_hours " + sql.load("int_profile_file_hours"), {"file_ids": changed})
        dirty |= {r[0] for r in con.execute(
            "select distinct hour_utc from profile_file_hours where file_id in (select unnest(?::integer[]))",
            [changed]).fetchall()}
    if not dirty:
        return 0
    runs = [(min(dirty), max(dirty) + _HOUR)] if full else _hour_runs(dirty)
    _recompute(con, runs)
    return len(dirty)


def _recompute(con: duckdb.DuckDBPyConnection, runs: Sequence[tuple[datetime, datetime]]) -> None:
    """Replace the rollup rows of each run of hours by a fresh roll-up of ``requests``."""
    _use_source(con, "requests")
    lookback_ms = con.execute("select coalesce(max(latency_ms), 0) from requests").fetchone()[0]
    inv_ln_gamma = 1 / math.log(HISTOGRAM_GAMMA)
    for start_utc, end_utc in runs:
        params = _rollup_params(start_utc, end_utc)
        for table in ROLLUP_TABLES:
            con.execute(f"delete from {table} where hour_utc >= $start_utc and hour_utc < $end_utc", params)  # noqa: S608
        con.execute("insert into fct_traffic_hourly " + sql.load("int_profile_traffic"), params)
        con.execute("insert into fct_histogram_hourly " + sql.load("int_profile_histogram"),
                    params | {"inv_ln_gamma": inv_ln_gamma})
        con.execute("insert into fct_concurrency_hourly " + sql.load("int_profile_concurrency"),
                    params | {"lookback_us": math.ceil(lookback_ms * 1000)})


def _fresh(con: duckdb.DuckDBPyConnection) -> None:
    """Refresh the rollups before reading; a read-only connection reads them as last refreshed."""
    try:
        refresh_rollups(con)
    except duckdb.Error as exc:
        if "read-only" not in str(exc).lower():
            raise
        present = con.execute(
            "select count(*) from duckdb_tables() where table_name = 'fct_traffic_hourly'").fetchone()[0]
        if not present:
            raise ProfileError("the database was opened read-only and has never been profiled: "
                               "open it writable once (e.g. `capplan profile`)") from None


# --------------------------------------------------------------------------- readers


def _check_choice(name: str, value: str, valid: Sequence[str]) -> None:
    if value not in valid:
        raise ValueError(f"{name} must be one of {list(valid)}, got {value!r}")


def _since(since: date | datetime | str | None) -> datetime | None:
    """``since`` as a naive UTC datetime (a date means its midnight UTC)."""
    if since is None:
        return None
    ts = pd.Timestamp(since)
    if ts.tzinfo is not None:
        ts = ts.tz_convert("UTC").tz_localize(None)
    return ts.to_pydatetime()


def _validate(frame: pd.DataFrame, model: type[pa.DataFrameModel]) -> pd.DataFrame:
    return model.validate(frame)


def hourly_traffic(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    since: date | datetime | str | None = None,
    *,
    empty_hours: str = "missing",
) -> DataFrame[HourlyTraffic]:
    """Traffic per UTC hour, per model and for all models (``model == "__all__"``).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Connection to a database with ``requests``; rollups are refreshed first if writable.
    model : str, optional
        One model, ``"__all__"``, or ``None`` for every model and ``"__all__"``.
    since : date, datetime or str, optional
        First hour to return (a date means midnight UTC). [UTC]
    empty_hours : {"missing", "zero"}
        What an hour with no rows inside a model's span means: a logging gap (measures null) or
        true zero traffic (counts 0). Either way ``is_gap`` is true.

    Returns
    -------
    DataFrame[HourlyTraffic]
        Ordered by model, then hour.

    Notes
    -----
    * A model's span runs from its first to its last hour with rows; hours outside it are absent.
    * ``peak_second_qps`` counts arrivals in the busiest aligned UTC second (``[s, s + 1 s)``).
    * ``concurrency_littles = avg_qps * mean_latency_ms / 1000`` (L = λ·W, steady state).
    * ``concurrency_measured_peak`` is the peak of a sweep over ``[arrival, arrival + latency)``
      of the rows with latency logged; a request crossing an hour boundary counts in every hour it
      overlaps, so an hour without arrivals can still show requests in flight.
    """
    _check_choice("empty_hours", empty_hours, EMPTY_HOURS)
    _fresh(con)
    frame = con.execute(
        sql.load("rpt_hourly_traffic"),
        {"model": model, "since_utc": _since(since), "empty_hours": empty_hours},
    ).df()
    return _validate(frame, HourlyTraffic)
