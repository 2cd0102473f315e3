"""``forecast``: automatic, backtested forecasts with calibrated intervals.

Series in, forecast out; no file or database access. See ``docs/forecasting.md``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from capplan.forecasting import backtest, intervals, prepare
from capplan.forecasting.history import monthly_horizon_refusal
from capplan.forecasting.metrics import mase, mase_scale
from capplan.forecasting.models import CYCLE_MARK, MODELS, cycle_of, model_for, models_the_week, with_cycle
from capplan.forecasting.schema import ForecastFrame

#: Candidates tried when ``candidates=None``, cheapest first.
DEFAULT_CANDIDATES = ("seasonal_naive", "seasonal_naive_long", "own_period_naive", "seasonal_profile", "profile_ses",
                      "profile_ses_hourly", "profile_weekdays", "theta", "mstl_ses", "mstl_ets", "holt_winters",
                      "fourier_arima")
#: In the default set only while no season models the week (:func:`default_candidates`).
WEEKDAY_CANDIDATE = "profile_weekdays"
#: Sizes of the combination tried: the mean of the 3 or 5 best candidates by backtest MASE, or of
#: every candidate (0). The size is chosen by leave-one-window-out backtest (:func:`_combination_size`). [count]
COMBINE_SIZES = (3, 5, 0)
#: A larger combination is preferred unless a smaller one's cross-validated MASE is lower by more
#: than this share (the larger is the safer bet on a few short windows). [fraction]
COMBINE_TOLERANCE = 0.10
#: One candidate alone instead of a combination only where its leave-one-window-out MASE is at most
#: this share of the best combination's: a candidate in another class on windows the ranking did not
#: see (a cycle only it follows), not one a little ahead on a few short, noisy windows, where the
#: combination is the safer bet (docs/forecasting.md, session 15, has the measured scores). [ratio]
SINGLE_GAIN = 0.5
#: Size used when there are too few backtest windows to cross-validate the choice. [count]
COMBINE_TOP = 3
#: Backtest origins the chosen combination's interval is calibrated on (the selection windows
#: and older ones, same spacing, as far back as half the history allows). [count]
CALIBRATION_WINDOWS = 10
#: Shortest training share of the history an older calibration origin may leave. [fraction]
CALIBRATION_MIN_TRAIN_SHARE = 0.25
#: Fewest recent observations kept when long history is trimmed (three weeks of hourly data): short
#: series are fitted whole, so the backtests have as many windows as the history allows. [steps]
MIN_TRAIN_STEPS = 504
#: Largest modelling-scale (log) step above the training maximum a forecast or bound may take:
#: 10^6 x the largest value seen. Only a diverged fit comes near it; without it exp() overflows.
LOG_CEILING_ABOVE_HISTORY = float(np.log(1e6))
_CONFORMAL = ("normalised split-conformal over the calibration windows: backtest errors (modelling scale) "
              "divided by a per-step scale s(h), pooled over steps; interval = forecast + quantiles x s(h)")
#: ``interval_method`` -> what ``attrs["interval_method"]`` says (see :data:`forecasting.intervals.METHODS`).
INTERVAL_METHODS = {
    "window_cv_recent": _CONFORMAL + ("; quantile level raised until leave-one-window-out coverage reaches "
                                      "nominal; widened by the factor the most recent window needed from "
                                      "intervals calibrated on the older ones (never narrowed)"),
    "window_cv": _CONFORMAL + "; quantile level raised until leave-one-window-out coverage reaches nominal",
    "pooled": _CONFORMAL,
}


class ShortHistoryWarning(UserWarning):
    """The series is too short for its seasons; simpler models were used."""


@dataclass
class Fit:
    """Everything ``forecast`` decided, for callers that need more than the frame."""

    frame: pd.DataFrame
    z: np.ndarray                      # modelling-scale training values (gap-filled, trimmed)
    log: bool                          # True when z = log(y)
    seasons: tuple[int, ...]           # seasonal periods used [steps]
    components: tuple[str, ...]        # candidate(s) whose mean (modelling scale) is the forecast
    backtest_errors: np.ndarray        # chosen method, (calibration windows, backtest horizon), modelling scale
    info: dict = field(default_factory=dict)
    z_hat: np.ndarray = field(default_factory=lambda: np.empty(0))  # point forecast, modelling scale
    offset: float = 0.0                # c of z = log(y + c) [unit of y]; 0 for the plain log

    def bounds(self, levels: Sequence[int], interval_method: str,
               settings: dict[int, tuple[float, float]] | None = None) -> pd.DataFrame:
        """``mean`` and ``lo_<L>``/``hi_<L>`` from ``z_hat`` and the calibration errors (unindexed).

        ``interval_method`` is one of :data:`INTERVAL_METHODS` (the benchmark
        compares them on one fit); ``settings`` is its :func:`intervals.calibration`
        if already computed.
        """
        mean = self.to_y(self.z_hat)
        columns: dict[str, np.ndarray] = {"mean": mean}
        lower, upper = mean, mean
        offsets = intervals.calibrated_offsets(self.backtest_errors, len(self.z_hat), levels, interval_method, settings)
        for lv, (lo, hi) in sorted(offsets.items()):
            # min/max keep the bounds exactly nested and around the mean despite rounding
            lower = np.minimum(lower, self.to_y(self.z_hat + lo))
            upper = np.maximum(upper, self.to_y(self.z_hat + hi))
            columns[f"lo_{lv}"], columns[f"hi_{lv}"] = lower, upper
        order = ["mean"] + [f"{side}_{lv}" for lv in sorted(levels) for side in ("lo", "hi")]
        return pd.DataFrame(columns)[order]

    def predict_z(self, z: np.ndarray, horizon: int) -> np.ndarray:
        """The chosen method's forecast on the modelling scale, refitted to ``z``."""
        return np.mean([model_for(c)(z, horizon, self.seasons) for c in self.components], axis=0)

    def to_y(self, z: np.ndarray) -> np.ndarray:
        """Back from the modelling scale to the series' unit, never negative.

        Log values are clipped at ``max(self.z) +`` :data:`LOG_CEILING_ABOVE_HISTORY`
        first, so a diverged candidate gives a huge finite value (and a huge
        backtest error) instead of an overflow to ``inf``.
        """
        if not self.log:
            return np.maximum(z, 0.0)
        ceiling = (float(np.max(self.z)) if len(self.z) else 0.0) + LOG_CEILING_ABOVE_HISTORY
        return np.maximum(np.exp(np.minimum(z, ceiling)) - self.offset, 0.0)


