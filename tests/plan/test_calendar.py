"""capplan/plan/calendar.py: the planned months, the forecast horizon, the hours in those months."""

from __future__ import annotations

import pandas as pd
import pytest

from capplan.plan import calendar as plan


@pytest.mark.parametrize(("last_hour", "expected"), [
    ("2026-11-30 23:00", "2026-11"),   # the month's last hour is in the data: complete
    ("2026-12-01 05:00", "2026-11"),   # the daily ingest already brought a few December hours
    ("2026-11-29 12:00", "2026-10"),   # data stops before the end of November
    ("2026-01-31 23:59", "2026-01"),
])
def test_last_complete_month(last_hour, expected):
    assert str(plan.last_complete_month(pd.Timestamp(last_hour))) == expected


def test_plan_months_default_explicit_and_refused():
    assert plan.plan_months(pd.Timestamp("2026-12-01 05:00"), 3) == ["2026-12", "2027-01", "2027-02"]
    assert plan.plan_months(pd.Timestamp("2026-11-29 12:00"), 1) == ["2026-11"]  # partly observed, rest forecast
    assert plan.plan_months(pd.Timestamp("2026-11-30 23:00"), 2, "2027-03") == ["2027-03", "2027-04"]
    with pytest.raises(ValueError, match="already complete in the data.*plan 2026-12 or later"):
        plan.plan_months(pd.Timestamp("2026-11-30 23:00"), 2, "2026-11")


@pytest.mark.parametrize("bad", ["2026-13", "26-01", "2026/01", "", "2026-1"])
def test_parse_month_rejects_malformed(bad):
    with pytest.raises(ValueError, match="YYYY-MM"):
        plan.parse_month(bad)


def test_horizon_reaches_the_last_hour_of_the_last_month():
    # Dec 2026 + Jan 2027 = 31 + 31 days after the last November hour
    assert plan.forecast_horizon_hours(pd.Timestamp("2026-11-30 23:00"), ["2026-12", "2027-01"]) == 62 * 24
    assert plan.forecast_horizon_hours(pd.Timestamp("2026-11-30 23:30"), ["2026-12"]) == 31 * 24


def test_hours_in_months_keeps_only_the_planned_months():
    idx = pd.date_range("2026-11-30 22:00", periods=4, freq="h")
    frame = pd.DataFrame({"mean": [1.0, 2.0, 3.0, 4.0]}, index=idx)
    assert plan.hours_in_months(frame, ["2026-12"])["mean"].tolist() == [3.0, 4.0]
