"""The ingest's tables: create ``request_rows``, its view ``requests``, ``quarantine`` and ``ingest_ledger``.

Owns :func:`ensure_tables` (the DDL files ``sql/ddl_*.sql``) and the in-place migration of a
database written before ``request_rows`` existed, whose ``requests`` is a table of good rows.
"""

from __future__ import annotations

import duckdb

from capplan.ingest import queries

#: the DDL files of the ingest's tables, in the order they are created
_DDL = ("ddl_ingest_ledger", "ddl_ingest_ledger_notes", "ddl_request_rows", "ddl_requests", "ddl_quarantine")


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``request_rows`` and its view ``requests``, ``quarantine`` and ``ingest_ledger`` if missing.

    A database written before ``request_rows`` existed holds ``requests`` as a table of good rows;
    it is migrated in place first (:func:`migrate_requests_table`).
    """
    if queries.count(con, "stg_ingest_requests_is_table"):
        migrate_requests_table(con)
    for name in _DDL:
        queries.run(con, name)


def migrate_requests_table(con: duckdb.DuckDBPyConnection) -> None:
    """Turn an old ``requests`` table (good rows only) into ``request_rows``, in one transaction.

    Its rows stay as they are (their ``rule`` is null, so the view ``requests`` shows them all);
    only the table is renamed, the bad-row columns added, the NOT NULL constraints dropped (a bad
    row's tokens are null) and the view created (``sql/ddl_ingest_migrate_requests_table.sql``,
    then ``sql/ddl_requests.sql``). Call it outside a transaction (it opens its own;
    ``load_file`` does so).
    """
    con.begin()
    try:
        queries.run(con, "ddl_ingest_migrate_requests_table")
        queries.run(con, "ddl_requests")  # with the rename: a reader never finds no `requests`
        con.commit()
    except BaseException:
        con.rollback()
        raise
