"""What a monthly capacity-plan report contains, and the contracts of its tables.

:class:`PlanReport` is everything the renderers need, already computed: the
headline per month, the finance budget, the assumptions, the charts as PNG bytes
and any evidence tables. The pandera models below are checked when a report is
built, so a renderer never sees a negative GPU count or a total that does not add up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

MONTH_REGEX = r"^\d{4}-(0[1-9]|1[0-2])$"
BINDINGS = ("throughput", "memory")
#: ``binding`` of a fleet row whose pools bind on different constraints.
MIXED = "mixed"
#: ``pool`` of the fleet's total rows, and ``gpu_type`` of rows over several GPU types.
FLEET, ALL_GPUS = "total", "all"
SOURCES = ("measured", "calibrated", "modelled", "assumed")


class HeadlineSchema(pa.DataFrameModel):
    """One row per month and pool, and the fleet's total per month (``pool == "total"``): the numbers a reader needs first.

    The fleet's GPUs and cost are sums over pools; its P90 is the sum of the pools' P90s (an upper band).
    """

    pool: Series[str]
    month: Series[str] = pa.Field(str_matches=MONTH_REGEX)
    gpu_type: Series[str]
    gpus_p50: Series[int] = pa.Field(ge=0)
    gpus_p90: Series[int] = pa.Field(ge=0)
    cost_usd_p50: Series[float] = pa.Field(ge=0)
    cost_usd_p90: Series[float] = pa.Field(ge=0)
    binding: Series[str] = pa.Field(isin=[*BINDINGS, MIXED])

    class Config:
        unique = ["pool", "month"]

    @pa.dataframe_check(error="gpus_p90 must be >= gpus_p50")
    def p90_not_below_p50(cls, df: pd.DataFrame) -> Series[bool]:
        return df["gpus_p90"] >= df["gpus_p50"]


class BudgetSchema(pa.DataFrameModel):
    """The finance table: per month, pool and GPU type, GPUs and GPU-hours and cost per option.

    Each month also has a total row (``pool == "total"``; ``gpu_type`` the pools' one type, else ``"all"``),
    the sum of its pool rows.

    Besides the fixed columns it has ``gpu_hours_<option>`` [GPU-h] and
    ``cost_usd_<option>`` [USD] for each purchasing option; ``total_cost_usd``
    is their sum. [USD/month]
    """

    month: Series[str] = pa.Field(str_matches=MONTH_REGEX)
    pool: Series[str]
    gpu_type: Series[str]
    gpus_p50: Series[int] = pa.Field(ge=0)
    gpus_p90: Series[int] = pa.Field(ge=0)
    gpu_hours: Series[float] = pa.Field(ge=0, regex=True, alias=r"^gpu_hours_\w+$")
    option_cost_usd: Series[float] = pa.Field(ge=0, regex=True, alias=r"^cost_usd_\w+$")
    total_cost_usd: Series[float] = pa.Field(ge=0)

    @pa.dataframe_check(error="total_cost_usd must equal the sum of the cost_usd_<option> columns")
    def total_adds_up(cls, df: pd.DataFrame) -> Series[bool]:
        parts = df.filter(regex=r"^cost_usd_").sum(axis=1)
        return (parts - df["total_cost_usd"]).abs() <= 0.01 + 1e-9 * df["total_cost_usd"].abs()

    @pa.dataframe_check(error="each month's total row must equal the sum of its pool rows")
    def totals_sum_pools(cls, df: pd.DataFrame) -> bool:
        if "pool" not in df or not (df["pool"] == FLEET).any():
            return True
        numeric = df.select_dtypes("number").columns
        pools = df[df["pool"] != FLEET].groupby("month")[numeric].sum()
        total = df[df["pool"] == FLEET].set_index("month")[numeric].reindex(pools.index)
        return bool(((pools - total).abs() <= 0.01 + 1e-9 * pools.abs()).all().all())


class AssumptionSchema(pa.DataFrameModel):
    """Every input of the plan: its value, unit and whether logs or config gave it."""

    name: Series[str]
    value: Series[str]
    unit: Series[str]
    source: Series[str] = pa.Field(isin=SOURCES)


@dataclass(frozen=True)
class Chart:
    """One chart: a file-safe ``key``, a title, a caption saying how to read it, PNG bytes."""

    key: str
    title: str
    caption: str
    png: bytes


@dataclass(frozen=True)
class Table:
    """An evidence table shown after the charts (SLO status, drift findings, data quality), and the chart
    drawn from it, if any, shown under it in the same section."""

    title: str
    frame: pd.DataFrame
    caption: str = ""
    chart: Chart | None = None


@dataclass(frozen=True)
class PlanReport:
    """A finished plan, ready to render. Frames are validated on construction.

    ``forecast`` (optional) is the hourly demand forecast the plan rests on, indexed by
    hour (UTC), columns ``mean``, ``lo_<L>``, ``hi_<L>`` [requests/s]; it is written as
    ``forecast.csv`` so anyone can re-derive the plan from it.
    """

    month: str
    generated_at_utc: str
    gpu_type: str
    model_name: str
    headline: pd.DataFrame
    recommended_reserved_gpus: int
    budget: pd.DataFrame
    assumptions: pd.DataFrame
    charts: list[Chart] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    forecast: pd.DataFrame | None = None
    reserved_summary: str = ""
    summary: dict = field(default_factory=dict)  # per-pool results and totals as plain data (``plan.json``)
    variance: pd.DataFrame | None = None  # earlier plans against actuals (capplan.history.variance.PlanVariance)

    @property
    def all_charts(self) -> list[Chart]:
        """The evidence charts and the charts shown with their tables: every ``charts/<key>.png`` file."""
        return [*self.charts, *(t.chart for t in self.tables if t.chart is not None)]

    def __post_init__(self) -> None:
        object.__setattr__(self, "headline", HeadlineSchema.validate(self.headline))
        object.__setattr__(self, "budget", BudgetSchema.validate(self.budget))
        object.__setattr__(self, "assumptions", AssumptionSchema.validate(self.assumptions))
        if self.recommended_reserved_gpus < 0:
            raise ValueError(f"recommended_reserved_gpus must be >= 0, got {self.recommended_reserved_gpus}")

    @property
    def binding_summary(self) -> str:
        """One sentence naming what binds each pool over the horizon."""
        rows = self.headline[self.headline["pool"] != FLEET] if "pool" in self.headline else self.headline
        parts = []
        for pool, frame in rows.groupby("pool", sort=False) if "pool" in rows else [("", rows)]:
            counts = frame["binding"].value_counts()
            what = (f"{counts.index[0]} binds in every month of the horizon" if len(counts) == 1
                    else ", ".join(f"{b} binds in {n} month(s)" for b, n in counts.items()))
            parts.append(f"{pool}: {what}" if pool else what)
        return "; ".join(parts)
