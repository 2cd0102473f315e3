"""Ingest request-log files into DuckDB: validated, incremental, idempotent, crash-safe.

One file is one transaction. Inside it, one SQL query (``sql/stg_requests.sql``)
parses every raw column (read as VARCHAR, so the reader rejects nothing silently,
or as the Parquet file types it) and names the first rule each row breaks; every
row is written once, in file order, to ``request_rows``, whose good rows are the
view ``requests``. The duplicate-id rule is checked on the file's ids; the bad
rows, with their file row number, rule and raw values, are copied to
``quarantine``; and one ``ingest_ledger`` row records the file (path, size,
SHA-256, rows read/loaded/quarantined). A process killed at any point leaves the
database as it was before that file (DuckDB's WAL discards the open transaction).

Counts always reconcile: ``rows_read = rows_loaded + rows_quarantined``, and are
checked against a bound known independently (Parquet metadata; newline count for
text files). The pandera schema :data:`RequestRow` is the contract of a loaded
row; it re-validates a sample (or every row) of the loaded rows inside the same
transaction. See ``docs/ingest.md``.
"""

from __future__ import annotations

import hashlib
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from glob import glob
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import duckdb
import numpy as np
import pandera.pandas as pa
from duckdb import CaseExpression, ColumnExpression, ConstantExpression, FunctionExpression, SQLExpression

from capplan import sql
from capplan.config import IngestConfig, SourceConfig
from capplan.db import keep_block_memory, memory_capped, memory_limit_mib

#: Canonical request columns, in table order (``sql/ddl_requests.sql``).
CANONICAL_COLUMNS = ("ts_utc", "input_tokens", "output_tokens", "model", "status", "ttft_ms",
                     "latency_ms", "request_id", "tenant", "zone")
REQUIRED_COLUMNS = ("ts_utc", "input_tokens", "output_tokens")
#: Raw value given to an optional column the source lacks (the rest become null).
DEFAULT_MODEL = "default"
DEFAULT_STATUS = "200"
#: canonical column -> source column, per preset; a preset's order is the positional
#: order of a CSV file without a header.
PRESETS: dict[str, dict[str, str]] = {
    "canonical": {c: c for c in CANONICAL_COLUMNS},
    # Azure LLM inference traces (AzurePublicDataset): TIMESTAMP, ContextTokens, GeneratedTokens
    "azure": {"ts_utc": "TIMESTAMP", "input_tokens": "ContextTokens", "output_tokens": "GeneratedTokens"},
}
#: microseconds per unit of a numeric timestamp
UNIT_US = {"s": 1e6, "ms": 1e3, "us": 1.0}
FORMATS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet",
           ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
COMPRESSIONS = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd"}
_MAGIC = {"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd", "parquet": b"PAR1"}
#: DuckDB CSV reject types -> quarantine rule (undecodable bytes are a whole-file error)
_REJECT_RULES = {"TOO MANY COLUMNS": "csv_wrong_column_count", "MISSING COLUMNS": "csv_wrong_column_count",
                 "LINE SIZE OVER MAXIMUM": "line_too_long"}
_HEADERLESS = re.compile(r"column\d+")
_CHUNK_BYTES = 8 << 20
#: CSV reader: the longest line read (a longer one is quarantined as line_too_long), and its buffer.
#: DuckDB's default buffer is 16 lines' worth (1 GiB here), which alone breaks a 1 GiB memory limit on
#: a gzip file; a buffer of one line's size still reads 60 MiB lines, in less memory and no more time
#: (5 M rows: 312-392 MiB vs 504-509 MiB peak, measured).
_MAX_LINE_BYTES = 64 << 20
_CSV_BUFFER_BYTES = _MAX_LINE_BYTES
Status = Literal["loaded", "replaced", "unchanged", "refused", "error"]


class IngestError(ValueError):
    """A whole-file problem (format, encoding, columns, content changed): nothing of the file is loaded."""


#: Contract of one loaded request row (table ``requests``, without ``file_id``). A schema object,
#: not a ``DataFrameModel`` as elsewhere in capplan: building a model's schema makes pandera import
#: its dask typing when dask is installed (the partitioned flow installs it), 0.55 s and ~150 MiB
#: in every ingest process (measured); this schema builds and validates in 0.12 s.
RequestRow = pa.DataFrameSchema(
    {
        "ts_utc": pa.Column("datetime64[ns]", description="Arrival time, UTC. [timestamp]"),
        "input_tokens": pa.Column(int, pa.Check.ge(0), description="Prompt tokens. [tokens]"),
        "output_tokens": pa.Column(int, pa.Check.ge(0), description="Generated tokens. [tokens]"),
        "model": pa.Column(str, pa.Check.str_length(min_value=1), description="Model name."),
        "status": pa.Column(int, pa.Check.in_range(100, 599), description="HTTP status code."),
        "ttft_ms": pa.Column(float, pa.Check.ge(0), nullable=True, description="Time to first token. [ms]"),
        "latency_ms": pa.Column(float, pa.Check.ge(0), nullable=True, description="Arrival to last token. [ms]"),
        "request_id": pa.Column(str, nullable=True),
        "tenant": pa.Column(str, nullable=True),
        "zone": pa.Column(str, nullable=True),
    },
    name="RequestRow",
    coerce=True,  # DuckDB gives int32/int16/datetime64[us]; the contract is about values
    strict=True,
)


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

    def to_dict(self) -> dict:
        """Plain data for JSON output."""
        return {**asdict(self), "defaulted_columns": list(self.defaulted_columns)}


