"""Tests of capplan.profile.freshness: readers only read, on read-only connections, from current roll-ups."""

from __future__ import annotations

from datetime import date

import duckdb
import pandas as pd
import pytest

from capplan import profile, sql
from capplan.config import IngestConfig, SourceConfig
from capplan.db import connect
from capplan.ingest import ensure_tables, ingest_paths
from capplan.profile.freshness import changed_file_ids
from capplan.sample import SampleSpec, write_sample

READERS = {
    "hourly_traffic": lambda c: profile.hourly_traffic(c),
    "daily_traffic": lambda c: profile.daily_traffic(c, tz="Europe/Berlin"),
    "weekly_traffic": lambda c: profile.weekly_traffic(c),
    "typical_week": lambda c: profile.typical_week(c),
    "token_distribution": lambda c: profile.token_distribution(c, "day"),
    "histograms": lambda c: profile.histograms(c, "latency_ms", "day"),
    "hourly_sli": lambda c: profile.hourly_sli(c, 1_500.0),
    "profile_summary": lambda c: profile.profile_summary(c),
}
"""Every reader of the profile, with typical arguments."""


def test_no_requests_table():
    with pytest.raises(profile.ProfileError, match="no 'requests' table"):
        profile.hourly_traffic(connect())


def test_read_only_connection_reads_last_refresh(tmp_path, load_rows, golden):
    path = tmp_path / "p.duckdb"
    c = connect(path)
    ensure_tables(c)
    load_rows(c, golden)
    before = profile.hourly_traffic(c)
    c.close()
    ro = connect(path, read_only=True)
    pd.testing.assert_frame_equal(profile.hourly_traffic(ro), before)
    ro.close()


@pytest.mark.parametrize("reader", list(READERS))
def test_a_database_never_profiled_is_an_error_naming_the_refresh(con, insert_rows, golden, reader):
    insert_rows(con, golden)
    with pytest.raises(profile.ProfileError, match=r"never been profiled: run `capplan profile --refresh`"):
        READERS[reader](con)
    assert con.execute("select count(*) from duckdb_tables() where table_name = 'fct_traffic_hourly'").fetchone()[0] == 0


@pytest.mark.parametrize("change", ["new file", "deleted file"])
def test_rollups_older_than_the_ingested_files_are_an_error(con, insert_rows, load_rows, golden, change):
    load_rows(con, golden)
    if change == "new file":
        insert_rows(con, [("2026-03-01 13:00:00", 1, 1, "a", 200, None, None, 3)])
    else:
        con.execute("delete from request_rows where file_id = 2")
    for reader in READERS.values():
        with pytest.raises(profile.ProfileError, match=r"older than the ingested files \(1 file\(s\).*"
                                                       r"run `capplan profile --refresh`"):
            reader(con)
    assert profile.refresh_rollups(con) > 0
    assert not profile.hourly_traffic(con).empty


def test_every_reader_runs_on_a_read_only_connection_after_ingest_and_refresh(tmp_path):
    """Ingest, refresh, then open read-only: every reader and the summary give what they gave writable."""
    logs = write_sample(SampleSpec(date(2026, 3, 2), 8, 600, seed=4), tmp_path / "logs.parquet", split="day")
    path = tmp_path / "capplan.duckdb"
    with connect(path) as con:
        results = ingest_paths(con, [str(p) for p in logs.paths], SourceConfig(name="s"),
                               IngestConfig(contract_check="off"))
        assert {r.status for r in results} == {"loaded"}
        profile.refresh_rollups(con)
        writable = {name: read(con) for name, read in READERS.items()}
    with connect(path, read_only=True) as ro:
        for name, read in READERS.items():
            got = read(ro)
            if isinstance(got, pd.DataFrame):
                assert not got.empty, name
                pd.testing.assert_frame_equal(got, writable[name], obj=name)
            else:
                assert got == writable[name] and got["total_requests"] > 0
        with pytest.raises(duckdb.Error, match="read-only"):
            profile.refresh_rollups(ro)  # the connection really is read-only: a refresh cannot write


def test_rollups_of_an_older_definition_are_refused_then_rebuilt(con, load_rows, golden):
    """Roll-ups refreshed under another ROLLUP_VERSION (e.g. the SLI rule before 408 counted) are not read."""
    load_rows(con, golden)
    current = profile.hourly_traffic(con)
    con.execute("update fct_traffic_hourly set valid_events = valid_events + 7")  # what the old rule stored
    con.execute("delete from profile_rollup_version")  # as a database refreshed before versions were kept
    with pytest.raises(profile.ProfileError, match=r"older definition .*capplan profile --rebuild"):
        profile.hourly_traffic(con)
    assert profile.refresh_rollups(con) > 0  # the next refresh rebuilds every hour from the raw rows
    pd.testing.assert_frame_equal(profile.hourly_traffic(con), current)
    assert con.execute("select version from profile_rollup_version").fetchall() == [(profile.ROLLUP_VERSION,)]
    assert profile.refresh_rollups(con) == 0  # and then it is current: nothing to do


@pytest.mark.parametrize(("change", "expected"), [
    ("select 1", []),  # nothing changed
    ("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, file_id)"
     " values ('2026-03-01 13:00:00', 1, 1, 'a', 200, 3)", [3]),  # a new file: the ids above the highest seen
    ("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, file_id)"
     " values ('2026-03-01 13:00:00', 1, 1, 'a', 200, 0)", [0]),  # a new id below the highest seen
    ("delete from request_rows where file_id = 1 and input_tokens = 100", [1]),  # a file edited
    ("delete from request_rows where file_id = 1", [1]),  # a file deleted
    ("delete from request_rows where file_id = 2", [2]),  # the highest file deleted
    ("update request_rows set file_id = 3 where file_id = 1", [1, 3]),  # re-ingested as a new version, same rows
    ("update request_rows set file_id = 2 where file_id = 1 and input_tokens = 100", [1, 2]),  # rows moved: same total
    ("update request_rows set rule = 'x' where file_id = 2", [2]),  # a row quarantined: it leaves `requests`
])
def test_changed_files_are_found_without_counting_every_file(con, load_rows, golden, change, expected):
    """Files 1 (4 rows) and 2 (1 row) rolled up, then one change by hand: the changed files are exactly the
    ids whose rows in `requests` differ in number from the roll-ups' (the count of every file's rows,
    sql/int_profile_changed_files.sql), whichever of its paths `changed_file_ids` takes; moving one row from
    file 1 to file 2 keeps the total (5 rows), so only the fingerprint of hashed ids tells it."""
    load_rows(con, golden)
    con.execute(change)
    assert changed_file_ids(con) == expected
    assert [r[0] for r in con.execute(sql.load("int_profile_changed_files")).fetchall()] == expected
    profile.refresh_rollups(con)
    assert changed_file_ids(con) == []
