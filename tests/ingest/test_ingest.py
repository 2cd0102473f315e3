"""capplan.ingest: rules, whole-file errors, timestamps, reconciliation, idempotence, replace.

The bad-input corpus is in tests/data/ingest/; every case names its expected error or
quarantine rule and data row.
"""

from __future__ import annotations

import csv
import gzip
import io
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capplan.config import IngestConfig, SourceConfig
from capplan.db import connect
from capplan.ingest import (IngestError, RequestRow, _LineCounter, column_mapping, detect_format, ensure_tables,
                             ingest_paths, load_file)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "ingest"
NOW = datetime(2026, 11, 1, tzinfo=UTC)
CFG = IngestConfig(contract_check="all")
CANONICAL = SourceConfig(name="test")


def _load(path: Path, source: SourceConfig = CANONICAL, cfg: IngestConfig = CFG, con=None):
    con = con or connect()
    return load_file(con, path, source, cfg, now_utc=NOW), con


def _quarantine(con) -> list[tuple[int, str]]:
    return [tuple(r) for r in con.execute("select row_number, rule from quarantine order by row_number").fetchall()]


def test_each_rule_quarantines_its_row_with_raw_values():
    result, con = _load(CORPUS / "rules.csv")
    assert _quarantine(con) == [
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


def test_duplicate_against_an_earlier_file_is_quarantined(tmp_path):
    con = connect()
    _load(CORPUS / "rules.csv", con=con)
    again = tmp_path / "later.csv"
    again.write_text("ts_utc,input_tokens,output_tokens,request_id\n2026-10-02T00:00:00Z,1,1,r1\n"
                     "2026-10-02T00:00:01Z,1,1,new\n")
    result, _ = _load(again, con=con)
    assert (result.rows_loaded, result.rows_quarantined) == (1, 1)
    assert con.execute("select detail from quarantine where path = ?", [str(again)]).fetchall()[0][0].endswith(
        "in an earlier file")


def test_context_limit_comes_from_config():
    result, _ = _load(CORPUS / "rules.csv", cfg=IngestConfig(contract_check="all", context_limit_tokens=1_000_000))
    assert result.rows_quarantined == 11


@pytest.mark.parametrize("tz, naive_utc_hour", [(None, 12), ("Europe/Paris", 10), ("America/New_York", 16)])
def test_mixed_time_zones_and_precisions_convert_to_utc(tz, naive_utc_hour):
    result, con = _load(CORPUS / "timestamps.csv", SourceConfig(name="t", timezone=tz))
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
def test_epoch_timestamps_in_each_unit(tmp_path, unit, value, expected):
    path = tmp_path / "epoch.csv"
    path.write_text(f"ts_utc,input_tokens,output_tokens\n{value},1,2\n")
    _, con = _load(path, SourceConfig(name="t", timestamp_unit=unit))
    assert con.execute("select ts_utc from requests").fetchall() == [(expected,)]


def test_numeric_timestamp_without_unit_is_quarantined():
    result, con = _load(CORPUS / "epoch_s.csv")
    assert result.rows_loaded == 0 and {r for _, r in _quarantine(con)} == {"timestamp_unparseable"}


def test_relative_timestamps_count_from_the_origin_with_a_column_map():
    source = SourceConfig(name="trace", columns={"ts_utc": "time_s", "input_tokens": "prompt",
                                                 "output_tokens": "completion"}, origin="2026-10-01T02:00:00+02:00")
    result, con = _load(CORPUS / "relative.csv", source)
    ts = [r[0] for r in con.execute("select ts_utc from requests order by ts_utc").fetchall()]
    assert ts == [datetime(2026, 10, 1), datetime(2026, 10, 1, 0, 0, 1, 500000), datetime(2026, 10, 1, 1)]
    assert set(result.defaulted_columns) == {"model", "status", "ttft_ms", "latency_ms", "request_id", "tenant",
                                             "zone"}


def test_azure_preset_and_defaults_are_recorded_in_the_ledger():
    result, con = _load(CORPUS / "azure.csv", SourceConfig(name="azure", preset="azure"))
    assert result.rows_loaded == 3
    assert con.execute("select sum(input_tokens), min(model), min(status) from requests").fetchall() == [
        (374 + 396 + 879, "default", 200)]
    defaulted = con.execute("select defaulted_columns from ingest_ledger").fetchall()[0][0]
    assert defaulted[:2] == ["model", "status"]


@pytest.mark.parametrize("name, expected_rules, loaded", [
    ("wrong_columns.csv", [(2, "csv_wrong_column_count"), (3, "tokens_not_integer"), (4, "csv_wrong_column_count"),
                           (6, "tokens_negative")], 2),
    ("messy.jsonl", [(2, "json_malformed"), (5, "json_malformed"), (6, "tokens_negative")], 2),
    ("bom.csv", [], 1),
    ("semicolon.csv", [], 2),
    ("good.csv.gz", [], 2),
])
def test_malformed_lines_are_quarantined_at_their_file_row(name, expected_rules, loaded):
    result, con = _load(CORPUS / name)
    assert _quarantine(con) == expected_rules
    assert result.rows_loaded == loaded and result.rows_read == loaded + len(expected_rules)


@pytest.mark.parametrize("name, message", [
    ("empty.csv", r"empty file \(0 bytes\)"),
    ("header_only.csv", "no data rows"),
    ("missing_column.csv", r"missing required column output_tokens .*found columns \['ts_utc', 'input_tokens'"),
    ("wrong_delimiter.csv", r"one column only: wrong delimiter\?"),
    ("latin1.csv", "line 2: bytes that are not valid UTF-8"),
    ("truncated.csv.gz", "truncated gzip"),
    ("not_parquet.parquet", "not a parquet file"),
])
def test_whole_file_problems_name_the_file_and_load_nothing(name, message):
    con = connect()
    with pytest.raises(IngestError, match=message) as err:
        load_file(con, CORPUS / name, CANONICAL, CFG, now_utc=NOW)
    assert str(CORPUS / name) in str(err.value)
    assert con.execute("select count(*) from requests").fetchall() == [(0,)]
    assert con.execute("select count(*) from ingest_ledger").fetchall() == [(0,)]


def test_other_files_of_the_run_still_load_and_results_are_per_file():
    con = connect()
    results = ingest_paths(con, [str(CORPUS / "bom.csv"), str(CORPUS / "empty.csv"), str(CORPUS / "nope*.csv"),
                                 str(CORPUS / "azure.csv")], CANONICAL, CFG, now_utc=NOW)
    assert [(Path(r.path).name, r.status) for r in results] == [
        ("nope*.csv", "error"), ("bom.csv", "loaded"), ("empty.csv", "error"), ("azure.csv", "error")]
    assert con.execute("select count(*) from requests").fetchall() == [(1,)]


def test_very_long_line_loads_and_the_extra_column_stays_out(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("ts_utc,input_tokens,output_tokens,prompt\n2026-10-01T00:00:00Z,1,2," + "x" * 3_000_000 + "\n"
                    "2026-10-01T00:00:01Z,3,4,short\n")
    result, con = _load(path)
    assert (result.rows_read, result.rows_loaded) == (2, 2)
    assert "prompt" not in [r[0] for r in con.execute("describe requests").fetchall()]


def test_headerless_csv_is_read_in_preset_order(tmp_path):
    path = tmp_path / "nohdr.csv"
    path.write_text("2026-10-01T00:00:00Z,10,20\n2026-10-01T00:00:01Z,11,21\n")
    result, con = _load(path)
    assert result.rows_loaded == 2
    assert con.execute("select sum(input_tokens), sum(output_tokens) from requests").fetchall() == [(21, 41)]


def test_reingesting_the_same_content_is_a_no_op(tmp_path):
    con = connect()
    first, _ = _load(CORPUS / "rules.csv", con=con)
    copy = tmp_path / "copy.csv"
    shutil.copy(CORPUS / "rules.csv", copy)
    for path in (CORPUS / "rules.csv", copy):
        again, _ = _load(path, con=con)
        assert again.status == "unchanged" and again.file_id == first.file_id
    counts = con.execute("select (select count(*) from requests), (select count(*) from quarantine), "
                         "(select count(*) from ingest_ledger)").fetchall()
    assert counts == [(2, 12, 1)]


def test_a_copy_under_a_new_name_is_loaded_then_rolled_back_as_unchanged(tmp_path):
    # a path the ledger does not hold is hashed while it loads; the hash is checked before commit
    con = connect()
    first, _ = _load(CORPUS / "rules.csv", con=con)
    before = con.execute("select count(*), max(file_id) from requests").fetchall()
    copy = tmp_path / "renamed.csv"
    shutil.copy(CORPUS / "rules.csv", copy)
    again, _ = _load(copy, con=con)
    assert (again.status, again.file_id, again.rows_read) == ("unchanged", first.file_id, 0)
    assert str(CORPUS / "rules.csv") in again.message
    assert con.execute("select count(*), max(file_id) from requests").fetchall() == before
    assert con.execute("select count(*) from ingest_ledger").fetchall() == [(1,)]
    # the copy's file id was drawn and rolled back with the rest: the next file still loads
    other = tmp_path / "other.csv"
    other.write_text("ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,1,2\n")
    assert _load(other, con=con)[0].status == "loaded"


def test_a_gzip_stream_corrupt_in_the_middle_is_named_as_such(tmp_path):
    body = gzip.compress(("ts_utc,input_tokens,output_tokens\n" +
                          "".join(f"2026-10-01T00:00:{i % 60:02d}Z,{i},{i}\n" for i in range(20_000))).encode())
    path = tmp_path / "corrupt.csv.gz"
    path.write_bytes(body[:len(body) // 2] + bytes(64) + body[len(body) // 2 + 64:])
    con = connect()
    with pytest.raises(IngestError, match=r"corrupt\.csv\.gz: (corrupt|truncated) gzip data"):
        load_file(con, path, CANONICAL, CFG, now_utc=NOW)
    assert con.execute("select count(*) from requests").fetchall() == [(0,)]


def test_changed_file_is_refused_by_default_and_replaced_on_request(tmp_path):
    con = connect()
    path = tmp_path / "day.csv"
    path.write_text("ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,1,2\n2026-10-01T00:00:01Z,-1,2\n")
    first, _ = _load(path, con=con)
    path.write_text("ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,5,5\n")
    with pytest.raises(IngestError, match="content changed since it was ingested as file 1; refusing"):
        _load(path, con=con)
    result = load_file(con, path, CANONICAL, CFG, now_utc=NOW, on_changed="replace")
    assert result.status == "replaced"
    assert con.execute("select file_id, input_tokens from requests").fetchall() == [(result.file_id, 5)]
    assert con.execute("select count(*) from quarantine").fetchall() == [(0,)]
    assert con.execute("select file_id, status from ingest_ledger order by file_id").fetchall() == [
        (first.file_id, "replaced"), (result.file_id, "loaded")]


def test_ledger_row_records_size_hash_and_counts():
    result, con = _load(CORPUS / "rules.csv")
    row = con.execute("select size_bytes, length(content_sha256), rows_read, rows_loaded, rows_quarantined, "
                      "source, status from ingest_ledger").fetchall()[0]
    assert row == ((CORPUS / "rules.csv").stat().st_size, 64, 14, 2, 12, "test", "loaded")


@pytest.mark.parametrize("fmt", ["parquet", "jsonl.gz", "csv.zst"])
def test_every_format_and_compression_loads_the_same_rows(tmp_path, fmt):
    con = connect()
    src = CORPUS / "rules.csv"
    out = tmp_path / f"rules.{fmt}"
    kind, compression = detect_format(out)
    option = {"parquet": "format parquet", "jsonl": "format json"}.get(kind, "format csv, header")
    option += f", compression {compression}" if compression else ""
    con.execute(f"copy (select * from read_csv(?, all_varchar=true)) to '{out}' ({option})", [str(src)])
    result, con2 = _load(out)
    assert (result.rows_read, result.rows_loaded) == (14, 2)
    # JSON drops empty values to null, so row 10 (empty output_tokens) is still tokens_missing
    assert [rule for _, rule in _quarantine(con2)][:4] == [
        "timestamp_missing", "timestamp_unparseable", "timestamp_future", "tokens_negative"]


def test_unknown_preset_and_column_are_value_errors():
    with pytest.raises(ValueError, match="valid presets: \\['azure', 'canonical'\\]"):
        column_mapping(SourceConfig(name="x", preset="nope"))
    with pytest.raises(ValueError, match=r"\['tokens'\] are not canonical"):
        column_mapping(SourceConfig(name="x", columns={"tokens": "t"}))
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Base'"):
        column_mapping(SourceConfig(name="x", timezone="Mars/Base"))


# --- reconciliation over messy rows -------------------------------------------------------------

_cell = st.one_of(st.sampled_from(["", " ", "-1", "0", "7", "12.5", "1e3", "abc", "200", "success", "2026-10-01",
                                   "2026-10-01T00:00:00Z", "2031-01-01T00:00:00Z", "99999999", "r1", "r2"]),
                  st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\r"),
                          max_size=6))
_row = st.lists(_cell, min_size=2, max_size=7)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_row, min_size=1, max_size=15))
def test_messy_rows_always_reconcile(tmp_path_factory, rows):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["ts_utc", "input_tokens", "output_tokens", "status", "request_id"])
    writer.writerows(rows)
    path = tmp_path_factory.mktemp("messy") / "messy.csv.gz"
    path.write_bytes(gzip.compress(buf.getvalue().encode()))
    con = connect()
    try:
        result = load_file(con, path, CANONICAL, CFG, now_utc=NOW)
    except IngestError:
        return  # a whole-file verdict (e.g. no header detected) loads nothing, checked elsewhere
    # DuckDB sniffs the dialect (it may take ' as the quote), so the record count is bounded by lines
    data_lines = buf.getvalue().count("\n") - 1
    numbers = [r for r, _ in _quarantine(con)]
    assert result.rows_read == result.rows_loaded + result.rows_quarantined
    assert 1 <= result.rows_read <= data_lines and len(set(numbers)) == len(numbers)
    assert all(1 <= n <= result.rows_read for n in numbers)
    assert con.execute("select count(*) from requests").fetchall() == [(result.rows_loaded,)]
    loaded = con.execute("select * exclude (file_id) from requests").df()
    RequestRow.validate(loaded)  # whatever got in honours the contract


