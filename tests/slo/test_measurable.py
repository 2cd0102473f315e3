"""An SLO over defaulted columns is not measurable (capplan/slo/measurable.py)."""

from __future__ import annotations

from capplan.config import SloConfig
from capplan.ingest.coverage import DefaultedColumn
from capplan.slo.measurable import slo_needs, unmeasurable_reason


def test_needs_and_reason():
    avail, ttft = SloConfig(name="a"), SloConfig(name="t", ttft_threshold_ms=2000.0)
    assert slo_needs(avail) == ("status",) and slo_needs(ttft) == ("status", "ttft_ms")
    no_ttft = {"ttft_ms": DefaultedColumn("ttft_ms", 10, 10)}
    assert unmeasurable_reason(avail, no_ttft) is None
    reason = unmeasurable_reason(ttft, no_ttft)
    assert reason.startswith("SLO 't' is not measurable from these logs: ttft_ms was not logged in any of the 10")
    # partly logged: measured from the rows that have it
    assert unmeasurable_reason(ttft, {"ttft_ms": DefaultedColumn("ttft_ms", 4, 10)}) is None