def forecast(y: pd.Series, horizon: int, season_lengths: Sequence[int] | None = None,
             levels: Sequence[int] = (80, 95), *, candidates: Sequence[str] | None = None,
             windows: int = 3, calibration_windows: int = CALIBRATION_WINDOWS, interval_method: str = "window_cv_recent",
             max_train_seasons: int = 10, clean_outliers: bool = True) -> pd.DataFrame:
    """Forecast ``y`` for ``horizon`` periods with the model that backtests best, and intervals.

    Parameters
    ----------
    y : pandas.Series
        Non-negative observations in any unit (requests/day, peak QPS, tokens/request)
        on a regular ``DatetimeIndex`` (hourly, daily, …) or a ``RangeIndex``.
        NaN marks a gap (e.g. an hour the profile flagged ``is_gap``).
    horizon : int
        Periods to forecast, in steps of the index frequency. [steps]
    season_lengths : sequence of int, optional
        Seasonal periods in steps (24 and 168 for hourly data). ``None`` detects
        them with an autocorrelation test among periods natural for the frequency.
    levels : sequence of int
        Central prediction-interval levels. [%]
    candidates : sequence of str, optional
        Names from :data:`forecasting.models.MODELS`, fitted as listed; default :func:`default_candidates`
        (:data:`DEFAULT_CANDIDATES`; ``profile_weekdays`` only for a daily cycle with no season
        spanning the week yet), and with them the same candidates fitted with a day the seasonality
        test did not confirm (:func:`unconfirmed_day`).
    windows : int
        Rolling-origin backtest windows the candidates are chosen on. [count]
    calibration_windows : int
        Backtest origins the chosen combination's errors are collected at for the
        intervals: the ``windows`` selection origins and older ones at the same
        spacing, while at least half the history is left to fit on. [count]
    interval_method : str
        How the interval is calibrated, one of :data:`INTERVAL_METHODS`:
        ``"window_cv_recent"`` (default) is ``"window_cv"`` widened by the factor
        the most recent window needed from intervals calibrated on the older
        ones; ``"window_cv"`` raises the quantile level until leave-one-window-out
        coverage on the calibration windows reaches nominal; ``"pooled"`` uses
        the nominal level's conformal quantile.
    max_train_seasons : int
        Fit on at most this many cycles of the longest season (keeps a 2-year
        hourly series fast; old history says little about next weeks). [seasons]
    clean_outliers : bool
        Damp short incident spikes before fitting (:func:`prepare.damp_outliers`).

    Returns
    -------
    pandas.DataFrame
        :class:`ForecastFrame`: ``mean`` and ``lo_<L>``/``hi_<L>`` per level, in
        the unit of ``y``, indexed by the ``horizon`` periods after ``y``.
        ``attrs`` holds the chosen model, every candidate's backtest MASE and
        sMAPE, the cross-validated interval coverage and the interval method, and
        ``"unconfirmed_day"``: ``None``, or whether the day's pool was used and both pools' scores.

    Notes
    -----
    - Model choice: every candidate is refitted at ``windows`` origins on the
      end of the history; the forecast is the mean (on the modelling scale, so
      a geometric mean for log-modelled series) of the ``k`` candidates with the
      lowest backtest MASE (scaled by the in-sample seasonal naive), ``k`` among
      :data:`COMBINE_SIZES` (3, 5 or all) chosen by leave-one-window-out
      backtest, the larger unless a smaller one is better by more than
      :data:`COMBINE_TOLERANCE` (``attrs["combination"]``). Combining, rather
      than taking the single best, won M4 and avoids the occasional blow-up of a
      model that was lucky in a few windows; one candidate alone only where it
      beats every combination by :data:`SINGLE_GAIN` on windows it was not
      ranked on (a cycle only it follows, e.g. ``own_period_naive``). Where the
      test finds no season on sub-daily data, the choice is made on the
      candidates with and without the day as their season, and the pool with the
      lower leave-one-window-out MASE is used (:func:`select_pools`).
    - Zeros that are at most 5 % of the observations are read as logging gaps
      (:func:`prepare.rare_zeros_as_gaps`, ``attrs["zeros_as_gaps"]``).
    - Positive series are modelled on the log scale ``log(y + c)``
      (multiplicative seasons and growth; ``c`` > 0 only when some values are
      near zero, :func:`prepare.log_offset`); ``mean`` is then the
      back-transformed point forecast, a median.
    - Fewer than two cycles of a season: that season is dropped with a
      :class:`ShortHistoryWarning`.

    Examples
    --------
    >>> fc = forecast(hourly_qps, horizon=48, season_lengths=(24,), levels=(80, 95))  # doctest: +SKIP
    >>> fc.attrs["model"]  # doctest: +SKIP
    'mean(holt_winters, mstl_ets, seasonal_naive)'
    """
    return fit(y, horizon, season_lengths, levels, candidates=candidates, windows=windows,
               calibration_windows=calibration_windows, interval_method=interval_method,
               max_train_seasons=max_train_seasons, clean_outliers=clean_outliers).frame


