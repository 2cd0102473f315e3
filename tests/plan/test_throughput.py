"""Tests of capplan.plan.throughput: the order measured > calibrated > modelled > assumed."""

from __future__ import annotations

import dataclasses

import duckdb
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.loadtest.store import ensure_table
from capplan.plan.throughput import load_tests_for_plan, pool_throughput
from capplan.sizing.catalogue import get_gpu, get_model
from capplan.sizing.performance import replica_throughput, throughput_sweep

MODEL, GPU = get_model("llama-3.1-70b"), get_gpu("H100-SXM-80GB")
COMMON = dict(pool="chat", model=MODEL, gpu=GPU, tensor_parallel=2, precision="fp8",
              tpot_ms_max=50.0, ttft_ms_max=1000.0)


def _sweep(input_tokens: float = 1000.0, process: str = "poisson", file_path: str = "sweep.json") -> pd.DataFrame:
    """Five open-loop runs at 1..5 requests/s; p99 TTFT crosses 1,000 ms between 3 and 4 requests/s."""
    ttft = [500.0, 800.0, 900.0, 1200.0, 1500.0]
    return pd.DataFrame([{
        "pool": "chat", "tool": "vllm", "model_id": "llama", "gpu": "H100-SXM-80GB", "tensor_parallel": 2,
        "replicas": 1, "gpus_per_replica": 2, "file_path": file_path, "run_index": i, "arrival_process": process,
        "target_requests_per_s": None if process == "concurrency" else float(rate),
        "max_concurrency": 64 if process == "concurrency" else None,
        "requests_per_s": float(rate), "output_tokens_per_s": rate * 300.0, "completed_requests": 1000,
        "failed_requests": 0, "input_tokens_mean": input_tokens, "output_tokens_mean": 300.0,
        "ttft_p99_ms": ttft[i], "tpot_p99_ms": 20.0, "ttft_mean_ms": ttft[i] / 2, "tpot_mean_ms": 15.0,
        "e2el_mean_ms": rate * 1000.0} for i, rate in enumerate(range(1, 6))])


def test_measured_is_the_capacity_at_the_slo_per_gpu():
    # Hand check: TTFT 900 -> 1200 ms between 3 and 4 requests/s; 1000 ms is 1/3 of the way: 3.333
    # requests/s x 300 output tokens = 1000 tokens/s for the replica of 2 GPUs = 500 per GPU.
    e = pool_throughput(_sweep(), input_tokens=1000, output_tokens=300, **COMMON)
    assert e.source == "measured"
    assert e.gpu_output_tokens_per_s == pytest.approx(500.0)
    assert "sweep.json" in e.note and e.seqs_per_gpu is None


def test_calibrated_equals_the_measurement_at_the_tests_own_mix():
    e = pool_throughput(_sweep(input_tokens=3000.0), input_tokens=1000, output_tokens=300, **COMMON)
    assert e.source == "calibrated"
    kw = dict(model=MODEL, gpu=GPU, tensor_parallel=2, precision="fp8", tpot_ms_max=50.0, ttft_ms_max=1000.0)
    at_prod = replica_throughput(input_tokens=1000, output_tokens=300, **kw).output_tokens_per_s_per_gpu
    at_test = replica_throughput(input_tokens=3000, output_tokens=300, **kw).output_tokens_per_s_per_gpu
    assert e.gpu_output_tokens_per_s * at_test / at_prod == pytest.approx(500.0)


def test_a_modelled_rate_carries_the_curve_it_was_read_from():
    """The operating point lies on the curve; the curve is the model's sweep at the production mix up to the
    KV-memory limit (llama-3.1-70b, 2 x H100 fp8, 1,000 in / 300 out, TPOT <= 50 ms, TTFT <= 1,000 ms)."""
    e = pool_throughput(None, input_tokens=1000, output_tokens=300, **COMMON)
    c = e.curve
    assert e.source == c.source == "modelled" and c.calibration_ratio == 1.0
    at = {p["batch"]: p for p in c.points}
    assert c.batch == e.details["batch"] and at[c.batch]["output_tokens_per_s_per_gpu"] == e.gpu_output_tokens_per_s
    assert at[c.batch]["tpot_ms"] == c.tpot_ms == e.details["tpot_ms"] and c.tpot_ms <= 50.0
    assert (c.tpot_ms_max, c.ttft_ms_max) == (50.0, 1000.0)
    kw = dict(model=MODEL, gpu=GPU, tensor_parallel=2, precision="fp8", input_tokens=1000, output_tokens=300)
    assert list(c.points) == throughput_sweep(c.kv_memory_batch_limit, extra_batches=(c.batch,), **kw)
    assert max(at) == replica_throughput(**kw).batch  # up to the batch limit


