"""The Prometheus client's errors, against a tiny local HTTP server that answers 5xx, stalls or warns.

Prometheus's own answers (success, 400 on a bad query, connection refused) are tested against the real
server in test_ingest.py; these are the faults a real server gives only under load or behind a proxy.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from capplan.config import MetricsSourceConfig
from capplan.db import connect
from capplan.metrics.client import MetricsError, PrometheusClient
from capplan.metrics.ingest import ingest_metrics


def _matrix(query: str, start: int, end: int, step: int) -> dict:
    """A counter rising by one per step for the request counter (and ``up``); no series for other metrics."""
    values = [[t, str((t - start) // step)] for t in range(start, end + 1, step)]
    result = [{"metric": {"model_name": "m"}, "values": values}] if query in ("up", "vllm:request_success_total") else []
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


@pytest.fixture
def fake():
    """A server whose behaviour per query is set by ``fake.mode``: 'ok', '500', 'slow', 'warn', 'vector', 'ok-then-500'."""
    state = {"mode": "ok", "calls": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            q = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
            state["calls"] += 1
            mode = state["mode"]
            if mode == "ok-then-500":
                mode = "ok" if state["calls"] == 1 else "500"
            if mode == "slow":
                time.sleep(1.0)
            if mode == "500":
                self.send_response(503)
                self.end_headers()
                self.wfile.write(b"overloaded")
                return
            body = _matrix(q["query"], int(float(q["start"])), int(float(q["end"])), int(float(q["step"])))
            if mode == "warn":
                body["warnings"] = ["remote read of store b failed"]
            if mode == "vector":
                body["data"]["resultType"] = "vector"
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def test_ok_gives_samples(fake):
    series = PrometheusClient(fake["url"]).query_range("up", 0, 600, 60)
    assert series[0].labels == {"model_name": "m"} and series[0].value.tolist() == list(range(11))


@pytest.mark.parametrize("mode, message", [
    ("500", r"HTTP 503: overloaded \(after 2 attempt"),
    ("slow", r"timed out after 0.2 s"),
    ("warn", r"partial result, Prometheus warned: remote read of store b failed"),
    ("vector", r"expected resultType 'matrix', got 'vector'"),
])
def test_faults_name_url_and_query(fake, mode, message):
    fake["mode"] = mode
    # only the stalling server needs a short timeout; the others must not time out on a loaded machine
    client = PrometheusClient(fake["url"], timeout_s=0.2 if mode == "slow" else 10.0, retries=1)
    with pytest.raises(MetricsError, match=rf"{fake['url']}/api/v1/query_range query='up'.*{message}"):
        client.query_range("up", 0, 600, 60)
    if mode == "500":
        assert fake["calls"] == 2  # one retry


def test_failure_mid_chunk_stores_no_hour_then_next_run_completes(fake, tmp_path):
    con = connect(tmp_path / "m.duckdb")
    source = MetricsSourceConfig(name="fake", url=fake["url"], step_s=60, retries=0, timeout_s=2)
    start, end = datetime(2026, 10, 5, tzinfo=UTC), datetime(2026, 10, 5, 3, tzinfo=UTC)
    fake["mode"] = "ok-then-500"  # the first query of the chunk answers, the second fails
    with pytest.raises(MetricsError, match="HTTP 503"):
        ingest_metrics(con, source, start, end)
    assert con.execute("select count(*) from fct_traffic_hourly").fetchone()[0] == 0
    assert con.execute("select count(*) from metrics_ledger").fetchone()[0] == 0
    fake["mode"] = "ok"
    summary = ingest_metrics(con, source, start, end)
    assert summary.hours_stored == 3 and summary.requests == 3 * 60  # counter rises 1 per minute, every query
    con.close()


@pytest.mark.parametrize("errors_metric", [None, "up"])
def test_errors_are_measured_with_an_error_counter_and_unknown_without(fake, tmp_path, errors_metric):
    """The fake's success counter and ``up`` both rise by one per minute. With ``up`` as the error counter an hour
    holds 60 successes + 60 failures (hand count: requests 120, errors 60) and the availability SLI is measured
    from the hourly counts (60 bad of 120 valid an hour); without one, errors are unknown: stored 0, the ledger
    says so, and every request counts as lacking a status (the SLO stage's SLIs are not measurable:
    capplan.ingest.coverage)."""
    from capplan.ingest.coverage import defaulted_columns
    from capplan.slo.measurable import unmeasurable_reason
    from capplan.slo.status import slo_status
    from capplan.config import SloConfig

    con = connect(tmp_path / "m.duckdb")
    source = MetricsSourceConfig(name="fake", url=fake["url"], step_s=60, retries=0, timeout_s=2,
                                 metric_names={"errors": errors_metric} if errors_metric else {})
    ingest_metrics(con, source, datetime(2026, 10, 5, tzinfo=UTC), datetime(2026, 10, 5, 2, tzinfo=UTC))
    rows = con.execute("select requests, errors, success_events from fct_traffic_hourly where model = 'm'").fetchall()
    ledger = con.execute("select distinct errors_measured, step_s from metrics_ledger").fetchall()
    if errors_metric:
        assert rows == [(120, 60, 60)] * 2 and ledger == [(True, 60)]
    else:
        assert rows == [(60, 0, 60)] * 2 and ledger == [(False, 60)]
    slo = SloConfig(name="availability", target=0.99)
    reason = unmeasurable_reason(slo, defaulted_columns(con))
    if errors_metric:
        assert "status" not in defaulted_columns(con) and reason is None
        status = slo_status(con, slo)
        assert (status.valid_events, status.bad_events, status.resolution_min) == (240, 120, 60)
    else:
        status = defaulted_columns(con)["status"]
        assert status.everywhere and status.rows_loaded == 120
        assert reason is not None and "SLO 'availability' is not measurable" in reason
    con.close()
