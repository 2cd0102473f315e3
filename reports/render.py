"""Render a :class:`~reports.document.PlanReport` to HTML, Markdown, CSV and XLSX, and write its folder.

The HTML is one self-contained file: charts are embedded as base64 PNG. Both
jinja2 environments escape every ``{{ }}`` by default (:mod:`capplan.reports.escaping`:
HTML by autoescaping, Markdown through ``finalize``), so a name from the config or
the logs (``<script>``, ``[x](javascript:...)``, ``![img](...)``) is shown as text.
The finance files hold numbers as numbers and every string as literal text (no formula).
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

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from capplan.reports.document import PlanReport
from capplan.reports.escaping import MarkdownSafe, html_escape, md_escape, spreadsheet_text
from capplan.reports.formatting import column_label, format_number

#: Files a report folder always holds (charts go to ``charts/<key>.png``).
REPORT_FILES = ("report.html", "report.md", "budget.csv", "budget.xlsx", "config.json")


#: Longest text cell without spaces that an HTML table keeps on one line (``td.key``). [characters]
KEY_CELL_CHARS = 20


def budget_header(column: str) -> str:
    """The spreadsheet header of a budget column, e.g. ``cost_usd_on_demand`` -> ``Cost on-demand [USD]``."""
    return column_label(column)


def finance_table(budget: pd.DataFrame) -> pd.DataFrame:
    """The budget with spreadsheet headers and GPU-hours and USD rounded to cents."""
    out = budget.copy()
    numeric = out.select_dtypes("float").columns
    out[numeric] = out[numeric].round(2)
    return out.rename(columns=budget_header)


def spreadsheet_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every string cell (headers too) made literal text for a spreadsheet; numbers untouched."""
    out = frame.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]):
            out[column] = out[column].map(spreadsheet_text)
    return out.rename(columns=spreadsheet_text)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def _is_key(value: Any) -> bool:
    """A short name without spaces (a month, a GPU type, a model): kept on one line, never broken inside."""
    return isinstance(value, str) and 0 < len(value) <= KEY_CELL_CHARS and not any(c.isspace() for c in value)


def _html_table(frame: pd.DataFrame) -> Markup:
    """An HTML table of ``frame`` in a box that scrolls sideways; every header and cell is escaped."""
    head = "".join(f"<th>{html_escape(column_label(str(c)))}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False):
        cells = "".join(
            f'<td class="num">{html_escape(format_number(v))}</td>' if _is_number(v)
            else f'<td class="key">{html_escape(v)}</td>' if _is_key(v)
            else f"<td>{html_escape(format_number(v))}</td>"
            for v in values)
        rows.append(f"<tr>{cells}</tr>")
    return Markup(f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _md_table(frame: pd.DataFrame) -> MarkdownSafe:
    head = "| " + " | ".join(md_escape(column_label(str(c))) for c in frame.columns) + " |"
    rule = "|" + "|".join("--:" if pd.api.types.is_numeric_dtype(frame[c]) else "---" for c in frame.columns) + "|"
    body = ["| " + " | ".join(md_escape(format_number(v)) for v in row) + " |" for row in frame.itertuples(index=False)]
    return MarkdownSafe("\n".join([head, rule, *body]))


@cache
def _environment(kind: str) -> Environment:
    # Both escape every {{ }} by default: HTML by autoescaping, Markdown by `finalize` (md_escape leaves
    # only the renderer's own MarkdownSafe tables as they are).
    env = Environment(loader=PackageLoader("capplan.reports", "templates"), autoescape=(kind == "html"),
                      undefined=StrictUndefined, keep_trailing_newline=True,
                      finalize=md_escape if kind == "md" else None)
    env.filters["b64"] = lambda data: base64.b64encode(data).decode("ascii")
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
    spreadsheet_frame(finance_table(budget)).to_csv(path, index=False)
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
        for ws in writer.sheets.values():
            _cells_as_text(ws)
        sheet = writer.sheets["budget"]
        sheet.freeze_panes = "A2"
        for idx, column in enumerate(table.columns, start=1):
            letter = sheet.cell(row=1, column=idx).column_letter
            sheet.column_dimensions[letter].width = max(len(column), 10) + 2
            if pd.api.types.is_float_dtype(table[column]):
                for (cell,) in sheet.iter_rows(min_row=2, min_col=idx, max_col=idx):
                    cell.number_format = "#,##0.00"
    return path


def _cells_as_text(sheet) -> None:
    """Make every string cell of an openpyxl ``sheet`` a text cell: openpyxl stores a string that starts
    with ``=`` as a live formula (``=HYPERLINK(...)`` from a config list would become a link)."""
    for row in sheet.iter_rows():
        for cell in row:
            if isinstance(cell.value, str) and cell.data_type != "s":
                cell.data_type = "s"


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
        for chart in report.all_charts:
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
