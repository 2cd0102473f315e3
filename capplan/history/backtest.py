"""A backtest of the whole plan: would last quarter's plans, made with only the data available then, have held?

For each month M of the range, :func:`backtest` opens the database as of M's first instant
(:func:`capplan.history.as_of.connect_as_of`: no query can see a request from M or later) and
makes the plan for M exactly as ``capplan plan`` would — pools resolved from the models seen so
far, each pool's measured mix, forecast, sizing (its GPU chosen when ``auto``) and cost. It then
opens the database as of M's end and applies the same sizing and pricing to what happened
(:func:`capplan.history.actuals.actual_month`), and compares:

* ``under_capacity_hours_p50`` / ``_p90``: observed hours whose need exceeded the planned fleet
  (the month's planned GPUs at P50 / P90). [h]
* ``idle_gpu_hours``: Σ max(0, planned P50 fleet − need) over observed hours. [GPU·h]
* ``planned_cost_usd`` (the plan's P50 cost of M) against ``actual_need_cost_usd`` (the need
  priced with the planned reserved GPUs). [USD]
* ``peak_within_p90``: the month's actual design peak at or below the planned P90 peak.
* ``demand_abs_pct_error``: |planned P50 requests − actual| / actual over the month.

The summary's ``p90_coverage`` is the share of compared months (complete months only) whose
actual peak was within the planned P90, and ``demand_mape`` the mean of the demand errors.
A month whose plan could not be made (too little history before it) is listed with the reason, and so
is a month the logs hold none of yet, per pool — without planning it, since nothing could be compared.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from capplan.config import CapplanConfig
from capplan.history.actuals import actual_month, observed_hours
from capplan.history.as_of import connect_as_of
from capplan.history.record import pool_rows
from capplan.plan.inputs import measure_inputs
from capplan.plan.pool_plan import plan_pool
from capplan.plan.pools import Pool, pool_traffic, read_model_traffic, resolve_pools
from capplan.plan.demand import plan_demand
from capplan.plan.throughput import load_tests_for_plan


@dataclass(frozen=True)
class BacktestMonth:
    """One pool's month of the backtest (the ``--json`` ``months`` entries)."""

    month: str
    pool: str
    gpu: str
    planned_gpus_p50: int
    planned_gpus_p90: int
    needed_gpus: int
    under_capacity_hours_p50: int
    under_capacity_hours_p90: int
    observed_hours: int
    idle_gpu_hours: float
    planned_cost_usd: float
    actual_need_cost_usd: float
    planned_requests_p50: float
    actual_requests: float
    demand_abs_pct_error: float | None
    planned_peak_qps_p90: float
    actual_peak_qps: float
    peak_within_p90: bool
    complete: bool


@dataclass(frozen=True)
class BacktestResult:
    """Every month × pool compared, the months that could not be planned, and the summary."""

    months: list[BacktestMonth]
    skipped: list[dict[str, str]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """``p90_coverage`` and ``demand_mape`` over complete months, with the counts they rest on."""
        done = [m for m in self.months if m.complete]
        errors = [m.demand_abs_pct_error for m in done if m.demand_abs_pct_error is not None]
        return {"compared": len(done), "incomplete": len(self.months) - len(done), "skipped": len(self.skipped),
                "p90_coverage": float(np.mean([m.peak_within_p90 for m in done])) if done else None,
                "demand_mape": float(np.mean(errors)) if errors else None,
                "under_capacity_hours_p50": int(sum(m.under_capacity_hours_p50 for m in self.months)),
                "under_capacity_hours_p90": int(sum(m.under_capacity_hours_p90 for m in self.months))}

    def to_dict(self) -> dict[str, Any]:
        return {"months": [asdict(m) for m in self.months], "skipped": self.skipped, "summary": self.summary()}

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(m) for m in self.months])


def months_between(first: str, last: str) -> list[str]:
    """``YYYY-MM`` months from ``first`` to ``last`` inclusive."""
    months = pd.period_range(pd.Period(first, freq="M"), pd.Period(last, freq="M"), freq="M")
    if months.empty:
        raise ValueError(f"--from {first} is after --to {last}")
    return [str(m) for m in months]


def _pools(by_model: pd.DataFrame, cfg: CapplanConfig, month: str) -> list[Pool]:
    """The pools a plan made at ``month``'s start resolves from the models seen before it."""
    if by_model.empty:
        raise ValueError(f"no traffic before {month}")
    return resolve_pools(cfg, sorted(by_model["model"].unique()))


