"""Synthetic LLM-serving request logs, deterministic by seed, streamed day by day.

One module per job:

* :mod:`capplan.sample.spec` — what a log contains: :class:`SampleSpec` (span, volume,
  cycles, models, tenants, zones), :class:`Incident`, :class:`Drift`, :class:`Burst`,
  and the ground truth of what was injected (:class:`SampleTruth`, :func:`ground_truth`).
* :mod:`capplan.sample.generate` — the traffic model: per-second arrival rates, the
  draws of one day (:func:`generate_day`), and the days in order (:func:`iter_days`),
  optionally generated one day ahead on a second thread.
* :mod:`capplan.sample.write` — output kinds and target paths, the Parquet / CSV /
  JSON-lines sinks, and :func:`write_sample`.
* :mod:`capplan.sample.isotime` — epoch microseconds and their ISO-8601 text, vectorised.

The names other packages use are re-exported here, so ``from capplan.sample import
SampleSpec, write_sample`` keeps working.
"""

from __future__ import annotations

from capplan.sample.generate import SCHEMA, DayChunk, generate_day, iter_days
from capplan.sample.spec import (
    DEFAULT_MODELS,
    Burst,
    Drift,
    Incident,
    ModelMix,
    SampleSpec,
    SampleTruth,
    ground_truth,
)
from capplan.sample.write import SampleResult, check_outputs, output_kind, target_paths, write_sample

__all__ = [
    "DEFAULT_MODELS", "SCHEMA", "Burst", "DayChunk", "Drift", "Incident", "ModelMix", "SampleResult",
    "SampleSpec", "SampleTruth", "check_outputs", "generate_day", "ground_truth", "iter_days", "output_kind",
    "target_paths", "write_sample",
]
