"""The automatic GPU choice: size and price a pool on every catalogue GPU and TP degree, keep the cheapest.

Brute force over the candidates (a catalogue holds a handful of GPUs and four TP degrees, so a
pool costs at most a few dozen sizings). Pure: the sizing and the price come in as callables,
so this module does no I/O and knows nothing of configs or price books.

.. math:: (g, t)^* = \\arg\\min_{(g, t) \\in C,\\; L(g, t) \\le L_{target}} \\mathrm{cost}(g, N(g, t))

with ``C`` the (GPU, TP) pairs the model fits in, ``N`` the pool's GPUs, ``L`` its mean latency
at the target utilisation and ``cost`` the monthly cost at the commit level. Ties go to fewer
GPUs, then to the GPU key and TP degree (a deterministic order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SizedOption:
    """What :func:`choose_gpu`'s ``size`` callable returns for one (GPU, TP) that fits.

    ``gpus`` [GPUs], ``tensor_parallel`` [GPUs/replica] (the degree used, when the caller asked
    for the smallest that fits), ``binding`` (``throughput`` | ``memory``), ``latency_s`` (mean
    latency at the target utilisation) [s].
    """

    gpus: int
    tensor_parallel: int
    binding: str
    latency_s: float


@dataclass(frozen=True)
class Candidate:
    """One (GPU, TP) the model fits on, sized and priced. [GPUs], [USD/month], [s]"""

    gpu: str
    tensor_parallel: int
    gpus: int
    cost_usd_per_month: float
    binding: str
    latency_s: float
    meets_latency: bool


@dataclass(frozen=True)
class GpuChoice:
    """The candidates, cheapest first (those meeting the latency target before those that miss it).

    ``chosen`` is the first; ``next_best`` the second that meets the target (``None`` if none);
    ``saving_usd_per_month`` = next best's cost − chosen's (``None`` without a next best).
    """

    candidates: tuple[Candidate, ...]

    @property
    def chosen(self) -> Candidate:
        return self.candidates[0]

    @property
    def next_best(self) -> Candidate | None:
        rest = [c for c in self.candidates[1:] if c.meets_latency]
        return rest[0] if rest else None

    @property
    def saving_usd_per_month(self) -> float | None:
        nxt = self.next_best
        return None if nxt is None else nxt.cost_usd_per_month - self.chosen.cost_usd_per_month

    def rows(self) -> list[dict[str, object]]:
        """One row per candidate, for a report table."""
        return [{"gpu": c.gpu, "tensor_parallel": c.tensor_parallel, "gpus": c.gpus,
                 "cost_usd_per_month": c.cost_usd_per_month, "binding": c.binding, "latency_s": c.latency_s,
                 "meets_latency": c.meets_latency, "chosen": i == 0} for i, c in enumerate(self.candidates)]


def candidate_key(c: Candidate) -> tuple:
    """The order of :class:`GpuChoice`: meets the target, cost, GPUs, GPU key, TP degree."""
    return (not c.meets_latency, c.cost_usd_per_month, c.gpus, c.gpu, c.tensor_parallel)


def choose_gpu(options: Iterable[tuple[str, int | None]], size: Callable[[str, int | None], SizedOption | None],
               price: Callable[[str, SizedOption], float], *, latency_target_s: float | None = None) -> GpuChoice:
    """Size and price every (GPU, TP) option; the cheapest that meets ``latency_target_s`` comes first.

    Parameters
    ----------
    options : iterable of (str, int or None)
        GPU keys and TP degrees to try (``None``: the smallest degree that fits).
    size : callable
        ``size(gpu, tp)`` → :class:`SizedOption`, or ``None`` when the model does not fit.
    price : callable
        ``price(gpu, option)`` → cost per month at the commit level. [USD/month]
    latency_target_s : float, optional
        Mean latency at the target utilisation a candidate must not exceed; ``None``: every candidate meets it. [s]

    Raises
    ------
    ValueError
        If the model fits on no option.
    """
    found: dict[tuple[str, int], Candidate] = {}
    tried = []
    for gpu, tp in options:
        tried.append(f"{gpu}×{tp or 'smallest'}")
        option = size(gpu, tp)
        if option is None:
            continue
        meets = latency_target_s is None or option.latency_s <= latency_target_s
        found[(gpu, option.tensor_parallel)] = Candidate(
            gpu=gpu, tensor_parallel=option.tensor_parallel, gpus=option.gpus,
            cost_usd_per_month=float(price(gpu, option)), binding=option.binding, latency_s=option.latency_s,
            meets_latency=meets)
    if not found:
        raise ValueError(f"the model fits on none of the GPU options tried ({', '.join(tried)})")
    return GpuChoice(tuple(sorted(found.values(), key=candidate_key)))


__all__ = ["Candidate", "GpuChoice", "SizedOption", "candidate_key", "choose_gpu"]
