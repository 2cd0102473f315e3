"""The forecast's output contract (pandera)."""

from __future__ import annotations

import re

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

_BOUND = re.compile(r"^(lo|hi)_(\d+)$")


class ForecastFrame(pa.DataFrameModel):
    """One row per future period: the point forecast and one interval per level.

    ``lo_<L>``/``hi_<L>`` bound the central ``L`` % prediction interval, in the
    unit of the input series. Values are never negative (traffic, tokens).
    """

    mean: Series[float] = pa.Field(ge=0, nullable=False)
    lo: Series[float] = pa.Field(alias=r"^lo_\d+$", regex=True, ge=0, nullable=False)
    hi: Series[float] = pa.Field(alias=r"^hi_\d+$", regex=True, ge=0, nullable=False)

    @pa.dataframe_check(error="every lo_L <= mean <= hi_L")
    def bounds_bracket_mean(cls, df: pd.DataFrame) -> bool:
        """Each interval contains the point forecast."""
        return all(bool((df[f"lo_{lv}"] <= df["mean"]).all() and (df["mean"] <= df[f"hi_{lv}"]).all())
                   for lv in _levels(df))

    @pa.dataframe_check(error="intervals must widen with the level")
    def nested_levels(cls, df: pd.DataFrame) -> bool:
        """A higher level's interval contains every lower level's."""
        lv = sorted(_levels(df))
        return all(bool((df[f"lo_{b}"] <= df[f"lo_{a}"]).all() and (df[f"hi_{a}"] <= df[f"hi_{b}"]).all())
                   for a, b in zip(lv, lv[1:]))

    @pa.dataframe_check(error="every lo_L needs its hi_L")
    def paired_bounds(cls, df: pd.DataFrame) -> bool:
        """Bounds come in pairs."""
        found = [m.groups() for c in df.columns if (m := _BOUND.match(str(c)))]
        return {lv for side, lv in found if side == "lo"} == {lv for side, lv in found if side == "hi"}

    class Config:
        strict = True


def _levels(df: pd.DataFrame) -> list[int]:
    """Interval levels present as ``lo_<L>`` columns. [%]"""
    return [int(m.group(2)) for c in df.columns if (m := _BOUND.match(str(c))) and m.group(1) == "lo"]
