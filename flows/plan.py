"""The monthly capacity plan: one Prefect flow from request logs to a finance-ready report.

Reads top to bottom: ingest → partitioned roll-up (when ``[[cluster.sources]]`` name Hive
folders or file lists; a sub-flow on the ``[cluster]`` task runner) → refresh the profile
roll-ups (the one step that writes them) → profile → measure → load tests → forecast
→ size (per pool: measured, calibrated, modelled or assumed throughput) → cost (fleet totals, shared commitment),
while SLO and drift (from the profile on) and earlier plans against what happened (from the forecast on) run
beside them on the flow's task runner (they only read the database), and the traffic and SLO charts are drawn
beside the forecast once SLO and drift are done → charts → report → record the plan
(``plan_runs``/``plan_months``) beside publishing the artifacts. Each step is a thin task in :mod:`flows.tasks`; the
arithmetic lives in the packages. A failing task fails the run with its exception.
A re-run starts again from the database: the ingest ledger skips files already
loaded, the profile refreshes only what changed, and the report folder is replaced whole.
"""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import flow

from capplan.config import CapplanConfig
from capplan.plan.assumptions import assumptions_table, pool_assumptions
from capplan.plan.calendar import plan_months
from capplan.plan.notes import coverage_notes, ingest_notes
from capplan.flows.ingest import ingest_logs
from capplan.flows.partitioned import run_partitioned_rollup
from capplan.flows.tasks import (announce, build_report, check_slos, compare_earlier_plans, cost_fleet, draw_charts,
                                 draw_evidence_charts, find_drift, forecast_qps, measure_request_mix, notify_flow,
                                 profile_traffic, publish_artifacts, read_load_tests, record_plan, refresh_profile,
                                 size_pools, write_report_files)
from capplan.plan.pools import pool_notes, unused_pools
from capplan.reports.assemble import ReportInputs


#: The ingest sub-flow reporting as a stage; made once here, at import, not on each run (``with_options`` builds the
#: flow's parameter schema again, a tenth of a second of the run's start).
_ingest_logs = ingest_logs.with_options(on_completion=[notify_flow], on_failure=[notify_flow])


@flow(name="monthly-capacity-plan", log_prints=True)
def monthly_capacity_plan(config: CapplanConfig, month: str | None = None) -> str:
    """Plan GPUs and cost for ``[forecast].horizon_months`` months from ``month`` (``YYYY-MM``).

    ``month`` defaults to the month after the last complete month of data
    (:func:`capplan.plan.calendar.plan_months`). Returns the report folder.
    """
    ingested = _ingest_logs(config)
    notes = ingest_notes(ingested)
    if config.cluster.sources:
        rolled = run_partitioned_rollup(config, hooks=[notify_flow])
        notes += [f"partition not rolled up: {failure}" for failure in rolled.failed]
        notes += [f"partitioned source: {pattern}: no such file or partition folder" for pattern in rolled.missing]
    for note in notes:
        announce("ingest", note)
    refresh_profile(config)
    # SLO and drift only read the database: submitted to the flow's task runner, they run from here beside
    # profile → measure → forecast → size → cost (in the command's worker processes when it has them), on a core
    # those leave idle at first
    slos_run, drift_run = check_slos.submit(config), find_drift.submit(config)
    hourly, daily, pools, by_pool = profile_traffic(config)
    notes += pool_notes(pools) + [f"[[pools]] {name}: serves no model in the logs; left out of the plan"
                                  for name in unused_pools(config, pools)]
    measured = measure_request_mix(config, pools, by_pool)
    # the traffic and SLO charts need neither the forecast nor the fleet: drawn in worker processes the forecast
    # leaves idle (its pools finish at different times), so the charts stage after the cost has less left to draw
    evidence_charts = draw_evidence_charts.submit(config, daily, measured, slos_run, drift_run)
    load_tests = read_load_tests(config, pools)
    last_ts_utc = max(m.last_ts_utc for m in measured.values())
    months = plan_months(last_ts_utc, config.forecast.horizon_months, month)
    earlier_run = compare_earlier_plans.submit(config, pools, months)  # read-only as well, beside the forecast
    demands = forecast_qps(by_pool, months, config, measured)  # the history policy's demand, per pool
    any_pool = next(iter(measured.values()))
    honest = coverage_notes(any_pool.defaulted, config.slos) + list(dict.fromkeys(
        [f"{name}: {n}" for name, m in measured.items() for n in m.notes]
        + [f"{name}: {n}" for name, d in demands.items() for n in d.notes]))
    for note in honest:
        announce("forecast", note)
    notes += honest
    plans = size_pools(config, pools, demands, months, measured, load_tests)
    fleet = cost_fleet(plans, config)
    slos, drift, earlier = slos_run.result(), drift_run.result(), earlier_run.result()
    drawn = evidence_charts.result()  # its failure fails the run with its own exception, not a NotReady charts stage
    notes += [f"SLO {ev.status.name!r}: {n}" for ev in slos for n in ev.status.notes]  # metrics hours' resolution
    table = {f"{name}: {k}": v for name, m in measured.items() for k, v in m.table().items()}
    sourced = {f"{name}: {k}": v for name, m in measured.items() for k, v in m.sourced().items()}
    sourced |= {f"{name}: {k}": v for name, d in demands.items() for k, v in d.assumptions().items()}
    sourced |= {f"{p.name}: {k}": v for p in plans for k, v in pool_assumptions(config, p).items()}
    inputs = ReportInputs(cfg=config, months=months, hourly=hourly, daily=daily, by_pool=by_pool, fleet=fleet,
                          assumptions=assumptions_table(config, table, sourced),
                          slos=slos, drift=drift,
                          generated_at_utc=f"{datetime.now(UTC):%Y-%m-%d %H:%M}", notes=tuple(notes),
                          earlier=earlier)
    report = build_report(inputs, draw_charts(inputs, drawn))
    folder = write_report_files(report, config)
    recorded = record_plan.submit(config, fleet, months)  # the database beside the API: neither waits for the other
    publish_artifacts(report, folder)
    recorded.result()
    print(f"capacity plan {report.month} written to {folder}")
    return str(folder)
