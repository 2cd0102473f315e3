"""capplan.ingest: lines the CSV reader rejected or skipped, at their file rows (capplan.ingest.rejects).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_rows_after_an_empty_csv_line_keep_their_file_row_numbers(tmp_path, eol, load, quarantine):
    # data rows: 1 a, 2 empty (skipped by the reader), 3 too many columns (rejected by the reader),
    # 4 bad tokens, 5 a again (a duplicate of row 1), 6 empty, 7 negative tokens
    lines = ["ts_utc,input_tokens,output_tokens,request_id", "2026-10-01T00:00:00Z,1,1,a", "",
             "2026-10-01T00:00:01Z,1,1,b,EXTRA", "2026-10-01T00:00:02Z,x,1,c", "2026-10-01T00:00:03Z,1,1,a",
             "", "2026-10-01T00:00:04Z,-1,1,d"]
    path = tmp_path / "empty-lines.csv"
    path.write_bytes(eol.join(lines).encode() + eol.encode())
    result, con = load(path)
    assert (result.rows_read, result.rows_loaded, result.rows_quarantined) == (5, 1, 4)
    assert quarantine(con) == [(3, "csv_wrong_column_count"), (4, "tokens_not_integer"),
                                (5, "request_id_duplicate"), (7, "tokens_negative")]
    detail = con.execute("select detail from quarantine where rule = 'request_id_duplicate'").fetchone()[0]
    assert detail == "request_id: a already seen at data row 1"
