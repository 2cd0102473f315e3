"""Tests of the synthetic request-log generator (capplan/sample.py) and ``capplan sample``."""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.sample import (
    DEFAULT_MODELS,
    SCHEMA,
    Drift,
    Incident,
    SampleSpec,
    check_outputs,
    generate_day,
    ground_truth,
    iter_days,
    output_kind,
    write_sample,
)
from capplan.sample import _epoch_us, _iso_utc
from capplan.sql import load

MONDAY = date(2026, 8, 3)
ERRORS = "status in (429, 500, 503)"


def _table(spec: SampleSpec) -> pa.Table:
    return pa.concat_tables(chunk.table for chunk in iter_days(spec))


def _sql(table: pa.Table, query: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.register("t", table)
    return con.execute(query, params or []).fetchall()


@pytest.fixture(scope="module")
def four_weeks() -> pa.Table:
    """Four whole weeks, no growth, no incidents: for counts and cycles."""
    return _table(SampleSpec(MONDAY, 28, 6_000, seed=11, monthly_growth_fraction=0.0, incidents=False))


DRIFT = Drift("llama-3.1-70b", "input", datetime(2026, 8, 10, 12, tzinfo=UTC), 1.3)
INCIDENTS = (Incident(datetime(2026, 8, 5, 14, 0), 60, 0.20, 3.0),
             Incident(datetime(2026, 8, 12, 10, 30), 30, 0.08, 2.0))


@pytest.fixture(scope="module")
def drifted() -> tuple[SampleSpec, pa.Table]:
    spec = SampleSpec(MONDAY, 14, 20_000, seed=5, incidents=INCIDENTS, drift=DRIFT)
    return spec, _table(spec)


# ------------------------------------------------------------ determinism


def test_same_seed_same_rows_different_seed_different():
    spec = SampleSpec(MONDAY, 2, 3_000, seed=1)
    assert _table(spec).equals(_table(spec))
    assert not _table(spec).equals(_table(replace(spec, seed=2)))


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


def test_a_day_does_not_depend_on_the_days_around_it():
    """Per-day generators: days 5–7 are the same whether generated in a 3- or a 10-day run."""
    long = SampleSpec(date(2026, 8, 1), 10, 4_000, seed=3, monthly_growth_fraction=0.0, incidents=False)
    short = replace(long, start=date(2026, 8, 5), days=3)
    by_day = {c.day: c.table for c in iter_days(long)}
    for chunk in iter_days(short):
        assert chunk.table.equals(by_day[chunk.day])
    assert generate_day(long, date(2026, 8, 6)).table.equals(by_day[date(2026, 8, 6)])


# ------------------------------------------------------------ traffic shape


def test_weekday_count_matches_hand_computed_rate():
    """86,400 requests/day with no bursts is λ₀ = 1 /s; a weekday is 7/(5 + 2·0.55) = 1.1475 of that.

    Expected 99,148 arrivals (Poisson sd 315); tolerance 1.5 %.
    """
    spec = SampleSpec(MONDAY, 1, 86_400, seed=4, monthly_growth_fraction=0.0, incidents=False, bursts_per_day=0)
    assert generate_day(spec, MONDAY).table.num_rows == pytest.approx(86_400 * 7 / 6.1, rel=0.015)


def test_row_count_close_to_requested(four_weeks: pa.Table):
    """Four whole weeks at 6,000/day: 168,000 expected; bursts and Poisson noise stay within 3 %."""
    assert four_weeks.num_rows == pytest.approx(28 * 6_000, rel=0.03)


def test_nights_quieter_than_afternoons(four_weeks: pa.Table):
    """Peak at 15:00 UTC, trough at 03:00: (1 − 0.6)/(1 + 0.6) = 0.25 at the extremes.

    Hours 01–05 against hours 13–17 must be below 0.5.
    """
    (night, day), = _sql(four_weeks, """
        select count(*) filter (hour(ts_utc) between 1 and 5), count(*) filter (hour(ts_utc) between 13 and 17)
        from t""")
    assert night < 0.5 * day


def test_weekends_quieter_than_weekdays(four_weeks: pa.Table):
    """Configured weekend/weekday ratio 0.55; measured per-day means agree within ±0.08."""
    (weekend, weekday), = _sql(four_weeks, """
        select count(*) filter (isodow(ts_utc) >= 6) / 8, count(*) filter (isodow(ts_utc) <= 5) / 20 from t""")
    assert weekend / weekday == pytest.approx(0.55, abs=0.08)


@pytest.mark.parametrize("growth", [0.25, -0.2])
def test_growth_sign_and_size(growth: float):
    """Week 5 over week 1 is (1 + g)^(28 days / 30.44 days): within ±6 %."""
    spec = SampleSpec(MONDAY, 35, 4_000, seed=8, monthly_growth_fraction=growth, incidents=False)
    (first, last), = _sql(_table(spec), """
        select count(*) filter (ts_utc < $a), count(*) filter (ts_utc >= $b) from t""",
        {"a": datetime(2026, 8, 10, tzinfo=UTC), "b": datetime(2026, 8, 31, tzinfo=UTC)})
    expected = (1 + growth) ** (28 / (365.25 / 12))
    assert last / first == pytest.approx(expected, rel=0.06)
    assert (last > first) == (growth > 0)


def test_bursts_raise_the_rate_by_their_multiplier():
    """Inside each ground-truth burst the arrival rate is ≈ multiplier × the 15 minutes around it (±35 %)."""
    spec = SampleSpec(MONDAY, 1, 300_000, seed=21, incidents=False)
    chunk = generate_day(spec, MONDAY)
    assert len(chunk.bursts) >= 2
    ts = chunk.table["ts_utc"].cast(pa.int64()).to_numpy() / 1e6
    checked = 0
    for b in chunk.bursts:
        lo = b.start.timestamp()
        hi = lo + b.duration_s
        inside = np.count_nonzero((ts >= lo) & (ts < hi)) / b.duration_s
        around = (np.count_nonzero((ts >= lo - 900) & (ts < lo)) + np.count_nonzero((ts >= hi) & (ts < hi + 900)))
        others = [o for o in chunk.bursts if o is not b and abs(o.start.timestamp() - lo) < 1_800 + o.duration_s]
        if others or lo - 900 < ts[0] or hi + 900 > ts[-1]:
            continue  # overlapping neighbour or day edge: the baseline would be wrong
        assert inside / (around / 1_800) == pytest.approx(b.multiplier, rel=0.35)
        checked += 1
    assert checked >= 2


def test_peak_second_far_above_hourly_average():
    """Bursts and Poisson arrivals: the busiest second is several times the busiest hour's mean rate."""
    table = generate_day(SampleSpec(MONDAY, 1, 200_000, seed=2), MONDAY).table
    (peak_second, peak_hour_rps), = _sql(table, """
        with s as (select date_trunc('second', ts_utc) as s, count(*) as n from t group by 1),
             h as (select date_trunc('hour', ts_utc) as h, count(*) / 3600 as rps from t group by 1)
        select (select max(n) from s), (select max(rps) from h)""")
    assert peak_second > 3 * peak_hour_rps


# ------------------------------------------------------------ models and tokens


@pytest.mark.parametrize("model", DEFAULT_MODELS, ids=lambda m: m.name)
def test_token_medians_match_configured_lognormal(four_weeks: pa.Table, model):
    """Sample medians within 5 % of the configured medians (≥ 16k rows per model; sd of log-median < 1 %)."""
    (n, med_in, med_out), = _sql(four_weeks, """
        select count(*), median(input_tokens), median(output_tokens) filter (status = 200)
        from t where model = $m""", {"m": model.name})
    assert n / four_weeks.num_rows == pytest.approx(model.share, abs=0.01)
    assert med_in == pytest.approx(model.input_median_tokens, rel=0.05)
    assert med_out == pytest.approx(model.output_median_tokens, rel=0.05)


def test_drift_visible_after_its_start_only(drifted):
    """Median input of the drifted model rises by the factor (±5 %) at the drift start; others do not move."""
    spec, table = drifted
    rows = _sql(table, """
        select model, median(input_tokens) filter (ts_utc >= $s) / median(input_tokens) filter (ts_utc < $s)
        from t group by model""", {"s": DRIFT.start})
    ratios = dict(rows)
    assert ratios.pop(DRIFT.model) == pytest.approx(DRIFT.factor, rel=0.05)
    assert all(r == pytest.approx(1.0, rel=0.05) for r in ratios.values())
    assert ground_truth(spec).drift == DRIFT


def test_incidents_are_error_and_latency_spikes_at_ground_truth_windows(drifted):
    """Error share in each window = its error_fraction (±0.04); outside < 1 %; TTFT median ≈ factor × (±35 %)."""
    spec, table = drifted
    assert spec.incident_windows == INCIDENTS
    for inc in spec.incident_windows:
        (err_in, err_out, ttft_in, ttft_around), = _sql(table, f"""
            select avg(({ERRORS})::int) filter (ts_utc >= $a and ts_utc < $b),
                   avg(({ERRORS})::int) filter (ts_utc < $a or ts_utc >= $b),
                   median(ttft_ms) filter (ts_utc >= $a and ts_utc < $b),
                   median(ttft_ms) filter (ts_utc >= $a - interval 1 day and ts_utc < $b - interval 1 day)
            from t""", {"a": inc.start, "b": inc.end})
        assert err_in == pytest.approx(inc.error_fraction, abs=0.04)
        assert err_out < 0.01
        assert ttft_in / ttft_around == pytest.approx(inc.latency_factor, rel=0.35)


def test_seeded_incidents_placed_inside_the_span_and_absent_when_off():
    spec = SampleSpec(MONDAY, 60, 1_000, seed=7)
    assert len(spec.incident_windows) == 2
    for inc in spec.incident_windows:
        assert spec.start <= inc.start.date() < spec.end and 0.05 <= inc.error_fraction <= 0.30
    assert replace(spec, incidents=False).incident_windows == ()


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), rate=st.floats(50, 3_000), growth=st.floats(-0.5, 1.0))
def test_row_invariants(seed: int, rate: float, growth: float):
    """Any seed: sorted timestamps inside the day, tokens in range, latency ≥ TTFT, unique ids."""
    d = date(2026, 3, 28)
    spec = SampleSpec(d, 1, rate, seed=seed, monthly_growth_fraction=growth,
                      incidents=[Incident(datetime(2026, 3, 28, 6), 600, 0.5, 4.0)])
    t = generate_day(spec, d).table
    assert t.schema == SCHEMA
    ts = t["ts_utc"].cast(pa.int64()).to_numpy()
    assert np.all(np.diff(ts) >= 0)
    day0 = int(datetime(2026, 3, 28, tzinfo=UTC).timestamp() * 1e6)
    assert t.num_rows == 0 or (ts[0] >= day0 and ts[-1] < day0 + 86_400_000_000)
    (bad,), = _sql(t, """
        select count(*) from t join (select unnest($names) as model, unnest($ctx) as ctx) using (model)
        where input_tokens < 1 or output_tokens < 0 or input_tokens + output_tokens > ctx
           or (status = 200 and (output_tokens < 1 or ttft_ms <= 0 or latency_ms < ttft_ms))
           or (status <> 200 and (output_tokens <> 0 or ttft_ms is not null or latency_ms <= 0))""",
        {"names": [m.name for m in DEFAULT_MODELS], "ctx": [m.context_tokens for m in DEFAULT_MODELS]})
    assert bad == 0
    assert len(set(t["request_id"].to_pylist())) == t.num_rows


