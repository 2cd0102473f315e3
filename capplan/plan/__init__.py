"""The monthly plan's own arithmetic, apart from Prefect: which months, what demand, which inputs.

The Prefect flow (:mod:`flows.plan`) calls these between the stages; they take
and return plain frames so they are tested without a server.

Months
------
The report is named after its first month. By default that is the month after
the *last complete month of data*: the latest calendar month whose last hour
holds requests. A run on 1 December 06:00 UTC with data up to that morning plans
December; data that stops on 29 November (a gap at month end) plans November,
whose remaining hours are forecast. ``--month`` overrides it; a month whose last
hour is already in the data is refused, since it is observed, not planned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from capplan import sql
from capplan.config import CapplanConfig, DriftConfig
from capplan.drift.detect import detect_drift
from capplan.drift.histogram import bin_lower_tokens, daily_histograms
from capplan.rollups import rollup_views
from capplan.profile import ALL_MODELS, hourly_traffic, refresh_rollups
from capplan.slo.status import SloStatus, alert_episodes, budget_burndown, slo_status
from capplan.forecasting.api import forecast
from capplan.sizing.catalogue import get_gpu, get_model
from capplan.sizing.cost.per_request import request_costs
from capplan.sizing.cost.plan import CostPlan, plan_range
from capplan.sizing.cost.prices import load_price_book
from capplan.sizing.fleet import FleetSizing, size_fleet
from capplan.sizing.queueing import mmc_latency_multiplier

_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


def parse_month(month: str) -> pd.Period:
    """``'YYYY-MM'`` as a monthly period; anything else is a ``ValueError`` saying what was expected."""
    if not isinstance(month, str) or not _MONTH.match(month):
        raise ValueError(f"month {month!r} is not of the form YYYY-MM (e.g. 2026-12)")
    return pd.Period(month, freq="M")


def last_complete_month(last_hour_utc: pd.Timestamp) -> pd.Period:
    """The latest month whose last hour is at or before ``last_hour_utc`` (the hour of the newest request)."""
    hour = pd.Timestamp(last_hour_utc).floor("h")
    month = hour.to_period("M")
    month_last_hour = month.end_time.floor("h")
    return month if hour >= month_last_hour else month - 1


def plan_months(last_hour_utc: pd.Timestamp, horizon_months: int, month: str | None = None) -> list[str]:
    """The ``YYYY-MM`` months of the plan: ``horizon_months`` of them from ``month`` (default: see module).

    Raises
    ------
    ValueError
        If ``month`` is malformed or already complete in the data, or ``horizon_months < 1``.
    """
    if horizon_months < 1:
        raise ValueError(f"horizon_months must be >= 1, got {horizon_months}")
    complete = last_complete_month(last_hour_utc)
    first = complete + 1 if month is None else parse_month(month)
    if first <= complete:
        raise ValueError(f"month {first} is already complete in the data (newest request in hour "
                         f"{pd.Timestamp(last_hour_utc):%Y-%m-%d %H:00} UTC); plan {complete + 1} or later")
    return [str(first + i) for i in range(horizon_months)]


def forecast_horizon_hours(last_hour_utc: pd.Timestamp, months: list[str]) -> int:
    """Hours from the hour after ``last_hour_utc`` to the end of the last planned month. [h]"""
    end = parse_month(months[-1]).end_time.floor("h")
    return int((end - pd.Timestamp(last_hour_utc).floor("h")) / pd.Timedelta(hours=1))


def monthly_peak_qps(forecast: pd.DataFrame, months: list[str], burst_ratio: float) -> pd.DataFrame:
    """Design peak QPS per month at P10/P50/P90 from an hourly mean-QPS forecast.

    ``qps_pXX = burst_ratio · max over the month's hours of the forecast column``,
    with P10/P50/P90 taken from ``lo_80``/``mean``/``hi_80``. ``burst_ratio`` turns an
    hour's mean into the load at its busiest moment (measured from logs). [ratio]

    Parameters
    ----------
    forecast : pandas.DataFrame
        Indexed by hour (UTC); columns ``mean``, ``lo_80``, ``hi_80``. [requests/s]
    months : list of str
        ``YYYY-MM`` months; each must have forecast hours.

    Returns
    -------
    pandas.DataFrame
        ``month``, ``qps_p10``, ``qps_p50``, ``qps_p90`` [requests/s] and ``hours`` (forecast hours in the month) [h].

    Notes
    -----
    The max of hourly P90s is an upper band, not the P90 of the monthly max; it
    errs towards more GPUs, which is the safe side for a plan.
    """
    if burst_ratio < 1:
        raise ValueError(f"burst_ratio must be >= 1 (an hour's peak is at least its mean), got {burst_ratio}")
    period = pd.DatetimeIndex(forecast.index).to_period("M").astype(str)
    rows = []
    for month in months:
        part = forecast[period == month]
        if part.empty:
            raise ValueError(f"the forecast has no hours in month {month}")
        rows.append({"month": month, "qps_p10": burst_ratio * float(part["lo_80"].max()),
                     "qps_p50": burst_ratio * float(part["mean"].max()),
                     "qps_p90": burst_ratio * float(part["hi_80"].max()), "hours": len(part)})
    return pd.DataFrame(rows)


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


def assumptions_table(cfg: CapplanConfig, measured: Mapping[str, tuple[Any, str]]) -> pd.DataFrame:
    """Every input of the plan with value, unit and source.

    ``measured`` maps a name to ``(value, unit)`` for figures taken from the logs;
    the config's sizing, cost, forecast and SLO fields are listed as assumed, with
    the unit read from the field name's suffix or its description's ``[unit]``.
    """
    rows = [{"name": k, "value": _fmt(v), "unit": unit, "source": "measured"} for k, (v, unit) in measured.items()]
    for section in ("forecast", "sizing", "cost", "profile"):
        model = getattr(cfg, section)
        for name, info in type(model).model_fields.items():
            rows.append({"name": f"{section}.{name}", "value": _fmt(getattr(model, name)),
                         "unit": _unit(name, info.description or ""), "source": "assumed"})
    for i, slo in enumerate(cfg.slos):
        rows.append({"name": f"slos[{i}] {slo.name} target", "value": _fmt(slo.target), "unit": "fraction",
                     "source": "assumed"})
    return pd.DataFrame(rows, columns=["name", "value", "unit", "source"]).astype(str)


_SUFFIX_UNITS = {"_ms": "ms", "_s": "s", "_usd": "USD", "_fraction": "fraction", "_months": "months",
                 "_days": "days", "_gib": "GiB", "_tokens": "tokens", "_share": "fraction", "_factor": "ratio"}


def _unit(name: str, description: str) -> str:
    if m := re.search(r"\[([^\]]+)\]\s*$", description):
        return m.group(1)
    if re.search(r"\bfraction\b", description):
        return "fraction"
    return next((unit for suffix, unit in _SUFFIX_UNITS.items() if name.endswith(suffix)), "—")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


# --- ingest notes ---------------------------------------------------------------------------------------

def ingest_notes(results: list[Any]) -> list[str]:
    """One line per ingested file that needs a reader's attention: refused, failed or partly quarantined.

    ``results`` are :class:`capplan.ingest.FileResult` records from the ingest flow.
    """
    notes = []
    for r in results:
        if r.status not in ("loaded", "replaced", "unchanged"):
            detail = r.message if r.message.startswith(r.path) else f"{r.path}: {r.message}".rstrip(": ")
            notes.append(f"ingest {r.status}: {detail}")
        elif r.rows_quarantined:
            notes.append(f"ingest: {r.path}: {r.rows_quarantined:,} of {r.rows_read:,} rows quarantined "
                         "(see the quarantine table)")
    return notes


# --- measured inputs --------------------------------------------------------------------------------

MEASURED_UNITS = {"input_tokens_per_request": "tokens/request", "output_tokens_per_request": "tokens/request",
                  "latency_s": "s", "kv_tokens_per_sequence": "tokens", "burst_ratio": "ratio"}


@dataclass(frozen=True)
class MeasuredInputs:
    """The request mix measured from the logs that the sizing uses.

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
        Input+output tokens at ``[report].kv_tokens_quantile``. [tokens]
    burst_ratio : float
        Peak over mean requests in flight within busy hours (see :func:`burst_ratio`). [ratio]
    interruptible_share : float or None
        Share of successful requests to ``[cost].interruptible_models`` or from
        ``[cost].interruptible_tenants`` (``None`` when neither is listed: the
        assumed ``[cost].interruptible_share`` applies). [fraction]
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

    def table(self) -> dict[str, tuple[Any, str]]:
        """``name -> (value, unit)`` for the assumptions table, the data's span first."""
        span = {"first request": (f"{self.first_ts_utc:%Y-%m-%d %H:%M}", "UTC"),
                "last request": (f"{self.last_ts_utc:%Y-%m-%d %H:%M}", "UTC"),
                "requests measured (2xx)": (self.requests, "requests")}
        shares = {} if self.interruptible_share is None else {
            "interruptible_share": (self.interruptible_share, "fraction")}
        return span | {name: (getattr(self, name), unit) for name, unit in MEASURED_UNITS.items()} | shares


