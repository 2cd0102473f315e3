"""Opening capplan's DuckDB database with the settings every stage expects."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from capplan import sql

SQL_MACROS = ("ddl_macro_sli_valid", "ddl_macro_sli_success", "ddl_macro_sli_good")
"""The temp macros every connection gets (``sql/<name>.sql``, in this order: a later one may call an earlier one)."""
_MIB_PER_UNIT = {"bytes": 1 / 2**20, "kib": 1 / 2**10, "mib": 1, "gib": 2**10, "tib": 2**20,
                 "kb": 1e3 / 2**20, "mb": 1e6 / 2**20, "gb": 1e9 / 2**20, "tb": 1e12 / 2**20}


class DatabaseLockedError(RuntimeError):
    """Another process holds the DuckDB file open for writing."""


def connect(path: str | Path = ":memory:", *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (or create) the database at ``path`` and apply capplan's session settings.

    ``:memory:`` gives an in-memory database (tests). A file held by another
    writer raises :class:`DatabaseLockedError` naming the file, not a DuckDB
    stack trace.
    """
    target = str(path)
    if target != ":memory:" and not read_only:  # a reader never creates anything, not even a folder
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
    con.execute(sql.load("set_session"))
    create_macros(con)
    return con


def create_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Define the shared SQL macros of :data:`SQL_MACROS` (e.g. ``sli_valid(status)``) on ``con``.

    They are temp macros: nothing is written to the database, so a read-only connection gets them
    too. A temp macro belongs to one connection, and a cursor (``con.cursor()``) is a connection of
    its own: code that runs a query using them on a cursor, or on a connection it did not open with
    :func:`connect`, calls this first. Defining them again is harmless (``create or replace``).
    """
    for name in SQL_MACROS:
        con.execute(sql.load(name))


def memory_limit_mib(con: duckdb.DuckDBPyConnection) -> float | None:
    """DuckDB's current ``memory_limit`` [MiB], or ``None`` when it cannot be read as a size."""
    return _as_mib(_setting_text(con, "memory_limit"))


def _setting_text(con: duckdb.DuckDBPyConnection, name: str) -> str:
    return str(con.execute(sql.load("rpt_current_setting"), {"name": name}).fetchall()[0][0])


def _as_mib(text: str) -> float | None:
    match = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]+)\s*", text)
    if not match or match.group(2).lower() not in _MIB_PER_UNIT:
        return None
    return float(match.group(1)) * _MIB_PER_UNIT[match.group(2).lower()]


@contextmanager
def memory_capped(con: duckdb.DuckDBPyConnection, limit_mib: float | None) -> Iterator[None]:
    """Hold DuckDB's ``memory_limit`` at no more than ``limit_mib`` [MiB] while the block runs.

    Beyond the limit DuckDB evicts cached blocks and spills to temporary files, so a job's memory
    stays flat as its input grows. A lower limit already set is kept (never raised); ``None`` leaves
    the setting alone. The limit is a database-wide setting, not transactional: the previous value
    is restored whatever happens, through a cursor of its own, so an aborted transaction on ``con``
    neither blocks the restore nor hides the block's own error. DuckDB's default (a share of RAM)
    comes back as the default, not pinned to its rounded display value.
    """
    if limit_mib is None:
        yield
        return
    settings = con.cursor()  # same database, its own transaction state
    previous = _setting_text(settings, "memory_limit")
    current = _as_mib(previous)
    if current is not None and current <= limit_mib:
        settings.close()
        yield
        return
    settings.execute(sql.load("set_memory_limit_default"))
    was_default = _setting_text(settings, "memory_limit") == previous
    settings.execute(sql.load("set_memory_limit"), {"limit": f"{limit_mib}MiB"})
    try:
        yield
    finally:
        if was_default:
            settings.execute(sql.load("set_memory_limit_default"))
        else:
            settings.execute(sql.load("set_memory_limit"), {"limit": previous})
        settings.close()


def keep_block_memory(con: duckdb.DuckDBPyConnection, mib: float | None) -> None:
    """Let DuckDB's block allocator keep up to ``mib`` [MiB] of freed buffer blocks for reuse.

    A job that spills (the ingest's insert and its duplicate-id hash table) frees
    and allocates blocks many times over; by default DuckDB hands freed memory back to the OS, so
    every reuse faults its pages in afresh (a 10 M-row CSV ingest: 850 k minor page faults and
    3.5 s of system time, against 655 k and 2.4 s with 1 GiB kept; measured). The kept memory
    stays with this database instance until it closes and cannot be lowered (DuckDB's
    ``block_allocator_memory``; a larger value already set is kept), so pass at most the memory
    limit the job runs under, which it reaches anyway. ``None`` leaves the setting alone.
    """
    if mib is None:
        return
    current = _as_mib(_setting_text(con, "block_allocator_memory"))
    if current is None or current < mib:
        con.execute(sql.load("set_block_allocator_memory"), {"limit": f"{int(mib)}MiB"})
