"""How earlier plans did: planned against actual per month and pool, and the cost variance split exactly.

For a month that an earlier plan covered and the logs now observe, the *actual* side is
the same sizing and pricing applied to what happened (the caller computes it: the month's
requests, its design peak, the GPUs that traffic needed and their cost); this module
lines the two up and explains the difference.

The cost variance ``C_actual − C_planned`` is split exactly into three parts with
:func:`capplan.drift.stats.shapley_decomposition` over ``C = V · g · π``:

* ``volume``: V, the month's requests;
* ``token_mix``: g, GPU-hours per request — what each request costs in capacity, which
  moves with the token mix (longer prompts, longer answers) and with the sizing
  configuration (utilisation target, headroom) where that changed;
* ``price``: π, the blended USD per GPU-hour — the price book and the commitment mix.

The parts add up to the variance to rounding (tested): with one factor changed, that
factor takes the whole variance.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from capplan.drift.stats import shapley_decomposition

#: The cost-variance parts, in the order the report prints them.
PARTS = ("volume", "token_mix", "price")


class ActualMonths(pa.DataFrameModel):
    """What a month's traffic needed, sized and priced as the plan would have: a row per month × pool."""

    month: Series[str] = pa.Field(str_matches=r"^\d{4}-(0[1-9]|1[0-2])$")
    pool: Series[str]
    requests: Series[float] = pa.Field(ge=0)
    peak_qps: Series[float] = pa.Field(ge=0)
    gpus_needed: Series[int] = pa.Field(ge=0)
    gpu_hours: Series[float] = pa.Field(ge=0)
    cost_usd: Series[float] = pa.Field(ge=0)
    complete: Series[bool]

    class Config:
        coerce = True
        strict = "filter"


class PlanVariance(pa.DataFrameModel):
    """Planned against actual per month and pool; ``variance_* = actual − planned P50``.

    ``planned_cost_usd`` is the plan's P50 cost; ``planned_*_p10`` / ``_p90`` are the plan's band.
    """

    month: Series[str]
    pool: Series[str]
    planned_requests_p10: Series[float] = pa.Field(nullable=True)
    planned_requests_p50: Series[float] = pa.Field(nullable=True)
    planned_requests_p90: Series[float] = pa.Field(nullable=True)
    actual_requests: Series[float]
    variance_requests: Series[float] = pa.Field(nullable=True)
    planned_peak_qps_p10: Series[float] = pa.Field(nullable=True)
    planned_peak_qps_p50: Series[float] = pa.Field(nullable=True)
    planned_peak_qps_p90: Series[float] = pa.Field(nullable=True)
    actual_peak_qps: Series[float]
    variance_peak_qps: Series[float] = pa.Field(nullable=True)
    planned_gpus_p10: Series[int]
    planned_gpus_p50: Series[int]
    planned_gpus_p90: Series[int]
    actual_gpus_needed: Series[int]
    variance_gpus: Series[int]
    planned_cost_usd_p10: Series[float] = pa.Field(nullable=True)
    planned_cost_usd: Series[float] = pa.Field(nullable=True)
    planned_cost_usd_p90: Series[float] = pa.Field(nullable=True)
    actual_cost_usd: Series[float]
    variance_cost_usd: Series[float] = pa.Field(nullable=True)
    variance_volume_usd: Series[float] = pa.Field(nullable=True)
    variance_token_mix_usd: Series[float] = pa.Field(nullable=True)
    variance_price_usd: Series[float] = pa.Field(nullable=True)
    requests_in_band: Series[bool] = pa.Field(nullable=True)
    peak_in_band: Series[bool] = pa.Field(nullable=True)
    gpus_enough_p50: Series[bool]
    gpus_enough_p90: Series[bool]
    complete: Series[bool]
    run_id: Series[str]
    planned_utc: Series[pd.Timestamp] = pa.Field(nullable=True)

    class Config:
        coerce = True


