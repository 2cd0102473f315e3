"""Turning a raw traffic series into a gap-free array the models can fit.

Checks the input, fills flagged gaps, damps short incident spikes, picks the
modelling scale (log for positive series) and detects seasonal periods.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

#: Seasonal periods worth testing, by pandas frequency alias of the index. [steps]
SEASON_CANDIDATES: dict[str, tuple[int, ...]] = {
    "min": (60, 1440),
    "15min": (96, 672),
    "30min": (48, 336),
    "h": (24, 168),
    "D": (7, 365),
    "B": (5, 260),
    "W": (52,),
    "MS": (12,),
    "ME": (12,),
    "QS": (4,),
    "QE": (4,),
}
#: Periods tested for a series on a plain ``RangeIndex``. [steps]
RANGE_INDEX_CANDIDATES = (7, 12, 24, 52, 168)
#: Critical value of the seasonality test (one-sided 90 %, as in M4's Naive2).
ACF_CRITICAL = 1.645
#: A point is an outlier when it is this many robust standard deviations from its seasonal neighbours.
OUTLIER_SIGMAS = 5.0
#: The log scale is ``log(y + c)`` with ``c`` lifting the smallest value to this share of the median. [fraction]
LOG_FLOOR_SHARE = 0.05
#: Largest share of zero observations read as logging gaps rather than as demand. [fraction]
RARE_ZERO_SHARE = 0.05

#: Fewest observed (non-NaN) values a series needs to be forecast at all. [steps]
MIN_OBSERVATIONS = 3


def check_series(y: pd.Series) -> pd.Series:
    """Return ``y`` as float with a regular index, or raise ``ValueError`` saying what is wrong.

    Parameters
    ----------
    y : pandas.Series
        Non-negative observations on a regular ``DatetimeIndex`` (with a
        frequency that pandas can infer) or a ``RangeIndex``. NaN marks a gap.
    """
    if not isinstance(y, pd.Series):
        raise ValueError(f"y must be a pandas Series, got {type(y).__name__}")
    if not (pd.api.types.is_numeric_dtype(y.dtype) or y.dtype == object):
        raise ValueError(f"y must be numeric, got dtype {y.dtype}")
    values = pd.to_numeric(y, errors="coerce").astype(float)
    bad = values.isna() & y.notna()
    if bad.any():
        raise ValueError(f"y has a non-numeric value {y[bad].iloc[0]!r} at {y.index[bad][0]}")
    if np.isinf(values).any():
        raise ValueError(f"y has an infinite value at {values.index[np.isinf(values)][0]}")
    if (values < 0).any():
        first = values.index[values < 0][0]
        raise ValueError(f"y must be non-negative; found {values[first]} at {first}")
    if isinstance(y.index, pd.DatetimeIndex):
        if frequency(y.index) is None:
            raise ValueError("y's DatetimeIndex has no regular frequency; resample it (e.g. y.asfreq('h')) first")
    elif not isinstance(y.index, pd.RangeIndex):
        raise ValueError(f"y needs a DatetimeIndex or a RangeIndex, got {type(y.index).__name__}")
    if values.notna().sum() < MIN_OBSERVATIONS:
        raise ValueError(f"y needs at least {MIN_OBSERVATIONS} observed values, got {int(values.notna().sum())}")
    return values


def frequency(index: pd.DatetimeIndex) -> str | None:
    """The index's frequency alias (``'h'``, ``'D'`` …), set or inferred, else ``None``."""
    if index.freq is not None:
        return index.freqstr
    if len(index) < 3:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas 3 announces an offset return type; we want the alias
        return pd.infer_freq(index)


