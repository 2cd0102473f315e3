"""The monthly capacity plan: one Prefect flow from request logs to a finance-ready report.

Reads top to bottom: ingest → partitioned roll-up (when ``[[cluster.sources]]`` name Hive
folders or file lists; a sub-flow on the ``[cluster]`` task runner) → refresh the profile
roll-ups (the one step that writes them) → profile → measure → forecast
→ size → cost → SLO → drift → charts → report → artifacts. Each step is a thin task in :mod:`flows.tasks`; the
arithmetic lives in the packages. A failing task fails the run with its exception.
A re-run starts again from the database: the ingest ledger skips files already
loaded, the profile refreshes only what changed, and the report folder is replaced whole.
"""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import flow

from capplan.config import CapplanConfig
from capplan.plan.assumptions import assumptions_table
from capplan.plan.calendar import plan_months
from capplan.plan.notes import coverage_notes, ingest_notes
from capplan.flows.ingest import ingest_logs
from capplan.flows.partitioned import run_partitioned_rollup
from capplan.flows.tasks import (announce, build_report, check_slos, cost_months, draw_charts, find_drift,
                                 forecast_qps, measure_request_mix, notify_flow, profile_traffic, publish_artifacts,
                                 refresh_profile, size_months, write_report_files)
from capplan.reports.assemble import ReportInputs


@flow(name="monthly-capacity-plan", log_prints=True)
def monthly_capacity_plan(config: CapplanConfig, month: str | None = None) -> str:
    """Plan GPUs and cost for ``[forecast].horizon_months`` months from ``month`` (``YYYY-MM``).

    ``month`` defaults to the month after the last complete month of data
    (:func:`capplan.plan.calendar.plan_months`). Returns the report folder.
    """
    ingested = ingest_logs.with_options(on_completion=[notify_flow], on_failure=[notify_flow])(config)
    notes = ingest_notes(ingested)
    if config.cluster.sources:
        rolled = run_partitioned_rollup(config, hooks=[notify_flow])
        notes += [f"partition not rolled up: {failure}" for failure in rolled.failed]
        notes += [f"partitioned source: {pattern}: no such file or partition folder" for pattern in rolled.missing]
    for note in notes:
        announce("ingest", note)
    refresh_profile(config)
    hourly, daily = profile_traffic(config)
    measured = measure_request_mix(config, hourly)
    months = plan_months(measured.last_ts_utc, config.forecast.horizon_months, month)
    demand = forecast_qps(hourly, months, config, measured)  # s7-honest: the history policy's demand
    forecast = demand.forecast
    honest = list(measured.notes) + coverage_notes(measured.defaulted, config.slos) + list(demand.notes)  # s7-honest
    for note in honest:
        announce("forecast", note)
    notes += honest
    spec = config.sizing.fleet_spec()
    sized = size_months(forecast, months, spec, measured, demand.peaks)
    costs = cost_months(forecast, months, config, spec, measured)
    slos = check_slos(config)
    drift = find_drift(config)
    inputs = ReportInputs(cfg=config, months=months, hourly=hourly, daily=daily, measured=measured,
                          assumptions=assumptions_table(config, measured.table(),
                                                        measured.sourced() | demand.assumptions()),  # s7-honest
                          forecast=forecast,
                          sized=sized, costs=costs, slos=slos, drift=drift,
                          generated_at_utc=f"{datetime.now(UTC):%Y-%m-%d %H:%M}", notes=tuple(notes))
    report = build_report(inputs, draw_charts(inputs))
    folder = write_report_files(report, config)
    publish_artifacts(report, folder)
    print(f"capacity plan {report.month} written to {folder}")
    return str(folder)
