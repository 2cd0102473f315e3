"""ingest-metrics against a real Prometheus: exact hourly counts, token percentiles within the bucket bound,
server faults leave no partial hour and the next run completes exactly."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from capplan import profile
from capplan.config import MetricsSourceConfig
from capplan.db import connect
from capplan.metrics.client import MetricsError, PrometheusClient
from capplan.metrics.hourly import bucket_relative_error
from capplan.metrics.ingest import ingest_metrics



def _source(url: str, spec, **kw) -> MetricsSourceConfig:
    return MetricsSourceConfig(name="prom", url=url, step_s=spec.step_s, timeout_s=10, retries=0, **kw)


def _expected_hourly(traffic, spec) -> dict:
    return {model: np.bincount(rows["step"] * spec.step_s // 3600, minlength=spec.days * 24)
            for model, rows in traffic.items()}


def test_hourly_counts_exact_and_percentiles_within_bound(prometheus, traffic, spec, tmp_path):
    START, END, DAYS, STEP_S = spec.start, spec.start + timedelta(days=spec.days), spec.days, spec.step_s
    con = connect(tmp_path / "m.duckdb")
    summary = ingest_metrics(con, _source(prometheus.url, spec, max_points_per_query=2 * 3600 // STEP_S * 24), START, END)
    assert summary.hours_stored == DAYS * 24 and summary.models == sorted(spec.models)
    hourly = profile.hourly_traffic(con)
    for model, expected in _expected_hourly(traffic, spec).items():
        got = hourly[hourly["model"] == model].sort_values("hour_utc")["requests"].to_numpy()
        np.testing.assert_array_equal(got, expected)  # the counter reset included
        tokens = con.execute("select sum(input_tokens_sum) from fct_traffic_hourly where model = ?", [model]).fetchone()[0]
        assert tokens == traffic[model]["input_tokens"].sum()
    bound = bucket_relative_error(spec.token_le)
    dist = profile.token_distribution(con, grain="month")
    for model in spec.models:
        row = dist[dist["model"] == model].iloc[0]
        x = np.sort(traffic[model]["input_tokens"])
        for q, col in ((0.5, "input_tokens_p50"), (0.9, "input_tokens_p90"), (0.99, "input_tokens_p99")):
            exact = x[int(np.ceil(q * x.size)) - 1]
            assert abs(row[col] - exact) <= bound * exact + 1e-9, (model, q, row[col], exact, bound)
    con.close()


def test_resumes_after_server_stopped_mid_ingest(prometheus, traffic, spec, tmp_path):
    START, END, DAYS, STEP_S = spec.start, spec.start + timedelta(days=spec.days), spec.days, spec.step_s
    con = connect(tmp_path / "m.duckdb")
    source = _source(prometheus.url, spec, max_points_per_query=24 * 3600 // STEP_S + 1)  # one day per chunk
    ingest_metrics(con, source, START, START + timedelta(days=2))
    prometheus.stop()
    with pytest.raises(MetricsError, match=r"127\.0\.0\.1.*query_range query='vllm:request_success_total'.*cannot reach"):
        ingest_metrics(con, source, START, END)
    assert con.execute("select count(*) from metrics_ledger").fetchone()[0] == 48
    assert con.execute("select count(distinct hour_utc) from fct_traffic_hourly").fetchone()[0] == 48
    prometheus.start()
    summary = ingest_metrics(con, source, START, END)
    assert (summary.hours_skipped, summary.hours_stored) == (48, (DAYS - 2) * 24)
    hourly = profile.hourly_traffic(con, model="__all__").sort_values("hour_utc")["requests"].to_numpy()
    np.testing.assert_array_equal(hourly, sum(_expected_hourly(traffic, spec).values()))
    con.close()


def test_bad_query_is_a_clear_4xx_error(prometheus, tmp_path):
    client = PrometheusClient(prometheus.url, retries=0)
    with pytest.raises(MetricsError, match=r"HTTP 400.*bad_data|HTTP 400"):
        client.query_range("vllm:request_success_total{", 0, 3600, 60)


def test_modelled_peaks_swept_in_blocks_agree_with_one_sweep(monkeypatch):
    """Two days at ~2 req/s, latency ~3 s (L ≈ 6): sweeping 12-hour blocks (each with the hour before it drawn
    too) instead of the whole chunk at once gives the same median peak; the bound keeps memory flat."""
    import capplan.metrics.ingest as stage

    rng = np.random.default_rng(0)
    n_hours, step = 48, 300
    requests = {"m": rng.poisson(600, n_hours * 12).astype(float)}
    le = (1.0, 2.0, 5.0, 10.0, float("inf"))
    buckets = {("m", b): np.full(n_hours * 12, v) for b, v in zip(le, (100.0, 300.0, 550.0, 600.0, 600.0))}
    sums = ({"m": np.full(n_hours * 12, 600 * 3.0)}, {"m": np.full(n_hours * 12, 600.0)})
    source = MetricsSourceConfig(name="x", url="http://127.0.0.1:9", step_s=step)
    start = 1_800_000_000 // 3600 * 3600
    whole = stage._modelled_peaks(source, start, n_hours, requests, buckets, sums)
    monkeypatch.setattr(stage, "SPANS_PER_SWEEP", 13 * 7200)  # 12 hours per block
    blocks = stage._modelled_peaks(source, start, n_hours, requests, buckets, sums)
    assert set(whole) == set(blocks) == {"m", "__all__"} and len(blocks["m"]) == n_hours
    assert abs(np.median(whole["m"]) - np.median(blocks["m"])) <= 1
