"""Stage one opened file: parse and check every row, write it once, mark duplicates, quarantine the bad rows.

Runs inside the file's transaction on the temp view ``ingest_raw`` (:mod:`capplan.ingest.readers`):
``sql/stg_requests.sql`` (view ``ingest_checked``) names each row's first broken rule, and one
ordered ``insert ... select`` (``sql/stg_ingest_insert_rows.sql``) writes every row, good or
bad, to ``request_rows``, so DuckDB writes full row groups before commit and memory stays flat.
A CSV row is numbered by its position among the file's rows (``rowid``, :func:`row_offset`),
past the lines the reader rejected or skipped (:mod:`capplan.ingest.rejects`). Then the
duplicate-id rule (:mod:`capplan.ingest.duplicates`), the copy of the bad rows to
``quarantine``, and the count check against a bound known independently of the reader.
Design and figures: ``docs/ingest.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime
from pathlib import Path

import duckdb

from capplan.config import IngestConfig, SourceConfig
from capplan.ingest import queries
from capplan.ingest.columns import DEFAULT_MODEL, MAX_DURATION_MS, UNIT_US, parse_origin
from capplan.ingest.duplicates import drop_duplicate_tables, mark_duplicate_ids
from capplan.ingest.errors import IngestError
from capplan.ingest.fingerprint import Fingerprint
from capplan.ingest.formats import duckdb_path
from capplan.ingest.readers import Raw
from capplan.ingest.rejects import last_rejects, quarantine_rejects, scan_gaps

#: parameters of sql/stg_requests.sql (the staging pass), of :func:`stage_params`
_STAGE_PARAMS = ("now_utc", "future_tolerance_s", "context_limit_tokens", "timezone", "unit_us", "origin_utc",
                 "default_model", "max_duration_ms")


def stage_params(source: SourceConfig, cfg: IngestConfig, file_id: int, path: Path, now_utc: datetime,
                 replaced_file_id: int | None) -> dict:
    """The bound parameters of one file's staging: its rules' settings and the source's timestamp conventions."""
    origin = parse_origin(source.origin) if source.origin else None
    unit = source.timestamp_unit or ("s" if origin is not None else None)
    return {"file_id": file_id, "path": str(path), "now_utc": now_utc.replace(tzinfo=None),
            "future_tolerance_s": cfg.future_tolerance_s, "context_limit_tokens": cfg.context_limit_tokens,
            "timezone": source.timezone or "UTC", "unit_us": UNIT_US[unit] if unit else None,
            "origin_utc": origin, "default_model": source.model or DEFAULT_MODEL, "max_duration_ms": MAX_DURATION_MS,
            "duplicate_id_window_s": cfg.duplicate_id_window_s,
            "replaced_file_id": replaced_file_id}


def stage_rows(con: duckdb.DuckDBPyConnection, path: Path, kind: str, raw: Raw, hashed: Future,
               params: dict, on_rows: Callable[[int], None] | None = None) -> tuple[int, int]:
    """Every row to ``request_rows`` (good ones are the view ``requests``), bad rows to ``quarantine``.

    Parameters
    ----------
    con : the connection, inside the file's transaction, with the view ``ingest_raw``.
    path : the file.
    kind : csv|parquet|jsonl.
    raw : what the reader gave (:func:`capplan.ingest.readers.open_raw`); its rejects are filled in here.
    hashed : the file's :class:`~capplan.ingest.fingerprint.Fingerprint`, perhaps still being computed.
    params : :func:`stage_params`.
    on_rows : called with the rows loaded, then the rows quarantined, for progress displays.

    Returns
    -------
    (loaded, quarantined) : rows of the file in ``requests`` and in ``quarantine`` [rows].

    Raises
    ------
    IngestError
        When the file has no data row, or more rows were read than it can hold.
    """
    file_id = params["file_id"]
    queries.relation(con, "stg_requests", {k: params[k] for k in _STAGE_PARAMS}).create_view(
        "ingest_checked", replace=True)
    queries.run(con, "stg_ingest_insert_rows", {"file_id": file_id})
    if kind != "parquet":  # the last scan of the CSV reader was that insert (its sniffing scans before it)
        raw.rejects = last_rejects(con, path, raw.header_lines)
    if kind == "csv":  # empty lines are skipped by the reader (JSON lines are numbered before they go)
        raw.skipped = [n - raw.header_lines for n in hashed.result().empty_lines if n > raw.header_lines]
    offset = row_offset(con, path, file_id)
    queries.relation(con, "stg_ingest_staged_view", {"file_id": file_id, "row_offset": offset}).create_view(
        "ingest_staged", replace=True)
    mark_duplicate_ids(con, file_id, params["replaced_file_id"], scan_gaps(raw), params["duplicate_id_window_s"],
                       offset)
    loaded = queries.count(con, "stg_ingest_count_loaded", {"file_id": file_id})
    if on_rows is not None:
        on_rows(loaded)
    queries.run(con, "stg_ingest_insert_quarantine", {"file_id": file_id, "path": params["path"]})
    if raw.rejects or raw.skipped:
        quarantine_rejects(con, file_id, path, raw)
    for view in ("stg_ingest_drop_ingest_staged", "stg_ingest_drop_ingest_checked"):
        queries.run(con, view)
    drop_duplicate_tables(con)  # temp space back before the next file
    quarantined = queries.count(con, "stg_ingest_count_quarantined", {"file_id": file_id})
    if on_rows is not None:
        on_rows(quarantined)
    _check_rows_read(con, path, kind, raw, hashed, loaded + quarantined)
    return loaded, quarantined


def _check_rows_read(con: duckdb.DuckDBPyConnection, path: Path, kind: str, raw: Raw, hashed: Future,
                     rows_read: int) -> None:
    """Check the rows read against a bound known independently: the Parquet footer exactly, a text file's lines.

    ``hashed`` (the file's :class:`~capplan.ingest.fingerprint.Fingerprint`) is waited for only for
    a text file's line bound.
    """
    if rows_read == 0:
        raise IngestError(f"{path}: no data rows (header only?); expected at least one request row")
    # for text, every record takes at least one line
    bound = (int(queries.first(con, "stg_ingest_parquet_row_count", {"path": duckdb_path(path)})[0])
             if kind == "parquet" else line_bound(hashed.result(), raw))
    if (kind == "parquet" and rows_read != bound) or (bound is not None and rows_read > bound):
        raise IngestError(f"{path}: read {rows_read} rows but the file holds at most {bound}")


def line_bound(fp: Fingerprint, raw: Raw) -> int | None:
    """At most this many data rows in a text file (every record takes a line), or None when not counted."""
    return None if fp.max_records is None else fp.max_records - raw.header_lines


def row_offset(con: duckdb.DuckDBPyConnection, path: Path, file_id: int) -> int:
    """The offset that turns the position (``rowid``) of a row of file ``file_id`` into its data row number.

    Rows appended by one ordered insert inside a transaction have contiguous rowids, in scan
    order; a gap would break the numbering, so it is checked (a bug, not a property of the file).
    Only valid inside the ingest's transaction (a checkpoint may renumber rows).
    """
    first, last, rows = queries.first(con, "stg_ingest_file_rowids", {"file_id": file_id})
    if rows and last - first + 1 != rows:
        raise IngestError(f"{path}: written rows are not numbered contiguously ({rows} rows, rowid {first}..{last})")
    return 1 - first if rows else 0
