"""Tests for forecasting.models candidates added for production LLM demand."""

from __future__ import annotations

import numpy as np
import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.forecasting.models import (LEVEL_WINDOWS, WEEK_CYCLES, profile_ses, profile_ses_hourly, profile_weekdays,
                                        profile_windows)


@pytest.mark.parametrize("model", [profile_ses, profile_ses_hourly, profile_windows, profile_weekdays])
def test_profile_golden_shape_on_a_constant_level(model):
    # a fixed daily shape at a constant level: the forecast is that day again, exactly (shape taken
    # out, the per-cycle means and the hourly series are both constant, and smoothing returns them)
    day = np.log(np.array([1.0, 2, 4, 2] * 6))
    z = np.tile(day, 5)
    np.testing.assert_allclose(model(z, 30, (24,)), np.resize(day, 30), atol=1e-6)


def test_profile_ses_follows_a_lasting_level_shift_but_not_a_one_day_blip():
    rng = np.random.default_rng(0)
    shape = np.sin(2 * np.pi * np.arange(24) / 24)
    base = np.tile(shape, 10) + rng.normal(0, 0.02, 240)
    shifted = base + np.repeat([0.0] * 6 + [1.0] * 4, 24)  # the level rose 4 days ago and stayed
    blip = base + np.repeat([0.0] * 9 + [1.0], 24)          # one odd day, then back?  unknown yet
    lasting = profile_ses(shifted, 24, (24,)).mean()
    assert lasting == pytest.approx(1.0, abs=0.1)
    assert 0.0 <= profile_ses(blip, 24, (24,)).mean() <= 1.0 + 1e-9


def test_profile_ses_hourly_without_three_cycles_is_exponential_smoothing():
    z = np.linspace(1.0, 2.0, 30)
    out = profile_ses_hourly(z, 5, (24,))
    assert out.shape == (5,) and np.allclose(out, out[0]) and 1.0 <= out[0] <= 2.0


def test_profile_ses_hourly_follows_a_shift_of_the_last_hours_that_daily_means_barely_see():
    # the level rose by 1 six hours before the origin: the last day's mean rose by 6/24 = 0.25 only,
    # so profile_ses (smoothing daily means) stays near 0.25 at most; smoothing hour by hour (the
    # shape from the median of four days, three of them clean) sees six steps at +1 and follows
    rng = np.random.default_rng(1)
    shape = np.sin(2 * np.pi * np.arange(24) / 24)
    z = np.tile(shape, 10) + rng.normal(0, 0.02, 240)
    z[-6:] += 1.0
    hourly_level = (profile_ses_hourly(z, 24, (24,)) - shape).mean()
    daily_level = (profile_ses(z, 24, (24,)) - shape).mean()
    assert daily_level <= 0.25 + 0.05
    assert 0.5 < hourly_level <= 1.0 + 0.05


def test_profile_ses_without_three_cycles_is_exponential_smoothing():
    z = np.linspace(1.0, 2.0, 30)
    out = profile_ses(z, 5, (24,))
    assert out.shape == (5,) and np.allclose(out, out[0]) and 1.0 <= out[0] <= 2.0


def test_profile_windows_golden_level_is_the_mean_over_windows_of_each_windows_mean():
    """Three days of one shape at log levels 1, 2 and 4: the windows of the last 1, 2 and 3 days have
    mean levels 4, 3 and 7/3, so the forecast level is (4 + 3 + 7/3) / 3 = 28/9 = 3.111 (by hand), on the
    same shape (every day's deviation from its mean is the shape, so the median deviation is too)."""
    shape = np.log(np.array([1.0, 2, 4, 2] * 6))
    shape = shape - shape.mean()
    z = np.concatenate([1.0 + shape, 2.0 + shape, 4.0 + shape])
    np.testing.assert_allclose(profile_windows(z, 30, (24,)), 28 / 9 + np.resize(shape, 30), atol=1e-12)


def test_profile_windows_keeps_a_lasting_shift_in_part_and_a_one_day_blip_in_part():
    # a shift of +1 on the last day only: the 1-day window carries it whole, the 7-day window 1/7 of it;
    # the level is the mean over windows 1..7 of 1/w = (1 + 1/2 + ... + 1/7) / 7 = 2.5929 / 7 = 0.3704
    shape = np.sin(2 * np.pi * np.arange(24) / 24)
    z = np.tile(shape, 10) + np.repeat([0.0] * 9 + [1.0], 24)
    level = (profile_windows(z, 24, (24,)) - shape).mean()
    assert level == pytest.approx(sum(1 / w for w in range(1, LEVEL_WINDOWS + 1)) / LEVEL_WINDOWS, abs=1e-9)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=3, max_size=12), st.floats(-5, 5))
def test_profile_windows_level_within_the_daily_levels_and_moves_with_a_constant(day_levels, shift):
    """Invariants: the forecast level lies between the smallest and largest of the last days' levels
    (a weighted mean of them), and adding a constant to the series adds it to the forecast."""
    shape = np.sin(2 * np.pi * np.arange(24) / 24)
    z = np.concatenate([level + shape for level in day_levels])
    out = profile_windows(z, 24, (24,))
    recent = day_levels[-LEVEL_WINDOWS:]
    assert min(recent) - 1e-9 <= (out - shape).mean() <= max(recent) + 1e-9
    np.testing.assert_allclose(profile_windows(z + shift, 24, (24,)), out + shift, atol=1e-9)


