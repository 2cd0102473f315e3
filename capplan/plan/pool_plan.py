"""The plan of one pool (its GPU choice, sizing and cost) and of the fleet of pools (totals, shared commitment).

Per pool: with ``gpu = "auto"`` every (GPU, TP) option of :func:`capplan.plan.pools.gpu_options`
is sized at the first month's P50 design peak and priced over the horizon at
``[cost].commit_level`` (:func:`capplan.sizing.choice.choose_gpu`); the chosen one is then sized
per month (:func:`capplan.plan.fleet.size_months`) and costed per hour
(:func:`capplan.plan.costing.cost_by_level`) like a fixed pool.

Fleet: monthly GPUs and cost are sums over pools. **The fleet's P90 is the sum of the pools'
P90s**, an upper band: each pool's P90 is already the max over its month's hourly P90s, and the
pools' peaks and forecast errors need not coincide; the sum never understates the fleet. The
budget prices every pool with its own commitment (what committing per pool costs); reserved
GPUs of one type shared across its pools (:func:`capplan.sizing.cost.commitment.shared_commitment`,
on the summed hourly P50 interactive need) are the recommendation, with their saving shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from capplan.config import CapplanConfig
from capplan.plan.costing import cost_by_level, hourly_volumes
from capplan.plan.fleet import SizedFleet, fleet_for, hourly_need_gpus, monthly_peak_qps, size_months
from capplan.plan.inputs import MeasuredInputs, interruptible_share
from capplan.plan.pools import Pool, gpu_options, pool_fleet_spec, pool_spec_and_throughput
from capplan.plan.throughput import ThroughputEstimate
from capplan.sizing.choice import GpuChoice, SizedOption, choose_gpu
from capplan.sizing.cost.commitment import SharedCommitment, shared_commitment
from capplan.sizing.cost.plan import CostPlan
from capplan.sizing.cost.prices import load_price_book
from capplan.sizing.fleet import FleetSpec, operating_latency_s


@dataclass(frozen=True)
class PoolPlan:
    """One pool's plan.

    Attributes
    ----------
    pool : Pool
    gpu : str
        The GPU type it runs on (chosen when the pool's is ``auto``).
    spec : FleetSpec
        Its sizing record (:func:`capplan.plan.pools.pool_fleet_spec`).
    measured : MeasuredInputs
        Its own request mix, latency, KV tokens and burst ratio.
    forecast : pandas.DataFrame
        Its hourly mean-QPS forecast with intervals. [requests/s]
    sized : SizedFleet
        Its fleet per month and first month's P50 fleet.
    costs : dict of str to CostPlan
        P10/P50/P90 plans with one commitment.
    hours_utc : numpy.ndarray
        The planned hours (``datetime64[h]``).
    need : dict of str to numpy.ndarray
        Hourly GPUs at P10/P50/P90. [GPUs]
    interruptible_share : float
        Share of its work that may run on spot. [fraction]
    choice : GpuChoice or None
        The candidates of an automatic choice.
    throughput : ThroughputEstimate or None
        Its per-GPU throughput on its GPU and TP, its source and what it rests on.
    """

    pool: Pool
    gpu: str
    spec: FleetSpec
    measured: MeasuredInputs
    forecast: pd.DataFrame
    sized: SizedFleet
    costs: dict[str, CostPlan]
    hours_utc: np.ndarray
    need: dict[str, np.ndarray]
    interruptible_share: float
    choice: GpuChoice | None = None
    throughput: ThroughputEstimate | None = None

    @property
    def name(self) -> str:
        return self.pool.name

    @property
    def throughput_source(self) -> str:
        """Where its per-GPU throughput came from: measured, calibrated, modelled or assumed (``spec``'s)."""
        return self.spec.throughput_source


def pool_share(cfg: CapplanConfig, pool: Pool, measured: MeasuredInputs) -> float:
    """The pool's spot share: its own setting, else measured, else ``[cost].interruptible_share``. [fraction]"""
    return pool.interruptible_share if pool.interruptible_share is not None else interruptible_share(cfg.cost,
                                                                                                       measured)


def _cost(cfg: CapplanConfig, pool: Pool, spec: FleetSpec, gpu: str, forecast: pd.DataFrame, months: list[str],
          measured: MeasuredInputs) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, CostPlan]]:
    hours_utc, need = hourly_need_gpus(forecast, months, spec, measured)
    volumes = hourly_volumes(forecast, months, measured)
    costs = cost_by_level(hours_utc, need, cfg, measured, volumes, gpu=gpu,
                          share=pool_share(cfg, pool, measured))
    return hours_utc, need, costs


