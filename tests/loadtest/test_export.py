"""The export on generated logs: the trace's lengths match the logs' percentiles within the profile's
histogram error bound, and its arrival rate matches the requested rate within 2 %; a pool of two log
models exports both models' rows, its percentiles those of the two taken together."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from capplan.config import IngestConfig, SourceConfig, parse_config
from capplan.db import connect
from capplan.ingest import ingest_paths
from capplan.profile import refresh_rollups
from capplan.loadtest.capacity import SloTargets
from capplan.loadtest.export import ExportRequest, export_load_test
from capplan.loadtest.logs import LogsError, model_names, production_profile, recent_window
from capplan.loadtest.workload import arrival_rate_rps
from capplan.plan.pools import pool_traffic, read_model_traffic, resolve_pools
from capplan.profile.bins import HISTOGRAM_RELATIVE_ERROR
from capplan.sample import SampleSpec, write_sample

TARGETS = SloTargets(ttft_ms_max=2000.0, tpot_ms_max=None)
#: the sample's chat model and its long-context (RAG) model in one pool, the 70B model in another
TWO_MODEL_POOLS = parse_config({"pools": [
    {"name": "small", "models": ["llama-3.1-8b", "qwen2.5-7b"], "model": "llama-3.1-8b"},
    {"name": "large", "models": ["llama-3.1-70b"], "model": "llama-3.1-70b"}]})


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


def _pool(con, cfg, name, models=None):
    """The pool ``name`` as the plan resolves it (optionally narrowed to ``models``) and its summed hourly traffic."""
    pool = next(p for p in resolve_pools(cfg, model_names(con)) if p.name == name)
    if models is not None:
        from dataclasses import replace

        pool = replace(pool, models=models)
    return pool, pool_traffic(read_model_traffic(con, cfg), pool)[0]


def _one_model(con, model):
    """The one-model pool of ``model`` without [[pools]] (each log model its own pool)."""
    return _pool(con, parse_config({}), model)


def _read_trace(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {k: np.array([r[k] for r in rows]) for k in ("timestamp", "input_length", "output_length")}


def test_export_matches_the_logs_lengths_and_the_requested_rate(logs_db, tmp_path):
    model = model_names(logs_db)[0]  # the busiest
    pool, hourly = _one_model(logs_db, model)
    result = export_load_test(logs_db, ExportRequest(pool=pool.name, models=pool.models, days=3, out_dir=tmp_path,
                                                     targets=TARGETS, rate_rps=7.5, replicas=2), hourly)
    trace = _read_trace(tmp_path / "trace.jsonl")
    assert list(json.loads((tmp_path / "trace.jsonl").read_text().splitlines()[0])) == [
        "timestamp", "input_length", "output_length"]
    assert len(trace["timestamp"]) == result.requests > 1000
    assert np.all(np.diff(trace["timestamp"]) >= 0)
    assert arrival_rate_rps(trace["timestamp"] * 1000) == pytest.approx(7.5, rel=0.02)
    profile = production_profile(logs_db, recent_window(logs_db, (model,), 3), hourly)
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
    pool, hourly = _one_model(logs_db, model_names(logs_db)[-1])
    result = export_load_test(logs_db, ExportRequest(pool=pool.name, models=pool.models, days=1, out_dir=tmp_path,
                                                     targets=TARGETS), hourly)
    assert result.trace_rate_rps == result.observed_rate_rps
    trace = _read_trace(tmp_path / "trace.jsonl")
    assert trace["timestamp"][-1] <= 24 * 3600 * 1000


def test_an_unknown_model_lists_the_models(logs_db, tmp_path):
    _pool_, hourly = _one_model(logs_db, model_names(logs_db)[0])
    with pytest.raises(LogsError, match="no requests of model 'nope' in the logs; models there"):
        export_load_test(logs_db, ExportRequest(pool="nope", models=("nope",), days=1, out_dir=tmp_path,
                                                targets=TARGETS), hourly)


def test_a_pool_of_two_log_models_exports_every_row_of_both(logs_db, tmp_path):
    """Pool ``small`` serves llama-3.1-8b (60 % of the sample, ~600-token prompts) and qwen2.5-7b (10 %, ~24k-token
    prompts): the trace holds every row of both in the window (counted here straight from ``requests``), its
    percentiles are those of the two together within the histogram bound (the qwen tail shows at p99, so one
    model's would miss), the rate is the requested one within 2 %, and the sweep's peak is the pool's summed
    peak hour, above either model's."""
    pool, hourly = _pool(logs_db, TWO_MODEL_POOLS, "small")
    assert pool.models == ("llama-3.1-8b", "qwen2.5-7b")
    result = export_load_test(logs_db, ExportRequest(pool=pool.name, models=pool.models, days=3, out_dir=tmp_path,
                                                     targets=TARGETS, rate_rps=4.0), hourly)
    window = recent_window(logs_db, pool.models, 3, scope="small")
    counted = dict(logs_db.execute(
        "select model, count(*) from requests where ts_utc >= ? and ts_utc < ? group by model",
        [window.since_utc, window.until_utc]).fetchall())
    assert result.requests == counted["llama-3.1-8b"] + counted["qwen2.5-7b"] > counted["llama-3.1-8b"] > 1000
    assert result.models == pool.models and result.pool == "small"
    trace = _read_trace(tmp_path / "trace.jsonl")
    assert len(trace["timestamp"]) == result.requests
    assert arrival_rate_rps(trace["timestamp"] * 1000) == pytest.approx(4.0, rel=0.02)
    profile = production_profile(logs_db, window, hourly)
    assert profile.requests == result.requests
    alone = production_profile(logs_db, recent_window(logs_db, ("llama-3.1-8b",), 3),
                               _pool(logs_db, TWO_MODEL_POOLS, "small", ("llama-3.1-8b",))[1])
    for column, logs, single in (("input_length", profile.input_tokens_percentiles, alone.input_tokens_percentiles),
                                 ("output_length", profile.output_tokens_percentiles,
                                  alone.output_tokens_percentiles)):
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
            exact = np.quantile(trace[column], q, method="inverted_cdf")
            assert abs(logs[name] - exact) <= HISTOGRAM_RELATIVE_ERROR * exact + 1e-9, (column, name)
    p99 = np.quantile(trace["input_length"], 0.99, method="inverted_cdf")
    assert abs(alone.input_tokens_percentiles["p99"] - p99) > HISTOGRAM_RELATIVE_ERROR * p99  # one model's misses
    assert profile.input_tokens_mean == pytest.approx(trace["input_length"].mean())  # exact sums
    assert profile.peak_hour_qps > alone.peak_hour_qps
    assert result.rates_rps == pytest.approx(tuple(f * profile.peak_hour_qps for f in (0.25, 0.5, 0.75, 1.0, 1.25,
                                                                                        1.5)))
    summary = json.loads((tmp_path / "lengths.json").read_text())
    assert summary["models"] == ["llama-3.1-8b", "qwen2.5-7b"] and summary["requests"] == result.requests
    assert "requests of models `llama-3.1-8b`, `qwen2.5-7b`" in (tmp_path / "PLAN.md").read_text()