def measure_inputs(con: duckdb.DuckDBPyConnection, hourly: pd.DataFrame, cfg: CapplanConfig) -> MeasuredInputs:
    """Measure the request mix over the last ``[report].measured_window_days`` days (``sql/rpt_plan_measured_inputs``).

    The figures come from hourly roll-ups (``sql/int_plan_request_mix_hourly.sql``,
    ``sql/int_plan_kv_tokens_hourly.sql``) of ``requests`` and of stored partitions, so a
    database fed by partitioned roll-ups only measures the same figures; the window is whole
    UTC hours ending with the hour of the newest request.

    Raises
    ------
    ValueError
        If the database has no successful request, or none with a logged latency.
    """
    views = {"plan_request_mix_hourly": ("int_plan_request_mix_hourly", {}),
             "plan_kv_tokens_hourly": ("int_plan_kv_tokens_hourly", {})}
    with rollup_views(con, views) as cur:
        row = cur.execute(sql.load("rpt_plan_measured_inputs"), {
            "window_days": cfg.report.measured_window_days, "kv_quantile": cfg.report.kv_tokens_quantile,
            "models": list(cfg.cost.interruptible_models), "tenants": list(cfg.cost.interruptible_tenants),
        }).df().iloc[0]
    if not row["requests"]:
        raise ValueError("the requests table has no successful (2xx) request to measure the request mix from; "
                         "ingest logs first")
    if not row["requests_with_latency"]:
        raise ValueError("no request in the measuring window has latency_ms logged; the fleet cannot be sized "
                         "without it (Little's law needs the time a request holds a slot)")
    return MeasuredInputs(
        first_ts_utc=pd.Timestamp(row["first_ts_utc"]), last_ts_utc=pd.Timestamp(row["last_ts_utc"]),
        requests=int(row["requests"]), input_tokens_per_request=float(row["input_tokens_per_request"]),
        output_tokens_per_request=float(row["output_tokens_per_request"]), latency_s=float(row["latency_s"]),
        kv_tokens_per_sequence=float(row["kv_tokens_per_sequence"]), burst_ratio=burst_ratio(hourly),
        # measured only when [cost] lists the interruptible models or tenants; else the assumed share applies
        interruptible_share=float(row["interruptible_share"])
        if cfg.cost.interruptible_models or cfg.cost.interruptible_tenants else None)


