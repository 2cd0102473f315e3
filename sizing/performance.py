"""Performance of one serving replica: tokens/s per GPU from the token mix, batch, precision and TP.

A first-order, calibrated model of a transformer served with continuous
batching on ``t`` GPUs (one tensor-parallel replica). Each physical term is
its own function below; :func:`replica_throughput` composes them:

1. a decode step reads every weight once (per TP shard; for a mixture of
   experts only the experts its tokens touch) and every in-flight sequence's
   KV cache, and does ``2 · N_active`` FLOP per token plus attention, so it is
   bandwidth-bound at small batch and compute-bound at large batch
   (:func:`roofline_step_time_s`);
2. continuous batching mixes the prompts of new requests into decode steps
   (:func:`mixed_step_prefill_tokens`), so prefill costs FLOP/s, not weight reads;
3. tensor parallelism adds two all-reduces of the activations per layer
   (:func:`allreduce_time_per_layer_s`);
4. the batch is capped by KV memory (:func:`kv_memory_batch_limit`), by the
   engine's batch limit, by a concurrency, or by TTFT/TPOT targets.

Numbers in, numbers out: the physics functions take scalars or ndarrays and
broadcast. The only file read is the fitted :class:`Efficiency`
(``data/performance.toml``, written by ``benchmarks/perf_model.py --fit``);
GPU and model specs come from :mod:`sizing.catalogue`. Bytes are bytes [B],
times seconds [s] unless a name says ``_ms``; FLOP counts are [FLOP].

>>> r = replica_throughput(model="llama-3.1-70b", gpu="H100-SXM-80GB", tensor_parallel=2,
...                        precision="fp8", input_tokens=1000, output_tokens=1000)
>>> r.output_tokens_per_s_per_gpu > 0
True
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing._checks import _out
from capplan.sizing.catalogue import DATA_DIR, GpuSpec, ModelSpec, load_gpus, load_models
from capplan.sizing.memory import (  # one home for the weight and KV byte formulas
    BYTES_PER_GIB,
    DoesNotFitError,
    kv_bytes_per_token,
    kv_elements_per_token_per_layer,
    weight_bytes_per_gpu,
)

PERFORMANCE_FILE = DATA_DIR / "performance.toml"

#: Precision keys: weights and matmuls in this format.
PRECISIONS: tuple[str, ...] = ("fp16", "bf16", "fp8", "fp4")

#: Stored bytes per weight. NVFP4 is 4 bits plus one FP8 scale per 16 weights.
WEIGHT_BYTES_PER_PARAMETER: dict[str, float] = {"fp16": 2, "bf16": 2, "fp8": 1, "fp4": 0.5 + 1 / 16}

#: Bytes per KV-cache element: FP8 and FP4 deployments keep the KV cache in FP8.
KV_BYTES_PER_ELEMENT: dict[str, float] = {"fp16": 2, "bf16": 2, "fp8": 1, "fp4": 1}

#: Precision of the attention matmuls where it differs from the weights' (FP4 deployments run FP8 attention).
ATTENTION_PRECISION: dict[str, str] = {"fp4": "fp8"}

#: Activations exchanged by the tensor-parallel all-reduce are BF16. [B/element]
ACTIVATION_BYTES_PER_ELEMENT = 2

#: Largest prompt chunk an engine puts in one step (TensorRT-LLM's default
#: ``max_num_tokens``; vLLM's chunked-prefill budget is of the same order). [tokens]
MAX_PREFILL_CHUNK_TOKENS = 8192

#: What limits the batch, and what bounds a step.
BATCH_LIMITS: tuple[str, ...] = ("kv_memory", "max_batch", "concurrency", "latency_target")
STEP_BOUNDS: tuple[str, ...] = ("bandwidth", "compute")


# ---------------------------------------------------------------------------
# Fitted efficiencies and the replica record
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Efficiency:
    """The fitted efficiency parameters (``data/performance.toml``).

    Attributes
    ----------
    hbm_bandwidth_fraction : float
        Achieved share of the datasheet HBM bandwidth when streaming weights. [fraction]
    kv_bandwidth_fraction : float
        Achieved share of the datasheet HBM bandwidth when attention reads the
        (paged) KV cache. [fraction]
    compute_fraction : float
        Achieved share of the datasheet dense FLOP/s at the precision used. [fraction]
    step_overhead_ms : float
        Fixed time per engine step (scheduling, kernel launches, sampling). [ms]
    interconnect_fraction : float
        Achieved share of the per-direction GPU-to-GPU bandwidth in an all-reduce. [fraction]
    allreduce_latency_us : float
        Fixed latency of one all-reduce (not fitted). [µs]
    max_batch_sequences : float
        Engine limit on sequences decoded together. [sequences]
    kv_memory_fraction : float
        Share of memory left after weights and activations that the engine gives
        the KV cache (not fitted; TensorRT-LLM and vLLM default to 0.9). [fraction]
    activation_reserve_gib : float
        Memory per GPU held for activations and workspace (not fitted). [GiB]
    fp4_compute_fraction : float or None
        Achieved share of the datasheet dense FP4 FLOP/s in FP4 matmuls; None:
        ``compute_fraction``. [fraction]
    """

    hbm_bandwidth_fraction: float
    kv_bandwidth_fraction: float
    compute_fraction: float
    step_overhead_ms: float
    interconnect_fraction: float
    allreduce_latency_us: float
    max_batch_sequences: float
    kv_memory_fraction: float
    activation_reserve_gib: float
    fp4_compute_fraction: float | None = None


@lru_cache(maxsize=8)
def _read_efficiency(path: Path, stamp: int) -> Efficiency:
    table = tomllib.loads(path.read_text(encoding="utf-8"))["efficiency"]
    return Efficiency(**{f.name: float(table[f.name]) for f in fields(Efficiency) if f.name in table})


def load_efficiency(path: str | Path = PERFORMANCE_FILE) -> Efficiency:
    """The fitted :class:`Efficiency` from ``path`` (re-read when the file changes)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise ValueError(f"performance parameters {path} do not exist; run benchmarks/perf_model.py --fit")
    return _read_efficiency(path, path.stat().st_mtime_ns)


