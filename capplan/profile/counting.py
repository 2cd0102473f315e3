"""Hourly rollups of raw request rows in one streamed scan: DuckDB selects the rows, numpy counts them.

The profile's rollups group by many keys: the busiest second by (second, model), about one key per
ten rows, and each histogram by (hour, model, bin). A DuckDB hash group-by over millions of keys
costs several times a scan of the table; a dense ``numpy.bincount`` over the keys of a bounded
window of hours costs a fraction of one. So ``sql/int_profile_rows.sql`` streams the narrowed rows
of a window once, as Arrow batches (memory stays flat), and :class:`WindowRollup` counts every
figure of the window in the same pass: counts by status class, token and time sums, the four
log-binned histograms, arrivals per second, and the in-flight spans for the concurrency sweep.

Pure numpy: arrays in, arrays out; :mod:`capplan.profile.refresh` runs the query and writes the tables.
"""

from __future__ import annotations

import numpy as np
import pyarrow as arrow

US_PER_S = 1_000_000
US_PER_HOUR = 3_600_000_000
S_PER_HOUR = 3_600
STATUS_CLASSES = 3
"""``status_class`` of ``sql/int_profile_rows.sql``: 0 success (2xx), 1 no SLI event (a 4xx other than
408 and 429), 2 other (valid and bad)."""
METRICS = ("input_tokens", "output_tokens", "ttft_ms", "latency_ms")
ALL_MODELS = "__all__"
"""The reserved model name of the rows of all models together."""
_TIMES = ("ttft_ms", "latency_ms")

TRAFFIC_SCHEMA = arrow.schema([
    ("hour_utc", arrow.timestamp("us")), ("model", arrow.string()), ("requests", arrow.int64()), ("errors", arrow.int64()),
    ("valid_events", arrow.int64()), ("success_events", arrow.int64()), ("input_tokens_sum", arrow.int64()),
    ("output_tokens_sum", arrow.int64()), ("ttft_ms_sum", arrow.float64()), ("ttft_count", arrow.int64()),
    ("latency_ms_sum", arrow.float64()), ("latency_count", arrow.int64()), ("peak_second_requests", arrow.int64()),
])
"""Columns of ``fct_traffic_hourly`` (``sql/ddl_profile.sql``)."""
HISTOGRAM_SCHEMA = arrow.schema([
    ("hour_utc", arrow.timestamp("us")), ("model", arrow.string()), ("metric", arrow.string()), ("bin", arrow.int16()),
    ("count", arrow.int64()),
])
"""Columns of ``fct_histogram_hourly`` (one row per bin: the mergeable contract's and the readers' shape)."""


def code_columns(metric: str) -> tuple[str, str]:
    """The two code lists of ``metric`` in ``fct_histogram_hourly_bins``: small counts (int32), then the rest (int64)."""
    return f"{metric}_codes", f"{metric}_codes_large"


HISTOGRAM_BINS_SCHEMA = arrow.schema([
    ("hour_utc", arrow.timestamp("us")), ("model", arrow.string()),
    *[(name, arrow.list_(kind)) for metric in METRICS
      for name, kind in zip(code_columns(metric), (arrow.int32(), arrow.int64()), strict=True)],
])
"""Columns of ``fct_histogram_hourly_bins``, where the histograms are stored: one row per hour and model,
each metric's non-empty bins ascending as codes ``count · 2^16 + bin + 1`` (:func:`bin_codes`), a list
of those whose count is below ``SMALL_COUNT`` (int32) and one of the rest (int64)."""
CODE_SHIFT = 16
"""A bin's code is ``count << CODE_SHIFT | (bin + 1)``: bin + 1 in the low 16 bits (bins are int16)."""
SMALL_COUNT = 1 << 15
"""Counts below this have int32 codes (``<metric>_codes``); larger ones go to ``<metric>_codes_large``. [requests]"""
CONCURRENCY_SCHEMA = arrow.schema([("hour_utc", arrow.timestamp("us")), ("model", arrow.string()),
                                ("concurrency_peak", arrow.int64())])
"""Columns of ``fct_concurrency_hourly``."""


def log_bins(values: np.ndarray, inv_ln_gamma: float) -> np.ndarray:
    """Log-bin index of each value: ``max(floor(ln(max(x, 0.5)) / ln γ), -1)``.

    Parameters
    ----------
    values : numpy.ndarray
        Tokens [tokens] or times [ms], >= 0 (no NaN).
    inv_ln_gamma : float
        ``1 / ln γ`` for the bin edge ratio γ > 1. [1]

    Returns
    -------
    numpy.ndarray of int64
        Bin ``k >= 0`` holds ``[γ^k, γ^(k+1))``; bin -1 holds ``[0, 1)``.
    """
    x = np.maximum(values, 0.5)  # a new float64 array, worked on in place: one allocation, not five
    np.log(x, out=x)
    x *= inv_ln_gamma
    np.floor(x, out=x)
    np.maximum(x, -1, out=x)
    return x.astype(np.int64)


class _TokenBins:
    """``log_bins`` of integer token counts by table lookup: an index is cheaper than a logarithm.

    The table is ``log_bins`` itself on ``0 .. max``, so lookups equal the direct computation; they
    come as int16 (the table's type), computed ones as int64.
    """

    LIMIT = 1 << 22  # above this many tokens, compute directly: the table would outgrow the cache [tokens]

    def __init__(self, inv_ln_gamma: float) -> None:
        self.inv_ln_gamma = inv_ln_gamma
        self.table = np.zeros(0, np.int64)

    def __call__(self, tokens: np.ndarray) -> np.ndarray:
        top = int(tokens.max(initial=0))
        if top >= self.LIMIT or tokens.min(initial=0) < 0:
            return log_bins(tokens, self.inv_ln_gamma)
        if top >= len(self.table):
            size = max(top + 1, 2 * len(self.table))
            # int16, as the bin column of fct_histogram_hourly: a smaller table stays in cache
            self.table = log_bins(np.arange(size, dtype=np.float64), self.inv_ln_gamma).astype(np.int16)
        return self.table.take(tokens)  # int16: widened where it is added to a key