def test_concatenated_gzip_members_and_crlf_line_endings(tmp_path):
    path = tmp_path / "appended.csv.gz"
    path.write_bytes(gzip.compress(b"ts_utc,input_tokens,output_tokens\r\n2026-10-01T00:00:00Z,1,2\r\n")
                     + gzip.compress(b"2026-10-01T00:00:01Z,3,4\r\n"))
    result, con = _load(path)
    assert (result.rows_read, result.rows_loaded) == (2, 2)
    assert con.execute("select sum(output_tokens) from requests").fetchall() == [(6,)]


# --- one read of a text file: the staged rows give the same results as the three-pass version ------

MESSY_IDS = ("ts_utc,input_tokens,output_tokens,request_id\n"
             "2026-10-01T00:00:00Z,-1,1,a\n"          # 1 bad, and the first a: a stays taken
             "2026-10-01T00:00:01Z,1,1,a\n"           # 2 duplicate of row 1
             "2026-10-01T00:00:02Z,1,1\n"             # 3 rejected by the reader
             "2026-10-01T00:00:03Z,1,1, b\n"          # 4 loaded as 'b'
             "2026-10-01T00:00:04Z,1,1,b\n"           # 5 duplicate of row 4
             "2026-10-01T00:00:05Z,x,1,e1\n"          # 6 its own rule first, though e1 is loaded
             "2026-10-01T00:00:06Z,1,1,e1\n"          # 7 duplicate of an earlier file
             "2026-10-01T00:00:07Z,1,1,a\n"           # 8 duplicate of row 1
             "2026-10-01T00:00:08Z,1,1,c,extra\n"     # 9 rejected by the reader
             "2026-10-01T00:00:09Z,1,1,c\n"           # 10 loaded
             "2026-10-01T00:00:10Z,1,1,\n"            # 11, 12 no id: never duplicates
             "2026-10-01T00:00:11Z,1,1,\n"
             "2026-10-01T00:00:12Z,1,1,e2 \n")        # 13 duplicate of an earlier file


