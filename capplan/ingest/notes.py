"""What a file's values say about how it was read: an implausible time range, every row quarantined.

Pure functions of numbers already counted (no I/O). A time range before
:data:`PLAUSIBLE_START_UTC` or more than :data:`PLAUSIBLE_FUTURE_S` after ingest time is loaded
but noted (a relative trace ingested without ``origin`` lands in 1970); the notes go to the
ledger (``ingest_ledger.notes``) and the command's output. A file whose every row is quarantined
is a failure unless asked otherwise (``allow_all_quarantined``): the message names its commonest
rules with an example, since nothing of it is kept to look at.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

#: arrivals before this are implausible for LLM serving logs (assumed) [UTC]
PLAUSIBLE_START_UTC = datetime(2000, 1, 1)
#: arrivals later than ingest time plus this are implausible (assumed) [s]
PLAUSIBLE_FUTURE_S = 86_400.0


def time_range_notes(first_utc: datetime | None, last_utc: datetime | None, now_utc: datetime) -> tuple[str, ...]:
    """Notes on a loaded file's arrival span [UTC, naive] when it is implausible; empty when it is not.

    >>> time_range_notes(datetime(1970, 1, 1), datetime(1970, 1, 1, 1), datetime(2026, 12, 2))[0][:38]
    'arrivals start 1970-01-01 00:00:00 UTC'
    """
    notes = []
    if first_utc is not None and first_utc < PLAUSIBLE_START_UTC:
        notes.append(f"arrivals start {first_utc:%Y-%m-%d %H:%M:%S} UTC, before {PLAUSIBLE_START_UTC:%Y-%m-%d}: "
                     "a relative trace without --origin, or a wrong --timestamp-unit?")
    if last_utc is not None and last_utc > now_utc + timedelta(seconds=PLAUSIBLE_FUTURE_S):
        notes.append(f"arrivals end {last_utc:%Y-%m-%d %H:%M:%S} UTC, more than {PLAUSIBLE_FUTURE_S / 3600:g} h after "
                     "the ingest time: a wrong --timestamp-unit, --origin or --timezone?")
    return tuple(notes)


def is_plausible_all_quarantined(rules: Sequence[tuple[str, int, str]]) -> bool:
    """Whether a file whose rows broke ``rules`` (rule, rows, a detail) and loaded none may load as it is.

    True when no rule was broken (rows loaded, or the check was not asked for) or every rule is
    ``request_id_duplicate``: a file of requests already loaded (a re-export) is a normal, if empty,
    load. Any other rule across every row points at the options (mapping, unit, origin), not the data.
    """
    return all(rule == "request_id_duplicate" for rule, _, _ in rules)


def all_quarantined_message(path: Path, rows: int, top_rules: Sequence[tuple[str, int, str]]) -> str:
    """The message of a file whose ``rows`` rows were all quarantined; ``top_rules``: (rule, rows, a detail),
    commonest first (the first three are named)."""
    rules = "; ".join(f"{rule} {n:,} (e.g. {detail})" for rule, n, detail in top_rules[:3])
    fix = "the options (--map, --timestamp-unit, --origin, --timezone)"
    if top_rules and top_rules[0][0] == "csv_wrong_column_count":  # every line disagrees with the header
        fix = "the file's header (it names another number of columns than the lines have) or its delimiter"
    return (f"{path}: every row ({rows:,}) was quarantined, so nothing was loaded: {rules}. Fix {fix} "
            "or pass --allow-all-quarantined to load it anyway")
