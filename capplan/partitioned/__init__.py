"""Partitioned roll-ups: build the traffic profile without one process reading every raw row.

Raw logs that live as Hive-partitioned files (``root/dt=YYYY-MM-DD/part-*.parquet``), or as
plain file lists, are rolled up one partition at a time, each on its own DuckDB:

1. :func:`discover_partitions` lists a source's partitions (a ``dt=`` folder, or one file) with a
   fingerprint of their files (name, size, mtime); :func:`pending_partitions` keeps those the
   central ledger has not rolled up with that fingerprint (new or changed partitions).
2. :func:`roll_up_partition` runs where the data is (a Dask worker, or this process): it loads the
   partition's files into a private in-memory DuckDB with the ingest's own rules
   (:func:`capplan.ingest.load_file`, ``sql/stg_requests.sql``), rolls them up with the profile's
   mergeable contract (:func:`capplan.profile.rollup_partition`) and returns only small tables:
   hourly traffic rows, histogram bins, peak in flight per hour, the plan's measured inputs, SLO
   and drift roll-ups (:data:`PLAN_INPUTS`) and the quarantined rows with their reasons.
3. :func:`store_rollups` runs at the centre: one transaction records each partition in
   ``partition_ledger``, replaces a changed partition's roll-up rows, and re-merges only the hours
   those partitions touch into ``fct_traffic_hourly``, ``fct_histogram_hourly`` and
   ``fct_concurrency_hourly`` (merge SQL). Raw rows never reach the central database.
4. The plan's other readers (measured request mix, SLO, drift) read through :mod:`capplan.rollups`:
   the same roll-up of ``requests`` with the stored partitions' rows appended, so one code path
   serves file ingest, partitions, or both.

Counts, sums and histogram bins merge exactly whatever the partitioning; the busiest second per
hour (a max) is exact when each UTC hour lies in one partition, as with ``dt=`` day folders, and a
lower bound in the hours :func:`shared_hours` lists. The peak in flight (also a max) is a lower bound
in the first minutes of a partition, while requests of the one before are still in flight. See
``docs/partitioned.md``.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from capplan import sql
from capplan import ingest, profile
from capplan.config import ClusterConfig, IngestConfig, SourceConfig
from capplan.db import connect
from capplan.rollups import NO_TTFT_THRESHOLD_MS, PLAN_INPUTS, drift_histogram_params

HIVE_DAY = re.compile(r"dt=(\d{4}-\d{2}-\d{2})")
"""Name of a day partition folder: ``dt=YYYY-MM-DD``."""
ROLLUP_TABLES = {"fct_traffic_hourly": "partition_traffic_hourly",
                 "fct_histogram_hourly": "partition_histogram_hourly",
                 "fct_concurrency_hourly": "partition_concurrency_hourly"}
"""Central fact table -> the per-partition table it is merged from."""
_MERGE_SQL = {"fct_traffic_hourly": "int_profile_merge_traffic", "fct_histogram_hourly": "int_profile_merge_histogram",
              "fct_concurrency_hourly": "int_partitioned_merge_concurrency"}
_QUARANTINE_SCHEMA = pa.schema([("path", pa.string()), ("row_number", pa.int64()), ("rule", pa.string()),
                                ("detail", pa.string()), ("raw", pa.string())])


class PartitionError(ValueError):
    """A partitioned source cannot be read or stored (bad folder layout, rows also in ``requests``)."""


@dataclass(frozen=True)
class Partition:
    """One unit of work: a ``dt=`` folder's files, or one file of a file list."""

    source: SourceConfig
    path: str  # the dt= folder, or the file; absolute
    files: tuple[str, ...]  # absolute, sorted
    size_bytes: int  # total [bytes]
    stat_sha256: str  # hex SHA-256 of (name, size, mtime_ns) of every file: changes when a file does


