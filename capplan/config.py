"""capplan's configuration: one TOML file parsed once into typed, validated objects.

``load_config(path)`` reads ``capplan.toml`` (see ``data/capplan.toml`` for a
documented example), resolves relative paths against the file's folder and
returns a :class:`CapplanConfig`. A bad value raises :class:`ConfigError`
naming the key, the value and what was expected. Every assumed figure
(GPU throughput, prices, KV sizes, utilisation targets) is a named field with a
description, so reports can list it as *assumed* beside the *measured* figures.

Each stage owns its section class below; add fields there, with a
``description``, units in the name (``_s``, ``_ms``, ``_usd``, ``_fraction``) and the
unit declared once as ``json_schema_extra={"unit": ...}`` (read by :func:`field_unit`,
e.g. for the report's assumptions table). A new ``[sizing]`` setting is a field of
:class:`SizingConfig` with the name of a :class:`capplan.sizing.fleet.FleetSpec` field:
:meth:`SizingConfig.fleet_spec` copies it across by name.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from capplan.sizing.catalogue import DATA_DIR, GPU_CATALOGUE, MODEL_CATALOGUE

if TYPE_CHECKING:
    from capplan.sizing.fleet import FleetSpec


class ConfigError(ValueError):
    """A configuration value is missing, of the wrong type or out of range."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


#: What :func:`field_unit` gives for a field without a unit (a name, a path, a choice).
NO_UNIT = "—"


def field_unit(section: type[BaseModel], name: str) -> str:
    """The unit declared on ``section``'s field ``name`` (``json_schema_extra={"unit": ...}``), else :data:`NO_UNIT`."""
    extra = section.model_fields[name].json_schema_extra
    return extra.get("unit", NO_UNIT) if isinstance(extra, dict) else NO_UNIT


class DatabaseConfig(_Section):
    path: Path = Field(Path("capplan.duckdb"), description="DuckDB database file (created if missing).")


class SourceConfig(_Section):
    """One source of request logs and how its columns map to the canonical row."""

    name: str = Field(description="Source name recorded in the ingest ledger.")
    paths: list[str] = Field(default_factory=list, description="Files or glob patterns.")
    preset: str = Field("canonical", description="Column-mapping preset: 'canonical' or 'azure'.")
    columns: dict[str, str] = Field(default_factory=dict, description="canonical column -> source column.")
    timestamp_unit: Literal["s", "ms", "us"] | None = Field(None, description="Unit of numeric timestamps.")
    origin: str | None = Field(None, description="ISO timestamp that relative timestamps count from.")
    timezone: str | None = Field(None, description="IANA zone of naive timestamps (default UTC).")
    model: str | None = Field(None, min_length=1, description="Model name of rows that have none (no model column, "
                                                             "or an empty value); default 'default'.")


class IngestConfig(_Section):
    sources: list[SourceConfig] = Field(default_factory=list)
    context_limit_tokens: int = Field(
        131_072, gt=0, description="Rows with input+output tokens above this are quarantined.",
        json_schema_extra={"unit": "tokens"})
    on_changed_file: Literal["refuse", "replace"] = Field(
        "refuse", description="What to do when a path already ingested now has different content.")
    future_tolerance_s: float = Field(
        300.0, ge=0, description="Rows stamped later than ingest time plus this are quarantined.",
        json_schema_extra={"unit": "s"})
    duplicate_id_window_s: float | None = Field(
        86_400.0, gt=0, description="A request id already loaded from another file makes a row a duplicate when "
                                    "that earlier row arrived within this many seconds of the file's time span: "
                                    "only that slice of `requests` is read, so the check does not grow with the "
                                    "database; null compares with every id ever loaded.",
                                    json_schema_extra={"unit": "s"})
    contract_check: Literal["sample", "all", "off"] = Field(
        "sample", description="Re-validate loaded rows against the pandera RequestRow contract: the first "
                              "contract_sample_rows of each file, every row (in bounded chunks), or not at all.")
    contract_sample_rows: int = Field(
        100_000, gt=0, description="Rows per file in the contract sample, and rows per chunk.",
        json_schema_extra={"unit": "rows"})
    allow_all_quarantined: bool = Field(
        False, description="Load a file whose every row is quarantined (its rows go to `quarantine`, status "
                           "'loaded'); by default such a file is rolled back, status 'all_quarantined', a failure.")
    memory_limit_mib: int | None = Field(
        1024, gt=0, description="DuckDB memory limit while a file is ingested: the duplicate-id hash table and "
                                "the inserts spill to disk beyond it, so peak memory does not grow with the "
                                "file; a lower limit already set on the database is kept; null keeps DuckDB's "
                                "own limit (80 % of RAM).", json_schema_extra={"unit": "MiB"})


