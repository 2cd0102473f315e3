"""Stream generated days to files: Parquet, CSV or JSON lines, one file, one a month or one a day.

The file name's suffix picks the format (:func:`output_kind`); :func:`target_paths`
maps each day to its file; :func:`write_sample` generates and writes, each file under
a temporary name renamed when complete. Text formats carry ISO-8601 timestamps,
decoded strings and whole-millisecond integers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as arrow
import pyarrow.compute as pc

from capplan.sample.generate import SCHEMA, DayChunk, prefetch_days
from capplan.sample.isotime import format_iso_utc
from capplan.sample.spec import Burst, SampleSpec, SampleTruth

__all__ = ["ROW_GROUP_ROWS", "SampleResult", "check_outputs", "output_kind", "target_paths", "write_sample"]

# Text formats carry ISO-8601 timestamps, decoded strings and whole-millisecond integers
# (the generator rounds TTFT and latency to whole ms; integers format much faster than floats).
_TEXT_TYPES = {"ts_utc": arrow.string(), "model": arrow.string(), "tenant": arrow.string(), "zone": arrow.string(),
               "ttft_ms": arrow.int64(), "latency_ms": arrow.int64()}
_TEXT_SCHEMA = arrow.schema([arrow.field(f.name, _TEXT_TYPES.get(f.name, f.type), f.nullable) for f in SCHEMA])

FORMATS = {".csv": "csv", ".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd"}
ROW_GROUP_ROWS = 1 << 20  # Parquet row-group size, and the most rows buffered before writing


@dataclass(frozen=True)
class SampleResult:
    """What :func:`write_sample` wrote."""

    paths: tuple[Path, ...]
    rows: int
    truth: SampleTruth


def output_kind(path: str | Path) -> tuple[str, str | None]:
    """``(format, compression)`` from a file name's suffixes, e.g. ``x.csv.zst`` → ``("csv", "zstd")``.

    Raises
    ------
    ValueError
        If the suffix is not one of ``.csv``, ``.parquet``, ``.jsonl``, ``.ndjson``
        (optionally ``.gz``/``.zst`` for CSV and JSON lines).
    """
    suffixes = [s.lower() for s in Path(path).suffixes]
    compression = COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    fmt_suffix = (suffixes[-2] if compression and len(suffixes) > 1 else suffixes[-1]) if suffixes else ""
    fmt = FORMATS.get(fmt_suffix)
    valid = "'.csv', '.parquet', '.jsonl', '.ndjson', optionally + '.gz' or '.zst' (not for Parquet)"
    if fmt is None or (fmt == "parquet" and compression):
        raise ValueError(f"{path}: cannot tell the output format from the suffix; expected {valid}")
    return fmt, compression


class _Sink:
    """Writes Arrow tables to one file under a temporary name, renamed when complete."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tmp = path.with_name(f".{path.name}.tmp")
        path.parent.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def open(path: Path) -> _Sink:
        fmt, compression = output_kind(path)
        return _ParquetSink(path) if fmt == "parquet" else _TextSink(path, fmt, compression)

    def write(self, table: arrow.Table) -> None:
        raise NotImplementedError

    def _finish(self, ok: bool) -> None:
        raise NotImplementedError

    def close(self, ok: bool) -> None:
        try:
            self._finish(ok)
        finally:
            if ok:
                os.replace(self.tmp, self.path)
            else:
                self.tmp.unlink(missing_ok=True)


class _ParquetSink(_Sink):
    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        super().__init__(path)
        self._writer = pq.ParquetWriter(
            self.tmp, SCHEMA, compression="zstd", use_dictionary=["model", "tenant", "zone", "status"],
            # Sorted times and numbered ids delta-encode well; floats compress better split by byte.
            column_encoding={"ts_utc": "DELTA_BINARY_PACKED", "request_id": "DELTA_BYTE_ARRAY",
                             "ttft_ms": "BYTE_STREAM_SPLIT", "latency_ms": "BYTE_STREAM_SPLIT"})
        self._pending: list[arrow.Table] = []
        self._pending_rows = 0

    def write(self, table: arrow.Table) -> None:
        # Small days are gathered into row groups of up to ROW_GROUP_ROWS: larger groups
        # compress better (docs/sample.md) and memory stays bounded.
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._pending_rows:
            self._writer.write_table(arrow.concat_tables(self._pending), row_group_size=ROW_GROUP_ROWS)
        self._pending, self._pending_rows = [], 0

    def _finish(self, ok: bool) -> None:
        try:
            if ok:
                self._flush()
        finally:
            self._writer.close()


class _TextSink(_Sink):
    """CSV or JSON lines, one encoded day at a time, through gzip (level 6) or zstd."""

    def __init__(self, path: Path, fmt: str, compression: str | None) -> None:
        super().__init__(path)
        self._fmt = fmt
        self._raw = open(self.tmp, "wb")  # noqa: SIM115 - closed in _finish
        if compression == "gzip":
            import gzip

            # Level 6, not Arrow's slower default 9 (docs/sample.md); mtime=0 and no name keep bytes reproducible.
            self._stream = gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=self._raw, mtime=0)
        elif compression == "zstd":
            self._stream = arrow.CompressedOutputStream(self._raw, "zstd")
        else:
            self._stream = self._raw
        self._header = True

    def write(self, table: arrow.Table) -> None:
        table = _text_table(table)
        if self._fmt == "csv":
            import pyarrow.csv as pcsv

            out = arrow.BufferOutputStream()
            pcsv.write_csv(table, out, pcsv.WriteOptions(include_header=self._header))
            self._stream.write(out.getvalue())
            self._header = False
        else:
            for start in range(0, table.num_rows, ROW_GROUP_ROWS):  # keeps each string column < 2 GiB
                self._stream.write(_json_lines(table.slice(start, ROW_GROUP_ROWS)))

    def _finish(self, ok: bool) -> None:
        try:
            if self._stream is not self._raw:
                self._stream.close()
        finally:
            self._raw.close()


