"""Draw the rows of a synthetic LLM-serving request log, one day at a time.

The generator draws canonical request rows (the columns of ``sql/ddl_requests.sql``
without ``file_id``) with the features real traffic has and the later stages must
handle: diurnal and weekly cycles, a growth trend, short bursts, incidents
(error and latency spikes), prompt-length drift, several models with distinct
token mixes, tenants and zones.

Arrivals are a non-homogeneous Poisson process with an intensity that is constant
within each second: per second ``n ~ Poisson(λ(t))`` arrivals, placed uniformly in
that second. The intensity is

    λ(t) = λ₀ · growth(t) · diurnal(t) · weekly(t) · burst(t)          [requests/s]

    growth(t)  = (1 + g)^(months since start)          g: monthly growth [fraction]
    diurnal(t) = 1 + a·cos(2π(h − h_peak)/24)          mean 1 over a day
    weekly(t)  = c on weekdays, c·w on Sat/Sun         c = 7/(5 + 2w): a week averages 1
    burst(t)   = m inside a burst window, else 1        m: several ×

and λ₀ is chosen so a week at the start averages ``requests_per_day`` including
the expected burst excess. Each day draws from its own ``numpy.random.Generator``
seeded by ``(seed, date)``, so a day's rows do not depend on how many days are
generated around it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache

import numpy as np
import pyarrow as arrow

from capplan.sample.isotime import US_PER_S, epoch_us
from capplan.sample.spec import SECONDS_PER_DAY, Burst, SampleSpec, day_start_utc

__all__ = ["SCHEMA", "DayChunk", "generate_day", "iter_days", "prefetch_days"]

DAYS_PER_MONTH = 365.25 / 12  # mean Gregorian month, for the growth exponent [days]

# Stream key mixed into the seed so each day's randomness has its own stream.
_DAY_STREAM = 1

SCHEMA = arrow.schema([
    arrow.field("ts_utc", arrow.timestamp("us", tz="UTC"), nullable=False),
    arrow.field("input_tokens", arrow.int32(), nullable=False),
    arrow.field("output_tokens", arrow.int32(), nullable=False),
    arrow.field("model", arrow.dictionary(arrow.int8(), arrow.string()), nullable=False),
    arrow.field("status", arrow.int16(), nullable=False),
    arrow.field("ttft_ms", arrow.float64()),
    arrow.field("latency_ms", arrow.float64()),
    arrow.field("request_id", arrow.string()),
    arrow.field("tenant", arrow.dictionary(arrow.int8(), arrow.string())),
    arrow.field("zone", arrow.dictionary(arrow.int8(), arrow.string())),
])
"""Arrow schema of generated rows: ``requests`` without ``file_id``; ``ts_utc`` is UTC.

