"""The seasonal naive at the series' own period (``own_period_naive``) and its place in the automatic choice."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.forecasting import forecast
from capplan.forecasting.api import SINGLE_GAIN, _combination_size
from capplan.forecasting.models import OWN_PERIOD_CYCLES, own_period, own_period_naive, seasonal_naive

#: Candidates enough to test the choice quickly (the statsmodels fits are tested elsewhere).
CHEAP = ("seasonal_naive", "seasonal_naive_long", "own_period_naive", "seasonal_profile", "profile_ses", "mstl_ses")


def _cycle(period: int, cycles: int, seed: int = 0) -> np.ndarray:
    """A smooth daily-like shape of ``period`` steps repeated ``cycles`` times (values in 10..30)."""
    phase = np.arange(period) / period
    rng = np.random.default_rng(seed)
    shape = 20 + 8 * np.sin(2 * np.pi * phase) + 2 * np.sin(4 * np.pi * phase + rng.uniform(0, 2 * np.pi))
    return np.tile(shape, cycles)


def test_golden_a_cycle_of_23_steps_read_with_a_nominal_day_of_24():
    # the shape comes an hour earlier each day: the 24-step naive misses by an hour a day, the own period does not
    z = _cycle(23, 40)
    assert own_period(z, 24) == 23
    fc = own_period_naive(z, 48, (24, 168))
    np.testing.assert_array_equal(fc, np.resize(z[-23:], 48))
    assert np.max(np.abs(fc - _cycle(23, 43)[len(z):len(z) + 48])) == 0.0
    assert np.mean(np.abs(seasonal_naive(z, 48, (24, 168)) - fc)) > 0.5


def test_the_nominal_period_stays_where_it_fits_and_on_noise():
    rng = np.random.default_rng(7)
    daily = _cycle(24, 30) + rng.normal(0, 0.5, 720)
    assert own_period(daily, 24) == 24
    np.testing.assert_array_equal(own_period_naive(daily, 30, (24,)), seasonal_naive(daily, 30, (24,)))
    noise = rng.normal(100, 10, 2_000)  # no cycle at all: no lag halves the changes, the nominal period is kept
    assert own_period(noise, 24) == 24
    assert own_period(np.full(500, 3.0), 24) == 24  # no change at any lag: nothing to gain


def test_too_little_history_keeps_the_nominal_period():
    z = _cycle(23, 10)
    need = OWN_PERIOD_CYCLES * 24 + 35  # three nominal cycles plus the longest lag compared
    assert own_period(z[-need:], 24) == 23
    assert own_period(z[-(need - 1):], 24) == 24
    np.testing.assert_array_equal(own_period_naive(z[:30], 5, (24,)), seasonal_naive(z[:30], 5, (24,)))


@settings(max_examples=40, deadline=None)
@given(period=st.integers(13, 35), seed=st.integers(0, 10_000), level=st.floats(-5, 5))
def test_a_clean_cycle_between_half_and_one_and_a_half_nominal_periods_is_found(period, seed, level):
    z = _cycle(period, 200 // period + 6, seed) + level
    assert own_period(z, 24) == period  # the smallest lag that repeats the series exactly, moved by no level


def test_the_automatic_choice_takes_the_own_period_alone_where_it_dominates_every_window():
    rng = np.random.default_rng(3)
    y = pd.Series(_cycle(23, 45)[:1_000] * np.exp(rng.normal(0, 0.002, 1_000)),
                  index=pd.date_range("2026-01-01", periods=1_000, freq="h"))
    train, test = y.iloc[:-48], y.iloc[-48:].to_numpy()
    fc = forecast(train, 48, season_lengths=(24, 168), levels=(80,), candidates=CHEAP)
    assert fc.attrs["model"] == "own_period_naive"
    assert fc.attrs["combination"]["size"] == 1
    scores = fc.attrs["combination"]["cross_validated_mase"]
    assert scores["1"] <= SINGLE_GAIN * min(v for k, v in scores.items() if k != "1")
    assert np.mean(np.abs(fc["mean"].to_numpy() - test)) / np.mean(np.abs(test)) < 0.01


def test_on_a_24_hour_cycle_the_own_period_is_the_seasonal_naive_and_left_out_as_a_duplicate():
    rng = np.random.default_rng(5)
    y = pd.Series(_cycle(24, 30) * np.exp(rng.normal(0, 0.05, 720)),
                  index=pd.date_range("2026-01-01", periods=720, freq="h"))
    fc = forecast(y, 48, season_lengths=(24, 168), levels=(80,), candidates=CHEAP)
    assert "own_period_naive" not in fc.attrs["backtest"]["scores"]
    assert "seasonal_naive" in fc.attrs["backtest"]["scores"]


@pytest.mark.parametrize("seasons", [(), (400,)])
def test_without_a_usable_season_it_is_the_naive(seasons):
    z = np.arange(50.0)
    np.testing.assert_array_equal(own_period_naive(z, 4, seasons), np.full(4, 49.0))


@pytest.mark.parametrize("period", [24, 7])
def test_a_trend_or_a_random_walk_without_a_cycle_keeps_the_nominal_period(period):
    # a ramp's change grows with the lag: the shortest lag compared, (period // 2 + 1) / period of the
    # nominal period's change (0.54 at 24, 0.57 at 7), stays above OWN_PERIOD_GAIN
    ramp = np.arange(400.0)
    assert own_period(ramp, period) == period
    walk = np.cumsum(np.random.default_rng(period).normal(0, 1, 2_000))
    assert own_period(walk, period) == period


@pytest.mark.parametrize(("lead", "alone"), [(0.3, True), (0.6, False)])
def test_golden_one_candidate_alone_only_where_it_halves_the_best_combination(lead, alone):
    # actuals 0 on 3 windows of 4 steps (scale 1): candidate "a" misses by `lead` everywhere, four others by 1.
    # The mean of the best 3 misses by (lead + 2) / 3, of all 5 by (lead + 4) / 5: at lead 0.3 the best
    # combination scores 0.767 and "a" alone 0.3 (0.39 of it: alone); at 0.6, 0.867 against 0.6 (0.69: a
    # combination, though "a" is ahead on every window; all 5, at 0.92 within COMBINE_TOLERANCE of the 3).
    ranked = ["a", "b", "c", "d", "e"]
    fc_z = {c: np.full((3, 4), lead if c == "a" else 1.0) for c in ranked}
    per_window = {c: np.full(3, lead if c == "a" else 1.0) for c in ranked}
    size, scores = _combination_size(ranked, fc_z, per_window, np.zeros((3, 4)), lambda v: v, 1.0)
    assert scores["1"] == pytest.approx(lead)
    assert scores["3"] == pytest.approx((lead + 2) / 3) and scores["all"] == pytest.approx((lead + 4) / 5)
    assert size == (1 if alone else 5)
