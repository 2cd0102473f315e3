"""Synthetic LLM-serving request logs, deterministic by seed, streamed day by day.

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
generated around it; memory holds at most two days and one Parquet row group.

Use :func:`iter_days` to get Arrow tables one day at a time, or
:func:`write_sample` to stream them to CSV, Parquet or JSON-lines files (optionally
gzip/zstd, split by month, or Hive-partitioned by day). The ground truth of what
was injected (incidents, drift, bursts) is :func:`ground_truth` before
generation and :attr:`SampleResult.truth` after it.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "DEFAULT_MODELS", "SCHEMA", "Burst", "DayChunk", "Drift", "Incident", "ModelMix", "SampleResult",
    "SampleSpec", "SampleTruth", "check_outputs", "generate_day", "ground_truth", "iter_days", "output_kind",
    "target_paths", "write_sample",
]

SECONDS_PER_DAY = 86_400
DAYS_PER_MONTH = 365.25 / 12  # mean Gregorian month, for the growth exponent [days]
_US_PER_S = 1_000_000

# Names of models, tenants and zones: safe in CSV, JSON and file names without escaping.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*")

# Stream keys mixed into the seed so each kind of randomness has its own stream.
_DAY_STREAM = 1
_INCIDENT_STREAM = 2

SCHEMA = pa.schema([
    pa.field("ts_utc", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("input_tokens", pa.int32(), nullable=False),
    pa.field("output_tokens", pa.int32(), nullable=False),
    pa.field("model", pa.dictionary(pa.int8(), pa.string()), nullable=False),
    pa.field("status", pa.int16(), nullable=False),
    pa.field("ttft_ms", pa.float64()),
    pa.field("latency_ms", pa.float64()),
    pa.field("request_id", pa.string()),
    pa.field("tenant", pa.dictionary(pa.int8(), pa.string())),
    pa.field("zone", pa.dictionary(pa.int8(), pa.string())),
])
"""Arrow schema of generated rows: ``requests`` without ``file_id``; ``ts_utc`` is UTC.