@dataclass(frozen=True)
class _Fingerprint:
    size_bytes: int
    sha256: str
    max_records: int | None  # an upper bound on the records (header included), when cheap to know
    empty_lines: tuple[int, ...] = ()  # 1-based line numbers of the empty lines, when counted (see _LineCounter)


@dataclass
class _Raw:
    """The file opened as the temp view ``ingest_raw``; what the reader rejected."""

    defaulted: tuple[str, ...]
    header_lines: int = 0
    rejects: list[tuple[int, str, str]] = field(default_factory=list)  # (data row, rule, line)
    skipped: list[int] = field(default_factory=list)  # data rows the reader skipped: empty CSV lines


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``request_rows`` and its view ``requests``, ``quarantine`` and ``ingest_ledger`` if missing.

    A database written before ``request_rows`` existed holds ``requests`` as a table of good rows;
    it is migrated in place first (:func:`_migrate_requests_table`).
    """
    if _first(con, "select count(*) from duckdb_tables() where table_name = 'requests' "
                   "and schema_name = 'main' and database_name = current_database()")[0]:
        _migrate_requests_table(con)
    for name in ("ddl_ingest_ledger", "ddl_request_rows", "ddl_requests", "ddl_quarantine"):
        con.execute(sql.load(name))


#: columns `request_rows` has beyond the old `requests` table, and the old table's NOT NULL columns
_ROW_COLUMNS_ADDED = {"source_row": "BIGINT", "rule": "VARCHAR", "detail": "VARCHAR", "raw_json": "JSON"}
_OLD_NOT_NULL = ("ts_utc", "input_tokens", "output_tokens", "model", "status")


def _migrate_requests_table(con: duckdb.DuckDBPyConnection) -> None:
    """Turn an old ``requests`` table (good rows only) into ``request_rows``, in one transaction.

    Its rows stay as they are (their ``rule`` is null, so the view ``requests`` shows them all);
    only the table is renamed, the bad-row columns added, the NOT NULL constraints dropped (a bad
    row's tokens are null) and the view created. Statements are fixed text: no value comes from
    outside. Call it outside a transaction (it opens its own; ``load_file`` does so).
    """
    con.begin()
    try:
        con.execute("alter table requests rename to request_rows")
        for column in _OLD_NOT_NULL:
            con.execute(f"alter table request_rows alter column {column} drop not null")
        for column, type_ in _ROW_COLUMNS_ADDED.items():
            con.execute(f"alter table request_rows add column {column} {type_}")
        con.execute(sql.load("ddl_requests"))  # with the rename: a reader never finds no `requests`
        con.commit()
    except BaseException:
        con.rollback()
        raise


def column_mapping(source: SourceConfig) -> dict[str, str]:
    """canonical column -> source column: the preset, overridden by ``source.columns``.

    Raises
    ------
    ValueError
        For an unknown preset or a key that is not a canonical column.
    """
    if source.preset not in PRESETS:
        raise ValueError(f"unknown preset {source.preset!r}; valid presets: {sorted(PRESETS)}")
    unknown = sorted(set(source.columns) - set(CANONICAL_COLUMNS))
    if unknown:
        raise ValueError(f"source {source.name!r}: {unknown} are not canonical columns; "
                         f"valid: {list(CANONICAL_COLUMNS)}")
    if source.timezone is not None:
        try:
            ZoneInfo(source.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"source {source.name!r}: unknown time zone {source.timezone!r}; "
                             "expected an IANA name such as 'Europe/Paris'") from None
    if source.origin is not None and _parse_origin(source.origin) is None:
        raise ValueError(f"source {source.name!r}: origin {source.origin!r} is not an ISO-8601 timestamp")
    return {**PRESETS[source.preset], **source.columns}


def _parse_origin(origin: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(origin)
    except ValueError:
        return None
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t


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


def fingerprint(path: Path, kind: str, compression: str | None, cancel: threading.Event | None = None,
                ) -> _Fingerprint:
    """Size, SHA-256 and (text files, plain or gzip) a bound on the lines, in one streamed read.

    Safe to run on a thread (hashlib and numpy release the GIL on large buffers); ``cancel``
    stops it at the next 8 MiB chunk (its result is then unusable: :class:`IngestError`). The
    caller checks the file's head first (:func:`check_head`).
    """
    digest = hashlib.sha256()
    size = 0
    gz = _GzipStream(path) if compression == "gzip" else None
    lines = _LineCounter() if kind != "parquet" and compression != "zstd" else None
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK_BYTES):
            if cancel is not None and cancel.is_set():
                raise IngestError(f"{path}: fingerprint cancelled")
            size += len(chunk)
            digest.update(chunk)
            if lines is not None:
                lines.feed(gz.inflate(chunk) if gz else chunk)
    if gz is not None:
        gz.check_complete()
    if lines is None:
        return _Fingerprint(size, digest.hexdigest(), None)
    return _Fingerprint(size, digest.hexdigest(), lines.max_records, tuple(lines.empty))


class _LineCounter:
    """Count the lines of text fed chunk by chunk, and note the empty ones (numbered in ``\\n`` lines).

    ``max_records`` bounds the records (each takes a line, whichever of ``\\n`` or ``\\r`` ends
    them). ``empty`` lists the 1-based numbers of the lines that are empty (nothing, or a lone
    ``\\r``, before their ``\\n``): DuckDB's CSV reader skips them, so the rows after one are
    renumbered past it. Counted with numpy from the positions of the ``\\n`` bytes (``bytes.count``
    took as long as the SHA-256, 5 M rows; the positions cost 0.7 s per 1.8 GB against 0.34 s for a
    bare count, and ``bytes.find(b"\\n\\n")`` 3 s, measured); a chunk without ``\\r`` skips that count.
    """

    def __init__(self) -> None:
        self.newlines = [0, 0]  # b"\n", b"\r"
        self.empty: list[int] = []
        self._open = 0  # bytes of the line begun in earlier chunks, not yet ended by \n
        self._open_is_cr = False  # that line is exactly b"\r"

    @property
    def max_records(self) -> int:
        return max(self.newlines) + 1

    def feed(self, data: bytes) -> None:
        text = np.frombuffer(data, np.uint8)
        ends = np.flatnonzero(text == 0x0A)  # where each line ending in this chunk ends
        if len(ends):
            self._note_empty(data, text, ends)
            last = int(ends[-1])
            self._open, self._open_is_cr = len(data) - last - 1, data[last + 1:] == b"\r"
        else:
            self._open_is_cr = self._open == 0 and data == b"\r"
            self._open += len(data)
        self.newlines[0] += len(ends)
        if data.find(b"\r") >= 0:
            self.newlines[1] += int(np.count_nonzero(text == 0x0D))

    def _note_empty(self, data: bytes, text: np.ndarray, ends: np.ndarray) -> None:
        before = self.newlines[0]  # lines ended before this chunk
        first = self._open + int(ends[0])  # the first line began in an earlier chunk, or at 0
        if first == 0 or (first == 1 and (self._open_is_cr if self._open else data[0] == 0x0D)):
            self.empty.append(before + 1)
        steps = np.diff(ends)  # each later line's length + 1
        near = np.flatnonzero(steps <= 2)  # empty, or one byte long: rare
        empty = near[(steps[near] == 1) | (text[ends[near + 1] - 1] == 0x0D)]
        self.empty.extend(int(n) for n in before + 2 + empty)  # the line ending at ends[i + 1] is number before + i + 2


class _GzipStream:
    """Inflate gzip data chunk by chunk, across concatenated members."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.state = zlib.decompressobj(wbits=31)  # 31: gzip header

    def inflate(self, chunk: bytes) -> bytes:
        out = []
        while chunk:
            try:
                out.append(self.state.decompress(chunk))
            except zlib.error as exc:
                raise IngestError(f"{self.path}: corrupt gzip data ({exc}); expected a complete gzip file") from None
            chunk = self.state.unused_data if self.state.eof else b""
            if chunk:  # another gzip member follows
                self.state = zlib.decompressobj(wbits=31)
        return b"".join(out)

    def check_complete(self) -> None:
        if not self.state.eof:
            raise IngestError(f"{self.path}: truncated gzip data (the stream ends early); "
                              "expected a complete gzip file")


def _json_pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


#: canonical columns whose check is numeric: a source column of a numeric type stays typed
NUMERIC_COLUMNS = ("input_tokens", "output_tokens", "status", "ttft_ms", "latency_ms")
_NUMERIC_TYPES = {"tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint", "uinteger",
                  "ubigint", "uhugeint", "float", "double", "decimal"}
_WALL_TYPES = {"timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns", "date"}
#: the four forms of the timestamp in `ingest_raw` (sql/stg_requests.sql); exactly one is not null
_TS_FORMS = ("ts_utc_raw", "ts_utc_instant", "ts_utc_wall", "ts_utc_number")


def _ts_form(type_id: str | None) -> str:
    """Which `ingest_raw` timestamp column a source column of DuckDB type ``type_id`` feeds (None: text)."""
    if type_id == "timestamp with time zone":
        return "ts_utc_instant"
    if type_id in _WALL_TYPES:
        return "ts_utc_wall"
    return "ts_utc_number" if type_id in _NUMERIC_TYPES else "ts_utc_raw"


def _raw_columns(mapping: dict[str, str], present: Callable[[str], bool],
                 value: Callable[[str], duckdb.Expression], type_of: Callable[[str], str | None] = lambda c: None,
                 ) -> tuple[list[duckdb.Expression], tuple[str, ...]]:
    """The per-column expressions of `ingest_raw`; optional columns the source lacks get defaults.

    ``type_of(source column)`` is the reader's type id, or None for text formats. A column the
    reader already typed (Parquet) is passed on typed: the timestamp as a UTC instant, a wall time
    or a number, numeric columns as numbers, so the staging SQL needs no round trip through
    VARCHAR for them (the typed fast path). Anything else is cast to VARCHAR for the SQL to parse.
    The required columns are present (checked by :func:`_require` first).
    """
    exprs: list[duckdb.Expression] = []
    defaulted: list[str] = []
    ts_types = {name: duckdb.sqltype(t) for name, t in zip(_TS_FORMS, ("VARCHAR", "TIMESTAMP", "TIMESTAMP", "DOUBLE"))}
    varchar = ts_types["ts_utc_raw"]
    for canonical in CANONICAL_COLUMNS:
        src = mapping.get(canonical)
        if canonical == "ts_utc":
            # session TimeZone is UTC, so a timestamptz cast to timestamp is the UTC wall time
            form = _ts_form(type_of(src))
            exprs += [(value(src) if name == form else ConstantExpression(None)).cast(typed).alias(name)
                      for name, typed in ts_types.items()]
        elif src is not None and present(src):
            typed = canonical in NUMERIC_COLUMNS and type_of(src) in _NUMERIC_TYPES
            exprs.append((value(src) if typed else value(src).cast(varchar)).alias(f"{canonical}_raw"))
        else:
            defaulted.append(canonical)
            fallback = {"model": DEFAULT_MODEL, "status": DEFAULT_STATUS}.get(canonical)
            exprs.append(ConstantExpression(fallback).cast(varchar).alias(f"{canonical}_raw"))
    return exprs, tuple(defaulted)


def _require(path: Path, mapping: dict[str, str], found: Sequence[str], present: Callable[[str], bool]) -> None:
    missing = [f"{c} (source column {mapping.get(c, c)!r})" for c in REQUIRED_COLUMNS
               if c not in mapping or not present(mapping[c])]
    if missing:
        hint = " (one column only: wrong delimiter?)" if len(found) == 1 else ""
        raise IngestError(f"{path}: missing required column {', '.join(missing)}; found columns "
                          f"{list(found)[:20]}{hint}")


def _open_csv(con: duckdb.DuckDBPyConnection, path: Path, mapping: dict[str, str], order: list[str]) -> _Raw:
    rel = con.read_csv(str(path), all_varchar=True, store_rejects=True, max_line_size=_MAX_LINE_BYTES,
                       buffer_size=_CSV_BUFFER_BYTES)
    columns = rel.columns
    header = not all(_HEADERLESS.fullmatch(c) for c in columns)
    if not header:  # no header: columns are in the preset's canonical order
        positional = dict(zip(order, columns))
        mapping = {c: positional[mapping[c]] for c in mapping if mapping[c] in positional}
    _require(path, mapping, columns, lambda c: c in columns)
    exprs, defaulted = _raw_columns(mapping, lambda c: c in columns, ColumnExpression)
    raw = FunctionExpression("struct_pack", *[ColumnExpression(c).alias(c) for c in columns]).alias("raw")
    rows = ConstantExpression(None).cast(duckdb.sqltype("BIGINT")).alias("source_row")  # numbered by position once written
    rel.select(rows, raw, ConstantExpression(None).cast(duckdb.sqltype("VARCHAR")).alias("raw_error"),
               *exprs).create_view("ingest_raw", replace=True)
    return _Raw(defaulted, header_lines=int(header))


def _open_parquet(con: duckdb.DuckDBPyConnection, path: Path, mapping: dict[str, str]) -> _Raw:
    rel = con.read_parquet(str(path), file_row_number=True)
    columns = [c for c in rel.columns if c != "file_row_number"]
    _require(path, mapping, columns, lambda c: c in columns)
    types = {c: t.id for c, t in zip(rel.columns, rel.types)}
    exprs, defaulted = _raw_columns(mapping, lambda c: c in columns, ColumnExpression, types.get)
    raw = FunctionExpression("struct_pack", *[ColumnExpression(c).alias(c) for c in columns]).alias("raw")
    rows = SQLExpression("file_row_number + 1").alias("source_row")
    rel.select(rows, raw, ConstantExpression(None).cast(duckdb.sqltype("VARCHAR")).alias("raw_error"),
               *exprs).create_view("ingest_raw", replace=True)
    return _Raw(defaulted)


def _open_jsonl(con: duckdb.DuckDBPyConnection, path: Path, mapping: dict[str, str]) -> _Raw:
    # One VARCHAR per line (0x1f cannot appear raw in valid JSON), so a malformed line is a
    # quarantined row instead of an error for the whole file; blank lines are not records.
    lines = con.read_csv(str(path), header=False, sep="\x1f", quotechar="", escapechar="",
                         columns={"line": "VARCHAR"}, store_rejects=True, auto_detect=False,
                         max_line_size=_MAX_LINE_BYTES, buffer_size=_CSV_BUFFER_BYTES)
    numbered = lines.select(SQLExpression("row_number() over ()").alias("source_row"), ColumnExpression("line"))
    valid = CaseExpression(FunctionExpression("json_valid", ColumnExpression("line")),
                           FunctionExpression("json_type", ColumnExpression("line")) == ConstantExpression("OBJECT")
                           ).otherwise(ConstantExpression(False))
    sample = numbered.filter(valid).limit(1000).select(
        FunctionExpression("json_keys", ColumnExpression("line")).alias("k")).fetchall()
    keys = sorted({k for (ks,) in sample if ks for k in ks})
    if not sample:
        raise IngestError(f"{path}: no line is a JSON object; expected one JSON object per line")
    _require(path, mapping, keys, lambda c: c in keys)

    def extract(src: str) -> duckdb.Expression:
        return CaseExpression(valid, FunctionExpression(
            "json_extract_string", ColumnExpression("line"), ConstantExpression(_json_pointer(src))))

    exprs, defaulted = _raw_columns(mapping, lambda c: c in keys, extract)
    raw = CaseExpression(valid, ColumnExpression("line").cast(duckdb.sqltype("JSON"))).otherwise(
        FunctionExpression("to_json", ColumnExpression("line"))).alias("raw")
    error = CaseExpression(valid, ConstantExpression(None)).otherwise(
        ConstantExpression("json_malformed")).cast(duckdb.sqltype("VARCHAR")).alias("raw_error")
    numbered.filter(ColumnExpression("line").isnotnull()).select(
        ColumnExpression("source_row"), raw, error, *exprs).create_view("ingest_raw", replace=True)
    return _Raw(defaulted)


#: parameters of sql/stg_requests.sql (the staging pass), of :func:`_stage_params`
_STAGE_PARAMS = ("now_utc", "future_tolerance_s", "context_limit_tokens", "timezone", "unit_us", "origin_utc",
                 "default_model")
#: temp tables of one file's staging and duplicate check (sql/stg_ingest_*.sql)
_STAGE_TABLES = ("ingest_repeated_hashes", "ingest_duplicate_ids", "ingest_duplicate_rows")


def _stage_params(source: SourceConfig, cfg: IngestConfig, file_id: int, path: Path,
                  now_utc: datetime) -> dict:
    origin = _parse_origin(source.origin) if source.origin else None
    unit = source.timestamp_unit or ("s" if origin is not None else None)
    return {"file_id": file_id, "path": str(path), "now_utc": now_utc.replace(tzinfo=None),
            "future_tolerance_s": cfg.future_tolerance_s, "context_limit_tokens": cfg.context_limit_tokens,
            "timezone": source.timezone or "UTC", "unit_us": UNIT_US[unit] if unit else None,
            "origin_utc": origin, "default_model": DEFAULT_MODEL, "duplicate_id_window_s": cfg.duplicate_id_window_s}


def _last_rejects(con: duckdb.DuckDBPyConnection, path: Path, header_lines: int) -> list[tuple[int, str, str]]:
    """Lines the CSV reader rejected in its last scan: (data row, rule, raw line)."""
    if not _first(con, "select count(*) from duckdb_tables() where table_name = 'reject_errors'")[0]:
        return []
    # the last scan is the staging pass (sql/stg_requests.sql; the reader's sniffing scans before it)
    rows = con.execute("select distinct line, error_type, csv_line from reject_errors "
                       "where scan_id = (select max(scan_id) from reject_errors) order by line").fetchall()
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


def _scan_gaps(raw: _Raw) -> list[int]:
    """Per data row r_j the scan did not return (file order, j 1-based): r_j - j, the rows it returned before.

    Those rows are the lines the reader rejected and the empty CSV lines it skipped. The k-th row
    the scan returned is data row k + #{j : gap_j < k}.
    """
    missing = sorted({r for r, _, _ in raw.rejects} | set(raw.skipped))
    return [r - j - 1 for j, r in enumerate(missing)]


def _quarantine_rejects(con: duckdb.DuckDBPyConnection, file_id: int, path: Path, raw: _Raw) -> None:
    """Shift scan-order row numbers to file rows (past rejected and skipped lines); insert the rejected lines."""
    con.execute(sql.load("stg_quarantine_renumber"), {"file_id": file_id, "gaps": _scan_gaps(raw)})
    if raw.rejects:
        con.executemany("insert into quarantine values (?, ?, ?, ?, ?, to_json(?::varchar))",
                        [(file_id, str(path), r, rule, f"line does not split into the header's columns "
                          f"({rule})", text) for r, rule, text in raw.rejects])


def _check_contract(con: duckdb.DuckDBPyConnection, file_id: int, cfg: IngestConfig, path: Path) -> None:
    """Re-validate loaded rows against :class:`RequestRow` (a sample, or all rows in chunks)."""
    if cfg.contract_check == "off":
        return
    # "sample": the file's first rows as stored, a bounded read (a systematic sample over
    # `rowid` scanned every row of the file: +50 % of the ingest time at 20 M rows, measured)
    limit = None if cfg.contract_check == "all" else cfg.contract_sample_rows
    query = f"select {', '.join(CANONICAL_COLUMNS)} from requests where file_id = $file_id limit $limit"
    reader = con.sql(query, params={"file_id": file_id, "limit": limit}).to_arrow_reader(cfg.contract_sample_rows)
    for batch in reader:
        try:
            RequestRow.validate(batch.to_pandas(), lazy=True)
        except pa.errors.SchemaErrors as exc:
            cases = exc.failure_cases.head(3).to_dict("records")
            raise IngestError(f"{path}: loaded rows break the RequestRow contract (a bug in the "
                              f"staging SQL): {cases}") from None


def _first(con: duckdb.DuckDBPyConnection, query: str, params: Sequence | dict = ()) -> tuple | None:
    """The first result row, or None (fetches everything: DuckDB 2 refuses new work on a half-read result)."""
    rows = con.execute(query, params).fetchall()
    return rows[0] if rows else None


def _count(con: duckdb.DuckDBPyConnection, query: str, params: dict) -> int:
    return int(_first(con, query, params)[0])


class _Unchanged(Exception):  # noqa: N818 (control flow, not an error)
    """The file's content turned out to be loaded already (known once its hash is): roll back, report."""

    def __init__(self, result: FileResult) -> None:
        super().__init__(result.message)
        self.result = result


def _same_content(con: duckdb.DuckDBPyConnection, path: Path, source: SourceConfig, sha256: str,
                  ) -> FileResult | None:
    """The ``unchanged`` result when content with this hash is already loaded (under any path)."""
    same = _first(con, "select file_id, path from ingest_ledger where content_sha256 = ? and status = 'loaded' "
                  "order by file_id limit 1", [sha256])
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
    A path never loaded is hashed on a thread while DuckDB loads it (the hash is a sixth of a
    bare CSV load, measured); its hash is checked against the ledger before commit, and a copy
    of content already loaded under another name is rolled back and reported ``unchanged``.

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
    old = _first(con, "select file_id from ingest_ledger where path = ? and status = 'loaded'", [str(path)])
    cancel = threading.Event()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="capplan-fingerprint") as hasher:
        try:
            if old is None:
                hashed = hasher.submit(fingerprint, path, kind, compression, cancel)
            else:
                hashed = Future()
                hashed.set_result(fingerprint(path, kind, compression))
                same = _same_content(con, path, source, hashed.result().sha256)
                if same is not None:
                    return same
                if (on_changed or cfg.on_changed_file) == "refuse":
                    raise IngestError(f"{path}: content changed since it was ingested as file {old[0]}; "
                                      "refusing (use --on-changed replace to replace its rows)")
            return _load_transaction(con, path, kind, mapping, source, cfg, hashed, now_utc,
                                     None if old is None else old[0], on_rows)
        finally:
            cancel.set()  # a hash nobody waits for any more stops at its next chunk


