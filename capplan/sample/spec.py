"""What a synthetic log contains: the spec that determines it and the truth of what was injected.

:class:`SampleSpec` holds every setting (span, volume, cycles, models, tenants, zones,
incidents, drift) and validates it once; :class:`SampleTruth` is what was injected,
for detectors and reports to be compared against. No randomness is drawn here except
the placement of seeded incidents, which depends on the seed alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal

import numpy as np

SECONDS_PER_DAY = 86_400
METRICS = ("input", "output")

# Names of models, tenants and zones: safe in CSV, JSON and file names without escaping.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*")

# Stream key mixed into the seed so the placement of incidents has its own stream.
_INCIDENT_STREAM = 2


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
                start=day_start_utc(self.start + timedelta(days=int(offset))) + timedelta(minutes=minute_of_day),
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


def ground_truth(spec: SampleSpec) -> SampleTruth:
    """Incidents and drift of ``spec``, known before generating (bursts come with the rows)."""
    return SampleTruth(incidents=spec.incident_windows, drift=spec.drift)


def day_start_utc(d: date) -> datetime:
    """Midnight UTC at the start of day ``d``."""
    return datetime.combine(d, time(), tzinfo=UTC)


def _jsonable(value):
    if isinstance(value, dict):
        return {_jsonable(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, date):  # datetime too
        return value.isoformat()
    return value


def _as_utc(value: datetime, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise ValueError(f"{what} must be a datetime, got {value!r}")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _check_shares(label: str, shares: Sequence[float]) -> None:
    if not shares or any(s < 0 for s in shares) or not math.isclose(sum(shares), 1.0, abs_tol=1e-6):
        raise ValueError(f"SampleSpec.{label} shares must be >= 0 and sum to 1, got {list(shares)}")
    if len(shares) > 127:  # dictionary indices are int8
        raise ValueError(f"SampleSpec.{label}: at most 127 names, got {len(shares)}")