``model``, ``tenant`` and ``zone`` are dictionary-encoded strings (DuckDB reads them as
``varchar``; pandas as ``category``).
"""

# Text formats carry ISO-8601 timestamps, decoded strings and whole-millisecond integers
# (the generator rounds TTFT and latency to whole ms; integers format much faster than floats).
_TEXT_TYPES = {"ts_utc": pa.string(), "model": pa.string(), "tenant": pa.string(), "zone": pa.string(),
               "ttft_ms": pa.int64(), "latency_ms": pa.int64()}
_TEXT_SCHEMA = pa.schema([pa.field(f.name, _TEXT_TYPES.get(f.name, f.type), f.nullable) for f in SCHEMA])

METRICS = ("input", "output")
FORMATS = {".csv": "csv", ".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd"}
ROW_GROUP_ROWS = 1 << 20  # Parquet row-group size, and the most rows buffered before writing


@dataclass(frozen=True)
class ModelMix:
    """One served model: its traffic share, token mixes and speed.

    Token counts are lognormal: ``median · exp(sigma · Z)``. Figures are ASSUMED,
    chosen to look like public chat/RAG workloads, not measured.
    """

    name: str
    share: float  # fraction of requests [fraction]
    input_median_tokens: float  # [tokens]
    input_sigma: float  # lognormal shape of input tokens [ln tokens]
    output_median_tokens: float  # [tokens]
    output_sigma: float  # lognormal shape of output tokens [ln tokens]
    context_tokens: int  # input + output is clipped to this [tokens]
    ttft_base_ms: float  # queueing + scheduling floor of TTFT [ms]
    prefill_ms_per_input_token: float  # prefill time per prompt token [ms/token]
    decode_ms_per_output_token: float  # inter-token time [ms/token]


DEFAULT_MODELS: tuple[ModelMix, ...] = (
    ModelMix("llama-3.1-8b", 0.60, 600, 0.9, 180, 0.7, 32_768, 40, 0.05, 12),
    ModelMix("llama-3.1-70b", 0.30, 1_500, 1.0, 350, 0.8, 131_072, 90, 0.20, 35),
    ModelMix("qwen2.5-7b", 0.10, 24_000, 0.7, 500, 0.7, 131_072, 150, 0.06, 25),
)
"""A small chat model, a large model and a long-context (RAG) model; names are keys of
data/models.toml so the sizing stage can look them up. Figures are ASSUMED."""

DEFAULT_TENANTS: tuple[tuple[str, float], ...] = (
    ("acme", 0.40), ("globex", 0.25), ("initech", 0.15), ("umbrella", 0.12), ("hooli", 0.08))
DEFAULT_ZONES: tuple[tuple[str, float], ...] = (
    ("us-east-1a", 0.45), ("us-east-1b", 0.35), ("eu-west-1a", 0.20))
# Outside incidents: mostly 200, a few client errors, timeouts, throttles and server errors.
DEFAULT_STATUS_MIX: tuple[tuple[int, float], ...] = (
    (200, 0.9885), (400, 0.004), (408, 0.001), (429, 0.003), (500, 0.002), (503, 0.0015))
# Inside an incident, failing requests get one of these.
INCIDENT_STATUS_MIX: tuple[tuple[int, float], ...] = ((429, 0.3), (500, 0.4), (503, 0.3))
# Median latency of failed requests, by status [ms]: rejected fast, timed out slow.
_ERROR_LATENCY_MEDIAN_MS = {400: 30.0, 408: 30_000.0, 429: 15.0, 500: 800.0, 503: 200.0}


@dataclass(frozen=True)
class Incident:
    """A window in which a fraction of requests fail and all requests are slower."""

    start: datetime  # UTC
    duration_min: float  # [min]
    error_fraction: float  # share of requests in the window that fail with 429/5xx [fraction]
    latency_factor: float  # TTFT and latency multiplier in the window [ratio]

    @property
    def end(self) -> datetime:
        """End of the window (exclusive), UTC."""
        return self.start + timedelta(minutes=self.duration_min)

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", _as_utc(self.start, "Incident.start"))
        if not self.duration_min > 0:
            raise ValueError(f"Incident.duration_min must be > 0 minutes, got {self.duration_min}")
        if not 0 <= self.error_fraction <= 1:
            raise ValueError(f"Incident.error_fraction must be in [0, 1], got {self.error_fraction}")
        if not self.latency_factor > 0:
            raise ValueError(f"Incident.latency_factor must be > 0, got {self.latency_factor}")


@dataclass(frozen=True)
class Drift:
    """From ``start`` on, one model's input or output token counts are multiplied by ``factor``."""

    model: str
    metric: Literal["input", "output"]
    start: datetime  # UTC
    factor: float  # multiplier of the token count [ratio]

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", _as_utc(self.start, "Drift.start"))
        if self.metric not in METRICS:
            raise ValueError(f"Drift.metric must be one of {METRICS}, got {self.metric!r}")
        if not self.factor > 0:
            raise ValueError(f"Drift.factor must be > 0, got {self.factor}")


@dataclass(frozen=True)
class Burst:
    """A short window in which the arrival rate is ``multiplier`` times its usual value."""

    start: datetime  # UTC
    duration_s: int  # [s]
    multiplier: float  # [ratio]


