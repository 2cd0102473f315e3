"""The plan's inputs the logs did not have: latency (modelled or assumed) and what defaulted columns leave unknown.

Called by the measure stage (:func:`capplan.plan.inputs.measure_inputs`) instead of refusing a
database without ``latency_ms``; the names of :data:`capplan.plan.inputs.MEASURED_UNITS` it
changes are re-sourced in the assumptions table (:func:`sourced_rows`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from capplan.config import CapplanConfig
from capplan.ingest.coverage import DefaultedColumn
from capplan.sizing.latency import modelled_latency_s, poisson_burst_ratio

#: Performance-model precision of each ``[sizing].weights_dtype``.
PRECISION = {"fp32": "bf16", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8", "int8": "fp8", "int4": "fp4"}


def mean_ttft_s(hourly: pd.DataFrame) -> float | None:
    """Mean TTFT over the hours that have one, weighted by their requests; ``None`` if none has. [s]"""
    if "mean_ttft_ms" not in hourly or "requests" not in hourly:
        return None
    have = hourly["mean_ttft_ms"].notna() & (hourly["requests"].fillna(0) > 0)
    if not have.any():
        return None
    w = hourly.loc[have, "requests"].astype(float)
    return float((hourly.loc[have, "mean_ttft_ms"].astype(float) * w).sum() / w.sum()) / 1000.0


def latency_without_logs(cfg: CapplanConfig, input_tokens_per_request: float, output_tokens_per_request: float,
                         hourly: pd.DataFrame, pool: Any = None) -> tuple[float, str, str]:
    """``(latency_s, source, note)`` when no request has ``latency_ms``: ``[report].assumed_latency_s`` or modelled.

    ``pool`` is a :class:`capplan.plan.pools.Pool` (not imported: that module imports the measure stage).
    Modelled: :func:`capplan.sizing.latency.modelled_latency_s` of the pool's architecture, GPU, tensor
    parallelism and precision (each ``[sizing]``'s when the pool has none, or chooses the GPU or degree
    automatically: the choice comes later and needs this latency), the measured token means and the
    measured mean TTFT when the logs have one. [s]
    """
    if cfg.report.assumed_latency_s is not None:
        value = float(cfg.report.assumed_latency_s)
        return value, "assumed", (f"no request has latency_ms logged: latency assumed {value:g} s "
                                  "([report].assumed_latency_s)")
    ttft = mean_ttft_s(hourly)
    model = pool.model if pool is not None else cfg.sizing.model
    gpu = pool.gpu if pool is not None and pool.gpu != "auto" else cfg.sizing.gpu
    tp = pool.tensor_parallel if pool is not None and isinstance(pool.tensor_parallel, int) else (
        cfg.sizing.tensor_parallel)
    dtype = (pool.settings if pool is not None else {}).get("weights_dtype", cfg.sizing.weights_dtype)
    value = modelled_latency_s(model, gpu, input_tokens_per_request, output_tokens_per_request,
                               target_utilisation=cfg.sizing.target_utilisation, precision=PRECISION[dtype],
                               tensor_parallel=tp, ttft_s=ttft)
    first = f"measured TTFT {ttft:.3g} s" if ttft is not None else "modelled TTFT"
    return value, "modelled", (f"no request has latency_ms logged: latency modelled as {value:.3g} s ({first} + "
                               f"{output_tokens_per_request:.0f} output tokens x the performance model's time per "
                               f"output token for {model} on {gpu}); set "
                               "[report].assumed_latency_s to use a known figure")


def burst_without_latency(hourly: pd.DataFrame, latency_s: float) -> float:
    """Peak-to-mean requests in flight modelled from the busy hours' mean ``L = λ·W`` (Poisson, M/G/∞). [ratio]"""
    qps = hourly["avg_qps"].dropna().astype(float)
    busy = qps[(qps > 0) & (qps >= qps.median())]
    if busy.empty:
        raise ValueError("no hour with traffic: cannot model the peak-to-mean concurrency ratio")
    return poisson_burst_ratio(float(np.median(busy)) * latency_s)


def sourced_rows(sources: dict[str, str], defaulted: dict[str, DefaultedColumn],
                 values: dict[str, tuple[object, str]]) -> dict[str, tuple[object, str, str]]:
    """Assumptions-table rows whose source is not "measured": re-sourced measured figures and defaulted columns.

    ``sources`` maps a measured name to ``"modelled"``/``"assumed"``; ``values`` is
    :meth:`capplan.plan.inputs.MeasuredInputs.table`. Each defaulted column is a row of its own, and
    ``requests measured (2xx)`` is assumed when ``status`` was defaulted everywhere.
    """
    rows = {name: (*values[name], src) for name, src in sources.items() if name in values}
    status = defaulted.get("status")
    if status is not None and status.everywhere and "requests measured (2xx)" in values:
        rows["requests measured (2xx)"] = (*values["requests measured (2xx)"], "assumed")
    for col, d in defaulted.items():
        rows[f"log column {col}"] = (f"not logged in {d.rows_defaulted:,} of {d.rows_loaded:,} rows (defaulted)",
                                     "rows", "assumed")
    return rows