# --- sizing and cost per month -------------------------------------------------------------------------

LEVELS = {"P10": "lo_80", "P50": "mean", "P90": "hi_80"}


class MonthlyFleet(pa.DataFrameModel):
    """The size stage's output per month: design peak load and fleet at P10/P50/P90, and what binds."""

    month: Series[str] = pa.Field(str_matches=r"^\d{4}-(0[1-9]|1[0-2])$", unique=True)
    qps_p10: Series[float] = pa.Field(ge=0)
    qps_p50: Series[float] = pa.Field(ge=0)
    qps_p90: Series[float] = pa.Field(ge=0)
    hours: Series[int] = pa.Field(ge=1)
    gpus_p10: Series[int] = pa.Field(ge=0)
    gpus_p50: Series[int] = pa.Field(ge=0)
    gpus_p90: Series[int] = pa.Field(ge=0)
    gpus_throughput: Series[float] = pa.Field(ge=0)
    gpus_memory: Series[float] = pa.Field(ge=0)
    binding: Series[str] = pa.Field(isin=["throughput", "memory"])

    @pa.dataframe_check(error="levels must be ordered: qps and GPUs at P10 <= P50 <= P90")
    def ordered_levels(cls, df: pd.DataFrame) -> Series[bool]:
        return ((df["qps_p10"] <= df["qps_p50"]) & (df["qps_p50"] <= df["qps_p90"])
                & (df["gpus_p10"] <= df["gpus_p50"]) & (df["gpus_p50"] <= df["gpus_p90"]))