def peak_in_flight_by_model(
    model: np.ndarray, start_us: np.ndarray, end_us: np.ndarray, n_models: int, first_hour_epoch: int, n_hours: int
) -> np.ndarray:
    """Peak requests in flight per hour, per model and of all models, by a sweep over ``[start_us, end_us)``.

    Parameters
    ----------
    model : numpy.ndarray of int
        Model index of each span, ``0 .. n_models - 1``.
    start_us, end_us : numpy.ndarray of int64
        Arrival and completion (arrival + latency, > arrival) of each request; any order, and
        arrivals before the first hour count as carried in. [µs since the epoch]
    n_models : int
        Number of models. [count]
    first_hour_epoch, n_hours : int
        The hours ``[first, first + n_hours)`` to report. [hours since the epoch], [hours]

    Returns
    -------
    numpy.ndarray of int64, shape (n_hours, n_models + 1)
        Peak in flight per hour and model; the last column is all models together. [requests]

    Notes
    -----
    In flight at *t* = #(arrivals ≤ *t*) − #(completions ≤ *t*): spans are half-open, so a request
    completing at *t* does not overlap one arriving at *t*. The count only rises at an arrival, so an
    hour's peak is the count at its start or just after one of its arrivals. With ``C(k)`` the count
    just before second *k* (a cumulative sum of arrivals minus completions per second):

    * every instant of second *k* is at most ``C(k) + a(k)`` (*a*: its arrivals), an upper bound;
    * the count at the hour start, ``C(h) − #(completions exactly at h)``, and at the end of each of
      its seconds, ``C(k + 1)``, are true counts, so their max is a lower bound of the hour's peak;
    * only seconds whose upper bound beats their hour's lower bound are counted exactly, arrival by
      arrival, against the events of that second alone.

    So the sweep is a few ``bincount`` passes over the spans and a cumulative sum over the seconds,
    with no sort of the spans: O(n + seconds · models), the few candidate seconds aside. The
    per-second arrays are laid out one row per model (model-major), so the sums over models, the
    cumulative sum over seconds and each hour's maximum run along contiguous memory.
    """
    model = np.asarray(model, dtype=np.int64)
    start_us, end_us = np.asarray(start_us, dtype=np.int64), np.asarray(end_us, dtype=np.int64)
    columns, seconds = n_models + 1, n_hours * S_PER_HOUR
    base_s = first_hour_epoch * S_PER_HOUR
    # bucket 0: before the first hour; 1 + k: second k of the window; seconds + 1: after it
    start_bucket = _bucket(start_us, base_s, seconds)
    end_bucket = _bucket(end_us, base_s, seconds)
    arrivals = _per_model_and_bucket(start_bucket, model, seconds + 2, n_models)  # (columns, buckets)
    carried = arrivals - _per_model_and_bucket(end_bucket, model, seconds + 2, n_models)
    np.cumsum(carried, axis=1, out=carried)  # carried[:, k]: in flight just before second k
    hour_start = carried[:, 0:seconds:S_PER_HOUR] - _at_hour_starts(end_us, end_bucket, model, n_hours, n_models)
    peaks = carried[:, 1:seconds + 1].reshape(columns, n_hours, S_PER_HOUR).max(axis=2)  # at each second's end
    np.maximum(peaks, hour_start, out=peaks)
    arriving = arrivals[:, 1:seconds + 1]
    upper = carried[:, :seconds] + arriving
    candidate = upper.reshape(columns, n_hours, S_PER_HOUR) > peaks[:, :, None]
    candidate = candidate.reshape(columns, seconds) & (arriving > 0)
    if candidate.any():
        _exact_candidates(peaks, candidate, carried, model, start_us, end_us, start_bucket, end_bucket, base_s,
                          n_models)
    return np.ascontiguousarray(peaks.T)


def _bucket(times_us: np.ndarray, base_s: int, seconds: int) -> np.ndarray:
    """Bucket of each time: 0 before second ``base_s``, 1 + k in its second k, ``seconds + 1`` after."""
    bucket = times_us // US_PER_S
    bucket -= base_s - 1
    return np.clip(bucket, 0, seconds + 1, out=bucket)


def _per_model_and_bucket(bucket: np.ndarray, model: np.ndarray, n_buckets: int, n_models: int) -> np.ndarray:
    """Counts per (model, bucket), shape ``(n_models + 1, n_buckets)``, all models the last row."""
    counts = np.empty((n_models + 1, n_buckets), np.int64)
    counts[:n_models] = np.bincount(model * n_buckets + bucket, minlength=n_models * n_buckets).reshape(
        n_models, n_buckets)
    np.sum(counts[:n_models], axis=0, out=counts[n_models])
    return counts


