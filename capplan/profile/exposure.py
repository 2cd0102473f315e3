"""How much of each UTC hour the logs observed: rates over observed seconds, not over 3600 s.

A log that starts at 12:31 and ends at 13:29 observed 29 minutes of each of two hours; counting
both as full hours halves the rate (2.69 req/s against a real 5.53) and reads the start and end
of every log as a decline. The **exposure** of an hour is the number of its seconds inside the
observed span, from the first to the last arrival of all the data (:func:`observed_span`, ingested
rows and partition roll-ups alike); an hour's rate is ``requests / exposure_s``.

Rules:

- the first and last hours of the data are partial; a whole hour without rows inside the span stays
  a gap (``is_gap``, exposure 0). A logging gap of minutes inside an hour is not seen (the roll-ups
  keep no per-file span; partitioned data has none);
- an hour observed for less than :data:`MIN_EXPOSURE_S` has no rate (``avg_qps`` null): a few
  minutes are too short to stand for an hour; its counts stay;
- an empty database has no span: every hour counts as fully observed.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from capplan import sql

if TYPE_CHECKING:
    import pandas as pd

HOUR_S = 3600.0
#: An hour observed for less than this has no rate. [s]
MIN_EXPOSURE_S = 600.0
#: The Unix epoch as a naive UTC datetime (every µs-since-epoch figure of the profile counts from it).
EPOCH = datetime(1970, 1, 1)


def observed_span_utc(con: duckdb.DuckDBPyConnection) -> list[tuple[datetime, datetime]]:
    """``[(first_utc, last_utc)]`` of every arrival, in ``requests``, the current partitions and the hours fed by
    metrics (whole hours), as naive UTC datetimes; ``[]`` if none.

    ``sql/int_profile_observed_span.sql`` and ``sql/int_profile_partition_span.sql``: the same span
    whether the rows were ingested or rolled up where they live, so both paths give the same rates.
    """
    spans = []
    for table, query in (("requests", "int_profile_observed_span"),
                         ("partition_request_mix_hourly", "int_profile_partition_span"),
                         ("metrics_ledger", "int_profile_metrics_span")):
        (exists,) = con.execute(sql.load("rpt_cli_table_exists"), {"table_name": table}).fetchall()[0]
        if exists:
            first, last = con.execute(sql.load(query)).fetchall()[0]
            if first is not None:
                spans.append((first, last))
    if not spans:
        return []
    return [(min(a for a, _ in spans), max(b for _, b in spans))]


def observed_span(con: duckdb.DuckDBPyConnection) -> list[tuple[pd.Timestamp, pd.Timestamp]]:
    """:func:`observed_span_utc` as pandas Timestamps."""
    import pandas as pd

    return [(pd.Timestamp(a), pd.Timestamp(b)) for a, b in observed_span_utc(con)]


def epoch_us(ts: datetime) -> int:
    """Microseconds since the epoch of a naive UTC datetime. [µs]"""
    return (ts - EPOCH) // timedelta(microseconds=1)


def hour_exposure_s(hours: pd.DatetimeIndex | pd.Series, spans: list[tuple[pd.Timestamp, pd.Timestamp]]) -> np.ndarray:
    """Seconds of each hour ``[h, h + 1 h)`` inside the union of ``spans``. [s]

    Without spans every hour is fully observed (3600 s). A span is ``[first, last]``; one of zero
    length (a single request) adds nothing.

    >>> t = pd.Timestamp
    >>> hour_exposure_s(pd.DatetimeIndex([t("2026-11-10 12:00"), t("2026-11-10 13:00")]),
    ...                 [(t("2026-11-10 12:31"), t("2026-11-10 13:29"))]).tolist()
    [1740.0, 1740.0]
    """
    import pandas as pd

    starts = pd.DatetimeIndex(hours).as_unit("us").asi8.astype(np.int64)
    return exposure_s_of_hours(starts, [(_us(a), _us(b)) for a, b in spans])


def exposure_s_of_hours(hour_starts_us: np.ndarray, spans_us: list[tuple[int, int]]) -> np.ndarray:
    """Seconds of each hour ``[h, h + 1 h)`` (``h`` in µs since the epoch) inside the union of ``spans_us``
    (``[first, last]`` in µs; none: every hour fully observed), as :func:`hour_exposure_s`. [s]"""
    starts = np.asarray(hour_starts_us, np.int64)
    if not spans_us:
        return np.full(len(starts), HOUR_S)
    merged: list[list[int]] = []
    for a, b in sorted(spans_us):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    step = int(HOUR_S * 1e6)
    # the unobserved stretches: before the first span, between spans, after the last
    edges = [(np.iinfo(np.int64).min // 2, merged[0][0])] + [(merged[i][1], merged[i + 1][0])
                                                             for i in range(len(merged) - 1)]
    edges.append((merged[-1][1], np.iinfo(np.int64).max // 2))
    missing = np.zeros(len(starts))
    order = np.argsort(starts)
    sorted_starts = starts[order]
    for g0, g1 in edges:  # few and short, each touching the hours it overlaps only
        first = np.searchsorted(sorted_starts, g0 - step, side="right")
        last = np.searchsorted(sorted_starts, g1, side="left")
        idx = order[first:last]
        missing[idx] += np.clip(np.minimum(g1, starts[idx] + step) - np.maximum(g0, starts[idx]), 0, None)
    return np.clip(HOUR_S - missing / 1e6, 0.0, HOUR_S)


def hour_rate_qps(requests: np.ndarray, exposure_s: np.ndarray) -> np.ndarray:
    """``requests / exposure_s`` of each hour, NaN where fewer than :data:`MIN_EXPOSURE_S` were observed
    (or ``requests`` is NaN). [requests/s]"""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(exposure_s >= MIN_EXPOSURE_S, requests / exposure_s, np.nan)


def gap_aware_hours(is_gap: np.ndarray, requests: np.ndarray, exposure_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(avg_qps, exposure_s)`` of each hour: a gap hour has ``exposure_s`` 0 and a NaN rate here (its caller
    keeps the query's null or zero, by ``empty_hours``); any other hour's rate is :func:`hour_rate_qps` over its
    observed seconds. The one rule behind :func:`apply_exposure` (frames) and the profile summary (arrays)."""
    is_gap = np.asarray(is_gap, bool)
    return np.where(is_gap, np.nan, hour_rate_qps(requests, exposure_s)), np.where(is_gap, 0.0, exposure_s)


