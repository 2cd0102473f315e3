"""Tests for capplan.sizing.cost.per_request: GPU time and price of one request, and RequestCost."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.sizing.cost import per_request as cost
from capplan.sizing.cost.per_request import RequestCost

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
