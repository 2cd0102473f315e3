"""``capplan.profile.exposure``: the observed span covers logged rows and hours fed by metrics alike."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
from typer.testing import CliRunner

from capplan import profile
from capplan.cli import app
from capplan.db import connect
from capplan.metrics.ingest import ensure_tables, store_hours


def test_metrics_hours_outside_the_logged_span_keep_their_rate(tmp_path):
    """Logs from 12:00 to 12:29:59 (1 request/s) and one metrics hour at 06:00 with 7,200 requests: the metrics
    hour is whole (exposure 3600 s, rate 2 req/s), not a gap outside the logs' span; the logged hour's rate is
    its 1,800 requests over its 1,799 observed seconds."""
    ts = pd.date_range("2026-10-05 12:00:00", periods=1800, freq="s")
    pd.DataFrame({"ts_utc": ts.strftime("%Y-%m-%dT%H:%M:%SZ"), "input_tokens": 10, "output_tokens": 5,
                  "model": "m"}).to_csv(tmp_path / "logs.csv", index=False)
    db = tmp_path / "mixed.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "logs.csv"), "--db", str(db)])
    assert result.exit_code == 0, result.output
    hour = datetime(2026, 10, 5, 6)
    traffic = pd.DataFrame([{"hour_utc": hour, "model": m, "requests": 7200, "errors": 0, "valid_events": 7200,
                             "success_events": 7200, "input_tokens_sum": 0, "output_tokens_sum": 0, "ttft_ms_sum": 0.0,
                             "ttft_count": 0, "latency_ms_sum": 0.0, "latency_count": 0, "peak_second_requests": 3}
                            for m in ("m", "__all__")])
    with connect(db) as con:
        ensure_tables(con)
        store_hours(con, "prom", [hour], {"traffic": traffic, "histogram": pd.DataFrame(),
                                          "concurrency": pd.DataFrame()}, step_s=60)
        hourly = profile.hourly_traffic(con, model="m").set_index("hour_utc")
    assert hourly.loc[pd.Timestamp(hour), "exposure_s"] == 3600.0
    assert hourly.loc[pd.Timestamp(hour), "avg_qps"] == 2.0
    assert hourly.loc[pd.Timestamp("2026-10-05 12:00"), "avg_qps"] == 1800 / 1799
