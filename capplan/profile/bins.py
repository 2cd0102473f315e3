"""The one log-binned grid of every token and latency histogram capplan keeps.

A value ``x >= 1`` falls in bin ``k = floor(ln x / ln HISTOGRAM_GAMMA)``, which holds
``[gamma^k, gamma^(k+1))``; a value below 1 (0 included) falls in bin ``-1`` (see
``sql/int_profile_rows.sql`` and :func:`capplan.profile.counting.log_bins`). Histograms on this grid merge by adding counts
bin by bin, whatever the hours, files or partitions they came from. A coarser view (as drift's
daily comparison needs) merges whole runs of these bins, so it never needs a grid of its own.
"""

from __future__ import annotations

HISTOGRAM_GAMMA = 1.02
"""Ratio of consecutive histogram bin edges: bin k holds ``[gamma^k, gamma^(k+1))``."""
HISTOGRAM_RELATIVE_ERROR = (HISTOGRAM_GAMMA - 1) / (HISTOGRAM_GAMMA + 1)
"""Bound on the relative error of a histogram quantile against the exact order statistic (≈ 0.99 %)."""
