"""What a month's traffic needed: the plan's own sizing and pricing applied to what happened.

For one pool and one month, read as of the month's end (:func:`capplan.history.as_of.connect_as_of`,
so the month's own request mix is what is measured): the pool's hourly traffic in the month,
the request mix measured over ``[report].measured_window_days`` ending with the month, and the
fleet each hour needed — ``fleet_for(burst_ratio × hour's mean QPS)`` on the GPU type and tensor
parallelism that were planned, with the pool's headroom — exactly the sizing the plan applies
to a forecast hour. The month's cost at that need keeps the plan's reserved GPUs (a commitment
is bought before the month) and buys the rest on demand or spot, as the plan would have.

Hours the logs do not observe (an hour no model logged in: a logging gap, or the month's end
not yet reached) count neither as need nor as idle; the month is ``complete`` only when every
hour is observed. In an observed hour, a pool whose models logged nothing had no traffic.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from capplan.config import CapplanConfig
from capplan.plan.fleet import fleet_for
from capplan.plan.inputs import measure_inputs
from capplan.plan.pool_plan import pool_share
from capplan.plan.pools import Pool, pool_fleet_spec, pool_traffic, read_model_traffic
from capplan.plan.throughput import load_tests_for_plan
from capplan.sizing.cost.plan import blended_plan
from capplan.sizing.cost.prices import load_price_book
from capplan.sizing.fleet import monotone_step_map


@dataclass(frozen=True)
class ActualMonth:
    """One pool's month as it happened, sized and priced as the plan sizes and prices.

    Attributes
    ----------
    month, pool : str
    hours_utc : numpy.ndarray
        Every hour of the month (``datetime64[h]``).
    need_gpus : numpy.ndarray
        GPUs each hour needed, NaN where the hour was not observed. [GPUs]
    requests : float
        Requests counted in the observed hours. [requests]
    peak_qps : float
        The month's design peak: burst ratio × the busiest hour's mean QPS. [requests/s]
    gpus_needed : int
        The fleet for that peak, with headroom. [GPUs]
    gpu_hours : float
        Σ hourly need over observed hours. [GPU·h]
    cost_usd : float
        That need priced with the planned reserved GPUs. [USD]
    complete : bool
        Every hour of the month observed.
    """

    month: str
    pool: str
    hours_utc: np.ndarray
    need_gpus: np.ndarray
    requests: float
    peak_qps: float
    gpus_needed: int
    gpu_hours: float
    cost_usd: float
    complete: bool

    def row(self) -> dict:
        """The :class:`capplan.history.variance.ActualMonths` row."""
        return {"month": self.month, "pool": self.pool, "requests": self.requests, "peak_qps": self.peak_qps,
                "gpus_needed": self.gpus_needed, "gpu_hours": self.gpu_hours, "cost_usd": self.cost_usd,
                "complete": self.complete}


def observed_hours(by_model: pd.DataFrame, month: str) -> pd.Series:
    """Every hour of ``month`` (``YYYY-MM``) → whether the logs observed it, from
    :func:`~capplan.plan.pools.read_model_traffic`'s frame.

    A logging gap is fleet-wide: an hour is observed when any model logged in it. In an observed hour
    a pool without rows had no traffic (a sparse model's quiet hour is a zero, not missing data).
    """
    period = pd.Period(month, freq="M")
    hours = pd.date_range(period.start_time, period.end_time.floor("h"), freq="h")
    logged = by_model.loc[~by_model["is_gap"].astype(bool) & by_model["avg_qps"].notna(), "hour_utc"]
    return pd.Series(hours.isin(pd.DatetimeIndex(logged.unique())), index=hours)


def actual_month(con: duckdb.DuckDBPyConnection, cfg: CapplanConfig, pool: Pool, month: str, *, gpu: str,
                 tensor_parallel: int | None, reserved_gpus: int,
                 by_model: pd.DataFrame | None = None) -> ActualMonth | None:
    """:class:`ActualMonth` of ``pool`` in ``month`` (``YYYY-MM``), or ``None`` when the logs hold none of it.

    ``con`` shows the database as of the month's end (or earlier, for a month still running);
    ``by_model`` is its :func:`~capplan.plan.pools.read_model_traffic`, read once for all pools when given.
    """
    by_model = read_model_traffic(con, cfg) if by_model is None else by_model
    if not by_model["model"].isin(pool.models).any():
        return None
    hourly, _daily = pool_traffic(by_model, pool)
    observed = observed_hours(by_model, month)
    if not observed.any():
        return None
    hours = observed.index
    part = hourly.set_index("hour_utc").reindex(hours)
    part["avg_qps"] = part["avg_qps"].where(part["avg_qps"].notna() & ~part["is_gap"].fillna(True).astype(bool),
                                            0.0)
    measured = measure_inputs(con, hourly, cfg, models=list(pool.models), pool=pool)
    spec = pool_fleet_spec(cfg, pool, gpu, tensor_parallel, measured, load_tests_for_plan(con, [pool.name]))
    qps = measured.burst_ratio * part["avg_qps"].where(observed).to_numpy(float)  # [requests/s]
    need = np.full(len(hours), np.nan)
    need[observed.to_numpy()] = monotone_step_map(lambda q: fleet_for(float(q), spec, measured).total_gpus,
                                                  qps[observed.to_numpy()])
    peak = float(np.nanmax(qps))
    prices = load_price_book(cfg.cost.price_book).gpu(gpu).option_prices(cfg.cost.reserved_term)
    cost = blended_plan(hours.to_numpy().astype("datetime64[h]"), np.nan_to_num(need, nan=0.0), gpu_type=gpu,
                        prices=prices, interruptible_share=pool_share(cfg, pool, measured),
                        reserved_gpus=int(reserved_gpus))
    return ActualMonth(
        month=month, pool=pool.name, hours_utc=hours.to_numpy().astype("datetime64[h]"), need_gpus=need,
        requests=float(np.nansum(part["requests"].where(observed).to_numpy(float))),  # counted, not rate × 3600
        peak_qps=peak, gpus_needed=int(fleet_for(peak, spec, measured).total_gpus),
        gpu_hours=float(np.nansum(need)), cost_usd=float(cost.total().total_cost_usd),
        complete=bool(observed.all()))