class ProfileConfig(_Section):
    ttft_threshold_ms: float = Field(
        2_000.0, gt=0, description="A request is 'good' if successful and TTFT <= this.",
        json_schema_extra={"unit": "ms"})
    empty_hours: Literal["missing", "zero"] = Field(
        "missing", description="Hours with no rows inside the span: a logging gap or true zero traffic.")


class ForecastConfig(_Section):
    horizon_months: int = Field(3, ge=1, le=24, description="How many months ahead to plan.",
                                json_schema_extra={"unit": "months"})
    levels: tuple[int, ...] = Field((80, 95), description="Prediction-interval levels.",
                                    json_schema_extra={"unit": "%"})


class SizingConfig(_Section):
    gpu: str = Field("H100-SXM-80GB", description="GPU type, a key of the GPU catalogue.")
    model: str = Field("llama-3.1-8b", description="Model architecture, a key of the model catalogue.")
    gpu_catalogue: Path = Field(GPU_CATALOGUE, description="GPU catalogue (TOML).")
    model_catalogue: Path = Field(MODEL_CATALOGUE, description="Model catalogue (TOML).")
    target_utilisation: float = Field(
        0.6, gt=0, le=1, description="ASSUMED share of per-GPU peak throughput and KV slots used at peak load.",
        json_schema_extra={"unit": "fraction"})
    spares: int = Field(1, ge=0, description="N+k: spare GPUs (or replicas) beyond the need.",
                        json_schema_extra={"unit": "count"})
    zones: int = Field(1, ge=1, description="Availability zones the fleet is spread over.",
                       json_schema_extra={"unit": "count"})
    zones_lost: int = Field(0, ge=0, description="Zones whose loss the fleet must survive.",
                            json_schema_extra={"unit": "count"})
    growth_safety_factor: float = Field(1.0, ge=1, description="Multiplier for forecast error.",
                                        json_schema_extra={"unit": "ratio"})
    rollout_surge_fraction: float = Field(
        0.0, ge=0, description="Extra capacity during rolling deploys.",
        json_schema_extra={"unit": "fraction of need"})
    warm_pool_gpus: int = Field(0, ge=0, description="Idle pre-loaded GPUs kept for bursts.",
                                json_schema_extra={"unit": "count"})
    tensor_parallel: int | None = Field(
        None, ge=1, description="GPUs per replica; None = the smallest degree the model fits in.",
        json_schema_extra={"unit": "count"})
    kv_dtype: Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4"] = Field(
        "bf16", description="KV-cache element type.")
    weights_dtype: Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4"] = Field(
        "bf16", description="Model-weights element type.")
    memory_reserve_fraction: float = Field(
        0.1, ge=0, lt=1, description="ASSUMED GPU memory kept from the KV cache (activations, runtime).",
        json_schema_extra={"unit": "fraction"})
    kv_block_size_tokens: int = Field(16, ge=1, description="Paged-attention block size.",
                                      json_schema_extra={"unit": "tokens"})

    def fleet_spec(self, **overrides: Any) -> FleetSpec:
        """The :class:`~capplan.sizing.fleet.FleetSpec` of these settings; ``overrides`` (e.g. CLI flags) win.

        Every field but the catalogue paths is copied by name (``gpu`` and ``model`` are
        looked up in their catalogues); an override of ``None`` keeps the setting, and an
        override may also set a FleetSpec field that is not a setting (``seqs_per_gpu``, …).

        Raises
        ------
        capplan.sizing.catalogue.CatalogueError
            If the GPU or model key is not in its catalogue.
        TypeError
            If an override names no FleetSpec field.
        """
        from capplan.sizing.catalogue import get_gpu, get_model
        from capplan.sizing.fleet import FleetSpec

        settings = self.model_dump(exclude={"gpu_catalogue", "model_catalogue"})
        settings |= {name: value for name, value in overrides.items() if value is not None}
        unknown = set(settings) - {f.name for f in fields(FleetSpec)}
        if unknown:
            raise TypeError(f"no FleetSpec field named {', '.join(sorted(unknown))}")
        return FleetSpec(**settings | {"gpu": get_gpu(settings["gpu"], self.gpu_catalogue),
                                       "model": get_model(settings["model"], self.model_catalogue)})


