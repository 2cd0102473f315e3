"""Measurement hygiene of one load-test run: checks that say when a run's figures cannot be trusted.

Pure functions, numbers in and flags out. Each :class:`Flag` carries the figures it was decided on.

* **closed loop**: a fixed-concurrency (or all-at-once) run measures throughput at a concurrency and
  hides queueing (coordinated omission): usable as a throughput ceiling, never as a latency at a rate.
* **starved**: Little's law ``L = X·W`` gives the effective concurrency; far below the offered
  concurrency, the client did not keep the load it claims.
* **under-paced**: the achieved rate more than :data:`UNDER_PACED_FRACTION` below the target rate.
* **token mix**: mean input or output tokens more than :data:`TOKEN_MIX_FRACTION` away from the
  production mix ("a benchmark of a different prompt mix").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

CLOSED_LOOP_PROCESSES = ("concurrency", "burst")
STARVED_BELOW_FRACTION = 0.8
"""A run is starved when its effective concurrency is below this fraction of the offered one. [fraction]"""
UNDER_PACED_FRACTION = 0.05
"""A run is under-paced when its achieved rate is more than this below its target rate. [fraction]"""
TOKEN_MIX_FRACTION = 0.25
"""A run's mean input or output tokens more than this away from production flag the mix. [fraction]"""


@dataclass(frozen=True)
class Flag:
    """One failed check: its name, a sentence with the numbers, and the numbers."""

    name: str  # closed_loop | starved | under_paced | token_mix
    message: str
    values: Mapping[str, float | int | str | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "message": self.message, "values": dict(self.values)}


def is_closed_loop(arrival_process: str) -> bool:
    """True for fixed-concurrency and all-at-once runs (no target arrival rate)."""
    return arrival_process in CLOSED_LOOP_PROCESSES


def effective_concurrency(requests_per_s: float, mean_latency_s: float) -> float:
    """Requests in flight on average, by Little's law.

    ``L = X · W``: throughput ``X`` [requests/s] times mean time in the system ``W`` [s].

    Parameters
    ----------
    requests_per_s : float
        Achieved request throughput. [requests/s]
    mean_latency_s : float
        Mean end-to-end latency. [s]

    Returns
    -------
    float
        Mean requests in flight. [requests]

    Notes
    -----
    Steady state over the measured window. Example: 1.41 requests/s at 2.35 s gives 3.3 in flight.
    """
    return requests_per_s * mean_latency_s


def mean_latency_ms(e2el_mean_ms: float | None, ttft_mean_ms: float | None, tpot_mean_ms: float | None,
                    output_tokens_mean: float | None) -> float | None:
    """Mean end-to-end latency [ms]: measured, else ``TTFT + TPOT · (output tokens - 1)`` from the means."""
    if e2el_mean_ms is not None:
        return e2el_mean_ms
    if None in (ttft_mean_ms, tpot_mean_ms, output_tokens_mean):
        return None
    return ttft_mean_ms + tpot_mean_ms * max(output_tokens_mean - 1.0, 0.0)


def is_starved(effective: float, offered: float, below_fraction: float = STARVED_BELOW_FRACTION) -> bool:
    """True when the effective concurrency is below ``below_fraction`` of the offered concurrency."""
    return effective < below_fraction * offered


def is_under_paced(target_requests_per_s: float, requests_per_s: float,
                   tolerance: float = UNDER_PACED_FRACTION) -> bool:
    """True when the achieved rate is more than ``tolerance`` below the target rate."""
    return requests_per_s < (1.0 - tolerance) * target_requests_per_s


def relative_difference(measured: float, reference: float) -> float:
    """``measured / reference - 1`` [fraction]; the sign says which way."""
    return measured / reference - 1.0


def run_flags(run: Mapping[str, Any], production_input_tokens_mean: float | None = None,
              production_output_tokens_mean: float | None = None) -> list[Flag]:
    """Every hygiene flag of one run (a row of ``load_tests``; see docs/loadtests.md).

    Parameters
    ----------
    run : mapping
        Needs ``arrival_process``, ``requests_per_s``, ``target_requests_per_s``, ``max_concurrency``,
        ``input_tokens_mean``, ``output_tokens_mean`` and the mean latencies ``e2el_mean_ms``,
        ``ttft_mean_ms``, ``tpot_mean_ms``.
    production_input_tokens_mean, production_output_tokens_mean : float, optional
        The production mix from the logs [tokens/request]; ``None`` skips the mix check.
    """
    flags = []
    process = run["arrival_process"]
    if is_closed_loop(process):
        flags.append(Flag("closed_loop", f"{process} run: a throughput ceiling at a concurrency, not a latency at "
                                         f"a rate (queueing is hidden)", {"arrival_process": process}))
    latency_ms = mean_latency_ms(run.get("e2el_mean_ms"), run.get("ttft_mean_ms"), run.get("tpot_mean_ms"),
                                 run.get("output_tokens_mean"))
    offered = run.get("max_concurrency")
    if process == "concurrency" and offered and latency_ms is not None:
        effective = effective_concurrency(run["requests_per_s"], latency_ms / 1000.0)  # ms -> s
        if is_starved(effective, offered):
            flags.append(Flag("starved", f"effective concurrency {effective:.3g} (= {run['requests_per_s']:.3g} "
                                         f"requests/s x {latency_ms / 1000.0:.3g} s) is below "
                                         f"{STARVED_BELOW_FRACTION:.0%} of the offered {offered}",
                              {"effective_concurrency": effective, "offered_concurrency": offered}))
    target = run.get("target_requests_per_s")
    if target and is_under_paced(target, run["requests_per_s"]):
        shortfall = -relative_difference(run["requests_per_s"], target)
        flags.append(Flag("under_paced", f"achieved {run['requests_per_s']:.3g} requests/s is {shortfall:.1%} below "
                                         f"the target {target:.3g} requests/s",
                          {"requests_per_s": run["requests_per_s"], "target_requests_per_s": target}))
    flags += _mix_flags(run, production_input_tokens_mean, production_output_tokens_mean)
    return flags


def _mix_flags(run: Mapping[str, Any], input_mean: float | None, output_mean: float | None) -> list[Flag]:
    apart = {}
    for side, production in (("input", input_mean), ("output", output_mean)):
        measured = run.get(f"{side}_tokens_mean")
        if production and measured is not None:
            difference = relative_difference(measured, production)
            if abs(difference) > TOKEN_MIX_FRACTION:
                apart[side] = (measured, production, difference)
    if not apart:
        return []
    text = "; ".join(f"{side} {m:.4g} vs production {p:.4g} tokens/request ({d:+.0%})"
                     for side, (m, p, d) in apart.items())
    values = {f"{side}_tokens_{k}": v for side, t in apart.items() for k, v in zip(
        ("mean", "production_mean", "difference"), t)}
    return [Flag("token_mix", f"a benchmark of a different prompt mix: {text}", values)]
