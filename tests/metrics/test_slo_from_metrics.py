"""``capplan slo`` on a metrics-only database: availability and a TTFT SLI from hourly counts of a real Prometheus.

The week of tests/metrics/conftest.py (two vLLM-style models, one counter reset) with failed requests in a gateway's
HTTP status counter (1 %, 30 % in hours 82-83) and vLLM's TTFT histogram, read with ``capplan ingest-metrics``; the
source names the failures with label matchers (``errors = 'gateway:requests_total{code=~"5.."}'``). Hand check:

- availability: valid = successes + failures, bad = failures, every hour exact (counters on the hour's grid);
- TTFT <= 500 ms (a bucket bound of vLLM's TTFT buckets): good = successes × (bucket count / observed) per hour,
  and the histogram observes exactly the successes, so good = the successes with TTFT <= 0.5 s, exact;
- TTFT <= 300 ms (inside the bucket (250, 500] ms): interpolated linearly inside the bucket, so the good count is
  off by at most the successes in that bucket, which the status's note states;
- alerts: hourly counts are spread over each hour's minutes (resolution 60 min): the 14.4x/60m/5m page on the
  incident (30 % failures against a 1.5 % budget: burn 20) fires inside its first hour (once the 60-minute
  window's mean failure share reaches 14.4 × 1.5 % = 21.6 %) and ends once the hour after it fills the short
  window.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from capplan.cli import app

CONFIG = """
[[metrics.sources]]
name = "prom"
url = "{url}"
flavour = "vllm"
step_s = 300
timeout_s = 30
[metrics.sources.metric_names]
errors = '{failures}'

[[slos]]
name = "availability"
target = 0.985
window_days = 30

[[slos]]
name = "ttft-500"
target = 0.9
window_days = 30
ttft_threshold_ms = 500

[[slos]]
name = "ttft-300"
target = 0.9
window_days = 30
ttft_threshold_ms = 300
"""


def _invoke(args: list[str]) -> dict:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def slos(backfilled_tsdb, prometheus_tools, spec, tmp_path_factory) -> dict:
    """``capplan slo --json`` of the metrics-only database, by SLO name (a server on the session's TSDB)."""
    _backfill, server_class = prometheus_tools
    root = tmp_path_factory.mktemp("slo-from-metrics")
    server = server_class(backfilled_tsdb, root).start()
    try:
        config = root / "capplan.toml"
        config.write_text(CONFIG.format(url=server.url, failures=spec.failures), encoding="utf-8")
        _invoke(["ingest-metrics", "--config", str(config), "--db", str(root / "m.duckdb"),
                 "--from", spec.start.date().isoformat(), "--to", (spec.start + timedelta(days=spec.days)).date().isoformat()])
    finally:
        server.stop()
    out = _invoke(["slo", "--config", str(config), "--db", str(root / "m.duckdb")])
    assert out["not_measurable"] == []
    return {"root": root, **{s["name"]: s for s in out["slos"]}}


def test_availability_counts_exact_from_the_failure_counter(slos, traffic):
    successes = sum(r["step"].size for r in traffic.values())
    failures = sum(r["failed_step"].size for r in traffic.values())
    s = slos["availability"]
    assert (s["valid_events"], s["bad_events"]) == (successes + failures, failures)
    assert s["sli"] == pytest.approx(successes / (successes + failures), rel=1e-12)
    assert s["resolution_min"] == 60 and "resolution 60 min" in s["notes"][0] and "14.4x/60m/5m" in s["notes"][0]


def test_ttft_at_a_bucket_bound_exact_and_inside_a_bucket_within_the_stated_split(slos, traffic, spec):
    successes = sum(r["step"].size for r in traffic.values())
    failures = sum(r["failed_step"].size for r in traffic.values())
    ttft = np.concatenate([r["ttft_s"] for r in traffic.values()])
    at_bound = slos["ttft-500"]
    assert at_bound["valid_events"] == successes + failures
    assert at_bound["valid_events"] - at_bound["bad_events"] == (ttft <= 0.5).sum()
    assert "is a bound of the TTFT histogram's buckets" in at_bound["notes"][1]
    inside = slos["ttft-300"]
    good, exact = inside["valid_events"] - inside["bad_events"], (ttft <= 0.3).sum()
    in_bucket = ((ttft > 0.25) & (ttft <= 0.5)).sum()
    assert 0 < abs(good - exact) <= in_bucket, (good, exact, in_bucket)
    note = inside["notes"][1]
    assert "inside (250, 500] ms" in note and "interpolated linearly" in note
    assert f"{in_bucket:,.0f} of the {successes:,.0f} successes" in note  # the split the note states is the bucket's


def test_the_incident_pages_within_its_first_hour(slos, spec):
    first, last, _share = spec.incident
    start = pd.Timestamp(spec.start.replace(tzinfo=None)) + pd.Timedelta(hours=first)
    end = pd.Timestamp(spec.start.replace(tzinfo=None)) + pd.Timedelta(hours=last)
    pages = [e for e in slos["availability"]["episodes"] if e["severity"] == "page"]
    assert len(pages) == 1, pages
    page = pages[0]
    assert start <= pd.Timestamp(page["start"]) < start + pd.Timedelta(hours=1)
    assert end < pd.Timestamp(page["end"]) <= end + pd.Timedelta(hours=1)
    assert "14.4x/60m/5m" in page["rules"]


def test_the_plan_reports_the_slo_from_metrics_hours_and_their_resolution(slos, prefect_harness):
    root = slos["root"]
    plan = _invoke(["plan", "--config", str(root / "capplan.toml"), "--db", str(root / "m.duckdb"),
                    "--out", str(root / "out")])
    report = (Path(plan["report_dir"]) / "report.md").read_text()
    assert "is not measurable" not in report
    assert "SLO 'availability': 168 h of the window are fed by Prometheus counters" in report
    assert "resolution 60 min" in report and "inside (250, 500\\] ms" in report
    assert re.search(r"llama-8b: requests measured \(2xx\) \| [\d,]+ \| requests \| measured", report)


def test_the_terminal_output_prints_the_notes(slos):
    root = slos["root"]
    result = CliRunner().invoke(app, ["slo", "--config", str(root / "capplan.toml"), "--db", str(root / "m.duckdb"),
                                      "--name", "ttft-300"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # rich wraps lines
    assert "note: 168 h of the window are fed by Prometheus counters" in text
    assert "note: TTFT <= 300 ms is read off the TTFT histogram's buckets" in text
