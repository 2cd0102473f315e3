"""Tests for capplan/drift/detect.py: windows, the alert rule and priced findings on generated logs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from capplan.config import CapplanConfig, DriftConfig
from capplan.db import connect
from capplan.drift.detect import detect_drift, window_comparisons
from capplan.drift.histogram import daily_histograms
from capplan.drift.pricing import at_baseline, window_mixes
from capplan.ingest import ensure_tables

CFG = CapplanConfig()


def test_injected_input_drift_is_found_dated_and_priced(drifted, drift_sample, costs_of):
    con, counterfactual = drifted
    costs = costs_of(con)
    volume = {"llama-3.1-8b": 1_000_000.0}
    found = detect_drift(con, CFG.drift, costs, volume)
    assert found[["model", "metric"]].values.tolist() == [["llama-3.1-8b", "input_tokens"]]
    f = found.iloc[0]
    assert abs(f["change_date"] - pd.Timestamp(drift_sample["drift_at"].date())) <= pd.Timedelta(days=7)
    assert f["relative_change"] > 0
    # truth: the same requests after the change, with and without the +30 %, priced at the operating point
    # of the drift-free log before the change (the modelled cost is not linear: mixes, not means)
    hist, plain = daily_histograms(con), daily_histograms(counterfactual)
    end = hist["day_utc"].max() + pd.Timedelta(days=1)
    cost = at_baseline(costs["llama-3.1-8b"], plain, "llama-3.1-8b", plain["day_utc"].min(), f["change_date"])
    drifted_mix, plain_mix = (window_mixes(h, ["llama-3.1-8b"], f["change_date"], end) for h in (hist, plain))
    true_usd = cost.usd(*drifted_mix.values()) - cost.usd(*plain_mix.values())
    assert f["usd_per_request_change"] == pytest.approx(true_usd, rel=0.10)
    assert f["usd_per_month_change"] == pytest.approx(true_usd * 1e6, rel=0.10)
    true_gpu_s = cost.gpu_seconds(*drifted_mix.values()) - cost.gpu_seconds(*plain_mix.values())
    assert f["gpus_change"] == pytest.approx(true_gpu_s * 1e6 / (365.25 / 12 * 86_400), rel=0.10)
    assert f["cost_source"] == "modelled" and "llama-3.1-8b on H100-SXM-80GB" in f["cost_model"]


def test_windows_cover_the_history_with_full_baselines(drifted, drift_sample):
    con, _ = drifted
    windows = window_comparisons(daily_histograms(con), CFG.drift)
    starts = sorted(windows["window_start"].unique())
    assert len(starts) == (56 - 28) // 7  # 4 windows of 7 days after a 28-day baseline
    assert (windows["window_start"] - windows["baseline_start"]).eq(pd.Timedelta(days=28)).all()
    assert windows["window_end"].max() == pd.Timestamp(drift_sample["start"]) + pd.Timedelta(days=drift_sample["days"])
    assert windows["alert"].sum() >= 1


@pytest.mark.parametrize("too_strict", [
    DriftConfig(psi_threshold=0.5), DriftConfig(relative_mean_change_threshold=0.5),
    DriftConfig(min_requests_per_window=10**6)])
def test_each_gate_can_silence_the_alert(drifted, too_strict, costs_of):
    con, _ = drifted
    assert detect_drift(con, too_strict, costs_of(con)).empty


@pytest.mark.slow
def test_false_alarm_rate_on_drift_free_logs_over_20_seeds(load_generated, costs_of):
    alarms = []
    for seed in range(20):
        con = load_generated(seed)
        found = detect_drift(con, CFG.drift, costs_of(con))
        alarms.append(len(found))
        con.close()
    seeds_with_alarm = sum(a > 0 for a in alarms)
    print(f"drift-free seeds with a false alarm: {seeds_with_alarm}/20 (findings per seed {alarms})")
    assert seeds_with_alarm <= 1


def test_bundled_sample_drift_is_found(costs_of):
    """The bundled sample (data/sample) carries one injected drift; its ground truth says which."""
    sample = Path(__file__).resolve().parents[2] / "data" / "sample"
    truth = json.loads((sample / "ground_truth.json").read_text())["drift"]
    con = connect()
    ensure_tables(con)
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select *, 0 from read_parquet($files)",
                {"files": [str(p) for p in sorted(sample.glob("requests-*.parquet"))]})
    found = detect_drift(con, CFG.drift, costs_of(con))
    assert found[["model", "metric"]].values.tolist() == [[truth["model"], f"{truth['metric']}_tokens"]]
    f = found.iloc[0]
    assert abs(f["change_date"] - pd.Timestamp(truth["start"][:10])) <= pd.Timedelta(days=7)
    assert f["relative_change"] == pytest.approx(truth["factor"] - 1, abs=0.05)
    assert f["usd_per_month_change"] > 0