# ------------------------------------------------------------ outputs


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


@settings(max_examples=50, deadline=None)
@given(st.lists(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)), max_size=20))
def test_iso_timestamps_match_python(moments: list[datetime]):
    """The vectorised ISO-8601 writer (Hinnant's civil_from_days) agrees with datetime.isoformat."""
    ts_us = np.array([_epoch_us(m.replace(tzinfo=UTC)) for m in moments], dtype=np.int64)
    assert _iso_utc(ts_us).to_pylist() == [m.isoformat(timespec="microseconds") + "Z" for m in moments]


def test_csv_header_and_iso_timestamps(tmp_path: Path):
    path = write_sample(SampleSpec(MONDAY, 1, 500, seed=1), tmp_path / "r.csv").paths[0]
    header, first = path.read_text().splitlines()[:2]
    assert header.replace('"', "").split(",") == SCHEMA.names
    assert datetime.strptime(first.split(",")[0].strip('"'), "%Y-%m-%dT%H:%M:%S.%fZ").date() == MONDAY


def test_columns_are_the_canonical_requests_columns():
    con = connect()
    ensure_tables(con)
    ddl = [r[0] for r in con.execute("select column_name from information_schema.columns "
                                     "where table_name = 'requests' order by ordinal_position").fetchall()]
    assert SCHEMA.names == [c for c in ddl if c != "file_id"]


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
    (lambda: SampleSpec(MONDAY, 0, 1), "days"),
    (lambda: SampleSpec(MONDAY, 1, -5), "requests_per_day"),
    (lambda: SampleSpec(datetime(2026, 8, 3), 1, 1), "date"),
    (lambda: SampleSpec(MONDAY, 1, 1, tenants=(("a", 0.5), ("b", 0.4))), "sum to 1"),
    (lambda: SampleSpec(MONDAY, 1, 1, drift=Drift("gpt-9", "input", datetime(2026, 8, 3), 2)), "gpt-9"),
    (lambda: Drift("llama-3.1-8b", "prompt", datetime(2026, 8, 3), 2), "metric"),
    (lambda: Incident(datetime(2026, 8, 3), 10, 1.5, 2), "error_fraction"),
    (lambda: SampleSpec(MONDAY, 1, 1, zones=(('eu "west"', 1.0),)), "zones"),
])
def test_bad_input_raises_value_error(make, match: str):
    with pytest.raises(ValueError, match=match):
        make()


