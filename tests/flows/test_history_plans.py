"""``capplan plan`` from 3 hours, 3 days and 3 weeks of generated history: what the report claims and refuses.

Issue 20: no confident number from too little data. Each plan runs through the CLI (one session
Prefect harness) on logs cut from :mod:`capplan.sample`; the report's headline notes, its
assumptions table, its demand table and its chart caption are read back from ``report.md``.
The last test drops ``status``, ``ttft_ms`` and ``latency_ms`` (a public trace's columns only): the
plan still runs, with the latency modelled and the SLOs "not measurable".
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import pandas as pd

from capplan.reports.formatting import column_label
import pytest
from typer.testing import CliRunner

from capplan.cli import app
from capplan.sample import SampleSpec, write_sample

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _logs(tmp: Path, days: int, hours: int | None = None, columns: list[str] | None = None) -> Path:
    """``days`` of generated traffic from 2026-11-01 (cut to the first ``hours`` from noon), as CSV."""
    raw = tmp / "raw.parquet"
    write_sample(SampleSpec(start=date(2026, 11, 1), days=days, requests_per_day=20000, seed=5), raw)
    frame = pd.read_parquet(raw)
    ts = pd.to_datetime(frame["ts_utc"], utc=True)
    if hours is not None:
        start = pd.Timestamp("2026-11-01 12:00", tz="UTC")
        frame = frame[(ts >= start) & (ts < start + pd.Timedelta(hours=hours))]
    out = tmp / "logs.csv"
    frame[columns or list(frame.columns)].to_csv(out, index=False)
    return out


def _plan(tmp: Path, write_plan_config, logs: Path) -> tuple[str, str]:
    cfg = write_plan_config(tmp, [str(logs)], forecast={"horizon_months": 2})
    result = CliRunner().invoke(app, ["plan", "--config", str(cfg), "--json"])
    assert result.exit_code == 0, result.output
    folder = Path(json.loads(result.stdout)["report_dir"])
    # read the Markdown as a person does: without its escapes (``latency\\_ms`` is ``latency_ms``)
    return re.sub(r"\\(.)", r"\1", (folder / "report.md").read_text()), result.stderr


def _table(md: str, title: str) -> pd.DataFrame:
    block = md.split(f"### {title}", 1)[1].split("\n\n")[1]
    lines = [ln.strip("|").split("|") for ln in block.splitlines() if not ln.startswith("|--")]
    frame = pd.DataFrame([[c.strip() for c in ln] for ln in lines[1:]], columns=[c.strip() for c in lines[0]])
    labels = {column_label(c): c for c in ("qps_p10", "qps_p50", "qps_p90")}  # headers are for people
    return frame.rename(columns=labels).replace({",": ""}, regex=True)


def _assumption(md: str, name: str) -> tuple[str, str]:
    row = re.search(rf"^\| (?:[^|]*: )?{re.escape(name)} \| (.*?) \| .*? \| (\w+) \|$", md, re.M)  # pool: name
    assert row, name
    return row.group(1), row.group(2)


def test_three_hours_refuses_a_forecast_and_sizes_the_observed_peak_flat(prefect_harness, write_plan_config,
                                                                          tmp_path):
    md, terminal = _plan(tmp_path, write_plan_config, _logs(tmp_path, 1, hours=3))
    headline = md.split("## Budget")[0]
    assert "only 3.0 h of history (a growth forecast needs 336 h = 14 days): no growth forecast" in headline
    assert "less than two daily cycles (48 h)" in headline
    assert "ShortHistoryWarning" not in terminal  # a note in the report, not a raw warning
    assert _assumption(md, "demand model") == ("flat (observed level, one level)", "assumed")
    assert _assumption(md, "history observed") == ("3.0", "measured")
    demand = _table(md, "Demand and constraints by month").astype({"qps_p10": float, "qps_p50": float,
                                                                    "qps_p90": float})
    # flat: every month the same, P10 < P50 < P90 with a real width, never ~0
    assert (demand.groupby("Pool")["qps_p50"].nunique() == 1).all()  # each pool flat over the months
    assert (demand["qps_p10"] < demand["qps_p50"]).all() and (demand["qps_p50"] < demand["qps_p90"]).all()
    assert (demand["qps_p10"] > 0.5 * demand["qps_p50"]).all()
    assert "all 3 hours of history" in md and "last 56 days" not in md


def test_three_days_keeps_the_daily_cycle_without_growth(prefect_harness, write_plan_config, tmp_path):
    md, _ = _plan(tmp_path, write_plan_config, _logs(tmp_path, 3))
    headline = md.split("## Budget")[0]
    assert "no growth forecast" in headline and "less than two weekly cycles (336 h)" in headline
    assert "no drift is tested" in headline
    assert _assumption(md, "demand model") == ("flat (observed level, by hour of day)", "assumed")
    assert "days of history" in md and "last 56 days" not in md


def test_three_weeks_forecasts_three_weeks_ahead_and_flattens_the_rest(prefect_harness, write_plan_config,
                                                                        tmp_path):
    md, _ = _plan(tmp_path, write_plan_config, _logs(tmp_path, 21))
    headline = md.split("## Budget")[0]
    assert "no growth forecast" not in headline
    assert re.search(r"the growth forecast reaches \d+ h \(\d+ days\) ahead, 1x the \d+ h of history", headline)
    assert _assumption(md, "demand model")[1] == "modelled"
    assert _assumption(md, "growth horizon supported")[1] == "modelled"
    demand = _table(md, "Demand and constraints by month").astype({"qps_p10": float, "qps_p50": float,
                                                                    "qps_p90": float})
    assert (demand["qps_p10"] < demand["qps_p50"]).all() and (demand["qps_p50"] < demand["qps_p90"]).all()
    assert (demand["qps_p10"] > 1e-3 * demand["qps_p50"]).all()  # never a 1e-12 req/s P10


def test_logs_without_status_ttft_or_latency_plan_with_modelled_latency(prefect_harness, write_plan_config,
                                                                         tmp_path):
    logs = _logs(tmp_path, 3, columns=["ts_utc", "input_tokens", "output_tokens"])
    md, _ = _plan(tmp_path, write_plan_config, logs)
    headline = md.split("## Budget")[0]
    assert "no request has latency_ms logged: latency modelled as" in headline
    assert "status was not logged (none of the" in headline
    assert "SLO 'availability' is not measurable from these logs" in headline
    assert _assumption(md, "latency_s")[1] == "modelled"
    assert _assumption(md, "burst_ratio")[1] == "modelled"
    assert _assumption(md, "requests measured (2xx)")[1] == "assumed"
    assert re.search(r"^\| (?:[^|]*: )?requests measured \(2xx\) \|", md, re.M) and "measured mean latency" not in md
