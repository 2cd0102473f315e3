"""Tests of capplan/sample/spec.py: validation of the spec and the seeded placement of incidents."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime

import pytest

from capplan.sample.spec import Drift, Incident, SampleSpec

MONDAY = date(2026, 8, 3)


def test_seeded_incidents_placed_inside_the_span_and_absent_when_off():
    spec = SampleSpec(MONDAY, 60, 1_000, seed=7)
    assert len(spec.incident_windows) == 2
    for inc in spec.incident_windows:
        assert spec.start <= inc.start.date() < spec.end and 0.05 <= inc.error_fraction <= 0.30
    assert replace(spec, incidents=False).incident_windows == ()



@pytest.mark.parametrize("make, match", [
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
