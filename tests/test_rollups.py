"""``capplan.rollups``: hours fed by metrics reach the plan's request-mix and KV-token roll-ups."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pyarrow as arrow
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.db import connect
from capplan.metrics.ingest import ensure_tables, store_hours
from capplan.profile.bins import HISTOGRAM_GAMMA
from capplan.rollups import rollup_with_partitions, spread_over_minutes

HOUR = datetime(2026, 10, 5, 6)


def _value(k: int) -> float:
    """The value a profile bin stands for (sql/rpt_histogram_quantiles.sql)."""
    return 2 * HISTOGRAM_GAMMA ** (k + 1) / (1 + HISTOGRAM_GAMMA)


@pytest.fixture
def metrics_db(tmp_path):
    """One metrics hour of model ``m``: 4 requests; input bins 100 ×2 and 200 ×2, output bins 10 ×1 and 50 ×3."""
    con = connect(tmp_path / "m.duckdb")
    ensure_tables(con)
    traffic = pd.DataFrame([{"hour_utc": HOUR, "model": m, "requests": 4, "errors": 0, "valid_events": 4,
                             "success_events": 4, "input_tokens_sum": 700, "output_tokens_sum": 160,
                             "ttft_ms_sum": 0.0, "ttft_count": 0, "latency_ms_sum": 8000.0, "latency_count": 4,
                             "peak_second_requests": 1} for m in ("m", "__all__")])
    hist = pd.DataFrame([(HOUR, m, metric, b, c) for m in ("m", "__all__") for metric, b, c in (
        ("input_tokens", 100, 2), ("input_tokens", 200, 2), ("output_tokens", 10, 1), ("output_tokens", 50, 3))],
        columns=["hour_utc", "model", "metric", "bin", "count"]).astype({"bin": "int16"})
    store_hours(con, "prom", [HOUR], {"traffic": traffic, "histogram": hist,
                                      "concurrency": pd.DataFrame(columns=["hour_utc", "model", "concurrency_peak"])},
                step_s=300)
    yield con
    con.close()


def test_request_mix_holds_the_metrics_hour(metrics_db):
    mix = rollup_with_partitions(metrics_db, "int_plan_request_mix_hourly").to_pandas()
    assert len(mix) == 1
    row = mix.iloc[0]
    assert (row["model"], row["successes"], row["input_tokens_sum"], row["latency_ms_sum"]) == ("m", 4, 700, 8000.0)
    assert row["first_ts_utc"] == pd.Timestamp(HOUR) and row["last_ts_utc"] == pd.Timestamp("2026-10-05 06:59:59")


def test_kv_tokens_pair_the_histograms_rank_by_rank(metrics_db):
    """Ranks 1..4 of inputs: 100, 100, 200, 200 (bins); of outputs: 10, 50, 50, 50. Paired by rank:
    (100, 10) ×1, (100, 50) ×1, (200, 50) ×2 — hand check of the comonotone pairing."""
    kv = rollup_with_partitions(metrics_db, "int_plan_kv_tokens_hourly").to_pandas().sort_values("kv_tokens")
    expected = [(round(_value(100) + _value(10)), 1), (round(_value(100) + _value(50)), 1),
                (round(_value(200) + _value(50)), 2)]
    assert list(zip(kv["kv_tokens"], kv["requests"])) == expected


def test_an_hour_is_fed_by_metrics_or_by_partitions_never_both(metrics_db):
    """Partitions cannot merge into a metrics hour, and metrics cannot store an hour partitions feed: either would
    count the hour twice in the roll-ups and in this read path."""
    from capplan.metrics.client import MetricsError
    from capplan.partitioned import tables
    from capplan.partitioned.discover import PartitionError
    from capplan.partitioned.store import merge_hours

    tables.ensure_tables(metrics_db)
    with pytest.raises(PartitionError, match="already fed by metrics"):
        merge_hours(metrics_db, [HOUR])
    later = datetime(2026, 10, 5, 7)
    metrics_db.execute("insert into partition_request_mix_hourly values (1, ?, 'm', null, ?, ?, 1, 1, 5, 5, 1, 10.0)",
                       [later, later, later])
    empty = {"traffic": pd.DataFrame(columns=["hour_utc", "model", "requests"]),
             "histogram": pd.DataFrame(), "concurrency": pd.DataFrame()}
    with pytest.raises(MetricsError, match="partitions .* feed hours"):
        store_hours(metrics_db, "prom", [later], empty)


@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), min_size=1, max_size=5))
def test_spread_over_minutes_keeps_each_hours_totals_and_bad_within_valid(hours):
    """Whole events per minute: an hour's 60 minutes add up to its valid and bad counts, never more bad than valid."""
    valid = [max(v, b) for v, b in hours]
    bad = [min(v, b) for v, b in hours]
    table = arrow.table({"hour_utc": [datetime(2026, 10, 5, h) for h in range(len(hours))], "model": ["m"] * len(hours),
                         "ttft_threshold_ms": [float("inf")] * len(hours), "valid": valid, "bad": bad})
    minutes = spread_over_minutes(table).to_pandas()
    per_hour = minutes.assign(bad=minutes["requests"] - minutes["good"]).groupby(
        minutes["minute_utc"].dt.floor("h"))[["requests", "bad"]].sum()
    assert per_hour["requests"].tolist() == valid and per_hour["bad"].tolist() == bad
    assert (minutes["good"] >= 0).all() and len(minutes) == 60 * len(hours)
