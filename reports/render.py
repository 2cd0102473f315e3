"""Render a :class:`~reports.document.PlanReport` to HTML, Markdown, CSV and XLSX, and write its folder.

The HTML is one self-contained file: charts are embedded as base64 PNG and the
jinja2 environment autoescapes, so a model or tenant name taken from the logs
(``<script>`` included) is shown as text. The Markdown escapes table-breaking
characters the same way. The finance files hold numbers as numbers.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from capplan.reports.document import PlanReport

#: Files a report folder always holds (charts go to ``charts/<key>.png``).
REPORT_FILES = ("report.html", "report.md", "budget.csv", "budget.xlsx", "config.json")

_FIXED_HEADERS = {"month": "Month", "pool": "Pool", "throughput_source": "Throughput source", "gpu_type": "GPU type", "gpus_p50": "GPUs P50", "gpus_p90": "GPUs P90",
                  "total_cost_usd": "Total cost [USD]", "total_cost_usd_p10": "Total cost P10 [USD]",
                  "total_cost_usd_p90": "Total cost P90 [USD]"}


def budget_header(column: str) -> str:
    """The spreadsheet header of a budget column, e.g. ``cost_usd_on_demand`` -> ``Cost on-demand [USD]``."""
    if column in _FIXED_HEADERS:
        return _FIXED_HEADERS[column]
    for prefix, label, unit in (("gpu_hours_", "GPU-hours", "GPU-h"), ("cost_usd_", "Cost", "USD")):
        if column.startswith(prefix):
            return f"{label} {column.removeprefix(prefix).replace('_', '-')} [{unit}]"
    return column


def finance_table(budget: pd.DataFrame) -> pd.DataFrame:
    """The budget with spreadsheet headers and GPU-hours and USD rounded to cents."""
    out = budget.copy()
    numeric = out.select_dtypes("float").columns
    out[numeric] = out[numeric].round(2)
    return out.rename(columns=budget_header)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        if abs(value) < 1:
            return f"{value:.4g}"  # fractions (SLO targets, p-values) keep their digits
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def _html_table(frame: pd.DataFrame) -> Markup:
    """An HTML table of ``frame``; every header and cell is escaped."""
    head = "".join(f"<th>{escape(budget_header(str(c)))}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False):
        cells = "".join(
            f'<td class="num">{escape(_cell(v))}</td>' if isinstance(v, (int, float)) else f"<td>{escape(_cell(v))}</td>"
            for v in values)
        rows.append(f"<tr>{cells}</tr>")
    return Markup(f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def md_escape(value: Any) -> str:
    """Text safe inside a Markdown table cell: no pipes, tags or line breaks survive."""
    text = str(value).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("\r", " ").replace("\n", " ")


def _md_table(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(md_escape(budget_header(str(c))) for c in frame.columns) + " |"
    rule = "|" + "|".join("--:" if pd.api.types.is_numeric_dtype(frame[c]) else "---" for c in frame.columns) + "|"
    body = ["| " + " | ".join(md_escape(_cell(v)) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


@cache
def _environment(kind: str) -> Environment:
    # HTML autoescapes everything; Markdown gets an explicit `md` filter instead.
    env = Environment(loader=PackageLoader("capplan.reports", "templates"), autoescape=(kind == "html"),
                      undefined=StrictUndefined, keep_trailing_newline=True)
    env.filters["b64"] = lambda data: base64.b64encode(data).decode("ascii")
    env.filters["md"] = md_escape
    env.globals["table"] = _html_table if kind == "html" else _md_table
    return env


def render_html(report: PlanReport) -> str:
    """The report as one self-contained HTML page (charts embedded, strings escaped)."""
    return _environment("html").get_template("report.html.j2").render(r=report)


def render_markdown(report: PlanReport) -> str:
    """The report as Markdown for a pull request or wiki; charts link to ``charts/<key>.png``."""
    return _environment("md").get_template("report.md.j2").render(r=report)


def write_budget_csv(budget: pd.DataFrame, path: Path) -> Path:
    """Write the finance table as CSV (UTF-8, plain numbers, spreadsheet headers)."""
    finance_table(budget).to_csv(path, index=False)
    return path


def write_budget_xlsx(budget: pd.DataFrame, assumptions: pd.DataFrame, path: Path,
                      variance: pd.DataFrame | None = None) -> Path:
    """Write the finance table (sheet ``budget``), the assumptions (``assumptions``) and, when earlier plans
    can be compared, their ``planned_*``/``actual_*``/``variance_*`` columns (sheet ``variance``) as XLSX.

    Cells are numeric with a thousands format; the header row is frozen and columns sized to fit.
    """
    table = finance_table(budget)
    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        table.to_excel(writer, sheet_name="budget", index=False)
        assumptions.to_excel(writer, sheet_name="assumptions", index=False)
        if variance is not None and not variance.empty:
            variance.to_excel(writer, sheet_name="variance", index=False)
        sheet = writer.sheets["budget"]
        sheet.freeze_panes = "A2"
        for idx, column in enumerate(table.columns, start=1):
            letter = sheet.cell(row=1, column=idx).column_letter
            sheet.column_dimensions[letter].width = max(len(column), 10) + 2
            if pd.api.types.is_float_dtype(table[column]):
                for (cell,) in sheet.iter_rows(min_row=2, min_col=idx, max_col=idx):
                    cell.number_format = "#,##0.00"
    return path


def write_report(report: PlanReport, out_dir: Path, resolved_config: dict[str, Any]) -> Path:
    """Write the report folder ``out_dir/<month>/`` and return its path.

    The folder is built beside its final place and swapped in with renames, so a
    re-run replaces the previous report whole and a failed run leaves the old one intact.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / report.month
    staging = Path(tempfile.mkdtemp(prefix=f".{report.month}-", dir=out_dir))
    try:
        (staging / "charts").mkdir()
        for chart in report.charts:
            (staging / "charts" / f"{chart.key}.png").write_bytes(chart.png)
        (staging / "report.html").write_text(render_html(report), encoding="utf-8")
        (staging / "report.md").write_text(render_markdown(report), encoding="utf-8")
        write_budget_csv(report.budget, staging / "budget.csv")
        write_budget_xlsx(report.budget, report.assumptions, staging / "budget.xlsx", report.variance)
        if report.summary:
            (staging / "plan.json").write_text(json.dumps(report.summary, indent=2, default=str) + "\n",
                                               encoding="utf-8")
        if report.forecast is not None:
            report.forecast.rename_axis("hour_utc").to_csv(staging / "forecast.csv")
        (staging / "config.json").write_text(json.dumps(resolved_config, indent=2, default=str) + "\n",
                                             encoding="utf-8")
        os.chmod(staging, 0o755)  # mkdtemp makes it private; a report is for sharing
        old = final.with_name(f".{report.month}.old")
        if final.exists():
            shutil.rmtree(old, ignore_errors=True)
            final.rename(old)
        staging.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final
