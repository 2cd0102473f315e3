"""Memory: KV-cache bytes from real architectures, weights shards, tensor-parallel degree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.sizing import memory
from capplan.sizing.catalogue import get_gpu, get_model


@pytest.mark.parametrize(("layers", "kv_heads", "head_dim", "dtype", "expected"), [
    (32, 8, 128, "bf16", 131_072),   # Llama-3.1-8B: 2 × 32 × 8 × 128 × 2
    (80, 8, 128, "bf16", 327_680),   # Llama-3.1-70B: 2 × 80 × 8 × 128 × 2
    (80, 8, 128, "fp8", 163_840),    # same in fp8: 1 byte per element
    (28, 4, 128, "fp16", 57_344),    # Qwen2.5-7B: 2 × 28 × 4 × 128 × 2
    (126, 8, 128, "bf16", 516_096),  # Llama-3.1-405B: 2 × 126 × 8 × 128 × 2
])
def test_kv_bytes_per_token_hand_checked(layers, kv_heads, head_dim, dtype, expected):
    assert memory.kv_cache_bytes_per_token(layers, kv_heads, head_dim, dtype) == expected


def test_kv_bytes_per_token_from_catalogue_models():
    m = get_model("llama-3.1-70b")
    assert memory.kv_cache_bytes_per_token(m.num_layers, m.num_kv_heads, m.head_dim) == 327_680


@pytest.mark.parametrize(("tp", "per_gpu"), [(1, 327_680), (2, 163_840), (8, 40_960), (16, 40_960)])
def test_tensor_parallel_shards_kv_heads_then_replicates(tp, per_gpu):
    # Beyond 8 GPUs each of Llama-70B's 8 KV heads is replicated, so a GPU still holds one head.
    assert memory.kv_cache_bytes_per_token(80, 8, 128, "bf16", tp) == per_gpu


def test_unknown_dtype_lists_the_valid_ones():
    with pytest.raises(ValueError, match="dtype must be one of 'fp32', 'fp16', 'bf16', 'fp8'"):
        memory.kv_cache_bytes_per_token(32, 8, 128, "fp6")


@pytest.mark.parametrize(("tokens", "blocks"), [(0, 0), (1, 1), (16, 1), (17, 2), (1000, 63)])
def test_paged_blocks_round_up(tokens, blocks):
    assert memory.kv_bytes_per_sequence(tokens, 1.0, 16) == blocks * 16


def test_sequences_per_replica_hand_checked():
    # Llama-3.1-8B bf16 on an 80 GiB GPU, 10 % reserve, 1,000-token sequences:
    # (80 × 2^30 × 0.9 − 8.03e9 × 2) / (63 × 16 × 131,072) = 61.25e9 / 132.12e6 = 463.6 → 463
    budget = memory.kv_budget_bytes_per_gpu(80, memory.weights_bytes(8.03e9, "bf16"), 1, 0.1)
    assert budget == pytest.approx(80 * 2**30 * 0.9 - 16.06e9, rel=1e-12)
    assert memory.sequences_per_replica(budget, memory.kv_bytes_per_sequence(1000, 131_072)) == 463
    assert memory.sequences_per_replica(-5.0, 1.0) == 0


@pytest.mark.parametrize(("model", "gpu", "weights_dtype", "tp"), [
    ("llama-3.1-8b", "H100-SXM-80GB", "bf16", 1),
    ("llama-3.1-8b", "L40S-48GB", "bf16", 1),
    ("llama-3.1-70b", "H100-SXM-80GB", "bf16", 2),    # 141 GB of weights
    ("llama-3.1-70b", "H200-141GB", "bf16", 2),       # 141.2 GB > 141 GiB × 0.9
    ("llama-3.1-70b", "L40S-48GB", "bf16", 4),
    ("llama-3.1-405b", "H100-SXM-80GB", "bf16", 16),  # 810 GB
    ("llama-3.1-405b", "H100-SXM-80GB", "fp8", 8),    # 405 GB
])
def test_smallest_tensor_parallel(model, gpu, weights_dtype, tp):
    m, g = get_model(model), get_gpu(gpu)
    kv_seq = memory.kv_bytes_per_sequence(4_000, memory.kv_cache_bytes_per_token(m.num_layers, m.num_kv_heads, m.head_dim))
    got = memory.smallest_tensor_parallel(memory.weights_bytes(m.parameters, weights_dtype), kv_seq, m.num_kv_heads,
                                          g.memory_gib, 0.1)
    assert got == tp


def test_model_that_never_fits_raises():
    with pytest.raises(ValueError, match="do not fit on 32 GPUs of 24 GiB"):
        memory.smallest_tensor_parallel(2e12, 1e9, 8, 24, 0.1)


def test_sequence_tokens_at_quantile_is_an_observed_length():
    rng = np.random.default_rng(7)
    lengths = rng.lognormal(7, 0.8, 5_000).round()
    p95 = memory.sequence_tokens_at_quantile(lengths, 0.95)
    assert p95 in set(lengths)
    assert np.mean(lengths <= p95) >= 0.95
    with pytest.raises(ValueError, match="empty"):
        memory.sequence_tokens_at_quantile([], 0.95)


@given(st.integers(1, 200), st.integers(1, 64), st.sampled_from([64, 80, 128, 256]), st.sampled_from([1, 2, 4, 8, 16]))
def test_kv_shards_cover_the_whole_cache(layers, kv_heads, head_dim, tp):
    full = memory.kv_cache_bytes_per_token(layers, kv_heads, head_dim)
    per_gpu = memory.kv_cache_bytes_per_token(layers, kv_heads, head_dim, "bf16", tp)
    assert per_gpu * tp >= full        # together the GPUs hold at least the whole cache
    assert per_gpu <= full
