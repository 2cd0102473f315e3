"""sizing/fleet.py: size_fleet's golden case, hand-checked headroom and memory paths, invariants; the step map and latency curve."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.sizing.catalogue import get_gpu, get_model
from capplan.sizing.fleet import (MEASURABLE_INPUTS, FleetSpec, latency_curve, monotone_step_map, operating_latency_s,
                                  pooled_slots, size_fleet, tensor_parallel_for)
from capplan.sizing.queueing import mmc_latency_multiplier

AVG_QPS = 2_000_000 / 86_400
GOLDEN_LOAD = dict(peak_qps=AVG_QPS * 4, latency_s=6, output_tokens_per_request=400)
GOLDEN_SPEC = FleetSpec(gpu_output_tokens_per_s=2_000, target_utilisation=0.6, seqs_per_gpu=40, spares=1)
H100, LLAMA_8B, LLAMA_70B = get_gpu("H100-SXM-80GB"), get_model("llama-3.1-8b"), get_model("llama-3.1-70b")


def golden(spec: FleetSpec = GOLDEN_SPEC, **load):
    """size_fleet of the golden load (``load`` overrides a term) with ``spec``."""
    return size_fleet(**(GOLDEN_LOAD | load), spec=spec)


def test_golden_developers_case():
    fs = golden(average_qps=AVG_QPS)
    assert (round(fs.average_qps, 1), round(fs.peak_qps, 1)) == (23.1, 92.6)
    assert round(fs.concurrency) == 556
    assert round(fs.output_tokens_per_s) == 37_037
    assert round(fs.gpus_by_throughput, 1) == 30.9
    assert round(fs.gpus_by_memory, 1) == 23.1
    assert fs.binding_constraint == "throughput"
    assert fs.binding_margin_gpus == pytest.approx(30.864 - 23.148, abs=1e-3)
    assert fs.replicas == 31 and fs.spare_gpus == 1 and fs.total_gpus == 32   # ceil(30.9) + 1


def test_golden_rows_carry_units_and_sources():
    rows = {r["term"]: r for r in golden(measured_inputs=("peak_qps",)).rows()}
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
    fs = golden(replace(GOLDEN_SPEC, zones=3, zones_lost=1, growth_safety_factor=1.2, rollout_surge_fraction=0.1,
                        warm_pool_gpus=3))
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
                    spec=FleetSpec(gpu=H100, model=LLAMA_8B, target_utilisation=0.6))
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
    fs = size_fleet(peak_qps=50, latency_s=20, output_tokens_per_request=400, kv_tokens_per_sequence=8_000,
                    kv_tokens_quantile=0.95, spec=FleetSpec(gpu=H100, model=LLAMA_70B))
    assert fs.tensor_parallel == 2 and fs.binding_constraint == "memory"
    assert fs.binding_margin_gpus == pytest.approx(fs.gpus_by_memory - fs.gpus_by_throughput)
    assert fs.total_gpus % 2 == 0                                  # whole TP-2 replicas
    notes = {r["term"]: r["note"] for r in fs.rows()}
    assert notes["KV tokens per sequence"] == "p95 of input+output tokens"
    assert notes["binding margin"].startswith("memory needs")


@pytest.mark.parametrize(("settings", "load", "match"), [
    ({"gpu_output_tokens_per_s": None}, {}, "give gpu_output_tokens_per_s, or both gpu and model"),
    ({"seqs_per_gpu": None}, {}, "give seqs_per_gpu, or both gpu and model"),
    ({}, {"measured_inputs": ("peak_qps", "zones")}, r"unknown names \['zones'\]"),
    ({"spares": -1}, {}, "spares must be a whole number >= 0"),
    ({"warm_pool_gpus": 1.5}, {}, "warm_pool_gpus must be a whole number"),
    ({"zones": 2, "zones_lost": 2}, {}, "zones_lost must be a whole number in"),
    ({"target_utilisation": 0}, {}, "target_utilisation must be in"),
    ({}, {"latency_s": -1}, "latency_s must be >= 0"),
])
def test_bad_inputs_raise(settings, load, match):
    with pytest.raises(ValueError, match=match):
        golden(replace(GOLDEN_SPEC, **settings), **load)


def test_forced_tensor_parallel_too_small_raises():
    with pytest.raises(ValueError, match="llama-3.1-70b does not fit on 1 x H100-SXM-80GB"):
        size_fleet(peak_qps=10, latency_s=5, output_tokens_per_request=100,
                   spec=FleetSpec(gpu=H100, model=LLAMA_70B, tensor_parallel=1))


def test_to_dict_is_json_ready():
    data = json.loads(json.dumps(golden().to_dict()))
    assert data["total_gpus"] == 32 and data["rows"][-1]["term"] == "total GPUs"
    assert set(MEASURABLE_INPUTS) >= set(data["sources"])


GPUS = ["H100-SXM-80GB", "H200-141GB", "A100-SXM-80GB", "L40S-48GB"]
MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen2.5-72b"]
load_ = dict(latency_s=st.floats(0.1, 60), output_tokens_per_request=st.floats(1, 4_000),
             input_tokens_per_request=st.floats(0, 8_000))
settings_ = dict(target_utilisation=st.floats(0.1, 1.0), spares=st.integers(0, 3), zones=st.integers(1, 4),
                 growth_safety_factor=st.floats(1, 2), rollout_surge_fraction=st.floats(0, 0.5),
                 warm_pool_gpus=st.integers(0, 8))


@st.composite
def fleet_inputs(draw):
    """Keyword arguments of size_fleet but the peak: a drawn load and a drawn FleetSpec."""
    load = {k: draw(v) for k, v in load_.items()}
    settings = {k: draw(v) for k, v in settings_.items()}
    settings["zones_lost"] = draw(st.integers(0, settings["zones"] - 1))
    spec = FleetSpec(gpu=get_gpu(draw(st.sampled_from(GPUS))), model=get_model(draw(st.sampled_from(MODELS))),
                     **settings)
    return load | {"kv_tokens_per_sequence": load["input_tokens_per_request"] + load["output_tokens_per_request"],
                   "spec": spec}


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
    assert fs.replicas * fs.tensor_parallel >= fs.need_gpus * kwargs["spec"].growth_safety_factor - 1e-6
    assert fs.total_gpus % fs.tensor_parallel == 0
    for term in ("growth_headroom_gpus", "rollout_surge_gpus", "zone_headroom_gpus", "rounding_gpus",
                 "spare_gpus", "warm_pool_gpus"):
        assert getattr(fs, term) >= -1e-9, term
    assert fs.need_gpus == max(fs.gpus_by_throughput, fs.gpus_by_memory)


def test_target_utilisation_derived_from_a_wait_slo():
    fs = golden(replace(GOLDEN_SPEC, wait_target_s=0.5, wait_percentile=0.99))
    # 556 erlangs need 587 slots for a p99 queueing wait <= 0.5 s (test_sizing_queueing), so u = 555.6 / 587
    assert fs.target_utilisation == pytest.approx(fs.concurrency / 587, rel=1e-12)
    assert fs.gpus_by_memory == pytest.approx(587 / 40, rel=1e-12)
    row = next(r for r in fs.rows() if r["term"] == "target utilisation")
    assert row["source"] == "derived" and "587 slots" in row["note"]


def test_default_spec_is_size_fleets_documented_defaults():
    spec = FleetSpec()
    assert (spec.target_utilisation, spec.spares, spec.zones, spec.zones_lost, spec.tensor_parallel) == (0.6, 1, 1, 0, None)
    assert (spec.kv_dtype, spec.weights_dtype, spec.memory_reserve_fraction, spec.kv_block_size_tokens) == (
        "bf16", "bf16", 0.1, 16)
    with pytest.raises(AttributeError):
        spec.spares = 2  # frozen: one record, shared by the CLI, the plan and tests


# --- monotone_step_map: many loads, few sizings -------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(xs=st.lists(st.floats(0, 1e4, allow_nan=False), min_size=0, max_size=300),
       step=st.floats(0.5, 500))
def test_monotone_step_map_equals_the_direct_map(xs, step):
    fn = lambda x: int(np.ceil(x / step)) + 1  # noqa: E731 - a non-decreasing step function, like a GPU count
    arr = np.asarray(xs, dtype=float)
    assert monotone_step_map(fn, arr).tolist() == [fn(x) for x in arr]


def test_monotone_step_map_calls_fewer_times_than_elements():
    calls = []
    out = monotone_step_map(lambda x: calls.append(x) or int(x // 100), np.linspace(0, 999, 5000))
    assert out.max() == 9 and len(calls) < 300


def test_monotone_step_map_of_the_fleet_equals_sizing_every_load():
    loads = np.random.default_rng(3).uniform(0, 200, 400)
    direct = [golden(peak_qps=q).total_gpus for q in loads]
    assert monotone_step_map(lambda q: golden(peak_qps=float(q)).total_gpus, loads).tolist() == direct


# --- the sized fleet's queueing -------------------------------------------------------------------------

def test_pooled_slots_and_operating_latency_of_the_golden_fleet():
    fs = golden()
    assert pooled_slots(fs) == 32 * 40                                   # 32 GPUs x 40 sequences
    # 1,280 pooled slots at 60 %: Erlang C's wait is negligible, latency stays the 6 s service time
    assert operating_latency_s(fs) == pytest.approx(6.0 * float(mmc_latency_multiplier(1280, 0.6)), rel=1e-12)
    assert 6.0 <= operating_latency_s(fs) < 6.0 * 1.001


def test_latency_curve_one_slot_is_mm1_and_the_fleet_knee_comes_later():
    fs = golden()
    curve = latency_curve(fs, np.array([0.5, 0.9]))
    one = curve[curve["label"] == "one slot (M/M/1)"]["latency_s"].to_numpy()
    pooled = curve[curve["label"] == "fleet, 1,280 slots (M/M/c)"]["latency_s"].to_numpy()
    assert one == pytest.approx([6.0 / (1 - 0.5), 6.0 / (1 - 0.9)], rel=1e-12)  # W = S / (1 - ρ)
    assert np.all(pooled < one) and np.all(pooled >= 6.0)
    assert len(latency_curve(fs)) == 2 * 49  # the default grid: 2 % to 98 %


def test_a_measured_or_modelled_rate_holds_prefill_so_no_prefill_gpus_are_added():
    """The golden load with 1,500 prompt tokens on the catalogue's H100 8B rates adds prefill GPUs
    (92.6 × 1,500 / (prefill rate × 0.6)); the same output rate marked as modelled with prefill inside adds none."""
    base = FleetSpec(gpu=H100, model=LLAMA_8B, gpu_output_tokens_per_s=2_000, target_utilisation=0.6,
                     seqs_per_gpu=40, spares=1)
    flat = golden(spec=base, input_tokens_per_request=1500)
    assert flat.gpus_for_prefill == pytest.approx(AVG_QPS * 4 * 1500 / (H100.prefill_rate("small") * 0.6))
    inside = golden(spec=replace(base, throughput_source="modelled", throughput_note="model at 1500/400",
                                 prefill_in_output_rate=True), input_tokens_per_request=1500)
    assert inside.gpus_for_prefill == 0.0 and inside.gpu_prefill_tokens_per_s is None
    assert inside.gpus_by_throughput == pytest.approx(flat.gpus_for_decode)
    rows = {r["term"]: r for r in inside.rows()}
    assert rows["decode throughput per GPU"]["source"] == "modelled"
    assert rows["decode throughput per GPU"]["note"] == "model at 1500/400"
    assert inside.throughput_source == "modelled" and flat.throughput_source == "assumed"
    with pytest.raises(ValueError, match="throughput_source must be one of"):
        FleetSpec(throughput_source="guessed")


@settings(max_examples=30, deadline=None)
@given(kv_tokens=st.floats(100, 120_000), model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b"]),
       gpu=st.sampled_from(["H100-SXM-80GB", "L40S-48GB", "A100-SXM-80GB"]))
def test_tensor_parallel_for_is_the_degree_size_fleet_uses(kv_tokens, model, gpu):
    spec = FleetSpec(gpu=get_gpu(gpu), model=get_model(model))
    try:
        tp = tensor_parallel_for(spec, kv_tokens)
    except ValueError:
        with pytest.raises(ValueError):
            size_fleet(peak_qps=1.0, latency_s=2.0, output_tokens_per_request=100, kv_tokens_per_sequence=kv_tokens,
                       spec=spec)
        return
    fs = size_fleet(peak_qps=1.0, latency_s=2.0, output_tokens_per_request=100, kv_tokens_per_sequence=kv_tokens,
                    spec=spec)
    assert fs.tensor_parallel == tp
    assert tensor_parallel_for(replace(spec, tensor_parallel=8), kv_tokens) == 8
