"""The report's assumptions table: every input of the plan with its value, unit and source (measured or assumed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from capplan.config import CapplanConfig, field_unit
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


def _fmt(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return format_number(value)  # 20,370 tokens, not 2.037e+04; a non-number as str(value)
