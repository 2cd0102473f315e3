"""Prompt- and output-length drift in the request log, priced in GPU-seconds and dollars.

Pipeline (statistics in :mod:`forecasting.drift`, prices in :mod:`sizing.cost`):

1. :func:`daily_histograms` — per UTC day, model and metric (``input_tokens``,
   ``output_tokens``), log-binned counts of *served* (2xx) requests with each
   bin's token sum: a mergeable roll-up (``sql/int_drift_daily_histogram.sql``) of
   ``requests`` and of stored partitions (:func:`capplan.rollups.rollup_with_partitions`);
2. :func:`window_comparisons` — every ``window_days`` window (ending at the last
   day, going back) against the ``baseline_days`` before it: PSI, chi-square
   p-value, relative change of the mean, and the CUSUM change point of the
   daily mean over baseline + window;
3. :func:`detect_drift` — the windows that alert, joined into findings with a
   change date and priced: the change in GPU-seconds and USD per request, and
   in GPUs and USD per month at a given monthly volume;
4. :func:`cost_change_decomposition` — a month-over-month cost change split
   into volume, model mix, input-length and output-length parts that add up
   exactly (Shapley values).

Alert rule
----------
A window alerts when **all** hold: both samples have at least
``min_requests_per_window`` requests; PSI >= ``psi_threshold``;
|relative mean change| >= ``relative_mean_change_threshold``; the chi-square
p-value < ``p_value_threshold``; the CUSUM test of the daily mean over
baseline + window has p < ``p_value_threshold`` and puts the change no earlier
than one window before the compared window (a change further back was the
previous window's finding). Effect sizes gate the test because on millions of
requests every difference is "significant".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta

import duckdb
import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.typing.pandas import DataFrame, Series

from capplan import sql
from capplan.config import CapplanConfig, DriftConfig
from capplan.rollups import rollup_views
from capplan.drift.stats import (
    chi_square_homogeneity,
    cusum_change_point,
    merge_sparse_bins,
    population_stability_index,
    shapley_decomposition,
)
from capplan.sizing.cost.commitment import gpu_seconds_per_request, usd_per_request

METRICS = ("input_tokens", "output_tokens")
#: Quarter-octave log bins: fine enough that a +10 % shift moves mass between bins.
BIN_GAMMA = 2 ** 0.25
#: Merged bins hold at least this share of the baseline (PSI and chi-square need populated bins).
MIN_BIN_BASELINE_SHARE = 0.01
SECONDS_PER_MONTH = 365.25 / 12 * 86_400  # mean Gregorian month [s]
#: Cheap forecasting candidates: a drift's monthly price needs the volume's level, not its last percent.
VOLUME_FORECAST_CANDIDATES = ("seasonal_naive", "seasonal_profile", "theta")


class DailyHistogram(pa.DataFrameModel):
    """Log-binned token counts per UTC day, model and metric (served requests)."""

    day_utc: Series[pd.Timestamp]
    model: Series[str]
    metric: Series[str] = pa.Field(isin=list(METRICS))
    bin: Series[int] = pa.Field(ge=-1)
    requests: Series[int] = pa.Field(gt=0)
    tokens_sum: Series[int] = pa.Field(ge=0)

    class Config:
        coerce = True


class WindowComparison(pa.DataFrameModel):
    """One window of one model and metric against its baseline."""

    model: Series[str]
    metric: Series[str] = pa.Field(isin=list(METRICS))
    baseline_start: Series[pd.Timestamp]
    window_start: Series[pd.Timestamp]
    window_end: Series[pd.Timestamp]
    requests_baseline: Series[int] = pa.Field(ge=0)
    requests_window: Series[int] = pa.Field(ge=0)
    mean_tokens_baseline: Series[float] = pa.Field(ge=0, nullable=True)
    mean_tokens_window: Series[float] = pa.Field(ge=0, nullable=True)
    relative_change: Series[float] = pa.Field(nullable=True)
    psi: Series[float] = pa.Field(ge=0, nullable=True)
    p_value: Series[float] = pa.Field(ge=0, le=1, nullable=True)
    change_date: Series[pd.Timestamp] = pa.Field(nullable=True)
    change_p_value: Series[float] = pa.Field(ge=0, le=1, nullable=True)
    alert: Series[bool]

    class Config:
        coerce = True


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


class CostDecomposition(pa.DataFrameModel):
    """Parts of a month-over-month cost change; the non-total rows add up to ``total``."""

    component: Series[str] = pa.Field(isin=["volume", "model_mix", "input_length", "output_length", "total"])
    usd_change: Series[float]

    class Config:
        coerce = True


@dataclass(frozen=True)
class RequestCost:
    """Per-request cost model of one served model (:func:`sizing.cost.gpu_seconds_per_request`).

    Attributes
    ----------
    prefill_tokens_per_s_per_gpu, decode_tokens_per_s_per_gpu : float
        Aggregate per-GPU throughputs. [tokens/(s·GPU)]
    usd_per_gpu_hour : float
        GPU-hour price. [USD/(GPU·h)]
    target_utilisation : float
        Fraction of peak the fleet runs at. [fraction]
    """

    prefill_tokens_per_s_per_gpu: float
    decode_tokens_per_s_per_gpu: float
    usd_per_gpu_hour: float
    target_utilisation: float = 1.0

    def gpu_seconds(self, input_tokens: float, output_tokens: float) -> float:
        """GPU time of a request. [GPU·s]"""
        return float(gpu_seconds_per_request(
            input_tokens, output_tokens, prefill_tokens_per_s_per_gpu=self.prefill_tokens_per_s_per_gpu,
            decode_tokens_per_s_per_gpu=self.decode_tokens_per_s_per_gpu, target_utilisation=self.target_utilisation))

    def usd(self, input_tokens: float, output_tokens: float) -> float:
        """Cost of a request. [USD]"""
        return float(usd_per_request(
            input_tokens, output_tokens, usd_per_gpu_hour=self.usd_per_gpu_hour,
            prefill_tokens_per_s_per_gpu=self.prefill_tokens_per_s_per_gpu,
            decode_tokens_per_s_per_gpu=self.decode_tokens_per_s_per_gpu, target_utilisation=self.target_utilisation))


def request_costs(cfg: CapplanConfig, models: Iterable[str]) -> dict[str, RequestCost]:
    """A :class:`RequestCost` per log model, from the GPU catalogue and the price book.

    A log model that is a key of the model catalogue uses its own size class;
    any other uses that of ``[sizing].model``. The price is the on-demand rate
    of ``[sizing].gpu``; throughputs are the catalogue's ASSUMED figures.
    """
    from capplan.sizing.catalogue import get_gpu, get_model, load_models
    from capplan.sizing.cost.prices import load_price_book

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


@pa.check_types
def daily_histograms(con: duckdb.DuckDBPyConnection, start: date | None = None,
                     end: date | None = None) -> DataFrame[DailyHistogram]:
    """Per-day log-binned token histograms of served requests in ``[start, end)`` (UTC days)."""
    bounds = {"start_utc": start, "end_utc": end}
    rollup = ("int_drift_daily_histogram", bounds | {"inv_ln_gamma": 1 / math.log(BIN_GAMMA)})
    with rollup_views(con, {"drift_daily_rollup": rollup}) as cur:
        return cur.execute(sql.load("rpt_drift_daily_histogram"), bounds).df()


@dataclass(frozen=True)
class _DayBins:
    """One model and metric as a dense day × bin matrix (days without requests are zero rows)."""

    days: pd.DatetimeIndex
    counts: np.ndarray  # [day, bin] requests
    tokens: np.ndarray  # [day] token sums [tokens]

    @classmethod
    def of(cls, part: pd.DataFrame, days: pd.DatetimeIndex) -> _DayBins:
        day = days.get_indexer(part["day_utc"])
        bin_ = part["bin"].to_numpy() + 1  # bins start at -1
        counts = np.zeros((len(days), int(bin_.max()) + 1))
        np.add.at(counts, (day, bin_), part["requests"].to_numpy(dtype=float))
        return cls(days, counts, np.bincount(day, weights=part["tokens_sum"].to_numpy(dtype=float),
                                             minlength=len(days)))

    def window(self, lo: int, hi: int) -> tuple[np.ndarray, float, float]:
        """Bin counts, requests and mean tokens of days ``[lo, hi)``."""
        counts = self.counts[lo:hi].sum(axis=0)
        n = float(counts.sum())
        return counts, n, float(self.tokens[lo:hi].sum()) / n if n else float("nan")


def _compare(d: _DayBins, cfg: DriftConfig, b0: int, w0: int, w1: int) -> dict:
    """Statistics of days ``[w0, w1)`` against ``[b0, w0)`` for one model and metric."""
    base, n_b, mean_b = d.window(b0, w0)
    win, n_w, mean_w = d.window(w0, w1)
    row = {"baseline_start": d.days[b0], "window_start": d.days[w0], "window_end": d.days[0] + pd.Timedelta(days=w1),
           "requests_baseline": int(n_b), "requests_window": int(n_w), "mean_tokens_baseline": mean_b,
           "mean_tokens_window": mean_w, "relative_change": np.nan, "psi": np.nan, "p_value": np.nan,
           "change_date": pd.NaT, "change_p_value": np.nan, "alert": False}
    if min(n_b, n_w) < cfg.min_requests_per_window:
        return row
    b, w = merge_sparse_bins(base, win, MIN_BIN_BASELINE_SHARE)
    per_day = d.counts[b0:w1].sum(axis=1)
    served = per_day > 0
    daily_mean = d.tokens[b0:w1][served] / per_day[served]
    cp = cusum_change_point(daily_mean) if len(daily_mean) >= 4 else None
    row.update(relative_change=mean_w / mean_b - 1 if mean_b else np.nan, psi=population_stability_index(b, w),
               p_value=chi_square_homogeneity(b, w)[1])
    if cp is not None:
        row.update(change_date=d.days[b0:w1][served][cp.index], change_p_value=cp.p_value)
    row["alert"] = bool(
        row["psi"] >= cfg.psi_threshold and abs(row["relative_change"]) >= cfg.relative_mean_change_threshold
        and row["p_value"] < cfg.p_value_threshold and cp is not None and cp.p_value < cfg.p_value_threshold
        and w0 - (row["change_date"] - d.days[0]).days <= cfg.window_days)
    return row


def window_comparisons(hist: pd.DataFrame, cfg: DriftConfig) -> DataFrame[WindowComparison]:
    """Compare every window of every model and metric with the baseline before it.

    Windows of ``cfg.window_days`` end at the last day of ``hist`` (a
    :class:`DailyHistogram` frame) and go back while a full
    ``cfg.baseline_days`` baseline fits before them.
    """
    columns = list(WindowComparison.to_schema().columns)
    if hist.empty:
        return WindowComparison.validate(pd.DataFrame(columns=columns))
    days = pd.date_range(hist["day_utc"].min(), hist["day_utc"].max(), freq="D")
    ends = range(len(days), cfg.baseline_days + cfg.window_days - 1, -cfg.window_days)
    rows = []
    for (model, metric), part in hist.groupby(["model", "metric"], sort=True):
        matrix = _DayBins.of(part, days)
        for w1 in sorted(ends):
            w0 = w1 - cfg.window_days
            rows.append({"model": model, "metric": metric, **_compare(matrix, cfg, w0 - cfg.baseline_days, w0, w1)})
    return WindowComparison.validate(pd.DataFrame(rows, columns=columns))


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
    through :func:`forecasting.api.forecast_monthly`. [requests/month]
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


def detect_drift(con: duckdb.DuckDBPyConnection, cfg: DriftConfig, costs: Mapping[str, RequestCost],
                 requests_per_month: Mapping[str, float] | None = None) -> DataFrame[DriftFinding]:
    """Detect and price token-length drift over the whole request log.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Database with a ``requests`` table.
    cfg : DriftConfig
        Windows and alert thresholds.
    costs : Mapping[str, RequestCost]
        Cost model of each log model (see :func:`request_costs`).
    requests_per_month : Mapping[str, float], optional
        Forecast volume per model [requests/month]; default: each model's
        served requests over the last 30 days, scaled to a mean month.

    Returns
    -------
    DataFrame[DriftFinding]
        One row per finding; ``gpus_change`` is the change in the mean GPU
        count (at the configured utilisation) [GPUs], ``usd_per_month_change``
        in USD per month [USD/month].
    """
    hist = daily_histograms(con)
    windows = window_comparisons(hist, cfg)
    volume = monthly_requests(hist) if requests_per_month is None else requests_per_month
    return price_findings(hist, windows, costs, volume, cfg.window_days)


def _month_factors(hist: pd.DataFrame, month: pd.Period, costs: Mapping[str, RequestCost]) -> dict[str, object]:
    """Volume, model shares and per-model mean token lengths of one month of served requests."""
    part = hist[hist["day_utc"].dt.to_period("M") == month]
    sums = part.groupby(["metric", "model"])[["requests", "tokens_sum"]].sum()
    if sums.empty:
        raise ValueError(f"no served requests in {month}")
    requests = sums.loc[METRICS[0], "requests"]
    missing = sorted(set(requests.index) - set(costs))
    if missing:
        raise ValueError(f"no cost model for log models {missing}")
    means = {m: (sums.loc[m, "tokens_sum"] / sums.loc[m, "requests"]).to_dict() for m in METRICS}
    return {"volume": float(requests.sum()), "model_mix": (requests / requests.sum()).to_dict(),
            "input_length": means["input_tokens"], "output_length": means["output_tokens"]}


def cost_change_decomposition(hist: pd.DataFrame, month_before: str, month_after: str,
                              costs: Mapping[str, RequestCost]) -> DataFrame[CostDecomposition]:
    """Split the change in modelled serving cost between two months into volume and mix parts.

    The month's cost is ``C = V · Σ_m s_m · c_m(Ī_m, Ō_m)``: volume V of served
    requests, model shares s_m, and each model's per-request cost at its mean
    input and output length (exact, the cost model being linear in tokens).
    :func:`forecasting.drift.shapley_decomposition` splits ``C_after − C_before``
    over the four factors (volume, model mix, input length, output length); the
    parts add up exactly to the total. A model served in one month only enters
    the other with share 0 and the lengths of the month it has.

    Parameters
    ----------
    hist : DataFrame[DailyHistogram]
        From :func:`daily_histograms`.
    month_before, month_after : str
        Months as ``'YYYY-MM'`` (UTC).
    costs : Mapping[str, RequestCost]
        Cost model of each log model.

    Returns
    -------
    DataFrame[CostDecomposition]
        One row per factor and a ``total`` row. [USD/month]
    """
    before = _month_factors(hist, pd.Period(month_before, "M"), costs)
    after = _month_factors(hist, pd.Period(month_after, "M"), costs)
    for length in ("input_length", "output_length"):  # a model new in one month keeps its lengths in the other
        before[length] = {**after[length], **before[length]}
        after[length] = {**before[length], **after[length]}

    def cost_usd(f: Mapping[str, object]) -> float:
        return f["volume"] * sum(share * costs[m].usd(f["input_length"][m], f["output_length"][m])
                                 for m, share in f["model_mix"].items())

    parts = shapley_decomposition(before, after, cost_usd)
    rows = [{"component": k, "usd_change": v} for k, v in parts.items()]
    rows.append({"component": "total", "usd_change": cost_usd(after) - cost_usd(before)})
    return CostDecomposition.validate(pd.DataFrame(rows))