def _at_hour_starts(end_us: np.ndarray, end_bucket: np.ndarray, model: np.ndarray, n_hours: int,
                    n_models: int) -> np.ndarray:
    """Completions exactly at each hour start, per model and of all, shape ``(n_models + 1, n_hours)``
    (they are not in flight then).

    Found from the completions' buckets (:func:`_bucket`): only those in the first second of an hour
    are looked at: one lookup per span instead of a division, a product and a comparison.
    """
    seconds = n_hours * S_PER_HOUR
    first_second = np.zeros(seconds + 2, bool)
    first_second[1:seconds + 1:S_PER_HOUR] = True  # bucket 1 + k of second k = h · 3600 of the window
    on = np.flatnonzero(first_second[end_bucket])
    on = on[end_us[on] % US_PER_S == 0]  # at the hour start itself, not later in its first second
    return _per_model_and_bucket((end_bucket[on] - 1) // S_PER_HOUR, model[on], n_hours, n_models)


def _exact_candidates(peaks: np.ndarray, candidate: np.ndarray, carried: np.ndarray, model: np.ndarray,
                      start_us: np.ndarray, end_us: np.ndarray, start_bucket: np.ndarray, end_bucket: np.ndarray,
                      base_s: int, n_models: int) -> None:
    """Raise ``peaks`` (column, hour) to the exact count just after each arrival in a candidate (column, second).

    Events are coded ``group · 10^6 + µs within the second`` (group = column · seconds + second), so
    one sort and two binary searches rank every candidate arrival among its second's arrivals and
    completions: count = C(k) + #(arrivals ≤ t) − #(completions ≤ t).
    """
    seconds = candidate.shape[1]
    flat = candidate.ravel()  # index: column * seconds + second
    any_column = np.concatenate([[False], candidate.any(axis=0), [False]])  # by bucket
    codes = {}
    for name, bucket, times in (("arrivals", start_bucket, start_us), ("completions", end_bucket, end_us)):
        near = any_column[bucket]  # events in a candidate second: few, so the rest works on them alone
        second, times, own = bucket[near] - 1, times[near], model[near]
        offset = times - (second + base_s) * US_PER_S  # µs within the second
        parts = []
        for column in (own, np.full(len(own), n_models)):  # each model, then all models
            group = column * seconds + second
            keep = flat[group]
            parts.append(group[keep] * US_PER_S + offset[keep])
        codes[name] = np.sort(np.concatenate(parts))
    arrivals, completions = codes["arrivals"], codes["completions"]
    group = arrivals // US_PER_S
    first = group * US_PER_S
    count = (np.searchsorted(arrivals, arrivals, "right") - np.searchsorted(arrivals, first, "left")
             - np.searchsorted(completions, arrivals, "right") + np.searchsorted(completions, first, "left"))
    column, second = group // seconds, group % seconds
    count += carried[column, second]
    np.maximum.at(peaks, (column, second // S_PER_HOUR), count)


def peak_in_flight_sparse(
    model: np.ndarray, start_us: np.ndarray, end_us: np.ndarray, first_hour_epoch: int, n_hours: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Peak requests in flight per (hour, model) with any, by one sort of the events: for many models.

    The same figure as :func:`peak_in_flight_by_model` (per model; no all-models column), in memory
    and time that grow with the spans, not with seconds × models.

    Parameters
    ----------
    model : numpy.ndarray of int
        Model index of each span, >= 0.
    start_us, end_us : numpy.ndarray of int64
        Arrival and completion (>= arrival) of each request, any order; arrivals before the first
        hour count as carried in, arrivals from the last hour's end on are ignored. [µs since the epoch]
    first_hour_epoch, n_hours : int
        The hours ``[first, first + n_hours)`` to report. [hours since the epoch], [hours]

    Returns
    -------
    (hour_index, model_index, peak) : numpy.ndarray of int64 each
        One entry per (hour of the window, model) with a request in flight, ordered by model then
        hour; ``hour_index`` counts from the window's first hour. [hours], [1], [requests]

    Notes
    -----
    Events are sorted by (model, time, kind), a completion before a probe before an arrival at the
    same instant (spans are half-open). A running sum gives the count in flight after each event. A
    request's arrival is a candidate peak (the count just after it); so is the count at the start of
    every hour a span crosses, read by a *probe* event placed there: arrivals before the hour minus
    completions up to it, as :func:`peak_in_flight_by_model` takes it. O(n log n) in the spans.
    """
    model = np.asarray(model, dtype=np.int64)
    window_us = n_hours * US_PER_HOUR
    base_us = first_hour_epoch * US_PER_HOUR
    # times since the window start, clipped: before it -> -1, from its end on -> window_us (no candidate there)
    start = np.clip(np.asarray(start_us, dtype=np.int64) - base_us, -1, window_us)
    end = np.clip(np.asarray(end_us, dtype=np.int64) - base_us, -1, window_us)
    first_probe = start // US_PER_HOUR + 1  # hour starts strictly inside (start, end): the span is in flight there
    n_probes = np.clip(np.minimum((end - 1) // US_PER_HOUR, n_hours - 1) - first_probe + 1, 0, None)
    crossing = np.repeat(np.arange(len(start)), n_probes)
    within = np.arange(len(crossing)) - np.repeat(np.cumsum(n_probes) - n_probes, n_probes)
    probe_us = (first_probe[crossing] + within) * US_PER_HOUR
    # event code: model, then time + 1 (0 .. window_us + 1) in time_bits bits, then the kind in 2 bits:
    # shifts and masks, no division, take it apart
    time_bits = int(window_us + 1).bit_length()
    if len(model) and int(model.max()) + 1 > 1 << (61 - time_bits):  # codes below 2^63
        raise ValueError(f"too many models ({int(model.max()) + 1}) for one window of {n_hours} h")
    n, n_probes = len(model), len(crossing)
    events = np.empty(2 * n + n_probes, np.int64)
    head = model << time_bits
    for part, at, times, kind in ((events[:n], head, end, _COMPLETION), (events[n:n + n_probes], head[crossing],
                                  probe_us, _PROBE), (events[n + n_probes:], head, start, _ARRIVAL)):
        np.add(at, times, out=part)
        part <<= 2
        part += (1 << 2) + kind  # ((at + time + 1) << 2) + kind
    events.sort()
    kind = events & 3
    kind -= 1  # the change of the count in flight: completion -1, probe 0, arrival +1
    in_flight = np.cumsum(kind)  # every span adds one and removes one: sums restart at 0 per model
    times = events >> 2
    times &= (1 << time_bits) - 1  # time + 1
    candidate = (kind >= 0) & (times >= 1) & (times <= window_us)  # probes and arrivals inside the window
    times = times[candidate]
    times -= 1
    times //= US_PER_HOUR
    cell = (events[candidate] >> (time_bits + 2)) * n_hours + times  # non-decreasing: events are sorted
    counts = in_flight[candidate]
    if not len(cell):
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    starts = np.flatnonzero(np.concatenate([[True], cell[1:] != cell[:-1]]))
    peak = np.maximum.reduceat(counts, starts)
    keep = peak > 0
    cells = cell[starts][keep]
    return cells % n_hours, cells // n_hours, peak[keep]


_COMPLETION, _PROBE, _ARRIVAL = 0, 1, 2  # event kinds: their order at the same instant, and 1 + the change in flight


def plan_windows(hour_rows: np.ndarray, max_hours: int, max_rows: int, *, thin_rows: int = 0,
                 max_thin_hours: int | None = None) -> list[tuple[int, int]]:
    """Cut hours ``[0, len(hour_rows))`` into consecutive windows ``[a, b)`` to roll up one at a time.

    Parameters
    ----------
    hour_rows : numpy.ndarray of int
        Rows arriving in each hour. [rows]
    max_hours : int
        Longest window: bounds the per-second and histogram arrays. [hours]
    max_rows : int
        Row budget of a window: bounds the rows and spans held at once. [rows]
    thin_rows : int
        A window of fewer rows than this is *thin*: the thin windows after it join it, while the whole
        holds at most ``max_rows`` rows and ``max_thin_hours`` hours (0: no window joins). [rows]
    max_thin_hours : int, optional
        Longest window of joined thin windows; default no bound but the rows. [hours]

    Returns
    -------
    list of (int, int)
        Windows that tile the hours in order; each holds, unless a single hour alone has more, at most
        ``max_rows`` rows, and at most ``max_hours`` hours unless it joins thin windows.

    Notes
    -----
    Greedy: a window grows hour by hour until the next hour would break a limit. Memory then stays
    flat as the rows per day grow (windows shorten) instead of growing with them; an hour with more
    than ``max_rows`` rows is a window of its own, so the bound is ``max(max_rows, rows of the
    busiest hour)``. Each window costs a query and its tables whatever its rows, so where hours hold
    few rows (a thin window) that fixed cost dominates: thin windows in a row join into one long
    window, which the caller counts sparsely (:class:`WindowRollup` ``dense=False``: by sorting, in
    memory and time that grow with the rows, not with the hours); a window that is not thin stays as
    it is, and the next thin one starts a new join.
    """
    if max_hours < 1 or max_rows < 1:
        raise ValueError(f"max_hours and max_rows must be >= 1, got {max_hours!r} and {max_rows!r}")
    rows = np.asarray(hour_rows, dtype=np.int64).tolist()
    before = np.concatenate([[0], np.cumsum(rows, dtype=np.int64)]).tolist()  # rows before each hour
    max_thin_hours = len(rows) if max_thin_hours is None else max_thin_hours
    windows, start = [], 0
    while start < len(rows):
        end = _greedy_end(rows, start, max_hours, max_rows)
        if before[end] - before[start] < thin_rows:
            while end < len(rows):  # join the thin windows that follow, within the joined window's limits
                after = _greedy_end(rows, end, max_hours, max_rows)
                if (before[after] - before[end] >= thin_rows or before[after] - before[start] > max_rows
                        or after - start > max_thin_hours):
                    break
                end = after
        windows.append((start, end))
        start = end
    return windows


def _greedy_end(rows: list[int], start: int, max_hours: int, max_rows: int) -> int:
    """End of the window that grows from hour ``start`` until the next hour would break a limit (one hour at least)."""
    end, held = start + 1, rows[start]
    while end < len(rows) and end - start < max_hours and held + rows[end] <= max_rows:
        held += rows[end]
        end += 1
    return end


def sparse_sweep_max_hours(n_models: int) -> int:
    """Longest window whose sparse in-flight sweep (:func:`peak_in_flight_sparse`) can code ``n_models``
    models: its event codes (model, time, kind) must fit in 63 bits. [hours]"""
    model_bits = max(n_models - 1, 0).bit_length()
    return ((1 << (61 - model_bits)) - 2) // US_PER_HOUR


class WindowRollup:
    """Accumulates the rollups of the requests arriving in hours ``[first_hour_epoch, + n_hours)``.

    Feed it the batches of ``sql/int_profile_rows.sql`` with :meth:`add`, then read :meth:`traffic`,
    :meth:`histogram` and :meth:`concurrency`.

    Two ways to count, same tables. *Dense* (few models): every batch is counted at once with
    ``bincount`` into arrays over (hour, model), (hour, model, bin) and (second, model): memory
    O(n_hours · models · bins + n_hours · 3600 · models). *Sparse* (many models, where those arrays
    would outgrow the rows): the window's rows are kept (about 50 bytes each) and counted at the end
    over the (hour, model) cells that occur, by sorting; memory and time grow with the rows only.
    With ``in_flight`` it also keeps 24 bytes per request with latency (model, arrival, completion).

    Parameters
    ----------
    first_hour_epoch : int
        First hour of the window. [hours since the epoch]
    n_hours : int
        Window length. [hours]
    models : sequence of str
        Model names; ``model_index`` in the batches indexes this list.
    inv_ln_gamma : float
        ``1 / ln γ`` of the histogram bins. [1]
    in_flight : bool
        Keep the spans for :meth:`concurrency`; batches may then hold earlier rows (the lookback),
        which count only towards the sweep.
    arrivals_from_us : int, optional
        Rows arriving before this count only towards the sweep (a window starting inside an hour);
        default the window's first hour. [µs since the epoch]
    carried_spans : tuple of numpy.ndarray, optional
        ``(model, start_us, end_us)`` of requests still in flight when the window starts, from
        :meth:`open_spans` of the window before: the lookback, without reading those rows again.
    dense : bool
        Count in dense arrays (see above); ``False`` for many models.
    """

    def __init__(self, first_hour_epoch: int, n_hours: int, models: list[str], inv_ln_gamma: float,
                 *, in_flight: bool, arrivals_from_us: int | None = None,
                 carried_spans: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, dense: bool = True) -> None:
        self.first_hour, self.n_hours, self.models = first_hour_epoch, n_hours, list(models)
        self.inv_ln_gamma, self.in_flight, self.dense = inv_ln_gamma, in_flight, dense
        self.arrivals_from_us = first_hour_epoch * US_PER_HOUR if arrivals_from_us is None else arrivals_from_us
        keys = n_hours * len(self.models) if dense else 0  # one key per (hour, model): hour-major
        self._status = np.zeros((keys, STATUS_CLASSES), np.int64)
        self._tokens = np.zeros((keys, 2), np.int64)
        self._time_sums_ms = np.zeros((keys, 2), np.float64)
        self._per_second = np.zeros(n_hours * S_PER_HOUR * len(self.models) if dense else 0, np.int64)
        self._bins = {m: np.zeros((keys, 0), np.int64) for m in METRICS}  # columns: bin + 1, grown on demand
        self._rows: list[dict[str, np.ndarray]] = []  # sparse: the window's rows, counted at the end
        self._cells: dict[str, np.ndarray] | None = None
        self._spans: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [carried_spans] if carried_spans else []
        self._token_bins = _TokenBins(inv_ln_gamma)

    def add(self, batch: arrow.RecordBatch) -> None:
        """Count one batch of rows (columns of ``sql/int_profile_rows.sql``)."""
        ts_us = batch.column("ts_us").to_numpy()
        model = batch.column("model_index").to_numpy().astype(np.int64)
        if self.in_flight:
            self._keep_spans(ts_us, model, batch.column("latency_ms").to_numpy(zero_copy_only=False))
        arriving = ts_us >= self.arrivals_from_us
        if not arriving.all():  # the lookback rows only feed the sweep
            batch, ts_us, model = batch.filter(arrow.array(arriving)), ts_us[arriving], model[arriving]
            if not len(ts_us):
                return
        second = ts_us // US_PER_S - self.first_hour * S_PER_HOUR  # since the window start
        if not self.dense:
            self._rows.append({"second": second, "model": model} | {
                name: batch.column(name).to_numpy(zero_copy_only=False)
                for name in ("status_class", "input_tokens", "output_tokens", *_TIMES)})
            return
        n_models, keys = len(self.models), len(self._status)
        self._per_second += np.bincount(second * n_models + model, minlength=len(self._per_second))
        key = second // S_PER_HOUR * n_models + model
        self._status += np.bincount(key * STATUS_CLASSES + batch.column("status_class").to_numpy(),
                                    minlength=keys * STATUS_CLASSES).reshape(keys, STATUS_CLASSES)
        for i, name in enumerate(("input_tokens", "output_tokens")):
            tokens = batch.column(name).to_numpy()
            # float64 weights are exact below 2^53 tokens per batch and key
            self._tokens[:, i] += np.bincount(key, weights=tokens, minlength=keys).astype(np.int64)
            self._add_bins(name, key, self._token_bins(tokens))
        for i, name in enumerate(_TIMES):
            ms = batch.column(name).to_numpy(zero_copy_only=False)
            if np.isnan(ms.min(initial=0.0)):  # one NaN (not logged) makes the min NaN: a reduction, no mask
                logged = ~np.isnan(ms)
                k, ms = key[logged], ms[logged]
            else:
                k = key
            self._time_sums_ms[:, i] += np.bincount(k, weights=ms, minlength=keys)  # counts: the histogram's
            self._add_bins(name, k, log_bins(ms, self.inv_ln_gamma))

    def _add_bins(self, metric: str, key: np.ndarray, bins: np.ndarray) -> None:
        if not len(bins):
            return
        width = int(bins.max()) + 2  # columns: bin + 1 (bin -1 -> column 0)
        acc = self._bins[metric]
        if width > acc.shape[1]:
            acc = self._bins[metric] = np.pad(acc, ((0, 0), (0, width - acc.shape[1])))
        code = key * width  # key * width + bin + 1, in place
        code += bins
        code += 1
        acc[:, :width] += np.bincount(code, minlength=len(acc) * width).reshape(len(acc), width)

    def _keep_spans(self, ts_us: np.ndarray, model: np.ndarray, latency_ms: np.ndarray) -> None:
        if not latency_ms.min(initial=1.0) > 0:  # a latency of 0 or NaN (not logged) in the batch: drop those
            timed = latency_ms > 0  # NaN compares false
            model, ts_us, latency_ms = model[timed], ts_us[timed], latency_ms[timed]
        end_us = (latency_ms * 1000).astype(np.int64)  # ms -> µs
        end_us += ts_us
        self._spans.append((model, ts_us, end_us))

    def open_spans(self, at_us: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(model, start_us, end_us)`` of the kept spans still in flight at ``at_us`` (end > at_us):
        what the next window, starting at ``at_us``, carries in."""
        model, start, end = self._all_spans()
        still = end > at_us
        return model[still], start[still], end[still]

    def _all_spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The kept spans as one ``(model, start_us, end_us)``, concatenated once (kept so)."""
        if len(self._spans) != 1:
            empty = np.zeros(0, np.int64)
            self._spans = [tuple(np.concatenate([s[i] for s in self._spans] or [empty]) for i in range(3))]
        return self._spans[0]

    def _hours(self) -> np.ndarray:
        return (np.arange(self.n_hours, dtype=np.int64) + self.first_hour) * US_PER_HOUR

    # ----------------------------------------------------------------------- tables

    def traffic(self, all_models: str) -> arrow.Table:
        """Rows of ``fct_traffic_hourly`` for every (hour, model) with arrivals, and ``all_models``."""
        c = self._dense_cells() if self.dense else self._sparse_cells()
        status, requests = c["status"], c["status"].sum(axis=1)
        return arrow.Table.from_arrays([
            self._hour_array(c["hour"]), self._names(c["model"], all_models),
            arrow.array(requests), arrow.array(requests - status[:, 0]),
            arrow.array(requests - status[:, 1]), arrow.array(status[:, 0]),
            arrow.array(c["tokens"][:, 0]), arrow.array(c["tokens"][:, 1]),
            arrow.array(c["time_sums"][:, 0]), arrow.array(c["time_counts"][:, 0]),
            arrow.array(c["time_sums"][:, 1]), arrow.array(c["time_counts"][:, 1]),
            arrow.array(c["peak"].astype(np.int64)),
        ], schema=TRAFFIC_SCHEMA)

    def _dense_cells(self) -> dict[str, np.ndarray]:
        """Per (hour, model) with arrivals, hour-major, the all-models index ``len(models)`` last in each hour."""
        n_models = len(self.models)
        seconds = self._per_second.reshape(self.n_hours, S_PER_HOUR, n_models)
        peak = np.concatenate([seconds.max(axis=1), seconds.sum(axis=2).max(axis=1)[:, None]], axis=1)
        columns = {}
        for name, per_key in (("status", self._status), ("tokens", self._tokens),
                              ("time_sums", self._time_sums_ms),
                              ("time_counts", np.stack([self._bins[t].sum(axis=1) for t in _TIMES], axis=1))):
            by_model = per_key.reshape(self.n_hours, n_models, per_key.shape[1])
            columns[name] = np.concatenate([by_model, by_model.sum(axis=1, keepdims=True)], axis=1)
        hour_index, model_index = np.nonzero(columns["status"].sum(axis=2))  # hour-major
        at = (hour_index, model_index)
        return {"hour": hour_index, "model": model_index, "peak": peak[at]} | {k: v[at] for k, v in columns.items()}

    def _sparse_rows(self) -> dict[str, np.ndarray]:
        """The kept rows as one array per column (concatenated once, kept so), with ``hour``, ``cell``
        (index in ``cells``, the (hour, model) keys with arrivals, ascending: hour-major), ``cell_hour``
        (the hour of each cell) and ``hours`` (those with arrivals). The sparse tables' rows are the
        cells in that order, then the all-models row of each hour in ``hours`` (:meth:`_sparse_keys`)."""
        if self._cells is None:
            empty = {"second": np.int64, "model": np.int64, "status_class": np.uint8, "input_tokens": np.int64,
                     "output_tokens": np.int64, "ttft_ms": np.float64, "latency_ms": np.float64}
            rows = {name: np.concatenate([r[name] for r in self._rows]) if self._rows else np.zeros(0, dtype)
                    for name, dtype in empty.items()}
            self._rows = []
            n_models = max(len(self.models), 1)
            rows["hour"] = rows["second"] // S_PER_HOUR
            rows["cells"], rows["cell"] = _distinct(rows["hour"] * n_models + rows["model"], self.n_hours * n_models)
            rows["cell_hour"] = rows["cells"] // n_models
            rows["hours"] = np.flatnonzero(np.bincount(rows["cell_hour"], minlength=self.n_hours))
            self._cells = rows
        return self._cells

    def _sparse_cells(self) -> dict[str, np.ndarray]:
        """:meth:`_dense_cells` counted from the kept rows: per (hour, model) cell that occurs, and per hour
        the sums of its cells (the busiest second of all models from the rows), in :meth:`_sparse_keys` order."""
        rows = self._sparse_rows()
        key, n_keys, second = rows["cell"], len(rows["cells"]), rows["second"] % S_PER_HOUR
        logged = {name: ~np.isnan(rows[name]) for name in _TIMES}
        by_cell = {
            "status": np.bincount(key * STATUS_CLASSES + rows["status_class"],
                                  minlength=n_keys * STATUS_CLASSES).reshape(n_keys, STATUS_CLASSES),
            # float64 weights are exact below 2^53 tokens per window and key
            "tokens": np.stack([np.bincount(key, weights=rows[t], minlength=n_keys).astype(np.int64)
                                for t in ("input_tokens", "output_tokens")], axis=1),
            "time_sums": np.stack([np.bincount(key[logged[t]], weights=rows[t][logged[t]], minlength=n_keys)
                                   for t in _TIMES], axis=1),
            "time_counts": np.stack([np.bincount(key[logged[t]], minlength=n_keys) for t in _TIMES], axis=1),
        }
        hours = rows["hours"]
        first_cell = np.searchsorted(rows["cell_hour"], hours)  # cells are hour-major; every hour has one
        by_hour = {k: np.add.reduceat(v, first_cell, axis=0) for k, v in by_cell.items()}
        by_cell["peak"] = _busiest_second(key, second, n_keys)
        by_hour["peak"] = _busiest_second(rows["hour"], second, self.n_hours)[hours]
        hour, model = self._sparse_keys()
        return {"hour": hour, "model": model} | {k: np.concatenate([by_cell[k], by_hour[k]]) for k in by_cell}

    def _sparse_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """``(hour_index, model_index)`` of each row of the sparse tables: every (hour, model) cell with
        arrivals, hour-major, then the all-models row (index ``len(models)``) of each hour with arrivals."""
        rows, n_models = self._sparse_rows(), max(len(self.models), 1)
        return (np.concatenate([rows["cell_hour"], rows["hours"]]),
                np.concatenate([rows["cells"] % n_models, np.full(len(rows["hours"]), len(self.models))]))

    def histogram(self, all_models: str) -> arrow.Table:
        """Rows of ``fct_histogram_hourly``: the non-empty bins of every metric, per model and ``all_models``."""
        parts = []
        for metric in METRICS:
            hour_index, model_index, column, counts = self._bins_of(metric)
            parts.append(arrow.Table.from_arrays([
                self._hour_array(hour_index), self._names(model_index, all_models), self._metric_array(metric, len(column)),
                arrow.array((column - 1).astype(np.int16)), arrow.array(counts),
            ], schema=HISTOGRAM_SCHEMA))
        return arrow.concat_tables(parts)

    def histogram_bins(self, all_models: str) -> arrow.Table:
        """:meth:`histogram` packed as rows of ``fct_histogram_hourly_bins``: one per (hour, model) with a
        non-empty bin, each metric's bins ascending and their counts as codes (:func:`bin_codes`; empty: none logged)."""
        if self.dense:  # at most n_hours x (models + 1) cells: few
            width = len(self.models) + 1
            per_metric = {}
            for metric in METRICS:
                hour_index, model_index, column, counts = self._dense_bins(metric)
                per_metric[metric] = hour_index * width + model_index, column, counts  # cells ascending
            cells = np.unique(np.concatenate([cell for cell, _, _ in per_metric.values()]))
            hour_index, model_index = cells // width, cells % width
            lists = [(np.append(np.searchsorted(cell, cells), len(cell)), (column - 1).astype(np.int16), counts)
                     for cell, column, counts in per_metric.values()]
        else:  # every (hour, model) with arrivals has input-token bins: the traffic table's rows
            hour_index, model_index = self._sparse_keys()
            lists = []
            for metric in METRICS:
                lengths, bins, counts = self._sparse_bin_lists(metric)
                lists.append((np.concatenate([[0], np.cumsum(lengths)]), bins, counts))
        columns = [self._hour_array(hour_index), self._names(model_index, all_models)]
        for offsets, bins, counts in lists:
            columns += bin_codes(offsets, bins, counts)
        return arrow.Table.from_arrays(columns, schema=HISTOGRAM_BINS_SCHEMA)

    def _bins_of(self, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(hour_index, model_index, bin column, count)`` of the non-empty bins of one metric, in the order
        of the traffic table's rows (the all-models index ``len(models)``), then by column; column = bin + 1."""
        return (self._dense_bins if self.dense else self._sparse_bins)(metric)

    @staticmethod
    def _metric_array(metric: str, n: int) -> arrow.Array:
        return arrow.DictionaryArray.from_arrays(np.zeros(n, np.int32), [metric]).dictionary_decode()

    def _dense_bins(self, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        acc = self._bins[metric]
        by_model = acc.reshape(self.n_hours, len(self.models), acc.shape[1])
        counts = np.concatenate([by_model, by_model.sum(axis=1, keepdims=True)], axis=1)
        hour_index, model_index, column = np.nonzero(counts)
        return hour_index, model_index, column, counts[hour_index, model_index, column]

    def _sparse_bins(self, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_sparse_bin_lists` one entry per bin, each with its row's hour and model."""
        lengths, bins, counts = self._sparse_bin_lists(metric)
        hour_index, model_index = self._sparse_keys()
        return np.repeat(hour_index, lengths), np.repeat(model_index, lengths), bins.astype(np.int64) + 1, counts

    def _sparse_bin_lists(self, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(bins per row, bin, count)`` of one metric's non-empty bins, per row of the sparse tables
        (:meth:`_sparse_keys`), each row's bins ascending: per cell by one sort of the (cell, bin) codes,
        of all models by one ``bincount`` over (hour, bin)."""
        rows = self._sparse_rows()
        values = rows[metric]
        if metric in _TIMES:
            logged = ~np.isnan(values)
            cell, hour, column = rows["cell"][logged], rows["hour"][logged], log_bins(values[logged], self.inv_ln_gamma)
        else:
            cell, hour, column = rows["cell"], rows["hour"], self._token_bins(values)
        width = int(column.max(initial=-1)) + 2  # column: bin + 1 (bin -1 -> column 0)
        n_cells = len(rows["cells"])
        codes = cell * width  # cell * width + bin + 1, in place
        codes += column
        codes += 1
        if n_cells * width <= np.iinfo(np.int32).max:  # half the bytes to sort
            codes = codes.astype(np.int32)
        codes.sort()  # by cell, then column
        first = np.empty(len(codes), bool)  # the first of each run of equal codes
        first[:1] = True
        np.not_equal(codes[1:], codes[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        counts = np.diff(np.append(starts, len(codes)))
        codes = codes[starts].astype(np.int64)
        cell_index = codes // width
        by_hour = hour * width  # hour * width + bin + 1, in place
        by_hour += column
        by_hour += 1
        all_code, all_counts = _code_counts(by_hour, self.n_hours * width)  # by hour, then column
        lengths = np.concatenate([np.bincount(cell_index, minlength=n_cells),
                                  np.bincount(all_code // width, minlength=self.n_hours)[rows["hours"]]])
        bins = np.concatenate([codes - cell_index * width, all_code % width]) - 1
        return lengths, bins.astype(np.int16), np.concatenate([counts, all_counts])

    def concurrency(self, all_models: str) -> arrow.Table:
        """Rows of ``fct_concurrency_hourly``: hours of the window with a request in flight."""
        if not self.in_flight:
            raise ValueError("this WindowRollup was made with in_flight=False: it kept no spans")
        model, start, end = self._all_spans()
        if self.dense:
            peaks = peak_in_flight_by_model(model, start, end, len(self.models), self.first_hour, self.n_hours)
            hour_index, model_index = np.nonzero(peaks)  # hour-major; model index n_models = all models
            peak = peaks[hour_index, model_index]
        else:
            hour_index, model_index, peak = peak_in_flight_sparse(model, start, end, self.first_hour, self.n_hours)
            one = np.zeros(len(model), np.int64)  # all models together: one model
            if 2 * self.n_hours * S_PER_HOUR <= _DENSE_SWEEP_CELLS:  # dense per second: cheaper than a sort
                every = peak_in_flight_by_model(one, start, end, 1, self.first_hour, self.n_hours)[:, 1]
                busy = np.flatnonzero(every)
                every = every[busy]
            else:  # a long window (thin hours joined, plan_windows): per-second arrays would outgrow the rows
                busy, _, every = peak_in_flight_sparse(one, start, end, self.first_hour, self.n_hours)
            hour_index = np.concatenate([hour_index, busy])
            model_index = np.concatenate([model_index, np.full(len(busy), len(self.models))])
            peak = np.concatenate([peak, every])
        return arrow.Table.from_arrays([
            self._hour_array(hour_index), self._names(model_index, all_models), arrow.array(peak),
        ], schema=CONCURRENCY_SCHEMA)

    def _hour_array(self, hour_index: np.ndarray) -> arrow.Array:
        return arrow.array(self._hours()[hour_index].astype("datetime64[us]"))

    def _names(self, index: np.ndarray, all_models: str) -> arrow.Array:
        """Model names of model indices (``len(models)`` means ``all_models``), built in Arrow, not Python."""
        names = arrow.array([*self.models, all_models], arrow.string())
        return arrow.DictionaryArray.from_arrays(arrow.array(index, arrow.int32()), names).dictionary_decode()


def bin_codes(offsets: np.ndarray, bins: np.ndarray, counts: np.ndarray) -> list[arrow.ListArray]:
    """One metric's bins and counts as the two code lists of ``fct_histogram_hourly_bins``.

    Parameters
    ----------
    offsets : numpy.ndarray of int
        Where each table row's bins start in ``bins``, and their end last (``len(rows) + 1`` entries).
    bins : numpy.ndarray of int
        Log-bin index of each entry, ``-1 <= bin < 2^15``, ascending within a row.
    counts : numpy.ndarray of int64
        Its count, >= 1. [requests]

    Returns
    -------
    list of two pyarrow.ListArray
        Per row, the codes ``count · 2^16 + bin + 1`` of the bins whose count is below ``SMALL_COUNT``
        (int32: count = code >> 16, bin = (code & 0xFFFF) - 1), and of the others (int64), in the order given.

    Notes
    -----
    One integer per bin instead of a bin and a count: DuckDB stores a list element for about a third
    of what a smallint and a bigint element cost it (docs/profile.md), and almost every count is small.
    """
    codes = counts << CODE_SHIFT  # a new int64 array, worked on in place
    codes += bins
    codes += 1
    small = counts < SMALL_COUNT
    if small.all():  # as is usual: no selection
        before = np.asarray(offsets)
        small_codes, large_codes = codes.astype(np.int32), codes[:0]
    else:
        before = np.concatenate([[0], np.cumsum(small)])[offsets]  # small entries before each offset
        small_codes, large_codes = codes[small].astype(np.int32), codes[~small]
    offsets = np.asarray(offsets, np.int64)
    return [arrow.ListArray.from_arrays(arrow.array(before.astype(np.int32)), arrow.array(small_codes)),
            arrow.ListArray.from_arrays(arrow.array((offsets - before).astype(np.int32)), arrow.array(large_codes))]


def _busiest_second(key: np.ndarray, second_of_hour: np.ndarray, n_keys: int) -> np.ndarray:
    """Most arrivals in one second, per key (an hour or an (hour, model) cell): dense per (key, second)
    when that array is small, else by sorting the codes."""
    codes = key * S_PER_HOUR + second_of_hour
    if n_keys * S_PER_HOUR <= _DENSE_SECONDS:
        return np.bincount(codes, minlength=n_keys * S_PER_HOUR).reshape(n_keys, S_PER_HOUR).max(axis=1, initial=0)
    codes, counts = np.unique(codes, return_counts=True)
    peak = np.zeros(n_keys, np.int64)
    if len(codes):
        key = codes // S_PER_HOUR
        starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
        peak[key[starts]] = np.maximum.reduceat(counts, starts)
    return peak


_DENSE_SECONDS = 1 << 22  # (key, second) cells counted densely up to this many: 32 MiB of int64 [cells]
_DENSE_KEYS = 1 << 22  # keys ranked densely up to this many: 32 MiB of int64 [keys]
_DENSE_SWEEP_CELLS = 1 << 20  # a sparse window's all-models sweep runs per second up to this many (column, second)
# cells (8 MiB of int64 per array: 145 hours), by sorting beyond [cells]


def _code_counts(codes: np.ndarray, n_codes: int, dense_limit: int = _DENSE_KEYS) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``codes`` (``0 <= code < n_codes``) ascending, and how often each occurs:
    by one ``bincount`` when ``n_codes`` is at most ``dense_limit``, else by sorting (a long window's
    hours × bins would outgrow its rows)."""
    if n_codes > dense_limit:
        return np.unique(codes, return_counts=True)
    counts = np.bincount(codes, minlength=n_codes)
    present = np.flatnonzero(counts)
    return present, counts[present]


def _distinct(key: np.ndarray, n_keys: int, dense_limit: int = _DENSE_KEYS) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``key`` (``0 <= key < n_keys``) ascending, and the index of each key among them:
    by one ``bincount`` when ``n_keys`` is at most ``dense_limit``, else by sorting (``np.unique``)."""
    if n_keys > dense_limit:
        distinct, index = np.unique(key, return_inverse=True)
        return distinct, index.reshape(-1)
    present = np.bincount(key, minlength=n_keys) > 0
    return np.flatnonzero(present), (np.cumsum(present) - 1)[key]
