"""Tests for capplan/slo/budget.py: the error-budget and burn-rate arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.slo.budget import (
    WORKBOOK_RULES,
    BurnRateRule,
    budget_consumed_fraction,
    budget_spent_fraction,
    burn_rate,
    error_budget_events,
    error_budget_minutes,
    rule_firing,
    runs,
    time_to_exhaustion_h,
    trailing_sum,
    windowed_burn_rate,
)

TOL = 1e-9


def test_seed_figures_one_hour_at_1_44_percent():
    # The SRE Workbook's page rule: 1.44 % errors for 1 h against 99.9 % / 30 days.
    b = burn_rate(0.0144, 0.999)
    assert b == pytest.approx(14.4, rel=TOL)
    assert budget_spent_fraction(b, 60, 30) == pytest.approx(0.02, rel=TOL)


def test_seed_figures_twenty_minutes_at_5_percent():
    b = burn_rate(0.05, 0.999)
    assert b == pytest.approx(50.0, rel=TOL)
    # 50 × 20 min / 43 200 min = 0.023148…: "2.3 % of the budget"
    assert budget_spent_fraction(b, 20, 30) == pytest.approx(50 * 20 / 43_200, rel=TOL)
    assert round(float(budget_spent_fraction(b, 20, 30)) * 100, 1) == 2.3
    assert time_to_exhaustion_h(b, 30) == pytest.approx(14.4, rel=TOL)


@pytest.mark.parametrize(("target", "window_days", "minutes"), [
    (0.999, 30, 43.2),
    (0.99, 30, 432.0),
    (0.9999, 28, 4.032),
    (0.999, 7, 10.08),
])
def test_error_budget_minutes_of_full_outage(target, window_days, minutes):
    assert error_budget_minutes(window_days, target) == pytest.approx(minutes, rel=1e-9)


def test_error_budget_events_shape_follows_input():
    assert float(error_budget_events(2_000_000, 0.999)) == pytest.approx(2_000.0)
    np.testing.assert_allclose(error_budget_events(np.array([1e3, 1e6]), 0.99), [10.0, 10_000.0])


@pytest.mark.parametrize("target", [0.0, 1.0, 1.5, -0.1])
def test_bad_target_is_a_value_error(target):
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        burn_rate(0.01, target)


def test_bad_window_and_rule_are_value_errors():
    with pytest.raises(ValueError, match="window_days"):
        error_budget_minutes(0, 0.999)
    with pytest.raises(ValueError, match="severity"):
        BurnRateRule("sms", 60, 5, 14.4)
    with pytest.raises(ValueError, match="short_window_min"):
        BurnRateRule("page", 5, 60, 14.4)
    with pytest.raises(ValueError, match="window_min"):
        trailing_sum([1, 2], 0)


def test_time_to_exhaustion_is_infinite_without_burn():
    assert np.isinf(time_to_exhaustion_h(0.0, 30))


def test_trailing_sum_against_a_hand_worked_series():
    np.testing.assert_allclose(trailing_sum([1, 2, 3, 4, 5], 2), [1, 3, 5, 7, 9])
    np.testing.assert_allclose(trailing_sum([1, 2, 3], 10), [1, 3, 6])


def _one_day(error_rate_by_minute: dict[range, float], valid_per_min: float = 1_000.0):
    valid = np.full(24 * 60, valid_per_min)
    bad = np.zeros_like(valid)
    for minutes, rate in error_rate_by_minute.items():
        bad[minutes] = rate * valid_per_min
    return bad, valid


def test_page_rule_fires_for_an_hour_at_exactly_14_4x():
    bad, valid = _one_day({range(600, 660): 0.0144})
    firing, long_burn = rule_firing(bad, valid, WORKBOOK_RULES[0], 0.999)
    # the 1 h window holds the whole burst only at minute 659; a minute later it holds 59/60 of it
    assert runs(firing) == [(659, 660)]
    assert long_burn[659] == pytest.approx(14.4, rel=1e-9)


def test_page_rule_for_a_twenty_minute_outage_at_5_percent():
    bad, valid = _one_day({range(600, 620): 0.05})
    firing, long_burn = rule_firing(bad, valid, WORKBOOK_RULES[0], 0.999)
    ((start, stop),) = runs(firing)
    # 1 h burn reaches 14.4 after t min with 50·t/60 ≥ 14.4 → t ≥ 17.28, i.e. the 18th minute (index 617)
    assert start == 617
    # the 5 min window holds ≥ 0.288·5 = 1.44 bad minutes until 3 min after the end
    assert stop == 623
    assert long_burn.max() == pytest.approx(50 * 20 / 60, rel=1e-9)


def test_slow_burn_only_opens_a_ticket():
    bad, valid = np.full(5 * 1440, 1.5), np.full(5 * 1440, 1_000.0)  # 0.15 %: 1.5× for 5 days
    fired = {r.long_window_min: runs(rule_firing(bad, valid, r, 0.999)[0]) for r in WORKBOOK_RULES}
    assert fired[60] == [] and fired[360] == []
    assert fired[4320] == [(4320 - 1, 5 * 1440)]  # from the first full 3-day window on


def test_quiet_minutes_do_not_divide_by_zero():
    assert np.all(windowed_burn_rate(np.zeros(10), np.zeros(10), 5, 0.999) == 0)
    assert budget_consumed_fraction(0, 0, 0.999) == 0


@given(st.floats(0, 1), st.floats(0.5, 0.99999), st.floats(0.01, 100))
def test_burn_rate_scales_linearly(error_rate, target, k):
    assert burn_rate(error_rate * k, target) == pytest.approx(k * burn_rate(error_rate, target), rel=1e-9, abs=1e-12)


@given(st.integers(0, 10**7), st.integers(1, 10**8), st.floats(0.5, 0.99999))
def test_consumed_plus_remaining_is_one(bad, valid, target):
    consumed = float(budget_consumed_fraction(bad, valid, target))
    remaining = 1 - consumed
    assert consumed + remaining == pytest.approx(1.0)
    assert consumed == pytest.approx(bad / ((1 - target) * valid), rel=1e-9)


@given(st.floats(0.01, 1000), st.floats(1, 10_000), st.integers(1, 90))
def test_spent_over_exhaustion_time_is_the_whole_budget(burn, duration_min, window_days):
    hours = float(time_to_exhaustion_h(burn, window_days))
    assert budget_spent_fraction(burn, hours * 60, window_days) == pytest.approx(1.0, rel=1e-9)
    assert budget_spent_fraction(2 * burn, duration_min, window_days) == pytest.approx(
        2 * budget_spent_fraction(burn, duration_min, window_days), rel=1e-9)


@given(st.lists(st.integers(0, 50), min_size=1, max_size=200), st.integers(1, 300))
def test_trailing_sum_matches_a_direct_loop(values, window):
    direct = [sum(values[max(0, i - window + 1): i + 1]) for i in range(len(values))]
    np.testing.assert_allclose(trailing_sum(values, window), direct)
