"""Capacity: Little's law and GPUs by throughput / concurrency (golden: the DEVELOPERS case)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.sizing import capacity

PEAK_QPS = 2_000_000 / 86_400 * 4


def test_golden_developers_case():
    in_flight = capacity.concurrency_from_littles_law(PEAK_QPS, 6)
    assert round(in_flight) == 556
    assert capacity.gpus_for_throughput(PEAK_QPS * 400, 2_000, 0.6) == pytest.approx(30.864, abs=1e-3)
    # 556 / (40 × 0.6): the utilisation target applies to the sequence slots too
    assert capacity.gpus_for_concurrency(in_flight, 40, 0.6) == pytest.approx(23.148, abs=1e-3)


@pytest.mark.parametrize("shape", [(), (4,), (2, 3)])
def test_arrays_keep_their_shape(shape):
    rate = np.full(shape, 10.0)
    assert np.shape(capacity.gpus_for_throughput(rate, 100.0, 0.5)) == shape
    assert np.allclose(capacity.gpus_for_throughput(rate, 100.0, 0.5), 0.2)


@pytest.mark.parametrize(("args", "match"), [
    ((100, 0, 0.5), "gpu_tokens_per_s must be > 0"),
    ((100, 10, 0), r"target_utilisation must be in \(0, 1\]"),
    ((100, 10, 1.2), r"target_utilisation must be in \(0, 1\]"),
])
def test_throughput_rejects_bad_inputs(args, match):
    with pytest.raises(ValueError, match=match):
        capacity.gpus_for_throughput(*args)


@given(st.floats(0, 1e6), st.floats(0.001, 600))
def test_littles_law_round_trips(rate_rps, latency_s):
    concurrency = capacity.concurrency_from_littles_law(rate_rps, latency_s)
    assert capacity.arrival_rate_from_littles_law(concurrency, latency_s) == pytest.approx(rate_rps, rel=1e-12, abs=1e-12)


@given(st.floats(0, 1e6), st.floats(0, 1e6), st.floats(1, 1e4), st.floats(0.05, 1))
def test_more_tokens_never_need_fewer_gpus(a, b, per_gpu, u):
    lo, hi = sorted((a, b))
    assert capacity.gpus_for_throughput(lo, per_gpu, u) <= capacity.gpus_for_throughput(hi, per_gpu, u)
