"""The composed fleet sizing: demand → throughput and memory needs → binding constraint → headroom.

:func:`size_fleet` is the one entry point the CLI and the monthly flow call; it
takes the load as arguments and the settings as one :class:`FleetSpec`, and
returns a :class:`FleetSizing` whose :meth:`FleetSizing.rows` lists every term
with its value, unit, a note and whether it was measured, assumed or derived,
ready to print or to put in a report. :func:`monotone_step_map` sizes many loads
with few calls; :func:`latency_curve` and :func:`operating_latency_s` show a sized
fleet's queueing (M/M/c over its pooled sequence slots).

>>> spec = FleetSpec(gpu_output_tokens_per_s=2_000, seqs_per_gpu=40, target_utilisation=0.6, spares=1)
>>> fs = size_fleet(peak_qps=2_000_000 / 86_400 * 4, latency_s=6, output_tokens_per_request=400, spec=spec)
>>> fs.total_gpus, fs.binding_constraint
(32, 'throughput')
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from capplan.sizing import capacity, demand, headroom, memory, queueing
from capplan.sizing._checks import fraction, positive
from capplan.sizing.catalogue import GpuSpec, ModelSpec

if TYPE_CHECKING:
    import pandas as pd

Source = Literal["measured", "calibrated", "modelled", "assumed", "derived"]

#: Where a per-GPU throughput comes from (:attr:`FleetSpec.throughput_source`), best-founded first.
THROUGHPUT_SOURCES: tuple[str, ...] = ("measured", "calibrated", "modelled", "assumed")

#: Inputs a caller may declare as measured (from logs); the rest of the inputs are assumed.
MEASURABLE_INPUTS: tuple[str, ...] = (
    "average_qps",
    "peak_qps",
    "latency_s",
    "output_tokens_per_request",
    "input_tokens_per_request",
    "kv_tokens_per_sequence",
    "gpu_output_tokens_per_s",
    "gpu_prefill_tokens_per_s",
    "seqs_per_gpu",
)



@dataclass(frozen=True)
class FleetSpec:
    """The sizing settings: hardware, model, utilisation target and headroom (everything but the load).

    One record, built once (from ``[sizing]`` by :meth:`capplan.config.SizingConfig.fleet_spec`,
    from CLI flags by the same method with overrides, or directly in tests) and passed to
    :func:`size_fleet`. A new setting is a field here and, when it is configurable, a field of
    the same name in ``[sizing]``. The defaults are :func:`size_fleet`'s documented defaults.

    Attributes
    ----------
    gpu : GpuSpec or None
        GPU from the catalogue; supplies memory and ASSUMED throughputs.
    model : ModelSpec or None
        Model from the catalogue; supplies the size class and KV-cache shape.
    gpu_output_tokens_per_s : float or None
        Decode throughput per GPU; overrides the catalogue. [tokens/(s·GPU)]
    gpu_prefill_tokens_per_s : float or None
        Prefill throughput per GPU; overrides the catalogue. [tokens/(s·GPU)]
    seqs_per_gpu : float or None
        Sequences one GPU holds; overrides the KV-cache calculation. [sequences/GPU]
    target_utilisation : float
        Share of throughput *and* sequence slots used at peak. [fraction, (0, 1]]
    wait_target_s : float or None
        If given, ``target_utilisation`` is derived instead: the fewest sequence
        slots whose ``wait_percentile`` queueing wait stays under this
        (:func:`sizing.queueing.servers_for_wait_target`, Erlang C with the
        latency as the slot-holding time) sets ``u = L / slots``. [s]
    wait_percentile : float
        Percentile of the queueing-wait SLO. [fraction, (0, 1)]
    spares : int
        N+k spare replicas. [replicas]
    zones : int
        Zones the fleet is spread over. [count]
    zones_lost : int
        Zones whose loss must be survived. [count]
    growth_safety_factor : float
        Multiplier for forecast error. [ratio, >= 1]
    rollout_surge_fraction : float
        Extra share of the need during rolling deploys. [fraction]
    warm_pool_gpus : int
        Idle pre-loaded GPUs for bursts, rounded up to whole replicas. [GPUs]
    tensor_parallel : int or None
        GPUs per replica; ``None``: the smallest degree the model fits in, or 1. [GPUs/replica]
    kv_dtype, weights_dtype : str
        Element types, one of :data:`sizing.memory.DTYPES`.
    memory_reserve_fraction : float
        GPU memory kept from the KV cache. [fraction]
    kv_block_size_tokens : int
        Paged-attention block. [tokens]
    throughput_source : str
        Where ``gpu_output_tokens_per_s`` comes from, one of :data:`THROUGHPUT_SOURCES`:
        ``measured`` (a load test), ``calibrated`` (a load test carried to this token mix by the
        performance model), ``modelled`` (:func:`capplan.sizing.performance.replica_throughput`)
        or ``assumed`` (given, or the catalogue's figure).
    throughput_note : str
        What that figure rests on (the model's inputs, or the load-test file), for the report.
    prefill_in_output_rate : bool
        True when ``gpu_output_tokens_per_s`` was measured or modelled with the prompts'
        prefill mixed into the same steps (continuous batching): no separate prefill GPUs
        are added. False: decode and prefill GPUs add (the flat catalogue rates).
    """

    gpu: GpuSpec | None = None
    model: ModelSpec | None = None
    gpu_output_tokens_per_s: float | None = None
    gpu_prefill_tokens_per_s: float | None = None
    seqs_per_gpu: float | None = None
    target_utilisation: float = 0.6
    wait_target_s: float | None = None
    wait_percentile: float = 0.99
    spares: int = 1
    zones: int = 1
    zones_lost: int = 0
    growth_safety_factor: float = 1.0
    rollout_surge_fraction: float = 0.0
    warm_pool_gpus: int = 0
    tensor_parallel: int | None = None
    kv_dtype: str = "bf16"
    weights_dtype: str = "bf16"
    memory_reserve_fraction: float = 0.1
    kv_block_size_tokens: int = 16
    throughput_source: str = "assumed"
    throughput_note: str = ""
    prefill_in_output_rate: bool = False

    def __post_init__(self) -> None:
        if self.throughput_source not in THROUGHPUT_SOURCES:
            raise ValueError(f"throughput_source must be one of {', '.join(THROUGHPUT_SOURCES)}; "
                             f"got {self.throughput_source!r}")


@dataclass(frozen=True)
class FleetSizing:
    """Every term of one fleet sizing, with units in the names.

    Inputs are echoed so a report can show them; ``None`` means the term did not
    apply (e.g. no model, so no KV-cache terms). GPU counts named ``gpus_*`` are
    fractional [GPUs]; ``replicas`` and ``total_gpus`` are whole.
    """

    # inputs
    gpu: str | None
    model: str | None
    average_qps: float | None
    peak_qps: float
    latency_s: float
    output_tokens_per_request: float
    input_tokens_per_request: float
    gpu_output_tokens_per_s: float
    gpu_prefill_tokens_per_s: float | None
    target_utilisation: float
    # demand
    concurrency: float
    output_tokens_per_s: float
    input_tokens_per_s: float
    # throughput
    gpus_for_decode: float
    gpus_for_prefill: float
    gpus_by_throughput: float
    # memory
    tensor_parallel: int
    kv_tokens_per_sequence: float | None
    kv_bytes_per_token: float | None
    kv_bytes_per_sequence: float | None
    weights_gib_per_gpu: float | None
    seqs_per_gpu: float
    gpus_by_memory: float
    # binding constraint
    binding_constraint: Literal["throughput", "memory"]
    binding_margin_gpus: float
    need_gpus: float
    # headroom, each term on its own
    growth_safety_factor: float
    growth_headroom_gpus: float
    rollout_surge_fraction: float
    rollout_surge_gpus: float
    zones: int
    zones_lost: int
    zone_headroom_gpus: float
    rounding_gpus: float
    replicas: int
    spares: int
    spare_gpus: int
    warm_pool_gpus: int
    total_gpus: int
    notes: dict[str, str]
    sources: dict[str, Source]
    throughput_source: str = "assumed"  # of gpu_output_tokens_per_s, one of THROUGHPUT_SOURCES

    def _source(self, name: str) -> Source:
        return self.sources.get(name, "assumed")

    def rows(self) -> list[dict[str, Any]]:
        """Every term as ``{term, value, unit, note, source}``, in reading order, skipping terms that did not apply."""
        derived: Source = "derived"
        spec: list[tuple[str, str, str, Source]] = [
            ("gpu", "GPU type", "", "assumed"),
            ("model", "model", "", "assumed"),
            ("average_qps", "average QPS", "requests/s", self._source("average_qps")),
            ("peak_qps", "peak QPS", "requests/s", self._source("peak_qps")),
            ("latency_s", "latency per request", "s", self._source("latency_s")),
            ("output_tokens_per_request", "output tokens per request", "tokens", self._source("output_tokens_per_request")),
            ("input_tokens_per_request", "input tokens per request", "tokens", self._source("input_tokens_per_request")),
            ("concurrency", "requests in flight (L = λ·W)", "requests", derived),
            ("output_tokens_per_s", "output tokens/s at peak", "tokens/s", derived),
            ("input_tokens_per_s", "input tokens/s at peak", "tokens/s", derived),
            ("gpu_output_tokens_per_s", "decode throughput per GPU", "tokens/(s·GPU)", self._source("gpu_output_tokens_per_s")),
            ("gpu_prefill_tokens_per_s", "prefill throughput per GPU", "tokens/(s·GPU)", self._source("gpu_prefill_tokens_per_s")),
            ("target_utilisation", "target utilisation", "fraction", self._source("target_utilisation")),
            ("gpus_for_decode", "GPUs for decode", "GPUs", derived),
            ("gpus_for_prefill", "GPUs for prefill", "GPUs", derived),
            ("gpus_by_throughput", "GPUs by throughput", "GPUs", derived),
            ("tensor_parallel", "tensor-parallel degree", "GPUs/replica", derived),
            ("weights_gib_per_gpu", "weights per GPU", "GiB", derived),
            ("kv_tokens_per_sequence", "KV tokens per sequence", "tokens", self._source("kv_tokens_per_sequence")),
            ("kv_bytes_per_token", "KV cache per token per GPU", "B/token", derived),
            ("kv_bytes_per_sequence", "KV cache per sequence per GPU", "B", derived),
            ("seqs_per_gpu", "sequences per GPU", "sequences/GPU", self._source("seqs_per_gpu")),
            ("gpus_by_memory", "GPUs by concurrency (memory)", "GPUs", derived),
            ("binding_constraint", "binding constraint", "", derived),
            ("binding_margin_gpus", "binding margin", "GPUs", derived),
            ("need_gpus", "GPUs needed at peak", "GPUs", derived),
            ("growth_headroom_gpus", "growth safety headroom", "GPUs", derived),
            ("rollout_surge_gpus", "rollout surge headroom", "GPUs", derived),
            ("zone_headroom_gpus", "zone-loss headroom", "GPUs", derived),
            ("rounding_gpus", "rounding to whole replicas", "GPUs", derived),
            ("replicas", "replicas", "replicas", derived),
            ("spare_gpus", "N+k spares", "GPUs", "assumed"),
            ("warm_pool_gpus", "warm pool", "GPUs", "assumed"),
            ("total_gpus", "total GPUs", "GPUs", derived),
        ]
        out = []
        for name, term, unit, source in spec:
            value = getattr(self, name)
            if value is None:
                continue
            out.append({"term": term, "value": value, "unit": unit, "note": self.notes.get(name, ""), "source": source})
        return out

    def to_dict(self) -> dict[str, Any]:
        """All fields as plain data (for ``--json``), plus ``rows``."""
        data = asdict(self)
        data["rows"] = self.rows()
        return data


def _rates(gpu: GpuSpec | None, model: ModelSpec | None, decode: float | None, prefill: float | None,
           notes: dict[str, str]) -> tuple[float, float | None]:
    """Decode and prefill tokens/s per GPU: the explicit figure, else the catalogue's ASSUMED one for the size class."""
    if decode is None:
        if gpu is None or model is None:
            raise ValueError("give gpu_output_tokens_per_s, or both gpu and model to take it from the catalogue")
        decode = gpu.decode_rate(model.size_class)
        notes["gpu_output_tokens_per_s"] = f"from {gpu.key}, {model.size_class} class (ASSUMED, see the GPU catalogue)"
    if prefill is None and gpu is not None and model is not None:
        prefill = gpu.prefill_rate(model.size_class)
        notes["gpu_prefill_tokens_per_s"] = f"from {gpu.key}, {model.size_class} class (ASSUMED)"
    return decode, prefill


def _utilisation_from_wait_slo(peak_qps: float, latency_s: float, concurrency: float, wait_target_s: float,
                               wait_percentile: float, notes: dict[str, str], sources: dict[str, Source]) -> float:
    """``L / c*`` for the fewest slots c* meeting the queueing-wait SLO (Erlang C)."""
    slots = queueing.servers_for_wait_target(peak_qps, latency_s, wait_target_s, wait_percentile)
    sources["target_utilisation"] = "derived"
    notes["target_utilisation"] = (f"highest meeting p{wait_percentile * 100:g} queueing wait <= {wait_target_s:g} s: "
                                   f"{concurrency:.0f} in flight over {slots} slots (Erlang C)")
    return min(1.0, concurrency / slots)


def _memory_terms(gpu: GpuSpec | None, model: ModelSpec | None, seqs_per_gpu: float | None,
                  tensor_parallel: int | None, *, kv_tokens: float | None, kv_tokens_quantile: float | None,
                  mean_tokens: float, kv_dtype: str, weights_dtype: str, reserve: float, block: int,
                  notes: dict[str, str], sources: dict[str, Source]) -> dict[str, Any]:
    """Tensor-parallel degree, KV-cache terms and sequences per GPU (KV terms ``None`` when they did not apply)."""
    terms: dict[str, Any] = dict(kv_tokens_per_sequence=None, kv_bytes_per_token=None, kv_bytes_per_sequence=None,
                                 weights_gib_per_gpu=None)
    if model is None or gpu is None:
        if seqs_per_gpu is None:
            raise ValueError("give seqs_per_gpu, or both gpu and model to derive it from KV-cache memory")
        tp = tensor_parallel or 1
        positive("tensor_parallel", tp)
        return terms | dict(tensor_parallel=int(tp), seqs_per_gpu=float(seqs_per_gpu))
    tokens = float(kv_tokens if kv_tokens is not None else mean_tokens)
    w_bytes = memory.weights_bytes(model.parameters, weights_dtype)
    tp = tensor_parallel or _smallest_degree(gpu, model, tokens, kv_dtype, weights_dtype, reserve, block)
    kv_tok = memory.kv_cache_bytes_per_token(model.num_layers, model.num_kv_heads, model.head_dim, kv_dtype, tp)
    kv_seq = memory.kv_bytes_per_sequence(tokens, kv_tok, block)
    seqs_replica = memory.sequences_per_replica(memory.kv_budget_bytes_per_gpu(gpu.memory_gib, w_bytes, tp, reserve),
                                                kv_seq)
    if seqs_replica < 1:
        raise memory.DoesNotFitError(f"{model.key} does not fit on {tp} x {gpu.key} with one {tokens:.0f}-token sequence; "
                         "raise tensor_parallel or lower kv_tokens_per_sequence")
    terms.update(tensor_parallel=int(tp), weights_gib_per_gpu=w_bytes / tp / memory.BYTES_PER_GIB)
    notes["weights_gib_per_gpu"] = f"{model.parameters / 1e9:g} B parameters in {weights_dtype} over {tp} GPU(s)"
    if seqs_per_gpu is not None:
        # seqs_per_gpu was given: the KV-cache terms served only to pick the tensor-parallel degree.
        return terms | dict(seqs_per_gpu=float(seqs_per_gpu))
    sources["seqs_per_gpu"] = "derived"
    notes["kv_tokens_per_sequence"] = (
        f"p{kv_tokens_quantile * 100:g} of input+output tokens" if kv_tokens_quantile is not None
        else "given" if kv_tokens is not None else "mean input + mean output (no quantile given)")
    notes["kv_bytes_per_token"] = (f"2 × {model.num_layers} layers × {model.num_kv_heads} KV heads / {tp} GPU(s) "
                                   f"× {model.head_dim} × {kv_dtype}")
    notes["seqs_per_gpu"] = (f"{gpu.memory_gib:g} GiB × (1 − {reserve:g}) less weights, "
                             f"over KV per sequence in {block}-token blocks")
    return terms | dict(kv_tokens_per_sequence=tokens, kv_bytes_per_token=float(kv_tok),
                        kv_bytes_per_sequence=float(kv_seq), seqs_per_gpu=seqs_replica / tp)


def _smallest_degree(gpu: GpuSpec, model: ModelSpec, kv_tokens: float, kv_dtype: str, weights_dtype: str,
                     reserve: float, block: int) -> int:
    """:func:`sizing.memory.smallest_tensor_parallel` of ``model`` on ``gpu`` with one ``kv_tokens`` sequence."""
    kv_full = memory.kv_cache_bytes_per_token(model.num_layers, model.num_kv_heads, model.head_dim, kv_dtype)
    return memory.smallest_tensor_parallel(memory.weights_bytes(model.parameters, weights_dtype),
                                           memory.kv_bytes_per_sequence(kv_tokens, kv_full, block),
                                           model.num_kv_heads, gpu.memory_gib, reserve)


def tensor_parallel_for(spec: FleetSpec, kv_tokens_per_sequence: float) -> int:
    """GPUs per replica :func:`size_fleet` uses: ``spec.tensor_parallel``, else the smallest degree that fits.

    The smallest degree holds the weights and one sequence of ``kv_tokens_per_sequence`` tokens
    (:func:`sizing.memory.smallest_tensor_parallel`); without a GPU and a model, 1. [GPUs/replica]

    Raises
    ------
    ValueError
        If the model fits at no degree.
    """
    if spec.tensor_parallel is not None:
        return int(spec.tensor_parallel)
    if spec.gpu is None or spec.model is None:
        return 1
    return _smallest_degree(spec.gpu, spec.model, float(kv_tokens_per_sequence), spec.kv_dtype, spec.weights_dtype,
                            spec.memory_reserve_fraction, spec.kv_block_size_tokens)


def _headroom_terms(need: float, tp: int, growth_safety_factor: float, rollout_surge_fraction: float,
                    zones: int, zones_lost: int, spares: int, warm_pool_gpus: int,
                    notes: dict[str, str]) -> dict[str, Any]:
    """Each headroom term on its own, then whole replicas and the total. [GPUs]"""
    growth = float(headroom.growth_safety_gpus(need, growth_safety_factor))
    surge = float(headroom.rollout_surge_gpus(need + growth, rollout_surge_fraction))
    subtotal = need + growth + surge
    zone_factor = float(headroom.zone_loss_factor(zones, zones_lost))
    replicas = headroom.replicas_with_zone_headroom(subtotal / tp, zones, zones_lost)
    warm = headroom.whole_replicas(warm_pool_gpus, tp) * tp
    notes["zone_headroom_gpus"] = f"survive losing {zones_lost} of {zones} zone(s): × {zone_factor:g}"
    notes["rounding_gpus"] = f"{replicas} replicas of {tp} GPU(s), a multiple of {zones} zone(s)"
    notes["spare_gpus"] = f"N+{spares}: {spares} spare replica(s) of {tp} GPU(s)"
    return dict(
        growth_safety_factor=float(growth_safety_factor), growth_headroom_gpus=growth,
        rollout_surge_fraction=float(rollout_surge_fraction), rollout_surge_gpus=surge,
        zones=int(zones), zones_lost=int(zones_lost), zone_headroom_gpus=subtotal * (zone_factor - 1),
        rounding_gpus=replicas * tp - subtotal * zone_factor, replicas=int(replicas),
        spares=int(spares), spare_gpus=int(spares) * tp, warm_pool_gpus=int(warm),
        total_gpus=int(replicas * tp + spares * tp + warm),
    )


def size_fleet(
    *,
    peak_qps: float,
    latency_s: float,
    output_tokens_per_request: float,
    input_tokens_per_request: float = 0.0,
    kv_tokens_per_sequence: float | None = None,
    kv_tokens_quantile: float | None = None,
    average_qps: float | None = None,
    measured_inputs: Collection[str] = (),
    spec: FleetSpec = FleetSpec(),
) -> FleetSizing:
    """Size a serving fleet for a peak load: the larger of the throughput and memory needs, plus headroom.

    .. math::
        G_{tput} = \\frac{\\lambda n_{out}}{r_{dec} u} + \\frac{\\lambda n_{in}}{r_{pre} u},\\quad
        G_{mem} = \\frac{\\lambda W}{s_{gpu} u},\\quad
        N = t \\cdot Z \\left\\lceil \\frac{\\max(G_{tput}, G_{mem}) \\, g \\, (1+s)}{t (Z-k)} \\right\\rceil
            + t \\cdot k_{spare} + w

    The load (arguments) comes from logs or a what-if; the settings (hardware, model,
    targets, headroom) come in one :class:`FleetSpec`.

    Parameters
    ----------
    peak_qps : float
        Arrival rate to serve (the forecast or measured peak). [requests/s]
    latency_s : float
        Mean end-to-end time per request at that load. [s]
    output_tokens_per_request : float
        Mean generated tokens. [tokens/request]
    input_tokens_per_request : float, default 0
        Mean prompt tokens; adds a prefill term when a prefill rate is known. [tokens/request]
    kv_tokens_per_sequence : float, optional
        Tokens the KV cache holds per sequence; default input + output means.
        Pass a high quantile (:func:`sizing.memory.sequence_tokens_at_quantile`). [tokens]
    kv_tokens_quantile : float, optional
        Which quantile ``kv_tokens_per_sequence`` is, for the report note. [fraction]
    average_qps : float, optional
        Mean arrival rate, echoed for the report only. [requests/s]
    measured_inputs : collection of str
        Names from :data:`MEASURABLE_INPUTS` that came from logs.
    spec : FleetSpec, default FleetSpec()
        The sizing settings (see :class:`FleetSpec` for each field and its unit).

    Returns
    -------
    FleetSizing
        Every term; ``total_gpus`` is the answer.

    Raises
    ------
    ValueError
        On an out-of-range input, a missing throughput or memory source, or a
        model that does not fit.

    Notes
    -----
    - Steady state at the peak rate; fluctuation is absorbed by
      ``target_utilisation``, which applies to throughput and to slots.
    - Decode and prefill time-share GPUs, so their counts add.
    - Each in-flight sequence is charged its full ``kv_tokens_per_sequence``
      (conservative: a sequence mid-generation holds fewer).
    - Counts are whole replicas of ``tensor_parallel`` GPUs, rounded per zone.

    Examples
    --------
    The DEVELOPERS golden case gives 32 GPUs (30.9 by throughput binds over 23.1 by concurrency).
    """
    s = spec
    target_utilisation = s.target_utilisation
    unknown = set(measured_inputs) - set(MEASURABLE_INPUTS)
    if unknown:
        raise ValueError(f"measured_inputs has unknown names {sorted(unknown)}; valid: {', '.join(MEASURABLE_INPUTS)}")
    fraction("target_utilisation", target_utilisation)
    for name, value in (("spares", s.spares), ("warm_pool_gpus", s.warm_pool_gpus)):
        if int(value) != value or value < 0:
            raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    notes: dict[str, str] = {}
    sources: dict[str, Source] = {name: "measured" for name in measured_inputs}

    decode_rate, prefill_rate = _rates(s.gpu, s.model, s.gpu_output_tokens_per_s, s.gpu_prefill_tokens_per_s, notes)
    concurrency = float(capacity.concurrency_from_littles_law(peak_qps, latency_s))
    if s.wait_target_s is not None and concurrency > 0:
        target_utilisation = _utilisation_from_wait_slo(
            peak_qps, latency_s, concurrency, s.wait_target_s, s.wait_percentile, notes, sources)
    out_tps = float(demand.tokens_per_s(peak_qps, output_tokens_per_request))
    in_tps = float(demand.tokens_per_s(peak_qps, input_tokens_per_request))
    g_decode = float(capacity.gpus_for_throughput(out_tps, decode_rate, target_utilisation))
    if s.throughput_source != "assumed":
        sources["gpu_output_tokens_per_s"] = s.throughput_source  # type: ignore[assignment]
    if s.throughput_note:
        notes["gpu_output_tokens_per_s"] = s.throughput_note
    g_prefill = 0.0
    if in_tps == 0:
        prefill_rate = None  # no prompt tokens: the prefill rate did not enter
    elif s.prefill_in_output_rate:
        prefill_rate = None  # the prompts' prefill is inside the measured or modelled output rate
        notes["gpus_for_prefill"] = f"0: prefill is inside the {s.throughput_source} output rate (mixed steps)"
    elif prefill_rate is None:
        notes["gpus_for_prefill"] = "not counted: no prefill throughput given"
    else:
        g_prefill = float(capacity.gpus_for_throughput(in_tps, prefill_rate, target_utilisation))

    mem = _memory_terms(s.gpu, s.model, s.seqs_per_gpu, s.tensor_parallel,
                        kv_tokens=kv_tokens_per_sequence, kv_tokens_quantile=kv_tokens_quantile,
                        mean_tokens=input_tokens_per_request + output_tokens_per_request, kv_dtype=s.kv_dtype,
                        weights_dtype=s.weights_dtype, reserve=s.memory_reserve_fraction,
                        block=s.kv_block_size_tokens,
                        notes=notes, sources=sources)
    g_tput = g_decode + g_prefill
    g_mem = float(capacity.gpus_for_concurrency(concurrency, mem["seqs_per_gpu"], target_utilisation))
    binding = "throughput" if g_tput >= g_mem else "memory"
    need = max(g_tput, g_mem)
    notes["binding_margin_gpus"] = (f"{binding} needs {abs(g_tput - g_mem):.1f} GPUs more "
                                    f"({need / max(min(g_tput, g_mem), 1e-12):.2f}×)")
    extra = _headroom_terms(need, mem["tensor_parallel"], s.growth_safety_factor, s.rollout_surge_fraction,
                            s.zones, s.zones_lost, s.spares, s.warm_pool_gpus, notes)
    return FleetSizing(
        gpu=s.gpu.key if s.gpu else None, model=s.model.key if s.model else None,
        average_qps=average_qps, peak_qps=float(peak_qps), latency_s=float(latency_s),
        output_tokens_per_request=float(output_tokens_per_request),
        input_tokens_per_request=float(input_tokens_per_request),
        gpu_output_tokens_per_s=float(decode_rate),
        gpu_prefill_tokens_per_s=None if prefill_rate is None else float(prefill_rate),
        target_utilisation=float(target_utilisation),
        concurrency=concurrency, output_tokens_per_s=out_tps, input_tokens_per_s=in_tps,
        gpus_for_decode=g_decode, gpus_for_prefill=g_prefill, gpus_by_throughput=g_tput, **mem,
        gpus_by_memory=g_mem, binding_constraint=binding, binding_margin_gpus=abs(g_tput - g_mem), need_gpus=need,
        **extra, notes=notes, sources=sources, throughput_source=s.throughput_source,
    )


def monotone_step_map(fn: Callable[[float], int], xs: np.ndarray) -> np.ndarray:
    """``fn`` applied to every element of ``xs`` for a non-decreasing step function ``fn``.

    Sorts ``xs`` and bisects: where ``fn`` agrees at both ends of a run it holds over
    the whole run, so the calls grow with the number of steps times ``log n``, not
    with ``n``. Exact as long as ``fn`` never falls as ``x`` rises (the GPU count of
    :func:`size_fleet` in the load, which its property tests check).

    >>> monotone_step_map(lambda q: int(q // 10), np.array([25.0, 3.0, 99.0])).tolist()
    [2, 0, 9]
    """
    order = np.argsort(xs, kind="stable")
    sorted_x = np.asarray(xs, dtype=float)[order]
    out = np.empty(sorted_x.size, dtype=np.int64)
    if sorted_x.size == 0:
        return out
    stack = [(0, sorted_x.size - 1, fn(sorted_x[0]), fn(sorted_x[-1]))]
    while stack:
        i, j, fi, fj = stack.pop()
        if fi == fj or j - i <= 1:
            out[i:j + 1] = fi
            out[j] = fj
            continue
        m = (i + j) // 2
        fm = fn(sorted_x[m])
        stack += [(i, m, fi, fm), (m, j, fm, fj)]
    result = np.empty_like(out)
    result[order] = out
    return result


def pooled_slots(fleet: FleetSizing) -> int:
    """Sequence slots of the whole fleet, ``total_gpus · seqs_per_gpu``, at least 1. [count]"""
    return max(1, int(fleet.total_gpus * fleet.seqs_per_gpu))


def operating_latency_s(fleet: FleetSizing) -> float:
    """Mean latency of the pooled fleet at its target utilisation (M/M/c). [s]

    ``W = latency_s · m_c(u)`` with :func:`sizing.queueing.mmc_latency_multiplier`
    and ``c`` = :func:`pooled_slots`.
    """
    return float(fleet.latency_s * queueing.mmc_latency_multiplier(pooled_slots(fleet), fleet.target_utilisation))


def latency_curve(fleet: FleetSizing, utilisations: np.ndarray | None = None) -> pd.DataFrame:
    """Mean latency against utilisation for one sequence slot (M/M/1) and the fleet's pooled slots (M/M/c).

    The service time is the fleet's ``latency_s`` (the measured mean); ``c`` is
    :func:`pooled_slots`. Columns ``label``, ``utilisation`` [fraction], ``latency_s`` [s].

    Notes
    -----
    Poisson arrivals, exponential service, one shared queue (Erlang C); a slot is
    one KV-cache sequence, held for the whole request.
    """
    import pandas as pd  # here: `capplan size` never draws the curve, and pandas costs ~0.5 s to import

    u = np.linspace(0.02, 0.98, 49) if utilisations is None else np.asarray(utilisations, dtype=float)
    slots = pooled_slots(fleet)
    return pd.concat([
        pd.DataFrame({"label": "one slot (M/M/1)", "utilisation": u,
                      "latency_s": fleet.latency_s * np.asarray(queueing.mmc_latency_multiplier(1, u))}),
        pd.DataFrame({"label": f"fleet, {slots:,} slots (M/M/c)", "utilisation": u,
                      "latency_s": fleet.latency_s * np.asarray(queueing.mmc_latency_multiplier(slots, u))}),
    ], ignore_index=True)
