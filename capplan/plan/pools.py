"""Serving pools: the config's ``[[pools]]`` (or one pool per log model) resolved into whole pools.

A pool is a set of log models served by replicas of one architecture on one GPU type. Every
setting a ``[[pools]]`` entry leaves out is the ``[sizing]`` value (``interruptible_share``:
``[cost]``'s). Without ``[[pools]]`` each log model is its own pool; a log model the model
catalogue does not know is sized as ``[sizing].model`` and named in the report
(:attr:`Pool.default_architecture`). A log model no pool serves is an error naming it and the
config line that would fix it.

:func:`pool_fleet_spec` is the one place a pool's :class:`~capplan.sizing.fleet.FleetSpec` is built
(for its plan, for every candidate of an automatic GPU choice and for a past month's actuals); its
per-GPU throughput is measured, calibrated, modelled or assumed (:func:`estimate_pool_throughput`,
``capplan/plan/throughput.py``) at the pool's measured token mix and latency targets. :func:`pool_traffic` sums the
profile's hourly traffic over a pool's models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import pandas as pd

from capplan.config import ANY_MODEL, AUTO, CapplanConfig, PoolConfig
from capplan.plan.inputs import MeasuredInputs
from capplan.profile import ALL_MODELS, hourly_traffic
from capplan.sizing.catalogue import load_gpus, load_models
from capplan.sizing.cost.prices import load_price_book
from capplan.plan.throughput import ThroughputEstimate, pool_throughput
from capplan.sizing.fleet import FleetSpec, tensor_parallel_for
from capplan.sizing.memory import TENSOR_PARALLEL_DEGREES

#: Tensor-parallel degrees an automatic choice tries: one node of up to 8 GPUs. [GPUs/replica]
AUTO_TENSOR_PARALLEL = tuple(d for d in TENSOR_PARALLEL_DEGREES if d <= 8)
#: :class:`~capplan.config.PoolConfig` fields copied onto the pool's FleetSpec when set.
_SPEC_FIELDS = ("target_utilisation", "wait_target_s", "spares", "zones", "zones_lost", "growth_safety_factor",
                "rollout_surge_fraction", "warm_pool_gpus")


class PoolError(ValueError):
    """The pools do not cover the log models, or a ``[[pools]]`` entry contradicts another."""


@dataclass(frozen=True)
class Pool:
    """One resolved pool.

    Attributes
    ----------
    name : str
        Pool name (report rows, file names).
    models : tuple of str
        The log models it serves (present in the logs).
    model : str
        Catalogue architecture it is sized as.
    gpu : str
        GPU catalogue key, or ``"auto"``.
    tensor_parallel : int, "auto" or None
        GPUs per replica; ``None``: the smallest degree that fits.
    settings : dict
        FleetSpec settings that differ from ``[sizing]`` (headroom, precision).
    interruptible_share : float or None
        The pool's spot share when set; else measured or ``[cost]``'s. [fraction]
    latency_target_s : float or None
        Mean latency an automatic GPU choice must meet. [s]
    ttft_ms_max, tpot_ms_max : float or None
        The pool's own latency targets for its operating batch and its load tests, when set
        (:func:`pool_latency_targets` adds the SLOs' TTFT). [ms]
    default_architecture : bool
        True when ``model`` is ``[sizing].model`` because nothing named the architecture.
    origin : str
        Where the pool came from, for messages (``[[pools]] #2 name = "chat"`` or ``one pool per log model``).
    """

    name: str
    models: tuple[str, ...]
    model: str
    gpu: str
    tensor_parallel: int | str | None
    settings: dict[str, Any] = field(default_factory=dict)
    interruptible_share: float | None = None
    latency_target_s: float | None = None
    ttft_ms_max: float | None = None
    tpot_ms_max: float | None = None
    default_architecture: bool = False
    origin: str = "one pool per log model"

    @property
    def is_auto(self) -> bool:
        """Whether the GPU type (or the TP degree among several) is chosen by :func:`capplan.sizing.choice.choose_gpu`."""
        return self.gpu == AUTO


def resolve_pools(cfg: CapplanConfig, log_models: list[str]) -> list[Pool]:
    """The pools that serve ``log_models`` (the models in the logs), in config order.

    Raises
    ------
    PoolError
        A log model no pool serves (naming the model and the line to add), a model named by
        two pools, two ``"*"`` pools, a repeated pool name, or no pool with traffic.
    """
    log_models = sorted(set(log_models) - {ALL_MODELS})
    if not cfg.pools:
        known = load_models(cfg.sizing.model_catalogue)
        known_lower = {k.lower() for k in known}
        return [Pool(name=m, models=(m,), model=m if m.lower() in known_lower else cfg.sizing.model,
                     gpu=cfg.sizing.gpu, tensor_parallel=cfg.sizing.tensor_parallel,
                     default_architecture=m.lower() not in known_lower) for m in log_models]
    names = [p.name for p in cfg.pools]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise PoolError(f"[[pools]] name {repeated[0]!r} is used by more than one pool; pool names must be unique")
    wildcard = [p.name for p in cfg.pools if ANY_MODEL in p.models]
    if len(wildcard) > 1:
        raise PoolError(f'[[pools]] {wildcard[0]!r} and {wildcard[1]!r} both list models = ["*"]; only one pool '
                        "may take the models no other pool names")
    owner: dict[str, str] = {}
    for p in cfg.pools:
        for m in (p.models or [p.name]):
            if m == ANY_MODEL:
                continue
            if m in owner:
                raise PoolError(f"log model {m!r} is listed by two pools, {owner[m]!r} and {p.name!r}; "
                                "a model is served by exactly one pool")
            owner[m] = p.name
    unserved = [m for m in log_models if m not in owner]
    if unserved and not wildcard:
        m = unserved[0]
        raise PoolError(
            f"log model {m!r} is served by no pool: add it to a pool, e.g. models = [..., {m!r}] under "
            f"[[pools]] name = {cfg.pools[0].name!r}, or add a pool that takes the rest: "
            f'[[pools]] name = "rest", models = ["*"]'
            + (f" (also unserved: {', '.join(unserved[1:])})" if len(unserved) > 1 else ""))
    pools = []
    for i, p in enumerate(cfg.pools, start=1):
        listed = [m for m in (p.models or [p.name]) if m != ANY_MODEL]
        served = tuple(m for m in log_models if m in listed or (ANY_MODEL in p.models and m in unserved))
        if not served:
            continue  # no traffic in the logs: nothing to forecast (named by unused_pools)
        pools.append(_pool_of(cfg, i, p, served))
    if not pools:
        raise PoolError(f"no [[pools]] entry serves a model in the logs ({', '.join(log_models) or 'none'})")
    return pools


def _pool_of(cfg: CapplanConfig, i: int, p: PoolConfig, served: tuple[str, ...]) -> Pool:
    """The :class:`Pool` of ``[[pools]]`` entry ``i`` (1-based) serving ``served``; unset fields from ``[sizing]``."""
    settings = {name: getattr(p, name) for name in _SPEC_FIELDS if getattr(p, name) is not None}
    if p.precision is not None:
        settings |= {"weights_dtype": p.precision, "kv_dtype": p.precision}
    return Pool(
        name=p.name, models=served, model=p.model or cfg.sizing.model, gpu=p.gpu or cfg.sizing.gpu,
        tensor_parallel=p.tensor_parallel if p.tensor_parallel is not None else cfg.sizing.tensor_parallel,
        settings=settings, interruptible_share=p.interruptible_share, latency_target_s=p.latency_target_s,
        ttft_ms_max=p.ttft_ms_max, tpot_ms_max=p.tpot_ms_max, default_architecture=p.model is None, origin=f"[[pools]] #{i} name = {p.name!r}")


def config_pools(cfg: CapplanConfig) -> list[Pool]:
    """Every ``[[pools]]`` entry as a pool, without logs (``capplan size --pools``): each serves the models it lists.

    Without ``[[pools]]``, one pool of the ``[sizing]`` settings, named after ``[sizing].model``.
    """
    if not cfg.pools:
        return [Pool(name=cfg.sizing.model, models=(cfg.sizing.model,), model=cfg.sizing.model, gpu=cfg.sizing.gpu,
                     tensor_parallel=cfg.sizing.tensor_parallel, origin="[sizing]")]
    return [_pool_of(cfg, i, p, tuple(p.models or [p.name])) for i, p in enumerate(cfg.pools, start=1)]


def catalogue_model_of(model_id: str, catalogue: list[str]) -> str | None:
    """The catalogue model a served model id names, or ``None``.

    A load-test tool records the id the server was started with (a Hugging Face repository as
    a rule): its last path segment, lower-cased and without a leading ``meta-``, is the
    catalogue key or starts with it and a dash (``meta-llama/Meta-Llama-3.1-8B-Instruct-FP8``
    → ``llama-3.1-8b``). The longest matching key wins.
    """
    name = model_id.rsplit("/", 1)[-1].lower().removeprefix("meta-")
    matches = [k for k in catalogue if name == k.lower() or name.startswith(k.lower() + "-")]
    return max(matches, key=len) if matches else None


def pool_for_model_id(cfg: CapplanConfig, model_id: str | None) -> str | None:
    """The pool a load-test run measured, from the model id it records (``capplan loadtest import``
    without ``--pool``; docs/loadtests.md).

    In order: the pool whose ``models`` list the id; the pool that runs (``model``) or serves the
    catalogue model the id names (:func:`catalogue_model_of`), the first in config order; else
    the config's only or first pool. Without ``[[pools]]`` the pools are the log models, named
    as in the logs: the catalogue model the id names, else the id itself.
    """
    if not model_id:
        return cfg.pools[0].name if cfg.pools else None
    key = catalogue_model_of(model_id, list(load_models(cfg.sizing.model_catalogue)))
    if not cfg.pools:
        return key or model_id
    for p in cfg.pools:
        if model_id in p.models:
            return p.name
    if key is not None:
        for p in cfg.pools:
            if (p.model or cfg.sizing.model) == key or key in p.models:
                return p.name
    return cfg.pools[0].name


def unused_pools(cfg: CapplanConfig, pools: list[Pool]) -> list[str]:
    """Names of ``[[pools]]`` entries that serve no model in the logs (left out of the plan)."""
    kept = {p.name for p in pools}
    return [p.name for p in cfg.pools if p.name not in kept]


def pool_notes(pools: list[Pool]) -> list[str]:
    """Report notes: every log model sized with the default architecture."""
    return [f"pool {p.name}: log model(s) {', '.join(p.models)} sized as the default architecture {p.model} "
            "([sizing].model): name its architecture with model = ... under [[pools]]"
            for p in pools if p.default_architecture]


def pool_latency_targets(cfg: CapplanConfig, pool: Pool) -> tuple[float | None, float | None]:
    """``(ttft_ms_max, tpot_ms_max)`` of ``pool``: its own, else TTFT from the SLOs that cover its models. [ms]

    The TTFT target is the pool's ``ttft_ms_max``, else the smallest ``ttft_threshold_ms`` of the
    ``[[slos]]`` whose ``model`` is one of the pool's log models or unset (every model), else
    ``[profile].ttft_threshold_ms`` (what the profile calls a good request; the default of
    ``capplan loadtest show`` too). TPOT has no SLO field: only the pool's ``tpot_ms_max``.
    """
    if pool.ttft_ms_max is not None:
        ttft = pool.ttft_ms_max
    else:
        covering = [s.ttft_threshold_ms for s in cfg.slos
                    if s.ttft_threshold_ms is not None and (s.model is None or s.model in pool.models)]
        ttft = min(covering) if covering else cfg.profile.ttft_threshold_ms
    return ttft, pool.tpot_ms_max


def token_mix_of(measured: MeasuredInputs) -> tuple[object, object]:
    """The pool's measured input and output token mix for the performance model: the histograms
    ``(bin centres, counts)`` of its measuring window when the profile has them, else the means. [tokens]"""
    if measured.input_tokens_histogram is not None and measured.output_tokens_histogram is not None:
        return measured.input_tokens_histogram, measured.output_tokens_histogram
    return measured.input_tokens_per_request, measured.output_tokens_per_request


def estimate_pool_throughput(cfg: CapplanConfig, pool: Pool, spec: FleetSpec, measured: MeasuredInputs,
                             load_tests: pd.DataFrame | None = None) -> ThroughputEstimate:
    """The per-GPU throughput of ``pool`` on ``spec``'s GPU and TP (:func:`capplan.plan.throughput.pool_throughput`):
    a clean load test → measured; one at another token mix → calibrated; else the performance model at the
    pool's measured token mix and latency targets → modelled; else the catalogue → assumed.

    Raises
    ------
    ValueError
        If the model fits the GPU at no tensor-parallel degree.
    """
    ttft_ms_max, tpot_ms_max = pool_latency_targets(cfg, pool)
    input_tokens, output_tokens = token_mix_of(measured)
    runs = _load_tests_of(cfg, pool, spec, load_tests)
    return pool_throughput(runs, pool=pool.name, model=spec.model, gpu=spec.gpu,
                           tensor_parallel=tensor_parallel_for(spec, measured.kv_tokens_per_sequence),
                           precision=spec.weights_dtype, input_tokens=input_tokens, output_tokens=output_tokens,
                           tpot_ms_max=tpot_ms_max, ttft_ms_max=ttft_ms_max)


def _load_tests_of(cfg: CapplanConfig, pool: Pool, spec: FleetSpec,
                   load_tests: pd.DataFrame | None) -> pd.DataFrame | None:
    """The stored runs that can stand for ``pool`` on ``spec``'s replica: not a run of another catalogue model
    (its ``model_id``, :func:`catalogue_model_of`), and, when the pool's GPU is chosen (``"auto"``), only runs
    whose GPU is known (the file's or ``loadtest import --gpu``): an unnamed GPU cannot stand for every candidate."""
    if load_tests is None or load_tests.empty:
        return load_tests
    catalogue = list(load_models(cfg.sizing.model_catalogue))
    named = load_tests["model_id"].map(lambda m: catalogue_model_of(m, catalogue) if isinstance(m, str) else None)
    keep = named.isna() | (named == spec.model.key)
    if pool.gpu == AUTO:
        keep &= load_tests["gpu"].map(lambda g: isinstance(g, str) and g != "")
    return load_tests[keep]


def pool_fleet_spec(cfg: CapplanConfig, pool: Pool, gpu: str | None = None, tensor_parallel: int | None = None,
                    measured: MeasuredInputs | None = None, load_tests: pd.DataFrame | None = None) -> FleetSpec:
    """The :class:`~capplan.sizing.fleet.FleetSpec` of ``pool`` on ``gpu`` × ``tensor_parallel``.

    ``gpu`` and ``tensor_parallel`` default to the pool's (for an automatic pool, the
    candidate being sized). The one builder of a pool's sizing record, for its plan, for every
    candidate of an automatic GPU choice and for the actuals of a past month: with ``measured``
    (the pool's request mix) the per-GPU throughput is :func:`estimate_pool_throughput`'s, with
    ``load_tests`` (rows of ``load_tests``, :func:`capplan.plan.throughput.load_tests_for_plan`)
    taken into account; without ``measured``, the catalogue's ASSUMED rate. A flat
    ``gpu_output_tokens_per_s`` in the pool's settings is used as given (assumed).

    Raises
    ------
    ValueError
        If the model fits the GPU at no tensor-parallel degree (with ``measured``).
    """
    return pool_spec_and_throughput(cfg, pool, gpu, tensor_parallel, measured, load_tests)[0]


def pool_spec_and_throughput(cfg: CapplanConfig, pool: Pool, gpu: str | None = None,
                             tensor_parallel: int | None = None, measured: MeasuredInputs | None = None,
                             load_tests: pd.DataFrame | None = None,
                             ) -> tuple[FleetSpec, ThroughputEstimate | None]:
    """:func:`pool_fleet_spec` and the :class:`~capplan.plan.throughput.ThroughputEstimate` it was built from
    (``None`` without ``measured``), for a report that names what the throughput rests on."""
    gpu = gpu or pool.gpu
    if gpu == AUTO:
        raise ValueError(f"pool {pool.name!r} has gpu = \"auto\": size it on a candidate GPU (choose_pool_gpu)")
    tp = tensor_parallel if tensor_parallel is not None else pool.tensor_parallel
    spec = cfg.sizing.fleet_spec(gpu=gpu, model=pool.model, tensor_parallel=None if tp == AUTO else tp,
                                 **pool.settings)
    if measured is None or spec.gpu_output_tokens_per_s is not None:
        return spec, None  # no token mix to model, or a flat rate given explicitly: it is used as given
    estimate = estimate_pool_throughput(cfg, pool, spec, measured, load_tests)
    return estimate.applied_to(spec, tensor_parallel_for(spec, measured.kv_tokens_per_sequence)), estimate


def gpu_options(cfg: CapplanConfig, pool: Pool) -> list[tuple[str, int | None]]:
    """The (GPU, TP) pairs an automatic pool tries: every catalogue GPU the price book prices, and every TP
    degree when TP is auto too (a GPU without a price cannot be compared, so it is not a candidate).

    A fixed GPU with ``tensor_parallel = "auto"`` is one option, the smallest degree that fits (``None``).
    """
    gpus = priced_gpus(cfg) if pool.is_auto else [pool.gpu]
    if pool.tensor_parallel == AUTO and pool.is_auto:
        return [(g, tp) for g in gpus for tp in AUTO_TENSOR_PARALLEL]
    tp = None if pool.tensor_parallel in (None, AUTO) else int(pool.tensor_parallel)
    return [(g, tp) for g in gpus]


def priced_gpus(cfg: CapplanConfig) -> list[str]:
    """GPU catalogue keys that the price book prices, sorted."""
    return sorted(set(load_gpus(cfg.sizing.gpu_catalogue)) & set(load_price_book(cfg.cost.price_book).gpus))


def pool_traffic(by_model: pd.DataFrame, pool: Pool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hourly traffic of a pool, summed over its models, and its daily peak and mean.

    ``by_model`` is :func:`capplan.profile.hourly_traffic` of every model. Per hour:
    ``requests``, ``avg_qps`` and ``concurrency_littles`` add exactly (L = Σ λ_m W_m); ``peak_second_qps``
    and ``concurrency_measured_peak`` add to an upper band (the models' peaks need not
    coincide), so a pool of several models errs towards a larger burst ratio. An hour is a
    gap only when every model of the pool lacks it; a model's hours outside its span add 0.
    """
    rows = by_model[by_model["model"].isin(pool.models)]
    if rows.empty:
        raise PoolError(f"pool {pool.name!r}: no hourly traffic for its models {', '.join(pool.models)}")
    measures = ["requests", "avg_qps", "peak_second_qps", "concurrency_littles", "concurrency_measured_peak"]
    rows = rows.astype({m: float for m in measures})
    wide = rows.pivot_table(index="hour_utc", columns="model", values=measures, aggfunc="sum", dropna=False)
    hours = pd.date_range(rows["hour_utc"].min(), rows["hour_utc"].max(), freq="h", name="hour_utc")
    hourly = pd.DataFrame({m: wide[m].astype(float).reindex(hours).sum(axis=1, min_count=1) for m in measures})
    # an hour's observed seconds belong to the data's span, the same for every model: the largest of them
    exposure = rows.pivot_table(index="hour_utc", columns="model", values="exposure_s", aggfunc="max")
    hourly["exposure_s"] = exposure.reindex(hours).max(axis=1)
    gaps = rows.pivot_table(index="hour_utc", columns="model", values="is_gap", aggfunc="all").reindex(hours)
    hourly["is_gap"] = gaps.fillna(True).astype(bool).all(axis=1)
    hourly = hourly.reset_index()
    daily = hourly.groupby(hourly["hour_utc"].dt.floor("D").rename("day")).agg(
        peak_qps=("peak_second_qps", "max"), avg_qps=("avg_qps", "mean")).reset_index()
    return hourly, daily


def read_model_traffic(con: duckdb.DuckDBPyConnection, cfg: CapplanConfig) -> pd.DataFrame:
    """Hourly traffic of every log model (not ``__all__``) from the profile roll-ups, read-only."""
    hourly = hourly_traffic(con, empty_hours=cfg.profile.empty_hours)
    return hourly[hourly["model"] != ALL_MODELS].reset_index(drop=True)


__all__ = ["AUTO_TENSOR_PARALLEL", "Pool", "PoolError", "config_pools", "estimate_pool_throughput", "gpu_options",
           "pool_fleet_spec", "pool_latency_targets", "pool_notes", "pool_spec_and_throughput", "pool_traffic", "priced_gpus", "read_model_traffic",
           "resolve_pools", "token_mix_of", "unused_pools"]
