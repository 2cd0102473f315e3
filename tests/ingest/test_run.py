"""capplan.ingest: a run over many files: one result per file, statuses (capplan.ingest.run).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from capplan.db import connect
from capplan.ingest import FileRefused, IngestError, ingest_paths
from capplan.ingest.run import failure_status


def test_other_files_of_the_run_still_load_and_results_are_per_file(corpus, now, cfg_all, canonical):
    con = connect()
    results = ingest_paths(con, [str(corpus / "bom.csv"), str(corpus / "empty.csv"), str(corpus / "nope*.csv"),
                                 str(corpus / "azure.csv")], canonical, cfg_all, now_utc=now)
    assert [(Path(r.path).name, r.status) for r in results] == [
        ("nope*.csv", "error"), ("bom.csv", "loaded"), ("empty.csv", "error"), ("azure.csv", "error")]
    assert con.execute("select count(*) from requests").fetchall() == [(1,)]


def test_a_changed_file_is_refused_and_other_whole_file_errors_are_errors(tmp_path, cfg_all, canonical, now):
    con = connect()
    path = tmp_path / "day.csv"
    path.write_text("ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,1,2\n")
    assert [r.status for r in ingest_paths(con, [path], canonical, cfg_all, now_utc=now)] == ["loaded"]
    path.write_text("ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,5,5\n")
    [refused] = ingest_paths(con, [path], canonical, cfg_all, now_utc=now)
    assert (refused.status, refused.rows_read) == ("refused", 0) and "content changed" in refused.message


@pytest.mark.parametrize("exc, status", [
    (FileRefused("x.csv: content changed"), "refused"),
    (IngestError("x.csv: refusing to guess the delimiter"), "error"),  # words in a message decide nothing
])
def test_the_status_of_a_failed_file_comes_from_the_exception_type(exc, status):
    assert failure_status(exc) == status
