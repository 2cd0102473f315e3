"""Tests for capplan/plan.py: months, demand, measured inputs, sizing and cost glue."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan import sql
from capplan import plan
from capplan.config import CapplanConfig, parse_config
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.sizing.cost.plan import plan_range
from capplan.sizing.fleet import size_fleet

# --- months ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("last_hour", "expected"), [
    ("2026-11-30 23:00", "2026-11"),   # the month's last hour is in the data: complete
    ("2026-12-01 05:00", "2026-11"),   # the daily ingest already brought a few December hours
    ("2026-11-29 12:00", "2026-10"),   # data stops before the end of November
    ("2026-01-31 23:59", "2026-01"),
])
def test_last_complete_month(last_hour, expected):
    assert str(plan.last_complete_month(pd.Timestamp(last_hour))) == expected


def test_plan_months_default_explicit_and_refused():
    assert plan.plan_months(pd.Timestamp("2026-12-01 05:00"), 3) == ["2026-12", "2027-01", "2027-02"]
    assert plan.plan_months(pd.Timestamp("2026-11-29 12:00"), 1) == ["2026-11"]  # partly observed, rest forecast
    assert plan.plan_months(pd.Timestamp("2026-11-30 23:00"), 2, "2027-03") == ["2027-03", "2027-04"]
    with pytest.raises(ValueError, match="already complete in the data.*plan 2026-12 or later"):
        plan.plan_months(pd.Timestamp("2026-11-30 23:00"), 2, "2026-11")


@pytest.mark.parametrize("bad", ["2026-13", "26-01", "2026/01", "", "2026-1"])
def test_parse_month_rejects_malformed(bad):
    with pytest.raises(ValueError, match="YYYY-MM"):
        plan.parse_month(bad)


def test_horizon_reaches_the_last_hour_of_the_last_month():
    # Dec 2026 + Jan 2027 = 31 + 31 days after the last November hour
    assert plan.forecast_horizon_hours(pd.Timestamp("2026-11-30 23:00"), ["2026-12", "2027-01"]) == 62 * 24
    assert plan.forecast_horizon_hours(pd.Timestamp("2026-11-30 23:30"), ["2026-12"]) == 31 * 24


# --- demand ----------------------------------------------------------------------------------------

def _flat_forecast(start: str, hours: int, mean: float) -> pd.DataFrame:
    idx = pd.date_range(start, periods=hours, freq="h")
    m = np.full(hours, mean)
    return pd.DataFrame({"mean": m, "lo_80": 0.8 * m, "hi_80": 1.3 * m, "lo_95": 0.7 * m, "hi_95": 1.5 * m}, index=idx)


def test_monthly_peak_qps_golden():
    fc = _flat_forecast("2026-12-01", 31 * 24 + 24, 10.0)
    fc.loc["2026-12-15 14:00", ["mean", "lo_80", "hi_80"]] = [20.0, 16.0, 26.0]  # the December peak hour
    out = plan.monthly_peak_qps(fc, ["2026-12", "2027-01"], burst_ratio=2.0)
    assert out["month"].tolist() == ["2026-12", "2027-01"]
    assert out[["qps_p10", "qps_p50", "qps_p90"]].to_numpy().tolist() == [[32.0, 40.0, 52.0], [16.0, 20.0, 26.0]]
    assert out["hours"].tolist() == [744, 24]


def test_monthly_peak_qps_errors():
    fc = _flat_forecast("2026-12-01", 24, 10.0)
    with pytest.raises(ValueError, match="no hours in month 2027-01"):
        plan.monthly_peak_qps(fc, ["2027-01"], 1.5)
    with pytest.raises(ValueError, match="burst_ratio must be >= 1"):
        plan.monthly_peak_qps(fc, ["2026-12"], 0.5)


def test_burst_ratio_uses_busy_hours_only():
    hourly = pd.DataFrame({"avg_qps": [0.01, 0.01, 10.0, 10.0, 20.0],
                           "concurrency_littles": [0.1, 0.1, 50.0, 50.0, 100.0],
                           "concurrency_measured_peak": [5, 5, 100, 150, 250]})  # quiet hours: ratio 50
    assert plan.burst_ratio(hourly) == pytest.approx(2.5)  # median of 2, 3, 2.5
    assert plan.burst_ratio(hourly, quantile=1.0) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="no hour with traffic"):
        plan.burst_ratio(hourly.assign(avg_qps=0.0))


@settings(max_examples=60, deadline=None)
@given(xs=st.lists(st.floats(0, 1e4, allow_nan=False), min_size=0, max_size=300),
       step=st.floats(0.5, 500))
def test_monotone_step_map_equals_the_direct_map(xs, step):
    fn = lambda x: int(np.ceil(x / step)) + 1  # noqa: E731 - a non-decreasing step function, like a GPU count
    arr = np.asarray(xs, dtype=float)
    assert plan.monotone_step_map(fn, arr).tolist() == [fn(x) for x in arr]


def test_monotone_step_map_calls_fewer_times_than_elements():
    calls = []
    out = plan.monotone_step_map(lambda x: calls.append(x) or int(x // 100), np.linspace(0, 999, 5000))
    assert out.max() == 9 and len(calls) < 300


# --- ingest notes ------------------------------------------------------------------------------------

def test_ingest_notes_name_the_files_that_need_attention():
    from capplan.ingest import FileResult

    results = [FileResult("a.parquet", "s", "loaded", 10, 10, 0), FileResult("b.csv", "s", "unchanged"),
               FileResult("c.csv", "s", "loaded", 1000, 990, 10), FileResult("d.csv", "s", "error", message="bad header"),
               FileResult("e.csv", "s", "refused", message="content changed")]
    assert plan.ingest_notes(results) == [
        "ingest: c.csv: 10 of 1,000 rows quarantined (see the quarantine table)",
        "ingest error: d.csv: bad header", "ingest refused: e.csv: content changed"]
    assert plan.ingest_notes([FileResult("f.csv", "s", "error", message="f.csv: no such file")]) == [
        "ingest error: f.csv: no such file"]


# --- measured inputs ---------------------------------------------------------------------------------

@pytest.fixture
def con():
    c = connect(":memory:")
    for name in ("ddl_ingest_ledger", "ddl_quarantine", "ddl_request_rows", "ddl_requests"):
        c.execute(sql.load(name))
    yield c
    c.close()


def _insert(con, rows):
    con.executemany("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values (?, ?, ?, 'm', ?, 100, ?, null, null, null, 1)", rows)


def test_measure_inputs_from_recent_successes(con):
    _insert(con, [("2026-10-01 00:00", 9000, 9000, 200, 99_000),   # older than the 28-day window
                  ("2026-11-20 00:00", 100, 50, 200, 2000), ("2026-11-21 00:00", 300, 150, 200, 4000),
                  ("2026-11-29 00:00", 5000, 5000, 500, 60_000)])   # failed: not the sized work
    hourly = pd.DataFrame({"avg_qps": [1.0, 1.0], "concurrency_littles": [1.0, 1.0],
                           "concurrency_measured_peak": [3, 2]})
    m = plan.measure_inputs(con, hourly, parse_config({"report": {"kv_tokens_quantile": 0.5}}))
    assert (m.requests, m.input_tokens_per_request, m.output_tokens_per_request) == (2, 200.0, 100.0)
    assert m.latency_s == pytest.approx(3.0)
    assert m.kv_tokens_per_sequence == pytest.approx(300.0)  # median of 150 and 450
    assert m.last_ts_utc == pd.Timestamp("2026-11-29") and m.burst_ratio == pytest.approx(2.5)


def test_measure_inputs_without_latency_or_rows_is_a_clear_error(con):
    hourly = pd.DataFrame({"avg_qps": [1.0], "concurrency_littles": [1.0], "concurrency_measured_peak": [1]})
    with pytest.raises(ValueError, match="no successful"):
        plan.measure_inputs(con, hourly, CapplanConfig())
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values ('2026-11-20', 1, 1, 'm', 200, null, null, null, null, null, 1)")
    with pytest.raises(ValueError, match="latency_ms"):
        plan.measure_inputs(con, hourly, CapplanConfig())


# --- sizing and cost --------------------------------------------------------------------------------

MEASURED = plan.MeasuredInputs(first_ts_utc=pd.Timestamp("2026-09-01"), last_ts_utc=pd.Timestamp("2026-11-30 23:00"),
                               requests=1000, input_tokens_per_request=800.0, output_tokens_per_request=250.0,
                               latency_s=4.0, kv_tokens_per_sequence=3000.0, burst_ratio=1.5)


def test_size_by_month_is_the_sizing_stage_at_each_level():
    cfg = CapplanConfig()
    demand = pd.DataFrame({"month": ["2026-12"], "qps_p10": [20.0], "qps_p50": [30.0], "qps_p90": [45.0]})
    out = plan.size_by_month(demand, cfg, MEASURED).iloc[0]
    for level, qps in (("p10", 20.0), ("p50", 30.0), ("p90", 45.0)):
        direct = size_fleet(peak_qps=qps, latency_s=4.0, output_tokens_per_request=250.0,
                            input_tokens_per_request=800.0, gpu=plan.get_gpu(cfg.sizing.gpu),
                            model=plan.get_model(cfg.sizing.model), target_utilisation=cfg.sizing.target_utilisation,
                            spares=cfg.sizing.spares, kv_tokens_per_sequence=3000.0)
        assert out[f"gpus_{level}"] == direct.total_gpus
    assert out["gpus_p10"] <= out["gpus_p50"] <= out["gpus_p90"]
    assert out["binding"] in ("throughput", "memory")


def test_fleet_by_month_is_validated():
    fc = _flat_forecast("2026-12-01", 24, 10.0)
    out = plan.fleet_by_month(fc, ["2026-12"], CapplanConfig(), MEASURED)
    assert out.loc[0, "qps_p50"] == pytest.approx(15.0) and out.loc[0, "hours"] == 24
    with pytest.raises(pa.errors.SchemaError, match="ordered"):
        plan.MonthlyFleet.validate(out.assign(gpus_p10=out["gpus_p90"] + 1))


def test_hourly_need_and_cost_match_the_stage_functions():
    cfg = CapplanConfig()
    fc = _flat_forecast("2026-12-01", 31 * 24, 10.0)
    fc["mean"] = 10 + 5 * np.sin(np.arange(len(fc)) * 2 * np.pi / 24)  # a daily cycle
    fc["lo_80"], fc["hi_80"] = 0.8 * fc["mean"], 1.3 * fc["mean"]
    hours, need = plan.hourly_need_gpus(fc, ["2026-12"], cfg, MEASURED)
    assert len(hours) == 744 and set(need) == {"P10", "P50", "P90"}
    i = int(np.argmax(fc["mean"].to_numpy()))
    assert need["P50"][i] == plan.fleet_for(1.5 * fc["mean"].iloc[i], cfg, MEASURED).total_gpus
    assert np.all(need["P10"] <= need["P50"]) and np.all(need["P50"] <= need["P90"])
    costs = plan.cost_by_level(hours, need, cfg)
    prices = plan.load_price_book(cfg.cost.price_book).gpu(cfg.sizing.gpu).option_prices(cfg.cost.reserved_term)
    direct = plan_range(hours, need, commit_level="P50", gpu_type=cfg.sizing.gpu, prices=prices)
    assert costs["P90"].months[0].total_cost_usd == pytest.approx(direct["P90"].months[0].total_cost_usd)
    assert costs["P50"].reserved_gpus == direct["P50"].reserved_gpus


def test_cost_per_unit_and_measured_interruptible_share_reach_the_cost_stage():
    from dataclasses import replace
    cfg = CapplanConfig()
    fc = _flat_forecast("2026-12-01", 24, 10.0)
    hours, need = plan.hourly_need_gpus(fc, ["2026-12"], cfg, MEASURED)
    requests, tokens = plan.hourly_volumes(fc, ["2026-12"], MEASURED)
    assert requests["P50"].sum() == pytest.approx(10.0 * 3600 * 24)       # 10 QPS for a day
    assert tokens["P50"].sum() == pytest.approx(10.0 * 3600 * 24 * 250.0)  # × measured 250 tokens/request
    costs = plan.cost_by_level(hours, need, cfg, MEASURED, (requests, tokens))
    total = costs["P50"].total()
    assert total.usd_per_1k_requests == pytest.approx(total.total_cost_usd / (requests["P50"].sum() / 1e3))
    # A measured share replaces the assumed 0: spot can only make the plan cheaper or equal.
    spot = plan.cost_by_level(hours, need, cfg, replace(MEASURED, interruptible_share=0.5), (requests, tokens))
    assert spot["P50"].total().total_cost_usd <= total.total_cost_usd
    assert plan.assumptions_table(cfg, replace(MEASURED, interruptible_share=0.5).table()).set_index(
        "name").loc["interruptible_share", "source"] == "measured"


# --- assumptions --------------------------------------------------------------------------------------

def test_assumptions_table_marks_measured_and_assumed_with_units():
    table = plan.assumptions_table(CapplanConfig(), MEASURED.table())
    by_name = table.set_index("name")
    assert by_name.loc["latency_s", "source"] == "measured" and by_name.loc["latency_s", "unit"] == "s"
    assert by_name.loc["sizing.target_utilisation", "source"] == "assumed"
    assert by_name.loc["sizing.spares", "unit"] == "count"
    assert by_name.loc["forecast.horizon_months", "unit"] == "months"
    assert set(table["source"]) == {"measured", "assumed"}
    assert (table["unit"] != "").all()


@settings(max_examples=40, deadline=None)
@given(tokens=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=60),
       quantile=st.floats(0.01, 0.99))
def test_kv_quantile_from_the_hourly_rollup_equals_quantile_cont(tokens, quantile):
    """The roll-up keeps exact counts per token total, so any quantile equals DuckDB's over the raw rows."""
    c = connect(":memory:")
    ensure_tables(c)
    c.executemany("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values ('2026-11-20 10:00', ?, ?, 'm', 200, 100, 1000, null, null, null, 1)",
                  tokens)
    (want,) = c.execute("select quantile_cont(input_tokens + output_tokens, ?) from requests", [quantile]).fetchone()
    m = plan.measure_inputs(c, pd.DataFrame({"avg_qps": [1.0], "concurrency_littles": [1.0],
                                             "concurrency_measured_peak": [1]}),
                            parse_config({"report": {"kv_tokens_quantile": quantile}}))
    assert m.kv_tokens_per_sequence == pytest.approx(want, rel=1e-12, abs=1e-9)
    c.close()
