"""A real Prometheus server backfilled with a generated week of vLLM-style metrics (two models, one reset), with
failed requests in a gateway's HTTP status counter (1 %, 30 % in a two-hour incident) and a TTFT histogram."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import httpx
import numpy as np
import pytest

START = datetime(2026, 10, 5, tzinfo=UTC)  # a Monday, in the past: the blocks are backfilled
DAYS = 7
STEP_S = 300  # 5-minute scrape
MODELS = ("llama-8b", "qwen-32b")
TOKEN_LE = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000)  # vLLM's 1-2-5 buckets
LATENCY_LE = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 20.0, 40.0)
RESET_AT = 1000  # step index at which llama-8b's process restarts (all its counters restart from 0)
TTFT_LE = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
"""vLLM's ``vllm:time_to_first_token_seconds`` buckets. [s]"""
FAILURES = 'gateway:requests_total{code=~"5.."}'
"""The failed requests of a gateway's HTTP status counter (``gateway:requests_total`` by ``model_name`` and ``code``:
200 for the successes, 503 for the failures); vLLM exports no failure counter, so a source names this one with
``metric_names = {errors = ...}``."""
FAILURE_SHARE = 0.01  # of the requests of a step, outside the incident [fraction]
INCIDENT = (3 * 24 + 10, 3 * 24 + 12, 0.3)  # hours 82 and 83 since START: 30 % of requests fail


def generate_traffic(seed: int = 7) -> dict:
    """Per-request rows per model: arrival step, input and output tokens, latency [s]."""
    rng = np.random.default_rng(seed)
    steps = DAYS * 86400 // STEP_S
    t = np.arange(steps) * STEP_S
    out = {}
    for i, model in enumerate(MODELS):
        rate = (30 + 20 * i) * (1.3 + np.sin(2 * np.pi * t / 86400))  # requests per step, daily cycle
        n = rng.poisson(rate)
        step = np.repeat(np.arange(steps), n)
        inp = np.maximum(1, rng.lognormal(6.0 + 0.5 * i, 0.8, step.size)).astype(np.int64)
        outp = np.maximum(1, rng.lognormal(5.0, 0.7, step.size)).astype(np.int64)
        latency = 0.2 + outp * 0.02
        out[model] = {"step": step, "input_tokens": inp, "output_tokens": outp, "latency_s": latency}
    # failures and TTFT from their own stream: the successes above stay those of the earlier sessions
    extra = np.random.default_rng([seed, 1])
    hour = t // 3600
    share = np.where((hour >= INCIDENT[0]) & (hour < INCIDENT[1]), INCIDENT[2], FAILURE_SHARE)
    for model, rows in out.items():
        n = np.bincount(rows["step"], minlength=steps)
        rows["failed_step"] = np.repeat(np.arange(steps), extra.poisson(n * share / (1 - share)))
        rows["ttft_s"] = (0.02 + rows["input_tokens"] * 0.0002) * extra.lognormal(0.0, 0.5, rows["step"].size)
    return out


def _cumulative(step: np.ndarray, weight: np.ndarray, steps: int, reset: int | None) -> np.ndarray:
    """Counter value at each sample time k·STEP_S: events of steps < k, restarting from 0 after ``reset``."""
    per_step = np.bincount(step, weights=weight, minlength=steps)
    value = np.concatenate([[0.0], np.cumsum(per_step)])  # value[k] = events before sample k
    if reset is not None:  # the process restarts just after the sample at `reset - 1`
        value[reset:] -= value[reset - 1]
    return value


