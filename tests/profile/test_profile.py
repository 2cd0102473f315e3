"""Tests of capplan.profile: SQL golden rows in an in-memory DuckDB, invariants, incremental refresh."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from capplan import sql
from capplan import profile
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.profile.counting import peak_in_flight_by_model


def _insert(con, rows):
    """Insert (ts_utc, input, output, model, status, ttft_ms, latency_ms, file_id) rows."""
    con.executemany(
        "insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, file_id)"
        " values (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


@pytest.fixture
def con():
    c = connect()
    ensure_tables(c)
    yield c
    c.close()


GOLDEN = [
    ("2026-03-01 10:00:00.100", 100, 10, "a", 200, 100.0, 1500.0, 1),
    ("2026-03-01 10:00:00.900", 200, 20, "a", 200, 200.0, 500.0, 1),
    ("2026-03-01 10:00:01.000", 300, 30, "b", 500, None, None, 1),
    ("2026-03-01 10:59:59.500", 50, 5, "a", 200, 100.0, 1000.0, 1),
    ("2026-03-01 12:30:00.000", 0, 0, "b", 429, 10.0, 10.0, 2),
]


def test_hourly_traffic_golden(con):
    _insert(con, GOLDEN)
    df = profile.hourly_traffic(con).set_index(["model", "hour_utc"])
    h10, h11, h12 = (datetime(2026, 3, 1, h) for h in (10, 11, 12))
    everything = df.loc["__all__"]
    assert everything.loc[h10, "requests"] == 4
    assert everything.loc[h10, "errors"] == 1
    # 10:00:00.100 and 10:00:00.900 share the second 10:00:00; 10:00:01.000 starts the next one
    assert everything.loc[h10, "peak_second_qps"] == 2.0
    assert everything.loc[h10, "input_tokens_sum"] == 650
    assert everything.loc[h10, "mean_latency_ms"] == pytest.approx(1000.0)
    assert everything.loc[h10, "avg_qps"] == pytest.approx(4 / 3600)
    # Little: (4 / 3600 req/s) * 1.0 s
    assert everything.loc[h10, "concurrency_littles"] == pytest.approx(4 / 3600)
    # 10:00:00.1-10:00:01.6 and 10:00:00.9-10:00:01.4 overlap; 10:59:59.5 runs into 11:00
    assert everything.loc[h10, "concurrency_measured_peak"] == 2
    assert everything.loc[h11, "concurrency_measured_peak"] == 1
    assert bool(everything.loc[h11, "is_gap"]) and pd.isna(everything.loc[h11, "requests"])
    assert everything.loc[h12, "errors"] == 1
    assert df.loc[("a", h10), "requests"] == 3
    assert df.loc[("b", h10), "peak_second_qps"] == 1.0
    assert list(df.loc["a"].index) == [h10]  # a's span is one hour


def test_refresh_is_incremental_and_idempotent(con):
    _insert(con, GOLDEN[:4])
    assert profile.refresh_rollups(con) == 2  # hour 10, and 11 where a request is still in flight
    assert profile.refresh_rollups(con) == 0
    _insert(con, GOLDEN[4:])
    assert profile.refresh_rollups(con) == 1
    incremental = profile.hourly_traffic(con)
    profile.refresh_rollups(con, full=True)
    pd.testing.assert_frame_equal(incremental, profile.hourly_traffic(con))


def test_empty_hours_zero(con):
    _insert(con, GOLDEN)
    df = profile.hourly_traffic(con, model="__all__", empty_hours="zero").set_index("hour_utc")
    gap = df.loc[datetime(2026, 3, 1, 11)]
    assert gap["requests"] == 0 and gap["avg_qps"] == 0 and bool(gap["is_gap"])


def test_empty_hours_invalid(con):
    with pytest.raises(ValueError, match="empty_hours must be one of"):
        profile.hourly_traffic(con, empty_hours="nothing")


def test_dst_day_in_a_non_utc_source(con):
    """Rows logged in New York wall-clock time on 2026-03-08 (02:00 -> 03:00 spring forward)."""
    local = ["2026-03-08 01:30:00", "2026-03-08 01:59:59", "2026-03-08 03:00:00", "2026-03-08 03:30:00"]
    # what ingest does with a naive local timestamp: interpret it in the source zone, store UTC
    utc = [con.execute("select timezone('UTC', timezone('America/New_York', ?::timestamp))", [t]).fetchone()[0]
           for t in local]
    _insert(con, [(t, 10, 1, "a", 200, None, None, 1) for t in utc])
    hourly = profile.hourly_traffic(con, "a").set_index("hour_utc")["requests"]
    # 01:xx EST = 06:xx UTC; 03:xx EDT = 07:xx UTC: adjacent UTC hours, no gap for the missing 02:xx
    assert hourly.to_dict() == {datetime(2026, 3, 8, 6): 2, datetime(2026, 3, 8, 7): 2}
    # with rows every hour of that local day, the local day has 23 hours
    _insert(con, [(datetime(2026, 3, 8, 5) + pd.Timedelta(hours=h), 1, 1, "b", 200, None, None, 2)
                  for h in range(23)])
    day = profile.daily_traffic(con, "b", tz="America/New_York")
    assert day["observed_hours"].tolist() == [23]
    assert day["avg_qps"].iloc[0] == pytest.approx(23 / (23 * 3600))


def test_hour_boundaries_and_peak_second(con):
    _insert(con, [
        ("2026-03-01 10:59:59.999999", 1, 1, "a", 200, None, None, 1),
        ("2026-03-01 11:00:00.000000", 1, 1, "a", 200, None, None, 1),
        ("2026-03-01 11:00:00.999999", 1, 1, "a", 200, None, None, 1),
        ("2026-03-01 11:00:01.000000", 1, 1, "a", 200, None, None, 1),
    ])
    df = profile.hourly_traffic(con, "a").set_index("hour_utc")
    assert df["requests"].tolist() == [1, 3]
    assert df["peak_second_qps"].tolist() == [1.0, 2.0]
    assert df["concurrency_measured_peak"].isna().all()  # no latency logged


def test_concurrency_half_open_and_crossing_hours(con):
    _insert(con, [
        # [10:00:00, 10:00:02) then [10:00:02, 10:00:03): touching, never both in flight
        ("2026-03-01 10:00:00", 1, 1, "a", 200, 50.0, 2000.0, 1),
        ("2026-03-01 10:00:02", 1, 1, "a", 200, 50.0, 1000.0, 1),
        # a two-hour request from 10:30 to 12:30 is in flight in hours 10, 11 and 12
        ("2026-03-01 10:30:00", 1, 1, "b", 200, 50.0, 7_200_000.0, 1),
        ("2026-03-01 12:00:00", 1, 1, "a", 200, 50.0, 60_000.0, 1),
    ])
    df = profile.hourly_traffic(con).set_index(["model", "hour_utc"])["concurrency_measured_peak"]
    h = [datetime(2026, 3, 1, x) for x in (10, 11, 12)]
    assert df.loc["a"].loc[h[0]] == 1
    # hour 10: a's requests end at 10:00:03, before b starts; hour 12: b and the 12:00 request overlap
    assert [df.loc[("__all__", x)] for x in h] == [1, 1, 2]
    # b's span is its arrival hour: the hours it is only in flight show in '__all__'
    assert df.loc["b"].to_dict() == {h[0]: 1}


def test_token_percentiles_golden(con):
    # 0..99 input tokens: p50 is the 50th smallest value, 49; p90 is 89; p99 is 98
    _insert(con, [(f"2026-03-01 10:00:{i % 60:02d}", i, 0, "a", 200, None, None, 1) for i in range(100)])
    dist = profile.token_distribution(con, "day", "a").iloc[0]
    for name, exact in (("input_tokens_p50", 49), ("input_tokens_p90", 89), ("input_tokens_p99", 98)):
        assert dist[name] == pytest.approx(exact, rel=profile.HISTOGRAM_RELATIVE_ERROR), name
    assert dist["input_tokens_mean"] == pytest.approx(49.5)
    assert dist["output_tokens_p99"] == 0.0  # zero tokens land in bin [0, 1) and read back as 0


def test_sli_golden(con):
    _insert(con, [
        ("2026-03-01 10:00:00", 1, 1, "a", 200, 100.0, None, 1),   # good
        ("2026-03-01 10:00:01", 1, 1, "a", 200, 900.0, None, 1),   # valid, slow: bad
        ("2026-03-01 10:00:02", 1, 1, "a", 200, None, None, 1),    # good: no TTFT logged
        ("2026-03-01 10:00:03", 1, 1, "a", 404, 10.0, None, 1),    # client error: not valid
        ("2026-03-01 10:00:04", 1, 1, "a", 429, 10.0, None, 1),    # valid, bad
        ("2026-03-01 10:00:05", 1, 1, "a", 503, 10.0, None, 1),    # valid, bad
    ])
    row = profile.hourly_sli(con, ttft_threshold_ms=500.0, model="a").iloc[0]
    assert (row["valid_events"], row["good_events"]) == (5, 2)
    assert row["success_rate"] == pytest.approx(3 / 5)
    assert row["good_fraction"] == pytest.approx(2 / 5)
    # TTFT values 100, 900, 10, 10, 10: p50 is the 3rd smallest (10), p95 and p99 the 5th (900)
    assert row["ttft_p50_ms"] == pytest.approx(10, rel=profile.HISTOGRAM_RELATIVE_ERROR)
    assert row["ttft_p99_ms"] == pytest.approx(900, rel=profile.HISTOGRAM_RELATIVE_ERROR)


def test_period_traffic_and_typical_week(con):
    # Monday 2026-03-02: 1 request at 00:xx, 3 at 12:xx UTC = 13:xx in Berlin
    _insert(con, [("2026-03-02 00:10:00", 1, 1, "a", 200, None, None, 1)]
            + [(f"2026-03-02 12:00:0{i}", 1, 1, "a", 200, None, None, 1) for i in range(3)])
    day = profile.daily_traffic(con, "a", tz="Europe/Berlin").iloc[0]
    assert day["requests"] == 4 and day["observed_hours"] == 2 and day["gap_hours"] == 11
    assert day["avg_qps"] == pytest.approx(4 / (2 * 3600))
    assert day["peak_hour_qps"] == pytest.approx(3 / 3600)
    assert day["peak_hour_to_avg"] == pytest.approx(1.5)
    assert day["peak_second_to_avg"] == pytest.approx(1 / (4 / 7200))
    assert (day["busiest_hour_of_day"], day["busiest_day_of_week"]) == (13, 1)
    week = profile.typical_week(con, "a", tz="Europe/Berlin").set_index("hour_of_week")
    assert len(week) == 168
    assert week.loc[13, "factor"] == pytest.approx(1.5) and week.loc[1, "factor"] == pytest.approx(0.5)
    assert week["factor"].notna().sum() == 2


@pytest.mark.parametrize(("call", "message"), [
    (lambda c: profile.token_distribution(c, "year"), "grain must be one of"),
    (lambda c: profile.histograms(c, "tokens"), "metric must be one of"),
    (lambda c: profile.daily_traffic(c, tz="Mars/Olympus"), "tz must be an IANA time zone"),
    (lambda c: profile.hourly_sli(c, 0.0), "ttft_threshold_ms must be > 0"),
])
def test_bad_arguments(con, call, message):
    with pytest.raises(ValueError, match=message):
        call(con)


def test_no_requests_table():
    with pytest.raises(profile.ProfileError, match="no 'requests' table"):
        profile.hourly_traffic(connect())


def test_read_only_connection_reads_last_refresh(tmp_path):
    path = tmp_path / "p.duckdb"
    c = connect(path)
    ensure_tables(c)
    _insert(c, GOLDEN)
    before = profile.hourly_traffic(c)
    c.close()
    ro = connect(path, read_only=True)
    pd.testing.assert_frame_equal(profile.hourly_traffic(ro), before)
    ro.close()


def test_empty_summary_has_every_key(con):
    summary = profile.profile_summary(con)
    assert summary["total_requests"] == 0 and summary["avg_qps"] is None
    assert set(summary["sli"]) >= {"valid_events", "good_events", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms"}
    assert set(summary["input_tokens"]) == {"mean", "p50", "p90", "p99"}


def test_refresh_inside_the_callers_transaction(con):
    con.begin()
    _insert(con, GOLDEN)
    assert profile.refresh_rollups(con, transaction=False) == 3
    con.rollback()  # the caller's rollback undoes rows and rollups together
    assert profile.refresh_rollups(con) == 0
    assert profile.hourly_traffic(con).empty


@example(spans=[(0, 0), (10800, 1)])  # an arrival exactly at the window end counts in no hour
@settings(max_examples=60, deadline=None)
@given(spans=st.lists(st.tuples(st.integers(0, 3 * 3600), st.integers(0, 5000)), max_size=40))
def test_peak_in_flight_matches_brute_force(spans):
    """Against counting, at every instant that matters, the spans that cover it (times in seconds)."""
    us = 1_000_000
    start = np.array([s for s, _ in spans], dtype=np.int64) * us
    end = start + np.array([d for _, d in spans], dtype=np.int64) * us
    got = peak_in_flight_by_model(np.zeros(len(start), np.int64), start, end, 1, 0, 3)[:, 0]  # one model
    for hour in range(3):
        lo, hi = hour * 3600 * us, (hour + 1) * 3600 * us
        instants = [lo] + [t for t in start if lo <= t < hi]
        want = max(int(np.sum((start <= t) & (end > t))) for t in instants)
        assert got[hour] == want


def test_rollup_partition_of_no_rows_gives_empty_tables(con):
    _insert(con, GOLDEN)
    parts = profile.rollup_partition(con, "requests", start_utc=datetime(2027, 1, 1))  # after every row
    assert {name: table.num_rows for name, table in parts.items()} == {"fct_traffic_hourly": 0, "fct_histogram_hourly": 0}
    whole = profile.rollup_partition(con, "requests")
    for name, table in parts.items():
        assert table.schema.names == whole[name].schema.names
    merged = profile.merge_rollups(con, [parts, whole])
    # 10:00: a, b and all; 12:00: b and all
    assert merged["fct_traffic_hourly"].num_rows == whole["fct_traffic_hourly"].num_rows == 5


@pytest.mark.parametrize("window_rows", [1, 1_000])
def test_rollup_partition_sweeps_in_flight_in_the_same_scan(con, monkeypatch, window_rows):
    """With ``in_flight``, the partition's peak in flight per hour equals a refresh's, spill-over hours
    after the last arrival included, whatever the windows (one hour each with a budget of one row)."""
    rows = [*GOLDEN, ("2026-03-01 12:59:00.000", 5, 5, "a", 200, 10.0, 7_200_000.0, 2)]  # in flight until 14:59
    _insert(con, rows)
    monkeypatch.setattr(profile, "ROLLUP_WINDOW_ROWS", window_rows)
    parts = profile.rollup_partition(con, "requests", in_flight=True)
    profile.refresh_rollups(con, full=True)
    for name, table in parts.items():
        keys = "hour_utc, model" + (", metric, bin" if name == "fct_histogram_hourly" else "")
        want = con.sql(f"select * from {name} order by {keys}").to_arrow_table()  # noqa: S608
        got = table.sort_by([(k.strip(), "ascending") for k in keys.split(",")])
        assert got.to_pylist() == want.to_pylist(), name
    peaks = {(r["hour_utc"].hour, r["model"]) for r in parts["fct_concurrency_hourly"].to_pylist()}
    assert {(13, "a"), (14, "a"), (14, profile.ALL_MODELS)} <= peaks  # hours without arrivals
    assert "fct_concurrency_hourly" not in profile.rollup_partition(con, "requests")


def test_rollup_partition_in_flight_stops_arrivals_at_its_end(con):
    """The sweep runs past ``end_utc`` while requests are in flight; rows arriving after it count nowhere."""
    _insert(con, [*GOLDEN, ("2026-03-01 10:59:00.000", 5, 5, "a", 200, 10.0, 7_200_000.0, 1)])
    end = datetime(2026, 3, 1, 11)  # leaves out 12:30
    parts = profile.rollup_partition(con, "requests", end_utc=end, in_flight=True)
    plain = profile.rollup_partition(con, "requests", end_utc=end)
    assert parts["fct_traffic_hourly"].to_pylist() == plain["fct_traffic_hourly"].to_pylist()
    assert parts["fct_histogram_hourly"].to_pylist() == plain["fct_histogram_hourly"].to_pylist()
    peaks = {(r["hour_utc"].hour, r["model"]): r["concurrency_peak"] for r in parts["fct_concurrency_hourly"].to_pylist()}
    # the 10:59 request runs until 12:59; the 12:30 arrival (after end_utc) is not in flight with it
    assert peaks[(12, profile.ALL_MODELS)] == 1 and (12, "b") not in peaks


def test_rollup_partition_in_flight_from_mid_hour(con):
    """A range starting inside an hour: earlier rows of that hour feed the sweep only, and requests of
    the source that arrived before the range (longer than any inside it) are still in flight in it."""
    _insert(con, [("2026-03-01 09:00:00", 1, 1, "a", 200, 1.0, 7_200_000.0, 1),    # in flight 09:00-11:00
                  ("2026-03-01 10:25:00", 1, 1, "a", 200, 1.0, 5_000.0, 1),
                  ("2026-03-01 10:40:00", 1, 1, "a", 200, 1.0, 5_000.0, 1),
                  ("2026-03-01 11:05:00", 1, 1, "a", 200, 1.0, 600_000.0, 1)])
    start = datetime(2026, 3, 1, 10, 30)
    parts = profile.rollup_partition(con, "requests", start_utc=start, in_flight=True)
    plain = profile.rollup_partition(con, "requests", start_utc=start)
    assert parts["fct_traffic_hourly"].to_pylist() == plain["fct_traffic_hourly"].to_pylist()
    assert [r["requests"] for r in plain["fct_traffic_hourly"].to_pylist() if r["model"] == "a"] == [1, 1]
    peaks = {(r["hour_utc"].hour, r["model"]): r["concurrency_peak"] for r in parts["fct_concurrency_hourly"].to_pylist()}
    # 10:25 and 10:40 each overlap the 09:00 request (a 600 s lookback would have missed it): 2;
    # 11:00 sees the 09:00 request end exactly then (half-open), 11:05 alone: 1
    assert (peaks[(10, "a")], peaks[(11, "a")]) == (2, 1)


def test_rollup_partition_before_1970(con):
    """Hours before the epoch (negative hour numbers) are floored, not truncated toward zero."""
    _insert(con, [("1969-12-31 23:30:00", 3, 2, "a", 200, 1.0, 10.0, 1), ("1970-01-01 00:10:00", 4, 1, "a", 200, 1.0, 10.0, 1)])
    traffic = profile.rollup_partition(con, "requests", in_flight=True)["fct_traffic_hourly"].to_pylist()
    assert [(r["hour_utc"], r["requests"]) for r in traffic if r["model"] == "a"] == [
        (datetime(1969, 12, 31, 23), 1), (datetime(1970, 1, 1), 1)]