def fleet_for(peak_qps: float, cfg: CapplanConfig, measured: MeasuredInputs) -> FleetSizing:
    """The stage's :func:`sizing.fleet.size_fleet` for one peak load, with the config's and the logs' inputs."""
    s = cfg.sizing
    return size_fleet(
        peak_qps=peak_qps, latency_s=measured.latency_s,
        output_tokens_per_request=measured.output_tokens_per_request,
        input_tokens_per_request=measured.input_tokens_per_request,
        gpu=get_gpu(s.gpu, s.gpu_catalogue), model=get_model(s.model, s.model_catalogue),
        target_utilisation=s.target_utilisation, spares=s.spares, zones=s.zones, zones_lost=s.zones_lost,
        growth_safety_factor=s.growth_safety_factor, rollout_surge_fraction=s.rollout_surge_fraction,
        warm_pool_gpus=s.warm_pool_gpus, tensor_parallel=s.tensor_parallel, kv_dtype=s.kv_dtype,
        weights_dtype=s.weights_dtype, memory_reserve_fraction=s.memory_reserve_fraction,
        kv_block_size_tokens=s.kv_block_size_tokens,
        kv_tokens_per_sequence=measured.kv_tokens_per_sequence, kv_tokens_quantile=cfg.report.kv_tokens_quantile,
        measured_inputs=("peak_qps", "latency_s", "output_tokens_per_request", "input_tokens_per_request",
                         "kv_tokens_per_sequence"))


def fleet_by_month(forecast: pd.DataFrame, months: list[str], cfg: CapplanConfig,
                   measured: MeasuredInputs) -> pd.DataFrame:
    """:func:`monthly_peak_qps` joined with :func:`size_by_month`, validated as :class:`MonthlyFleet`."""
    demand = monthly_peak_qps(forecast, months, measured.burst_ratio)
    return MonthlyFleet.validate(demand.merge(size_by_month(demand, cfg, measured), on="month"))


