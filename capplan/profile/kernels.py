"""Compiled loops of the profile's counting (numba): one pass per row instead of a dozen numpy passes.

:class:`capplan.profile.counting.WindowRollup` counts a window's rows. Done with numpy, every figure is
a pass of its own over the batch (a ``bincount`` per figure, a logarithm per time column, keys built in
temporaries), and ``bincount`` holds the GIL, so the thread building the previous window's tables and
the one counting the next took turns. Here one loop over the rows adds every figure of a row, and the
loops release the GIL (``nogil``): DuckDB's scan of the next window, the counting and the table
building of the previous one run side by side on the cores.

Every kernel gives exactly what the numpy code gave (tested: ``tests/profile/test_kernels.py``):

* a time's histogram bin is :func:`capplan.profile.counting.log_bins`'s, to the last bit, without a
  logarithm: :func:`time_bin_tables` takes, for every cell of 2^44 consecutive doubles (the same
  exponent and 8 highest mantissa bits) in ``[1, 2^63)``, the bin of its first double by ``log_bins`` itself, and the first double
  of every bin (``log_bins`` bisected over the doubles); a cell is narrower than a bin (0.4 % against
  2 %), so a value's bin is its cell's, or the next one from that bin's first double on;
* time sums are added per batch from 0 in row order, then to the window's sums, as ``np.bincount``
  with weights does, so they are equal bit for bit, not only to a tolerance.

Compiled on first use and cached beside this file (``cache=True``: ``__pycache__``; where the source
folder is not writable numba uses ``$NUMBA_CACHE_DIR``, else a folder under the user's cache). A fresh
process then only loads the cached machine code (docs/profile.md gives the times).
"""

from __future__ import annotations

import numba
import numpy as np

US_PER_S = 1_000_000
S_PER_HOUR = 3_600
CELL_SHIFT = 52 - 8
"""A double's cell: its bits above the 8 highest mantissa bits (exponent and those 8 bits). [bits]"""
_ONE_BITS = int(np.float64(1.0).view(np.int64))


