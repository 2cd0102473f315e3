"""The backtest of the whole plan: a known trend break is found, and its hours short match the rows."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from datetime import UTC, date, datetime

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from capplan import partitioned
from capplan.cli import app
from capplan.config import load_config
from capplan.db import connect
from capplan.history.as_of import connect_as_of
from capplan.history.backtest import backtest, plan_as_of
from capplan.ingest import ingest_paths
from capplan.config import IngestConfig, SourceConfig
from capplan.plan.fleet import fleet_for
from capplan.plan.inputs import measure_inputs
from capplan.plan.pools import pool_fleet_spec, pool_traffic, read_model_traffic
from capplan.profile import refresh_rollups
from capplan.sample import SampleSpec, write_sample
from capplan.sample.spec import DEFAULT_MODELS

#: One model, flat traffic for August and September, then twice the rate from 1 October: the plan made
#: on 1 October from flat history must fall short in October, not in September.
#: The 70B model, so a small log (6,000 requests a day) needs a fleet that a doubling visibly outgrows.
BEFORE = SampleSpec(date(2026, 8, 1), 61, 6000, seed=3, monthly_growth_fraction=0.0, incidents=False,
                    models=(replace(DEFAULT_MODELS[1], share=1.0),), bursts_per_day=0.0)
AFTER = replace(BEFORE, start=date(2026, 10, 1), days=31, requests_per_day=12000, seed=4)
SETTINGS = {"report": {"measured_window_days": 14}, "sizing": {"spares": 0, "zones": 1}}


@pytest.fixture(scope="module")
def broken_trend(tmp_path_factory, write_plan_config):
    root = tmp_path_factory.mktemp("backtest")
    files = [*write_sample(BEFORE, root / "a.parquet").paths, *write_sample(AFTER, root / "b.parquet").paths]
    cfg_path = write_plan_config(root, [str(p) for p in files], **SETTINGS)
    cfg = load_config(cfg_path)
    with connect(cfg.database.path) as con:
        results = ingest_paths(con, [str(p) for p in files], SourceConfig(name="s"), IngestConfig(contract_check="off"))
        assert {r.status for r in results} == {"loaded"}
        refresh_rollups(con)
    return cfg, cfg_path


def test_the_month_after_the_break_falls_short(broken_trend) -> None:
    cfg, _ = broken_trend
    result = backtest(cfg.database.path, cfg, "2026-09", "2026-10")
    by_month = {m.month: m for m in result.months}
    assert set(by_month) == {"2026-09", "2026-10"} and not result.skipped
    sep, octo = by_month["2026-09"], by_month["2026-10"]
    assert sep.under_capacity_hours_p90 == 0 and sep.peak_within_p90
    assert octo.under_capacity_hours_p50 > 100 and not octo.peak_within_p90  # twice the traffic
    assert octo.needed_gpus > octo.planned_gpus_p90
    assert octo.actual_need_cost_usd > octo.planned_cost_usd
    assert octo.demand_abs_pct_error == pytest.approx(0.5, abs=0.08)  # planned ≈ half of what came
    assert result.summary()["p90_coverage"] == 0.5


def test_a_month_the_logs_do_not_hold_yet_is_listed_per_pool(broken_trend) -> None:
    """November is after the last log: nothing to compare, so each pool is listed with the reason."""
    cfg, _ = broken_trend
    result = backtest(cfg.database.path, cfg, "2026-11", "2026-11")
    assert result.months == []
    assert result.skipped == [{"month": "2026-11", "reason": "pool llama-3.1-70b: no traffic in the logs for 2026-11"}]
    early = backtest(cfg.database.path, cfg, "2026-07", "2026-07")  # before the first log: no pool either
    assert early.skipped == [{"month": "2026-07", "reason": "no traffic before 2026-07"}]


def test_hours_short_match_a_direct_count_on_the_rows(broken_trend) -> None:
    """The backtest's hours under capacity equal a count from the raw rows, sized the same way."""
    cfg, _ = broken_trend
    month = "2026-10"
    [plan] = plan_as_of(cfg.database.path, cfg, month)
    [row] = [m for m in backtest(cfg.database.path, cfg, month, month).months]
    with connect(cfg.database.path, read_only=True) as con:
        counts = con.execute("select date_trunc('hour', ts_utc) as h, count(*) as n from requests "
                             "where ts_utc >= '2026-10-01' and ts_utc < '2026-11-01' group by 1").df()
    with connect_as_of(cfg.database.path, "2026-11-01") as con:
        hourly, _ = pool_traffic(read_model_traffic(con, cfg), plan.pool)
        measured = measure_inputs(con, hourly, cfg, models=list(plan.pool.models))
    spec = pool_fleet_spec(cfg, plan.pool, plan.gpu, plan.sized.first_p50.tensor_parallel, measured)
    need = np.array([fleet_for(measured.burst_ratio * n / 3600.0, spec, measured).total_gpus for n in counts["n"]])
    assert len(counts) == 744 == row.observed_hours
    assert row.under_capacity_hours_p50 == int((need > row.planned_gpus_p50).sum())
    assert row.under_capacity_hours_p90 == int((need > row.planned_gpus_p90).sum())


