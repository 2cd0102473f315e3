"""reports/charts.py layout helpers: legends never cover data, a lone point gets a readable time axis."""

from __future__ import annotations

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from capplan.reports import charts


def _drawn(plot, *args):
    fig = Figure(figsize=(8.0, 3.2), dpi=100, layout="constrained")
    ax = fig.subplots()
    artists = plot(ax, *args)
    fig.draw_without_rendering()
    return ax, artists


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("gpus", [[40, 6, 6], [5, 6, 7], [60, 60, 60]])
def test_gpus_by_month_legend_covers_no_bar(gpus):
    frame = pd.DataFrame({"month": ["2026-12", "2027-01", "2027-02"], "gpus_throughput": gpus,
                          "gpus_memory": [g - 1 for g in gpus], "gpus_p10": gpus,
                          "gpus_p50": [g + 2 for g in gpus], "gpus_p90": [g + 4 for g in gpus]})
    ax, artists = _drawn(charts.plot_gpus_by_month, frame)
    legend = ax.get_legend().get_window_extent()
    bars = [bar.get_window_extent() for container in artists[:2] for bar in container]
    assert not any(_overlap(legend, bar) for bar in bars)


def test_cost_by_option_legend_covers_no_bar():
    cost = pd.DataFrame({"month": ["2026-12"] * 3, "option": ["reserved", "on_demand", "spot"],
                         "cost_usd": [900.0, 100.0, 50.0]})
    ax, artists = _drawn(charts.plot_cost_by_option, cost)
    legend = ax.get_legend().get_window_extent()
    assert not any(_overlap(legend, bar.get_window_extent()) for container in artists for bar in container)


def test_a_single_day_gets_a_days_wide_axis_not_years():
    daily = pd.DataFrame({"day": [pd.Timestamp("2026-11-10").date()], "peak_qps": [30.0], "avg_qps": [10.0]})
    ax, _ = _drawn(charts.plot_peak_to_average, daily)
    lo, hi = ax.get_xlim()
    assert 1 <= hi - lo <= 3  # [days]
    assert lo < mdates.date2num(pd.Timestamp("2026-11-10")) < hi


def test_a_single_burn_down_point_gets_a_days_wide_axis():
    burn = pd.DataFrame({"period_end_utc": [pd.Timestamp("2026-11-10 05:00")], "budget_remaining_fraction": [0.4]})
    ax, _ = _drawn(charts.plot_burn_down, burn, pd.DataFrame({"start": [], "end": []}))
    lo, hi = ax.get_xlim()
    assert hi - lo <= 3


def test_many_points_keep_matplotlibs_own_range():
    idx = pd.date_range("2026-11-01", periods=48, freq="h")
    fc = pd.DataFrame({"mean": np.ones(24), "lo_80": np.zeros(24), "hi_80": np.full(24, 2.0)},
                      index=pd.date_range("2026-11-03", periods=24, freq="h"))
    ax, _ = _drawn(charts.plot_qps_forecast, pd.Series(np.ones(48), index=idx), fc, [80])
    lo, hi = ax.get_xlim()
    assert lo <= mdates.date2num(idx[0]) and hi >= mdates.date2num(fc.index[-1])
