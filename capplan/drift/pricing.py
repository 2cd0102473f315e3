"""Pricing drift findings: alerting windows joined into findings, each priced per request and per month.

A finding's price is the change of the per-request cost (:class:`capplan.sizing.cost.per_request.RequestCost`)
between the mean token lengths before and after its change date, times a monthly volume
(:func:`monthly_requests` from the last 30 days, or :func:`forecast_requests_per_month`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.typing.pandas import DataFrame, Series

from capplan.config import CapplanConfig
from capplan.drift.histogram import METRICS
from capplan.sizing.catalogue import get_gpu, get_model, load_models
from capplan.sizing.cost.per_request import RequestCost
from capplan.sizing.cost.prices import load_price_book

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
    gpu_seconds_per_request_change: Series[float]
    usd_per_request_change: Series[float]
    requests_per_month: Series[float] = pa.Field(ge=0)
    gpus_change: Series[float]
    usd_per_month_change: Series[float]

    class Config:
        coerce = True


def _mean_tokens(hist: pd.DataFrame, model: str, lo: pd.Timestamp, hi: pd.Timestamp) -> dict[str, float]:
    part = hist[(hist["model"] == model) & (hist["day_utc"] >= lo) & (hist["day_utc"] < hi)]
    sums = part.groupby("metric")[["requests", "tokens_sum"]].sum()
    return {m: float(sums.loc[m, "tokens_sum"] / sums.loc[m, "requests"]) if m in sums.index else 0.0
            for m in METRICS}


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
                   costs: Mapping[str, RequestCost], requests_per_month: Mapping[str, float],
                   window_days: int) -> DataFrame[DriftFinding]:
    """Join alerting windows into findings and price each one.

    Alerting windows of one model and metric whose change dates lie within
    ``window_days`` of each other are one finding, dated by the first. The
    means compare ``[baseline start, change date)`` with ``[change date, end
    of the last alerting window)``. Only the drifting metric changes in the
    price, so an input and an output finding on one model price apart. Since
    the cost model is linear in tokens, the cost at the mean tokens is the
    mean cost.
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
            before = _mean_tokens(hist, model, first["baseline_start"], change)
            after = {**before, metric: _mean_tokens(hist, model, change, group[-1]["window_end"])[metric]}
            cost = costs[model]
            d_gpu_s = cost.gpu_seconds(after["input_tokens"], after["output_tokens"]) - cost.gpu_seconds(
                before["input_tokens"], before["output_tokens"])
            d_usd = cost.usd(after["input_tokens"], after["output_tokens"]) - cost.usd(
                before["input_tokens"], before["output_tokens"])
            volume = float(requests_per_month.get(model, 0.0))
            rows.append({
                "model": model, "metric": metric, "change_date": change,
                "detected_in_window_start": first["window_start"],
                "mean_tokens_before": before[metric], "mean_tokens_after": after[metric],
                "relative_change": after[metric] / before[metric] - 1 if before[metric] else np.nan,
                "psi": max(w["psi"] for w in group), "p_value": min(w["p_value"] for w in group),
                "gpu_seconds_per_request_change": d_gpu_s, "usd_per_request_change": d_usd,
                "requests_per_month": volume, "gpus_change": d_gpu_s * volume / SECONDS_PER_MONTH,
                "usd_per_month_change": d_usd * volume,
            })
    return DriftFinding.validate(pd.DataFrame(rows, columns=list(DriftFinding.to_schema().columns)))


def request_costs(cfg: CapplanConfig, models: Iterable[str]) -> dict[str, RequestCost]:
    """A :class:`RequestCost` per log model, from the GPU catalogue and the price book.

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
                                 cfg.sizing.target_utilisation)
    return out
