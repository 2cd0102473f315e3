"""The partitioned roll-up flow (flows/partitioned.py) on real Prefect, in-process and on a Dask LocalCluster."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from prefect.task_runners import ThreadPoolTaskRunner
from prefect_dask import DaskTaskRunner

from capplan import ingest, profile
from capplan.config import CapplanConfig, ClusterConfig, DatabaseConfig, IngestConfig, SourceConfig
from capplan.db import connect
from capplan.sample import SampleSpec, write_sample
from capplan.flows.partitioned import run_partitioned_rollup, task_runner_for

FACT_ORDER = {"fct_traffic_hourly": "hour_utc, model", "fct_histogram_hourly": "hour_utc, model, metric, bin"}
INGEST = IngestConfig(contract_check="off")  # the RequestRow contract is tested with the ingest


def facts(path) -> dict:
    with connect(path, read_only=True) as con:
        return {t: con.sql(f"select * from {t} order by {o}").to_arrow_table() for t, o in FACT_ORDER.items()}  # noqa: S608


@pytest.fixture(scope="module")
def hive(tmp_path_factory) -> Path:
    """Four generated days (one with an incident) as dt= folders."""
    root = tmp_path_factory.mktemp("hive")
    write_sample(SampleSpec(date(2026, 4, 6), 4, 20_000, seed=5), root, split="day")
    return root


@pytest.fixture(scope="module")
def single_process_db(hive, tmp_path_factory) -> Path:
    """Every file ingested into one DuckDB and rolled up there: the reference."""
    path = tmp_path_factory.mktemp("single") / "single.duckdb"
    with connect(path) as con:
        files, _ = ingest.expand_paths([str(hive / "dt=*" / "*.parquet")])
        for f in files:
            ingest.load_file(con, f, SourceConfig(name="ref"), INGEST)
        profile.refresh_rollups(con, full=True)
    return path


def config(db: Path, hive: Path, **cluster) -> CapplanConfig:
    return CapplanConfig(database=DatabaseConfig(path=db), ingest=INGEST,
                         cluster=ClusterConfig(sources=[SourceConfig(name="hive", paths=[str(hive)])], **cluster))


@pytest.mark.slow
@pytest.mark.parametrize("cluster", [
    {"task_runner": "none"},
    {"task_runner": "dask", "n_workers": 2, "processes": False},
], ids=["in-process", "dask-local-cluster"])
def test_flow_equals_single_process(prefect_harness, hive, single_process_db, tmp_path, cluster):
    cfg = config(tmp_path / "central.duckdb", hive, **cluster)
    summary = run_partitioned_rollup(cfg)
    assert len(summary.rolled_up) == 4 and summary.failed == ()
    assert summary.rows_read == summary.rows_rolled_up + summary.rows_quarantined
    got, want = facts(cfg.database.path), facts(single_process_db)
    for table in FACT_ORDER:
        assert got[table].num_rows > 0
        assert got[table].equals(want[table]), table  # every column, histograms and peak second included
    assert run_partitioned_rollup(cfg).rolled_up == ()  # the ledger skips what is rolled up


def test_task_runner_choice():
    assert isinstance(task_runner_for(ClusterConfig()), ThreadPoolTaskRunner)
    local = task_runner_for(ClusterConfig(task_runner="dask", n_workers=3, processes=False))
    assert isinstance(local, DaskTaskRunner)
    assert local.cluster_kwargs["n_workers"] == 3 and local.cluster_kwargs["processes"] is False
    remote = task_runner_for(ClusterConfig(task_runner="dask", scheduler_address="tcp://10.0.0.5:8786"))
    assert remote.address == "tcp://10.0.0.5:8786"


def test_serve_schedules_the_roll_up_of_partitioned_sources(tmp_path):
    from capplan.flows.deploy import ROLLUP_DEPLOYMENT, build_deployments

    cfg = config(tmp_path / "central.duckdb", tmp_path, task_runner="dask", n_workers=2)
    rollup = [d for d in build_deployments(cfg) if d.name == ROLLUP_DEPLOYMENT]
    assert len(rollup) == 1 and rollup[0].flow_name == "partitioned-rollup"
    assert rollup[0].schedules[0].schedule.cron == cfg.schedule.ingest_cron
    assert rollup[0].parameters["config"]["cluster"]["sources"][0]["paths"] == [str(tmp_path)]
    assert [d.name for d in build_deployments(CapplanConfig())] == ["monthly"]  # no partitioned source, no roll-up
