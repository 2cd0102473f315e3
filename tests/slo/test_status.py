"""Tests for capplan/slo/status.py and sql/int_slo_*.sql on real DuckDB data."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from capplan import profile, sql
from capplan.config import BurnRateAlertConfig, SloConfig
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.sample import Incident, SampleSpec, iter_days
from capplan.slo.status import alert_episodes, budget_burndown, minute_events, slo_status

T0 = datetime(2026, 3, 1)
OUTAGE_5PCT = (T0 + timedelta(days=10, hours=10), 20)  # 5 % errors for 20 min
OUTAGE_FULL = (T0 + timedelta(days=25, hours=3), 30)  # every request fails for 30 min
SLOW = (T0 + timedelta(days=15, hours=12), 10)  # TTFT 5 s for 10 min, all successful
REQUESTS = 30 * 24 * 60 * 20  # one request every 3 s for 30 days
CLIENT_ERRORS = 30 * 24  # 404s: every 50th request of hour 01


def _window(t: tuple[datetime, int]) -> str:
    start, minutes = t
    return f"ts_utc >= timestamp '{start}' and ts_utc < timestamp '{start + timedelta(minutes=minutes)}'"


@pytest.fixture(scope="module")
def con():
    """30 days at 20 requests/min with hand-placed incidents (no background errors)."""
    con = connect()
    ensure_tables(con)
    con.execute(f"""
        insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id)
        select ts_utc, 500, 100, 'm1',
               case when {_window(OUTAGE_5PCT)} and i % 20 = 0 then 500
                    when {_window(OUTAGE_FULL)} then 503
                    when hour(ts_utc) = 1 and i % 50 = 0 then 404  -- a client error: not a valid event by default
                    else 200 end,
               case when {_window(SLOW)} then 5000.0 else 300.0 end, 900.0, null, null, null, 1
        from (select i, timestamp '{T0}' + i * interval 3 second as ts_utc from range({REQUESTS}) t(i))
    """)
    yield con
    con.close()


def test_minute_counts_sql_on_a_few_rows():
    con = connect()
    ensure_tables(con)
    con.execute("""insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values
        ('2026-01-01 00:00:10', 1, 1, 'a', 200, 100, 1, null, null, null, 1),
        ('2026-01-01 00:00:50', 1, 1, 'a', 500, null, 1, null, null, null, 1),
        ('2026-01-01 00:02:00', 1, 1, 'a', 200, 3000, 1, null, null, null, 1),
        ('2026-01-01 00:02:30', 1, 1, 'b', 200, 100, 1, null, null, null, 1),
        ('2026-01-01 00:02:40', 1, 1, 'a', 404, null, 1, null, null, null, 1)""")
    got = minute_events(con, SloConfig(ttft_threshold_ms=2000))
    assert got["minute_utc"].dt.minute.tolist() == [0, 1, 2]  # minute 1 has no rows: a zero, not a gap
    assert got["valid_events"].tolist() == [2, 0, 2]  # the 404 is not valid
    assert got["bad_events"].tolist() == [1, 0, 1]  # the 500, and the 3 s TTFT
    only_a = minute_events(con, SloConfig(model="a", count_client_errors=True))
    assert only_a["valid_events"].tolist() == [2, 0, 2] and only_a["bad_events"].tolist() == [1, 0, 1]


SLI_RULE_ROWS = [  # (status, ttft_ms), one hour and one minute of model 'a'
    (200, 100.0),    # valid, good
    (408, None),     # valid, bad: the server timed the request out (generation overran)
    (429, 5.0),      # valid, bad: throttled, our capacity
    (404, 5.0),      # not valid: the caller's fault
    (500, None),     # valid, bad
    (200, 5_000.0),  # valid, bad: a success slower than the 2 s TTFT threshold
]


def _sli_rule_db(path) -> None:
    con = connect(path)
    ensure_tables(con)
    con.executemany("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, "
                    "latency_ms, file_id) values (?, 1, 1, 'a', ?, ?, 10.0, 1)",
                    [(datetime(2026, 1, 1, 10, 0, i), status, ttft) for i, (status, ttft) in enumerate(SLI_RULE_ROWS)])
    profile.refresh_rollups(con)
    con.close()


def test_profile_sli_and_slo_stage_count_the_same_events(tmp_path):
    """One rule (sql/ddl_macro_sli_*.sql): the profile's hourly SLI, its stored roll-up and the SLO stage agree."""
    _sli_rule_db(tmp_path / "sli.duckdb")
    con = connect(tmp_path / "sli.duckdb")
    slo = SloConfig(model="a", ttft_threshold_ms=2000.0, window_days=1)
    sli = profile.hourly_sli(con, slo.ttft_threshold_ms, model="a").iloc[0]
    events = minute_events(con, slo)
    status = slo_status(con, slo)
    stored = con.execute("select valid_events, success_events from fct_traffic_hourly where model = 'a'").fetchall()
    con.close()
    assert (sli["valid_events"], sli["good_events"]) == (5, 1)  # 200, 408, 429, 500, slow 200; the fast 200
    assert sli["success_rate"] == pytest.approx(2 / 5)
    assert (events["valid_events"].sum(), events["valid_events"].sum() - events["bad_events"].sum()) == (5, 1)
    assert (status.valid_events, status.bad_events) == (5, 4)
    assert stored == [(5, 2)]  # the status classes of sql/int_profile_rows.sql