_DTYPE = Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4"]

#: ``gpu`` / ``tensor_parallel`` value that asks for the cheapest choice (``capplan.sizing.choice``).
AUTO = "auto"
#: ``models`` entry of the pool that serves every log model no other pool names.
ANY_MODEL = "*"


class PoolConfig(_Section):
    """One serving pool (``[[pools]]``): the log models it serves and how its replicas are built.

    Every setting left out takes the ``[sizing]`` value (``interruptible_share``: ``[cost]``'s);
    resolution into whole pools is :func:`capplan.plan.pools.resolve_pools`.
    """

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="Pool name (report rows, file names).")
    models: list[str] = Field(
        default_factory=list, description="Log model names this pool serves; \"*\" takes every model no other "
                                          "pool names; empty = [name].")
    model: str | None = Field(None, description="Catalogue architecture the pool runs; default [sizing].model.")
    gpu: str | None = Field(None, description="GPU type (a catalogue key) or \"auto\" (cheapest that fits and "
                                              "meets the latency target); default [sizing].gpu.")
    tensor_parallel: int | Literal["auto"] | None = Field(
        None, description="GPUs per replica, or \"auto\" (smallest degree that fits; every degree that fits "
                          "when gpu = \"auto\"); default [sizing].tensor_parallel.",
        json_schema_extra={"unit": "count"})
    precision: _DTYPE | None = Field(None, description="Weights and KV-cache element type; default [sizing]'s.")
    target_utilisation: float | None = Field(None, gt=0, le=1, description="As [sizing].target_utilisation.",
                                             json_schema_extra={"unit": "fraction"})
    wait_target_s: float | None = Field(
        None, gt=0, description="Queueing-wait SLO the utilisation is derived from (overrides "
                                "target_utilisation).", json_schema_extra={"unit": "s"})
    latency_target_s: float | None = Field(
        None, gt=0, description="Mean latency at the target utilisation an automatic GPU choice must meet.",
        json_schema_extra={"unit": "s"})
    ttft_ms_max: float | None = Field(
        None, gt=0, description="Mean time to first token the operating batch must meet (performance model) and "
                                "the TTFT a load test is judged at; default: the smallest ttft_threshold_ms of the "
                                "[[slos]] covering the pool's models, else [profile].ttft_threshold_ms.", json_schema_extra={"unit": "ms"})
    tpot_ms_max: float | None = Field(
        None, gt=0, description="Mean time per output token the operating batch must meet; default: none.",
        json_schema_extra={"unit": "ms"})
    spares: int | None = Field(None, ge=0, description="As [sizing].spares.", json_schema_extra={"unit": "count"})
    zones: int | None = Field(None, ge=1, description="As [sizing].zones.", json_schema_extra={"unit": "count"})
    zones_lost: int | None = Field(None, ge=0, description="As [sizing].zones_lost.",
                                   json_schema_extra={"unit": "count"})
    growth_safety_factor: float | None = Field(None, ge=1, description="As [sizing].growth_safety_factor.",
                                               json_schema_extra={"unit": "ratio"})
    rollout_surge_fraction: float | None = Field(None, ge=0, description="As [sizing].rollout_surge_fraction.",
                                                 json_schema_extra={"unit": "fraction of need"})
    warm_pool_gpus: int | None = Field(None, ge=0, description="As [sizing].warm_pool_gpus.",
                                       json_schema_extra={"unit": "count"})
    interruptible_share: float | None = Field(
        None, ge=0, le=1, description="Share of this pool's requests that may run on spot; default: measured "
                                      "from [cost].interruptible_models/tenants, else [cost].interruptible_share.",
        json_schema_extra={"unit": "fraction"})


