"""The cost stage: the hourly fleet priced at P10/P50/P90 with one reserved commitment, and its volumes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from capplan.config import CapplanConfig
from capplan.plan.calendar import hours_in_months
from capplan.plan.fleet import LEVELS
from capplan.plan.inputs import MeasuredInputs, interruptible_share
from capplan.sizing.cost.plan import CostPlan, plan_range
from capplan.sizing.cost.prices import load_price_book


def hourly_volumes(forecast: pd.DataFrame, months: list[str],
                   measured: MeasuredInputs) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Requests and generated tokens per forecast hour at P10/P50/P90, for the cost per unit.

    requests = forecast mean QPS × 3600 s; output tokens = requests × the measured
    output tokens per request. Returns ``({level: requests}, {level: tokens})``.
    [requests], [tokens]
    """
    part = hours_in_months(forecast, months)
    requests = {level: part[column].to_numpy(float) * 3600.0  # [requests/s] → [requests/h]
                for level, column in LEVELS.items()}
    tokens = {level: r * measured.output_tokens_per_request for level, r in requests.items()}
    return requests, tokens


def cost_by_level(hours_utc: np.ndarray, need: dict[str, np.ndarray], cfg: CapplanConfig,
                  measured: MeasuredInputs | None = None,
                  volumes: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None = None, *,
                  gpu: str | None = None, share: float | None = None) -> dict[str, CostPlan]:
    """The cost stage's blended plans at P10/P50/P90, the reserved count committed at ``[cost].commit_level``.

    The spot share is :func:`capplan.plan.inputs.interruptible_share`: the measured
    ``measured.interruptible_share`` when ``[cost]`` lists interruptible models or
    tenants, else the assumed ``[cost].interruptible_share``. ``volumes`` (from
    :func:`hourly_volumes`) gives each level its cost per 1,000 requests and per
    million output tokens. ``gpu`` (a pool's GPU type, default ``[sizing].gpu``) picks the
    price book entry; ``share`` (a pool's spot share) overrides the measured or assumed one.
    """
    gpu = gpu or cfg.sizing.gpu
    book = load_price_book(cfg.cost.price_book)
    prices = book.gpu(gpu).option_prices(cfg.cost.reserved_term)
    requests, tokens = volumes if volumes is not None else (None, None)
    share = interruptible_share(cfg.cost, measured) if share is None else share
    return plan_range(hours_utc, need, commit_level=cfg.cost.commit_level or None, gpu_type=gpu,
                      prices=prices, interruptible_share=share,
                      requests_by_level=requests, output_tokens_by_level=tokens)
