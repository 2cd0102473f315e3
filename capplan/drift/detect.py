"""Prompt- and output-length drift in the request log: windows compared, alerts raised, findings priced.

Pipeline (one module per job in :mod:`capplan.drift`):

1. :func:`capplan.drift.histogram.daily_histograms` (the DuckDB reader) — per UTC day, model and
   metric (``input_tokens``, ``output_tokens``), log-binned counts of *served* (2xx) requests with
   each bin's token sum;
2. :func:`window_comparisons` (this module) — every ``window_days`` window (ending at the last
   day, going back) against the ``baseline_days`` before it: PSI, chi-square p-value, relative
   change of the mean, and the CUSUM change point of the daily mean over baseline + window
   (statistics in :mod:`capplan.drift.stats`);
3. :func:`detect_drift` (this module) — the windows that alert, joined into findings with a change
   date and priced by :func:`capplan.drift.pricing.price_findings`: the change in GPU-seconds and
   USD per request (:mod:`capplan.sizing.cost.per_request`), and in GPUs and USD per month at a
   given monthly volume;
4. :func:`capplan.drift.decomposition.cost_change_decomposition` — a month-over-month cost change
   split into volume, model mix, input-length and output-length parts that add up exactly
   (Shapley values).

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

from collections.abc import Mapping
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.typing.pandas import DataFrame, Series

from capplan.config import DriftConfig
from capplan.drift.histogram import METRICS, daily_histograms
from capplan.drift.pricing import DriftFinding, PerRequestCost, monthly_requests, price_findings
from capplan.drift.stats import (
    chi_square_homogeneity,
    cusum_change_point,
    merge_sparse_bins,
    population_stability_index,
)

#: Merged bins hold at least this share of the baseline (PSI and chi-square need populated bins).
MIN_BIN_BASELINE_SHARE = 0.01


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


def detect_drift(con: duckdb.DuckDBPyConnection, cfg: DriftConfig, costs: Mapping[str, PerRequestCost],
                 requests_per_month: Mapping[str, float] | None = None) -> DataFrame[DriftFinding]:
    """Detect and price token-length drift over the whole request log.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Database with a ``requests`` table.
    cfg : DriftConfig
        Windows and alert thresholds.
    costs : Mapping[str, PerRequestCost]
        Cost model of each log model (see :func:`capplan.drift.pricing.request_costs`).
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
