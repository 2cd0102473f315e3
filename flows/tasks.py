"""Thin Prefect tasks for the monthly capacity plan; each calls one stage function.

Tasks that touch the database, the report folder or the Prefect API retry (a
DuckDB file briefly locked by the daily ingest, a slow disk, a busy API); the
computing tasks do not, since a retry would only repeat the same error.
Frames are not cached between runs (``cache_policy=NONE``): a re-run recomputes
from what is in the database, which is the point of a monthly plan.

Every task calls :func:`notify` on completion or failure so a caller (the
``capplan plan`` progress display) can follow the stages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NONE

from capplan.config import CapplanConfig, dump_config
from capplan.db import connect
from capplan.history.compare import EarlierPlans
from capplan.plan import demand, evidence, inputs, pool_plan, pools, throughput, traffic
from capplan.profile import refresh_rollups
from capplan.reports import assemble
from capplan.reports.document import PlanReport
from capplan.reports.formatting import slug
from capplan.reports.render import finance_table, render_markdown, write_report
from capplan.runtime import in_worker, in_workers

#: Stage names in run order, as the progress display shows them.
STAGES = ("ingest", "refresh-profile", "profile", "measure", "load-tests", "forecast", "size", "cost", "slo", "drift",
          "earlier-plans", "evidence-charts", "charts", "report", "report-files", "record-plan", "artifacts")
#: Stages that run on the flow's task runner beside others (:func:`capplan.flows.plan.monthly_capacity_plan`): SLO
#: and drift from the profile on and earlier plans from the forecast on, until the cost (they only read the
#: database), the evidence charts from the measure on, and the plan's record beside the artifacts: their seconds
#: overlap those stages' seconds.
OVERLAPPING = ("slo", "drift", "earlier-plans", "evidence-charts", "record-plan")


def stages_for(cfg: CapplanConfig) -> tuple[str, ...]:
    """:data:`STAGES` of a run of ``cfg``: with ``partitioned`` after the ingest when ``[[cluster.sources]]`` are set."""
    return STAGES[:1] + ("partitioned",) + STAGES[1:] if cfg.cluster.sources else STAGES

_listeners: list[Callable[[str, str, float, str], None]] = []


@contextmanager
def stage_listener(callback: Callable[[str, str, float, str], None]) -> Iterator[None]:
    """Call ``callback(stage, state, seconds, message)`` after every task while the block runs."""
    _listeners.append(callback)
    try:
        yield
    finally:
        _listeners.remove(callback)


def notify(task_: Any, task_run: Any, state: Any) -> None:
    """Prefect state hook: tell the listeners which stage finished, how, and how long it took."""
    seconds = task_run.total_run_time.total_seconds() if task_run.total_run_time else 0.0
    message = "" if state.is_completed() else str(state.message or "")
    for callback in list(_listeners):
        callback(task_.name, state.name, seconds, message)


def announce(stage: str, message: str) -> None:
    """Tell the listeners something a reader of the run should see (state ``Note``)."""
    for callback in list(_listeners):
        callback(stage, "Note", 0.0, message)


def notify_flow(flow_: Any, flow_run: Any, state: Any) -> None:
    """Prefect flow hook: a sub-flow run (the ingest, the partitioned roll-up) reported as one stage, like :func:`notify`."""
    seconds = (state.timestamp - flow_run.start_time).total_seconds() if flow_run.start_time else 0.0
    message = "" if state.is_completed() else str(state.message or "")
    for callback in list(_listeners):
        callback(flow_.name.removesuffix("-logs").removesuffix("-rollup"), state.name, seconds, message)


def _stage(name: str, retries: int = 0) -> Callable:
    return task(name=name, retries=retries, retry_delay_seconds=1 if retries else 0, cache_policy=NONE,
                on_completion=[notify], on_failure=[notify])


@_stage("refresh-profile", retries=2)
def refresh_profile(cfg: CapplanConfig) -> int:
    """Bring the profile roll-ups up to date with the ingested requests before the readers run.

    The ingest flow has refreshed already; this costs one changed-files query then, and catches a
    database loaded by other means (another process, an older capplan) before a reader refuses it.
    """
    with connect(cfg.database.path) as con:
        return refresh_rollups(con)


@_stage("profile", retries=2)
def profile_traffic(cfg: CapplanConfig) -> tuple[pd.DataFrame, pd.DataFrame, list[pools.Pool], dict]:
    """Read hourly and daily traffic of all models, resolve the pools, and sum each pool's traffic.

    Returns the fleet's hourly and daily traffic, the pools, and ``{pool: (hourly, daily)}``.
    """
    with connect(cfg.database.path, read_only=True) as con:
        hourly, daily = traffic.all_models_traffic(con, cfg)
        by_model = pools.read_model_traffic(con, cfg)
    resolved = pools.resolve_pools(cfg, sorted(by_model["model"].unique()))
    return hourly, daily, resolved, {p.name: pools.pool_traffic(by_model, p) for p in resolved}


@_stage("measure", retries=2)
def measure_request_mix(cfg: CapplanConfig, resolved: list[pools.Pool],
                        by_pool: dict) -> dict[str, inputs.MeasuredInputs]:
    """Measure each pool's token lengths, latency, KV tokens, burst ratio and spot share from the recent logs."""
    with connect(cfg.database.path, read_only=True) as con, inputs.measured_rollups(con) as rollups:  # once for all
        return {p.name: inputs.measure_inputs(con, by_pool[p.name][0], cfg, models=list(p.models), pool=p,
                                              rollups=rollups) for p in resolved}


