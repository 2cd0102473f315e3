"""Opening capplan's DuckDB database with the settings every stage expects."""

from __future__ import annotations

from pathlib import Path

import duckdb


class DatabaseLockedError(RuntimeError):
    """Another process holds the DuckDB file open for writing."""


def connect(path: str | Path = ":memory:", *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (or create) the database at ``path`` and apply capplan's session settings.

    ``:memory:`` gives an in-memory database (tests). A file held by another
    writer raises :class:`DatabaseLockedError` naming the file, not a DuckDB
    stack trace.
    """
    target = str(path)
    if target != ":memory:":
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(target, read_only=read_only)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise DatabaseLockedError(
                f"database {target} is in use by another process ({exc}); "
                "wait for it to finish or point --db at another file"
            ) from exc
        raise
    con.execute("set enable_progress_bar = false")
    con.execute("set TimeZone = 'UTC'")
    return con
