"""The plan's demand under the history policy (capplan/plan/demand.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from capplan.config import CapplanConfig
from capplan.forecasting import fit
from capplan.plan.demand import flat_peak_qps, history_hours, path_peak_qps, plan_demand, window_notes
from capplan.plan.fleet import monthly_peak_qps


def _hourly(hours: int, start: str = "2026-11-01", level: float = 5.0, seed: int = 0) -> pd.DataFrame:
    idx = pd.date_range(start, periods=hours, freq="h")
    rng = np.random.default_rng(seed)
    qps = level * (1 + 0.5 * np.sin(2 * np.pi * idx.hour / 24)) * np.exp(rng.normal(0, 0.05, hours))
    return pd.DataFrame({"hour_utc": idx, "avg_qps": qps, "requests": qps * 3600, "is_gap": False,
                         "exposure_s": 3600.0})


def test_history_hours_from_exposure_or_observed_hours():
    h = _hourly(10)
    h.loc[0, "exposure_s"], h.loc[3, "is_gap"] = 1800.0, True
    assert history_hours(h) == pytest.approx(8.5)
    assert history_hours(h.drop(columns="exposure_s")) == 9


def test_short_history_is_flat_at_the_observed_peak():
    hourly = _hourly(3, "2026-11-10 12:00")
    d = plan_demand(hourly, ["2026-11", "2026-12"], CapplanConfig(), burst_ratio=2.0)
    assert not d.policy.growth_forecast and d.forecast.attrs["model"].startswith("flat")
    assert d.peaks["qps_p50"].tolist() == pytest.approx([2.0 * hourly["avg_qps"].max()] * 2)
    assert (d.peaks["qps_p10"] < d.peaks["qps_p50"]).all() and (d.peaks["qps_p50"] < d.peaks["qps_p90"]).all()
    assert d.peaks["hours"].tolist() == [len(pd.date_range("2026-11-10 15:00", "2026-11-30 23:00", freq="h")), 744]
    assert any("no growth forecast" in n for n in d.notes)
    assert d.assumptions()["design peak"][2] == "assumed"
    assert list(d.peaks.columns) == list(monthly_peak_qps(d.forecast, ["2026-11", "2026-12"], 2.0).columns)


def test_three_weeks_forecast_is_flattened_beyond_three_weeks_and_floored():
    hourly = _hourly(21 * 24)
    d = plan_demand(hourly, ["2026-11", "2026-12"], CapplanConfig(), burst_ratio=1.0)
    assert d.policy.growth_forecast and d.peaks is None and d.forecast.attrs["flattened_after_steps"] == 504
    week = d.forecast.iloc[504 - 168:504].to_numpy()
    np.testing.assert_array_equal(d.forecast.iloc[504:504 + 168].to_numpy(), week)
    assert "interval_floor" in d.forecast.attrs and (d.forecast["lo_80"] < d.forecast["mean"]).all()
    assert d.assumptions()["demand model"][2] == "modelled"


def test_path_peak_qps_has_the_frame_of_monthly_peak_qps():
    hourly = _hourly(21 * 24)
    y = hourly.set_index("hour_utc")["avg_qps"].asfreq("h")
    result = fit(y, 24 * 40, season_lengths=(24, 168), levels=(80,))
    months = ["2026-11", "2026-12"]
    paths = path_peak_qps(result, months, 1.5)
    hourly_max = monthly_peak_qps(result.frame, months, 1.5)
    assert list(paths.columns) == list(hourly_max.columns) and paths["hours"].tolist() == hourly_max["hours"].tolist()
    assert (paths["qps_p10"] <= paths["qps_p50"]).all() and (paths["qps_p50"] <= paths["qps_p90"]).all()
    # the P50 of the month's maximum is above the maximum of the hourly medians
    assert (paths["qps_p50"] >= hourly_max["qps_p50"] * 0.999).all()
    with pytest.raises(ValueError, match="burst_ratio"):
        path_peak_qps(result, months, 0.5)
    with pytest.raises(ValueError, match="no hours in month"):
        path_peak_qps(result, ["2027-06"], 1.0)


def test_flat_peak_band_from_the_spread():
    hourly = _hourly(5)
    peaks = flat_peak_qps(hourly, ["2026-11"], {"2026-11": 700}, 1.0, 0.0)
    assert peaks.iloc[0][["qps_p10", "qps_p50", "qps_p90"]].tolist() == pytest.approx([hourly["avg_qps"].max()] * 3)


def test_window_notes_name_the_drift_baseline_and_slo_windows():
    notes = window_notes(72, CapplanConfig())
    assert notes[0].startswith("the drift test") and "needs 35 days" in notes[0] and "no drift is tested" in notes[0]
    assert "the window of SLO 'availability' needs 30 days" in notes[1]
    assert window_notes(24 * 60, CapplanConfig()) == []
