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
from capplan.forecasting.intervals import step_scale
from capplan.forecasting.paths import error_correlation, tail_mean_excess

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
    # U(0.976, 1.024), seeded. The P50 and P90 of November's simulated peak move by <= 5 % / 8 % at the
    # median of 8 series and by <= 15 % (P50) / 25 % (P90) on every one. With the interval level found by
    # bisection on the step function of window coverage (before session 10) the largest moves were 34 % and
    # 54 %. The P90's median bound was 5 % until session 13: the paths' tail above hi_95 is now scaled by the
    # mean excess of the top 5 % of the normalised errors (~34 of 672 here), which the perturbation moves by
    # up to 16 %; measured medians 4.3 % / 7.1 % (were 2.7 % / 3.9 %), largest 9.5 % / 14.5 %.
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
    assert (np.median(moves, axis=0) <= [0.05, 0.08]).all(), moves
    assert moves[:, 0].max() <= 0.15 and moves[:, 1].max() <= 0.25, moves


def spiky_hourly(days: int, seed: int) -> pd.Series:
    """Hourly demand with a daily cycle, 5 % noise and rare spikes: 1.5 % of hours × U(1.5, 3)."""
    rng = np.random.default_rng(seed)
    t = np.arange(days * 24)
    spike = np.where(rng.random(t.size) < 0.015, np.log(rng.uniform(1.5, 3.0, t.size)), 0.0)
    values = 100 * np.exp(0.5 * np.sin(2 * np.pi * t / 24) + spike + rng.normal(0, 0.05, t.size))
    return pd.Series(values, index=pd.date_range("2026-10-04", periods=t.size, freq="h"))


def test_tail_mean_excess_golden():
    # errors scaled by s(h) = mean |e| over neighbouring steps: a constant error (2.0) gives u = 1 everywhere,
    # so nothing exceeds the threshold; no errors, no tail
    assert tail_mean_excess(np.full((2, 24), 2.0)) == 0.0
    assert tail_mean_excess(np.empty((0, 24))) == 0.0
    # u exponential with scale 1 (s(h) = 1 as the pooled mean |e| is ~1): mean excess over the 95th percentile ~1
    e = np.random.default_rng(0).exponential(1.0, size=(400, 1))
    assert tail_mean_excess(e) == pytest.approx(1.0, rel=0.15)


def test_paths_above_the_outer_bound_follow_the_exponential_tail():
    # above hi_95 (p = 0.975) the step's P(1 - q) is hi_95 + s(h) * beta * ln(0.025 / q) on the modelling scale:
    # at q = 0.0025, ln 10 = 2.303 scale-steps of beta above hi_95 (checked on the log scale at every step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit(spiky_hourly(28, 0), 48, (24,), levels=(80, 95), candidates=FAST)  # bursts: a heavy tail
    paths = sample_paths(result, n_paths=40_000, seed=3)
    # or the outer segment extended where that is higher: 1.249 (z(0.9975) - z(0.975)) / (z(0.975) - z(0.9)) times
    # log hi_95 - log hi_80 above log hi_95 (next test); on this spiky series the errors' tail is the higher
    beta = tail_mean_excess(result.backtest_errors)
    hi80, hi95 = np.log(result.frame["hi_80"]), np.log(result.frame["hi_95"])
    exponential = hi95 + step_scale(result.backtest_errors, 48) * beta * np.log(10)
    extended = hi95 + 1.249 * (hi95 - hi80)
    assert result.log and beta > 0
    assert (exponential > extended + 0.05).sum() >= 5  # the steps where the errors' tail decides
    # 100 of the 40,000 paths lie above each step's P99.75: its sampling s.d. is ~0.1 of the tail's scale (0.3-0.6
    # here), so the steps are checked together (median) and each loosely
    gap = np.abs(np.log(np.percentile(paths, 99.75, axis=0)) - np.maximum(exponential, extended))
    assert np.median(gap) < 0.03 and gap.max() < 0.15


@pytest.mark.slow
def test_a_month_peak_of_rare_spikes_is_below_its_p90():
    # 16 series: 4 weeks of history, the next 4 weeks' busiest hour against the P90 of the simulated peak.
    # The spikes (1.5 % of hours, x1.5-3) sit above the 95 % interval's 97.5 % bound, so a Gaussian
    # extension of hi_80 -> hi_95 put the P90 of the month's peak near the daily cycle's top, below almost
    # every actual peak (measured: 1 of these 16 covered); the exponential tail of the errors covers 10 of
    # 16 (nominal 0.9: spikes rarer than the tail's 5 % threshold are its weak case, an empirical tail
    # covered 13 but did worse on the plan's process, docs/forecasting.md). Asserted >= 0.5.
    below = 0
    for seed in range(16):
        y = spiky_hourly(56, seed)
        train, test = y[:28 * 24], y[28 * 24:]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fit(train, 28 * 24, (24,), candidates=FAST)
        peaks = sample_paths(result, n_paths=1000).max(axis=1)
        below += int(test.max() <= np.percentile(peaks, 90))
    assert below / 16 >= 0.5


@pytest.mark.parametrize("errors", ["zero", "missing"])
def test_paths_without_an_error_tail_extend_the_outer_segment(errors):
    # backtest errors all 0 (or all missing) give beta = 0: an exponential tail read from them would cap every path
    # at hi_95. The paths fall back on the outer segment extended in the normal score, as for a frame floored or
    # held flat wider than its errors: at p = 0.9975, log hi_95 + (z(0.9975) - z(0.975)) / (z(0.975) - z(0.9)) *
    # (log hi_95 - log hi_80) = log hi_95 + 1.249 * (log hi_95 - log hi_80) at each step
    import dataclasses

    from scipy.special import ndtri

    result = fit(hourly(21, shift_sd=0.1), 48, (24,), levels=(80, 95), candidates=FAST)
    fill = 0.0 if errors == "zero" else np.nan
    flat = dataclasses.replace(result, backtest_errors=np.full_like(result.backtest_errors, fill))
    paths = sample_paths(flat, n_paths=40_000, seed=3)
    hi80, hi95 = np.log(result.frame["hi_80"]), np.log(result.frame["hi_95"])
    slope = (ndtri(0.9975) - ndtri(0.975)) / (ndtri(0.975) - ndtri(0.9))
    assert slope == pytest.approx(1.249, abs=1e-3)
    expected = hi95 + slope * (hi95 - hi80)
    assert (expected - hi95).min() > 0.1  # well above the cap the exponential tail alone would give
    np.testing.assert_allclose(np.log(np.percentile(paths, 99.75, axis=0)), expected, atol=0.05)
