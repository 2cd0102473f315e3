"""Candidate point-forecast models, each a thin wrapper around statsmodels.

Every candidate has the same signature ``f(z, horizon, season_lengths) -> ndarray``:
``z`` is a gap-free float array on the modelling scale (already log-transformed
where :mod:`forecasting.prepare` chose to), ``horizon`` the number of steps
ahead and ``season_lengths`` the seasonal periods in steps, shortest first
(possibly empty). Candidates return point forecasts only; prediction intervals
come from the backtest errors (:mod:`forecasting.intervals`), the same way for
every model, so models can be combined and compared on equal terms.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
from statsmodels.tools.sm_exceptions import ConvergenceWarning

Model = Callable[[np.ndarray, int, Sequence[int]], np.ndarray]

#: Cycles of the shortest season Holt-Winters is fitted on. [seasons]
HW_MAX_SEASONS = 20
#: Weeks of seasonal history the robust seasonal profiles average over. [seasons]
PROFILE_SEASONS = 4
#: Longest level window ``profile_windows`` averages over: the last 1, 2, ..., this many cycles
#: (a week of daily cycles, so no weekday is left out of the longest window). [seasons]
LEVEL_WINDOWS = 7
#: Cycles of the shortest season in a week when no longer season says so: 7 daily cycles, the
#: week of human demand (hourly data, what capplan forecasts). [cycles]
WEEK_CYCLES = 7
#: Weeks ``profile_weekdays`` takes the median of each weekday's relative level over. [weeks]
WEEKDAY_WEEKS = PROFILE_SEASONS
#: ``own_period_naive`` leaves the nominal period only for a lag whose mean absolute change from
#: one cycle to the next is at most this share of the nominal period's: a cycle that clearly runs
#: at another period (a clock that drifts an hour a day), not a lag that fits noise a little
#: better. [ratio]
OWN_PERIOD_GAIN = 0.5
#: Cycles of the nominal period over which ``own_period_naive`` compares the lags. [cycles]
OWN_PERIOD_CYCLES = 3


def _repeat_last(values: np.ndarray, period: int, horizon: int) -> np.ndarray:
    """Continue the last ``period`` values cyclically for ``horizon`` steps."""
    last = values[-period:]
    return np.resize(last, horizon) if period > 0 else np.full(horizon, values[-1])


def _usable(season_lengths: Sequence[int], n: int, cycles: int = 2) -> list[int]:
    """Seasonal periods with at least ``cycles`` full cycles in ``n`` observations."""
    return [m for m in season_lengths if m > 1 and n >= cycles * m]


def naive(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """Random walk: the last value repeated."""
    return np.full(horizon, z[-1], dtype=float)


def seasonal_naive(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """The last cycle of the shortest usable season repeated (naive if none)."""
    usable = _usable(season_lengths, len(z), cycles=1)
    return _repeat_last(z, usable[0], horizon) if usable else naive(z, horizon, ())


def own_period(z: np.ndarray, period: int) -> int:
    """The series' own period near the nominal ``period``: the lag with the smallest mean |change|. [steps]

    Lags from just over half to just under one and a half times ``period`` are compared
    by the mean of ``|z_t - z_(t-lag)|`` over the last :data:`OWN_PERIOD_CYCLES` nominal
    cycles; the best lag replaces ``period`` only where it cuts that mean to
    :data:`OWN_PERIOD_GAIN` of the nominal period's or less. Otherwise the nominal period:
    also where the series repeats exactly at it, and with too little history to compare
    (``OWN_PERIOD_CYCLES`` cycles plus the longest lag).
    """
    if period < 2:
        return period
    lags = np.arange(period // 2 + 1, (3 * period + 1) // 2)
    span = OWN_PERIOD_CYCLES * period
    if len(z) < span + lags[-1]:
        return period
    recent = z[len(z) - span:]
    change = {int(lag): float(np.mean(np.abs(recent - z[len(z) - span - lag:len(z) - lag]))) for lag in lags}
    best = min(change, key=change.get)
    return best if 0 < change[period] and change[best] <= OWN_PERIOD_GAIN * change[period] else period


def own_period_naive(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """The last cycle repeated at the series' own period near the shortest usable season.

    A seasonal naive whose cycle length is read from the data (:func:`own_period`): some
    cycles do not run at the calendar's period (a series whose daily shape comes an hour
    earlier each day repeats every 23 hours, and the 24-hour seasonal naive and every
    seasonal model then miss by an hour a day, more the older the cycles they average).
    Where the nominal period fits, it is :func:`seasonal_naive` and the backtest drops it
    as a duplicate.
    """
    usable = _usable(season_lengths, len(z), cycles=1)
    if not usable:
        return naive(z, horizon, ())
    return _repeat_last(z, own_period(z, usable[0]), horizon)


def seasonal_naive_long(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """The last cycle of the longest usable season repeated (e.g. last week for hourly data)."""
    usable = _usable(season_lengths, len(z), cycles=1)
    return _repeat_last(z, usable[-1], horizon) if usable else naive(z, horizon, ())


def _profile(z: np.ndarray, period: int, seasons: int) -> np.ndarray:
    """Median of each phase over the last ``seasons`` cycles, as deviations from their mean."""
    k = min(seasons, len(z) // period)
    cycles = z[len(z) - k * period:].reshape(k, period)
    prof = np.median(cycles, axis=0)
    return prof - prof.mean()


def seasonal_profile(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """Robust seasonal naive: last cycle's level plus the median shape of recent cycles.

    The shape is the per-phase median over the last :data:`PROFILE_SEASONS` cycles
    of the longest usable season (robust to one incident); the level is the mean
    of the last cycle, so a recent level shift carries forward.
    """
    usable = _usable(season_lengths, len(z), cycles=2)
    if not usable:
        return seasonal_naive(z, horizon, season_lengths)
    m = usable[-1]
    prof = _profile(z, m, PROFILE_SEASONS)
    level = z[-m:].mean()
    # Profiles are built over the whole cycle, so the forecast starts at phase 0 of the next cycle.
    return level + np.resize(prof, horizon)


def profile_ses(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """Median shape of recent cycles on an exponentially smoothed per-cycle level.

    The series is cut into whole cycles of the shortest usable season (ending
    at the last observation); the level of each cycle is its mean, and the
    forecast level is simple exponential smoothing of those levels
    (statsmodels), so a level shift is followed as far as the history says
    shifts persist, and a one-day blip is not. The shape is the per-phase median
    of the last :data:`PROFILE_SEASONS` cycles' deviations from their own level,
    so it tracks a changing amplitude and ignores one odd cycle.
    """
    usable = _usable(season_lengths, len(z), cycles=3)
    if not usable:
        return _ses(z, horizon)
    cycles, shape = _cycles_and_shape(z, usable[0])
    return _ses(cycles.mean(axis=1), 1)[0] + np.resize(shape, horizon)


def profile_ses_hourly(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """Median shape of recent cycles on a level smoothed hour by hour (a level-adjusted seasonal naive).

    The same shape as :func:`profile_ses` (per-phase median of the last
    :data:`PROFILE_SEASONS` cycles' deviations from their own level); the level
    is simple exponential smoothing (statsmodels) of the series with that shape
    taken out, step by step, so a shift that started a few hours before the
    origin already moves the forecast, as far as the fitted smoothing weight
    says recent steps carry over.
    """
    usable = _usable(season_lengths, len(z), cycles=3)
    if not usable:
        return _ses(z, horizon)
    cycles, shape = _cycles_and_shape(z, usable[0])
    return _ses((cycles - shape).ravel(), 1)[0] + np.resize(shape, horizon)


def profile_windows(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """Median shape of recent cycles on a level averaged across estimation windows.

    The same shape as :func:`profile_ses`; the level is the mean, over windows
    of the last 1, 2, ..., :data:`LEVEL_WINDOWS` whole cycles of the shortest
    usable season, of each window's mean level. Averaging forecasts across
    estimation windows is the hedge for a break of unknown date (Pesaran and
    Pick 2011, "Forecast combination across estimation windows"): if the last
    shift persists the short windows carry it, if the last cycle was a blip the
    long ones damp it, and no weight is fitted (a smoothing weight estimated
    from a dozen daily levels is itself noisy). It amounts to fixed weights
    decreasing with age: for 7 cycles 0.37, 0.23, 0.16, 0.11, 0.07, 0.05, 0.02.
    """
    usable = _usable(season_lengths, len(z), cycles=3)
    if not usable:
        return _ses(z, horizon)
    cycles, shape = _cycles_and_shape(z, usable[0])
    levels = cycles.mean(axis=1)[-LEVEL_WINDOWS:]
    level = np.mean([levels[-w:].mean() for w in range(1, len(levels) + 1)])
    return level + np.resize(shape, horizon)


def _cycles_per_week(season_lengths: Sequence[int], period: int) -> int:
    """Cycles of ``period`` in the weekly cycle: the longest season's multiple of it, else :data:`WEEK_CYCLES`."""
    longest = max((m for m in season_lengths if m > period and m % period == 0), default=0)
    return longest // period if longest else WEEK_CYCLES


def models_the_week(season_lengths: Sequence[int], n: int) -> bool:
    """Whether a season with two cycles in ``n`` observations is a multiple of the shortest one.

    Then the seasonal candidates (MSTL, Holt-Winters, the long-season naive) model the weekly cycle
    of hourly data themselves, and :func:`profile_weekdays` is left out of the default set (on M4
    Hourly, every series two weeks or longer, it raised the OWA 0.487 → 0.494 while entering the
    mean of all candidates; session 14).
    """
    usable = _usable(season_lengths, n, cycles=2)
    return any(m > usable[0] and m % usable[0] == 0 for m in usable[1:])


def profile_weekdays(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """Median shape of recent cycles on daily levels that follow the week (weekdays differ).

    Demand for LLM serving has a weekly cycle of daily levels (working days
    and weekends, a weekly batch) that a history of less than two weeks cannot
    show as a season: MSTL needs two weekly cycles, and every other candidate
    gives each coming day the same level. This one cuts the series into whole
    cycles of the shortest usable season ending at the last observation (days,
    for hourly data) and gives the coming day ``j`` the recent level (mean of
    the last ``k`` cycles, ``k`` = a week or what the history leaves) plus how
    the same position of the week stood one week earlier against the ``k``
    cycles before *that* origin: the weekly naive of the daily levels, moved by
    the level change since (a seasonal random walk with drift: a linear trend
    is carried exactly; a step during the last week is read as that weekday's
    own, carried once more on top of the recent level and repeated every week
    of the horizon — the backtest keeps the candidate out where that hurts).
    With several weeks of history the relative level is the median over the
    last :data:`WEEKDAY_WEEKS` weeks (robust to one odd week). The shape is :func:`profile_ses`'s. Needs a week and a cycle of
    history; with less it is :func:`profile_windows`. No parameter is fitted.
    In the default set only for a daily cycle while no season models the week
    (:func:`forecasting.api.default_candidates`): hourly histories shorter than two weeks.
    """
    usable = _usable(season_lengths, len(z), cycles=3)
    if not usable:
        return _ses(z, horizon)
    period = usable[0]
    week = _cycles_per_week(season_lengths, period)
    cycles, shape = _cycles_and_shape(z, period)
    levels = cycles.mean(axis=1)
    n = len(levels)
    k = min(week, n - week)
    if k < 1:
        return profile_windows(z, horizon, season_lengths)
    weeks = [w for w in range(1, WEEKDAY_WEEKS + 1) if n - w * week - k >= 0]
    relative = np.median([levels[n - w * week:n - (w - 1) * week] - levels[n - w * week - k:n - w * week].mean()
                          for w in weeks], axis=0)
    days = -(-horizon // period)
    day_levels = levels[n - k:].mean() + np.resize(relative, days)
    return (np.repeat(day_levels, period) + np.resize(shape, days * period))[:horizon]


def _cycles_and_shape(z: np.ndarray, period: int) -> tuple[np.ndarray, np.ndarray]:
    """Whole cycles ending at the last observation, shape ``(cycles, period)``, and their median shape.

    The shape is the per-phase median of the last :data:`PROFILE_SEASONS`
    cycles' deviations from their own mean (robust to one odd cycle).
    """
    k = len(z) // period
    cycles = z[len(z) - k * period:].reshape(k, period)
    return cycles, np.median((cycles - cycles.mean(axis=1)[:, None])[-PROFILE_SEASONS:], axis=0)


def _damped_holt(x: np.ndarray, horizon: int) -> np.ndarray:
    """Additive damped-trend exponential smoothing (ETS(A,Ad,N)) of a non-seasonal series."""
    from statsmodels.tsa.holtwinters import ExponentialSmoothing

    if len(x) < 10 or np.ptp(x) == 0:
        return np.full(horizon, x[-1], dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = ExponentialSmoothing(x, trend="add", damped_trend=True, initialization_method="estimated").fit()
    out = np.asarray(fit.forecast(horizon), dtype=float)
    return out if np.all(np.isfinite(out)) else np.full(horizon, x[-1], dtype=float)


def _ses(x: np.ndarray, horizon: int) -> np.ndarray:
    """Simple exponential smoothing (ETS(A,N,N)) of a non-seasonal series."""
    from statsmodels.tsa.holtwinters import SimpleExpSmoothing

    if len(x) < 4 or np.ptp(x) == 0:
        return np.full(horizon, x[-1], dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = SimpleExpSmoothing(x, initialization_method="estimated").fit()
    return np.asarray(fit.forecast(horizon), dtype=float)


_DECOMPOSITIONS: dict[tuple, np.ndarray] = {}


def _seasonal_components(z: np.ndarray, usable: tuple[int, ...]) -> np.ndarray:
    """MSTL (STL for one period) seasonal components, shape ``(len(z), len(usable))``.

    Remembers the last few results: ``mstl_ets`` and ``mstl_ses`` decompose the
    same training data at every backtest origin, and MSTL is the costly step.
    """
    from statsmodels.tsa.seasonal import MSTL, STL

    key = (hashlib.blake2b(z.tobytes(), digest_size=16).digest(), usable)
    if key not in _DECOMPOSITIONS:
        if len(usable) == 1:
            seasonal = np.asarray(STL(z, period=usable[0]).fit().seasonal).reshape(-1, 1)
        else:
            seasonal = np.asarray(MSTL(z, periods=list(usable)).fit().seasonal).reshape(len(z), -1)
        if len(_DECOMPOSITIONS) >= 8:
            _DECOMPOSITIONS.pop(next(iter(_DECOMPOSITIONS)))
        _DECOMPOSITIONS[key] = seasonal
    return _DECOMPOSITIONS[key]


def _decompose(z: np.ndarray, season_lengths: Sequence[int], horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Seasonally adjusted series and the seasonal part continued ``horizon`` steps (MSTL).

    Uses statsmodels' MSTL with every usable period: more than two full cycles, as MSTL itself
    drops (with a warning) any period of at least half the series; the future seasonal part is
    each component's last cycle repeated.
    """
    usable = tuple(m for m in _usable(season_lengths, len(z), cycles=2) if 2 * m < len(z))
    if not usable or np.ptp(z) == 0:
        return z.astype(float), np.zeros(horizon)
    seasonal = _seasonal_components(np.ascontiguousarray(z, dtype=float), usable)
    future = sum(_repeat_last(seasonal[:, i], m, horizon) for i, m in enumerate(usable))
    return z - seasonal.sum(axis=1), np.asarray(future, dtype=float)


def mstl_ets(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """MSTL decomposition, damped-trend ETS on the adjusted series, seasons added back."""
    adjusted, future_seasonal = _decompose(z, season_lengths, horizon)
    return _damped_holt(adjusted, horizon) + future_seasonal


def mstl_ses(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """MSTL decomposition, simple exponential smoothing (no trend) on the adjusted series."""
    adjusted, future_seasonal = _decompose(z, season_lengths, horizon)
    return _ses(adjusted, horizon) + future_seasonal


def theta(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """Theta method (statsmodels ``ThetaModel``) with additive deseasonalisation at the shortest season."""
    from statsmodels.tsa.forecasting.theta import ThetaModel

    usable = _usable(season_lengths, len(z), cycles=2)
    if len(z) < 4 or np.ptp(z) == 0:
        return naive(z, horizon, ())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kwargs = {"period": usable[0], "method": "additive"} if usable else {"deseasonalize": False}
        fit = ThetaModel(z, **kwargs).fit()
        return np.asarray(fit.forecast(horizon), dtype=float)


def holt_winters(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """Additive Holt-Winters with damped trend at the shortest season (statsmodels ``ExponentialSmoothing``).

    Fitted on the last :data:`HW_MAX_SEASONS` cycles only: the fit's cost grows
    with length while old cycles barely move the smoothed state.
    """
    from statsmodels.tsa.holtwinters import ExponentialSmoothing

    usable = _usable(season_lengths, len(z), cycles=2)
    if not usable or np.ptp(z) == 0:
        return _damped_holt(z, horizon)
    z = z[-HW_MAX_SEASONS * usable[0]:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ExponentialSmoothing(z, trend="add", damped_trend=True, seasonal="add",
                                   seasonal_periods=usable[0], initialization_method="estimated").fit()
    out = np.asarray(fit.forecast(horizon), dtype=float)
    return out if np.all(np.isfinite(out)) else seasonal_naive(z, horizon, season_lengths)


def fourier_arima(z: np.ndarray, horizon: int, season_lengths: Sequence[int]) -> np.ndarray:
    """Fourier-term regression for every usable season, then AR(2) on its residuals (SARIMAX).

    Two stages rather than one SARIMAX with exogenous terms: least squares for
    the seasonal shape costs milliseconds, while a joint state-space fit with
    ~30 regressors costs seconds per series.
    """
    from statsmodels.tsa.deterministic import DeterministicProcess, Fourier
    from statsmodels.tsa.statespace.sarimax import SARIMAX

    usable = _usable(season_lengths, len(z), cycles=2)
    terms = [Fourier(m, order=min(m // 2, 10 if m > 50 else 6)) for m in usable]
    dp = DeterministicProcess(np.arange(len(z)), constant=True, additional_terms=terms)
    x_in, x_out = dp.in_sample().to_numpy(), dp.out_of_sample(horizon).to_numpy()
    beta, *_ = np.linalg.lstsq(x_in, z, rcond=None)
    resid = z - x_in @ beta
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the forecast needs the fitted parameters and the filtered state only: fitting for the parameters
        # and filtering once skips the smoother and the parameters' covariance that ``fit()`` adds (same forecast)
        model = SARIMAX(resid, order=(2, 0, 0), trend="n")
        fit = model.filter(model.fit(disp=False, maxiter=50, return_params=True), cov_type="none")
    out = x_out @ beta + np.asarray(fit.forecast(horizon), dtype=float)
    return out if np.all(np.isfinite(out)) else seasonal_naive(z, horizon, season_lengths)


#: Every candidate by name; ``forecast(..., candidates=...)`` picks from these keys.
#: ``"<name>@<m>"`` (:func:`with_cycle`) is candidate ``<name>`` fitted with a cycle of ``m`` steps the
#: seasonality test did not confirm (:func:`model_for`).
MODELS: dict[str, Model] = {
    "naive": naive,
    "seasonal_naive": seasonal_naive,
    "seasonal_naive_long": seasonal_naive_long,
    "own_period_naive": own_period_naive,
    "seasonal_profile": seasonal_profile,
    "profile_ses": profile_ses,
    "profile_ses_hourly": profile_ses_hourly,
    "profile_windows": profile_windows,
    "profile_weekdays": profile_weekdays,
    "mstl_ets": mstl_ets,
    "mstl_ses": mstl_ses,
    "theta": theta,
    "holt_winters": holt_winters,
    "fourier_arima": fourier_arima,
}


#: Separates a candidate's name from the cycle it is fitted with in ``"<name>@<m>"``.
CYCLE_MARK = "@"


def with_cycle(name: str, period: int) -> str:
    """The name of candidate ``name`` fitted with a season of ``period`` steps whatever the series' own."""
    return f"{name}{CYCLE_MARK}{period}"


def _fit_with_cycle(base: Model, period: int, z: np.ndarray, horizon: int,
                    season_lengths: Sequence[int]) -> np.ndarray:
    return base(z, horizon, (period,))


def model_for(name: str) -> Model:
    """The model called ``name``: a key of :data:`MODELS`, or ``"<key>@<m>"`` (:func:`with_cycle`), that
    candidate with the season ``(m,)`` in place of the series' own (picklable)."""
    base, _, period = name.partition(CYCLE_MARK)
    return MODELS[base] if not period else partial(_fit_with_cycle, MODELS[base], int(period))


def cycle_of(name: str, season_lengths: Sequence[int]) -> int | None:
    """The shortest season candidate ``name`` is fitted with on a series whose seasons are ``season_lengths``. [steps]"""
    _, _, period = name.partition(CYCLE_MARK)
    return int(period) if period else (min(season_lengths) if season_lengths else None)
