"""Inputs the logs lacked (capplan/plan/unlogged.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from capplan.config import CapplanConfig
from capplan.ingest.coverage import DefaultedColumn
from capplan.plan.unlogged import burst_without_latency, latency_without_logs, mean_ttft_s, sourced_rows


def test_mean_ttft_weighted_by_requests_and_none_without():
    h = pd.DataFrame({"mean_ttft_ms": [100.0, 400.0, None], "requests": [3, 1, 5]})
    assert mean_ttft_s(h) == pytest.approx((300 + 400) / 4 / 1000)
    assert mean_ttft_s(h.assign(mean_ttft_ms=None)) is None


def test_latency_modelled_with_the_measured_ttft():
    h = pd.DataFrame({"mean_ttft_ms": [500.0], "requests": [10], "avg_qps": [1.0]})
    value, source, note = latency_without_logs(CapplanConfig(), 1000, 1, h)
    assert (value, source) == (pytest.approx(0.5), "modelled") and "measured TTFT 0.5 s" in note
    assert burst_without_latency(h, 4.0) == pytest.approx(1 + 3 / 2)


def test_sourced_rows_mark_defaulted_status_and_columns():
    values = {"requests measured (2xx)": (10, "requests"), "latency_s": (2.0, "s")}
    rows = sourced_rows({"latency_s": "modelled"}, {"status": DefaultedColumn("status", 10, 10)}, values)
    assert rows["latency_s"] == (2.0, "s", "modelled")
    assert rows["requests measured (2xx)"] == (10, "requests", "assumed")
    assert rows["log column status"][2] == "assumed"


def test_latency_is_modelled_for_the_pools_architecture_not_the_default_model():
    """Found on the Azure trace look-alike (issue 20): a 70B pool's latency was modelled as [sizing].model's (8B).
    The 70B decodes slower per token on the same GPU, so 200 output tokens take longer."""
    from capplan.config import PoolConfig
    from capplan.plan.pools import resolve_pools

    cfg = CapplanConfig(pools=[PoolConfig(name="large", models=["m70"], model="llama-3.1-70b", gpu="H100-SXM-80GB",
                                          tensor_parallel=4)])
    (pool,) = resolve_pools(cfg, ["m70"])
    h = pd.DataFrame({"mean_ttft_ms": [None], "requests": [10], "avg_qps": [1.0]})
    default, _, _ = latency_without_logs(cfg, 1000, 200, h)
    large, source, note = latency_without_logs(cfg, 1000, 200, h, pool)
    assert source == "modelled" and "for llama-3.1-70b on H100-SXM-80GB" in note
    assert "llama-3.1-8b" in latency_without_logs(cfg, 1000, 200, h)[2]
    assert large > default
