"""Tests for reports/: charts, the report contracts, HTML/Markdown/CSV/XLSX rendering."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest
from matplotlib.figure import Figure

from capplan.reports import charts
from capplan.reports.document import Chart, PlanReport, Table
from capplan.reports.render import (REPORT_FILES, budget_header, md_escape, render_html, render_markdown,
                            write_report)

EVIL = '<script>alert("x")</script>|tenant'
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _headline() -> pd.DataFrame:
    return pd.DataFrame({"pool": ["chat", "chat"], "month": ["2026-12", "2027-01"],
                         "gpu_type": ["H100-SXM-80GB"] * 2, "gpus_p50": [4, 5], "gpus_p90": [5, 7],
                         "cost_usd_p50": [9_000.0, 11_000.0], "cost_usd_p90": [11_000.0, 15_000.0],
                         "binding": ["throughput", "memory"]})


def _budget() -> pd.DataFrame:
    b = pd.DataFrame({"month": ["2026-12", "2027-01"], "pool": ["chat", "chat"], "gpu_type": ["H100-SXM-80GB"] * 2,
                      "gpus_p50": [4, 5], "gpus_p90": [5, 7],
                      "gpu_hours_reserved": [2232.0, 2232.0], "gpu_hours_on_demand": [600.0, 1300.0],
                      "cost_usd_reserved": [4_000.0, 4_000.0], "cost_usd_on_demand": [5_000.0, 7_000.0]})
    b["total_cost_usd"] = b["cost_usd_reserved"] + b["cost_usd_on_demand"]
    return b


def _assumptions() -> pd.DataFrame:
    return pd.DataFrame({"name": ["mean input length", "target utilisation"], "value": ["812", "0.6"],
                         "unit": ["tokens", "fraction"], "source": ["measured", "assumed"]})


def _report(**overrides) -> PlanReport:
    png = charts.chart_png(charts.plot_hockey_stick, pd.DataFrame({"utilisation": [0.1, 0.5, 0.9],
                                                                    "latency_s": [1.0, 1.5, 8.0]}), 0.6, 2.0)
    kwargs = dict(month="2026-12", generated_at_utc="2026-12-01 06:00", gpu_type="H100-SXM-80GB",
                  model_name=EVIL, headline=_headline(), recommended_reserved_gpus=3, budget=_budget(),
                  assumptions=_assumptions(), charts=[Chart("hockey", "Latency vs utilisation", "Read me.", png)],
                  tables=[Table("Drift", pd.DataFrame({"model": [EVIL], "shift_pct": [12.5]}))],
                  notes=[f"{EVIL} quarantined 3 rows"])
    kwargs.update(overrides)
    return PlanReport(**kwargs)


# --- charts -------------------------------------------------------------------------------------

def _hourly(n: int = 72) -> pd.Series:
    idx = pd.date_range("2026-11-01", periods=n, freq="h")
    return pd.Series(10 + 5 * np.sin(np.arange(n) * 2 * np.pi / 24), index=idx)


def _forecast(n: int = 24) -> pd.DataFrame:
    idx = pd.date_range("2026-11-04", periods=n, freq="h")
    mean = np.full(n, 10.0)
    return pd.DataFrame({"mean": mean, "lo_80": mean - 2, "hi_80": mean + 2, "lo_95": mean - 3, "hi_95": mean + 3},
                        index=idx)


CHART_CASES = [
    (charts.plot_qps_forecast, (_hourly(), _forecast()), "[requests/s]"),
    (charts.plot_peak_to_average, (pd.DataFrame({"day": pd.date_range("2026-11-01", periods=5).date,
                                                 "peak_qps": [30.0, 32, 31, 29, 40],
                                                 "avg_qps": [10.0, 10, 11, 9, 12]}),), "[ratio]"),
    (charts.plot_token_distribution, (pd.DataFrame({"window": ["baseline"] * 3 + ["recent"] * 3,
                                                    "tokens": [0, 64, 128] * 2,
                                                    "share": [0.2, 0.5, 0.3, 0.1, 0.5, 0.4]}), "input"),
     "[fraction]"),
    (charts.plot_gpus_by_month, (pd.DataFrame({"month": ["2026-12", "2027-01"], "gpus_throughput": [3, 4],
                                               "gpus_memory": [2, 5], "gpus_p10": [3, 4], "gpus_p50": [4, 6],
                                               "gpus_p90": [5, 7]}),), "[count]"),
    (charts.plot_cost_by_option, (pd.DataFrame({"month": ["2026-12"] * 2, "option": ["reserved", "on_demand"],
                                                "cost_usd": [100.0, 200.0]}),), "[USD/month]"),
    (charts.plot_hockey_stick, (pd.DataFrame({"utilisation": [0.1, 0.9], "latency_s": [1.0, 9.0]}), 0.6, 2.5),
     "[s]"),
    (charts.plot_burn_down, (pd.DataFrame({"period_end_utc": pd.date_range("2026-11-01", periods=3, freq="D"),
                                           "budget_remaining_fraction": [1.0, 0.5, -0.1]}),
                             pd.DataFrame({"start": [pd.Timestamp("2026-11-02")],
                                           "end": [pd.Timestamp("2026-11-02 06:00")]})), "[fraction]"),
    (charts.plot_backtest_error, (pd.DataFrame({"model": ["ets", "ets", "theta"], "error_pct": [5.0, 7.0, 9.0]}),
                                  "ets"), "[%]"),
    (charts.plot_plan_variance, (pd.DataFrame({"month": ["2026-10"], "planned_peak_qps_p10": [1.0],
                                               "planned_peak_qps_p50": [1.2], "planned_peak_qps_p90": [1.5],
                                               "actual_peak_qps": [1.6], "complete": [True]}), "peak_qps"),
     "[requests/s]"),
]


@pytest.mark.parametrize(("plot", "args", "unit"), CHART_CASES, ids=lambda v: getattr(v, "__name__", None))
def test_every_chart_draws_and_labels_both_axes_with_units(plot, args, unit):
    ax = Figure().subplots()
    artists = plot(ax, *args)
    assert artists, "a chart must return what it drew"
    labels = (ax.get_xlabel(), ax.get_ylabel())
    assert all(re.search(r"\[.+\]", lab) or lab in ("Month", "Model") for lab in labels), labels
    assert unit in " ".join(labels)


def test_chart_png_is_a_png_of_the_requested_size():
    png = charts.chart_png(charts.plot_qps_forecast, _hourly(), _forecast(), size_in=(6.0, 3.0), dpi=50)
    assert png.startswith(PNG_MAGIC)
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (300, 150)


def test_gpus_by_month_stacks_headroom_on_the_binding_need():
    ax = Figure().subplots()
    frame = CHART_CASES[3][1][0]
    need_bars, headroom_bars = charts.plot_gpus_by_month(ax, frame)[:2]
    tops = [n.get_height() + h.get_height() for n, h in zip(need_bars, headroom_bars)]
    assert [n.get_height() for n in need_bars] == [3, 5]  # max(throughput, memory)
    assert tops == [4, 6]  # == gpus_p50


# --- contracts ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("field", "frame"), [
    ("headline", _headline().assign(gpus_p90=[3, 7])),           # P90 below P50
    ("headline", _headline().assign(binding=["cpu", "memory"])),  # unknown binding
    ("headline", _headline().assign(month=["2026-13", "2027-01"])),
    ("budget", _budget().assign(total_cost_usd=1.0)),            # total does not add up
    ("budget", pd.concat([_budget(), _budget().assign(pool="total", gpu_type="all", gpus_p50=1)], ignore_index=True)),  # total row != pools
    ("headline", pd.concat([_headline(), _headline()], ignore_index=True)),          # a pool's month twice
    ("budget", _budget().assign(cost_usd_on_demand=-5.0, total_cost_usd=lambda d: d.cost_usd_reserved - 5)),
    ("assumptions", _assumptions().assign(source=["guessed", "assumed"])),
])
def test_report_contracts_reject_bad_tables(field, frame):
    with pytest.raises(pa.errors.SchemaError):
        _report(**{field: frame})


def test_negative_reserved_commitment_is_a_value_error():
    with pytest.raises(ValueError, match="recommended_reserved_gpus"):
        _report(recommended_reserved_gpus=-1)


# --- rendering -----------------------------------------------------------------------------------

def test_html_escapes_every_string_from_logs_and_embeds_charts():
    html = render_html(_report())
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    srcs = re.findall(r'src="([^"]+)"', html)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert base64.b64decode(srcs[0].split(",", 1)[1]).startswith(PNG_MAGIC)
    assert 'id="reserved">3<' in html


def test_markdown_escapes_pipes_and_tags_and_keeps_tables_whole():
    md = render_markdown(_report())
    assert "<script>" not in md and "\\|tenant" in md
    head = next(line for line in md.splitlines() if line.startswith("| Pool | Month | GPU type | GPUs P50"))
    rows = [line for line in md.splitlines() if line.startswith("| chat | 2026-12 | H100-SXM-80GB | 4 | 5 |")]
    assert head.count(" | ") == 7 and rows[0].count(" | ") == 7
    assert "![Latency vs utilisation](charts/hockey.png)" in md


@pytest.mark.parametrize(("text", "expected"), [("a|b", "a\\|b"), ("<b>", "&lt;b&gt;"), ("x\ny", "x y")])
def test_md_escape(text, expected):
    assert md_escape(text) == expected


@pytest.mark.parametrize(("column", "header"), [("cost_usd_on_demand", "Cost on-demand [USD]"),
                                                ("gpu_hours_reserved", "GPU-hours reserved [GPU-h]"),
                                                ("gpus_p90", "GPUs P90"), ("total_cost_usd", "Total cost [USD]")])
def test_budget_headers_read_like_a_spreadsheet(column, header):
    assert budget_header(column) == header


def test_write_report_folder_finance_files_are_numeric_and_add_up(tmp_path: Path):
    folder = write_report(_report(), tmp_path, {"forecast": {"horizon_months": 2}})
    assert folder == tmp_path / "2026-12"
    assert sorted(p.name for p in folder.iterdir()) == sorted([*REPORT_FILES, "charts"])
    assert (folder / "charts" / "hockey.png").read_bytes().startswith(PNG_MAGIC)
    csv = pd.read_csv(folder / "budget.csv")
    xlsx = pd.read_excel(folder / "budget.xlsx", sheet_name="budget")
    for table in (csv, xlsx):
        cost_cols = [c for c in table.columns if c.startswith("Cost ")]
        assert cost_cols and all(pd.api.types.is_numeric_dtype(table[c]) for c in cost_cols)
        assert np.allclose(table[cost_cols].sum(axis=1), table["Total cost [USD]"], atol=0.01)
        assert table["Total cost [USD]"].sum() == pytest.approx(9_000.0 + 11_000.0)
        assert table["GPUs P90"].tolist() == [5, 7]
    assumptions = pd.read_excel(folder / "budget.xlsx", sheet_name="assumptions")
    assert set(assumptions["source"]) == {"measured", "assumed"}


def test_rewriting_a_report_replaces_the_folder_whole(tmp_path: Path):
    write_report(_report(), tmp_path, {})
    (tmp_path / "2026-12" / "stale.txt").write_text("from an older run")
    write_report(_report(recommended_reserved_gpus=2), tmp_path, {})
    assert not (tmp_path / "2026-12" / "stale.txt").exists()
    assert 'id="reserved">2<' in (tmp_path / "2026-12" / "report.html").read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["2026-12"]  # no staging leftovers


# --- escaping and formatting in the rendered files (issue 20, items 13 and 14) ----------------------

FORMULA = '=HYPERLINK("http://evil.example/?m","model")'
LINK = "[link](javascript:alert(2))"
IMAGE = "![img](http://evil.example/x.png)"


def _hostile_report() -> PlanReport:
    png = _report().charts[0].png
    budget = _budget().assign(gpu_type=FORMULA)
    assumptions = pd.concat([_assumptions(), pd.DataFrame(
        {"name": ["cost.interruptible_models"], "value": [FORMULA], "unit": ["-"], "source": ["assumed"]})],
        ignore_index=True)
    return _report(budget=budget, assumptions=assumptions, model_name=LINK,
                   charts=[Chart("slo-x", "Error budget: <script>alert(1)</script> ![x](http://evil)", "c", png)],
                   tables=[Table("Drift findings", pd.DataFrame({"model": [LINK, IMAGE], "qps_p10": [1.5, 20370.0]}))])


def test_markdown_escapes_names_from_config_and_logs_everywhere():
    md = render_markdown(_hostile_report())
    assert "<script>" not in md
    assert "](javascript:" not in md.replace("\\](javascript:", "")  # only as escaped text
    assert "![img]" not in md and "![x]" not in md
    heading = next(line for line in md.splitlines() if line.startswith("### Error budget"))
    assert heading == "### Error budget: &lt;script&gt;alert(1)&lt;/script&gt; \\!\\[x\\](http://evil)"
    alt = next(line for line in md.splitlines() if line.endswith("(charts/slo-x.png)"))
    assert alt.startswith("![Error budget: &lt;script&gt;") and "\\!\\[x\\]" in alt
    assert "![Error budget" in alt  # the renderer's own image link stays an image


def test_html_escapes_names_in_alt_text_and_headings():
    html = render_html(_hostile_report())
    assert "<script>" not in html
    assert 'alt="Error budget: &lt;script&gt;alert(1)&lt;/script&gt;' in html


def test_tables_have_human_headers_and_formatted_numbers():
    md, html = render_markdown(_hostile_report()), render_html(_hostile_report())
    for text, label in ((md, md_escape("Design peak QPS P10 [requests/s]")), (html, "Design peak QPS P10 [requests/s]")):
        assert "qps_p10" not in text and label in text
        assert "20,370" in text and "e+04" not in text


def test_finance_files_hold_text_not_formulas(tmp_path: Path):
    import zipfile

    folder = write_report(_hostile_report(), tmp_path, {})
    with zipfile.ZipFile(folder / "budget.xlsx") as z:
        sheets = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/worksheets/")]
    assert sheets and not any("<f>" in s for s in sheets)  # no formula element in any sheet
    xlsx = pd.read_excel(folder / "budget.xlsx", sheet_name=None)
    assert xlsx["budget"]["GPU type"].iloc[0] == FORMULA  # shown as written
    assert FORMULA in xlsx["assumptions"]["value"].tolist()
    assert pd.api.types.is_numeric_dtype(xlsx["budget"]["Total cost [USD]"])
    csv = pd.read_csv(folder / "budget.csv")
    assert csv["GPU type"].iloc[0] == "'" + FORMULA
    assert pd.api.types.is_numeric_dtype(csv["Total cost [USD]"]) and csv["GPUs P90"].tolist() == [5, 7]
