"""The traffic profile: hourly roll-ups of the ``requests`` table in DuckDB, and the frames read from them.

One module per job:

* :mod:`~capplan.profile.refresh`: the write path (``ensure_tables``, ``refresh_rollups``, the
  mergeable ``rollup_partition`` / ``merge_rollups``, windows and the insert buffer);
* :mod:`~capplan.profile.counting`: the numpy kernel that counts a window's rows;
* :mod:`~capplan.profile.bins`: the one histogram grid (``HISTOGRAM_GAMMA``);
* :mod:`~capplan.profile.freshness`: ``ProfileError`` and the read-only check that the roll-ups are current;
* :mod:`~capplan.profile.read`: the readers (hourly, daily and weekly traffic, typical week, token
  distribution, histograms, hourly SLI);
* :mod:`~capplan.profile.summary`: ``profile_summary``;
* :mod:`~capplan.profile.schemas`: the pandera models of the readers' frames.

Readers never write: refresh the roll-ups first (``capplan ingest`` does after loading, the plan's
flow does, ``capplan profile --refresh`` does on demand). This package re-exports the names used
elsewhere. See ``docs/profile.md``.
"""

from __future__ import annotations

from capplan.profile.bins import HISTOGRAM_GAMMA, HISTOGRAM_RELATIVE_ERROR
from capplan.profile.freshness import ROLLUP_VERSION, ProfileError, require_current_rollups
from capplan.profile.read import (
    daily_traffic,
    histograms,
    hourly_sli,
    hourly_traffic,
    token_distribution,
    typical_week,
    weekly_traffic,
)
from capplan.profile.refresh import (
    ROLLUP_MEMORY_LIMIT_MIB,
    ROLLUP_TABLES,
    ensure_tables,
    merge_rollups,
    refresh_rollups,
    rollup_partition,
)
from capplan.profile.schemas import (
    ALL_MODELS,
    EMPTY_HOURS,
    GRAINS,
    METRICS,
    Histogram,
    HourlySli,
    HourlyTraffic,
    PeriodTraffic,
    TokenDistribution,
    TypicalWeek,
)
from capplan.profile.summary import profile_summary

__all__ = [
    "ALL_MODELS", "EMPTY_HOURS", "GRAINS", "HISTOGRAM_GAMMA", "HISTOGRAM_RELATIVE_ERROR", "METRICS",
    "ROLLUP_MEMORY_LIMIT_MIB", "ROLLUP_TABLES", "Histogram", "HourlySli", "HourlyTraffic", "PeriodTraffic",
    "ROLLUP_VERSION", "ProfileError", "TokenDistribution", "TypicalWeek", "daily_traffic", "ensure_tables", "histograms",
    "hourly_sli", "hourly_traffic", "merge_rollups", "profile_summary", "refresh_rollups",
    "require_current_rollups", "rollup_partition", "token_distribution", "typical_week", "weekly_traffic",
]
