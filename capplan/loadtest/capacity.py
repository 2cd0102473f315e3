"""Capacity at the SLO from a sweep of load-test runs: the highest rate that still meets the targets.

Pure functions. A *sweep* is the open-loop runs of one pool and setup at increasing rates. A run
*meets* the targets when its TTFT and TPOT at the chosen percentile are at most the limits and its
error rate at most the limit. A run stands at the rate it achieved (what the server was measured at),
not the rate the client aimed for; an under-paced run is flagged by :mod:`capplan.loadtest.hygiene`
and makes its sweep's capacity not clean. The capacity is
interpolated linearly between the last run that meets the targets and the first that breaks them,
at the rate where the first broken metric reaches its limit:

``rate = r_meet + (r_break - r_meet) · (limit - m_meet) / (m_break - m_meet)``

A sweep that never breaks gives a lower bound (its highest rate), one that never meets an upper
bound (its lowest rate). Closed-loop runs give only a throughput ceiling (see
:mod:`capplan.loadtest.hygiene`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from capplan.loadtest.hygiene import is_closed_loop

PERCENTILES = (50, 90, 95, 99)
KINDS = ("interpolated", "lower_bound", "upper_bound", "no_open_loop_runs")
MIX_TOLERANCE_FRACTION = 0.10
"""Runs of one setup whose mean input and output tokens are within this of a sweep's first run join it. [fraction]"""
SETUP_COLUMNS = ("pool", "tool", "model_id", "gpu", "tensor_parallel", "replicas", "gpus_per_replica")


@dataclass(frozen=True)
class SloTargets:
    """The latency and error targets a run must meet."""

    ttft_ms_max: float | None  # [ms]; None: not judged
    tpot_ms_max: float | None  # [ms]; None: not judged
    percentile: int = 99  # one of PERCENTILES
    max_error_rate: float = 0.01  # failed / (completed + failed) [fraction]

    def __post_init__(self) -> None:
        if self.percentile not in PERCENTILES:
            raise ValueError(f"percentile must be one of {list(PERCENTILES)}, got {self.percentile!r}")
        if self.ttft_ms_max is None and self.tpot_ms_max is None:
            raise ValueError("give at least one latency target (TTFT or TPOT)")


@dataclass(frozen=True)
class SweepPoint:
    """One rate of a sweep (repeated runs at a rate merged, worst case)."""

    rate_rps: float  # achieved rate [requests/s]
    output_tokens_per_s: float | None  # achieved [tokens/s]
    ttft_ms: float | None  # at the targets' percentile [ms]
    tpot_ms: float | None  # [ms]
    error_rate: float  # [fraction]


@dataclass(frozen=True)
class Capacity:
    """The capacity of one sweep, for the whole setup (all its replicas)."""

    kind: str  # one of KINDS
    requests_per_s: float | None  # [requests/s]
    output_tokens_per_s: float | None  # [tokens/s]
    bracket_low_rps: float | None  # rate of the last run meeting the targets [requests/s]
    bracket_high_rps: float | None  # rate of the first run breaking them [requests/s]
    binding: str | None  # the metric that broke first: ttft, tpot or error_rate
    note: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def error_rate(completed_requests: int, failed_requests: int | None) -> float:
    """``failed / (completed + failed)`` [fraction]; 0 when failures are not reported."""
    total = completed_requests + (failed_requests or 0)
    return (failed_requests or 0) / total if total else 0.0


def broken_metrics(point: SweepPoint, targets: SloTargets) -> list[str]:
    """The targets ``point`` misses: any of ``ttft``, ``tpot``, ``error_rate``."""
    broken = [name for name, value, limit in (("ttft", point.ttft_ms, targets.ttft_ms_max),
                                              ("tpot", point.tpot_ms, targets.tpot_ms_max))
              if limit is not None and value is not None and value > limit]
    if point.error_rate > targets.max_error_rate:
        broken.append("error_rate")
    return broken


def crossing_fraction(value_meet: float, value_break: float, limit: float) -> float:
    """Where between two runs a metric reaches ``limit``, as a fraction of the way [0, 1].

    Linear in the rate: ``(limit - value_meet) / (value_break - value_meet)``, clipped to [0, 1].
    """
    if value_break <= value_meet:
        return 0.0
    return min(max((limit - value_meet) / (value_break - value_meet), 0.0), 1.0)


