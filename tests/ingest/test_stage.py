"""capplan.ingest: the staging pass: every rule, timestamps, reconciliation, row numbers (capplan.ingest.stage).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from datetime import UTC, datetime

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from capplan.cli import app
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


# --- issue 20: values DuckDB or pandas cannot hold are quarantined with a rule and row, never a whole-file error


def _cli_ingest(tmp_path, name: str, text: str, *args: str) -> tuple[int, list[dict], duckdb.DuckDBPyConnection]:
    """``capplan ingest <file> --db <tmp> --json [args]``: exit code, the JSON summary, the database."""
    path = tmp_path / name
    path.write_text(text)
    db = tmp_path / (name + ".duckdb")
    result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(db), "--json", *args])
    return result.exit_code, json.loads(result.stdout), duckdb.connect(str(db))


def _rules(con) -> list[tuple[int, str]]:
    return [tuple(r) for r in con.execute("select row_number, rule from quarantine order by row_number").fetchall()]


def test_a_timestamp_before_1677_is_quarantined_and_later_files_still_load(tmp_path):
    (tmp_path / "y.csv").write_text("ts_utc,input_tokens,output_tokens\n0001-01-01T00:00:00Z,1,1\n"
                                    "2026-10-10T12:00:00Z,1,1\n0000-01-01 00:00:00,1,1\n1677-09-21 00:12:43,1,1\n")
    (tmp_path / "z.csv").write_text("ts_utc,input_tokens,output_tokens\n2026-10-10T12:00:00Z,2,2\n")
    db = tmp_path / "y.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "y.csv"), str(tmp_path / "z.csv"), "--db", str(db),
                                      "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert [(s["status"], s["rows_read"], s["rows_loaded"], s["rows_quarantined"]) for s in summary] == [
        ("loaded", 4, 1, 3), ("loaded", 1, 1, 0)]
    con = duckdb.connect(str(db))
    assert _rules(con) == [(1, "timestamp_out_of_range"), (3, "timestamp_out_of_range"),
                           (4, "timestamp_out_of_range")]
    assert "outside 1677-09-21..2262-04-11" in con.execute("select detail from quarantine limit 1").fetchone()[0]


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e400", "9223372036854775808",
                                   "18446744073709551616", "1e300"])
def test_one_non_finite_or_huge_token_value_quarantines_its_row_only(tmp_path, value):
    good = "".join(f"2026-10-10T12:00:{s:02d}Z,{s},1\n" for s in range(10))
    code, summary, con = _cli_ingest(tmp_path, "n.csv", "ts_utc,input_tokens,output_tokens\n" + good
                                     + f"2026-10-10T12:01:00Z,{value},1\n")
    assert code == 0 and (summary[0]["rows_read"], summary[0]["rows_loaded"], summary[0]["rows_quarantined"]) == (
        11, 10, 1)
    (row, rule), = _rules(con)
    assert row == 11 and rule in ("tokens_not_integer", "tokens_above_context_limit", "tokens_negative")


def test_json_lines_1e400_is_quarantined(tmp_path):
    code, summary, con = _cli_ingest(
        tmp_path, "j.jsonl", '{"ts_utc":"2026-10-10T12:00:00Z","input_tokens":1e400,"output_tokens":1}\n'
                             '{"ts_utc":"2026-10-10T12:00:00Z","input_tokens":1,"output_tokens":1}\n')
    assert code == 0 and summary[0]["rows_loaded"] == 1
    assert _rules(con) == [(1, "tokens_not_integer")]


def test_parquet_nan_and_uint64_tokens_are_quarantined(tmp_path):
    path = tmp_path / "p.parquet"
    con = duckdb.connect()
    con.execute("copy (select * from (values (timestamptz '2026-10-10 12:00:00+00', 1::double, 1::ubigint), "
                "(timestamptz '2026-10-10 12:00:01+00', 'nan'::double, 1::ubigint), "
                "(timestamptz '2026-10-10 12:00:02+00', 1::double, 18446744073709551615::ubigint), "
                "(timestamptz '2026-10-10 12:00:03+00', 'inf'::double, 1::ubigint)) "
                "t(ts_utc, input_tokens, output_tokens)) to '" + str(path) + "' (format parquet)")
    result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(tmp_path / "p.duckdb"), "--json"])
    assert result.exit_code == 0, result.output
    s = json.loads(result.stdout)[0]
    assert (s["rows_read"], s["rows_loaded"], s["rows_quarantined"]) == (4, 1, 3)
    assert _rules(duckdb.connect(str(tmp_path / "p.duckdb"))) == [
        (2, "tokens_not_integer"), (3, "tokens_above_context_limit"), (4, "tokens_not_integer")]


def test_tokens_beyond_the_integer_columns_with_a_huge_context_limit(tmp_path):
    config = tmp_path / "capplan.toml"
    config.write_text("[ingest]\ncontext_limit_tokens = 100000000000\n")
    code, summary, con = _cli_ingest(tmp_path, "c.csv", "ts_utc,input_tokens,output_tokens\n"
                                     "2026-10-10T12:00:00Z,3000000000,1\n2026-10-10T12:00:01Z,2147483647,1\n",
                                     "--config", str(config))
    assert code == 0 and (summary[0]["rows_loaded"], summary[0]["rows_quarantined"]) == (1, 1)
    assert _rules(con) == [(1, "tokens_out_of_range")]
    assert con.execute("select input_tokens from requests").fetchall() == [(2147483647,)]


@pytest.mark.parametrize("column", ["latency_ms", "ttft_ms"])
@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "Infinity"])
def test_non_finite_latency_or_ttft_is_quarantined_and_the_profile_runs(tmp_path, column, value):
    code, summary, con = _cli_ingest(tmp_path, "l.csv", f"ts_utc,input_tokens,output_tokens,{column}\n"
                                     f"2026-10-10T12:00:00Z,1,1,100\n2026-10-10T12:00:01Z,1,1,{value}\n")
    assert code == 0 and (summary[0]["rows_loaded"], summary[0]["rows_quarantined"]) == (1, 1)
    assert _rules(con) == [(2, f"{column}_invalid")]
    con.close()
    profile = CliRunner().invoke(app, ["profile", "--db", str(tmp_path / "l.csv.duckdb")])
    assert profile.exit_code == 0, profile.output


@pytest.mark.parametrize("column", ["latency_ms", "ttft_ms"])
@pytest.mark.parametrize("value", ["1e300", "86400000.5", "31536000000"])
def test_a_huge_finite_latency_or_ttft_is_quarantined_and_profile_sums_stay_finite(tmp_path, column, value):
    """Above MAX_DURATION_MS (one day = 86,400,000 ms) a duration is a logging error, not a measurement.

    Hand check of the kept rows: latency sum 100 + 86,400,000 = 86,400,100 ms over 2 rows (the bound itself loads).
    """
    code, summary, con = _cli_ingest(tmp_path, "l.csv", f"ts_utc,input_tokens,output_tokens,{column}\n"
                                     f"2026-10-10T12:00:00Z,1,1,100\n2026-10-10T12:00:01Z,1,1,{value}\n"
                                     f"2026-10-10T12:00:02Z,1,1,86400000\n")
    assert code == 0 and (summary[0]["rows_read"], summary[0]["rows_loaded"], summary[0]["rows_quarantined"]) == (
        3, 2, 1)
    assert _rules(con) == [(2, f"{column}_invalid")]
    assert "from 0 to 86400000 ms (one day)" in con.execute("select detail from quarantine").fetchone()[0]
    con.close()
    profile = CliRunner().invoke(app, ["profile", "--db", str(tmp_path / "l.csv.duckdb"), "--json"])
    assert profile.exit_code == 0, profile.output
    sums = duckdb.connect(str(tmp_path / "l.csv.duckdb"), read_only=True).execute(
        f"select {column.removesuffix('_ms')}_ms_sum from fct_traffic_hourly where model = '__all__'").fetchone()
    assert sums == (86_400_100.0,)


def test_a_huge_parquet_latency_is_quarantined(tmp_path):
    path = tmp_path / "p.parquet"
    duckdb.connect().execute("copy (select * from (values (timestamptz '2026-10-10 12:00:00+00', 1, 1, 5.0), "
                             "(timestamptz '2026-10-10 12:00:01+00', 1, 1, 1e300)) "
                             "t(ts_utc, input_tokens, output_tokens, latency_ms)) to '" + str(path) + "' (format parquet)")
    result = CliRunner().invoke(app, ["ingest", str(path), "--db", str(tmp_path / "p.duckdb"), "--json"])
    assert result.exit_code == 0, result.output
    assert _rules(duckdb.connect(str(tmp_path / "p.duckdb"))) == [(2, "latency_ms_invalid")]


def test_token_sums_at_the_integer_limit_do_not_overflow(tmp_path):
    """Tokens are at most 2^31 - 1 each (INTEGER columns); the hourly sums are BIGINT: 3 x 2,147,483,647 =
    6,442,450,941, beyond 32 bits, summed exactly."""
    config = tmp_path / "capplan.toml"
    config.write_text("[ingest]\ncontext_limit_tokens = 100000000000\n")
    code, summary, con = _cli_ingest(tmp_path, "c.csv", "ts_utc,input_tokens,output_tokens\n" + "".join(
        f"2026-10-10T12:00:0{s}Z,2147483647,2147483647\n" for s in range(3)), "--config", str(config))
    assert code == 0 and summary[0]["rows_loaded"] == 3
    con.close()
    assert CliRunner().invoke(app, ["profile", "--db", str(tmp_path / "c.csv.duckdb")]).exit_code == 0
    assert duckdb.connect(str(tmp_path / "c.csv.duckdb"), read_only=True).execute(
        "select input_tokens_sum, output_tokens_sum from fct_traffic_hourly where model = '__all__'"
    ).fetchone() == (6_442_450_941, 6_442_450_941)


@pytest.mark.parametrize("timezone", ["UTC", "Europe/Paris"])
def test_special_timestamp_words_are_unparseable_not_1970(tmp_path, timezone):
    words = ["epoch", " EPOCH ", "Epoch", "infinity", "-infinity", "allballs", "now", "today", "tomorrow",
             "yesterday"]
    code, summary, con = _cli_ingest(tmp_path, "e.csv", "ts_utc,input_tokens,output_tokens\n"
                                     + "".join(f"{w},1,1\n" for w in words) + "2026-10-10 12:00:00,1,1\n",
                                     "--timezone", timezone)
    assert code == 0 and (summary[0]["rows_loaded"], summary[0]["rows_quarantined"]) == (1, len(words))
    assert _rules(con) == [(i, "timestamp_unparseable") for i in range(1, len(words) + 1)]
    # a real 1970 timestamp (digits) still parses; it loads with an implausible-range note
    code, summary, _ = _cli_ingest(tmp_path, "t.csv", "ts_utc,input_tokens,output_tokens\n1970-01-01T00:00:00Z,1,1\n")
    assert code == 0 and summary[0]["rows_loaded"] == 1 and "before 2000-01-01" in summary[0]["notes"][0]
