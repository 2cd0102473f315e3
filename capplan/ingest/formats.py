"""Which files an ingest reads and what they are: path expansion, format and compression, the head check.

Owns the file-name conventions (:data:`FORMATS`, :data:`COMPRESSIONS`), glob expansion
(:func:`expand_paths`), the format read from a name (:func:`detect_format`) and the cheap
check of a file's first bytes against it (:func:`check_head`), all before DuckDB opens it.
"""

from __future__ import annotations

from collections.abc import Iterable
from glob import glob
from pathlib import Path

from capplan.ingest.errors import IngestError

FORMATS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet",
           ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
COMPRESSIONS = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd"}
_MAGIC = {"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd", "parquet": b"PAR1"}


def expand_paths(patterns: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """Files matching ``patterns`` (globs expanded, sorted, de-duplicated) and the patterns matching none."""
    files: dict[Path, None] = {}
    missing: list[str] = []
    for pattern in map(str, patterns):
        matches = sorted(glob(pattern, recursive=True)) if any(c in pattern for c in "*?[") else [pattern]
        matches = [m for m in matches if Path(m).is_file()]
        if not matches:
            missing.append(pattern)
        files.update((Path(m).resolve(), None) for m in matches)
    return list(files), missing


def detect_format(path: Path) -> tuple[str, str | None]:
    """``(kind, compression)`` from the file name: kind csv|parquet|jsonl, compression gzip|zstd|None."""
    suffixes = [s.lower() for s in path.suffixes]
    compression = COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    if compression:
        suffixes = suffixes[:-1]
    kind = FORMATS.get(suffixes[-1]) if suffixes else None
    if kind is None:
        raise IngestError(f"{path}: unknown file type; expected a name ending in one of "
                          f"{sorted(FORMATS)}, optionally followed by {sorted(COMPRESSIONS)}")
    if kind == "parquet" and compression:
        raise IngestError(f"{path}: Parquet is compressed inside; expected no {compression} wrapper")
    return kind, compression


def check_head(path: Path, kind: str, compression: str | None) -> None:
    """Check that the file is not empty and starts with its format's magic bytes."""
    if path.stat().st_size == 0:
        raise IngestError(f"{path}: empty file (0 bytes); expected a header and data rows")
    expected = _MAGIC.get(compression or kind)
    with open(path, "rb") as f:
        head = f.read(4)
    if expected and not head.startswith(expected):
        raise IngestError(f"{path}: not a {compression or kind} file (first bytes {head!r}); expected {expected!r}")