@dataclass(frozen=True)
class TokenMix:
    """Moments of a token-length distribution (all a first-order model needs).

    Attributes
    ----------
    mean_tokens : float
        E[n]. [tokens]
    mean_square_tokens : float
        E[n²]. [tokens²]
    """

    mean_tokens: float
    mean_square_tokens: float


def token_mix(tokens: float | Mapping[float, float] | tuple[ArrayLike, ArrayLike]) -> TokenMix:
    """The moments of one length or of a length distribution.

    Parameters
    ----------
    tokens : float, mapping or (lengths, weights) pair
        One length [tokens]; or a histogram ``{length: weight}``; or a pair of
        arrays ``(lengths, weights)`` (e.g. bin centres and counts of the
        profile). Weights are relative frequencies of requests and are
        normalised here. A :class:`TokenMix` passes through.

    Returns
    -------
    TokenMix
        ``E[n]`` and ``E[n²]``.

    Examples
    --------
    >>> token_mix({100: 1, 300: 1}).mean_tokens
    200.0
    """
    if isinstance(tokens, TokenMix):
        return tokens
    if isinstance(tokens, Mapping):
        lengths, weights = np.array(list(tokens), dtype=float), np.array(list(tokens.values()), dtype=float)
    elif isinstance(tokens, tuple | list) and len(tokens) == 2 and np.ndim(tokens[0]) == 1:
        lengths, weights = np.asarray(tokens[0], dtype=float), np.asarray(tokens[1], dtype=float)
    elif np.ndim(tokens) == 0:
        lengths, weights = np.array([float(tokens)]), np.array([1.0])
    else:
        raise ValueError("tokens must be a number, a {length: weight} mapping or a (lengths, weights) pair")
    if lengths.shape != weights.shape or not (lengths >= 0).all() or not (weights >= 0).all() or weights.sum() <= 0:
        raise ValueError("token lengths and weights must be non-negative, of one shape, with a positive total weight")
    p = weights / weights.sum()
    return TokenMix(float(p @ lengths), float(p @ lengths**2))


@dataclass(frozen=True)
class Replica:
    """One replica's numbers: model, GPU, TP, precision and token mix, resolved.

    Every field is a number or an ndarray (see :func:`stack_replicas`), so the
    composite functions broadcast over many configurations at once. Units:
    parameters [parameters], bytes per element [B], memory [GiB], bandwidths
    [B/s], FLOP/s [FLOP/s] (``flops_per_s`` for the weight matmuls at the
    precision, ``attention_flops_per_s`` for attention), token moments
    [tokens] / [tokens²].
    """

    parameters: ArrayLike
    active_parameters: ArrayLike
    num_experts: ArrayLike            # 0 for a dense model
    experts_per_token: ArrayLike
    num_layers: ArrayLike
    num_attention_heads: ArrayLike
    head_dim: ArrayLike
    hidden_size: ArrayLike
    kv_elements_per_layer: ArrayLike
    kv_shards: ArrayLike
    sliding_window_tokens: ArrayLike  # 0 when no layer uses a window
    sliding_window_layers: ArrayLike
    tensor_parallel: ArrayLike
    weight_bytes_per_parameter: ArrayLike
    kv_bytes_per_element: ArrayLike
    memory_gib: ArrayLike
    hbm_bytes_per_s: ArrayLike
    flops_per_s: ArrayLike
    attention_flops_per_s: ArrayLike
    fp4_matmuls: ArrayLike            # 1 when the weight matmuls run in FP4, else 0
    interconnect_bytes_per_s: ArrayLike
    input_mean_tokens: ArrayLike
    input_mean_square_tokens: ArrayLike
    output_mean_tokens: ArrayLike
    output_mean_square_tokens: ArrayLike


def _precision_flops(gpu: GpuSpec, precision: str) -> float:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}; got {precision!r}")
    have = gpu.dense_tflops or {"bf16": gpu.bf16_dense_tflops, "fp16": gpu.bf16_dense_tflops}
    if precision not in have:
        raise ValueError(f"GPU {gpu.key} has no {precision} tensor cores; valid precisions: {', '.join(sorted(have))}")
    return have[precision] * 1e12


def _spec(key: str, what: str, catalogue: dict) -> object:
    folded = {k.casefold(): v for k, v in catalogue.items()}
    if key.casefold() not in folded:
        raise ValueError(f"unknown {what} {key!r}; valid: {', '.join(sorted(catalogue))}")
    return folded[key.casefold()]


