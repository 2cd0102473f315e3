"""``--cluster`` / ``--scheduler-address`` on ``capplan ingest`` (the plan shares the same helpers)."""

from __future__ import annotations

import json
from datetime import date

import pytest
from typer.testing import CliRunner

from capplan.cli import app
from capplan.db import connect
from capplan.sample import SampleSpec, write_sample

runner = CliRunner()


@pytest.mark.slow
def test_ingest_cluster_rolls_up_a_hive_folder(prefect_harness, tmp_path):
    write_sample(SampleSpec(date(2026, 5, 4), 2, 3_000, seed=2), tmp_path / "hive", split="day")
    db = tmp_path / "central.duckdb"
    args = ["ingest", str(tmp_path / "hive"), "--cluster", "none", "--db", str(db), "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)["partitioned"]
    assert len(summary["rolled_up"]) == 2 and summary["failed"] == []
    with connect(db, read_only=True) as con:
        rolled = con.execute("select sum(requests) from fct_traffic_hourly where model = '__all__'").fetchone()[0]
        raw = con.execute("select count(*) from requests").fetchone()[0]
    assert rolled == summary["rows_rolled_up"] > 0 and raw == 0
    again = json.loads(runner.invoke(app, args).stdout)["partitioned"]
    assert again["rolled_up"] == []


@pytest.mark.parametrize(("options", "message"), [
    (["--cluster", "spark"], "expected none or dask"),
    (["--cluster", "none", "--scheduler-address", "tcp://h:8786"], "needs --cluster dask"),
])
def test_bad_cluster_options_exit_2(tmp_path, options, message):
    result = runner.invoke(app, ["ingest", str(tmp_path), "--db", str(tmp_path / "x.duckdb"), *options])
    assert result.exit_code == 2
    assert message in result.output