def test_profile_weekdays_golden_twelve_days_with_a_weekend_and_a_level_shift():
    """Twelve days (the ServeGen protocol's history) of one shape; log levels by day 0..11:
    0 0 0 0 0 -1 -1 | 0.5 0.5 0.5 0.5 0.5 (a weekend at -1, then the level rose by 0.5).
    k = min(7, 12 - 7) = 5: recent level = mean(days 7..11) = 0.5. Day 12 is at the position of day 5
    a week later: day 5 stood at -1 against the 5 days before it (days 0..4, mean 0), so -1; day 13
    likewise (day 6: -1 - 0 = -1). By hand: days 12 and 13 at 0.5 - 1 = -0.5 each, then day 14 at the
    position of day 7, which stood 0.5 - 0 = +0.5 above the days before it: 0.5 + 0.5 = 1.0 (a step a week
    ago is carried once more, as the weekly naive with drift carries a trend)."""
    shape = np.log(np.array([1.0, 2, 4, 2] * 6))
    shape = shape - shape.mean()
    levels = [0.0] * 5 + [-1.0] * 2 + [0.5] * 5
    z = np.concatenate([level + shape for level in levels])
    expected = np.concatenate([-0.5 + shape, -0.5 + shape, 1.0 + shape])
    np.testing.assert_allclose(profile_weekdays(z, 72, (24,)), expected, atol=1e-12)


def test_profile_weekdays_takes_the_weekly_cycle_from_the_longest_season_and_the_median_over_weeks():
    """Five weeks of daily levels repeating (1, 1, 1, 1, 1, 0, 0) plus, in the second-last week only, an odd
    day at +3 on its first day: the median over the last four weeks ignores that week, so the coming week
    is the pattern again at the same level (the recent window is the last week, whose mean is the pattern's)."""
    shape = np.sin(2 * np.pi * np.arange(24) / 24)
    week = [1.0, 1, 1, 1, 1, 0, 0]
    levels = week * 5
    levels[21] += 3.0
    z = np.concatenate([level + shape for level in levels])
    expected = np.concatenate([level + shape for level in week])
    np.testing.assert_allclose(profile_weekdays(z, 168, (24, 168)), expected, atol=1e-9)
    np.testing.assert_allclose(profile_weekdays(z, 168, (24,)), expected, atol=1e-9)  # 7 cycles by default
    assert WEEK_CYCLES == 7


def test_profile_weekdays_without_a_week_and_a_cycle_is_profile_windows():
    shape = np.sin(2 * np.pi * np.arange(24) / 24)
    z = np.concatenate([level + shape for level in (0.0, 1, 2, 0.5, 1, 3, 2)])  # 7 days: no base window
    np.testing.assert_array_equal(profile_weekdays(z, 30, (24,)), profile_windows(z, 30, (24,)))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=8, max_size=40), st.floats(-5, 5), st.integers(1, 400))
def test_profile_weekdays_moves_with_a_constant_and_repeats_weekly(day_levels, shift, horizon):
    """Invariants: adding a constant to the series adds it to the forecast; the forecast's daily levels
    repeat with the week (day j and day j + 7 alike), since the recent level is held."""
    shape = np.sin(2 * np.pi * np.arange(24) / 24)
    z = np.concatenate([level + shape for level in day_levels])
    out = profile_weekdays(z, horizon, (24,))
    assert out.shape == (horizon,) and np.all(np.isfinite(out))
    np.testing.assert_allclose(profile_weekdays(z + shift, horizon, (24,)), out + shift, atol=1e-9)
    if horizon > 168:
        np.testing.assert_allclose(out[168:], out[:horizon - 168], atol=1e-9)


@pytest.mark.parametrize("model", ["mstl_ses", "mstl_ets"])
def test_mstl_at_exactly_two_weekly_cycles_uses_the_daily_season_without_a_warning(model):
    """336 hours = two weeks exactly: MSTL would drop the 168-hour period with a UserWarning (and the
    weekly component would be missing); the decomposition leaves it out itself and keeps the daily one."""
    import warnings

    from capplan.forecasting import models

    hours = np.arange(336)
    z = 50 + 10 * np.sin(2 * np.pi * hours / 24) + np.random.default_rng(0).normal(0, 1, 336)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = getattr(models, model)(z, 48, (24, 168))
    assert out.shape == (48,) and np.isfinite(out).all()
    # the daily cycle is carried forward: the forecast's peak-to-trough is about the 20-unit swing
    assert 15 < np.ptp(out[:24]) < 25


def test_a_candidate_with_a_cycle_is_that_candidate_with_that_season_and_pickles():
    import pickle

    from capplan.forecasting.models import MODELS, cycle_of, model_for, with_cycle

    z = np.log(100 + 30 * np.sin(2 * np.pi * np.arange(240) / 24))
    name = with_cycle("seasonal_naive", 24)
    assert name == "seasonal_naive@24"
    np.testing.assert_array_equal(model_for(name)(z, 48, ()), MODELS["seasonal_naive"](z, 48, (24,)))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model_for(name)))(z, 48, ()), model_for(name)(z, 48, ()))
    assert model_for("theta") is MODELS["theta"]
    assert (cycle_of(name, ()), cycle_of("theta", (24, 168)), cycle_of("theta", ())) == (24, 24, None)
    with pytest.raises(KeyError):
        model_for("no_such_model@24")
