"""Tests for capplan/drift/stats.py: PSI, chi-square, CUSUM change point and the Shapley decomposition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.drift.stats import (
    chi_square_homogeneity,
    cusum_change_point,
    merge_sparse_bins,
    population_stability_index,
    shapley_decomposition,
)


def test_psi_hand_worked():
    # (0.4 − 0.5)·ln(0.4/0.5) + (0.6 − 0.5)·ln(0.6/0.5) = 0.0223 + 0.0182
    assert population_stability_index([50, 50], [40, 60]) == pytest.approx(
        -0.1 * math.log(0.8) + 0.1 * math.log(1.2), rel=1e-12)
    assert population_stability_index([10, 20, 30], [1, 2, 3]) == 0.0


def test_psi_of_a_shifted_normal_is_about_delta_squared():
    # binned N(0,1) vs N(0.3,1): PSI → δ² = 0.09 for fine bins
    edges = np.linspace(-6, 6, 241)
    from scipy.stats import norm
    p = np.diff(norm.cdf(edges)) * 1e6
    q = np.diff(norm.cdf(edges, loc=0.3)) * 1e6
    assert population_stability_index(p, q) == pytest.approx(0.09, rel=0.03)  # tails floored at 1e-4


@pytest.mark.parametrize(("base", "win"), [([1, 2], [1, 2, 3]), ([0, 0], [1, 1]), ([-1, 2], [1, 2])])
def test_psi_bad_input_is_a_value_error(base, win):
    with pytest.raises(ValueError):
        population_stability_index(base, win)


def test_merge_sparse_bins_keeps_totals_and_order():
    base, win = merge_sparse_bins([3, 50, 2, 40, 5], [1, 2, 3, 4, 5], 0.1)
    assert base.tolist() == [53, 47] and win.tolist() == [3, 12]
    assert merge_sparse_bins([1, 1], [2, 2], 0.9)[0].tolist() == [2]
    with pytest.raises(ValueError, match="same bins"):
        merge_sparse_bins([1, 2], [1])


def test_chi_square_detects_a_shift_and_not_noise():
    rng = np.random.default_rng(7)
    base = np.bincount(rng.integers(0, 20, 50_000), minlength=20)
    same = np.bincount(rng.integers(0, 20, 10_000), minlength=20)
    shifted = np.bincount(np.minimum(rng.integers(0, 20, 10_000) + rng.integers(0, 2, 10_000), 19), minlength=20)
    assert chi_square_homogeneity(base, same)[1] > 1e-3
    assert chi_square_homogeneity(base, shifted)[1] < 1e-10
    assert chi_square_homogeneity([5, 0], [7, 0]) == (0.0, 1.0)  # one populated bin: nothing to test


def test_cusum_finds_the_step_and_its_significance():
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(900, 25, 40), rng.normal(1170, 25, 16)]
    cp = cusum_change_point(x)
    assert cp.index == 40
    assert cp.p_value < 1e-6
    assert cp.relative_change == pytest.approx(0.3, abs=0.02)
    flat = cusum_change_point(rng.normal(900, 25, 56))
    assert flat.p_value > 0.01
    assert cusum_change_point([5, 5, 5, 5]).p_value == 1.0
    with pytest.raises(ValueError, match="at least 4"):
        cusum_change_point([1, 2, 3])


def test_shapley_of_a_product_is_the_symmetric_index_decomposition():
    parts = shapley_decomposition({"v": 100.0, "c": 2.0}, {"v": 120.0, "c": 2.5}, lambda f: f["v"] * f["c"])
    assert parts["v"] == pytest.approx(20 * (2.0 + 2.5) / 2)
    assert parts["c"] == pytest.approx(0.5 * (100 + 120) / 2)


def test_shapley_gives_nothing_to_an_unchanged_factor_and_rejects_mismatched_keys():
    parts = shapley_decomposition({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 1.0, "b": 5.0, "c": 4.0},
                                  lambda f: f["a"] * f["b"] * f["c"] + f["b"] ** 2)
    assert parts["a"] == 0.0
    with pytest.raises(ValueError, match="same factors"):
        shapley_decomposition({"a": 1.0}, {"b": 1.0}, lambda f: 0.0)


_factor = st.floats(0.1, 1e4, allow_nan=False)


@given(st.lists(st.tuples(_factor, _factor), min_size=1, max_size=5),
       st.lists(st.floats(-3, 3), min_size=5, max_size=5))
def test_shapley_parts_add_up_to_the_total(pairs, weights):
    names = [f"f{i}" for i in range(len(pairs))]
    before = {n: p[0] for n, p in zip(names, pairs)}
    after = {n: p[1] for n, p in zip(names, pairs)}

    def value(f):  # a product with a non-linear additive term: interactions on purpose
        return math.prod(f.values()) ** 0.5 + sum(w * f[n] ** 2 for w, n in zip(weights, names))

    parts = shapley_decomposition(before, after, value)
    total = value(after) - value(before)
    assert sum(parts.values()) == pytest.approx(total, rel=1e-9, abs=1e-6 * max(1.0, abs(value(after))))
