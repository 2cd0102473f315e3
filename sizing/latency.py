"""Request latency and burst when the logs have no ``latency_ms``: modelled from the performance model. No I/O.

Latency feeds the plan twice, through Little's law (requests in flight ``L = λ·W``) and through
the KV memory those requests hold. Logs without it (public traces often have none) still size a
fleet with a *modelled* latency, marked so in the report:

.. math:: W = T_{ttft} + (E[s_{out}] - 1) \\cdot T_{tpot}(B)

with ``T_tpot`` and ``T_ttft`` from :mod:`capplan.sizing.performance` at the batch ``B`` a replica
runs at the target utilisation of its batch limit (a measured TTFT replaces the modelled one).
"""

from __future__ import annotations

import numpy as np

from capplan.sizing import performance as perf

#: Tensor-parallel degrees tried, smallest first, until the model fits with a batch of one. [GPUs/replica]
TP_DEGREES = (1, 2, 4, 8)
#: Normal score of the busiest moment of an hour of Poisson requests in flight (≈ 1 in 740 moments). [-]
Z_PEAK = 3.0


def modelled_latency_s(model: str, gpu: str, input_tokens_per_request: float, output_tokens_per_request: float,
                       *, target_utilisation: float = 0.6, precision: str = "bf16",
                       tensor_parallel: int | None = None, ttft_s: float | None = None) -> float:
    """Mean arrival-to-last-token time of a request, from the performance model. [s]

    Parameters
    ----------
    model, gpu : str
        Catalogue keys.
    input_tokens_per_request, output_tokens_per_request : float
        Measured means. [tokens/request]
    target_utilisation : float
        Share of the batch limit a replica runs at. [fraction]
    precision : str
        One of :data:`capplan.sizing.performance.PRECISIONS`.
    tensor_parallel : int, optional
        GPUs per replica; default the smallest of :data:`TP_DEGREES` the model fits in.
    ttft_s : float, optional
        Measured mean TTFT; replaces the modelled one. [s]

    Examples
    --------
    >>> 0 < modelled_latency_s("llama-3.1-8b", "H100-SXM-80GB", 1000, 200) < 60
    True
    """
    eff = perf.load_efficiency()
    for tp in (tensor_parallel,) if tensor_parallel else TP_DEGREES:
        rep = perf.replica(model, gpu, tp, precision, input_tokens_per_request, max(output_tokens_per_request, 1.0))
        limit, _ = perf.batch_limit(rep, eff)
        if float(limit) >= 1:
            break
    else:
        raise ValueError(f"{model} does not fit on {gpu} with tensor parallelism up to {TP_DEGREES[-1]}")
    batch = max(1.0, float(np.floor(target_utilisation * float(limit))))
    tpot, _ = perf.tpot_s(rep, eff, batch)
    first = float(perf.ttft_s(rep, eff, batch)) if ttft_s is None else float(ttft_s)
    return first + max(output_tokens_per_request - 1.0, 0.0) * float(tpot)


def poisson_burst_ratio(mean_in_flight: float, z: float = Z_PEAK) -> float:
    """Peak over mean requests in flight when only the mean is known: ``(L + z·√L) / L``. [ratio]

    Requests in flight of Poisson arrivals with any service time are Poisson with mean
    ``L = λ·W`` (M/G/∞); an hour's busiest moment is taken ``z`` standard deviations above it.

    >>> round(poisson_burst_ratio(100.0), 2)
    1.3
    """
    if mean_in_flight <= 0:
        raise ValueError(f"mean_in_flight must be > 0, got {mean_in_flight}")
    return float((mean_in_flight + z * np.sqrt(mean_in_flight)) / mean_in_flight)