def write_openmetrics(traffic: dict, path: Path) -> None:
    """OpenMetrics text of the traffic's counters, histograms and running gauge, one sample per STEP_S."""
    steps = DAYS * 86400 // STEP_S
    ts = int(START.timestamp()) + np.arange(steps + 1) * STEP_S
    lines: list[str] = []

    def counter(family: str, values_by_model: dict) -> None:
        lines.append(f"# TYPE {family} counter")
        for model, v in values_by_model.items():
            lines.extend(f'{family}_total{{model_name="{model}"}} {x:.0f} {t}' for x, t in zip(v, ts))

    def histogram(family: str, le: tuple, key: str) -> None:
        lines.append(f"# TYPE {family} histogram")
        for model, rows in traffic.items():
            reset = RESET_AT if model == MODELS[0] else None
            x = rows[key]
            cols = [_cumulative(rows["step"], (x <= b).astype(float), steps, reset) for b in le]
            count = _cumulative(rows["step"], np.ones(x.size), steps, reset)
            total = _cumulative(rows["step"], x.astype(float), steps, reset)
            for k, t in enumerate(ts):
                lines.extend(f'{family}_bucket{{model_name="{model}",le="{b}"}} {c[k]:.0f} {t}' for b, c in zip(le, cols))
                lines.append(f'{family}_bucket{{model_name="{model}",le="+Inf"}} {count[k]:.0f} {t}')
                lines.append(f'{family}_count{{model_name="{model}"}} {count[k]:.0f} {t}')
                lines.append(f'{family}_sum{{model_name="{model}"}} {total[k]:.6f} {t}')

    def reset_of(model):
        return RESET_AT if model == MODELS[0] else None

    counter("vllm:request_success", {m: _cumulative(r["step"], np.ones(r["step"].size), steps, reset_of(m))
                                     for m, r in traffic.items()})
    counter("vllm:prompt_tokens", {m: _cumulative(r["step"], r["input_tokens"].astype(float), steps, reset_of(m))
                                   for m, r in traffic.items()})
    counter("vllm:generation_tokens", {m: _cumulative(r["step"], r["output_tokens"].astype(float), steps,
                                                      reset_of(m)) for m, r in traffic.items()})
    histogram("vllm:request_prompt_tokens", TOKEN_LE, "input_tokens")
    histogram("vllm:request_generation_tokens", TOKEN_LE, "output_tokens")
    histogram("vllm:e2e_request_latency_seconds", LATENCY_LE, "latency_s")
    histogram("vllm:time_to_first_token_seconds", TTFT_LE, "ttft_s")
    lines.append("# TYPE gateway:requests counter")
    for model, r in traffic.items():
        for code, step in (("200", r["step"]), ("503", r["failed_step"])):
            value = _cumulative(step, np.ones(step.size), steps, reset_of(model))
            lines.extend(f'gateway:requests_total{{model_name="{model}",code="{code}"}} {x:.0f} {t}'
                         for x, t in zip(value, ts))
    lines.append("# TYPE vllm:num_requests_running gauge")
    for model, r in traffic.items():
        running = np.concatenate([np.bincount(r["step"], minlength=steps), [0]]) * 0.01 * 60  # ~ arrivals × 0.6
        lines.extend(f'vllm:num_requests_running{{model_name="{model}"}} {v:.0f} {t}' for v, t in zip(running, ts))
    lines.append("# EOF")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """A ``prometheus`` process on 127.0.0.1 serving a backfilled TSDB; ``stop()`` ends it."""

    def __init__(self, tsdb: Path, workdir: Path) -> None:
        self.tsdb, self.workdir, self.proc = tsdb, workdir, None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "PrometheusServer":
        config = self.workdir / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 5m\n", encoding="utf-8")
        self.port = self.port or free_port()  # a restart keeps the address the client knows
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={self.tsdb}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=100y",
             "--query.lookback-delta=10m"], stdout=subprocess.DEVNULL, stderr=(self.workdir / "prom.log").open("ab"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"prometheus did not become ready; see {self.workdir / 'prom.log'}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture(scope="session")
def spec() -> SimpleNamespace:
    """The generated traffic's constants (tests cannot import conftest)."""
    return SimpleNamespace(start=START, days=DAYS, step_s=STEP_S, models=MODELS, token_le=TOKEN_LE, ttft_le=TTFT_LE,
                           failures=FAILURES, incident=INCIDENT)


@pytest.fixture(scope="session")
def traffic() -> dict:
    return generate_traffic()


@pytest.fixture(scope="session")
def backfilled_tsdb(traffic, tmp_path_factory) -> Path:
    require_prometheus()
    root = tmp_path_factory.mktemp("prom")
    om = root / "metrics.om"
    write_openmetrics(traffic, om)
    tsdb = root / "tsdb"
    backfill(om, tsdb)
    return tsdb


def backfill(openmetrics: Path, tsdb: Path) -> None:
    """``promtool tsdb create-blocks-from openmetrics`` into ``tsdb``, in blocks of up to 31 days.

    The default 2-hour blocks make a month 372 blocks (8 min here); ``--max-block-duration`` (a
    hidden flag of promtool 2.42) makes it a few (10 s).
    """
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=744h", "-q",
                    str(openmetrics), str(tsdb)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.fixture
def prometheus(backfilled_tsdb, tmp_path):
    server = PrometheusServer(backfilled_tsdb, tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


def require_prometheus() -> None:
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        pytest.skip("Debian package `prometheus` not installed (.ci/run installs it)")


@pytest.fixture(scope="session")
def prometheus_tools():
    """``(backfill, PrometheusServer)`` for tests that backfill their own TSDB (skips without Prometheus)."""
    require_prometheus()
    return backfill, PrometheusServer
