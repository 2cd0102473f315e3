"""Metric-name presets and their overrides."""

import pytest

from capplan.metrics.presets import PRESETS, ROLES, metric_names, promql_selector


@pytest.mark.parametrize("flavour, prefix", [("vllm", "vllm:"), ("sglang", "sglang:"), ("tgi", "tgi_")])
def test_presets_cover_every_role_with_the_engine_prefix(flavour, prefix):
    names = PRESETS[flavour]
    assert set(names) == set(ROLES)
    assert all(n.startswith(prefix) for n in names.values() if n)


def test_override_and_errors():
    assert metric_names("vllm", {"requests": "my_total"})["requests"] == "my_total"
    with pytest.raises(ValueError, match="valid: \\['sglang', 'tgi', 'vllm'\\]"):
        metric_names("triton")
    with pytest.raises(ValueError, match="unknown metric role"):
        metric_names("vllm", {"reqs": "x"})


@pytest.mark.parametrize("name, selector, query", [
    ("vllm:request_success_total", "", "vllm:request_success_total"),
    ("vllm:request_success_total", 'job="vllm"', 'vllm:request_success_total{job="vllm"}'),
    ('http_requests_total{code=~"5.."}', "", 'http_requests_total{code=~"5.."}'),
    ('http_requests_total{code=~"5.."}', 'job="gw",env="prod"', 'http_requests_total{code=~"5..",job="gw",env="prod"}'),
    ("x{}", "", "x"),
])
def test_promql_selector_merges_a_names_matchers_with_the_sources(name, selector, query):
    assert promql_selector(name, selector) == query


def test_matchers_only_in_counter_and_gauge_roles():
    assert metric_names("vllm", {"errors": 'vllm:request_success_total{finished_reason="abort"}'})["errors"].endswith('"abort"}')
    with pytest.raises(ValueError, match=r"\['ttft_hist'\]: a histogram role takes a base name"):
        metric_names("vllm", {"ttft_hist": 'x{le="1"}'})
