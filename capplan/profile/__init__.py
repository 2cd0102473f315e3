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
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pandera.pandas as pa
import numpy as np
import pyarrow as pa_arrow
from pandera.typing import DataFrame, Series

from capplan import sql
from capplan.db import create_macros, memory_capped
from capplan.profile.bins import HISTOGRAM_GAMMA, HISTOGRAM_RELATIVE_ERROR  # noqa: F401 (re-exported)
from capplan.profile.counting import (
    S_PER_HOUR,
    CONCURRENCY_SCHEMA,
    HISTOGRAM_SCHEMA,
    TRAFFIC_SCHEMA,
    WindowRollup,
    plan_windows,
)

ALL_MODELS = "__all__"
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


def _use_source(con: duckdb.DuckDBPyConnection, source: str | os.PathLike | duckdb.DuckDBPyRelation,
                before_utc: datetime | None = None) -> None:
    """Point the temporary view ``profile_source`` at a table name, a Parquet path or a relation;
    with ``before_utc``, at its rows arriving before then only (a bound expression, not SQL text)."""
    if isinstance(source, duckdb.DuckDBPyRelation):
        rel = source
    elif isinstance(source, os.PathLike):
        rel = con.read_parquet(os.fspath(source))
    else:
        rel = con.table(source)
    if before_utc is not None:
        rel = rel.filter(duckdb.ColumnExpression("ts_utc") < duckdb.ConstantExpression(before_utc))
    rel.create_view(_SOURCE_VIEW, replace=True)


def _rollup_params(start_utc: datetime, end_utc: datetime) -> dict[str, Any]:
    return {"start_utc": start_utc, "end_utc": end_utc}


