"""The price book: per GPU type, on-demand, reserved (1y, 3y) and spot prices.

Prices are data (``data/prices.toml``), never code. :func:`load_price_book`
is the one function here that reads a file; everything else is typed,
frozen records. Every figure in the bundled book is ILLUSTRATIVE, with its
source and date: check current pricing.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from capplan.sizing.cost.commitment import reserved_effective_usd_per_gpu_hour, spot_overhead_factor
from capplan.sizing.cost.plan import OptionPrices

ReservedTerm = Literal["1y", "3y"]


class PriceBookError(ValueError):
    """The price book is missing, not TOML, or has a bad value (file and key named)."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReservedPrice(_Record):
    """One reservation term of one GPU type."""

    hourly_usd_per_gpu_hour: float = Field(ge=0, description="Recurring charge over the term. [USD/(GPU·h)]")
    upfront_usd_per_gpu: float = Field(0.0, ge=0, description="One-off payment, amortised over the term. [USD/GPU]")


class GpuPrices(_Record):
    """Prices of one GPU type (per single GPU)."""

    on_demand_usd_per_gpu_hour: float = Field(gt=0, description="Pay-as-you-go rate. [USD/(GPU·h)]")
    reserved: dict[ReservedTerm, ReservedPrice] = Field(description="Reservation terms offered.")
    spot_usd_per_gpu_hour: float | None = Field(None, gt=0, description="Spot rate; absent: no spot. [USD/(GPU·h)]")
    spot_interruptions_per_hour: float = Field(0.0, ge=0, description="Reclaim rate of one spot GPU. [1/h]")
    spot_work_lost_per_interruption_h: float = Field(
        0.0, ge=0, description="Work redone plus restart time per interruption. [h]")
    source: str = Field(min_length=1, description="Where each figure came from, and its date.")

    @model_validator(mode="after")
    def _spot_finishes_work(self) -> GpuPrices:
        spot_overhead_factor(self.spot_interruptions_per_hour, self.spot_work_lost_per_interruption_h)
        return self

    def reserved_usd_per_gpu_hour(self, term: ReservedTerm) -> float:
        """Effective reserved rate for ``term``, upfront amortised. [USD/(GPU·h)]"""
        if term not in self.reserved:
            raise ValueError(f"no {term!r} reservation in the price book; terms offered: {sorted(self.reserved)}")
        r = self.reserved[term]
        return reserved_effective_usd_per_gpu_hour(r.hourly_usd_per_gpu_hour, r.upfront_usd_per_gpu, term)

    def option_prices(self, term: ReservedTerm, *, use_spot: bool = True) -> OptionPrices:
        """The three hourly rates for a plan, with the reserved ``term``."""
        spot = self.spot_usd_per_gpu_hour if use_spot else None
        return OptionPrices(
            on_demand_usd_per_gpu_hour=self.on_demand_usd_per_gpu_hour,
            reserved_usd_per_gpu_hour=self.reserved_usd_per_gpu_hour(term),
            spot_usd_per_gpu_hour=spot,
            spot_overhead_factor=spot_overhead_factor(
                self.spot_interruptions_per_hour, self.spot_work_lost_per_interruption_h))


class PriceBook(_Record):
    """All GPU types' prices, with the book's label and date."""

    label: str = Field(description="Must say the prices are illustrative.")
    as_of: dt.date = Field(description="Date the prices were read.")
    currency: Literal["USD"] = "USD"
    gpus: dict[str, GpuPrices] = Field(min_length=1)

    def gpu(self, gpu_type: str) -> GpuPrices:
        """Prices of ``gpu_type``; ``KeyError`` listing the known GPU types."""
        try:
            return self.gpus[gpu_type]
        except KeyError:
            raise KeyError(f"GPU type {gpu_type!r} is not in the price book; known: {sorted(self.gpus)}") from None

    @property
    def caveat(self) -> str:
        """One line for reports: label and date."""
        return f"Prices {self.label} (as of {self.as_of.isoformat()})."


def load_price_book(path: str | Path) -> PriceBook:
    """Read and validate a price-book TOML file.

    Parameters
    ----------
    path : str or pathlib.Path
        The TOML file (see ``data/prices.toml`` for the layout).

    Returns
    -------
    PriceBook

    Raises
    ------
    PriceBookError
        If the file is missing or not TOML, or a value is missing or out of
        range; the message names the file and each bad key.
    """
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PriceBookError(f"price book {p} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise PriceBookError(f"{p}: not valid TOML: {exc}") from None
    try:
        return PriceBook.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"key {'.'.join(map(str, e['loc']))!r}: {e['msg']}" for e in exc.errors())
        raise PriceBookError(f"{p}: {problems}") from None
