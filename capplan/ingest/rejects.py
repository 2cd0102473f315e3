"""Rows DuckDB's CSV reader did not return: the lines it rejected and the empty lines it skipped.

The reader records rejected lines in its ``reject_errors`` temp table (``store_rejects``);
:func:`last_rejects` reads those of the staging scan and maps them to quarantine rules (or a
whole-file error for undecodable bytes). Both kinds of missing rows shift the scan's row numbers:
:func:`scan_gaps` gives the shift, :func:`quarantine_rejects` renumbers the file's quarantine rows
and inserts the rejected lines.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from capplan.ingest import queries
from capplan.ingest.errors import IngestError
from capplan.ingest.readers import Raw

#: DuckDB CSV reject types -> quarantine rule (undecodable bytes are a whole-file error)
_REJECT_RULES = {"TOO MANY COLUMNS": "csv_wrong_column_count", "MISSING COLUMNS": "csv_wrong_column_count",
                 "LINE SIZE OVER MAXIMUM": "line_too_long"}


def reset_rejects(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the reader's reject tables: DuckDB appends every scan's rejects to them per connection."""
    for name in ("stg_ingest_drop_reject_errors", "stg_ingest_drop_reject_scans"):
        queries.run(con, name)


def last_rejects(con: duckdb.DuckDBPyConnection, path: Path, header_lines: int) -> list[tuple[int, str, str]]:
    """Lines the CSV reader rejected in its last scan: (data row, rule, raw line).

    Raises
    ------
    IngestError
        For bytes that are not UTF-8, or a line the reader cannot split at all.
    """
    if not queries.count(con, "stg_ingest_reject_errors_exist"):
        return []
    # the last scan is the staging pass (sql/stg_requests.sql; the reader's sniffing scans before it)
    rows = queries.fetch_all(con, "stg_ingest_last_rejects")
    out = []
    for line, error_type, text in rows:
        if error_type in ("INVALID UNICODE", "INVALID ENCODING"):
            raise IngestError(f"{path}: line {line}: bytes that are not valid UTF-8; expected UTF-8 text")
        rule = _REJECT_RULES.get(error_type)
        if rule is None:
            raise IngestError(f"{path}: line {line}: unreadable CSV ({error_type.lower()}); "
                              "expected well-formed CSV")
        out.append((int(line) - header_lines, rule, text))
    return out


def scan_gaps(raw: Raw) -> list[int]:
    """Per data row r_j the scan did not return (file order, j 1-based): r_j - j, the rows it returned before.

    Those rows are the lines the reader rejected and the empty CSV lines it skipped. The k-th row
    the scan returned is data row k + #{j : gap_j < k}.
    """
    missing = sorted({r for r, _, _ in raw.rejects} | set(raw.skipped))
    return [r - j - 1 for j, r in enumerate(missing)]


def quarantine_rejects(con: duckdb.DuckDBPyConnection, file_id: int, path: Path, raw: Raw) -> None:
    """Shift scan-order row numbers to file rows (past rejected and skipped lines); insert the rejected lines."""
    queries.run(con, "stg_quarantine_renumber", {"file_id": file_id, "gaps": scan_gaps(raw)})
    if raw.rejects:
        queries.run_many(con, "stg_ingest_insert_rejected_line", [
            {"file_id": file_id, "path": str(path), "row_number": r, "rule": rule,
             "detail": f"line does not split into the header's columns ({rule})", "line": text}
            for r, rule, text in raw.rejects])
