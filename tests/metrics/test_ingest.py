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