def choose_pool_gpu(cfg: CapplanConfig, pool: Pool, forecast: pd.DataFrame, months: list[str],
                    measured: MeasuredInputs, peaks: pd.DataFrame | None = None,
                    load_tests: pd.DataFrame | None = None) -> GpuChoice:
    """Brute force over :func:`~capplan.plan.pools.gpu_options`: size each at the first month's P50 peak,
    price each over the horizon at ``[cost].commit_level`` (mean cost per month), keep the cheapest
    that meets the pool's latency target. Each candidate has its own per-GPU throughput
    (:func:`~capplan.plan.pools.pool_fleet_spec`: measured, calibrated, modelled or assumed on that GPU and TP)."""
    first = monthly_peak_qps(forecast, months[:1], measured.burst_ratio) if peaks is None else peaks.iloc[:1]
    first_peak = float(first["qps_p50"].iloc[0])
    level = cfg.cost.commit_level or "P50"
    specs: dict[tuple[str, int], FleetSpec] = {}

    def size(gpu: str, tp: int | None) -> SizedOption | None:
        try:
            spec = pool_fleet_spec(cfg, pool, gpu, tp, measured, load_tests)
            fleet = fleet_for(first_peak, spec, measured)
        except ValueError:  # the model does not fit this GPU at this degree
            return None
        specs[(gpu, fleet.tensor_parallel)] = spec
        return SizedOption(gpus=int(fleet.total_gpus), tensor_parallel=int(fleet.tensor_parallel),
                           binding=fleet.binding_constraint, latency_s=operating_latency_s(fleet))

    def price(gpu: str, option: SizedOption) -> float:
        spec = specs[(gpu, option.tensor_parallel)]
        _, _, costs = _cost(cfg, pool, spec, gpu, forecast, months, measured)
        return costs[level].total().total_cost_usd / len(months)

    return choose_gpu(gpu_options(cfg, pool), size, price, latency_target_s=pool.latency_target_s)


def plan_pool(cfg: CapplanConfig, pool: Pool, forecast: pd.DataFrame, months: list[str],
              measured: MeasuredInputs, peaks: pd.DataFrame | None = None,
              load_tests: pd.DataFrame | None = None) -> PoolPlan:
    """Size and cost one pool on its GPU (chosen first when ``auto``).

    ``peaks`` is the history policy's design peak per month (:func:`capplan.plan.demand.plan_demand`),
    the frame of :func:`capplan.plan.fleet.monthly_peak_qps`; ``None`` derives it from ``forecast``.
    ``load_tests`` are the stored load-test runs (:func:`capplan.plan.throughput.load_tests_for_plan`):
    a clean one of the pool's GPU and TP makes its throughput measured (see :func:`~capplan.plan.pools.pool_fleet_spec`).
    """
    choice = None
    gpu, tp = pool.gpu, None
    if pool.is_auto:
        choice = choose_pool_gpu(cfg, pool, forecast, months, measured, peaks, load_tests)
        gpu, tp = choice.chosen.gpu, choice.chosen.tensor_parallel
    spec, estimate = pool_spec_and_throughput(cfg, pool, gpu, tp, measured, load_tests)
    sized = size_months(forecast, months, spec, measured, peaks)
    hours_utc, need, costs = _cost(cfg, pool, spec, gpu, forecast, months, measured)
    return PoolPlan(pool=pool, gpu=gpu, spec=spec, measured=measured, forecast=forecast, sized=sized, costs=costs,
                    hours_utc=hours_utc, need=need, interruptible_share=pool_share(cfg, pool, measured),
                    choice=choice, throughput=estimate)


