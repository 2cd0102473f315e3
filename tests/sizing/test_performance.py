"""sizing.performance: each physical term against a hand calculation, invariants, the three modes."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.sizing import performance as perf
from capplan.sizing.catalogue import get_gpu, get_model

REPO = Path(__file__).resolve().parents[2]
DEV_DATA = Path("/work/shared/benchmarks/llm-throughput-dev/llm_throughput_dev.csv")
EFF = perf.Efficiency(hbm_bandwidth_fraction=0.6, kv_bandwidth_fraction=0.5, compute_fraction=0.5,
                      step_overhead_ms=2.0, interconnect_fraction=0.5, allreduce_latency_us=8.0,
                      max_batch_sequences=512, kv_memory_fraction=0.9, activation_reserve_gib=3.0)
BASE = dict(model="llama-3.1-70b", gpu="H100-SXM-80GB", tensor_parallel=2, precision="fp8",
            input_tokens=1000, output_tokens=1000)


# --- physical terms, by hand -------------------------------------------------

def test_weight_bytes_per_decode_step_llama_70b_tp2_fp8():
    # 70.6e9 parameters x 1 B (FP8) / 2 GPUs = 35.3 GB per GPU, read once per step at any batch.
    m = get_model("llama-3.1-70b")
    for tokens in (1, 64, 4096):
        got = perf.weight_bytes_read_per_step_per_gpu(m.parameters, m.parameters, 0, 0, tokens,
                                                      perf.WEIGHT_BYTES_PER_PARAMETER["fp8"], 2)
        assert got == pytest.approx(35.3e9, rel=1e-12)
    assert perf.weight_bytes_per_gpu(m.parameters, 2, 4) == pytest.approx(35.3e9)   # BF16 at TP 4


@pytest.mark.parametrize(("key", "precision", "expected"), [
    # Llama 3.1 8B: 32 layers x 2 (K, V) x 8 KV heads x 128 x 1 B = 65,536 B/token in FP8.
    ("llama-3.1-8b", "fp8", 32 * 2 * 8 * 128 * 1),
    # Llama 3.1 70B: 80 x 2 x 8 x 128 x 2 B = 327,680 B/token in BF16.
    ("llama-3.1-70b", "bf16", 80 * 2 * 8 * 128 * 2),
    # Qwen2.5 7B: 28 x 2 x 4 x 128 x 2 B = 57,344 B/token.
    ("qwen2.5-7b", "bf16", 28 * 2 * 4 * 128 * 2),
    # DeepSeek-R1, latent attention: 61 layers x 576 x 1 B = 35,136 B/token in FP8.
    ("deepseek-r1", "fp8", 61 * 576 * 1),
])
def test_kv_bytes_per_token_of_gqa_and_mla_models(key, precision, expected):
    m = get_model(key)
    elements = perf.kv_elements_per_token_per_layer(m.num_kv_heads, m.head_dim, m.kv_latent_dim)
    assert perf.kv_bytes_per_token(m.num_layers, elements, perf.KV_BYTES_PER_ELEMENT[precision]) == expected


def test_kv_per_gpu_splits_heads_but_not_beyond_kv_heads():
    rep = perf.replica("llama-3.1-70b", "H100-SXM-80GB", 16, "fp8", 1000, 1000)
    assert rep.kv_shards == 8   # 8 KV heads: at TP 16 each head lives on two GPUs
    assert perf.kv_bytes_per_sequence_per_gpu(rep, 1000) == pytest.approx(80 * 2048 * 1000 / 8)
    assert perf.replica("deepseek-r1", "H200-141GB", 8, "fp8", 10, 10).kv_shards == 1


def test_sliding_window_layers_cache_only_their_window():
    assert perf.attended_tokens_per_layer(10_000, 24, 128, 12) == pytest.approx((10_000 + 128) / 2)
    assert perf.attended_tokens_per_layer(100, 24, 128, 12) == 100
    assert perf.attended_tokens_per_layer(5000, 80) == 5000


def test_moe_reads_only_touched_experts():
    m = get_model("gpt-oss-120b")
    one = perf.weight_bytes_read_per_step_per_gpu(m.parameters, m.active_parameters, m.num_experts,
                                                   m.experts_per_token, 1, 1, 1)
    assert one == pytest.approx(m.active_parameters)   # one token: exactly the active parameters
    many = perf.weight_bytes_read_per_step_per_gpu(m.parameters, m.active_parameters, m.num_experts,
                                                    m.experts_per_token, 10_000, 1, 1)
    assert many == pytest.approx(m.parameters, rel=1e-6)   # a big batch touches every expert
    assert perf.experts_touched(128, 4, 2) == pytest.approx(128 * (1 - (124 / 128) ** 2))


def test_flops_terms():
    assert perf.linear_flops(70.6e9, 10) == pytest.approx(2 * 70.6e9 * 10)
    # 4 x 80 layers x 64 heads x 128 x 2000 tokens of context
    assert perf.decode_attention_flops(80, 64, 128, 2000) == pytest.approx(4 * 80 * 64 * 128 * 2000)
    # quadratic in the prompt: doubling it quadruples the term
    assert perf.prefill_attention_flops(80, 64, 128, 4000**2) == pytest.approx(
        4 * perf.prefill_attention_flops(80, 64, 128, 2000**2))


def test_allreduce_ring_time():
    # 8 GPUs, 1 MB, 100 GB/s per direction: 2 x 7/8 x 1e6 / 100e9 = 17.5 us, plus 8 us latency.
    assert perf.allreduce_time_s(1e6, 8, 100e9, 8e-6) == pytest.approx(25.5e-6)
    assert perf.allreduce_time_s(1e6, 1, 100e9, 8e-6) == 0.0
    # per layer: two all-reduces of tokens x hidden x 2 B
    assert perf.allreduce_time_per_layer_s(64, 8192, 2, 450e9, 0) == pytest.approx(2 * 64 * 8192 * 2 / 450e9)


def test_roofline_is_the_slower_of_memory_and_compute_plus_overhead():
    memory_bound = perf.roofline_step_time_s(1.2e9, 0, 1e12, 1e15, 1e15, EFF)
    assert memory_bound == pytest.approx(1.2e9 / 0.6e12 + 2e-3)
    compute_bound = perf.roofline_step_time_s(1e6, 0, 1e15, 1e12, 1e15, EFF, communication_s=1e-3)
    assert compute_bound == pytest.approx(1e15 / 0.5e15 + 1e-3 + 2e-3)


def test_kv_memory_batch_limit_by_hand():
    # (80 GiB - 35.3 GB - 3 GiB) x 0.9 / 1 GiB
    expected = np.floor(0.9 * (80 * 2**30 - 35.3e9 - 3 * 2**30) / 2**30)
    assert perf.kv_memory_batch_limit(80, 35.3e9, 2**30, EFF) == expected
    assert perf.kv_memory_batch_limit(40, 90e9, 2**30, EFF) == 0   # the weights do not fit


def test_continuous_batching_mixes_prompts_at_the_completion_rate():
    assert perf.mixed_step_prefill_tokens(100, 2000, 500) == 400


# --- token mixes ----------------------------------------------------------------

@pytest.mark.parametrize("mix", [{500: 1, 1500: 1}, ([500, 1500], [3, 3]), (np.array([500.0, 1500.0]), np.ones(2))])
def test_token_mix_accepts_a_mapping_or_a_pair_of_arrays(mix):
    got = perf.token_mix(mix)
    assert got.mean_tokens == 1000 and got.mean_square_tokens == pytest.approx((500**2 + 1500**2) / 2)


def test_a_spread_mix_costs_more_than_its_mean():
    one = perf.replica_throughput(**BASE, efficiency=EFF)
    spread = perf.replica_throughput(**{**BASE, "input_tokens": {200: 1, 1800: 1}}, efficiency=EFF)
    assert spread.output_tokens_per_s_per_gpu < one.output_tokens_per_s_per_gpu   # quadratic attention term


def test_bad_token_mix_is_a_value_error():
    with pytest.raises(ValueError, match="non-negative"):
        perf.token_mix({100: -1})


# --- the three modes --------------------------------------------------------------

def test_max_throughput_runs_at_the_batch_limit_and_says_what_binds():
    r = perf.replica_throughput(**BASE, efficiency=EFF)
    assert r.batch == min(r.kv_memory_batch_limit, 512)
    assert r.binds in perf.BATCH_LIMITS and r.step_bound in perf.STEP_BOUNDS
    assert r.output_tokens_per_s_per_replica == pytest.approx(2 * r.output_tokens_per_s_per_gpu)
    assert r.tpot_ms > 0 and r.ttft_ms > 0


def test_gpu_seconds_per_request_rise_with_prompt_length():
    r = perf.replica_throughput(**BASE, efficiency=EFF)
    assert r.gpu_seconds_per_request == pytest.approx(1000 / r.output_tokens_per_s_per_gpu)
    longer = perf.replica_throughput(**{**BASE, "input_tokens": 1300}, tpot_ms_max=60, efficiency=EFF)
    shorter = perf.replica_throughput(**BASE, tpot_ms_max=60, efficiency=EFF)
    assert longer.gpu_seconds_per_request > shorter.gpu_seconds_per_request   # +30 % prompt priced with its KV effect


def test_concurrency_sets_the_batch():
    r = perf.replica_throughput(**BASE, concurrency=16, efficiency=EFF)
    assert (r.batch, r.binds) == (16, "concurrency")


@pytest.mark.parametrize(("tpot", "ttft"), [(30, None), (50, 2000), (None, 300), (80, 500)])
def test_latency_constrained_mode_meets_its_targets(tpot, ttft):
    r = perf.replica_throughput(**BASE, tpot_ms_max=tpot, ttft_ms_max=ttft, efficiency=EFF)
    assert r.meets_targets
    assert tpot is None or r.tpot_ms <= tpot
    assert ttft is None or r.ttft_ms <= ttft
    unconstrained = perf.replica_throughput(**BASE, efficiency=EFF)
    assert r.output_tokens_per_s_per_gpu <= unconstrained.output_tokens_per_s_per_gpu
    if r.batch < unconstrained.batch:   # one more sequence would break a target
        above = perf.replica_throughput(**BASE, concurrency=r.batch + 1, efficiency=EFF)
        assert (tpot is not None and above.tpot_ms > tpot) or (ttft is not None and above.ttft_ms > ttft)


def test_an_unreachable_target_is_reported_not_hidden():
    r = perf.replica_throughput(**BASE, tpot_ms_max=0.1, efficiency=EFF)
    assert not r.meets_targets and r.batch == 1 and r.binds == "latency_target"


def test_arrival_rate_batch_satisfies_littles_law():
    rep = perf.replica("llama-3.1-8b", "H100-SXM-80GB", 1, "bf16", 500, 250)
    batch = perf.batch_for_arrival_rate(rep, EFF, 4.0)[0]
    tpot, _ = perf.tpot_s(rep, EFF, batch)
    assert 4.0 * (perf.ttft_s(rep, EFF, batch) + 250 * tpot) == pytest.approx(batch, rel=0.02)


# --- errors ---------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "match"), [
    ({"model": "llama-9"}, r"unknown model 'llama-9'; valid: .*llama-3.1-70b"),
    ({"gpu": "TPU"}, r"unknown GPU 'TPU'; valid: .*H100-SXM-80GB"),
    ({"precision": "int3"}, r"precision must be one of 'fp16', 'bf16', 'fp8', 'fp4'"),
    ({"gpu": "A100-SXM-80GB", "tensor_parallel": 4}, r"A100-SXM-80GB has no fp8 .*valid precisions: bf16, fp16"),
    ({"gpu": "H100-SXM-80GB", "precision": "fp4"}, r"has no fp4 .*bf16, fp16, fp8"),
    ({"tensor_parallel": 0}, "tensor_parallel must be a whole number"),
    ({"model": "llama-3.1-405b", "tensor_parallel": 1}, "does not fit"),
])
def test_bad_inputs_are_value_errors_naming_the_valid_ones(change, match):
    with pytest.raises(ValueError, match=match):
        perf.replica_throughput(**{**BASE, **change}, efficiency=EFF)


def test_shipped_parameters_load_and_are_physical():
    eff = perf.load_efficiency()
    for share in (eff.hbm_bandwidth_fraction, eff.kv_bandwidth_fraction, eff.compute_fraction,
                  eff.interconnect_fraction, eff.kv_memory_fraction):
        assert 0 < share <= 1
    assert 0 <= eff.step_overhead_ms < 30 and eff.max_batch_sequences >= 1
    header = (REPO / "data" / "performance.toml").read_text()
    assert "command:" in header and "date:" in header and "rows:" in header and "groups:" in header


def test_every_catalogue_gpu_and_model_runs():
    from capplan.sizing.catalogue import load_gpus, load_models

    for gpu in load_gpus():
        precision = "fp8" if "fp8" in get_gpu(gpu).dense_tflops else "bf16"
        for model in load_models():
            try:
                r = perf.replica_throughput(model=model, gpu=gpu, tensor_parallel=8, precision=precision,
                                            input_tokens=500, output_tokens=200, efficiency=EFF)
            except ValueError as exc:
                assert "does not fit" in str(exc)
                continue
            assert r.output_tokens_per_s_per_gpu > 0


# --- invariants (hypothesis) ------------------------------------------------------------

lengths = st.integers(min_value=1, max_value=30_000)
models = st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "gpt-oss-20b", "llama-2-7b"])


@settings(max_examples=40, deadline=None)
@given(model=models, isl=lengths, extra=st.integers(min_value=1, max_value=20_000), osl=st.integers(1, 8000),
       concurrency=st.one_of(st.none(), st.integers(1, 512)))
def test_longer_prompts_never_raise_throughput(model, isl, extra, osl, concurrency):
    kw = dict(model=model, gpu="H200-141GB", tensor_parallel=2, precision="fp8", output_tokens=osl,
              concurrency=concurrency, efficiency=EFF)
    try:
        longer = perf.replica_throughput(input_tokens=isl + extra, **kw)
    except ValueError:
        return   # the longer prompt does not fit at all
    shorter = perf.replica_throughput(input_tokens=isl, **kw)
    assert longer.output_tokens_per_s_per_gpu <= shorter.output_tokens_per_s_per_gpu * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(model=models, isl=lengths, osl=st.integers(1, 8000), factor=st.floats(1.0, 4.0))
def test_more_bandwidth_never_lowers_throughput(model, isl, osl, factor):
    gpu = get_gpu("H100-SXM-80GB")
    faster = replace(gpu, hbm_bandwidth_tb_per_s=gpu.hbm_bandwidth_tb_per_s * factor)
    slow = perf.replica(model, gpu, 2, "fp8", isl, osl)
    fast = perf.replica(model, faster, 2, "fp8", isl, osl)
    limit, _ = perf.batch_limit(slow, EFF)
    if limit < 1:
        return
    assert perf.output_tokens_per_s_per_gpu(fast, EFF, limit) >= perf.output_tokens_per_s_per_gpu(slow, EFF, limit)


@settings(max_examples=40, deadline=None)
@given(model=models, isl=lengths, osl=st.integers(1, 8000), c=st.integers(1, 1000), more=st.integers(1, 1000))
def test_more_concurrency_never_lowers_tpot(model, isl, osl, c, more):
    rep = perf.replica(model, "H100-SXM-80GB", 4, "fp8", isl, osl)
    assert perf.tpot_s(rep, EFF, c + more)[0] >= perf.tpot_s(rep, EFF, c)[0]


@settings(max_examples=25, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), batch=st.integers(1, 2000))
def test_per_gpu_throughput_falls_as_tp_grows_at_one_batch(tp, batch):
    # Memory and compute per GPU halve, the fixed overhead does not and the all-reduce grows.
    small = perf.replica("llama-3.1-70b", "H100-SXM-80GB", tp, "fp8", 1000, 1000)
    large = perf.replica("llama-3.1-70b", "H100-SXM-80GB", 2 * tp, "fp8", 1000, 1000)
    assert perf.output_tokens_per_s_per_gpu(large, EFF, batch) <= perf.output_tokens_per_s_per_gpu(small, EFF, batch)


@settings(max_examples=30, deadline=None)
@given(model=models, isl=lengths, osl=st.integers(1, 8000), extra=st.integers(1, 600))
def test_a_sweep_is_the_model_at_each_batch_and_never_falls_up_to_the_batch_limit(model, isl, osl, extra):
    """The model's shape: throughput per GPU and TPOT both rise (never fall) with the batch, up to the batch
    limit (KV memory or the engine's); the sweep is replica_throughput at each batch, the extra one included."""
    kw = dict(model=model, gpu="H200-141GB", tensor_parallel=2, precision="fp8", input_tokens=isl, output_tokens=osl,
              efficiency=EFF)
    try:
        top = perf.replica_throughput(**kw)
    except ValueError:
        return   # does not fit
    points = perf.throughput_sweep(top.kv_memory_batch_limit, extra_batches=(extra,), **kw)
    batches = [p["batch"] for p in points]
    assert batches[0] == 1 and batches[-1] == top.batch and batches == sorted(set(batches))
    assert min(extra, top.batch) in batches
    for p in points:  # ("binds" says concurrency or, at the top, what caps it)
        at = perf.replica_throughput(**kw, concurrency=p["batch"])
        assert (p["output_tokens_per_s_per_gpu"], p["tpot_ms"], p["ttft_ms"]) == (at.output_tokens_per_s_per_gpu,
                                                                             at.tpot_ms, at.ttft_ms)
    x, t = (np.array([p[k] for p in points]) for k in ("output_tokens_per_s_per_gpu", "tpot_ms"))
    assert (np.diff(x) >= -1e-9 * x[1:]).all() and (np.diff(t) >= 0).all()


# --- the benchmark runs -------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(not DEV_DATA.is_file(), reason="dev benchmark file not on this machine")
def test_benchmark_quick_runs():
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "perf_model.py"), "--quick"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "leave-one-group-out" in done.stdout and "median_ape_%" in done.stdout
