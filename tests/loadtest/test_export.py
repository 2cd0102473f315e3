"""The export on generated logs: the trace's lengths match the logs' percentiles within the profile's
histogram error bound, and its arrival rate matches the requested rate within 2 %."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from capplan.config import IngestConfig, SourceConfig
from capplan.db import connect
from capplan.ingest import ingest_paths
from capplan.profile import refresh_rollups
from capplan.loadtest.capacity import SloTargets
from capplan.loadtest.export import ExportRequest, export_load_test
from capplan.loadtest.logs import LogsError, model_names, production_profile, recent_window
from capplan.loadtest.workload import arrival_rate_rps
from capplan.profile.bins import HISTOGRAM_RELATIVE_ERROR
from capplan.sample import SampleSpec, write_sample

TARGETS = SloTargets(ttft_ms_max=2000.0, tpot_ms_max=None)


@pytest.fixture(scope="module")
def logs_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    result = write_sample(SampleSpec(start=dt.date(2026, 3, 2), days=4, requests_per_day=4000, seed=3),
                          root / "requests.parquet")
    con = connect(root / "logs.duckdb")
    ingest_paths(con, [str(p) for p in result.paths], SourceConfig(name="generated"), IngestConfig())
    refresh_rollups(con)  # as `capplan ingest` does after loading: the export reads the roll-ups
    yield con
    con.close()


def _read_trace(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {k: np.array([r[k] for r in rows]) for k in ("timestamp", "input_length", "output_length")}


def test_export_matches_the_logs_lengths_and_the_requested_rate(logs_db, tmp_path):
    model = model_names(logs_db)[0]  # the busiest
    result = export_load_test(logs_db, ExportRequest(model=model, days=3, out_dir=tmp_path, targets=TARGETS,
                                                     rate_rps=7.5, replicas=2))
    trace = _read_trace(tmp_path / "trace.jsonl")
    assert list(json.loads((tmp_path / "trace.jsonl").read_text().splitlines()[0])) == [
        "timestamp", "input_length", "output_length"]
    assert len(trace["timestamp"]) == result.requests > 1000
    assert np.all(np.diff(trace["timestamp"]) >= 0)
    assert arrival_rate_rps(trace["timestamp"] * 1000) == pytest.approx(7.5, rel=0.02)
    profile = production_profile(logs_db, recent_window(logs_db, model, 3))
    assert profile.requests == result.requests
    for column, logs in (("input_length", profile.input_tokens_percentiles),
                         ("output_length", profile.output_tokens_percentiles)):
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
            exact = np.quantile(trace[column], q, method="inverted_cdf")
            assert abs(logs[name] - exact) <= HISTOGRAM_RELATIVE_ERROR * exact + 1e-9, (column, name)
    assert result.rates_rps == pytest.approx(tuple(f * profile.peak_hour_qps / 2 for f in (0.25, 0.5, 0.75, 1.0,
                                                                                            1.25, 1.5)))
    plan = (tmp_path / "PLAN.md").read_text()
    for needle in ("vllm bench serve", "sglang.bench_serving", "guidellm benchmark", "aiperf profile", "## Soak",
                   "Kill a replica", "Lose a zone", "Cold start to peak", "TTFT p99 <= 2000 ms",
                   "no stored plan covers this pool"):
        assert needle in plan, needle
    lengths = json.loads((tmp_path / "lengths.json").read_text())
    assert lengths["input_tokens"]["mean"] == pytest.approx(trace["input_length"].mean())
    assert len((tmp_path / "lengths.jsonl").read_text().splitlines()) == result.requests


def test_export_keeps_production_timing_without_a_rate(logs_db, tmp_path):
    model = model_names(logs_db)[-1]
    result = export_load_test(logs_db, ExportRequest(model=model, days=1, out_dir=tmp_path, targets=TARGETS))
    assert result.trace_rate_rps == result.observed_rate_rps
    trace = _read_trace(tmp_path / "trace.jsonl")
    assert trace["timestamp"][-1] <= 24 * 3600 * 1000


def test_an_unknown_model_lists_the_models(logs_db, tmp_path):
    with pytest.raises(LogsError, match="no requests of model 'nope' in the logs; models there"):
        export_load_test(logs_db, ExportRequest(model="nope", days=1, out_dir=tmp_path, targets=TARGETS))
