"""capplan.ingest: the duplicate-id rule: within a file, against earlier files, the window (capplan.ingest.duplicates).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

import duckdb

from capplan.config import IngestConfig, SourceConfig
from capplan.db import connect
from capplan.ingest import load_file


def test_duplicate_against_an_earlier_file_is_quarantined(tmp_path, corpus, load):
    con = connect()
    load(corpus / "rules.csv", con=con)
    again = tmp_path / "later.csv"
    again.write_text("ts_utc,input_tokens,output_tokens,request_id\n2026-10-02T00:00:00Z,1,1,r1\n"
                     "2026-10-02T00:00:01Z,1,1,new\n")
    result, _ = load(again, con=con)
    assert (result.rows_loaded, result.rows_quarantined) == (1, 1)
    assert con.execute("select detail from quarantine where path = ?", [str(again)]).fetchall()[0][0].endswith(
        "in an earlier file")


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


def test_messy_csv_quarantines_exactly_what_the_three_pass_version_did(tmp_path, load):
    """Every quarantine row (number, rule, detail, raw) and every loaded row, as the version that
    read the file three times (commit 0ed8267) gave them, but for one fixed detail (row 5)."""
    con = connect()
    earlier = tmp_path / "earlier.csv"
    earlier.write_text("ts_utc,input_tokens,output_tokens,request_id\n2026-10-01T00:00:00Z,1,1,e1\n"
                       "2026-10-01T00:00:01Z,1,1,e2\n")
    load(earlier, con=con)
    path = tmp_path / "messy.csv"
    path.write_text(MESSY_IDS)
    result, _ = load(path, con=con)
    assert (result.rows_read, result.rows_loaded, result.rows_quarantined) == (13, 4, 9)
    rows = con.execute("select row_number, rule, detail, raw from quarantine where file_id = ? order by row_number",
                       [result.file_id]).fetchall()

    def raw(second, tokens, request_id):
        return (f'{{"ts_utc":"2026-10-01T00:00:{second:02d}Z","input_tokens":"{tokens}","output_tokens":"1",'
                f'"request_id":"{request_id}"}}')
    short = "line has 3 fields; expected the header's 4"
    long = 'line has 5 fields; expected the header\'s 4 (beyond them: ["extra"]; empty fields count too)'
    assert rows == [
        (1, "tokens_negative", "input_tokens=-1, output_tokens=1: expected >= 0", raw(0, -1, "a")),
        (2, "request_id_duplicate", "request_id: a already seen at data row 1", raw(1, 1, "a")),
        (3, "csv_wrong_column_count", short, raw(2, 1, "x").replace('"x"', "null")),
        # the three-pass version named row 3 here (the scan's count, before the rejected line 3)
        (5, "request_id_duplicate", "request_id: b already seen at data row 4", raw(4, 1, "b")),
        (6, "tokens_not_integer", "input_tokens=x, output_tokens=1: expected integers", raw(5, "x", "e1")),
        (7, "request_id_duplicate", "request_id: e1 already seen in an earlier file", raw(6, 1, "e1")),
        (8, "request_id_duplicate", "request_id: a already seen at data row 1", raw(7, 1, "a")),
        # the fields as read (a row whose fields do not split right has no id: not c's first occurrence)
        (9, "csv_wrong_column_count", long, raw(8, 1, "c")),
        (13, "request_id_duplicate", "request_id: e2 already seen in an earlier file", raw(12, 1, "e2 "))]
    assert con.execute("select request_id, second(ts_utc) from request_rows where file_id = ? and rule is null order by rowid",
                       [result.file_id]).fetchall() == [("b", 3), ("c", 9), (None, 10), (None, 11)]


def test_an_earlier_files_id_is_a_duplicate_only_within_the_window(tmp_path, load):
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
        load(first, cfg=cfg, con=con)
        result, _ = load(later, cfg=cfg, con=con)
        ids = con.execute("select raw->>'request_id' from quarantine where path = ? order by 1",
                          [str(later)]).fetchall()
        assert [i for (i,) in ids] == quarantined and result.rows_loaded == 2 - len(quarantined)


def test_a_whole_file_of_duplicates_stays_within_the_memory_limit(tmp_path, now):
    # issue 20, item 9: the same 5.4 M requests as CSV then Parquet (same ids) failed with "Out of Memory
    # Error ... 1.0 GiB": marking the duplicates was an update held in memory until commit. The same
    # failure at 400 k rows under a 64 MiB limit; every row of the second file is a duplicate.
    rows = 400_000
    query = (f"select timestamp '2026-10-01' + to_microseconds(i * 400000) as ts_utc, i % 1000 as input_tokens, "
             f"i % 300 as output_tokens, 'req-' || lpad(i::varchar, 12, '0') as request_id, 'm' || (i % 3) as model "
             f"from range({rows}) t(i)")
    maker = duckdb.connect()
    for name, option in (("b.csv", "header"), ("b.parquet", "format parquet")):
        maker.execute(f"copy ({query}) to '{tmp_path / name}' ({option})")
    con, cfg, source = connect(), IngestConfig(memory_limit_mib=64), SourceConfig(name="t")
    first = load_file(con, tmp_path / "b.csv", source, cfg, now_utc=now)
    again = load_file(con, tmp_path / "b.parquet", source, cfg, now_utc=now)
    assert (first.rows_read, first.rows_loaded) == (rows, rows)
    assert (again.status, again.rows_read, again.rows_loaded, again.rows_quarantined) == ("loaded", rows, 0, rows)
    assert con.execute("select count(*), count(distinct row_number), min(row_number), max(row_number), "
                       "bool_and(rule = 'request_id_duplicate') from quarantine where file_id = ?",
                       [again.file_id]).fetchone() == (rows, rows, 1, rows, True)
    assert con.execute("select count(*), sum(input_tokens) from requests").fetchone() == (
        rows, sum(i % 1000 for i in range(rows)))
