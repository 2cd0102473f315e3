"""Prometheus -> the profile's hourly roll-ups (``fct_*``), chunked, resumable, whole hours only.

Hours are stored in chunks of at most ``max_points_per_query`` samples per series; each chunk is one
transaction (its roll-up rows and its ledger rows in ``metrics_ledger``), so a failure mid-ingest
stores no partial hour and the next run resumes at the first hour not in the ledger. Only hours that
have ended (before ``now``) are stored. See docs/metrics.md.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np
import pandas as pd

from capplan import ingest, profile, sql
from capplan.config import MetricsSourceConfig
from capplan.metrics.client import MetricsError, PrometheusClient, Series
from capplan.metrics.hourly import (HOUR_S, buckets_to_bins, hourly_increases, peak_rate_per_hour, per_hour,
                                    simulated_spans)
from capplan.profile.counting import peak_in_flight_by_model
from capplan.metrics.presets import REQUESTS_INCLUDE_ERRORS, metric_names, promql_selector
from capplan.profile.freshness import has_file_rollups, record_rollup_version

ALL = "__all__"
_HIST_METRICS = {"input_tokens_hist": ("input_tokens", 1.0), "output_tokens_hist": ("output_tokens", 1.0),
                 "ttft_hist": ("ttft_ms", 1000.0), "latency_hist": ("latency_ms", 1000.0)}
"""Histogram role -> (profile metric, factor to the profile's unit: s -> ms)."""


@dataclass
class MetricsSummary:
    """Outcome of one ``ingest-metrics`` run of one source."""

    source: str
    hours_stored: int = 0
    hours_skipped: int = 0  # already in the ledger [hours]
    chunks: int = 0
    requests: int = 0
    models: list[str] = field(default_factory=list)


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """The roll-up tables, an empty ``requests`` (profile readers need it), ``metrics_ledger`` and the TTFT buckets."""
    ingest.ensure_tables(con)
    profile.ensure_tables(con)
    for name in ("ddl_metrics_ledger", "ddl_metrics_ledger_add_step", "ddl_metrics_ledger_add_errors",
                 "ddl_metrics_ttft_buckets"):
        con.execute(sql.load(name))


def _floor_hour(t: datetime) -> datetime:
    t = t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
    return t.replace(minute=0, second=0, microsecond=0)


def ingest_metrics(con: duckdb.DuckDBPyConnection, source: MetricsSourceConfig, start: datetime, end: datetime, *,
                   now: datetime | None = None, client: PrometheusClient | None = None) -> MetricsSummary:
    """Store the completed hours of ``[start, end)`` that the ledger does not hold yet.

    Raises
    ------
    MetricsError
        A query failed (the chunk being stored is rolled back), the step does not divide an hour, or
        another source or ingested request logs already feed one of the hours.
    """
    if HOUR_S % source.step_s:
        raise MetricsError(f"metrics source {source.name!r}: step_s = {source.step_s} must divide 3600")
    names = metric_names(source.flavour, source.metric_names)
    ensure_tables(con)
    first = _floor_hour(start)
    last = min(_floor_hour(end + timedelta(seconds=HOUR_S - 1)), _floor_hour(now or datetime.now(UTC)))
    hours = [first + timedelta(hours=i) for i in range(max(0, int((last - first).total_seconds()) // HOUR_S))]
    done = con.execute(sql.load("int_metrics_done_hours"), {"source": source.name, "start_utc": _naive(first),
                                                            "end_utc": _naive(last)}).fetchall()
    foreign = sorted(h for h, own in done if not own)
    if foreign:
        raise MetricsError(f"metrics source {source.name!r}: {len(foreign)} hour(s) (the first {foreign[0]} UTC) "
                           "are already stored from another source; feed each hour from one source")
    own = {h for h, _ in done}
    todo = [h for h in hours if _naive(h) not in own]
    summary = MetricsSummary(source=source.name, hours_skipped=len(hours) - len(todo))
    client = client or PrometheusClient(source.url, timeout_s=source.timeout_s, retries=source.retries,
                                        bearer_token_file=source.bearer_token_file, tls_verify=source.tls_verify,
                                        ca_file=source.ca_file)
    models: set[str] = set()
    for chunk in _chunks(todo, max(1, (source.max_points_per_query - 1) * source.step_s // HOUR_S)):
        tables = _fetch_chunk(client, source, names, chunk)
        store_hours(con, source.name, chunk, tables, step_s=source.step_s, errors_measured=names["errors"] is not None)
        summary.chunks += 1
        summary.hours_stored += len(chunk)
        all_rows = tables["traffic"][tables["traffic"]["model"] == ALL]
        summary.requests += int(all_rows["requests"].sum())
        models |= set(tables["traffic"]["model"]) - {ALL}
    summary.models = sorted(models)
    return summary


def _naive(t: datetime) -> datetime:
    return t.replace(tzinfo=None)


def _chunks(hours: list[datetime], size: int) -> list[list[datetime]]:
    """Runs of consecutive hours, each at most ``size`` long."""
    out: list[list[datetime]] = []
    for h in hours:
        if out and len(out[-1]) < size and h - out[-1][-1] == timedelta(hours=1):
            out[-1].append(h)
        else:
            out.append([h])
    return out


def _fetch_chunk(client: PrometheusClient, source: MetricsSourceConfig, names: dict, chunk: list[datetime]) -> dict:
    """Query every role over the chunk and build its roll-up frames."""
    start_s, n = int(chunk[0].timestamp()), len(chunk)
    end_s = start_s + n * HOUR_S  # the sample at the end closes the last interval

    def fetch(metric: str | None) -> list[Series]:
        return [] if metric is None else client.query_range(promql_selector(metric, source.selector), start_s,
                                                            end_s, source.step_s)

    def steps_by_model(series: list[Series], extra: str | None = None) -> dict:
        out: dict = defaultdict(lambda: np.zeros(n * HOUR_S // source.step_s))
        for s in series:
            key = s.labels.get(source.model_label, "unknown")
            if extra and extra not in s.labels:
                raise MetricsError(f"{source.url}: a series of a histogram's buckets has no {extra!r} label: "
                                   f"{s.labels}")
            key = (key, float(s.labels[extra])) if extra else key
            out[key] += hourly_increases(s.ts_s, s.value, start_s, n, source.step_s)
        return out

    def counter(role: str, hist_role: str, suffix: str = "_sum") -> dict:
        metric = names[role]
        return steps_by_model(fetch(metric if metric else (names[hist_role] and names[hist_role] + suffix)))

    requests = steps_by_model(fetch(names["requests"]))
    errors = steps_by_model(fetch(names["errors"])) if names["errors"] else None
    input_tokens = counter("input_tokens", "input_tokens_hist")
    output_tokens = counter("output_tokens", "output_tokens_hist")
    sums = {role: (steps_by_model(fetch(names[role] and names[role] + "_sum")),
                   steps_by_model(fetch(names[role] and names[role] + "_count"))) for role in ("ttft_hist", "latency_hist")}
    buckets = {role: steps_by_model(fetch(names[role] and names[role] + "_bucket"), extra="le") for role in _HIST_METRICS}
    running = fetch(names["running"])
    models = sorted(set(requests) | set(input_tokens) | set(output_tokens))
    hours = [_naive(h) for h in chunk]
    traffic = _traffic(models, hours, source.step_s, requests, input_tokens, output_tokens, sums, errors,
                       source.flavour in REQUESTS_INCLUDE_ERRORS)
    return {"traffic": traffic, "histogram": _histograms(models, hours, source.step_s, buckets),
            "ttft_buckets": _ttft_buckets(hours, source.step_s, buckets["ttft_hist"]),
            "concurrency": _concurrency(running, source, start_s, hours, requests, buckets["latency_hist"],
                                        sums["latency_hist"])}


def _per_hour_of(d: dict, model: str, n: int, step_s: int) -> np.ndarray:
    if model == ALL:
        return per_hour(sum(d.values()), step_s) if d else np.zeros(n)
    return per_hour(d[model], step_s) if model in d else np.zeros(n)


def _traffic(models, hours, step_s, requests, input_tokens, output_tokens, sums, errors=None,
             requests_include_errors=False) -> pd.DataFrame:
    """The hourly traffic rows. Without an error counter (``errors`` None) errors are unknown: stored 0, every
    request counted a success, and the ledger's ``errors_measured`` false says so (capplan.ingest.coverage)."""
    n = len(hours)
    frames = []
    for model in [*models, ALL]:
        counted = np.rint(_per_hour_of(requests, model, n, step_s)).astype(np.int64)
        err = np.zeros(n, dtype=np.int64) if errors is None else np.rint(
            _per_hour_of(errors, model, n, step_s)).astype(np.int64)
        req = counted if requests_include_errors else counted + err  # every request: successes and failures
        err = np.minimum(err, req)
        steps = (sum(requests.values()) if model == ALL else requests.get(model))
        peak = peak_rate_per_hour(steps, step_s) if steps is not None else np.zeros(n)
        (ttft_sum, ttft_n), (lat_sum, lat_n) = sums["ttft_hist"], sums["latency_hist"]
        frames.append(pd.DataFrame({
            "hour_utc": hours, "model": model, "requests": req,
            # 4xx client errors cannot be told apart in a counter: every request is a valid event
            "errors": err, "valid_events": req, "success_events": req - err,
            "input_tokens_sum": np.rint(_per_hour_of(input_tokens, model, n, step_s)).astype(np.int64),
            "output_tokens_sum": np.rint(_per_hour_of(output_tokens, model, n, step_s)).astype(np.int64),
            "ttft_ms_sum": _per_hour_of(ttft_sum, model, n, step_s) * 1000.0,  # s -> ms
            "ttft_count": np.rint(_per_hour_of(ttft_n, model, n, step_s)).astype(np.int64),
            "latency_ms_sum": _per_hour_of(lat_sum, model, n, step_s) * 1000.0,  # s -> ms
            "latency_count": np.rint(_per_hour_of(lat_n, model, n, step_s)).astype(np.int64),
            "peak_second_requests": peak.astype(np.int64)}))
    return pd.concat(frames, ignore_index=True)


def _histograms(models, hours, step_s, buckets) -> pd.DataFrame:
    rows = []
    for role, (metric, scale) in _HIST_METRICS.items():
        by_model: dict = defaultdict(dict)
        for (model, le), steps in buckets[role].items():
            by_model[model][le] = per_hour(steps, step_s)
        for model, per_le in by_model.items():
            les = sorted(per_le)
            cumulative = np.stack([per_le[x] for x in les])  # (buckets, hours)
            for i, hour in enumerate(hours):
                for b, c in buckets_to_bins(les, cumulative[:, i], scale).items():
                    rows.append((hour, model, metric, b, c))
    frame = pd.DataFrame(rows, columns=["hour_utc", "model", "metric", "bin", "count"])
    total = frame.groupby(["hour_utc", "metric", "bin"], as_index=False)["count"].sum().assign(model=ALL)
    return pd.concat([frame, total[frame.columns]], ignore_index=True).astype({"bin": "int16", "count": "int64"})


def _ttft_buckets(hours, step_s, buckets: dict) -> pd.DataFrame:
    """Per hour, model and ``le``: requests with TTFT ``<= le`` (``metrics_ttft_buckets_hourly``; s -> ms)."""
    rows = [(hour, model, le * 1000.0, int(c))  # s -> ms
            for (model, le), steps in buckets.items()
            for hour, c in zip(hours, np.rint(per_hour(steps, step_s)).astype(np.int64).tolist())]
    return pd.DataFrame(rows, columns=["hour_utc", "model", "le_ms", "requests"])


def _concurrency(running: list[Series], source: MetricsSourceConfig, start_s: int, hours, requests: dict,
                 latency_buckets: dict, latency_sums: tuple[dict, dict]) -> pd.DataFrame:
    """Peak requests in flight per hour: the larger of the gauge's samples and the modelled busiest moment.

    The gauge (summed over series at each sample time) is read only at the scrapes, so its max is a
    lower bound of the hour's peak. The model: :data:`PEAK_DRAWS` draws of the chunk's requests from the
    counted arrivals per step and the hourly latency histograms (:func:`~capplan.metrics.hourly.simulated_spans`),
    swept exactly as the profile sweeps logged requests (``peak_in_flight_by_model``); the median of
    the draws per hour. Seeded by the chunk's start, so a re-run stores the same peaks.
    """
    n_hours, n_steps = len(hours), len(hours) * HOUR_S // source.step_s
    by_model: dict = defaultdict(lambda: np.zeros(n_steps))
    for s in running:
        k = np.rint((s.ts_s - start_s) / source.step_s).astype(np.int64)
        keep = (k >= 0) & (k < n_steps)
        np.add.at(by_model[s.labels.get(source.model_label, "unknown")], k[keep], s.value[keep])
    if by_model:
        by_model[ALL] = sum(by_model.values())
    peaks = {m: np.ceil(v.reshape(n_hours, -1).max(axis=1)) for m, v in by_model.items()}
    modelled = _modelled_peaks(source, start_s, n_hours, requests, latency_buckets, latency_sums)
    for m, v in modelled.items():
        peaks[m] = np.maximum(peaks.get(m, 0), v)
    rows = [(h, m, int(v[i])) for m, v in peaks.items() for i, h in enumerate(hours)]
    return pd.DataFrame(rows, columns=["hour_utc", "model", "concurrency_peak"])


PEAK_DRAWS = 3
"""Draws of the requests per chunk whose hourly median is the modelled peak in flight."""
SPANS_PER_SWEEP = 4_000_000
"""Requests drawn at once at most (about 100 MB of spans): longer or busier chunks are swept in blocks of hours."""


def _modelled_peaks(source: MetricsSourceConfig, start_s: int, n_hours: int, requests: dict, latency_buckets: dict,
                    latency_sums: tuple[dict, dict]) -> dict[str, np.ndarray]:
    """Per model (and ``__all__``): the hourly median over draws of the swept peak in flight (``{}`` without latency).

    Swept in blocks of hours, each with the hour before it drawn too (its requests still in flight carry in).
    """
    total_s, total_n = latency_sums
    models = sorted(m for m in requests if m in total_n)
    if not models:
        return {}
    per_step = HOUR_S // source.step_s
    inputs = []
    for m in models:
        les = sorted(le for (model, le) in latency_buckets if model == m)
        cumulative = (np.stack([per_hour(latency_buckets[(m, le)], source.step_s) for le in les]) if les
                      else np.zeros((0, n_hours)))
        count = per_hour(total_n[m], source.step_s)
        inputs.append((requests[m], les, cumulative, per_hour(total_s[m], source.step_s) / np.where(count > 0, count, 1.0)))
    busiest = max(1.0, float(sum(per_hour(steps, source.step_s) for steps, *_ in inputs).max()))
    block = max(1, int(SPANS_PER_SWEEP // busiest) - 1)  # hours per sweep [h]
    rng = np.random.default_rng([start_s, n_hours])
    draws = []
    for _ in range(PEAK_DRAWS):
        peaks = []
        for b0 in range(0, n_hours, block):
            b1, first = min(n_hours, b0 + block), max(0, b0 - 1)
            spans = []
            for i, (steps, les, cumulative, mean_s) in enumerate(inputs):
                start_us, end_us = simulated_spans(steps[first * per_step:b1 * per_step], source.step_s,
                                                   start_s + first * HOUR_S, les, cumulative[:, first:b1],
                                                   mean_s[first:b1], rng)
                spans.append((np.full(start_us.size, i), start_us, end_us))
            model, start_us, end_us = (np.concatenate(x) for x in zip(*spans))
            peaks.append(peak_in_flight_by_model(model, start_us, end_us, len(models), start_s // HOUR_S + b0, b1 - b0))
        draws.append(np.concatenate(peaks))
    median = np.median(np.stack(draws), axis=0)  # (hours, models + 1)
    return {m: median[:, i] for i, m in enumerate([*models, ALL])}


def store_hours(con: duckdb.DuckDBPyConnection, source: str, chunk: list[datetime], tables: dict, *,
                step_s: int | None = None, errors_measured: bool = False) -> None:
    """Replace the hours' rows in the roll-ups and record them in the ledger under ``source``: one transaction.

    ``tables``: ``traffic``, ``histogram`` and ``concurrency`` frames in the columns of ``sql/ddl_profile.sql``,
    and optionally ``ttft_buckets`` (``sql/ddl_metrics_ttft_buckets.sql``; a rate series has none).
    """
    hours = [_naive(h) for h in chunk]
    now = datetime.now(UTC).replace(tzinfo=None)
    con.begin()
    try:
        if con.execute(sql.load("int_metrics_requests_in_hours"), {"hours": hours}).fetchone()[0]:
            raise MetricsError(f"request logs are ingested in the hours {hours[0]} .. {hours[-1]} UTC; "
                               "feed each hour from logs or from metrics, not both")
        (partitions,) = con.execute(sql.load("rpt_cli_table_exists"), {"table_name": "partition_request_mix_hourly"}
                                    ).fetchone()
        if partitions and con.execute(sql.load("int_metrics_partition_hours"), {"hours": hours}).fetchone()[0]:
            raise MetricsError(f"partitions (capplan.partitioned) feed hours in {hours[0]} .. {hours[-1]} UTC; "
                               "feed each hour from partitions or from metrics, not both")
        for name in ("fct_metrics_delete_traffic", "fct_metrics_delete_histogram", "fct_metrics_delete_concurrency",
                     "fct_metrics_delete_ttft_buckets"):
            con.execute(sql.load(name), {"hours": hours})
        for table, frame in (("fct_traffic_hourly", tables["traffic"]), ("fct_concurrency_hourly", tables["concurrency"]),
                             ("metrics_ttft_buckets_hourly", tables.get("ttft_buckets", pd.DataFrame()))):
            if len(frame):
                con.from_df(frame).insert_into(table)  # a fixed table name, never formatted into SQL
        if len(tables["histogram"]):
            profile.store_histogram_rows(con, tables["histogram"])
        totals = tables["traffic"][tables["traffic"]["model"] == ALL].set_index("hour_utc")["requests"]
        for h in hours:
            con.execute(sql.load("fct_metrics_ledger_insert"), {"source": source, "hour_utc": h,
                                                                "requests": int(totals.get(h, 0)), "ingested_at_utc": now,
                                                                "step_s": step_s, "errors_measured": errors_measured})
        if not has_file_rollups(con):
            record_rollup_version(con)
        con.commit()
    except BaseException:
        con.rollback()
        raise
