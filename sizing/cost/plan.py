"""A blended monthly cost plan: reserved + on-demand + spot, with ranges.

Composes :mod:`sizing.cost`: the hourly GPU need is split into an
interactive part (reserved floor R*, on-demand above it) and an
interruptible part (spot, with its interruption overhead, when that is
cheaper than on-demand). The result is a :class:`CostPlan` whose ``rows()``
are the monthly finance table. Numbers in, numbers out; numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing.cost.commitment import Commitment, validate_need_gpus, optimal_commitment


OPTIONS: tuple[str, ...] = ("reserved", "on_demand", "spot")


@dataclass(frozen=True)
class OptionPrices:
    """Hourly rates of the three options for one GPU type.

    Attributes
    ----------
    on_demand_usd_per_gpu_hour : float
        On-demand rate. [USD/(GPU·h)]
    reserved_usd_per_gpu_hour : float
        Effective reserved rate (upfront amortised). [USD/(GPU·h)]
    spot_usd_per_gpu_hour : float or None
        Spot rate; ``None`` when spot is not offered or not wanted. [USD/(GPU·h)]
    spot_overhead_factor : float
        Spot GPU-hours bought per useful GPU-hour
        (:func:`sizing.cost.spot_overhead_factor`). [ratio, >= 1]
    """

    on_demand_usd_per_gpu_hour: float
    reserved_usd_per_gpu_hour: float
    spot_usd_per_gpu_hour: float | None = None
    spot_overhead_factor: float = 1.0

    def __post_init__(self) -> None:
        if self.on_demand_usd_per_gpu_hour <= 0 or self.reserved_usd_per_gpu_hour <= 0:
            raise ValueError("on-demand and reserved prices must be > 0 USD/GPU-hour")
        if self.spot_usd_per_gpu_hour is not None and self.spot_usd_per_gpu_hour <= 0:
            raise ValueError("spot price must be > 0 USD/GPU-hour (or None for no spot)")
        if self.spot_overhead_factor < 1:
            raise ValueError(f"spot_overhead_factor must be >= 1, got {self.spot_overhead_factor!r}")

    @property
    def spot_effective_usd_per_gpu_hour(self) -> float:
        """Spot rate per *useful* GPU-hour, ``p_spot · k``; infinite without spot. [USD/(GPU·h)]"""
        if self.spot_usd_per_gpu_hour is None:
            return math.inf
        return self.spot_usd_per_gpu_hour * self.spot_overhead_factor


@dataclass(frozen=True)
class MonthCost:
    """One month of a plan: GPU-hours and cost per option (a finance-table row).

    Column names follow the budget table of :mod:`reports.document`:
    ``gpu_hours_<option>`` and ``cost_usd_<option>`` for each of
    :data:`OPTIONS`, and ``total_cost_usd`` their sum. GPU-hours reconcile:
    ``reserved_used + on_demand + spot_work = need``; billed hours add the idle
    reserved hours and the spot interruption overhead. Per-unit costs are
    ``None`` when requests or tokens were not given (or were zero).
    """

    month: str                       # 'YYYY-MM' (UTC) or 'total'
    hours: int                       # hours of the horizon in this month [h]
    need_gpu_hours: float            # useful work [GPU·h]
    gpu_hours_reserved: float        # billed: R × hours [GPU·h]
    reserved_used_gpu_hours: float   # of which doing work [GPU·h]
    gpu_hours_on_demand: float       # billed [GPU·h]
    gpu_hours_spot: float            # billed, incl. interruption overhead [GPU·h]
    spot_work_gpu_hours: float       # useful work done on spot [GPU·h]
    cost_usd_reserved: float
    cost_usd_on_demand: float
    cost_usd_spot: float
    total_cost_usd: float
    all_on_demand_cost_usd: float    # same need, everything on-demand
    saving_usd: float                # all_on_demand - total
    requests: float | None
    output_tokens: float | None
    usd_per_1k_requests: float | None
    usd_per_million_output_tokens: float | None


def _per_unit(cost_usd: float, count: float | None, per: float) -> float | None:
    return None if count is None or count <= 0 else cost_usd / count * per


def _month_cost(month: str, hours: int, sums: Mapping[str, float], prices: OptionPrices,
                requests: float | None, output_tokens: float | None) -> MonthCost:
    reserved_cost = sums["gpu_hours_reserved"] * prices.reserved_usd_per_gpu_hour
    on_demand_cost = sums["gpu_hours_on_demand"] * prices.on_demand_usd_per_gpu_hour
    spot_cost = sums["gpu_hours_spot"] * (prices.spot_usd_per_gpu_hour or 0.0)
    total = reserved_cost + on_demand_cost + spot_cost
    all_on_demand = sums["need_gpu_hours"] * prices.on_demand_usd_per_gpu_hour
    return MonthCost(
        month=month, hours=hours, **sums,
        cost_usd_reserved=reserved_cost, cost_usd_on_demand=on_demand_cost, cost_usd_spot=spot_cost,
        total_cost_usd=total, all_on_demand_cost_usd=all_on_demand, saving_usd=all_on_demand - total,
        requests=requests, output_tokens=output_tokens,
        usd_per_1k_requests=_per_unit(total, requests, 1e3),
        usd_per_million_output_tokens=_per_unit(total, output_tokens, 1e6))


@dataclass(frozen=True)
class CostPlan:
    """A blended plan for one GPU type at one demand level.

    Attributes
    ----------
    gpu_type : str
        GPU catalogue key, e.g. ``'H100-SXM-80GB'``.
    level : str
        Demand level the plan is computed at, e.g. ``'P50'``.
    prices : OptionPrices
        Rates used.
    reserved_gpus : int
        Reserved count used (R* unless fixed by the caller). [GPUs]
    commitment : Commitment
        The optimiser's result on the interactive need: curves for charts.
    batch_on_spot : bool
        Whether interruptible work went to spot (cheaper than on-demand after
        overhead) or to on-demand.
    months : tuple of MonthCost
        One row per calendar month (UTC) of the horizon.
    """

    gpu_type: str
    level: str
    prices: OptionPrices
    reserved_gpus: int
    commitment: Commitment
    batch_on_spot: bool
    months: tuple[MonthCost, ...]

    def total(self) -> MonthCost:
        """The whole horizon as one row (``month='total'``)."""
        summed = ("need_gpu_hours", "gpu_hours_reserved", "reserved_used_gpu_hours",
                  "gpu_hours_on_demand", "gpu_hours_spot", "spot_work_gpu_hours")
        sums = {name: sum(getattr(m, name) for m in self.months) for name in summed}
        requests = _sum_or_none(m.requests for m in self.months)
        tokens = _sum_or_none(m.output_tokens for m in self.months)
        return _month_cost("total", sum(m.hours for m in self.months), sums, self.prices, requests, tokens)

    def rows(self, *, with_total: bool = True) -> list[dict[str, object]]:
        """Monthly finance rows (plain dicts, CSV-ready), the horizon total last."""
        head = {"gpu_type": self.gpu_type, "level": self.level, "reserved_gpus": self.reserved_gpus}
        months = (*self.months, self.total()) if with_total else self.months
        return [head | asdict(m) for m in months]

    def cost_by_option(self) -> list[dict[str, object]]:
        """Long rows ``month, option, gpu_hours, cost_usd`` for charts. [GPU·h], [USD/month]"""
        return [{"month": m.month, "option": o, "gpu_hours": getattr(m, f"gpu_hours_{o}"),
                 "cost_usd": getattr(m, f"cost_usd_{o}")} for m in self.months for o in OPTIONS]


ROW_COLUMNS: tuple[str, ...] = ("gpu_type", "level", "reserved_gpus") + tuple(f.name for f in fields(MonthCost))


def _sum_or_none(values) -> float | None:
    values = list(values)
    return None if any(v is None for v in values) else float(sum(values))


def _months_utc(ts_utc: ArrayLike, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Month labels and each hour's month index, after checking the hourly timestamps."""
    ts = np.asarray(ts_utc, dtype="datetime64[s]")
    if ts.shape != (n,):
        raise ValueError(f"ts_utc has shape {ts.shape}, need_gpus has {n} hours: they must match")
    steps = np.diff(ts).astype(np.int64)
    bad = np.flatnonzero(steps != 3600)
    if bad.size:
        raise ValueError(
            f"ts_utc must be consecutive hours; ts_utc[{bad[0] + 1}] = {ts[bad[0] + 1]} "
            f"follows {ts[bad[0]]}")
    months, index = np.unique(ts.astype("datetime64[M]"), return_inverse=True)
    return months.astype(str), index