def _fraction(meet: SweepPoint, brk: SweepPoint, targets: SloTargets, broken: list[str]) -> tuple[float, str]:
    """The smallest crossing fraction among the broken metrics, and that metric."""
    limits = {"ttft": (meet.ttft_ms, brk.ttft_ms, targets.ttft_ms_max),
              "tpot": (meet.tpot_ms, brk.tpot_ms, targets.tpot_ms_max),
              "error_rate": (meet.error_rate, brk.error_rate, targets.max_error_rate)}
    options = [(crossing_fraction(*limits[m]), m) for m in broken if m in limits and limits[m][0] is not None]
    return min(options) if options else (0.0, broken[0])


def _lerp(low: float | None, high: float | None, fraction: float) -> float | None:
    return None if low is None or high is None else low + (high - low) * fraction


def capacity_at_slo(points: Sequence[SweepPoint], targets: SloTargets) -> Capacity:
    """The highest rate of a sweep that meets ``targets``, interpolated between the bracketing runs.

    Parameters
    ----------
    points : sequence of SweepPoint
        The sweep's open-loop rates, any order (one point per rate, see :func:`sweep_points`).
    targets : SloTargets

    Returns
    -------
    Capacity
        ``interpolated`` with the bracket; ``lower_bound`` (never broke: the highest rate),
        ``upper_bound`` (never met: the lowest rate) or ``no_open_loop_runs``.

    Notes
    -----
    The first breaking rate ends the search, even if a higher rate meets the targets again
    (noise is not capacity). A metric not reported at the meeting run cannot be interpolated: the
    capacity is then the meeting rate. Example: p99 TTFT 800 ms at 4 requests/s and 1,200 ms at
    5 requests/s against a 1,000 ms target give 4.5 requests/s.
    """
    ordered = sorted(points, key=lambda p: p.rate_rps)
    if not ordered:
        return Capacity("no_open_loop_runs", None, None, None, None, None, "no open-loop run: no latency at a rate")
    first_break = next((i for i, p in enumerate(ordered) if broken_metrics(p, targets)), None)
    if first_break is None:
        top = ordered[-1]
        return Capacity("lower_bound", top.rate_rps, top.output_tokens_per_s, top.rate_rps, None, None,
                        f"the sweep never broke the SLO: capacity is at least {top.rate_rps:.4g} requests/s")
    brk = ordered[first_break]
    broken = broken_metrics(brk, targets)
    if first_break == 0:
        return Capacity("upper_bound", brk.rate_rps, brk.output_tokens_per_s, None, brk.rate_rps, broken[0],
                        f"the sweep never met the SLO ({', '.join(broken)} broken at its lowest rate): capacity "
                        f"is below {brk.rate_rps:.4g} requests/s")
    meet = ordered[first_break - 1]
    fraction, binding = _fraction(meet, brk, targets, broken)
    rate = meet.rate_rps + (brk.rate_rps - meet.rate_rps) * fraction
    return Capacity("interpolated", rate, _lerp(meet.output_tokens_per_s, brk.output_tokens_per_s, fraction),
                    meet.rate_rps, brk.rate_rps, binding,
                    f"{binding} reaches its limit between {meet.rate_rps:.4g} and {brk.rate_rps:.4g} requests/s")


def per_replica_and_gpu(capacity: Capacity, replicas: int, gpus_per_replica: int) -> dict[str, float | None]:
    """The capacity per replica and per GPU, in requests/s and output tokens/s.

    ``per replica = total / replicas``; ``per GPU = total / (replicas · gpus_per_replica)``.
    """
    gpus = replicas * gpus_per_replica

    def share(value: float | None, n: int) -> float | None:
        return None if value is None else value / n

    return {
        "requests_per_s_per_replica": share(capacity.requests_per_s, replicas),
        "output_tokens_per_s_per_replica": share(capacity.output_tokens_per_s, replicas),
        "requests_per_s_per_gpu": share(capacity.requests_per_s, gpus),
        "output_tokens_per_s_per_gpu": share(capacity.output_tokens_per_s, gpus),
    }


# --------------------------------------------------------------------------- runs -> sweeps