def fit(y: pd.Series, horizon: int, season_lengths: Sequence[int] | None = None,
        levels: Sequence[int] = (80, 95), *, candidates: Sequence[str] | None = None,
        windows: int = 3, calibration_windows: int = CALIBRATION_WINDOWS, interval_method: str = "window_cv_recent",
        max_train_seasons: int = 10, clean_outliers: bool = True) -> Fit:
    """Like :func:`forecast`, returning the :class:`Fit` (frame plus what the choice rests on)."""
    levels = _check_args(horizon, levels, candidates, windows, interval_method)
    values = prepare.check_series(y)
    values = values.loc[values.first_valid_index():]
    z, observed, (log, offset), seasons, day, prep_info = _prepare(values.to_numpy(), values.index, horizon,
                                                                   season_lengths, candidates, max_train_seasons,
                                                                   clean_outliers)
    names = candidate_names(candidates, seasons, len(z), prepare.steps_per_day(values.index), day)
    result = _choose(z, horizon, seasons, names, windows, max(windows, calibration_windows), log, offset, observed)
    settings = intervals.calibration(result.backtest_errors, levels, interval_method)
    result.frame = _frame(result, horizon, levels, values.index, interval_method, settings)
    result.info.update({
        "transform": ("log" if offset == 0 else f"log(y + {offset:.6g})") if log else "none",
        "season_lengths": list(seasons),
        "interval_method": INTERVAL_METHODS[interval_method],
        "coverage": {f"{lv}": intervals.cross_validated_coverage(result.backtest_errors, lv) for lv in levels},
        "quantile_levels": {f"{lv}": used for lv, (used, _) in settings.items()},
        "recent_window_factor": {f"{lv}": factor for lv, (_, factor) in settings.items()},
        "interval_width": _width_note(result.info["calibration"]["train_lengths"], result.info["backtest"]["horizon"],
                                      settings),
        **prep_info,
    })
    result.frame.attrs.update(result.info)
    return result


def _width_note(train_lengths: list[int], h_bt: int, settings: dict[int, tuple[float, float]]) -> str:
    """One sentence on how the interval width was obtained, for ``attrs["interval_width"]``."""
    if not train_lengths:
        return "no backtest window fits in the history: zero-width intervals"
    per_level = "; ".join(f"{lv} %: quantile level {used:.1f} % (the {lv} % quantile of the levels each held-out "
                          f"window's errors needed from the other windows), widened x{factor:.2f} by the most recent window"
                          for lv, (used, factor) in settings.items())
    return (f"errors of {len(train_lengths)} backtest windows of {h_bt} steps, origins after "
            f"{train_lengths[0]}..{train_lengths[-1]} steps of history (every level shift in that span is "
            f"among them), against the observed values (incidents the fit damped included); {per_level}")


