"""The size stage: the fleet for each month's design peak and for every forecast hour, at P10/P50/P90.

Every fleet is :func:`capplan.sizing.fleet.size_fleet` of one load with the plan's
:class:`~capplan.sizing.fleet.FleetSpec` (built once from ``[sizing]``) and the request
mix measured from the logs (:class:`~capplan.plan.inputs.MeasuredInputs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from capplan.plan.calendar import hours_in_months
from capplan.plan.inputs import MeasuredInputs
from capplan.sizing.fleet import (FleetSizing, FleetSpec, latency_curve, monotone_step_map, operating_latency_s,
                                  size_fleet)

#: Plan levels and the forecast column each is read from.
LEVELS = {"P10": "lo_80", "P50": "mean", "P90": "hi_80"}

#: The load terms of a fleet that come from the logs (:data:`capplan.sizing.fleet.MEASURABLE_INPUTS`).
MEASURED_LOAD = ("peak_qps", "latency_s", "output_tokens_per_request", "input_tokens_per_request",
                 "kv_tokens_per_sequence")


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


@dataclass(frozen=True)
class SizedFleet:
    """The size stage's results: the fleet per month, and the first month's P50 fleet with its queueing.

    Attributes
    ----------
    months : pandas.DataFrame
        :class:`MonthlyFleet`.
    first_p50 : FleetSizing
        The first planned month's fleet at its P50 design peak.
    latency : pandas.DataFrame
        :func:`capplan.sizing.fleet.latency_curve` of ``first_p50``: ``label``, ``utilisation``
        [fraction], ``latency_s`` [s].
    operating_latency_s : float
        ``first_p50``'s mean latency at its target utilisation. [s]
    """

    months: pd.DataFrame
    first_p50: FleetSizing
    latency: pd.DataFrame
    operating_latency_s: float


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


def fleet_for(peak_qps: float, spec: FleetSpec, measured: MeasuredInputs) -> FleetSizing:
    """:func:`capplan.sizing.fleet.size_fleet` for one peak load, with the plan's settings and the logs' mix."""
    return size_fleet(
        peak_qps=peak_qps, latency_s=measured.latency_s,
        output_tokens_per_request=measured.output_tokens_per_request,
        input_tokens_per_request=measured.input_tokens_per_request,
        kv_tokens_per_sequence=measured.kv_tokens_per_sequence, kv_tokens_quantile=measured.kv_tokens_quantile,
        measured_inputs=MEASURED_LOAD, spec=spec)


def size_by_month(demand: pd.DataFrame, spec: FleetSpec, measured: MeasuredInputs) -> pd.DataFrame:
    """Fleet per month at P10/P50/P90 from :func:`monthly_peak_qps`'s frame.

    Returns one row per month: ``gpus_p10``/``gpus_p50``/``gpus_p90`` (total, with headroom) [GPUs],
    ``gpus_throughput``/``gpus_memory`` (each constraint alone at P50, before headroom) [GPUs],
    ``binding`` at P50.
    """
    rows = []
    for rec in demand.itertuples(index=False):
        fleets = {level: fleet_for(getattr(rec, f"qps_{level.lower()}"), spec, measured) for level in LEVELS}
        p50 = fleets["P50"]
        rows.append({"month": rec.month, **{f"gpus_{lv.lower()}": f.total_gpus for lv, f in fleets.items()},
                     "gpus_throughput": p50.gpus_by_throughput, "gpus_memory": p50.gpus_by_memory,
                     "binding": p50.binding_constraint})
    return pd.DataFrame(rows)


def fleet_by_month(forecast: pd.DataFrame, months: list[str], spec: FleetSpec,
                   measured: MeasuredInputs, peaks: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`monthly_peak_qps` (or ``peaks``, the same frame) joined with :func:`size_by_month`, validated."""
    # s7-honest: ``peaks`` from capplan.plan.demand (history policy, P90 of the month's peak) when given
    demand = monthly_peak_qps(forecast, months, measured.burst_ratio) if peaks is None else peaks
    return MonthlyFleet.validate(demand.merge(size_by_month(demand, spec, measured), on="month"))


def size_months(forecast: pd.DataFrame, months: list[str], spec: FleetSpec, measured: MeasuredInputs,
                peaks: pd.DataFrame | None = None) -> SizedFleet:
    """The size stage: :func:`fleet_by_month`, and the first month's P50 fleet with its latency curve."""
    by_month = fleet_by_month(forecast, months, spec, measured, peaks)  # s7-honest: peaks
    first = fleet_for(float(by_month["qps_p50"].iloc[0]), spec, measured)
    return SizedFleet(by_month, first, latency_curve(first), operating_latency_s(first))


def hourly_need_gpus(forecast: pd.DataFrame, months: list[str], spec: FleetSpec,
                     measured: MeasuredInputs) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Hourly fleet (whole GPUs, with headroom) over the planned months at P10/P50/P90.

    Each hour's busiest load is ``burst_ratio`` times its forecast mean QPS; the
    fleet for it is :func:`fleet_for`'s ``total_gpus``. Returns the hours (UTC,
    ``datetime64[h]``) and ``{level: GPUs per hour}``. [GPUs]
    """
    part = hours_in_months(forecast, months)
    qps = {level: measured.burst_ratio * part[column].to_numpy(float) for level, column in LEVELS.items()}
    every = np.concatenate(list(qps.values()))
    gpus = monotone_step_map(lambda q: fleet_for(float(q), spec, measured).total_gpus, every)
    n = len(part)
    need = {level: gpus[i * n:(i + 1) * n].astype(float) for i, level in enumerate(qps)}
    return pd.DatetimeIndex(part.index).to_numpy().astype("datetime64[h]"), need
