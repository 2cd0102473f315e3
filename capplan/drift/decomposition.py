"""A month-over-month change of modelled serving cost, split into volume, model mix and token lengths."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import pandera.pandas as pa
from pandera.typing.pandas import DataFrame, Series

from capplan.drift.histogram import METRICS
from capplan.drift.pricing import PerRequestCost, at_baseline, window_mixes
from capplan.drift.stats import shapley_decomposition


class CostDecomposition(pa.DataFrameModel):
    """Parts of a month-over-month cost change; the non-total rows add up to ``total``."""

    component: Series[str] = pa.Field(isin=["volume", "model_mix", "input_length", "output_length", "total"])
    usd_change: Series[float]

    class Config:
        coerce = True


def _month_factors(hist: pd.DataFrame, month: pd.Period, costs: Mapping[str, PerRequestCost]) -> dict[str, object]:
    """Volume, model shares and per-model token mixes of one month of served requests."""
    start = month.start_time
    end = (month + 1).start_time
    part = hist[(hist["day_utc"] >= start) & (hist["day_utc"] < end)]
    requests = part[part["metric"] == METRICS[0]].groupby("model")["requests"].sum()
    if requests.empty:
        raise ValueError(f"no served requests in {month}")
    missing = sorted(set(requests.index) - set(costs))
    if missing:
        raise ValueError(f"no cost model for log models {missing}")
    mixes = {m: window_mixes(part, [m], start, end) for m in requests.index}
    return {"volume": float(requests.sum()), "model_mix": (requests / requests.sum()).to_dict(),
            "input_length": {m: x["input_tokens"] for m, x in mixes.items()},
            "output_length": {m: x["output_tokens"] for m, x in mixes.items()}}


def cost_change_decomposition(hist: pd.DataFrame, month_before: str, month_after: str,
                              costs: Mapping[str, PerRequestCost]) -> DataFrame[CostDecomposition]:
    """Split the change in modelled serving cost between two months into volume and mix parts.

    The month's cost is ``C = V · Σ_m s_m · c_m(I_m, O_m)``: volume V of served
    requests, model shares s_m, and each model's mean per-request cost at its
    input and output token mixes (for a linear cost, the cost at the mean
    lengths). A modelled cost is held at the operating point of the model's
    pool in the month before (or, for a model new in the month after, that month).
    :func:`capplan.drift.stats.shapley_decomposition` splits ``C_after − C_before``
    over the four factors (volume, model mix, input length, output length); the
    parts add up exactly to the total. A model served in one month only enters
    the other with share 0 and the lengths of the month it has.

    Parameters
    ----------
    hist : DataFrame[DailyHistogram]
        From :func:`capplan.drift.histogram.daily_histograms`.
    month_before, month_after : str
        Months as ``'YYYY-MM'`` (UTC).
    costs : Mapping[str, PerRequestCost]
        Cost model of each log model (:func:`capplan.drift.pricing.request_costs`).

    Returns
    -------
    DataFrame[CostDecomposition]
        One row per factor and a ``total`` row. [USD/month]
    """
    months = [pd.Period(month_before, "M"), pd.Period(month_after, "M")]
    before, after = (_month_factors(hist, month, costs) for month in months)
    for length in ("input_length", "output_length"):  # a model new in one month keeps its lengths in the other
        before[length] = {**after[length], **before[length]}
        after[length] = {**before[length], **after[length]}
    at = {}
    for m in set(before["model_mix"]) | set(after["model_mix"]):
        month = months[0] if m in before["model_mix"] else months[1]
        at[m] = at_baseline(costs[m], hist, m, month.start_time, (month + 1).start_time)

    def cost_usd(f: Mapping[str, object]) -> float:
        return f["volume"] * sum(share * at[m].usd(f["input_length"][m], f["output_length"][m])
                                 for m, share in f["model_mix"].items())

    parts = shapley_decomposition(before, after, cost_usd)
    rows = [{"component": k, "usd_change": v} for k, v in parts.items()]
    rows.append({"component": "total", "usd_change": cost_usd(after) - cost_usd(before)})
    return CostDecomposition.validate(pd.DataFrame(rows))