def replica(model: str | ModelSpec, gpu: str | GpuSpec, tensor_parallel: int, precision: str,
            input_tokens: object, output_tokens: object) -> Replica:
    """Resolve catalogue keys (or specs) and a token mix into a :class:`Replica`.

    ``ValueError`` names the valid models, GPUs or precisions when one is unknown.
    """
    m = model if isinstance(model, ModelSpec) else _spec(model, "model", load_models())
    g = gpu if isinstance(gpu, GpuSpec) else _spec(gpu, "GPU", load_gpus())
    if int(tensor_parallel) != tensor_parallel or tensor_parallel < 1:
        raise ValueError(f"tensor_parallel must be a whole number >= 1, got {tensor_parallel!r}")
    flops = _precision_flops(g, precision)
    attention_flops = _precision_flops(g, ATTENTION_PRECISION.get(precision, precision))
    isl, osl = token_mix(input_tokens), token_mix(output_tokens)
    if osl.mean_tokens <= 0:
        raise ValueError("output_tokens must have a positive mean")
    latent = m.kv_latent_dim is not None
    link_gb_per_s = g.interconnect_bandwidth_gb_per_s or 64.0  # PCIe Gen4 x16 when the catalogue has none
    return Replica(
        parameters=m.parameters, active_parameters=m.active_parameters or m.parameters,
        num_experts=m.num_experts or 0, experts_per_token=m.experts_per_token or 0,
        num_layers=m.num_layers, num_attention_heads=m.num_attention_heads, head_dim=m.head_dim,
        hidden_size=m.hidden_size or m.num_attention_heads * m.head_dim,
        kv_elements_per_layer=kv_elements_per_token_per_layer(m.num_kv_heads, m.head_dim, m.kv_latent_dim),
        kv_shards=kv_shards(m.num_kv_heads, tensor_parallel, latent=latent),
        sliding_window_tokens=m.sliding_window_tokens or 0, sliding_window_layers=m.sliding_window_layers,
        tensor_parallel=int(tensor_parallel),
        weight_bytes_per_parameter=WEIGHT_BYTES_PER_PARAMETER[precision],
        kv_bytes_per_element=KV_BYTES_PER_ELEMENT[precision],
        memory_gib=g.memory_gib, hbm_bytes_per_s=g.hbm_bandwidth_tb_per_s * 1e12, flops_per_s=flops,
        attention_flops_per_s=attention_flops, fp4_matmuls=float(precision == "fp4"),
        interconnect_bytes_per_s=link_gb_per_s * 1e9 / 2,  # datasheets quote both directions together
        input_mean_tokens=isl.mean_tokens, input_mean_square_tokens=isl.mean_square_tokens,
        output_mean_tokens=osl.mean_tokens, output_mean_square_tokens=osl.mean_square_tokens,
    )


def stack_replicas(replicas: list[Replica]) -> Replica:
    """Many replicas as one :class:`Replica` of arrays (for fitting and batch evaluation)."""
    return Replica(**{f.name: np.array([getattr(r, f.name) for r in replicas], dtype=float) for f in fields(Replica)})


# ---------------------------------------------------------------------------
# Physical terms
# ---------------------------------------------------------------------------

def experts_touched(num_experts: ArrayLike, experts_per_token: ArrayLike, tokens: ArrayLike) -> np.ndarray | float:
    """Expected distinct experts a layer runs for ``tokens`` tokens routed independently.

    .. math:: E_{touched} = E \\left(1 - (1 - k/E)^{n}\\right)

    Parameters
    ----------
    num_experts : array_like
        Routed experts per layer, ``E``. [experts]
    experts_per_token : array_like
        Experts each token uses, ``k``. [experts]
    tokens : array_like
        Tokens in the step, ``n``. [tokens]

    Returns
    -------
    numpy.ndarray or float
        Expected experts touched. [experts]

    Notes
    -----
    Uniform, independent routing: real routers are skewed, which touches fewer.

    Examples
    --------
    >>> round(experts_touched(128, 4, 1), 6)
    4.0
    """
    e = np.maximum(np.asarray(num_experts, dtype=float), 1.0)
    share = np.clip(np.asarray(experts_per_token, dtype=float) / e, 0.0, 1.0)
    return _out(np.asarray(e * (1.0 - (1.0 - share) ** np.asarray(tokens, dtype=float))))


def weight_bytes_read_per_step_per_gpu(
    parameters: ArrayLike, active_parameters: ArrayLike, num_experts: ArrayLike, experts_per_token: ArrayLike,
    tokens_per_step: ArrayLike, weight_bytes_per_parameter: ArrayLike, tensor_parallel: ArrayLike,
) -> np.ndarray | float:
    """Weight bytes one GPU streams from HBM in one forward step.

    .. math::
        e = \\frac{N - N_a}{E - k}, \\quad S = N - E e, \\quad
        W_{step} = \\left(S + E_{touched}(n) \\, e\\right) b_w / t

    A dense model (``num_experts`` 0) reads all ``N`` weights every step.

    Parameters
    ----------
    parameters, active_parameters : array_like
        Total and per-token parameters, ``N`` and ``N_a``. [parameters]
    num_experts, experts_per_token : array_like
        ``E`` and ``k`` (0 and 0 for a dense model). [experts]
    tokens_per_step : array_like
        Tokens the step processes, decode and prefill. [tokens]
    weight_bytes_per_parameter : array_like
        [B/parameter]
    tensor_parallel : array_like
        [GPUs]

    Returns
    -------
    numpy.ndarray or float
        Bytes read per GPU per step. [B]

    Notes
    -----
    ``S`` is every weight outside the routed experts (attention, embeddings,
    shared experts); ``e`` the parameters of one routed expert summed over layers.

    Examples
    --------
    Llama 3.1 70B, FP8, TP 2: 35.3 GB per GPU per step, whatever the batch.

    >>> weight_bytes_read_per_step_per_gpu(70.6e9, 70.6e9, 0, 0, 64, 1, 2)
    35300000000.0
    """
    n, na = np.asarray(parameters, dtype=float), np.asarray(active_parameters, dtype=float)
    e_count, k = np.asarray(num_experts, dtype=float), np.asarray(experts_per_token, dtype=float)
    moe = e_count > k
    per_expert = np.where(moe, (n - na) / np.where(moe, e_count - k, 1.0), 0.0)
    shared = n - e_count * per_expert
    read = np.where(moe, shared + experts_touched(e_count, k, tokens_per_step) * per_expert, n)
    return _out(np.asarray(read * weight_bytes_per_parameter / tensor_parallel))


def kv_shards(num_kv_heads: int, tensor_parallel: int, *, latent: bool = False) -> int:
    """GPUs the KV cache is split over: heads split up to ``h_kv`` ways, a latent cache not at all.

    .. math:: s = \\min(t, h_{kv}) \\quad (1 \\text{ for multi-head latent attention})

    >>> kv_shards(8, 16)
    8
    """
    return 1 if latent else int(min(tensor_parallel, num_kv_heads))


