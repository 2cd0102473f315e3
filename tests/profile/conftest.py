"""Fixtures of the profile's tests: golden rows, a loader that refreshes as an ingest does, a generated month."""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest

from capplan import profile
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.sample import SampleSpec, iter_days

GOLDEN = [
    ("2026-03-01 10:00:00.100", 100, 10, "a", 200, 100.0, 1500.0, 1),
    ("2026-03-01 10:00:00.900", 200, 20, "a", 200, 200.0, 500.0, 1),
    ("2026-03-01 10:00:01.000", 300, 30, "b", 500, None, None, 1),
    ("2026-03-01 10:59:59.500", 50, 5, "a", 200, 100.0, 1000.0, 1),
    ("2026-03-01 12:30:00.000", 0, 0, "b", 429, 10.0, 10.0, 2),
]
SPEC = SampleSpec(start=date(2026, 1, 1), days=31, requests_per_day=4_000, seed=11)


def _insert(con, rows):
    """Insert (ts_utc, input, output, model, status, ttft_ms, latency_ms, file_id) rows."""
    con.executemany(
        "insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, file_id)"
        " values (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def _load(con, rows):
    """Insert rows and refresh the roll-ups, as ``capplan ingest`` does: what the readers then read."""
    _insert(con, rows)
    profile.refresh_rollups(con)


@pytest.fixture
def con():
    c = connect()
    ensure_tables(c)
    yield c
    c.close()


@pytest.fixture(scope="session")
def golden() -> list[tuple]:
    """Five rows of two models over hours 10 and 12 of 2026-03-01, two files; a request runs into hour 11."""
    return list(GOLDEN)


@pytest.fixture(scope="session")
def insert_rows():
    """``insert_rows(con, rows)``: raw rows into ``request_rows``, roll-ups left as they are."""
    return _insert


@pytest.fixture(scope="session")
def load_rows():
    """``load_rows(con, rows)``: raw rows into ``request_rows``, then a refresh of the roll-ups."""
    return _load


@pytest.fixture(scope="session")
def rollup_tables():
    """``rollup_tables(con) -> {table: frame}``: every rollup table, sorted, for exact comparison."""
    def tables(con) -> dict[str, pd.DataFrame]:
        keys = {"fct_traffic_hourly": ["hour_utc", "model"],
                "fct_histogram_hourly": ["hour_utc", "model", "metric", "bin"],
                "fct_concurrency_hourly": ["hour_utc", "model"]}
        return {t: con.table(t).df().sort_values(k, ignore_index=True) for t, k in keys.items()}
    return tables


@pytest.fixture(scope="session")
def month(tmp_path_factory):
    """A generated month loaded day by day (file_id = day) and refreshed as it grows; raw rows in pandas;
    weekly Parquet partitions of whole days in a folder."""
    folder = tmp_path_factory.mktemp("month")
    con = connect()
    ensure_tables(con)
    for i, chunk in enumerate(iter_days(SPEC), start=1):
        con.register("chunk", chunk.table)
        con.execute("insert into request_rows by name select *, ? as file_id from chunk", [i])
        con.unregister("chunk")
        if i % 10 == 0 or i == SPEC.days:
            profile.refresh_rollups(con)  # incremental: a few days at a time, as after daily ingests
    for week, first_day in enumerate(range(1, SPEC.days + 1, 7)):  # partitions of whole days
        con.execute("copy (select * from requests where file_id between ? and ?) to ? (format parquet)",
                    [first_day, first_day + 6, str(folder / f"week-{week}.parquet")])
    raw = con.execute("select * from requests").df()
    raw["hour_utc"] = raw["ts_utc"].dt.floor("h")
    yield con, raw, folder
    con.close()
