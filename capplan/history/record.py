"""What a plan decided, as :class:`capplan.history.store.PlanMonths` rows: one per month × pool, and the fleet."""

from __future__ import annotations

import numpy as np
import pandas as pd

from capplan.history.store import FLEET, PlanMonths
from capplan.plan.calendar import hours_in_months
from capplan.plan.fleet import LEVELS
from capplan.plan.pool_plan import FleetPlan, PoolPlan


def _month_requests(plan: PoolPlan, months: list[str]) -> dict[str, dict[str, float]]:
    """Forecast requests per month at P10/P50/P90. [requests]

    The demand stage's ``requests_p10/p50/p90`` (quantiles of the sample paths' monthly sums,
    :func:`capplan.plan.demand.path_peak_qps`) when the sized months carry them; else
    Σ hourly ``lo_80``/``mean``/``hi_80`` × 3600 s (a plan sized without the demand stage's peaks).
    """
    sized = plan.sized.months
    if {f"requests_{lv.lower()}" for lv in LEVELS} <= set(sized.columns):
        return {lv: dict(zip(sized["month"], sized[f"requests_{lv.lower()}"].astype(float))) for lv in LEVELS}
    part = hours_in_months(plan.forecast, months)
    month = pd.DatetimeIndex(part.index).to_period("M").astype(str)
    return {level: (part[column].astype(float) * 3600.0).groupby(month).sum().to_dict()
            for level, column in LEVELS.items()}


def pool_rows(plan: PoolPlan, months: list[str]) -> list[dict]:
    """The :class:`PlanMonths` rows of one pool."""
    requests = _month_requests(plan, months)
    cost = {level: {m.month: m for m in c.months} for level, c in plan.costs.items()}
    tp = plan.spec.tensor_parallel if plan.spec.tensor_parallel is not None else plan.sized.first_p50.tensor_parallel
    rows = []
    for rec in plan.sized.months.to_dict("records"):
        month = rec["month"]
        p50 = cost["P50"][month]
        rows.append({
            "month": month, "pool": plan.name, "gpu": plan.gpu, "tensor_parallel": tp,
            **{f"requests_{lv.lower()}": requests[lv].get(month, np.nan) for lv in LEVELS},
            **{f"peak_qps_{lv.lower()}": rec[f"qps_{lv.lower()}"] for lv in LEVELS},
            **{f"gpus_{lv.lower()}": rec[f"gpus_{lv.lower()}"] for lv in LEVELS},
            "binding": rec["binding"], "reserved_gpus": plan.costs["P50"].reserved_gpus,
            "gpu_hours_p50": p50.need_gpu_hours,
            **{f"cost_{lv.lower()}_usd": cost[lv][month].total_cost_usd for lv in LEVELS},
            "on_demand_p50_usd": p50.cost_usd_on_demand, "reserved_p50_usd": p50.cost_usd_reserved,
            "spot_p50_usd": p50.cost_usd_spot, "throughput_source": plan.throughput_source,
        })
    return rows


def plan_months_frame(fleet: FleetPlan, months: list[str]) -> pd.DataFrame:
    """Every pool's rows and a ``__fleet__`` row per month (sums; the fleet's P90 the sum of the pools')."""
    rows = [row for plan in fleet.pools for row in pool_rows(plan, months)]
    frame = pd.DataFrame(rows)
    additive = [c for c in frame.columns if c.startswith(("requests_", "peak_qps_", "gpus_", "cost_", "gpu_hours",
                                                          "on_demand", "reserved", "spot"))]
    total = frame.groupby("month", sort=True)[additive].sum(min_count=1).reset_index()
    total["pool"] = FLEET
    return PlanMonths.validate(pd.concat([frame, total], ignore_index=True))
