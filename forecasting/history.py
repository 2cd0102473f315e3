"""The history policy: how much history each output needs, and what is allowed below it. No I/O.

One home for the rule "no confident number from too little data". Span in, allowed outputs out:

| output | needs | below it |
|---|---|---|
| daily cycle | :data:`DAILY_CYCLE_H` = 48 h (two cycles) | no hour-of-day shape: a flat level |
| weekly cycle | :data:`WEEKLY_CYCLE_H` = 336 h (two cycles) | the daily cycle only |
| growth forecast | :data:`GROWTH_FORECAST_H` = 336 h (14 days) | no forecast: the plan sizes at the observed peak, flat |
| horizon of a growth forecast | at most :data:`HORIZON_PER_HISTORY` × the history | later hours flattened: the last supported week repeated |
| horizon of a daily target (requests/day, peak-hour QPS) | at most :data:`HORIZON_PER_HISTORY` × the observed days | later days flattened: the last supported week repeated (:func:`limit_horizon`) |
| monthly totals | the months' days within :data:`HORIZON_PER_HISTORY` × the observed days | refused, with the days that exist and are needed (:func:`monthly_horizon_refusal`) |
| drift baseline | ``baseline_days + window_days`` | no drift test |
| SLO window | ``window_days`` | SLI over the shorter history, said so |

Two cycles of a season is the forecaster's own rule (:func:`capplan.forecasting.api.fit` drops a
season with fewer, with a :class:`~capplan.forecasting.api.ShortHistoryWarning`); two weeks is the
shortest history in which a level change over days is told apart from one week's shape.

Intervals are never narrower than the data allow (:func:`floor_intervals`): every ``lo_L``/``hi_L``
is at least ``mean · exp(∓ z_L · σ)`` with ``σ`` from :func:`observed_log_spread` (the hour-to-hour
variation the history shows, and never below the Poisson noise of the hour's count).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtri

#: History needed to fit a daily cycle: two cycles. [h]
DAILY_CYCLE_H = 48
#: History needed to fit a weekly cycle: two cycles. [h]
WEEKLY_CYCLE_H = 336
#: History needed before growth is forecast at all. [h]
GROWTH_FORECAST_H = 336
#: A growth forecast reaches at most this many times the history ahead; later hours are flattened. [ratio]
HORIZON_PER_HISTORY = 1.0
#: ASSUMED smallest log spread of an hour when the history has too few hours to measure one. [log ratio]
MIN_LOG_SPREAD = 0.10
#: Fewer differences than this and the spread is at least :data:`MIN_LOG_SPREAD`. [count]
MIN_SPREAD_SAMPLES = 24
#: Normal score of the 80 % central interval's upper bound (P90). [-]
Z_P90 = float(ndtri(0.9))


@dataclass(frozen=True)
class HistoryPolicy:
    """What ``history_h`` hours of history allow, and one note per thing refused or flattened.

    Attributes
    ----------
    history_h : float
        Observed history (sum of the hours' observed exposure). [h]
    daily_cycle, weekly_cycle, growth_forecast : bool
        Whether each may be fitted.
    horizon_h : int
        Hours asked for. [h]
    supported_h : int
        Hours ahead a growth forecast may reach (0 without one). [h]
    notes : tuple of str
        One sentence per degradation: what is missing, how much exists and how much is needed.
    """

    history_h: float
    daily_cycle: bool
    weekly_cycle: bool
    growth_forecast: bool
    horizon_h: int
    supported_h: int
    notes: tuple[str, ...]

    @property
    def seasons(self) -> tuple[int, ...]:
        """Seasonal periods the history supports, for the forecaster. [h]"""
        return tuple(m for m, ok in ((24, self.daily_cycle), (168, self.weekly_cycle)) if ok)

    @property
    def flattened(self) -> bool:
        """True when a growth forecast is cut short of the horizon."""
        return self.growth_forecast and self.supported_h < self.horizon_h

    def table(self) -> list[dict[str, str]]:
        """One row per output: needed and available history, and what the plan does. For the report."""
        have = f"{self.history_h:.1f} h"
        rows = [("daily cycle", DAILY_CYCLE_H, self.daily_cycle, "flat level, no hour-of-day shape"),
                ("weekly cycle", WEEKLY_CYCLE_H, self.weekly_cycle, "daily cycle only"),
                ("growth forecast", GROWTH_FORECAST_H, self.growth_forecast,
                 "no forecast: sized at the observed peak, assumed flat")]
        out = [{"output": name, "needs": f"{need} h", "have": have, "used": "yes" if ok else "no",
                "below it": below} for name, need, ok, below in rows]
        out.append({"output": "growth horizon", "needs": f"{self.horizon_h} h",
                    "have": f"{self.supported_h} h supported", "used": "yes" if not self.flattened else "partly",
                    "below it": "later hours repeat the last supported week (flat)"})
        return out


def history_policy(history_h: float, horizon_h: int) -> HistoryPolicy:
    """The history policy for ``history_h`` observed hours and a forecast of ``horizon_h`` hours.

    Parameters
    ----------
    history_h : float
        Observed history. [h]
    horizon_h : int
        Hours the plan needs forecast. [h]

    Examples
    --------
    >>> history_policy(3, 2000).growth_forecast
    False
    """
    if history_h < 0 or horizon_h < 0:
        raise ValueError(f"history_h and horizon_h must be >= 0, got {history_h}, {horizon_h}")
    daily, weekly, growth = history_h >= DAILY_CYCLE_H, history_h >= WEEKLY_CYCLE_H, history_h >= GROWTH_FORECAST_H
    supported = supported_steps(history_h, horizon_h) if growth else 0  # hours: the same rule as any step
    notes = []
    if not growth:
        notes.append(f"only {history_h:.1f} h of history (a growth forecast needs {GROWTH_FORECAST_H} h = "
                     f"{GROWTH_FORECAST_H // 24} days): no growth forecast; every month is sized at the observed "
                     "peak, assumed flat (no growth, no decline)")
    if not daily:
        notes.append(f"{history_h:.1f} h of history is less than two daily cycles ({DAILY_CYCLE_H} h): "
                     "no hour-of-day shape is modelled")
    elif not weekly:
        notes.append(f"{history_h:.1f} h of history is less than two weekly cycles ({WEEKLY_CYCLE_H} h): "
                     "no day-of-week shape is modelled")
    if growth and supported < horizon_h:
        notes.append(f"the growth forecast reaches {supported} h ({supported / 24:.0f} days) ahead, "
                     f"{HORIZON_PER_HISTORY:g}x the {history_h:.0f} h of history; the remaining "
                     f"{horizon_h - supported} h repeat the last supported week (flat)")
    return HistoryPolicy(float(history_h), daily, weekly, growth, int(horizon_h), supported, tuple(notes))


def window_note(output: str, history_h: float, needed_days: float) -> str | None:
    """A sentence when ``history_h`` is shorter than the ``needed_days`` an output (SLO window, drift baseline) needs."""
    if history_h >= needed_days * 24:
        return None
    have = f"{history_h:.1f} h" if history_h < 48 else f"{history_h / 24:.1f} days"  # an hour is no "0.0 days"
    return f"{output} needs {needed_days:g} days of history; only {have} exist"


def observed_log_spread(y: pd.Series, requests_per_step: pd.Series | None = None) -> float:
    """The smallest log spread of one step the history supports: ``σ`` in ``y = level · exp(σ·ε)``.

    ``σ = 1.4826 · MAD(Δ log y) / √2`` with ``Δ`` over one day (same hour yesterday) when the
    history has two days, else over one step; never below ``1 / √(median count)`` (the Poisson noise
    of a step's count) when ``requests_per_step`` is given, nor below :data:`MIN_LOG_SPREAD` (an
    assumption) when fewer than :data:`MIN_SPREAD_SAMPLES` differences exist. [log ratio]

    Parameters
    ----------
    y : pandas.Series
        Positive rate per step (NaN = gap). [requests/s]
    requests_per_step : pandas.Series, optional
        Requests counted in each step. [requests]
    """
    values = y.astype(float).to_numpy()
    positive = np.where(values > 0, values, np.nan)
    lag = 24 if np.isfinite(positive).sum() >= DAILY_CYCLE_H else 1
    diffs = np.log(positive[lag:]) - np.log(positive[:-lag]) if len(positive) > lag else np.empty(0)
    diffs = diffs[np.isfinite(diffs)]
    sigma = 1.4826 * float(np.median(np.abs(diffs - np.median(diffs)))) / np.sqrt(2) if len(diffs) >= 2 else 0.0
    if len(diffs) < MIN_SPREAD_SAMPLES:  # too few differences to trust a small spread
        sigma = max(sigma, MIN_LOG_SPREAD)
    if requests_per_step is not None:
        counts = requests_per_step.astype(float).to_numpy()
        counts = counts[np.isfinite(counts) & (counts > 0)]
        if len(counts):
            sigma = max(sigma, 1 / np.sqrt(float(np.median(counts))))
    return float(sigma)


def floor_intervals(frame: pd.DataFrame, log_spread: float) -> pd.DataFrame:
    """Widen every interval to at least ``mean · exp(∓ z_L · σ)``, ``z_L = Φ⁻¹(0.5 + L/200)``.

    Keeps the bounds nested (a wider level is widened at least as much) and never narrows one.
    ``attrs["interval_floor"]`` says what was applied.
    """
    out = frame.copy()
    mean = out["mean"].to_numpy(float)
    levels = sorted(int(c[3:]) for c in out.columns if c.startswith("lo_"))
    lower, upper = mean, mean
    for lv in levels:
        z = float(ndtri(0.5 + lv / 200))
        lower = np.minimum(np.minimum(lower, out[f"lo_{lv}"].to_numpy(float)), mean * np.exp(-z * log_spread))
        upper = np.maximum(np.maximum(upper, out[f"hi_{lv}"].to_numpy(float)), mean * np.exp(z * log_spread))
        out[f"lo_{lv}"], out[f"hi_{lv}"] = lower, upper
    out.attrs = dict(frame.attrs)
    out.attrs["interval_floor"] = (f"every interval at least mean x exp(-/+ z x {log_spread:.3f}): the hour-to-hour "
                                   "variation the history shows (and the Poisson noise of an hour's count)")
    return out


def flatten_beyond(frame: pd.DataFrame, supported_steps: int, season: int = 168) -> pd.DataFrame:
    """Hours after ``supported_steps`` repeat the last ``season`` supported hours (no growth beyond).

    With fewer supported steps than ``season`` the whole supported part repeats. Returns a copy with
    ``attrs["flattened_after_steps"]``. [steps]
    """
    n = len(frame)
    if supported_steps >= n:
        return frame
    if supported_steps < 1:
        raise ValueError(f"supported_steps must be >= 1 to flatten a forecast, got {supported_steps}")
    block = min(season, supported_steps)
    source = supported_steps - block + (np.arange(n - supported_steps) % block)
    out = frame.copy()
    out.iloc[supported_steps:] = frame.iloc[source].to_numpy()
    out.attrs = dict(frame.attrs)
    out.attrs["flattened_after_steps"] = int(supported_steps)
    return out


def supported_steps(history_steps: float, horizon: int) -> int:
    """Steps ahead a forecast may reach from ``history_steps`` observed steps: ``min(horizon, ⌊r·history⌋)``,
    ``r`` = :data:`HORIZON_PER_HISTORY`; the same rule for hours, days or any step. [steps]"""
    if history_steps < 0 or horizon < 0:
        raise ValueError(f"history_steps and horizon must be >= 0, got {history_steps}, {horizon}")
    return int(min(horizon, np.floor(HORIZON_PER_HISTORY * history_steps)))


def limit_horizon(frame: pd.DataFrame, history_steps: int, season: int, step: str) -> tuple[pd.DataFrame, str | None]:
    """A forecast frame cut to what ``history_steps`` observed steps support, and the sentence saying so.

    Steps beyond :func:`supported_steps` repeat the last ``season`` supported steps
    (:func:`flatten_beyond`: no growth extrapolated past the history); ``step`` names the unit
    (``"day"``, ``"hour"``) in the note. Returns ``(frame, None)`` when the whole horizon is supported.
    """
    horizon = len(frame)
    supported = supported_steps(history_steps, horizon)
    if supported >= horizon:
        return frame, None
    if supported < 1:
        raise ValueError(f"{history_steps} observed {step}s support no forecast ahead")
    note = (f"{history_steps} observed {step}s support a forecast {supported} {step}s ahead "
            f"({HORIZON_PER_HISTORY:g}x the history); the remaining {horizon - supported} {step}s repeat the "
            f"last supported {'week' if season > 1 else step} (flat, no growth extrapolated)")
    return flatten_beyond(frame, supported, season), note


def monthly_horizon_refusal(history_days: int, horizon_days: int, months: int) -> str | None:
    """Why monthly totals ``horizon_days`` ahead are refused from ``history_days`` observed days, or ``None``.

    A month's total is one number that a flattened tail would silently make up, so months beyond
    :data:`HORIZON_PER_HISTORY` × the history are refused, not flattened.
    """
    if horizon_days <= supported_steps(history_days, horizon_days):
        return None
    return (f"{months} month(s) of totals need a forecast {horizon_days} days ahead, but {history_days} observed "
            f"days support at most {supported_steps(history_days, horizon_days)} ({HORIZON_PER_HISTORY:g}x the "
            "history): ask for fewer months or give more history")


def flat_forecast(y: pd.Series, index: pd.DatetimeIndex, levels: tuple[int, ...], daily_cycle: bool,
                  log_spread: float) -> pd.DataFrame:
    """The no-growth forecast for a history too short to forecast: the observed level, held flat.

    ``mean`` is the mean of the observed hours of the same hour of day (``daily_cycle``), else the
    mean of every observed hour; intervals are ``mean · exp(∓ z_L · σ)`` (:func:`floor_intervals`).
    Unit of ``y``; ``attrs["model"] = "flat (observed level)"``.
    """
    observed = y.dropna()
    if observed.empty:
        raise ValueError("no observed hour to hold flat: the history has no traffic")
    if daily_cycle:
        by_hour = observed.groupby(observed.index.hour).mean()
        mean = by_hour.reindex(index.hour).fillna(float(observed.mean())).to_numpy(float)
    else:
        mean = np.full(len(index), float(observed.mean()))
    frame = pd.DataFrame({"mean": mean}, index=index)
    for lv in sorted(levels):
        frame[f"lo_{lv}"], frame[f"hi_{lv}"] = mean, mean
    frame = floor_intervals(frame, log_spread)
    frame.attrs["model"] = "flat (observed level, " + ("by hour of day)" if daily_cycle else "one level)")
    return frame
