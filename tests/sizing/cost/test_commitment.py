"""Tests for capplan.sizing.cost.commitment: option costs, load-duration curve, commitment optimiser."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.sizing.cost import commitment as cost


# --- simple options ---------------------------------------------------------------------------

def test_cost_usd_is_count_times_rate_times_hours():
    assert cost.cost_usd(8, 2.5, 730) == pytest.approx(14_600.0, rel=1e-12)
    np.testing.assert_allclose(cost.cost_usd([1, 2], 3.0, 10), [30.0, 60.0], rtol=1e-12)


@pytest.mark.parametrize("term, expected", [("1y", 1.0 + 8760 / 8760), ("3y", 1.0 + 8760 / 26_280)])
def test_reserved_effective_rate_amortises_upfront(term, expected):
    assert cost.reserved_effective_usd_per_gpu_hour(1.0, 8760.0, term) == pytest.approx(expected, rel=1e-12)


def test_reserved_effective_rate_rejects_unknown_term():
    with pytest.raises(ValueError, match="'1y', '3y'"):
        cost.reserved_effective_usd_per_gpu_hour(1.0, 0.0, "2y")


def test_spot_overhead_factor_worked_example_and_limits():
    # 0.05/h × 0.25 h = 1.25 % of bought hours wasted -> 1/0.9875
    assert cost.spot_overhead_factor(0.05, 0.25) == pytest.approx(1 / 0.9875, rel=1e-12)
    assert cost.spot_overhead_factor(0.0, 5.0) == 1.0
    with pytest.raises(ValueError, match="never finish"):
        cost.spot_overhead_factor(2.0, 0.5)


# --- load-duration curve and commitment optimiser ---------------------------------------------

def test_load_duration_curve_sorts_descending():
    fraction, gpus = cost.load_duration_curve([1, 3, 2, 3])
    np.testing.assert_array_equal(gpus, [3, 3, 2, 1])
    np.testing.assert_allclose(fraction, [0.25, 0.5, 0.75, 1.0])


def test_optimal_commitment_three_hours_two_prices():
    # need 1, 2, 3 GPU over 3 h; reserved 1, on-demand 2 USD/GPU-h:
    # R=0: 0 + 2·6 = 12; R=1: 3 + 2·3 = 9; R=2: 6 + 2·1 = 8; R=3: 9 + 0 = 9.
    c = cost.optimal_commitment([1, 2, 3], reserved_usd_per_gpu_hour=1.0, on_demand_usd_per_gpu_hour=2.0)
    np.testing.assert_array_equal(c.candidates_gpus, [0, 1, 2, 3])
    np.testing.assert_allclose(c.cost_by_reserved_usd, [12.0, 9.0, 8.0, 9.0], rtol=1e-12)
    assert c.reserved_gpus == 2
    assert c.cost_usd == pytest.approx(8.0) and c.all_on_demand_cost_usd == pytest.approx(12.0)
    assert c.break_even_fraction == pytest.approx(0.5)
    assert c.hours == 3


def test_optimal_commitment_tie_goes_to_smaller_r():
    # on-demand 3: R=2 costs 6 + 3·1 = 9 and R=3 costs 9 + 0 = 9; the share of hours with
    # need >= 3 is 1/3 = p_r/p_od exactly, the break-even point. The smaller R wins.
    c = cost.optimal_commitment([1, 2, 3], reserved_usd_per_gpu_hour=1.0, on_demand_usd_per_gpu_hour=3.0)
    np.testing.assert_allclose(c.cost_by_reserved_usd, [18.0, 12.0, 9.0, 9.0], rtol=1e-12)
    assert c.reserved_gpus == 2


@pytest.mark.parametrize("need, p_reserved, p_on_demand, expected_r", [
    ([4, 4, 4], 1.0, 2.0, 4),          # flat need: reserve it all
    ([0, 0, 10], 1.0, 2.0, 0),         # a single spike: 1/3 of hours < 1/2 break-even
    ([0, 0, 10], 1.0, 4.0, 10),        # 1/3 > 1/4: now the spike is worth reserving
    ([5, 6, 7], 2.0, 2.0, 0),          # reserved no cheaper than on-demand: reserve nothing
    ([2.5, 2.5], 1.0, 2.0, 2),         # fractional: R=2 costs 4 + 2·1 = 6 = R=3's 6, a tie -> 2
    ([2.5, 2.5], 1.0, 2.5, 3),         # R=2 costs 4 + 2.5·1 = 6.5 > R=3's 6
])
def test_optimal_commitment_cases(need, p_reserved, p_on_demand, expected_r):
    c = cost.optimal_commitment(need, reserved_usd_per_gpu_hour=p_reserved, on_demand_usd_per_gpu_hour=p_on_demand)
    assert c.reserved_gpus == expected_r


def test_optimal_commitment_rejects_bad_input():
    with pytest.raises(ValueError, match=r"need_gpus\[1\]"):
        cost.optimal_commitment([1, -2], reserved_usd_per_gpu_hour=1.0, on_demand_usd_per_gpu_hour=2.0)
    with pytest.raises(ValueError, match="non-empty"):
        cost.optimal_commitment([], reserved_usd_per_gpu_hour=1.0, on_demand_usd_per_gpu_hour=2.0)
    with pytest.raises(ValueError, match="on_demand_usd_per_gpu_hour"):
        cost.optimal_commitment([1], reserved_usd_per_gpu_hour=1.0, on_demand_usd_per_gpu_hour=0.0)


integer_needs = st.lists(st.integers(0, 40), min_size=1, max_size=300)
real_needs = st.lists(st.floats(0, 40, allow_nan=False), min_size=1, max_size=300)
price_pairs = st.tuples(st.floats(0.1, 10), st.floats(0.1, 10))


def _brute_force_cost(need, p_reserved, p_on_demand):
    need = np.asarray(need, dtype=float)
    candidates = np.arange(int(np.ceil(need.max())) + 1)
    return np.array([r * p_reserved * need.size + p_on_demand * np.maximum(need - r, 0).sum()
                     for r in candidates])


@settings(max_examples=150, deadline=None)
@given(need=st.one_of(integer_needs, real_needs), prices=price_pairs)
def test_fast_optimiser_equals_brute_force(need, prices):
    p_r, p_od = prices
    c = cost.optimal_commitment(need, reserved_usd_per_gpu_hour=p_r, on_demand_usd_per_gpu_hour=p_od)
    brute = _brute_force_cost(need, p_r, p_od)
    np.testing.assert_allclose(c.cost_by_reserved_usd, brute, rtol=1e-9, atol=1e-9)
    tolerance = cost.TIE_RELATIVE_TOLERANCE * max(brute.max(), 1.0)
    assert c.reserved_gpus == int(np.flatnonzero(brute <= brute.min() + tolerance)[0])


@settings(max_examples=150, deadline=None)
@given(need=st.one_of(integer_needs, real_needs), prices=price_pairs)
def test_optimal_r_lies_between_min_and_max_need(need, prices):
    p_r, p_od = sorted(prices)
    if p_od <= p_r * (1 + 1e-6):
        # Equal prices (or equal but for float rounding) make every R up to the minimum need a
        # tie, and ties go to the smaller R; the bound below holds when reserving is cheaper.
        p_od = p_r * 1.5
    c = cost.optimal_commitment(need, reserved_usd_per_gpu_hour=p_r, on_demand_usd_per_gpu_hour=p_od)
    assert np.floor(min(need)) <= c.reserved_gpus <= np.ceil(max(need))
    assert c.cost_usd <= c.all_on_demand_cost_usd + 1e-9


@settings(max_examples=150, deadline=None)
@given(need=integer_needs, prices=price_pairs)
def test_break_even_rule_on_load_duration_curve(need, prices):
    # Integer need: R* is the largest R whose share of hours with need >= R exceeds p_r/p_od.
    p_r, p_od = prices
    c = cost.optimal_commitment(need, reserved_usd_per_gpu_hour=p_r, on_demand_usd_per_gpu_hour=p_od)
    need = np.asarray(need)
    share_at_least = lambda r: np.mean(need >= r)  # noqa: E731
    eps = 1e-9
    if c.reserved_gpus > 0:
        assert share_at_least(c.reserved_gpus) > c.break_even_fraction - eps
    assert share_at_least(c.reserved_gpus + 1) <= c.break_even_fraction + eps


# --- reserved GPUs shared across pools ---------------------------------------------------------

from capplan.sizing.cost.commitment import optimal_commitment, shared_commitment  # noqa: E402


def test_shared_commitment_by_hand():
    """Two pools whose peaks do not coincide: A needs 2, 2, 0, 0 GPUs, B 0, 0, 2, 2; reserved 1, on-demand 2 USD/h.

    Alone, each pool's costs are equal for R = 0, 1, 2 (8 USD: 0 + 2·4, 1·4 + 2·2, 2·4 + 0), so each reserves 0
    (ties go to less commitment): 16 USD together. Shared, the summed need is 2 every hour: R* = 2 costs
    2 · 1 · 4 = 8 USD, a saving of 8 USD.
    """
    c = shared_commitment({"a": [2, 2, 0, 0], "b": [0, 0, 2, 2]}, reserved_usd_per_gpu_hour=1.0,
                          on_demand_usd_per_gpu_hour=2.0)
    assert (c.reserved_gpus, c.cost_usd, c.per_pool_reserved_gpus, c.per_pool_cost_usd, c.saving_usd) == (
        2, 8.0, {"a": 0, "b": 0}, 16.0, 8.0)


@settings(max_examples=150, deadline=None)
@given(needs=st.integers(1, 4).flatmap(lambda pools: st.integers(1, 48).flatmap(lambda hours: st.lists(
           st.lists(st.integers(0, 30), min_size=hours, max_size=hours), min_size=pools, max_size=pools))),
       p_od=st.floats(1.0, 10.0), ratio=st.floats(0.05, 1.2))
def test_shared_commitment_never_costs_more_than_per_pool(needs, p_od, ratio):
    by_pool = {f"p{i}": n for i, n in enumerate(needs)}
    c = shared_commitment(by_pool, reserved_usd_per_gpu_hour=p_od * ratio, on_demand_usd_per_gpu_hour=p_od)
    assert c.cost_usd <= c.per_pool_cost_usd * (1 + 1e-9) + 1e-9
    summed = np.sum(needs, axis=0)
    assert c.cost_usd == pytest.approx(optimal_commitment(summed, reserved_usd_per_gpu_hour=p_od * ratio,
                                                          on_demand_usd_per_gpu_hour=p_od).cost_usd)


def test_shared_commitment_refuses_unequal_series():
    with pytest.raises(ValueError, match="same hours"):
        shared_commitment({"a": [1, 2], "b": [1]}, reserved_usd_per_gpu_hour=1.0, on_demand_usd_per_gpu_hour=2.0)
