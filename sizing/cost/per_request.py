"""Cost of one request: the GPU time its prompt and output occupy, and that time's price.

Pure functions, numbers in and numbers out, and :class:`RequestCost`, the per-request cost model of
one served model (:func:`capplan.drift.pricing.request_costs` builds one per log model from the
config, the GPU catalogue and the price book). Drift detection (:mod:`capplan.drift`) prices a change
in token mix with them. Units are in the names: ``usd_per_gpu_hour`` [USD/(GPU·h)], ``gpu_seconds``
[GPU·s], token counts [tokens].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing._checks import _out, fraction, non_negative, positive

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



@dataclass(frozen=True)
class RequestCost:
    """Per-request cost model of one served model (:func:`gpu_seconds_per_request`, :func:`usd_per_request`).

    Attributes
    ----------
    prefill_tokens_per_s_per_gpu, decode_tokens_per_s_per_gpu : float
        Aggregate per-GPU throughputs. [tokens/(s·GPU)]
    usd_per_gpu_hour : float
        GPU-hour price. [USD/(GPU·h)]
    target_utilisation : float
        Fraction of peak the fleet runs at. [fraction]
    """

    prefill_tokens_per_s_per_gpu: float
    decode_tokens_per_s_per_gpu: float
    usd_per_gpu_hour: float
    target_utilisation: float = 1.0

    def gpu_seconds(self, input_tokens: float, output_tokens: float) -> float:
        """GPU time of a request. [GPU·s]"""
        return float(gpu_seconds_per_request(
            input_tokens, output_tokens, prefill_tokens_per_s_per_gpu=self.prefill_tokens_per_s_per_gpu,
            decode_tokens_per_s_per_gpu=self.decode_tokens_per_s_per_gpu, target_utilisation=self.target_utilisation))

    def usd(self, input_tokens: float, output_tokens: float) -> float:
        """Cost of a request. [USD]"""
        return float(usd_per_request(
            input_tokens, output_tokens, usd_per_gpu_hour=self.usd_per_gpu_hour,
            prefill_tokens_per_s_per_gpu=self.prefill_tokens_per_s_per_gpu,
            decode_tokens_per_s_per_gpu=self.decode_tokens_per_s_per_gpu, target_utilisation=self.target_utilisation))
