"""Tests for capplan/drift.py and sql/int_drift_daily_histogram.sql on real DuckDB data."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from capplan import sql
from capplan.config import CapplanConfig, DriftConfig
from capplan.db import connect
from capplan.drift.detect import (
    BIN_GAMMA,
    RequestCost,
    cost_change_decomposition,
    daily_histograms,
    detect_drift,
    request_costs,
    window_comparisons,
)
from capplan.ingest import ensure_tables
from capplan.sample import Drift, SampleSpec, iter_days

START = date(2026, 1, 5)
DRIFT_AT = datetime(2026, 2, 17, tzinfo=UTC)  # a Tuesday in the 7th week
CFG = CapplanConfig()


def _load(spec: SampleSpec):
    con = connect()
    ensure_tables(con)
    con.register("generated", pa.concat_tables(c.table for c in iter_days(spec)))
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select *, 0 from generated")
    con.unregister("generated")
    return con


def _spec(seed: int, drift: Drift | None = None) -> SampleSpec:
    # small on purpose: 2,000 requests/day × 8 weeks keeps 20 seeds fast
    return SampleSpec(start=START, days=56, requests_per_day=2_000, seed=seed, incidents=False, drift=drift)


def _costs(con) -> dict[str, RequestCost]:
    return request_costs(CFG, [m for (m,) in con.execute("select distinct model from requests").fetchall()])


def test_daily_histogram_sql_on_a_few_rows():
    con = connect()
    ensure_tables(con)
    con.execute("""insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values
        ('2026-01-01 23:59:59', 1, 0, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-01-01 10:00:00', 2, 5, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-01-01 11:00:00', 2, 0, 'a', 503, null, 1, null, null, null, 1),
        ('2026-01-02 00:00:00', 1000, 7, 'a', 200, 1, 1, null, null, null, 1)""")
    got = daily_histograms(con)
    inputs = got[got["metric"] == "input_tokens"]
    bin_of = lambda x: math.floor(math.log(x) / math.log(BIN_GAMMA))  # noqa: E731
    assert inputs[["bin", "requests", "tokens_sum"]].values.tolist() == [[0, 1, 1], [bin_of(2), 1, 2],
                                                                         [bin_of(1000), 1, 1000]]
    assert inputs["day_utc"].dt.day.tolist() == [1, 1, 2]  # the 503 is not served: not counted
    outputs = got[got["metric"] == "output_tokens"]
    assert outputs[outputs["bin"] == -1]["requests"].tolist() == [1]  # 0 tokens go to bin -1


@pytest.fixture(scope="module")
def drifted():
    spec = _spec(11, Drift("llama-3.1-8b", "input", DRIFT_AT, 1.3))
    return _load(spec), _load(_spec(11))  # same seed without drift: the counterfactual, row for row


def test_injected_input_drift_is_found_dated_and_priced(drifted):
    con, counterfactual = drifted
    costs = _costs(con)
    volume = {"llama-3.1-8b": 1_000_000.0}
    found = detect_drift(con, CFG.drift, costs, volume)
    assert found[["model", "metric"]].values.tolist() == [["llama-3.1-8b", "input_tokens"]]
    f = found.iloc[0]
    assert abs(f["change_date"] - pd.Timestamp(DRIFT_AT.date())) <= pd.Timedelta(days=7)
    assert f["relative_change"] > 0
    # truth: the same requests after the change, with and without the +30 %
    after = "ts_utc >= ? and model = 'llama-3.1-8b' and status between 200 and 299"
    (drifted_mean,) = con.execute(f"select avg(input_tokens) from requests where {after}", [f["change_date"]]).fetchone()
    (plain_mean,) = counterfactual.execute(f"select avg(input_tokens) from requests where {after}",
                                           [f["change_date"]]).fetchone()
    cost = costs["llama-3.1-8b"]
    true_usd = cost.usd(drifted_mean, 0) - cost.usd(plain_mean, 0)
    assert f["usd_per_request_change"] == pytest.approx(true_usd, rel=0.10)
    assert f["usd_per_month_change"] == pytest.approx(true_usd * 1e6, rel=0.10)
    true_gpu_s = cost.gpu_seconds(drifted_mean, 0) - cost.gpu_seconds(plain_mean, 0)
    assert f["gpus_change"] == pytest.approx(true_gpu_s * 1e6 / (365.25 / 12 * 86_400), rel=0.10)


def test_windows_cover_the_history_with_full_baselines(drifted):
    con, _ = drifted
    windows = window_comparisons(daily_histograms(con), CFG.drift)
    starts = sorted(windows["window_start"].unique())
    assert len(starts) == (56 - 28) // 7  # 4 windows of 7 days after a 28-day baseline
    assert (windows["window_start"] - windows["baseline_start"]).eq(pd.Timedelta(days=28)).all()
    assert windows["window_end"].max() == pd.Timestamp(START) + pd.Timedelta(days=56)
    assert windows["alert"].sum() >= 1


@pytest.mark.parametrize("too_strict", [
    DriftConfig(psi_threshold=0.5), DriftConfig(relative_mean_change_threshold=0.5),
    DriftConfig(min_requests_per_window=10**6)])
def test_each_gate_can_silence_the_alert(drifted, too_strict):
    con, _ = drifted
    assert detect_drift(con, too_strict, _costs(con)).empty


@pytest.mark.slow
def test_false_alarm_rate_on_drift_free_logs_over_20_seeds():
    alarms = []
    for seed in range(20):
        con = _load(_spec(seed))
        found = detect_drift(con, CFG.drift, _costs(con))
        alarms.append(len(found))
        con.close()
    seeds_with_alarm = sum(a > 0 for a in alarms)
    print(f"drift-free seeds with a false alarm: {seeds_with_alarm}/20 (findings per seed {alarms})")
    assert seeds_with_alarm <= 1


def test_cost_change_decomposition_adds_up_and_isolates_the_drift(drifted):
    con, counterfactual = drifted
    costs = _costs(con)
    drift_parts = cost_change_decomposition(daily_histograms(con), "2026-01", "2026-02", costs).set_index("component")
    plain_parts = cost_change_decomposition(daily_histograms(counterfactual), "2026-01", "2026-02",
                                            costs).set_index("component")["usd_change"]
    parts = drift_parts["usd_change"]
    assert parts.drop("total").sum() == pytest.approx(parts["total"], rel=1e-12)
    assert parts["volume"] > 0  # the generator grows 5 %/month
    # the drift adds to the input-length part only (volume and shares are the same rows)
    assert parts["input_length"] > plain_parts["input_length"]
    assert parts["volume"] == pytest.approx(plain_parts["volume"], rel=0.02)
    assert parts["model_mix"] == pytest.approx(plain_parts["model_mix"], abs=1e-9 + 0.02 * abs(plain_parts["model_mix"]))


def test_decomposition_hand_worked_on_two_months():
    con = connect()
    ensure_tables(con)
    # January: 2 requests of (100 in, 10 out); February: 3 requests of (200 in, 10 out)
    con.execute("""insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values
        ('2026-01-10', 100, 10, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-01-11', 100, 10, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-02-10', 200, 10, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-02-11', 200, 10, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-02-12', 200, 10, 'a', 200, 1, 1, null, null, null, 1)""")
    # 1 USD per 100 input tokens, 1 USD per 10 output tokens: c = in/100 + out/10 [USD]
    cost = {"a": RequestCost(100.0, 10.0, 3600.0)}
    parts = cost_change_decomposition(daily_histograms(con), "2026-01", "2026-02", cost).set_index("component")
    # C0 = 2 × 2 = 4, C1 = 3 × 3 = 9; Shapley for V·c: ΔV·(c0+c1)/2 = 2.5, Δc·(V0+V1)/2 = 2.5
    assert parts.loc["total", "usd_change"] == pytest.approx(5.0)
    assert parts.loc["volume", "usd_change"] == pytest.approx(2.5)
    assert parts.loc["input_length", "usd_change"] == pytest.approx(2.5)
    assert parts.loc["output_length", "usd_change"] == pytest.approx(0.0)
    assert parts.loc["model_mix", "usd_change"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="no served requests in 2026-03"):
        cost_change_decomposition(daily_histograms(con), "2026-01", "2026-03", cost)
    with pytest.raises(ValueError, match="no cost model for log models"):
        cost_change_decomposition(daily_histograms(con), "2026-01", "2026-02", {})


def test_bundled_sample_drift_is_found():
    """The bundled sample (data/sample) carries one injected drift; its ground truth says which."""
    sample = Path(__file__).resolve().parents[2] / "data" / "sample"
    truth = json.loads((sample / "ground_truth.json").read_text())["drift"]
    con = connect()
    ensure_tables(con)
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select *, 0 from read_parquet($files)",
                {"files": [str(p) for p in sorted(sample.glob("requests-*.parquet"))]})
    found = detect_drift(con, CFG.drift, _costs(con))
    assert found[["model", "metric"]].values.tolist() == [[truth["model"], f"{truth['metric']}_tokens"]]
    f = found.iloc[0]
    assert abs(f["change_date"] - pd.Timestamp(truth["start"][:10])) <= pd.Timedelta(days=7)
    assert f["relative_change"] == pytest.approx(truth["factor"] - 1, abs=0.05)
    assert f["usd_per_month_change"] > 0