def size_by_month(demand: pd.DataFrame, cfg: CapplanConfig, measured: MeasuredInputs) -> pd.DataFrame:
    """Fleet per month at P10/P50/P90 from :func:`monthly_peak_qps`'s frame.

    Returns one row per month: ``gpus_p10``/``gpus_p50``/``gpus_p90`` (total, with headroom) [GPUs],
    ``gpus_throughput``/``gpus_memory`` (each constraint alone at P50, before headroom) [GPUs],
    ``binding`` at P50.
    """
    rows = []
    for rec in demand.itertuples(index=False):
        fleets = {level: fleet_for(getattr(rec, f"qps_{level.lower()}"), cfg, measured) for level in LEVELS}
        p50 = fleets["P50"]
        rows.append({"month": rec.month, **{f"gpus_{lv.lower()}": f.total_gpus for lv, f in fleets.items()},
                     "gpus_throughput": p50.gpus_by_throughput, "gpus_memory": p50.gpus_by_memory,
                     "binding": p50.binding_constraint})
    return pd.DataFrame(rows)


def monotone_step_map(fn: Callable[[float], int], xs: np.ndarray) -> np.ndarray:
    """``fn`` applied to every element of ``xs`` for a non-decreasing step function ``fn``.

    Sorts ``xs`` and bisects: where ``fn`` agrees at both ends of a run it holds over
    the whole run, so the calls grow with the number of steps times ``log n``, not
    with ``n``. Exact as long as ``fn`` never falls as ``x`` rises (the sizing
    stage's GPU count in the load, which its property tests check).
    """
    order = np.argsort(xs, kind="stable")
    sorted_x = np.asarray(xs, dtype=float)[order]
    out = np.empty(sorted_x.size, dtype=np.int64)
    if sorted_x.size == 0:
        return out
    stack = [(0, sorted_x.size - 1, fn(sorted_x[0]), fn(sorted_x[-1]))]
    while stack:
        i, j, fi, fj = stack.pop()
        if fi == fj or j - i <= 1:
            out[i:j + 1] = fi
            out[j] = fj
            continue
        m = (i + j) // 2
        fm = fn(sorted_x[m])
        stack += [(i, m, fi, fm), (m, j, fm, fj)]
    result = np.empty_like(out)
    result[order] = out
    return result


def _in_months(forecast: pd.DataFrame, months: list[str]) -> pd.DataFrame:
    """The forecast's rows whose hour falls in one of ``months`` (``YYYY-MM``)."""
    period = pd.DatetimeIndex(forecast.index).to_period("M").astype(str)
    return forecast[np.isin(period, months)]


def hourly_need_gpus(forecast: pd.DataFrame, months: list[str], cfg: CapplanConfig,
                     measured: MeasuredInputs) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Hourly fleet (whole GPUs, with headroom) over the planned months at P10/P50/P90.

    Each hour's busiest load is ``burst_ratio`` times its forecast mean QPS; the
    fleet for it is :func:`fleet_for`'s ``total_gpus``. Returns the hours (UTC,
    ``datetime64[h]``) and ``{level: GPUs per hour}``. [GPUs]
    """
    part = _in_months(forecast, months)
    qps = {level: measured.burst_ratio * part[column].to_numpy(float) for level, column in LEVELS.items()}
    every = np.concatenate(list(qps.values()))
    gpus = monotone_step_map(lambda q: fleet_for(float(q), cfg, measured).total_gpus, every)
    n = len(part)
    need = {level: gpus[i * n:(i + 1) * n].astype(float) for i, level in enumerate(qps)}
    return pd.DatetimeIndex(part.index).to_numpy().astype("datetime64[h]"), need


def hourly_volumes(forecast: pd.DataFrame, months: list[str],
                   measured: MeasuredInputs) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Requests and generated tokens per forecast hour at P10/P50/P90, for the cost per unit.

    requests = forecast mean QPS × 3600 s; output tokens = requests × the measured
    output tokens per request. Returns ``({level: requests}, {level: tokens})``.
    [requests], [tokens]
    """
    part = _in_months(forecast, months)
    requests = {level: part[column].to_numpy(float) * 3600.0  # [requests/s] → [requests/h]
                for level, column in LEVELS.items()}
    tokens = {level: r * measured.output_tokens_per_request for level, r in requests.items()}
    return requests, tokens


