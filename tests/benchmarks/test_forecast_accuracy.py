"""benchmarks/forecast_accuracy.py runs end to end at its ``--quick`` size on small generated data."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "forecast_accuracy.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("forecast_accuracy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_m4(folder: Path, n_series: int = 2, train_hours: int = 400) -> None:
    """M4-format files: one series per row, id first, padded with empty fields."""
    rng = np.random.default_rng(0)
    t = np.arange(train_hours + 48)
    rows = {f"H{i}": 100 + 30 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 3, t.size) for i in range(1, 2 * n_series, 2)}
    pd.DataFrame({k: v[:train_hours] for k, v in rows.items()}).T.to_csv(folder / "Hourly-train.csv")
    pd.DataFrame({k: v[train_hours:] for k, v in rows.items()}).T.to_csv(folder / "Hourly-test.csv")


def _write_servegen(folder: Path) -> None:
    """``series_id, hour, qps`` for two clients of two pools, 14 days, with a level shift and an outage hour."""
    rng = np.random.default_rng(1)
    hours = pd.date_range("2025-01-06", periods=336, freq="h")
    parts = []
    for sid, level in (("m-large-001", 5.0), ("m-small-002", 40.0)):
        shift = np.repeat(np.where(np.arange(14) >= 9, 1.5, 1.0), 24)
        qps = level * shift * np.exp(0.3 * np.sin(2 * np.pi * np.arange(336) / 24) + rng.normal(0, 0.1, 336))
        qps[100] = 0.0  # a logging outage
        parts.append(pd.DataFrame({"series_id": sid, "hour": hours, "qps": qps}))
    pd.concat(parts).to_csv(folder / "clients_hourly.csv", index=False)


@pytest.mark.slow
def test_quick_run_prints_both_suites(tmp_path, capsys):
    (tmp_path / "m4").mkdir()
    (tmp_path / "sg").mkdir()
    _write_m4(tmp_path / "m4")
    _write_servegen(tmp_path / "sg")
    _load_script().main(["--quick", "--workers", "1", "--limit", "2",
                         "--data", str(tmp_path / "m4"), "--servegen", str(tmp_path / "sg")])
    out = capsys.readouterr().out
    assert "M4 Hourly dev (test split): 2 series" in out
    assert "ServeGen clients" in out and "2 series" in out
    for column in ("x_snaive", "beats_snaive", "cover_80", "cover_95"):
        assert column in out
    assert "seasonal_naive_24h" in out and "auto" in out
    assert "simulated P90 of the day's peak" in out and "(below P50 " in out
    assert "skipped (--quick)" in out


def test_servegen_table_golden():
    script = _load_script()
    rows = [{"mase|auto": 0.5, "mase|seasonal_naive_24h": 1.0, "hits80|auto": 40, "hits95|auto": 46, "hours|auto": 48},
            {"mase|auto": 1.5, "mase|seasonal_naive_24h": 1.0, "hits80|auto": 36, "hits95|auto": 44, "hours|auto": 48}]
    table = script.servegen_table(rows)
    assert table.loc["auto", "MASE"] == pytest.approx(1.0)
    assert table.loc["auto", "x_snaive"] == pytest.approx(1.0)
    assert table.loc["auto", "beats_snaive"] == pytest.approx(0.5)
    assert table.loc["auto", "cover_80"] == pytest.approx(76 / 96)
    assert table.loc["auto", "cover_95"] == pytest.approx(90 / 96)
    assert np.isnan(table.loc["seasonal_naive_24h", "cover_80"])
