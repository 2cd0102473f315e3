"""capplan.ingest: one file's transaction: whole-file errors, idempotence, refuse/replace, ledger (capplan.ingest.load).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

import gzip
import shutil

import pytest

from capplan.db import connect
from capplan.ingest import FileRefused, IngestError, load_file


@pytest.mark.parametrize("name, message", [
    ("empty.csv", r"empty file \(0 bytes\)"),
    ("header_only.csv", "no data rows"),
    ("missing_column.csv", r"missing required column output_tokens .*found columns \['ts_utc', 'input_tokens'"),
    ("wrong_delimiter.csv", r"one column only: wrong delimiter\?"),
    ("latin1.csv", "line 2: bytes that are not valid UTF-8"),
    ("truncated.csv.gz", "truncated gzip"),
    ("not_parquet.parquet", "not a parquet file"),
])
def test_whole_file_problems_name_the_file_and_load_nothing(name, message, corpus, now, cfg_all, canonical):
    con = connect()
    with pytest.raises(IngestError, match=message) as err:
        load_file(con, corpus / name, canonical, cfg_all, now_utc=now)
    assert str(corpus / name) in str(err.value)
    assert con.execute("select count(*) from requests").fetchall() == [(0,)]
    assert con.execute("select count(*) from ingest_ledger").fetchall() == [(0,)]


def test_reingesting_the_same_content_is_a_no_op(tmp_path, corpus, load):
    con = connect()
    first, _ = load(corpus / "rules.csv", con=con)
    copy = tmp_path / "copy.csv"
    shutil.copy(corpus / "rules.csv", copy)
    for path in (corpus / "rules.csv", copy):
        again, _ = load(path, con=con)
        assert again.status == "unchanged" and again.file_id == first.file_id
    counts = con.execute("select (select count(*) from requests), (select count(*) from quarantine), "
                         "(select count(*) from ingest_ledger)").fetchall()
    assert counts == [(2, 12, 1)]


def test_a_copy_under_a_new_name_is_loaded_then_rolled_back_as_unchanged(tmp_path, corpus, load):
    # a path the ledger does not hold is hashed while it loads; the hash is checked before commit
    con = connect()
    first, _ = load(corpus / "rules.csv", con=con)
    before = con.execute("select count(*), max(file_id) from requests").fetchall()
    copy = tmp_path / "renamed.csv"
    shutil.copy(corpus / "rules.csv", copy)
    again, _ = load(copy, con=con)
    assert (again.status, again.file_id, again.rows_read) == ("unchanged", first.file_id, 0)
    assert str(corpus / "rules.csv") in again.message
    assert con.execute("select count(*), max(file_id) from requests").fetchall() == before
    assert con.execute("select count(*) from ingest_ledger").fetchall() == [(1,)]
    # the copy's file id was drawn and rolled back with the rest: the next file still loads
    other = tmp_path / "other.csv"
    other.write_text("ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,1,2\n")
    assert load(other, con=con)[0].status == "loaded"


def test_changed_file_is_refused_by_default_and_replaced_on_request(tmp_path, now, cfg_all, canonical, load):
    con = connect()
    path = tmp_path / "day.csv"
    path.write_text("ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,1,2\n2026-10-01T00:00:01Z,-1,2\n")
    first, _ = load(path, con=con)
    path.write_text("ts_utc,input_tokens,output_tokens\n2026-10-01T00:00:00Z,5,5\n")
    with pytest.raises(IngestError, match="content changed since it was ingested as file 1; refusing"):
        load(path, con=con)
    with pytest.raises(FileRefused):  # the type, not the message, makes it `refused`
        load(path, con=con)
    result = load_file(con, path, canonical, cfg_all, now_utc=now, on_changed="replace")
    assert result.status == "replaced"
    assert con.execute("select file_id, input_tokens from requests").fetchall() == [(result.file_id, 5)]
    assert con.execute("select count(*) from quarantine").fetchall() == [(0,)]
    assert con.execute("select file_id, status from ingest_ledger order by file_id").fetchall() == [
        (first.file_id, "replaced"), (result.file_id, "loaded")]


def test_ledger_row_records_size_hash_and_counts(corpus, load):
    result, con = load(corpus / "rules.csv")
    row = con.execute("select size_bytes, length(content_sha256), rows_read, rows_loaded, rows_quarantined, "
                      "source, status from ingest_ledger").fetchall()[0]
    assert row == ((corpus / "rules.csv").stat().st_size, 64, 14, 2, 12, "test", "loaded")