def test_a_calibrated_curve_is_the_models_times_the_ratio_and_measured_or_assumed_have_none():
    modelled = pool_throughput(None, input_tokens=1000, output_tokens=300, **COMMON).curve
    e = pool_throughput(_sweep(input_tokens=3000.0), input_tokens=1000, output_tokens=300, **COMMON)
    c = e.curve
    assert c.source == "calibrated" and c.calibration_ratio == pytest.approx(e.details["calibration_ratio"])
    assert [p["batch"] for p in c.points] == [p["batch"] for p in modelled.points]
    for cal, mod in zip(c.points, modelled.points):
        scaled = mod["output_tokens_per_s_per_gpu"] * c.calibration_ratio
        assert cal["output_tokens_per_s_per_gpu"] == pytest.approx(scaled)
        assert cal["tpot_ms"] == mod["tpot_ms"]
    assert c.output_tokens_per_s_per_gpu == pytest.approx(e.gpu_output_tokens_per_s)
    assert pool_throughput(_sweep(), input_tokens=1000, output_tokens=300, **COMMON).curve is None
    assert pool_throughput(None, input_tokens=1000, output_tokens=300, **{**COMMON, "precision": "fp4"}).curve is None


def test_closed_loop_test_is_rejected_and_the_model_is_used():
    e = pool_throughput(_sweep(process="concurrency", file_path="x.json"), input_tokens=1000, output_tokens=300,
                        **COMMON)
    assert e.source == "modelled"
    assert "x.json rejected" in e.note and "closed loop" in e.note


def test_other_gpu_or_pool_is_not_measured():
    assert pool_throughput(_sweep(), input_tokens=1000, output_tokens=300,
                           **{**COMMON, "tensor_parallel": 4}).source == "modelled"
    assert pool_throughput(_sweep(), input_tokens=1000, output_tokens=300,
                           **{**COMMON, "pool": "code"}).source == "modelled"


def test_assumed_when_the_performance_model_cannot_run():
    e = pool_throughput(None, input_tokens=1000, output_tokens=300, **{**COMMON, "precision": "fp4"})
    assert e.source == "assumed"
    assert e.gpu_output_tokens_per_s == GPU.decode_rate(MODEL.size_class)
    assert "fp4" in e.note


def test_fleet_spec_overrides_are_fleet_spec_fields():
    from capplan.sizing.fleet import FleetSpec

    e = pool_throughput(None, input_tokens=1000, output_tokens=300, **COMMON)
    names = {f.name for f in dataclasses.fields(FleetSpec)}
    assert set(e.fleet_spec_overrides()) <= names


@settings(max_examples=15, deadline=None)
@given(st.floats(100, 4000), st.floats(1.1, 3.0))
def test_modelled_falls_as_prompts_lengthen(input_tokens, factor):
    kw = {**COMMON, "tpot_ms_max": None, "ttft_ms_max": None}
    short = pool_throughput(None, input_tokens=input_tokens, output_tokens=300, **kw)
    long = pool_throughput(None, input_tokens=input_tokens * factor, output_tokens=300, **kw)
    assert long.gpu_output_tokens_per_s <= short.gpu_output_tokens_per_s * (1 + 1e-9)


def test_reader_without_and_with_the_table():
    con = duckdb.connect()
    assert load_tests_for_plan(con, ["chat"]).empty
    ensure_table(con)
    frame = load_tests_for_plan(con, ["chat"])
    assert frame.empty and "gpus_per_replica" in frame.columns
