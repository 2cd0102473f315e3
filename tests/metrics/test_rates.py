"""ingest-rates: a rate series fills the hourly traffic; the ServeGen client series feeds `capplan forecast`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from capplan import profile
from capplan.cli import app
from capplan.db import connect
from capplan.metrics.client import MetricsError
from capplan.metrics.rates import ingest_rates

SERVEGEN = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks" / "servegen-clients-dev" / "clients_hourly.csv"


def test_requests_and_qps_per_interval(tmp_path):
    ts = pd.date_range("2026-10-05", periods=12, freq="10min")
    pd.DataFrame({"ts_utc": ts, "qps": [0.5] * 6 + [2.0] * 6, "model": "a",
                  "input_tokens": 100}).to_csv(tmp_path / "r.csv", index=False)
    con = connect(tmp_path / "r.duckdb")
    result = ingest_rates(con, tmp_path / "r.csv")
    assert (result["interval_s"], result["hours"], result["requests"]) == (600, 2, 6 * 300 + 6 * 1200)
    hourly = profile.hourly_traffic(con, model="a").sort_values("hour_utc")
    assert hourly["requests"].tolist() == [1800, 7200]
    assert hourly["peak_second_qps"].tolist() == [1, 2]  # busiest 10-min mean, rounded up
    ingest_rates(con, tmp_path / "r.csv")  # again: replaces, not adds
    assert profile.hourly_traffic(con, model="a")["requests"].sum() == 9000
    con.close()


@pytest.mark.parametrize("rows, message", [
    ({"ts_utc": ["2026-10-05 00:00", "soon"], "requests": [1, 2]}, r"row 3 .*column 'ts_utc'"),
    ({"ts_utc": ["2026-10-05 00:00", "2026-10-05 01:00"], "requests": [1, -2]}, r"row 3 .*column 'requests'.*>= 0"),
    ({"ts_utc": ["2026-10-05 00:00"], "input_tokens": [1]}, r"exactly one of the columns 'requests' or 'qps'"),
    ({"ts_utc": ["2026-10-05 00:00", "2026-10-05 00:07"], "requests": [1, 2]}, r"interval is 420 s"),
])
def test_bad_files_are_refused_whole(tmp_path, rows, message):
    pd.DataFrame(rows).to_csv(tmp_path / "bad.csv", index=False)
    con = connect(tmp_path / "r.duckdb")
    with pytest.raises(MetricsError, match=message):
        ingest_rates(con, tmp_path / "bad.csv")
    con.close()


@pytest.mark.skipif(not SERVEGEN.is_file(), reason="../shared (ServeGen client series) is absent")
def test_servegen_series_feeds_forecast(tmp_path):
    db = tmp_path / "s.duckdb"
    runner = CliRunner()
    loaded = runner.invoke(app, ["ingest-rates", str(SERVEGEN), "--db", str(db), "--map", "ts_utc=hour",
                                 "--map", "model=series_id", "--json"])
    assert loaded.exit_code == 0, loaded.output
    result = json.loads(loaded.output)
    assert result["hours"] == 336 and len(result["models"]) == 36
    forecast = runner.invoke(app, ["forecast", "--db", str(db), "--model", "__all__", "--horizon-days", "7", "--json"])
    assert forecast.exit_code == 0, forecast.output
    assert "hourly_avg_qps" in forecast.output


def test_the_plan_measures_a_rate_series_and_says_what_it_assumed(tmp_path):
    """Two days of 10-min rates, 500 input and 100 output tokens a request: the means are measured exactly; KV
    tokens per sequence (no length histogram) is assumed to be their sum, 600; latency and the peak in flight
    are modelled, and the assumptions rows say the peak is from a 10 min rate, not measured per second."""
    from capplan.config import CapplanConfig
    from capplan.plan.inputs import measure_inputs

    ts = pd.date_range("2026-10-05", periods=2 * 144, freq="10min")
    pd.DataFrame({"ts_utc": ts, "requests": 600, "input_tokens": 600 * 500, "output_tokens": 600 * 100}).to_csv(
        tmp_path / "r.csv", index=False)
    con = connect(tmp_path / "r.duckdb")
    ingest_rates(con, tmp_path / "r.csv")
    hourly = profile.hourly_traffic(con, model="default")
    measured = measure_inputs(con, hourly, CapplanConfig())
    assert (measured.input_tokens_per_request, measured.output_tokens_per_request) == (500.0, 100.0)
    assert measured.kv_tokens_per_sequence == 600.0 and measured.sources["kv_tokens_per_sequence"] == "assumed"
    assert measured.sources["latency_s"] == measured.sources["burst_ratio"] == "modelled"
    rows = measured.sourced()
    assert rows["metrics hours in the window"] == (48, "h", "measured")
    assert rows["peak in flight (rate-series hours)"][0].startswith("peak from 10 min rate, not measured per second")
    con.close()
