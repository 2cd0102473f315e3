"""Deployments of capplan's flows and the process that serves them (``capplan serve``).

Up to three deployments, all scheduled from ``[schedule]`` in the config:

- ``monthly-capacity-plan/monthly``: the plan, by default on the 1st of each month at
  06:00 in ``[schedule].timezone`` (``plan_cron``); it rolls up ``[[cluster.sources]]`` first;
- ``ingest-logs/daily-drop-folder``: the ingest of every file in ``[schedule].drop_folder``,
  daily (``ingest_cron``); only when a drop folder is configured;
- ``partitioned-rollup/daily``: the roll-up of new and changed partitions of
  ``[[cluster.sources]]`` (Hive ``dt=`` folders or file lists) on the ``[cluster]`` task runner,
  daily (``ingest_cron``); only when partitioned sources are configured.

The config is resolved once, when serving starts, and passed to every run as the
flow's typed ``config`` parameter, so a scheduled run and ``capplan plan`` see the
same inputs.
"""

from __future__ import annotations

from prefect import serve
from prefect.deployments.runner import RunnerDeployment
from prefect.schedules import Cron

from capplan.config import CapplanConfig, IngestConfig, SourceConfig, dump_config
from capplan.flows.ingest import ingest_logs
from capplan.flows.partitioned import roll_up_partitions, task_runner_for
from capplan.flows.plan import monthly_capacity_plan

PLAN_DEPLOYMENT = "monthly"
INGEST_DEPLOYMENT = "daily-drop-folder"
ROLLUP_DEPLOYMENT = "daily"
#: File patterns the daily ingest picks up in the drop folder (any depth).
DROP_PATTERNS = ("**/*.parquet", "**/*.csv", "**/*.csv.gz", "**/*.jsonl", "**/*.jsonl.gz")


def drop_folder_config(cfg: CapplanConfig) -> CapplanConfig:
    """``cfg`` with its sources replaced by one canonical source covering ``[schedule].drop_folder``."""
    if cfg.schedule.drop_folder is None:
        raise ValueError("[schedule].drop_folder is not set: there is no drop folder to ingest daily")
    folder = cfg.schedule.drop_folder
    source = SourceConfig(name="drop-folder", paths=[str(folder / pattern) for pattern in DROP_PATTERNS])
    return cfg.model_copy(update={"ingest": IngestConfig(**{**dict(cfg.ingest), "sources": [source]})})


def build_deployments(cfg: CapplanConfig) -> list[RunnerDeployment]:
    """The scheduled deployments for ``cfg`` (the daily ingest and roll-up only when they have something to read)."""
    tz = cfg.schedule.timezone
    out = [monthly_capacity_plan.to_deployment(
        name=PLAN_DEPLOYMENT, schedules=[Cron(cfg.schedule.plan_cron, timezone=tz)],
        parameters={"config": dump_config(cfg)}, description="Monthly GPU capacity and cost plan.")]
    if cfg.schedule.drop_folder is not None:
        out.append(ingest_logs.to_deployment(
            name=INGEST_DEPLOYMENT, schedules=[Cron(cfg.schedule.ingest_cron, timezone=tz)],
            parameters={"config": dump_config(drop_folder_config(cfg))},
            description=f"Daily ingest of new files in {cfg.schedule.drop_folder}."))
    if cfg.cluster.sources:
        out.append(roll_up_partitions.with_options(task_runner=task_runner_for(cfg.cluster)).to_deployment(
            name=ROLLUP_DEPLOYMENT, schedules=[Cron(cfg.schedule.ingest_cron, timezone=tz)],
            parameters={"config": dump_config(cfg)},
            description=f"Daily roll-up of new partitions on {cfg.cluster.task_runner}."))
    return out


def serve_deployments(cfg: CapplanConfig, *, limit: int | None = 1) -> None:
    """Serve the deployments until interrupted (SIGTERM or Ctrl-C); runs execute in this process.

    ``limit`` runs at a time: one by default, since both flows write the same DuckDB file.
    Schedules stay active on shutdown so a restarted server keeps its calendar.
    """
    serve(*build_deployments(cfg), limit=limit, pause_on_shutdown=False)