class CostConfig(_Section):
    price_book: Path = Field(DATA_DIR / "prices.toml", description="Price book (TOML), illustrative.")
    interruptible_share: float = Field(
        0.0, ge=0, le=1, description="Share of requests that tolerate spot interruption.",
        json_schema_extra={"unit": "fraction"})
    interruptible_models: list[str] = Field(
        default_factory=list, description="Models whose requests are batch/offline and may run on spot.")
    interruptible_tenants: list[str] = Field(
        default_factory=list, description="Tenants whose requests are batch/offline and may run on spot.")
    reserved_term: Literal["1y", "3y"] = Field("1y", description="Reservation term priced from the price book.")
    commit_level: str | None = Field(
        "P50", description="Forecast level whose optimal reserved count is committed to and priced at every "
                           "level (P10/P50/P90); \"\" optimises each level separately.")


class BurnRateAlertConfig(_Section):
    """One multi-window burn-rate alert rule (SRE Workbook ch. 5)."""

    severity: Literal["page", "ticket"] = Field(description="What the alert does: page a human or open a ticket.")
    long_window_minutes: int = Field(ge=1, description="Long window; gives significance.",
                                     json_schema_extra={"unit": "min"})
    short_window_minutes: int = Field(ge=1, description="Short window; lets the alert reset soon.",
                                      json_schema_extra={"unit": "min"})
    burn_rate_threshold: float = Field(gt=0, description="Both windows' burn rates must reach this.",
                                       json_schema_extra={"unit": "ratio"})


def _workbook_alerts() -> list[BurnRateAlertConfig]:
    return [
        BurnRateAlertConfig(severity="page", long_window_minutes=60, short_window_minutes=5, burn_rate_threshold=14.4),
        BurnRateAlertConfig(severity="page", long_window_minutes=360, short_window_minutes=30, burn_rate_threshold=6.0),
        BurnRateAlertConfig(severity="ticket", long_window_minutes=4320, short_window_minutes=360,
                            burn_rate_threshold=1.0),
    ]


class SloConfig(_Section):
    name: str = Field("availability", description="SLO name.")
    target: float = Field(0.999, gt=0, lt=1, description="Fraction of good events promised.",
                          json_schema_extra={"unit": "fraction"})
    window_days: int = Field(30, ge=1, description="Rolling window.", json_schema_extra={"unit": "days"})
    ttft_threshold_ms: float | None = Field(
        None, gt=0, description="If set, a good event also needs TTFT <= this.", json_schema_extra={"unit": "ms"})
    kind: Literal["request", "time"] = Field("request", description="Request-based or bad-minutes SLO.")
    model: str | None = Field(None, description="Only requests to this model count; None = all models.")
    count_client_errors: bool = Field(
        False, description="If false, 4xx other than 408 and 429 are not valid events (the caller's fault).")
    bad_minute_below_fraction: float = Field(
        0.99, gt=0, le=1,
        description="Time-based SLOs: a minute with traffic is bad if its good fraction is below this.",
        json_schema_extra={"unit": "fraction"})
    alerts: list[BurnRateAlertConfig] = Field(
        default_factory=_workbook_alerts,
        description="Multi-window burn-rate rules; default: the SRE Workbook's 14.4x/1h, 6x/6h pages, 1x/3d ticket.")