@dataclass(frozen=True)
class SampleSpec:
    """Everything that determines a synthetic log; same spec → same rows.

    ``incidents`` is ``True`` (one or two incidents placed by the seed),
    ``False`` (none) or an explicit sequence of :class:`Incident`.
    """

    start: date
    days: int  # [days]
    requests_per_day: float  # mean daily requests over the first week, bursts included [requests/day]
    seed: int = 0
    monthly_growth_fraction: float = 0.05  # compound growth of the rate [fraction/month]
    incidents: bool | Sequence[Incident] = True
    drift: Drift | None = None
    models: tuple[ModelMix, ...] = DEFAULT_MODELS
    tenants: tuple[tuple[str, float], ...] = DEFAULT_TENANTS
    zones: tuple[tuple[str, float], ...] = DEFAULT_ZONES
    diurnal_amplitude: float = 0.6  # a: peak/mean − 1 of the daily cycle [fraction]
    peak_hour_utc: float = 15.0  # h_peak: hour of the daily maximum, UTC [h]
    weekend_factor: float = 0.55  # weekend rate / weekday rate [ratio]
    bursts_per_day: float = 4.0  # mean number of bursts per day [1/day]
    burst_duration_s: tuple[int, int] = (60, 600)  # uniform range of burst length [s]
    burst_multiplier: tuple[float, float] = (3.0, 8.0)  # uniform range of burst rate factor [ratio]
    load_ttft_sensitivity: float = 0.15  # TTFT grows by this per unit of load above the day's mean [ratio]
    _incidents: tuple[Incident, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.start, datetime) or not isinstance(self.start, date):
            raise ValueError(f"SampleSpec.start must be a date (not a datetime), got {self.start!r}")
        if self.days < 1:
            raise ValueError(f"SampleSpec.days must be >= 1, got {self.days}")
        if not (self.requests_per_day >= 0 and math.isfinite(self.requests_per_day)):
            raise ValueError(f"SampleSpec.requests_per_day must be >= 0, got {self.requests_per_day}")
        if not self.monthly_growth_fraction > -1:
            raise ValueError(f"SampleSpec.monthly_growth_fraction must be > -1, got {self.monthly_growth_fraction}")
        if not 0 <= self.diurnal_amplitude < 1:
            raise ValueError(f"SampleSpec.diurnal_amplitude must be in [0, 1), got {self.diurnal_amplitude}")
        if not self.weekend_factor > 0:
            raise ValueError(f"SampleSpec.weekend_factor must be > 0, got {self.weekend_factor}")
        if self.bursts_per_day < 0:
            raise ValueError(f"SampleSpec.bursts_per_day must be >= 0, got {self.bursts_per_day}")
        lo, hi = self.burst_duration_s
        if not 1 <= lo <= hi < SECONDS_PER_DAY:
            raise ValueError(
                f"SampleSpec.burst_duration_s must be 1 <= low <= high < 86400, got {self.burst_duration_s}")
        if not 1 <= self.burst_multiplier[0] <= self.burst_multiplier[1]:
            raise ValueError(f"SampleSpec.burst_multiplier must be 1 <= low <= high, got {self.burst_multiplier}")
        if not self.models:
            raise ValueError("SampleSpec.models must name at least one model")
        for label, pairs in (("models", [(m.name, m.share) for m in self.models]),
                             ("tenants", self.tenants), ("zones", self.zones)):
            _check_shares(label, [s for _, s in pairs])
        names = [m.name for m in self.models]
        for label, values in (("models", names), ("tenants", [t for t, _ in self.tenants]),
                              ("zones", [z for z, _ in self.zones])):
            bad = [v for v in values if not _NAME.fullmatch(v)]
            if bad:
                raise ValueError(f"SampleSpec.{label}: names must match {_NAME.pattern}, got {bad}")
        if self.drift is not None and self.drift.model not in names:
            raise ValueError(f"Drift.model {self.drift.model!r} is not a generated model; valid: {names}")
        object.__setattr__(self, "_incidents", self._resolve_incidents())

    @property
    def end(self) -> date:
        """The day after the last generated day."""
        return self.start + timedelta(days=self.days)

    def dates(self) -> list[date]:
        """The generated days, in order."""
        return [self.start + timedelta(days=i) for i in range(self.days)]

    @property
    def incident_windows(self) -> tuple[Incident, ...]:
        """The incidents actually injected (placed by the seed when ``incidents=True``)."""
        return self._incidents

    def _resolve_incidents(self) -> tuple[Incident, ...]:
        if self.incidents is False:
            return ()
        if self.incidents is not True:
            object.__setattr__(self, "incidents", tuple(self.incidents))  # hashable, comparable
            return tuple(sorted(self.incidents, key=lambda i: i.start))
        rng = np.random.default_rng([self.seed, _INCIDENT_STREAM])
        count = 1 if self.days < 30 else 2
        day_offsets = np.sort(rng.choice(self.days, size=min(count, self.days), replace=False))
        placed = []
        for offset in day_offsets:
            minute_of_day = int(rng.integers(9 * 60, 18 * 60))  # business hours, when it hurts most
            placed.append(Incident(
                start=_day_start(self.start + timedelta(days=int(offset))) + timedelta(minutes=minute_of_day),
                duration_min=float(rng.integers(20, 121)),
                error_fraction=round(float(rng.uniform(0.05, 0.30)), 3),
                latency_factor=round(float(rng.uniform(2.0, 5.0)), 2),
            ))
        return tuple(placed)


