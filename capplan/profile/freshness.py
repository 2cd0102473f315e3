"""Whether a database can be profiled, and whether its roll-ups are current: read-only checks.

Readers never refresh the roll-ups (reading must never write): a refresh is an explicit step
(``capplan ingest`` after loading, the plan's flow, ``capplan profile --refresh``). A reader first
calls :func:`require_current_rollups`, which tells a database never profiled, or one with files
ingested (or replaced, or deleted) since the last refresh, from one whose roll-ups are current.
"""

from __future__ import annotations

import duckdb

from capplan import sql

ROLLUP_VERSION = 2
"""Version of the definition every stored roll-up is computed under; bump it when one changes.

1: the roll-ups before versions were recorded. 2: one SLI rule (a 408 is a valid, bad event,
``sql/ddl_macro_sli_valid.sql``) and drift bins as runs of the profile's grid. Roll-ups of ingested
files under another version are rebuilt from the raw rows by the next refresh and refused by
readers until then; a partition's fingerprint includes the version, so stored partitions are
rolled up again by the next partitioned run.
"""
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

    New files, and files replaced or deleted since; the roll-ups are current when there are none.
    First two sums, one fast pass over the compressed ``file_id`` column (no grouping):
    the rows and the fingerprint (the sum over rows of ``hash(file_id)``) of the files up to the
    highest id seen, against what the last refresh recorded (``sql/int_profile_files_fingerprint.sql``,
    ``sql/int_profile_recorded_files.sql``). Equal: those files are unchanged, and the changed files
    are the ids above it (``sql/int_profile_files_after.sql``: an ingest's new files and re-ingested
    versions, whose ids only grow). Different (a file replaced, deleted or edited, an id below the
    highest added): every file's rows are counted and compared (``sql/int_profile_changed_files.sql``).
    A change among the files seen goes unnoticed only if it keeps both sums: their rows moved between
    files whose hashes, weighted by the rows moved, sum to zero; rows moved between two files cannot
    (distinct ids, distinct hashes).
    """
    last_file_id, rows, file_hash_sum = con.execute(sql.load("int_profile_recorded_files")).fetchall()[0]
    if last_file_id is not None:
        seen = {"last_file_id": last_file_id}
        if tuple(con.execute(sql.load("int_profile_files_fingerprint"), seen).fetchall()[0]) == (rows, file_hash_sum):
            return [r[0] for r in con.execute(sql.load("int_profile_files_after"), seen).fetchall()]
    return [r[0] for r in con.execute(sql.load("int_profile_changed_files")).fetchall()]


def stored_rollup_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The :data:`ROLLUP_VERSION` the stored roll-ups were refreshed under (``None``: not recorded)."""
    if not con.execute(sql.load("int_profile_version_table_exists")).fetchall()[0][0]:
        return None
    return con.execute(sql.load("int_profile_rollup_version")).fetchall()[0][0]


def has_file_rollups(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the roll-ups hold rows of ingested files (not only rows merged from partitions)."""
    return bool(con.execute(sql.load("int_profile_has_file_rollups")).fetchall()[0][0])


def record_rollup_version(con: duckdb.DuckDBPyConnection) -> None:
    """Record that the stored roll-ups are computed under :data:`ROLLUP_VERSION` (needs a writable ``con``)."""
    con.execute(sql.load("fct_profile_set_rollup_version"), {"version": ROLLUP_VERSION})


def require_current_rollups(con: duckdb.DuckDBPyConnection) -> None:
    """Raise :class:`ProfileError` unless the roll-ups exist and no file was ingested since they were refreshed.

    Works on a read-only connection: it only reads. Roll-ups merged from partitions
    (:mod:`capplan.partitioned`) are current as stored.
    """
    require_requests(con)
    if not con.execute(sql.load("int_profile_rollups_exist")).fetchall()[0][0]:
        raise ProfileError(f"the database has never been profiled: run `{REFRESH_COMMAND}` "
                           "(or `capplan ingest`, which refreshes after loading)")
    if (con.execute(sql.load("int_profile_histogram_is_table")).fetchall()[0][0]
            or con.execute(sql.load("int_profile_histogram_is_lists")).fetchall()[0][0]):
        raise ProfileError("the profile's histograms are stored in an older layout (an earlier capplan): run "
                           f"`{REFRESH_COMMAND}`, which converts them in place")
    if stored_rollup_version(con) != ROLLUP_VERSION and has_file_rollups(con):
        raise ProfileError("the profile roll-ups were computed under an older definition (before "
                           f"roll-up version {ROLLUP_VERSION}): run `capplan profile --rebuild`")
    changed = changed_file_ids(con)
    if changed:
        raise ProfileError(f"the profile roll-ups are older than the ingested files ({len(changed)} file(s) "
                           f"ingested, replaced or deleted since the last refresh): run `{REFRESH_COMMAND}`")
