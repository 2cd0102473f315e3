"""A file's fingerprint: size, SHA-256 and (text files) a bound on its lines and where its empty lines are.

One streamed read in Python, independent of DuckDB's reader: the hash decides whether a file
is new (the ledger), the line bound checks the rows DuckDB read, and the empty lines renumber
the rows after them (DuckDB's CSV reader skips them). Owns the gzip stream that inflates text
for the count (:class:`GzipStream`), the line counter (:class:`LineCounter`) and cancellation
(a ``threading.Event`` checked per chunk). Costs and measurements: ``docs/ingest.md``.
"""

from __future__ import annotations

import hashlib
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from capplan.ingest.errors import IngestError

_CHUNK_BYTES = 8 << 20


@dataclass(frozen=True)
class Fingerprint:
    """What one streamed read of a file learnt."""

    size_bytes: int
    sha256: str
    max_records: int | None  # an upper bound on the records (header included), when cheap to know
    empty_lines: tuple[int, ...] = ()  # 1-based line numbers of the empty lines, when counted (see LineCounter)


def fingerprint(path: Path, kind: str, compression: str | None, cancel: threading.Event | None = None,
                ) -> Fingerprint:
    """Size, SHA-256 and (text files, plain or gzip) a bound on the lines, in one streamed read.

    Safe to run on a thread (hashlib and numpy release the GIL on large buffers); ``cancel``
    stops it at the next 8 MiB chunk (its result is then unusable: :class:`IngestError`). The
    caller checks the file's head first (:func:`capplan.ingest.formats.check_head`).
    """
    digest = hashlib.sha256()
    size = 0
    gz = GzipStream(path) if compression == "gzip" else None
    lines = LineCounter() if kind != "parquet" and compression != "zstd" else None
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
    if compression == "zstd":
        check_zstd_complete(path)
    if lines is None:
        return Fingerprint(size, digest.hexdigest(), None)
    return Fingerprint(size, digest.hexdigest(), lines.max_records, tuple(lines.empty))


class LineCounter:
    """Count the lines of text fed chunk by chunk, and note the empty ones (numbered in ``\\n`` lines).

    ``max_records`` bounds the records (each takes a line, whichever of ``\\n`` or ``\\r`` ends
    them). ``empty`` lists the 1-based numbers of the lines that are empty (nothing, or a lone
    ``\\r``, before their ``\\n``): DuckDB's CSV reader skips them, so the rows after one are
    renumbered past it. Counted with numpy from the positions of the ``\\n`` bytes, cheaper than
    ``bytes.count`` or ``bytes.find`` (figures: docs/ingest.md); a chunk without ``\\r`` skips that count.
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


_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE = range(0x184D2A50, 0x184D2A60)


def check_zstd_complete(path: Path) -> None:
    """Check that a zstd file is whole frames: every frame reaches its last block (and checksum), nothing follows.

    DuckDB's zstd reader stops quietly where a truncated file ends (a file cut in half loaded
    18,460 of 50,000 rows as complete), so the frame structure is walked here: each block header
    (3 bytes: last-block bit, type, size) says how far its block reaches, so the walk reads a few
    bytes per block (of up to 128 KiB) and seeks past the rest. Format: RFC 8878, section 3.1.

    Raises
    ------
    IngestError
        The file ends inside a frame (truncated), or holds bytes that are not a zstd frame.
    """
    size = path.stat().st_size
    with open(path, "rb") as f:
        while f.tell() < size:
            frame_at = f.tell()
            magic = int.from_bytes(_read_exactly(f, path, 4), "little")
            if magic in _ZSTD_SKIPPABLE:
                f.seek(int.from_bytes(_read_exactly(f, path, 4), "little"), 1)
            elif magic == _ZSTD_MAGIC:
                _skip_zstd_frame(f, path)
            else:
                raise IngestError(f"{path}: corrupt zstd data (byte {frame_at} does not start a zstd frame); "
                                  "expected a complete zstd file")
            if f.tell() > size:  # a seek past the end: the block or checksum was cut off
                raise IngestError(f"{path}: truncated zstd data (the stream ends early); "
                                  "expected a complete zstd file")


def _skip_zstd_frame(f, path: Path) -> None:
    """Move ``f`` from after a frame's magic number to after the frame (RFC 8878, 3.1.1)."""
    (descriptor,) = _read_exactly(f, path, 1)
    fcs_flag, single_segment, checksum, dict_flag = descriptor >> 6, descriptor >> 5 & 1, descriptor >> 2 & 1, descriptor & 3
    header_bytes = ((0 if single_segment else 1)  # window descriptor
                    + (0, 1, 2, 4)[dict_flag]  # dictionary id
                    + ((1 if single_segment else 0), 2, 4, 8)[fcs_flag])  # frame content size
    f.seek(header_bytes, 1)
    last = False
    while not last:
        header = int.from_bytes(_read_exactly(f, path, 3), "little")
        last, block_type, block_bytes = bool(header & 1), header >> 1 & 3, header >> 3
        if block_type == 3:
            raise IngestError(f"{path}: corrupt zstd data (reserved block type); expected a complete zstd file")
        f.seek(1 if block_type == 1 else block_bytes, 1)  # an RLE block holds one byte
    f.seek(4 * checksum, 1)


def _read_exactly(f, path: Path, n: int) -> bytes:
    data = f.read(n)
    if len(data) < n:
        raise IngestError(f"{path}: truncated zstd data (the stream ends early); expected a complete zstd file")
    return data


class GzipStream:
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
