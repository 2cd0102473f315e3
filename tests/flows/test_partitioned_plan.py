"""``capplan plan --cluster dask`` on partitioned-only data: the report equals the single-process plan's.

The single-process reference is the session's ``planned_report`` (``tests/conftest.py``: the generated logs
ingested into ``requests``). Here the same rows (same ``SampleSpec``) lie in ``dt=`` day folders and
reach the central database only as partition roll-ups; the plan rolls them up in a sub-flow on a Dask
LocalCluster of 2 workers and measures, forecasts, sizes, costs and checks SLOs and drift from the
roll-ups alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from capplan.cli import app
from capplan.config import load_config
from capplan.db import connect
from capplan.sample import SampleSpec, write_sample

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def partitioned_report(prefect_harness, planned_report, write_plan_config, plan_sample, tmp_path_factory):
    """``capplan plan --cluster dask`` with the logs as a Hive folder and no file ingest; (folder, config, stderr)."""
    root = tmp_path_factory.mktemp("partitioned-plan")
    write_sample(SampleSpec(**plan_sample), root / "hive", split="day")
    config_file = write_plan_config(root, [])  # same sections as the reference, no file to ingest
    with config_file.open("a") as f:
        f.write(f'[cluster]\nn_workers = 2\n[[cluster.sources]]\nname = "hive"\npaths = ["{root / "hive"}"]\n')
    result = CliRunner().invoke(app, ["plan", "--config", str(config_file), "--cluster", "dask", "--json"])
    assert result.exit_code == 0, result.output
    return Path(json.loads(result.stdout)["report_dir"]), load_config(config_file), result.stderr


def _figures(md: str) -> str:
    """The report's Markdown without what differs by run: the generation time and file locations."""
    md = re.sub(r"^Generated .*$", "", md, flags=re.MULTILINE)
    return re.sub(r"`[^`]*report\.html`", "", md)


def test_central_database_holds_roll_ups_only(partitioned_report, plan_sample):
    _, cfg, stderr = partitioned_report
    with connect(cfg.database.path, read_only=True) as con:
        requests, ledger, mix = con.execute(
            "select (select count(*) from requests), (select count(*) from partition_ledger where status = 'current'),"
            " (select count(*) from partition_request_mix_hourly)").fetchall()[0]
    assert requests == 0 and ledger == plan_sample["days"] and mix > 0
    assert re.search(r"✓ partitioned\s+\d+\.\d s", stderr)  # the sub-flow is a stage of the plan


def test_report_figures_equal_the_single_process_plan(planned_report, partitioned_report):
    reference, _ = planned_report
    folder, _, _ = partitioned_report
    assert folder.name == reference.name  # the same first month
    budget = pd.read_csv(folder / "budget.csv")
    assert budget["Pool"].nunique() == 4  # three pools (one per log model) and the totals, as in the reference
    for table in ("budget.csv", "forecast.csv", "plan.json"):
        if table == "plan.json":
            assert (folder / table).read_text() == (reference / table).read_text()
            continue
        pd.testing.assert_frame_equal(pd.read_csv(folder / table), pd.read_csv(reference / table), check_exact=True)
    # every figure of the report: headline, budget, measured inputs, SLO budgets and alerts, drift findings
    assert _figures((folder / "report.md").read_text()) == _figures((reference / "report.md").read_text())