def test_slo_stage_reads_a_read_only_database(tmp_path):
    """The SLI macros are temp macros: a read-only connection and its cursors get them."""
    _sli_rule_db(tmp_path / "sli.duckdb")
    con = connect(tmp_path / "sli.duckdb", read_only=True)
    counted = minute_events(con, SloConfig(model="a", count_client_errors=True))
    status = slo_status(con, SloConfig(model="a", ttft_threshold_ms=2000.0, window_days=1))
    con.close()
    assert counted["valid_events"].sum() == 6  # the 404 counts when the SLO counts client errors
    assert (status.valid_events, status.bad_events) == (5, 4)


@pytest.mark.parametrize("slo", [
    SloConfig(window_days=1, ttft_threshold_ms=2000.0),
    SloConfig(window_days=30),
    SloConfig(kind="time", window_days=1, bad_minute_below_fraction=0.9),
    SloConfig(kind="time", window_days=30, bad_minute_below_fraction=0.9),
    SloConfig(model="a", kind="time", window_days=2, count_client_errors=True),
])
def test_status_from_the_history_already_read_equals_its_own_query(slo):
    """The plan reads an SLO's whole history once (``history=``); its status must be the one the window's own
    query gives. Edges where they could differ: the first and last minutes hold only client errors (outside the
    history's grid, inside the status's window), a quiet hour inside, a window shorter and longer than the
    history, a time-based SLO (every minute of the window is a valid event)."""
    con = connect()
    ensure_tables(con)
    rows = [(datetime(2026, 1, 1, 0, 0, 5), "a", 404, None),  # first minute: a client error only
            *[(datetime(2026, 1, 1, 0, 1) + timedelta(minutes=7 * i), "a" if i % 3 else "b",
               500 if i % 11 == 0 else 200, 3000.0 if i % 5 == 0 else 100.0) for i in range(600)],
            (datetime(2026, 1, 3, 9, 0, 50), "a", 404, None)]  # last minute: a client error only
    rows = [r for r in rows if not datetime(2026, 1, 2, 3) <= r[0] < datetime(2026, 1, 2, 4)]  # a quiet hour
    con.executemany("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, "
                    "latency_ms, file_id) values (?, 1, 1, ?, ?, ?, 10.0, 1)", rows)
    assert slo_status(con, slo, history=minute_events(con, slo)) == slo_status(con, slo)


def test_status_over_the_whole_window(con):
    status = slo_status(con, SloConfig(target=0.999, window_days=30))
    valid = REQUESTS - CLIENT_ERRORS  # less the 404s
    bad = 20 + 30 * 20
    assert status.valid_events == valid and status.bad_events == bad
    assert status.error_budget_minutes == pytest.approx(43.2)
    assert status.budget_consumed_fraction == pytest.approx(bad / (0.001 * valid), rel=1e-12)
    assert status.budget_consumed_fraction + status.budget_remaining_fraction == pytest.approx(1.0)
    assert status.burn_rate == pytest.approx(status.budget_consumed_fraction, rel=1e-12)  # whole window


