"""Sample paths of a fitted forecast, and the distribution of each period's peak and total.

The design peak of a month is the *maximum* of its hourly demand, a random
quantity: its P90 is not the maximum of the hourly P90s (that treats every hour
as erring to its 90 % bound at once). :func:`sample_paths` draws whole future
paths whose hours err together the way the backtests erred together, and
:func:`period_peaks` takes the quantiles of each period's maximum and sum over
those paths.

How a path is drawn (modelling scale, so log errors for log-modelled series):

1. The backtest errors ``e`` of the chosen method are normalised by the
   per-step scale ``s(h)`` (:func:`forecasting.intervals.step_scale`):
   ``u = e / s(h)``.
2. Their correlation over the horizon is read from the pooled autocorrelation
   ``ρ(k)`` of ``u`` within windows (:func:`error_acf`): the share ``a²`` that
   persists over the whole backtest horizon (a wrong level, the dominant
   error after a level shift; the mean of ``ρ`` over the second half of the
   backtest horizon), and, below that, the autocorrelation ``r(k)`` of the rest
   at every lag up to half the backtest horizon (0 beyond). So a day's hours err
   together as the backtests' days did (a level wrong for a day), not as an
   hour-to-hour AR(1), which let a path's hours err too independently and
   lifted the simulated maxima.
3. A Gaussian path ``g = a·L + sqrt(1 − a²)·X`` (``L`` one draw per path, ``X``
   a unit stationary Gaussian process with autocorrelation ``r``, drawn by
   circulant embedding, Davies & Harte 1987) gives each step a normal score.
4. Each step's score is mapped to the forecast's own quantiles at that step (a
   Gaussian copula): linear in the normal score between ``lo_<L>``, ``mean`` and
   ``hi_<L>`` of every level, along the outermost lower segment below them. So the
   paths agree with the calibrated intervals hour by hour (P10/P90 = ``lo_80``/
   ``hi_80``), and the backtests add only how the hours err together.
5. Above the outermost upper bound (``hi_95`` with the default levels, probability
   ``p_K = 0.975``; ``hi_<L>`` of the largest level present) a score of probability
   ``p = Φ(g)`` is mapped to an exponential tail of the backtest errors:
   ``hi_K + s(h)·β·ln((1 − p_K)/(1 − p))``, ``β`` the mean excess of the pooled
   normalised errors over their top :data:`TAIL_TOP_SHARE` (:func:`tail_mean_excess`),
   or to the outer segment extended, whichever is higher: the frame the paths are
   given may be wider than the errors (floored to the history's observed spread,
   held flat beyond the supported horizon), and errors too few or all alike give
   ``β`` near 0 (a tail read from them would cap the paths at ``hi_K``). A month's
   busiest hour lives near ``p ≈ 1 − 1/700``, beyond every interval, where bursts make
   the errors' tail heavier than a Gaussian extension of ``hi_80``→``hi_95`` (which
   under-covered the month's peak) and lighter than a generalised Pareto tail whose
   shape is read from a few exceedances (which over-covered): docs/forecasting.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import log_ndtr, ndtri

from capplan.forecasting.api import Fit
from capplan.forecasting.intervals import step_scale

#: Paths drawn when the caller does not say. [count]
DEFAULT_PATHS = 2000
#: Quantiles reported for each period's peak and total. [%]
PERIOD_QUANTILES = (10, 50, 90)
#: Paths drawn per FFT in :func:`_stationary_gaussian` (bounds its memory: ~70 MB at a 3-month hourly horizon). [count]
_FFT_CHUNK_PATHS = 250
#: Share of the largest normalised backtest errors whose mean excess over the rest is the scale of the
#: paths' exponential tail above the outermost upper bound (:func:`tail_mean_excess`). [fraction]
TAIL_TOP_SHARE = 0.05
#: Paths mapped to the forecast's quantiles at a time in :func:`sample_paths`: the temporaries of a block
#: stay in the CPU cache (whole-array temporaries of 2,000 paths x a 3-month hourly horizon took ~4x longer). [count]
_MAP_CHUNK_PATHS = 100


def error_correlation(errors: np.ndarray) -> tuple[float, float]:
    """Persistent share ``a²`` and lag-1 autocorrelation ``φ`` of normalised backtest errors.

    Parameters
    ----------
    errors : numpy.ndarray
        Signed backtest errors, shape ``(windows, backtest_horizon)``.

    Returns
    -------
    persistent : float
        Mean autocorrelation of ``u = e / s(h)`` at lags in the second half of
        the backtest horizon (not centred on the window: a window's constant
        offset is exactly the persistence wanted), clipped to ``[0, 0.99]``. [fraction]
    phi : float
        Lag-1 autocorrelation of the remaining part, ``(ρ(1) − a²) / (1 − a²)``,
        clipped to ``[0, 0.999]``. [fraction]
    """
    return _correlation_of(_pooled_acf(errors))


def _correlation_of(rho: np.ndarray | None) -> tuple[float, float]:
    """:func:`error_correlation` from the pooled autocorrelation ``rho`` (:func:`_pooled_acf`)."""
    if rho is None:
        return 0.0, 0.0
    h_bt = len(rho)
    persistent = float(np.clip(np.mean(rho[max(1, h_bt // 2):]), 0.0, 0.99))
    phi = float(np.clip((rho[1] - persistent) / (1 - persistent), 0.0, 0.999))
    return persistent, phi


def _pooled_acf(errors: np.ndarray) -> np.ndarray | None:
    """``ρ(k)``, ``k = 0 .. H − 1``: pooled uncentred autocorrelation of ``u = e / s(h)`` within windows.

    ``None`` with fewer than two steps or no non-zero error.
    """
    u = _normalised(errors)
    h_bt = u.shape[1]
    energy = np.nansum(u * u) if np.isfinite(u).any() else 0.0
    if h_bt < 2 or not energy > 0:
        return None
    return np.array([1.0] + [np.nansum(u[:, k:] * u[:, :-k]) / energy * h_bt / (h_bt - k) for k in range(1, h_bt)])


def error_acf(errors: np.ndarray) -> tuple[float, np.ndarray]:
    """Persistent share ``a²`` (as :func:`error_correlation`, same ``errors``) and the autocorrelation
    ``r(k)`` of the rest.

    Returns
    -------
    persistent : float
        ``a²``. [fraction]
    acf : numpy.ndarray
        ``r(k) = (ρ(k) − a²) / (1 − a²)`` for lags ``k = 0 .. H/2 − 1`` (``r(0) = 1``), ``ρ`` the pooled
        uncentred autocorrelation of ``u = e / s(h)`` within windows, clipped to ``[−1, 1]``;
        ``[1]`` when there is nothing to read it from. [fraction]
    """
    rho = _pooled_acf(errors)  # once: the persistent share and the rest's autocorrelation both read it
    persistent, _ = _correlation_of(rho)
    if rho is None:
        return persistent, np.ones(1)
    rest = np.clip((rho[1:max(2, len(rho) // 2)] - persistent) / (1 - persistent), -1.0, 1.0)
    return persistent, np.concatenate([[1.0], rest])


def sample_paths(result: Fit, n_paths: int = DEFAULT_PATHS, seed: int = 0) -> np.ndarray:
    """Future paths of the fitted series, shape ``(n_paths, horizon)``, in the unit of ``y``.

    Parameters
    ----------
    result : Fit
        From :func:`forecasting.fit`; its frame gives the horizon and the
        hourly quantiles (``mean`` and every ``lo_<L>``/``hi_<L>``) the paths keep.
    n_paths : int
        Paths to draw. [count]
    seed : int
        Seed of the random generator (same seed, same paths).

    Returns
    -------
    numpy.ndarray
        Never negative; each step's P10/P90 over the paths equals the frame's
        ``lo_80``/``hi_80`` (every level present likewise) up to sampling error.
    """
    return _draw(result, n_paths, seed)[0]


def _draw(result: Fit, n_paths: int, seed: int) -> tuple[np.ndarray, float, np.ndarray, float]:
    """:func:`sample_paths`, and the persistent share, the autocorrelation and ``β`` they were drawn with
    (:func:`error_acf`, :func:`tail_mean_excess`), read once for the paths and :func:`period_peaks`' method."""
    if n_paths < 1:
        raise ValueError(f"n_paths must be >= 1, got {n_paths}")
    horizon = len(result.frame)
    persistent, acf = error_acf(result.backtest_errors)
    beta = tail_mean_excess(result.backtest_errors)
    rng = np.random.default_rng(seed)
    level = rng.standard_normal((n_paths, 1))
    rest = _stationary_gaussian(rng, n_paths, horizon, acf)
    knots, values = _quantile_knots(result)
    # above the outermost upper bound: tail_scale(h) per unit of -ln(survival), see step 5 of the module doc
    tail_scale = step_scale(result.backtest_errors, horizon) * beta
    out = np.empty((n_paths, horizon))
    for start in range(0, n_paths, _MAP_CHUNK_PATHS):  # element-wise, so block by block gives the same values
        rows = slice(start, start + _MAP_CHUNK_PATHS)
        scores = np.sqrt(persistent) * level[rows] + np.sqrt(1 - persistent) * rest[rows]
        z = _interpolate(scores, knots, values)
        if len(knots) > 1:
            beyond = np.nonzero(scores > knots[-1])
            # ln((1 − p_K) / (1 − p)), p = Φ(score): the exponential quantile's excess over p_K's
            survival = log_ndtr(-knots[-1]) - log_ndtr(-scores[beyond])
            # never lighter than the frame's own outer segment extended (the floored or flattened frame, or
            # errors too few or too small to read a tail from, widen the hours beyond what the errors say)
            z[beyond] = np.maximum(z[beyond], values[beyond[1], -1] + tail_scale[beyond[1]] * survival)
        out[rows] = result.to_y(z)
    return out, persistent, acf, beta