def _load_transaction(con: duckdb.DuckDBPyConnection, path: Path, kind: str, mapping: dict[str, str],
                      source: SourceConfig, cfg: IngestConfig, hashed: Future, now_utc: datetime,
                      replaces: int | None, on_rows: Callable[[int], None] | None) -> FileResult:
    """Run :func:`_load_in_transaction` in one transaction, with the settings it needs; commit or roll back."""
    previous_order = _first(con, "select current_setting('preserve_insertion_order')")[0]
    con.execute("set preserve_insertion_order = true")  # written CSV rows are numbered by position
    try:  # settings are not transactional: restored whatever happens
        with memory_capped(con, cfg.memory_limit_mib):
            if cfg.memory_limit_mib is not None:  # the limit now in force: the configured one, or a lower one
                keep_block_memory(con, memory_limit_mib(con))
            con.begin()
            try:
                result = _load_in_transaction(con, path, kind, mapping, source, cfg, hashed, now_utc,
                                              replaces, on_rows)
                con.commit()
            except _Unchanged as unchanged:
                con.rollback()
                return unchanged.result
            except BaseException:
                con.rollback()
                raise
    finally:
        con.execute("set preserve_insertion_order = ?", [previous_order])
    return result


def _load_in_transaction(con: duckdb.DuckDBPyConnection, path: Path, kind: str, mapping: dict[str, str],
                         source: SourceConfig, cfg: IngestConfig, hashed: Future, now_utc: datetime,
                         replaces: int | None, on_rows: Callable[[int], None] | None) -> FileResult:
    """Replace the old version (if any), stage the file, write the ledger row; the caller commits.

    ``hashed`` is the file's :class:`_Fingerprint`, perhaps still being computed; content already
    loaded under another path raises :class:`_Unchanged` before anything is written to the ledger.
    """
    try:
        if replaces is not None:
            for table in ("request_rows", "quarantine"):
                con.execute(f"delete from {table} where file_id = ?", [replaces])  # fixed table names
            con.execute("update ingest_ledger set status = 'replaced' where file_id = ?", [replaces])
        file_id = int(_first(con, "select nextval('ingest_file_id_seq')")[0])
        for table in ("reject_errors", "reject_scans"):  # the CSV reader appends to these per connection
            con.execute(f"drop table if exists temp.{table}")
        for macro in ("stg_ingest_macro_text", "stg_ingest_macro_utc"):
            con.execute(sql.load(macro))
        raw = (_open_csv(con, path, mapping, list(PRESETS[source.preset].values())) if kind == "csv" else
               _open_parquet(con, path, mapping) if kind == "parquet" else _open_jsonl(con, path, mapping))
        params = {**_stage_params(source, cfg, file_id, path, now_utc), "replaced_file_id": replaces}
        loaded, quarantined = _stage_rows(con, path, kind, raw, hashed, params, on_rows)
        _check_contract(con, file_id, cfg, path)
    except duckdb.Error as exc:
        if isinstance(hashed.exception(), IngestError):
            raise hashed.exception() from None  # e.g. truncated gzip: named better than the reader does
        first = str(exc).strip().splitlines()[0]
        raise IngestError(f"{path}: could not be read as {kind}: {first}") from None
    fp = hashed.result()
    same = _same_content(con, path, source, fp.sha256)
    if same is not None:
        raise _Unchanged(same)
    con.execute(sql.load("stg_ingest_ledger_row"), {
        "file_id": file_id, "path": str(path), "source": source.name, "size_bytes": fp.size_bytes,
        "content_sha256": fp.sha256, "rows_loaded": loaded, "rows_quarantined": quarantined,
        "defaulted_columns": list(raw.defaulted), "ingested_at_utc": now_utc.replace(tzinfo=None)})
    return FileResult(str(path), source.name, "replaced" if replaces is not None else "loaded",
                      loaded + quarantined, loaded, quarantined, file_id, raw.defaulted,
                      f"replaced file {replaces}" if replaces is not None else "")


