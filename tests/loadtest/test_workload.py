"""Trace maths: time scaling hits the rate, sweep rates, length summaries, synthetic-mode arguments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.loadtest.workload import (arrival_rate_rps, length_summary, sglang_random_args, scaled_offsets_ms,
                                       sweep_rates_rps, uniform_for_mean_and_std, vllm_random_args)


def test_sweep_rates_span_a_quarter_to_one_and_a_half_times_the_peak_per_replica():
    assert sweep_rates_rps(12.0, replicas=2) == pytest.approx([1.5, 3.0, 4.5, 6.0, 7.5, 9.0])
    with pytest.raises(ValueError):
        sweep_rates_rps(0.0)


def test_a_scaled_trace_keeps_its_order_and_runs_at_the_rate():
    offsets_us = np.cumsum(np.random.default_rng(1).exponential(2e6, 5000)).astype(np.int64)
    scaled = scaled_offsets_ms(offsets_us, 10.0)
    assert scaled[0] == 0 and np.all(np.diff(scaled) >= 0)
    assert arrival_rate_rps(scaled * 1000) == pytest.approx(10.0, rel=1e-4)
    assert arrival_rate_rps(offsets_us) == pytest.approx(0.5, rel=0.05)


@given(st.lists(st.integers(0, 10**9), min_size=3, max_size=200, unique=True), st.floats(0.1, 1000))
def test_scaling_hits_the_target_rate(offsets, rate):
    offsets_us = np.sort(np.array(offsets, dtype=np.int64))
    scaled = scaled_offsets_ms(offsets_us, rate)
    span_ms = scaled[-1]
    if span_ms >= 10_000:  # whole-ms rounding is below 0.01 % of a 10 s trace
        assert arrival_rate_rps(scaled * 1000) == pytest.approx(rate, rel=1e-3)


def test_length_summary_and_uniform_arguments():
    s = length_summary(np.arange(1, 101))
    assert (s["min"], s["p50"], s["p90"], s["p99"], s["max"]) == (1, 50, 90, 99, 100)
    low, high = uniform_for_mean_and_std(500.0, 100.0)
    assert (low + high) / 2 == 500.0 and (high - low) / np.sqrt(12) == pytest.approx(100.0)
    assert vllm_random_args({"mean": 500.0, "std": 100.0}) == (500, pytest.approx(np.sqrt(3) * 100 / 500))
    length, ratio = sglang_random_args({"mean": 500.0, "std": 100.0})
    assert length * (1 + ratio) / 2 == pytest.approx(500.0, abs=0.5)  # SGLang draws in [len * ratio, len]
