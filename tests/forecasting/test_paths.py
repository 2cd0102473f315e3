"""Tests for forecasting.paths: sample paths, their correlation, and each period's peak and total."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from capplan.forecasting import fit, month_peaks, period_peaks, sample_paths
from capplan.forecasting.paths import error_correlation

FAST = ("seasonal_naive", "seasonal_profile", "profile_ses")


def hourly(days: int, seed: int = 0, shift_sd: float = 0.0, start: str = "2026-01-05") -> pd.Series:
    """Hourly demand: daily cycle, log-normal noise, and a daily level that jumps by ``shift_sd`` (log) a day."""
    rng = np.random.default_rng(seed)
    t = np.arange(days * 24)
    level = np.repeat(np.cumsum(rng.normal(0, shift_sd, days)), 24)
    values = 100 * np.exp(0.4 * np.sin(2 * np.pi * t / 24) + level + rng.normal(0, 0.1, t.size))
    return pd.Series(values, index=pd.date_range(start, periods=t.size, freq="h"))


def test_error_correlation_golden():
    # a constant offset per window persists over the whole horizon
    offsets = np.repeat(np.array([[1.0], [-2.0], [0.5]]), 24, axis=1)
    assert error_correlation(offsets) == (pytest.approx(0.99), pytest.approx(0.999))
    # independent errors: nothing persists, no lag-1 correlation
    noise = np.random.default_rng(0).normal(size=(40, 24))
    persistent, phi = error_correlation(noise)
    assert persistent < 0.1 and phi < 0.15


@settings(max_examples=40, deadline=None)
@given(arrays(float, st.tuples(st.integers(1, 6), st.integers(1, 30)), elements=st.floats(-1e3, 1e3)))
def test_error_correlation_is_bounded(errors):
    persistent, phi = error_correlation(errors)
    assert 0 <= persistent <= 0.99 and 0 <= phi <= 0.999


def test_paths_keep_the_forecasts_hourly_quantiles():
    result = fit(hourly(21, shift_sd=0.1), 48, (24,), levels=(80, 95), candidates=FAST)
    paths = sample_paths(result, n_paths=8000, seed=1)
    assert paths.shape == (8000, 48) and (paths >= 0).all()
    p10, p50, p90 = np.percentile(paths, [10, 50, 90], axis=0)
    np.testing.assert_allclose(p10, result.frame["lo_80"], rtol=0.05)
    np.testing.assert_allclose(p50, result.frame["mean"], rtol=0.05)
    np.testing.assert_allclose(p90, result.frame["hi_80"], rtol=0.05)
    np.testing.assert_array_equal(paths, sample_paths(result, n_paths=8000, seed=1))  # same seed, same paths


def test_month_peaks_columns_order_and_months():
    # history to 2026-01-25 23:00; 240 h ahead reach into February
    result = fit(hourly(21), 240, (24,), levels=(80,), candidates=FAST)
    months = month_peaks(result, n_paths=500)
    assert list(months.index) == ["2026-01", "2026-02"]
    assert months["steps"].tolist() == [6 * 24, 4 * 24]
    for what in ("peak", "total"):
        assert (months[f"{what}_p10"] <= months[f"{what}_p50"]).all()
        assert (months[f"{what}_p50"] <= months[f"{what}_p90"]).all()
    # a month's peak is at least its busiest hour's median, and its total near the sum of hourly medians
    jan = result.frame.loc["2026-01"]
    assert months.loc["2026-01", "peak_p50"] >= jan["mean"].max()
    assert months.loc["2026-01", "total_p50"] == pytest.approx(jan["mean"].sum(), rel=0.1)
    assert "sample paths" in months.attrs["method"]


def test_a_flat_series_has_degenerate_peaks():
    y = pd.Series(7.5, index=pd.date_range("2026-01-01", periods=24 * 10, freq="h"))
    days = period_peaks(fit(y, 48, (24,), candidates=FAST), "D", n_paths=50)
    np.testing.assert_allclose(days[["peak_p10", "peak_p90"]].to_numpy(), 7.5)
    np.testing.assert_allclose(days["total_p50"], 7.5 * 24)


def test_period_peaks_needs_a_datetime_index_and_paths():
    result = fit(hourly(10).reset_index(drop=True), 24, (24,), candidates=FAST)
    with pytest.raises(ValueError, match="DatetimeIndex"):
        period_peaks(result)
    with pytest.raises(ValueError, match="n_paths must be >= 1"):
        sample_paths(result, n_paths=0)


@pytest.mark.slow
def test_day_peak_p90_is_calibrated_by_backtest():
    # 40 held-out days (20 series with day-to-day level jumps, 2 days each): the actual day's peak
    # falls below the simulated P90 of the day's peak on 75-100 % of them (nominal 90 %)
    below, days = 0, 0
    for seed in range(20):
        y = hourly(16, seed=seed, shift_sd=0.15)
        train, test = y[:-48], y[-48:]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            peaks = period_peaks(fit(train, 48, (24,), candidates=FAST), "D", n_paths=1000)
        actual = test.groupby(test.index.to_period("D")).max().to_numpy()
        below += int(np.sum(actual <= peaks["peak_p90"].to_numpy()))
        days += len(actual)
    assert 0.75 <= below / days <= 1.0


def bursty_hourly(days: int, seed: int) -> pd.Series:
    """Hourly demand with daily and weekly cycles, noise, and bursts: one hour in ten × U(1.2, 2.0)."""
    rng = np.random.default_rng(seed)
    t = np.arange(days * 24)
    weekend = np.where((t // 24) % 7 >= 5, np.log(0.6), 0.0)
    burst = np.where(rng.random(t.size) < 0.1, np.log(rng.uniform(1.2, 2.0, t.size)), 0.0)
    values = 100 * np.exp(0.5 * np.sin(2 * np.pi * t / 24) + weekend + burst + rng.normal(0, 0.08, t.size))
    return pd.Series(values, index=pd.date_range("2026-10-04", periods=t.size, freq="h"))


@pytest.mark.slow
def test_month_peak_is_stable_when_every_hour_moves_by_up_to_2_4_percent():
    # the plan's case (issue 22): four weeks of bursty hours, a month ahead, default candidates; the same
    # hours counted another way (by completion instead of arrival) differ by <= 2.4 % each. Each hour x
    # U(0.976, 1.024), seeded. The P50 and P90 of November's simulated peak move by <= 5 % at the median
    # of 8 series and by <= 15 % (P50) / 25 % (P90) on every one. With the interval level found by bisection
    # on the step function of window coverage (before session 10) the largest moves were 34 % and 54 %.
    moves = []
    for seed in range(8):
        y = bursty_hourly(28, seed)
        perturbed = y * np.random.default_rng(seed + 100).uniform(1 - 0.024, 1 + 0.024, y.size)
        peaks = []
        for series in (y, perturbed):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fit(series, 30 * 24 + 20, (24, 168), levels=(80, 95))
            peaks.append(month_peaks(result).loc["2026-11", ["peak_p50", "peak_p90"]].to_numpy(float))
        moves.append(np.abs(peaks[1] / peaks[0] - 1))
    moves = np.array(moves)
    assert (np.median(moves, axis=0) <= 0.05).all(), moves
    assert moves[:, 0].max() <= 0.15 and moves[:, 1].max() <= 0.25, moves
