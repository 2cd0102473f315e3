"""Throughput per pool: measured, calibrated, modelled or assumed, in that order (issue 19).

:func:`pool_throughput` picks the best source for one pool's GPU throughput:

1. **measured**: a clean sweep of load tests of this pool on its GPU and TP, at the production
   mix: the capacity at the SLO (:func:`capplan.loadtest.capacity.capacity_at_slo`), per GPU (a run
   whose file names no GPU was imported for this pool and is taken as the pool's GPU; the note says so);
2. **calibrated**: such a sweep at another token mix (only the ``token_mix`` flag): the performance
   model scaled by the measured/model ratio at the test's mix, evaluated at the production mix,
   ``X = X_model(prod) · X_meas(test) / X_model(test)``, so at the test's own mix it equals the measurement;
3. **modelled**: :func:`capplan.sizing.performance.replica_throughput` at the production mix and targets;
4. **assumed**: the GPU catalogue's figure for the model's size class.

Each estimate's ``note`` says what it rests on and why a higher source was not used. A measured,
calibrated or modelled rate holds the prompts' prefill (continuous batching mixes it into the decode
steps; a load test measures it), so the fleet adds no prefill GPUs for it
(:attr:`capplan.sizing.fleet.FleetSpec.prefill_in_output_rate`); the catalogue's assumed rates keep
decode and prefill apart. The sizing's own KV-memory term (slots at the P95 sequence) still applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from capplan.loadtest.capacity import SloTargets, group_sweeps, sweep_summary
from capplan.loadtest.hygiene import run_flags
from capplan.sizing.catalogue import GpuSpec, ModelSpec
from capplan.sizing.fleet import THROUGHPUT_SOURCES, FleetSpec
from capplan.sizing.performance import replica_throughput, throughput_sweep, token_mix

if TYPE_CHECKING:  # DuckDB and pandas only for the reader: `capplan size` imports this module without them
    import duckdb
    import pandas as pd

SOURCES = THROUGHPUT_SOURCES  # one list: the sizing record checks its throughput_source against it


@dataclass(frozen=True)
class OperatingCurve:
    """The performance model's operating curve of a pool's replica at its production token mix: throughput
    and latency over batch sizes up to the KV-memory batch limit, and the batch the plan runs at.

    ``points`` are :func:`capplan.sizing.performance.throughput_sweep`'s dicts (``batch`` [sequences],
    ``output_tokens_per_s_per_gpu`` [tokens/(s·GPU)], ``tpot_ms``, ``ttft_ms`` [ms], ``step_bound``, ...),
    the operating batch among them. A calibrated pool's throughputs are the model's times
    ``calibration_ratio`` (measured/model at the load test's mix), as its estimate is; its TPOT and TTFT
    are the model's.
    """

    points: tuple[dict[str, Any], ...]
    batch: int  # the operating batch the plan used [sequences]
    output_tokens_per_s_per_gpu: float  # at ``batch`` [tokens/(s·GPU)]
    tpot_ms: float  # at ``batch`` [ms]
    ttft_ms: float  # at ``batch`` [ms]
    tpot_ms_max: float | None  # the pool's targets [ms]
    ttft_ms_max: float | None
    kv_memory_batch_limit: int  # [sequences]
    source: Literal["modelled", "calibrated"]
    calibration_ratio: float  # 1 when modelled
    inputs: str  # what the model was run at (model, GPU, TP, precision, token mix, targets)


@dataclass(frozen=True)
class ThroughputEstimate:
    """One pool's GPU throughput and where it comes from.

    ``details`` holds what the figure rests on, for the report's assumptions table: the
    performance model's inputs and operating point (``model``, ``gpu``, ``tensor_parallel``,
    ``precision``, ``input_tokens_mean``, ``output_tokens_mean``, ``token_mix``, ``batch``,
    ``binds``, ``step_bound``, ``ttft_ms``, ``tpot_ms``, ``ttft_ms_max``, ``tpot_ms_max``) and, for a
    load test, ``load_test`` (its files), ``load_test_flags``, ``load_test_gpu``,
    ``load_test_capacity_requests_per_s`` and (calibrated) ``calibration_ratio``. ``curve``: for a
    modelled or calibrated rate, the model's :class:`OperatingCurve` it was read from.
    """

    gpu_output_tokens_per_s: float  # [tokens/(s·GPU)] at the operating point
    gpu_prefill_tokens_per_s: float | None  # [tokens/(s·GPU)]; None: inside the output rate, or the catalogue's
    seqs_per_gpu: float | None  # None: sizing's own KV-memory calculation decides [sequences/GPU]
    source: Literal["measured", "calibrated", "modelled", "assumed"]
    note: str  # what it rests on (load-test file + capacity, or model inputs)
    details: dict[str, Any] = field(default_factory=dict)
    curve: OperatingCurve | None = None  # modelled or calibrated: the model's curve at the production mix

    def fleet_spec_overrides(self) -> dict:
        """Keyword arguments for ``SizingConfig.fleet_spec`` / ``dataclasses.replace(FleetSpec, ...)``.

        A measured, calibrated or modelled rate already holds the prompts' prefill (mixed into the
        decode steps by continuous batching), so no prefill GPUs are added for it; the catalogue's
        assumed rates keep decode and prefill apart.
        """
        return {"gpu_output_tokens_per_s": self.gpu_output_tokens_per_s,
                "gpu_prefill_tokens_per_s": self.gpu_prefill_tokens_per_s,
                "seqs_per_gpu": self.seqs_per_gpu, "throughput_source": self.source, "throughput_note": self.note,
                "prefill_in_output_rate": self.source != "assumed"}

    def applied_to(self, spec: FleetSpec, tensor_parallel: int) -> FleetSpec:
        """``spec`` on ``tensor_parallel`` GPUs per replica with this estimate's rate, batch and source
        (:meth:`fleet_spec_overrides`; a figure the estimate does not have keeps the spec's). The one place
        an estimate enters a sizing record, for the plan's pools and ``capplan size`` alike."""
        overrides = {k: v for k, v in self.fleet_spec_overrides().items() if v is not None}
        return replace(spec, tensor_parallel=tensor_parallel, **overrides)


def load_tests_for_plan(con: duckdb.DuckDBPyConnection, pools: Sequence[str]) -> pd.DataFrame:
    """The stored load-test runs of ``pools`` (read-only); an empty frame when none were imported."""
    import pandas as pd

    from capplan import sql
    from capplan.loadtest.store import has_table

    if not has_table(con):
        return pd.DataFrame()
    return con.execute(sql.load("rpt_plan_load_tests"), {"pools": list(pools)}).df()


def _records(load_tests: pd.DataFrame | None, pool: str) -> list[dict[str, Any]]:
    if load_tests is None or load_tests.empty:
        return []
    rows = load_tests[load_tests["pool"] == pool].astype(object).where(load_tests.notna(), None)
    return rows.to_dict("records")


def _same_replica(run: dict[str, Any], gpu: GpuSpec, tensor_parallel: int) -> bool:
    """The run measured this pool's replica: its GPU (a run whose file names none was imported for this pool,
    so it is taken as the pool's, and the note says so) and its GPUs per replica."""
    named = str(run.get("gpu") or "").casefold()
    return named in ("", gpu.key.casefold()) and int(run.get("gpus_per_replica") or 0) == int(tensor_parallel)


def _modelled(model: ModelSpec, gpu: GpuSpec, tensor_parallel: int, precision: str, input_tokens: Any,
              output_tokens: Any, tpot_ms_max: float | None, ttft_ms_max: float | None):
    return replica_throughput(model=model, gpu=gpu, tensor_parallel=tensor_parallel, precision=precision,
                              input_tokens=input_tokens, output_tokens=output_tokens,
                              tpot_ms_max=tpot_ms_max, ttft_ms_max=ttft_ms_max)


def pool_throughput(load_tests: pd.DataFrame | None, *, pool: str, model: ModelSpec, gpu: GpuSpec,
                    tensor_parallel: int, precision: str, input_tokens: Any, output_tokens: Any,
                    tpot_ms_max: float | None, ttft_ms_max: float | None) -> ThroughputEstimate:
    """The best-founded GPU throughput of one pool (see the module docstring for the order).

    Parameters
    ----------
    load_tests : DataFrame or None
        Rows of ``load_tests`` (:func:`load_tests_for_plan`); None or empty: none.
    pool : str
        The pool's name, as stored in ``load_tests.pool``.
    model, gpu : ModelSpec, GpuSpec
        The pool's architecture and GPU.
    tensor_parallel : int
        GPUs per replica. [GPUs]
    precision : str
        Weights and matmuls (a key of :data:`capplan.sizing.performance.PRECISIONS`).
    input_tokens, output_tokens : number, {length: weight} or (lengths, weights)
        The pool's measured token mix. [tokens]
    tpot_ms_max, ttft_ms_max : float or None
        The pool's latency targets. [ms]
    """
    isl, osl = token_mix(input_tokens), token_mix(output_tokens)
    reasons: list[str] = []
    runs = [r for r in _records(load_tests, pool) if _same_replica(r, gpu, tensor_parallel)]
    if not runs:
        reasons.append(f"no load test of pool {pool!r} on {tensor_parallel} x {gpu.key}")
    elif tpot_ms_max is None and ttft_ms_max is None:
        reasons.append("load tests present but the pool has no latency target to judge them against")
        runs = []
    for r in runs:
        r["flags"] = [f.to_dict() for f in run_flags(r, isl.mean_tokens, osl.mean_tokens)]
    targets = SloTargets(ttft_ms_max=ttft_ms_max, tpot_ms_max=tpot_ms_max) if runs else None
    usable = []
    for group in group_sweeps(runs):
        summary = sweep_summary(group, targets)
        files = ", ".join(sorted({str(r["file_path"]) for r in group}))
        other = [f for f in summary["flags"] if f != "token_mix"]
        if other or summary["capacity"]["kind"] != "interpolated" or not summary["output_tokens_per_s_per_gpu"]:
            why = ", ".join(other) or f"capacity {summary['capacity']['kind']}"
            reasons.append(f"load test {files} rejected: {why.replace('_', ' ')}")
        else:
            usable.append((summary, group, files))
    clean = [u for u in usable if "token_mix" not in u[0]["flags"]]
    if clean:
        summary, _, files = clean[0]
        rate = summary["output_tokens_per_s_per_gpu"]
        return ThroughputEstimate(rate, None, None, "measured",
                                  f"load test {files}: capacity at the SLO {summary['capacity']['requests_per_s']:.4g} "
                                  f"requests/s, {rate:.4g} output tokens/s per GPU"
                                  + ("" if summary["setup"].get("gpu") else f" (the file names no GPU: taken as the "
                                                                            f"pool's {gpu.key})"),
                                  _load_test_details(summary, files))
    if not usable:
        return modelled_throughput(model, gpu, tensor_parallel, precision, input_tokens, output_tokens,
                                   tpot_ms_max=tpot_ms_max, ttft_ms_max=ttft_ms_max, reasons=reasons)
    summary, _, files = usable[0]
    try:
        prod = _modelled(model, gpu, tensor_parallel, precision, input_tokens, output_tokens, tpot_ms_max, ttft_ms_max)
        test = _modelled(model, gpu, tensor_parallel, precision, summary["input_tokens_mean"],
                         summary["output_tokens_mean"], tpot_ms_max, ttft_ms_max)
    except ValueError as exc:
        return _assumed(model, gpu, [*reasons, f"load test {files} at another token mix, and the performance model "
                                               f"cannot carry it to the production mix: {exc}"])
    details = _model_details(model, gpu, tensor_parallel, precision, input_tokens, output_tokens, prod, tpot_ms_max,
                             ttft_ms_max)
    ratio = summary["output_tokens_per_s_per_gpu"] / test.output_tokens_per_s_per_gpu
    curve = _curve(model, gpu, tensor_parallel, precision, input_tokens, output_tokens, prod, details, "calibrated",
                   ratio)
    return ThroughputEstimate(prod.output_tokens_per_s_per_gpu * ratio, None, None, "calibrated",
                              f"load test {files} at another token mix, measured/model {ratio:.3g} at its mix, "
                              f"applied to the model at {_inputs_text(details)}",
                              details | _load_test_details(summary, files) | {"calibration_ratio": ratio}, curve)


def modelled_throughput(model: ModelSpec, gpu: GpuSpec, tensor_parallel: int, precision: str, input_tokens: Any,
                        output_tokens: Any, *, tpot_ms_max: float | None = None, ttft_ms_max: float | None = None,
                        reasons: Sequence[str] = ()) -> ThroughputEstimate:
    """The performance model's GPU throughput at a token mix and latency targets (``modelled``), or the
    catalogue's figure (``assumed``) when the model cannot run (a precision the GPU lacks, no room for a
    sequence), the note saying why. ``reasons``: why nothing better was used, for the note."""
    try:
        prod = _modelled(model, gpu, tensor_parallel, precision, input_tokens, output_tokens, tpot_ms_max, ttft_ms_max)
    except ValueError as exc:
        return _assumed(model, gpu, [*reasons, f"performance model unavailable: {exc}"])
    details = _model_details(model, gpu, tensor_parallel, precision, input_tokens, output_tokens, prod, tpot_ms_max,
                             ttft_ms_max)
    why = [*reasons] + ([] if prod.meets_targets else ["no batch meets the latency targets: batch 1"])
    return ThroughputEstimate(prod.output_tokens_per_s_per_gpu, None, None, "modelled",
                              f"performance model: {_inputs_text(details)}" + (f" ({'; '.join(why)})" if why else ""),
                              details, _curve(model, gpu, tensor_parallel, precision, input_tokens, output_tokens,
                                              prod, details, "modelled"))


def _curve(model: ModelSpec, gpu: GpuSpec, tensor_parallel: int, precision: str, input_tokens: Any,
           output_tokens: Any, prod: Any, details: Mapping[str, Any], source: Literal["modelled", "calibrated"],
           ratio: float = 1.0) -> OperatingCurve:
    """The model's sweep at the production mix up to the KV-memory limit, through the operating batch
    ``prod.batch``; throughputs times ``ratio`` (calibrated)."""
    points = throughput_sweep(prod.kv_memory_batch_limit, extra_batches=(prod.batch,), model=model, gpu=gpu,
                              tensor_parallel=tensor_parallel, precision=precision, input_tokens=input_tokens,
                              output_tokens=output_tokens)
    scaled = tuple(p | {"output_tokens_per_s_per_gpu": p["output_tokens_per_s_per_gpu"] * ratio,
                        "output_tokens_per_s_per_replica": p["output_tokens_per_s_per_replica"] * ratio}
                   for p in points)
    return OperatingCurve(scaled, int(prod.batch), prod.output_tokens_per_s_per_gpu * ratio, prod.tpot_ms, prod.ttft_ms,
                          details["tpot_ms_max"], details["ttft_ms_max"], int(prod.kv_memory_batch_limit),
                          source, ratio, _inputs_text(details))


def _assumed(model: ModelSpec, gpu: GpuSpec, reasons: Sequence[str]) -> ThroughputEstimate:
    return ThroughputEstimate(gpu.decode_rate(model.size_class), gpu.prefill_rate(model.size_class), None, "assumed",
                              f"GPU catalogue {gpu.key} figure for size class {model.size_class!r} "
                              f"({'; '.join(reasons)})", {"model": model.key, "gpu": gpu.key,
                                                           "size_class": model.size_class})


def _inputs_text(d: Mapping[str, Any]) -> str:
    targets = ", ".join(f"{name} <= {d[key]:g} ms" for name, key in (("TPOT", "tpot_ms_max"), ("TTFT", "ttft_ms_max"))
                        if d.get(key) is not None) or "no latency target"
    return (f"{d['model']} on {d['tensor_parallel']} x {d['gpu']} in {d['precision']}, mean input "
            f"{d['input_tokens_mean']:.4g} / output {d['output_tokens_mean']:.4g} tokens ({d['token_mix']}), {targets}: "
            f"batch {d['batch']}, {d['binds'].replace('_', ' ')} binds")


def _load_test_details(summary: dict[str, Any], files: str) -> dict[str, Any]:
    gpu = summary["setup"].get("gpu")
    return {"load_test": files, "load_test_flags": ", ".join(summary["flags"]) or "none",
            "load_test_gpu": gpu or "not in the file: taken as the pool's",
            "load_test_capacity_requests_per_s": summary["capacity"]["requests_per_s"]}


def _model_details(model: ModelSpec, gpu: GpuSpec, tensor_parallel: int, precision: str, input_tokens: Any,
                   output_tokens: Any, prod: Any, tpot_ms_max: float | None, ttft_ms_max: float | None) -> dict[str, Any]:
    mix = "histogram" if isinstance(input_tokens, Mapping | tuple | list) else "means"
    return {"model": model.key, "gpu": gpu.key, "tensor_parallel": int(tensor_parallel), "precision": precision,
            "input_tokens_mean": token_mix(input_tokens).mean_tokens,
            "output_tokens_mean": token_mix(output_tokens).mean_tokens,
            "token_mix": mix, "batch": int(prod.batch), "binds": prod.binds, "step_bound": prod.step_bound,
            "ttft_ms": prod.ttft_ms, "tpot_ms": prod.tpot_ms, "ttft_ms_max": ttft_ms_max, "tpot_ms_max": tpot_ms_max}


__all__ = ["SOURCES", "OperatingCurve", "ThroughputEstimate", "load_tests_for_plan", "modelled_throughput",
           "pool_throughput"]
