"""Demand: QPS from requests/day and token rates (golden: the DEVELOPERS case)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.sizing import demand


def test_golden_developers_case():
    avg = demand.average_qps(2_000_000)
    peak = demand.peak_qps(avg, 4)
    assert avg == pytest.approx(23.148, abs=1e-3)
    assert peak == pytest.approx(92.593, abs=1e-3)
    assert demand.tokens_per_s(peak, 400) == pytest.approx(37_037.04, abs=0.01)


@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_arrays_keep_their_shape(shape):
    rpd = np.full(shape, 86_400.0)
    out = demand.peak_qps(demand.average_qps(rpd), 2.0)
    assert np.shape(out) == shape
    assert np.allclose(out, 2.0)


@pytest.mark.parametrize(("fn", "args", "match"), [
    (demand.peak_qps, (10, 0.5), "peak_to_avg_ratio must be >= 1"),
    (demand.average_qps, (-1,), "requests_per_day must be >= 0"),
    (demand.tokens_per_s, (1, float("nan")), "tokens_per_request must be >= 0"),
])
def test_bad_input_names_the_argument(fn, args, match):
    with pytest.raises(ValueError, match=match):
        fn(*args)


@given(st.floats(0, 1e9), st.floats(1, 50))
def test_daily_and_peak_round_trip(requests_per_day, ratio):
    peak = demand.peak_qps(demand.average_qps(requests_per_day), ratio)
    assert demand.daily_from_peak(peak, ratio) == pytest.approx(requests_per_day, rel=1e-9, abs=1e-6)
