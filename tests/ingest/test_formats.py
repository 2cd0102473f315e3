"""capplan.ingest: file formats and compressions (capplan.ingest.formats).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

import csv

import pytest

from capplan.db import connect
from capplan.ingest import IngestError, detect_format


@pytest.mark.parametrize("fmt", ["parquet", "jsonl.gz", "csv.zst"])
def test_every_format_and_compression_loads_the_same_rows(tmp_path, fmt, corpus, load, quarantine):
    con = connect()
    src = corpus / "rules.csv"
    out = tmp_path / f"rules.{fmt}"
    kind, compression = detect_format(out)
    option = {"parquet": "format parquet", "jsonl": "format json"}.get(kind, "format csv, header")
    option += f", compression {compression}" if compression else ""
    con.execute(f"copy (select * from read_csv(?, all_varchar=true)) to '{out}' ({option})", [str(src)])
    result, con2 = load(out)
    assert (result.rows_read, result.rows_loaded) == (14, 2)
    # JSON drops empty values to null, so row 10 (empty output_tokens) is still tokens_missing
    assert [rule for _, rule in quarantine(con2)][:4] == [
        "timestamp_missing", "timestamp_unparseable", "timestamp_future", "tokens_negative"]


TEXT = "ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,1,1\n"


@pytest.mark.parametrize(("data", "message"), [
    (TEXT.encode("utf-16"), r"file is not UTF-8 text \(looks like UTF-16: it starts with the byte-order mark"),
    (TEXT.encode("utf-16-be"), r"file is not UTF-8 text \(looks like UTF-16 big-endian"),
    (TEXT.encode("utf-16-le"), r"file is not UTF-8 text \(looks like UTF-16 little-endian"),
    (b"\0" * 30_000, r"file is not UTF-8 text \(holds NUL bytes, the first at byte 0\); expected UTF-8$"),
    (("a," * 100_000 + "b\n1\n").encode(), r"line 1 has 100,001 or more fields; expected at most 4,096 columns"),
], ids=["utf-16-bom", "utf-16-be", "utf-16-le", "nul", "100k-columns"])
def test_text_that_is_not_readable_utf8_csv_is_a_short_whole_file_error(tmp_path, data, message, load):
    # issue 20, item 15: UTF-16 and NUL files said "missing required column" (25 KB); 100k columns ran out of memory
    path = tmp_path / "bad.csv"
    path.write_bytes(data)
    with pytest.raises(IngestError, match=message) as error:
        load(path)
    assert len(str(error.value)) < 300
