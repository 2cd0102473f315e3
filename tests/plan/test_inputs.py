"""capplan/plan/inputs.py: the request mix measured from the logs, the burst ratio and the interruptible share."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan import sql
from capplan.config import CapplanConfig, CostConfig, parse_config
from capplan.db import connect
from capplan.ingest import ensure_tables
from capplan.plan import inputs as plan

# --- burst ratio -------------------------------------------------------------------------------------

def test_burst_ratio_uses_busy_hours_only():
    hourly = pd.DataFrame({"avg_qps": [0.01, 0.01, 10.0, 10.0, 20.0],
                           "concurrency_littles": [0.1, 0.1, 50.0, 50.0, 100.0],
                           "concurrency_measured_peak": [5, 5, 100, 150, 250]})  # quiet hours: ratio 50
    assert plan.burst_ratio(hourly) == pytest.approx(2.5)  # median of 2, 3, 2.5
    assert plan.burst_ratio(hourly, quantile=1.0) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="no hour with traffic"):
        plan.burst_ratio(hourly.assign(avg_qps=0.0))


# --- measured inputs ---------------------------------------------------------------------------------

@pytest.fixture
def con():
    c = connect(":memory:")
    for name in ("ddl_ingest_ledger", "ddl_quarantine", "ddl_request_rows", "ddl_requests"):
        c.execute(sql.load(name))
    yield c
    c.close()


def _insert(con, rows):
    con.executemany("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values (?, ?, ?, 'm', ?, 100, ?, null, null, null, 1)", rows)


def test_measure_inputs_from_recent_successes(con):
    _insert(con, [("2026-10-01 00:00", 9000, 9000, 200, 99_000),   # older than the 28-day window
                  ("2026-11-20 00:00", 100, 50, 200, 2000), ("2026-11-21 00:00", 300, 150, 200, 4000),
                  ("2026-11-29 00:00", 5000, 5000, 500, 60_000)])   # failed: not the sized work
    hourly = pd.DataFrame({"avg_qps": [1.0, 1.0], "concurrency_littles": [1.0, 1.0],
                           "concurrency_measured_peak": [3, 2]})
    m = plan.measure_inputs(con, hourly, parse_config({"report": {"kv_tokens_quantile": 0.5}}))
    assert (m.requests, m.input_tokens_per_request, m.output_tokens_per_request) == (2, 200.0, 100.0)
    assert m.latency_s == pytest.approx(3.0)
    assert m.kv_tokens_per_sequence == pytest.approx(300.0)  # median of 150 and 450
    assert m.last_ts_utc == pd.Timestamp("2026-11-29") and m.burst_ratio == pytest.approx(2.5)


def test_measure_inputs_without_rows_is_a_clear_error_and_without_latency_models_it(con):
    hourly = pd.DataFrame({"avg_qps": [1.0], "concurrency_littles": [1.0], "concurrency_measured_peak": [1]})
    with pytest.raises(ValueError, match="no successful"):
        plan.measure_inputs(con, hourly, CapplanConfig())
    con.execute("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values ('2026-11-20', 1000, 200, 'm', 200, null, null, null, null, null, 1)")
    m = plan.measure_inputs(con, hourly, CapplanConfig())
    assert m.sources == {"latency_s": "modelled", "burst_ratio": "modelled"}
    assert 0.5 < m.latency_s < 60 and m.burst_ratio > 1
    assert "no request has latency_ms logged: latency modelled" in m.notes[0]
    assumed = plan.measure_inputs(con, hourly, parse_config({"report": {"assumed_latency_s": 3.0}}))
    assert assumed.latency_s == 3.0 and assumed.sources["latency_s"] == "assumed"


@settings(max_examples=40, deadline=None)
@given(tokens=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=60),
       quantile=st.floats(0.01, 0.99))
def test_kv_quantile_from_the_hourly_rollup_equals_quantile_cont(tokens, quantile):
    """The roll-up keeps exact counts per token total, so any quantile equals DuckDB's over the raw rows."""
    c = connect(":memory:")
    ensure_tables(c)
    c.executemany("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values ('2026-11-20 10:00', ?, ?, 'm', 200, 100, 1000, null, null, null, 1)",
                  tokens)
    (want,) = c.execute("select quantile_cont(input_tokens + output_tokens, ?) from requests", [quantile]).fetchone()
    m = plan.measure_inputs(c, pd.DataFrame({"avg_qps": [1.0], "concurrency_littles": [1.0],
                                             "concurrency_measured_peak": [1]}),
                            parse_config({"report": {"kv_tokens_quantile": quantile}}))
    assert m.kv_tokens_per_sequence == pytest.approx(want, rel=1e-12, abs=1e-9)
    c.close()


# --- the interruptible share: measured when [cost] lists models or tenants (was capplan/cost.py) ------

SHARE_ROWS = [  # ts_utc, model, status, tenant
    ("2026-01-01 00:00", "batch-embed", 200, None),
    ("2026-01-02 00:00", "chat", 200, "nightly"),
    ("2026-01-03 00:00", "chat", 200, None),
    ("2026-01-03 01:00", "chat", 200, "acme"),
    ("2026-01-03 02:00", "batch-embed", 503, None),   # failed: not counted
]


@pytest.fixture()
def share_con():
    c = connect()
    c.execute(sql.load("ddl_ingest_ledger"))
    ensure_tables(c)
    c.executemany("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, tenant, latency_ms, "
                  "file_id) values (?, 10, 10, ?, ?, ?, 1000, 1)", SHARE_ROWS)
    yield c
    c.close()


