"""capplan.ingest: the fingerprint: gzip stream, line counter (capplan.ingest.fingerprint).

The bad-input corpus is in tests/data/ingest/; fixtures in tests/ingest/conftest.py.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.db import connect
from capplan.ingest import IngestError, load_file
from capplan.ingest.fingerprint import LineCounter


def _empty_lines_of(data: bytes) -> list[int]:
    """Reference: 1-based numbers of the lines ended by \\n that hold nothing or a lone \\r."""
    return [i for i, line in enumerate(data.split(b"\n")[:-1], start=1) if line in (b"", b"\r")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r", b"\r\n", b",", b"\n\n"]), max_size=40),
       st.lists(st.integers(0, 200), max_size=6))
def test_line_counter_finds_every_empty_line_whatever_the_chunks(parts, cuts):
    data = b"".join(parts)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    counter = LineCounter()
    for a, b in zip(bounds, bounds[1:]):
        counter.feed(data[a:b])
    assert counter.empty == _empty_lines_of(data)
    assert counter.max_records == max(data.count(b"\n"), data.count(b"\r")) + 1


def test_a_gzip_stream_corrupt_in_the_middle_is_named_as_such(tmp_path, now, cfg_all, canonical):
    body = gzip.compress(("ts_utc,input_tokens,output_tokens\n" +
                          "".join(f"2026-10-01T00:00:{i % 60:02d}Z,{i},{i}\n" for i in range(20_000))).encode())
    path = tmp_path / "corrupt.csv.gz"
    path.write_bytes(body[:len(body) // 2] + bytes(64) + body[len(body) // 2 + 64:])
    con = connect()
    with pytest.raises(IngestError, match=r"corrupt\.csv\.gz: (corrupt|truncated) gzip data"):
        load_file(con, path, canonical, cfg_all, now_utc=now)
    assert con.execute("select count(*) from requests").fetchall() == [(0,)]


def test_concatenated_gzip_members_and_crlf_line_endings(tmp_path, load):
    path = tmp_path / "appended.csv.gz"
    path.write_bytes(gzip.compress(b"ts_utc,input_tokens,output_tokens\r\n2026-10-01T00:00:00Z,1,2\r\n")
                     + gzip.compress(b"2026-10-01T00:00:01Z,3,4\r\n"))
    result, con = load(path)
    assert (result.rows_read, result.rows_loaded) == (2, 2)
    assert con.execute("select sum(output_tokens) from requests").fetchall() == [(6,)]


def _zstd_with_duckdb(src: Path, out: Path) -> None:
    duckdb.connect().execute(f"copy (select * from read_csv(?, all_varchar=true)) to '{out}' (header, compression zstd)",
                             [str(src)])


def _zstd_with_cli(src: Path, out: Path) -> None:
    if shutil.which("zstd") is None:
        pytest.skip("the zstd command is not installed (the DuckDB-written case still runs)")
    subprocess.run(["zstd", "-q", "-f", str(src), "-o", str(out)], check=True)


@pytest.mark.parametrize("compress", [_zstd_with_duckdb, _zstd_with_cli], ids=["duckdb", "zstd-cli"])
def test_a_truncated_zstd_file_is_a_whole_file_error(tmp_path, compress, load):
    # issue 20, item 4: half of a zstd-compressed 50,000-row CSV loaded 18,460 rows as complete
    src = tmp_path / "z.csv"
    src.write_text("ts_utc,input_tokens,output_tokens,request_id\n" + "".join(
        f"2026-10-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z,{i % 97},{i % 13},r{i}\n"
        for i in range(50_000)))
    whole = tmp_path / "whole.csv.zst"
    compress(src, whole)
    result, _ = load(whole)
    assert (result.status, result.rows_read) == ("loaded", 50_000)
    half = tmp_path / "half.csv.zst"
    half.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(IngestError, match="truncated zstd data"):
        load(half)
    garbage = tmp_path / "trailing.csv.zst"
    garbage.write_bytes(whole.read_bytes() + b"not zstd")
    with pytest.raises(IngestError, match="corrupt zstd data"):
        load(garbage)
