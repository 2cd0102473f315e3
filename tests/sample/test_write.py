"""Tests of capplan/sample/write.py: formats, byte-for-byte reproducibility, splits, refusals."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pyarrow as arrow
import pytest

from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.sample.generate import SCHEMA, iter_days
from capplan.sample.spec import Drift, Incident, SampleSpec
from capplan.sample.write import check_outputs, output_kind, write_sample

MONDAY = date(2026, 8, 3)


def _table(spec: SampleSpec) -> arrow.Table:
    return arrow.concat_tables(chunk.table for chunk in iter_days(spec))


@pytest.mark.parametrize("name", ["x.parquet", "x.csv.gz", "x.jsonl.zst", "x.csv"])
def test_same_seed_same_bytes(tmp_path: Path, name: str):
    spec = SampleSpec(MONDAY, 2, 2_000, seed=9)
    a, b, c = (write_sample(s, tmp_path / d / name).paths[0]
               for d, s in (("a", spec), ("b", spec), ("c", replace(spec, seed=10))))
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


#: SHA-256 of each file written for PINNED_SPEC split by month, per format, and of its ground truth
#: as sorted JSON. Pinned before capplan/sample was split into modules (same spec and seed, same
#: bytes). Parquet and zstd bytes also depend on the pyarrow pinned in constraints.txt.
PINNED_SHA256 = {
    "r.parquet": {"r-2026-08.parquet": "7cd9c5d225753128f6aea7d09a50bf36ab40f3ce44704c6c4dcaf2f4478cab38",
                  "r-2026-09.parquet": "529bbe1fa2115d041cbcc788323a787d144265b7567ffc61e77a01b6bec1e40a"},
    "r.csv": {"r-2026-08.csv": "537fcf11bfb002340881ee796a909ff4d3c3236600558b0da3196b2b8f600d4a",
              "r-2026-09.csv": "3b15489930b1c2b7c026033fbf873ffa4f426916d769a3492f6acd8f00bb6516"},
    "r.csv.gz": {"r-2026-08.csv.gz": "cc314ad7cfaee0f53a017518c9e0bbb20dfe5c16941daf02b8c34c62e12573c6",
                 "r-2026-09.csv.gz": "beb306c5ac1a382d20c9c2b652630e48a80f837c571afd8a9295fec7ea00d685"},
    "r.jsonl": {"r-2026-08.jsonl": "ef9538451e3d6f5d6426482221f8ba496044111da9859c37378d969cc1cee598",
                "r-2026-09.jsonl": "25445a8abb875070ceb4fdf497b9f30a0901526b5027ec444219c58f99c63a09"},
    "r.ndjson.zst": {"r-2026-08.ndjson.zst": "9a897ab4bc13c482993f073b8eb9941ea4725314a97dc8bad5536867ce248a38",
                     "r-2026-09.ndjson.zst": "9164d205a19b567769be3a71fbe49f3ef49a06d907a90b29468eeb2a6f5756f0"},
}
PINNED_TRUTH_SHA256 = "67223cf1d11ff20dc9a0f324f8a1fb952aa167e96703105b3660771ba65f2509"
PINNED_SPEC = SampleSpec(date(2026, 8, 31), 2, 1_500, seed=13,
                         incidents=[Incident(datetime(2026, 8, 31, 14), 90, 0.3, 2.5)],
                         drift=Drift("llama-3.1-70b", "input", datetime(2026, 9, 1, 6, tzinfo=UTC), 1.4))


@pytest.mark.parametrize("name", sorted(PINNED_SHA256))
def test_small_sample_bytes_are_pinned(tmp_path: Path, name: str):
    """Same spec and seed give these exact bytes in every format (two months, an incident, drift)."""
    result = write_sample(PINNED_SPEC, tmp_path / name, split="month")
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in result.paths} == PINNED_SHA256[name]
    truth = json.dumps(result.truth.to_dict(), sort_keys=True).encode()
    assert hashlib.sha256(truth).hexdigest() == PINNED_TRUTH_SHA256


@pytest.mark.parametrize("name, reader", [
    ("r.parquet", "read_parquet"), ("r.csv", "read_csv"), ("r.csv.gz", "read_csv"), ("r.csv.zst", "read_csv"),
    ("r.jsonl", "read_json"), ("r.ndjson.gz", "read_json"), ("r.jsonl.zst", "read_json"),
])
def test_formats_round_trip_through_duckdb_into_requests(tmp_path: Path, name: str, reader: str):
    spec = SampleSpec(MONDAY, 2, 1_500, seed=13, incidents=[Incident(datetime(2026, 8, 4, 9), 120, 0.3, 2.0)])
    expected = _table(spec)
    path = write_sample(spec, tmp_path / name).paths[0]
    con = connect()
    ensure_tables(con)
    con.register("expected", expected)
    con.execute(f"insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select *, 1 from {reader}($p)", {"p": str(path)})
    (n, diff), = con.execute("""
        select (select count(*) from requests),
               (select count(*) from (select * exclude (file_id) from requests
                                      except all select * replace (ts_utc::timestamp as ts_utc) from expected))
    """).fetchall()
    assert (n, diff) == (expected.num_rows, 0)


def test_csv_header_and_iso_timestamps(tmp_path: Path):
    path = write_sample(SampleSpec(MONDAY, 1, 500, seed=1), tmp_path / "r.csv").paths[0]
    header, first = path.read_text().splitlines()[:2]
    assert header.replace('"', "").split(",") == SCHEMA.names
    assert datetime.strptime(first.split(",")[0].strip('"'), "%Y-%m-%dT%H:%M:%S.%fZ").date() == MONDAY


def test_hive_partitions_by_day(tmp_path: Path):
    spec = SampleSpec(date(2026, 8, 30), 4, 800, seed=2)
    result = write_sample(spec, tmp_path / "hive", split="day")
    assert [p.relative_to(tmp_path / "hive").as_posix() for p in result.paths] == [
        f"dt={d.isoformat()}/part-0.parquet" for d in spec.dates()]
    rows = duckdb.sql("select count(*), count(*) filter (dt <> ts_utc::date) "
                      "from read_parquet($g, hive_partitioning=true)",
                      params={"g": str(tmp_path / "hive" / "*" / "*.parquet")}).fetchall()
    assert rows == [(result.rows, 0)]


def test_split_by_month_names_and_counts(tmp_path: Path):
    spec = SampleSpec(date(2026, 8, 30), 35, 300, seed=2)
    result = write_sample(spec, tmp_path / "logs.csv.gz", split="month")
    assert [p.name for p in result.paths] == ["logs-2026-08.csv.gz", "logs-2026-09.csv.gz", "logs-2026-10.csv.gz"]
    (n,), = duckdb.sql("select count(*) from read_csv($p)", params={"p": [str(p) for p in result.paths]}).fetchall()
    assert n == result.rows == sum(result.truth.rows_per_day.values())


def test_existing_output_refused_unless_overwrite(tmp_path: Path):
    spec = SampleSpec(MONDAY, 1, 100)
    write_sample(spec, tmp_path / "a.csv")
    with pytest.raises(FileExistsError, match="a.csv"):
        write_sample(spec, tmp_path / "a.csv")
    assert write_sample(spec, tmp_path / "a.csv", overwrite=True).rows > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]  # no temporary left behind


@pytest.mark.parametrize("name, expected", [
    ("a.csv", ("csv", None)), ("a.CSV.GZ", ("csv", "gzip")), ("a.b.jsonl.zst", ("jsonl", "zstd")),
    ("a.ndjson", ("jsonl", None)), ("a.parquet", ("parquet", None)),
])
def test_output_kind(name: str, expected: tuple):
    assert output_kind(name) == expected



@pytest.mark.parametrize("make, match", [
    (lambda: output_kind("a.parquet.gz"), "suffix"),
    (lambda: output_kind("a.txt"), "suffix"),
    (lambda: check_outputs(SampleSpec(MONDAY, 1, 1), "a.csv", "week"), "split"),
])
def test_bad_output_raises_value_error(make, match: str):
    with pytest.raises(ValueError, match=match):
        make()
