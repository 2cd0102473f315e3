"""The centre of partitioned roll-ups: record partitions in the ledger and merge the hours they feed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import duckdb
import numpy as np
import pyarrow as arrow

from capplan import sql
from capplan.partitioned.discover import Partition, PartitionError
from capplan.partitioned.rollup import PartitionRollup
from capplan.partitioned.tables import ROLLUP_TABLES, ensure_tables
from capplan.profile.freshness import has_file_rollups, record_rollup_version
from capplan.profile.refresh import store_histogram_rows
from capplan.rollups import PLAN_INPUTS

_MERGE_SQL = {"fct_traffic_hourly": "int_profile_merge_traffic", "fct_histogram_hourly": "int_profile_merge_histogram",
              "fct_concurrency_hourly": "int_partitioned_merge_concurrency"}
"""Central fact table -> the SQL merging its per-partition rows (read from the view ``profile_parts``)."""
_MERGE_STEPS = {"fct_traffic_hourly": ("fct_partitioned_delete_merged_traffic", "int_partitioned_dirty_traffic"),
                "fct_histogram_hourly": ("fct_partitioned_delete_merged_histogram", "int_partitioned_dirty_histogram"),
                "fct_concurrency_hourly": ("fct_partitioned_delete_merged_concurrency",
                                           "int_partitioned_dirty_concurrency")}
"""Central fact table -> (SQL dropping its rows of the dirty hours, SQL selecting the partitions' rows of them)."""
_RETIRE_SQL = {"partition_traffic_hourly": "fct_partitioned_delete_traffic_hourly",
               "partition_histogram_hourly": "fct_partitioned_delete_histogram_hourly",
               "partition_concurrency_hourly": "fct_partitioned_delete_concurrency_hourly",
               "partition_request_mix_hourly": "fct_partitioned_delete_request_mix_hourly",
               "partition_kv_tokens_hourly": "fct_partitioned_delete_kv_tokens_hourly",
               "partition_slo_minute": "fct_partitioned_delete_slo_minute",
               "partition_drift_daily_histogram": "fct_partitioned_delete_drift_daily_histogram",
               "partition_quarantine": "fct_partitioned_delete_quarantine"}
"""Per-partition table -> the SQL dropping one partition's rows of it."""


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
        dirty |= {h for (h,) in con.execute(sql.load("int_partitioned_unmerged_hours")).fetchall()}
        merge_hours(con, dirty)
        if not has_file_rollups(con):  # nothing but partitions, all rolled up under this definition
            record_rollup_version(con)
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
    row = con.execute(sql.load("int_partitioned_current_id"),
                      {"source": partition.source.name, "path": partition.path}).fetchone()
    if row is None:
        return None, set()
    old = {"partition_id": row[0]}
    hours = {h for (h,) in con.execute(sql.load("int_partitioned_partition_hours"), old).fetchall()}
    for table in (*ROLLUP_TABLES.values(), *PLAN_INPUTS.values(), "partition_quarantine"):
        con.execute(sql.load(_RETIRE_SQL[table]), old)
    con.execute(sql.load("fct_partitioned_ledger_replace"), old)
    return row[0], hours


def _insert(con: duckdb.DuckDBPyConnection, rollup: PartitionRollup, now: datetime) -> set[datetime]:
    """Insert one partition's ledger row, roll-up rows and quarantine; return the hours it feeds."""
    p = rollup.partition
    hours = sorted(set(rollup.traffic.column("hour_utc").to_pylist()))
    in_flight_hours = set(rollup.concurrency.column("hour_utc").to_pylist())
    partition_id = con.execute(sql.load("fct_partitioned_ledger_insert"), {
        "source": p.source.name, "path": p.path, "files": list(p.files), "size_bytes": p.size_bytes,
        "stat_sha256": p.stat_sha256, "content_sha256": rollup.content_sha256, "rows_read": rollup.rows_read,
        "rows_rolled_up": rollup.rows_rolled_up, "rows_quarantined": rollup.rows_quarantined,
        "first_hour_utc": hours[0] if hours else None, "last_hour_utc": hours[-1] if hours else None,
        "rolled_up_at_utc": now}).fetchone()[0]
    tables = {ROLLUP_TABLES["fct_traffic_hourly"]: rollup.traffic, ROLLUP_TABLES["fct_histogram_hourly"]: rollup.histogram,
              ROLLUP_TABLES["fct_concurrency_hourly"]: rollup.concurrency, "partition_quarantine": rollup.quarantine}
    tables |= {PLAN_INPUTS[query]: rows for query, rows in rollup.plan_inputs.items()}
    for name, table in tables.items():
        ids = arrow.array(np.full(table.num_rows, partition_id, np.int32))
        # a fixed per-partition table name, passed to DuckDB's append, never formatted into SQL
        con.from_arrow(table.add_column(0, "partition_id", ids)).insert_into(name)
    return set(hours) | in_flight_hours


def merge_hours(con: duckdb.DuckDBPyConnection, hours: Iterable[datetime]) -> None:
    """Replace the central rows of ``hours`` by the merge of every current partition's rows for them."""
    hours = sorted(set(hours))
    if not hours:
        return
    overlap = con.execute(sql.load("int_partitioned_requests_in_hours"), {"hours": hours}).fetchone()
    if overlap[0]:
        raise PartitionError(f"{overlap[0]} rows ingested into `requests` (the first at {overlap[1]} UTC) fall in "
                             "hours that partitions also feed; feed each hour from one of the two")
    (has_metrics,) = con.execute(sql.load("rpt_cli_table_exists"), {"table_name": "metrics_ledger"}).fetchone()
    fed = con.execute(sql.load("int_partitioned_metrics_hours"), {"hours": hours}).fetchone() if has_metrics else (0,)
    if fed[0]:
        raise PartitionError(f"{fed[0]} hour(s) (the first {fed[1]} UTC) are already fed by metrics "
                             "(capplan ingest-metrics / ingest-rates); feed each hour from one source")
    con.execute(sql.load("ddl_partitioned_dirty_hours"), {"hours": hours})
    for fact, (delete, dirty_rows) in _MERGE_STEPS.items():
        con.execute(sql.load(delete))
        con.sql(sql.load(dirty_rows)).create_view("profile_parts", replace=True)
        merged = con.sql(sql.load(_MERGE_SQL[fact]))
        if fact == "fct_histogram_hourly":  # stored as lists of bins (a view shows one row per bin)
            store_histogram_rows(con, merged)
        else:
            merged.insert_into(fact)  # a fixed fact table name, not formatted into SQL
    con.execute(sql.load("ddl_partitioned_drop_parts"))
    con.execute(sql.load("ddl_partitioned_drop_dirty_hours"))


def shared_hours(con: duckdb.DuckDBPyConnection) -> list[tuple[datetime, int]]:
    """``(hour_utc, partitions)`` of the hours fed by more than one current partition."""
    return [tuple(r) for r in con.execute(sql.load("int_partitioned_shared_hours")).fetchall()]