def steps_per_day(index: pd.Index) -> int | None:
    """Steps of a day in a regular ``DatetimeIndex`` whose step divides a day (24 for hourly), else ``None``."""
    if not isinstance(index, pd.DatetimeIndex) or (freq := frequency(index)) is None:
        return None
    try:
        step = pd.Timedelta(pd.tseries.frequencies.to_offset(freq))
    except ValueError:  # a calendar frequency (months, business days): no fixed step
        return None
    day = pd.Timedelta(days=1)
    return int(day // step) if step > pd.Timedelta(0) and day % step == pd.Timedelta(0) else None


def future_index(index: pd.Index, horizon: int) -> pd.Index:
    """The ``horizon`` periods that follow ``index``."""
    if isinstance(index, pd.DatetimeIndex):
        return pd.date_range(index[-1], periods=horizon + 1, freq=frequency(index))[1:]
    return pd.RangeIndex(index[-1] + 1, index[-1] + 1 + horizon)


def fill_gaps(values: np.ndarray, period: int | None) -> np.ndarray:
    """Fill NaN with the value one season earlier (else later), then by linear interpolation.

    Leading and trailing NaN are dropped by the caller; a gap in hourly traffic
    is best replaced by the same hour a day before, which keeps the daily shape.
    """
    out = values.astype(float).copy()
    if period and period < len(out):
        for _ in range(2):  # a second pass fills gaps longer than one season
            miss = np.isnan(out)
            back = np.roll(out, period)
            back[:period] = np.nan
            fwd = np.roll(out, -period)
            fwd[-period:] = np.nan
            out[miss] = np.where(np.isnan(back[miss]), fwd[miss], back[miss])
    return pd.Series(out).interpolate(limit_direction="both").to_numpy()


def rare_zeros_as_gaps(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Mark zeros as gaps (NaN) when they are rare in an otherwise positive series.

    A serving pool whose hourly rate is in the tens does not fall to exactly
    zero for an hour and back: such an hour is a logging or pipeline outage, and
    learning it as demand drags the level down and forbids the log scale. Zeros
    are read that way only when they are at most :data:`RARE_ZERO_SHARE` of the
    observed values; a series with more zeros (intermittent demand) keeps them.

    Returns
    -------
    values : numpy.ndarray
        A copy with those zeros replaced by NaN (unchanged when none qualify).
    n_zeros : int
        Zeros turned into gaps. [count]
    """
    observed = values[np.isfinite(values)]
    zeros = int(np.sum(observed == 0))
    if zeros == 0 or zeros > RARE_ZERO_SHARE * observed.size:
        return values, 0
    out = values.astype(float).copy()
    out[out == 0] = np.nan
    return out, zeros


def damp_outliers(z: np.ndarray, period: int | None) -> tuple[np.ndarray, int]:
    """Replace short incident spikes by the median of the same phase in neighbouring seasons.

    A point is flagged when it lies more than :data:`OUTLIER_SIGMAS` robust
    standard deviations (1.4826·MAD) from the median of the same phase over the
    two seasons either side. Only runs of flagged points shorter than half a
    season are replaced; a longer run is a level shift, and a run reaching the
    last observation cannot yet be told from one, so both are kept.

    Returns
    -------
    cleaned : numpy.ndarray
    n_replaced : int
        Number of points replaced. [count]
    """
    if not period or len(z) < 3 * period:
        return z, 0
    n_cycles = -(-len(z) // period)
    padded = np.full(n_cycles * period, np.nan)
    padded[: len(z)] = z
    table = pd.DataFrame(padded.reshape(n_cycles, period))
    reference = table.rolling(5, center=True, min_periods=3).median().to_numpy().ravel()[: len(z)]
    dev = z - reference
    mad = np.nanmedian(np.abs(dev - np.nanmedian(dev)))
    if not np.isfinite(mad) or mad == 0:
        return z, 0
    flagged = np.abs(dev) > OUTLIER_SIGMAS * 1.4826 * mad
    cleaned = z.copy()
    replaced = 0
    for start, stop in _runs(flagged):
        if stop - start < max(1, period // 2) and stop < len(z) and np.all(np.isfinite(reference[start:stop])):
            cleaned[start:stop] = reference[start:stop]
            replaced += stop - start
    return cleaned, replaced


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Half-open ``(start, stop)`` ranges of consecutive ``True`` values."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)))


def seasonality_significant(z: np.ndarray, period: int) -> tuple[bool, float]:
    """M4's seasonality test: is the autocorrelation at ``period`` above its 90 % bound?

    The bound is ``1.645·sqrt((1 + 2·Σ_{k<m} r_k²) / n)`` (Bartlett's formula),
    the test M4 uses to decide whether Naive2 deseasonalises.

    Returns
    -------
    significant : bool
    acf_at_period : float
    """
    r = _acf(z, period + 1)
    if r is None:
        return False, 0.0
    bound = ACF_CRITICAL * np.sqrt((1 + 2 * np.sum(r[1:period] ** 2)) / len(z))
    return bool(abs(r[period]) > bound), float(r[period])


def _acf(z: np.ndarray, nlags: int) -> np.ndarray | None:
    """Sample autocorrelations up to ``nlags``, or ``None`` for a flat or too short series."""
    from statsmodels.tsa.stattools import acf

    if len(z) < 3 * (nlags - 1) or np.ptp(z) == 0:
        return None
    return acf(z, nlags=nlags, fft=True)


def detect_seasons(z: np.ndarray, index: pd.Index) -> tuple[int, ...]:
    """Seasonal periods with significant positive autocorrelation among the candidates for this index.

    For a ``RangeIndex`` (no frequency to go by) a period must also be a local
    maximum of the autocorrelation, so lags next to a cycle (52 for a 24-step
    cycle) or half a cycle (12) are not mistaken for seasons.
    """
    if isinstance(index, pd.DatetimeIndex):
        freq = frequency(index) or ""
        candidates = SEASON_CANDIDATES.get(freq.lstrip("1"), ())
    else:
        candidates = RANGE_INDEX_CANDIDATES
    kept = []
    for m in candidates:
        significant, r_m = seasonality_significant(z, m)
        if not significant or r_m <= 0:
            continue
        if not isinstance(index, pd.DatetimeIndex):
            r = _acf(z, m + 1)
            if r is None or r[m] < max(r[m - 1], r[m + 1]):
                continue
        kept.append(m)
    return tuple(kept)


def choose_log(values: np.ndarray) -> bool:
    """Model on the log scale when every value is positive (multiplicative seasonality and growth)."""
    return bool(np.all(values > 0))


def log_offset(values: np.ndarray) -> float:
    """Offset ``c`` of the log scale ``log(y + c)``: 0 unless some values are near zero. [unit of y]

    ``c = max(0, LOG_FLOOR_SHARE·median(y) − min(y))``: an hour with a handful of
    requests in a series whose median is thousands would be a huge negative
    outlier in ``log(y)``, swamp the seasonality test and drag every fit down;
    lifted to 5 % of the median it weighs like any other low hour. Series whose
    minimum is already above that keep the plain log (``c = 0``).
    """
    finite = values[np.isfinite(values)]
    return float(max(0.0, LOG_FLOOR_SHARE * np.median(finite) - np.min(finite))) if finite.size else 0.0


def check_seasons(season_lengths: Sequence[int]) -> tuple[int, ...]:
    """Sorted unique seasonal periods, or ``ValueError`` for a period below 2."""
    seasons = tuple(sorted({int(m) for m in season_lengths}))
    if any(m < 2 for m in seasons):
        raise ValueError(f"season_lengths must be integers >= 2, got {tuple(season_lengths)}")
    return seasons