def attended_tokens_per_layer(context_tokens: ArrayLike, num_layers: ArrayLike, sliding_window_tokens: ArrayLike = 0,
                              sliding_window_layers: ArrayLike = 0) -> np.ndarray | float:
    """Mean over layers of the tokens a layer keeps in cache and attends to.

    .. math:: \\bar c = \\frac{(L - L_w) c + L_w \\min(c, w)}{L}

    Examples
    --------
    gpt-oss: half the layers use a 128-token window; at 1,128 tokens of context
    the mean is (1128 + 128) / 2.

    >>> attended_tokens_per_layer(1128, 24, 128, 12)
    628.0
    """
    c = np.asarray(context_tokens, dtype=float)
    windowed = np.where(np.asarray(sliding_window_tokens) > 0, np.minimum(c, sliding_window_tokens), c)
    full_layers = num_layers - np.asarray(sliding_window_layers)
    return _out(np.asarray((full_layers * c + sliding_window_layers * windowed) / num_layers))


def kv_bytes_per_sequence_per_gpu(rep: Replica, context_tokens: ArrayLike) -> np.ndarray | float:
    """KV bytes one GPU holds for a sequence of ``context_tokens``.

    .. math:: B_{seq} = L \\, \\bar c \\, c_{layer} \\, b_e / s

    with ``\\bar c`` from :func:`attended_tokens_per_layer` and ``s`` from :func:`kv_shards`. [B]
    """
    attended = attended_tokens_per_layer(context_tokens, rep.num_layers, rep.sliding_window_tokens,
                                         rep.sliding_window_layers)
    per_token = kv_bytes_per_token(rep.num_layers, rep.kv_elements_per_layer, rep.kv_bytes_per_element)
    return per_token * attended / rep.kv_shards


def linear_flops(active_parameters: ArrayLike, tokens: ArrayLike) -> np.ndarray | float:
    """FLOP of the matrix multiplies for ``tokens`` tokens (whole replica).

    .. math:: F_{lin} = 2 \\cdot N_a \\cdot n

    Examples
    --------
    >>> linear_flops(8e9, 1)
    16000000000.0
    """
    return _out(np.asarray(2.0 * np.asarray(active_parameters, dtype=float) * tokens))  # multiply and add


def decode_attention_flops(num_layers: ArrayLike, num_attention_heads: ArrayLike, head_dim: ArrayLike,
                           attended_tokens: ArrayLike) -> np.ndarray | float:
    """Attention FLOP for one new token over ``attended_tokens`` of context (whole replica).

    .. math:: F_{att} = 4 \\cdot L \\cdot h \\cdot d \\cdot c

    (``Q·Kᵀ`` and ``P·V``, two FLOP per multiply-add each.)

    >>> decode_attention_flops(32, 32, 128, 1000)
    524288000.0
    """
    layers = np.asarray(num_layers, dtype=float)
    return _out(np.asarray(4.0 * layers * num_attention_heads * head_dim * attended_tokens))


def prefill_attention_flops(num_layers: ArrayLike, num_attention_heads: ArrayLike, head_dim: ArrayLike,
                            prompt_mean_square_tokens: ArrayLike) -> np.ndarray | float:
    """Causal attention FLOP to prefill one prompt: quadratic in its length (whole replica).

    .. math:: F_{pre,att} = 2 \\cdot L \\cdot h \\cdot d \\cdot E[s^2]

    (token ``i`` attends to ``i`` tokens: ``Σ 4 h d i ≈ 2 h d s²`` per layer.)

    >>> prefill_attention_flops(32, 32, 128, 1000**2)
    262144000000.0
    """
    layers = np.asarray(num_layers, dtype=float)
    return _out(np.asarray(2.0 * layers * num_attention_heads * head_dim * prompt_mean_square_tokens))


def allreduce_time_s(message_bytes: ArrayLike, tensor_parallel: ArrayLike, link_bytes_per_s: ArrayLike,
                     latency_s: ArrayLike) -> np.ndarray | float:
    """Time of one ring all-reduce of ``message_bytes`` over ``t`` GPUs.

    .. math:: T_{ar} = \\frac{2 (t - 1)}{t} \\cdot \\frac{M}{B_{link}} + \\ell \\quad (0 \\text{ when } t = 1)

    Parameters
    ----------
    message_bytes : array_like
        Bytes each GPU contributes. [B]
    tensor_parallel : array_like
        GPUs in the ring. [GPUs]
    link_bytes_per_s : array_like
        Achieved per-direction bandwidth per GPU. [B/s]
    latency_s : array_like
        Fixed latency. [s]

    Returns
    -------
    numpy.ndarray or float
        [s]

    Examples
    --------
    16 MB over 2 GPUs at 450 GB/s: 16e6 / 450e9 = 35.6 µs (+ latency 0).

    >>> round(allreduce_time_s(16e6, 2, 450e9, 0) * 1e6, 1)
    35.6
    """
    t = np.asarray(tensor_parallel, dtype=float)
    transfer = 2.0 * (t - 1.0) / t * np.asarray(message_bytes, dtype=float) / link_bytes_per_s
    return _out(np.asarray(np.where(t > 1, transfer + latency_s, 0.0)))


def allreduce_time_per_layer_s(tokens: ArrayLike, hidden_size: ArrayLike, tensor_parallel: ArrayLike,
                               link_bytes_per_s: ArrayLike, latency_s: ArrayLike) -> np.ndarray | float:
    """Tensor-parallel communication per layer: two all-reduces of the activations.

    .. math:: T_{layer} = 2 \\cdot T_{ar}(n \\cdot h \\cdot 2\\,\\mathrm{B})

    (one after attention, one after the MLP; Megatron-style TP.) [s]

    >>> allreduce_time_per_layer_s(1, 8192, 1, 450e9, 5e-6)
    0.0
    """
    message = np.asarray(tokens, dtype=float) * hidden_size * ACTIVATION_BYTES_PER_ELEMENT
    one = allreduce_time_s(message, tensor_parallel, link_bytes_per_s, latency_s)
    return _out(np.asarray(2.0 * one))  # after attention and after the MLP


