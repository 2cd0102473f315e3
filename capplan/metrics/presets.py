"""Metric names of the LLM engines' Prometheus exporters, by role (overridable per source).

Roles: ``requests`` (a counter of finished requests: successful ones only, except in the flavours of
:data:`REQUESTS_INCLUDE_ERRORS`), ``errors`` (a counter of failed or aborted requests; ``None`` where the
engine has none: errors are then unknown, and the SLO stage says error-rate SLIs are not measurable), ``input_tokens`` / ``output_tokens`` (counters of
tokens; ``None`` where the engine has none and the token histogram's ``_sum`` stands in),
``input_tokens_hist`` / ``output_tokens_hist`` / ``ttft_hist`` / ``tpot_hist`` / ``latency_hist``
(histogram base names: ``_bucket``, ``_sum`` and ``_count`` are appended) and ``running`` (a gauge of
requests in flight). Times are in seconds in every engine. An override of a counter or gauge role may
carry label matchers (:data:`SERIES_ROLES`).

Sources (checked December 2026):
- vLLM: the names listed in issue 23 (vLLM's "Production Metrics" page, ``vllm:`` prefix).
- SGLang: docs.sglang.io/references/production_metrics (``sglang:`` prefix); the token
  histograms exist only with ``--collect-tokens-histogram``.
- TGI: huggingface.co/docs/text-generation-inference/reference/metrics (``tgi_`` prefix); TGI has no
  token counters, so token sums come from the length histograms' ``_sum``; ``tgi_request_failure``
  counts failed requests (beside ``tgi_request_success``).
- Errors: vLLM's ``vllm:request_success_total`` counts finished requests (by ``finished_reason``) and
  vLLM has no failure counter; SGLang's ``sglang:num_requests_total`` counts every request and
  ``sglang:num_aborted_requests_total`` the aborted ones.
"""

from __future__ import annotations

ROLES = ("requests", "errors", "input_tokens", "output_tokens", "input_tokens_hist", "output_tokens_hist",
         "ttft_hist", "tpot_hist", "latency_hist", "running")

PRESETS: dict[str, dict[str, str | None]] = {
    "vllm": {"requests": "vllm:request_success_total", "errors": None, "input_tokens": "vllm:prompt_tokens_total",
             "output_tokens": "vllm:generation_tokens_total",
             "input_tokens_hist": "vllm:request_prompt_tokens", "output_tokens_hist": "vllm:request_generation_tokens",
             "ttft_hist": "vllm:time_to_first_token_seconds", "tpot_hist": "vllm:time_per_output_token_seconds",
             "latency_hist": "vllm:e2e_request_latency_seconds", "running": "vllm:num_requests_running"},
    "sglang": {"requests": "sglang:num_requests_total", "errors": "sglang:num_aborted_requests_total",
               "input_tokens": "sglang:prompt_tokens_total",
               "output_tokens": "sglang:generation_tokens_total",
               "input_tokens_hist": "sglang:prompt_tokens_histogram",
               "output_tokens_hist": "sglang:generation_tokens_histogram",
               "ttft_hist": "sglang:time_to_first_token_seconds", "tpot_hist": "sglang:inter_token_latency_seconds",
               "latency_hist": "sglang:e2e_request_latency_seconds", "running": "sglang:num_running_reqs"},
    "tgi": {"requests": "tgi_request_success", "errors": "tgi_request_failure", "input_tokens": None, "output_tokens": None,
            "input_tokens_hist": "tgi_request_input_length", "output_tokens_hist": "tgi_request_generated_tokens",
            "ttft_hist": None, "tpot_hist": "tgi_request_mean_time_per_token_duration",
            "latency_hist": "tgi_request_duration", "running": "tgi_batch_current_size"},
}
"""Flavour -> role -> metric name (``None``: the engine does not export it)."""

SERIES_ROLES = ("requests", "errors", "input_tokens", "output_tokens", "running")
"""Roles naming one metric whose name may carry label matchers, e.g. an HTTP status counter's failures
``http_requests_total{code=~"5.."}`` or vLLM's ``vllm:request_success_total{finished_reason="abort"}``; the
histogram roles are base names (``_bucket``, ``_sum`` and ``_count`` are appended) and may not."""

REQUESTS_INCLUDE_ERRORS = frozenset({"sglang"})
"""Flavours whose ``requests`` counter counts failed requests too (the others count successes only)."""


def metric_names(flavour: str, overrides: dict[str, str] | None = None) -> dict[str, str | None]:
    """The preset of ``flavour`` with ``overrides`` (role -> name) applied.

    Raises
    ------
    ValueError
        For an unknown flavour or role, naming the valid ones.
    """
    if flavour not in PRESETS:
        raise ValueError(f"unknown metrics flavour {flavour!r}; valid: {sorted(PRESETS)}")
    bad = sorted(set(overrides or {}) - set(ROLES))
    if bad:
        raise ValueError(f"unknown metric role(s) {bad} in metric_names; valid: {list(ROLES)}")
    matched = sorted(r for r, name in (overrides or {}).items() if "{" in name and r not in SERIES_ROLES)
    if matched:
        raise ValueError(f"metric_names {matched}: a histogram role takes a base name without label matchers "
                         f"(matchers are allowed in {list(SERIES_ROLES)})")
    return {**PRESETS[flavour], **(overrides or {})}


def promql_selector(name: str, selector: str) -> str:
    """The PromQL series selector of ``name`` (which may carry label matchers) with ``selector``'s matchers added.

    ``promql_selector('http_requests_total{code=~"5.."}', 'job="vllm"')``
    → ``http_requests_total{code=~"5..",job="vllm"}``.
    """
    base, _, inner = name.partition("{")
    matchers = ",".join(m for m in (inner.rstrip().removesuffix("}").strip(), selector.strip()) if m)
    return f"{base.strip()}{{{matchers}}}" if matchers else base.strip()