def rollup_partition(
    con: duckdb.DuckDBPyConnection,
    source: str | os.PathLike | duckdb.DuckDBPyRelation,
    *,
    start_utc: datetime = datetime(1, 1, 1),
    end_utc: datetime = datetime(9999, 1, 1),
    in_flight: bool = False,
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
    in_flight : bool
        Also sweep the source's requests in flight, in the same scan: ``"fct_concurrency_hourly"``
        then holds the peak per hour, the hours after the last arrival that requests are still in
        flight included. Requests of the source arriving before ``start_utc`` and still running count
        in flight, as in :func:`refresh_rollups`; requests outside the source (another partition) do not.

    Returns
    -------
    dict of str to pyarrow.Table
        ``"fct_traffic_hourly"`` and ``"fct_histogram_hourly"`` (and with ``in_flight``
        ``"fct_concurrency_hourly"``), with the columns of those tables. Combine partitions with
        :func:`merge_rollups`; partitions must hold whole UTC hours for the busiest-second max to be exact.
    """
    _use_source(con, source)
    tables: dict[str, list[pa_arrow.Table]] = {"fct_traffic_hourly": [TRAFFIC_SCHEMA.empty_table()],
                                               "fct_histogram_hourly": [HISTOGRAM_SCHEMA.empty_table()]}
    if in_flight:
        tables["fct_concurrency_hourly"] = [CONCURRENCY_SCHEMA.empty_table()]
    start_utc, end_utc = _data_span(con, start_utc, end_utc)
    if start_utc is not None:
        lookback_us, sweep_end = 0, end_utc
        if in_flight:  # the sweep runs on past end_utc while requests are in flight: arrivals must stop there
            lookback_us, sweep_end = _in_flight_reach(con, start_utc, end_utc)
            _use_source(con, source, before_utc=end_utc)
        for window in _roll_up(con, start_utc, sweep_end, lookback_us=lookback_us, in_flight=in_flight):
            tables["fct_traffic_hourly"].append(window.traffic(ALL_MODELS))
            tables["fct_histogram_hourly"].append(window.histogram(ALL_MODELS))
            if in_flight:
                tables["fct_concurrency_hourly"].append(window.concurrency(ALL_MODELS))
    return {name: pa_arrow.concat_tables(parts) for name, parts in tables.items()}


def _in_flight_reach(con: duckdb.DuckDBPyConnection, start_utc: datetime, end_utc: datetime) -> tuple[int, datetime]:
    """Lookback [µs] (the longest latency) and the end of the hour after the last completion of the
    requests arriving in ``[start_utc, end_utc)``: the reach of their in-flight sweep."""
    # the lookback: any request of the source arriving before end_utc may still run inside the range
    longest_ms, last_end = con.execute(
        "select coalesce(max(latency_ms), 0),"
        " max(ts_utc + to_microseconds((latency_ms * 1000)::bigint)) filter (where ts_utc >= $start_utc)"
        " from profile_source where latency_ms > 0 and ts_utc < $end_utc",
        _rollup_params(start_utc, end_utc)).fetchall()[0]
    sweep_end = end_utc if last_end is None else max(end_utc, _floor_hour(last_end) + _HOUR)
    return math.ceil(longest_ms * 1000), sweep_end


def _data_span(con: duckdb.DuckDBPyConnection, start_utc: datetime, end_utc: datetime
               ) -> tuple[datetime | None, datetime | None]:
    """``[start_utc, end_utc)`` narrowed to the whole hours ``profile_source`` has rows in; ``None`` if none."""
    first, last = con.execute(
        "select min(ts_utc), max(ts_utc) from profile_source where ts_utc >= $start_utc and ts_utc < $end_utc",
        _rollup_params(start_utc, end_utc)).fetchall()[0]
    if first is None:
        return None, None
    return max(start_utc, _floor_hour(first)), min(end_utc, _floor_hour(last) + _HOUR)


ROLLUP_WINDOW_HOURS = 24
"""Longest window rolled up per scan: bounds the per-second and histogram arrays. [hours]"""
ROLLUP_WINDOW_ROWS = 500_000
"""Row budget of one window: bounds the rows, spans and sweep arrays held at once, so the roll-up's
memory stays flat as the rows per day grow (an hour with more rows is a window of its own). [rows]"""
ROLLUP_WINDOW_CELLS = 1 << 20
"""Budget of seconds × (models + 1) per window: bounds the per-second arrays of the busiest second
and the in-flight sweep (8 MiB each) when there are many models; 3 models keep 24-hour windows,
300 models get 1-hour windows. [cells]"""
_BATCH_ROWS = 1 << 19
_EPOCH = datetime(1970, 1, 1)


def _hour_epoch(ts: datetime) -> int:
    """Hours since the epoch of the hour holding ``ts`` (floor). [hours]"""
    return int((ts - _EPOCH) // _HOUR)


def _windows(con: duckdb.DuckDBPyConnection, start_utc: datetime, end_utc: datetime, n_models: int
             ) -> list[tuple[datetime, datetime]]:
    """``[start_utc, end_utc)`` cut into windows by :func:`~capplan.profile_rollup.plan_windows`.

    A window holds at most ``ROLLUP_WINDOW_HOURS`` hours, fewer with many models so that the
    per-second arrays (seconds × models) stay within ``ROLLUP_WINDOW_CELLS``, and about
    ``ROLLUP_WINDOW_ROWS`` rows.
    """
    if start_utc >= end_utc:
        return []
    first_hour = _hour_epoch(start_utc)
    hour_rows = np.zeros(_ceil_hour_epoch(end_utc) - first_hour, np.int64)
    counts = con.execute(sql.load("int_profile_hour_rows"), _rollup_params(start_utc, end_utc)).fetchnumpy()
    hour_rows[counts["hour_epoch"] - first_hour] = counts["rows"]
    max_hours = max(1, min(ROLLUP_WINDOW_HOURS, ROLLUP_WINDOW_CELLS // (S_PER_HOUR * (n_models + 1))))
    bounds = [(_EPOCH + (first_hour + a) * _HOUR, _EPOCH + (first_hour + b) * _HOUR)
              for a, b in plan_windows(hour_rows, max_hours, ROLLUP_WINDOW_ROWS)]
    return [(max(a, start_utc), min(b, end_utc)) for a, b in bounds]


def _ceil_hour_epoch(ts: datetime) -> int:
    """Hours since the epoch of the first hour boundary at or after ``ts``. [hours]"""
    return -int(-(ts - _EPOCH) // _HOUR)


def _epoch_us(ts: datetime) -> int:
    """Microseconds since the epoch of a naive UTC datetime. [µs]"""
    return (ts - _EPOCH) // timedelta(microseconds=1)


def _roll_up(con: duckdb.DuckDBPyConnection, start_utc: datetime, end_utc: datetime, *, lookback_us: int,
             in_flight: bool) -> Iterable[WindowRollup]:
    """One :class:`~capplan.profile_rollup.WindowRollup` per window of ``profile_source``'s rows in ``[start, end)``.

    Windows are contiguous (:func:`_windows`, sized from the rows per hour,
    ``sql/int_profile_hour_rows.sql``). Each is one streamed scan (``sql/int_profile_rows.sql``); a
    table stored in arrival order skips the other windows' row groups by their min/max timestamps.
    With ``in_flight`` only the first window reads the ``lookback_us`` before it: each later one
    carries in the spans still open at its start from the window before.
    """
    models = [r[0] for r in con.execute(
        "select distinct model from profile_source where ts_utc >= $start_utc::timestamp - to_microseconds($lookback_us)"
        " and ts_utc < $end_utc order by model",
        _rollup_params(start_utc, end_utc) | {"lookback_us": lookback_us}).fetchall()]
    inv_ln_gamma = 1 / math.log(HISTOGRAM_GAMMA)
    create_macros(con)  # the status classes use sli_valid/sli_success; con may be any connection
    query = sql.load("int_profile_rows")
    carried = None
    for start, end in _windows(con, start_utc, end_utc, len(models)):
        first_hour = _hour_epoch(start)
        rollup = WindowRollup(first_hour, _ceil_hour_epoch(end) - first_hour, models, inv_ln_gamma,
                              in_flight=in_flight, arrivals_from_us=_epoch_us(start), carried_spans=carried)
        reach_us = lookback_us if carried is None else 0
        params = _rollup_params(start, end) | {"lookback_us": reach_us, "models": models}
        for batch in con.sql(query, params=params).to_arrow_reader(_BATCH_ROWS):
            rollup.add(batch)
        if in_flight:
            carried = rollup.open_spans(_epoch_us(end))
        yield rollup


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
            merged[table] = con.sql(sql.load(query)).to_arrow_table()
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
        "select count(*) from information_schema.tables where table_name = 'requests' "  # a view (capplan ingest)
        "and table_schema = 'main' and table_catalog = current_database()").fetchall()[0][0]
    if not found:
        raise ProfileError("the database has no 'requests' table: run `capplan ingest` first")


def _floor_hour(ts: datetime) -> datetime:
    return ts.replace(minute=0, second=0, microsecond=0)


ROLLUP_MEMORY_LIMIT_MIB = 256
"""DuckDB ``memory_limit`` held during a refresh [MiB]: DuckDB keeps every block a scan reads until
the limit (80 % of RAM by default), so without it a full rebuild's memory grows with the table."""


def refresh_rollups(
    con: duckdb.DuckDBPyConnection,
    *,
    hours: Iterable[datetime] | None = None,
    full: bool = False,
    transaction: bool = True,
    memory_limit_mib: float | None = ROLLUP_MEMORY_LIMIT_MIB,
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
    transaction : bool
        Run in a transaction of its own. Pass ``False`` when the caller already holds one (an ingest
        that refreshes before it commits): DuckDB has no nested transactions, and a refused
        ``begin`` would abort the caller's.
    memory_limit_mib : float, optional
        DuckDB memory cap while refreshing (a lower limit already set is kept; ``None``: DuckDB's own
        setting). With it and windows of ``ROLLUP_WINDOW_ROWS`` rows, peak memory stays flat as the
        table grows. [MiB]

    Returns
    -------
    int
        Number of hours recomputed. [hours]
    """
    _require_requests(con)
    ensure_tables(con)
    with memory_capped(con, memory_limit_mib):
        if not transaction:
            return _refresh(con, hours=hours, full=full)
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
    """Replace the rollup rows of each run of hours by a fresh roll-up of ``requests``.

    A window's tables (the in-flight sweep above all) are built on a second thread while this one
    scans and counts the next window: DuckDB and numpy's array loops release the GIL. The scan stays
    on ``con``, so it sees the caller's uncommitted rows.
    """
    _use_source(con, "requests")
    lookback_us = math.ceil(con.execute("select coalesce(max(latency_ms), 0) from requests").fetchall()[0][0] * 1000)
    buffer = _InsertBuffer(con)
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending: list[Future] = []
        for start_utc, end_utc in runs:
            for table in ROLLUP_TABLES:
                con.execute(f"delete from {table} where hour_utc >= $start_utc and hour_utc < $end_utc",  # noqa: S608
                            _rollup_params(start_utc, end_utc))
            for rollup in _roll_up(con, start_utc, end_utc, lookback_us=lookback_us, in_flight=True):
                pending.append(pool.submit(_window_tables, rollup))
                if len(pending) > 1:  # at most two windows in memory
                    buffer.add(pending.pop(0).result())
        for done in pending:
            buffer.add(done.result())
    buffer.flush()


def _window_tables(rollup: WindowRollup) -> dict[str, pa_arrow.Table]:
    return {"fct_traffic_hourly": rollup.traffic(ALL_MODELS), "fct_histogram_hourly": rollup.histogram(ALL_MODELS),
            "fct_concurrency_hourly": rollup.concurrency(ALL_MODELS)}


class _InsertBuffer:
    """Window tables gathered and inserted together: one ``insert`` per table per ~``ROWS`` rows.

    Small windows make many small tables; DuckDB appends one large batch for about half the cost
    of thirty small ones (measured on 3 M histogram rows: 0.23 s against 0.51 s).
    """

    ROWS = 1_000_000  # histogram rows gathered before an insert: ~40 MB of Arrow [rows]

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.parts, self.rows = con, [], 0

    def add(self, tables: dict[str, pa_arrow.Table]) -> None:
        self.parts.append(tables)
        self.rows += tables["fct_histogram_hourly"].num_rows
        if self.rows >= self.ROWS:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            for table in ROLLUP_TABLES:
                _insert(self.con, table, pa_arrow.concat_tables([part[table] for part in self.parts]))
        self.parts, self.rows = [], 0


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: pa_arrow.Table) -> None:
    con.register("profile_window", rows)
    try:
        con.execute(f"insert into {table} select * from profile_window")  # noqa: S608 - fixed table names
    finally:
        con.unregister("profile_window")


def _fresh(con: duckdb.DuckDBPyConnection) -> None:
    """Refresh the rollups before reading; a read-only connection reads them as last refreshed."""
    try:
        refresh_rollups(con)
    except duckdb.Error as exc:
        if "read-only" not in str(exc).lower():
            raise
        present = con.execute(
            "select count(*) from duckdb_tables() where table_name = 'fct_traffic_hourly'").fetchall()[0][0]
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


# --------------------------------------------------------------------------- periods


class PeriodTraffic(pa.DataFrameModel):
    """One local day or week of one model (or ``"__all__"``)."""

    period_start_local: Series[pd.Timestamp] = pa.Field(description="Local midnight starting the period.")
    model: Series[str]
    requests: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="[requests]")
    observed_hours: Series[int] = pa.Field(ge=0, description="Hours with a request count. [hours]")
    gap_hours: Series[int] = pa.Field(ge=0, description="Hours without rows. [hours]")
    avg_qps: Series[float] = pa.Field(ge=0, nullable=True, description="Over observed hours. [requests/s]")
    peak_hour_qps: Series[float] = pa.Field(ge=0, nullable=True, description="Busiest hour / 3600. [requests/s]")
    peak_second_qps: Series[float] = pa.Field(ge=0, nullable=True, description="Busiest second. [requests/s]")
    peak_hour_to_avg: Series[float] = pa.Field(ge=1, nullable=True, description="[ratio]")
    peak_second_to_avg: Series[float] = pa.Field(ge=0, nullable=True, description="[ratio]")
    busiest_hour_of_day: Series[pd.Int64Dtype] = pa.Field(
        ge=0, le=23, nullable=True, description="Local hour of the busiest hour. [0-23]")
    busiest_day_of_week: Series[pd.Int64Dtype] = pa.Field(
        ge=1, le=7, nullable=True, description="ISO day of the busiest day, 1 = Monday. [1-7]")

    class Config:
        coerce = True
        strict = True


class TypicalWeek(pa.DataFrameModel):
    """168 hour-of-week factors per model (0 = Monday 00:00 local)."""

    model: Series[str]
    hour_of_week: Series[int] = pa.Field(ge=0, le=167)
    observed_hours: Series[int] = pa.Field(ge=0, description="Hours averaged. [hours]")
    avg_qps: Series[float] = pa.Field(ge=0, nullable=True, description="[requests/s]")
    factor: Series[float] = pa.Field(ge=0, nullable=True, description="Mean of this hour / mean of all. [ratio]")

    class Config:
        coerce = True
        strict = True


def _check_tz(tz: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"tz must be an IANA time zone such as 'UTC' or 'Europe/Berlin', got {tz!r}") from None


def _on_hourly(con: duckdb.DuckDBPyConnection, hourly: pd.DataFrame, query: str, params: dict) -> pd.DataFrame:
    """Run a report query over an hourly frame registered as ``profile_hourly``."""
    con.register("profile_hourly", hourly)
    try:
        return con.execute(sql.load(query), params).df()
    finally:
        con.unregister("profile_hourly")


def _period_traffic(con, grain, model, since, tz, empty_hours) -> pd.DataFrame:
    _check_tz(tz)
    hourly = hourly_traffic(con, model, since, empty_hours=empty_hours)
    frame = _on_hourly(con, hourly, "rpt_period_traffic", {"grain": grain, "tz": tz})
    return _validate(frame, PeriodTraffic)


def daily_traffic(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    since: date | datetime | str | None = None,
    *,
    tz: str = "UTC",
    empty_hours: str = "missing",
) -> DataFrame[PeriodTraffic]:
    """Traffic per local day (in ``tz``) and model: average, peak-hour and peak-second QPS and ratios.

    ``peak_hour_to_avg = peak_hour_qps / avg_qps`` and ``peak_second_to_avg = peak_second_qps /
    avg_qps``; ``avg_qps`` is over observed hours (a DST day has 23 or 25 of them). Arguments as in
    :func:`hourly_traffic`; ``tz`` is an IANA zone.
    """
    return _period_traffic(con, "day", model, since, tz, empty_hours)


def weekly_traffic(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    since: date | datetime | str | None = None,
    *,
    tz: str = "UTC",
    empty_hours: str = "missing",
) -> DataFrame[PeriodTraffic]:
    """Traffic per local ISO week (Monday start, in ``tz``) and model; columns as :func:`daily_traffic`."""
    return _period_traffic(con, "week", model, since, tz, empty_hours)


def typical_week(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    since: date | datetime | str | None = None,
    *,
    tz: str = "UTC",
) -> DataFrame[TypicalWeek]:
    """168 hourly factors per model: mean requests in each local hour of the week / overall mean.

    Gap hours are left out of both means; an hour of the week never observed has a null factor.
    """
    _check_tz(tz)
    hourly = hourly_traffic(con, model, since, empty_hours="missing")
    return _validate(_on_hourly(con, hourly, "rpt_typical_week", {"tz": tz}), TypicalWeek)


# --------------------------------------------------------------------------- distributions


class TokenDistribution(pa.DataFrameModel):
    """Token lengths per period and model, percentiles from merged log-binned histograms."""

    period_start_utc: Series[pd.Timestamp] = pa.Field(description="Start of the UTC period.")
    model: Series[str]
    requests: Series[int] = pa.Field(ge=0, description="[requests]")
    input_tokens_mean: Series[float] = pa.Field(ge=0, description="Exact, from sums. [tokens]")
    input_tokens_p50: Series[float] = pa.Field(ge=0, description="[tokens]")
    input_tokens_p90: Series[float] = pa.Field(ge=0, description="[tokens]")
    input_tokens_p99: Series[float] = pa.Field(ge=0, description="[tokens]")
    output_tokens_mean: Series[float] = pa.Field(ge=0, description="Exact, from sums. [tokens]")
    output_tokens_p50: Series[float] = pa.Field(ge=0, description="[tokens]")
    output_tokens_p90: Series[float] = pa.Field(ge=0, description="[tokens]")
    output_tokens_p99: Series[float] = pa.Field(ge=0, description="[tokens]")

    class Config:
        coerce = True
        strict = True


class Histogram(pa.DataFrameModel):
    """Log-binned histogram of one metric per period and model (sparse: empty bins are absent)."""

    period_start_utc: Series[pd.Timestamp]
    model: Series[str]
    bin_lo: Series[float] = pa.Field(ge=0, description="Inclusive lower edge, in the metric's unit.")
    bin_hi: Series[float] = pa.Field(gt=0, description="Exclusive upper edge, in the metric's unit.")
    count: Series[int] = pa.Field(gt=0, description="[requests]")

    class Config:
        coerce = True
        strict = True


_TOKEN_QUANTILES = (0.5, 0.9, 0.99)


def _quantiles(con, metrics: Sequence[str], quantiles: Sequence[float], grain: str, model, since) -> pd.DataFrame:
    """Long frame period_start_utc, model, metric, q, value, count from the merged histograms."""
    return con.execute(sql.load("rpt_histogram_quantiles"), {
        "grain": grain, "model": model, "since_utc": _since(since), "metrics": list(metrics),
        "quantiles": list(quantiles), "gamma": HISTOGRAM_GAMMA,
    }).df()


def _wide_quantiles(long: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """Pivot to one column per metric and quantile: ``<metric>_p<100 q>``."""
    long = long.assign(column=long["metric"] + "_p" + (long["q"] * 100).round().astype(int).astype(str))
    wide = long.pivot_table(index=["period_start_utc", "model"], columns="column", values="value",
                            dropna=False).reset_index()
    return wide.reindex(columns=["period_start_utc", "model", *names])


def token_distribution(
    con: duckdb.DuckDBPyConnection,
    grain: str = "day",
    model: str | None = None,
    since: date | datetime | str | None = None,
) -> DataFrame[TokenDistribution]:
    """Mean, p50, p90 and p99 of input and output tokens per UTC period and model (and ``__all__``).

    Percentiles come from the hourly log-binned histograms summed over the period, never from
    averaged percentiles: each is within ``HISTOGRAM_RELATIVE_ERROR`` (≈ 0.99 %) of the exact
    ``ceil(q·n)``-th smallest value. Means are exact (token sums / requests).

    Parameters
    ----------
    grain : {"hour", "day", "week", "month"}
        Period length; weeks start on Monday, all in UTC.
    """
    _check_choice("grain", grain, GRAINS)
    _fresh(con)
    long = _quantiles(con, ("input_tokens", "output_tokens"), _TOKEN_QUANTILES, grain, model, since)
    names = [f"{m}_p{round(q * 100)}" for m in ("input_tokens", "output_tokens") for q in _TOKEN_QUANTILES]
    wide = _wide_quantiles(long, names)
    sums = con.execute(sql.load("rpt_period_token_sums"),
                       {"grain": grain, "model": model, "since_utc": _since(since)}).df()
    frame = sums.merge(wide, on=["period_start_utc", "model"], how="inner")
    frame["input_tokens_mean"] = frame["input_tokens_sum"] / frame["requests"]
    frame["output_tokens_mean"] = frame["output_tokens_sum"] / frame["requests"]
    columns = list(TokenDistribution.to_schema().columns)
    return _validate(frame[columns].sort_values(["model", "period_start_utc"], ignore_index=True),
                     TokenDistribution)


def histograms(
    con: duckdb.DuckDBPyConnection,
    metric: str,
    grain: str = "week",
    model: str | None = None,
    since: date | datetime | str | None = None,
) -> DataFrame[Histogram]:
    """Sparse histogram of ``metric`` per UTC period and model: bins ``[bin_lo, bin_hi)`` and counts.

    Parameters
    ----------
    metric : {"input_tokens", "output_tokens", "ttft_ms", "latency_ms"}
        Tokens in [tokens], times in [ms]. Bin ``[0, 1)`` holds zeros; above it edges grow by
        ``HISTOGRAM_GAMMA``. The same edges in every period, so periods compare bin by bin.
    grain : {"hour", "day", "week", "month"}
    """
    _check_choice("metric", metric, METRICS)
    _check_choice("grain", grain, GRAINS)
    _fresh(con)
    frame = con.execute(sql.load("rpt_histograms"), {
        "metric": metric, "grain": grain, "model": model, "since_utc": _since(since), "gamma": HISTOGRAM_GAMMA,
    }).df()
    return _validate(frame, Histogram)


# --------------------------------------------------------------------------- SLI


class HourlySli(pa.DataFrameModel):
    """Request-based SLI per UTC hour and model (and ``__all__``)."""

    hour_utc: Series[pd.Timestamp]
    model: Series[str]
    valid_events: Series[int] = pa.Field(ge=0, description="All rows but 4xx other than 408 and 429 (sli_valid). [requests]")
    good_events: Series[int] = pa.Field(ge=0, description="2xx with TTFT <= threshold. [requests]")
    success_rate: Series[float] = pa.Field(ge=0, le=1, nullable=True, description="2xx / valid. [fraction]")
    good_fraction: Series[float] = pa.Field(ge=0, le=1, nullable=True, description="good / valid. [fraction]")
    ttft_p50_ms: Series[float] = pa.Field(ge=0, nullable=True, description="From histograms. [ms]")
    ttft_p95_ms: Series[float] = pa.Field(ge=0, nullable=True, description="[ms]")
    ttft_p99_ms: Series[float] = pa.Field(ge=0, nullable=True, description="[ms]")

    class Config:
        coerce = True
        strict = True


_TTFT_QUANTILES = (0.5, 0.95, 0.99)


def hourly_sli(
    con: duckdb.DuckDBPyConnection,
    ttft_threshold_ms: float,
    model: str | None = None,
    since: date | datetime | str | None = None,
) -> DataFrame[HourlySli]:
    """Valid and good events, success rate and TTFT percentiles per UTC hour and model.

    Parameters
    ----------
    ttft_threshold_ms : float
        A 2xx request is good if its TTFT is at most this. [ms]

    Notes
    -----
    * Success is a 2xx status. Valid events are all requests except 4xx client errors other than
      408 and 429 (the SLO stage's rule, ``sql/ddl_macro_sli_valid.sql``): a malformed request is the
      client's fault; a 408 (generation overran) and a 429 (our lack of capacity) count, and are bad.
    * A 2xx without TTFT logged counts as good (nothing shows it was slow).
    * Good events are counted exactly from the raw rows (the threshold is a parameter); the TTFT
      percentiles come from the histograms of all rows with TTFT, within ``HISTOGRAM_RELATIVE_ERROR``.
    """
    if not ttft_threshold_ms > 0:
        raise ValueError(f"ttft_threshold_ms must be > 0, got {ttft_threshold_ms!r}")
    _fresh(con)
    counts = con.execute(sql.load("rpt_hourly_sli"), {
        "ttft_threshold_ms": ttft_threshold_ms, "model": model, "since_utc": _since(since)}).df()
    long = _quantiles(con, ("ttft_ms",), _TTFT_QUANTILES, "hour", model, since)
    wide = _wide_quantiles(long, [f"ttft_ms_p{round(q * 100)}" for q in _TTFT_QUANTILES])
    wide = wide.rename(columns={f"ttft_ms_p{round(q * 100)}": f"ttft_p{round(q * 100)}_ms" for q in _TTFT_QUANTILES})
    frame = counts.merge(wide.rename(columns={"period_start_utc": "hour_utc"}), on=["hour_utc", "model"], how="left")
    return _validate(frame.sort_values(["model", "hour_utc"], ignore_index=True), HourlySli)


# --------------------------------------------------------------------------- summary


def _num(value: Any) -> float | int | None:
    """A JSON-friendly number: NaN/NA become None, numpy scalars plain Python."""
    if value is None or pd.isna(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _token_stats(con, model, since) -> dict[str, dict[str, dict[str, float | None]]]:
    """{model: {"input_tokens": {mean, p50, p90, p99}, "output_tokens": {...}}} over the whole window."""
    long = _quantiles(con, ("input_tokens", "output_tokens"), _TOKEN_QUANTILES, "all", model, since)
    sums = con.execute(sql.load("rpt_period_token_sums"),
                       {"grain": "all", "model": model, "since_utc": _since(since)}).df()
    stats: dict[str, dict] = {}
    for row in sums.itertuples():
        stats[row.model] = {"requests": int(row.requests)}
        for metric in ("input_tokens", "output_tokens"):
            mine = long[(long["model"] == row.model) & (long["metric"] == metric)]
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

    Keys
    ----
    ``scope`` (the model, or ``"__all__"``), ``span_start`` / ``span_end`` (ISO UTC, end exclusive),
    ``hours``, ``gap_hours`` [hours], ``total_requests`` [requests], ``avg_qps`` (over observed hours),
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
    avg_qps = total / (len(observed) * 3600) if len(observed) and total else None
    peak_hour_qps = _num(observed["avg_qps"].max()) if len(observed) else None
    peak_second_qps = _num(observed["peak_second_qps"].max()) if len(observed) else None
    tokens = _token_stats(con, model, since)
    sli = hourly_sli(con, ttft_threshold_ms, scope, since)
    ttft = _quantiles(con, ("ttft_ms",), _TTFT_QUANTILES, "all", scope, since)
    valid, good = int(sli["valid_events"].sum()), int(sli["good_events"].sum())
    success = float((sli["success_rate"].fillna(0) * sli["valid_events"]).sum())
    empty_tokens = {"mean": None, **{f"p{round(q * 100)}": None for q in _TOKEN_QUANTILES}}
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
            **{f"ttft_p{round(q * 100)}_ms": None for q in _TTFT_QUANTILES},
            **{f"ttft_p{round(q * 100)}_ms": _num(v) for q, v in zip(ttft["q"], ttft["value"], strict=True)},
        },
    }