def test_messy_csv_quarantines_exactly_what_the_three_pass_version_did(tmp_path):
    """Every quarantine row (number, rule, detail, raw) and every loaded row, as the version that
    read the file three times (commit 0ed8267) gave them, but for one fixed detail (row 5)."""
    con = connect()
    earlier = tmp_path / "earlier.csv"
    earlier.write_text("ts_utc,input_tokens,output_tokens,request_id\n2026-10-01T00:00:00Z,1,1,e1\n"
                       "2026-10-01T00:00:01Z,1,1,e2\n")
    _load(earlier, con=con)
    path = tmp_path / "messy.csv"
    path.write_text(MESSY_IDS)
    result, _ = _load(path, con=con)
    assert (result.rows_read, result.rows_loaded, result.rows_quarantined) == (13, 4, 9)
    rows = con.execute("select row_number, rule, detail, raw from quarantine where file_id = ? order by row_number",
                       [result.file_id]).fetchall()

    def raw(second, tokens, request_id):
        return (f'{{"ts_utc":"2026-10-01T00:00:{second:02d}Z","input_tokens":"{tokens}","output_tokens":"1",'
                f'"request_id":"{request_id}"}}')
    columns = "line does not split into the header's columns (csv_wrong_column_count)"
    assert rows == [
        (1, "tokens_negative", "input_tokens=-1, output_tokens=1: expected >= 0", raw(0, -1, "a")),
        (2, "request_id_duplicate", "request_id: a already seen at data row 1", raw(1, 1, "a")),
        (3, "csv_wrong_column_count", columns, '"2026-10-01T00:00:02Z,1,1"'),
        # the three-pass version named row 3 here (the scan's count, before the rejected line 3)
        (5, "request_id_duplicate", "request_id: b already seen at data row 4", raw(4, 1, "b")),
        (6, "tokens_not_integer", "input_tokens=x, output_tokens=1: expected integers", raw(5, "x", "e1")),
        (7, "request_id_duplicate", "request_id: e1 already seen in an earlier file", raw(6, 1, "e1")),
        (8, "request_id_duplicate", "request_id: a already seen at data row 1", raw(7, 1, "a")),
        (9, "csv_wrong_column_count", columns, '"2026-10-01T00:00:08Z,1,1,c,extra"'),
        (13, "request_id_duplicate", "request_id: e2 already seen in an earlier file", raw(12, 1, "e2 "))]
    assert con.execute("select request_id, second(ts_utc) from request_rows where file_id = ? and rule is null order by rowid",
                       [result.file_id]).fetchall() == [("b", 3), ("c", 9), (None, 10), (None, 11)]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_rows_of_a_file_of_many_row_groups_keep_their_file_row_numbers(tmp_path, suffix):
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
    result, con = _load(path, cfg=IngestConfig())
    assert (result.rows_read, result.rows_loaded) == (n, n - 3)
    assert _quarantine(con) == sorted(bad.items())
    assert con.execute("select detail from quarantine where rule = 'request_id_duplicate'").fetchall() == [
        ("request_id: r123456 already seen at data row 123456",)]
    assert con.execute("select count(*), count(distinct request_id), sum(input_tokens) from requests").fetchall() == [
        (n - 3, n - 3, sum(r % 1000 for r in range(1, n + 1)) - 7 - 150_001 % 1000 - 299_999 % 1000)]