@dataclass(frozen=True)
class PartitionRollup:
    """What a worker sends back: small tables, never raw rows (``error`` set means nothing was rolled up)."""

    partition: Partition
    traffic: pa.Table | None = None  # rows of fct_traffic_hourly
    histogram: pa.Table | None = None  # rows of fct_histogram_hourly
    concurrency: pa.Table | None = None  # rows of fct_concurrency_hourly, over this partition's requests only
    plan_inputs: Mapping[str, pa.Table] = field(default_factory=dict)  # PLAN_INPUTS query -> its rows
    quarantine: pa.Table | None = None  # path, row_number, rule, detail, raw (JSON text)
    content_sha256: str = ""  # hex SHA-256 of the files' own SHA-256s, in file order
    rows_read: int = 0  # [requests]
    rows_rolled_up: int = 0  # [requests]
    rows_quarantined: int = 0  # [requests]
    error: str = ""


@dataclass(frozen=True)
class RollupSummary:
    """Outcome of storing a batch of partition roll-ups at the centre."""

    rolled_up: tuple[str, ...] = ()  # partition paths stored (new or re-rolled)
    replaced: tuple[str, ...] = ()  # of those, paths that replaced an earlier roll-up
    failed: tuple[str, ...] = ()  # "path: message" of partitions not rolled up
    missing: tuple[str, ...] = ()  # configured patterns matching nothing
    rows_read: int = 0  # [requests]
    rows_rolled_up: int = 0  # [requests]
    rows_quarantined: int = 0  # [requests]
    hours_merged: int = 0  # central hours recomputed [hours]
    shared_hours: int = 0  # hours fed by more than one partition (peak second is a lower bound) [hours]

    def to_dict(self) -> dict:
        """Plain data for JSON output."""
        return asdict(self)


