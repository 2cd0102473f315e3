"""Cost of one request: the GPU time its prompt and output occupy, and that time's price.

Two models of the same quantity:

- **linear** (:func:`gpu_seconds_per_request`, :class:`RequestCost`): tokens divided by flat per-GPU
  prefill and decode rates (the GPU catalogue's ASSUMED figures); a longer prompt costs its
  tokens at the prefill rate and nothing more;
- **modelled** (:func:`modelled_gpu_seconds_per_request`, :class:`ModelledRequestCost`): the
  replica performance model (:func:`capplan.sizing.performance.replica_throughput`) at an operating
  point, where a longer context also slows every decode step (more KV read) and shrinks the
  batch the KV memory allows.

:func:`capplan.drift.pricing.request_costs` builds one per log model from the config, the
catalogues and the price book; drift detection (:mod:`capplan.drift`) prices a change in token
mix with them. Units are in the names: ``usd_per_gpu_hour`` [USD/(GPU·h)], ``gpu_seconds``
[GPU·s], token counts [tokens].
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing._checks import _out, fraction, non_negative, positive
from capplan.sizing.memory import TENSOR_PARALLEL_DEGREES
from capplan.sizing.performance import (
    Efficiency,
    load_efficiency,
    replica,
    TokenMix,
    replica_throughput,
    step_time_s,
    token_mix,
)

#: A request's lengths: one length, a ``{length: weight}`` histogram or a ``(lengths, weights)`` pair. [tokens]
Tokens = float | dict | tuple | TokenMix

SECONDS_PER_HOUR = 3600.0


def gpu_seconds_per_request(
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    *,
    prefill_tokens_per_s_per_gpu: float,
    decode_tokens_per_s_per_gpu: float,
    target_utilisation: float = 1.0,
) -> np.ndarray | float:
    """GPU time one request occupies, from its prompt and output lengths.

    .. math:: s = \\frac{1}{u}\\left(\\frac{n_{in}}{r_{prefill}} + \\frac{n_{out}}{r_{decode}}\\right)

    Parameters
    ----------
    input_tokens : array_like
        Prompt length of each request. [tokens]
    output_tokens : array_like
        Generated length of each request. [tokens]
    prefill_tokens_per_s_per_gpu : float
        Aggregate prefill throughput of one GPU at its serving batch size.
        [tokens/(s·GPU)]
    decode_tokens_per_s_per_gpu : float
        Aggregate decode throughput of one GPU at its serving batch size (all
        sequences in the batch together, not one stream). [tokens/(s·GPU)]
    target_utilisation : float, default 1.0
        Fraction of peak throughput the fleet is run at; GPU time paid for
        per request grows as ``1/u``. [fraction, (0, 1]]

    Returns
    -------
    numpy.ndarray or float
        GPU time per request, shaped like the broadcast inputs. [GPU·s]

    Raises
    ------
    ValueError
        If a rate is not positive, ``target_utilisation`` is outside (0, 1] or
        a token count is negative.

    Notes
    -----
    - Throughputs are aggregate per-GPU rates measured (or assumed) at the
      batch size the fleet runs at; a request's share of the GPU is its token
      count divided by that rate.
    - Prefill and decode do not overlap in this accounting (a chunked-prefill
      engine interleaves them; its cost is then slightly over-stated).
    - Cost is linear in tokens: attention's growth with context length is
      folded into the measured rates.

    Examples
    --------
    1,000 prompt and 200 output tokens at 10,000 and 2,000 tokens/s/GPU, run at
    50 % utilisation: ``(1000/10000 + 200/2000) / 0.5 = 0.4`` GPU·s.

    >>> float(gpu_seconds_per_request(1000, 200, prefill_tokens_per_s_per_gpu=10_000,
    ...                               decode_tokens_per_s_per_gpu=2_000, target_utilisation=0.5))
    0.4
    """
    prefill = positive("prefill_tokens_per_s_per_gpu", prefill_tokens_per_s_per_gpu)
    decode = positive("decode_tokens_per_s_per_gpu", decode_tokens_per_s_per_gpu)
    u = fraction("target_utilisation", target_utilisation)
    n_in = non_negative("input_tokens", input_tokens)
    n_out = non_negative("output_tokens", output_tokens)
    return _out((n_in / prefill  # prefill [GPU·s]
                 + n_out / decode) / u)  # decode [GPU·s], paid for at utilisation u



def usd_per_request(
    input_tokens: ArrayLike,
    output_tokens: ArrayLike,
    *,
    usd_per_gpu_hour: float,
    prefill_tokens_per_s_per_gpu: float,
    decode_tokens_per_s_per_gpu: float,
    target_utilisation: float = 1.0,
) -> np.ndarray | float:
    """Cost of one request at a GPU-hour price.

    .. math:: c = s \\cdot p / 3600, \\quad s = \\text{gpu\\_seconds\\_per\\_request}(\\ldots)

    Parameters
    ----------
    input_tokens, output_tokens : array_like
        Prompt and generated length of each request. [tokens]
    usd_per_gpu_hour : float
        Price of one GPU-hour (on-demand, reserved effective or a blend).
        [USD/(GPU·h)]
    prefill_tokens_per_s_per_gpu, decode_tokens_per_s_per_gpu, target_utilisation
        As in :func:`gpu_seconds_per_request`.

    Returns
    -------
    numpy.ndarray or float
        Cost per request, shaped like the broadcast inputs. [USD]

    Raises
    ------
    ValueError
        If ``usd_per_gpu_hour`` is negative, or as :func:`gpu_seconds_per_request`.

    Notes
    -----
    Drift detection prices a change in token mix as the difference of this
    function's mean over two windows; the assumptions of
    :func:`gpu_seconds_per_request` apply.

    Examples
    --------
    0.4 GPU·s at 3.60 USD/GPU-hour costs 0.0004 USD.

    >>> round(float(usd_per_request(1000, 200, usd_per_gpu_hour=3.6, prefill_tokens_per_s_per_gpu=10_000,
    ...                             decode_tokens_per_s_per_gpu=2_000, target_utilisation=0.5)), 10)
    0.0004
    """
    non_negative("usd_per_gpu_hour", usd_per_gpu_hour)
    seconds = gpu_seconds_per_request(
        input_tokens, output_tokens,
        prefill_tokens_per_s_per_gpu=prefill_tokens_per_s_per_gpu,
        decode_tokens_per_s_per_gpu=decode_tokens_per_s_per_gpu,
        target_utilisation=target_utilisation)
    return seconds * usd_per_gpu_hour / SECONDS_PER_HOUR



def _mean(tokens: Tokens) -> float:
    """Mean length of one length or a length distribution. [tokens]"""
    return token_mix(tokens).mean_tokens if isinstance(tokens, dict | tuple | TokenMix) else float(tokens)


@dataclass(frozen=True)
class RequestCost:
    """Linear per-request cost model of one served model (:func:`gpu_seconds_per_request`, :func:`usd_per_request`).

    The rates are ASSUMED (the GPU catalogue's), so its figures are marked ``assumed``
    (:attr:`source`). Lengths may be distributions: the cost being linear in tokens, the mean
    cost of a mix is the cost at its mean lengths.

    Attributes
    ----------
    prefill_tokens_per_s_per_gpu, decode_tokens_per_s_per_gpu : float
        Aggregate per-GPU throughputs. [tokens/(s·GPU)]
    usd_per_gpu_hour : float
        GPU-hour price. [USD/(GPU·h)]
    target_utilisation : float
        Fraction of peak the fleet runs at. [fraction]
    note : str
        Where the rates come from and, when a modelled cost was wanted, why it was not used.
    pool_models : tuple of str
        Log models served with this one (unused: a linear cost has no operating point).
    """

    prefill_tokens_per_s_per_gpu: float
    decode_tokens_per_s_per_gpu: float
    usd_per_gpu_hour: float
    target_utilisation: float = 1.0
    note: str = ""
    pool_models: tuple[str, ...] = ()
    source = "assumed"

    def at_operating_point(self, input_tokens: Tokens, output_tokens: Tokens) -> RequestCost:
        """The same model: a linear cost has no operating point."""
        return self

    def describe(self) -> str:
        """The cost model and its inputs, for a report. [text]"""
        return (f"linear: {self.prefill_tokens_per_s_per_gpu:,.0f} prefill and {self.decode_tokens_per_s_per_gpu:,.0f} "
                f"decode tokens/s per GPU, utilisation {self.target_utilisation:g}"
                + (f" ({self.note})" if self.note else ""))

    def gpu_seconds(self, input_tokens: Tokens, output_tokens: Tokens) -> float:
        """GPU time of a request (mean over a mix). [GPU·s]"""
        return float(gpu_seconds_per_request(
            _mean(input_tokens), _mean(output_tokens), prefill_tokens_per_s_per_gpu=self.prefill_tokens_per_s_per_gpu,
            decode_tokens_per_s_per_gpu=self.decode_tokens_per_s_per_gpu, target_utilisation=self.target_utilisation))

    def usd(self, input_tokens: Tokens, output_tokens: Tokens) -> float:
        """Cost of a request (mean over a mix). [USD]"""
        return float(usd_per_request(
            _mean(input_tokens), _mean(output_tokens), usd_per_gpu_hour=self.usd_per_gpu_hour,
            prefill_tokens_per_s_per_gpu=self.prefill_tokens_per_s_per_gpu,
            decode_tokens_per_s_per_gpu=self.decode_tokens_per_s_per_gpu, target_utilisation=self.target_utilisation))


@dataclass(frozen=True)
class RequestGpuTime:
    """GPU time of a request at an operating point, split into its prefill and decode shares.

    Attributes
    ----------
    gpu_seconds : float
        Total, ``prefill_gpu_seconds + decode_gpu_seconds``. [GPU·s]
    prefill_gpu_seconds : float
        Time its prompt's chunks add to the decode steps they ride in. [GPU·s]
    decode_gpu_seconds : float
        Its share of pure decode steps. [GPU·s]
    batch : int
        Sequences decoding together. [sequences]
    kv_memory_batch_limit : int
        Sequences whose KV cache fits at these lengths. [sequences]
    binds : str
        What limits the batch (:data:`capplan.sizing.performance.BATCH_LIMITS`).
    tpot_ms : float
        Mean time per output token at that batch. [ms]
    """

    gpu_seconds: float
    prefill_gpu_seconds: float
    decode_gpu_seconds: float
    batch: int
    kv_memory_batch_limit: int
    binds: str
    tpot_ms: float


def modelled_gpu_seconds_per_request(
    input_tokens: Tokens,
    output_tokens: Tokens,
    *,
    model: str,
    gpu: str,
    tensor_parallel: int,
    precision: str,
    batch: int | None = None,
    target_utilisation: float = 1.0,
    efficiency: Efficiency | None = None,
) -> RequestGpuTime:
    """GPU time of a request of given input and output length at an operating point (performance model).

    The request is priced as one of a steady stream of requests like it served by a
    replica of ``tensor_parallel`` GPUs at the operating point's batch, capped by the
    KV memory its lengths allow:

    .. math::
        B' = \\min(B_{op}, B_{kv}(s_{in} + s_{out}), B_{max}), \\quad
        s = \\frac{1}{u} \\cdot \\frac{s_{out} \\, t \\, T(B', p)}{B'}, \\quad p = B' s_{in} / s_{out}

        s_{decode} = \\frac{1}{u} \\cdot \\frac{s_{out} \\, t \\, T(B', 0)}{B'}, \\quad s_{prefill} = s - s_{decode}

    with ``T(B, p)`` the step time of :func:`capplan.sizing.performance.step_time_s` (``B``
    decoding sequences at mean context ``s_in + s_out/2`` and ``p`` prompt tokens mixed in;
    the same call :func:`~capplan.sizing.performance.replica_throughput` makes):
    each of the ``s_out`` steps the request decodes in is shared by ``B'`` sequences on
    ``t`` GPUs. A longer prompt raises ``T`` (more KV read per step, more prompt tokens
    per step, attention growing with ``s_in²``) and, once ``B_kv`` binds, lowers ``B'``,
    so the cost then rises faster than the prompt's linear token share.

    Parameters
    ----------
    input_tokens, output_tokens : float, mapping or (lengths, weights) pair
        The request's prompt and output length [tokens]; or distributions
        (:func:`capplan.sizing.performance.token_mix`), giving the mean cost of a
        mix served together (its KV limit set by the mix's mean reserved context).
    model, gpu : str
        Keys of ``data/models.toml`` and ``data/gpus.toml``.
    tensor_parallel : int
        GPUs per replica, ``t``. [GPUs]
    precision : str
        Weights and matmuls (:data:`capplan.sizing.performance.PRECISIONS`).
    batch : int, optional
        The operating point's batch ``B_op`` (e.g. the batch the pool runs at its baseline
        mix, or the one its latency target allows); default: as many as fit. [sequences]
    target_utilisation : float, default 1.0
        Fraction of peak the fleet runs at, ``u``; GPU time paid per request grows as ``1/u``. [fraction]
    efficiency : Efficiency, optional
        Default: the fitted parameters (``data/performance.toml``).

    Returns
    -------
    RequestGpuTime
        Total GPU time and its prefill and decode shares [GPU·s], the batch and what binds it.

    Raises
    ------
    ValueError
        Unknown model, GPU or precision, a model that does not fit, ``batch < 1`` or
        ``target_utilisation`` outside (0, 1].

    Notes
    -----
    - The operating point's batch is held (an engine's configured concurrency); only the KV
      memory can lower it. A mix that fits more sequences does not raise it.
    - Prefill's share is the time prompt chunks add to steps: in a bandwidth-bound step
      they ride on the weight reads almost free, in a compute-bound step they cost FLOP/s.
    - The assumptions of :func:`~capplan.sizing.performance.replica_throughput` apply (steady
      state, continuous batching with chunked prefill, input and output lengths independent).

    Examples
    --------
    Llama 3.1 8B, BF16, one H100, batch 128, a request of 1,000 prompt and 100 output tokens,
    with efficiencies 0.5 (bandwidth and FLOP/s), 1 ms per step, 0.9 of free memory for KV
    and no activation reserve: the step carries 128 decode + 1,280 prompt tokens, so its
    2·8.03e9·1408 FLOP (+ attention) take 46.5 ms at 0.5 × 989 TFLOP/s, more than its
    20.1 ms of weight and KV reads: ``T = 47.5`` ms and ``s = 100 · 47.5 ms / 128 = 0.0371``
    GPU·s, of which pure decode steps (21.1 ms, bandwidth-bound) are 0.0165 GPU·s.

    >>> e = Efficiency(0.5, 0.5, 0.5, 1.0, 1.0, 0.0, 256, 0.9, 0.0)
    >>> r = modelled_gpu_seconds_per_request(1000, 100, model="llama-3.1-8b", gpu="H100-SXM-80GB",
    ...                                      tensor_parallel=1, precision="bf16", batch=128, efficiency=e)
    >>> round(r.gpu_seconds, 4), round(r.decode_gpu_seconds, 4), r.batch
    (0.0371, 0.0165, 128)
    """
    u = float(fraction("target_utilisation", target_utilisation))
    if batch is not None and batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch!r}")
    eff = efficiency or load_efficiency()
    r = replica_throughput(model, gpu, tensor_parallel, precision, input_tokens, output_tokens,
                           concurrency=batch, efficiency=eff)
    rep = replica(model, gpu, tensor_parallel, precision, input_tokens, output_tokens)
    decode_step_s, _ = step_time_s(rep, eff, r.batch, 0.0, 0.0)  # the same step without prompt tokens
    per_step_gpu_s = rep.output_mean_tokens * tensor_parallel / r.batch / u  # s_out steps, shared by B' on t GPUs
    total = r.gpu_seconds_per_request / u
    decode = float(decode_step_s) * per_step_gpu_s
    return RequestGpuTime(gpu_seconds=total, prefill_gpu_seconds=total - decode, decode_gpu_seconds=decode,
                          batch=r.batch, kv_memory_batch_limit=r.kv_memory_batch_limit, binds=r.binds,
                          tpot_ms=r.tpot_ms)


@dataclass(frozen=True)
class ModelledRequestCost:
    """Per-request cost model of one served model from the replica performance model (``modelled``).

    :meth:`at_operating_point` fixes the batch (and, when unset, the smallest tensor-parallel
    degree the model fits in) at a baseline mix; :meth:`gpu_seconds` then prices any mix at
    that operating point (:func:`modelled_gpu_seconds_per_request`).

    Attributes
    ----------
    model, gpu : str
        Catalogue keys of the architecture and GPU.
    tensor_parallel : int or None
        GPUs per replica; None: the smallest degree of
        :data:`capplan.sizing.memory.TENSOR_PARALLEL_DEGREES` the model fits in at the priced mix. [GPUs]
    precision : str
        Weights and matmuls.
    usd_per_gpu_hour : float
        GPU-hour price. [USD/(GPU·h)]
    target_utilisation : float
        Fraction of peak the fleet runs at. [fraction]
    batch : int or None
        The operating point's batch; None: as many as fit at the priced mix. [sequences]
    baseline_mean_tokens : tuple of float or None
        Mean input and output length of the mix that set the operating point. [tokens]
    note : str
        What the model stands for (e.g. the pool it serves in).
    pool_models : tuple of str
        Log models served together with this one (its pool's): their joint mix sets the
        operating point (:meth:`at_operating_point`); empty: this model's own.
    efficiency : Efficiency or None
        Default: the fitted parameters.
    """

    model: str
    gpu: str
    tensor_parallel: int | None
    precision: str
    usd_per_gpu_hour: float
    target_utilisation: float = 1.0
    batch: int | None = None
    baseline_mean_tokens: tuple[float, float] | None = None
    note: str = ""
    pool_models: tuple[str, ...] = ()
    efficiency: Efficiency | None = None
    source = "modelled"

    def _tensor_parallel(self, input_tokens: Tokens, output_tokens: Tokens) -> int:
        if self.tensor_parallel is not None:
            return self.tensor_parallel
        errors = []
        for tp in TENSOR_PARALLEL_DEGREES:
            try:
                replica_throughput(self.model, self.gpu, tp, self.precision, input_tokens, output_tokens,
                                   concurrency=1, efficiency=self.efficiency or load_efficiency())
                return tp
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(errors[-1])

    def at_operating_point(self, input_tokens: Tokens, output_tokens: Tokens) -> ModelledRequestCost:
        """This model with its batch (and TP) fixed at the baseline mix: as many sequences as fit there."""
        tp = self._tensor_parallel(input_tokens, output_tokens)
        r = modelled_gpu_seconds_per_request(input_tokens, output_tokens, model=self.model, gpu=self.gpu,
                                             tensor_parallel=tp, precision=self.precision, batch=self.batch,
                                             efficiency=self.efficiency)
        return replace(self, tensor_parallel=tp, batch=r.batch,
                       baseline_mean_tokens=(_mean(input_tokens), _mean(output_tokens)))

    def describe(self) -> str:
        """The cost model and its inputs, for a report. [text]"""
        tp = "the smallest TP that fits" if self.tensor_parallel is None else f"TP {self.tensor_parallel}"
        batch = ("as many sequences as fit" if self.batch is None else f"batch {self.batch}"
                 + (f" set at the baseline mix (mean {self.baseline_mean_tokens[0]:,.0f} in / "
                    f"{self.baseline_mean_tokens[1]:,.0f} out tokens)" if self.baseline_mean_tokens else ""))
        return (f"performance model: {self.model} on {self.gpu}, {tp}, {self.precision}, {batch}, capped by KV "
                f"memory; utilisation {self.target_utilisation:g}" + (f"; {self.note}" if self.note else ""))

    def request_gpu_time(self, input_tokens: Tokens, output_tokens: Tokens) -> RequestGpuTime:
        """:func:`modelled_gpu_seconds_per_request` at this operating point."""
        return modelled_gpu_seconds_per_request(
            input_tokens, output_tokens, model=self.model, gpu=self.gpu,
            tensor_parallel=self._tensor_parallel(input_tokens, output_tokens), precision=self.precision,
            batch=self.batch, target_utilisation=self.target_utilisation, efficiency=self.efficiency)

    def gpu_seconds(self, input_tokens: Tokens, output_tokens: Tokens) -> float:
        """GPU time of a request (mean over a mix served together). [GPU·s]"""
        return self.request_gpu_time(input_tokens, output_tokens).gpu_seconds

    def usd(self, input_tokens: Tokens, output_tokens: Tokens) -> float:
        """Cost of a request (mean over a mix served together). [USD]"""
        return self.gpu_seconds(input_tokens, output_tokens) * self.usd_per_gpu_hour / SECONDS_PER_HOUR
