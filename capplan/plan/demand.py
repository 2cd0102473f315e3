"""The plan's demand under the history policy: the hourly forecast and each month's design peak.

:func:`plan_demand` is the forecast stage with :mod:`capplan.forecasting.history` applied:

- history shorter than a growth forecast needs: no forecast; a flat hourly level
  (:func:`~capplan.forecasting.history.flat_forecast`) for the cost, and every month's design peak
  at the **observed peak** (:func:`flat_peak_qps`);
- else the forecast with the seasons the history supports, intervals never narrower than the
  observed variation (:func:`~capplan.forecasting.history.floor_intervals`) and hours beyond the
  supported horizon flattened; each month's design peak is the P10/P50/P90 of the month's
  **simulated maximum** hour (:func:`path_peak_qps`, sample paths of that forecast), not the
  maximum of the hourly bounds (:func:`capplan.plan.fleet.monthly_peak_qps`, which treats every
  hour as erring to its P90 at once), and each month's requests the P10/P50/P90 of the paths' sums.

Every degradation is a sentence in :attr:`PlanDemand.notes` (the report's headline) and a row in
:meth:`PlanDemand.assumptions` (the assumptions table); warnings of the forecaster
(``ShortHistoryWarning``) are caught and turned into notes, not left on the terminal.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from capplan.config import CapplanConfig
from capplan.forecasting.api import fit
from capplan.forecasting.history import (Z_P90, HistoryPolicy, flat_forecast, flatten_beyond, floor_intervals,
                                         history_policy, observed_log_spread, window_note)
from capplan.forecasting.paths import month_peaks
from capplan.plan.calendar import forecast_horizon_hours

HOUR_S = 3600.0
#: Sample paths drawn for each month's design peak and requests. [count]
PLAN_PATHS = 2000
#: How the design peak is formed with a growth forecast (the assumptions table).
PATH_PEAK_RULE = ("P10/P50/P90 over sample paths of the month's busiest forecast hour x burst ratio "
                  "(the distribution of the month's maximum, not the max of hourly P90s)")
#: How the month's requests are formed with a growth forecast.
PATH_TOTAL_RULE = "P10/P50/P90 over sample paths of the month's summed hourly requests (not sums of hourly bounds)"


@dataclass(frozen=True)
class PlanDemand:
    """The forecast stage's result under the history policy.

    Attributes
    ----------
    forecast : pandas.DataFrame
        Hourly ``ForecastFrame`` to the end of the plan (flat when no growth forecast). [requests/s]
    peaks : pandas.DataFrame
        Design peak per month, the frame of :func:`capplan.plan.fleet.monthly_peak_qps`:
        ``month``, ``qps_p10``, ``qps_p50``, ``qps_p90`` [requests/s], ``hours`` [h], plus the
        month's requests ``requests_p10``, ``requests_p50``, ``requests_p90`` [requests].
        ``attrs["method"]`` says how it was formed.
    policy : HistoryPolicy
        What the history allowed.
    notes : tuple of str
        Every degradation, for the report's headline.
    """

    forecast: pd.DataFrame
    peaks: pd.DataFrame
    policy: HistoryPolicy
    notes: tuple[str, ...]

    def assumptions(self) -> dict[str, tuple[str, str, str]]:
        """``name -> (value, unit, source)`` rows for the assumptions table."""
        p = self.policy
        rows = {"history observed": (f"{p.history_h:.1f}", "h", "measured"),
                "demand model": (str(self.forecast.attrs.get("model", "?")),
                                 "", "assumed" if not p.growth_forecast else "modelled"),
                "design peak": ("observed peak hour x burst ratio, held flat" if not p.growth_forecast
                                else PATH_PEAK_RULE, "requests/s", "assumed" if not p.growth_forecast else "modelled"),
                "monthly requests": ("hourly level held flat, band exp(-/+ z x spread)" if not p.growth_forecast
                                     else PATH_TOTAL_RULE, "requests", "assumed" if not p.growth_forecast
                                     else "modelled")}
        if p.growth_forecast:
            rows["growth horizon supported"] = (f"{p.supported_h}", "h", "modelled")
        if "interval_floor" in self.forecast.attrs:
            rows["interval floor"] = (self.forecast.attrs["interval_floor"], "", "measured")
        return rows


def history_hours(hourly: pd.DataFrame) -> float:
    """Observed history of the profile's hourly frame: the sum of its hours' exposure. [h]

    ``exposure_s`` (seconds of the hour inside the observed span) when the frame has it, else one
    hour per non-gap hour.
    """
    observed = ~hourly["is_gap"].astype(bool)
    if "exposure_s" in hourly:
        return float(hourly.loc[observed, "exposure_s"].sum()) / HOUR_S
    return float(observed.sum())


def flat_peak_qps(hourly: pd.DataFrame, months: list[str], forecast: pd.DataFrame, burst_ratio: float,
                  log_spread: float) -> pd.DataFrame:
    """Design peak per month with no growth forecast: the observed peak hour, held flat.

    ``qps_p50 = burst_ratio · max observed hourly avg_qps``; ``qps_p10/p90 = qps_p50 · exp(∓ z₉₀ · σ)``
    with ``σ`` the observed log spread (:func:`~capplan.forecasting.history.observed_log_spread`). [requests/s]
    ``requests_p50`` is 3600 s × the month's hourly ``mean`` of the flat ``forecast``, and P10/P90 the
    same band (a flat level errs the same way all month). [requests]
    """
    peak = burst_ratio * float(hourly["avg_qps"].max())
    band = float(np.exp(Z_P90 * log_spread))
    month = pd.DatetimeIndex(forecast.index).to_period("M").astype(str)
    hours = pd.Series(1, index=forecast.index).groupby(month).size()
    requests = (forecast["mean"].astype(float) * HOUR_S).groupby(month).sum()
    out = pd.DataFrame([{"month": m, "qps_p10": peak / band, "qps_p50": peak, "qps_p90": peak * band,
                         "hours": int(hours[m]), "requests_p10": requests[m] / band, "requests_p50": requests[m],
                         "requests_p90": requests[m] * band} for m in months])
    out.attrs["method"] = "observed peak hour x burst ratio, held flat; band exp(-/+ z90 x observed log spread)"
    return out


def path_peak_qps(result, months: list[str], burst_ratio: float) -> pd.DataFrame:
    """Design peak per month from sample paths: ``burst_ratio`` × P10/P50/P90 of each month's peak hour.

    Same frame as :func:`capplan.plan.fleet.monthly_peak_qps` (``month``, ``qps_p10``, ``qps_p50``,
    ``qps_p90`` [requests/s], ``hours`` [h]), so either can size the fleet, plus the month's requests
    ``requests_p10/p50/p90 = 3600 s ×`` the P10/P50/P90 of the paths' monthly sums [requests].
    ``result`` is a :class:`capplan.forecasting.Fit` of hourly mean QPS (its frame the plan's forecast).
    """
    if burst_ratio < 1:
        raise ValueError(f"burst_ratio must be >= 1 (an hour's peak is at least its mean), got {burst_ratio}")
    peaks = month_peaks(result, n_paths=PLAN_PATHS)
    missing = [m for m in months if m not in peaks.index]
    if missing:
        raise ValueError(f"the forecast has no hours in month(s) {', '.join(missing)}")
    out = pd.DataFrame({"month": months,
                        **{f"qps_p{q}": burst_ratio * peaks.loc[months, f"peak_p{q}"].to_numpy(float)
                           for q in (10, 50, 90)},
                        "hours": peaks.loc[months, "steps"].to_numpy(int),
                        **{f"requests_p{q}": HOUR_S * peaks.loc[months, f"total_p{q}"].to_numpy(float)
                           for q in (10, 50, 90)}})
    out.attrs["method"] = peaks.attrs.get("method", "")
    return out


def window_notes(history_h: float, cfg: CapplanConfig) -> list[str]:
    """The history policy's windows: the drift baseline and every SLO window the history does not fill."""
    d = cfg.drift
    needs = [("the drift test (a window after its baseline)", d.window_days + d.baseline_days)]
    needs += [(f"the window of SLO {s.name!r}", s.window_days) for s in cfg.slos]
    notes = [n for output, days in needs if (n := window_note(output, history_h, days))]
    return [n + (": no drift is tested" if n.startswith("the drift") else ": its SLI covers the shorter history")
            for n in notes]


def plan_demand(hourly: pd.DataFrame, months: list[str], cfg: CapplanConfig, burst_ratio: float) -> PlanDemand:
    """Forecast hourly mean QPS to the end of the plan and each month's design peak, as the history allows.

    ``hourly`` is the profile's hourly traffic of all models (``hour_utc``, ``avg_qps``,
    ``requests``, ``is_gap``; gap hours NaN). The 80 % level is always included (P10/P90).
    """
    y = hourly.set_index("hour_utc")["avg_qps"].astype(float).asfreq("h")
    counts = hourly.set_index("hour_utc")["requests"].astype(float).asfreq("h")
    levels = tuple(sorted(set(cfg.forecast.levels) | {80}))
    horizon = forecast_horizon_hours(y.index[-1], months)
    policy = history_policy(history_hours(hourly), horizon)
    spread = observed_log_spread(y, counts)
    index = pd.date_range(y.index[-1] + pd.Timedelta(hours=1), periods=horizon, freq="h")
    notes = list(policy.notes) + window_notes(policy.history_h, cfg)
    if not policy.growth_forecast:
        frame = flat_forecast(y, index, levels, policy.daily_cycle, spread)
        return PlanDemand(frame, flat_peak_qps(hourly, months, frame, burst_ratio, spread), policy, tuple(notes))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit(y, horizon, season_lengths=policy.seasons, levels=levels)
    notes += list(dict.fromkeys(f"forecast: {w.message}" for w in caught))  # each warning once
    frame = floor_intervals(result.frame, spread)
    if policy.flattened:
        frame = flatten_beyond(frame, policy.supported_h, 168 if policy.weekly_cycle else 24)
    # the paths keep the floored, flattened frame's hourly quantiles and add how hours err together
    peaks = path_peak_qps(replace(result, frame=frame), months, burst_ratio)
    return PlanDemand(frame, peaks, policy, tuple(notes))