def pools_as_of(path: str | Path, cfg: CapplanConfig, month: str) -> list[Pool]:
    """The pools :func:`plan_as_of` would plan for ``month``, without planning them."""
    with connect_as_of(path, pd.Period(month, freq="M").start_time) as con:
        return _pools(read_model_traffic(con, cfg), cfg, month)


def plan_as_of(path: str | Path, cfg: CapplanConfig, month: str) -> list:
    """The plan ``capplan plan --month month`` would have made at ``month``'s first instant, one month ahead.

    Returns the pools' :class:`~capplan.plan.pool_plan.PoolPlan` list.
    """
    with connect_as_of(path, pd.Period(month, freq="M").start_time) as con:
        by_model = read_model_traffic(con, cfg)
        plans = []
        pools = _pools(by_model, cfg, month)
        load_tests = load_tests_for_plan(con, [p.name for p in pools])  # as the plan's load-tests stage, as of then
        for pool in pools:
            hourly, _daily = pool_traffic(by_model, pool)
            measured = measure_inputs(con, hourly, cfg, models=list(pool.models), pool=pool)
            demand = plan_demand(hourly, [month], cfg, measured.burst_ratio)  # the plan's own demand stage
            plans.append(plan_pool(cfg, pool, demand.forecast, [month], measured, peaks=demand.peaks,
                                   load_tests=load_tests))
        return plans


def compare(plan, actual, month: str) -> BacktestMonth:
    """One pool's planned month (:func:`capplan.history.record.pool_rows`) against its :class:`ActualMonth`."""
    planned = next(r for r in pool_rows(plan, [month]) if r["month"] == month)
    need = actual.need_gpus
    seen = ~np.isnan(need)
    p50, p90 = int(planned["gpus_p50"]), int(planned["gpus_p90"])
    error = (abs(planned["requests_p50"] - actual.requests) / actual.requests) if actual.requests > 0 else None
    return BacktestMonth(
        month=month, pool=plan.name, gpu=plan.gpu, planned_gpus_p50=p50, planned_gpus_p90=p90,
        needed_gpus=actual.gpus_needed,
        under_capacity_hours_p50=int((need[seen] > p50).sum()), under_capacity_hours_p90=int((need[seen] > p90).sum()),
        observed_hours=int(seen.sum()), idle_gpu_hours=float(np.clip(p50 - need[seen], 0, None).sum()),
        planned_cost_usd=float(planned["cost_p50_usd"]), actual_need_cost_usd=actual.cost_usd,
        planned_requests_p50=float(planned["requests_p50"]), actual_requests=actual.requests,
        demand_abs_pct_error=None if error is None else float(error),
        planned_peak_qps_p90=float(planned["peak_qps_p90"]), actual_peak_qps=actual.peak_qps,
        peak_within_p90=bool(actual.peak_qps <= planned["peak_qps_p90"]), complete=actual.complete)


def backtest(path: str | Path, cfg: CapplanConfig, first: str, last: str) -> BacktestResult:
    """Plan each month of ``first``..``last`` as of its start, and compare with what its traffic needed."""
    results, skipped = [], []
    for month in months_between(first, last):
        end = (pd.Period(month, freq="M") + 1).start_time
        with connect_as_of(path, end) as con:
            by_model = read_model_traffic(con, cfg)  # once per month, for every pool
        try:
            if by_model.empty or not observed_hours(by_model, month).any():
                # Nothing of the month is logged yet: no pool's plan could be compared (actual_month returns
                # None for each), so none is made — the forecasts are nearly all of a month's time.
                skipped += [{"month": month, "reason": f"pool {p.name}: no traffic in the logs for {month}"}
                            for p in pools_as_of(path, cfg, month)]
                continue
            plans = plan_as_of(path, cfg, month)
        except ValueError as exc:  # too little history before the month, no traffic, …
            skipped.append({"month": month, "reason": str(exc)})
            continue
        with connect_as_of(path, end) as con:
            for plan in plans:
                actual = actual_month(con, cfg, plan.pool, month, gpu=plan.gpu,
                                      tensor_parallel=plan.sized.first_p50.tensor_parallel,
                                      reserved_gpus=plan.costs["P50"].reserved_gpus, by_model=by_model)
                if actual is None:
                    skipped.append({"month": month, "reason": f"pool {plan.name}: no traffic in the logs for {month}"})
                    continue
                results.append(compare(plan, actual, month))
    return BacktestResult(results, skipped)
