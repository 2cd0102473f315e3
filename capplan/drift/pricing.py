"""Pricing drift findings: alerting windows joined into findings, each priced per request and per month.

A finding's price is the change of the mean per-request cost between the token mixes before and
after its change date, times a monthly volume (:func:`monthly_requests` from the last 30 days, or
:func:`forecast_requests_per_month`). The per-request cost (:func:`request_costs`) is **modelled**
(:class:`capplan.sizing.cost.per_request.ModelledRequestCost`: the replica performance model on the
model's pool's GPU, TP and precision, at the batch the pool runs at its baseline mix) or, where the
model cannot be run (GPU chosen by the plan, a precision or GPU it does not know, no price),
**assumed** (:class:`~capplan.sizing.cost.per_request.RequestCost`: linear in tokens at the GPU
catalogue's rates), and the finding says which and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.typing.pandas import DataFrame, Series

from capplan.config import AUTO, CapplanConfig
from capplan.drift.histogram import METRICS
from capplan.plan.pools import Pool, resolve_pools
from capplan.sizing.catalogue import get_gpu, get_model, load_models
from capplan.sizing.cost.per_request import SECONDS_PER_HOUR, ModelledRequestCost, RequestCost
from capplan.sizing.cost.prices import load_price_book
from capplan.sizing.performance import PRECISIONS, replica, token_mix

#: A per-request cost model: modelled (performance model) or assumed (linear, catalogue rates).
PerRequestCost = RequestCost | ModelledRequestCost
#: A token mix: lengths (each bin's mean) and request counts. [tokens], [requests]
Mix = tuple[np.ndarray, np.ndarray]

SECONDS_PER_MONTH = 365.25 / 12 * 86_400  # mean Gregorian month [s]
#: Cheap forecasting candidates: a drift's monthly price needs the volume's level, not its last percent.
VOLUME_FORECAST_CANDIDATES = ("seasonal_naive", "seasonal_profile", "theta")


class DriftFinding(pa.DataFrameModel):
    """A detected drift, priced."""

    model: Series[str]
    metric: Series[str] = pa.Field(isin=list(METRICS))
    change_date: Series[pd.Timestamp]
    detected_in_window_start: Series[pd.Timestamp]
    mean_tokens_before: Series[float] = pa.Field(ge=0)
    mean_tokens_after: Series[float] = pa.Field(ge=0)
    relative_change: Series[float]
    psi: Series[float] = pa.Field(ge=0)
    p_value: Series[float] = pa.Field(ge=0, le=1)
    gpu_seconds_per_request_before: Series[float] = pa.Field(ge=0)
    gpu_seconds_per_request_change: Series[float]
    usd_per_request_change: Series[float]
    requests_per_month: Series[float] = pa.Field(ge=0)
    gpus_change: Series[float]
    usd_per_month_change: Series[float]
    cost_source: Series[str] = pa.Field(isin=["modelled", "assumed"])
    cost_model: Series[str]
    batch_before: Series[float] = pa.Field(ge=0, nullable=True)
    batch_after: Series[float] = pa.Field(ge=0, nullable=True)

    class Config:
        coerce = True


def window_mixes(hist: pd.DataFrame, models: Iterable[str], lo: pd.Timestamp, hi: pd.Timestamp) -> dict[str, Mix]:
    """Token mix of each metric over ``models`` and days ``[lo, hi)``: each bin's mean length and its requests.

    A metric without requests there is one length of 0 tokens. [tokens], [requests]
    """
    part = hist[hist["model"].isin(list(models)) & (hist["day_utc"] >= lo) & (hist["day_utc"] < hi)]
    sums = part.groupby(["metric", "bin"])[["requests", "tokens_sum"]].sum()
    out = {}
    for m in METRICS:
        if m in sums.index.get_level_values("metric"):
            b = sums.loc[m]
            out[m] = (b["tokens_sum"].to_numpy(float) / b["requests"].to_numpy(float), b["requests"].to_numpy(float))
        else:
            out[m] = (np.array([0.0]), np.array([1.0]))
    return out


def at_baseline(cost: PerRequestCost, hist: pd.DataFrame, model: str, lo: pd.Timestamp,
                hi: pd.Timestamp) -> PerRequestCost:
    """``cost`` at its operating point: the batch its pool runs at the pool's mix over ``[lo, hi)``."""
    mix = window_mixes(hist, cost.pool_models or (model,), lo, hi)
    return cost.at_operating_point(mix["input_tokens"], mix["output_tokens"])


