"""Two monthly runs: the second report holds the first one's plan for the month between to account."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import date

import pandas as pd
import pytest

from capplan.config import load_config
from capplan.db import connect
from capplan.flows.plan import monthly_capacity_plan
from capplan.history.store import FLEET, plan_runs
from capplan.reports.document import FLEET as TOTAL
from capplan.history.variance import PARTS
from capplan.sample import SampleSpec, write_sample

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

OCTOBER = SampleSpec(date(2026, 9, 1), 61, 2500, seed=21, incidents=False)  # September and October
NOVEMBER = replace(OCTOBER, start=date(2026, 11, 1), days=30, requests_per_day=2700, seed=22)


def test_second_run_compares_the_first_runs_november_with_what_came(prefect_harness, tmp_path, write_plan_config):
    logs = tmp_path / "logs"
    first_files = write_sample(OCTOBER, logs / "a.parquet", split="month").paths
    cfg = load_config(write_plan_config(tmp_path, [str(logs / "*.parquet")], forecast={"horizon_months": 2}))

    first = monthly_capacity_plan(cfg)
    assert first.endswith("2026-11")
    with connect(cfg.database.path, read_only=True) as con:
        runs = plan_runs(con)
        stored = con.execute("select * from plan_months where month = '2026-11' order by pool").df()
    assert len(runs) == 1 and str(runs["first_month"].iloc[0]) == "2026-11"
    assert FLEET in set(stored["pool"]) and len(stored) >= 2
    first_report = (tmp_path / "out" / "2026-11" / "report.md").read_text()
    assert "No earlier plan covers a month the logs observe yet" in first_report

    write_sample(NOVEMBER, logs / "b.parquet", split="month")  # one more month of logs arrives
    second = monthly_capacity_plan(cfg)
    assert second.endswith("2026-12")
    with connect(cfg.database.path, read_only=True) as con:
        assert len(plan_runs(con)) == 2  # both runs kept

    import openpyxl

    book = openpyxl.load_workbook(tmp_path / "out" / "2026-12" / "budget.xlsx")
    assert "variance" in book.sheetnames
    rows = list(book["variance"].values)
    variance = pd.DataFrame(rows[1:], columns=rows[0])
    november = variance[variance["month"] == "2026-11"].set_index("pool")
    # every pool of the first plan, and the fleet: named "total" as in the budget sheet
    assert set(november.index) == set(stored["pool"].replace({FLEET: TOTAL})) and TOTAL in november.index
    planned = stored.assign(pool=stored["pool"].replace({FLEET: TOTAL})).set_index("pool")
    for pool, row in november.iterrows():
        # the first run's numbers for November ...
        assert row["planned_gpus_p50"] == planned.loc[pool, "gpus_p50"]
        assert row["planned_cost_usd"] == pytest.approx(planned.loc[pool, "cost_p50_usd"])
        assert row["planned_requests_p50"] == pytest.approx(planned.loc[pool, "requests_p50"])
        # ... with the actuals, and the cost variance split exactly
        assert row["actual_requests"] > 0 and row["complete"]
        split = sum(row[f"variance_{p}_usd"] for p in PARTS)
        assert math.isclose(split, row["variance_cost_usd"], rel_tol=1e-9, abs_tol=1e-6)
    # the fleet's actual requests are the month's logged requests
    with connect(cfg.database.path, read_only=True) as con:
        logged = con.execute("select count(*) from requests where ts_utc >= '2026-11-01' and ts_utc < '2026-12-01'"
                             ).fetchone()[0]
    assert november.loc[TOTAL, "actual_requests"] == pytest.approx(logged, rel=1e-9)
    second_report = (tmp_path / "out" / "2026-12" / "report.md").read_text()
    assert "How earlier plans did" in second_report and "2026-11" in second_report
    # the section's chart (drawn from the same variance rows: tests/reports/test_assemble.py) is in the section
    section = second_report.split("### How earlier plans did", 1)[1].split("\n## ", 1)[0]
    assert "![Earlier plans against what happened](charts/plan-variance.png)" in section
    assert (tmp_path / "out" / "2026-12" / "charts" / "plan-variance.png").read_bytes().startswith(b"\x89PNG")
