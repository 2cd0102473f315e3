"""Readers of load-test result files: one parser per tool, each giving :class:`LoadTestRun` records.

Supported layouts (keys, units and quirks in docs/loadtests.md):

* ``vllm``: ``vllm bench serve`` / ``benchmark_serving.py`` result JSON (one object, or one per line
  with ``--append-result``); the older script's ``"request_goodput:"`` key is tolerated.
* ``sglang``: ``python -m sglang.bench_serving`` JSONL, one run per line; ``Infinity`` rates.
* ``guidellm``: ``benchmarks.json`` report v2 (``metadata.version == 2``), and the older layout whose
  benchmarks hold ``args`` and ``run_stats``; ``request_latency`` is in seconds, ``*_ms`` in ms.
* ``aiperf`` / ``genai-perf``: ``profile_export_aiperf.json`` / ``profile_export_genai_perf.json``,
  metrics at the top level or under ``records`` (earlier AIPerf).
* ``llmperf``: ray-project llmperf ``*_summary.json`` (closed loop; times in seconds).

Every figure is converted to the units in the field names: times [ms], rates [requests/s],
throughput [tokens/s], lengths [tokens/request]. A file no parser recognises, or a recognised
layout without a key it needs, raises :class:`LoadTestFormatError` naming the file and the key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TOOLS = ("vllm", "sglang", "guidellm", "aiperf", "genai-perf", "llmperf")
"""Tools whose result files :func:`read_runs` parses (``--tool``); ``auto`` detects the layout."""
ARRIVAL_PROCESSES = ("poisson", "gamma", "constant", "concurrency", "burst")
"""``poisson``/``gamma``/``constant``: open loop at a target rate; ``concurrency``: closed loop at a
fixed number of requests in flight; ``burst``: every request sent at once (an infinite rate)."""
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")
"""Time to first token, time per output token, inter-token latency, end-to-end latency."""
STATISTICS = ("mean", "p50", "p90", "p95", "p99")
PERCENTILES = (50, 90, 95, 99)


class LoadTestFormatError(ValueError):
    """A load-test file is not a layout capplan reads, or lacks a key its layout needs."""


@dataclass(frozen=True)
class LoadTestRun:
    """One run (one rate or concurrency step) of a load-test tool, in capplan's units.

    Latency fields are ``<metric>_<statistic>_ms`` for metric in :data:`LATENCY_METRICS` and
    statistic in :data:`STATISTICS`; ``None`` where the tool does not report the figure.
    """

    tool: str
    tool_version: str | None
    run_index: int  # position of the run in its file, from 0
    model_id: str | None
    engine: str | None  # the tool's backend / server kind, e.g. "openai", "sglang"
    settings_json: str | None  # engine and benchmark settings the file records, as JSON
    gpu: str | None
    tensor_parallel: int | None
    started_at_utc: datetime | None
    arrival_process: str  # one of ARRIVAL_PROCESSES
    target_requests_per_s: float | None  # offered rate; None for closed-loop and burst runs [requests/s]
    burstiness: float | None  # gamma shape of inter-arrival times; 1 = Poisson [dimensionless]
    max_concurrency: int | None  # offered requests in flight (closed loop) or the client's cap [requests]
    duration_s: float | None  # measured window [s]
    completed_requests: int
    failed_requests: int | None  # None: the tool does not report failures [requests]
    input_tokens_mean: float | None  # measured, not nominal [tokens/request]
    output_tokens_mean: float | None  # [tokens/request]
    requests_per_s: float  # achieved request throughput [requests/s]
    output_tokens_per_s: float | None  # system output-token throughput [tokens/s]
    latency: Mapping[str, float | None] = field(default_factory=dict)  # "<metric>_<stat>_ms" -> [ms]

    def to_row(self) -> dict[str, Any]:
        """A flat dict: every field, latencies spread to one key per metric and statistic."""
        row = {k: v for k, v in asdict(self).items() if k != "latency"}
        row |= {name: self.latency.get(name) for name in latency_columns()}
        return row


def latency_columns() -> list[str]:
    """``ttft_mean_ms``, ``ttft_p50_ms``, ... ``e2el_p99_ms``: the stored latency columns."""
    return [f"{m}_{s}_ms" for m in LATENCY_METRICS for s in STATISTICS]


# --------------------------------------------------------------------------- reading files


def read_runs(path: str | Path, tool: str = "auto") -> list[LoadTestRun]:
    """Parse every run in a load-test result file.

    Parameters
    ----------
    path : str or Path
        A result file of one of :data:`TOOLS`.
    tool : str
        ``"auto"`` (detect from the keys) or one of :data:`TOOLS`.

    Raises
    ------
    LoadTestFormatError
        Unknown layout, a missing key, or a file that is not JSON / JSON lines; the message names
        the file.
    """
    if tool != "auto" and tool not in TOOLS:
        raise ValueError(f"tool must be 'auto' or one of {list(TOOLS)}, got {tool!r}")
    path = Path(path)
    objects = _json_objects(path)
    if not objects:
        raise LoadTestFormatError(f"{path}: no JSON object in the file")
    chosen = detect_tool(objects[0], path) if tool == "auto" else tool
    parse = PARSERS[chosen]
    runs: list[LoadTestRun] = []
    for obj in objects:
        runs += parse(_Keys(obj, path, chosen), len(runs))
    return runs


def _json_objects(path: Path) -> list[dict]:
    """The file's JSON object, or its JSON lines (``Infinity``/``NaN`` accepted, as Python writes them)."""
    text = path.read_text(encoding="utf-8")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict):
        return [whole]
    if isinstance(whole, list) and all(isinstance(o, dict) for o in whole):
        return whole
    objects = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LoadTestFormatError(f"{path}: line {number} is not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise LoadTestFormatError(f"{path}: line {number} is not a JSON object")
        objects.append(obj)
    return objects


_SIGNATURES: tuple[tuple[str, Callable[[dict], bool]], ...] = (
    ("guidellm", lambda o: isinstance(o.get("benchmarks"), list)),
    ("aiperf", lambda o: isinstance(o.get("records"), dict)
     or (isinstance(o.get("request_throughput"), dict) and any(k in o for k in _AIPERF_ONLY))),
    ("genai-perf", lambda o: isinstance(o.get("request_throughput"), dict)),
    ("llmperf", lambda o: "results_ttft_s_mean" in o or "num_concurrent_requests" in o),
    ("sglang", lambda o: "mean_e2e_latency_ms" in o or "total_output_tokens_retokenized" in o),
    ("vllm", lambda o: "mean_ttft_ms" in o and "request_throughput" in o),
)
_AIPERF_ONLY = ("was_cancelled", "error_summary", "benchmark_duration", "inter_chunk_latency")


def detect_tool(obj: Mapping[str, Any], path: str | Path = "<file>") -> str:
    """The tool whose layout ``obj`` (a file's first JSON object) has, from its keys.

    Raises
    ------
    LoadTestFormatError
        If no layout matches; the message names the file and the key each layout needs.
    """
    for tool, matches in _SIGNATURES:
        if matches(dict(obj)):
            return tool
    raise LoadTestFormatError(
        f"{path}: not a load-test layout capplan reads: no key 'benchmarks' (GuideLLM), 'request_throughput' "
        f"object (AIPerf / GenAI-Perf), 'results_ttft_s_mean' (llmperf), 'mean_e2e_latency_ms' (SGLang) or "
        f"'mean_ttft_ms' with 'request_throughput' (vLLM); pass --tool to force a parser")


class _Keys:
    """A JSON object of one file and tool: ``need`` raises a LoadTestFormatError naming the key."""

    def __init__(self, obj: Mapping[str, Any], path: Path, tool: str, where: str = "") -> None:
        self.obj, self.path, self.tool, self.where = obj, path, tool, where

    def need(self, key: str) -> Any:
        if key not in self.obj or self.obj[key] is None and key not in _NULLABLE:
            raise LoadTestFormatError(f"{self.path}: {self.tool} layout{self.where} has no key {key!r}")
        return self.obj[key]

    def get(self, key: str, default: Any = None) -> Any:
        value = self.obj.get(key, default)
        return default if value is None else value

    def child(self, key: str) -> _Keys:
        value = self.need(key)
        if not isinstance(value, Mapping):
            raise LoadTestFormatError(f"{self.path}: {self.tool} layout{self.where}: {key!r} is not an object")
        return _Keys(value, self.path, self.tool, f"{self.where} {key}")


_NULLABLE = ("max_concurrency",)


def _number(value: Any) -> float | None:
    """A finite float, or ``None`` for null, ``"inf"`` strings and non-finite numbers."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _int(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(round(number))


def _ratio(numerator: Any, denominator: Any) -> float | None:
    num, den = _number(numerator), _number(denominator)
    return num / den if num is not None and den else None


def _settings(obj: Mapping[str, Any], known: set[str]) -> str | None:
    """The scalar keys of ``obj`` a parser does not map to a column, as JSON (engine/benchmark settings)."""
    rest = {k: v for k, v in obj.items() if k not in known and (v is None or isinstance(v, str | int | float | bool))}
    return json.dumps(rest, sort_keys=True, allow_nan=False, default=str) if rest else None


def _open_loop_process(rate_rps: float | None, burstiness: float | None, max_concurrency: int | None) -> str:
    if rate_rps is None:
        return "concurrency" if max_concurrency else "burst"
    if burstiness is None or burstiness == 1.0:
        return "poisson"
    return "gamma"


def _latency(stats: Mapping[str, Callable[[str], float | None]]) -> dict[str, float | None]:
    """``{"ttft_p99_ms": value, ...}`` from one reader per metric: ``reader(statistic) -> ms or None``."""
    return {f"{m}_{s}_ms": (stats[m](s) if m in stats else None) for m in LATENCY_METRICS for s in STATISTICS}


# --------------------------------------------------------------------------- vLLM


def _flat_reader(o: Mapping[str, Any]) -> Callable[[str], Callable[[str], float | None]]:
    """Latency readers of the flat vLLM/SGLang keys ``mean_<m>_ms``, ``median_<m>_ms``, ``p<P>_<m>_ms``."""
    def reader(metric: str) -> Callable[[str], float | None]:
        def stat(s: str) -> float | None:
            name = {"mean": f"mean_{metric}_ms", "p50": f"median_{metric}_ms"}.get(s, f"{s}_{metric}_ms")
            return _number(o.get(name, o.get(f"p50_{metric}_ms") if s == "p50" else None))
        return stat
    return reader


def _flat_arrival(keys: _Keys) -> tuple[float | None, float | None, int | None]:
    """(target rate or None for ``inf``, burstiness, max concurrency) of a vLLM/SGLang run."""
    return (_number(keys.need("request_rate")), _number(keys.obj.get("burstiness")),
            _int(keys.obj.get("max_concurrency")))


_VLLM_METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2el"}
_VLLM_KNOWN = {"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate",
               "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
               "total_output_tokens", "request_throughput", "request_goodput", "request_goodput:", "output_throughput",
               "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests", "tp", "gpu"}


def parse_vllm(keys: _Keys, first_index: int) -> list[LoadTestRun]:
    """One run from a ``vllm bench serve`` result object (times already in ms)."""
    o = keys.obj
    completed = int(keys.need("completed"))

    keys.need("mean_ttft_ms")
    rate, burstiness, max_concurrency = _flat_arrival(keys)
    reader = _flat_reader(o)
    return [LoadTestRun(
        tool="vllm", tool_version=None, run_index=first_index, model_id=keys.get("model_id"),
        engine=keys.get("backend", keys.get("endpoint_type")),
        settings_json=_settings(o, _VLLM_KNOWN | {k for k in o if k.endswith("_ms")}),
        gpu=keys.get("gpu"), tensor_parallel=_int(o.get("tp")),
        started_at_utc=_vllm_date(o.get("date")),
        arrival_process=_open_loop_process(rate, burstiness, max_concurrency),
        target_requests_per_s=rate, burstiness=burstiness, max_concurrency=max_concurrency,
        duration_s=_number(keys.need("duration")), completed_requests=completed, failed_requests=_int(o.get("failed")),
        input_tokens_mean=_ratio(keys.need("total_input_tokens"), completed),
        output_tokens_mean=_ratio(keys.need("total_output_tokens"), completed),
        requests_per_s=float(keys.need("request_throughput")),
        output_tokens_per_s=_number(keys.need("output_throughput")),
        latency=_latency({m: reader(key) for m, key in _VLLM_METRICS.items()}),
    )]


def _vllm_date(text: Any) -> datetime | None:
    try:
        return datetime.strptime(str(text), "%Y%m%d-%H%M%S")
    except ValueError:
        return None


# --------------------------------------------------------------------------- SGLang


_SGLANG_KNOWN = {"backend", "request_rate", "max_concurrency", "total_input_tokens", "total_output_tokens",
                 "output_throughput", "duration", "completed", "request_throughput", "model_id", "burstiness"}


def parse_sglang(keys: _Keys, first_index: int) -> list[LoadTestRun]:
    """One run from a line of ``sglang.bench_serving`` JSONL; lengths measured from the token totals.

    The nominal ``random_input_len``/``random_output_len`` are kept in ``settings_json`` only: with
    ``random_range_ratio`` 0 the real means are about half of them.
    """
    o = keys.obj
    completed = int(keys.need("completed"))
    duration = float(keys.need("duration"))

    keys.need("median_ttft_ms")
    rate, burstiness, max_concurrency = _flat_arrival(keys)
    reader = _flat_reader(o)
    return [LoadTestRun(
        tool="sglang", tool_version=None, run_index=first_index, model_id=keys.get("model_id"),
        engine=keys.get("backend"), settings_json=_settings(o, _SGLANG_KNOWN | {k for k in o if k.endswith("_ms")}),
        gpu=None, tensor_parallel=None, started_at_utc=None,
        arrival_process=_open_loop_process(rate, burstiness, max_concurrency),
        target_requests_per_s=rate, burstiness=burstiness, max_concurrency=max_concurrency,
        duration_s=duration, completed_requests=completed, failed_requests=None,
        input_tokens_mean=_ratio(keys.need("total_input_tokens"), completed),
        output_tokens_mean=_ratio(keys.need("total_output_tokens"), completed),
        requests_per_s=_number(o.get("request_throughput")) or completed / duration,
        output_tokens_per_s=_number(keys.need("output_throughput")),
        latency=_latency({"ttft": reader("ttft"), "tpot": reader("tpot"), "itl": reader("itl"),
                          "e2el": reader("e2e_latency")}),
    )]


# --------------------------------------------------------------------------- GuideLLM


_GUIDELLM_PROCESS = {"constant": "constant", "poisson": "poisson", "concurrent": "concurrency",
                     "synchronous": "concurrency", "throughput": "burst"}
_GUIDELLM_METRICS = {"ttft": ("time_to_first_token_ms", 1.0), "tpot": ("time_per_output_token_ms", 1.0),
                     "itl": ("inter_token_latency_ms", 1.0), "e2el": ("request_latency", 1000.0)}  # s -> ms


def parse_guidellm(keys: _Keys, first_index: int) -> list[LoadTestRun]:
    """One run per benchmark of a GuideLLM report (v2, or the older ``args``/``run_stats`` layout)."""
    benchmarks = keys.need("benchmarks")
    version = keys.get("metadata", {}).get("version") if isinstance(keys.get("metadata"), Mapping) else None
    tool_version = keys.get("metadata", {}).get("guidellm_version") if version else None
    default_model = _dig(keys.obj, ("config", "spec", "backend", "model"))
    runs = []
    for i, raw in enumerate(benchmarks):
        bench = _Keys(raw, keys.path, "guidellm", f" benchmark {i}")
        if version is None and "args" not in raw:
            raise LoadTestFormatError(f"{keys.path}: guidellm layout has no key 'metadata.version' (report v2) and "
                                      f"benchmark {i} no key 'args' (older layout)")
        legacy = version is None
        strategy = bench.child("args" if legacy else "config").child("strategy")
        model = (_dig(raw, ("worker", "backend_model")) if legacy
                 else _dig(raw, ("config", "backend", "model")) or default_model)
        runs.append(_guidellm_run(bench, strategy, _guidellm_totals(bench), first_index + i, tool_version, model))
    return runs


def _guidellm_totals(bench: _Keys) -> _Keys:
    """Request counts: ``metrics.request_totals`` (v2), ``request_totals`` or ``run_stats.requests_made`` (older)."""
    for path in (("metrics", "request_totals"), ("request_totals",), ("run_stats", "requests_made")):
        if isinstance(_dig(bench.obj, path), Mapping):
            return _Keys(_dig(bench.obj, path), bench.path, bench.tool, f"{bench.where} {'.'.join(path)}")
    raise LoadTestFormatError(f"{bench.path}: guidellm layout{bench.where} has no key 'metrics.request_totals'")


def _guidellm_run(bench: _Keys, strategy: _Keys, totals: _Keys, index: int, version: str | None,
                  model: str | None) -> LoadTestRun:
    metrics = bench.child("metrics")
    kind = str(strategy.need("type_"))
    process = _GUIDELLM_PROCESS.get(kind, kind)
    concurrency = {"synchronous": 1, "concurrent": _int(strategy.get("streams"))}.get(kind, _int(strategy.get("max_concurrency")))
    duration = float(bench.need("duration"))
    completed = int(totals.need("successful"))

    def summary(name: str) -> Mapping[str, Any]:
        return metrics.child(name).child("successful").obj

    def reader(name: str, scale: float) -> Callable[[str], float | None]:
        dist = summary(name)
        percentiles = dist.get("percentiles") or {}

        def stat(s: str) -> float | None:
            value = dist.get("mean") if s == "mean" else percentiles.get(s, dist.get("median") if s == "p50" else None)
            number = _number(value)
            return None if number is None else number * scale
        return stat

    output_sum = _number(summary("output_token_count").get("total_sum"))
    return LoadTestRun(
        tool="guidellm", tool_version=version, run_index=index, model_id=model, engine=_dig(
            bench.obj, ("config", "backend", "kind")), settings_json=json.dumps({"strategy": kind}),
        gpu=None, tensor_parallel=None, started_at_utc=_epoch(bench.get("start_time")),
        arrival_process=process,
        target_requests_per_s=_number(strategy.get("rate")) if process in ("constant", "poisson") else None,
        burstiness=1.0 if process == "poisson" else None, max_concurrency=concurrency,
        duration_s=duration, completed_requests=completed, failed_requests=_int(totals.get("errored")),
        input_tokens_mean=_number(summary("prompt_token_count").get("mean")),
        output_tokens_mean=_number(summary("output_token_count").get("mean")),
        # rate metrics are time-weighted distributions (not completed/duration): use the totals
        requests_per_s=completed / duration if duration else 0.0,
        output_tokens_per_s=output_sum / duration if output_sum is not None and duration else None,
        latency=_latency({m: reader(name, scale) for m, (name, scale) in _GUIDELLM_METRICS.items()}),
    )


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _epoch(value: Any) -> datetime | None:
    seconds = _number(value)
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


# --------------------------------------------------------------------------- AIPerf / GenAI-Perf


_MS_PER_UNIT = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 1e-3, "ns": 1e-6}
_AIPERF_METRICS = {"ttft": "time_to_first_token", "tpot": "inter_token_latency", "itl": "inter_chunk_latency",
                   "e2el": "request_latency"}


def parse_aiperf(keys: _Keys, first_index: int) -> list[LoadTestRun]:
    """One run from an AIPerf or GenAI-Perf profile export JSON (metrics top-level or under ``records``).

    ``inter_token_latency`` there is per request ``(latency - TTFT) / (output tokens - 1)``, i.e. TPOT;
    AIPerf's ``inter_chunk_latency`` is the pooled gap between chunks, i.e. ITL.
    """
    tool = keys.tool
    metrics = keys.child("records") if isinstance(keys.obj.get("records"), Mapping) else keys
    config = keys.obj.get("input_config") or {}

    def avg(name: str, required: bool = False) -> float | None:
        metric = metrics.child(name).obj if required else metrics.obj.get(name)
        return _number(metric.get("avg")) if isinstance(metric, Mapping) else None

    def reader(name: str) -> Callable[[str], float | None]:
        metric = metrics.obj.get(name)
        if not isinstance(metric, Mapping):
            return lambda s: None
        unit = str(metric.get("unit", "ms")).lower()
        if unit not in _MS_PER_UNIT:
            raise LoadTestFormatError(f"{keys.path}: {tool} metric {name!r} has unit {unit!r}, not a time unit")
        scale = _MS_PER_UNIT[unit]

        def stat(s: str) -> float | None:
            number = _number(metric.get("avg" if s == "mean" else s))
            return None if number is None else number * scale
        return stat

    requests_per_s = avg("request_throughput", required=True)
    metrics.child("time_to_first_token")
    completed = _int(avg("request_count")) or 0
    duration = avg("benchmark_duration") or (completed / requests_per_s if requests_per_s else None)
    rate = _number(_find_key(config, "request_rate"))
    concurrency = _int(_find_key(config, "concurrency"))
    models = _find_key(config, "model_names")
    return [LoadTestRun(
        tool=tool, tool_version=None, run_index=first_index,
        model_id=models[0] if isinstance(models, list) and models else _find_key(config, "model"),
        engine=_find_key(config, "service_kind") or _find_key(config, "endpoint_type"), settings_json=None,
        gpu=None, tensor_parallel=None, started_at_utc=_iso(keys.obj.get("start_time")),
        arrival_process=_open_loop_process(rate, None, concurrency),
        target_requests_per_s=rate, burstiness=None, max_concurrency=concurrency if rate is None else None,
        duration_s=duration, completed_requests=completed, failed_requests=_int(avg("error_request_count")),
        input_tokens_mean=avg("input_sequence_length"), output_tokens_mean=avg("output_sequence_length"),
        requests_per_s=requests_per_s or 0.0, output_tokens_per_s=avg("output_token_throughput"),
        latency=_latency({m: reader(name) for m, name in _AIPERF_METRICS.items()}),
    )]


def _find_key(obj: Any, key: str) -> Any:
    """The first value of ``key`` anywhere in a nested config (depth first), or ``None``."""
    if isinstance(obj, Mapping):
        if obj.get(key) is not None:
            return obj[key]
        for value in obj.values():
            found = _find_key(value, key)
            if found is not None:
                return found
    return None


def _iso(value: Any) -> datetime | None:
    try:
        ts = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return ts.astimezone(UTC).replace(tzinfo=None) if ts.tzinfo else ts


# --------------------------------------------------------------------------- llmperf


_LLMPERF_METRICS = {"ttft": "ttft_s", "tpot": "inter_token_latency_s", "e2el": "end_to_end_latency_s"}


def parse_llmperf(keys: _Keys, first_index: int) -> list[LoadTestRun]:
    """One closed-loop run from an llmperf ``*_summary.json`` (times in seconds, converted to ms).

    llmperf's ``inter_token_latency_s`` is each request's mean gap between tokens, i.e. its TPOT;
    pooled ITL is not reported.
    """
    o = keys.obj

    def reader(name: str) -> Callable[[str], float | None]:
        def stat(s: str) -> float | None:
            key = f"results_{name}_mean" if s == "mean" else f"results_{name}_quantiles_{s}"
            number = _number(o.get(key))
            return None if number is None else number * 1000.0  # s -> ms
        return stat

    keys.need("results_ttft_s_mean")
    completed = int(keys.need("results_num_completed_requests"))
    requests_per_s = float(keys.need("results_num_completed_requests_per_min")) / 60.0
    return [LoadTestRun(
        tool="llmperf", tool_version=keys.get("version"), run_index=first_index, model_id=keys.get("model"),
        engine=keys.get("framework"), settings_json=_settings(
            o, {"version", "model", "framework", "timestamp", "num_concurrent_requests"} | {k for k in o if k.startswith(
                ("results_", "mean_", "stddev_"))}),
        gpu=None, tensor_parallel=None, started_at_utc=_epoch(o.get("timestamp")),
        arrival_process="concurrency", target_requests_per_s=None, burstiness=None,
        max_concurrency=_int(keys.need("num_concurrent_requests")),
        duration_s=completed / requests_per_s if requests_per_s else None,
        completed_requests=completed, failed_requests=_int(o.get("results_number_errors")),
        input_tokens_mean=_number(o.get("results_number_input_tokens_mean", o.get("mean_input_tokens"))),
        output_tokens_mean=_number(o.get("results_number_output_tokens_mean", o.get("mean_output_tokens"))),
        requests_per_s=requests_per_s,
        output_tokens_per_s=_number(keys.need("results_mean_output_throughput_token_per_s")),
        latency=_latency({m: reader(name) for m, name in _LLMPERF_METRICS.items()}),
    )]


PARSERS: dict[str, Callable[[_Keys, int], list[LoadTestRun]]] = {
    "vllm": parse_vllm, "sglang": parse_sglang, "guidellm": parse_guidellm, "aiperf": parse_aiperf,
    "genai-perf": parse_aiperf, "llmperf": parse_llmperf,
}
