"""capplan.ingest: the ingest's tables and the migration of an old requests table (capplan.ingest.tables).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

from capplan.db import connect
from capplan.ingest import ensure_tables, load_file


def test_a_database_with_the_old_requests_table_is_migrated_in_place(tmp_path, corpus, now, cfg_all, canonical):
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
    result = load_file(con, corpus / "rules.csv", canonical, cfg_all, now_utc=now)
    assert con.execute("select request_id, file_id from requests where file_id = 7").fetchall() == [("old", 7)]
    assert con.execute("select count(*) from requests").fetchone()[0] == 1 + result.rows_loaded
    assert con.execute("select count(*) from quarantine").fetchone()[0] == result.rows_quarantined
    con.close()
    con = connect(db)  # the migration ran once; opening again and ingesting more changes nothing of it
    again = load_file(con, corpus / "rules.csv", canonical, cfg_all, now_utc=now)
    assert again.status == "unchanged"
    assert con.execute("select count(*) from requests").fetchone()[0] == 1 + result.rows_loaded