def monthly_requests(hist: pd.DataFrame, days: int = 30) -> dict[str, float]:
    """Served requests per mean month of each model, from its last ``days`` days. [requests/month]"""
    last = hist["day_utc"].max()
    recent = hist[(hist["metric"] == METRICS[0]) & (hist["day_utc"] > last - pd.Timedelta(days=days))]
    return {m: float(n) * SECONDS_PER_MONTH / (days * 86_400) for m, n in recent.groupby("model")["requests"].sum().items()}


def forecast_requests_per_month(hist: pd.DataFrame, horizon_months: int) -> dict[str, float]:
    """Forecast served requests per month of each model: the mean over the next ``horizon_months``.

    Each model's daily served requests (days without any are zeros) go
    through :func:`capplan.forecasting.api.forecast_monthly`. [requests/month]
    """
    from capplan.forecasting.api import forecast_monthly

    served = hist[hist["metric"] == METRICS[0]].groupby(["model", "day_utc"])["requests"].sum()
    days = pd.date_range(hist["day_utc"].min(), hist["day_utc"].max(), freq="D")
    out = {}
    for model, daily in served.groupby(level="model"):
        y = daily.droplevel("model").reindex(days, fill_value=0).astype(float)
        out[model] = float(forecast_monthly(y, horizon_months, candidates=VOLUME_FORECAST_CANDIDATES)["mean"].mean())
    return out


def price_findings(hist: pd.DataFrame, windows: pd.DataFrame,
                   costs: Mapping[str, PerRequestCost], requests_per_month: Mapping[str, float],
                   window_days: int) -> DataFrame[DriftFinding]:
    """Join alerting windows into findings and price each one.

    Alerting windows of one model and metric whose change dates lie within
    ``window_days`` of each other are one finding, dated by the first. The
    mixes compare ``[baseline start, change date)`` with ``[change date, end
    of the last alerting window)``. Only the drifting metric changes in the
    price, so an input and an output finding on one model price apart. The
    cost is the mean per-request cost of each mix (:func:`window_mixes`, the
    daily histograms' bins with their exact mean lengths); a modelled cost is
    taken at the operating point of the model's pool's mix before the change
    (:func:`at_baseline`: that batch is held, the KV memory of the drifted mix
    may lower it). ``batch_before``/``batch_after`` are those batches (NaN for
    an assumed, linear cost).
    """
    rows = []
    for (model, metric), part in windows[windows["alert"]].groupby(["model", "metric"], sort=True):
        groups: list[list[pd.Series]] = []
        for _, w in part.sort_values("window_start").iterrows():
            if groups and abs(w["change_date"] - groups[-1][0]["change_date"]) <= pd.Timedelta(days=window_days):
                groups[-1].append(w)
            else:
                groups.append([w])
        for group in groups:
            first, change = group[0], group[0]["change_date"]
            before = window_mixes(hist, [model], first["baseline_start"], change)
            after = {**before, metric: window_mixes(hist, [model], change, group[-1]["window_end"])[metric]}
            cost = at_baseline(costs[model], hist, model, first["baseline_start"], change)
            gpu_s_before = cost.gpu_seconds(before["input_tokens"], before["output_tokens"])
            d_gpu_s = cost.gpu_seconds(after["input_tokens"], after["output_tokens"]) - gpu_s_before
            d_usd = d_gpu_s * cost.usd_per_gpu_hour / SECONDS_PER_HOUR
            volume = float(requests_per_month.get(model, 0.0))
            mean_before, mean_after = (token_mix(x[metric]).mean_tokens for x in (before, after))
            rows.append({
                "model": model, "metric": metric, "change_date": change,
                "detected_in_window_start": first["window_start"],
                "mean_tokens_before": mean_before, "mean_tokens_after": mean_after,
                "relative_change": mean_after / mean_before - 1 if mean_before else np.nan,
                "psi": max(w["psi"] for w in group), "p_value": min(w["p_value"] for w in group),
                "gpu_seconds_per_request_before": gpu_s_before,
                "gpu_seconds_per_request_change": d_gpu_s, "usd_per_request_change": d_usd,
                "requests_per_month": volume, "gpus_change": d_gpu_s * volume / SECONDS_PER_MONTH,
                "usd_per_month_change": d_usd * volume,
                "cost_source": cost.source, "cost_model": cost.describe(),
                "batch_before": _batch(cost, before), "batch_after": _batch(cost, after),
            })
    return DriftFinding.validate(pd.DataFrame(rows, columns=list(DriftFinding.to_schema().columns)))


