"""The request mix the plan measures from the logs: token lengths, latency, KV tokens, burst, spot share.

Every figure is read from mergeable hourly roll-ups (``sql/int_plan_request_mix_hourly.sql``,
``sql/int_plan_kv_tokens_hourly.sql``) of ``requests`` and of stored partitions alike, over
the last ``[report].measured_window_days`` days: whole UTC hours ending with the hour of
the newest request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from capplan import sql
from capplan.config import CapplanConfig, CostConfig
from capplan.ingest.coverage import defaulted_columns
from capplan.plan import unlogged
from capplan.profile.bins import HISTOGRAM_GAMMA
from capplan.rollups import has_histograms, rollup_views

MEASURED_UNITS = {"input_tokens_per_request": "tokens/request", "output_tokens_per_request": "tokens/request",
                  "latency_s": "s", "kv_tokens_per_sequence": "tokens", "burst_ratio": "ratio"}

_REQUEST_MIX = {"plan_request_mix_hourly": ("int_plan_request_mix_hourly", {})}
_KV_TOKENS = {"plan_kv_tokens_hourly": ("int_plan_kv_tokens_hourly", {})}


@dataclass(frozen=True)
class MeasuredInputs:
    """The request mix measured from the logs that the sizing and the cost use.

    Attributes
    ----------
    first_ts_utc, last_ts_utc : pandas.Timestamp
        Oldest and newest request in the database (UTC).
    requests : int
        Successful requests in the measuring window. [requests]
    input_tokens_per_request, output_tokens_per_request : float
        Means over that window. [tokens/request]
    latency_s : float
        Mean arrival-to-last-token time. [s]
    kv_tokens_per_sequence : float
        Input+output tokens at ``kv_tokens_quantile``. [tokens]
    burst_ratio : float
        Peak over mean requests in flight within busy hours (see :func:`burst_ratio`). [ratio]
    interruptible_share : float or None
        Share of successful requests to ``[cost].interruptible_models`` or from
        ``[cost].interruptible_tenants`` (``None`` when neither is listed: the
        assumed ``[cost].interruptible_share`` applies, see :func:`interruptible_share`). [fraction]
    kv_tokens_quantile : float or None
        The quantile ``kv_tokens_per_sequence`` was measured at (``[report].kv_tokens_quantile``). [fraction]
    input_tokens_histogram, output_tokens_histogram : (tuple, tuple) or None
        ``(tokens, requests)`` over the same window from the profile's histograms (bin midpoints
        [tokens], counts [requests]; :func:`token_histograms`): the token mix the performance model
        takes. ``None`` when the profile has none.
    """

    first_ts_utc: pd.Timestamp
    last_ts_utc: pd.Timestamp
    requests: int
    input_tokens_per_request: float
    output_tokens_per_request: float
    latency_s: float
    kv_tokens_per_sequence: float
    burst_ratio: float
    interruptible_share: float | None = None
    kv_tokens_quantile: float | None = None
    input_tokens_histogram: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    output_tokens_histogram: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    # s7-honest: what the logs lacked. sources: measured name -> "modelled"/"assumed"; notes for the report;
    # defaulted: capplan.ingest.coverage.defaulted_columns
    sources: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    defaulted: dict = field(default_factory=dict)
    # hours fed by metrics: how their peak and KV tokens were derived (metrics_rows), name -> (value, unit, source)
    derived: dict[str, tuple[Any, str, str]] = field(default_factory=dict)
    # the finest interval of the metrics hours' counts: their "busiest second" is that interval's mean rate [s]
    metrics_step_s: int | None = None

    def sourced(self) -> dict[str, tuple[Any, str, str]]:
        """Assumptions-table rows that are not measured (:func:`capplan.plan.unlogged.sourced_rows`)."""
        return unlogged.sourced_rows(self.sources, self.defaulted, self.table()) | self.derived

    def table(self) -> dict[str, tuple[Any, str]]:
        """``name -> (value, unit)`` for the assumptions table, the data's span first."""
        span = {"first request": (f"{self.first_ts_utc:%Y-%m-%d %H:%M}", "UTC"),
                "last request": (f"{self.last_ts_utc:%Y-%m-%d %H:%M}", "UTC"),
                "requests measured (2xx)": (self.requests, "requests")}
        shares = {} if self.interruptible_share is None else {
            "interruptible_share": (self.interruptible_share, "fraction")}
        return span | {name: (getattr(self, name), unit) for name, unit in MEASURED_UNITS.items()} | shares