def blended_plan(
    ts_utc: ArrayLike,
    need_gpus: ArrayLike,
    *,
    gpu_type: str,
    prices: OptionPrices,
    interruptible_share: ArrayLike = 0.0,
    requests: ArrayLike | None = None,
    output_tokens: ArrayLike | None = None,
    reserved_gpus: int | None = None,
    level: str = "P50",
) -> CostPlan:
    """Cheapest mix of reserved, on-demand and spot for an hourly need, by month.

    .. math::
        b_t = s_t n_t,\\quad i_t = n_t - b_t,\\quad
        C = R p_r H + p_{od} \\sum_t \\max(0, i_t - R) + \\min(p_{spot} k, p_{od}) \\sum_t b_t

    Parameters
    ----------
    ts_utc : array_like of datetime64
        Start of each hour, consecutive, UTC.
    need_gpus : array_like
        GPUs needed in each hour. [GPUs]
    gpu_type : str
        GPU catalogue key, carried into the rows.
    prices : OptionPrices
        Rates of the three options.
    interruptible_share : float or array_like, default 0.0
        Share of each hour's need that tolerates interruption (batch/offline
        tier), scalar or one value per hour. [fraction, [0, 1]]
    requests, output_tokens : array_like, optional
        Requests and generated tokens in each hour, for the per-unit costs.
        [requests], [tokens]
    reserved_gpus : int, optional
        Fix R instead of optimising it (what-if, or one commitment priced at
        several demand levels). [GPUs]
    level : str, default 'P50'
        Label of the demand level.

    Returns
    -------
    CostPlan

    Raises
    ------
    ValueError
        On mismatched lengths, non-consecutive hours, negative or non-finite
        need, a share outside [0, 1] or a negative ``reserved_gpus``.

    Notes
    -----
    - Spot is only for the interruptible share, and never for the reserved
      floor: R* is optimised on the interactive need ``i_t`` alone.
    - Interruptible work goes to spot only if ``p_spot · k < p_od``;
      otherwise it runs on-demand. It does not fill idle reserved GPUs
      (conservative: batch work could, which would lower cost further).
    - GPU-hours are treated as divisible (per-second billing; batch work
      packs onto whole GPUs across the hour).
    - With R optimised, the horizon total is never dearer than all
      on-demand; a single month can be (a low month still pays for R).
    - GPU need is split between tiers in proportion to ``s_t``: an
      interruptible request is assumed to cost as much GPU time as others.

    Examples
    --------
    >>> import numpy as np
    >>> ts = np.arange("2026-01-01T00", "2026-01-01T03", dtype="datetime64[h]")
    >>> plan = blended_plan(ts, [1, 2, 3], gpu_type="H100-SXM-80GB",
    ...                     prices=OptionPrices(2.0, 1.0))
    >>> plan.reserved_gpus, plan.total().total_cost_usd, plan.total().saving_usd
    (2, 8.0, 4.0)
    """
    need = validate_need_gpus(need_gpus)
    months, month_index = _months_utc(ts_utc, need.size)
    share = np.broadcast_to(np.asarray(interruptible_share, dtype=float), need.shape)
    if np.any(~np.isfinite(share) | (share < 0) | (share > 1)):
        raise ValueError("interruptible_share must lie in [0, 1]")
    batch = need * share
    interactive = need - batch
    commitment = optimal_commitment(
        interactive, reserved_usd_per_gpu_hour=prices.reserved_usd_per_gpu_hour,
        on_demand_usd_per_gpu_hour=prices.on_demand_usd_per_gpu_hour)
    if reserved_gpus is not None and reserved_gpus < 0:
        raise ValueError(f"reserved_gpus must be >= 0, got {reserved_gpus!r}")
    r = commitment.reserved_gpus if reserved_gpus is None else int(reserved_gpus)
    on_spot = prices.spot_effective_usd_per_gpu_hour < prices.on_demand_usd_per_gpu_hour
    reserved_used = np.minimum(interactive, r)
    hourly = {
        "need_gpu_hours": need,
        "gpu_hours_reserved": np.full(need.shape, float(r)),
        "reserved_used_gpu_hours": reserved_used,
        "gpu_hours_on_demand": interactive - reserved_used + (0.0 if on_spot else batch),
        "gpu_hours_spot": batch * prices.spot_overhead_factor if on_spot else np.zeros_like(batch),
        "spot_work_gpu_hours": batch if on_spot else np.zeros_like(batch),
    }
    n_months = months.size
    monthly = {k: np.bincount(month_index, weights=v, minlength=n_months) for k, v in hourly.items()}
    hours = np.bincount(month_index, minlength=n_months)
    req = _monthly_optional(requests, month_index, n_months, need.size, "requests")
    tok = _monthly_optional(output_tokens, month_index, n_months, need.size, "output_tokens")
    rows = tuple(
        _month_cost(str(months[j]), int(hours[j]), {k: float(v[j]) for k, v in monthly.items()}, prices,
                    None if req is None else float(req[j]), None if tok is None else float(tok[j]))
        for j in range(n_months))
    return CostPlan(gpu_type=gpu_type, level=level, prices=prices, reserved_gpus=r,
                    commitment=commitment, batch_on_spot=bool(on_spot), months=rows)