@_stage("load-tests", retries=2)
def read_load_tests(cfg: CapplanConfig, resolved: list[pools.Pool]) -> pd.DataFrame:
    """The stored load-test runs of the pools (``capplan loadtest import``); empty when none were imported."""
    with connect(cfg.database.path, read_only=True) as con:
        return throughput.load_tests_for_plan(con, [p.name for p in resolved])


@_stage("forecast")
def forecast_qps(by_pool: dict, months: list[str], cfg: CapplanConfig,
                 measured: dict[str, inputs.MeasuredInputs]) -> dict[str, demand.PlanDemand]:
    """Each pool's hourly mean-QPS forecast and design peaks, as far as its history allows (the history policy);
    the pools side by side in the command's worker processes when it has them."""
    return in_workers(demand.plan_demand, {name: (hourly, months, cfg, measured[name].burst_ratio)
                                           for name, (hourly, _daily) in by_pool.items()})


@_stage("size")
def size_pools(cfg: CapplanConfig, resolved: list[pools.Pool], demands: dict[str, demand.PlanDemand],
               months: list[str], measured: dict[str, inputs.MeasuredInputs],
               load_tests: pd.DataFrame) -> list[pool_plan.PoolPlan]:
    """Size and cost every pool (its GPU chosen first when ``auto``) at its measured, calibrated, modelled or
    assumed throughput: fleet per month and per hour."""
    return [pool_plan.plan_pool(cfg, p, demands[p.name].forecast, months, measured[p.name],
                                peaks=demands[p.name].peaks, load_tests=load_tests) for p in resolved]


@_stage("cost")
def cost_fleet(plans: list[pool_plan.PoolPlan], cfg: CapplanConfig) -> pool_plan.FleetPlan:
    """Fleet totals per month and the reserved GPUs shared by the pools of each GPU type."""
    return pool_plan.fleet_plan(plans, cfg)


@_stage("slo", retries=2)
def check_slos(cfg: CapplanConfig) -> list[evidence.SloEvidence]:
    """Error-budget status, burn-down and alert episodes of every configured SLO; in one of the command's worker
    processes when it has them (not beside the flow's own thread, whose Python it would slow)."""
    return in_worker(_slo_evidence, cfg)


@_stage("drift", retries=2)
def find_drift(cfg: CapplanConfig) -> evidence.DriftEvidence:
    """Token-length distributions of the baseline and recent windows, and the drift findings; in a worker process
    as the SLO stage."""
    return in_worker(_drift_evidence, cfg)


def _slo_evidence(cfg: CapplanConfig) -> list[evidence.SloEvidence]:
    with connect(cfg.database.path, read_only=True) as con:
        return evidence.slo_evidence(con, cfg)


def _drift_evidence(cfg: CapplanConfig) -> evidence.DriftEvidence:
    with connect(cfg.database.path, read_only=True) as con:
        return evidence.drift_evidence(con, cfg)


