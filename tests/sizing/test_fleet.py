"""size_fleet: the DEVELOPERS golden case, hand-checked headroom and memory paths, invariants."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.sizing.catalogue import get_gpu, get_model
from capplan.sizing.fleet import MEASURABLE_INPUTS, size_fleet

AVG_QPS = 2_000_000 / 86_400
GOLDEN = dict(peak_qps=AVG_QPS * 4, latency_s=6, output_tokens_per_request=400, gpu_output_tokens_per_s=2_000,
              target_utilisation=0.6, seqs_per_gpu=40, spares=1)


def test_golden_developers_case():
    fs = size_fleet(**GOLDEN, average_qps=AVG_QPS)
    assert (round(fs.average_qps, 1), round(fs.peak_qps, 1)) == (23.1, 92.6)
    assert round(fs.concurrency) == 556
    assert round(fs.output_tokens_per_s) == 37_037
    assert round(fs.gpus_by_throughput, 1) == 30.9
    assert round(fs.gpus_by_memory, 1) == 23.1
    assert fs.binding_constraint == "throughput"
    assert fs.binding_margin_gpus == pytest.approx(30.864 - 23.148, abs=1e-3)
    assert fs.replicas == 31 and fs.spare_gpus == 1 and fs.total_gpus == 32   # ceil(30.9) + 1


def test_golden_rows_carry_units_and_sources():
    rows = {r["term"]: r for r in size_fleet(**GOLDEN, measured_inputs=("peak_qps",)).rows()}
    assert rows["peak QPS"]["source"] == "measured"
    assert rows["latency per request"]["source"] == "assumed"
    assert rows["GPUs by throughput"] | {"value": None} == {
        "term": "GPUs by throughput", "value": None, "unit": "GPUs", "note": "", "source": "derived"}
    assert rows["total GPUs"]["value"] == 32
    assert "KV cache per token per GPU" not in rows      # no model given: the term does not apply
    assert all(set(r) == {"term", "value", "unit", "note", "source"} for r in rows.values())


def test_headroom_terms_hand_checked():
    # need 30.864 → × 1.2 growth = 37.037 → × 1.1 surge = 40.741 → 3 zones surviving 1: ceil(40.741 / 2) = 21
    # per zone, 63 replicas → + 1 spare + 3 warm = 67
    fs = size_fleet(**(GOLDEN | dict(zones=3, zones_lost=1, growth_safety_factor=1.2, rollout_surge_fraction=0.1,
                                     warm_pool_gpus=3)))
    need = 2_000_000 / 86_400 * 4 * 400 / 1_200
    assert fs.growth_headroom_gpus == pytest.approx(need * 0.2, rel=1e-12)
    assert fs.rollout_surge_gpus == pytest.approx(need * 1.2 * 0.1, rel=1e-12)
    assert fs.zone_headroom_gpus == pytest.approx(need * 1.2 * 1.1 * 0.5, rel=1e-12)
    assert fs.replicas == 63 and fs.total_gpus == 67
    parts = fs.need_gpus + fs.growth_headroom_gpus + fs.rollout_surge_gpus + fs.zone_headroom_gpus + fs.rounding_gpus
    assert parts == pytest.approx(fs.replicas, rel=1e-12)


def test_memory_path_hand_checked():
    # Llama-3.1-8B on H100: 463 sequences of 1,000 tokens per GPU (see test_sizing_memory); 556 / (463 × 0.6) = 2.0
    fs = size_fleet(peak_qps=AVG_QPS * 4, latency_s=6, output_tokens_per_request=400, input_tokens_per_request=600,
                    gpu=get_gpu("H100-SXM-80GB"), model=get_model("llama-3.1-8b"), target_utilisation=0.6)
    assert fs.kv_tokens_per_sequence == 1_000 and fs.kv_bytes_per_token == 131_072
    assert fs.seqs_per_gpu == 463 and fs.tensor_parallel == 1
    assert fs.gpus_by_memory == pytest.approx(fs.concurrency / (463 * 0.6), rel=1e-12)
    # throughput from the catalogue's ASSUMED small-class rates: decode 2,500, prefill 24,720 tokens/s per GPU
    assert fs.gpus_for_decode == pytest.approx(AVG_QPS * 4 * 400 / (2_500 * 0.6), rel=1e-12)
    assert fs.gpus_for_prefill == pytest.approx(AVG_QPS * 4 * 600 / (24_720 * 0.6), rel=1e-12)
    rows = {r["term"]: r for r in fs.rows()}
    assert rows["decode throughput per GPU"]["source"] == "assumed"
    assert rows["sequences per GPU"]["source"] == "derived"
    assert "no quantile given" in rows["KV tokens per sequence"]["note"]


def test_memory_binds_for_a_large_model_on_tight_memory():
    fs = size_fleet(peak_qps=50, latency_s=20, output_tokens_per_request=400, gpu=get_gpu("H100-SXM-80GB"),
                    model=get_model("llama-3.1-70b"), kv_tokens_per_sequence=8_000, kv_tokens_quantile=0.95)
    assert fs.tensor_parallel == 2 and fs.binding_constraint == "memory"
    assert fs.binding_margin_gpus == pytest.approx(fs.gpus_by_memory - fs.gpus_by_throughput)
    assert fs.total_gpus % 2 == 0                                  # whole TP-2 replicas
    notes = {r["term"]: r["note"] for r in fs.rows()}
    assert notes["KV tokens per sequence"] == "p95 of input+output tokens"
    assert notes["binding margin"].startswith("memory needs")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"gpu_output_tokens_per_s": None}, "give gpu_output_tokens_per_s, or both gpu and model"),
    ({"seqs_per_gpu": None}, "give seqs_per_gpu, or both gpu and model"),
    ({"measured_inputs": ("peak_qps", "zones")}, r"unknown names \['zones'\]"),
    ({"spares": -1}, "spares must be a whole number >= 0"),
    ({"warm_pool_gpus": 1.5}, "warm_pool_gpus must be a whole number"),
    ({"zones": 2, "zones_lost": 2}, "zones_lost must be a whole number in"),
    ({"target_utilisation": 0}, "target_utilisation must be in"),
    ({"latency_s": -1}, "latency_s must be >= 0"),
])
def test_bad_inputs_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        size_fleet(**(GOLDEN | kwargs))


def test_forced_tensor_parallel_too_small_raises():
    with pytest.raises(ValueError, match="llama-3.1-70b does not fit on 1 x H100-SXM-80GB"):
        size_fleet(peak_qps=10, latency_s=5, output_tokens_per_request=100, gpu=get_gpu("H100-SXM-80GB"),
                   model=get_model("llama-3.1-70b"), tensor_parallel=1)


def test_to_dict_is_json_ready():
    data = json.loads(json.dumps(size_fleet(**GOLDEN).to_dict()))
    assert data["total_gpus"] == 32 and data["rows"][-1]["term"] == "total GPUs"
    assert set(MEASURABLE_INPUTS) >= set(data["sources"])


GPUS = ["H100-SXM-80GB", "H200-141GB", "A100-SXM-80GB", "L40S-48GB"]
MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen2.5-72b"]
settings_ = dict(
    latency_s=st.floats(0.1, 60), output_tokens_per_request=st.floats(1, 4_000),
    input_tokens_per_request=st.floats(0, 8_000), target_utilisation=st.floats(0.1, 1.0),
    spares=st.integers(0, 3), zones=st.integers(1, 4), growth_safety_factor=st.floats(1, 2),
    rollout_surge_fraction=st.floats(0, 0.5), warm_pool_gpus=st.integers(0, 8),
)


@st.composite
def fleet_inputs(draw):
    kwargs = {k: draw(v) for k, v in settings_.items()}
    kwargs["zones_lost"] = draw(st.integers(0, kwargs["zones"] - 1))
    kwargs["gpu"] = get_gpu(draw(st.sampled_from(GPUS)))
    kwargs["model"] = get_model(draw(st.sampled_from(MODELS)))
    kwargs["kv_tokens_per_sequence"] = kwargs["input_tokens_per_request"] + kwargs["output_tokens_per_request"]
    return kwargs


@given(fleet_inputs(), st.floats(0, 500), st.floats(0, 500))
@settings(max_examples=150, deadline=None)
def test_more_load_never_needs_fewer_gpus(kwargs, qps_a, qps_b):
    lo, hi = sorted((qps_a, qps_b))
    small, large = size_fleet(peak_qps=lo, **kwargs), size_fleet(peak_qps=hi, **kwargs)
    assert small.total_gpus <= large.total_gpus
    assert small.need_gpus <= large.need_gpus


@given(fleet_inputs(), st.floats(0, 500))
@settings(max_examples=150, deadline=None)
def test_counts_are_whole_and_cover_the_need(kwargs, qps):
    fs = size_fleet(peak_qps=qps, **kwargs)
    assert isinstance(fs.total_gpus, int) and isinstance(fs.replicas, int)
    assert fs.total_gpus >= math.ceil(fs.need_gpus - 1e-9)
    assert fs.replicas * fs.tensor_parallel >= fs.need_gpus * kwargs["growth_safety_factor"] - 1e-6
    assert fs.total_gpus % fs.tensor_parallel == 0
    for term in ("growth_headroom_gpus", "rollout_surge_gpus", "zone_headroom_gpus", "rounding_gpus",
                 "spare_gpus", "warm_pool_gpus"):
        assert getattr(fs, term) >= -1e-9, term
    assert fs.need_gpus == max(fs.gpus_by_throughput, fs.gpus_by_memory)


def test_target_utilisation_derived_from_a_wait_slo():
    fs = size_fleet(**(GOLDEN | {"wait_target_s": 0.5, "wait_percentile": 0.99}))
    # 556 erlangs need 587 slots for a p99 queueing wait <= 0.5 s (test_sizing_queueing), so u = 555.6 / 587
    assert fs.target_utilisation == pytest.approx(fs.concurrency / 587, rel=1e-12)
    assert fs.gpus_by_memory == pytest.approx(587 / 40, rel=1e-12)
    row = next(r for r in fs.rows() if r["term"] == "target utilisation")
    assert row["source"] == "derived" and "587 slots" in row["note"]
