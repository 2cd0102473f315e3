"""benchmarks/forecast_selection.py replays ``fit``'s own choice exactly, on generated M4- and ServeGen-shaped data."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

pytestmark = pytest.mark.slow


def _load_script():
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("forecast_selection", BENCHMARKS / "forecast_selection.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_data(folder: Path) -> tuple[Path, Path]:
    """Two M4-format series (train 400 h, test 48 h) and three ServeGen clients of two pools (14 days) with a
    level shift on day 9 and a logging outage hour."""
    rng = np.random.default_rng(0)
    (folder / "m4").mkdir()
    (folder / "sg").mkdir()
    t = np.arange(448)
    m4 = {f"H{i}": 100 + 30 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 3 + i, t.size) for i in (1, 3)}
    pd.DataFrame({k: v[:400] for k, v in m4.items()}).T.to_csv(folder / "m4" / "Hourly-train.csv")
    pd.DataFrame({k: v[400:] for k, v in m4.items()}).T.to_csv(folder / "m4" / "Hourly-test.csv")
    hours = pd.date_range("2025-01-06", periods=336, freq="h")
    parts = []
    for sid, level in (("m-large-001", 5.0), ("m-small-002", 40.0), ("m-large-003", 9.0)):
        shift = np.repeat(np.where(np.arange(14) >= 9, 1.5, 1.0), 24)
        qps = level * shift * np.exp(0.3 * np.sin(2 * np.pi * np.arange(336) / 24) + rng.normal(0, 0.2, 336))
        qps[100] = 0.0
        parts.append(pd.DataFrame({"series_id": sid, "hour": hours, "qps": qps}))
    pd.concat(parts).to_csv(folder / "sg" / "clients_hourly.csv", index=False)
    return folder / "m4", folder / "sg"


def test_replay_of_the_default_rule_is_fits_choice_and_the_cache_is_reused(tmp_path, capsys, monkeypatch):
    m4, sg = _write_data(tmp_path)
    script = _load_script()
    args = ["--workers", "1", "--draws", "20", "--data", str(m4), "--servegen", str(sg),
            "--cache", str(tmp_path / "fits.pkl")]
    script.main(args)
    first = capsys.readouterr().out
    assert "servegen (test split): 5 series; replay = fit (components and forecast) on 5 of 5" in first
    assert "m4 (test split): 2 series; replay = fit (components and forecast) on 2 of 2" in first
    for rule in (*script.RULES, "best candidate, chosen on the test (oracle)"):
        assert rule in first
    assert "x_snaive_minus_default" in first and "OWA_minus_default" in first and "blow_ups" in first
    # the second run reads the fits back (fitting again would fail): the same tables (timings aside)
    def no_refit(_):
        raise AssertionError("refitted although the cache holds these fits")

    monkeypatch.setattr(script, "prepare_series", no_refit)
    script.main(args)
    second = capsys.readouterr().out
    strip = lambda out: [line.split("; fits ")[0] for line in out.splitlines()]  # noqa: E731
    assert strip(second) == strip(first)


def test_rules_differ_where_they_should(tmp_path, monkeypatch):
    """On one prepared series, "all candidates" averages every distinct candidate, the default rule fewer or
    equal, and each rule ranks on as many of the latest windows as it asks for."""
    _, sg = _write_data(tmp_path)
    script = _load_script()
    rows = script.load_rows("servegen", "test", 1, 1, tmp_path, sg, None)
    row = rows[0]
    assert len(row["cuts"]) == script.MAX_WINDOWS and row["cuts"][-3:] == row["fit"].info["backtest"]["train_lengths"]
    original, seen = script.select_pools, []

    def recording_select(names, fc_z, y_act, to_y, scale, **kwargs):
        seen.append(y_act)
        return original(names, fc_z, y_act, to_y, scale, **kwargs)

    monkeypatch.setattr(script, "select_pools", recording_select)
    for windows in (3, 4, 5):
        script.replay(row, windows, {})
        y_act, _ = script.selection_targets(row["fit"].z, row["fit"].to_y, row["fit"].seasons, row["h_bt"],
                                            row["cuts"][-windows:])
        np.testing.assert_array_equal(seen[-1], y_act)  # the latest `windows` windows, not the first
    everything, _ = script.replay(row, *script.RULES["all candidates"])
    default, _ = script.replay(row, *script.RULES["default"])
    assert len(default) <= len(everything) and set(default) <= set(everything)
    assert len(everything) == len({tuple(f.ravel()) for f in row["fc_bt"].values()})  # distinct candidates
    table = script.table(rows, "servegen", draws=10)
    assert table.loc["default", "x_snaive_minus_default"] == 0 and table.loc["default", "paired_sd"] == 0