@pytest.mark.parametrize(("below", "bad_minutes"), [(0.99, 20 + 30), (0.9, 30)])
def test_time_based_status_counts_bad_minutes(con, below, bad_minutes):
    status = slo_status(con, SloConfig(kind="time", target=0.999, window_days=30, bad_minute_below_fraction=below))
    assert status.valid_events == 30 * 1440
    assert status.bad_events == bad_minutes
    assert status.budget_consumed_fraction == pytest.approx(bad_minutes / 43.2, rel=1e-12)


def test_status_as_of_before_the_outage(con):
    as_of = OUTAGE_FULL[0]
    status = slo_status(con, SloConfig(target=0.999, window_days=7), as_of=as_of)
    assert status.window_start == as_of - timedelta(days=7)
    assert status.bad_events == 0 and status.budget_remaining_fraction == 1.0


def test_episodes_match_hand_worked_alerts(con):
    got = alert_episodes(con, SloConfig(target=0.999, window_days=30))
    pages = got[got["severity"] == "page"].reset_index(drop=True)
    tickets = got[got["severity"] == "ticket"].reset_index(drop=True)
    a_start, full_start = OUTAGE_5PCT[0], OUTAGE_FULL[0]
    # 5 % for 20 min: the 1 h burn reaches 14.4 with 18 bad minutes (start + 17 min); the 5 min window
    # keeps >= 2 bad minutes until start + 22 min. Peak 1 h burn 50 x 20/60; 2.3 % of the budget.
    assert pages.loc[0, "start"] == a_start + timedelta(minutes=17)
    assert pages.loc[0, "end"] == a_start + timedelta(minutes=23)
    assert pages.loc[0, "burn_rate"] == pytest.approx(50 * 20 / 60, rel=1e-9)
    assert pages.loc[0, "budget_spent_fraction"] == pytest.approx(20 / (0.001 * (REQUESTS - CLIENT_ERRORS)),
                                                                  rel=1e-3)
    assert round(pages.loc[0, "budget_spent_fraction"] * 100, 1) == 2.3
    # full outage: the 1 h rule fires in its first minute; the 6 h rule's 30 min window holds it to +59 min
    assert (pages.loc[1, "start"], pages.loc[1, "end"]) == (full_start, full_start + timedelta(minutes=59))
    assert pages.loc[1, "burn_rate"] == pytest.approx(1000 * 30 / 60, rel=1e-6)
    assert pages.loc[1, "rules"] == "14.4x/60m/5m,6x/360m/30m"
    assert len(pages) == 2
    # 3-day burn reaches 1x after 4.32 outage minutes (+4); the 6 h window holds it to 6 h after the end
    assert tickets["start"].tolist() == [full_start + timedelta(minutes=4)]
    assert tickets["end"].tolist() == [full_start + timedelta(minutes=30 + 359)]


def test_ttft_threshold_turns_slow_minutes_into_errors(con):
    fast_only = alert_episodes(con, SloConfig(target=0.999, ttft_threshold_ms=2000))
    new = fast_only[fast_only["start"].between(SLOW[0], SLOW[0] + timedelta(minutes=10))]
    # a 100 % burn fires the 1 h page at once; 200 bad requests in 3 days (2.3x) open a ticket after 4.32 min
    assert new[["severity", "start"]].values.tolist() == [["page", SLOW[0]], ["ticket", SLOW[0] + timedelta(minutes=4)]]
    assert len(fast_only) == len(alert_episodes(con, SloConfig(target=0.999))) + 2


def test_thresholds_come_from_config(con):
    strict = SloConfig(target=0.999, alerts=[BurnRateAlertConfig(
        severity="page", long_window_minutes=60, short_window_minutes=5, burn_rate_threshold=100.0)])
    got = alert_episodes(con, strict)
    assert got["start"].tolist() == [OUTAGE_FULL[0] + timedelta(minutes=5)]  # 1000·k/60 >= 100: k = 6 minutes, 03:00–03:05


