"""capplan.ingest: the readers: CSV, JSON lines, headers, long lines, and the typed fast path (capplan.ingest.readers).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.

The typed fast path: Parquet columns the reader already typed are checked as typed.

The same logical rows written as typed Parquet and as CSV text must load the same rows and
quarantine the same rows under the same rules; typed timestamps (zone-aware, naive, numeric)
convert as their text forms do.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as arrow
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capplan.config import IngestConfig, SourceConfig
from capplan.db import connect
from capplan.ingest import IngestError, load_file


@pytest.mark.parametrize("name, expected_rules, loaded", [
    ("wrong_columns.csv", [(2, "csv_wrong_column_count"), (3, "tokens_not_integer"), (4, "csv_wrong_column_count"),
                           (6, "tokens_negative")], 2),
    ("messy.jsonl", [(2, "json_malformed"), (5, "json_malformed"), (6, "tokens_negative")], 2),
    ("bom.csv", [], 1),
    ("semicolon.csv", [], 2),
    ("good.csv.gz", [], 2),
])
def test_malformed_lines_are_quarantined_at_their_file_row(name, expected_rules, loaded, corpus, load, quarantine):
    result, con = load(corpus / name)
    assert quarantine(con) == expected_rules
    assert result.rows_loaded == loaded and result.rows_read == loaded + len(expected_rules)


def test_very_long_line_loads_and_the_extra_column_stays_out(tmp_path, load):
    path = tmp_path / "long.csv"
    path.write_text("ts_utc,input_tokens,output_tokens,prompt\n2026-10-01T00:00:00Z,1,2," + "x" * 3_000_000 + "\n"
                    "2026-10-01T00:00:01Z,3,4,short\n")
    result, con = load(path)
    assert (result.rows_read, result.rows_loaded) == (2, 2)
    assert "prompt" not in [r[0] for r in con.execute("describe requests").fetchall()]


def test_headerless_csv_is_read_in_preset_order(tmp_path, load):
    path = tmp_path / "nohdr.csv"
    path.write_text("2026-10-01T00:00:00Z,10,20\n2026-10-01T00:00:01Z,11,21\n")
    result, con = load(path)
    assert result.rows_loaded == 2
    assert con.execute("select sum(input_tokens), sum(output_tokens) from requests").fetchall() == [(21, 41)]


# --- the typed fast path: Parquet columns the reader already typed are checked as typed ----------

NOW = datetime(2026, 11, 1, tzinfo=UTC)
CFG = IngestConfig(contract_check="all", allow_all_quarantined=True)  # files of only bad rows load (rule tests)
TYPED_SOURCE = SourceConfig(name="typed")
NOON = datetime(2026, 10, 1, 12)


def _load_typed(path: Path, source: SourceConfig = TYPED_SOURCE):
    con = connect()
    result = load_file(con, path, source, CFG, now_utc=NOW)
    rules = con.execute("select row_number, rule from quarantine order by row_number").fetchall()
    loaded = con.execute("select * exclude (file_id) from requests order by ts_utc, request_id").fetchall()
    return result, rules, loaded, con


def _write(table: arrow.Table, path: Path) -> Path:
    """``table`` as typed Parquet at ``path``, or as CSV text (empty for null) for a .csv path."""
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    else:
        con = duckdb.connect()
        con.register("t", table)
        con.execute(f"copy t to '{path}' (header, timestampformat '%Y-%m-%dT%H:%M:%S.%f+00')")
    return path


TYPED = arrow.table({
    "ts_utc": arrow.array([NOON.replace(tzinfo=UTC)] * 9, arrow.timestamp("us", tz="UTC")),
    "input_tokens": arrow.array([10, -1, None, 5, 7, 8, 9, 1, 2], arrow.int64()),
    "output_tokens": arrow.array([20, 1, 2, 200_000, 1, 1, 1, 1, 3], arrow.int32()),
    "status": arrow.array([200, 200, 200, 200, 999, 503, 200, 200, 200], arrow.int16()),
    "ttft_ms": arrow.array([1.5, 1.0, 1.0, 1.0, 1.0, -3.0, None, 1.0, 2.0], arrow.float64()),
    "latency_ms": arrow.array([10.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 2.0], arrow.float32()),
    "request_id": arrow.array([1, 2, 3, 4, 5, 6, 7, 1, 9], arrow.int64()),
})
#: (data row, rule) of TYPED, as its text form gets them too
TYPED_RULES = [(2, "tokens_negative"), (3, "tokens_missing"), (4, "tokens_above_context_limit"),
               (5, "status_unknown"), (6, "ttft_ms_invalid"), (7, "latency_ms_invalid"), (8, "request_id_duplicate")]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_typed_columns_break_the_same_rules_as_their_text(tmp_path, suffix):
    result, rules, loaded, con = _load_typed(_write(TYPED, tmp_path / f"typed{suffix}"))
    assert rules == TYPED_RULES
    assert (result.rows_read, result.rows_loaded) == (9, 2)
    assert loaded == [(NOON, 10, 20, "default", 200, 1.5, 10.0, "1", None, None),
                      (NOON, 2, 3, "default", 200, 2.0, 2.0, "9", None, None)]
    detail, raw = con.execute("select detail, raw from quarantine where rule = 'tokens_negative'").fetchall()[0]
    assert detail == "input_tokens=-1, output_tokens=1: expected >= 0"
    assert ('"input_tokens":-1' if suffix == ".parquet" else '"input_tokens":"-1"') in raw  # as read


@pytest.mark.parametrize("arrow_type, tz, expected", [
    (arrow.timestamp("us", tz="Europe/Paris"), None, NOON),           # zone-aware: an instant, no zone needed
    (arrow.timestamp("ns"), "Europe/Paris", NOON.replace(hour=10)),   # naive: wall time in the source's zone
    (arrow.timestamp("ms"), None, NOON),                               # naive, default UTC
    (arrow.date32(), "America/New_York", datetime(2026, 10, 1, 4)),   # a date: its midnight, local
])
def test_typed_timestamps_convert_like_their_text(tmp_path, arrow_type, tz, expected):
    value = (NOON.date() if arrow_type == arrow.date32() else
             NOON.replace(tzinfo=UTC) if arrow_type.tz else NOON)
    path = _write(arrow.table({"ts_utc": arrow.array([value], arrow_type), "input_tokens": [1], "output_tokens": [2]}),
                  tmp_path / "ts.parquet")
    _, rules, loaded, _ = _load_typed(path, SourceConfig(name="t", timezone=tz))
    assert rules == [] and loaded[0][0] == expected


@pytest.mark.parametrize("unit, value, rule", [
    ("s", 1790000001.5, None), ("ms", 1790000001500, None), (None, 1790000001, "timestamp_unparseable")])
def test_typed_numeric_timestamps_need_a_unit(tmp_path, unit, value, rule):
    path = _write(arrow.table({"ts_utc": [value], "input_tokens": [1], "output_tokens": [2]}), tmp_path / "e.parquet")
    _, rules, loaded, _ = _load_typed(path, SourceConfig(name="t", timestamp_unit=unit))
    assert rules == ([] if rule is None else [(1, rule)])
    if rule is None:
        assert loaded[0][0] == datetime(2026, 9, 21, 14, 13, 21, 500000)


def test_typed_null_timestamp_is_missing_and_typed_fraction_is_not_integer(tmp_path):
    path = _write(arrow.table({"ts_utc": arrow.array([None, NOON], arrow.timestamp("us")), "input_tokens": [1.0, 2.5],
                            "output_tokens": [1, 1]}), tmp_path / "n.parquet")
    _, rules, _, con = _load_typed(path)
    assert rules == [(1, "timestamp_missing"), (2, "tokens_not_integer")]
    assert con.execute("select detail from quarantine where row_number = 2").fetchall()[0][0] == (
        "input_tokens=2.5, output_tokens=1: expected integers")


_number = st.one_of(st.none(), st.integers(-5, 200_000), st.floats(-5, 5, allow_nan=False).map(lambda x: round(x, 1)))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_number, _number, st.sampled_from([200, 99, 404, 600]), _number),
                     min_size=1, max_size=12))
def test_typed_and_text_forms_always_agree(tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("agree")
    columns = list(zip(*rows))
    table = arrow.table({"ts_utc": arrow.array([NOON.replace(tzinfo=UTC)] * len(rows), arrow.timestamp("us", tz="UTC")),
                      "input_tokens": arrow.array(columns[0], arrow.float64()),
                      "output_tokens": arrow.array(columns[1], arrow.float64()),
                      "status": arrow.array(columns[2], arrow.int32()), "ttft_ms": arrow.array(columns[3], arrow.float64())})
    typed, text = (_load_typed(_write(table, folder / f"r{suffix}")) for suffix in (".parquet", ".csv"))
    assert typed[1] == text[1] and typed[2] == text[2]
    assert typed[0].rows_read == typed[0].rows_loaded + typed[0].rows_quarantined == len(rows)
    assert all(not math.isnan(v) for r in typed[2] for v in r[1:3])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_infinite_timestamps_are_no_arrival_time(tmp_path, suffix):
    # text 'infinity' parses as a timestamp; typed Parquet columns can hold it: neither is an arrival
    path = tmp_path / f"inf{suffix}"
    if suffix == ".csv":
        path.write_text("ts_utc,input_tokens,output_tokens\ninfinity,1,1\n-infinity,1,1\n2026-10-01T00:00:00Z,1,1\n")
    else:
        duckdb.sql("copy (select * from (values ('infinity'::timestamptz, 1, 1), ('-infinity'::timestamptz, 1, 1), "
                   "('2026-10-01 00:00:00+00'::timestamptz, 1, 1)) as t(ts_utc, input_tokens, output_tokens)) "
                   f"to '{path}' (format parquet)")
    result, rules, loaded, con = _load_typed(path)
    assert rules == [(1, "timestamp_unparseable"), (2, "timestamp_unparseable")]
    assert [row[0] for row in loaded] == [datetime(2026, 10, 1)]
    details = [d for (d,) in con.execute("select detail from quarantine order by row_number").fetchall()]
    assert all(d.startswith("ts_utc: ") and "infinity" in d for d in details), details


def _jsonl(path: Path, rows: int, late_key: str, from_line: int) -> Path:
    """JSON lines whose key ``late_key`` first appears at line ``from_line`` (1-based)."""
    with open(path, "w") as f:
        for i in range(rows):
            row = {"ts_utc": f"2026-10-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z", "input_tokens": 1, "output_tokens": 2}
            row.pop(late_key, None)
            if i + 1 >= from_line:
                row[late_key] = "late-model" if late_key == "model" else 3
            f.write(json.dumps(row) + "\n")
    return path


def test_json_keys_that_first_appear_late_are_read(tmp_path, load, quarantine):
    # issue 20, item 5: 1,500 rows all got model `default` when `model` starts at line 1,200
    result, con = load(_jsonl(tmp_path / "late.jsonl", 1500, "model", 1200))
    assert (result.rows_read, result.rows_loaded, result.defaulted_columns) == (1500, 1500, ("status", "ttft_ms",
            "latency_ms", "request_id", "tenant", "zone"))
    assert con.execute("select model, count(*) from requests group by model order by model").fetchall() == [
        ("default", 1199), ("late-model", 301)]
    # ... and a required key absent from the first 1,000 lines refused the file
    result, con = load(_jsonl(tmp_path / "late_required.jsonl", 1500, "output_tokens", 1200))
    assert (result.rows_read, result.rows_loaded, result.rows_quarantined) == (1500, 301, 1199)
    assert {rule for _, rule in quarantine(con)} == {"tokens_missing"}


def test_a_required_key_no_line_has_is_still_refused_naming_the_keys_found(tmp_path, load):
    path = _jsonl(tmp_path / "never.jsonl", 20, "output_tokens", 10_000)
    with pytest.raises(IngestError, match=r"missing required column output_tokens .*found columns \['input_tokens', 'ts_utc'\]"):
        load(path)


def test_duplicate_json_keys_are_a_whole_file_error_naming_the_key_and_line(tmp_path, load):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"ts_utc": "2026-10-01T00:00:00Z", "input_tokens": 1, "output_tokens": 1}\n'
                    '{"ts_utc": "2026-10-01T00:00:01Z", "input_tokens": 1, "output_tokens": 1, "input_tokens": 5}\n')
    with pytest.raises(IngestError, match=r"dup.jsonl: line 2: duplicate key 'input_tokens'; expected each key once"):
        load(path)


def test_a_csv_line_over_64_mib_is_quarantined_with_its_line_number(tmp_path, load, quarantine):
    # issue 20, item 10: "CSV Error on Line: 1" refused the whole file though the long line is line 3
    path = tmp_path / "long.csv"
    path.write_text("ts_utc,input_tokens,output_tokens,model\n2026-10-01T00:00:00Z,1,1,a\n"
                    f"2026-10-01T00:00:01Z,1,1,{'x' * (65 << 20)}\n2026-10-01T00:00:02Z,1,1,c\n")
    result, con = load(path)
    assert (result.rows_read, result.rows_loaded, result.rows_quarantined) == (3, 2, 1)
    assert quarantine(con) == [(2, "line_too_long")]  # data row 2 is line 3


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_column_named_twice_is_a_whole_file_error_naming_it(tmp_path, fmt, load):
    path = tmp_path / f"dup.{fmt}"
    if fmt == "csv":
        path.write_text("ts_utc,input_tokens,output_tokens,input_tokens\n2026-10-01T00:00:00Z,1,1,5\n")
    else:
        pq.write_table(arrow.table([arrow.array(["2026-10-01T00:00:00Z"]), arrow.array([1]), arrow.array([1]),
                                    arrow.array([5])], names=["ts_utc", "input_tokens", "output_tokens", "input_tokens"]),
                       path)
    with pytest.raises(IngestError, match="names column 'input_tokens' more than once; expected each column once"):
        load(path)


# --- issue 20, item 15: what DuckDB's CSV reader accepts silently is quarantined with its line


def _cli_ingest(tmp_path: Path, text: str, *args: str) -> tuple[int, list[dict], duckdb.DuckDBPyConnection]:
    from typer.testing import CliRunner

    from capplan.cli import app

    (tmp_path / "f.csv").write_text(text)
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "f.csv"), "--db", str(tmp_path / "f.duckdb"), "--json",
                                      *args])
    return result.exit_code, json.loads(result.stdout), duckdb.connect(str(tmp_path / "f.duckdb"))


def _quarantined(con) -> list[tuple[int, str, str]]:
    return con.execute("select row_number, rule, detail from quarantine order by row_number").fetchall()


@pytest.mark.parametrize("extra", [",", ",,", ',""', ", ", ",x"])
def test_trailing_extra_fields_quarantine_their_row_with_its_line(tmp_path, extra):
    """DuckDB drops trailing empty fields (``a,b,c,,``) without a word; the row is quarantined, data row 2
    (line 3), and the others load: rows in = loaded + quarantined."""
    code, (s,), con = _cli_ingest(tmp_path, "ts_utc,input_tokens,output_tokens,model\n2026-11-10T12:00:00Z,1,1,a\n"
                                            f"2026-11-10T12:00:01Z,1,1,b{extra}\n2026-11-10T12:00:02Z,2,2,\n")
    assert code == 0 and (s["rows_read"], s["rows_loaded"], s["rows_quarantined"]) == (3, 2, 1)
    ((row, rule, detail),) = _quarantined(con)
    fields = 4 + extra.count(",")
    assert (row, rule) == (2, "csv_wrong_column_count")
    assert detail.startswith(f"line has {fields} fields; expected the header's 4 (beyond them: ")
    # the empty last field of row 3 is an empty model, not a missing field
    assert con.execute("select model from requests order by ts_utc").fetchall() == [("a",), ("default",)]


def test_a_short_line_is_quarantined_not_padded(tmp_path):
    code, (s,), con = _cli_ingest(tmp_path, "ts_utc,input_tokens,output_tokens,request_id\n"
                                            "2026-11-10T12:00:00Z,1,1,a\n2026-11-10T12:00:01Z,1,1\n")
    assert code == 0 and (s["rows_loaded"], s["rows_quarantined"]) == (1, 1)
    assert _quarantined(con) == [(2, "csv_wrong_column_count", "line has 3 fields; expected the header's 4")]


def test_every_line_longer_than_the_header_is_a_file_failure_naming_the_header(tmp_path):
    code, (s,), _ = _cli_ingest(tmp_path, "ts_utc,input_tokens,output_tokens\n" + "".join(
        f"2026-11-10T12:00:0{i}Z,1,1,,\n" for i in range(5)))
    assert code == 1 and s["status"] == "all_quarantined" and s["rows_read"] == s["rows_quarantined"] == 5
    assert "csv_wrong_column_count 5" in s["message"] and "Fix the file's header" in s["message"]


def test_an_unterminated_quote_is_quarantined_not_loaded_literally(tmp_path):
    code, (s,), con = _cli_ingest(tmp_path, "ts_utc,input_tokens,output_tokens,model\n2026-11-10T12:00:00Z,1,1,a\n"
                                            '2026-11-10T12:00:01Z,1,1,"b\n2026-11-10T12:00:02Z,2,2,c\n')
    assert code == 0 and (s["rows_read"], s["rows_loaded"], s["rows_quarantined"]) == (3, 2, 1)
    ((row, rule, detail),) = _quarantined(con)
    assert (row, rule) == (2, "csv_unbalanced_quote") and detail.startswith('model: "b has an odd number')
    assert con.execute("select list(model order by ts_utc) from requests").fetchone() == (["a", "c"],)


def test_an_escaped_quote_in_a_quoted_file_is_a_valid_field(tmp_path):
    # "acme ""beta" is the text acme "beta: one double quote, correctly escaped (RFC 4180), not an unterminated one
    code, (s,), con = _cli_ingest(tmp_path, "ts_utc,input_tokens,output_tokens,model\n"
                                            '2026-11-10T12:00:00Z,1,1,"acme ""beta"\n2026-11-10T12:00:01Z,1,1,c\n')
    assert code == 0 and (s["rows_read"], s["rows_loaded"], s["rows_quarantined"]) == (2, 2, 0)
    assert con.execute("select list(model order by ts_utc) from requests").fetchone() == (['acme "beta', "c"],)


def test_an_unterminated_quote_in_a_quoted_file_names_the_broken_quoting(tmp_path):
    lines = [f'"2026-11-10T12:00:{i:02d}Z",1,1,"m{i}"' for i in range(40)]
    lines[20] = '"2026-11-10T12:00:20Z",1,1,"m20'
    code, (s,), _ = _cli_ingest(tmp_path, '"ts_utc","input_tokens","output_tokens","model"\n' + "\n".join(lines) + "\n")
    assert code == 1 and s["status"] == "error"
    assert "missing required column" in s["message"] and "quoting is broken" in s["message"]


def test_quoted_line_breaks_still_load_with_the_padded_read(tmp_path):
    code, (s,), con = _cli_ingest(tmp_path, 'ts_utc,input_tokens,output_tokens,tenant\n2026-11-10T12:00:00Z,1,1,"a\nb"\n'
                                            "2026-11-10T12:00:01Z,1,1,c\n")
    assert code == 0 and (s["rows_loaded"], s["rows_quarantined"]) == (2, 0)
    assert con.execute("select list(tenant order by ts_utc) from requests").fetchone() == (["a\nb", "c"],)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=12))
def test_rows_in_equal_loaded_plus_quarantined_whatever_the_field_counts(tmp_path_factory, lines):
    """Each line has 1–3 trailing extra delimiters (or none: 0), or loses its last field: every line is a row,
    loaded or quarantined, and exactly the lines of another field count are quarantined. Two well-formed
    lines first: from a header and one short line alone, DuckDB's sniffer takes the header for data."""
    folder = tmp_path_factory.mktemp("fields")
    lines = [(0, False), (0, False), *lines]
    text = "ts_utc,input_tokens,output_tokens,model\n" + "".join(
        f"2026-11-10T12:00:{i:02d}Z,1,1" + ("" if short else ",m" + "," * extra) + "\n"
        for i, (extra, short) in enumerate(lines))
    (folder / "f.csv").write_text(text)
    result = load_file(connect(), folder / "f.csv", SourceConfig(name="t"),
                       IngestConfig(allow_all_quarantined=True), now_utc=datetime(2026, 11, 11, tzinfo=UTC))
    bad = sum(1 for extra, short in lines if short or extra)
    assert (result.rows_read, result.rows_loaded, result.rows_quarantined) == (len(lines), len(lines) - bad, bad)