# --------------------------------------------------------------------------- discovery (centre)


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the ledger, per-partition and fact tables; also an empty ``requests`` so profile readers work."""
    ingest.ensure_tables(con)
    profile.ensure_tables(con)
    con.execute(sql.load("ddl_partitioned"))


def _visible(path: Path) -> bool:
    # Spark/Hive writers leave _SUCCESS, _committed_*, .crc files beside the data
    return not path.name.startswith((".", "_"))


def _partition(source: SourceConfig, path: Path, files: Sequence[Path]) -> Partition:
    digest = hashlib.sha256()
    size = 0
    for f in files:
        st = f.stat()
        size += st.st_size
        digest.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return Partition(source, str(path), tuple(map(str, files)), size, digest.hexdigest())


def _day_folders(root: Path) -> list[tuple[Path, list[Path]]]:
    """The ``dt=YYYY-MM-DD`` folders below ``root`` and the visible files inside each (recursively)."""
    folders = []
    for child in sorted(p for p in root.iterdir() if _visible(p)):
        match = HIVE_DAY.fullmatch(child.name)
        if not child.is_dir() or match is None:
            raise PartitionError(f"{child}: expected only dt=YYYY-MM-DD folders in the partitioned folder {root}")
        try:
            date.fromisoformat(match.group(1))
        except ValueError:
            raise PartitionError(f"{child}: {match.group(1)!r} is not a calendar date (YYYY-MM-DD)") from None
        files = sorted(f for f in child.rglob("*") if f.is_file() and _visible(f)
                       and all(_visible(p) for p in f.relative_to(child).parents if p != Path(".")))
        if files:
            folders.append((child.resolve(), [f.resolve() for f in files]))
    return folders


def discover_partitions(source: SourceConfig) -> tuple[list[Partition], list[str]]:
    """The partitions of ``source`` and the patterns in ``source.paths`` that match nothing.

    A path that is a folder holds ``dt=YYYY-MM-DD`` sub-folders, one partition each (hidden and ``_``
    files, such as ``_SUCCESS``, are skipped); any other path is a file or glob, one partition per file.

    Raises
    ------
    PartitionError
        A folder holds something other than ``dt=YYYY-MM-DD`` folders, or a date is not a calendar date.
    """
    partitions: dict[str, Partition] = {}
    missing: list[str] = []
    for pattern in source.paths:
        if Path(pattern).is_dir():
            found = [_partition(source, folder, files) for folder, files in _day_folders(Path(pattern))]
            if not found:
                missing.append(pattern)
        else:
            files, unmatched = ingest.expand_paths([pattern])
            missing += unmatched
            found = [_partition(source, f, [f]) for f in files]
        partitions.update((p.path, p) for p in found)
    return list(partitions.values()), missing


def pending_partitions(con: duckdb.DuckDBPyConnection, partitions: Iterable[Partition]) -> list[Partition]:
    """The partitions without a current roll-up of the same files (new, or changed since)."""
    partitions = list(partitions)
    if not partitions:
        return []
    ensure_tables(con)
    found = pa.table({"source": [p.source.name for p in partitions], "path": [p.path for p in partitions],
                      "stat_sha256": [p.stat_sha256 for p in partitions]})
    con.register("partitions_found", found)
    try:
        todo = {(s, p) for s, p, _ in con.execute(sql.load("int_partitioned_pending")).fetchall()}
    finally:
        con.unregister("partitions_found")
    return [p for p in partitions if (p.source.name, p.path) in todo]


# --------------------------------------------------------------------------- roll-up (worker)


def roll_up_partition(partition: Partition, ingest_cfg: IngestConfig, *, now_utc: datetime,
                      duckdb_threads: int | None = None, memory_limit_gib: float | None = None,
                      ttft_thresholds_ms: Iterable[float | None] = ()) -> PartitionRollup:
    """Validate and roll up one partition on a private DuckDB; return only small tables.

    Parameters
    ----------
    partition : Partition
        Its files are read where this runs (a Dask worker needs the same paths or mounts).
    ingest_cfg : IngestConfig
        The ingest's rules: context limit, future tolerance, contract check.
    now_utc : datetime
        Ingest time of the whole run; rows later than it plus ``future_tolerance_s`` are quarantined. [UTC]
    duckdb_threads : int, optional
        Threads DuckDB may use for this partition. [count]
    memory_limit_gib : float, optional
        DuckDB memory limit before it spills to a temporary folder. [GiB]
    ttft_thresholds_ms : iterable of float or None
        TTFT thresholds of the configured SLOs (``None``: no threshold, always rolled up); an SLO whose
        threshold was not rolled up cannot be evaluated on this partition. [ms]

    Returns
    -------
    PartitionRollup
        ``rows_read == rows_rolled_up + rows_quarantined``; with ``error`` set (a whole-file problem in
        any file, as the ingest defines it) nothing of the partition is rolled up.
    """
    with tempfile.TemporaryDirectory(prefix="capplan-partition-") as spill, connect(":memory:") as con:
        con.execute("set temp_directory = ?", [spill])
        if duckdb_threads is not None:
            con.execute("set threads = ?", [duckdb_threads])
        if memory_limit_gib is not None:
            con.execute("set memory_limit = ?", [f"{memory_limit_gib}GiB"])
        results = []
        for path in partition.files:
            try:
                results.append(ingest.load_file(con, Path(path), partition.source, ingest_cfg, now_utc=now_utc))
            except ingest.IngestError as exc:
                return PartitionRollup(partition, error=str(exc))
        tables = profile.rollup_partition(con, "requests", in_flight=True)  # one scan: counts, bins, sweep
        plan_inputs = {query: con.sql(sql.load(query), params=params).to_arrow_table()
                       for query, params in _plan_input_params(ttft_thresholds_ms).items()}
        quarantine = con.sql("select path, row_number, rule, detail, raw::varchar as raw from quarantine "
                                 "order by path, row_number").to_arrow_table().cast(_QUARANTINE_SCHEMA)
        hashes = [h for (h,) in con.execute("select content_sha256 from ingest_ledger order by path").fetchall()]
    return PartitionRollup(
        partition, tables["fct_traffic_hourly"], tables["fct_histogram_hourly"], tables["fct_concurrency_hourly"],
        plan_inputs, quarantine,
        hashlib.sha256("".join(hashes).encode()).hexdigest(),
        sum(r.rows_read for r in results), sum(r.rows_loaded for r in results),
        sum(r.rows_quarantined for r in results))


def _plan_input_params(ttft_thresholds_ms: Iterable[float | None]) -> dict[str, dict]:
    """Bound parameters of each :data:`PLAN_INPUTS` roll-up over a whole partition."""
    thresholds = sorted({NO_TTFT_THRESHOLD_MS, *(NO_TTFT_THRESHOLD_MS if t is None else float(t)
                                                 for t in ttft_thresholds_ms)})
    everything = {"start_utc": None, "end_utc": None}
    return {"int_plan_request_mix_hourly": {}, "int_plan_kv_tokens_hourly": {},
            "int_slo_minute_rollup": everything | {"model": None, "ttft_thresholds_ms": thresholds},
            "int_drift_daily_histogram": everything | drift_histogram_params()}


# --------------------------------------------------------------------------- merge (centre)


def store_rollups(con: duckdb.DuckDBPyConnection, rollups: Iterable[PartitionRollup], *,
                  now_utc: datetime | None = None) -> RollupSummary:
    """Record partition roll-ups in the ledger and merge the hours they touch, in one transaction.

    A partition rolled up before (same source and path) is replaced: its old rows leave the
    per-partition tables and its old and new hours are both re-merged. Hours that have per-partition
    rows but no central rows (e.g. after ``refresh_rollups(full=True)`` cleared them) are re-merged too.

    Raises
    ------
    PartitionError
        If ``requests`` holds rows in an hour being merged: an hour is fed either by file ingest or by
        partitions, never both, or one side would overwrite the other.
    """
    rollups = list(rollups)
    now = (now_utc or datetime.now(UTC)).replace(tzinfo=None)
    ensure_tables(con)
    done = [r for r in rollups if not r.error]
    con.begin()
    try:
        replaced, dirty = [], set()
        for rollup in done:
            old_id, old_hours = _retire(con, rollup.partition)
            if old_id is not None:
                replaced.append(rollup.partition.path)
            dirty |= old_hours | _insert(con, rollup, now)
        dirty |= {h for (h,) in con.execute(
            "select distinct hour_utc from partition_traffic_hourly "
            "except select distinct hour_utc from fct_traffic_hourly").fetchall()}
        merge_hours(con, dirty)
        shared = len(shared_hours(con))
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return RollupSummary(
        rolled_up=tuple(r.partition.path for r in done), replaced=tuple(replaced),
        failed=tuple(f"{r.partition.path}: {r.error}" for r in rollups if r.error),
        rows_read=sum(r.rows_read for r in done), rows_rolled_up=sum(r.rows_rolled_up for r in done),
        rows_quarantined=sum(r.rows_quarantined for r in done), hours_merged=len(dirty), shared_hours=shared)


def _retire(con: duckdb.DuckDBPyConnection, partition: Partition) -> tuple[int | None, set[datetime]]:
    """Mark the partition's current roll-up replaced and drop its rows; return its id and hours."""
    row = con.execute("select partition_id from partition_ledger where source = ? and path = ? and status = 'current'",
                      [partition.source.name, partition.path]).fetchone()
    if row is None:
        return None, set()
    old_id = row[0]
    hours = {h for (h,) in con.execute(
        "select hour_utc from partition_traffic_hourly where partition_id = $id "
        "union select hour_utc from partition_concurrency_hourly where partition_id = $id", {"id": old_id}).fetchall()}
    for table in (*ROLLUP_TABLES.values(), *PLAN_INPUTS.values(), "partition_quarantine"):
        con.execute(f"delete from {table} where partition_id = ?", [old_id])  # noqa: S608 - fixed names
    con.execute("update partition_ledger set status = 'replaced' where partition_id = ?", [old_id])
    return old_id, hours