def test_an_earlier_files_id_is_a_duplicate_only_within_the_window(tmp_path):
    # the earlier-file check reads only rows that arrived within duplicate_id_window_s of this file's span
    first = tmp_path / "october.csv"
    first.write_text("ts_utc,input_tokens,output_tokens,request_id\n2026-10-01T00:00:00Z,1,1,r1\n"
                     "2026-10-08T12:00:00Z,1,1,r2\n")
    later = tmp_path / "later.csv"  # spans 10-09 00:00 .. 10-09 06:00: r2 is 11.5 h before it, r1 8 days
    later.write_text("ts_utc,input_tokens,output_tokens,request_id\n2026-10-09T00:00:00Z,1,1,r2\n"
                     "2026-10-09T06:00:00Z,1,1,r1\n")
    for window, quarantined in ((86_400.0, ["r2"]), (None, ["r1", "r2"])):
        con = connect()
        cfg = IngestConfig(contract_check="all", duplicate_id_window_s=window)
        _load(first, cfg=cfg, con=con)
        result, _ = _load(later, cfg=cfg, con=con)
        ids = con.execute("select raw->>'request_id' from quarantine where path = ? order by 1",
                          [str(later)]).fetchall()
        assert [i for (i,) in ids] == quarantined and result.rows_loaded == 2 - len(quarantined)