@pytest.mark.parametrize("cost, window_days, expected", [
    (CostConfig(interruptible_models=["batch-embed"], interruptible_tenants=["nightly"]), 30, 2 / 4),
    (CostConfig(interruptible_models=["batch-embed"]), 30, 1 / 4),
    (CostConfig(interruptible_tenants=["nightly"]), 30, 1 / 4),
    # the last day (the 24 hours after 2026-01-02 02:00) holds only the two 2026-01-03 chat requests
    (CostConfig(interruptible_models=["batch-embed"], interruptible_tenants=["nightly"]), 1, 0.0),
])
def test_interruptible_share_measured(share_con, cost, window_days, expected):
    share = plan.measure_interruptible_share(share_con, cost, window_days=window_days)
    assert share == pytest.approx(expected, abs=1e-12)


def test_interruptible_share_nothing_listed_is_the_assumed_share(share_con):
    cost = CostConfig(interruptible_share=0.3)
    assert plan.measure_interruptible_share(share_con, cost, window_days=30) is None  # nothing to measure
    assert plan.interruptible_share(cost) == 0.3
    assert plan.interruptible_share(cost, None) == 0.3


def test_measured_share_replaces_the_assumed_one(share_con):
    cfg = parse_config({"cost": {"interruptible_share": 0.3, "interruptible_models": ["batch-embed"]},
                        "report": {"measured_window_days": 30}})
    hourly = pd.DataFrame({"avg_qps": [1.0], "concurrency_littles": [1.0], "concurrency_measured_peak": [1]})
    m = plan.measure_inputs(share_con, hourly, cfg)
    assert m.interruptible_share == pytest.approx(1 / 4)
    assert plan.interruptible_share(cfg.cost, m) == pytest.approx(1 / 4)
    assert m.table()["interruptible_share"] == (pytest.approx(1 / 4), "fraction")
    unlisted = plan.measure_inputs(share_con, hourly, parse_config({"cost": {"interruptible_share": 0.3}}))
    assert unlisted.interruptible_share is None and "interruptible_share" not in unlisted.table()


def test_pools_measured_on_one_shared_roll_up_equal_each_measured_alone(share_con):
    """The measure stage rolls up once for all its pools (``measured_rollups``): every pool's figures, the
    interruptible share among them, equal those of a roll-up of its own."""
    cfg = parse_config({"cost": {"interruptible_models": ["batch-embed"], "interruptible_tenants": ["nightly"]},
                        "report": {"measured_window_days": 30}})
    hourly = pd.DataFrame({"avg_qps": [1.0], "concurrency_littles": [1.0], "concurrency_measured_peak": [1]})
    pools = [None, ["chat"], ["batch-embed"], ["chat", "batch-embed"]]
    alone = [plan.measure_inputs(share_con, hourly, cfg, models=models) for models in pools]
    with plan.measured_rollups(share_con) as rollups:
        shared = [plan.measure_inputs(share_con, hourly, cfg, models=models, rollups=rollups) for models in pools]
    assert shared == alone
    assert [m.interruptible_share for m in shared] == pytest.approx([2 / 4, 1 / 3, 1.0, 2 / 4])


def test_empty_table_gives_zero(share_con):
    share_con.execute("delete from request_rows")
    assert plan.measure_interruptible_share(share_con, CostConfig(interruptible_models=["x"]), window_days=7) == 0.0


def test_token_histograms_of_the_window_hold_the_mix_within_the_grids_error():
    """Rows of two models; the pool's histograms cover its model and the 28-day window only, their mean
    within the grid's relative error of the exact mean, their counts the rows (bin midpoints, zero as 0)."""
    from capplan.profile import refresh_rollups
    from capplan.profile.bins import HISTOGRAM_RELATIVE_ERROR

    c = connect(":memory:")
    c.execute(sql.load("ddl_ingest_ledger"))
    ensure_tables(c)
    rows = [("2026-10-01 00:00", 9000, 9000, "a"),                       # before the window
            ("2026-11-20 00:00", 100, 0, "a"), ("2026-11-21 00:00", 3000, 150, "a"),
            ("2026-11-29 00:00", 777, 77, "b")]
    c.executemany("insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, "
                  "file_id) values (?, ?, ?, ?, 200, 100, 1000, 1)", rows)
    refresh_rollups(c)
    hourly = pd.DataFrame({"avg_qps": [1.0], "concurrency_littles": [1.0], "concurrency_measured_peak": [1]})
    m = plan.measure_inputs(c, hourly, CapplanConfig(), models=["a"])
    tokens, counts = (np.array(a) for a in m.input_tokens_histogram)
    assert counts.sum() == 2 and (tokens @ counts) / counts.sum() == pytest.approx(1550.0,
                                                                                  rel=HISTOGRAM_RELATIVE_ERROR)
    out_tokens, out_counts = m.output_tokens_histogram
    assert out_tokens[0] == 0.0 and out_counts == (1.0, 1.0)
    assert plan.token_histograms(c, None) == {"input_tokens": None, "output_tokens": None}
    c.close()


def test_a_coarse_histogram_keeps_its_shape_and_takes_the_exact_mean():
    # 3 requests at 100 and 1 at 500 tokens: mean 200; the counters say 250 -> every value x 1.25
    scaled = plan.with_mean(((100.0, 500.0), (3.0, 1.0)), 250.0)
    assert scaled == ((125.0, 625.0), (3.0, 1.0))
    assert plan.with_mean(None, 250.0) is None and plan.with_mean(((0.0,), (5.0,)), 250.0) == ((0.0,), (5.0,))
