"""The contracts of the frames the profile's readers return: one pandera model per frame.

Every frame has a row per model and one for all models together, ``model == ALL_MODELS``. Each
column carries its bound and its unit.
"""

from __future__ import annotations

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from capplan.profile.counting import ALL_MODELS, METRICS  # noqa: F401 - defined once, beside the writer
from capplan.profile.queries import EMPTY_HOURS, GRAINS  # noqa: F401 - defined once, beside the queries


class HourlyTraffic(pa.DataFrameModel):
    """One UTC hour of one model (or ``"__all__"``); gap hours carry nulls or zeros per ``empty_hours``."""

    hour_utc: Series[pd.Timestamp] = pa.Field(description="Start of the hour, UTC.")
    model: Series[str] = pa.Field(description="Model name, or '__all__'.")
    requests: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="Arrivals. [requests]")
    errors: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="Non-2xx arrivals. [requests]")
    avg_qps: Series[float] = pa.Field(
        ge=0, nullable=True, description="requests / exposure_s; null below 600 s observed. [requests/s]")
    peak_second_qps: Series[float] = pa.Field(
        ge=0, nullable=True, description="Arrivals in the busiest aligned second. [requests/s]")
    input_tokens_sum: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="[tokens]")
    output_tokens_sum: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="[tokens]")
    mean_ttft_ms: Series[float] = pa.Field(ge=0, nullable=True, description="Over rows with TTFT. [ms]")
    mean_latency_ms: Series[float] = pa.Field(ge=0, nullable=True, description="Over rows with latency. [ms]")
    concurrency_littles: Series[float] = pa.Field(
        ge=0, nullable=True, description="Little's law avg_qps * mean latency. [requests in flight]")
    concurrency_measured_peak: Series[pd.Int64Dtype] = pa.Field(
        ge=0, nullable=True, description="Peak of the sweep over [arrival, arrival+latency). [requests in flight]")
    is_gap: Series[bool] = pa.Field(description="No rows in this hour inside the model's span.")
    exposure_s: Series[float] = pa.Field(
        ge=0, le=3600, description="Seconds of the hour inside the logs' observed span (0 in a gap). [s]")

    class Config:
        coerce = True
        strict = True
        ordered = True


class PeriodTraffic(pa.DataFrameModel):
    """One local day or week of one model (or ``"__all__"``)."""

    period_start_local: Series[pd.Timestamp] = pa.Field(description="Local midnight starting the period.")
    model: Series[str]
    requests: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="[requests]")
    observed_hours: Series[int] = pa.Field(ge=0, description="Hours with a request count. [hours]")
    gap_hours: Series[int] = pa.Field(ge=0, description="Hours without rows. [hours]")
    avg_qps: Series[float] = pa.Field(ge=0, nullable=True, description="Over observed hours. [requests/s]")
    peak_hour_qps: Series[float] = pa.Field(ge=0, nullable=True, description="Busiest hour / 3600. [requests/s]")
    peak_second_qps: Series[float] = pa.Field(ge=0, nullable=True, description="Busiest second. [requests/s]")
    peak_hour_to_avg: Series[float] = pa.Field(ge=1, nullable=True, description="[ratio]")
    peak_second_to_avg: Series[float] = pa.Field(ge=0, nullable=True, description="[ratio]")
    busiest_hour_of_day: Series[pd.Int64Dtype] = pa.Field(
        ge=0, le=23, nullable=True, description="Local hour of the busiest hour. [0-23]")
    busiest_day_of_week: Series[pd.Int64Dtype] = pa.Field(
        ge=1, le=7, nullable=True, description="ISO day of the busiest day, 1 = Monday. [1-7]")

    class Config:
        coerce = True
        strict = True


class TypicalWeek(pa.DataFrameModel):
    """168 hour-of-week factors per model (0 = Monday 00:00 local)."""

    model: Series[str]
    hour_of_week: Series[int] = pa.Field(ge=0, le=167)
    observed_hours: Series[int] = pa.Field(ge=0, description="Hours averaged. [hours]")
    avg_qps: Series[float] = pa.Field(ge=0, nullable=True, description="[requests/s]")
    factor: Series[float] = pa.Field(ge=0, nullable=True, description="Mean of this hour / mean of all. [ratio]")

    class Config:
        coerce = True
        strict = True


class TokenDistribution(pa.DataFrameModel):
    """Token lengths per period and model, percentiles from merged log-binned histograms."""

    period_start_utc: Series[pd.Timestamp] = pa.Field(description="Start of the UTC period.")
    model: Series[str]
    requests: Series[int] = pa.Field(ge=0, description="[requests]")
    input_tokens_mean: Series[float] = pa.Field(ge=0, description="Exact, from sums. [tokens]")
    input_tokens_p50: Series[float] = pa.Field(ge=0, description="[tokens]")
    input_tokens_p90: Series[float] = pa.Field(ge=0, description="[tokens]")
    input_tokens_p99: Series[float] = pa.Field(ge=0, description="[tokens]")
    output_tokens_mean: Series[float] = pa.Field(ge=0, description="Exact, from sums. [tokens]")
    output_tokens_p50: Series[float] = pa.Field(ge=0, description="[tokens]")
    output_tokens_p90: Series[float] = pa.Field(ge=0, description="[tokens]")
    output_tokens_p99: Series[float] = pa.Field(ge=0, description="[tokens]")

    class Config:
        coerce = True
        strict = True


class Histogram(pa.DataFrameModel):
    """Log-binned histogram of one metric per period and model (sparse: empty bins are absent)."""

    period_start_utc: Series[pd.Timestamp]
    model: Series[str]
    bin_lo: Series[float] = pa.Field(ge=0, description="Inclusive lower edge, in the metric's unit.")
    bin_hi: Series[float] = pa.Field(gt=0, description="Exclusive upper edge, in the metric's unit.")
    count: Series[int] = pa.Field(gt=0, description="[requests]")

    class Config:
        coerce = True
        strict = True


class HourlySli(pa.DataFrameModel):
    """Request-based SLI per UTC hour and model (and ``__all__``)."""

    hour_utc: Series[pd.Timestamp]
    model: Series[str]
    valid_events: Series[int] = pa.Field(ge=0, description="All rows but 4xx other than 408 and 429 (sli_valid). [requests]")
    good_events: Series[int] = pa.Field(ge=0, description="2xx with TTFT <= threshold. [requests]")
    success_rate: Series[float] = pa.Field(ge=0, le=1, nullable=True, description="2xx / valid. [fraction]")
    good_fraction: Series[float] = pa.Field(ge=0, le=1, nullable=True, description="good / valid. [fraction]")
    ttft_p50_ms: Series[float] = pa.Field(ge=0, nullable=True, description="From histograms. [ms]")
    ttft_p95_ms: Series[float] = pa.Field(ge=0, nullable=True, description="[ms]")
    ttft_p99_ms: Series[float] = pa.Field(ge=0, nullable=True, description="[ms]")

    class Config:
        coerce = True
        strict = True