def _stage_rows(con: duckdb.DuckDBPyConnection, path: Path, kind: str, raw: _Raw, hashed: Future,
                params: dict, on_rows: Callable[[int], None] | None = None) -> tuple[int, int]:
    """Every row to ``request_rows`` (good ones are the view ``requests``), bad rows to ``quarantine``.

    Returns (loaded, quarantined). The file is read once: one ordered ``insert ... select``
    parses and checks each row and writes it, good or bad, to ``request_rows``
    (``sql/stg_ingest_insert_rows.sql``), so DuckDB writes full row groups to the file before
    commit and memory stays flat (appending Arrow batches instead kept every appended row in
    memory until commit: 4.3 GiB at 20 M rows, measured). Staging the checked rows in a temp
    table and copying the good ones on wrote each row twice and spilled the temp table to disk
    beyond the memory limit: 50 M CSV rows took 2.18x a bare load that way against 1.63x now
    (medians of 3 interleaved rounds, benchmarks/ingest.py). A CSV row is numbered by its
    position among the file's rows (``rowid``, inside this transaction), past the lines the
    reader rejected or skipped (:func:`_scan_gaps`). The duplicate-id rule is then checked on the file's ids (and on the ids
    of other files in the time window of ``_loaded_id_span``); a row breaking only that rule is
    marked in place, its raw values read again from the file (the only second read, and only
    then). Last, the bad rows are copied to ``quarantine``. Figures: docs/ingest.md.
    """
    file_id = params["file_id"]
    con.sql(sql.load("stg_requests"), params={k: params[k] for k in _STAGE_PARAMS}).create_view(
        "ingest_checked", replace=True)
    con.execute(sql.load("stg_ingest_insert_rows"), {"file_id": file_id})
    if kind != "parquet":  # the last scan of the CSV reader was that insert (its sniffing scans before it)
        raw.rejects = _last_rejects(con, path, raw.header_lines)
    if kind == "csv":  # empty lines are skipped by the reader (JSON lines are numbered before they go)
        raw.skipped = [n - raw.header_lines for n in hashed.result().empty_lines if n > raw.header_lines]
    row_offset = _row_offset(con, path, file_id)
    con.sql(sql.load("stg_ingest_staged_view"), params={"file_id": file_id, "row_offset": row_offset}
            ).create_view("ingest_staged", replace=True)
    for step in ("stg_ingest_repeated_hashes", "stg_ingest_duplicate_ids"):  # the second is ~free when no repeats
        con.execute(sql.load(step))
    ids = {"file_id": file_id, "replaced_file_id": params["replaced_file_id"], "gaps": _scan_gaps(raw),
           "from_utc": None, "to_utc": None}
    earlier = _earlier_ids_exist(con, ids)
    if earlier and params["duplicate_id_window_s"] is not None:  # the span costs a scan: only when needed
        ids.update(_loaded_id_span(con, params))
        earlier = _earlier_ids_exist(con, ids)
    if _first(con, "select count(*) from ingest_duplicate_ids")[0] or earlier:
        con.execute(sql.load("stg_ingest_duplicate_rows"), ids)
        if _first(con, "select count(*) from ingest_duplicate_rows")[0]:
            con.execute(sql.load("stg_ingest_mark_duplicates"), {"file_id": file_id, "row_offset": row_offset})
    loaded = _count(con, "select count(*) from requests where file_id = $f", {"f": file_id})
    if on_rows is not None:
        on_rows(loaded)
    con.execute(sql.load("stg_ingest_insert_quarantine"), {"file_id": file_id, "path": params["path"]})
    if raw.rejects or raw.skipped:
        _quarantine_rejects(con, file_id, path, raw)
    for view in ("ingest_staged", "ingest_checked"):
        con.execute(f"drop view if exists {view}")  # fixed names
    for table in _STAGE_TABLES:  # temp space back before the next file
        con.execute(f"drop table if exists temp.{table}")
    quarantined = _count(con, "select count(*) from quarantine where file_id = $f", {"f": file_id})
    if on_rows is not None:
        on_rows(quarantined)
    rows_read = loaded + quarantined
    if rows_read == 0:
        raise IngestError(f"{path}: no data rows (header only?); expected at least one request row")
    # independent counts: the Parquet footer exactly; for text, every record takes at least one line
    bound = (int(_first(con, "select sum(num_rows) from parquet_file_metadata(?)", [str(path)])[0])
             if kind == "parquet" else _line_bound(hashed.result(), raw))
    if (kind == "parquet" and rows_read != bound) or (bound is not None and rows_read > bound):
        raise IngestError(f"{path}: read {rows_read} rows but the file holds at most {bound}")
    return loaded, quarantined


