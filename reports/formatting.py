"""How a report writes numbers and column names for people (the files for machines keep raw values).

:func:`format_number` gives thousands separators and a number of decimals that fits the
size of the value (``20370.0`` -> ``20,370``, not ``2.037e+04``); :func:`column_label`
turns a column name into a header with its unit (``qps_p10`` -> ``Design peak QPS P10
[requests/s]``).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

#: Headers of the columns the report's tables show, with their units.
COLUMN_LABELS = {
    "month": "Month", "pool": "Pool", "throughput_source": "Throughput source", "gpu_type": "GPU type",
    "binding": "What binds", "model": "Model", "metric": "Metric",
    "name": "Name", "slo": "SLO", "severity": "Severity", "rules": "Rules",
    "gpus_p10": "GPUs P10", "gpus_p50": "GPUs P50", "gpus_p90": "GPUs P90",
    "qps_p10": "Design peak QPS P10 [requests/s]", "qps_p50": "Design peak QPS P50 [requests/s]",
    "qps_p90": "Design peak QPS P90 [requests/s]",
    "input_tokens": "Input per request [tokens]", "output_tokens": "Output per request [tokens]",
    "kv_tokens": "KV per sequence [tokens]", "latency_s": "Latency per request [s]",
    "gpus_throughput": "GPUs for throughput [count]", "gpus_memory": "GPUs for KV memory [count]",
    "total_cost_usd": "Total cost [USD]", "total_cost_usd_p10": "Total cost P10 [USD]",
    "total_cost_usd_p90": "Total cost P90 [USD]",
    "target": "Target [fraction]", "sli": "SLI [fraction]", "burn_rate": "Burn rate [ratio]",
    "budget_remaining_fraction": "Budget left [fraction]", "budget_spent_fraction": "Budget spent [fraction]",
    "start": "Start [UTC]", "end": "End [UTC]", "duration_min": "Duration [min]",
    "change_date": "Change date [UTC]", "detected_in_window_start": "Window start [UTC]",
    "mean_tokens_before": "Mean before [tokens]", "mean_tokens_after": "Mean after [tokens]",
    "relative_change": "Change [fraction]", "psi": "PSI", "p_value": "p-value",
    "gpu_seconds_per_request_change": "GPU-s per request change [GPU-s]",
    "usd_per_request_change": "Cost per request change [USD]", "requests_per_month": "Requests per month",
    "gpus_change": "GPUs change [count]", "usd_per_month_change": "Cost change [USD/month]",
    # "How earlier plans did" (capplan.history.variance.PlanVariance)
    "planned_requests_p50": "Planned requests P50 [requests]", "actual_requests": "Actual requests [requests]",
    "planned_peak_qps_p90": "Planned design peak P90 [requests/s]",
    "actual_peak_qps": "Actual design peak [requests/s]", "planned_gpus_p50": "Planned GPUs P50 [count]",
    "planned_gpus_p90": "Planned GPUs P90 [count]", "actual_gpus_needed": "GPUs needed [count]",
    "planned_cost_usd": "Planned cost P50 [USD]", "actual_cost_usd": "Cost at the need [USD]",
    "variance_volume_usd": "Variance from volume [USD]", "variance_token_mix_usd": "Variance from token mix [USD]",
    "variance_price_usd": "Variance from price [USD]", "requests_in_band": "Requests within P10–P90",
    "peak_in_band": "Peak within P10–P90", "complete": "Whole month observed",
}

#: Option columns of the budget: prefix -> (label, unit), e.g. ``cost_usd_on_demand`` -> ``Cost on-demand [USD]``.
_OPTION_PREFIXES = (("gpu_hours_", "GPU-hours", "GPU-h"), ("cost_usd_", "Cost", "USD"))
#: Unit suffixes of other columns: ``latency_ms`` -> ``Latency [ms]``.
_UNIT_SUFFIXES = (("_usd", "USD"), ("_pct", "%"), ("_fraction", "fraction"), ("_ms", "ms"), ("_s", "s"),
                  ("_rps", "requests/s"), ("_qps", "requests/s"), ("_tokens", "tokens"), ("_gib", "GiB"))


def slug(name: object) -> str:
    """``name`` as lower-case letters, digits and dashes (every other character a dash): the one rule for the
    report's chart file names and the plan's Prefect artifact keys."""
    return "".join(ch if ch.isalnum() else "-" for ch in str(name).lower())


def column_label(column: str) -> str:
    """The header a person reads for ``column``: a known label, else the words of the name and its unit."""
    if column in COLUMN_LABELS:
        return COLUMN_LABELS[column]
    for prefix, label, unit in _OPTION_PREFIXES:
        if column.startswith(prefix):
            return f"{label} {column.removeprefix(prefix).replace('_', '-')} [{unit}]"
    for suffix, unit in _UNIT_SUFFIXES:
        if column.endswith(suffix) and len(column) > len(suffix):
            return f"{_words(column.removesuffix(suffix))} [{unit}]"
    return _words(column)


def format_number(value: Any) -> str:
    """``value`` for a person: thousands separators, decimals by size, no exponent from 1e-4 up.

    Integers in full (``20,370``); from 100 up no decimals; from 1 to 100 two; below 1 four
    significant digits (fractions such as SLO targets and p-values keep their digits).
    A missing or infinite value is ``—``/``∞``; anything not a number is ``str(value)``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    value = float(value)
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if abs(value) >= 100 or value == int(value):
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:,.2f}"
    return f"{value:.4g}"


def _words(column: str) -> str:
    text = column.replace("_", " ").strip()
    return text[:1].upper() + text[1:]