def test_a_plan_as_of_t_ignores_data_after_t(broken_trend, tmp_path, write_plan_config) -> None:
    """The plan made on 1 October is the same with or without October in the database."""
    cfg, _ = broken_trend
    files = write_sample(BEFORE, tmp_path / "a.parquet").paths
    only_before = load_config(write_plan_config(tmp_path, [str(p) for p in files], **SETTINGS))
    with connect(only_before.database.path) as con:
        ingest_paths(con, [str(p) for p in files], SourceConfig(name="s"), IngestConfig(contract_check="off"))
        refresh_rollups(con)
    [with_after] = plan_as_of(cfg.database.path, cfg, "2026-10")
    [without] = plan_as_of(only_before.database.path, only_before, "2026-10")
    pd.testing.assert_frame_equal(with_after.sized.months, without.sized.months)
    pd.testing.assert_frame_equal(with_after.forecast, without.forecast)
    assert with_after.measured == without.measured
    assert with_after.costs["P50"].total() == without.costs["P50"].total()


#: The ``--json`` keys issue 21 names, spelled as it spells them.
ISSUE_MONTH_KEYS = ("month", "pool", "planned_gpus_p50", "planned_gpus_p90", "needed_gpus", "under_capacity_hours_p50",
                    "under_capacity_hours_p90", "idle_gpu_hours", "planned_cost_usd", "actual_need_cost_usd")
ISSUE_SUMMARY_KEYS = ("p90_coverage", "demand_mape")


def test_cli_json_keys(broken_trend) -> None:
    """The issue's keys are there, exactly spelled, and carry the month that fell short; the extra keys are stable."""
    _, cfg_path = broken_trend
    out = CliRunner().invoke(app, ["backtest", "--from", "2026-10", "--to", "2026-10", "--config", str(cfg_path),
                                   "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    assert set(payload) == {"months", "skipped", "summary"} and payload["skipped"] == []
    [month] = payload["months"]
    assert set(ISSUE_MONTH_KEYS) <= set(month) and set(ISSUE_SUMMARY_KEYS) <= set(payload["summary"])
    assert set(month) - set(ISSUE_MONTH_KEYS) == {"gpu", "observed_hours", "planned_requests_p50", "actual_requests",
                                                  "demand_abs_pct_error", "planned_peak_qps_p90", "actual_peak_qps",
                                                  "peak_within_p90", "complete"}
    assert month["month"] == "2026-10" and month["pool"] == "llama-3.1-70b"
    # twice the traffic: short for days at P50, and for hours even at P90 (the P90 of the month's simulated peak)
    assert month["under_capacity_hours_p50"] > 100 and month["under_capacity_hours_p50"] >= month[
        "under_capacity_hours_p90"] > 0
    assert month["needed_gpus"] > month["planned_gpus_p90"] >= month["planned_gpus_p50"]
    assert month["actual_need_cost_usd"] > month["planned_cost_usd"] > 0 and month["idle_gpu_hours"] >= 0
    assert payload["summary"]["p90_coverage"] == 0.0
    assert payload["summary"]["demand_mape"] == pytest.approx(0.5, abs=0.08)  # planned ≈ half of what came
    bad = CliRunner().invoke(app, ["backtest", "--from", "2026-13", "--to", "2026-10", "--config", str(cfg_path)])
    assert bad.exit_code != 0 and "expected a month as YYYY-MM" in bad.output


def test_the_backtest_on_roll_ups_only_equals_the_raw_rows(broken_trend, tmp_path, write_plan_config) -> None:
    """The same rows as dt= day partitions, rolled up in this process into a central database that holds no
    request row (docs/partitioned.md): the backtest of the month that falls short is the raw-row backtest's."""
    cfg, _ = broken_trend
    hive = tmp_path / "hive"
    for spec in (BEFORE, AFTER):
        write_sample(spec, hive, split="day")
    central = load_config(write_plan_config(tmp_path, [], **SETTINGS))
    with connect(central.database.path) as con:
        found, _ = partitioned.discover_partitions(SourceConfig(name="hive", paths=[str(hive)]))
        summary = partitioned.store_rollups(con, [partitioned.roll_up_partition(
            p, IngestConfig(contract_check="off"), now_utc=datetime(2027, 1, 1, tzinfo=UTC)) for p in found])
        assert summary.failed == () and len(summary.rolled_up) == BEFORE.days + AFTER.days
        assert con.execute("select count(*) from requests").fetchone()[0] == 0  # roll-ups only
    raw = backtest(cfg.database.path, cfg, "2026-10", "2026-10")
    rolled = backtest(central.database.path, central, "2026-10", "2026-10")
    assert not raw.skipped and not rolled.skipped and len(raw.months) == len(rolled.months) == 1
    got, want = asdict(rolled.months[0]), asdict(raw.months[0])
    assert got == {k: pytest.approx(v, rel=1e-9) if isinstance(v, float) else v for k, v in want.items()}
    assert want["under_capacity_hours_p50"] > 100  # the month that falls short, on both paths