def cost_by_level(hours_utc: np.ndarray, need: dict[str, np.ndarray], cfg: CapplanConfig,
                  measured: MeasuredInputs | None = None,
                  volumes: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None = None) -> dict[str, CostPlan]:
    """The cost stage's blended plans at P10/P50/P90, the reserved count committed at ``[cost].commit_level``.

    ``measured.interruptible_share`` (when measured) replaces the assumed
    ``[cost].interruptible_share``; ``volumes`` (from :func:`hourly_volumes`)
    gives each level its cost per 1,000 requests and per million output tokens.
    """
    book = load_price_book(cfg.cost.price_book)
    prices = book.gpu(cfg.sizing.gpu).option_prices(cfg.cost.reserved_term)
    share = cfg.cost.interruptible_share
    if measured is not None and measured.interruptible_share is not None:
        share = measured.interruptible_share
    requests, tokens = volumes if volumes is not None else (None, None)
    return plan_range(hours_utc, need, commit_level=cfg.cost.commit_level or None, gpu_type=cfg.sizing.gpu,
                      prices=prices, interruptible_share=share,
                      requests_by_level=requests, output_tokens_by_level=tokens)


# --- profile, forecast, queueing -----------------------------------------------------------------------

SEASONS_HOURLY = (24, 168)  # day and week [h]


def forecast_hourly_qps(hourly: pd.DataFrame, months: list[str], cfg: CapplanConfig) -> pd.DataFrame:
    """The forecasting stage's forecast of hourly mean QPS, from the hour after the data to the last planned month.

    ``hourly`` has ``hour_utc`` and ``avg_qps`` [requests/s]; gap hours are NaN when
    ``[profile].empty_hours = "missing"`` (the stage fills them instead of learning a
    false zero) and 0 when ``"zero"``. The 80 % level is always included: P10/P90 are its bounds.
    """
    y = hourly.set_index("hour_utc")["avg_qps"].astype(float).asfreq("h")
    levels = tuple(sorted(set(cfg.forecast.levels) | {80}))
    horizon = forecast_horizon_hours(y.index[-1], months)
    return forecast(y, horizon, season_lengths=SEASONS_HOURLY, levels=levels)


def latency_curve(fleet: FleetSizing, utilisations: np.ndarray | None = None) -> pd.DataFrame:
    """Mean latency against utilisation for one sequence slot (M/M/1) and the fleet's pooled slots (M/M/c).

    The service time is the fleet's ``latency_s`` (the measured mean); ``c`` is the
    fleet's sequence slots, ``total_gpus · seqs_per_gpu``. Columns ``label``,
    ``utilisation`` [fraction], ``latency_s`` [s].
    """
    u = np.linspace(0.02, 0.98, 49) if utilisations is None else np.asarray(utilisations, dtype=float)
    slots = pooled_slots(fleet)
    return pd.concat([
        pd.DataFrame({"label": "one slot (M/M/1)", "utilisation": u,
                      "latency_s": fleet.latency_s * np.asarray(mmc_latency_multiplier(1, u))}),
        pd.DataFrame({"label": f"fleet, {slots:,} slots (M/M/c)", "utilisation": u,
                      "latency_s": fleet.latency_s * np.asarray(mmc_latency_multiplier(slots, u))}),
    ], ignore_index=True)


def pooled_slots(fleet: FleetSizing) -> int:
    """Sequence slots of the whole fleet, ``total_gpus · seqs_per_gpu``, at least 1. [count]"""
    return max(1, int(fleet.total_gpus * fleet.seqs_per_gpu))


def operating_latency_s(fleet: FleetSizing) -> float:
    """Mean latency of the pooled fleet at its target utilisation (M/M/c). [s]"""
    return float(fleet.latency_s * mmc_latency_multiplier(pooled_slots(fleet), fleet.target_utilisation))