def _prepare(raw: np.ndarray, index: pd.Index, horizon: int, season_lengths: Sequence[int] | None,
             candidates: Sequence[str] | None, max_train_seasons: int,
             clean_outliers: bool) -> tuple[np.ndarray, np.ndarray, tuple[bool, float], tuple[int, ...], int | None, dict]:
    """Modelling-scale training values (incidents damped), the same before damping, (whether they are
    logs, the log offset), the seasons used, the unconfirmed day (:func:`unconfirmed_day`) [steps] or
    ``None``, what was done."""
    notes: list[str] = []
    raw, zero_gaps = prepare.rare_zeros_as_gaps(raw)
    log = prepare.choose_log(raw[np.isfinite(raw)])
    offset = prepare.log_offset(raw) if log else 0.0
    rough = prepare.fill_gaps(raw, None)
    seasons = (prepare.detect_seasons(np.log(rough + offset) if log else rough, index)
               if season_lengths is None else prepare.check_seasons(season_lengths))
    short = [m for m in seasons if len(raw) < 2 * m]
    if short:
        notes.append(f"{len(raw)} observations are fewer than two seasons of {short}; those seasons are ignored")
        warnings.warn(notes[-1], ShortHistoryWarning, stacklevel=4)
        seasons = tuple(m for m in seasons if m not in short)
    filled = prepare.fill_gaps(raw, seasons[0] if seasons else None)
    z = (np.log(filled + offset) if log else filled)[-max(max_train_seasons * max(seasons, default=1), 3 * horizon, MIN_TRAIN_STEPS):]
    day = unconfirmed_day(season_lengths, candidates, seasons, len(z), prepare.steps_per_day(index))
    observed, replaced = z, 0
    if clean_outliers:
        # incidents are judged against the same phase of the neighbouring cycles: the day's hours where the
        # test did not confirm the daily cycle, so such a series' outages are damped too. Gaps stay filled
        # linearly there: filled from the day before, they would carry the cycle into the pool without it.
        z, replaced = prepare.damp_outliers(z, seasons[0] if seasons else day)
    info = {"gaps_filled": int(np.isnan(raw).sum()), "zeros_as_gaps": zero_gaps, "outliers_replaced": int(replaced),
            "train_length": len(z), "warnings": notes}
    return z, observed, (log, offset), seasons, day, info


def default_candidates(seasons: Sequence[int], n: int, steps_per_day: int | None) -> tuple[str, ...]:
    """:data:`DEFAULT_CANDIDATES` for a series of ``n`` steps with these seasons and ``steps_per_day``.

    ``profile_weekdays`` (the weekly cycle of daily levels, seven cycles of the shortest season) is
    kept only where that season is the day (``steps_per_day``: 24 for hourly data; ``None`` for a
    calendar frequency or a plain index) and no season with two cycles in the history already spans
    the week (:func:`forecasting.models.models_the_week`): the seasonal candidates model it there,
    and an hourly history shorter than two weeks is where only it can.
    """
    weekdays = (steps_per_day is not None and bool(seasons) and seasons[0] == steps_per_day
                and not models_the_week(seasons, n))
    return tuple(c for c in DEFAULT_CANDIDATES if c != WEEKDAY_CANDIDATE or weekdays)


def candidate_names(candidates: Sequence[str] | None, seasons: tuple[int, ...], n: int,
                    steps_per_day: int | None, day: int | None) -> tuple[str, ...]:
    """The candidates ``fit`` backtests for a series of ``n`` modelling-scale steps with these ``seasons``:
    ``candidates``, else :func:`default_candidates`, and with an unconfirmed ``day`` [steps]
    (:func:`unconfirmed_day`) the default candidates for that season again, fitted with it (``"<name>@<m>"``)."""
    names = tuple(dict.fromkeys(candidates or default_candidates(seasons, n, steps_per_day)))
    if day:
        names += tuple(with_cycle(c, day) for c in default_candidates((day,), n, steps_per_day))
    return names


def unconfirmed_day(season_lengths: Sequence[int] | None, candidates: Sequence[str] | None, seasons: Sequence[int],
                    n: int, steps_per_day: int | None) -> int | None:
    """The day's length in steps where its cycle is also tried though the seasonality test did not confirm it.

    That is where the seasons were detected (``season_lengths`` is ``None``) and the candidates are the
    default ones (``candidates`` is ``None``: names the caller lists are fitted as listed), none was found, the index has
    a day of several steps (hourly data: 24) and the ``n`` modelling-scale steps hold at least three days,
    the history the test needs to judge. Level shifts, which LLM demand has from day to day, raise every
    autocorrelation and with them the test's bound, so a real daily cycle can fail it (13 of 36 ServeGen
    development clients); the backtest then chooses between the candidates without a season and the same
    candidates with the day as their season (``"<name>@24"``, :func:`select_pools`), and incidents are damped
    against the same hours of the neighbouring days (:func:`prepare.damp_outliers`), as with a confirmed
    cycle. ``None`` everywhere else: seasons the caller gave, a detected season, a calendar or plain index,
    too short a history.
    """
    if (season_lengths is not None or candidates is not None or seasons or not steps_per_day or steps_per_day < 2
            or n < 3 * steps_per_day):
        return None
    return steps_per_day


