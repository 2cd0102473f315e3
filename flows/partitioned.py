"""Partitioned roll-ups as a Prefect flow: find new partitions → roll each up → store and merge.

The roll-ups run on the task runner the ``[cluster]`` section picks (:func:`task_runner_for`):
one after another in this process by default, or in parallel on a Dask cluster (prefect-dask's
``DaskTaskRunner``: a ``LocalCluster``, or the scheduler at ``scheduler_address``). Workers read
their partition's files and send back only roll-up rows and quarantined rows; the central DuckDB is
opened by the first and last task only, in this process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from prefect import flow, task, unmapped
from prefect.cache_policies import NONE
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from capplan import partitioned
from capplan.config import CapplanConfig, ClusterConfig, IngestConfig
from capplan.db import connect
from capplan.partitioned import Partition, PartitionRollup, RollupSummary


@task(name="find-pending-partitions", retries=2, retry_delay_seconds=1, cache_policy=NONE)
def find_pending_partitions(cfg: CapplanConfig) -> tuple[list[Partition], list[str]]:
    """List the configured partitions the ledger has not rolled up as they are now; and unmatched patterns."""
    found = [partitioned.discover_partitions(s) for s in cfg.cluster.sources]
    with connect(cfg.database.path) as con:
        pending = partitioned.pending_partitions(con, [p for parts, _ in found for p in parts])
    return pending, [m for _, missing in found for m in missing]


@task(name="roll-up-partition", cache_policy=NONE)
def roll_up_partition(partition: Partition, ingest_cfg: IngestConfig, cluster: ClusterConfig,
                      now_utc: datetime, ttft_thresholds_ms: list[float | None]) -> PartitionRollup:
    """Validate and roll up one partition where the task runs; return small tables."""
    return partitioned.roll_up_partition(partition, ingest_cfg, now_utc=now_utc,
                                         duckdb_threads=partitioned.duckdb_threads(cluster),
                                         memory_limit_gib=cluster.duckdb_memory_limit_gib,
                                         ttft_thresholds_ms=ttft_thresholds_ms)


@task(name="store-partition-rollups", retries=2, retry_delay_seconds=1, cache_policy=NONE)
def store_partition_rollups(cfg: CapplanConfig, rollups: list[PartitionRollup], now_utc: datetime) -> RollupSummary:
    """Record the roll-ups in the central ledger and merge the hours they touch."""
    with connect(cfg.database.path) as con:
        return partitioned.store_rollups(con, rollups, now_utc=now_utc)


@flow(name="partitioned-rollup", log_prints=True)
def roll_up_partitions(config: CapplanConfig) -> RollupSummary:
    """Roll up the new and changed partitions of ``[[cluster.sources]]`` into the central database."""
    now_utc = datetime.now(UTC)
    pending, missing = find_pending_partitions(config)
    thresholds = [slo.ttft_threshold_ms for slo in config.slos]  # the SLO stage's good counts need each
    futures = roll_up_partition.map(pending, unmapped(config.ingest), unmapped(config.cluster), unmapped(now_utc),
                                    unmapped(thresholds))
    summary = store_partition_rollups(config, futures.result(), now_utc)
    summary = replace(summary, missing=tuple(missing))
    print(f"rolled up {len(summary.rolled_up)} partitions ({summary.rows_rolled_up} rows, "
          f"{summary.rows_quarantined} quarantined), {len(summary.failed)} failed")
    return summary


def task_runner_for(cluster: ClusterConfig) -> TaskRunner:
    """The task runner ``[cluster]`` asks for: serial in this process, or Dask (existing scheduler or LocalCluster)."""
    if cluster.task_runner == "none":
        return ThreadPoolTaskRunner(max_workers=1)  # one partition at a time: DuckDB already uses every core
    from prefect_dask import DaskTaskRunner

    if cluster.scheduler_address is not None:
        return DaskTaskRunner(address=cluster.scheduler_address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": cluster.n_workers, "threads_per_worker": cluster.threads_per_worker,
                                          "processes": cluster.processes, "dashboard_address": None})


def run_partitioned_rollup(config: CapplanConfig, hooks: list[Callable] | None = None) -> RollupSummary:
    """Run :func:`roll_up_partitions` on the task runner of ``config.cluster`` (a sub-flow when called in a flow).

    ``hooks`` are Prefect flow state hooks called on completion and on failure (the plan's progress display).
    """
    return roll_up_partitions.with_options(task_runner=task_runner_for(config.cluster), on_completion=hooks or [],
                                           on_failure=hooks or [])(config)