@dataclass(frozen=True)
class SampleTruth:
    """What was injected, to compare detectors and reports against."""

    incidents: tuple[Incident, ...]
    drift: Drift | None
    bursts: tuple[Burst, ...] = ()
    rows_per_day: dict[date, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain data with ISO-8601 times, for JSON."""
        return _jsonable({
            "incidents": [asdict(i) | {"end": i.end} for i in self.incidents],
            "drift": asdict(self.drift) if self.drift else None,
            "bursts": [asdict(b) for b in self.bursts],
            "rows_per_day": self.rows_per_day,
        })


def _jsonable(value):
    if isinstance(value, dict):
        return {_jsonable(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, date):  # datetime too
        return value.isoformat()
    return value


@dataclass(frozen=True)
class DayChunk:
    """One generated day: its rows and the bursts it contains."""

    day: date
    table: pa.Table
    bursts: tuple[Burst, ...]


@dataclass(frozen=True)
class SampleResult:
    """What :func:`write_sample` wrote."""

    paths: tuple[Path, ...]
    rows: int
    truth: SampleTruth


def ground_truth(spec: SampleSpec) -> SampleTruth:
    """Incidents and drift of ``spec``, known before generating (bursts come with the rows)."""
    return SampleTruth(incidents=spec.incident_windows, drift=spec.drift)


def _as_utc(value: datetime, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise ValueError(f"{what} must be a datetime, got {value!r}")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _check_shares(label: str, shares: Sequence[float]) -> None:
    if not shares or any(s < 0 for s in shares) or not math.isclose(sum(shares), 1.0, abs_tol=1e-6):
        raise ValueError(f"SampleSpec.{label} shares must be >= 0 and sum to 1, got {list(shares)}")
    if len(shares) > 127:  # dictionary indices are int8
        raise ValueError(f"SampleSpec.{label}: at most 127 names, got {len(shares)}")


def _day_start(d: date) -> datetime:
    return datetime.combine(d, time(), tzinfo=UTC)


def _epoch_us(t: datetime) -> int:
    return (t - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


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
        bursts.append(Burst(_day_start(d) + timedelta(seconds=first_s), duration_s, multiplier))
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


def _dictionary(index: np.ndarray, names: Sequence[str]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(index), pa.array(list(names), pa.string()))


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


def _numbered_ids(prefix: str, n: int) -> pa.StringArray:
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
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(text))


def _lognormal(rng: np.random.Generator, median: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    return median * np.exp(sigma * rng.standard_normal(len(median)))


def generate_day(spec: SampleSpec, d: date) -> DayChunk:
    """The rows of day ``d`` (sorted by ``ts_utc``) as an Arrow table with :data:`SCHEMA`.

    The result depends only on ``spec`` and ``d``: a day's generator is seeded by
    ``(seed, date)``, so chunking cannot change it.
    """
    rng = np.random.default_rng([spec.seed, _DAY_STREAM, d.toordinal()])
    rate_rps, bursts = _rate_per_second(spec, d, rng)
    counts = rng.poisson(rate_rps)
    second = np.repeat(np.arange(SECONDS_PER_DAY, dtype=np.int64), counts)
    n = len(second)
    # Uniform placement inside each second, sorted so the log reads in arrival order.
    offset_us = np.sort((second * _US_PER_S + rng.integers(0, _US_PER_S, n)))
    ts_us = _epoch_us(_day_start(d)) + offset_us

    models = spec.models
    m = _categorical(rng, [x.share for x in models], n)
    attr = {k: np.array([getattr(x, k) for x in models], dtype=np.float64) for k in (
        "input_median_tokens", "input_sigma", "output_median_tokens", "output_sigma", "context_tokens",
        "ttft_base_ms", "prefill_ms_per_input_token", "decode_ms_per_output_token")}
    input_tokens = _lognormal(rng, attr["input_median_tokens"][m], attr["input_sigma"][m])
    output_tokens = _lognormal(rng, attr["output_median_tokens"][m], attr["output_sigma"][m])
    if spec.drift is not None:
        drifted = (m == [x.name for x in models].index(spec.drift.model)) & (ts_us >= _epoch_us(spec.drift.start))
        target = input_tokens if spec.drift.metric == "input" else output_tokens
        target[drifted] *= spec.drift.factor
    output_tokens = np.clip(np.rint(output_tokens), 1, attr["context_tokens"][m] - 1)
    input_tokens = np.clip(np.rint(input_tokens), 1, attr["context_tokens"][m] - output_tokens)

    status = np.array([c for c, _ in DEFAULT_STATUS_MIX], dtype=np.int16)[
        _categorical(rng, [p for _, p in DEFAULT_STATUS_MIX], n)]
    latency_factor = np.ones(n)
    incident_codes = np.array([c for c, _ in INCIDENT_STATUS_MIX], dtype=np.int16)
    for inc in spec.incident_windows:
        lo, hi = np.searchsorted(ts_us, [_epoch_us(inc.start), _epoch_us(inc.end)])
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
    table = pa.Table.from_arrays([
        pa.array(ts_us, pa.timestamp("us", tz="UTC")),
        pa.array(input_tokens.astype(np.int32)),
        pa.array(output_tokens.astype(np.int32)),
        _dictionary(m, [x.name for x in models]),
        pa.array(status),
        # Whole milliseconds, as gateways log them (and half the Parquet bytes of 0.1 ms).
        pa.array(np.rint(ttft_ms), from_pandas=True),  # NaN → null: no first token
        pa.array(np.rint(latency_ms)),
        _numbered_ids(f"s{spec.seed}-{d:%Y%m%d}-", n),
        tenants,
        zones,
    ], schema=SCHEMA)
    return DayChunk(d, table, bursts)


def iter_days(spec: SampleSpec) -> Iterator[DayChunk]:
    """Generate the days of ``spec`` in order, one :class:`DayChunk` at a time."""
    for d in spec.dates():
        yield generate_day(spec, d)


def _prefetched_days(spec: SampleSpec) -> Iterator[DayChunk]:
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


# ---------------------------------------------------------------- writing


def output_kind(path: str | Path) -> tuple[str, str | None]:
    """``(format, compression)`` from a file name's suffixes, e.g. ``x.csv.zst`` → ``("csv", "zstd")``.

    Raises
    ------
    ValueError
        If the suffix is not one of ``.csv``, ``.parquet``, ``.jsonl``, ``.ndjson``
        (optionally ``.gz``/``.zst`` for CSV and JSON lines).
    """
    suffixes = [s.lower() for s in Path(path).suffixes]
    compression = COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    fmt_suffix = (suffixes[-2] if compression and len(suffixes) > 1 else suffixes[-1]) if suffixes else ""
    fmt = FORMATS.get(fmt_suffix)
    valid = "'.csv', '.parquet', '.jsonl', '.ndjson', optionally + '.gz' or '.zst' (not for Parquet)"
    if fmt is None or (fmt == "parquet" and compression):
        raise ValueError(f"{path}: cannot tell the output format from the suffix; expected {valid}")
    return fmt, compression


class _Sink:
    """Writes Arrow tables to one file under a temporary name, renamed when complete."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tmp = path.with_name(f".{path.name}.tmp")
        path.parent.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def open(path: Path) -> _Sink:
        fmt, compression = output_kind(path)
        return _ParquetSink(path) if fmt == "parquet" else _TextSink(path, fmt, compression)

    def write(self, table: pa.Table) -> None:
        raise NotImplementedError

    def _finish(self, ok: bool) -> None:
        raise NotImplementedError

    def close(self, ok: bool) -> None:
        try:
            self._finish(ok)
        finally:
            if ok:
                os.replace(self.tmp, self.path)
            else:
                self.tmp.unlink(missing_ok=True)


class _ParquetSink(_Sink):
    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        super().__init__(path)
        self._writer = pq.ParquetWriter(
            self.tmp, SCHEMA, compression="zstd", use_dictionary=["model", "tenant", "zone", "status"],
            # Sorted times and numbered ids delta-encode well; floats compress better split by byte.
            column_encoding={"ts_utc": "DELTA_BINARY_PACKED", "request_id": "DELTA_BYTE_ARRAY",
                             "ttft_ms": "BYTE_STREAM_SPLIT", "latency_ms": "BYTE_STREAM_SPLIT"})
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def write(self, table: pa.Table) -> None:
        # Small days are gathered into row groups of up to ROW_GROUP_ROWS: larger groups
        # compress better (12.3 → 11.8 B/row at 5,000 rows/day) and memory stays bounded.
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._pending_rows:
            self._writer.write_table(pa.concat_tables(self._pending), row_group_size=ROW_GROUP_ROWS)
        self._pending, self._pending_rows = [], 0

    def _finish(self, ok: bool) -> None:
        try:
            if ok:
                self._flush()
        finally:
            self._writer.close()


class _TextSink(_Sink):
    """CSV or JSON lines, one encoded day at a time, through gzip (level 6) or zstd."""

    def __init__(self, path: Path, fmt: str, compression: str | None) -> None:
        super().__init__(path)
        self._fmt = fmt
        self._raw = open(self.tmp, "wb")  # noqa: SIM115 - closed in _finish
        if compression == "gzip":
            import gzip

            # Arrow's gzip defaults to level 9 (≈ 5× slower); mtime=0 and no name keep bytes reproducible.
            self._stream = gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=self._raw, mtime=0)
        elif compression == "zstd":
            self._stream = pa.CompressedOutputStream(self._raw, "zstd")
        else:
            self._stream = self._raw
        self._header = True

    def write(self, table: pa.Table) -> None:
        table = _text_table(table)
        if self._fmt == "csv":
            import pyarrow.csv as pcsv

            out = pa.BufferOutputStream()
            pcsv.write_csv(table, out, pcsv.WriteOptions(include_header=self._header))
            self._stream.write(out.getvalue())
            self._header = False
        else:
            for start in range(0, table.num_rows, ROW_GROUP_ROWS):  # keeps each string column < 2 GiB
                self._stream.write(_json_lines(table.slice(start, ROW_GROUP_ROWS)))

    def _finish(self, ok: bool) -> None:
        try:
            if self._stream is not self._raw:
                self._stream.close()
        finally:
            self._raw.close()


