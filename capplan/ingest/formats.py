"""Which files an ingest reads and what they are: path expansion, format and compression, the head check.

Owns the file-name conventions (:data:`FORMATS`, :data:`COMPRESSIONS`), glob expansion
(:func:`expand_paths`), the format read from a name (:func:`detect_format`) and the cheap
check of a file's first bytes against it (:func:`check_head`), all before DuckDB opens it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from glob import escape, glob
from pathlib import Path

from capplan.ingest.errors import IngestError
from capplan.ingest.fingerprint import GzipStream

FORMATS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet",
           ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
COMPRESSIONS = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd"}
_MAGIC = {"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd", "parquet": b"PAR1"}
#: the text a head check reads (decompressed), and the most columns a CSV file may have: DuckDB's
#: sniffer ran out of memory at 1 GiB on a 100,000-column file before any row was read, the load on
#: 10,000 columns; 4,000 loaded in 280 MiB (measured, docs/ingest.md)
HEAD_BYTES = 1 << 20
MAX_COLUMNS = 4_096
_DELIMITERS = (b",", b"\t", b";", b"|")
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
         (b"\xfe\xff", "UTF-16"))


def expand_paths(patterns: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """Files matching ``patterns`` (sorted, de-duplicated) and the patterns matching none.

    A pattern is, in this order: an existing file, taken literally (even when its name holds
    ``[``, ``*`` or ``?``); a folder, whose log files are found recursively (:func:`folder_files`);
    else a glob (``**`` spans folders).
    """
    files: dict[Path, None] = {}
    missing: list[str] = []
    for pattern in map(str, patterns):
        if Path(pattern).is_file():
            matches = [Path(pattern)]
        elif Path(pattern).is_dir():
            matches = list(folder_files(Path(pattern)))
        else:
            matches = [Path(m) for m in sorted(glob(pattern, recursive=True)) if Path(m).is_file()] if is_glob(pattern) else []
        if not matches:
            missing.append(pattern)
        files.update((m.resolve(), None) for m in matches)
    return list(files), missing


def is_glob(pattern: str) -> bool:
    """Whether ``pattern`` holds a glob wildcard (``*``, ``?`` or ``[``)."""
    return any(c in pattern for c in "*?[")


def no_match_message(pattern: str) -> str:
    """Why ``pattern`` (one :func:`expand_paths` did not match) gave no file, in one line."""
    if Path(pattern).is_dir():
        return (f"{pattern}: no log file in this folder or below (names ending in {sorted(FORMATS)}, "
                "optionally compressed; names starting with _ or . are skipped)")
    return f"no file matches {pattern}" if is_glob(pattern) else f"{pattern}: no such file"


def folder_files(folder: Path) -> Iterator[Path]:
    """The log files under ``folder``, recursively, sorted: names of a known format (:func:`detect_format`).

    Files and folders whose names start with ``_`` or ``.`` are skipped (``_SUCCESS``, ``.part``
    files, hidden folders); Hive folders such as ``dt=2026-10-01`` are read like any other.
    """
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        for name in sorted(names):
            if not name.startswith(("_", ".")) and _known_format(Path(root, name)):
                yield Path(root, name)


def _known_format(path: Path) -> bool:
    try:
        detect_format(path)
    except IngestError:
        return False
    return True


def duckdb_path(path: Path) -> str:
    """``path`` as a literal for DuckDB's readers, which glob their argument: ``[``, ``*``, ``?`` escaped.

    ``a[12].parquet`` would otherwise read ``a1.parquet`` and ``a2.parquet`` instead of itself.
    """
    return escape(str(path))


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


def check_text_head(path: Path, kind: str, compression: str | None) -> None:
    """Check that a text file's first MiB (decompressed) is UTF-8 text, and a CSV file's first line not too wide.

    Catches, with a short message, what DuckDB's reader reports badly: UTF-16 or UTF-32 text
    (with or without a byte-order mark), NUL bytes, and a CSV line of more than
    :data:`MAX_COLUMNS` fields (counted by the most frequent of ``,`` ``\\t`` ``;`` ``|``, quotes
    ignored: an upper bound). A zstd file is not checked here (no zstd decoder in Python's library).
    """
    head = _text_head(path, compression)
    if head is None:
        return
    why = not_utf8_reason(head)
    if why:
        raise IngestError(f"{path}: file is not UTF-8 text ({why}); expected UTF-8")
    if kind == "csv":
        first = head.split(b"\n", 1)[0]
        fields = 1 + max(first.count(d) for d in _DELIMITERS)
        if fields > MAX_COLUMNS:
            raise IngestError(f"{path}: line 1 has {fields:,} or more fields; expected at most {MAX_COLUMNS:,} columns")


def not_utf8_reason(head: bytes) -> str:
    """Why the start of a file is not UTF-8 text ("looks like UTF-16", "holds NUL bytes", ...), or ""."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return f"looks like {encoding}: it starts with the byte-order mark {bom!r}"
    nul = head.find(b"\0")
    if nul < 0:
        return ""
    even, odd = head[0::2], head[1::2]
    if even.count(0) > 0.4 * len(even) > 0 and odd.count(0) < 0.1 * len(odd):
        return "looks like UTF-16 big-endian: every other byte is NUL"
    if odd.count(0) > 0.4 * len(odd) > 0 and even.count(0) < 0.1 * len(even):
        return "looks like UTF-16 little-endian: every other byte is NUL"
    return f"holds NUL bytes, the first at byte {nul:,}"


def _text_head(path: Path, compression: str | None) -> bytes | None:
    """The first :data:`HEAD_BYTES` of the file's text (gzip inflated); None for zstd."""
    if compression == "zstd":
        return None
    with open(path, "rb") as f:
        if compression is None:
            return f.read(HEAD_BYTES)
        gz, out = GzipStream(path), b""
        while len(out) < HEAD_BYTES and (chunk := f.read(1 << 16)):
            out += gz.inflate(chunk)
        return out[:HEAD_BYTES]