def _text_table(table: arrow.Table) -> arrow.Table:
    """Text-format columns: ISO-8601 UTC timestamps, decoded strings, whole-ms latencies as integers."""
    ts_us = table["ts_utc"].combine_chunks().cast(arrow.int64()).to_numpy()
    table = table.set_column(0, arrow.field("ts_utc", arrow.string()), format_iso_utc(ts_us))
    return table.cast(_TEXT_SCHEMA)


def _json_lines(table: arrow.Table) -> arrow.Buffer:
    """One JSON object per row, joined column-wise by Arrow (no per-row Python).

    String values need no escaping: names are checked by :class:`SampleSpec` and ids and
    timestamps are built from digits.
    """
    pieces: list = []
    for i, f in enumerate(table.schema):
        values = table.column(i)
        if arrow.types.is_string(f.type):
            values = pc.binary_join_element_wise('"', values, '"', "")
        else:
            values = pc.cast(values, arrow.string())
        pieces += [("{" if i == 0 else ",") + json.dumps(f.name) + ":", pc.fill_null(values, "null")]
    rows = pc.binary_join_element_wise(*pieces, "}\n", "").combine_chunks()
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int32)[rows.offset: rows.offset + len(rows) + 1]
    return rows.buffers()[2][int(offsets[0]):int(offsets[-1])] if len(rows) else arrow.py_buffer(b"")


def target_paths(spec: SampleSpec, out: str | Path,
                 split: Literal["none", "month", "day"] = "none") -> dict[date, Path]:
    """The file each day of ``spec`` goes to.

    ``split="none"``: all days to ``out``. ``"month"``: ``<stem>-YYYY-MM<suffixes>``
    beside ``out``. ``"day"``: Hive layout ``out/dt=YYYY-MM-DD/part-0.parquet``
    (``out`` is a folder; Parquet only).
    """
    out = Path(out)
    if split == "day":
        return {d: out / f"dt={d.isoformat()}" / "part-0.parquet" for d in spec.dates()}
    output_kind(out)
    if split == "none":
        return dict.fromkeys(spec.dates(), out)
    if split == "month":
        suffix = "".join(out.suffixes)
        stem = out.name[: len(out.name) - len(suffix)]
        return {d: out.with_name(f"{stem}-{d:%Y-%m}{suffix}") for d in spec.dates()}
    raise ValueError(f"split must be 'none', 'month' or 'day', got {split!r}")


def check_outputs(spec: SampleSpec, out: str | Path, split: Literal["none", "month", "day"] = "none",
                  overwrite: bool = False) -> dict[date, Path]:
    """:func:`target_paths`, refusing existing files unless ``overwrite``.

    Raises
    ------
    ValueError
        Unknown suffix or split.
    FileExistsError
        A target exists and ``overwrite`` is false.
    """
    targets = target_paths(spec, out, split)
    if not overwrite:
        existing = next((p for p in dict.fromkeys(targets.values()) if p.exists()), None)
        if existing is not None:
            raise FileExistsError(f"{existing} already exists (pass overwrite=True / --force to replace it)")
    return targets


def write_sample(
    spec: SampleSpec,
    out: str | Path,
    *,
    split: Literal["none", "month", "day"] = "none",
    overwrite: bool = False,
    on_day: Callable[[DayChunk], None] | None = None,
) -> SampleResult:
    """Generate ``spec`` and stream it to ``out``, one day at a time.

    Parameters
    ----------
    spec : SampleSpec
        What to generate.
    out : str or Path
        Output file; its suffix picks the format (``.csv``, ``.parquet``,
        ``.jsonl``/``.ndjson``, optionally ``.gz``/``.zst`` for text). A folder
        when ``split="day"``.
    split : {"none", "month", "day"}
        One file, one file per calendar month, or Hive-partitioned Parquet by day
        (see :func:`target_paths`).
    overwrite : bool
        Replace existing outputs; otherwise an existing target raises ``FileExistsError``.
    on_day : callable, optional
        Called with each :class:`DayChunk` after it is written (progress bars).

    Returns
    -------
    SampleResult
        Paths written, row count, and the ground truth including bursts.

    Notes
    -----
    Each file is written under a temporary name and renamed when complete, so a
    watcher never sees half a file. The next day is generated on a second thread
    while this one is written; memory holds at most two days and one row group
    (:data:`ROW_GROUP_ROWS`).
    """
    targets = check_outputs(spec, out, split, overwrite)
    rows_per_day: dict[date, int] = {}
    bursts: list[Burst] = []
    sink: _Sink | None = None
    try:
        for chunk in prefetch_days(spec):
            path = targets[chunk.day]
            if sink is None or sink.path != path:
                if sink is not None:
                    sink.close(ok=True)
                sink = _Sink.open(path)
            sink.write(chunk.table)
            rows_per_day[chunk.day] = chunk.table.num_rows
            bursts.extend(chunk.bursts)
            if on_day is not None:
                on_day(chunk)
    except BaseException:
        if sink is not None:
            sink.close(ok=False)
        raise
    if sink is not None:
        sink.close(ok=True)
    truth = SampleTruth(spec.incident_windows, spec.drift, tuple(bursts), rows_per_day)
    return SampleResult(tuple(dict.fromkeys(targets.values())), sum(rows_per_day.values()), truth)
