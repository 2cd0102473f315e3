"""The report's "How earlier plans did": every earlier month a stored plan covered, against what happened.

For the ``lookback_months`` months before the plan's first month, :func:`earlier_plans_variance`
takes each pool's latest plan made before the month began (:func:`capplan.history.store.latest_plans`),
sizes and prices the month's actual traffic the same way on the planned GPU type, tensor
parallelism and reserved GPUs (:func:`capplan.history.actuals.actual_month`, read as of the
month's end), and lines the two up (:func:`capplan.history.variance.plan_variance`), the fleet's
row being the sum of its pools'. A pool that no longer exists is listed in the notes, not dropped
silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from capplan.config import CapplanConfig
from capplan.db import connect
from capplan.history.actuals import actual_month
from capplan.history.as_of import connect_as_of
from capplan.history.store import FLEET, latest_plans
from capplan.history.variance import plan_variance
from capplan.plan.pools import Pool, read_model_traffic


@dataclass(frozen=True)
class EarlierPlans:
    """The variance table (:class:`capplan.history.variance.PlanVariance`, may be empty) and what could not be compared."""

    variance: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def past_months(first_month: str, lookback_months: int) -> list[str]:
    """The ``lookback_months`` months before ``first_month`` (``YYYY-MM``), oldest first."""
    first = pd.Period(first_month, freq="M")
    return [str(first - k) for k in range(lookback_months, 0, -1)]


def earlier_plans_variance(path: str | Path, cfg: CapplanConfig, pools: list[Pool], first_month: str,
                           lookback_months: int = 6) -> EarlierPlans:
    """Planned against actual for the months before ``first_month`` that earlier plans covered."""
    months = past_months(first_month, lookback_months)
    with connect(path, read_only=True) as con:
        planned = latest_plans(con, months)
    if planned.empty:
        return EarlierPlans(pd.DataFrame(), [])
    by_name = {p.name: p for p in pools}
    notes, actual = [], []
    pool_rows = planned[planned["pool"] != FLEET]
    for month, rows in pool_rows.groupby("month", sort=True):
        end = (pd.Period(month, freq="M") + 1).start_time
        with connect_as_of(path, end) as con:
            by_model = read_model_traffic(con, cfg)  # once per month, for every pool
            for rec in rows.to_dict("records"):
                pool = by_name.get(rec["pool"])
                if pool is None:
                    notes.append(f"{month}: pool {rec['pool']!r} of the earlier plan is not in this config; not compared")
                    continue
                tp = None if pd.isna(rec.get("tensor_parallel")) else int(rec["tensor_parallel"])
                got = actual_month(con, cfg, pool, month, gpu=rec["gpu"], tensor_parallel=tp,
                                   reserved_gpus=int(rec["reserved_gpus"] or 0), by_model=by_model)
                if got is None:
                    notes.append(f"{month}: pool {rec['pool']!r}: no traffic in the logs yet")
                    continue
                actual.append(got.row())
    if not actual:
        return EarlierPlans(pd.DataFrame(), notes)
    frame = pd.DataFrame(actual)
    fleet = frame.groupby("month", sort=True).agg(
        requests=("requests", "sum"), peak_qps=("peak_qps", "sum"), gpus_needed=("gpus_needed", "sum"),
        gpu_hours=("gpu_hours", "sum"), cost_usd=("cost_usd", "sum"), complete=("complete", "all")).reset_index()
    fleet["pool"] = FLEET
    return EarlierPlans(plan_variance(planned, pd.concat([frame, fleet], ignore_index=True)), notes)
