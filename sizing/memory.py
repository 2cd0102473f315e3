"""Memory: KV-cache bytes, weights per tensor-parallel shard and sequences per GPU.

Pure functions: scalar or ndarray in, the same shape out (except
:func:`smallest_tensor_parallel`, which searches and is scalar). Bytes are
bytes [B]; GPU memory is in GiB (2**30 B), the unit HBM capacities are built in.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing._checks import _out, choice, fraction, non_negative, positive

BYTES_PER_GIB = 2**30

#: Bytes per stored element for each supported KV-cache / weights data type.
DTYPE_BYTES: dict[str, float] = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
DTYPES: tuple[str, ...] = tuple(DTYPE_BYTES)

#: Tensor-parallel degrees tried, smallest first (engines shard heads by powers of two).
TENSOR_PARALLEL_DEGREES: tuple[int, ...] = (1, 2, 4, 8, 16, 32)


class DoesNotFitError(ValueError):
    """A model (its weights and one sequence's KV cache) does not fit the GPUs of a replica."""


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of ``dtype`` (one of :data:`DTYPES`); ``ValueError`` names the valid ones."""
    return DTYPE_BYTES[choice("dtype", dtype, DTYPES)]


def kv_heads_per_gpu(num_kv_heads: ArrayLike, tensor_parallel: ArrayLike = 1) -> np.ndarray | float:
    """KV heads each GPU of a tensor-parallel replica stores.

    .. math:: h_{gpu} = \\lceil h_{kv} / t \\rceil

    Parameters
    ----------
    num_kv_heads : array_like of int
        Key/value heads of the model (fewer than query heads under grouped-query
        attention). [heads]
    tensor_parallel : array_like of int, default 1
        GPUs per replica. [GPUs/replica]

    Returns
    -------
    numpy.ndarray or float
        Heads per GPU. [heads]

    Notes
    -----
    When ``t`` exceeds the KV heads, engines (vLLM, TensorRT-LLM) replicate each
    head on ``t / h`` GPUs, so a GPU still holds one whole head.

    Examples
    --------
    >>> kv_heads_per_gpu(8, 16)
    1.0
    """
    heads = positive("num_kv_heads", num_kv_heads)
    return _out(np.ceil(heads / positive("tensor_parallel", tensor_parallel)))


def kv_cache_bytes_per_token(
    num_layers: ArrayLike,
    num_kv_heads: ArrayLike,
    head_dim: ArrayLike,
    kv_dtype: str = "bf16",
    tensor_parallel: ArrayLike = 1,
) -> np.ndarray | float:
    """KV-cache bytes one token occupies on one GPU.

    .. math:: b_{tok} = 2 \\cdot n_{layers} \\cdot \\lceil h_{kv}/t \\rceil \\cdot d_{head} \\cdot b_{elem}

    Parameters
    ----------
    num_layers : array_like of int
        Transformer layers (``num_hidden_layers`` in config.json). [layers]
    num_kv_heads : array_like of int
        Key/value heads (``num_key_value_heads``). [heads]
    head_dim : array_like of int
        Dimension of one head (``hidden_size / num_attention_heads`` unless
        ``head_dim`` is given). [elements]
    kv_dtype : str, default 'bf16'
        Element type of the cache, one of :data:`DTYPES`.
    tensor_parallel : array_like of int, default 1
        GPUs per replica; each holds its share of the heads. [GPUs/replica]

    Returns
    -------
    numpy.ndarray or float
        Bytes per token per GPU. [B/token]

    Notes
    -----
    - Grouped-query attention enters through ``num_kv_heads``: Llama-3.1-70B has
      64 query heads but 8 KV heads, an 8× smaller cache than full attention.
    - Standard attention only; sliding-window or MLA caches are smaller.

    Examples
    --------
    Llama-3.1-8B in bf16, ``2 × 32 × 8 × 128 × 2``:

    >>> kv_cache_bytes_per_token(32, 8, 128, "bf16")
    131072.0
    """
    heads = np.asarray(kv_heads_per_gpu(num_kv_heads, tensor_parallel))
    elements = 2 * heads * positive("head_dim", head_dim)  # key and value: kv_elements_per_token_per_layer
    return kv_bytes_per_token(positive("num_layers", num_layers), elements, dtype_bytes(kv_dtype))


def kv_bytes_per_sequence(
    tokens_per_sequence: ArrayLike, kv_bytes_per_token: ArrayLike, block_size_tokens: int = 16
) -> np.ndarray | float:
    """KV-cache bytes one in-flight sequence reserves, in whole paged blocks.

    .. math:: b_{seq} = \\lceil n / B \\rceil \\cdot B \\cdot b_{tok}

    Parameters
    ----------
    tokens_per_sequence : array_like
        Prompt plus output tokens the cache must hold for one sequence; use a
        high quantile of the length distribution, see
        :func:`sequence_tokens_at_quantile`. [tokens]
    kv_bytes_per_token : array_like
        From :func:`kv_cache_bytes_per_token`. [B/token]
    block_size_tokens : int, default 16
        Paged-attention block size (vLLM's default is 16). [tokens/block]

    Returns
    -------
    numpy.ndarray or float
        Bytes per sequence. [B]

    Examples
    --------
    1,000 tokens round up to 63 blocks of 16 (1,008 tokens) at 131,072 B/token:

    >>> kv_bytes_per_sequence(1000, 131072)
    132120576.0
    """
    block = positive("block_size_tokens", block_size_tokens)
    blocks = np.ceil(non_negative("tokens_per_sequence", tokens_per_sequence) / block)
    return _out(blocks * block * positive("kv_bytes_per_token", kv_bytes_per_token))


def sequence_tokens_at_quantile(total_tokens: ArrayLike, quantile: float = 0.95) -> float:
    """A high quantile of per-request prompt+output tokens, for KV sizing.

    Parameters
    ----------
    total_tokens : array_like
        Input plus output tokens of each logged request. [tokens]
    quantile : float, default 0.95
        Quantile to size for. [fraction, (0, 1]]

    Returns
    -------
    float
        The smallest observed length at or above the quantile
        (``method='higher'``, so it is a length that really occurred). [tokens]

    Notes
    -----
    Sizing every slot for the p95 length over-provisions memory against the
    mean but keeps long requests from being pre-empted; the mean would let
    the cache run out whenever long requests bunch up.

    Examples
    --------
    >>> sequence_tokens_at_quantile([100, 200, 300, 4000], 0.5)
    300.0
    """
    tokens = non_negative("total_tokens", total_tokens)
    if tokens.size == 0:
        raise ValueError("total_tokens is empty")
    return float(np.quantile(tokens, fraction("quantile", quantile), method="higher"))


def weights_bytes(parameters: ArrayLike, weights_dtype: str = "bf16") -> np.ndarray | float:
    """Bytes of model weights.

    .. math:: b_w = P \\cdot b_{elem}

    Parameters
    ----------
    parameters : array_like
        Total parameters (all experts for a mixture of experts). [parameters]
    weights_dtype : str, default 'bf16'
        Stored element type, one of :data:`DTYPES`.

    Returns
    -------
    numpy.ndarray or float
        Weight bytes. [B]

    Examples
    --------
    >>> weights_bytes(70.6e9, "bf16") / 1e9
    141.2
    """
    return weight_bytes_per_gpu(positive("parameters", parameters), dtype_bytes(weights_dtype), 1)


def kv_budget_bytes_per_gpu(
    gpu_memory_gib: ArrayLike,
    weights_bytes: ArrayLike,
    tensor_parallel: ArrayLike = 1,
    memory_reserve_fraction: ArrayLike = 0.1,
) -> np.ndarray | float:
    """GPU memory left for the KV cache after the weight shard and a reserve.

    .. math:: b_{kv} = M \\cdot (1 - r) - b_w / t

    Parameters
    ----------
    gpu_memory_gib : array_like
        Memory of one GPU. [GiB]
    weights_bytes : array_like
        Bytes of the whole model's weights. [B]
    tensor_parallel : array_like of int, default 1
        GPUs the weights are split across. [GPUs/replica]
    memory_reserve_fraction : array_like, default 0.1
        Share of GPU memory kept for activations, CUDA graphs and the runtime
        (vLLM's ``gpu_memory_utilization=0.9`` leaves 0.1). [fraction, [0, 1)]

    Returns
    -------
    numpy.ndarray or float
        Bytes available for the cache, negative when the shard does not fit. [B]

    Examples
    --------
    Llama-3.1-8B (16.06 GB bf16) on an 80 GiB GPU:

    >>> round(kv_budget_bytes_per_gpu(80, 16.06e9) / 2**30, 2)
    57.04
    """
    usable = positive("gpu_memory_gib", gpu_memory_gib) * BYTES_PER_GIB * (
        1 - fraction("memory_reserve_fraction", memory_reserve_fraction, low_open=False, high_open=True)
    )
    return _out(usable - positive("weights_bytes", weights_bytes) / positive("tensor_parallel", tensor_parallel))


def sequences_per_replica(kv_budget_bytes_per_gpu: ArrayLike, kv_bytes_per_sequence_per_gpu: ArrayLike) -> np.ndarray | int:
    """Whole sequences whose caches fit in a replica at once.

    .. math:: S = \\lfloor b_{kv} / b_{seq} \\rfloor

    Parameters
    ----------
    kv_budget_bytes_per_gpu : array_like
        From :func:`kv_budget_bytes_per_gpu`; negative counts as zero. [B]
    kv_bytes_per_sequence_per_gpu : array_like
        One sequence's cache on one GPU of the replica (each GPU holds its
        head shard of every sequence). [B]

    Returns
    -------
    numpy.ndarray or int
        Sequences per replica. [sequences/replica]

    Examples
    --------
    >>> sequences_per_replica(57.04 * 2**30, 132120576)
    463
    """
    budget = np.maximum(np.asarray(kv_budget_bytes_per_gpu, dtype=float), 0)
    seqs = np.floor(budget / positive("kv_bytes_per_sequence_per_gpu", kv_bytes_per_sequence_per_gpu))
    return int(seqs) if np.ndim(seqs) == 0 else seqs.astype(int)


def smallest_tensor_parallel(
    weights_bytes: float,
    kv_bytes_per_sequence: float,
    num_kv_heads: int,
    gpu_memory_gib: float,
    memory_reserve_fraction: float = 0.1,
    degrees: tuple[int, ...] = TENSOR_PARALLEL_DEGREES,
) -> int:
    """Smallest tensor-parallel degree whose replica holds the weights and at least one sequence.

    Parameters
    ----------
    weights_bytes : float
        Whole-model weight bytes. [B]
    kv_bytes_per_sequence : float
        One sequence's cache for the whole model (``tensor_parallel=1``). [B]
    num_kv_heads : int
        KV heads, to account for head replication beyond ``t = h``. [heads]
    gpu_memory_gib : float
        Memory of one GPU. [GiB]
    memory_reserve_fraction : float, default 0.1
        Share of memory kept back. [fraction]
    degrees : tuple of int
        Candidate degrees, tried in order. [GPUs/replica]

    Returns
    -------
    int
        GPUs per replica. [GPUs/replica]

    Raises
    ------
    ValueError
        If no candidate degree fits, naming the sizes involved.

    Examples
    --------
    Llama-3.1-70B in bf16 (141 GB) on 80 GiB GPUs needs 2:

    >>> smallest_tensor_parallel(141.2e9, 327680 * 4096, 8, 80)
    2
    """
    for tp in degrees:
        shard = kv_bytes_per_sequence * float(kv_heads_per_gpu(num_kv_heads, tp)) / num_kv_heads
        budget = kv_budget_bytes_per_gpu(gpu_memory_gib, weights_bytes, tp, memory_reserve_fraction)
        if sequences_per_replica(budget, shard) >= 1:
            return tp
    raise ValueError(
        f"model weights of {weights_bytes / 1e9:.1f} GB plus one sequence's KV cache of "
        f"{kv_bytes_per_sequence / 1e9:.2f} GB do not fit on {max(degrees)} GPUs of {gpu_memory_gib} GiB "
        f"with a {memory_reserve_fraction:.0%} reserve"
    )


def weight_bytes_per_gpu(parameters: ArrayLike, weight_bytes_per_parameter: ArrayLike,
                         tensor_parallel: ArrayLike) -> np.ndarray | float:
    """Bytes of weights each GPU of a tensor-parallel replica holds.

    .. math:: W_{gpu} = N \\cdot b_w / t

    Parameters
    ----------
    parameters : array_like
        Total parameters, all experts included. [parameters]
    weight_bytes_per_parameter : array_like
        Stored bytes per weight (:data:`WEIGHT_BYTES_PER_PARAMETER`). [B/parameter]
    tensor_parallel : array_like
        GPUs per replica. [GPUs]

    Returns
    -------
    numpy.ndarray or float
        Weight bytes per GPU. [B]

    Examples
    --------
    Llama 3.1 70B in FP8 at TP 2: 70.6e9 × 1 B / 2 = 35.3 GB per GPU.

    >>> weight_bytes_per_gpu(70.6e9, 1, 2)
    35300000000.0
    """
    return _out(np.asarray(parameters, dtype=float) * weight_bytes_per_parameter / tensor_parallel)


def kv_elements_per_token_per_layer(num_kv_heads: int, head_dim: int, kv_latent_dim: int | None = None) -> int:
    """Elements cached per token per layer.

    .. math:: c = 2 \\cdot h_{kv} \\cdot d \\quad \\text{(or the MLA latent width)}

    Examples
    --------
    Llama 3.1 70B (8 KV heads of 128): 2 × 8 × 128 = 2048.

    >>> kv_elements_per_token_per_layer(8, 128)
    2048
    """
    if kv_latent_dim is not None:
        return int(kv_latent_dim)
    return 2 * num_kv_heads * head_dim  # key and value


def kv_bytes_per_token(num_layers: ArrayLike, kv_elements_per_layer: ArrayLike,
                       kv_bytes_per_element: ArrayLike) -> np.ndarray | float:
    """KV-cache bytes one token of context occupies in a full-attention model (whole replica).

    .. math:: b_{kv} = L \\cdot c \\cdot b_e

    Parameters
    ----------
    num_layers : array_like
        [layers]
    kv_elements_per_layer : array_like
        :func:`kv_elements_per_token_per_layer`. [elements]
    kv_bytes_per_element : array_like
        [B/element]

    Returns
    -------
    numpy.ndarray or float
        [B/token]

    Examples
    --------
    Llama 3.1 8B in FP8: 32 layers × 2 × 8 × 128 × 1 B = 65,536 B (64 KiB) per token.

    >>> kv_bytes_per_token(32, 2048, 1)
    65536.0
    """
    return _out(np.asarray(num_layers, dtype=float) * kv_elements_per_layer * kv_bytes_per_element)