def _text_table(table: pa.Table) -> pa.Table:
    """Text-format columns: ISO-8601 UTC timestamps, decoded strings, whole-ms latencies as integers."""
    ts_us = table["ts_utc"].combine_chunks().cast(pa.int64()).to_numpy()
    table = table.set_column(0, pa.field("ts_utc", pa.string()), _iso_utc(ts_us))
    return table.cast(_TEXT_SCHEMA)


# "00" … "99" as little-endian uint16 pairs, written into fixed byte offsets of each row.
_PAIRS = np.array([[ord("0") + i // 10, ord("0") + i % 10] for i in range(100)], dtype="<u1").view("<u2").ravel()
_ISO_TEMPLATE = np.frombuffer(b"0000-00-00T00:00:00.000000Z", dtype=np.uint8)
_ISO_FIELDS = {"century": 0, "year": 2, "month": 5, "day": 8, "hour": 11, "minute": 14, "second": 17,
               "us_hi": 20, "us_mid": 22, "us_lo": 24}  # byte offset of each two-digit field
_ISO_ROW = np.dtype({"names": [*_ISO_FIELDS, "row"], "formats": ["<u2"] * len(_ISO_FIELDS) + [("u1", 27)],
                     "offsets": [*_ISO_FIELDS.values(), 0], "itemsize": 27})


def _civil_from_days(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) of days since 1970-01-01, proleptic Gregorian.

    H. Hinnant, "chrono-Compatible Low-Level Date Algorithms", civil_from_days.
    """
    z = days + 719_468  # days since 0000-03-01
    era = z // 146_097  # 400-year eras
    doe = z - era * 146_097  # day of era [0, 146096]
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365  # year of era [0, 399]
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)  # day of year, from March 1 [0, 365]
    mp = (5 * doy + 2) // 153  # month from March [0, 11]
    month = np.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (month <= 2), month, doy - (153 * mp + 2) // 5 + 1


def _iso_utc(ts_us: np.ndarray) -> pa.StringArray:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` for microseconds since the epoch, as one byte buffer.

    About 3× faster than ``pyarrow.compute.strftime``, which dominated text output;
    the calendar date is computed once per distinct day.
    """
    days, us = np.divmod(ts_us, 86_400 * _US_PER_S)
    first = int(days.min()) if len(days) else 0
    span = np.arange(first, int(days.max(initial=first)) + 1)
    year, month, day = (part[days - first] for part in _civil_from_days(span))
    seconds, micros = np.divmod(us, _US_PER_S)
    rows = np.empty(len(ts_us), dtype=_ISO_ROW)
    rows["row"] = _ISO_TEMPLATE
    for name, value in (("century", year // 100), ("year", year % 100), ("month", month), ("day", day),
                        ("hour", seconds // 3_600), ("minute", seconds // 60 % 60), ("second", seconds % 60),
                        ("us_hi", micros // 10_000), ("us_mid", micros // 100 % 100), ("us_lo", micros % 100)):
        rows[name] = _PAIRS[value]
    offsets = np.arange(0, len(ts_us) * _ISO_ROW.itemsize + 1, _ISO_ROW.itemsize, dtype=np.int32)
    return pa.StringArray.from_buffers(len(ts_us), pa.py_buffer(offsets), pa.py_buffer(rows.view(np.uint8)))


def _json_lines(table: pa.Table) -> pa.Buffer:
    """One JSON object per row, joined column-wise by Arrow (no per-row Python).

    String values need no escaping: names are checked by :class:`SampleSpec` and ids and
    timestamps are built from digits.
    """
    pieces: list = []
    for i, f in enumerate(table.schema):
        values = table.column(i)
        if pa.types.is_string(f.type):
            values = pc.binary_join_element_wise('"', values, '"', "")
        else:
            values = pc.cast(values, pa.string())
        pieces += [("{" if i == 0 else ",") + json.dumps(f.name) + ":", pc.fill_null(values, "null")]
    rows = pc.binary_join_element_wise(*pieces, "}\n", "").combine_chunks()
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int32)[rows.offset: rows.offset + len(rows) + 1]
    return rows.buffers()[2][int(offsets[0]):int(offsets[-1])] if len(rows) else pa.py_buffer(b"")


def target_paths(spec: SampleSpec, out: str | Path,
                 split: Literal["none", "month", "day"] = "none") -> dict[date, Path]:
    """The file each day of ``spec`` goes to.

    ``split="none"``: all days to ``out``. ``"month"``: ``<stem>-YYYY-MM<suffixes>``
    beside ``out``. ``"day"``: Hive layout ``out/dt=YYYY-MM-DD/part-0.parquet``
    (``out`` is a folder; Parquet only).
    """
    out = Path(out)
    if split == "day":
        return {d: out / f"dt={d.isoformat()}" / "part-0.parquet" for d in spec.dates()}
    output_kind(out)
    if split == "none":
        return dict.fromkeys(spec.dates(), out)
    if split == "month":
        suffix = "".join(out.suffixes)
        stem = out.name[: len(out.name) - len(suffix)]
        return {d: out.with_name(f"{stem}-{d:%Y-%m}{suffix}") for d in spec.dates()}
    raise ValueError(f"split must be 'none', 'month' or 'day', got {split!r}")


def check_outputs(spec: SampleSpec, out: str | Path, split: Literal["none", "month", "day"] = "none",
                  overwrite: bool = False) -> dict[date, Path]:
    """:func:`target_paths`, refusing existing files unless ``overwrite``.

    Raises
    ------
    ValueError
        Unknown suffix or split.
    FileExistsError
        A target exists and ``overwrite`` is false.
    """
    targets = target_paths(spec, out, split)
    if not overwrite:
        existing = next((p for p in dict.fromkeys(targets.values()) if p.exists()), None)
        if existing is not None:
            raise FileExistsError(f"{existing} already exists (pass overwrite=True / --force to replace it)")
    return targets


def write_sample(
    spec: SampleSpec,
    out: str | Path,
    *,
    split: Literal["none", "month", "day"] = "none",
    overwrite: bool = False,
    on_day: Callable[[DayChunk], None] | None = None,
) -> SampleResult:
    """Generate ``spec`` and stream it to ``out``, one day at a time.

    Parameters
    ----------
    spec : SampleSpec
        What to generate.
    out : str or Path
        Output file; its suffix picks the format (``.csv``, ``.parquet``,
        ``.jsonl``/``.ndjson``, optionally ``.gz``/``.zst`` for text). A folder
        when ``split="day"``.
    split : {"none", "month", "day"}
        One file, one file per calendar month, or Hive-partitioned Parquet by day
        (see :func:`target_paths`).
    overwrite : bool
        Replace existing outputs; otherwise an existing target raises ``FileExistsError``.
    on_day : callable, optional
        Called with each :class:`DayChunk` after it is written (progress bars).

    Returns
    -------
    SampleResult
        Paths written, row count, and the ground truth including bursts.

    Notes
    -----
    Each file is written under a temporary name and renamed when complete, so a
    watcher never sees half a file. The next day is generated on a second thread
    while this one is written; memory holds at most two days and one row group
    (:data:`ROW_GROUP_ROWS`).
    """
    targets = check_outputs(spec, out, split, overwrite)
    rows_per_day: dict[date, int] = {}
    bursts: list[Burst] = []
    sink: _Sink | None = None
    try:
        for chunk in _prefetched_days(spec):
            path = targets[chunk.day]
            if sink is None or sink.path != path:
                if sink is not None:
                    sink.close(ok=True)
                sink = _Sink.open(path)
            sink.write(chunk.table)
            rows_per_day[chunk.day] = chunk.table.num_rows
            bursts.extend(chunk.bursts)
            if on_day is not None:
                on_day(chunk)
    except BaseException:
        if sink is not None:
            sink.close(ok=False)
        raise
    if sink is not None:
        sink.close(ok=True)
    truth = SampleTruth(spec.incident_windows, spec.drift, tuple(bursts), rows_per_day)
    return SampleResult(tuple(dict.fromkeys(targets.values())), sum(rows_per_day.values()), truth)
