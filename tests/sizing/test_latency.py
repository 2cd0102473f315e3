"""Latency and burst modelled when the logs have none (capplan/sizing/latency.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.sizing.latency import modelled_latency_s, poisson_burst_ratio


def test_modelled_latency_grows_with_output_tokens_and_uses_a_measured_ttft():
    short = modelled_latency_s("llama-3.1-8b", "H100-SXM-80GB", 1000, 50)
    long = modelled_latency_s("llama-3.1-8b", "H100-SXM-80GB", 1000, 500)
    assert 0 < short < long < 120
    with_ttft = modelled_latency_s("llama-3.1-8b", "H100-SXM-80GB", 1000, 500, ttft_s=2.0)
    no_decode = modelled_latency_s("llama-3.1-8b", "H100-SXM-80GB", 1000, 1, ttft_s=2.0)
    assert no_decode == pytest.approx(2.0) and with_ttft > 2.0
    # a 70B model needs tensor parallelism on 80 GB GPUs: found, not an error
    assert modelled_latency_s("llama-3.1-70b", "H100-SXM-80GB", 1000, 200) > 0


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown model"):
        modelled_latency_s("no-such", "H100-SXM-80GB", 1000, 200)


@given(st.floats(1e-3, 1e6))
def test_poisson_burst_ratio_is_above_one_and_falls_with_load(mean):
    r = poisson_burst_ratio(mean)
    assert r > 1 and poisson_burst_ratio(mean * 2) < r
    assert r == pytest.approx(1 + 3 / mean**0.5)


def test_poisson_burst_ratio_needs_a_positive_mean():
    with pytest.raises(ValueError, match="mean_in_flight"):
        poisson_burst_ratio(0.0)