def burst_ratio(hourly: pd.DataFrame, quantile: float = 0.5) -> float:
    """Peak over mean requests in flight within an hour, at ``quantile`` of the busy hours. [ratio]

    ``concurrency_measured_peak / concurrency_littles`` per hour: the most requests
    held at once against the hour's mean (L = λ·W). It turns an hour's mean QPS into
    the load a fleet must hold at the hour's busiest moment. Requests in flight,
    not arrivals in the busiest second, because a request holds its slot for the
    whole latency: one busy second among quiet ones does not fill the KV cache.
    Only hours at or above the median mean QPS count (a quiet hour's ratio is noise);
    the median of those is the typical burst of a busy hour.
    """
    ratio = (hourly["concurrency_measured_peak"].astype(float) / hourly["concurrency_littles"].astype(float))
    busy = (hourly["avg_qps"] > 0) & (hourly["avg_qps"] >= hourly["avg_qps"].median()) & ratio.notna()
    if not busy.any():
        raise ValueError("no hour with traffic and logged latency: cannot measure the peak-to-mean concurrency ratio")
    return max(1.0, float(np.quantile(ratio[busy].to_numpy(float), quantile)))


def measure_interruptible_share(con: duckdb.DuckDBPyConnection, cost: CostConfig, *,
                                window_days: int, models: list[str] | None = None) -> float | None:
    """Share of successful requests that tolerate spot interruption, measured (``sql/rpt_plan_interruptible_share``). [fraction]

    With ``[cost].interruptible_models`` or ``interruptible_tenants`` set, it is the
    share of successful requests in the last ``window_days`` days (whole UTC hours) to
    a listed model or from a listed tenant; 0 without such requests. ``None`` when
    neither is listed: nothing to measure, the assumed share applies. ``models`` limits the
    requests counted to one pool's log models (``None``: every model).
    """
    if not cost.interruptible_models and not cost.interruptible_tenants:
        return None
    with rollup_views(con, _REQUEST_MIX) as cur:
        return _interruptible_share(cur, cost, window_days, models)


def _interruptible_share(cur: duckdb.DuckDBPyConnection, cost: CostConfig, window_days: int,
                         models: list[str] | None) -> float | None:
    """:func:`measure_interruptible_share` on a cursor that has the ``plan_request_mix_hourly`` view."""
    if not cost.interruptible_models and not cost.interruptible_tenants:
        return None
    share, _requests = cur.execute(sql.load("rpt_plan_interruptible_share"), {
        "window_days": window_days, "models": list(cost.interruptible_models),
        "tenants": list(cost.interruptible_tenants), "pool_models": models}).fetchone()
    return float(share)


def token_histograms(con: duckdb.DuckDBPyConnection, window_after_utc: object, models: list[str] | None = None,
                     ) -> dict[str, tuple[tuple[float, ...], tuple[float, ...]] | None]:
    """Input and output token histograms after ``window_after_utc`` (``sql/rpt_plan_token_histogram``).

    ``{"input_tokens": (tokens, requests), "output_tokens": ...}``: bin midpoints [tokens] and counts
    [requests] of the profile's log-binned grid (:mod:`capplan.profile.bins`), so a mean or second
    moment from them is within the grid's relative error. ``None`` for a metric without counts, or
    every metric when the profile has no histogram table.
    """
    metrics = ("input_tokens", "output_tokens")
    if window_after_utc is None or pd.isna(window_after_utc) or not has_histograms(con):
        return dict.fromkeys(metrics)
    rows = con.execute(sql.load("rpt_plan_token_histogram"), {
        "window_after_utc": window_after_utc, "models": models, "gamma": HISTOGRAM_GAMMA}).df()
    out: dict[str, tuple[tuple[float, ...], tuple[float, ...]] | None] = {}
    for metric in metrics:  # tuples, not arrays: MeasuredInputs compares by value (as-of tests)
        part = rows[rows["metric"] == metric]
        out[metric] = ((tuple(part["tokens"].astype(float)), tuple(part["requests"].astype(float))) if len(part)
                       else None)
    return out


