"""The readers of the traffic profile: frames computed from the hourly roll-ups, never from raw rows.

Readers only read, and work on a read-only connection: each checks first that the roll-ups exist
and are current (:func:`~capplan.profile.freshness.require_current_rollups`) and raises
:class:`~capplan.profile.freshness.ProfileError` naming the command that refreshes them otherwise.
Days, weeks and months are sums of hours, so their percentiles come from merged histograms, never
from averaged percentiles. Every frame has a row per model and for ``model == "__all__"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

import duckdb
import pandas as pd
import pandera.pandas as pa
from pandera.typing import DataFrame

from capplan import sql
from capplan.profile import queries
from capplan.profile.bins import HISTOGRAM_GAMMA
from capplan.profile.exposure import apply_exposure, observed_span
from capplan.profile.freshness import require_current_rollups
from capplan.profile.queries import EMPTY_HOURS, GRAINS, TOKEN_QUANTILES, TTFT_QUANTILES, since_utc
from capplan.profile.schemas import (
    METRICS,
    Histogram,
    HourlySli,
    HourlyTraffic,
    PeriodTraffic,
    TokenDistribution,
    TypicalWeek,
)


def _check_tz(tz: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"tz must be an IANA time zone such as 'UTC' or 'Europe/Berlin', got {tz!r}") from None


def _validate(frame: pd.DataFrame, model: type[pa.DataFrameModel]) -> pd.DataFrame:
    return model.validate(frame)


# --------------------------------------------------------------------------- hours and periods


def hourly_traffic(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    since: date | datetime | str | None = None,
    *,
    empty_hours: str = "missing",
) -> DataFrame[HourlyTraffic]:
    """Traffic per UTC hour, per model and for all models (``model == "__all__"``).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Connection (read-only is enough) to a database whose roll-ups are current.
    model : str, optional
        One model, ``"__all__"``, or ``None`` for every model and ``"__all__"``.
    since : date, datetime or str, optional
        First hour to return (a date means midnight UTC). [UTC]
    empty_hours : {"missing", "zero"}
        What an hour with no rows inside a model's span means: a logging gap (measures null) or
        true zero traffic (counts 0). Either way ``is_gap`` is true.

    Returns
    -------
    DataFrame[HourlyTraffic]
        Ordered by model, then hour.

    Raises
    ------
    ProfileError
        No ``requests`` table, or roll-ups missing or older than the ingested files.

    Notes
    -----
    * A model's span runs from its first to its last hour with rows; hours outside it are absent.
    * ``peak_second_qps`` counts arrivals in the busiest aligned UTC second (``[s, s + 1 s)``).
    * ``concurrency_littles = avg_qps * mean_latency_ms / 1000`` (L = λ·W, steady state).
    * ``concurrency_measured_peak`` is the peak of a sweep over ``[arrival, arrival + latency)``
      of the rows with latency logged; a request crossing an hour boundary counts in every hour it
      overlaps, so an hour without arrivals can still show requests in flight.
    """
    queries.check_choice("empty_hours", empty_hours, EMPTY_HOURS)
    require_current_rollups(con)
    frame = queries.hourly_traffic(con, model, since, empty_hours).df()
    return _validate(apply_exposure(frame, observed_span(con)), HourlyTraffic)


def _on_hourly(con: duckdb.DuckDBPyConnection, hourly: pd.DataFrame, query: str, params: dict) -> pd.DataFrame:
    """Run a report query over an hourly frame registered as ``profile_hourly`` (a view of this connection only)."""
    con.register("profile_hourly", hourly)
    try:
        return con.execute(sql.load(query), params).df()
    finally:
        con.unregister("profile_hourly")


def _period_traffic(con, grain, model, since, tz, empty_hours) -> pd.DataFrame:
    _check_tz(tz)
    hourly = hourly_traffic(con, model, since, empty_hours=empty_hours)
    frame = _on_hourly(con, hourly, "rpt_period_traffic", {"grain": grain, "tz": tz})
    return _validate(frame, PeriodTraffic)


def daily_traffic(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    since: date | datetime | str | None = None,
    *,
    tz: str = "UTC",
    empty_hours: str = "missing",
) -> DataFrame[PeriodTraffic]:
    """Traffic per local day (in ``tz``) and model: average, peak-hour and peak-second QPS and ratios.

    ``peak_hour_to_avg = peak_hour_qps / avg_qps`` and ``peak_second_to_avg = peak_second_qps /
    avg_qps``; ``avg_qps`` is over observed hours (a DST day has 23 or 25 of them). Arguments as in
    :func:`hourly_traffic`; ``tz`` is an IANA zone.
    """
    return _period_traffic(con, "day", model, since, tz, empty_hours)


def weekly_traffic(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    since: date | datetime | str | None = None,
    *,
    tz: str = "UTC",
    empty_hours: str = "missing",
) -> DataFrame[PeriodTraffic]:
    """Traffic per local ISO week (Monday start, in ``tz``) and model; columns as :func:`daily_traffic`."""
    return _period_traffic(con, "week", model, since, tz, empty_hours)


def typical_week(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    since: date | datetime | str | None = None,
    *,
    tz: str = "UTC",
) -> DataFrame[TypicalWeek]:
    """168 hourly factors per model: mean requests in each local hour of the week / overall mean.

    Gap hours are left out of both means; an hour of the week never observed has a null factor.
    """
    _check_tz(tz)
    hourly = hourly_traffic(con, model, since, empty_hours="missing")
    return _validate(_on_hourly(con, hourly, "rpt_typical_week", {"tz": tz}), TypicalWeek)


# --------------------------------------------------------------------------- distributions


def histogram_quantiles(con: duckdb.DuckDBPyConnection, metrics: Sequence[str], quantiles: Sequence[float],
                        grain: str, model: str | None, since: date | datetime | str | None,
                        models: Sequence[str] | None = None) -> pd.DataFrame:
    """Long frame period_start_utc, model, metric, q, value, count from the merged histograms.

    ``grain`` is one of :data:`~capplan.profile.queries.GRAINS` or ``"all"`` (the whole window);
    values in the metric's unit, within ``HISTOGRAM_RELATIVE_ERROR`` of the exact order statistic.
    With ``models``, the union of those log models (a pool's) is one distribution, reported as ``model``.
    """
    return queries.histogram_quantiles(con, metrics, quantiles, grain, model, since, models).df()


def period_token_sums(con: duckdb.DuckDBPyConnection, grain: str, model: str | None,
                      since: date | datetime | str | None, models: Sequence[str] | None = None) -> pd.DataFrame:
    """Requests and input/output token sums per UTC period and model (``grain`` and ``models`` as
    :func:`histogram_quantiles`)."""
    return queries.period_token_sums(con, grain, model, since, models).df()


def _wide_quantiles(long: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """Pivot to one column per metric and quantile: ``<metric>_p<100 q>``."""
    long = long.assign(column=long["metric"] + "_p" + (long["q"] * 100).round().astype(int).astype(str))
    wide = long.pivot_table(index=["period_start_utc", "model"], columns="column", values="value",
                            dropna=False).reset_index()
    return wide.reindex(columns=["period_start_utc", "model", *names])


def token_distribution(
    con: duckdb.DuckDBPyConnection,
    grain: str = "day",
    model: str | None = None,
    since: date | datetime | str | None = None,
) -> DataFrame[TokenDistribution]:
    """Mean, p50, p90 and p99 of input and output tokens per UTC period and model (and ``__all__``).

    Percentiles come from the hourly log-binned histograms summed over the period, never from
    averaged percentiles: each is within ``HISTOGRAM_RELATIVE_ERROR`` (≈ 0.99 %) of the exact
    ``ceil(q·n)``-th smallest value. Means are exact (token sums / requests).

    Parameters
    ----------
    grain : {"hour", "day", "week", "month"}
        Period length; weeks start on Monday, all in UTC.
    """
    queries.check_choice("grain", grain, GRAINS)
    require_current_rollups(con)
    long = histogram_quantiles(con, ("input_tokens", "output_tokens"), TOKEN_QUANTILES, grain, model, since)
    names = [f"{m}_p{round(q * 100)}" for m in ("input_tokens", "output_tokens") for q in TOKEN_QUANTILES]
    wide = _wide_quantiles(long, names)
    frame = period_token_sums(con, grain, model, since).merge(wide, on=["period_start_utc", "model"], how="inner")
    frame["input_tokens_mean"] = frame["input_tokens_sum"] / frame["requests"]
    frame["output_tokens_mean"] = frame["output_tokens_sum"] / frame["requests"]
    columns = list(TokenDistribution.to_schema().columns)
    return _validate(frame[columns].sort_values(["model", "period_start_utc"], ignore_index=True),
                     TokenDistribution)


def histograms(
    con: duckdb.DuckDBPyConnection,
    metric: str,
    grain: str = "week",
    model: str | None = None,
    since: date | datetime | str | None = None,
) -> DataFrame[Histogram]:
    """Sparse histogram of ``metric`` per UTC period and model: bins ``[bin_lo, bin_hi)`` and counts.

    Parameters
    ----------
    metric : {"input_tokens", "output_tokens", "ttft_ms", "latency_ms"}
        Tokens in [tokens], times in [ms]. Bin ``[0, 1)`` holds zeros; above it edges grow by
        ``HISTOGRAM_GAMMA``. The same edges in every period, so periods compare bin by bin.
    grain : {"hour", "day", "week", "month"}
    """
    queries.check_choice("metric", metric, METRICS)
    queries.check_choice("grain", grain, GRAINS)
    require_current_rollups(con)
    frame = con.execute(sql.load("rpt_histograms"), {
        "metric": metric, "grain": grain, "model": model, "since_utc": since_utc(since), "gamma": HISTOGRAM_GAMMA,
    }).df()
    return _validate(frame, Histogram)


# --------------------------------------------------------------------------- SLI


def sli_event_counts(con: duckdb.DuckDBPyConnection, ttft_threshold_ms: float, model: str | None = None,
                     since: date | datetime | str | None = None) -> pd.DataFrame:
    """The event counts of :func:`hourly_sli` alone, without its TTFT percentiles (which read every
    hour's histogram): hour_utc, model, valid_events, good_events, success_rate, good_fraction,
    counted from the raw rows (``sql/rpt_hourly_sli.sql``)."""
    queries.check_ttft_threshold(ttft_threshold_ms)  # before the freshness check
    require_current_rollups(con)
    return queries.sli_event_counts(con, ttft_threshold_ms, model, since).df()


def hourly_sli(
    con: duckdb.DuckDBPyConnection,
    ttft_threshold_ms: float,
    model: str | None = None,
    since: date | datetime | str | None = None,
) -> DataFrame[HourlySli]:
    """Valid and good events, success rate and TTFT percentiles per UTC hour and model.

    Parameters
    ----------
    ttft_threshold_ms : float
        A 2xx request is good if its TTFT is at most this. [ms]

    Notes
    -----
    * Success is a 2xx status. Valid events are all requests except 4xx client errors other than
      408 and 429 (the SLO stage's rule, ``sql/ddl_macro_sli_valid.sql``): a malformed request is the
      client's fault; a 408 (generation overran) and a 429 (our lack of capacity) count, and are bad.
    * A 2xx without TTFT logged counts as good (nothing shows it was slow).
    * Good events are counted exactly from the raw rows (the threshold is a parameter); the TTFT
      percentiles come from the histograms of all rows with TTFT, within ``HISTOGRAM_RELATIVE_ERROR``.
    """
    counts = sli_event_counts(con, ttft_threshold_ms, model, since)
    long = histogram_quantiles(con, ("ttft_ms",), TTFT_QUANTILES, "hour", model, since)
    wide = _wide_quantiles(long, [f"ttft_ms_p{round(q * 100)}" for q in TTFT_QUANTILES])
    wide = wide.rename(columns={f"ttft_ms_p{round(q * 100)}": f"ttft_p{round(q * 100)}_ms" for q in TTFT_QUANTILES})
    frame = counts.merge(wide.rename(columns={"period_start_utc": "hour_utc"}), on=["hour_utc", "model"], how="left")
    return _validate(frame.sort_values(["model", "hour_utc"], ignore_index=True), HourlySli)