def tail_mean_excess(errors: np.ndarray) -> float:
    """``β``: mean excess of the pooled normalised backtest errors over their own upper threshold.

    Parameters
    ----------
    errors : numpy.ndarray
        Signed backtest errors, shape ``(windows, backtest_horizon)``. [modelling scale]

    Returns
    -------
    float
        ``mean(u − t | u > t)`` for ``u = e / s(h)`` pooled over windows and steps and ``t`` their
        ``1 −`` :data:`TAIL_TOP_SHARE` quantile: the maximum-likelihood scale of an exponential tail
        (a generalised Pareto with shape 0) above ``t``; 0 with fewer than two errors. [unit of s(h)]
    """
    u = _normalised(errors).ravel()
    u = u[np.isfinite(u)]
    if len(u) < 2:
        return 0.0
    threshold = np.quantile(u, 1 - TAIL_TOP_SHARE)
    above = u[u > threshold]
    return float(np.mean(above - threshold)) if len(above) else 0.0


def period_peaks(result: Fit, freq: str = "M", n_paths: int = DEFAULT_PATHS, seed: int = 0) -> pd.DataFrame:
    """P10/P50/P90 of each calendar period's peak and total over :func:`sample_paths`.

    Parameters
    ----------
    result : Fit
        From :func:`forecasting.fit` on a series with a ``DatetimeIndex``.
    freq : str
        Pandas period alias of the periods: ``"M"`` (months), ``"D"`` (days), ``"W"`` …
    n_paths, seed
        As for :func:`sample_paths`.

    Returns
    -------
    pandas.DataFrame
        One row per period the forecast reaches, indexed by the period
        (``YYYY-MM`` for months): ``peak_p10``, ``peak_p50``, ``peak_p90`` (the
        period's largest step value, in the unit of ``y``), ``total_p10``,
        ``total_p50``, ``total_p90`` (sum over the period's steps, unit of ``y``
        times steps: multiply mean QPS per hour by 3600 s for requests) and
        ``steps`` (forecast steps in the period; a partly forecast period's
        figures cover only those). ``attrs["method"]`` says how the paths were drawn.
    """
    index = result.frame.index
    if not isinstance(index, pd.DatetimeIndex):
        raise ValueError("period_peaks needs a forecast on a DatetimeIndex")
    paths, persistent, acf, beta = _draw(result, n_paths, seed)
    period = index.to_period(freq)
    rows = {}
    for key in period.unique():
        part = paths[:, np.asarray(period == key)]  # a copy: numpy's sums over a strided view differ in the last bit
        row = {f"peak_p{q}": float(np.percentile(part.max(axis=1), q)) for q in PERIOD_QUANTILES}
        row |= {f"total_p{q}": float(np.percentile(part.sum(axis=1), q)) for q in PERIOD_QUANTILES}
        rows[str(key)] = {**row, "steps": int(part.shape[1])}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.attrs["method"] = (f"{n_paths} sample paths: the backtest errors' correlation over the horizon "
                             f"(persistent share {persistent:.2f}; autocorrelation of the rest to lag {len(acf) - 1}, "
                             f"{acf[min(24, len(acf) - 1)]:.2f} at lag {min(24, len(acf) - 1)}) "
                             "with each step's quantiles taken from the forecast's intervals (Gaussian copula) and, "
                             f"above the outermost upper bound, an exponential tail (the backtest errors' mean excess over "
                             f"their top {TAIL_TOP_SHARE:.0%}, {beta:.2f} error scales, "
                             "or the outermost interval segment extended where that is higher); "
                             "quantiles of each period's max and sum over the paths")
    return frame