def _insert(con: duckdb.DuckDBPyConnection, rollup: PartitionRollup, now: datetime) -> set[datetime]:
    """Insert one partition's ledger row, roll-up rows and quarantine; return the hours it feeds."""
    p = rollup.partition
    hours = sorted(set(rollup.traffic.column("hour_utc").to_pylist()))
    in_flight_hours = set(rollup.concurrency.column("hour_utc").to_pylist())
    partition_id = con.execute(
        "insert into partition_ledger (source, path, files, size_bytes, stat_sha256, content_sha256, rows_read, "
        "rows_rolled_up, rows_quarantined, first_hour_utc, last_hour_utc, status, rolled_up_at_utc) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'current', ?) returning partition_id",
        [p.source.name, p.path, list(p.files), p.size_bytes, p.stat_sha256, rollup.content_sha256, rollup.rows_read,
         rollup.rows_rolled_up, rollup.rows_quarantined, hours[0] if hours else None, hours[-1] if hours else None,
         now]).fetchone()[0]
    tables = {ROLLUP_TABLES["fct_traffic_hourly"]: rollup.traffic, ROLLUP_TABLES["fct_histogram_hourly"]: rollup.histogram,
              ROLLUP_TABLES["fct_concurrency_hourly"]: rollup.concurrency, "partition_quarantine": rollup.quarantine}
    tables |= {PLAN_INPUTS[query]: rows for query, rows in rollup.plan_inputs.items()}
    for name, table in tables.items():
        con.register("partition_rows", table)
        try:
            con.execute(f"insert into {name} select ?, * from partition_rows", [partition_id])  # noqa: S608
        finally:
            con.unregister("partition_rows")
    return set(hours) | in_flight_hours