def _batch(cost: PerRequestCost, mix: Mapping[str, Mix]) -> float:
    """The batch a modelled cost prices ``mix`` at; NaN for a linear cost. [sequences]"""
    if not isinstance(cost, ModelledRequestCost):
        return np.nan
    return float(cost.request_gpu_time(mix["input_tokens"], mix["output_tokens"]).batch)


def linear_request_costs(cfg: CapplanConfig, models: Iterable[str]) -> dict[str, RequestCost]:
    """The assumed, linear :class:`RequestCost` per log model, from the GPU catalogue and the price book.

    A log model that is a key of the model catalogue uses its own size class;
    any other uses that of ``[sizing].model``. The price is the on-demand rate
    of ``[sizing].gpu``; throughputs are the catalogue's ASSUMED figures.
    """
    gpu = get_gpu(cfg.sizing.gpu, cfg.sizing.gpu_catalogue)
    catalogue = load_models(cfg.sizing.model_catalogue)
    default_class = get_model(cfg.sizing.model, cfg.sizing.model_catalogue).size_class
    price = load_price_book(cfg.cost.price_book).gpu(cfg.sizing.gpu).on_demand_usd_per_gpu_hour
    out = {}
    for model in models:
        size_class = catalogue[model].size_class if model in catalogue else default_class
        out[model] = RequestCost(gpu.prefill_rate(size_class), gpu.decode_rate(size_class), price,
                                 cfg.sizing.target_utilisation,
                                 note=f"GPU catalogue {cfg.sizing.gpu} rates of size class {size_class!r}")
    return out


def _modelled_cost(cfg: CapplanConfig, pool: Pool, fallback: RequestCost) -> PerRequestCost:
    """The performance-model cost of ``pool``'s replicas, or ``fallback`` with the reason it was not possible."""
    precision = pool.settings.get("weights_dtype", cfg.sizing.weights_dtype)
    utilisation = pool.settings.get("target_utilisation", cfg.sizing.target_utilisation)
    tp = None if pool.tensor_parallel in (None, AUTO) else int(pool.tensor_parallel)
    why = None
    if pool.gpu == AUTO:
        why = 'its GPU is chosen by the plan (gpu = "auto")'
    elif precision not in PRECISIONS:
        why = f"the performance model has no {precision} ({', '.join(PRECISIONS)} only)"
    else:
        try:
            replica(pool.model, pool.gpu, tp or 1, precision, 1.0, 1.0)  # catalogue keys and precision known
            price = load_price_book(cfg.cost.price_book).gpu(pool.gpu).on_demand_usd_per_gpu_hour
        except (ValueError, KeyError) as exc:
            why = str(exc).strip("'\"")
    if why:
        return replace(fallback, note=f"{fallback.note}; not modelled: pool {pool.name}: {why}",
                       pool_models=pool.models)
    return ModelledRequestCost(model=pool.model, gpu=pool.gpu, tensor_parallel=tp, precision=precision,
                               usd_per_gpu_hour=price, target_utilisation=utilisation, pool_models=pool.models,
                               note=f"pool {pool.name} ({', '.join(pool.models)}); on-demand price of {pool.gpu}")


def request_costs(cfg: CapplanConfig, models: Iterable[str]) -> dict[str, PerRequestCost]:
    """The per-request cost model of each log model: modelled on its pool's replicas, else assumed.

    Each log model's pool (:func:`capplan.plan.pools.resolve_pools`: ``[[pools]]``, or one pool per
    log model) gives the architecture, GPU, tensor-parallel degree (unset or ``"auto"``: the
    smallest that fits), precision (``weights_dtype``) and utilisation of a
    :class:`~capplan.sizing.cost.per_request.ModelledRequestCost`, priced at the on-demand rate of
    the pool's GPU. Where that cannot be run, the model's linear cost
    (:func:`linear_request_costs`, ASSUMED rates) is used, its ``note`` saying why.

    Raises
    ------
    capplan.plan.pools.PoolError
        If a log model is served by no pool.
    """
    models = list(models)
    if not models:  # no daily histograms (a metrics- or rate-only database): nothing to price
        return {}
    linear = linear_request_costs(cfg, models)
    return {m: _modelled_cost(cfg, pool, linear[m]) for pool in resolve_pools(cfg, models) for m in pool.models}