def with_mean(histogram: tuple[tuple[float, ...], tuple[float, ...]] | None, mean_tokens: float,
              ) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """``histogram`` ``(tokens, requests)`` with its token values scaled so that its mean is ``mean_tokens``. [tokens]

    The profile's length histograms count requests of every status while the plan's means are of
    successful (2xx) requests only, and for hours fed by Prometheus they come from the server's
    coarse ``le`` buckets (vLLM's 1-2-5 series), whose mass lands on the profile grid with an error
    of up to a bucket's width (docs/metrics.md). Scaling keeps the shape and restores the exact mean
    of the work the fleet serves. ``None`` (no histogram), or a histogram of zero tokens, is
    returned as it is.
    """
    if histogram is None or not np.isfinite(mean_tokens):
        return histogram
    tokens, requests = np.asarray(histogram[0], float), np.asarray(histogram[1], float)
    current = float(tokens @ requests / requests.sum()) if requests.sum() > 0 else 0.0
    if current <= 0:
        return histogram
    return tuple(float(t) for t in tokens * (mean_tokens / current)), histogram[1]


def interruptible_share(cost: CostConfig, measured: MeasuredInputs | None = None) -> float:
    """The share the cost stage may put on spot: the measured one when measured, else ``[cost].interruptible_share``. [fraction]"""
    if measured is not None and measured.interruptible_share is not None:
        return measured.interruptible_share
    return cost.interruptible_share


