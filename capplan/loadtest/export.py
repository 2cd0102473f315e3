"""``capplan loadtest export``: write the load test to run next from a pool's recent logs.

The rows are every log row of the pool's models (the pool's ``models``, as the plan maps them,
:func:`capplan.plan.pools.resolve_pools`), or of the models the command narrows it to.

Files written to the output folder:

* ``trace.jsonl``: Mooncake/AIPerf trace, one request a line ``{"timestamp": ms, "input_length",
  "output_length"}``, the production arrivals in order, optionally time-scaled to a target rate;
* ``lengths.jsonl``: the joint prompt/output lengths ``{"input_length", "output_length"}``, and
  ``lengths.json``: their summary (mean, std, min, max, p50/p90/p99) for synthetic modes;
* ``PLAN.md``: rates to sweep, SLO, soak and failure tests with command lines (:mod:`capplan.loadtest.runbook`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from capplan.loadtest.capacity import SloTargets
from capplan.loadtest.logs import Arrivals, production_profile, read_arrivals, recent_window
from capplan.loadtest.runbook import RunbookInputs, render_plan
from capplan.loadtest.workload import arrival_rate_rps, length_summary, scaled_offsets_ms, sweep_rates_rps

TRACE_FILE = "trace.jsonl"
LENGTHS_FILE = "lengths.jsonl"
SUMMARY_FILE = "lengths.json"
PLAN_FILE = "PLAN.md"


@dataclass(frozen=True)
class ExportResult:
    """What the export wrote and the figures it stands on."""

    out_dir: Path
    pool: str
    models: tuple[str, ...]  # the log models whose rows were exported
    files: tuple[Path, ...]
    requests: int
    trace_rate_rps: float  # [requests/s]
    observed_rate_rps: float  # of the logs' window [requests/s]
    peak_hour_qps: float  # [requests/s]
    rates_rps: tuple[float, ...]  # per replica [requests/s]
    design_peak_qps: float  # the peak the sweep spans a quarter to 1.5 times of [requests/s]
    design_peak_source: str

    def to_dict(self) -> dict[str, Any]:
        return {"out_dir": str(self.out_dir), "pool": self.pool, "models": list(self.models),
                "files": [str(f) for f in self.files], "requests": self.requests,
                "trace_rate_rps": self.trace_rate_rps, "observed_rate_rps": self.observed_rate_rps,
                "peak_hour_qps": self.peak_hour_qps, "rates_rps": list(self.rates_rps),
                "design_peak_qps": self.design_peak_qps, "design_peak_source": self.design_peak_source}


@dataclass(frozen=True)
class ExportRequest:
    """The export's settings (parsed once at the command line)."""

    pool: str  # the pool's name (PLAN.md, lengths.json)
    models: tuple[str, ...]  # its log models whose rows are exported (all of the pool's, or a narrowing)
    days: int
    out_dir: Path
    targets: SloTargets
    rate_rps: float | None = None  # time-scale the trace to this rate; None keeps production timing
    replicas: int = 1
    zones: int = 1
    zones_lost: int = 0
    step_minutes: float = 10.0
    soak_minutes: float = 60.0
    planned_peak: tuple[float, str] | None = None  # a stored plan's P90 design peak [requests/s] and its source
    unplanned_peak_reason: str | None = None  # why no stored plan's peak is used (default: none covers the pool)


def write_jsonl(path: Path, columns: dict[str, np.ndarray]) -> None:
    """One JSON object per line with these integer columns, in this order."""
    names = list(columns)
    rows = zip(*(np.asarray(columns[n], dtype=np.int64).tolist() for n in names), strict=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(dict(zip(names, row, strict=True))) + "\n" for row in rows)


def _trace(arrivals: Arrivals, rate_rps: float | None) -> dict[str, np.ndarray]:
    return {"timestamp": scaled_offsets_ms(arrivals.offset_us, rate_rps),
            "input_length": arrivals.input_tokens, "output_length": arrivals.output_tokens}


def export_load_test(con: duckdb.DuckDBPyConnection, request: ExportRequest, hourly: pd.DataFrame) -> ExportResult:
    """Write the trace, the lengths and PLAN.md from the last ``request.days`` days of ``request.models``' logs.

    ``hourly`` is those models' hourly traffic summed (:func:`capplan.plan.pools.pool_traffic`), for the
    observed peak-hour rate.

    Raises
    ------
    capplan.loadtest.logs.LogsError
        The logs hold no request of the models, or fewer than two in the window.
    """
    window = recent_window(con, request.models, request.days, scope=request.pool)
    profile = production_profile(con, window, hourly)
    arrivals = read_arrivals(con, window)
    observed = arrival_rate_rps(arrivals.offset_us)
    trace = _trace(arrivals, request.rate_rps)
    out = Path(request.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / TRACE_FILE, trace)
    write_jsonl(out / LENGTHS_FILE, {"input_length": arrivals.input_tokens, "output_length": arrivals.output_tokens})
    summaries = {"input_tokens": length_summary(arrivals.input_tokens),
                 "output_tokens": length_summary(arrivals.output_tokens)}
    (out / SUMMARY_FILE).write_text(json.dumps({"pool": request.pool, "models": list(request.models),
                                                "requests": len(arrivals.offset_us), **summaries}, indent=2) + "\n",
                                               encoding="utf-8")
    peak, peak_source = request.planned_peak or (profile.peak_hour_qps, "the observed peak-hour rate: " + (
        request.unplanned_peak_reason or "no stored plan covers this pool; run `capplan plan`"))
    rates = tuple(sweep_rates_rps(peak, request.replicas))
    trace_rate = request.rate_rps or observed
    plan = render_plan(RunbookInputs(
        pool=request.pool, models=request.models, since_utc=str(window.since_utc),
        until_utc=str(window.until_utc), days=request.days, requests=len(arrivals.offset_us),
        peak_hour_qps=profile.peak_hour_qps, design_peak_qps=peak, design_peak_source=peak_source,
        replicas=request.replicas, zones=request.zones,
        zones_lost=request.zones_lost, rates_rps=rates, ttft_ms_max=request.targets.ttft_ms_max,
        tpot_ms_max=request.targets.tpot_ms_max, percentile=request.targets.percentile,
        max_error_rate=request.targets.max_error_rate, step_minutes=request.step_minutes,
        soak_minutes=request.soak_minutes, input_summary=summaries["input_tokens"],
        output_summary=summaries["output_tokens"], trace_file=TRACE_FILE, trace_rate_rps=trace_rate,
        trace_duration_s=float(trace["timestamp"][-1]) / 1000.0))  # ms -> s
    (out / PLAN_FILE).write_text(plan, encoding="utf-8")
    files = tuple(out / name for name in (TRACE_FILE, LENGTHS_FILE, SUMMARY_FILE, PLAN_FILE))
    return ExportResult(out, request.pool, request.models, files, len(arrivals.offset_us), trace_rate, observed,
                        profile.peak_hour_qps, rates, peak, peak_source)
