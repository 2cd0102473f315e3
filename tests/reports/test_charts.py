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


def test_a_burn_down_whose_first_window_is_filling_keeps_its_swings_out_of_the_y_range():
    """The history's first hours see a few events: the budget left can read -2 there. Those rows are drawn
    dashed grey and the y-range is that of the full windows (here 0.5–0.7, so the axis spans 0–1 padded)."""
    t = pd.date_range("2026-11-01", periods=10, freq="D")
    burn = pd.DataFrame({"period_end_utc": t, "budget_remaining_fraction": [-2.0, 0.9] + [0.5, 0.7] * 4,
                         "window_full": [False] * 3 + [True] * 7})
    ax, artists = _drawn(charts.plot_burn_down, burn, pd.DataFrame({"start": [], "end": []}))
    lo, hi = ax.get_ylim()
    assert -0.1 < lo < 0 and 1 < hi < 1.1
    grey = [a for a in artists if getattr(a, "get_label", lambda: "")() == "window not yet full"]
    assert len(grey) == 1 and len(grey[0].get_xdata()) == 4  # the three filling rows and the first full one
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["window not yet full"]


def test_many_points_keep_matplotlibs_own_range():
    idx = pd.date_range("2026-11-01", periods=48, freq="h")
    fc = pd.DataFrame({"mean": np.ones(24), "lo_80": np.zeros(24), "hi_80": np.full(24, 2.0)},
                      index=pd.date_range("2026-11-03", periods=24, freq="h"))
    ax, _ = _drawn(charts.plot_qps_forecast, pd.Series(np.ones(48), index=idx), fc, [80])
    lo, hi = ax.get_xlim()
    assert lo <= mdates.date2num(idx[0]) and hi >= mdates.date2num(fc.index[-1])


def test_small_multiples_share_one_legend_above_every_title():
    """Three pools' GPU charts: one legend above the figure, covering no axis title (one per axis overlapped)."""
    frame = pd.DataFrame({"month": ["2026-12", "2027-01"], "gpus_throughput": [4, 4], "gpus_memory": [1, 1],
                          "gpus_p10": [6, 6], "gpus_p50": [8, 8], "gpus_p90": [10, 10]})
    fig = Figure(figsize=(12.6, 3.4), dpi=100, layout="constrained")
    axes = list(fig.subplots(1, 3))
    for i, ax in enumerate(axes):
        charts.plot_gpus_by_month(ax, frame)
        ax.set_title(f"pool-{i} (H100-SXM-80GB)")
    legend = charts.legend_above_figure(axes)
    fig.draw_without_rendering()
    assert all(ax.get_legend() is None for ax in axes) and fig.legends == [legend]
    labels = [t.get_text() for t in legend.get_texts()]
    assert sorted(labels) == sorted(set(labels)) and "need, memory-bound" in labels  # each label once
    box = legend.get_window_extent()
    assert not any(_overlap(box, ax.title.get_window_extent()) for ax in axes)


def test_a_pools_forecast_axis_has_short_date_labels_that_do_not_overlap():
    idx = pd.date_range("2026-10-01", periods=24 * 60, freq="h")
    fc = pd.DataFrame({"mean": 1.0, "lo_80": 0.5, "hi_80": 1.5}, index=pd.date_range(idx[-1], periods=24 * 62, freq="h"))
    fig = Figure(figsize=(4.2, 3.4), dpi=100, layout="constrained")
    ax = fig.subplots()
    charts.plot_qps_forecast(ax, pd.Series(np.ones(len(idx)), index=idx), fc, [80])
    fig.draw_without_rendering()
    boxes = [t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()]
    assert len(boxes) >= 3 and not any(_overlap(a, b) for a, b in zip(boxes, boxes[1:]))


def test_a_long_ensemble_name_does_not_run_over_the_bars():
    """The chosen ensemble's name (e.g. five models) is ``mean of 5`` on the axis, inside the figure."""
    ensemble = "mean(fourier_arima, mstl_ets, mstl_ses, seasonal_naive_long, seasonal_profile)"
    errors = pd.DataFrame({"model": ["theta", ensemble, "holt_winters"], "error_pct": [28.0, 23.0, 29.0]})
    fig = Figure(figsize=(4.2, 3.4), dpi=100, layout="constrained")
    ax = fig.subplots()
    bars = charts.plot_backtest_error(ax, errors, ensemble)[0]
    fig.draw_without_rendering()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["holt_winters", "mean of 5", "theta"]  # sorted by full name
    assert [round(b.get_width(), 6) for b in bars] == [29.0, 23.0, 28.0]
    assert all(t.get_window_extent().x0 >= 0 for t in ax.get_yticklabels())  # inside the figure
    assert charts.model_label("a" * 30) == "a" * 23 + "…"


def test_the_operating_curve_draws_its_points_the_operating_point_and_the_target():
    curve = pd.DataFrame({"batch": [1, 2, 4, 8], "output_tokens_per_s_per_gpu": [100.0, 190.0, 350.0, 600.0],
                          "tpot_ms": [10.0, 10.5, 11.4, 13.3]})
    ax, drawn = _drawn(charts.plot_operating_curve, curve, 4, 350.0, 11.4, 12.0)
    np.testing.assert_array_equal(drawn["throughput"].get_xdata(), curve["batch"])
    np.testing.assert_array_equal(drawn["throughput"].get_ydata(), curve["output_tokens_per_s_per_gpu"])
    np.testing.assert_array_equal(drawn["tpot"].get_ydata(), curve["tpot_ms"])
    assert drawn["tpot"].axes is drawn["tpot_axis"] and drawn["target"].get_ydata()[0] == 12.0
    assert drawn["operating"][0].get_offsets().tolist() == [[4.0, 350.0]]
    assert drawn["operating"][1].get_offsets().tolist() == [[4.0, 11.4]]
    assert (ax.get_xlabel(), ax.get_ylabel(), drawn["tpot_axis"].get_ylabel()) == (
        "Batch [sequences]", "Output tokens/s per GPU [tokens/s]", "TPOT [ms]")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["output tokens/s per GPU", "TPOT", "TPOT target", "operating point (the plan's batch)"]
    _, untargeted = _drawn(charts.plot_operating_curve, curve, 8, 600.0, 13.3)
    assert untargeted["target"] is None


def test_no_token_histogram_says_so_instead_of_an_empty_legend():
    ax = Figure().subplots()
    empty = pd.DataFrame({"window": pd.Series(dtype=str), "tokens": pd.Series(dtype=float),
                          "share": pd.Series(dtype=float)})
    assert charts.plot_token_distribution(ax, empty, "input") == []
    assert ax.get_legend() is None
    assert [t.get_text() for t in ax.texts] == ["no daily token-length histograms in these data"]
