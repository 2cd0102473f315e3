"""Tests for ``capplan forecast`` (capplan/cli/forecast.py)."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from capplan import sql
from capplan.cli import app
from capplan.cli.forecast import _profile_series
from capplan.config import CapplanConfig
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.profile import refresh_rollups


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Three weeks of one model: 5-35 requests per hour on a daily cycle, and a 5-hour logging gap."""
    path = tmp_path_factory.mktemp("forecast") / "capplan.duckdb"
    con = connect(path)
    ensure_tables(con)
    con.execute("""
        insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id)
        select timestamp '2026-03-02' + h * interval 1 hour + k * interval 1 second,
               100 + h % 7, 10, 'm', 200, 200, 900, null, null, null, 1
        from range(21 * 24) a(h), range(60) b(k)
        where k < 20 + 15 * sin(2 * pi() * h / 24)
          and not (h >= 10 * 24 + 3 and h < 10 * 24 + 8)""")
    refresh_rollups(con)  # the command opens the database read-only
    con.close()
    return path


@pytest.mark.slow
def test_json_reports_each_target(db):
    result = CliRunner().invoke(app, ["forecast", "--db", str(db), "--horizon-days", "3", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) == {"requests_per_day", "peak_hour_qps", "input_tokens_mean", "output_tokens_mean",
                        "hourly_avg_qps"}
    assert len(out["requests_per_day"]["forecast"]) == 3
    assert len(out["hourly_avg_qps"]["forecast"]) == 72
    assert out["hourly_avg_qps"]["forecast"][0]["period"].startswith("2026-03-23 00:00")
    daily = out["requests_per_day"]
    assert daily["unit"] == "requests/day"
    assert daily["model"] in {**daily["candidates_backtest"], daily["model"]: 0}
    # the day is tried unconfirmed only on sub-daily data whose cycle the test missed: not on daily data,
    # nor on these hours, whose 24-hour cycle is plain
    assert daily["unconfirmed_day"] is None and out["hourly_avg_qps"]["unconfirmed_day"] is None
    # every day holds the same 24-hour cycle, so the forecast is that day's count (the gap day is filled)
    per_day = sum(min(60, math.ceil(20 + 15 * math.sin(2 * math.pi * h / 24))) for h in range(24))
    assert daily["forecast"][0]["mean"] == pytest.approx(per_day, rel=0.02)
    assert out["output_tokens_mean"]["forecast"][0]["mean"] == pytest.approx(10, rel=1e-6)
    for row in daily["forecast"]:
        assert row["lo_80"] <= row["mean"] <= row["hi_80"]


def test_human_output_and_errors(db, tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["forecast", "--db", str(tmp_path / "none.duckdb")])
    assert missing.exit_code == 1 and "does not exist" in missing.output
    unknown = runner.invoke(app, ["forecast", "--db", str(db), "--model", "nope"])
    assert unknown.exit_code == 1 and "no traffic for model 'nope'" in unknown.output
    assert "Traceback" not in unknown.output
    ok = runner.invoke(app, ["forecast", "--db", str(db), "--horizon-days", "2"])
    assert ok.exit_code == 0, ok.output
    assert "requests_per_day" in ok.output and "backtest  MASE" in ok.output and "candidates (MASE)" in ok.output


def test_too_short_targets_say_which_series_and_how_much_is_needed(bare_db):
    result = CliRunner().invoke(app, ["forecast", "--db", str(bare_db), "--horizon-days", "1", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert "hourly_avg_qps" in payload
    reason = payload["not_forecast"]["requests_per_day"]
    assert "requests_per_day (daily requests): 0 observed whole UTC day(s)" in reason
    assert "needs at least 3" in reason and "holds 3 h of traffic" in reason
    assert "y needs at least" not in result.output


@pytest.mark.slow
def test_a_horizon_longer_than_the_history_is_flattened_and_says_why(db):
    # 21 days of traffic (one with a logging gap, left out of the daily targets): 30 days ahead is more
    # than 1x the history, so each target's forecast repeats its last supported week after that point
    result = CliRunner().invoke(app, ["forecast", "--db", str(db), "--horizon-days", "30", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    daily = out["requests_per_day"]
    observed_days = daily["history"]["periods"] - 1  # the gap day is NaN
    assert len(daily["forecast"]) == 30 and daily["flattened_after_periods"] == observed_days
    assert any(f"{observed_days} observed days support a forecast {observed_days} days ahead" in n
               for n in daily["notes"])
    means = [row["mean"] for row in daily["forecast"]]
    assert all(means[i] == means[i - 7] for i in range(observed_days, 30))
    hourly = out["hourly_avg_qps"]
    with connect(db, read_only=True) as con:  # the observed (non-gap) hours, as the command reads them
        observed_hours = int(_profile_series(con, "__all__", CapplanConfig().profile.empty_hours)["hourly_avg_qps"]
                             .notna().sum())
    assert observed_hours < hourly["history"]["periods"] - 5 + 1  # the 5-hour logging gap is not history
    assert hourly["flattened_after_periods"] == observed_hours
    assert any("repeat the last supported week" in n for n in hourly["notes"])


def test_a_candidate_chosen_alone_keeps_its_row_among_the_candidates():
    # a cycle of 23 hours read as hourly demand: own_period_naive alone (forecasting/test_own_period.py)
    import numpy as np
    import pandas as pd

    from capplan.cli.forecast import _summary
    from capplan.forecasting import fit

    phase = np.arange(23) / 23
    y = pd.Series(np.tile(20 + 8 * np.sin(2 * np.pi * phase), 40)[:900],
                  index=pd.date_range("2026-01-01", periods=900, freq="h"))
    result = fit(y, 48, season_lengths=(24, 168), levels=(80,),
                 candidates=("seasonal_naive", "own_period_naive", "seasonal_profile", "profile_ses", "mstl_ses"))
    summary = _summary("hourly_avg_qps", y, result)
    assert summary["model"] == "own_period_naive"
    assert set(summary["candidates_backtest"]) == {"seasonal_naive", "own_period_naive", "seasonal_profile",
                                                   "profile_ses", "mstl_ses"}
    assert summary["candidates_backtest"]["own_period_naive"] == summary["chosen_backtest"]
