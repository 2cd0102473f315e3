"""Tests of capplan/sample/generate.py: determinism, traffic shape, tokens, incidents, drift, rows."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

import duckdb
import numpy as np
import pyarrow as arrow
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.sample.generate import SCHEMA, generate_day, iter_days, prefetch_days
from capplan.sample.spec import DEFAULT_MODELS, Drift, Incident, SampleSpec, ground_truth

MONDAY = date(2026, 8, 3)
ERRORS = "status in (429, 500, 503)"


def _table(spec: SampleSpec) -> arrow.Table:
    return arrow.concat_tables(chunk.table for chunk in iter_days(spec))


def _sql(table: arrow.Table, query: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.register("t", table)
    return con.execute(query, params or []).fetchall()


@pytest.fixture(scope="module")
def four_weeks() -> arrow.Table:
    """Four whole weeks, no growth, no incidents: for counts and cycles."""
    return _table(SampleSpec(MONDAY, 28, 6_000, seed=11, monthly_growth_fraction=0.0, incidents=False))


DRIFT = Drift("llama-3.1-70b", "input", datetime(2026, 8, 10, 12, tzinfo=UTC), 1.3)
INCIDENTS = (Incident(datetime(2026, 8, 5, 14, 0), 60, 0.20, 3.0),
             Incident(datetime(2026, 8, 12, 10, 30), 30, 0.08, 2.0))


@pytest.fixture(scope="module")
def drifted() -> tuple[SampleSpec, arrow.Table]:
    spec = SampleSpec(MONDAY, 14, 20_000, seed=5, incidents=INCIDENTS, drift=DRIFT)
    return spec, _table(spec)



def test_same_seed_same_rows_different_seed_different():
    spec = SampleSpec(MONDAY, 2, 3_000, seed=1)
    assert _table(spec).equals(_table(spec))
    assert not _table(spec).equals(_table(replace(spec, seed=2)))


def test_a_day_does_not_depend_on_the_days_around_it():
    """Per-day generators: days 5–7 are the same whether generated in a 3- or a 10-day run."""
    long = SampleSpec(date(2026, 8, 1), 10, 4_000, seed=3, monthly_growth_fraction=0.0, incidents=False)
    short = replace(long, start=date(2026, 8, 5), days=3)
    by_day = {c.day: c.table for c in iter_days(long)}
    for chunk in iter_days(short):
        assert chunk.table.equals(by_day[chunk.day])
    assert generate_day(long, date(2026, 8, 6)).table.equals(by_day[date(2026, 8, 6)])



def test_prefetched_days_are_the_days_in_order():
    """The writer's read-ahead yields exactly what iter_days yields, in the same order."""
    spec = SampleSpec(MONDAY, 3, 1_000, seed=6)
    ahead, plain = list(prefetch_days(spec)), list(iter_days(spec))
    assert [c.day for c in ahead] == spec.dates() == [c.day for c in plain]
    assert all(a.table.equals(p.table) and a.bursts == p.bursts for a, p in zip(ahead, plain, strict=True))


# ------------------------------------------------------------ traffic shape


def test_weekday_count_matches_hand_computed_rate():
    """86,400 requests/day with no bursts is λ₀ = 1 /s; a weekday is 7/(5 + 2·0.55) = 1.1475 of that.

    Expected 99,148 arrivals (Poisson sd 315); tolerance 1.5 %.
    """
    spec = SampleSpec(MONDAY, 1, 86_400, seed=4, monthly_growth_fraction=0.0, incidents=False, bursts_per_day=0)
    assert generate_day(spec, MONDAY).table.num_rows == pytest.approx(86_400 * 7 / 6.1, rel=0.015)


def test_row_count_close_to_requested(four_weeks: arrow.Table):
    """Four whole weeks at 6,000/day: 168,000 expected; bursts and Poisson noise stay within 3 %."""
    assert four_weeks.num_rows == pytest.approx(28 * 6_000, rel=0.03)


def test_nights_quieter_than_afternoons(four_weeks: arrow.Table):
    """Peak at 15:00 UTC, trough at 03:00: (1 − 0.6)/(1 + 0.6) = 0.25 at the extremes.

    Hours 01–05 against hours 13–17 must be below 0.5.
    """
    (night, day), = _sql(four_weeks, """
        select count(*) filter (hour(ts_utc) between 1 and 5), count(*) filter (hour(ts_utc) between 13 and 17)
        from t""")
    assert night < 0.5 * day


def test_weekends_quieter_than_weekdays(four_weeks: arrow.Table):
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
    ts = chunk.table["ts_utc"].cast(arrow.int64()).to_numpy() / 1e6
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
def test_token_medians_match_configured_lognormal(four_weeks: arrow.Table, model):
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


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), rate=st.floats(50, 3_000), growth=st.floats(-0.5, 1.0))
def test_row_invariants(seed: int, rate: float, growth: float):
    """Any seed: sorted timestamps inside the day, tokens in range, latency ≥ TTFT, unique ids."""
    d = date(2026, 3, 28)
    spec = SampleSpec(d, 1, rate, seed=seed, monthly_growth_fraction=growth,
                      incidents=[Incident(datetime(2026, 3, 28, 6), 600, 0.5, 4.0)])
    t = generate_day(spec, d).table
    assert t.schema == SCHEMA
    ts = t["ts_utc"].cast(arrow.int64()).to_numpy()
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



def test_columns_are_the_canonical_requests_columns():
    con = connect()
    ensure_tables(con)
    ddl = [r[0] for r in con.execute("select column_name from information_schema.columns "
                                     "where table_name = 'requests' order by ordinal_position").fetchall()]
    assert SCHEMA.names == [c for c in ddl if c != "file_id"]
