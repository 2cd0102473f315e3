"""Storage: request-log bytes per day and retained."""

from __future__ import annotations

import numpy as np
import pytest

from capplan.sizing import storage


def test_hand_checked_value():
    # 2,000,000 × (1,400 × 4 + 200) B = 11.6 GB/day; × 90 days = 1.044 TB
    per_day = storage.request_log_bytes_per_day(2_000_000, 1_400, 4, 200)
    assert per_day == pytest.approx(11.6e9, rel=1e-12)
    assert storage.retained_bytes(per_day, 90) == pytest.approx(1.044e12, rel=1e-12)


def test_arrays_and_errors():
    assert np.shape(storage.request_log_bytes_per_day(np.ones(3), 10)) == (3,)
    with pytest.raises(ValueError, match="retention_days must be >= 0"):
        storage.retained_bytes(1.0, -1)