def test_each_row_is_stored_once_and_requests_shows_the_good_ones():
    result, con = _load(CORPUS / "rules.csv")
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


def test_a_database_with_the_old_requests_table_is_migrated_in_place(tmp_path):
    db = tmp_path / "old.duckdb"
    con = connect(db)
    con.execute("""create table requests (ts_utc timestamp not null, input_tokens integer not null,
        output_tokens integer not null, model varchar not null, status smallint not null, ttft_ms double,
        latency_ms double, request_id varchar, tenant varchar, zone varchar, file_id integer not null)""")
    con.execute("insert into requests values ('2026-10-01 00:00:00', 1, 2, 'm', 200, null, null, 'old', null, null, 7)")
    con.close()
    con = connect(db)
    ensure_tables(con)  # the view comes in the migration's own transaction, with the rename
    assert con.execute("select table_type from information_schema.tables where table_name = 'requests'"
                       ).fetchone()[0] == "VIEW"
    result = load_file(con, CORPUS / "rules.csv", CANONICAL, CFG, now_utc=NOW)
    assert con.execute("select request_id, file_id from requests where file_id = 7").fetchall() == [("old", 7)]
    assert con.execute("select count(*) from requests").fetchone()[0] == 1 + result.rows_loaded
    assert con.execute("select count(*) from quarantine").fetchone()[0] == result.rows_quarantined
    con.close()
    con = connect(db)  # the migration ran once; opening again and ingesting more changes nothing of it
    again = load_file(con, CORPUS / "rules.csv", CANONICAL, CFG, now_utc=NOW)
    assert again.status == "unchanged"
    assert con.execute("select count(*) from requests").fetchone()[0] == 1 + result.rows_loaded


