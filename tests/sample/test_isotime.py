"""Tests of capplan/sample/isotime.py: the vectorised ISO-8601 writer against Python's datetime."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.sample.isotime import epoch_us, format_iso_utc


@settings(max_examples=50, deadline=None)
@given(st.lists(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)), max_size=20))
def test_iso_timestamps_match_python(moments: list[datetime]):
    """The vectorised ISO-8601 writer (Hinnant's civil_from_days) agrees with datetime.isoformat."""
    ts_us = np.array([epoch_us(m.replace(tzinfo=UTC)) for m in moments], dtype=np.int64)
    assert format_iso_utc(ts_us).to_pylist() == [m.isoformat(timespec="microseconds") + "Z" for m in moments]
