"""capplan/plan/assumptions.py: every input with its value, unit (declared once on the config field) and source."""

from __future__ import annotations

from capplan.config import CapplanConfig, CostConfig, SizingConfig, field_unit
from capplan.plan import assumptions as plan

def test_assumptions_table_marks_measured_and_assumed_with_units(measured):
    table = plan.assumptions_table(CapplanConfig(), measured.table())
    by_name = table.set_index("name")
    assert by_name.loc["latency_s", "source"] == "measured" and by_name.loc["latency_s", "unit"] == "s"
    assert by_name.loc["sizing.target_utilisation", "source"] == "assumed"
    assert by_name.loc["sizing.spares", "unit"] == "count"
    assert by_name.loc["forecast.horizon_months", "unit"] == "months"
    assert set(table["source"]) == {"measured", "assumed"}
    assert (table["unit"] != "").all()
    assert by_name.loc["sizing.target_utilisation", "unit"] == "fraction"
    assert by_name.loc["sizing.gpu", "unit"] == "—"  # a catalogue key has no unit


def test_units_come_from_the_field_declaration_not_its_name():
    # a unit is declared once, on the field; a name that ends like a unit says nothing by itself
    assert field_unit(SizingConfig, "rollout_surge_fraction") == "fraction of need"
    assert field_unit(SizingConfig, "kv_block_size_tokens") == "tokens"
    assert field_unit(CostConfig, "interruptible_models") == "—"
    table = plan.assumptions_table(CapplanConfig(), {}).set_index("name")
    assert table.loc["cost.interruptible_share", "unit"] == field_unit(CostConfig, "interruptible_share") == "fraction"


def test_values_read_as_numbers_for_people_not_exponents():
    import numpy as np

    measured = {"kv_tokens": (20370.0, "tokens"), "requests": (np.int64(1234567), "count"), "share": (0.9995, "fraction")}
    table = plan.assumptions_table(CapplanConfig(), measured).set_index("name")
    assert table.loc["kv_tokens", "value"] == "20,370"  # was 2.037e+04
    assert table.loc["requests", "value"] == "1,234,567"
    assert table.loc["share", "value"] == "0.9995"


def test_a_pools_settings_and_throughput_source_are_rows_with_the_models_inputs(measured, flat_forecast):
    """A pool on 1 x H100 in bf16, TTFT from its SLO (800 ms), TPOT its own (40 ms): its settings are assumed
    rows; its throughput is modelled with the model's inputs (token mix, batch, what binds) beside it."""
    from capplan.config import parse_config
    from capplan.plan import assumptions
    from capplan.plan.pool_plan import plan_pool
    from capplan.plan.pools import resolve_pools

    cfg = parse_config({"pools": [{"name": "chat", "models": ["m"], "model": "llama-3.1-8b", "gpu": "H100-SXM-80GB",
                                   "tensor_parallel": 1, "tpot_ms_max": 40.0, "spares": 2}],
                        "slos": [{"name": "fast", "model": "m", "ttft_threshold_ms": 800.0, "target": 0.99}]})
    (pool,) = resolve_pools(cfg, ["m"])
    plan = plan_pool(cfg, pool, flat_forecast("2026-12-01", 48, 2.0), ["2026-12"], measured)
    rows = assumptions.pool_assumptions(cfg, plan)
    assert rows["gpu"] == ("H100-SXM-80GB", "—", "assumed") and rows["spares"] == (2, "count", "assumed")
    assert rows["tensor_parallel"][:2] == (1, "GPUs/replica") and rows["precision"][0] == "bf16"
    assert rows["ttft_ms_max"] == (800.0, "ms", "assumed") and rows["tpot_ms_max"] == (40.0, "ms", "assumed")
    assert rows["throughput per GPU"] == (plan.spec.gpu_output_tokens_per_s, "tokens/(s·GPU)", "modelled")
    assert rows["throughput token mix"][0] == "means" and rows["throughput batch"][2] == "modelled"
    assert rows["throughput mean TPOT at the batch"][0] <= 40.0
    assert "llama-3.1-8b on 1 x H100-SXM-80GB in bf16" in rows["throughput basis"][0]
    table = assumptions.assumptions_table(cfg, {}, rows)
    assert set(table["source"]) <= {"measured", "calibrated", "modelled", "assumed"}