def merge_hours(con: duckdb.DuckDBPyConnection, hours: Iterable[datetime]) -> None:
    """Replace the central rows of ``hours`` by the merge of every current partition's rows for them."""
    hours = sorted(set(hours))
    if not hours:
        return
    overlap = con.execute("select count(*), min(ts_utc) from requests where date_trunc('hour', ts_utc) "
                          "in (select unnest(?::timestamp[]))", [hours]).fetchone()
    if overlap[0]:
        raise PartitionError(f"{overlap[0]} rows ingested into `requests` (the first at {overlap[1]} UTC) fall in "
                             "hours that partitions also feed; feed each hour from one of the two")
    con.execute("create or replace temp table partitioned_dirty_hours as "
                "select unnest(?::timestamp[]) as hour_utc", [hours])
    for fact, per_partition in ROLLUP_TABLES.items():
        con.execute(f"delete from {fact} where hour_utc in (select hour_utc from partitioned_dirty_hours)")  # noqa: S608
        con.execute(f"create or replace temp view profile_parts as select * exclude (partition_id) "  # noqa: S608
                    f"from {per_partition} semi join partitioned_dirty_hours using (hour_utc)")
        con.execute(f"insert into {fact} " + sql.load(_MERGE_SQL[fact]))
    con.execute("drop view profile_parts")
    con.execute("drop table partitioned_dirty_hours")


def shared_hours(con: duckdb.DuckDBPyConnection) -> list[tuple[datetime, int]]:
    """``(hour_utc, partitions)`` of the hours fed by more than one current partition."""
    return [tuple(r) for r in con.execute(sql.load("int_partitioned_shared_hours")).fetchall()]


def duckdb_threads(cluster: ClusterConfig) -> int | None:
    """DuckDB threads per partition roll-up. [count]

    The configured figure; else, on a LocalCluster, this machine's cores shared out over every
    partition running at once (``n_workers × threads_per_worker``, or one at a time in-process);
    else ``None`` (DuckDB's default: all cores of the worker's machine).
    """
    if cluster.duckdb_threads_per_partition is not None:
        return cluster.duckdb_threads_per_partition
    if cluster.task_runner == "dask" and cluster.scheduler_address is not None:
        return None
    at_once = cluster.n_workers * cluster.threads_per_worker if cluster.task_runner == "dask" else 1
    return max(1, (os.cpu_count() or 1) // at_once)
