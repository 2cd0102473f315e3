"""Plan history: runs are stored whole or not at all, and the latest run before a month is the one used."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pandera.errors
import pytest

from capplan.db import connect
from capplan.history.store import FLEET, latest_plans, new_run, plan_runs, record_plan


def months_frame(months: list[str], gpus: int, pool: str = "chat") -> pd.DataFrame:
    rows = []
    for m in months:
        for name in (pool, FLEET):
            rows.append({"month": m, "pool": name, "gpu": "H100-SXM-80GB", "tensor_parallel": 1, "requests_p10": 9e5, "requests_p50": 1e6,
                         "requests_p90": 1.2e6, "peak_qps_p10": 1.0, "peak_qps_p50": 1.2, "peak_qps_p90": 1.5,
                         "gpus_p10": gpus - 1, "gpus_p50": gpus, "gpus_p90": gpus + 2, "binding": "throughput",
                         "reserved_gpus": gpus - 1, "gpu_hours_p50": gpus * 720.0, "cost_p10_usd": 1.0,
                         "cost_p50_usd": 2.0, "cost_p90_usd": 3.0, "on_demand_p50_usd": 1.0,
                         "reserved_p50_usd": 1.0, "spot_p50_usd": 0.0, "throughput_source": "assumed"})
    return pd.DataFrame(rows)


def run_at(stamp: str, first: str, n: int = 3):
    return new_run(first, n, {"k": 1}, data_from_utc=None, data_to_utc=None, created_utc=datetime.fromisoformat(stamp))


def test_latest_run_made_before_the_month_began_is_used() -> None:
    con = connect()
    months = ["2026-11", "2026-12", "2027-01"]
    record_plan(con, run_at("2026-10-25 06:00", "2026-11"), months_frame(months, 10))
    record_plan(con, run_at("2026-10-31 06:00", "2026-11"), months_frame(months, 12))  # re-run: both kept
    record_plan(con, run_at("2026-11-01 06:00", "2026-12"), months_frame(["2026-12", "2027-01", "2027-02"], 14))
    assert len(plan_runs(con)) == 3
    latest = latest_plans(con, ["2026-11", "2026-12"]).set_index(["month", "pool"])
    # November: the 1 Nov run (no data span recorded) was made after November began: the 31 Oct run plans it.
    assert latest.loc[("2026-11", "chat"), "gpus_p50"] == 12
    assert latest.loc[("2026-12", "chat"), "gpus_p50"] == 14
    assert latest.loc[("2026-12", FLEET), "gpus_p50"] == 14


def test_the_run_on_the_first_from_data_to_the_31st_plans_the_month() -> None:
    """The scheduled run at 06:00 on 1 November saw data only up to 31 October: it is November's plan."""
    con = connect()
    early = new_run("2026-11", 1, {}, data_from_utc=None, data_to_utc=datetime(2026, 10, 20),
                    created_utc=datetime(2026, 10, 21))
    on_first = new_run("2026-11", 1, {}, data_from_utc=None, data_to_utc=datetime(2026, 10, 31, 23),
                       created_utc=datetime(2026, 11, 1, 6))
    peeked = new_run("2026-11", 1, {}, data_from_utc=None, data_to_utc=datetime(2026, 11, 2, 23),
                     created_utc=datetime(2026, 11, 3))
    for run, gpus in ((early, 10), (on_first, 12), (peeked, 99)):
        record_plan(con, run, months_frame(["2026-11"], gpus))
    assert latest_plans(con, ["2026-11"]).set_index("pool").loc["chat", "gpus_p50"] == 12


def test_a_bad_months_frame_stores_nothing() -> None:
    con = connect()
    good = months_frame(["2026-11"], 10)
    bad = pd.concat([good, good])  # the same month twice for a pool
    with pytest.raises(ValueError, match="more than once: \\[\\('2026-11', '__fleet__'\\), \\('2026-11', 'chat'\\)\\]"):
        record_plan(con, run_at("2026-10-25 06:00", "2026-11", 1), bad)
    with pytest.raises(pandera.errors.SchemaError):
        record_plan(con, run_at("2026-10-25 06:00", "2026-11", 1), good.assign(gpus_p50=-1))
    with pytest.raises(ValueError, match="not \\['2027-05'\\]"):
        record_plan(con, run_at("2026-10-25 06:00", "2026-11", 1), months_frame(["2027-05"], 10))
    assert len(plan_runs(con)) == 0


def test_insert_failure_rolls_back_the_run_row() -> None:
    con = connect()
    run = run_at("2026-10-25 06:00", "2026-11", 1)
    record_plan(con, run, months_frame(["2026-11"], 10))
    with pytest.raises(Exception):
        record_plan(con, run, months_frame(["2026-11"], 11))  # same run id: primary key violation
    assert len(plan_runs(con)) == 1
    assert latest_plans(con, ["2026-11"])["gpus_p50"].tolist() == [10, 10]


def test_no_history_reads_empty_on_a_read_only_database(tmp_path) -> None:
    path = tmp_path / "h.duckdb"
    connect(path).close()
    with connect(path, read_only=True) as con:
        assert latest_plans(con, ["2026-11"]).empty
        assert plan_runs(con).empty
