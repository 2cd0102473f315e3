"""UTC instants as microseconds since the epoch, and their ISO-8601 text, vectorised.

The text formats of a sample write ``ts_utc`` as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.
:func:`format_iso_utc` builds that text for a whole column as one byte buffer (no
per-row Python), computing the calendar date once per distinct day; docs/sample.md
gives its speed against ``pyarrow.compute.strftime``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as arrow

US_PER_S = 1_000_000
_US_PER_DAY = 86_400 * US_PER_S

# "00" … "99" as little-endian uint16 pairs, written into fixed byte offsets of each row.
_PAIRS = np.array([[ord("0") + i // 10, ord("0") + i % 10] for i in range(100)], dtype="<u1").view("<u2").ravel()
_ISO_TEMPLATE = np.frombuffer(b"0000-00-00T00:00:00.000000Z", dtype=np.uint8)
_ISO_FIELDS = {"century": 0, "year": 2, "month": 5, "day": 8, "hour": 11, "minute": 14, "second": 17,
               "us_hi": 20, "us_mid": 22, "us_lo": 24}  # byte offset of each two-digit field
_ISO_ROW = np.dtype({"names": [*_ISO_FIELDS, "row"], "formats": ["<u2"] * len(_ISO_FIELDS) + [("u1", 27)],
                     "offsets": [*_ISO_FIELDS.values(), 0], "itemsize": 27})


def epoch_us(t: datetime) -> int:
    """Microseconds since 1970-01-01 UTC of an aware datetime ``t``. [µs]"""
    return (t - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def civil_from_days(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) of days since 1970-01-01, proleptic Gregorian.

    Parameters
    ----------
    days : ndarray of int
        Days since 1970-01-01. [days]

    Returns
    -------
    tuple of ndarray
        Year, month (1–12) and day of month (1–31), each the shape of ``days``.

    References
    ----------
    H. Hinnant, "chrono-Compatible Low-Level Date Algorithms", civil_from_days.
    """
    z = days + 719_468  # days since 0000-03-01
    era = z // 146_097  # 400-year eras
    doe = z - era * 146_097  # day of era [0, 146096]
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365  # year of era [0, 399]
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)  # day of year, from March 1 [0, 365]
    mp = (5 * doy + 2) // 153  # month from March [0, 11]
    month = np.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (month <= 2), month, doy - (153 * mp + 2) // 5 + 1


def format_iso_utc(ts_us: np.ndarray) -> arrow.StringArray:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` for each instant, as one Arrow string array.

    Parameters
    ----------
    ts_us : ndarray of int64
        Microseconds since 1970-01-01 UTC, years 1–9999. [µs]

    Returns
    -------
    pyarrow.StringArray
        27 characters per instant, in one contiguous byte buffer.
    """
    days, us = np.divmod(ts_us, _US_PER_DAY)
    first = int(days.min()) if len(days) else 0
    span = np.arange(first, int(days.max(initial=first)) + 1)
    year, month, day = (part[days - first] for part in civil_from_days(span))  # once per distinct day
    seconds, micros = np.divmod(us, US_PER_S)
    rows = np.empty(len(ts_us), dtype=_ISO_ROW)
    rows["row"] = _ISO_TEMPLATE
    for name, value in (("century", year // 100), ("year", year % 100), ("month", month), ("day", day),
                        ("hour", seconds // 3_600), ("minute", seconds // 60 % 60), ("second", seconds % 60),
                        ("us_hi", micros // 10_000), ("us_mid", micros // 100 % 100), ("us_lo", micros % 100)):
        rows[name] = _PAIRS[value]
    offsets = np.arange(0, len(ts_us) * _ISO_ROW.itemsize + 1, _ISO_ROW.itemsize, dtype=np.int32)
    return arrow.StringArray.from_buffers(len(ts_us), arrow.py_buffer(offsets), arrow.py_buffer(rows.view(np.uint8)))