def roofline_step_time_s(weight_bytes: ArrayLike, kv_bytes: ArrayLike, flops: ArrayLike, hbm_bytes_per_s: ArrayLike,
                         flops_per_s: ArrayLike, eff: Efficiency,
                         communication_s: ArrayLike = 0.0) -> np.ndarray | float:
    """Time of one engine step on one GPU: roofline plus communication and a fixed overhead.

    .. math::
        T = \\max\\left(\\frac{W}{\\eta_{w} B_{hbm}} + \\frac{K}{\\eta_{kv} B_{hbm}},
            \\frac{F}{\\eta_c F_{peak}}\\right) + T_{comm} + T_0

    Parameters
    ----------
    weight_bytes, kv_bytes : array_like
        Weight and KV-cache bytes streamed from HBM by this GPU, ``W`` and ``K``. [B]
    flops : array_like
        FLOP done by this GPU, ``F``. [FLOP]
    hbm_bytes_per_s, flops_per_s : array_like
        Datasheet peaks. [B/s], [FLOP/s]
    eff : Efficiency
        ``η_w``, ``η_kv``, ``η_c`` and ``T_0``.
    communication_s : array_like
        Tensor-parallel all-reduce time, not overlapped. [s]

    Returns
    -------
    numpy.ndarray or float
        [s]

    Notes
    -----
    Memory traffic and compute overlap within a step (the max); communication
    and the fixed overhead do not.

    Examples
    --------
    1 GB of weights at 0.5 × 1 TB/s = 2 ms, against 1 TFLOP at 0.5 × 1 PFLOP/s = 2 ms, plus 1 ms:

    >>> e = Efficiency(0.5, 0.5, 0.5, 1.0, 1, 0, 256, 0.9, 2)
    >>> round(roofline_step_time_s(1e9, 0, 1e12, 1e12, 1e15, e) * 1e3, 3)
    3.0
    """
    return _out(np.asarray(np.maximum(memory_time_s(weight_bytes, kv_bytes, hbm_bytes_per_s, eff),
                      compute_time_s(flops, flops_per_s, eff)) + communication_s + eff.step_overhead_ms * 1e-3))


def memory_time_s(weight_bytes: ArrayLike, kv_bytes: ArrayLike, hbm_bytes_per_s: ArrayLike,
                  eff: Efficiency) -> np.ndarray | float:
    """HBM time of a step: weights and KV cache at their achieved bandwidths. [s]

    .. math:: T_{mem} = W / (\\eta_w B_{hbm}) + K / (\\eta_{kv} B_{hbm})
    """
    return (np.asarray(weight_bytes, dtype=float) / eff.hbm_bandwidth_fraction
            + np.asarray(kv_bytes, dtype=float) / eff.kv_bandwidth_fraction) / hbm_bytes_per_s


def compute_time_s(flops: ArrayLike, flops_per_s: ArrayLike, eff: Efficiency) -> np.ndarray | float:
    """Tensor-core time of a step. [s]

    .. math:: T_{comp} = F / (\\eta_c F_{peak})
    """
    return np.asarray(flops, dtype=float) / (eff.compute_fraction * np.asarray(flops_per_s, dtype=float))


def kv_memory_batch_limit(memory_gib: ArrayLike, weight_bytes_per_gpu: ArrayLike,
                          kv_bytes_per_sequence_per_gpu: ArrayLike, eff: Efficiency) -> np.ndarray | float:
    """Sequences whose KV cache fits beside the weights.

    .. math:: B_{kv} = \\left\\lfloor \\frac{\\phi (M - W_{gpu} - A)}{B_{seq}} \\right\\rfloor

    Parameters
    ----------
    memory_gib : array_like
        GPU memory, ``M``. [GiB]
    weight_bytes_per_gpu : array_like
        ``W_gpu``. [B]
    kv_bytes_per_sequence_per_gpu : array_like
        KV bytes reserved per sequence on one GPU, ``B_seq``. [B]
    eff : Efficiency
        ``φ`` (:attr:`Efficiency.kv_memory_fraction`) and ``A``
        (:attr:`Efficiency.activation_reserve_gib`).

    Returns
    -------
    numpy.ndarray or float
        Sequences; 0 when the weights do not fit. [sequences]

    Examples
    --------
    An H100 (80 GiB) holding 35.3 GB of weights, 3 GiB reserved, φ = 0.9,
    2 GiB per sequence: floor(0.9 × (85.9 − 35.3 − 3.2) GB / 2.15 GB) = 19.

    >>> kv_memory_batch_limit(80, 35.3e9, 2 * 2**30, Efficiency(1, 1, 1, 0, 1, 0, 256, 0.9, 3))
    19.0
    """
    reserve = eff.activation_reserve_gib * BYTES_PER_GIB
    free = np.asarray(memory_gib, dtype=float) * BYTES_PER_GIB - weight_bytes_per_gpu - reserve
    return _out(np.asarray(np.floor(np.maximum(eff.kv_memory_fraction * free, 0.0) / kv_bytes_per_sequence_per_gpu)))


def mixed_step_prefill_tokens(batch: ArrayLike, input_mean_tokens: ArrayLike,
                              output_mean_tokens: ArrayLike) -> np.ndarray | float:
    """Prompt tokens continuous batching mixes into each decode step in steady state.

    .. math:: p = B \\cdot E[s_{in}] / E[s_{out}]

    Each step ``B / E[s_out]`` sequences finish and as many start, so their
    prompts are prefilled at that pace (chunked prefill). [tokens]

    >>> mixed_step_prefill_tokens(64, 2000, 500)
    256.0
    """
    return _out(np.asarray(batch, dtype=float) * input_mean_tokens / output_mean_tokens)


# ---------------------------------------------------------------------------
# Composite: one step, TTFT, throughput
# ---------------------------------------------------------------------------

def mean_context_tokens(rep: Replica) -> np.ndarray | float:
    """Mean context of a decoding sequence, weighted by time in flight.

    .. math:: \\bar c = E[s_{in}] + E[s_{out}^2] / (2 E[s_{out}])

    (a sequence of ``o`` outputs decodes ``o`` steps at mean context ``s_in + o/2``;
    input and output lengths independent.) [tokens]
    """
    return rep.input_mean_tokens + rep.output_mean_square_tokens / (2.0 * rep.output_mean_tokens)


