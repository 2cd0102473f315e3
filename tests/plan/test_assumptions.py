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
