"""A small Prometheus HTTP API client: range queries with timeouts, retries and errors that name the query.

Only ``GET /api/v1/query_range`` is used. A server that is down or refuses, a timeout, a 4xx or
5xx answer, a ``status`` other than ``success``, any ``warnings`` (Prometheus's sign of a partial
result) or a ``resultType`` other than ``matrix`` raises :class:`MetricsError` naming the URL and
the query. Connection errors, timeouts and 5xx are retried ``retries`` times; a 4xx is not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np


class MetricsError(RuntimeError):
    """A Prometheus query failed or returned something capplan cannot use."""


@dataclass(frozen=True)
class Series:
    """One range-query result series: its labels and samples (``ts_s`` [s since epoch], ``value``)."""

    labels: dict[str, str]
    ts_s: np.ndarray
    value: np.ndarray


class PrometheusClient:
    """Range queries against one Prometheus server."""

    def __init__(self, url: str, *, timeout_s: float = 30.0, retries: int = 2, bearer_token_file: Path | None = None,
                 tls_verify: bool = True, ca_file: Path | None = None) -> None:
        headers = {}
        if bearer_token_file is not None:
            headers["Authorization"] = f"Bearer {Path(bearer_token_file).read_text(encoding='utf-8').strip()}"
        verify: bool | str = str(ca_file) if ca_file is not None else tls_verify
        self.url = url.rstrip("/")
        self.retries = retries
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout_s, verify=verify)

    def close(self) -> None:
        self._http.close()

    def query_range(self, query: str, start_s: int, end_s: int, step_s: int) -> list[Series]:
        """Samples of ``query`` at ``start_s, start_s + step_s, ..., <= end_s`` (Unix seconds, UTC)."""
        params = {"query": query, "start": start_s, "end": end_s, "step": step_s}
        where = f"{self.url}/api/v1/query_range query={query!r} [{start_s}, {end_s}] step {step_s} s"
        body = self._get_json("/api/v1/query_range", params, where)
        if body.get("status") != "success":
            raise MetricsError(f"{where}: {body.get('errorType', 'error')}: {body.get('error', body.get('status'))}")
        if body.get("warnings"):
            raise MetricsError(f"{where}: partial result, Prometheus warned: {'; '.join(body['warnings'])}")
        data = body.get("data") or {}
        if data.get("resultType") != "matrix":
            raise MetricsError(f"{where}: expected resultType 'matrix', got {data.get('resultType')!r}")
        return [Series(labels=r.get("metric", {}), ts_s=np.array([float(t) for t, _ in r["values"]]),
                       value=np.array([float(v) for _, v in r["values"]])) for r in data.get("result", [])]

    def _get_json(self, path: str, params: dict, where: str) -> dict:
        """GET with retries on connection errors, timeouts and 5xx; the body as JSON."""
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(0.5 * 2 ** (attempt - 1), 5.0))
            try:
                response = self._http.get(path, params=params)
            except httpx.TimeoutException as exc:
                last = f"timed out after {self._http.timeout.read} s ({type(exc).__name__})"
                continue
            except httpx.TransportError as exc:
                last = f"cannot reach the server ({type(exc).__name__}: {exc})"
                continue
            if response.status_code >= 500:
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                continue
            if response.status_code >= 400:
                raise MetricsError(f"{where}: HTTP {response.status_code}: {response.text[:200]}")
            try:
                return response.json()
            except ValueError:
                raise MetricsError(f"{where}: the answer is not JSON: {response.text[:200]!r}") from None
        raise MetricsError(f"{where}: {last} (after {self.retries + 1} attempt(s))")
