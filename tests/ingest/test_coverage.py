"""Defaulted columns read back from the ingest ledger (capplan/ingest/coverage.py)."""

from __future__ import annotations

from capplan.config import IngestConfig, SourceConfig
from capplan.db import connect
from capplan.ingest import ingest_paths
from capplan.ingest.coverage import defaulted_columns, unmeasurable


def test_defaulted_columns_per_file_everywhere_or_partly(tmp_path):
    bare = tmp_path / "bare.csv"
    bare.write_text("ts_utc,input_tokens,output_tokens\n2026-11-10T12:00:00Z,1,1\n2026-11-10T12:00:01Z,1,1\n")
    full = tmp_path / "full.csv"
    full.write_text("ts_utc,input_tokens,output_tokens,status\n2026-11-10T13:00:00Z,1,1,500\n")
    con = connect(tmp_path / "c.duckdb")
    assert defaulted_columns(con) == {}  # no ledger yet
    ingest_paths(con, [str(bare)], SourceConfig(name="t"), IngestConfig())
    d = defaulted_columns(con)
    assert d["status"].everywhere and d["status"].rows_loaded == 2
    assert "cannot be measured from these logs" in d["status"].sentence()
    assert [c.column for c in unmeasurable(d, ("status", "ttft_ms"))] == ["status", "ttft_ms"]
    ingest_paths(con, [str(full)], SourceConfig(name="t"), IngestConfig())
    d = defaulted_columns(con)
    assert (d["status"].rows_defaulted, d["status"].rows_loaded, d["status"].everywhere) == (2, 3, False)
    assert "2 of 3 loaded rows" in d["status"].sentence() and unmeasurable(d, ("status",)) == []
    assert d["ttft_ms"].everywhere
    con.close()
