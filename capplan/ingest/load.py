"""Load one file in one transaction: new, unchanged, refused or replacing, with its ledger row.

:func:`load_file` decides what the file is from its content hash and the ledger (a path seen
before is hashed first; a new path is hashed on a thread while DuckDB loads it), holds the
session settings the load needs, opens the file (:mod:`capplan.ingest.readers`), stages it
(:mod:`capplan.ingest.stage`), re-validates the contract (:mod:`capplan.ingest.contract`) and
writes the ``ingest_ledger`` row (``sql/stg_ingest_ledger_row.sql``) before commit. A process
killed at any point leaves the database as it was before that file (DuckDB's WAL discards the
open transaction).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import duckdb

from capplan.config import IngestConfig, SourceConfig
from capplan.db import keep_block_memory, memory_capped, memory_limit_mib
from capplan.ingest import queries
from capplan.ingest.columns import PRESETS, check_mapped_columns, column_mapping
from capplan.ingest.contract import check_contract
from capplan.ingest.errors import FileRefused, IngestError
from capplan.ingest.fingerprint import fingerprint
from capplan.ingest.formats import check_head, check_text_head, detect_format
from capplan.ingest.notes import all_quarantined_message, is_plausible_all_quarantined, time_range_notes
from capplan.ingest.readers import open_raw
from capplan.ingest.rejects import reset_rejects
from capplan.ingest.stage import stage_params, stage_rows
from capplan.ingest.tables import ensure_tables

#: what replacing a file's old version does, in order (same transaction as the new load)
_REPLACE_STEPS = ("stg_ingest_delete_file_rows", "stg_ingest_delete_file_quarantine", "stg_ingest_ledger_mark_replaced")
Status = Literal["loaded", "replaced", "unchanged", "refused", "error", "all_quarantined"]


@dataclass(frozen=True)
class FileResult:
    """What happened to one file; ``rows_read == rows_loaded + rows_quarantined`` always."""

    path: str
    source: str
    status: Status
    rows_read: int = 0
    rows_loaded: int = 0
    rows_quarantined: int = 0
    file_id: int | None = None
    defaulted_columns: tuple[str, ...] = ()
    message: str = ""
    notes: tuple[str, ...] = ()  # loaded, but implausible (capplan.ingest.notes); also in the ledger

    def to_dict(self) -> dict:
        """Plain data for JSON output."""
        return {**asdict(self), "defaulted_columns": list(self.defaulted_columns), "notes": list(self.notes)}


class _RollBack(Exception):  # noqa: N818 (control flow, not an error)
    """A result known inside the transaction that keeps nothing: content already loaded (known once its
    hash is), or every row quarantined (``all_quarantined``). Roll back, report the result."""

    def __init__(self, result: FileResult) -> None:
        super().__init__(result.message)
        self.result = result


def _same_content(con: duckdb.DuckDBPyConnection, path: Path, source: SourceConfig, sha256: str,
                  ) -> FileResult | None:
    """The ``unchanged`` result when content with this hash is already loaded (under any path)."""
    same = queries.first(con, "stg_ingest_ledger_same_content", {"content_sha256": sha256})
    if same is None:
        return None
    return FileResult(str(path), source.name, "unchanged", file_id=same[0],
                      message=f"same content already ingested as file {same[0]} ({same[1]})")


def load_file(con: duckdb.DuckDBPyConnection, path: Path, source: SourceConfig, cfg: IngestConfig, *,
              now_utc: datetime | None = None, on_changed: Literal["refuse", "replace"] | None = None,
              on_rows: Callable[[int], None] | None = None) -> FileResult:
    """Ingest one file in one transaction; whole-file problems raise :class:`IngestError`.

    The content hash decides whether the file is new. A path the ledger already holds is
    hashed first, so re-running over the same folder reads each file once and loads nothing.
    A path never loaded is hashed on a thread while DuckDB loads it (docs/ingest.md); its hash is
    checked against the ledger before commit, and a copy of content already loaded under another
    name is rolled back and reported ``unchanged``. Changed content under a path already loaded
    raises :class:`FileRefused` unless ``on_changed`` (or ``cfg.on_changed_file``) is ``replace``.

    Parameters
    ----------
    con : DuckDB connection (tables are created if missing).
    path : the file; CSV, Parquet or JSON lines, optionally gzip or zstd.
    source : its column mapping and timestamp conventions.
    cfg : context limit, future tolerance, contract check.
    now_utc : ingest time, UTC; rows later than this plus ``cfg.future_tolerance_s`` are quarantined.
    on_changed : a path already loaded with other content: ``refuse`` (raise) or ``replace`` its rows.
    on_rows : called with the number of rows of each staged batch, for progress displays.
    """
    path = Path(path).resolve()
    now_utc = now_utc or datetime.now(UTC)
    mapping = column_mapping(source)
    ensure_tables(con)
    kind, compression = detect_format(path)
    check_head(path, kind, compression)
    if kind != "parquet":
        check_text_head(path, kind, compression)
    old = queries.first(con, "stg_ingest_ledger_loaded_path", {"path": str(path)})
    cancel = threading.Event()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="capplan-fingerprint") as hasher:
        try:
            if old is None:
                hashed = hasher.submit(fingerprint, path, kind, compression, cancel)
            else:
                hashed = Future()
                hashed.set_result(fingerprint(path, kind, compression))
                if hashed.result().sha256 == old[1]:  # keyed by path and content: another file's content is a change
                    return FileResult(str(path), source.name, "unchanged", file_id=old[0],
                                      message=f"same content already ingested as file {old[0]} ({path})")
                if (on_changed or cfg.on_changed_file) == "refuse":
                    raise FileRefused(f"{path}: content changed since it was ingested as file {old[0]}; "
                                      "refusing (use --on-changed replace to replace its rows)")
            return _load_transaction(con, path, kind, mapping, source, cfg, hashed, now_utc,
                                     None if old is None else old[0], on_rows)
        finally:
            cancel.set()  # a hash nobody waits for any more stops at its next chunk


def _load_transaction(con: duckdb.DuckDBPyConnection, path: Path, kind: str, mapping: dict[str, str],
                      source: SourceConfig, cfg: IngestConfig, hashed: Future, now_utc: datetime,
                      replaces: int | None, on_rows: Callable[[int], None] | None) -> FileResult:
    """Run :func:`_load_in_transaction` in one transaction, with the settings it needs; commit or roll back."""
    previous_order = queries.first(con, "stg_ingest_get_insertion_order")[0]
    queries.run(con, "stg_ingest_set_insertion_order", {"preserve": True})  # written CSV rows are numbered by position
    try:  # settings are not transactional: restored whatever happens
        with memory_capped(con, cfg.memory_limit_mib):
            if cfg.memory_limit_mib is not None:  # the limit now in force: the configured one, or a lower one
                keep_block_memory(con, memory_limit_mib(con))
            con.begin()
            try:
                result = _load_in_transaction(con, path, kind, mapping, source, cfg, hashed, now_utc,
                                              replaces, on_rows)
                con.commit()
            except _RollBack as rolled_back:
                con.rollback()
                return rolled_back.result
            except BaseException:
                con.rollback()
                raise
    finally:
        queries.run(con, "stg_ingest_set_insertion_order", {"preserve": previous_order})
    return result


def _load_in_transaction(con: duckdb.DuckDBPyConnection, path: Path, kind: str, mapping: dict[str, str],
                         source: SourceConfig, cfg: IngestConfig, hashed: Future, now_utc: datetime,
                         replaces: int | None, on_rows: Callable[[int], None] | None) -> FileResult:
    """Replace the old version (if any), stage the file, write the ledger row; the caller commits.

    ``hashed`` is the file's :class:`~capplan.ingest.fingerprint.Fingerprint`, perhaps still being
    computed; content already loaded under another path raises :class:`_RollBack` before anything
    is written to the ledger, and so does a file whose every row is quarantined (status
    ``all_quarantined``) unless ``cfg.allow_all_quarantined``.
    """
    try:
        if replaces is not None:
            for name in _REPLACE_STEPS:
                queries.run(con, name, {"file_id": replaces})
        file_id = int(queries.first(con, "stg_ingest_next_file_id")[0])
        reset_rejects(con)
        for macro in ("stg_ingest_macro_text", "stg_ingest_macro_utc"):
            queries.run(con, macro)
        raw = open_raw(con, path, kind, mapping, list(PRESETS[source.preset].values()))
        check_mapped_columns(path, source, raw.columns, raw.defaulted)
        params = stage_params(source, cfg, file_id, path, now_utc, replaces)
        loaded, quarantined = stage_rows(con, path, kind, raw, hashed, params, on_rows)
        rules = [] if loaded or cfg.allow_all_quarantined else queries.relation(
            con, "stg_ingest_top_rules", {"file_id": file_id}).fetchall()
        if not is_plausible_all_quarantined(rules):
            raise _RollBack(FileResult(str(path), source.name, "all_quarantined", quarantined, 0, quarantined,
                                       defaulted_columns=raw.defaulted,
                                       message=all_quarantined_message(path, quarantined, rules)))
        check_contract(con, file_id, cfg, path)
        notes = time_range_notes(*queries.first(con, "stg_ingest_loaded_span", {"file_id": file_id}),
                                 now_utc.replace(tzinfo=None))
    except duckdb.Error as exc:
        if isinstance(hashed.exception(), IngestError):
            raise hashed.exception() from None  # e.g. truncated gzip: named better than the reader does
        first = str(exc).strip().splitlines()[0]
        raise IngestError(f"{path}: could not be read as {kind}: {first}") from None
    fp = hashed.result()
    same = _same_content(con, path, source, fp.sha256)
    if same is not None and replaces is None:  # a copy under a new path; under a replaced path it is a change
        raise _RollBack(same)
    queries.run(con, "stg_ingest_ledger_row", {
        "file_id": file_id, "path": str(path), "source": source.name, "size_bytes": fp.size_bytes,
        "content_sha256": fp.sha256, "rows_loaded": loaded, "rows_quarantined": quarantined,
        "defaulted_columns": list(raw.defaulted), "ingested_at_utc": now_utc.replace(tzinfo=None),
        "notes": list(notes)})
    return FileResult(str(path), source.name, "replaced" if replaces is not None else "loaded",
                      loaded + quarantined, loaded, quarantined, file_id, raw.defaulted,
                      _replaced_message(replaces, same), notes)


def _replaced_message(replaces: int | None, same: FileResult | None) -> str:
    """The note of a load that replaced file ``replaces``; ``same``: a loaded file with the new content."""
    if replaces is None:
        return ""
    also = (f"; the new content is also file {same.file_id}'s, so its request ids count as duplicates"
            if same is not None else "")
    return f"replaced file {replaces}{also}"
