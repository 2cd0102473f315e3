"""capplan.ingest: the staging pass: every rule, timestamps, reconciliation, row numbers (capplan.ingest.stage).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

import csv
import gzip
import io
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capplan.config import IngestConfig, SourceConfig
from capplan.db import connect
from capplan.ingest import IngestError, RequestRow, load_file


def test_each_rule_quarantines_its_row_with_raw_values(corpus, load, quarantine):
    result, con = load(corpus / "rules.csv")
    assert quarantine(con) == [
        (2, "timestamp_missing"), (3, "timestamp_unparseable"), (4, "timestamp_future"),
        (5, "tokens_negative"), (6, "tokens_not_integer"), (7, "tokens_above_context_limit"),
        (8, "status_unknown"), (9, "request_id_duplicate"), (10, "tokens_missing"), (11, "ttft_ms_invalid"),
        (12, "status_unknown"), (14, "latency_ms_invalid")]
    assert (result.rows_read, result.rows_loaded, result.rows_quarantined) == (14, 2, 12)
    raw, detail = con.execute("select raw, detail from quarantine where row_number = 9").fetchall()[0]
    assert '"request_id":"r1"' in raw and '"extra_note":null' in raw  # every source column, as read (empty -> null)
    assert "first" not in detail and "data row 1" in detail
    # row 13: status word 'failed' -> 500; empty model -> 'default'; the extra column is not loaded
    rows = con.execute("select model, status, ttft_ms, request_id from requests order by ts_utc").fetchall()
    assert rows == [("llama", 200, 150.5, "r1"), ("default", 500, None, None)]


def test_context_limit_comes_from_config(corpus, load):
    result, _ = load(corpus / "rules.csv", cfg=IngestConfig(contract_check="all", context_limit_tokens=1_000_000))
    assert result.rows_quarantined == 11


@pytest.mark.parametrize("tz, naive_utc_hour", [(None, 12), ("Europe/Paris", 10), ("America/New_York", 16)])
def test_mixed_time_zones_and_precisions_convert_to_utc(tz, naive_utc_hour, corpus, load):
    result, con = load(corpus / "timestamps.csv", SourceConfig(name="t", timezone=tz))
    ts = [r[0] for r in con.execute("select ts_utc from requests").fetchall()]
    noon = datetime(2026, 10, 1, 12)
    # offsets Z, +02:00, -0500 all name 12:00 UTC; fractions of any precision truncate to µs
    assert ts[:3] == [noon] * 3
    assert ts[3] == noon.replace(microsecond=123456) and ts[4] == noon.replace(microsecond=500000)
    assert ts[5] == noon.replace(hour=naive_utc_hour)  # the naive one is wall time in `tz`
    assert result.rows_quarantined == 0


@pytest.mark.parametrize("unit, value, expected", [
    ("s", "1790000001.5", datetime(2026, 9, 21, 14, 13, 21, 500000)),
    ("ms", "1790000001500", datetime(2026, 9, 21, 14, 13, 21, 500000)),
    ("us", "1790000001500000", datetime(2026, 9, 21, 14, 13, 21, 500000)),
])
def test_epoch_timestamps_in_each_unit(tmp_path, unit, value, expected, load):
    path = tmp_path / "epoch.csv"
    path.write_text(f"ts_utc,input_tokens,output_tokens\n{value},1,2\n")
    _, con = load(path, SourceConfig(name="t", timestamp_unit=unit))
    assert con.execute("select ts_utc from requests").fetchall() == [(expected,)]


def test_numeric_timestamp_without_unit_is_quarantined(corpus, load, quarantine):
    result, con = load(corpus / "epoch_s.csv")
    assert result.rows_loaded == 0 and {r for _, r in quarantine(con)} == {"timestamp_unparseable"}


_cell = st.one_of(st.sampled_from(["", " ", "-1", "0", "7", "12.5", "1e3", "abc", "200", "success", "2026-10-01",
                                   "2026-10-01T00:00:00Z", "2031-01-01T00:00:00Z", "99999999", "r1", "r2"]),
                  st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\r"),
                          max_size=6))


_row = st.lists(_cell, min_size=2, max_size=7)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_row, min_size=1, max_size=15))
def test_messy_rows_always_reconcile(tmp_path_factory, rows, now, cfg_all, canonical, quarantine):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["ts_utc", "input_tokens", "output_tokens", "status", "request_id"])
    writer.writerows(rows)
    path = tmp_path_factory.mktemp("messy") / "messy.csv.gz"
    path.write_bytes(gzip.compress(buf.getvalue().encode()))
    con = connect()
    try:
        result = load_file(con, path, canonical, cfg_all, now_utc=now)
    except IngestError:
        return  # a whole-file verdict (e.g. no header detected) loads nothing, checked elsewhere
    # DuckDB sniffs the dialect (it may take ' as the quote), so the record count is bounded by lines
    data_lines = buf.getvalue().count("\n") - 1
    numbers = [r for r, _ in quarantine(con)]
    assert result.rows_read == result.rows_loaded + result.rows_quarantined
    assert 1 <= result.rows_read <= data_lines and len(set(numbers)) == len(numbers)
    assert all(1 <= n <= result.rows_read for n in numbers)
    assert con.execute("select count(*) from requests").fetchall() == [(result.rows_loaded,)]
    loaded = con.execute("select * exclude (file_id) from requests").df()
    RequestRow.validate(loaded)  # whatever got in honours the contract


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_rows_of_a_file_of_many_row_groups_keep_their_file_row_numbers(tmp_path, suffix, load, quarantine):
    """300 000 rows (three DuckDB row groups, read in parallel): bad rows and duplicates far apart."""
    n = 300_000
    bad = {7: "tokens_negative", 150_001: "timestamp_unparseable", 299_999: "request_id_duplicate"}
    lines = ["ts_utc,input_tokens,output_tokens,request_id"]
    for row in range(1, n + 1):
        ts = "soon" if bad.get(row) == "timestamp_unparseable" else f"2026-10-01T00:00:{row % 60:02d}Z"
        tokens = -1 if bad.get(row) == "tokens_negative" else row % 1000
        lines.append(f"{ts},{tokens},2,{'r123456' if row == 299_999 else f'r{row}'}")
    path = tmp_path / f"big{suffix}"
    text = tmp_path / "big.csv"
    text.write_text("\n".join(lines) + "\n")
    if suffix == ".parquet":
        connect().execute(f"copy (select * from read_csv(?, all_varchar=true)) to '{path}' (format parquet)",
                          [str(text)])
    result, con = load(path, cfg=IngestConfig())
    assert (result.rows_read, result.rows_loaded) == (n, n - 3)
    assert quarantine(con) == sorted(bad.items())
    assert con.execute("select detail from quarantine where rule = 'request_id_duplicate'").fetchall() == [
        ("request_id: r123456 already seen at data row 123456",)]
    assert con.execute("select count(*), count(distinct request_id), sum(input_tokens) from requests").fetchall() == [
        (n - 3, n - 3, sum(r % 1000 for r in range(1, n + 1)) - 7 - 150_001 % 1000 - 299_999 % 1000)]


def test_each_row_is_stored_once_and_requests_shows_the_good_ones(corpus, load):
    result, con = load(corpus / "rules.csv")
    stored = con.execute("select count(*), count(rule), count(ts_utc) filter (where rule like 'timestamp_%'), "
                         "count(input_tokens) filter (where rule is not null and rule <> 'request_id_duplicate') "
                         "from request_rows where file_id = ?", [result.file_id]).fetchone()
    # a bad row's tokens and a timestamp breaking a timestamp rule are null (the duplicate, marked
    # after the write, keeps its valid values)
    assert stored == (result.rows_read, result.rows_quarantined, 0, 0)
    # a bad row keeps its id: it is an id's first occurrence even though it is not loaded
    assert con.execute("select count(*) from request_rows where rule is not null and request_id is not null"
                       ).fetchone()[0] >= 1
    assert con.execute("select count(*) from requests").fetchone()[0] == result.rows_loaded
    assert con.execute("select table_type from information_schema.tables where table_name = 'requests'"
                       ).fetchone()[0] == "VIEW"
