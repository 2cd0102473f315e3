"""An ingest run over many files: one :class:`~capplan.ingest.load.FileResult` per file, failures included.

One file's failure does not stop the others. A file's status comes from the type of what
:func:`~capplan.ingest.load.load_file` raised: :class:`~capplan.ingest.errors.FileRefused` is
``refused``, any other :class:`~capplan.ingest.errors.IngestError` is ``error``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Literal

import duckdb

from capplan.config import IngestConfig, SourceConfig
from capplan.ingest.errors import FileRefused, IngestError
from capplan.ingest.formats import expand_paths, no_match_message
from capplan.ingest.load import FileResult, Status, load_file


def ingest_paths(con: duckdb.DuckDBPyConnection, patterns: Iterable[str | Path], source: SourceConfig,
                 cfg: IngestConfig, *, now_utc: datetime | None = None,
                 on_changed: Literal["refuse", "replace"] | None = None,
                 on_file: Callable[[FileResult], None] | None = None,
                 on_rows: Callable[[int], None] | None = None) -> list[FileResult]:
    """Ingest every file matching ``patterns``; one file's failure does not stop the others.

    Returns one :class:`FileResult` per file (status ``error`` or ``refused`` carries the
    message; nothing of such a file is loaded) and per pattern that matched no file.
    """
    files, missing = expand_paths(patterns)
    results = [FileResult(p, source.name, "error", message=no_match_message(p)) for p in missing]
    for path in files:
        try:
            result = load_file(con, path, source, cfg, now_utc=now_utc, on_changed=on_changed, on_rows=on_rows)
        except IngestError as exc:
            result = FileResult(str(path), source.name, failure_status(exc), message=str(exc))
        results.append(result)
        if on_file is not None:
            on_file(result)
    return results


#: the statuses of a file that failed: nothing of it is loaded, and the command exits non-zero
FAILED_STATUSES: tuple[Status, ...] = ("error", "refused", "all_quarantined")


def failure_status(exc: IngestError) -> Status:
    """The status of a file whose load raised ``exc``: ``refused`` for :class:`FileRefused`, else ``error``."""
    return "refused" if isinstance(exc, FileRefused) else "error"


def ingest_sources(con: duckdb.DuckDBPyConnection, cfg: IngestConfig, **kwargs) -> list[FileResult]:
    """Ingest the files of every source configured in ``[[ingest.sources]]``."""
    return [r for s in cfg.sources for r in ingest_paths(con, s.paths, s, cfg, **kwargs)]