# --- SLO and drift evidence ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SloEvidence:
    """One SLO's standing, its error-budget burn-down and its alert episodes (the SLO stage's outputs)."""

    status: SloStatus
    burndown: pd.DataFrame
    episodes: pd.DataFrame


def slo_evidence(con: duckdb.DuckDBPyConnection, cfg: CapplanConfig) -> list[SloEvidence]:
    """Run the SLO stage for every configured SLO."""
    return [SloEvidence(slo_status(con, s), budget_burndown(con, s), alert_episodes(con, s)) for s in cfg.slos]


@dataclass(frozen=True)
class DriftEvidence:
    """Token-length shares of the baseline and latest windows, and the drift stage's priced findings."""

    token_hist: pd.DataFrame   # window ('baseline' | 'latest'), metric, tokens (bin lower edge) [tokens], share [fraction]
    findings: pd.DataFrame     # capplan.drift.pricing.DriftFinding
    caption: str


def window_token_shares(hist: pd.DataFrame, cfg: DriftConfig) -> pd.DataFrame:
    """Share of requests per token bin in the latest ``window_days`` and the ``baseline_days`` before, all models.

    ``hist`` is :func:`capplan.drift.histogram.daily_histograms`'s frame; each bin's ``tokens`` is its
    lower edge (:func:`capplan.drift.histogram.bin_lower_tokens`).
    """
    end = hist["day_utc"].max() + pd.Timedelta(days=1)
    starts = {"latest": end - pd.Timedelta(days=cfg.window_days)}
    starts["baseline"] = starts["latest"] - pd.Timedelta(days=cfg.baseline_days)
    window = pd.Series(pd.NA, index=hist.index, dtype="string")
    window[(hist["day_utc"] >= starts["baseline"]) & (hist["day_utc"] < starts["latest"])] = "baseline"
    window[hist["day_utc"] >= starts["latest"]] = "latest"
    counts = hist.assign(window=window).dropna(subset=["window"]).groupby(
        ["window", "metric", "bin"], as_index=False)["requests"].sum()
    counts["share"] = counts["requests"] / counts.groupby(["window", "metric"])["requests"].transform("sum")
    counts["tokens"] = bin_lower_tokens(counts["bin"])
    return counts[["window", "metric", "tokens", "share"]].astype({"window": str})


def drift_evidence(con: duckdb.DuckDBPyConnection, cfg: CapplanConfig) -> DriftEvidence:
    """Run the drift stage: window shares for the chart and the priced findings for the table."""
    hist = daily_histograms(con)
    findings = detect_drift(con, cfg.drift, request_costs(cfg, hist["model"].unique()))
    caption = (f"Token-length drift per model: the latest {cfg.drift.window_days}-day window against the "
               f"{cfg.drift.baseline_days} days before, priced at the on-demand rate of {cfg.sizing.gpu} "
               f"({len(findings)} finding(s)).")
    return DriftEvidence(window_token_shares(hist, cfg.drift), findings, caption)


def profile_all_models(con: duckdb.DuckDBPyConnection, cfg: CapplanConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Refresh the profile roll-ups; return hourly traffic of all models and its daily peak and mean.

    The daily frame has ``day`` (UTC date), ``peak_qps`` (busiest second of the day) and
    ``avg_qps`` (mean over the day's hours with data). [requests/s]
    """
    refresh_rollups(con)
    hourly = hourly_traffic(con, model=ALL_MODELS, empty_hours=cfg.profile.empty_hours)
    if hourly.empty:
        raise ValueError("the requests table is empty: no traffic to plan from; ingest logs first")
    daily = hourly.groupby(hourly["hour_utc"].dt.floor("D").rename("day")).agg(
        peak_qps=("peak_second_qps", "max"), avg_qps=("avg_qps", "mean")).reset_index()
    return hourly.reset_index(drop=True), daily