def _monthly_optional(values: ArrayLike | None, month_index: np.ndarray, n_months: int, n: int,
                      name: str) -> np.ndarray | None:
    if values is None:
        return None
    arr = np.asarray(values, dtype=float)
    if arr.shape != (n,) or np.any(~np.isfinite(arr) | (arr < 0)):
        raise ValueError(f"{name} must be {n} finite values >= 0, one per hour")
    return np.bincount(month_index, weights=arr, minlength=n_months)


def plan_range(
    ts_utc: ArrayLike,
    need_by_level: Mapping[str, ArrayLike],
    *,
    commit_level: str | None = "P50",
    requests_by_level: Mapping[str, ArrayLike] | None = None,
    output_tokens_by_level: Mapping[str, ArrayLike] | None = None,
    **plan_kwargs,
) -> dict[str, CostPlan]:
    """Blended plans at several demand levels (P10, P50, P90) for a budget range.

    Parameters
    ----------
    ts_utc : array_like of datetime64
        Start of each hour, consecutive, UTC.
    need_by_level : mapping of str to array_like
        Hourly GPU need at each forecast level, e.g. ``{'P10': …, 'P50': …,
        'P90': …}``. [GPUs]
    commit_level : str or None, default 'P50'
        Level whose optimal R is committed to and then priced at every level
        (one commitment, uncertain demand). ``None`` (or ``''``, as a TOML
        config can give it) optimises R per level.
    requests_by_level, output_tokens_by_level : mapping of str to array_like, optional
        Hourly requests and generated tokens at each level (the demand that
        the level's need serves), for the per-unit costs of that level.
        [requests], [tokens]
    **plan_kwargs
        Passed to :func:`blended_plan` (``gpu_type``, ``prices``,
        ``interruptible_share``, ``requests``, ``output_tokens``).

    Returns
    -------
    dict of str to CostPlan
        One plan per level, in the mapping's order.

    Raises
    ------
    ValueError
        If ``commit_level`` is not one of the levels.

    Notes
    -----
    Committing at P50 and pricing P90 shows what a high month costs when the
    extra need is bought on-demand; at P10 the idle reserved hours show.

    Examples
    --------
    >>> import numpy as np
    >>> ts = np.arange("2026-01-01T00", "2026-01-01T02", dtype="datetime64[h]")
    >>> plans = plan_range(ts, {"P10": [1, 1], "P50": [2, 2], "P90": [3, 3]},
    ...                    gpu_type="H100-SXM-80GB", prices=OptionPrices(2.0, 1.0))
    >>> [round(p.total().total_cost_usd, 1) for p in plans.values()]
    [4.0, 4.0, 8.0]
    """
    commit_level = commit_level or None
    if commit_level is not None and commit_level not in need_by_level:
        raise ValueError(f"commit_level {commit_level!r} is not one of the levels {list(need_by_level)}")
    def volumes(level: str) -> dict[str, ArrayLike]:
        out = {}
        if requests_by_level is not None:
            out["requests"] = requests_by_level[level]
        if output_tokens_by_level is not None:
            out["output_tokens"] = output_tokens_by_level[level]
        return out

    committed = None
    if commit_level is not None:
        committed = blended_plan(ts_utc, need_by_level[commit_level], level=commit_level,
                                 **volumes(commit_level), **plan_kwargs).reserved_gpus
    return {level: blended_plan(ts_utc, need, level=level, reserved_gpus=committed, **volumes(level), **plan_kwargs)
            for level, need in need_by_level.items()}


__all__ = ["OPTIONS", "ROW_COLUMNS", "CostPlan", "MonthCost", "OptionPrices", "blended_plan", "plan_range"]