def test_burndown_ends_at_status(con):
    burndown = budget_burndown(con, SloConfig(target=0.999, window_days=30), freq="1D")
    status = slo_status(con, SloConfig(target=0.999, window_days=30))
    last = burndown.iloc[-1]
    assert last["budget_consumed_fraction"] == pytest.approx(status.budget_consumed_fraction, rel=1e-12)
    assert (burndown["budget_consumed_fraction"] + burndown["budget_remaining_fraction"]).eq(1.0).all()
    # 30 days of history, daily rows ending T0 + 1 d … T0 + 30 d: only the last row's 30-day window is full
    assert burndown["window_full"].tolist() == [False] * 29 + [True]
    assert burndown["bad_events"].is_monotonic_increasing  # nothing leaves a 30-day window in 30 days
    # while the window fills, the budget grows with the events seen, so consumption can fall
    day_after_5pct = burndown[burndown["period_end_utc"] == datetime(2026, 3, 12)].iloc[0]
    assert day_after_5pct["budget_consumed_fraction"] == pytest.approx(20 / (0.001 * 11 * 24 * 60 * 20 - 0.011 * 24),
                                                                       rel=1e-9)
    assert len(burndown) == 30


def test_an_empty_log_gives_empty_frames():
    empty = connect()
    ensure_tables(empty)
    assert alert_episodes(empty, SloConfig()).empty
    assert budget_burndown(empty, SloConfig()).empty


def test_unknown_model_is_a_value_error(con):
    with pytest.raises(ValueError, match="no requests for model 'nope'"):
        slo_status(con, SloConfig(model="nope"))


@pytest.mark.slow
def test_episodes_match_incidents_in_generated_logs():
    incidents = (
        Incident(start=datetime(2026, 5, 5, 10, 0), duration_min=60, error_fraction=0.25, latency_factor=2.0),
        Incident(start=datetime(2026, 5, 9, 14, 30), duration_min=40, error_fraction=0.40, latency_factor=3.0),
    )
    spec = SampleSpec(start=date(2026, 5, 1), days=12, requests_per_day=20_000, seed=3, incidents=incidents)
    con = connect()
    ensure_tables(con)
    for chunk in iter_days(spec):
        con.register("day_rows", chunk.table)
        con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select *, 0 from day_rows")
        con.unregister("day_rows")
    # the generator's background failure rate is ~0.75 % of valid requests: a 98.5 % SLO (burn ≈ 0.5) is met
    got = alert_episodes(con, SloConfig(target=0.985, window_days=7))
    pages = got[got["severity"] == "page"]
    assert len(pages) == len(incidents)
    for (_, page), inc in zip(pages.iterrows(), incidents, strict=True):
        start, end = inc.start.replace(tzinfo=None), inc.end.replace(tzinfo=None)
        assert start <= page["start"] < end  # fires during the incident
        assert end <= page["end"] <= end + timedelta(minutes=30)  # resets within a short window after it
        assert page["burn_rate"] > 14.4
    for _, ticket in got[got["severity"] == "ticket"].iterrows():  # a ticket only ever follows an incident
        assert any(i.start.replace(tzinfo=None) <= ticket["start"] <= i.end.replace(tzinfo=None) + timedelta(hours=6)
                   for i in incidents)
    assert isinstance(got["start"].iloc[0], pd.Timestamp)


def test_bundled_sample_pages_only_during_its_incidents():
    sample = Path(__file__).resolve().parents[2] / "data" / "sample"
    incidents = [(pd.Timestamp(i["start"]).tz_localize(None), pd.Timestamp(i["end"]).tz_localize(None),
                  i["error_fraction"]) for i in json.loads((sample / "ground_truth.json").read_text())["incidents"]]
    con = connect()
    ensure_tables(con)
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) select *, 0 from read_parquet($files)",
                {"files": [str(p) for p in sorted(sample.glob("requests-*.parquet"))]})
    pages = alert_episodes(con, SloConfig(target=0.99)).query("severity == 'page'")
    assert len(pages) >= 1
    for start in pages["start"]:
        assert any(lo <= start < hi for lo, hi, _ in incidents)
    for lo, hi, error_fraction in incidents:
        if error_fraction >= 0.2:  # well above the 14.4 % a 1 h page needs at 99 %
            assert pages["start"].between(lo, hi).any()


