"""``capplan plan`` from Prometheus metrics against ``capplan plan`` from the per-request logs of the same traffic.

Four weeks of generated traffic (``capplan.sample`` with its defaults: two models, daily and weekly
cycles, growth and bursts; successful requests only) are written twice: as a per-request log (Parquet,
``capplan ingest``) and as the vLLM counters, histograms and running gauge a Prometheus would have
scraped every 5 minutes (``vllm:request_success_total`` ... with vLLM's own bucket bounds and one
counter reset), backfilled into a real ``prometheus`` and read with ``capplan ingest-metrics``. Both
databases are planned with the same config.

What the metrics path must give exactly, and what differs by construction (docs/metrics.md):

- **Hourly counts: exact, by completion.** vLLM counts a request when it finishes; the logs file it
  under its arrival. The metrics hours equal the generated requests counted by completion hour,
  every hour, the counter reset included; the two ways of counting differ by the requests in flight
  at an hour boundary (≈ λ·W: ≤ 2.4 % of an hour's count here).
- **Token percentiles** within the bucket error bound of vLLM's 1-2-5 buckets
  (:func:`capplan.metrics.hourly.bucket_relative_error`); token means exact (counters).
- **The design peak = burst ratio × the forecast month's busiest hour.** The burst ratio (peak over
  mean requests in flight) is measured from the logs and modelled from the metrics ("peak from 5 min
  rate, not measured per second": a 1-minute burst is spread over its 5-minute step); both are
  medians over busy hours and agree within 2 %. The forecast's busiest hour is the forecaster's
  answer to its hourly series: the metrics plan's equals the forecast of the generated requests
  counted by completion hour, the logs plan's that of the same requests by arrival hour. Those two
  series differ by ≤ 2.4 % an hour, yet the forecaster's discrete choices (which hours its outlier
  rule replaces, how many candidate models it combines) can move its month peak by more (−7 % for
  the 70B pool with this seed): the forecaster's sensitivity (issue 22), measured here by running it
  on both truths, not a property of the metrics path.
- **GPUs per unit of design peak** (the throughput-bound GPUs before rounding, over the design peak
  they are sized at: token means, latency, performance model) agree within 2 %, and the whole GPUs
  at P50 and P90, every pool and month, within 2 %.
- **Peak in flight.** From the logs it is measured (a sweep over every request's
  ``[arrival, arrival + latency)``); a gauge scraped every 5 minutes sees 12 instants an hour and
  misses the busiest moment. The metrics path models it: the counted arrivals of each 5-minute step,
  latencies drawn from the hour's e2e-latency histogram, swept the same way (``capplan.metrics.ingest``).
- **KV tokens** come from pairing the two length histograms rank by rank (their joint is not
  exported): up to 21 % off here; both pools are throughput-bound.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as arrow
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from capplan import profile
from capplan.cli import app
from capplan.config import load_config
from capplan.db import connect
from capplan.metrics.hourly import bucket_relative_error
from capplan.plan.demand import plan_demand
from capplan.sample import SampleSpec
from capplan.sample.generate import iter_days
from capplan.sample.spec import DEFAULT_MODELS

pytestmark = pytest.mark.slow

START = date(2026, 10, 4)  # four whole weeks to the end of October: the plan's first month is November
DAYS = 28
STEP_S = 300
RESET_STEP = 3000  # llama-3.1-8b's process restarts just after this scrape: its counters restart from 0
TOKEN_LE = {"llama-3.1-8b": (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000),
            "llama-3.1-70b": (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000)}
"""vLLM's 1-2-5 token buckets up to each model's context length."""
E2E_LE = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
          960.0, 1920.0, 7680.0)
"""vLLM's ``vllm:e2e_request_latency_seconds`` buckets. [s]"""
CONFIG = """
[forecast]
horizon_months = 2

[[metrics.sources]]
name = "prom"
url = "{url}"
flavour = "vllm"
step_s = 300
timeout_s = 60

[[pools]]
name = "chat"
models = ["llama-3.1-8b"]
model = "llama-3.1-8b"
gpu = "L40S-48GB"

[[pools]]
name = "large"
models = ["llama-3.1-70b"]
model = "llama-3.1-70b"
gpu = "H100-SXM-80GB"
tensor_parallel = 4
"""


