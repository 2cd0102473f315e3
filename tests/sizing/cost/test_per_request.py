"""Tests for capplan.sizing.cost.per_request: GPU time and price of one request, and RequestCost."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.sizing.cost import per_request as cost
from capplan.sizing.cost.per_request import ModelledRequestCost, RequestCost
from capplan.sizing.memory import DoesNotFitError
from capplan.sizing.performance import Efficiency

RATES = dict(prefill_tokens_per_s_per_gpu=10_000.0, decode_tokens_per_s_per_gpu=2_000.0)


def test_gpu_seconds_per_request_worked_example():
    # (1000/10000 + 200/2000) / 0.5 = (0.1 + 0.1) / 0.5 = 0.4 GPU·s
    s = cost.gpu_seconds_per_request(1000, 200, **RATES, target_utilisation=0.5)
    assert s == pytest.approx(0.4, rel=1e-12)
    assert isinstance(s, float)


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_gpu_seconds_per_request_keeps_array_shape(shape):
    n_in = np.full(shape, 1000)
    s = cost.gpu_seconds_per_request(n_in, 0, **RATES)
    assert s.shape == shape
    np.testing.assert_allclose(s, 0.1, rtol=1e-12)


def test_usd_per_request_worked_example():
    # 0.4 GPU·s × 3.60 USD/GPU-h / 3600 s/h = 0.0004 USD
    c = cost.usd_per_request(1000, 200, usd_per_gpu_hour=3.6, **RATES, target_utilisation=0.5)
    assert c == pytest.approx(4e-4, rel=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    (dict(prefill_tokens_per_s_per_gpu=0.0, decode_tokens_per_s_per_gpu=1.0), "tokens_per_s_per_gpu"),
    (dict(prefill_tokens_per_s_per_gpu=1.0, decode_tokens_per_s_per_gpu=-1.0), "tokens_per_s_per_gpu"),
    (dict(**RATES, target_utilisation=0.0), "target_utilisation"),
    (dict(**RATES, target_utilisation=1.5), "target_utilisation"),
])
def test_gpu_seconds_per_request_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        cost.gpu_seconds_per_request(10, 10, **kwargs)


def test_gpu_seconds_per_request_rejects_negative_tokens():
    with pytest.raises(ValueError, match="input_tokens"):
        cost.gpu_seconds_per_request([10, -1], 10, **RATES)


def test_usd_per_request_rejects_negative_price():
    with pytest.raises(ValueError, match="usd_per_gpu_hour"):
        cost.usd_per_request(10, 10, usd_per_gpu_hour=-1.0, **RATES)


@given(n_in=st.integers(0, 100_000), n_out=st.integers(0, 10_000),
       extra_out=st.integers(1, 10_000), u=st.floats(0.05, 1.0))
def test_cost_per_request_rises_with_output_tokens(n_in, n_out, extra_out, u):
    a = cost.usd_per_request(n_in, n_out, usd_per_gpu_hour=2.0, **RATES, target_utilisation=u)
    b = cost.usd_per_request(n_in, n_out + extra_out, usd_per_gpu_hour=2.0, **RATES, target_utilisation=u)
    assert b > a >= 0


def test_request_cost_matches_the_functions():
    c = RequestCost(10_000.0, 2_000.0, 3.6, target_utilisation=0.5)
    assert c.gpu_seconds(1000, 200) == pytest.approx(0.4, rel=1e-12)
    assert c.usd(1000, 200) == pytest.approx(4e-4, rel=1e-12)


def test_request_cost_of_a_mix_is_the_cost_at_its_mean():
    # linear: the mean cost of {500: 1, 1500: 1} prompts is the cost of 1,000 tokens
    c = RequestCost(10_000.0, 2_000.0, 3.6, target_utilisation=0.5)
    assert c.gpu_seconds({500: 1, 1500: 1}, ([100, 300], [1, 1])) == pytest.approx(0.4, rel=1e-12)
    assert c.at_operating_point(1000, 200) is c and c.source == "assumed"


# --- the modelled cost (performance model at an operating point) ---------------------------------------------

#: Round efficiencies (not the fitted ones), so the hand calculations below stay true after a refit.
EFF = Efficiency(hbm_bandwidth_fraction=0.5, kv_bandwidth_fraction=0.5, compute_fraction=0.5, step_overhead_ms=1.0,
                 interconnect_fraction=1.0, allreduce_latency_us=0.0, max_batch_sequences=256,
                 kv_memory_fraction=0.9, activation_reserve_gib=0.0)
L8B = dict(model="llama-3.1-8b", gpu="H100-SXM-80GB", tensor_parallel=1, precision="bf16", efficiency=EFF)
L70B = dict(model="llama-3.1-70b", gpu="H100-SXM-80GB", tensor_parallel=2, precision="bf16", efficiency=EFF)


def test_modelled_gpu_seconds_golden_llama_8b_h100_batch_128():
    """One request of 1,000 prompt and 100 output tokens, Llama 3.1 8B in BF16 on one H100, batch 128, by hand.

    Step: 128 decoding sequences plus 128·1000/100 = 1,280 prompt tokens (continuous batching), n = 1,408 tokens.
    Memory: weights 8.03e9 × 2 B = 16.06 GB, KV 128 seqs × 131,072 B/token (32 layers × 2 × 8 heads × 128 × 2 B)
    × 1,050 tokens of mean context (1000 + 100/2) = 17.62 GB; (16.06 + 17.62) GB / (0.5 × 3.35 TB/s) = 20.105 ms.
    Compute: 2 × 8.03e9 × 1408 = 2.2612e13 FLOP, + decode attention 128 × 4·32·32·128·1050 = 7.05e10, + prefill
    attention 1.28 prompts × 2·32·32·128·1000² = 3.36e11; 2.3018e13 / (0.5 × 989 TFLOP/s) = 46.549 ms: compute-bound.
    T = 46.549 + 1 (overhead) = 47.549 ms; s = 100 steps × 47.549 ms / 128 sequences = 0.037148 GPU·s.
    Without the prompt tokens the step is bandwidth-bound, 20.105 + 1 = 21.105 ms: decode 100 × 21.105 / 128 =
    0.016488 GPU·s, prefill the rest, 0.020659 GPU·s. KV limit: floor(0.9 × (85.90 − 16.06) GB / (131,072 B ×
    1,100 tokens reserved)) = 435 sequences, not binding.
    """
    r = cost.modelled_gpu_seconds_per_request(1000, 100, batch=128, **L8B)
    assert r.gpu_seconds == pytest.approx(0.037148, rel=1e-4)
    assert r.decode_gpu_seconds == pytest.approx(0.016488, rel=1e-4)
    assert r.prefill_gpu_seconds == pytest.approx(0.020659, rel=1e-4)
    assert (r.batch, r.kv_memory_batch_limit, r.binds) == (128, 435, "concurrency")
    assert r.tpot_ms == pytest.approx(47.549, rel=1e-4)
    # utilisation 0.5 doubles the GPU time paid for
    assert cost.modelled_gpu_seconds_per_request(1000, 100, batch=128, target_utilisation=0.5,
                                                 **L8B).gpu_seconds == pytest.approx(2 * r.gpu_seconds, rel=1e-12)


def test_plus_30_percent_prompt_costs_more_than_its_linear_share_when_kv_memory_binds():
    """Llama 3.1 70B in BF16 on 2 H100s, 2,000 prompt + 200 output tokens, as many sequences as fit.

    Each GPU keeps 0.9 × (85.90 − 70.6) GB = 13.77 GB for KV at 163,840 B/token (80 layers × 2 × 8 heads × 128
    × 2 B / 2 shards): 2,200 tokens reserved a sequence -> 38 sequences; +30 % prompt (2,600 + 200) -> 30.
    Linear in tokens, +30 % prompt adds 30 % of the prompt's share of the cost (its prefill share here, 20 %
    of it; or the catalogue-rate model's 68 %): at most +20.4 %. Modelled, the batch falls by a fifth and every
    step reads more KV: +27.9 %. At a fixed batch of 8, where the KV memory does not bind, +1.3 % only.
    """
    base, longer = (cost.modelled_gpu_seconds_per_request(n, 200, **L70B) for n in (2000, 2600))
    assert (base.batch, longer.batch, base.binds, longer.binds) == (38, 30, "kv_memory", "kv_memory")
    rise = longer.gpu_seconds / base.gpu_seconds - 1
    linear_share = 0.3 * base.prefill_gpu_seconds / base.gpu_seconds
    catalogue = RequestCost(2830.0, 600.0, 1.0)  # H100 medium-class ASSUMED rates (data/gpus.toml)
    catalogue_rise = catalogue.gpu_seconds(2600, 200) / catalogue.gpu_seconds(2000, 200) - 1
    assert rise == pytest.approx(0.279, abs=0.002)
    assert rise > linear_share and rise > catalogue_rise == pytest.approx(0.204, abs=0.001)
    small = [cost.modelled_gpu_seconds_per_request(n, 200, batch=8, **L70B) for n in (2000, 2600)]
    assert small[1].gpu_seconds / small[0].gpu_seconds - 1 == pytest.approx(0.013, abs=0.001)


@settings(max_examples=60, deadline=None)
@given(n_in=st.floats(1, 30_000), n_out=st.floats(1, 4_000), more=st.floats(1.0, 3.0),
       batch=st.one_of(st.none(), st.integers(1, 300)), big=st.booleans())
def test_modelled_cost_per_request_never_falls_as_input_or_output_length_rises(n_in, n_out, more, batch, big):
    kw = dict(L70B if big else L8B, batch=batch)
    base = cost.modelled_gpu_seconds_per_request(n_in, n_out, **kw).gpu_seconds
    assert _gpu_seconds_or_inf(n_in * more, n_out, **kw) >= base * (1 - 1e-12)
    assert _gpu_seconds_or_inf(n_in, n_out * more, **kw) >= base * (1 - 1e-12)


def _gpu_seconds_or_inf(n_in: float, n_out: float, **kw) -> float:
    """GPU-seconds of the request; infinite when the longer request no longer fits the replica at all
    (e.g. 84,043 tokens of llama-3.1-70b in bf16 on 2 x H100: its KV cache exceeds the memory left)."""
    try:
        return cost.modelled_gpu_seconds_per_request(n_in, n_out, **kw).gpu_seconds
    except DoesNotFitError:
        return float("inf")


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(batch=0), "batch"), (dict(target_utilisation=0.0), "target_utilisation"),
    (dict(precision="int4"), "precision"), (dict(gpu="no-such-gpu"), "unknown GPU"),
])
def test_modelled_gpu_seconds_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        cost.modelled_gpu_seconds_per_request(1000, 100, **(L8B | kwargs))


def test_modelled_request_cost_holds_the_baseline_batch_and_resolves_the_smallest_tp():
    c = ModelledRequestCost("llama-3.1-70b", "H100-SXM-80GB", None, "bf16", 3600.0, efficiency=EFF)
    at = c.at_operating_point(2000, 200)
    assert (at.tensor_parallel, at.batch, at.baseline_mean_tokens) == (2, 38, (2000.0, 200.0))
    assert at.request_gpu_time(1000, 200).batch == 38  # a shorter mix does not raise the held batch
    assert at.request_gpu_time(2600, 200).batch == 30  # a longer one is capped by KV memory
    assert at.usd(2000, 200) == pytest.approx(at.gpu_seconds(2000, 200), rel=1e-12)  # 3600 USD/GPU-h: USD = GPU·s
    assert at.source == "modelled" and "TP 2, bf16, batch 38 set at the baseline mix" in at.describe()
