"""A month-over-month change of modelled serving cost, split into volume, model mix and token lengths."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import pandera.pandas as pa
from pandera.typing.pandas import DataFrame, Series

from capplan.drift.histogram import METRICS
from capplan.drift.stats import shapley_decomposition
from capplan.sizing.cost.per_request import RequestCost


class CostDecomposition(pa.DataFrameModel):
    """Parts of a month-over-month cost change; the non-total rows add up to ``total``."""

    component: Series[str] = pa.Field(isin=["volume", "model_mix", "input_length", "output_length", "total"])
    usd_change: Series[float]

    class Config:
        coerce = True


def _month_factors(hist: pd.DataFrame, month: pd.Period, costs: Mapping[str, RequestCost]) -> dict[str, object]:
    """Volume, model shares and per-model mean token lengths of one month of served requests."""
    part = hist[hist["day_utc"].dt.to_period("M") == month]
    sums = part.groupby(["metric", "model"])[["requests", "tokens_sum"]].sum()
    if sums.empty:
        raise ValueError(f"no served requests in {month}")
    requests = sums.loc[METRICS[0], "requests"]
    missing = sorted(set(requests.index) - set(costs))
    if missing:
        raise ValueError(f"no cost model for log models {missing}")
    means = {m: (sums.loc[m, "tokens_sum"] / sums.loc[m, "requests"]).to_dict() for m in METRICS}
    return {"volume": float(requests.sum()), "model_mix": (requests / requests.sum()).to_dict(),
            "input_length": means["input_tokens"], "output_length": means["output_tokens"]}


def cost_change_decomposition(hist: pd.DataFrame, month_before: str, month_after: str,
                              costs: Mapping[str, RequestCost]) -> DataFrame[CostDecomposition]:
    """Split the change in modelled serving cost between two months into volume and mix parts.

    The month's cost is ``C = V · Σ_m s_m · c_m(Ī_m, Ō_m)``: volume V of served
    requests, model shares s_m, and each model's per-request cost at its mean
    input and output length (exact, the cost model being linear in tokens).
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
    costs : Mapping[str, RequestCost]
        Cost model of each log model.

    Returns
    -------
    DataFrame[CostDecomposition]
        One row per factor and a ``total`` row. [USD/month]
    """
    before = _month_factors(hist, pd.Period(month_before, "M"), costs)
    after = _month_factors(hist, pd.Period(month_after, "M"), costs)
    for length in ("input_length", "output_length"):  # a model new in one month keeps its lengths in the other
        before[length] = {**after[length], **before[length]}
        after[length] = {**before[length], **after[length]}

    def cost_usd(f: Mapping[str, object]) -> float:
        return f["volume"] * sum(share * costs[m].usd(f["input_length"][m], f["output_length"][m])
                                 for m, share in f["model_mix"].items())

    parts = shapley_decomposition(before, after, cost_usd)
    rows = [{"component": k, "usd_change": v} for k, v in parts.items()]
    rows.append({"component": "total", "usd_change": cost_usd(after) - cost_usd(before)})
    return CostDecomposition.validate(pd.DataFrame(rows))
