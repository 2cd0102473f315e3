"""Tests for capplan.sizing.cost.plan: blended monthly plan, ranges, interruptible traffic."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.sizing.cost.commitment import optimal_commitment
from capplan.sizing.cost.plan import OPTIONS, ROW_COLUMNS, OptionPrices, blended_plan, plan_range

GPU = "H100-SXM-80GB"


def hours(start: str, n: int) -> np.ndarray:
    return np.datetime64(start, "h") + np.arange(n)


def test_three_hour_plan_is_hand_checkable():
    # need 1, 2, 3; reserved 1, on-demand 2 USD/GPU-h -> R* = 2 (see test_cost.py):
    # reserved 2 GPU × 3 h = 6 GPU-h = 6 USD; on-demand 1 GPU-h = 2 USD; total 8; all on-demand 12.
    plan = blended_plan(hours("2026-01-01T00", 3), [1, 2, 3], gpu_type=GPU, prices=OptionPrices(2.0, 1.0),
                        requests=[1000, 1000, 2000], output_tokens=[1e5, 1e5, 2e5])
    (month,) = plan.months
    assert month.month == "2026-01" and month.hours == 3
    assert month.gpu_hours_reserved == pytest.approx(6.0)
    assert month.reserved_used_gpu_hours == pytest.approx(5.0)
    assert month.gpu_hours_on_demand == pytest.approx(1.0)
    assert month.gpu_hours_spot == 0.0
    assert month.cost_usd_reserved == pytest.approx(6.0)
    assert month.cost_usd_on_demand == pytest.approx(2.0)
    assert month.total_cost_usd == pytest.approx(8.0)
    assert month.all_on_demand_cost_usd == pytest.approx(12.0)
    assert month.saving_usd == pytest.approx(4.0)
    assert month.usd_per_1k_requests == pytest.approx(8.0 / 4000 * 1000)
    assert month.usd_per_million_output_tokens == pytest.approx(8.0 / 4e5 * 1e6)


def test_interruptible_share_goes_to_spot_with_overhead_and_never_sets_the_floor():
    # need 10 GPUs flat for 4 h, 40 % interruptible: interactive 6 -> R* = 6; batch 4 GPU on spot.
    prices = OptionPrices(4.0, 2.5, spot_usd_per_gpu_hour=1.0, spot_overhead_factor=1.25)
    plan = blended_plan(hours("2026-03-01T00", 4), np.full(4, 10.0), gpu_type=GPU, prices=prices,
                        interruptible_share=0.4)
    t = plan.total()
    assert plan.reserved_gpus == 6 and plan.batch_on_spot
    assert t.gpu_hours_reserved == pytest.approx(24.0)
    assert t.spot_work_gpu_hours == pytest.approx(16.0)
    assert t.gpu_hours_spot == pytest.approx(20.0)        # 16 × 1.25 overhead
    assert t.cost_usd_spot == pytest.approx(20.0)
    assert t.total_cost_usd == pytest.approx(24 * 2.5 + 20.0)


def test_spot_dearer_than_on_demand_after_overhead_is_not_used():
    prices = OptionPrices(1.0, 0.5, spot_usd_per_gpu_hour=0.9, spot_overhead_factor=1.2)  # 1.08 > 1.0
    plan = blended_plan(hours("2026-03-01T00", 2), [4, 4], gpu_type=GPU, prices=prices, interruptible_share=0.5)
    t = plan.total()
    assert not plan.batch_on_spot
    assert t.gpu_hours_spot == 0.0 and t.gpu_hours_on_demand == pytest.approx(4.0)


def test_months_split_at_utc_month_boundary():
    plan = blended_plan(hours("2026-01-31T22", 4), [1, 1, 1, 1], gpu_type=GPU, prices=OptionPrices(2.0, 1.0))
    assert [(m.month, m.hours) for m in plan.months] == [("2026-01", 2), ("2026-02", 2)]
    rows = plan.rows()
    assert [r["month"] for r in rows] == ["2026-01", "2026-02", "total"]
    assert tuple(rows[0]) == ROW_COLUMNS
    assert plan.rows(with_total=False)[-1]["month"] == "2026-02"
    long = plan.cost_by_option()
    assert len(long) == 2 * len(OPTIONS)
    assert sum(r["cost_usd"] for r in long) == pytest.approx(plan.total().total_cost_usd)


def test_fixed_reserved_count_is_honoured():
    plan = blended_plan(hours("2026-01-01T00", 3), [1, 2, 3], gpu_type=GPU, prices=OptionPrices(2.0, 1.0),
                        reserved_gpus=0)
    assert plan.reserved_gpus == 0 and plan.commitment.reserved_gpus == 2
    assert plan.total().total_cost_usd == pytest.approx(12.0)


def test_per_unit_costs_absent_without_counts():
    plan = blended_plan(hours("2026-01-01T00", 2), [1, 1], gpu_type=GPU, prices=OptionPrices(2.0, 1.0))
    assert plan.total().usd_per_1k_requests is None and plan.total().usd_per_million_output_tokens is None


def test_range_commits_once_and_prices_each_level():
    ts = hours("2026-01-01T00", 2)
    plans = plan_range(ts, {"P10": [1, 1], "P50": [2, 2], "P90": [3, 3]}, gpu_type=GPU,
                       prices=OptionPrices(2.0, 1.0))
    assert [p.reserved_gpus for p in plans.values()] == [2, 2, 2]
    # P10 pays for 2 reserved though it needs 1; P90 buys its third GPU on-demand: 4 + 2·2 = 8.
    assert [p.total().total_cost_usd for p in plans.values()] == pytest.approx([4.0, 4.0, 8.0])
    separate = plan_range(ts, {"P10": [1, 1], "P90": [3, 3]}, commit_level=None, gpu_type=GPU,
                          prices=OptionPrices(2.0, 1.0))
    assert [p.reserved_gpus for p in separate.values()] == [1, 3]
    from_toml = plan_range(ts, {"P10": [1, 1], "P90": [3, 3]}, commit_level="", gpu_type=GPU,
                           prices=OptionPrices(2.0, 1.0))
    assert [p.reserved_gpus for p in from_toml.values()] == [1, 3]


@pytest.mark.parametrize("kwargs, match", [
    (dict(ts_utc=hours("2026-01-01T00", 2), need_gpus=[1, 2, 3]), "must match"),
    (dict(ts_utc=np.array(["2026-01-01T00", "2026-01-01T02"], dtype="datetime64[h]"), need_gpus=[1, 2]),
     r"consecutive hours; ts_utc\[1\]"),
    (dict(ts_utc=hours("2026-01-01T00", 2), need_gpus=[1, np.nan]), r"need_gpus\[1\]"),
    (dict(ts_utc=hours("2026-01-01T00", 2), need_gpus=[1, 2], interruptible_share=1.5), "interruptible_share"),
    (dict(ts_utc=hours("2026-01-01T00", 2), need_gpus=[1, 2], reserved_gpus=-1), "reserved_gpus"),
    (dict(ts_utc=hours("2026-01-01T00", 2), need_gpus=[1, 2], requests=[1]), "requests"),
])
def test_blended_plan_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        blended_plan(gpu_type=GPU, prices=OptionPrices(2.0, 1.0), **kwargs)


def test_range_prices_each_level_per_unit_with_its_own_volume():
    ts = hours("2026-01-01T00", 2)
    plans = plan_range(ts, {"P50": [2, 2], "P90": [3, 3]}, gpu_type=GPU, prices=OptionPrices(2.0, 1.0),
                       requests_by_level={"P50": [1000, 1000], "P90": [2000, 2000]},
                       output_tokens_by_level={"P50": [1e5, 1e5], "P90": [4e5, 4e5]})
    # P50: 2 reserved × 1 USD × 2 h = 4 USD for 2,000 requests and 0.2 M tokens.
    assert plans["P50"].total().usd_per_1k_requests == pytest.approx(2.0)
    assert plans["P50"].total().usd_per_million_output_tokens == pytest.approx(20.0)
    # P90: 4 + 2 h × 1 GPU on-demand × 2 USD = 8 USD for 4,000 requests and 0.8 M tokens.
    assert plans["P90"].total().usd_per_1k_requests == pytest.approx(2.0)
    assert plans["P90"].total().usd_per_million_output_tokens == pytest.approx(10.0)


def test_range_rejects_unknown_commit_level():
    with pytest.raises(ValueError, match="commit_level 'P50'"):
        plan_range(hours("2026-01-01T00", 1), {"P90": [1]}, gpu_type=GPU, prices=OptionPrices(2.0, 1.0))


@pytest.mark.parametrize("kwargs", [dict(on_demand_usd_per_gpu_hour=0.0, reserved_usd_per_gpu_hour=1.0),
                                    dict(on_demand_usd_per_gpu_hour=1.0, reserved_usd_per_gpu_hour=1.0,
                                         spot_usd_per_gpu_hour=-1.0),
                                    dict(on_demand_usd_per_gpu_hour=1.0, reserved_usd_per_gpu_hour=1.0,
                                         spot_overhead_factor=0.5)])
def test_option_prices_reject_bad_values(kwargs):
    with pytest.raises(ValueError):
        OptionPrices(**kwargs)


# --- invariants over random need series and prices --------------------------------------------

@st.composite
def plan_inputs(draw):
    n = draw(st.integers(1, 24 * 70))  # up to 70 days, crossing month ends
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    base = draw(st.floats(0, 50))
    need = np.maximum(base + rng.normal(0, base / 4 + 1, n), 0).round(draw(st.sampled_from([0, 2])))
    p_od = draw(st.floats(0.5, 10))
    p_r = p_od * draw(st.floats(0.2, 1.2))
    spot = draw(st.one_of(st.none(), st.floats(0.05, 12)))
    prices = OptionPrices(p_od, p_r, spot_usd_per_gpu_hour=spot, spot_overhead_factor=draw(st.floats(1, 2)))
    share = draw(st.one_of(st.floats(0, 1), st.just(rng.uniform(0, 1, n))))
    start = np.datetime64("2026-01-20T00", "h") + draw(st.integers(0, 24 * 30))
    return start + np.arange(n), need, prices, share, rng.integers(0, 10_000, n)


@settings(max_examples=120, deadline=None)
@given(plan_inputs())
def test_blended_plan_invariants(inputs):
    ts, need, prices, share, requests = inputs
    plan = blended_plan(ts, need, gpu_type=GPU, prices=prices, interruptible_share=share, requests=requests)
    total = plan.total()
    scale = 1e-9 * max(total.all_on_demand_cost_usd, 1.0)
    # never dearer than all on-demand over the horizon
    assert total.total_cost_usd <= total.all_on_demand_cost_usd + scale
    # GPU-hours reconcile per month and in total
    for m in (*plan.months, total):
        assert m.reserved_used_gpu_hours + m.gpu_hours_on_demand + m.spot_work_gpu_hours == pytest.approx(
            m.need_gpu_hours, rel=1e-9, abs=1e-9)
        assert m.reserved_used_gpu_hours <= m.gpu_hours_reserved + 1e-9
        assert m.gpu_hours_reserved == pytest.approx(plan.reserved_gpus * m.hours)
        assert m.cost_usd_reserved + m.cost_usd_on_demand + m.cost_usd_spot == pytest.approx(
            m.total_cost_usd, rel=1e-12, abs=1e-9)
    assert sum(m.hours for m in plan.months) == len(need)
    assert total.need_gpu_hours == pytest.approx(need.sum(), rel=1e-9, abs=1e-9)
    # the reserved floor is set by the interactive need alone, never by spot-eligible work
    interactive = need - need * np.broadcast_to(share, need.shape)
    assert plan.reserved_gpus == optimal_commitment(
        interactive, reserved_usd_per_gpu_hour=prices.reserved_usd_per_gpu_hour,
        on_demand_usd_per_gpu_hour=prices.on_demand_usd_per_gpu_hour).reserved_gpus
    assert plan.reserved_gpus <= np.ceil(interactive.max())


@settings(max_examples=60, deadline=None)
@given(plan_inputs(), st.floats(1.0, 3.0))
def test_committed_cost_rises_with_demand(inputs, factor):
    ts, need, prices, share, _ = inputs
    plans = plan_range(ts, {"P50": need, "P90": need * factor}, gpu_type=GPU, prices=prices,
                       interruptible_share=share)
    lo, hi = (p.total().total_cost_usd for p in plans.values())
    assert hi >= lo - 1e-9 * max(lo, 1.0)
