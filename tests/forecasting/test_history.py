"""The history policy: thresholds, interval floor, flattening and the flat forecast (issue 20)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.forecasting.history import (GROWTH_FORECAST_H, MIN_LOG_SPREAD, Z_P90, flat_forecast, flatten_beyond,
                                         floor_intervals, history_policy, limit_horizon, monthly_horizon_refusal,
                                         observed_log_spread, supported_steps, window_note)


@pytest.mark.parametrize(("history_h", "daily", "weekly", "growth", "supported"), [
    (3, False, False, False, 0),
    (72, True, False, False, 0),
    (335.9, True, False, False, 0),  # weekly needs 336 h too
    (504, True, True, True, 504),
    (5000, True, True, True, 2000),  # never beyond the horizon
])
def test_policy_thresholds(history_h, daily, weekly, growth, supported):
    p = history_policy(history_h, 2000)
    assert (p.daily_cycle, p.weekly_cycle, p.growth_forecast, p.supported_h) == (daily, weekly, growth, supported)
    assert p.flattened == (growth and supported < 2000)
    assert p.seasons == tuple(m for m, ok in ((24, daily), (168, weekly)) if ok)


def test_policy_notes_say_what_exists_and_what_is_needed():
    (short, cycle) = history_policy(3, 2000).notes
    assert "only 3.0 h of history" in short and f"{GROWTH_FORECAST_H} h" in short and "observed peak" in short
    assert "48 h" in cycle
    (flat,) = history_policy(504, 2000).notes
    assert "504 h (21 days) ahead" in flat and "remaining 1496 h" in flat
    assert history_policy(5000, 2000).notes == ()
    assert [r["used"] for r in history_policy(3, 10).table()] == ["no", "no", "no", "yes"]


def test_policy_refuses_negative_spans():
    with pytest.raises(ValueError, match="history_h and horizon_h"):
        history_policy(-1, 10)


def test_window_note():
    assert window_note("the drift test", 24 * 40, 35) is None
    assert window_note("the drift test", 72, 35) == "the drift test needs 35 days of history; only 3.0 days exist"
    assert window_note("the drift test", 3, 35) == "the drift test needs 35 days of history; only 3.0 h exist"


def _frame(mean: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"mean": mean, "lo_80": lo, "hi_80": hi, "lo_95": lo * 0.9, "hi_95": hi * 1.1},
                        index=pd.date_range("2026-11-01", periods=len(mean), freq="h"))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.tuples(st.floats(0.01, 1e4), st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=30),
       spread=st.floats(0.0, 2.0))
def test_floor_never_narrows_keeps_nesting_and_reaches_the_floor(values, spread):
    mean = np.array([v[0] for v in values])
    fc = _frame(mean, mean * (1 - np.array([v[1] for v in values])), mean * (1 + np.array([v[2] for v in values])))
    out = floor_intervals(fc, spread)
    for lv in (80, 95):
        assert (out[f"lo_{lv}"] <= fc[f"lo_{lv}"] + 1e-12).all() and (out[f"hi_{lv}"] >= fc[f"hi_{lv}"] - 1e-12).all()
    assert (out["lo_95"] <= out["lo_80"]).all() and (out["hi_80"] <= out["hi_95"]).all()
    assert (out["hi_80"] >= mean * np.exp(Z_P90 * spread) * (1 - 1e-12)).all()
    assert (out["lo_80"] <= mean * np.exp(-Z_P90 * spread) * (1 + 1e-12)).all()
    assert "interval_floor" in out.attrs


def test_floor_fixes_the_one_e_minus_twelve_p10():
    """3 hours of history once gave P50 = P90 and a P10 of 9.9e-13 req/s: the floor gives a real band."""
    mean = np.full(5, 2.0)
    out = floor_intervals(_frame(mean, np.full(5, 9.9e-13), mean), 0.1)
    assert out["lo_80"].iloc[0] == pytest.approx(9.9e-13)  # never narrowed: a wide lower side stays
    assert out["hi_80"].iloc[0] == pytest.approx(2.0 * np.exp(Z_P90 * 0.1)) and out["hi_80"].iloc[0] > 2.0


def test_flatten_repeats_the_last_supported_week():
    fc = _frame(np.arange(1, 501, dtype=float), np.arange(1, 501) * 0.9, np.arange(1, 501) * 1.1)
    out = flatten_beyond(fc, 336, 168)
    pd.testing.assert_frame_equal(out.iloc[:336], fc.iloc[:336])
    assert out["mean"].iloc[336:].tolist() == fc["mean"].iloc[168:168 + 164].tolist()
    assert out["mean"].max() == 336 and out.attrs["flattened_after_steps"] == 336
    assert flatten_beyond(fc, 600) is fc
    with pytest.raises(ValueError, match="supported_steps"):
        flatten_beyond(fc, 0)


def test_observed_spread_day_over_day_and_poisson_floor():
    idx = pd.date_range("2026-11-01", periods=24 * 7, freq="h")
    daily = 10 + 5 * np.sin(2 * np.pi * np.arange(len(idx)) / 24)
    noisy = pd.Series(daily * np.exp(np.random.default_rng(0).normal(0, 0.2, len(idx))), index=idx)
    # a pure daily cycle has no day-over-day spread; the noise's 0.2 is found
    assert observed_log_spread(pd.Series(daily, index=idx)) == pytest.approx(0.0, abs=1e-9)
    assert observed_log_spread(noisy) == pytest.approx(0.2, rel=0.2)
    # 100 requests an hour cannot be known better than 1/sqrt(100)
    assert observed_log_spread(pd.Series(daily, index=idx), pd.Series(100.0, index=idx)) == pytest.approx(0.1)
    # three hours: too few differences, the assumed minimum
    assert observed_log_spread(pd.Series([1.0, 1.0, 1.0], index=idx[:3])) == MIN_LOG_SPREAD


def test_flat_forecast_by_hour_of_day_or_one_level():
    idx = pd.date_range("2026-11-01", periods=72, freq="h")
    y = pd.Series(np.where(idx.hour == 12, 9.0, 3.0), index=idx)
    future = pd.date_range(idx[-1] + pd.Timedelta(hours=1), periods=48, freq="h")
    by_hour = flat_forecast(y, future, (80, 95), True, 0.1)
    assert by_hour.loc[future.hour == 12, "mean"].eq(9.0).all() and by_hour.loc[future.hour == 3, "mean"].eq(3).all()
    one = flat_forecast(y, future, (80,), False, 0.1)
    assert one["mean"].nunique() == 1 and one["mean"].iloc[0] == pytest.approx(y.mean())
    assert (one["lo_80"] < one["mean"]).all() and (one["mean"] < one["hi_80"]).all()
    with pytest.raises(ValueError, match="no observed hour"):
        flat_forecast(pd.Series(np.nan, index=idx), future, (80,), False, 0.1)


def test_supported_steps_is_one_history_ahead_in_any_unit():
    assert supported_steps(20, 30) == 20 and supported_steps(400, 30) == 30 and supported_steps(0, 5) == 0
    with pytest.raises(ValueError, match="history_steps and horizon"):
        supported_steps(-1, 3)


def test_limit_horizon_flattens_daily_targets_beyond_the_history_and_says_so():
    frame = pd.DataFrame({"mean": np.arange(30.0), "lo_80": np.arange(30.0) - 1, "hi_80": np.arange(30.0) + 1},
                         index=pd.date_range("2026-03-01", periods=30, freq="D"))
    out, note = limit_horizon(frame, 20, 7, "day")
    # days 20..29 repeat days 13..19 (the last supported week), so no growth past day 20
    assert out["mean"].tolist()[20:] == [13, 14, 15, 16, 17, 18, 19, 13, 14, 15]
    assert out.attrs["flattened_after_steps"] == 20
    assert note == ("20 observed days support a forecast 20 days ahead (1x the history); the remaining 10 days "
                    "repeat the last supported week (flat, no growth extrapolated)")
    same, none = limit_horizon(frame, 30, 7, "day")
    assert same is frame and none is None
    with pytest.raises(ValueError, match="support no forecast ahead"):
        limit_horizon(frame, 0, 7, "day")


def test_monthly_totals_beyond_the_history_are_refused():
    assert monthly_horizon_refusal(100, 60, 2) is None
    reason = monthly_horizon_refusal(40, 61, 2)
    assert reason.startswith("2 month(s) of totals need a forecast 61 days ahead, but 40 observed days support at most 40")