def generate_requests() -> arrow.Table:
    """The traffic: 40,000 requests a day at the start, 70 % chat and 30 % 70B, bursts on, successful ones only."""
    models = (replace(DEFAULT_MODELS[0], share=0.7), replace(DEFAULT_MODELS[1], share=0.3))
    spec = SampleSpec(start=START, days=DAYS, requests_per_day=40_000, seed=11, incidents=False, models=models)
    table = arrow.concat_tables([c.table for c in iter_days(spec)])
    return table.filter(pc.equal(table["status"], 200))


def write_vllm_openmetrics(table: arrow.Table, path: Path) -> None:
    """What vLLM would export for ``table``, sampled every ``STEP_S`` over the span (OpenMetrics text).

    Counters and histograms count a request at its completion (arrival + latency); the running gauge
    at a scrape is the requests arrived and not yet completed.
    """
    start_s = int(datetime(START.year, START.month, START.day, tzinfo=UTC).timestamp())
    ts = start_s + np.arange(DAYS * 86400 // STEP_S + 1) * STEP_S
    arrive = pc.cast(pc.cast(table["ts_utc"], arrow.timestamp("us")), arrow.int64()).to_numpy() / 1e6
    latency = table["latency_ms"].to_numpy() / 1000.0
    model = np.asarray(table["model"].cast(arrow.string()))
    families: dict[str, tuple[str, list[str]]] = {}

    def add(family: str, kind: str, lines: list[str]) -> None:
        families.setdefault(family, (kind, []))[1].extend(lines)

    for name in sorted(set(model)):
        sel = model == name
        order = np.argsort(arrive[sel] + latency[sel])
        finish = (arrive[sel] + latency[sel])[order]
        at = np.searchsorted(finish, ts, side="right")  # completed by each scrape
        reset = RESET_STEP if name == "llama-3.1-8b" else None

        def counter(weight: np.ndarray) -> np.ndarray:
            value = np.concatenate([[0.0], np.cumsum(weight[order])])[at]
            if reset is not None:
                value[reset + 1:] -= value[reset]
            return value

        def series(metric: str, labels: str, value: np.ndarray, fmt: str = "{:.0f}") -> list[str]:
            return [f"{metric}{{{labels}}} {fmt.format(v)} {t}" for v, t in zip(value, ts)]

        label = f'model_name="{name}"'
        one = np.ones(sel.sum())
        inp, out = (table[c].to_numpy()[sel].astype(float) for c in ("input_tokens", "output_tokens"))
        add("vllm:request_success", "counter", series("vllm:request_success_total", label, counter(one)))
        add("vllm:prompt_tokens", "counter", series("vllm:prompt_tokens_total", label, counter(inp)))
        add("vllm:generation_tokens", "counter", series("vllm:generation_tokens_total", label, counter(out)))
        for family, x, le in (("vllm:request_prompt_tokens", inp, TOKEN_LE[name]),
                              ("vllm:request_generation_tokens", out, TOKEN_LE[name]),
                              ("vllm:e2e_request_latency_seconds", latency[sel], E2E_LE)):
            lines = [line for b in le
                     for line in series(f"{family}_bucket", f'{label},le="{b}"', counter((x <= b).astype(float)))]
            lines += series(f"{family}_bucket", f'{label},le="+Inf"', counter(one))
            lines += series(f"{family}_count", label, counter(one))
            lines += series(f"{family}_sum", label, counter(x), "{:.6f}")
            add(family, "histogram", lines)
        running = np.searchsorted(np.sort(arrive[sel]), ts, side="right") - at
        add("vllm:num_requests_running", "gauge", series("vllm:num_requests_running", label, running))
    text = [line for family, (kind, lines) in families.items() for line in (f"# TYPE {family} {kind}", *lines)]
    path.write_text("\n".join([*text, "# EOF"]) + "\n", encoding="utf-8")


def _invoke(args: list[str]) -> dict:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def plans(prefect_harness, prometheus_tools, tmp_path_factory) -> dict:
    """Both plans' ``--json`` and report folders: ``{"logs": ..., "metrics": ...}``."""
    backfill, server_class = prometheus_tools
    root = tmp_path_factory.mktemp("plan-from-metrics")
    table = generate_requests()
    pq.write_table(table, root / "requests.parquet")
    write_vllm_openmetrics(table, root / "metrics.om")
    backfill(root / "metrics.om", root / "tsdb")
    (root / "metrics.om").unlink()
    server = server_class(root / "tsdb", root).start()
    try:
        config = root / "capplan.toml"
        config.write_text(CONFIG.format(url=server.url), encoding="utf-8")
        ingested = _invoke(["ingest-metrics", "--config", str(config), "--db", str(root / "metrics.duckdb"),
                            "--from", START.isoformat(), "--to", "2026-11-01"])
    finally:
        server.stop()
    _invoke(["ingest", str(root / "requests.parquet"), "--db", str(root / "logs.duckdb")])
    out = {"rows": table.num_rows, "ingested": ingested[0], "truth": truth(table), "config": config,
           "metrics_db": root / "metrics.duckdb", "logs_db": root / "logs.duckdb"}
    for name in ("logs", "metrics"):
        out[name] = _invoke(["plan", "--config", str(config), "--db", str(root / f"{name}.duckdb"),
                             "--out", str(root / f"out-{name}")])
    return out


def truth(table: arrow.Table) -> dict:
    """Per model: the requests of each ingested hour by arrival and by completion, and the token counts of the
    requests completed inside the ingested hours (what the counters and histograms saw)."""
    start_s = int(datetime(START.year, START.month, START.day, tzinfo=UTC).timestamp())
    arrive = pc.cast(pc.cast(table["ts_utc"], arrow.timestamp("us")), arrow.int64()).to_numpy() / 1e6 - start_s
    finish = arrive + table["latency_ms"].to_numpy() / 1000.0
    model = np.asarray(table["model"].cast(arrow.string()))
    hours = DAYS * 24
    out = {}
    for name in sorted(set(model)):
        sel = model == name
        done = sel & (finish < hours * 3600)
        out[name] = {"arrival": np.bincount((arrive[sel] // 3600).astype(int), minlength=hours)[:hours],
                     "completion": np.bincount((finish[done] // 3600).astype(int), minlength=hours),
                     **{c: np.sort(table[c].to_numpy()[done]) for c in ("input_tokens", "output_tokens")}}
    return out


def _months(plan: dict) -> pd.DataFrame:
    return pd.DataFrame([{"pool": p["pool"], **m} for p in plan["pools"] for m in p["months"]]).set_index(
        ["pool", "month"]).sort_index()


def test_metrics_hold_every_request_the_logs_hold(plans):
    ingested = plans["ingested"]
    assert ingested["hours_stored"] == DAYS * 24 and ingested["models"] == ["llama-3.1-70b", "llama-3.1-8b"]
    # the last requests of 31 Oct complete after midnight, outside the ingested hours: a handful
    assert 0 <= plans["rows"] - ingested["requests"] <= 20


def test_hourly_counts_exact_by_completion_and_token_percentiles_within_the_bucket_bound(plans):
    con = connect(plans["metrics_db"], read_only=True)
    try:
        hourly = profile.hourly_traffic(con)
        dist = profile.token_distribution(con, grain="month")
    finally:
        con.close()
    for model, t in plans["truth"].items():
        got = hourly[hourly["model"] == model].sort_values("hour_utc")["requests"].to_numpy()
        np.testing.assert_array_equal(got, t["completion"])  # every hour, bursts and the counter reset included
        # counted by arrival (the logs) the hours differ by the requests in flight at their boundaries (~ λ·W):
        # at most 2.4 % of an hour's count here (a quiet hour of the 70B model, 18 s latency)
        gap = np.abs(t["completion"] - t["arrival"]) / t["arrival"]
        assert 0 < gap.max() < 0.05, (model, gap.max())
        row = dist[dist["model"] == model].iloc[0]
        bound = bucket_relative_error(TOKEN_LE[model])
        for column in ("input_tokens", "output_tokens"):
            x = t[column]
            for q in (50, 90, 99):
                exact = x[int(np.ceil(q / 100 * x.size)) - 1]
                assert abs(row[f"{column}_p{q}"] - exact) <= bound * exact, (model, column, q, row[f"{column}_p{q}"], exact)
            assert row[f"{column}_mean"] == pytest.approx(x.mean(), rel=1e-12)


def _busiest_hour_p50(plans: dict, hourly: pd.DataFrame) -> float:
    """The plan's forecast of November's busiest hour (P50, burst ratio 1) from an hourly series, through the
    plan's own demand stage (``capplan.plan.demand.plan_demand``). [requests/s]"""
    demand = plan_demand(hourly.reset_index(drop=True), ["2026-11", "2026-12"], load_config(plans["config"]), 1.0)
    return float(demand.peaks.set_index("month").loc["2026-11", "qps_p50"])


def _completion_hours(plans: dict, model: str) -> pd.DataFrame:
    """The generated requests of ``model`` counted by completion hour, as the profile's hourly frame has them."""
    counts = plans["truth"][model]["completion"]
    return pd.DataFrame({"hour_utc": pd.date_range(START.isoformat(), periods=counts.size, freq="h"),
                         "requests": counts, "avg_qps": counts / 3600.0, "is_gap": False, "exposure_s": 3600.0})


def _logged_hours(plans: dict, model: str) -> pd.DataFrame:
    """The logs database's hourly frame of ``model``: the same requests by arrival hour."""
    con = connect(plans["logs_db"], read_only=True)
    try:
        return profile.hourly_traffic(con, model=model)
    finally:
        con.close()


def test_gpus_within_2_percent_of_the_plan_from_logs_and_the_design_peak_apart_only_by_the_forecaster(plans):
    logs, metrics = _months(plans["logs"]), _months(plans["metrics"])
    assert list(metrics.index) == list(logs.index) and len(logs) == 4  # two pools x two months
    for level in ("gpus_p50", "gpus_p90"):
        gap = (metrics[level] - logs[level]).abs() / logs[level]
        assert (gap <= 0.02).all(), pd.DataFrame({"logs": logs[level], "metrics": metrics[level]})
    model_of = {"chat": "llama-3.1-8b", "large": "llama-3.1-70b"}
    for mine, theirs in zip(plans["metrics"]["pools"], plans["logs"]["pools"]):
        pool = mine["pool"]
        # the peak term: burst ratio modelled from 5-minute counts vs measured per request
        assert mine["burst_ratio"] == pytest.approx(theirs["burst_ratio"], rel=0.02), pool
        # the throughput-bound GPUs per unit of design peak: token means, latency and the performance model
        assert (mine["gpus_throughput"] / mine["design_peak_qps"]
                == pytest.approx(theirs["gpus_throughput"] / theirs["design_peak_qps"], rel=0.02)), pool
        # the busiest hour each plan forecast is the forecaster's answer to its hourly series: by completion
        # (metrics) and by arrival (logs), not something the metrics path adds
        for plan, hourly in ((mine, _completion_hours), (theirs, _logged_hours)):
            busiest = plan["design_peak_qps"] / plan["burst_ratio"]
            assert busiest == pytest.approx(_busiest_hour_p50(plans, hourly(plans, model_of[pool])), rel=1e-6), pool


def test_metrics_report_says_what_was_modelled_and_what_is_unknown(plans):
    metrics = (Path(plans["metrics"]["report_dir"]) / "report.md").read_text()
    logs = (Path(plans["logs"]["report_dir"]) / "report.md").read_text()
    assert "peak from 5 min rate, not measured per second" in metrics
    assert "peak from 5 min rate" not in logs
    assert "counted when a request finishes" in metrics and "counted when a request finishes" not in logs
    # the daily busiest second of metrics hours is a 5-minute step's mean rate, and the report says so
    assert "the busiest 300 s step's mean rate" in metrics and "step's mean rate" not in logs
    # vLLM exports no failure counter: errors are unknown, not 0 %
    assert "SLO 'availability' is not measurable" in metrics and "SLO 'availability' is not measurable" not in logs