def sweep_points(runs: Iterable[Mapping[str, Any]], percentile: int) -> list[SweepPoint]:
    """One :class:`SweepPoint` per target rate of the open-loop runs (rows of ``load_tests``).

    Repeated runs at one target rate merge to the worst case: lowest achieved rate and throughput,
    highest latency and error rate.
    """
    by_rate: dict[float, list[SweepPoint]] = {}
    for run in runs:
        if is_closed_loop(run["arrival_process"]) or not run.get("target_requests_per_s"):
            continue
        rate = float(run["target_requests_per_s"])
        by_rate.setdefault(rate, []).append(SweepPoint(
            rate_rps=float(run["requests_per_s"]), output_tokens_per_s=run.get("output_tokens_per_s"),
            ttft_ms=run.get(f"ttft_p{percentile}_ms"), tpot_ms=run.get(f"tpot_p{percentile}_ms"),
            error_rate=error_rate(run["completed_requests"], run.get("failed_requests"))))
    return [_worst(same) for _, same in sorted(by_rate.items())]


def _worst(points: list[SweepPoint]) -> SweepPoint:
    def most(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return max(known) if known else None

    throughputs = [p.output_tokens_per_s for p in points if p.output_tokens_per_s is not None]
    return SweepPoint(min(p.rate_rps for p in points), min(throughputs) if throughputs else None,
                      most([p.ttft_ms for p in points]), most([p.tpot_ms for p in points]),
                      max(p.error_rate for p in points))


def closed_loop_ceiling(runs: Iterable[Mapping[str, Any]]) -> dict[str, float] | None:
    """The highest request and output-token throughput of the closed-loop runs, or ``None`` if none."""
    closed = [r for r in runs if is_closed_loop(r["arrival_process"])]
    if not closed:
        return None
    return {"requests_per_s": max(r["requests_per_s"] for r in closed),
            "output_tokens_per_s": max((r.get("output_tokens_per_s") or 0.0) for r in closed)}


def _same_mix(run: Mapping[str, Any], first: Mapping[str, Any]) -> bool:
    for side in ("input_tokens_mean", "output_tokens_mean"):
        a, b = run.get(side), first.get(side)
        if (a is None) != (b is None) or (a is not None and b and abs(a / b - 1.0) > MIX_TOLERANCE_FRACTION):
            return False
    return True


def group_sweeps(runs: Iterable[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Runs of one setup (:data:`SETUP_COLUMNS`) and one token mix, each group a sweep, in input order.

    A run joins the first group of its setup whose first run's mean input and output tokens are both
    within :data:`MIX_TOLERANCE_FRACTION` of its own.
    """
    groups: list[list[Mapping[str, Any]]] = []
    for run in runs:
        setup = tuple(run.get(c) for c in SETUP_COLUMNS)
        home = next((g for g in groups if tuple(g[0].get(c) for c in SETUP_COLUMNS) == setup and _same_mix(run, g[0])),
                    None)
        if home is None:
            groups.append([run])
        else:
            home.append(run)
    return groups


def sweep_summary(runs: Sequence[Mapping[str, Any]], targets: SloTargets) -> dict[str, Any]:
    """A sweep's setup, capacity (total, per replica, per GPU), closed-loop ceiling, flags and cleanliness.

    Each run carries ``flags``: the :meth:`capplan.loadtest.hygiene.Flag.to_dict` of its flags. A sweep
    is ``clean`` when its capacity is interpolated and no run is flagged: the plan may then call its
    throughput measured (issue 17).
    """
    first = runs[0]
    capacity = capacity_at_slo(sweep_points(runs, targets.percentile), targets)
    flags = sorted({f["name"] for r in runs for f in r["flags"]})
    return {
        "setup": {c: first.get(c) for c in SETUP_COLUMNS},
        "input_tokens_mean": first.get("input_tokens_mean"), "output_tokens_mean": first.get("output_tokens_mean"),
        "runs": [f"{r['file_path']}#{r['run_index']}" for r in runs],
        "capacity": capacity.to_dict(),
        **per_replica_and_gpu(capacity, first["replicas"], first["gpus_per_replica"]),
        "closed_loop_ceiling": closed_loop_ceiling(runs),
        "flags": flags,
        "clean": capacity.kind == "interpolated" and not flags,
    }
