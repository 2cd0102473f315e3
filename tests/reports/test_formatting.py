"""Tests for reports/formatting.py: numbers and headers for people."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.reports.formatting import column_label, format_number


@pytest.mark.parametrize(("value", "text"), [
    (20370.0, "20,370"), (20370, "20,370"), (np.int64(1234567), "1,234,567"), (12.5, "12.50"),
    (0.999, "0.999"), (0.9995, "0.9995"), (3.0, "3"), (-1534.4, "-1,534"), (float("nan"), "—"),
    (float("inf"), "∞"), ("text", "text"), (True, "True"),
])
def test_format_number_worked_examples(value, text):
    assert format_number(value) == text


@given(st.floats(min_value=1e-4, max_value=1e15, allow_nan=False))
def test_format_number_never_prints_an_exponent(value):
    assert "e" not in format_number(value).lower()


@given(st.floats(min_value=100, max_value=1e12))
def test_format_number_rounds_to_the_value(value):
    assert math.isclose(float(format_number(value).replace(",", "")), value, abs_tol=0.5)


@pytest.mark.parametrize(("column", "label"), [
    ("qps_p10", "Design peak QPS P10 [requests/s]"), ("gpus_throughput", "GPUs for throughput [count]"),
    ("cost_usd_on_demand", "Cost on-demand [USD]"), ("gpu_hours_spot", "GPU-hours spot [GPU-h]"),
    ("latency_ms", "Latency [ms]"), ("some_thing", "Some thing"), ("budget_spent_fraction", "Budget spent [fraction]"),
])
def test_column_label(column, label):
    assert column_label(column) == label
