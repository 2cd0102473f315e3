"""The traffic profile: hourly roll-ups of the ``requests`` table in DuckDB, and the frames read from them.

One module per job:

* :mod:`~capplan.profile.refresh`: the write path (``ensure_tables``, ``refresh_rollups``, the
  mergeable ``rollup_partition`` / ``merge_rollups``, windows and the insert buffer);
* :mod:`~capplan.profile.counting`: the numpy kernel that counts a window's rows;
* :mod:`~capplan.profile.bins`: the one histogram grid (``HISTOGRAM_GAMMA``);
* :mod:`~capplan.profile.freshness`: ``ProfileError`` and the read-only check that the roll-ups are current;
* :mod:`~capplan.profile.read`: the readers (hourly, daily and weekly traffic, typical week, token
  distribution, histograms, hourly SLI);
* :mod:`~capplan.profile.queries`: the report queries with their parameters bound, without pandas (what the
  readers validate as frames and the summary reads as plain values);
* :mod:`~capplan.profile.summary`: ``profile_summary``, ``token_stats`` (a model's or a pool's token mix);
* :mod:`~capplan.profile.schemas`: the pandera models of the readers' frames.

Readers never write: refresh the roll-ups first (``capplan ingest`` does after loading, the plan's
flow does, ``capplan profile --refresh`` does on demand). This package re-exports the names used
elsewhere. See ``docs/profile.md``.
"""

from __future__ import annotations

from capplan.exports import lazy_exports

# name -> the module that defines it; imported on first use (PEP 562), so the write path
# (``capplan.profile.refresh``) does not pay for pandas and pandera, which only the readers need
_HOMES = {
    "capplan.profile.bins": ("HISTOGRAM_GAMMA", "HISTOGRAM_RELATIVE_ERROR"),
    "capplan.profile.freshness": ("ROLLUP_VERSION", "ProfileError", "require_current_rollups"),
    "capplan.profile.read": ("daily_traffic", "histograms", "hourly_sli", "hourly_traffic", "token_distribution",
                             "typical_week", "weekly_traffic"),
    "capplan.profile.refresh": ("ROLLUP_MEMORY_LIMIT_MIB", "ROLLUP_TABLES", "ensure_tables", "merge_rollups",
                                "refresh_rollups", "rollup_partition", "store_histogram_rows"),
    "capplan.profile.counting": ("ALL_MODELS", "METRICS"),
    "capplan.profile.queries": ("EMPTY_HOURS", "GRAINS"),
    "capplan.profile.schemas": ("Histogram", "HourlySli", "HourlyTraffic", "PeriodTraffic",
                                "TokenDistribution", "TypicalWeek"),
    "capplan.profile.summary": ("profile_summary", "token_stats"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _HOMES)