def month_peaks(result: Fit, n_paths: int = DEFAULT_PATHS, seed: int = 0) -> pd.DataFrame:
    """:func:`period_peaks` by calendar month: the P10/P50/P90 of each month's peak and total."""
    return period_peaks(result, "M", n_paths, seed)


def _normalised(errors: np.ndarray) -> np.ndarray:
    """``errors / s(h)`` (0 where the scale is 0), shape of ``errors``."""
    scale = step_scale(errors, errors.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, errors / scale, 0.0)


def _stationary_gaussian(rng: np.random.Generator, n_paths: int, horizon: int, acf: np.ndarray) -> np.ndarray:
    """Unit-variance stationary Gaussian paths with autocorrelation ``acf`` (0 beyond it), ``(n_paths, horizon)``.

    Circulant embedding (Davies & Harte 1987): the autocorrelation is wrapped into a circulant of
    size ``2·horizon``, whose eigenvalues (an FFT) are clipped at 0 where the empirical ``acf`` is
    not positive definite; each step is then rescaled to unit variance.
    """
    r = np.zeros(horizon + 1)
    r[:min(len(acf), horizon + 1)] = acf[:horizon + 1]
    row = np.concatenate([r, r[-2:0:-1]])  # first row of the circulant, length 2·horizon
    eig = np.maximum(np.fft.fft(row).real, 0.0)
    size, amplitude = len(row), np.sqrt(eig / len(row))
    pairs = (n_paths + 1) // 2  # the real and imaginary parts of one transform are two independent paths
    out = np.empty((2 * pairs, horizon))
    for start in range(0, pairs, _FFT_CHUNK_PATHS):  # chunks: a (paths, 2·horizon) complex array is large
        rows = min(_FFT_CHUNK_PATHS, pairs - start)
        noise = np.empty((rows, size), dtype=complex)  # real then imaginary draws, as ``a + 1j * b`` draws them
        noise.real, noise.imag = rng.standard_normal((rows, size)), rng.standard_normal((rows, size))
        noise *= amplitude  # in place: the same complex product as ``noise * amplitude``
        both = np.fft.fft(noise, axis=1)[:, :horizon]
        out[2 * start:2 * (start + rows):2], out[2 * start + 1:2 * (start + rows):2] = both.real, both.imag
    return out[:n_paths] / np.sqrt(max(eig.mean(), 1e-300))


