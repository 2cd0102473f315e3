"""Daily token-length histograms of served requests: the drift stage's reader.

Per UTC day, model and metric (``input_tokens``, ``output_tokens``), the counts of *served* (2xx)
requests per log bin and each bin's token sum, so window means are exact: a mergeable roll-up
(``sql/int_drift_daily_histogram.sql``) of ``requests`` and of stored partitions
(:func:`capplan.rollups.rollup_views`).

Grid
----
Drift has no grid of its own: its bin merges :data:`~capplan.rollups.DRIFT_BINS_MERGED` (9) consecutive
bins of the profile's one grid (:data:`capplan.profile.bins.HISTOGRAM_GAMMA` = 1.02), so a drift bin
spans a ratio ``1.02^9 ≈ 1.195`` (fine enough that a +10 % shift moves mass between bins). A value
``x >= 1`` falls in drift bin ``j = floor(profile bin / 9) = floor(ln x / (9 ln 1.02))``, which
holds ``[1.02^(9j), 1.02^(9(j+1)))``; 0 tokens fall in bin ``-1``
(:func:`capplan.rollups.drift_histogram_params` gives the roll-up that grid).
"""

from __future__ import annotations

from datetime import date

import duckdb
import numpy as np
import pandas as pd
import pandera.pandas as pa
from numpy.typing import ArrayLike
from pandera.typing.pandas import DataFrame, Series

from capplan import sql
from capplan.profile.bins import HISTOGRAM_GAMMA
from capplan.rollups import DRIFT_BINS_MERGED, drift_histogram_params, rollup_views

METRICS = ("input_tokens", "output_tokens")


class DailyHistogram(pa.DataFrameModel):
    """Log-binned token counts per UTC day, model and metric (served requests)."""

    day_utc: Series[pd.Timestamp]
    model: Series[str]
    metric: Series[str] = pa.Field(isin=list(METRICS))
    bin: Series[int] = pa.Field(ge=-1)
    requests: Series[int] = pa.Field(gt=0)
    tokens_sum: Series[int] = pa.Field(ge=0)

    class Config:
        coerce = True


@pa.check_types
def daily_histograms(con: duckdb.DuckDBPyConnection, start: date | None = None,
                     end: date | None = None) -> DataFrame[DailyHistogram]:
    """Per-day log-binned token histograms of served requests in ``[start, end)`` (UTC days)."""
    bounds = {"start_utc": start, "end_utc": end}
    rollup = ("int_drift_daily_histogram", bounds | drift_histogram_params())
    with rollup_views(con, {"drift_daily_rollup": rollup}) as cur:
        return cur.execute(sql.load("rpt_drift_daily_histogram"), bounds).df()


def bin_lower_tokens(bin_: ArrayLike) -> np.ndarray:
    """Lower edge of drift histogram bins: ``1.02^(9·bin)`` tokens, and 0 for bin ``-1``. [tokens]

    Parameters
    ----------
    bin_ : array_like of int
        Bins of a :class:`DailyHistogram` (``>= -1``).

    Examples
    --------
    >>> bin_lower_tokens([-1, 0, 1]).round(4).tolist()
    [0.0, 1.0, 1.1951]
    """
    k = np.asarray(bin_, dtype=float)
    return np.where(k < 0, 0.0, HISTOGRAM_GAMMA ** (DRIFT_BINS_MERGED * k))
