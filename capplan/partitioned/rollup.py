"""The worker side of partitioned roll-ups: one partition validated and rolled up on a private DuckDB."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pyarrow as arrow

from capplan import ingest, profile, sql
from capplan.config import ClusterConfig, IngestConfig
from capplan.db import connect
from capplan.ingest.run import FAILED_STATUSES
from capplan.partitioned.discover import Partition
from capplan.rollups import NO_TTFT_THRESHOLD_MS, drift_histogram_params

QUARANTINE_SCHEMA = arrow.schema([("path", arrow.string()), ("row_number", arrow.int64()), ("rule", arrow.string()),
                                  ("detail", arrow.string()), ("raw", arrow.string())])
"""Columns of the quarantined rows a worker sends back (``partition_quarantine`` without its id)."""


@dataclass(frozen=True)
class PartitionRollup:
    """What a worker sends back: small tables, never raw rows (``error`` set means nothing was rolled up)."""

    partition: Partition
    traffic: arrow.Table | None = None  # rows of fct_traffic_hourly
    histogram: arrow.Table | None = None  # rows of fct_histogram_hourly
    concurrency: arrow.Table | None = None  # rows of fct_concurrency_hourly, over this partition's requests only
    plan_inputs: Mapping[str, arrow.Table] = field(default_factory=dict)  # PLAN_INPUTS query -> its rows
    quarantine: arrow.Table | None = None  # path, row_number, rule, detail, raw (JSON text)
    content_sha256: str = ""  # hex SHA-256 of the files' own SHA-256s, in file order
    rows_read: int = 0  # [requests]
    rows_rolled_up: int = 0  # [requests]
    rows_quarantined: int = 0  # [requests]
    error: str = ""


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
        con.execute(sql.load("set_temp_directory"), {"path": spill})
        if duckdb_threads is not None:
            con.execute(sql.load("set_threads"), {"threads": duckdb_threads})
        if memory_limit_gib is not None:
            con.execute(sql.load("set_memory_limit"), {"limit": f"{memory_limit_gib}GiB"})
        results = []
        for path in partition.files:
            try:
                result = ingest.load_file(con, Path(path), partition.source, ingest_cfg, now_utc=now_utc)
            except ingest.IngestError as exc:
                return PartitionRollup(partition, error=str(exc))
            if result.status in FAILED_STATUSES:  # every row quarantined: rolled back, a failure as in ingest
                return PartitionRollup(partition, error=result.message)
            results.append(result)
        tables = profile.rollup_partition(con, "requests", in_flight=True)  # one scan: counts, bins, sweep
        plan_inputs = {query: con.sql(sql.load(query), params=params).to_arrow_table()
                       for query, params in _plan_input_params(ttft_thresholds_ms).items()}
        quarantine = con.sql(sql.load("int_partitioned_quarantine_rows")).to_arrow_table().cast(QUARANTINE_SCHEMA)
        hashes = [h for (h,) in con.execute(sql.load("int_partitioned_content_hashes")).fetchall()]
    return PartitionRollup(
        partition, tables["fct_traffic_hourly"], tables["fct_histogram_hourly"], tables["fct_concurrency_hourly"],
        plan_inputs, quarantine,
        hashlib.sha256("".join(hashes).encode()).hexdigest(),
        sum(r.rows_read for r in results), sum(r.rows_loaded for r in results),
        sum(r.rows_quarantined for r in results))


def _plan_input_params(ttft_thresholds_ms: Iterable[float | None]) -> dict[str, dict]:
    """Bound parameters of each :data:`~capplan.rollups.PLAN_INPUTS` roll-up over a whole partition."""
    thresholds = sorted({NO_TTFT_THRESHOLD_MS, *(NO_TTFT_THRESHOLD_MS if t is None else float(t)
                                                 for t in ttft_thresholds_ms)})
    everything = {"start_utc": None, "end_utc": None}
    return {"int_plan_request_mix_hourly": {}, "int_plan_kv_tokens_hourly": {},
            "int_slo_minute_rollup": everything | {"model": None, "ttft_thresholds_ms": thresholds},
            "int_drift_daily_histogram": everything | drift_histogram_params()}


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