``model``, ``tenant`` and ``zone`` are dictionary-encoded strings (DuckDB reads them as
``varchar``; pandas as ``category``).
"""

# Outside incidents: mostly 200, a few client errors, timeouts, throttles and server errors.
DEFAULT_STATUS_MIX: tuple[tuple[int, float], ...] = (
    (200, 0.9885), (400, 0.004), (408, 0.001), (429, 0.003), (500, 0.002), (503, 0.0015))
# Inside an incident, failing requests get one of these.
INCIDENT_STATUS_MIX: tuple[tuple[int, float], ...] = ((429, 0.3), (500, 0.4), (503, 0.3))
# Median latency of failed requests, by status [ms]: rejected fast, timed out slow.
_ERROR_LATENCY_MEDIAN_MS = {400: 30.0, 408: 30_000.0, 429: 15.0, 500: 800.0, 503: 200.0}


@dataclass(frozen=True)
class DayChunk:
    """One generated day: its rows and the bursts it contains."""

    day: date
    table: arrow.Table
    bursts: tuple[Burst, ...]


def _base_rate_rps(spec: SampleSpec) -> float:
    """λ₀ such that the expected daily count at the start, over a week, is ``requests_per_day``."""
    mean_duration_s = sum(spec.burst_duration_s) / 2
    mean_excess = sum(spec.burst_multiplier) / 2 - 1
    burst_excess = spec.bursts_per_day * mean_duration_s * mean_excess / SECONDS_PER_DAY  # [fraction of a day]
    return spec.requests_per_day / SECONDS_PER_DAY / (1 + burst_excess)


def _rate_per_second(spec: SampleSpec, d: date, rng: np.random.Generator) -> tuple[np.ndarray, tuple[Burst, ...]]:
    """λ(t) for each second of day ``d`` [requests/s], and the bursts drawn for the day."""
    seconds = np.arange(SECONDS_PER_DAY, dtype=np.float64)
    hours = seconds / 3600
    months = ((d - spec.start).days + seconds / SECONDS_PER_DAY) / DAYS_PER_MONTH
    weekday_level = 7 / (5 + 2 * spec.weekend_factor)  # so a whole week averages 1
    weekly = weekday_level * (spec.weekend_factor if d.weekday() >= 5 else 1.0)
    rate = (_base_rate_rps(spec)
            * (1 + spec.monthly_growth_fraction) ** months  # compound growth
            * (1 + spec.diurnal_amplitude * np.cos(2 * np.pi * (hours - spec.peak_hour_utc) / 24))
            * weekly)
    bursts = []
    for _ in range(rng.poisson(spec.bursts_per_day)):
        duration_s = int(rng.integers(spec.burst_duration_s[0], spec.burst_duration_s[1] + 1))
        first_s = int(rng.integers(0, SECONDS_PER_DAY - duration_s + 1))
        multiplier = round(float(rng.uniform(*spec.burst_multiplier)), 2)
        rate[first_s:first_s + duration_s] *= multiplier
        bursts.append(Burst(day_start_utc(d) + timedelta(seconds=first_s), duration_s, multiplier))
    return rate, tuple(bursts)


def _categorical(rng: np.random.Generator, shares: Sequence[float], n: int) -> np.ndarray:
    """Indices (int8) drawn with the given probabilities (inverse CDF).

    For the handful of categories here, one comparison per boundary beats a binary search.
    """
    cdf = np.cumsum(shares) / np.sum(shares)
    u = rng.random(n)
    index = np.zeros(n, dtype=np.int8)
    for boundary in cdf[:-1]:
        index += u >= boundary
    return index


def _dictionary(index: np.ndarray, names: Sequence[str]) -> arrow.DictionaryArray:
    return arrow.DictionaryArray.from_arrays(arrow.array(index), arrow.array(list(names), arrow.string()))


@lru_cache(maxsize=2)
def _digit_block(capacity: int, digits: int) -> np.ndarray:
    """Zero-padded decimal digits of 0 … capacity−1 as a (capacity, digits) uint8 array."""
    block = np.empty((capacity, digits), dtype=np.uint8)
    rest = np.arange(capacity, dtype=np.int64)
    for col in range(digits - 1, -1, -1):
        rest, digit = np.divmod(rest, 10)
        block[:, col] = digit + ord("0")
    block.flags.writeable = False
    return block


def _numbered_ids(prefix: str, n: int) -> arrow.StringArray:
    """``prefix`` + a zero-padded row number, built as one fixed-width byte buffer (no per-row Python)."""
    digits = max(7, len(str(max(n - 1, 0))))
    head = np.frombuffer(prefix.encode("ascii"), dtype=np.uint8)
    width = len(head) + digits
    if n * width >= 2**31:
        raise ValueError(f"{n} rows in one day are too many for one string column; lower requests_per_day")
    text = np.empty((n, width), dtype=np.uint8)
    text[:, :len(head)] = head
    # Every day numbers its rows from 0, so the digits are cut from one cached block.
    text[:, len(head):] = _digit_block(1 << max(n - 1, 1).bit_length(), digits)[:n]
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return arrow.StringArray.from_buffers(n, arrow.py_buffer(offsets), arrow.py_buffer(text))


def _lognormal(rng: np.random.Generator, median: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    return median * np.exp(sigma * rng.standard_normal(len(median)))


def generate_day(spec: SampleSpec, d: date) -> DayChunk:
    """The rows of day ``d`` (sorted by ``ts_utc``) as an Arrow table with :data:`SCHEMA`.

    Parameters
    ----------
    spec : SampleSpec
        What to generate.
    d : date
        The UTC day to draw; need not lie inside ``spec``'s span.

    Returns
    -------
    DayChunk
        The day, its rows and the bursts drawn for it.

    Notes
    -----
    The result depends only on ``spec`` and ``d``: a day's generator is seeded by
    ``(seed, 1, date ordinal)``, so chunking cannot change it. Draws, in order: bursts,
    arrivals per second, placement in the second, model, tokens, status, incident
    failures, TTFT and latency noise, tenant, zone; reordering them changes every row.
    """
    rng = np.random.default_rng([spec.seed, _DAY_STREAM, d.toordinal()])
    rate_rps, bursts = _rate_per_second(spec, d, rng)
    counts = rng.poisson(rate_rps)
    second = np.repeat(np.arange(SECONDS_PER_DAY, dtype=np.int64), counts)
    n = len(second)
    # Uniform placement inside each second, sorted so the log reads in arrival order.
    offset_us = np.sort((second * US_PER_S + rng.integers(0, US_PER_S, n)))
    ts_us = epoch_us(day_start_utc(d)) + offset_us

    models = spec.models
    m = _categorical(rng, [x.share for x in models], n)
    attr = {k: np.array([getattr(x, k) for x in models], dtype=np.float64) for k in (
        "input_median_tokens", "input_sigma", "output_median_tokens", "output_sigma", "context_tokens",
        "ttft_base_ms", "prefill_ms_per_input_token", "decode_ms_per_output_token")}
    input_tokens = _lognormal(rng, attr["input_median_tokens"][m], attr["input_sigma"][m])
    output_tokens = _lognormal(rng, attr["output_median_tokens"][m], attr["output_sigma"][m])
    if spec.drift is not None:
        drifted = (m == [x.name for x in models].index(spec.drift.model)) & (ts_us >= epoch_us(spec.drift.start))
        target = input_tokens if spec.drift.metric == "input" else output_tokens
        target[drifted] *= spec.drift.factor
    output_tokens = np.clip(np.rint(output_tokens), 1, attr["context_tokens"][m] - 1)
    input_tokens = np.clip(np.rint(input_tokens), 1, attr["context_tokens"][m] - output_tokens)

    status = np.array([c for c, _ in DEFAULT_STATUS_MIX], dtype=np.int16)[
        _categorical(rng, [p for _, p in DEFAULT_STATUS_MIX], n)]
    latency_factor = np.ones(n)
    incident_codes = np.array([c for c, _ in INCIDENT_STATUS_MIX], dtype=np.int16)
    for inc in spec.incident_windows:
        lo, hi = np.searchsorted(ts_us, [epoch_us(inc.start), epoch_us(inc.end)])
        failing = rng.random(hi - lo) < inc.error_fraction
        codes = incident_codes[_categorical(rng, [p for _, p in INCIDENT_STATUS_MIX], hi - lo)]
        status[lo:hi] = np.where(failing, codes, status[lo:hi])
        latency_factor[lo:hi] *= inc.latency_factor

    # TTFT = (floor + prefill) × load × incident × noise; latency = TTFT + decode.
    load = rate_rps[second] / rate_rps.mean()  # relative to the day's mean rate [ratio]
    load_factor = np.maximum(1 + spec.load_ttft_sensitivity * (load - 1), 0.5)
    ttft_ms = ((attr["ttft_base_ms"][m] + attr["prefill_ms_per_input_token"][m] * input_tokens)
               * load_factor * latency_factor * np.exp(0.3 * rng.standard_normal(n)))
    decode_ms = (attr["decode_ms_per_output_token"][m] * output_tokens
                 * latency_factor * np.exp(0.15 * rng.standard_normal(n)))
    latency_ms = ttft_ms + decode_ms
    failed = status != 200
    if failed.any():
        # Failed requests produce no tokens; their latency depends on how they failed.
        err_median = np.vectorize(_ERROR_LATENCY_MEDIAN_MS.get, otypes=[np.float64])(status[failed])
        latency_ms[failed] = err_median * latency_factor[failed] * np.exp(0.5 * rng.standard_normal(failed.sum()))
        ttft_ms[failed] = np.nan
        output_tokens[failed] = 0

    tenants = _dictionary(_categorical(rng, [s for _, s in spec.tenants], n), [t for t, _ in spec.tenants])
    zones = _dictionary(_categorical(rng, [s for _, s in spec.zones], n), [z for z, _ in spec.zones])
    table = arrow.Table.from_arrays([
        arrow.array(ts_us, arrow.timestamp("us", tz="UTC")),
        arrow.array(input_tokens.astype(np.int32)),
        arrow.array(output_tokens.astype(np.int32)),
        _dictionary(m, [x.name for x in models]),
        arrow.array(status),
        # Whole milliseconds, as gateways log them (and half the Parquet bytes of 0.1 ms).
        arrow.array(np.rint(ttft_ms), from_pandas=True),  # NaN → null: no first token
        arrow.array(np.rint(latency_ms)),
        _numbered_ids(f"s{spec.seed}-{d:%Y%m%d}-", n),
        tenants,
        zones,
    ], schema=SCHEMA)
    return DayChunk(d, table, bursts)


def iter_days(spec: SampleSpec) -> Iterator[DayChunk]:
    """Generate the days of ``spec`` in order, one :class:`DayChunk` at a time."""
    for d in spec.dates():
        yield generate_day(spec, d)


def prefetch_days(spec: SampleSpec) -> Iterator[DayChunk]:
    """:func:`iter_days`, generating the next day on a second thread while the caller writes this one.

    NumPy's bulk draws and Arrow's writers release the GIL, so the two overlap on two
    cores; at most two days are in memory.
    """
    from concurrent.futures import ThreadPoolExecutor

    dates = spec.dates()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="capplan-sample") as pool:
        pending = pool.submit(generate_day, spec, dates[0])
        for following in [*dates[1:], None]:
            chunk = pending.result()
            if following is not None:
                pending = pool.submit(generate_day, spec, following)
            yield chunk