def _us(ts: pd.Timestamp) -> int:
    """Microseconds since the epoch (``Timestamp.value`` is nanoseconds whatever the unit)."""
    import pandas as pd

    return int(np.datetime64(pd.Timestamp(ts).tz_localize(None) if pd.Timestamp(ts).tzinfo else pd.Timestamp(ts),
                             "us").astype(np.int64))


def apply_exposure(hourly: pd.DataFrame, spans: list[tuple[pd.Timestamp, pd.Timestamp]]) -> pd.DataFrame:
    """Add ``exposure_s`` and put ``avg_qps`` and ``concurrency_littles`` over it (null below :data:`MIN_EXPOSURE_S`).

    ``avg_qps = requests / exposure_s``; ``concurrency_littles = avg_qps · mean_latency_ms / 1000``
    (L = λ·W). A gap hour keeps its null (``empty_hours = "missing"``) or zero (``"zero"``) measures.
    """
    import pandas as pd

    out = hourly.copy()
    observed = ~out["is_gap"].astype(bool)
    requests = out["requests"].to_numpy(dtype=np.float64, na_value=np.nan)
    rate_qps, out["exposure_s"] = gap_aware_hours(~observed.to_numpy(), requests,
                                                  hour_exposure_s(out["hour_utc"], spans))
    rate = pd.Series(rate_qps, index=out.index).astype("Float64")  # NaN: null
    out.loc[observed, "avg_qps"] = rate[observed].astype(float)
    out.loc[observed, "concurrency_littles"] = (rate * out["mean_latency_ms"].astype("Float64") / 1000.0)[observed].astype(float)
    return out