@_stage("evidence-charts")
def draw_evidence_charts(cfg: CapplanConfig, daily: pd.DataFrame, measured: dict[str, inputs.MeasuredInputs],
                         slos: list[evidence.SloEvidence], drift: evidence.DriftEvidence) -> list:
    """Draw the charts of the measured traffic and the SLOs (peak-to-average, token lengths, burn-downs), which need
    neither the forecast nor the fleet: submitted beside the forecast, each in a worker process the forecast leaves
    idle (this thread only waits), when the command has them."""
    shown = assemble.EvidenceInputs(cfg, daily, tuple(measured.values()), slos, drift)
    drawn = in_workers(assemble.draw_evidence_charts,
                       {key: (shown, (key,)) for key in assemble.evidence_chart_keys(shown)}, here=False)
    return [chart for charts in drawn.values() for chart in charts]


@_stage("charts")
def draw_charts(inputs: assemble.ReportInputs, drawn: list) -> list:
    """Draw the report's charts not yet ``drawn`` (the evidence charts) as PNG, the longest first, each in one of the
    command's worker processes when it has them; return every chart in the report's order."""
    keys = assemble.chart_keys(inputs)
    done = {chart.key: chart for chart in drawn}
    todo = sorted((key for key in keys if key not in done), key=assemble.drawing_rank)
    charts = in_workers(assemble.draw_charts, {key: (inputs, (key,)) for key in todo})
    done |= {chart.key: chart for drawn_here in charts.values() for chart in drawn_here}
    return [done[key] for key in keys]


@_stage("report")
def build_report(inputs: assemble.ReportInputs, charts: list) -> PlanReport:
    """Assemble and validate the report: headline, budget, assumptions, evidence."""
    return assemble.build_report(inputs, charts)


@_stage("earlier-plans", retries=2)
def compare_earlier_plans(cfg: CapplanConfig, resolved: list[pools.Pool], months: list[str]) -> EarlierPlans:
    """Earlier plans' months against what their traffic needed (the report's "How earlier plans did")."""
    from capplan.history.compare import earlier_plans_variance

    return earlier_plans_variance(cfg.database.path, cfg, resolved, months[0])


@_stage("record-plan", retries=2)
def record_plan(cfg: CapplanConfig, fleet_: pool_plan.FleetPlan, months: list[str]) -> str:
    """Store what this plan decided (``plan_runs``, ``plan_months``) so later reports can hold it to account."""
    from capplan.history.record import plan_months_frame
    from capplan.history.store import new_run, record_plan as store

    spans = [(p.measured.first_ts_utc, p.measured.last_ts_utc) for p in fleet_.pools]
    run = new_run(months[0], len(months), dump_config(cfg), data_from_utc=min(a for a, _ in spans),
                  data_to_utc=max(b for _, b in spans))
    with connect(cfg.database.path) as con:
        store(con, run, plan_months_frame(fleet_, months))
    return run.run_id


@_stage("report-files", retries=2)
def write_report_files(report: PlanReport, cfg: CapplanConfig) -> Path:
    """Write the dated report folder with the resolved config beside it."""
    return write_report(report, cfg.report.out_dir, dump_config(cfg))


@_stage("artifacts", retries=2)
def publish_artifacts(report: PlanReport, folder: Path) -> None:
    """Publish the Markdown report (charts left in the folder) and the budget table as Prefect artifacts."""
    key = f"capacity-plan-{report.month}"
    no_charts = replace(report, charts=[], tables=[replace(t, chart=None) for t in report.tables])
    text = render_markdown(no_charts) + f"\nCharts and files: `{folder}/report.html`\n"
    create_markdown_artifact(text, key=key, description=f"Capacity plan {report.month}")
    create_table_artifact(finance_table(report.budget).to_dict(orient="records"), key=f"{key}-budget",
                          description=f"Budget {report.month} (USD, GPU-hours)")
    for pool, rows in report.budget.groupby("pool", sort=False):
        create_table_artifact(finance_table(rows).to_dict(orient="records"), key=f"{key}-pool-{_artifact_key(pool)}",
                              description=f"Budget {report.month}, pool {pool} (USD, GPU-hours)")


def _artifact_key(name: str) -> str:
    """A Prefect artifact key part: lower-case letters, digits and dashes only."""
    return slug(name).strip("-") or "pool"