def _quantile_knots(result: Fit) -> tuple[np.ndarray, np.ndarray]:
    """Normal scores of the frame's quantiles and their values per step on the modelling scale.

    Returns ``(knots, values)``: ``knots`` shape ``(K,)`` increasing (``Φ⁻¹`` of
    0.5 ∓ L/200 for every level L, and 0 for the point forecast), ``values``
    shape ``(horizon, K)``, non-decreasing along ``K`` (the bounds are nested).
    """
    levels = sorted(int(c[3:]) for c in result.frame.columns if c.startswith("lo_"))
    probs = [0.5 - lv / 200 for lv in reversed(levels)] + [0.5] + [0.5 + lv / 200 for lv in levels]
    columns = [f"lo_{lv}" for lv in reversed(levels)] + ["mean"] + [f"hi_{lv}" for lv in levels]
    values = np.column_stack([_to_z(result, result.frame[c].to_numpy(float)) for c in columns])
    return ndtri(np.array(probs)), np.maximum.accumulate(values, axis=1)


def _interpolate(scores: np.ndarray, knots: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Map normal scores to values, linear between knots and along the outer segments beyond them.

    ``scores`` shape ``(paths, horizon)``; ``values`` shape ``(horizon, K)``. With a
    single knot (no interval level) every path is the point forecast.
    """
    if len(knots) < 2:
        return np.broadcast_to(values[:, 0], scores.shape).copy()
    # segment = inner knots below the score (= clip(searchsorted(knots, score) - 1, 0, K - 2) for a finite score):
    # K - 2 comparisons cost a tenth of a binary search per element
    seg = np.zeros(scores.shape, dtype=np.intp)
    for knot in knots[1:-1]:
        seg += scores > knot
    at = seg + np.arange(values.shape[0]) * values.shape[1]  # (step, segment) in the flattened values
    flat = values.ravel()
    v0, x0 = flat.take(at), knots.take(seg)
    # v0 + (score - x0) · (v1 - v0) / (x1 - x0), evaluated left to right as written, in place
    out = np.subtract(scores, x0)
    out *= np.subtract(flat.take(at + 1), v0)
    out /= np.subtract(knots.take(seg + 1), x0)
    out += v0
    return out


def _to_z(result: Fit, y: np.ndarray) -> np.ndarray:
    """The modelling scale of values in the unit of ``y`` (inverse of :meth:`Fit.to_y` above zero)."""
    if not result.log:
        return y
    return np.log(np.maximum(y + result.offset, 1e-300))
