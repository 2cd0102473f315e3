"""capplan.ingest: file formats and compressions (capplan.ingest.formats).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

import csv

import pytest

from capplan.db import connect
from capplan.ingest import detect_format


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