def _empty_lines_of(data: bytes) -> list[int]:
    """Reference: 1-based numbers of the lines ended by \\n that hold nothing or a lone \\r."""
    return [i for i, line in enumerate(data.split(b"\n")[:-1], start=1) if line in (b"", b"\r")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r", b"\r\n", b",", b"\n\n"]), max_size=40),
       st.lists(st.integers(0, 200), max_size=6))
def test_line_counter_finds_every_empty_line_whatever_the_chunks(parts, cuts):
    data = b"".join(parts)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    counter = _LineCounter()
    for a, b in zip(bounds, bounds[1:]):
        counter.feed(data[a:b])
    assert counter.empty == _empty_lines_of(data)
    assert counter.max_records == max(data.count(b"\n"), data.count(b"\r")) + 1


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_rows_after_an_empty_csv_line_keep_their_file_row_numbers(tmp_path, eol):
    # data rows: 1 a, 2 empty (skipped by the reader), 3 too many columns (rejected by the reader),
    # 4 bad tokens, 5 a again (a duplicate of row 1), 6 empty, 7 negative tokens
    lines = ["ts_utc,input_tokens,output_tokens,request_id", "2026-10-01T00:00:00Z,1,1,a", "",
             "2026-10-01T00:00:01Z,1,1,b,EXTRA", "2026-10-01T00:00:02Z,x,1,c", "2026-10-01T00:00:03Z,1,1,a",
             "", "2026-10-01T00:00:04Z,-1,1,d"]
    path = tmp_path / "empty-lines.csv"
    path.write_bytes(eol.join(lines).encode() + eol.encode())
    result, con = _load(path)
    assert (result.rows_read, result.rows_loaded, result.rows_quarantined) == (5, 1, 4)
    assert _quarantine(con) == [(3, "csv_wrong_column_count"), (4, "tokens_not_integer"),
                                (5, "request_id_duplicate"), (7, "tokens_negative")]
    detail = con.execute("select detail from quarantine where rule = 'request_id_duplicate'").fetchone()[0]
    assert detail == "request_id: a already seen at data row 1"