# ------------------------------------------------------------ CLI

REPO = Path(__file__).resolve().parents[2]


def _documented_sample_command() -> list[str]:
    """The ``capplan sample`` arguments in docs/sample.md's bundled-sample code block."""
    text = (REPO / "docs" / "sample.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return shlex.split(block.replace("\\\n", " "))[1:]  # drop the executable




@pytest.fixture(scope="module")
def cli() -> typer.Typer:
    """The real ``capplan`` app, as the console script runs it."""
    from capplan.cli import app

    return app


def test_cli_writes_same_rows_as_library_and_reports_truth(tmp_path: Path, cli: typer.Typer):
    out, truth = tmp_path / "s.parquet", tmp_path / "truth.json"
    args = ["sample", "--out", str(out), "--days", "3", "--requests-per-day", "2000", "--seed", "4",
            "--start", "2026-08-03", "--drift-model", "llama-3.1-8b", "--drift-start", "2026-08-04",
            "--drift-factor", "1.5", "--incident", "2026-08-04T10:00,30,0.25,3", "--truth", str(truth), "--json"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    spec = SampleSpec(MONDAY, 3, 2_000, seed=4, incidents=[Incident(datetime(2026, 8, 4, 10), 30, 0.25, 3)],
                      drift=Drift("llama-3.1-8b", "input", datetime(2026, 8, 4), 1.5))
    expected = _table(spec)
    assert summary["rows"] == expected.num_rows and summary["incidents"][0]["end"] == "2026-08-04T10:30:00+00:00"
    assert duckdb.sql("select count(*) from read_parquet($p)", params={"p": str(out)}).fetchall() == [(len(expected),)]
    assert json.loads(truth.read_text())["drift"]["factor"] == 1.5


@pytest.mark.parametrize("extra, code, message", [
    (["--out", "x.txt"], 2, "suffix"),
    (["--out", "x.csv", "--drift-model", "llama-3.1-8b"], 2, "--drift-start"),
    (["--out", "x.csv", "--incident", "2026-08-04,30"], 2, "START,DURATION_MIN"),
    (["--out", "x.csv", "--partition-by-day", "--split-by-month"], 1, "exclude"),
])
def test_cli_errors_are_one_line_and_non_zero(tmp_path: Path, cli: typer.Typer, extra, code, message):
    res = CliRunner().invoke(cli, ["sample", "--days", "1", *[str(tmp_path / a) if a.startswith("x.") else a
                                                              for a in extra]])
    assert res.exit_code == code
    assert message in res.output and "Traceback" not in res.output


@pytest.mark.slow
def test_bundled_sample_is_what_the_documented_command_writes(tmp_path: Path, cli: typer.Typer):
    """data/sample/ holds exactly the rows the command in docs/sample.md writes (≈ 490k rows, a few s)."""
    args = [a.replace("data/sample", str(tmp_path)) for a in _documented_sample_command()]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    committed = sorted((REPO / "data" / "sample").glob("*.parquet"))
    assert [p.name for p in committed] == sorted(p.name for p in tmp_path.glob("*.parquet"))
    for path in committed:
        assert pq.read_table(path).equals(pq.read_table(tmp_path / path.name)), path.name
    assert json.loads((REPO / "data/sample/ground_truth.json").read_text()) == json.loads(
        (tmp_path / "ground_truth.json").read_text())
    assert sum(p.stat().st_size for p in committed) < 6e6


def test_cli_refuses_existing_output_without_force(tmp_path: Path, cli: typer.Typer):
    args = ["sample", "--out", str(tmp_path / "a.csv"), "--days", "1", "--requests-per-day", "50"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1 and "already exists" in res.output
    assert CliRunner().invoke(cli, [*args, "--force"]).exit_code == 0

