"""SLOs over the request log: per-minute SLI counts, error budget, burn-down and alert episodes.

The stage reads per-minute good/valid counts on a dense UTC minute grid
(``sql/int_slo_minute_counts.sql``) from a per-minute roll-up (``sql/int_slo_minute_rollup.sql``)
of the ``requests`` table and of stored partitions (:func:`capplan.rollups.rollup_with_partitions`):
minutes, not hourly roll-ups, so burn-rate windows are exact. Hours fed by Prometheus counters with an
error counter have hourly counts only; they enter spread over their minutes (resolution 1 h), and
:attr:`SloStatus.resolution_min` and :attr:`SloStatus.notes` say so (:func:`metrics_resolution`).
It applies the arithmetic of :mod:`capplan.slo.budget`. Its outputs are validated frames and records for the CLI and
the monthly report:

- :func:`slo_status` → :class:`SloStatus`: budget consumed and remaining at a date;
- :func:`budget_burndown` → :class:`BudgetBurndown` frame, one row per period, for a chart;
- :func:`alert_episodes` → :class:`AlertEpisodes` frame: every multi-window burn-rate
  alert that would have fired over the history.

Events
------
A *request-based* SLO counts requests: valid = every request (to ``slo.model``
if set) except client errors (4xx other than 408 and 429, unless
``slo.count_client_errors``), good = HTTP 2xx and, if ``slo.ttft_threshold_ms`` is set, TTFT at most
that. The rules are the SQL macros ``sli_valid`` / ``sli_success`` / ``sli_good``
(``sql/ddl_macro_sli_*.sql``, made on every connection by :func:`capplan.db.connect`), which the
profile's hourly SLI uses too, so both stages count the same events. A *time-based* SLO counts minutes: every minute of the span is valid and
a minute with traffic is bad when its good fraction is below
``slo.bad_minute_below_fraction``; a minute without traffic is good (no
evidence of an outage).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

import duckdb
import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.typing.pandas import DataFrame, Series

from capplan import sql
from capplan.config import SloConfig
from capplan.rollups import (
    MINUTES_PER_HOUR,
    NO_TTFT_THRESHOLD_MS,
    metrics_minute_span,
    metrics_slo_hours,
    partition_minute_span,
    partition_ttft_thresholds_ms,
    rollup_views,
)
from capplan.slo.budget import (
    MINUTES_PER_DAY,
    BurnRateRule,
    budget_consumed_fraction,
    error_budget_events,
    error_budget_minutes,
    rule_firing,
    runs,
    trailing_sum,
    windowed_burn_rate,
)


class MinuteCounts(pa.DataFrameModel):
    """Per-minute SLI events on a dense minute grid."""

    minute_utc: Series[pd.Timestamp]
    valid_events: Series[float] = pa.Field(ge=0)
    bad_events: Series[float] = pa.Field(ge=0)

    @pa.dataframe_check
    def bad_within_valid(cls, df: pd.DataFrame) -> Series[bool]:
        return df["bad_events"] <= df["valid_events"]

    class Config:
        coerce = True


class BudgetBurndown(pa.DataFrameModel):
    """Error budget over the rolling SLO window ending at each period end."""

    period_end_utc: Series[pd.Timestamp]
    valid_events: Series[float] = pa.Field(ge=0)
    bad_events: Series[float] = pa.Field(ge=0)
    budget_consumed_fraction: Series[float] = pa.Field(ge=0)
    budget_remaining_fraction: Series[float] = pa.Field(le=1)
    #: The window reaches back over the SLO's whole ``window_days`` of history; earlier rows (the first
    #: ``window_days`` after the history starts) see less, so their budget is of a shorter window.
    window_full: Series[bool]

    class Config:
        coerce = True


class AlertEpisodes(pa.DataFrameModel):
    """Alert episodes: maximal spans in which a rule of one severity fired."""

    slo: Series[str]
    severity: Series[str] = pa.Field(isin=["page", "ticket"])
    rules: Series[str]
    start: Series[pd.Timestamp]
    end: Series[pd.Timestamp]
    duration_min: Series[int] = pa.Field(ge=1)
    burn_rate: Series[float] = pa.Field(ge=0)
    budget_spent_fraction: Series[float] = pa.Field(ge=0)

    @pa.dataframe_check
    def ends_after_start(cls, df: pd.DataFrame) -> Series[bool]:
        return df["end"] > df["start"]

    class Config:
        coerce = True


@dataclass(frozen=True)
class SloStatus:
    """An SLO's standing over the rolling window ending at ``as_of``.

    Attributes
    ----------
    name, kind : str
        SLO name; ``'request'`` or ``'time'``.
    target : float
        Promised good fraction. [fraction]
    window_days : int
        Rolling window. [days]
    window_start, as_of : datetime
        The window ``[window_start, as_of)``, UTC.
    valid_events, bad_events : float
        Events in the window (requests, or minutes for a time-based SLO). [events]
    sli : float
        Good fraction observed; NaN without valid events. [fraction]
    error_budget_events : float
        Bad events allowed in the window. [events]
    error_budget_minutes : float
        The budget as minutes of full outage over a whole window. [min]
    budget_consumed_fraction, budget_remaining_fraction : float
        Spent and left; they add up to 1 (remaining < 0 once the SLO is missed). [fraction]
    burn_rate : float
        Burn rate over the whole window. [ratio]
    resolution_min : int
        The coarsest interval whose counts the window's events come from: 1 for logged requests, 60 when hours
        fed by Prometheus counters are in the window (their events are spread over the hour's minutes). [min]
    notes : tuple of str
        What the SLI rests on besides per-request rows: metrics hours, a TTFT threshold interpolated in a bucket.
    """

    name: str
    kind: str
    target: float
    window_days: int
    window_start: datetime
    as_of: datetime
    valid_events: float
    bad_events: float
    sli: float
    error_budget_events: float
    error_budget_minutes: float
    budget_consumed_fraction: float
    budget_remaining_fraction: float
    burn_rate: float
    resolution_min: int = 1
    notes: tuple[str, ...] = ()

    def to_record(self) -> dict[str, object]:
        """The status as a plain dict (for JSON and report tables)."""
        return {**asdict(self), "notes": list(self.notes)}


def rules_from_config(slo: SloConfig) -> tuple[BurnRateRule, ...]:
    """The SLO's alert rules as :class:`capplan.slo.budget.BurnRateRule` records."""
    return tuple(BurnRateRule(a.severity, a.long_window_minutes, a.short_window_minutes, a.burn_rate_threshold)
                 for a in slo.alerts)


@pa.check_types
def minute_events(con: duckdb.DuckDBPyConnection, slo: SloConfig, start: datetime | None = None,
                  end: datetime | None = None) -> DataFrame[MinuteCounts]:
    """Per-minute valid and bad SLI events for ``slo`` in ``[start, end)`` (UTC; None = open).

    With both bounds given, minutes without requests inside them are zeros;
    otherwise the grid spans the first to the last minute with requests.
    """
    bounds = {"model": slo.model, "start_utc": start, "end_utc": end}
    with rollup_views(con, {"slo_minute_rollup": _minute_rollup(con, slo, bounds)}) as cur:
        counts = cur.execute(sql.load("int_slo_minute_counts"), bounds | {
            "ttft_threshold_ms": _threshold_ms(slo), "count_client_errors": slo.count_client_errors}).df()
    valid = counts["valid_count"].to_numpy(dtype=float)
    good = counts["good_count"].to_numpy(dtype=float)
    if slo.kind == "time":
        with np.errstate(invalid="ignore", divide="ignore"):
            bad_minute = (valid > 0) & (good / np.where(valid > 0, valid, 1) < slo.bad_minute_below_fraction)
        return pd.DataFrame({"minute_utc": counts["minute_utc"], "valid_events": 1.0,
                             "bad_events": bad_minute.astype(float)})
    return pd.DataFrame({"minute_utc": counts["minute_utc"], "valid_events": valid, "bad_events": valid - good})


def window_of_history(history: pd.DataFrame, slo: SloConfig, start: datetime, end: datetime) -> pd.DataFrame:
    """:func:`minute_events` ``(con, slo, start, end)`` taken from the SLO's whole-history minute events.

    ``history`` is :func:`minute_events` without bounds: every minute from the first to the last with a valid
    event. The window's grid is every minute of ``[start, end)`` (whole minutes, UTC); a minute outside the
    history holds no valid event, so it is what the bounded query gives there: a request-based SLO's zeros, a
    time-based SLO's one valid, good minute. Columns ``valid_events``, ``bad_events`` on that grid.
    """
    minutes = history["minute_utc"]
    grid = pd.date_range(start, end, freq="min", inclusive="left", unit=minutes.dt.unit)
    window = history.set_index(minutes)[["valid_events", "bad_events"]].reindex(grid)
    quiet = 1.0 if slo.kind == "time" else 0.0  # sql/int_slo_minute_counts.sql's zeros, as minute_events reads them
    return pd.DataFrame({"minute_utc": grid, "valid_events": window["valid_events"].fillna(quiet).to_numpy(),
                         "bad_events": window["bad_events"].fillna(0.0).to_numpy()})


def _threshold_ms(slo: SloConfig) -> float:
    return NO_TTFT_THRESHOLD_MS if slo.ttft_threshold_ms is None else float(slo.ttft_threshold_ms)


def _minute_rollup(con: duckdb.DuckDBPyConnection, slo: SloConfig, bounds: dict) -> tuple[str, dict]:
    """The per-minute roll-up (query, parameters) of ``requests`` and stored partitions for the SLO's model and threshold.

    Raises
    ------
    ValueError
        If partitions were rolled up without the SLO's TTFT threshold (they hold no good counts for it).
    """
    stored = partition_ttft_thresholds_ms(con)
    if stored and _threshold_ms(slo) not in stored:
        raise ValueError(f"SLO {slo.name!r}: the stored partition roll-ups hold TTFT thresholds {stored} ms only, "
                         f"not {slo.ttft_threshold_ms} ms; configure the SLO before rolling the partitions up "
                         "(a changed partition is rolled up again)")
    return "int_slo_minute_rollup", bounds | {"ttft_thresholds_ms": [_threshold_ms(slo)]}


def _request_span(con: duckdb.DuckDBPyConnection, slo: SloConfig) -> tuple[datetime, datetime]:
    """First minute with a request and the minute after the last one (UTC) for the SLO's model.

    Over ``requests``, the stored partitions and the hours fed by metrics with an error counter: min/max
    look-ups, not a per-minute roll-up.
    """
    first, last = con.execute(sql.load("int_slo_request_span"), {"model": slo.model}).fetchone()
    spans = [(pd.Timestamp(first).floor("min").to_pydatetime(), pd.Timestamp(last).floor("min").to_pydatetime())
             ] if last is not None else []
    for span_first, span_last in (partition_minute_span(con, slo.model), metrics_minute_span(con, slo.model)):
        if span_last is not None:
            spans.append((pd.Timestamp(span_first).to_pydatetime(), pd.Timestamp(span_last).to_pydatetime()))
    if not spans:
        raise ValueError(f"SLO {slo.name!r}: no requests" + (f" for model {slo.model!r}" if slo.model else ""))
    return min(a for a, _ in spans), max(b for _, b in spans) + timedelta(minutes=1)


def slo_status(con: duckdb.DuckDBPyConnection, slo: SloConfig, as_of: datetime | None = None,
               history: pd.DataFrame | None = None) -> SloStatus:
    """Budget consumed and remaining over the ``slo.window_days`` ending at ``as_of`` (UTC).

    ``as_of`` defaults to the minute after the last request. A window that
    reaches before the first request counts the events there are: the budget
    is then the share of the events seen so far. ``history``, the SLO's minute events already read
    (:func:`minute_events` without bounds), gives the window's events instead of a query of its own
    (:func:`window_of_history`; the same events when the window's bounds are whole minutes).
    """
    first, last = _request_span(con, slo)
    as_of = last if as_of is None else as_of
    start = as_of - timedelta(days=slo.window_days)
    # minutes before the first request are no evidence of uptime (time-based) and hold no events
    lo = max(start, first)
    if history is not None and all(pd.Timestamp(t) == pd.Timestamp(t).floor("min") for t in (lo, as_of)):
        events = window_of_history(history, slo, lo, as_of)
    else:
        events = minute_events(con, slo, lo, as_of)
    valid, bad = float(events["valid_events"].sum()), float(events["bad_events"].sum())
    consumed = float(budget_consumed_fraction(bad, valid, slo.target))
    resolution_min, notes = metrics_resolution(con, slo, max(start, first), as_of)
    return SloStatus(
        name=slo.name, kind=slo.kind, target=slo.target, window_days=slo.window_days,
        window_start=start, as_of=as_of, valid_events=valid, bad_events=bad,
        sli=(valid - bad) / valid if valid else float("nan"),
        error_budget_events=float(error_budget_events(valid, slo.target)),
        error_budget_minutes=error_budget_minutes(slo.window_days, slo.target),
        budget_consumed_fraction=consumed, budget_remaining_fraction=1.0 - consumed,
        burn_rate=float(windowed_burn_rate([bad], [valid], 1, slo.target)[0]),
        resolution_min=resolution_min, notes=notes,
    )


def metrics_resolution(con: duckdb.DuckDBPyConnection, slo: SloConfig, start: datetime,
                       end: datetime) -> tuple[int, tuple[str, ...]]:
    """The resolution of the SLO's events in ``[start, end)`` and what the hours fed by metrics rest on. [min]

    Hours fed by Prometheus counters with an error counter (:func:`capplan.rollups.metrics_slo_hours`) have
    hourly counts spread evenly over their minutes: a burn-rate window shorter than an hour sees the hour's
    mean rate, so such rules are named. With a TTFT threshold, the good share is read off the TTFT
    histogram's buckets; a threshold inside a bucket is interpolated and the successes it splits are counted.
    ``(1, ())`` when the window holds no such hour.
    """
    hours = metrics_slo_hours(con, [_threshold_ms(slo)])
    frame = pd.DataFrame() if hours is None else hours.to_pandas()
    if len(frame):
        inside = (frame["hour_utc"] >= pd.Timestamp(start).floor("h")) & (frame["hour_utc"] < pd.Timestamp(end))
        frame = frame[inside & ((frame["model"] == slo.model) if slo.model else True)]
    if frame.empty:
        return 1, ()
    short = [f"{r.burn_rate_threshold:g}x/{r.long_window_min}m/{r.short_window_min}m"
             for r in rules_from_config(slo) if r.short_window_min < MINUTES_PER_HOUR]
    notes = [f"{len(frame['hour_utc'].unique())} h of the window are fed by Prometheus counters: hourly counts, spread "
             f"evenly over each hour's minutes (resolution {MINUTES_PER_HOUR} min), so a burn-rate window shorter than "
             "an hour sees the hour's mean rate and an alert's start and end are known to the hour"
             + (f" (short windows of {', '.join(short)})" if short else "")
             + "; a counter cannot tell a client's 4xx apart: every request it counted is a valid event"]
    if slo.ttft_threshold_ms is not None:
        thr, successes, split = slo.ttft_threshold_ms, frame["successes"].sum(), frame["in_bucket"].sum()
        lo, hi = frame["lo_ms"].min(), frame["le_ms"].max()
        if frame["le_ms"].isna().all():
            notes.append("no TTFT histogram in those hours: their successes count good (TTFT unknown), as a "
                         "logged 2xx without TTFT does")
        elif not np.isfinite(hi):
            notes.append(f"TTFT <= {thr:g} ms is above the TTFT histogram's last finite bound ({lo:g} ms): the "
                         "observations above that bound count slower (the SLI is a lower bound)")
        elif split:
            notes.append(f"TTFT <= {thr:g} ms is read off the TTFT histogram's buckets: it lies inside ({lo:g}, "
                         f"{hi:g}] ms and is interpolated linearly there, so {split:,.0f} of the {successes:,.0f} "
                         f"successes ({split / successes:.2%}) could fall either side")
        else:
            notes.append(f"TTFT <= {thr:g} ms is a bound of the TTFT histogram's buckets: the good share is exact")
    return MINUTES_PER_HOUR, tuple(notes)


def budget_burndown(con: duckdb.DuckDBPyConnection, slo: SloConfig, freq: str = "1h") -> DataFrame[BudgetBurndown]:
    """Budget consumed and remaining over the rolling window ending at each ``freq`` boundary.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Database with a ``requests`` table.
    slo : SloConfig
        The SLO.
    freq : str
        pandas frequency of the rows, e.g. ``'1h'`` or ``'1D'``.

    Returns
    -------
    DataFrame[BudgetBurndown]
        One row per period end (UTC) over the history.
    """
    return burndown_of_events(minute_events(con, slo), slo, freq)


@pa.check_types
def burndown_of_events(events: pd.DataFrame, slo: SloConfig, freq: str = "1h") -> DataFrame[BudgetBurndown]:
    """:func:`budget_burndown` of the SLO's minute events already read (:func:`minute_events`, no bounds)."""
    window_min = slo.window_days * MINUTES_PER_DAY
    valid = trailing_sum(events["valid_events"], window_min)
    bad = trailing_sum(events["bad_events"], window_min)
    period_end = events["minute_utc"] + pd.Timedelta(minutes=1)
    at_boundary = (period_end == period_end.dt.floor(freq)).to_numpy().copy()
    at_boundary[-1:] = True  # always show the latest state (if there is one)
    consumed = np.asarray(budget_consumed_fraction(bad, valid, slo.target))
    return pd.DataFrame({
        "period_end_utc": period_end[at_boundary].to_numpy(), "valid_events": valid[at_boundary],
        "bad_events": bad[at_boundary], "budget_consumed_fraction": consumed[at_boundary],
        "budget_remaining_fraction": 1.0 - consumed[at_boundary],
        "window_full": (period_end[at_boundary] - events["minute_utc"].min()
                        >= pd.Timedelta(minutes=window_min)).to_numpy(dtype=bool),
    })


def _episodes_for_severity(events: pd.DataFrame, slo: SloConfig, rules: list[BurnRateRule]) -> list[dict]:
    bad = events["bad_events"].to_numpy()
    valid = events["valid_events"].to_numpy()
    firing = np.zeros(len(events), dtype=bool)
    burn = np.zeros(len(events))
    lookback = np.zeros(len(events), dtype=int)  # longest long window among the rules firing at each minute
    fired_by: dict[str, np.ndarray] = {}
    for rule in rules:
        fires, long_burn = rule_firing(bad, valid, rule, slo.target)
        firing |= fires
        burn = np.where(fires, np.maximum(burn, long_burn), burn)
        lookback = np.where(fires, np.maximum(lookback, rule.long_window_min), lookback)
        fired_by[f"{rule.burn_rate_threshold:g}x/{rule.long_window_min}m/{rule.short_window_min}m"] = fires
    # a lull shorter than the longest short window does not end an episode: one incident, one page
    min_gap = max(r.short_window_min for r in rules)
    spans = runs(firing)
    merged = spans[:1]
    for lo, hi in spans[1:]:
        if lo - merged[-1][1] < min_gap:
            merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    # budget of a full SLO window, scaled up from the history there is when it is shorter
    window_min = slo.window_days * MINUTES_PER_DAY
    seen_min = np.minimum(np.arange(1, len(events) + 1), window_min)
    full_window_valid = trailing_sum(valid, window_min) * window_min / seen_min
    bad_cum = np.concatenate([[0.0], np.cumsum(bad)])
    minutes = events["minute_utc"].to_numpy()
    out = []
    for lo, hi in merged:
        first = max(lo + 1 - int(lookback[lo:hi].max()), 0)  # the detection span starts a long window earlier
        out.append({
            "start": minutes[lo], "end": minutes[hi - 1] + np.timedelta64(1, "m"),
            "duration_min": hi - lo, "burn_rate": float(burn[lo:hi].max()),
            "budget_spent_fraction": float(budget_consumed_fraction(
                bad_cum[hi] - bad_cum[first], full_window_valid[hi - 1], slo.target)),
            "rules": ",".join(sorted(label for label, fires in fired_by.items() if fires[lo:hi].any())),
        })
    return out


def alert_episodes(con: duckdb.DuckDBPyConnection, slo: SloConfig, start: datetime | None = None,
                   end: datetime | None = None) -> DataFrame[AlertEpisodes]:
    """Every multi-window burn-rate alert that would have fired over ``[start, end)``.

    For each severity, the minutes at which any of its rules fires are joined
    into maximal episodes (so the 1 h and 6 h page rules firing on one incident
    give one page); a lull shorter than the severity's longest short window
    does not split an episode.

    Returns
    -------
    DataFrame[AlertEpisodes]
        ``start``/``end`` (UTC, end exclusive), ``duration_min`` [min],
        ``burn_rate`` (peak long-window burn rate of a firing rule) [ratio],
        ``budget_spent_fraction``: bad events from one long window before the
        start to the end, over the budget of a full SLO window [fraction],
        ``rules`` (``threshold x/long m/short m`` of the rules that fired).
    """
    return episodes_of_events(minute_events(con, slo, start, end), slo)


@pa.check_types
def episodes_of_events(events: pd.DataFrame, slo: SloConfig) -> DataFrame[AlertEpisodes]:
    """:func:`alert_episodes` over the SLO's minute events already read (:func:`minute_events`)."""
    rules = rules_from_config(slo)
    rows = []
    for severity in dict.fromkeys(r.severity for r in rules):
        for episode in _episodes_for_severity(events, slo, [r for r in rules if r.severity == severity]):
            rows.append({"slo": slo.name, "severity": severity, **episode})
    columns = list(AlertEpisodes.to_schema().columns)
    return pd.DataFrame(rows, columns=columns).sort_values(["start", "severity"], ignore_index=True)
