"""Which partitions a source has, and which of them the central ledger has not rolled up as they are now."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import pyarrow as arrow

from capplan import ingest, sql
from capplan.config import SourceConfig
from capplan.partitioned.tables import ensure_tables
from capplan.profile.freshness import ROLLUP_VERSION

HIVE_DAY = re.compile(r"dt=(\d{4}-\d{2}-\d{2})")
"""Name of a day partition folder: ``dt=YYYY-MM-DD``."""


class PartitionError(ValueError):
    """A partitioned source cannot be read or stored (bad folder layout, rows also in ``requests``)."""


@dataclass(frozen=True)
class Partition:
    """One unit of work: a ``dt=`` folder's files, or one file of a file list."""

    source: SourceConfig
    path: str  # the dt= folder, or the file; absolute
    files: tuple[str, ...]  # absolute, sorted
    size_bytes: int  # total [bytes]
    stat_sha256: str  # hex SHA-256 of (name, size, mtime_ns) of every file: changes when a file does


def _visible(path: Path) -> bool:
    # Spark/Hive writers leave _SUCCESS, _committed_*, .crc files beside the data
    return not path.name.startswith((".", "_"))


def _partition(source: SourceConfig, path: Path, files: Sequence[Path]) -> Partition:
    digest = hashlib.sha256(f"rollup-version {ROLLUP_VERSION}\n".encode())  # a new definition re-rolls it
    size = 0
    for f in files:
        st = f.stat()
        size += st.st_size
        digest.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return Partition(source, str(path), tuple(map(str, files)), size, digest.hexdigest())


def _day_folders(root: Path) -> list[tuple[Path, list[Path]]]:
    """The ``dt=YYYY-MM-DD`` folders below ``root`` and the visible files inside each (recursively)."""
    folders = []
    for child in sorted(p for p in root.iterdir() if _visible(p)):
        match = HIVE_DAY.fullmatch(child.name)
        if not child.is_dir() or match is None:
            raise PartitionError(f"{child}: expected only dt=YYYY-MM-DD folders in the partitioned folder {root}")
        try:
            date.fromisoformat(match.group(1))
        except ValueError:
            raise PartitionError(f"{child}: {match.group(1)!r} is not a calendar date (YYYY-MM-DD)") from None
        files = sorted(f for f in child.rglob("*") if f.is_file() and _visible(f)
                       and all(_visible(p) for p in f.relative_to(child).parents if p != Path(".")))
        if files:
            folders.append((child.resolve(), [f.resolve() for f in files]))
    return folders


def discover_partitions(source: SourceConfig) -> tuple[list[Partition], list[str]]:
    """The partitions of ``source`` and the patterns in ``source.paths`` that match nothing.

    A path that is a folder holds ``dt=YYYY-MM-DD`` sub-folders, one partition each (hidden and ``_``
    files, such as ``_SUCCESS``, are skipped); any other path is a file or glob, one partition per file.

    Raises
    ------
    PartitionError
        A folder holds something other than ``dt=YYYY-MM-DD`` folders, or a date is not a calendar date.
    """
    partitions: dict[str, Partition] = {}
    missing: list[str] = []
    for pattern in source.paths:
        if Path(pattern).is_dir():
            found = [_partition(source, folder, files) for folder, files in _day_folders(Path(pattern))]
            if not found:
                missing.append(pattern)
        else:
            files, unmatched = ingest.expand_paths([pattern])
            missing += unmatched
            found = [_partition(source, f, [f]) for f in files]
        partitions.update((p.path, p) for p in found)
    return list(partitions.values()), missing


def pending_partitions(con: duckdb.DuckDBPyConnection, partitions: Iterable[Partition]) -> list[Partition]:
    """The partitions without a current roll-up of the same files (new, or changed since)."""
    partitions = list(partitions)
    if not partitions:
        return []
    ensure_tables(con)
    found = arrow.table({"source": [p.source.name for p in partitions], "path": [p.path for p in partitions],
                         "stat_sha256": [p.stat_sha256 for p in partitions]})
    con.register("partitions_found", found)
    try:
        todo = {(s, p) for s, p, _ in con.execute(sql.load("int_partitioned_pending")).fetchall()}
    finally:
        con.unregister("partitions_found")
    return [p for p in partitions if (p.source.name, p.path) in todo]
