"""reports/assemble.py: the "How earlier plans did" chart is drawn from the stored plans and sits in its section;
the operating curves are the sizing stage's and sit under the pools table."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from capplan.config import parse_config
from capplan.history.compare import EarlierPlans
from capplan.history.store import FLEET
from capplan.reports.document import FLEET as TOTAL
from capplan.plan.inputs import MeasuredInputs
from capplan.plan.pool_plan import plan_pool
from capplan.plan.pools import Pool
from capplan.reports import charts
from capplan.reports.assemble import (draw_operating_curves, draw_plan_variance, earlier_plans_table,
                                     operating_curve_chart)
from capplan.reports.document import PlanReport, Table
from capplan.reports.render import render_html, render_markdown, write_report

def test_the_chart_draws_the_variance_tables_numbers(variance, stored_plan_row) -> None:
    """Every band, P50 dash and actual dot is the variance table's value, which is the stored plan's."""
    fig = Figure(figsize=(10, 7))
    grid = [list(r) for r in fig.subplots(3, len(charts.VARIANCE_METRICS), squeeze=False)]
    drawn = draw_plan_variance(grid, variance)
    assert [ax.get_title(loc="left") for ax in (r[0] for r in grid)] == ["chat", "rag", "fleet (sum of pools)"]
    assert set(drawn) == {(p, m) for p in ("chat", "rag", FLEET) for m in charts.VARIANCE_METRICS}
    for (pool, metric), artists in drawn.items():
        p10, p50, p90, actual, _ = charts.VARIANCE_METRICS[metric]
        rows = variance[variance["pool"] == pool].sort_values("month")
        bars = list(artists["band"])
        np.testing.assert_allclose([b.get_y() for b in bars], rows[p10], rtol=1e-12)
        np.testing.assert_allclose([b.get_y() + b.get_height() for b in bars], rows[p90], rtol=1e-12)
        np.testing.assert_allclose([seg[0][1] for seg in artists["p50"].get_segments()], rows[p50], rtol=1e-12)
        np.testing.assert_allclose(artists["actual"].get_offsets()[:, 1], rows[actual], rtol=1e-12)
        hollow = artists["actual"].get_facecolors()[:, 3] == 0
        assert hollow.tolist() == (~rows["complete"]).tolist()  # October is partial
    # ... and the table's numbers are the stored plan's: chat's September as written by record_plan
    sep = stored_plan_row("2026-09", "chat", 1.0)
    chat = drawn[("chat", "gpus")]
    assert chat["band"][0].get_y() == sep["gpus_p10"] and chat["p50"].get_segments()[0][0][1] == sep["gpus_p50"]
    assert drawn[("chat", "cost")]["band"][0].get_height() == pytest.approx(sep["cost_p90_usd"] - sep["cost_p10_usd"])
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["planned P10–P90", "planned P50", "actual",
                                                          "actual, partial month"]


def test_plot_plan_variance_names_the_valid_metrics(variance) -> None:
    with pytest.raises(ValueError, match="metric must be one of \\['cost', 'gpus', 'peak_qps', 'requests'\\]"):
        charts.plot_plan_variance(Figure().subplots(), variance, "latency")


def _report(table) -> PlanReport:
    headline = pd.DataFrame({"pool": ["chat"], "month": ["2026-11"], "gpu_type": ["H100-SXM-80GB"], "gpus_p50": [4],
                             "gpus_p90": [5], "cost_usd_p50": [9e3], "cost_usd_p90": [1.1e4], "binding": ["throughput"]})
    budget = pd.DataFrame({"month": ["2026-11"], "pool": ["chat"], "gpu_type": ["H100-SXM-80GB"], "gpus_p50": [4],
                           "gpus_p90": [5], "gpu_hours_on_demand": [2880.0], "cost_usd_on_demand": [9e3],
                           "total_cost_usd": [9e3]})
    assumptions = pd.DataFrame({"name": ["x"], "value": ["1"], "unit": ["-"], "source": ["assumed"]})
    return PlanReport(month="2026-11", generated_at_utc="2026-11-01 06:00", gpu_type="H100-SXM-80GB", model_name="m",
                      headline=headline, recommended_reserved_gpus=0, budget=budget, assumptions=assumptions,
                      tables=[table])


def _section(text: str, start: str, end: str) -> str:
    """The text from the first ``start`` to the next ``end`` after it."""
    begin = text.index(start)
    return text[begin:text.index(end, begin + len(start))]


def test_the_report_shows_the_chart_in_how_earlier_plans_did(variance, tmp_path: Path) -> None:
    report = _report(earlier_plans_table(EarlierPlans(variance)))
    html = _section(render_html(report), "<h3>How earlier plans did</h3>", "<h2>")
    assert '<figure id="chart-plan-variance">' in html and "data:image/png;base64," in html
    md = _section(render_markdown(report), "### How earlier plans did", "\n## ")
    assert "![Earlier plans against what happened](charts/plan-variance.png)" in md
    folder = write_report(report, tmp_path, {})
    assert (folder / "charts" / "plan-variance.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    # the table beside it has the same months and pools the chart drew, the fleet named "total" as in the budget
    shown = re.findall(r"<tr><td[^>]*>(\d{4}-\d\d)</td><td[^>]*>([^<]+)</td>", html)
    assert sorted(shown) == sorted(zip(variance["month"], variance["pool"].replace({FLEET: TOTAL})))
    assert any(pool == TOTAL for _month, pool in shown)


def test_no_earlier_plan_no_chart() -> None:
    table = earlier_plans_table(None)
    assert table.chart is None and table.frame.empty
    assert "chart-plan-variance" not in render_html(_report(table))


def _plans():
    """Two real pool plans on 1 x H100, 800 in / 250 out: "chat" modelled (TPOT <= 30 ms), "flat" with a flat
    rate given in its settings (assumed)."""
    cfg = parse_config({"cost": {"interruptible_share": 0.0, "commit_level": "P50"}})
    measured = MeasuredInputs(first_ts_utc=pd.Timestamp("2026-09-01"), last_ts_utc=pd.Timestamp("2026-11-30 23:00"),
                              requests=1000, input_tokens_per_request=800.0, output_tokens_per_request=250.0,
                              latency_s=4.0, kv_tokens_per_sequence=3000.0, burst_ratio=1.5)
    forecast = pd.DataFrame({"mean": 2.0, "lo_80": 1.6, "hi_80": 2.6},
                            index=pd.date_range("2026-12-01", periods=48, freq="h"))
    pools = [Pool(name="chat", models=("chat",), model="llama-3.1-8b", gpu="H100-SXM-80GB", tensor_parallel=1,
                  tpot_ms_max=30.0),
             Pool(name="flat", models=("flat",), model="llama-3.1-8b", gpu="H100-SXM-80GB", tensor_parallel=1,
                  settings={"gpu_output_tokens_per_s": 1000.0})]
    return tuple(plan_pool(cfg, p, forecast, ["2026-12"], measured) for p in pools)


def test_the_operating_curves_drawn_are_the_sizing_stages() -> None:
    """The drawn points are the curve the plan's throughput estimate carries; the red dot is the plan's
    batch and rate, on the curve; a pool without a modelled rate gets no axis and is named in the caption."""
    chat, flat = _plans()
    curve = chat.throughput.curve
    assert chat.throughput_source == "modelled" and flat.throughput is None
    fig = Figure(figsize=(8, 3.4))
    drawn = draw_operating_curves(fig.subplots(), [chat])["chat"]
    points = pd.DataFrame(list(curve.points))
    np.testing.assert_array_equal(drawn["throughput"].get_xdata(), points["batch"])
    np.testing.assert_array_equal(drawn["throughput"].get_ydata(), points["output_tokens_per_s_per_gpu"])
    np.testing.assert_array_equal(drawn["tpot"].get_ydata(), points["tpot_ms"])
    (batch, rate), = drawn["operating"][0].get_offsets().tolist()
    assert (batch, rate) == (curve.batch, chat.spec.gpu_output_tokens_per_s)
    on_curve = points.set_index("batch").loc[curve.batch]
    assert on_curve["output_tokens_per_s_per_gpu"] == rate and on_curve["tpot_ms"] <= 30.0
    assert drawn["target"].get_ydata()[0] == 30.0
    chart = operating_curve_chart((chat, flat))
    assert chart.key == "operating-curve" and chart.png.startswith(b"\x89PNG")
    assert "chat (modelled): llama-3.1-8b on 1 x H100-SXM-80GB" in chart.caption
    assert "flat: no modelled curve (assumed)" in chart.caption
    assert operating_curve_chart((flat,)) is None


def test_the_report_shows_the_operating_curves_under_the_pools_table(tmp_path: Path) -> None:
    table = Table("Pools", pd.DataFrame({"pool": ["chat"]}), "caption", operating_curve_chart(_plans()))
    report = _report(table)
    md = _section(render_markdown(report), "### Pools", "\n## ")
    assert "![Throughput and TPOT against batch, per pool (modelled)](charts/operating-curve.png)" in md
    assert '<figure id="chart-operating-curve">' in render_html(report)
    assert (write_report(report, tmp_path, {}) / "charts" / "operating-curve.png").is_file()


def test_slo_names_that_slug_alike_get_distinct_chart_keys():
    """``p99 latency`` and ``p99-latency`` both slug to ``slo-p99-latency``: before, the second burn-down
    overwrote the first's PNG and chart entry; now the second is ``slo-p99-latency-2``."""
    from capplan.reports.assemble import slo_chart_keys

    assert slo_chart_keys(["p99 latency", "p99-latency", "Availability", "P99 Latency"]) == [
        "slo-p99-latency", "slo-p99-latency-2", "slo-availability", "slo-p99-latency-3"]
    assert slo_chart_keys([]) == []