class DriftConfig(_Section):
    window_days: int = Field(7, ge=1, description="Comparison window length.", json_schema_extra={"unit": "days"})
    baseline_days: int = Field(28, ge=1, description="Baseline window length before it.",
                               json_schema_extra={"unit": "days"})
    psi_threshold: float = Field(
        0.02, gt=0,
        description="Population stability index a window must reach to alert; a +30 % shift of a log-normal "
                    "with sigma 1.0 gives 0.069, or 0.037 when the window holds it 5 days of 7.",
                    json_schema_extra={"unit": "dimensionless"})
    relative_mean_change_threshold: float = Field(
        0.1, gt=0, description="|mean(window)/mean(baseline) - 1| a window must reach to alert.",
        json_schema_extra={"unit": "fraction"})
    p_value_threshold: float = Field(
        1e-3, gt=0, lt=1, description="Two-sample (chi-square homogeneity) p-value a window must fall below.",
        json_schema_extra={"unit": "probability"})
    min_requests_per_window: int = Field(
        500, ge=1, description="Windows (or baselines) with fewer requests are not tested.",
        json_schema_extra={"unit": "requests"})


class ReportConfig(_Section):
    out_dir: Path = Field(Path("reports/out"), description="Reports go to <out_dir>/<YYYY-MM>/.")
    measured_window_days: int = Field(
        28, ge=1, description="The plan measures token lengths, latency and burst ratio over this many most "
                              "recent days of logs.", json_schema_extra={"unit": "days"})
    kv_tokens_quantile: float = Field(
        0.95, gt=0, lt=1, description="Quantile of input+output tokens each KV-cache slot is sized for.",
        json_schema_extra={"unit": "fraction"})
    assumed_latency_s: float | None = Field(
        None, gt=0, description="ASSUMED mean request latency when the logs have no latency_ms; None = model it "
                                "from TTFT and output tokens (capplan.sizing.latency).", json_schema_extra={"unit": "s"})


class ScheduleConfig(_Section):
    plan_cron: str = Field("0 6 1 * *", description="Cron for the monthly plan.")
    timezone: str = Field("UTC", description="IANA zone of the cron schedule.")
    ingest_cron: str = Field("0 5 * * *", description="Cron for the daily ingest of drop_folder.")
    drop_folder: Path | None = Field(None, description="Folder whose new files the daily ingest loads.")


class ClusterConfig(_Section):
    """Partitioned roll-ups (``capplan/partitioned/``) and where they run."""

    task_runner: Literal["none", "dask"] = Field(
        "none", description="Roll partitions up one after another in this process ('none') or in parallel on a "
                            "Dask cluster ('dask', prefect-dask's DaskTaskRunner).")
    scheduler_address: str | None = Field(
        None, description="Address of an existing Dask scheduler, e.g. 'tcp://10.0.0.5:8786'; None starts a "
                          "LocalCluster on this machine.")
    n_workers: int = Field(2, ge=1, description="LocalCluster worker processes.", json_schema_extra={"unit": "count"})
    threads_per_worker: int = Field(1, ge=1, description="LocalCluster threads per worker (partitions at once "
                                                         "per worker).", json_schema_extra={"unit": "count"})
    processes: bool = Field(
        False, description="LocalCluster workers are threads of this process (false: DuckDB runs outside the GIL, "
                           "and tasks reach Prefect's temporary server) or processes (true: needs PREFECT_API_URL "
                           "of a running Prefect server, or each worker starts its own).")
    duckdb_threads_per_partition: int | None = Field(
        None, ge=1, description="DuckDB threads a partition's roll-up may use; None = this machine's cores "
                                "shared over the partitions rolled up at once (all of a remote worker's).",
                                json_schema_extra={"unit": "count"})
    duckdb_memory_limit_gib: float | None = Field(
        None, gt=0, description="DuckDB memory limit per partition roll-up before it spills to disk; None = "
                                "DuckDB's default (80 % of RAM).", json_schema_extra={"unit": "GiB"})
    sources: list[SourceConfig] = Field(
        default_factory=list,
        description="Partitioned sources: each path is a Hive folder (dt=YYYY-MM-DD/...) or a file glob (one "
                    "partition per file). Their rows are rolled up per partition; only roll-ups reach the database.")


