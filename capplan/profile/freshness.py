"""Whether a database can be profiled, and whether its roll-ups are current: read-only checks.

Readers never refresh the roll-ups (reading must never write): a refresh is an explicit step
(``capplan ingest`` after loading, the plan's flow, ``capplan profile --refresh``). A reader first
calls :func:`require_current_rollups`, which tells a database never profiled, or one with files
ingested (or replaced, or deleted) since the last refresh, from one whose roll-ups are current.
"""

from __future__ import annotations

import duckdb

from capplan import sql

REFRESH_COMMAND = "capplan profile --refresh"
"""The command that brings the roll-ups up to date, named in every :class:`ProfileError` about them."""


class ProfileError(ValueError):
    """The database cannot be profiled (no ``requests`` table), or its roll-ups are missing or stale."""


def require_requests(con: duckdb.DuckDBPyConnection) -> None:
    """Raise :class:`ProfileError` unless the database has a ``requests`` table or view."""
    if not con.execute(sql.load("int_profile_has_requests")).fetchall()[0][0]:
        raise ProfileError("the database has no 'requests' table: run `capplan ingest` first")


def changed_file_ids(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Ids of the files whose rows in ``requests`` differ in number from what the last refresh saw.

    New files, and files replaced or deleted since (``sql/int_profile_changed_files.sql``); the
    roll-ups are current when there are none.
    """
    return [r[0] for r in con.execute(sql.load("int_profile_changed_files")).fetchall()]


def require_current_rollups(con: duckdb.DuckDBPyConnection) -> None:
    """Raise :class:`ProfileError` unless the roll-ups exist and no file was ingested since they were refreshed.

    Works on a read-only connection: it only reads. Roll-ups merged from partitions
    (:mod:`capplan.partitioned`) are current as stored.
    """
    require_requests(con)
    if not con.execute(sql.load("int_profile_rollups_exist")).fetchall()[0][0]:
        raise ProfileError(f"the database has never been profiled: run `{REFRESH_COMMAND}` "
                           "(or `capplan ingest`, which refreshes after loading)")
    changed = changed_file_ids(con)
    if changed:
        raise ProfileError(f"the profile roll-ups are older than the ingested files ({len(changed)} file(s) "
                           f"ingested, replaced or deleted since the last refresh): run `{REFRESH_COMMAND}`")