def _check_args(horizon: int, levels: Sequence[int], candidates: Sequence[str] | None, windows: int,
                interval_method: str = "window_cv_recent") -> tuple[int, ...]:
    """Validate the scalar arguments; return the sorted levels."""
    if not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise ValueError(f"horizon must be a positive integer number of steps, got {horizon!r}")
    if windows < 1:
        raise ValueError(f"windows must be >= 1, got {windows}")
    bad = [lv for lv in levels if not 0 < lv < 100]
    if bad or not levels:
        raise ValueError(f"levels must be percentages strictly between 0 and 100, got {tuple(levels)}")
    if interval_method not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval_method {interval_method!r}; valid: {sorted(INTERVAL_METHODS)}")
    unknown = [c for c in candidates or () if c not in MODELS]
    if unknown:
        raise ValueError(f"unknown candidate(s) {unknown}; valid: {sorted(MODELS)}")
    return tuple(sorted({int(lv) for lv in levels}))


def selection_windows(n: int, horizon: int, windows: int) -> tuple[int, int, int, list[int]]:
    """Where the candidates are backtested for the choice, for ``n`` modelling-scale steps.

    Returns the backtest horizon (``horizon``, at most a third of the history) [steps], the
    spacing of the origins (half that horizon) [steps], the shortest training length an origin
    may leave (half the history) [steps] and the training lengths of the ``windows`` latest
    origins that leave it (:func:`backtest.cutoffs`, latest last).
    """
    h_bt = max(1, min(horizon, n // 3))
    step, min_train = max(1, h_bt // 2), max(2, n // 2)
    return h_bt, step, min_train, backtest.cutoffs(n, h_bt, windows, step=step, min_train=min_train)


def selection_targets(z: np.ndarray, to_y, seasons: Sequence[int], h_bt: int,
                      cuts: Sequence[int]) -> tuple[np.ndarray, float]:
    """What the selection windows are scored against: each window's observed values in the series'
    unit, shape ``(len(cuts), h_bt)``, and the MASE scale (the in-sample seasonal naive's mean absolute
    error at the shortest season, the naive's without one) [unit of y]."""
    return to_y(backtest.actuals(z, h_bt, cuts)), mase_scale(to_y(z), seasons[0] if seasons else None)


def _choose(z: np.ndarray, horizon: int, seasons: tuple[int, ...], names: tuple[str, ...],
            windows: int, calibration_windows: int, log: bool, offset: float = 0.0,
            observed: np.ndarray | None = None) -> Fit:
    """Backtest every candidate; the forecast is the mean of the best few on the modelling scale.

    The chosen components are then backtested at older origins too, and the
    combination's errors at all ``calibration_windows`` origins calibrate the intervals.
    Candidates are ranked against ``z`` (incidents damped, so one outage does not pick the
    model), the intervals' errors are taken against ``observed`` (``z`` before damping, default
    ``z``): the future has incidents too, and intervals calibrated on cleaned values under-cover them.
    """
    observed = z if observed is None else observed
    n = len(z)
    h_bt, step, min_train, cuts = selection_windows(n, horizon, windows)
    fc_z = backtest.run_backtest(z, {c: model_for(c) for c in names}, h_bt, seasons, cuts)
    probe = Fit(pd.DataFrame(), z, log, seasons, (), np.empty((0, h_bt)), offset=offset)
    y_act, scale = selection_targets(z, probe.to_y, seasons, h_bt, cuts)
    components, scores, size_scores, day_choice = select_pools(names, fc_z, y_act, probe.to_y, scale)
    if not components:  # every candidate failed somewhere: fall back to the one that cannot fail
        components = ("seasonal_naive",)
        fc_z.update(backtest.run_backtest(z, {"seasonal_naive": MODELS["seasonal_naive"]}, h_bt, seasons, cuts))
    chosen_z = np.mean([fc_z[c] for c in components], axis=0)
    model = components[0] if len(components) == 1 else f"mean({', '.join(components)})"
    scores[model] = backtest.score(y_act, probe.to_y(chosen_z), scale)
    # Older origins add errors from more varied stretches of history, and errors the choice was not tuned on.
    # They may fit on less history than the choice did (down to a quarter of it and three cycles),
    # so that a short series' own past level shifts are among the errors the intervals learn from.
    cycle = cycle_of(components[0], seasons)  # the components come from one pool: one cycle
    cal_min_train = max(2, int(CALIBRATION_MIN_TRAIN_SHARE * n), 3 * cycle if cycle else 2)
    older = [c for c in backtest.cutoffs(n, h_bt, calibration_windows, step=step, min_train=min(min_train, cal_min_train))
             if c not in cuts]
    fc_old = backtest.run_backtest(z, {c: model_for(c) for c in components}, h_bt, seasons, older)
    cal_cuts = older + cuts
    cal_z = np.concatenate([np.mean([fc_old[c] for c in components], axis=0), chosen_z])
    errors = backtest.actuals(observed, h_bt, cal_cuts) - cal_z
    info = {"model": model, "components": list(components), "unconfirmed_day": day_choice,
            "combination": {"size": len(components), "rule": COMBINATION_RULE, "cross_validated_mase": size_scores},
            "backtest": {"horizon": h_bt, "windows": len(cuts), "train_lengths": list(cuts), "scores": scores},
            "calibration": {"windows": len(cal_cuts), "train_lengths": list(cal_cuts)}}
    return Fit(pd.DataFrame(), z, log, seasons, components, errors, info, offset=offset)


def select(names: Sequence[str], fc_z: dict[str, np.ndarray], y_act: np.ndarray, to_y, scale: float, *,
           sizes: Sequence[int] = COMBINE_SIZES, tolerance: float = COMBINE_TOLERANCE,
           single_gain: float = SINGLE_GAIN) -> tuple[tuple[str, ...], dict[str, dict[str, float]], dict[str, float]]:
    """The candidates whose mean is the forecast, from their backtest forecasts alone (no refitting).

    ``fc_z`` holds each candidate's backtest forecasts on the modelling scale, shape
    ``(windows, horizon)``, ``y_act`` the observed values of those windows in the series' unit,
    ``to_y`` the way back from the modelling scale and ``scale`` the MASE scale. A candidate
    whose forecasts equal an earlier one's (the long-season naive with one season) is dropped,
    so it does not count twice; the rest are ranked by backtest MASE and the size of the
    combination is chosen by :func:`_combination_size` (``sizes``, ``tolerance`` and
    ``single_gain`` default to :data:`COMBINE_SIZES`, :data:`COMBINE_TOLERANCE` and
    :data:`SINGLE_GAIN`; ``benchmarks/forecast_selection.py`` replays other values).

    Returns the components (sorted; empty when every candidate failed in some window),
    each distinct candidate's backtest scores, and the combination sizes' cross-validated MASE.
    """
    names = tuple(c for i, c in enumerate(names)
                  if not any(np.array_equal(fc_z[c], fc_z[d], equal_nan=True) for d in names[:i]))
    scores = {c: backtest.score(y_act, to_y(fc_z[c]), scale) for c in names}
    ranked = sorted((c for c in names if np.isfinite(scores[c]["mase"])), key=lambda c: scores[c]["mase"])
    if not ranked:
        return (), scores, {}
    # A combination of the best few unless one candidate halves the best combination's
    # leave-one-window-out error (single_gain): a single winner of a few short windows is often
    # lucky, and averaging avoids blow-ups. How many to average is chosen on windows the ranking did not see.
    per_window = {c: backtest.window_mase(y_act, to_y(fc_z[c]), scale) for c in ranked}
    size, size_scores = _combination_size(ranked, fc_z, per_window, y_act, to_y, scale,
                                          sizes=sizes, tolerance=tolerance, single_gain=single_gain)
    return tuple(sorted(ranked[:size])), scores, size_scores


def select_pools(names: Sequence[str], fc_z: dict[str, np.ndarray], y_act: np.ndarray, to_y, scale: float,
                 **kwargs) -> tuple[tuple[str, ...], dict[str, dict[str, float]], dict[str, float], dict | None]:
    """:func:`select` on the candidates as the seasonality test left them and, where ``names`` also has them
    fitted with a cycle the test did not confirm (``"<name>@<m>"``, :func:`unconfirmed_day`), on those; the
    pool whose chosen combination has the lower leave-one-window-out MASE gives the forecast.

    The two pools are chosen between, not merged: merged, "every candidate" would average the cycle into
    series that have none (on generated random walks the mean MASE rose 1.00 -> 1.15 that way, chosen between
    1.05, docs/forecasting.md, session 17). On a tie the test's verdict (no cycle) stands. ``kwargs`` go to
    :func:`select`.

    Returns :func:`select`'s components, the backtest scores of every candidate of both pools, the chosen
    pool's size scores, and ``None`` without a second pool, else ``{"steps": m, "used": bool,
    "cross_validated_mase": {"without": .., "with": ..}}``.
    """
    plain = tuple(c for c in names if CYCLE_MARK not in c)
    cycled = tuple(c for c in names if CYCLE_MARK in c)
    without = select(plain, fc_z, y_act, to_y, scale, **kwargs)
    if not cycled:
        return (*without, None)
    periods = {cycle_of(c, ()) for c in cycled}
    if len(periods) != 1:
        raise ValueError(f"the candidates with a cycle must share one period, got {sorted(periods)}")
    with_day = select(cycled, fc_z, y_act, to_y, scale, **kwargs)
    score_without, score_with = (_chosen_score(pick, fc_z, y_act, to_y, scale) for pick in (without, with_day))
    used = score_with < score_without
    components, _, size_scores = with_day if used else without
    return components, {**without[1], **with_day[1]}, size_scores, {
        "steps": periods.pop(), "used": bool(used),
        "cross_validated_mase": {"without": score_without, "with": score_with}}


def _chosen_score(pick: tuple[tuple[str, ...], dict, dict[str, float]], fc_z: dict[str, np.ndarray],
                  y_act: np.ndarray, to_y, scale: float) -> float:
    """The leave-one-window-out MASE of the size :func:`select` chose (``pick`` is its result), scored as
    :func:`_combination_size` scores it also where it had no sizes to choose between; with fewer than two
    windows (nothing to leave out) the chosen combination's backtest MASE. ``inf`` for no components."""
    components, scores, _ = pick
    if not components:
        return float("inf")
    if len(y_act) < 2:
        return backtest.score(y_act, to_y(np.mean([fc_z[c] for c in components], axis=0)), scale)["mase"]
    ranked = sorted((c for c in scores if np.isfinite(scores[c]["mase"])), key=lambda c: scores[c]["mase"])
    per_window = {c: backtest.window_mase(y_act, to_y(fc_z[c]), scale) for c in ranked}
    return _left_out_mase(ranked, fc_z, per_window, y_act, to_y, scale, len(components))


COMBINATION_RULE = ("mean (modelling scale) of the k candidates with the lowest backtest MASE; k among "
                    "3, 5 and all, the one whose leave-one-window-out MASE is lowest (each window scored on "
                    "the ranking of the others); the best candidate alone only where its leave-one-window-out "
                    f"MASE is at most {SINGLE_GAIN:g}x the best combination's; where the day's cycle was tried "
                    "unconfirmed, chosen so with and without it, and the one with the lower leave-one-window-out MASE used")


def _combination_size(ranked: Sequence[str], fc_z: dict[str, np.ndarray], per_window: dict[str, np.ndarray],
                      y_act: np.ndarray, to_y, scale: float, *, sizes: Sequence[int] = COMBINE_SIZES,
                      tolerance: float = COMBINE_TOLERANCE,
                      single_gain: float = SINGLE_GAIN) -> tuple[int, dict[str, float]]:
    """How many of the best candidates to average, by leave-one-window-out backtest.

    For each size in ``sizes`` (default :data:`COMBINE_SIZES`; 0 is every candidate) and each
    backtest window, the candidates are ranked on the *other* windows' MASE and the mean of the
    best ``k`` is scored on the held-out window; the largest size whose mean score is within
    ``tolerance`` (:data:`COMBINE_TOLERANCE`) of the lowest wins. The best candidate alone is
    scored the same way and taken only where its score is at most ``single_gain``
    (:data:`SINGLE_GAIN`) of the best combination's. Returns the size and every size's score
    (``{"3": .., "5": .., "all": .., "1": ..}``). With one size left (three candidates or fewer
    for the default sizes: nothing to choose between) that size and no scores; with fewer than
    two windows, the best ``min(COMBINE_TOP, candidates)`` (:data:`COMBINE_TOP`) and no scores.
    ``ValueError`` for no sizes, a negative size or 1 (one candidate alone is ``single_gain``'s).
    """
    if not sizes or any(k < 0 or k == 1 for k in sizes):
        raise ValueError(f"sizes must be combination sizes of at least 2, or 0 for every candidate, not {tuple(sizes)} "
                         "(one candidate alone is governed by single_gain)")
    n_windows = len(y_act)
    ks = tuple(dict.fromkeys(min(k or len(ranked), len(ranked)) for k in sizes))
    if len(ks) == 1:
        return ks[0], {}
    if n_windows < 2:
        return min(COMBINE_TOP, len(ranked)), {}
    cv = {k: _left_out_mase(ranked, fc_z, per_window, y_act, to_y, scale, k) for k in (*ks, 1)}
    single = cv.pop(1)
    best = min(cv.values())
    size = max(k for k, v in cv.items() if v <= (1 + tolerance) * best)
    if single <= single_gain * best:
        size = 1
    return size, {**{("all" if k == len(ranked) else str(k)): v for k, v in cv.items()}, "1": single}


def _left_out_mase(ranked: Sequence[str], fc_z: dict[str, np.ndarray], per_window: dict[str, np.ndarray],
                   y_act: np.ndarray, to_y, scale: float, k: int) -> float:
    """Leave-one-window-out MASE of the mean of the best ``k`` candidates: each window scored with the
    best ``k`` of ``ranked`` by the other windows' MASE (``per_window``); ``inf`` if any window fails."""
    table = np.array([per_window[c] for c in ranked])  # (candidates, windows)
    errors = []
    for w in range(len(y_act)):
        order = np.argsort(np.delete(table, w, axis=1).mean(axis=1), kind="stable")
        errors.append(mase(y_act[w], to_y(np.mean([fc_z[ranked[i]][w] for i in order[:k]], axis=0)), scale))
    return float(np.mean(errors)) if np.all(np.isfinite(errors)) else float("inf")


def _frame(result: Fit, horizon: int, levels: Sequence[int], index: pd.Index, interval_method: str,
           settings: dict[int, tuple[float, float]]) -> pd.DataFrame:
    """Refit the chosen method on all of ``z`` and build the validated forecast frame."""
    result.z_hat = result.predict_z(result.z, horizon)
    frame = result.bounds(levels, interval_method, settings)
    frame.index = prepare.future_index(index, horizon)
    return ForecastFrame.validate(frame)


MONTHLY_INTERVAL_METHOD = ("sum of daily point forecasts; interval from the conformal quantiles of the "
                           "log ratio actual/forecast of month-length sums in backtests at weekly origins "
                           "(grown as sqrt(lead) beyond the backtested horizon), never sums of daily bounds")


def forecast_monthly(y: pd.Series, months: int, levels: Sequence[int] = (80, 95), *,
                     calibration_windows: int = 12, **kwargs) -> pd.DataFrame:
    """Monthly totals of a daily series for the next ``months`` calendar months, with intervals.

    Parameters
    ----------
    y : pandas.Series
        Daily observations (``DatetimeIndex`` with daily frequency), e.g. requests per day.
    months : int
        Whole calendar months to forecast after the month of the last observation. [months]
    levels : sequence of int
        Central prediction-interval levels. [%]
    calibration_windows : int
        Backtest origins, one week apart, the monthly intervals are calibrated on. [count]
    **kwargs
        Passed to :func:`fit` (``season_lengths``, ``candidates`` …).

    Returns
    -------
    pandas.DataFrame
        :class:`ForecastFrame` indexed by month start: ``mean`` is the sum of the
        daily point forecasts, in the unit of ``y`` times days (e.g. requests/month).

    Notes
    -----
    A monthly interval is *not* the sum of daily bounds (that assumes every
    day errs to the same extreme). The daily model is refitted at
    ``calibration_windows`` weekly origins; for each, the log ratio of actual
    to forecast month-length sums gives one error per month, and conformal
    quantiles of those errors bound the month. A month beyond the backtested
    lead time reuses the last month-length block, widened by ``sqrt(lead ratio)``.
    Months that reach further ahead than the observed days support
    (:func:`capplan.forecasting.history.monthly_horizon_refusal`, 1× the history) raise ``ValueError``.
    """
    if not isinstance(y.index, pd.DatetimeIndex) or prepare.frequency(y.index) != "D":
        raise ValueError("forecast_monthly needs a daily series (DatetimeIndex with frequency 'D')")
    if months < 1:
        raise ValueError(f"months must be >= 1, got {months}")
    last = y.index[-1]
    first_month = (last + pd.offsets.MonthBegin(1)).normalize()
    month_starts = pd.date_range(first_month, periods=months + 1, freq="MS")
    horizon = int((month_starts[-1] - last).days) - 1
    refusal = monthly_horizon_refusal(int(y.notna().sum()), horizon, months)
    if refusal:
        raise ValueError(f"forecast_monthly: {refusal}")
    daily = fit(y, horizon, levels=levels, **kwargs)
    blocks = [(int((a - last).days) - 1, int((b - last).days) - 1) for a, b in zip(month_starts, month_starts[1:])]
    means = np.array([daily.frame["mean"].to_numpy()[a:b].sum() for a, b in blocks])
    errors = _monthly_errors(daily, blocks, calibration_windows)
    columns: dict[str, np.ndarray] = {"mean": means}
    lower, upper = means, means
    for lv in sorted(set(int(v) for v in levels)):
        q_lo, q_hi = intervals.conformal_quantiles(errors, lv, axis=0)
        lower, upper = np.minimum(lower, means * np.exp(q_lo)), np.maximum(upper, means * np.exp(q_hi))
        columns[f"lo_{lv}"], columns[f"hi_{lv}"] = lower, upper
    frame = ForecastFrame.validate(pd.DataFrame(columns, index=month_starts[:-1]))
    frame.attrs.update({**daily.info, "interval_method": MONTHLY_INTERVAL_METHOD,
                        "monthly_calibration_windows": int(errors.shape[0])})
    return frame


def _monthly_errors(daily: Fit, blocks: list[tuple[int, int]], windows: int) -> np.ndarray:
    """Log ratios actual/forecast of month-length sums, shape ``(origins, months)``."""
    z = daily.z
    h_bt = max(1, min(blocks[-1][1], len(z) // 3))
    cuts = backtest.cutoffs(len(z), h_bt, windows, step=7, min_train=max(2, len(z) // 2))
    offset = 1e-9 * max(float(np.mean(daily.to_y(z))), 1.0)  # keeps an all-zero series at ratio 1
    rows = []
    for cut in cuts:
        fc = daily.to_y(daily.predict_z(z[:cut], h_bt))
        act = daily.to_y(z[cut: cut + h_bt])
        row = []
        for a, b in blocks:
            length = min(b - a, h_bt)
            a_bt, b_bt = (a, b) if b <= h_bt else (h_bt - length, h_bt)
            growth = np.sqrt((a + b) / max(a_bt + b_bt, 1))  # sqrt of the lead-time ratio of block centres
            row.append(growth * np.log((act[a_bt:b_bt].sum() + offset) / (fc[a_bt:b_bt].sum() + offset)))
        rows.append(row)
    return np.array(rows, dtype=float).reshape(len(cuts), len(blocks))
