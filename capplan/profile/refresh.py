"""The write path of the traffic profile: roll raw request rows up into the hourly tables.

Raw rows are rolled up once into per-hour tables (``sql/ddl_profile.sql``):

* ``fct_traffic_hourly``: counts, token and time sums, busiest second, per UTC hour and model;
* ``fct_histogram_hourly``: sparse log-binned histograms of input/output tokens, TTFT and latency (a
  view of ``fct_histogram_hourly_bins``, which stores each hour, model and metric's bins and counts as
  lists of codes);
* ``fct_concurrency_hourly``: peak requests in flight (a sweep over ``[arrival, arrival + latency)``).

:func:`refresh_rollups` recomputes only the hours touched by files that appeared, changed or
vanished since the last refresh. It is an explicit step: ``capplan ingest`` runs it after loading,
the plan's flow before reading, ``capplan profile --refresh`` on demand; readers never write.

The mergeable contract (:func:`rollup_partition`, :func:`merge_rollups`): a partition of raw rows
rolls up on its own, and summing counts, sums and bins (max of the busiest second) over partitions
gives exactly the single-process tables, provided partitions hold whole hours (whole days, say).
The concurrency sweep is not part of it (a request in flight across a partition boundary is seen by
one side only).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

import duckdb
import numpy as np
import pyarrow as arrow

from capplan import sql
from capplan.db import create_macros, memory_capped
from capplan.profile.bins import HISTOGRAM_GAMMA
from capplan.profile.counting import (
    ALL_MODELS,
    CONCURRENCY_SCHEMA,
    HISTOGRAM_SCHEMA,
    METRICS,
    S_PER_HOUR,
    TRAFFIC_SCHEMA,
    WindowRollup,
    code_columns,
    plan_windows,
    sparse_sweep_max_hours,
)
from capplan.profile.exposure import EPOCH, epoch_us
from capplan.profile.freshness import (ROLLUP_VERSION, changed_file_ids, has_file_rollups, record_rollup_version,
                                       require_requests, stored_rollup_version)

ROLLUP_TABLES = ("fct_traffic_hourly", "fct_histogram_hourly", "fct_concurrency_hourly")
"""The roll-ups a refresh writes, by the names readers read (``sql/ddl_profile.sql``)."""
_STORED_AS = {"fct_traffic_hourly": "fct_traffic_hourly", "fct_histogram_hourly": "fct_histogram_hourly_bins",
              "fct_concurrency_hourly": "fct_concurrency_hourly"}
"""Roll-up -> the table its rows are stored in: the histograms' bins as lists (the view
``fct_histogram_hourly`` shows them one row per bin)."""
_DELETE_HOURS_SQL = {"fct_traffic_hourly": "fct_profile_delete_traffic_hours",
                     "fct_histogram_hourly": "fct_profile_delete_histogram_hours",
                     "fct_concurrency_hourly": "fct_profile_delete_concurrency_hours"}
_MERGE_SQL = {"fct_traffic_hourly": "int_profile_merge_traffic", "fct_histogram_hourly": "int_profile_merge_histogram"}
_HOUR = timedelta(hours=1)
_SOURCE_VIEW = "profile_source"

ROLLUP_WINDOW_HOURS = 25
"""Longest window rolled up per scan: bounds the per-second and histogram arrays. A day and the hour
after it: a day's file ingested dirties its 24 hours and the hour its last requests are still in flight
(latencies below an hour), and its refresh is then one scan, not two. [hours]"""
ROLLUP_WINDOW_ROWS = 500_000
"""Row budget of one window: bounds the rows, spans and sweep arrays held at once, so the roll-up's
memory stays flat as the rows per day grow (an hour with more rows is a window of its own). [rows]"""
ROLLUP_WINDOW_CELLS = 1 << 20
"""Budget of seconds × (models + 1) of a window counted densely (``WindowRollup(dense=True)``): bounds
its per-second arrays of the busiest second and the in-flight sweep (8 MiB each). 3 models keep
25-hour windows; with more models windows shorten, down to ``DENSE_MIN_HOURS``; beyond that (more
than 71 models) windows of up to ``ROLLUP_WINDOW_HOURS`` are counted sparsely, by sorting, in memory
and time that grow with the rows, not with the models. [cells]"""
ROLLUP_THIN_ROWS = 30_000
"""A window of fewer rows is thin: thin windows in a row join into one window of up to ``ROLLUP_WINDOW_ROWS``
rows (:func:`~capplan.profile.counting.plan_windows`), counted sparsely once longer than a dense window may be.
Each window has a fixed cost whatever its rows (a query, an Arrow reader, its tables), which dominates
a window of few rows; sparse counting costs more per row than dense (docs/profile.md). [rows]"""
DENSE_MIN_HOURS = 4
"""Shortest window counted densely: with more models, counting sparsely is cheaper than scanning in
ever shorter windows. [hours]"""
_MODELS_VIEW = "profile_models"
_HISTOGRAM_ROWS_VIEW = "profile_histogram_rows"
ROLLUP_MEMORY_LIMIT_MIB = 256
"""DuckDB ``memory_limit`` held during a refresh [MiB]: DuckDB keeps every block a scan reads until
the limit (80 % of RAM by default), so without it a full rebuild's memory grows with the table."""
_BATCH_ROWS = 1 << 19
# Above ROLLUP_WINDOW_ROWS, so a window (busiest single hours aside) is one Arrow batch and its float sums are
# added in one order however the hours are cut into windows: the rebuild-vs-refresh and joined-window tests
# compare those sums exactly.
assert _BATCH_ROWS >= ROLLUP_WINDOW_ROWS


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the rollup tables if they do not exist (``sql/ddl_profile.sql``).

    A database written by an earlier capplan stores the histograms in an older layout: it is migrated in
    place first, in one transaction (the caller's if one is open), its bins stored in
    ``fct_histogram_hourly_bins`` as codes (the same bins and counts):

    * ``fct_histogram_hourly`` a table of one row per bin (before the bins were stored as lists): renamed
      (``sql/ddl_profile_migrate_histogram.sql``), packed (``sql/int_profile_pack_histogram.sql``), dropped; the
      view takes its name;
    * ``fct_histogram_hourly_bins`` with two lists per metric, bins and counts (before each bin and its count
      were one code): its view dropped, renamed (``sql/ddl_profile_migrate_histogram_lists.sql``), each row's
      lists turned into codes (``sql/int_profile_histogram_lists_as_codes.sql``), dropped.
    """
    rows_table = con.execute(sql.load("int_profile_histogram_is_table")).fetchall()[0][0]
    two_lists = not rows_table and con.execute(sql.load("int_profile_histogram_is_lists")).fetchall()[0][0]
    if not (rows_table or two_lists):
        con.execute(sql.load("ddl_profile"))
        return
    try:
        con.begin()
        own = True
    except duckdb.TransactionException:  # already in the caller's: the migration commits or rolls back with it
        own = False
    try:
        if rows_table:
            con.execute(sql.load("ddl_profile_migrate_histogram"))
            con.execute(sql.load("ddl_profile"))
            con.sql(sql.load("int_profile_pack_histogram")).insert_into(_STORED_AS["fct_histogram_hourly"])
            con.execute(sql.load("ddl_profile_drop_histogram_rows_table"))
        else:
            con.execute(sql.load("ddl_profile_drop_histogram_view"))
            con.execute(sql.load("ddl_profile_migrate_histogram_lists"))
            con.execute(sql.load("ddl_profile"))
            con.sql(sql.load("int_profile_histogram_lists_as_codes")).insert_into(_STORED_AS["fct_histogram_hourly"])
            con.execute(sql.load("ddl_profile_drop_histogram_lists_table"))
        if own:
            con.commit()
    except BaseException:
        if own:
            con.rollback()
        raise


def store_histogram_rows(con: duckdb.DuckDBPyConnection, rows: duckdb.DuckDBPyRelation | arrow.Table | Any) -> None:
    """Append rows in the shape of ``fct_histogram_hourly`` (one per bin: a partition merge, a metrics
    chunk) to ``fct_histogram_hourly_bins``, packed per hour, model and metric (``sql/int_profile_pack_histogram.sql``).
    ``rows``: a relation on ``con``, an Arrow table or a pandas frame. The caller has deleted those hours' rows first."""
    relation = isinstance(rows, duckdb.DuckDBPyRelation)
    if relation:
        rows.create_view(_HISTOGRAM_ROWS_VIEW, replace=True)
    else:  # a Python object: registered for this connection only (a view could not store it)
        con.register(_HISTOGRAM_ROWS_VIEW, rows)
    try:
        con.sql(sql.load("int_profile_pack_histogram")).insert_into(_STORED_AS["fct_histogram_hourly"])
    finally:
        if relation:
            con.execute(sql.load("ddl_profile_drop_histogram_rows"))
        else:
            con.unregister(_HISTOGRAM_ROWS_VIEW)


# --------------------------------------------------------------------------- mergeable contract


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


def _rollup_params(start_utc: datetime | None, end_utc: datetime | None) -> dict[str, Any]:
    return {"start_utc": start_utc, "end_utc": end_utc}


def rollup_partition(
    con: duckdb.DuckDBPyConnection,
    source: str | os.PathLike | duckdb.DuckDBPyRelation,
    *,
    start_utc: datetime = datetime(1, 1, 1),
    end_utc: datetime = datetime(9999, 1, 1),
    in_flight: bool = False,
) -> dict[str, arrow.Table]:
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
    tables: dict[str, list[arrow.Table]] = {"fct_traffic_hourly": [TRAFFIC_SCHEMA.empty_table()],
                                            "fct_histogram_hourly": [HISTOGRAM_SCHEMA.empty_table()]}
    if in_flight:
        tables["fct_concurrency_hourly"] = [CONCURRENCY_SCHEMA.empty_table()]
    start_utc, end_utc = _data_span(con, start_utc, end_utc)
    if start_utc is not None:
        lookback_us, sweep_end = 0, end_utc
        if in_flight:  # the sweep runs on past end_utc while requests are in flight: arrivals must stop there
            lookback_us, sweep_end = _in_flight_reach(con, start_utc, end_utc)
            _use_source(con, source, before_utc=end_utc)
        for window, _ in _roll_up(con, start_utc, sweep_end, lookback_us=lookback_us, in_flight=in_flight):
            tables["fct_traffic_hourly"].append(window.traffic(ALL_MODELS))
            tables["fct_histogram_hourly"].append(window.histogram(ALL_MODELS))
            if in_flight:
                tables["fct_concurrency_hourly"].append(window.concurrency(ALL_MODELS))
    return {name: arrow.concat_tables(parts) for name, parts in tables.items()}


def _in_flight_reach(con: duckdb.DuckDBPyConnection, start_utc: datetime, end_utc: datetime) -> tuple[int, datetime]:
    """Lookback [µs] (the longest latency) and the end of the hour after the last completion of the
    requests arriving in ``[start_utc, end_utc)``: the reach of their in-flight sweep."""
    longest_ms, last_end = con.execute(sql.load("int_profile_in_flight_reach"),
                                       _rollup_params(start_utc, end_utc)).fetchall()[0]
    sweep_end = end_utc if last_end is None else max(end_utc, _floor_hour(last_end) + _HOUR)
    return math.ceil(longest_ms * 1000), sweep_end


def _data_span(con: duckdb.DuckDBPyConnection, start_utc: datetime, end_utc: datetime
               ) -> tuple[datetime | None, datetime | None]:
    """``[start_utc, end_utc)`` narrowed to the whole hours ``profile_source`` has rows in; ``None`` if none."""
    first, last = con.execute(sql.load("int_profile_data_span"), _rollup_params(start_utc, end_utc)).fetchall()[0]
    if first is None:
        return None, None
    return max(start_utc, _floor_hour(first)), min(end_utc, _floor_hour(last) + _HOUR)


def merge_rollups(con: duckdb.DuckDBPyConnection, parts: Iterable[dict[str, arrow.Table]]) -> dict[str, arrow.Table]:
    """Merge partition rollups: sum counts, sums and bins; max of the busiest second per hour.

    The result equals :func:`rollup_partition` over the union of the partitions' rows when every UTC
    hour lies wholly in one partition.
    """
    parts = list(parts)
    if not parts:
        raise ValueError("merge_rollups needs at least one partition rollup")
    merged = {}
    for table, query in _MERGE_SQL.items():
        con.register("profile_parts", arrow.concat_tables([p[table] for p in parts]))
        try:
            merged[table] = con.sql(sql.load(query)).to_arrow_table()
        finally:
            con.unregister("profile_parts")
    return merged


# --------------------------------------------------------------------------- windows


def _floor_hour(ts: datetime) -> datetime:
    return ts.replace(minute=0, second=0, microsecond=0)


def _hour_epoch(ts: datetime) -> int:
    """Hours since the epoch of the hour holding ``ts`` (floor). [hours]"""
    return int((ts - EPOCH) // _HOUR)


def _ceil_hour_epoch(ts: datetime) -> int:
    """Hours since the epoch of the first hour boundary at or after ``ts``. [hours]"""
    return -int(-(ts - EPOCH) // _HOUR)


def _windows(con: duckdb.DuckDBPyConnection, start_utc: datetime, end_utc: datetime, n_models: int,
             hour_rows_query: str = "int_profile_hour_rows") -> list[tuple[datetime, datetime]]:
    """``[start_utc, end_utc)`` cut into windows by :func:`~capplan.profile.counting.plan_windows`.

    A window holds at most ``ROLLUP_WINDOW_HOURS`` hours, fewer with a few dozen models so that the
    dense per-second arrays (seconds × models) stay within ``ROLLUP_WINDOW_CELLS`` (many models are
    counted sparsely instead), and about ``ROLLUP_WINDOW_ROWS`` rows. Windows of fewer than
    ``ROLLUP_THIN_ROWS`` rows in a row join into one of up to ``ROLLUP_WINDOW_ROWS`` rows, which
    :func:`_roll_up` counts sparsely once it is longer than a dense window may be. The rows per hour come from
    ``hour_rows_query``: a scan of ``profile_source`` (``sql/int_profile_hour_rows.sql``), or, in a
    refresh, the per-file counts it has just recorded (``sql/int_profile_file_hour_rows.sql``).
    """
    if start_utc >= end_utc:
        return []
    first_hour = _hour_epoch(start_utc)
    hour_rows = np.zeros(_ceil_hour_epoch(end_utc) - first_hour, np.int64)
    counts = con.execute(sql.load(hour_rows_query), _rollup_params(start_utc, end_utc)).fetchnumpy()
    hour_rows[counts["hour_epoch"] - first_hour] = counts["rows"]
    dense_hours = ROLLUP_WINDOW_CELLS // (S_PER_HOUR * (n_models + 1))
    max_hours = min(ROLLUP_WINDOW_HOURS, dense_hours) if dense_hours >= DENSE_MIN_HOURS else ROLLUP_WINDOW_HOURS
    windows = plan_windows(hour_rows, max_hours, ROLLUP_WINDOW_ROWS, thin_rows=ROLLUP_THIN_ROWS,
                           max_thin_hours=sparse_sweep_max_hours(n_models))
    bounds = [(EPOCH + (first_hour + a) * _HOUR, EPOCH + (first_hour + b) * _HOUR) for a, b in windows]
    return [(max(a, start_utc), min(b, end_utc)) for a, b in bounds]


def _roll_up(con: duckdb.DuckDBPyConnection, start_utc: datetime, end_utc: datetime, *, lookback_us: int,
             in_flight: bool, hour_rows_query: str = "int_profile_hour_rows") -> Iterable[tuple[WindowRollup, bool]]:
    """One :class:`~capplan.profile.counting.WindowRollup` per window of ``profile_source``'s rows in ``[start, end)``,
    with whether another window follows (``False`` for the last).

    Windows are contiguous (:func:`_windows`, sized from the rows per hour of ``hour_rows_query``).
    Each is one streamed scan (``sql/int_profile_rows.sql``); a table stored in arrival order skips
    the other windows' row groups by their min/max timestamps.
    With ``in_flight`` only the first window reads the ``lookback_us`` before it: each later one
    carries in the spans still open at its start from the window before.
    """
    models = [r[0] for r in con.execute(sql.load("int_profile_models"),
                                        _rollup_params(start_utc, end_utc) | {"lookback_us": lookback_us}).fetchall()]
    inv_ln_gamma = 1 / math.log(HISTOGRAM_GAMMA)
    create_macros(con)  # the status classes use sli_valid/sli_success; con may be any connection
    query = sql.load("int_profile_rows")
    con.register(_MODELS_VIEW, arrow.table({"model": arrow.array(models, arrow.string()),
                                            "model_index": arrow.array(np.arange(len(models)), arrow.int32())}))
    try:
        carried = None
        windows = _windows(con, start_utc, end_utc, len(models), hour_rows_query)
        for i, (start, end) in enumerate(windows):
            first_hour = _hour_epoch(start)
            n_hours = _ceil_hour_epoch(end) - first_hour
            rollup = WindowRollup(first_hour, n_hours, models, inv_ln_gamma, in_flight=in_flight,
                                  arrivals_from_us=epoch_us(start), carried_spans=carried,
                                  dense=n_hours * S_PER_HOUR * (len(models) + 1) <= ROLLUP_WINDOW_CELLS)
            reach_us = lookback_us if carried is None else 0
            params = _rollup_params(start, end) | {"lookback_us": reach_us}
            for batch in con.sql(query, params=params).to_arrow_reader(_BATCH_ROWS):
                rollup.add(batch)
            if in_flight:
                carried = rollup.open_spans(epoch_us(end))
            yield rollup, i + 1 < len(windows)
    finally:
        con.unregister(_MODELS_VIEW)


def _hour_runs(hours: Iterable[datetime]) -> list[tuple[datetime, datetime]]:
    """Contiguous runs ``[start, end)`` of whole hours, so each run is one range query."""
    runs: list[list[datetime]] = []
    for h in sorted(set(hours)):
        if runs and h == runs[-1][1]:
            runs[-1][1] = h + _HOUR
        else:
            runs.append([h, h + _HOUR])
    return [(a, b) for a, b in runs]


# --------------------------------------------------------------------------- refresh


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
    require_requests(con)
    with memory_capped(con, memory_limit_mib):
        ensure_tables(con)  # under the cap: migrating an old histogram table groups all its rows
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
    if stored_rollup_version(con) != ROLLUP_VERSION:
        full = full or has_file_rollups(con)  # file roll-ups of another definition: rebuild them
        record_rollup_version(con)
    if full:
        _delete_hours(con, None, None)
        con.execute(sql.load("fct_profile_delete_file_hours"), {"file_ids": None})
        changed = [r[0] for r in con.execute(sql.load("int_profile_all_files")).fetchall()]
    else:
        changed = changed_file_ids(con)
    dirty = {_floor_hour(h) for h in hours or ()}
    if changed:
        files = {"file_ids": changed}
        dirty |= {r[0] for r in con.execute(sql.load("int_profile_hours_of_files"), files).fetchall()}
        con.execute(sql.load("fct_profile_delete_file_hours"), files)
        con.sql(sql.load("int_profile_file_hours"), params=files).insert_into("profile_file_hours")
        dirty |= {r[0] for r in con.execute(sql.load("int_profile_hours_of_files"), files).fetchall()}
    if not dirty:
        return 0
    runs = [(min(dirty), max(dirty) + _HOUR)] if full else _hour_runs(dirty)
    _recompute(con, runs)
    return len(dirty)


def _delete_hours(con: duckdb.DuckDBPyConnection, start_utc: datetime | None, end_utc: datetime | None) -> None:
    """Drop every roll-up row of the hours ``[start_utc, end_utc)`` (``None``: unbounded)."""
    for table in ROLLUP_TABLES:
        con.execute(sql.load(_DELETE_HOURS_SQL[table]), _rollup_params(start_utc, end_utc))


def _recompute(con: duckdb.DuckDBPyConnection, runs: Sequence[tuple[datetime, datetime]]) -> None:
    """Replace the rollup rows of each run of hours by a fresh roll-up of ``requests``.

    A window's tables (the in-flight sweep above all) are built on a second thread while this one
    scans and counts the next window: DuckDB and numpy's array loops release the GIL. After a run's
    last window there is nothing left to scan: its sweep goes to the second thread and this one builds
    its other tables meanwhile (a one-day refresh is one window: its tables no longer wait one after
    another). The scan stays on ``con``, so it sees the caller's uncommitted rows.
    """
    _use_source(con, "requests")
    buffer = _InsertBuffer(con)
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending: list[Callable[[], dict[str, arrow.Table]]] = []  # each window's tables, in order
        for start_utc, end_utc in runs:
            _delete_hours(con, start_utc, end_utc)
            # the requests still in flight at the run's start: read back over their files' longest latency
            lookback_us = math.ceil(con.execute(sql.load("int_profile_lookback"),
                                                {"start_utc": start_utc}).fetchall()[0][0] * 1000)
            for rollup, more in _roll_up(con, start_utc, end_utc, lookback_us=lookback_us, in_flight=True,
                                         hour_rows_query="int_profile_file_hour_rows"):  # recorded just before
                pending.append(pool.submit(_window_tables, rollup).result if more else _split_tables(pool, rollup))
                if len(pending) > 1:  # at most two windows in memory
                    buffer.add(pending.pop(0)())
        for done in pending:
            buffer.add(done())
    buffer.flush()


def _window_tables(rollup: WindowRollup) -> dict[str, arrow.Table]:
    return {"fct_traffic_hourly": rollup.traffic(ALL_MODELS), "fct_histogram_hourly": rollup.histogram_bins(ALL_MODELS),
            "fct_concurrency_hourly": rollup.concurrency(ALL_MODELS)}


def _split_tables(pool: ThreadPoolExecutor, rollup: WindowRollup) -> Callable[[], dict[str, arrow.Table]]:
    """A window's tables built on two threads at once: the in-flight sweep on ``pool``, the others on this one.
    They share no state: the sweep reads the spans only (joined by ``open_spans`` before the window is yielded),
    the other tables the counts."""
    sweep = pool.submit(rollup.concurrency, ALL_MODELS)
    tables = {"fct_traffic_hourly": rollup.traffic(ALL_MODELS), "fct_histogram_hourly": rollup.histogram_bins(ALL_MODELS)}
    return lambda: tables | {"fct_concurrency_hourly": sweep.result()}


class _InsertBuffer:
    """Window tables gathered and inserted together: one ``insert`` per table per ~``ROWS`` bins.

    Small windows make many small tables; DuckDB appends one large batch for about half the cost
    of thirty small ones (docs/profile.md). Histograms come packed (``fct_histogram_hourly_bins``).
    """

    ROWS = 1_000_000  # histogram bins gathered before an insert: ~12 MB of Arrow [bins]

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.parts, self.rows = con, [], 0

    def add(self, tables: dict[str, arrow.Table]) -> None:
        self.parts.append(tables)
        packed = tables["fct_histogram_hourly"]
        self.rows += sum(len(packed.column(name).combine_chunks().flatten())
                         for metric in METRICS for name in code_columns(metric))
        if self.rows >= self.ROWS:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            for table in ROLLUP_TABLES:
                # a table of _STORED_AS, passed as a name to DuckDB's append, never formatted into SQL
                rows = arrow.concat_tables([part[table] for part in self.parts])
                self.con.from_arrow(rows).insert_into(_STORED_AS[table])
        self.parts, self.rows = [], 0