def reserved_context_tokens(rep: Replica) -> np.ndarray | float:
    """KV tokens reserved per sequence in flight: the whole ``s_in + s_out`` (no eviction).

    .. math:: c_{res} = E[s_{in}] + E[s_{out}^2] / E[s_{out}]

    (TensorRT-LLM's default scheduler reserves the full sequence at admission.) [tokens]
    """
    return rep.input_mean_tokens + rep.output_mean_square_tokens / rep.output_mean_tokens


def step_time_s(rep: Replica, eff: Efficiency, batch: ArrayLike, prefill_tokens: ArrayLike,
                prefill_attention: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """One step with ``batch`` decoding sequences and ``prefill_tokens`` prompt tokens.

    .. math::
        T = \\max\\left(\\frac{W_{step}(n)}{\\eta_{w} B_{hbm}} + \\frac{B \\cdot B_{seq}(\\bar c)}{\\eta_{kv} B_{hbm}},
        \\frac{1}{t}\\left(\\frac{F_{lin}(n)}{\\eta_c F_{peak}}
        + \\frac{B F_{att}(\\bar c) + F_{pre,att}}{\\eta_c F_{att,peak}}\\right)\\right)
        + L \\, T_{layer}(n) + T_0, \\quad n = B + p

    Attention runs at ``F_att,peak`` (:attr:`Replica.attention_flops_per_s`): the
    FP8 rate in an FP4 deployment, whose attention kernels are FP8. FP4 matmuls
    use :attr:`Efficiency.fp4_compute_fraction` in place of ``η_c``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Step time [s], and whether the step is compute-bound [bool].
    """
    batch = np.asarray(batch, dtype=float)
    tokens = batch + prefill_tokens
    context = mean_context_tokens(rep)
    weights = weight_bytes_read_per_step_per_gpu(rep.parameters, rep.active_parameters, rep.num_experts,
                                                 rep.experts_per_token, tokens, rep.weight_bytes_per_parameter,
                                                 rep.tensor_parallel)
    kv = batch * kv_bytes_per_sequence_per_gpu(rep, context)
    attended = attended_tokens_per_layer(context, rep.num_layers, rep.sliding_window_tokens, rep.sliding_window_layers)
    attention = batch * decode_attention_flops(rep.num_layers, rep.num_attention_heads, rep.head_dim, attended)
    # FP4 matmuls reach their own share of peak: fold it into the peak that compute_fraction multiplies.
    fp4_share = eff.compute_fraction if eff.fp4_compute_fraction is None else eff.fp4_compute_fraction
    peak = np.where(np.asarray(rep.fp4_matmuls) > 0, np.asarray(rep.flops_per_s) * fp4_share / eff.compute_fraction,
                    rep.flops_per_s)
    slower = peak / np.asarray(rep.attention_flops_per_s, dtype=float)  # attention at its own rate
    flops = (linear_flops(rep.active_parameters, tokens)
             + (attention + prefill_attention) * slower) / rep.tensor_parallel
    comm = rep.num_layers * allreduce_time_per_layer_s(tokens, rep.hidden_size, rep.tensor_parallel,
                                                       eff.interconnect_fraction * np.asarray(rep.interconnect_bytes_per_s),
                                                       eff.allreduce_latency_us * 1e-6)
    compute_bound = compute_time_s(flops, peak, eff) > memory_time_s(weights, kv, rep.hbm_bytes_per_s, eff)
    return roofline_step_time_s(weights, kv, flops, rep.hbm_bytes_per_s, peak, eff, comm), compute_bound


def tpot_s(rep: Replica, eff: Efficiency, batch: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Time per output token at ``batch``: a decode step with its steady-state prompt share mixed in. [s]"""
    prefill = mixed_step_prefill_tokens(batch, rep.input_mean_tokens, rep.output_mean_tokens)
    starts = np.asarray(batch, dtype=float) / rep.output_mean_tokens  # sequences admitted per step
    attention = starts * prefill_attention_flops(rep.num_layers, rep.num_attention_heads, rep.head_dim,
                                                 rep.input_mean_square_tokens)
    return step_time_s(rep, eff, batch, prefill, attention)


def ttft_s(rep: Replica, eff: Efficiency, batch: ArrayLike) -> np.ndarray | float:
    """Time to first token of one prompt joining ``batch`` decoding sequences, without queueing.

    .. math:: T_{ttft} = k \\cdot T(B, p = E[s_{in}]/k), \\quad k = \\lceil E[s_{in}] / 8192 \\rceil

    The prompt is prefilled in ``k`` chunks of at most
    :data:`MAX_PREFILL_CHUNK_TOKENS`, each in a step shared with the batch. [s]
    """
    chunks = np.maximum(np.ceil(np.asarray(rep.input_mean_tokens, dtype=float) / MAX_PREFILL_CHUNK_TOKENS), 1.0)
    attention = prefill_attention_flops(rep.num_layers, rep.num_attention_heads, rep.head_dim,
                                        rep.input_mean_square_tokens) / chunks
    step, _ = step_time_s(rep, eff, batch, rep.input_mean_tokens / chunks, attention)
    return chunks * step


def output_tokens_per_s_per_gpu(rep: Replica, eff: Efficiency, batch: ArrayLike) -> np.ndarray | float:
    """Output tokens/s per GPU with ``batch`` sequences decoding.

    .. math:: X = \\frac{B}{T_{tpot}(B) \\cdot t}

    [tokens/(s·GPU)]
    """
    tpot, _ = tpot_s(rep, eff, batch)
    return np.asarray(batch, dtype=float) / (tpot * rep.tensor_parallel)


def batch_limit(rep: Replica, eff: Efficiency) -> tuple[np.ndarray, np.ndarray]:
    """Largest batch: KV memory or the engine limit, whichever is smaller; and whether KV memory binds."""
    weights = weight_bytes_per_gpu(rep.parameters, rep.weight_bytes_per_parameter, rep.tensor_parallel)
    reserved = kv_bytes_per_sequence_per_gpu(rep, reserved_context_tokens(rep))
    kv_limit = kv_memory_batch_limit(rep.memory_gib, weights, reserved, eff)
    return np.minimum(kv_limit, np.floor(eff.max_batch_sequences)), kv_limit


def batch_for_arrival_rate(rep: Replica, eff: Efficiency, arrival_rate_rps: ArrayLike,
                           grid_points: int = 48) -> np.ndarray:
    """Sequences in flight at an arrival rate (Little's law solved for the batch).

    .. math:: \\lambda = \\frac{B}{T_{ttft}(B) + E[s_{out}] \\, T_{tpot}(B)}

    The right-hand side rises with ``B``; it is evaluated on a geometric grid
    from 1 to :func:`batch_limit` and inverted by linear interpolation. A rate
    beyond the replica's capacity gives the limit (saturated).

    Parameters
    ----------
    rep : Replica
        One replica, or a stack of them (then ``arrival_rate_rps`` has one rate each).
    eff : Efficiency
    arrival_rate_rps : array_like
        Requests per second offered to the replica. [requests/s]
    grid_points : int
        Grid size. [count]

    Returns
    -------
    numpy.ndarray
        Sequences in flight, >= 1. [sequences]
    """
    limit = np.maximum(np.atleast_1d(batch_limit(rep, eff)[0]), 1.0)
    rate = np.broadcast_to(np.atleast_1d(np.asarray(arrival_rate_rps, dtype=float)), limit.shape)
    grid = limit[:, None] ** np.linspace(0.0, 1.0, grid_points)[None, :]          # rows x grid
    column = Replica(**{k: np.atleast_1d(np.asarray(v, dtype=float))[:, None] for k, v in rep.__dict__.items()})
    tpot, _ = tpot_s(column, eff, grid)
    sustained = grid / (ttft_s(column, eff, grid) + column.output_mean_tokens * tpot)
    out = np.empty(limit.shape)
    for i in range(limit.size):
        out[i] = np.interp(rate[i], sustained[i], grid[i], left=1.0, right=limit[i])
    return out


# ---------------------------------------------------------------------------
# The call the plan, the CLI and the benchmark use
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ReplicaThroughput:
    """Operating point of one replica.

    Attributes
    ----------
    output_tokens_per_s_per_gpu : float
        Output tokens/s per GPU. [tokens/(s·GPU)]
    output_tokens_per_s_per_replica : float
        The same for the whole replica. [tokens/s]
    batch : int
        Sequences decoding together. [sequences]
    ttft_ms : float
        Mean time to first token at that batch, without queueing. [ms]
    tpot_ms : float
        Mean time per output token at that batch. [ms]
    kv_memory_batch_limit : int
        Sequences whose KV cache fits (whole ``s_in + s_out`` reserved). [sequences]
    binds : str
        What limits the batch: one of :data:`BATCH_LIMITS`.
    step_bound : str
        What bounds a step at that batch: one of :data:`STEP_BOUNDS`.
    meets_targets : bool
        False when even batch 1 misses a latency target.
    gpu_seconds_per_request : float
        GPU time one request of the mix costs at this operating point,
        ``E[s_out] / X`` (the per-request cost drift pricing needs). [GPU·s/request]
    """

    output_tokens_per_s_per_gpu: float
    output_tokens_per_s_per_replica: float
    batch: int
    ttft_ms: float
    tpot_ms: float
    kv_memory_batch_limit: int
    binds: str
    step_bound: str
    meets_targets: bool = True
    gpu_seconds_per_request: float = float("nan")

    def to_dict(self) -> dict:
        """Plain dict for JSON."""
        return asdict(self)


def best_batch_for_targets(rep: Replica, eff: Efficiency, limit: int, tpot_ms_max: float | None,
                           ttft_ms_max: float | None) -> tuple[int, bool]:
    """The batch in 1..``limit`` of highest throughput whose mean TPOT and TTFT meet the targets [ms].

    Returns the batch [sequences] and whether any batch meets them (if none, batch 1).
    """
    candidates = np.arange(1, max(limit, 1) + 1, dtype=float)
    ok = np.ones(candidates.shape, dtype=bool)
    if tpot_ms_max is not None:
        ok &= tpot_s(rep, eff, candidates)[0] * 1e3 <= tpot_ms_max
    if ttft_ms_max is not None:
        ok &= ttft_s(rep, eff, candidates) * 1e3 <= ttft_ms_max
    if not ok.any():
        return 1, False
    throughput = np.where(ok, output_tokens_per_s_per_gpu(rep, eff, candidates), -np.inf)
    return int(candidates[int(np.argmax(throughput))]), True


def replica_throughput(
    model: str,
    gpu: str,
    tensor_parallel: int,
    precision: str,
    input_tokens: float | Mapping[float, float] | tuple[ArrayLike, ArrayLike],
    output_tokens: float | Mapping[float, float] | tuple[ArrayLike, ArrayLike],
    concurrency: int | None = None,
    tpot_ms_max: float | None = None,
    ttft_ms_max: float | None = None,
    efficiency: Efficiency | None = None,
) -> ReplicaThroughput:
    """Throughput of one replica for a token mix: at max batch, a concurrency, or under latency targets.

    .. math:: X = \\frac{B}{T_{tpot}(B) \\cdot t}, \\quad
              B = \\min(B_{kv}, B_{max}, C) \\text{ or the best } B \\text{ meeting the targets}

    Parameters
    ----------
    model, gpu : str
        Keys of ``data/models.toml`` and ``data/gpus.toml`` (case-insensitive).
    tensor_parallel : int
        GPUs per replica. [GPUs]
    precision : str
        Weights and matmuls: one of :data:`PRECISIONS`, and one the GPU has.
    input_tokens, output_tokens : float, mapping or (lengths, weights) pair
        Prompt and output lengths per request: one length, a histogram
        ``{length: weight}``, or two arrays ``(lengths, weights)``; see
        :func:`token_mix`. [tokens]
    concurrency : int, optional
        Sequences in flight per replica; default: as many as fit. [sequences]
    tpot_ms_max, ttft_ms_max : float, optional
        Mean latency targets; the best batch meeting both is chosen. [ms]
    efficiency : Efficiency, optional
        Default: the fitted parameters in ``data/performance.toml``.

    Returns
    -------
    ReplicaThroughput

    Notes
    -----
    - Steady state, continuous batching with chunked prefill; no queueing in
      TTFT; no speculative decoding; input and output lengths independent.
    - Latency targets are compared with model means, not percentiles.
    - Mixture-of-experts weights read per step follow uniform routing; the
      parallel layout is taken as tensor parallel over ``tensor_parallel`` GPUs.
    - The efficiencies are fitted on published TensorRT-LLM / MLPerf / SGLang /
      NIM figures (docs/performance.md gives the held-out error).

    Examples
    --------
    >>> r = replica_throughput(model="llama-3.1-8b", gpu="H100-SXM-80GB", tensor_parallel=1,
    ...                        precision="fp8", input_tokens=1000, output_tokens=1000, tpot_ms_max=30)
    >>> r.tpot_ms <= 30
    True
    """
    eff = efficiency or load_efficiency()
    rep = replica(model, gpu, tensor_parallel, precision, input_tokens, output_tokens)
    limit, kv_limit = (int(x) for x in batch_limit(rep, eff))
    if kv_limit < 1:
        raise DoesNotFitError(f"{model} in {precision} does not fit on {tensor_parallel} x {gpu} with room for one "
                         f"sequence of {reserved_context_tokens(rep):.0f} tokens; raise tensor_parallel")
    binds = "kv_memory" if kv_limit <= limit and kv_limit <= eff.max_batch_sequences else "max_batch"
    meets = True
    if concurrency is not None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        batch = min(int(concurrency), limit)
        binds = "concurrency" if concurrency <= limit else binds
    elif tpot_ms_max is not None or ttft_ms_max is not None:
        batch, meets = best_batch_for_targets(rep, eff, limit, tpot_ms_max, ttft_ms_max)
        binds = "latency_target" if batch < limit or not meets else binds
    else:
        batch = limit
    tpot, compute_bound = tpot_s(rep, eff, batch)
    per_gpu = float(output_tokens_per_s_per_gpu(rep, eff, batch))
    return ReplicaThroughput(
        output_tokens_per_s_per_gpu=per_gpu, output_tokens_per_s_per_replica=per_gpu * tensor_parallel,
        batch=batch, ttft_ms=float(ttft_s(rep, eff, batch)) * 1e3, tpot_ms=float(tpot) * 1e3,
        kv_memory_batch_limit=kv_limit, binds=binds, step_bound="compute" if bool(compute_bound) else "bandwidth",
        meets_targets=meets, gpu_seconds_per_request=float(rep.output_mean_tokens) / per_gpu,
    )


#: Batches of a sweep (:func:`throughput_sweep`), capped at the replica's batch limit. [sequences]
SWEEP_BATCHES: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def throughput_sweep(limit: int, extra_batches: Iterable[int] = (), **replica_kwargs: Any) -> list[dict]:
    """Throughput and latency over batch sizes up to ``limit``: the curve to pick an operating point on.

    One :func:`replica_throughput` at ``concurrency = B`` for each ``B`` of :data:`SWEEP_BATCHES` below
    ``limit``, ``limit`` itself and ``extra_batches`` (e.g. an operating batch), in batch order.

    Parameters
    ----------
    limit : int
        Largest batch to evaluate, e.g. the KV-memory batch limit. [sequences]
    extra_batches : iterable of int
        More batches to include (those above ``limit`` are left out). [sequences]
    **replica_kwargs
        :func:`replica_throughput`'s model, GPU, TP, precision, token mix (and ``efficiency``).

    Returns
    -------
    list of dict
        :meth:`ReplicaThroughput.to_dict` per distinct batch actually run: beyond the engine's batch
        limit a larger concurrency runs the same batch, so it appears once.
    """
    points = {}
    for b in sorted({b for b in (*SWEEP_BATCHES, *extra_batches) if 1 <= b < limit} | {max(int(limit), 1)}):
        point = replica_throughput(**replica_kwargs, concurrency=int(b)).to_dict()
        points[point["batch"]] = point
    return list(points.values())


__all__ = [
    "ACTIVATION_BYTES_PER_ELEMENT", "BATCH_LIMITS", "Efficiency", "KV_BYTES_PER_ELEMENT",
    "MAX_PREFILL_CHUNK_TOKENS", "PRECISIONS", "Replica", "ReplicaThroughput", "STEP_BOUNDS", "SWEEP_BATCHES",
    "TokenMix",
    "WEIGHT_BYTES_PER_PARAMETER", "allreduce_time_per_layer_s", "allreduce_time_s",
    "attended_tokens_per_layer", "batch_for_arrival_rate", "batch_limit", "best_batch_for_targets", "compute_time_s",
    "decode_attention_flops", "experts_touched", "kv_bytes_per_sequence_per_gpu", "kv_bytes_per_token",
    "kv_elements_per_token_per_layer", "kv_memory_batch_limit", "kv_shards", "linear_flops",
    "load_efficiency", "mean_context_tokens", "memory_time_s", "mixed_step_prefill_tokens",
    "output_tokens_per_s_per_gpu", "prefill_attention_flops", "replica", "replica_throughput",
    "reserved_context_tokens", "roofline_step_time_s", "stack_replicas", "step_time_s", "throughput_sweep",
    "tpot_s", "ttft_s", "weight_bytes_per_gpu", "weight_bytes_read_per_step_per_gpu",
]