def _metrics_hour_db():
    """One hour fed by Prometheus with an error counter: model 'm', 130 requests, 13 failed, TTFT buckets 0.25 s -> 50,
    0.5 s -> 110, +Inf -> 117 (the 117 successes)."""
    from capplan.metrics.ingest import ensure_tables as ensure_metrics_tables, store_hours

    con = connect()
    ensure_metrics_tables(con)
    hour = datetime(2026, 10, 5, 3)
    traffic = pd.DataFrame([{"hour_utc": hour, "model": m, "requests": 130, "errors": 13, "valid_events": 130,
                             "success_events": 117, "input_tokens_sum": 0, "output_tokens_sum": 0, "ttft_ms_sum": 0.0,
                             "ttft_count": 0, "latency_ms_sum": 0.0, "latency_count": 0, "peak_second_requests": 1}
                            for m in ("m", "__all__")])
    buckets = pd.DataFrame({"hour_utc": hour, "model": "m", "le_ms": [250.0, 500.0, float("inf")],
                            "requests": [50, 110, 117]})
    empty = {"histogram": pd.DataFrame(columns=["hour_utc", "model", "metric", "bin", "count"]),
             "concurrency": pd.DataFrame(columns=["hour_utc", "model", "concurrency_peak"])}
    store_hours(con, "prom", [hour], {"traffic": traffic, "ttft_buckets": buckets, **empty}, step_s=300,
                errors_measured=True)
    return con, hour


def test_metrics_hours_spread_over_their_minutes_and_ttft_interpolated_in_its_bucket():
    """Hand counts. Availability: 130 valid = 2 a minute + 1 more in the first 10 minutes; 13 bad = 1 in each of the
    first 13 minutes (a time-based SLO: 13 bad minutes). TTFT <= 300 ms inside (250, 500] ms: share = (50 + 60 · (300 − 250)/(500 − 250)) / 117 = 62/117,
    good = 117 · 62/117 = 62, bad = 68; the bucket's 60 successes could fall either side. At 500 ms (a bound):
    good 110. At 20 s, above the last finite bound: the +Inf bucket's 7 count slower, good 110."""
    con, hour = _metrics_hour_db()
    events = minute_events(con, SloConfig(), hour, hour + timedelta(hours=1))
    assert events["valid_events"].tolist() == [3] * 10 + [2] * 50 and events["bad_events"].tolist() == [1] * 13 + [0] * 47
    # a time-based SLO judges the spread minutes: the 13 holding a failure are below 99 % good
    assert minute_events(con, SloConfig(kind="time"), hour, hour + timedelta(hours=1))["bad_events"].sum() == 13
    status = slo_status(con, SloConfig(target=0.9))
    assert (status.valid_events, status.bad_events, status.resolution_min) == (130, 13, 60)
    assert status.as_of == hour + timedelta(hours=1) and "resolution 60 min" in status.notes[0]
    inside = slo_status(con, SloConfig(target=0.9, ttft_threshold_ms=300))
    assert inside.bad_events == 68 and "inside (250, 500] ms" in inside.notes[1]
    assert "60 of the 117 successes (51.28%)" in inside.notes[1]
    assert slo_status(con, SloConfig(target=0.9, ttft_threshold_ms=500)).bad_events == 130 - 110
    above = slo_status(con, SloConfig(target=0.9, ttft_threshold_ms=20_000))
    assert above.bad_events == 130 - 110 and "above the TTFT histogram's last finite bound (500 ms)" in above.notes[1]
    con.close()


def test_logged_minutes_keep_their_resolution(con):
    status = slo_status(con, SloConfig(target=0.99))
    assert status.resolution_min == 1 and status.notes == ()