@contextmanager
def measured_rollups(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of ``con`` with the roll-ups :func:`measure_inputs` reads as views (``plan_request_mix_hourly``,
    ``plan_kv_tokens_hourly``): one roll-up of every model, for the measure stage to share between its pools
    (``measure_inputs(..., rollups=cur)``). The views vanish with the cursor when the block ends."""
    with rollup_views(con, _REQUEST_MIX | _KV_TOKENS) as cur:
        yield cur


def measure_inputs(con: duckdb.DuckDBPyConnection, hourly: pd.DataFrame, cfg: CapplanConfig,
                   models: list[str] | None = None, pool: Any = None, *,
                   rollups: duckdb.DuckDBPyConnection | None = None) -> MeasuredInputs:
    """Measure the request mix over the last ``[report].measured_window_days`` days (``sql/rpt_plan_measured_inputs``).

    A database fed by partitioned roll-ups only measures the same figures (see the module).
    ``hourly`` is the profile's hourly traffic, for :func:`burst_ratio`. ``models`` limits every
    figure to one pool's log models (``None``: all models); the window is the fleet's either way.
    ``pool``, when given, is the architecture a latency that was not logged is modelled for.
    ``rollups``, a cursor of ``con`` from :func:`measured_rollups`, is read instead of rolling up here (the
    roll-ups cover every model: one serves all the pools of a stage).

    Raises
    ------
    ValueError
        If the database has no successful request. Without a logged latency it is modelled or
        assumed (:func:`capplan.plan.unlogged.latency_without_logs`), marked in ``sources``.
    """
    window_days = cfg.report.measured_window_days
    with nullcontext(rollups) if rollups is not None else measured_rollups(con) as cur:
        row = cur.execute(sql.load("rpt_plan_measured_inputs"), {
            "window_days": window_days, "kv_quantile": cfg.report.kv_tokens_quantile,
            "models": models}).df().iloc[0]
        metrics = metrics_hours(cur, window_days)
        share = _interruptible_share(cur, cfg.cost, window_days, models)
    if not row["requests"]:
        raise ValueError("the requests table has no successful (2xx) request to measure the request mix from; "
                         "ingest logs first")
    # s7-honest: without latency_ms the latency is modelled or assumed (capplan.plan.unlogged), not refused
    sources, notes = {}, ()
    if row["requests_with_latency"]:
        latency_s, burst = float(row["latency_s"]), burst_ratio(hourly)
    else:
        latency_s, sources["latency_s"], note = unlogged.latency_without_logs(
            cfg, float(row["input_tokens_per_request"]), float(row["output_tokens_per_request"]), hourly, pool)
        burst, sources["burst_ratio"], notes = unlogged.burst_without_latency(hourly, latency_s), "modelled", (note,)
    sources |= {k: "modelled" for k in ("burst_ratio", "kv_tokens_per_sequence") if metrics and metrics[0]}
    kv_tokens = float(row["kv_tokens_per_sequence"])
    if np.isnan(kv_tokens):  # a rate series has token sums but no length histograms
        kv_tokens = float(row["input_tokens_per_request"]) + float(row["output_tokens_per_request"])
        sources["kv_tokens_per_sequence"] = "assumed"
        notes += (f"no token-length distribution (a rate series): KV tokens per sequence taken as the mean input + "
                  f"output tokens, {kv_tokens:.0f}, not its {cfg.report.kv_tokens_quantile:g} quantile",)
    # the histograms count every status, the means only 2xx (and metrics hours' coarse `le` buckets
    # are off by up to a bucket): keep the shape, take the exact mean of the work the fleet serves
    means = {"input_tokens": float(row["input_tokens_per_request"]),
             "output_tokens": float(row["output_tokens_per_request"])}
    histograms = {k: with_mean(h, means[k]) for k, h in token_histograms(con, row["window_after_utc"], models).items()}
    return MeasuredInputs(
        first_ts_utc=pd.Timestamp(row["first_ts_utc"]), last_ts_utc=pd.Timestamp(row["last_ts_utc"]),
        requests=int(row["requests"]), input_tokens_per_request=float(row["input_tokens_per_request"]),
        output_tokens_per_request=float(row["output_tokens_per_request"]), latency_s=latency_s,
        kv_tokens_per_sequence=kv_tokens, burst_ratio=burst,
        interruptible_share=share,
        kv_tokens_quantile=cfg.report.kv_tokens_quantile,
        input_tokens_histogram=histograms["input_tokens"], output_tokens_histogram=histograms["output_tokens"],
        sources=sources, notes=notes, defaulted=defaulted_columns(con),  # s7-honest
        derived=metrics_rows(*metrics) if metrics else {}, metrics_step_s=metrics[1] if metrics else None)


def metrics_hours(cur: duckdb.DuckDBPyConnection, window_days: int) -> tuple[int, int | None, int] | None:
    """``(hours, step_s, rate_hours)`` of the hours fed by metrics in the measuring window; ``None`` without any.

    ``cur`` has the ``plan_request_mix_hourly`` view (:func:`capplan.rollups.rollup_views`).
    """
    (exists,) = cur.execute(sql.load("rpt_cli_table_exists"), {"table_name": "metrics_ledger"}).fetchall()[0]
    if not exists:
        return None
    hours, step_s, rate_hours = cur.execute(sql.load("rpt_plan_metrics_hours"), {"window_days": window_days}).fetchone()
    return (int(hours), None if step_s is None else int(step_s), int(rate_hours)) if hours else None


def metrics_rows(hours: int, step_s: int | None, rate_hours: int) -> dict[str, tuple[Any, str, str]]:
    """Assumptions-table rows saying how the peak and the KV tokens of metrics hours were derived (docs/metrics.md)."""
    step = f"{step_s // 60} min" if step_s and step_s % 60 == 0 else f"{step_s} s" if step_s else "scrape-step"
    rows = {"metrics hours in the window": (hours, "h", "measured"),
            "busiest second (metrics hours)": (
                f"peak from {step} rate, not measured per second: the busiest {step} step's mean rate, lower than a "
                "logged busiest second (a quarter of it in docs/metrics.md's proof); shown in the daily "
                "peak-to-average chart and capplan profile, not used for sizing", "requests/s", "modelled")}
    if rate_hours < hours:
        rows["requests per hour (metrics hours)"] = (
            "counted when a request finishes (the engines' counters), not at its arrival as a log files it: the "
            "hours differ from an arrival log's by the requests in flight at their boundaries (≈ λ·W), and the "
            "forecast's busiest hour can move by more (docs/metrics.md)", "requests", "measured")
        rows["peak in flight (metrics hours)"] = (
            f"peak from {step} rate, not measured per second: requests in flight swept over the counted arrivals of "
            f"each {step} step, latencies drawn from the hour's latency histogram (median of draws)", "requests",
            "modelled")
        rows["KV tokens per sequence (metrics hours)"] = (
            "input and output length histograms paired rank by rank (their joint is not exported): the sum of the "
            "two quantiles, each within the bucket error of docs/metrics.md", "tokens", "modelled")
    if rate_hours:
        rows["peak in flight (rate-series hours)"] = (
            f"peak from {step} rate, not measured per second: no latency in a rate series, the Poisson model of "
            f"the busy hours' mean requests in flight ({rate_hours} h)", "requests", "modelled")
    return rows
