"""Ingest request-log files into DuckDB: validated, incremental, idempotent, crash-safe.

One file is one transaction. Inside it, one SQL query (``sql/stg_requests.sql``) parses every
raw column (read as VARCHAR, so the reader rejects nothing silently, or as the Parquet file
types it) and names the first rule each row breaks; every row is written once, in file order,
to ``request_rows``, whose good rows are the view ``requests``. The duplicate-id rule is checked
on the file's ids; the bad rows, with their file row number, rule and raw values, are copied to
``quarantine``; and one ``ingest_ledger`` row records the file (path, size, SHA-256, rows
read/loaded/quarantined). Counts always reconcile: ``rows_read = rows_loaded +
rows_quarantined``, checked against a bound known independently (Parquet metadata; newline
count for text files). See ``docs/ingest.md``.

Modules, one job each (this package re-exports the public API):

- :mod:`~capplan.ingest.errors`: :class:`IngestError` and :class:`FileRefused` (a status by type).
- :mod:`~capplan.ingest.columns`: canonical columns, presets, :func:`column_mapping`.
- :mod:`~capplan.ingest.formats`: :func:`expand_paths`, :func:`detect_format`, :func:`check_head`.
- :mod:`~capplan.ingest.fingerprint`: size, SHA-256, line bound and empty lines in one read.
- :mod:`~capplan.ingest.readers`: the file as the temp view ``ingest_raw`` (CSV, Parquet, JSON lines).
- :mod:`~capplan.ingest.rejects`: lines the CSV reader rejected or skipped.
- :mod:`~capplan.ingest.stage`: parse, check, write and quarantine one file's rows.
- :mod:`~capplan.ingest.duplicates`: the duplicate-id rule.
- :mod:`~capplan.ingest.contract`: the pandera contract :data:`RequestRow` and its re-validation.
- :mod:`~capplan.ingest.tables`: :func:`ensure_tables` and the migration of an old ``requests`` table.
- :mod:`~capplan.ingest.load`: :func:`load_file`, one file's transaction and ledger row; :class:`FileResult`.
- :mod:`~capplan.ingest.notes`: implausible time ranges and the all-quarantined failure (pure).
- :mod:`~capplan.ingest.run`: :func:`ingest_paths`, :func:`ingest_sources`, many files.
- :mod:`~capplan.ingest.queries`: the ingest's SQL files run by name.
"""

from __future__ import annotations

from capplan.exports import lazy_exports

# name -> the module that defines it; imported on first use (PEP 562), so a command that needs one
# module of the package (the profile summary: ``capplan.ingest.coverage``) does not pay for the pandera
# contract and the load path (~0.25 s of CPU)
_HOMES = {
    "capplan.ingest.columns": ("CANONICAL_COLUMNS", "DEFAULT_MODEL", "DEFAULT_STATUS", "NUMERIC_COLUMNS", "PRESETS",
                               "REQUIRED_COLUMNS", "UNIT_US", "column_mapping"),
    "capplan.ingest.contract": ("RequestRow",),
    "capplan.ingest.errors": ("FileRefused", "IngestError"),
    "capplan.ingest.fingerprint": ("fingerprint",),
    "capplan.ingest.formats": ("COMPRESSIONS", "FORMATS", "check_head", "detect_format", "expand_paths"),
    "capplan.ingest.load": ("FileResult", "Status", "load_file"),
    "capplan.ingest.run": ("ingest_paths", "ingest_sources"),
    "capplan.ingest.tables": ("ensure_tables",),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _HOMES)
