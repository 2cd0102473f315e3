"""Tests of capplan.profile: SQL golden rows in an in-memory DuckDB, invariants, incremental refresh."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
import pytest

import sql
from capplan import profile
from capplan.db import connect


def _insert(con, rows):
    """Insert (ts_utc, input, output, model, status, ttft_ms, latency_ms, file_id) rows."""
    con.executemany(
        "insert into requests (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, file_id)"
        " values (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


@pytest.fixture
def con():
    c = connect()
    c.execute(sql.load("ddl_requests"))
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