def _earlier_ids_exist(con: duckdb.DuckDBPyConnection, ids: dict) -> bool:
    """Whether `requests` holds an id of another file in the span ``ids`` names (sql/stg_ingest_loaded_ids_exist.sql)."""
    return bool(_first(con, sql.load("stg_ingest_loaded_ids_exist"),
                       {k: ids[k] for k in ("file_id", "replaced_file_id", "from_utc", "to_utc")})[0])


def _loaded_id_span(con: duckdb.DuckDBPyConnection, params: dict) -> dict:
    """The arrival span [UTC] of the rows of other files whose ids this file's ids are checked against.

    ``$from_utc``/``$to_utc`` for sql/stg_ingest_loaded_ids_exist.sql and sql/stg_ingest_duplicate_rows.sql:
    the file's own span widened by ``duplicate_id_window_s`` on each side. As constants they prune
    `requests` by its row groups' time ranges: checking every loaded id took 8.1 s of the 18.3 s load
    of a 10 M-row file a month after another, and grows with the database; that load takes 11.0 s
    now (measured). Computed only when `requests` holds ids of other files at all (the span is a
    scan of the file's rows).
    """
    window = params["duplicate_id_window_s"]
    first, last = _first(con, "select min(ts_utc), max(ts_utc) from ingest_staged where ts_utc is not null "
                         "and isfinite(ts_utc)")
    if first is None:
        return {"from_utc": datetime(1970, 1, 1), "to_utc": datetime(1970, 1, 1)}  # no row has a time: nothing
    margin = timedelta(seconds=window)
    return {"from_utc": first - margin, "to_utc": last + margin}