class MetricsSourceConfig(_Section):
    """One Prometheus server exporting an LLM engine's metrics (``[[metrics.sources]]``, docs/metrics.md)."""

    name: str = Field(description="Source name recorded in the metrics ledger.")
    url: str = Field(description="Prometheus base URL, e.g. http://prometheus:9090 (the API is under /api/v1).")
    bearer_token_file: Path | None = Field(None, description="File holding a bearer token sent as Authorization.")
    tls_verify: bool = Field(True, description="Verify the server's TLS certificate.")
    ca_file: Path | None = Field(None, description="CA bundle to verify the server's certificate against.")
    flavour: Literal["vllm", "sglang", "tgi"] = Field("vllm", description="Engine whose metric-name preset to use.")
    metric_names: dict[str, str] = Field(
        default_factory=dict, description="Overrides of the preset, role -> metric name (capplan.metrics.presets); a "
                                          "counter or gauge role may carry label matchers, e.g. "
                                          "'http_requests_total{code=~\"5..\"}'.")
    selector: str = Field("", description="PromQL label matchers added to every query, e.g. job=\"vllm\",env=\"prod\".")
    model_label: str = Field("model_name", description="Label naming the served model.")
    pool_label: str | None = Field(None, description="Label naming the pool or zone (kept in the ledger only).")
    step_s: int = Field(60, ge=1, le=3600, description="Query step; set it to the scrape interval (finest step).",
                        json_schema_extra={"unit": "s"})
    timeout_s: float = Field(30.0, gt=0, description="Timeout of one HTTP request.", json_schema_extra={"unit": "s"})
    retries: int = Field(2, ge=0, description="Retries of a query after a connection error, timeout or 5xx.",
                         json_schema_extra={"unit": "count"})
    max_points_per_query: int = Field(10_000, ge=2, le=11_000, description="Bound on samples per series per "
                                      "range query (Prometheus refuses more than 11,000).",
                                      json_schema_extra={"unit": "samples"})


class MetricsConfig(_Section):
    sources: list[MetricsSourceConfig] = Field(default_factory=list, description="Prometheus servers to ingest.")


class CapplanConfig(_Section):
    database: DatabaseConfig = DatabaseConfig()
    ingest: IngestConfig = IngestConfig()
    metrics: MetricsConfig = MetricsConfig()
    profile: ProfileConfig = ProfileConfig()
    forecast: ForecastConfig = ForecastConfig()
    sizing: SizingConfig = SizingConfig()
    cost: CostConfig = CostConfig()
    pools: list[PoolConfig] = Field(
        default_factory=list, description="Serving pools; none = each log model the catalogue knows is its own pool.")
    slos: list[SloConfig] = Field(default_factory=lambda: [SloConfig()])
    drift: DriftConfig = DriftConfig()
    report: ReportConfig = ReportConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    cluster: ClusterConfig = ClusterConfig()


def _format_error(err: dict[str, Any], source: str) -> str:
    key = ".".join(str(p) for p in err["loc"])
    value = err.get("input")
    return f"{source}: key {key!r} = {value!r}: {err['msg']}"


def _resolve_paths(obj: Any, base: Path) -> Any:
    """Return ``obj`` with every relative ``Path`` field made relative to ``base``."""
    if isinstance(obj, BaseModel):
        updates = {name: _resolve_paths(getattr(obj, name), base) for name in type(obj).model_fields}
        return obj.model_copy(update=updates)
    if isinstance(obj, list):
        return [_resolve_paths(v, base) for v in obj]
    if isinstance(obj, Path) and not obj.is_absolute():
        return base / obj
    return obj


def parse_config(data: dict[str, Any], *, source: str = "<config>", base_dir: Path | None = None) -> CapplanConfig:
    """Validate a config mapping; relative paths are resolved against ``base_dir``."""
    try:
        cfg = CapplanConfig.model_validate(data)
    except ValidationError as exc:
        lines = [_format_error(e, source) for e in exc.errors()]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None
    return _resolve_paths(cfg, base_dir) if base_dir is not None else cfg


def load_config(path: str | Path | None) -> CapplanConfig:
    """Read and validate a TOML config file; ``None`` gives the defaults."""
    if path is None:
        return CapplanConfig()
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    return parse_config(data, source=str(p), base_dir=p.resolve().parent)


def dump_config(cfg: CapplanConfig) -> dict[str, Any]:
    """The resolved config as plain data (paths as strings), for writing beside outputs."""
    return cfg.model_dump(mode="json")
