"""The duplicate-id rule of one file: ids repeated in the file, or already loaded from another file.

Runs on the file's rows as written (view ``ingest_staged``), after the staging pass: hashes of
repeated ids first (``sql/stg_ingest_repeated_hashes.sql``), their exact ids
(``sql/stg_ingest_duplicate_ids.sql``), then, only when an id repeats or ``requests`` holds ids of
other files in the span compared, the rows breaking only this rule
(``sql/stg_ingest_duplicate_rows.sql``), appended marked (``sql/stg_ingest_insert_duplicates.sql``) and
their unmarked originals deleted (``sql/stg_ingest_delete_duplicates.sql``), so memory stays within the limit.
A file of fresh ids is read once. Costs and the window: ``docs/ingest.md``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb

from capplan.ingest import queries

#: drops of the temp tables of one file's duplicate check (a fixed file per table), in the order they are made
_DROP_TEMP_TABLES = ("stg_ingest_drop_ingest_repeated_hashes", "stg_ingest_drop_ingest_duplicate_ids",
                     "stg_ingest_drop_ingest_duplicate_rows")


def mark_duplicate_ids(con: duckdb.DuckDBPyConnection, file_id: int, replaced_file_id: int | None,
                       gaps: list[int], window_s: float | None, row_offset: int) -> None:
    """Mark the good rows of file ``file_id`` whose request id is a duplicate (rule ``request_id_duplicate``).

    Parameters
    ----------
    con : the connection, inside the file's transaction, with the view ``ingest_staged``.
    file_id : the file being ingested.
    replaced_file_id : the earlier version of its path that it replaces (its ids do not count), or None.
    gaps : the scan gaps of the rows the reader did not return (:func:`capplan.ingest.rejects.scan_gaps`),
        so a detail names the first occurrence's data row.
    window_s : ids of other files count only when they arrived within this many seconds of the
        file's arrival span [s]; None compares with every id loaded.
    row_offset : turns a CSV row's ``rowid`` into its data row (``capplan.ingest.stage.row_offset``).
    """
    for step in ("stg_ingest_repeated_hashes", "stg_ingest_duplicate_ids"):  # the second is ~free when no repeats
        queries.run(con, step)
    ids = {"file_id": file_id, "replaced_file_id": replaced_file_id, "gaps": gaps, "from_utc": None, "to_utc": None}
    earlier = _earlier_ids_exist(con, ids)
    if earlier and window_s is not None:  # the span costs a scan: only when needed
        ids.update(_loaded_id_span(con, window_s))
        earlier = _earlier_ids_exist(con, ids)
    if queries.count(con, "stg_ingest_count_duplicate_ids") or earlier:
        queries.run(con, "stg_ingest_duplicate_rows", ids)
        if queries.count(con, "stg_ingest_count_duplicate_rows"):
            queries.run(con, "stg_ingest_insert_duplicates", {"file_id": file_id})  # not an update: memory (docs/ingest.md)
            queries.run(con, "stg_ingest_delete_duplicates", {"file_id": file_id, "row_offset": row_offset})


def drop_duplicate_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the temp tables of the duplicate check: temp space back before the next file."""
    for name in _DROP_TEMP_TABLES:
        queries.run(con, name)


def _earlier_ids_exist(con: duckdb.DuckDBPyConnection, ids: dict) -> bool:
    """Whether `requests` holds an id of another file in the span ``ids`` names (sql/stg_ingest_loaded_ids_exist.sql)."""
    return bool(queries.count(con, "stg_ingest_loaded_ids_exist",
                              {k: ids[k] for k in ("file_id", "replaced_file_id", "from_utc", "to_utc")}))


def _loaded_id_span(con: duckdb.DuckDBPyConnection, window_s: float) -> dict:
    """The arrival span [UTC] of the rows of other files whose ids this file's ids are checked against.

    ``$from_utc``/``$to_utc`` for sql/stg_ingest_loaded_ids_exist.sql and sql/stg_ingest_duplicate_rows.sql:
    the file's own span (``sql/stg_ingest_staged_span.sql``) widened by ``window_s`` [s] on each
    side. As constants they prune `requests` by its row groups' time ranges, so the check does not
    grow with the database (docs/ingest.md). Computed only when `requests` holds ids of other files
    at all (the span is a scan of the file's rows).
    """
    first, last = queries.first(con, "stg_ingest_staged_span")
    if first is None:
        return {"from_utc": datetime(1970, 1, 1), "to_utc": datetime(1970, 1, 1)}  # no row has a time: nothing
    margin = timedelta(seconds=window_s)
    return {"from_utc": first - margin, "to_utc": last + margin}