def _line_bound(fp: _Fingerprint, raw: _Raw) -> int | None:
    """At most this many data rows in a text file (every record takes a line), or None when not counted."""
    return None if fp.max_records is None else fp.max_records - raw.header_lines


def _row_offset(con: duckdb.DuckDBPyConnection, path: Path, file_id: int) -> int:
    """The offset that turns the position (``rowid``) of a row of file ``file_id`` into its data row number.

    Rows appended by one ordered insert inside a transaction have contiguous rowids, in scan
    order; a gap would break the numbering, so it is checked (a bug, not a property of the file).
    Only valid inside the ingest's transaction (a checkpoint may renumber rows).
    """
    first, last, rows = _first(con, "select min(rowid), max(rowid), count(*) from request_rows where file_id = ?",
                               [file_id])
    if rows and last - first + 1 != rows:
        raise IngestError(f"{path}: written rows are not numbered contiguously ({rows} rows, rowid {first}..{last})")
    return 1 - first if rows else 0


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
    results = [FileResult(p, source.name, "error", message=f"{p}: no such file") for p in missing]
    for path in files:
        try:
            result = load_file(con, path, source, cfg, now_utc=now_utc, on_changed=on_changed, on_rows=on_rows)
        except IngestError as exc:
            status: Status = "refused" if "refusing" in str(exc) else "error"
            result = FileResult(str(path), source.name, status, message=str(exc))
        results.append(result)
        if on_file is not None:
            on_file(result)
    return results


def ingest_sources(con: duckdb.DuckDBPyConnection, cfg: IngestConfig, **kwargs) -> list[FileResult]:
    """Ingest the files of every source configured in ``[[ingest.sources]]``."""
    return [r for s in cfg.sources for r in ingest_paths(con, s.paths, s, cfg, **kwargs)]

