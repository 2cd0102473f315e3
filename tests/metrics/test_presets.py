"""Metric-name presets and their overrides."""

import pytest

from capplan.metrics.presets import PRESETS, ROLES, metric_names


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