def time_bin_tables(log_bins, inv_ln_gamma: float, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """The lookup tables of :func:`time_bin`, built from ``log_bins`` itself.

    Parameters
    ----------
    log_bins : callable
        :func:`capplan.profile.counting.log_bins` (passed in: that module imports this one).
    inv_ln_gamma : float
        ``1 / ln γ`` of the bins. [1]
    limit : float
        The tables cover ``[1, limit)``, a power of two; the caller bins larger times otherwise.

    Returns
    -------
    (cell_bin, first) : numpy.ndarray of int64, numpy.ndarray of float64
        ``cell_bin[c]``: ``log_bins`` of the first double of cell ``c`` (the doubles ``x >= 1`` whose
        bits minus those of 1.0, shifted right by ``CELL_SHIFT``, are ``c``); ``first[k]``: the
        smallest double ``>= 1`` whose ``log_bins`` is at least ``k`` (``inf`` past the last bin).

    Notes
    -----
    ``first`` is found by bisection over the doubles' bit patterns (ordered as integers for positive
    doubles), 64 halvings of every bin at once: it relies on ``log_bins`` never falling as ``x`` grows,
    which the tests check around every edge.
    """
    limit_bits = int(np.float64(limit).view(np.int64))
    cell_start = ((np.arange((limit_bits - _ONE_BITS) >> CELL_SHIFT, dtype=np.int64) << CELL_SHIFT)
                  + _ONE_BITS).view(np.float64)
    cell_bin = log_bins(cell_start, inv_ln_gamma)
    bins = np.arange(int(cell_bin[-1]) + 3)  # one past the last cell's bin: its `first` is needed too
    lo = np.full(len(bins), _ONE_BITS, np.int64)  # log_bins(lo) < k, or lo is 1.0
    hi = np.full(len(bins), limit_bits, np.int64)  # log_bins(hi) >= k, or the limit
    for _ in range(64):
        mid = lo + (hi - lo) // 2
        above = log_bins(mid.view(np.float64), inv_ln_gamma) >= bins
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    first = np.where(log_bins(lo.view(np.float64), inv_ln_gamma) >= bins, lo, hi).view(np.float64)
    first[log_bins(first, inv_ln_gamma) < bins] = np.inf  # no double below the limit reaches bin k
    return cell_bin, first


@numba.njit(cache=True, nogil=True)
def time_bin(x: float, bits: int, cell_bin: np.ndarray, first: np.ndarray) -> int:
    """``log_bins`` of one time ``x`` (``bits``: its bit pattern as int64), within the tables' limit, not NaN."""
    if not x >= 1.0:
        return -1
    k = cell_bin[(bits - _ONE_BITS) >> CELL_SHIFT]
    if x >= first[k + 1]:
        k += 1
    return k


@numba.njit(cache=True, nogil=True)
def time_bins(values: np.ndarray, cell_bin: np.ndarray, first: np.ndarray) -> np.ndarray:
    """:func:`time_bin` of every value (within the tables' limit, no NaN), as int64: ``log_bins`` without a logarithm."""
    bits = values.view(np.int64)
    out = np.empty(len(values), np.int64)
    for i in range(len(values)):
        out[i] = time_bin(values[i], bits[i], cell_bin, first)
    return out


@numba.njit(cache=True, nogil=True)
def count_dense(ts_us, model, status_class, input_tokens, output_tokens, ttft_ms, latency_ms,
                arrivals_from_us, first_second, n_models, token_bin, cell_bin, first,
                per_second, status, tokens, time_sums_ms, input_bins, output_bins, ttft_bins, latency_bins):
    """Add one batch's rows to a dense window's accumulators, in one pass (``WindowRollup.add``).

    Rows arriving before ``arrivals_from_us`` are skipped. Per row: its (second, model) arrival, its
    status class, token sums and bins (``token_bin``: ``log_bins`` of ``0 .. max`` tokens), and each
    logged time's sum and bin (NaN: not logged). Keys are ``hour · n_models + model``; bins are stored
    at column ``bin + 1``. The caller sized the bin arrays for the batch's largest bins.
    """
    ttft_bits, latency_bits = ttft_ms.view(np.int64), latency_ms.view(np.int64)
    batch_sums = np.zeros(time_sums_ms.shape)  # added from 0 in row order, then to the window: as np.bincount
    for i in range(len(ts_us)):
        t = ts_us[i]
        if t < arrivals_from_us:
            continue
        second = t // US_PER_S - first_second
        m = model[i]
        per_second[second * n_models + m] += 1
        key = second // S_PER_HOUR * n_models + m
        status[key, status_class[i]] += 1
        n_in, n_out = input_tokens[i], output_tokens[i]
        tokens[key, 0] += n_in
        tokens[key, 1] += n_out
        input_bins[key, token_bin[n_in] + 1] += 1
        output_bins[key, token_bin[n_out] + 1] += 1
        x = ttft_ms[i]
        if x == x:  # logged (NaN is not equal to itself)
            batch_sums[key, 0] += x
            ttft_bins[key, time_bin(x, ttft_bits[i], cell_bin, first) + 1] += 1
        x = latency_ms[i]
        if x == x:
            batch_sums[key, 1] += x
            latency_bins[key, time_bin(x, latency_bits[i], cell_bin, first) + 1] += 1
    time_sums_ms += batch_sums


@numba.njit(cache=True, nogil=True)
def sweep_dense(model, start_us, end_us, n_models, first_second, n_hours):
    """Peak in flight per hour, per model and of all models (the last column): the sweep of
    :func:`capplan.profile.counting.peak_in_flight_by_model` (its Notes), in two passes over the spans.

    Bucket 0 of a column holds what is before the window's first second, 1 + k its second k, the last
    bucket what comes after it. Returns int64 of shape ``(n_hours, n_models + 1)``.
    """
    columns, seconds = n_models + 1, n_hours * S_PER_HOUR
    arriving = np.zeros((columns, seconds + 2), np.int32)  # int32: counts of one window's rows; half the bytes
    carried = np.zeros((columns, seconds + 2), np.int32)  # arrivals - completions per bucket, then cumulated
    completing = np.zeros((columns, seconds + 2), np.int32)
    at_hour_start = np.zeros((columns, n_hours), np.int64)  # completions exactly at an hour start
    for i in range(len(model)):
        m, start, end = model[i], _bucket(start_us[i], first_second, seconds), _bucket(end_us[i], first_second, seconds)
        arriving[m, start] += 1
        arriving[n_models, start] += 1
        completing[m, end] += 1
        completing[n_models, end] += 1
        if 1 <= end <= seconds and (end - 1) % S_PER_HOUR == 0 and end_us[i] % US_PER_S == 0:
            at_hour_start[m, (end - 1) // S_PER_HOUR] += 1
            at_hour_start[n_models, (end - 1) // S_PER_HOUR] += 1
    peaks = np.zeros((n_hours, columns), np.int64)
    group = np.full((columns, seconds), -1, np.int64)  # candidate (column, second) -> its index, else -1
    offsets = np.zeros((2, columns * seconds + 1), np.int64)  # where each group's arrivals, completions start
    n_groups = 0
    for c in range(columns):
        total = 0
        for k in range(seconds + 2):
            total += arriving[c, k] - completing[c, k]
            carried[c, k] = total  # in flight just before second k (bucket k holds second k - 1)
        for h in range(n_hours):
            peak = carried[c, h * S_PER_HOUR] - at_hour_start[c, h]  # at the hour start: a true count
            for s in range(h * S_PER_HOUR, (h + 1) * S_PER_HOUR):
                peak = max(peak, carried[c, s + 1])  # at the end of second s: a true count
            for s in range(h * S_PER_HOUR, (h + 1) * S_PER_HOUR):
                if arriving[c, s + 1] > 0 and carried[c, s] + arriving[c, s + 1] > peak:  # its upper bound beats it
                    group[c, s] = n_groups
                    offsets[0, n_groups + 1] = offsets[0, n_groups] + arriving[c, s + 1]
                    offsets[1, n_groups + 1] = offsets[1, n_groups] + completing[c, s + 1]
                    n_groups += 1
            peaks[h, c] = peak
    if n_groups:
        _exact_candidates(peaks, group, offsets[:, :n_groups + 1], carried, model, start_us, end_us,
                          n_models, first_second)
    return peaks


@numba.njit(nogil=True, cache=True)
def _bucket(t_us, first_second, seconds):
    """Bucket of a time: 0 before second ``first_second``, 1 + k in its second k, ``seconds + 1`` after."""
    return min(max(t_us // US_PER_S - first_second + 1, 0), seconds + 1)


@numba.njit(nogil=True, cache=True)
def _exact_candidates(peaks, group, offsets, carried, model, start_us, end_us, n_models, first_second):
    """Raise ``peaks`` to the count just after each arrival of a candidate (column, second) ``group``: the
    count before the second plus its arrivals up to then minus its completions up to then (inclusive: spans
    are half-open). Each group's events (µs within the second) are placed by ``offsets`` (counted per
    bucket), in one pass, then sorted."""
    seconds = group.shape[1]
    events = np.empty((2, max(offsets[0, -1], offsets[1, -1])), np.int64)  # arrivals, completions
    fill = offsets[:, :-1].copy()
    for i in range(len(model)):
        for kind in range(2):
            t = start_us[i] if kind == 0 else end_us[i]
            b = _bucket(t, first_second, seconds)
            if 1 <= b <= seconds:
                t -= (first_second + b - 1) * US_PER_S
                for c in (model[i], n_models):
                    g = group[c, b - 1]
                    if g >= 0:
                        events[kind, fill[kind, g]] = t
                        fill[kind, g] += 1
    for c in range(n_models + 1):
        for s in range(seconds):
            g = group[c, s]
            if g < 0:
                continue
            arriving = np.sort(events[0, offsets[0, g]:offsets[0, g + 1]])
            completing = np.sort(events[1, offsets[1, g]:offsets[1, g + 1]])
            h, done, j = s // S_PER_HOUR, 0, 0
            while j < len(arriving):
                t = arriving[j]
                while j + 1 < len(arriving) and arriving[j + 1] == t:  # arrivals at the same instant: all in
                    j += 1
                while done < len(completing) and completing[done] <= t:
                    done += 1
                peaks[h, c] = max(peaks[h, c], carried[c, s] + j + 1 - done)
                j += 1
