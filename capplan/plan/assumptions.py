"""The report's assumptions table: every input of the plan with its value, unit and source.

Sources: measured (logs, a load test), calibrated (a load test carried to the pool's token mix by the
performance model), modelled (the performance model, an automatic choice) or assumed (config, catalogue).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from capplan.config import AUTO, CapplanConfig, PoolConfig, field_unit
from capplan.plan.pool_plan import PoolPlan
from capplan.plan.pools import pool_latency_targets
from capplan.reports.formatting import format_number

#: Config sections whose every field the assumptions table lists as assumed.
ASSUMED_SECTIONS = ("forecast", "sizing", "cost", "profile")


def assumptions_table(cfg: CapplanConfig, measured: Mapping[str, tuple[Any, str]],
                      sourced: Mapping[str, tuple[Any, str, str]] | None = None) -> pd.DataFrame:
    """Every input of the plan with value, unit and source.

    ``measured`` maps a name to ``(value, unit)`` for figures taken from the logs
    (:meth:`capplan.plan.inputs.MeasuredInputs.table`); the fields of the config
    sections in :data:`ASSUMED_SECTIONS` and the SLO targets are listed as assumed,
    each with the unit its field declares (:func:`capplan.config.field_unit`). ``sourced`` maps a
    name to ``(value, unit, source)`` for rows that say their own source (replacing a measured row of the same name) (measured, modelled or
    assumed: the history policy's demand, defaulted log columns).
    """
    figures = {k: (v, unit, "measured") for k, (v, unit) in measured.items()} | dict(sourced or {})
    rows = [{"name": k, "value": _fmt(v), "unit": unit, "source": src} for k, (v, unit, src) in figures.items()]
    for section in ASSUMED_SECTIONS:
        model = getattr(cfg, section)
        for name in type(model).model_fields:
            rows.append({"name": f"{section}.{name}", "value": _fmt(getattr(model, name)),
                         "unit": field_unit(type(model), name), "source": "assumed"})
    for i, slo in enumerate(cfg.slos):
        rows.append({"name": f"slos[{i}] {slo.name} target", "value": _fmt(slo.target),
                     "unit": field_unit(type(slo), "target"), "source": "assumed"})
    return pd.DataFrame(rows, columns=["name", "value", "unit", "source"]).astype(str)


#: Pool headroom settings listed per pool, with their :class:`~capplan.config.PoolConfig` units.
POOL_SETTINGS = ("spares", "zones", "zones_lost", "growth_safety_factor", "rollout_surge_fraction", "warm_pool_gpus")

#: Performance-model inputs and operating point listed per pool: detail key -> (row name, unit).
_MODEL_ROWS = {"token_mix": ("throughput token mix", "—"),
               "input_tokens_mean": ("throughput input tokens", "tokens/request"),
               "output_tokens_mean": ("throughput output tokens", "tokens/request"),
               "batch": ("throughput batch", "sequences/replica"), "binds": ("throughput batch limited by", "—"),
               "step_bound": ("throughput step bound", "—"), "ttft_ms": ("throughput mean TTFT at the batch", "ms"),
               "tpot_ms": ("throughput mean TPOT at the batch", "ms"),
               "load_test": ("throughput load test", "file"), "load_test_flags": ("throughput load-test flags", "—"),
               "load_test_gpu": ("throughput load-test GPU", "—"),
               "calibration_ratio": ("throughput measured/model at the test's mix", "ratio")}


def pool_assumptions(cfg: CapplanConfig, plan: PoolPlan) -> dict[str, tuple[Any, str, str]]:
    """One pool's settings and throughput as ``name -> (value, unit, source)`` rows of :func:`assumptions_table`.

    The architecture, GPU, TP, precision, utilisation target, latency targets
    (:func:`capplan.plan.pools.pool_latency_targets`) and headroom the pool was sized with (assumed from config; ``modelled`` where an automatic choice or the queueing-wait SLO
    decided), and its per-GPU throughput with its source (measured / calibrated / modelled /
    assumed), what it rests on (the load-test file and its flags, or the performance model's
    inputs: model, GPU, TP, precision, token mix, batch and what binds).
    """
    spec, first, pool = plan.spec, plan.sized.first_p50, plan.pool
    chosen = "modelled" if pool.is_auto else "assumed"
    tp_source = "assumed" if pool.tensor_parallel not in (None, AUTO) else "modelled"
    util_source = "modelled" if first.sources.get("target_utilisation") == "derived" else "assumed"
    gpu = plan.gpu + (f" (auto: cheapest of {len(plan.choice.candidates)} candidates)" if plan.choice else "")
    rows: dict[str, tuple[Any, str, str]] = {
        "model": (pool.model, "—", "assumed"), "gpu": (gpu, "—", chosen), "tensor_parallel": (int(first.tensor_parallel), "GPUs/replica", tp_source),
        "precision": (spec.weights_dtype, "—", "assumed"),
        "target_utilisation": (float(first.target_utilisation), "fraction", util_source)}
    rows |= {name: (getattr(spec, name), field_unit(PoolConfig, name), "assumed") for name in POOL_SETTINGS}
    ttft_ms_max, tpot_ms_max = pool_latency_targets(cfg, pool)
    rows["ttft_ms_max"] = (ttft_ms_max if ttft_ms_max is not None else "none", "ms", "assumed")
    rows["tpot_ms_max"] = (tpot_ms_max if tpot_ms_max is not None else "none", "ms", "assumed")
    source = spec.throughput_source
    rows["throughput per GPU"] = (float(spec.gpu_output_tokens_per_s or first.gpu_output_tokens_per_s),
                                  "tokens/(s·GPU)", source)
    rows["throughput basis"] = (spec.throughput_note or "given as a flat rate, or the GPU catalogue's figure for "
                                                        "the model's size class", "—", source)
    details = plan.throughput.details if plan.throughput is not None else {}
    for key, (name, unit) in _MODEL_ROWS.items():
        if details.get(key) is not None:
            rows[name] = (details[key], unit, source)
    return rows


def _fmt(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return format_number(value)  # 20,370 tokens, not 2.037e+04; a non-number as str(value)
