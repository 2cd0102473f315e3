"""Run the ingest's SQL files by name (``sql/<name>.sql``) and read their first row.

The one place the ingest turns a file name into SQL text: every other module passes the name
of a file in ``sql/`` and bound parameters, never SQL.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from capplan import sql


def run(con: duckdb.DuckDBPyConnection, name: str, params: Sequence | dict | None = None) -> None:
    """Execute ``sql/<name>.sql`` with bound ``params`` (positional ``?`` or named ``$name``)."""
    con.execute(sql.load(name), params)


def run_many(con: duckdb.DuckDBPyConnection, name: str, rows: list[dict]) -> None:
    """Execute ``sql/<name>.sql`` once per parameter set of ``rows``."""
    con.executemany(sql.load(name), rows)


def fetch_all(con: duckdb.DuckDBPyConnection, name: str, params: Sequence | dict | None = None) -> list[tuple]:
    """Every result row of ``sql/<name>.sql``."""
    return con.execute(sql.load(name), params).fetchall()


def first(con: duckdb.DuckDBPyConnection, name: str, params: Sequence | dict | None = None) -> tuple | None:
    """The first result row of ``sql/<name>.sql``, or None.

    Fetches everything: DuckDB 2 refuses new work on a half-read result.
    """
    rows = fetch_all(con, name, params)
    return rows[0] if rows else None


def count(con: duckdb.DuckDBPyConnection, name: str, params: Sequence | dict | None = None) -> int:
    """The single number ``sql/<name>.sql`` returns (a ``select count(*)``)."""
    return int(first(con, name, params)[0])


def relation(con: duckdb.DuckDBPyConnection, name: str, params: dict | None = None) -> duckdb.DuckDBPyRelation:
    """``sql/<name>.sql`` with bound ``params`` as a lazy relation (to register as a view or stream)."""
    return con.sql(sql.load(name), params=params)
