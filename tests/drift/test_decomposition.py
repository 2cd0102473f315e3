"""Tests for capplan/drift/decomposition.py: the month-over-month cost change split by Shapley values."""

from __future__ import annotations

import pytest

from capplan.db import connect
from capplan.drift.decomposition import cost_change_decomposition
from capplan.drift.histogram import daily_histograms
from capplan.ingest import ensure_tables
from capplan.sizing.cost.per_request import RequestCost


def test_cost_change_decomposition_adds_up_and_isolates_the_drift(drifted, costs_of):
    con, counterfactual = drifted
    costs = costs_of(con)
    drift_parts = cost_change_decomposition(daily_histograms(con), "2026-01", "2026-02", costs).set_index("component")
    plain_parts = cost_change_decomposition(daily_histograms(counterfactual), "2026-01", "2026-02",
                                            costs).set_index("component")["usd_change"]
    parts = drift_parts["usd_change"]
    assert parts.drop("total").sum() == pytest.approx(parts["total"], rel=1e-12)
    assert parts["volume"] > 0  # the generator grows 5 %/month
    # the drift adds to the input-length part only (volume and shares are the same rows)
    assert parts["input_length"] > plain_parts["input_length"]
    assert parts["volume"] == pytest.approx(plain_parts["volume"], rel=0.02)
    assert parts["model_mix"] == pytest.approx(plain_parts["model_mix"], abs=1e-9 + 0.02 * abs(plain_parts["model_mix"]))


def test_decomposition_hand_worked_on_two_months():
    con = connect()
    ensure_tables(con)
    # January: 2 requests of (100 in, 10 out); February: 3 requests of (200 in, 10 out)
    con.execute("""insert into request_rows (ts_utc, input_tokens, output_tokens, model, status, ttft_ms, latency_ms, request_id, tenant, zone, file_id) values
        ('2026-01-10', 100, 10, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-01-11', 100, 10, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-02-10', 200, 10, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-02-11', 200, 10, 'a', 200, 1, 1, null, null, null, 1),
        ('2026-02-12', 200, 10, 'a', 200, 1, 1, null, null, null, 1)""")
    # 1 USD per 100 input tokens, 1 USD per 10 output tokens: c = in/100 + out/10 [USD]
    cost = {"a": RequestCost(100.0, 10.0, 3600.0)}
    parts = cost_change_decomposition(daily_histograms(con), "2026-01", "2026-02", cost).set_index("component")
    # C0 = 2 × 2 = 4, C1 = 3 × 3 = 9; Shapley for V·c: ΔV·(c0+c1)/2 = 2.5, Δc·(V0+V1)/2 = 2.5
    assert parts.loc["total", "usd_change"] == pytest.approx(5.0)
    assert parts.loc["volume", "usd_change"] == pytest.approx(2.5)
    assert parts.loc["input_length", "usd_change"] == pytest.approx(2.5)
    assert parts.loc["output_length", "usd_change"] == pytest.approx(0.0)
    assert parts.loc["model_mix", "usd_change"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="no served requests in 2026-03"):
        cost_change_decomposition(daily_histograms(con), "2026-01", "2026-03", cost)
    with pytest.raises(ValueError, match="no cost model for log models"):
        cost_change_decomposition(daily_histograms(con), "2026-01", "2026-02", {})