def cost_variance_parts(planned: dict[str, float], actual: dict[str, float]) -> dict[str, float]:
    """Split ``actual_cost − planned_cost`` into :data:`PARTS` (exact Shapley split of ``V · g · π``).

    Parameters
    ----------
    planned, actual : dict
        ``requests`` [requests], ``gpu_hours`` [GPU·h], ``cost_usd`` [USD] of each side.

    Returns
    -------
    dict
        USD per part; NaN for every part when a side has no requests or no GPU-hours
        (the product is not defined then, and the whole variance is reported unsplit).

    Examples
    --------
    >>> parts = cost_variance_parts({"requests": 100, "gpu_hours": 10, "cost_usd": 20},
    ...                             {"requests": 120, "gpu_hours": 12, "cost_usd": 24})
    >>> {k: round(v, 9) for k, v in parts.items()}
    {'volume': 4.0, 'token_mix': 0.0, 'price': 0.0}
    """
    def factors(side: dict[str, float]) -> dict[str, float] | None:
        v, h, c = (float(side[k]) for k in ("requests", "gpu_hours", "cost_usd"))
        if not (v > 0 and h > 0 and np.isfinite(c)):
            return None
        return {"volume": v, "token_mix": h / v, "price": c / h}  # [requests], [GPU·h/request], [USD/(GPU·h)]

    before, after = factors(planned), factors(actual)
    if before is None or after is None:
        return {part: float("nan") for part in PARTS}
    parts = shapley_decomposition(before, after, lambda f: f["volume"] * f["token_mix"] * f["price"])
    return {part: float(parts[part]) for part in PARTS}


def _within(value: float, lo: float, hi: float) -> bool | None:
    if any(pd.isna(x) for x in (value, lo, hi)):
        return None
    return bool(lo <= value <= hi)


def plan_variance(planned: pd.DataFrame, actual: pd.DataFrame) -> pd.DataFrame:
    """Line up earlier plans (:func:`capplan.history.store.latest_plans`) with :class:`ActualMonths`.

    One row per month × pool that both sides have, as :class:`PlanVariance`. A month the logs
    observe only in part has ``complete`` False: its actual requests and cost cover the observed
    hours only, so a reader must not compare them with the whole month's plan (the report
    says so). ``*_in_band``: the actual fell inside the plan's P10–P90; ``gpus_enough_pXX``:
    the GPUs the actual traffic needed were at most the GPUs planned at that level.
    """
    actual = ActualMonths.validate(actual)
    joined = planned.merge(actual, on=["month", "pool"], how="inner")
    rows = []
    for rec in joined.to_dict("records"):
        parts = cost_variance_parts(
            {"requests": rec.get("requests_p50"), "gpu_hours": rec.get("gpu_hours_p50"),
             "cost_usd": rec.get("cost_p50_usd")},
            {"requests": rec["requests"], "gpu_hours": rec["gpu_hours"], "cost_usd": rec["cost_usd"]})
        planned_cost = rec.get("cost_p50_usd")
        rows.append({
            "month": rec["month"], "pool": rec["pool"],
            "planned_requests_p10": rec.get("requests_p10"), "planned_requests_p50": rec.get("requests_p50"),
            "planned_requests_p90": rec.get("requests_p90"), "actual_requests": rec["requests"],
            "variance_requests": rec["requests"] - rec["requests_p50"] if pd.notna(rec.get("requests_p50")) else None,
            "planned_peak_qps_p10": rec.get("peak_qps_p10"), "planned_peak_qps_p50": rec.get("peak_qps_p50"), "planned_peak_qps_p90": rec.get("peak_qps_p90"),
            "actual_peak_qps": rec["peak_qps"],
            "variance_peak_qps": rec["peak_qps"] - rec["peak_qps_p50"] if pd.notna(rec.get("peak_qps_p50")) else None,
            "planned_gpus_p10": int(rec["gpus_p10"]), "planned_gpus_p50": int(rec["gpus_p50"]), "planned_gpus_p90": int(rec["gpus_p90"]),
            "actual_gpus_needed": int(rec["gpus_needed"]),
            "variance_gpus": int(rec["gpus_needed"]) - int(rec["gpus_p50"]),
            "planned_cost_usd_p10": rec.get("cost_p10_usd"), "planned_cost_usd": planned_cost,
            "planned_cost_usd_p90": rec.get("cost_p90_usd"), "actual_cost_usd": rec["cost_usd"],
            "variance_cost_usd": rec["cost_usd"] - planned_cost if pd.notna(planned_cost) else None,
            **{f"variance_{part}_usd": parts[part] for part in PARTS},
            "requests_in_band": _within(rec["requests"], rec.get("requests_p10"), rec.get("requests_p90")),
            "peak_in_band": _within(rec["peak_qps"], rec.get("peak_qps_p10"), rec.get("peak_qps_p90")),
            "gpus_enough_p50": int(rec["gpus_needed"]) <= int(rec["gpus_p50"]),
            "gpus_enough_p90": int(rec["gpus_needed"]) <= int(rec["gpus_p90"]),
            "complete": bool(rec["complete"]), "run_id": rec["run_id"], "planned_utc": rec.get("created_utc"),
        })
    columns = list(PlanVariance.to_schema().columns)
    frame = pd.DataFrame(rows, columns=columns)
    return PlanVariance.validate(frame) if not frame.empty else frame