@dataclass(frozen=True)
class FleetPlan:
    """The fleet of pools.

    Attributes
    ----------
    pools : tuple of PoolPlan
    months : pandas.DataFrame
        Per month: ``gpus_p10/p50/p90`` (sums over pools; P90 an upper band) [GPUs] and
        ``cost_usd_p10/p50/p90`` (sums) [USD/month].
    commitments : dict of str to SharedCommitment
        Per GPU type: reserved GPUs shared by its pools against per-pool commitment.
    """

    pools: tuple[PoolPlan, ...]
    months: pd.DataFrame
    commitments: dict[str, SharedCommitment]

    def commitment_table(self) -> pd.DataFrame:
        """Per GPU type: pools, shared R*, Σ per-pool R*, horizon cost of both and the saving. [GPUs], [USD]"""
        rows = []
        for gpu, c in self.commitments.items():
            rows.append({"gpu_type": gpu, "pools": ", ".join(c.per_pool_reserved_gpus),
                         "reserved_gpus_shared": c.reserved_gpus,
                         "reserved_gpus_per_pool": int(sum(c.per_pool_reserved_gpus.values())),
                         "cost_usd_shared": c.cost_usd, "cost_usd_per_pool": c.per_pool_cost_usd,
                         "saving_usd": round(c.saving_usd, 2)})  # cents: float noise of equal costs shows as 0
        return pd.DataFrame(rows, columns=["gpu_type", "pools", "reserved_gpus_shared", "reserved_gpus_per_pool",
                                           "cost_usd_shared", "cost_usd_per_pool", "saving_usd"])


def interactive_need(plan: PoolPlan, level: str) -> pd.Series:
    """The hourly need a reservation may cover: all of it, less the spot share when its work goes to spot. [GPUs]"""
    cost = plan.costs[level]
    share = plan.interruptible_share if cost.batch_on_spot else 0.0
    return pd.Series(plan.need[level] * (1.0 - share), index=pd.DatetimeIndex(plan.hours_utc))


def fleet_plan(plans: list[PoolPlan], cfg: CapplanConfig) -> FleetPlan:
    """Fleet totals per month and the commitment shared by the pools of each GPU type."""
    frames = []
    for p in plans:
        cost = {lv: {m.month: m.total_cost_usd for m in c.months} for lv, c in p.costs.items()}
        f = p.sized.months
        frames.append(pd.DataFrame({"month": f["month"], **{f"gpus_{lv}": f[f"gpus_{lv}"] for lv in ("p10", "p50", "p90")},
                                    **{f"cost_usd_{lv.lower()}": f["month"].map(cost[lv]) for lv in p.costs}}))
    months = pd.concat(frames).groupby("month", sort=True).sum().reset_index()
    level = cfg.cost.commit_level or "P50"
    book = load_price_book(cfg.cost.price_book)
    commitments = {}
    for gpu in dict.fromkeys(p.gpu for p in plans):
        of_type = [p for p in plans if p.gpu == gpu]
        needs = pd.DataFrame({p.name: interactive_need(p, level) for p in of_type}).fillna(0.0)
        prices = book.gpu(gpu).option_prices(cfg.cost.reserved_term)
        commitments[gpu] = shared_commitment({c: needs[c].to_numpy() for c in needs.columns},
                                             reserved_usd_per_gpu_hour=prices.reserved_usd_per_gpu_hour,
                                             on_demand_usd_per_gpu_hour=prices.on_demand_usd_per_gpu_hour)
    return FleetPlan(pools=tuple(plans), months=months, commitments=commitments)


__all__ = ["FleetPlan", "PoolPlan", "choose_pool_gpu", "fleet_plan", "interactive_need", "plan_pool", "pool_share"]
