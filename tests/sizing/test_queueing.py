"""Queueing: M/M/1 table, Erlang C against a published example and closed forms, SLO-derived utilisation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.sizing import queueing as q


@pytest.mark.parametrize(("rho", "multiplier"), [(0.0, 1.0), (0.5, 2.0), (0.8, 5.0), (0.9, 10.0), (0.99, 100.0)])
def test_mm1_latency_multiplier_table(rho, multiplier):
    assert q.mm1_latency_multiplier(rho) == pytest.approx(multiplier, rel=1e-9)
    assert q.mm1_time_in_system_s(6.0, rho) == pytest.approx(6.0 * multiplier, rel=1e-9)


def test_latency_multiplier_table_rows():
    rows = q.latency_multiplier_table((0.5, 0.9, 0.99))
    assert [round(r["latency_multiplier"], 9) for r in rows] == [2.0, 10.0, 100.0]
    # pooling: 40 slots at 90 % wait far less than one server at 90 %
    assert q.latency_multiplier_table((0.9,), servers=40)[0]["latency_multiplier"] < 1.2


@pytest.mark.parametrize("rho", [1.0, 1.5, -0.1])
def test_mm1_outside_steady_state_raises(rho):
    with pytest.raises(ValueError, match=r"utilisation must be in \[0, 1\)"):
        q.mm1_latency_multiplier(rho)


def test_erlang_c_published_example():
    # M. Tanner's Erlang-C worked example (also reproduced in R. Dodier's Maxima erlang.mac notes):
    # 0.2 calls/s × 240 s = 48 erlangs on 55 agents → P(wait) 0.2387, mean wait 8.184 s, P(wait ≤ 15 s) 0.8459.
    assert q.erlang_c(55, 48) == pytest.approx(0.2387, abs=5e-5)
    assert q.mmc_mean_wait_s(55, 0.2, 240) == pytest.approx(8.184, abs=5e-4)
    assert q.mmc_wait_probability_within(55, 0.2, 240, 15) == pytest.approx(0.8459, abs=5e-5)


@pytest.mark.parametrize("rho", [0.1, 0.5, 0.9])
def test_erlang_c_closed_forms(rho):
    assert q.erlang_c(1, rho) == pytest.approx(rho, rel=1e-12)                       # M/M/1: P(wait) = ρ
    assert q.erlang_c(2, 2 * rho) == pytest.approx(2 * rho**2 / (1 + rho), rel=1e-12)  # Kleinrock, M/M/2


def _erlang_c_by_sums(c: int, a: float) -> float:
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


@given(st.integers(1, 40), st.floats(0.01, 0.99))
def test_erlang_c_matches_textbook_sums(c, rho):
    assert q.erlang_c(c, c * rho) == pytest.approx(_erlang_c_by_sums(c, c * rho), rel=1e-9)


def _erlang_c_by_scipy(c: int, a: float) -> float:
    """The formula erlang_c used before it dropped SciPy: Erlang B as a Poisson pmf/cdf ratio in logs."""
    from scipy import stats

    b = math.exp(stats.poisson.logpmf(c, a) - stats.poisson.logcdf(c, a))
    return b / (1 - a / c * (1 - b))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 500), st.floats(0.001, 0.999))
def test_erlang_c_equals_the_scipy_formula(c, rho):
    # up to 500 servers the two agree to 1e-12; beyond, SciPy's gammaln (log c!) loses the last digits
    # (1e-12 at 1,000 servers), while the recurrence stays within 5e-15 of 60-digit sums (to 10^4 servers)
    assert q.erlang_c(c, c * rho) == pytest.approx(_erlang_c_by_scipy(c, c * rho), rel=1e-12, abs=1e-300)


def test_erlang_c_recurrence_exact_for_large_pools():
    from fractions import Fraction

    c, a = 600, Fraction(552)  # exact Erlang B by rational sums of A^k / k!
    term, total = Fraction(1), Fraction(1)
    for k in range(1, c + 1):
        term = term * a / k
        total += term
    b = term / total
    exact = b / (1 - a / c * (1 - b))
    assert q.erlang_c(c, 552.0) == pytest.approx(float(exact), rel=1e-14)


def test_erlang_c_large_pools_and_overload():
    assert 0 < q.erlang_c(10_000, 9_900) < 1           # no overflow where A^c / c! would
    assert q.erlang_c(10, 10) == 1.0 and q.erlang_c(10, 12) == 1.0
    assert q.mmc_mean_wait_s(10, 2, 6) == math.inf      # A = 12 > 10 servers
    assert np.shape(q.erlang_c(np.array([10, 20, 30]), 5.0)) == (3,)


@given(st.integers(1, 500), st.floats(0.05, 0.98), st.floats(0.5, 0.999))
@settings(max_examples=50)
def test_wait_percentile_inverts_the_wait_distribution(c, rho, p):
    s = 6.0
    t = q.mmc_wait_percentile_s(c, rho * c / s, s, p)
    within = q.mmc_wait_probability_within(c, rho * c / s, s, t)
    if t > 0:
        assert within == pytest.approx(p, abs=1e-9)
    else:  # more than a share p of arrivals find a free slot
        assert within >= p - 1e-12


@pytest.mark.parametrize("rho", [0.2, 0.5, 0.9])
def test_mm1_response_time_is_exponential(rho):
    s, p = 2.0, 0.95
    expected = -math.log(1 - p) * s / (1 - rho)
    assert q.mmc_response_time_percentile_s(1, rho / s, s, p) == pytest.approx(expected, rel=1e-7)


def test_response_exceedance_is_continuous_where_rates_meet():
    # c = 2, A = 1: the wait rate θ = (c − A)/S equals the service rate μ = 1/S
    at = q.mmc_response_time_exceedance(2, 1.0, 1.0, 3.0)
    near = q.mmc_response_time_exceedance(2, 1.0 + 1e-6, 1.0, 3.0)
    assert at == pytest.approx(near, abs=1e-5)


def test_max_utilisation_matches_closed_form_for_one_server():
    # M/M/1 response: t_p = S ln(1/(1−p)) / (1−ρ) → ρ = 1 − S ln(1/(1−p)) / target
    s, p, target = 1.0, 0.9, 2 * math.log(10)
    assert q.max_utilisation_for_latency_target(1, s, target, p, latency="response") == pytest.approx(0.5, abs=1e-7)


@pytest.mark.parametrize("servers", [1, 10, 400])
def test_max_utilisation_meets_the_target_exactly(servers):
    rho = q.max_utilisation_for_latency_target(servers, 6.0, 0.5, 0.99)
    assert q.mmc_wait_percentile_s(servers, rho * servers / 6.0, 6.0, 0.99) == pytest.approx(0.5, abs=1e-6)


def test_bigger_pools_and_looser_targets_allow_more_utilisation():
    by_pool = q.max_utilisation_for_latency_target(np.array([1, 10, 100, 1000]), 6.0, 0.5, 0.99)
    assert np.all(np.diff(by_pool) > 0)
    by_target = q.max_utilisation_for_latency_target(100, 6.0, np.array([0.1, 1.0, 10.0]), 0.99)
    assert np.all(np.diff(by_target) > 0)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"latency": "ttft"}, "latency must be one of 'wait', 'response'"),
    ({"latency": "response", "latency_target_s": 10.0}, "cannot be met even with no load"),
    ({"percentile": 1.0}, r"percentile must be in \(0, 1\)"),
])
def test_max_utilisation_errors(kwargs, match):
    args = {"servers": 400, "service_time_s": 6.0, "latency_target_s": 0.5} | kwargs
    with pytest.raises(ValueError, match=match):
        q.max_utilisation_for_latency_target(**args)


@given(st.floats(0.01, 300), st.floats(0.5, 30), st.floats(0.01, 5), st.sampled_from([0.9, 0.95, 0.99, 0.999]))
@settings(max_examples=60, deadline=None)
def test_servers_for_wait_target_is_the_fewest_that_meet_it(rate, s, target, p):
    c = q.servers_for_wait_target(rate, s, target, p)
    assert q.mmc_wait_percentile_s(c, rate, s, p) <= target
    assert c == 1 or q.mmc_wait_percentile_s(c - 1, rate, s, p) > target
    assert c > rate * s                                   # more slots than the offered load: a stable queue


def test_servers_for_wait_target_grows_with_load():
    slots = q.servers_for_wait_target(np.array([10.0, 50.0, 92.593, 500.0]), 6, 0.5, 0.99)
    assert np.all(np.diff(slots) > 0)
    assert slots[2] == 587   # the DEVELOPERS load: 556 erlangs need 587 slots for p99 wait <= 0.5 s
