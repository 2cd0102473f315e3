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


def _write_servegen(folder: Path, held_out_factor: float = 1.0) -> None:
    """``series_id, hour, qps`` for two clients of two pools, 14 days, with a level shift and an outage hour;
    ``held_out_factor`` multiplies the protocol's scored hours (288+) only."""
    rng = np.random.default_rng(1)
    hours = pd.date_range("2025-01-06", periods=336, freq="h")
    parts = []
    for sid, level in (("m-large-001", 5.0), ("m-small-002", 40.0), ("m-large-003", 9.0)):
        shift = np.repeat(np.where(np.arange(14) >= 9, 1.5, 1.0), 24)
        qps = level * shift * np.exp(0.3 * np.sin(2 * np.pi * np.arange(336) / 24) + rng.normal(0, 0.1, 336))
        qps[100] = 0.0  # a logging outage
        qps[288:] *= held_out_factor
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


def test_servegen_tail_split_never_reads_the_scored_hours(tmp_path):
    """``--split tail``: train on hours 0-239, score 240-287, and nothing from hours 288+ (the protocol's scored
    days) reaches a client or a pool aggregate: with those hours multiplied by 1000 (and, apart, made NaN) the
    loaded series are the same, while the test split does see the change (so the check can fail)."""
    script = _load_script()
    for name, factor in (("clean", 1.0), ("scaled", 1000.0), ("missing", np.nan)):
        (tmp_path / name).mkdir()
        _write_servegen(tmp_path / name, held_out_factor=factor)
    clean = script.load_servegen(tmp_path / "clean", None, "tail")
    raw = pd.read_csv(tmp_path / "clean" / "clients_hourly.csv", parse_dates=["hour"])
    first = raw[raw["series_id"] == "m-large-001"]["qps"].to_numpy()
    assert [sid for sid, *_ in clean] == ["m-large-001", "m-large-003", "m-small-002", "pool:m-large", "pool:m-small"]
    for sid, train, test in clean:
        assert len(train) == 240 and len(test) == 48
        assert train.index[0] == pd.Timestamp("2025-01-06") and train.index[-1] == pd.Timestamp("2025-01-15 23:00")
    np.testing.assert_array_equal(clean[0][2], first[240:288])
    for name in ("scaled", "missing"):
        for (sid, train, test), (sid_c, train_c, test_c) in zip(script.load_servegen(tmp_path / name, None, "tail"),
                                                                clean, strict=True):
            assert sid == sid_c
            pd.testing.assert_series_equal(train, train_c)
            np.testing.assert_array_equal(test, test_c)
    scaled_test = script.load_servegen(tmp_path / "scaled", None, "test")
    clean_test = script.load_servegen(tmp_path / "clean", None, "test")
    assert [len(train) for _, train, _ in clean_test] == [288] * 5
    np.testing.assert_allclose(scaled_test[0][2], 1000 * clean_test[0][2])


def test_servegen_default_split_is_the_protocol(tmp_path):
    """The default (test) split trains on hours 0-287 and scores 288-335, as the dataset's README says."""
    _write_servegen(tmp_path)
    rows = _load_script().load_servegen(tmp_path, None)
    raw = pd.read_csv(tmp_path / "clients_hourly.csv", parse_dates=["hour"])
    first = raw[raw["series_id"] == "m-large-001"]["qps"].to_numpy()
    sid, train, test = rows[0]
    assert sid == "m-large-001" and len(train) == 288
    np.testing.assert_array_equal(train.to_numpy(), first[:288])
    np.testing.assert_array_equal(test, first[288:])


def _rows(values: list[tuple[float, float]]) -> list[dict]:
    """Benchmark rows with auto sMAPE/MASE as given and Naive2 at 10 / 1 (so OWA = 0.5·(sMAPE/10 + MASE))."""
    return [{"id": f"H{2 * i + 1}", "smape|auto": s, "mase|auto": m, "smape|Naive2": 10.0, "mase|Naive2": 1.0}
            for i, (s, m) in enumerate(values)]


def test_owa_half_noise_golden_one_pair_apart_and_none_for_alike_pairs():
    script = _load_script()
    # pairs whose two members are equal: every split gives the same halves, no noise
    alike = _rows([(5.0, 0.5), (5.0, 0.5), (8.0, 0.9), (8.0, 0.9), (2.0, 0.1), (2.0, 0.1)])
    assert script.owa_half_noise(alike) == 0.0
    # one pair differs (OWA 0.5·(4/10 + 0.4) against 0.5·(6/10 + 0.6)): with 2 pairs each half holds one
    # member of it, so the halves' OWA differ by ±(0.6 - 0.4)/2 = ±0.1 and the s.d. is 0.1 by hand
    apart = _rows([(4.0, 0.4), (6.0, 0.6), (5.0, 0.5), (5.0, 0.5)])
    assert script.owa_half_noise(apart, draws=4_000) == pytest.approx(0.1, rel=1e-9)
    # pairs are neighbours by series number, not by row order
    shuffled = [apart[2], apart[0], apart[3], apart[1]]
    assert script.owa_half_noise(shuffled, draws=4_000) == pytest.approx(0.1, rel=1e-9)
    assert np.isnan(script.owa_half_noise(apart[:3]))  # one pair: nothing to compare


def test_ratio_bootstrap_sd_golden():
    script = _load_script()
    naive = script.SEASONAL_NAIVE_24
    # every client at the same ratio (auto = 0.8 × the seasonal naive): any draw gives 0.8, no spread
    same = [{"mase|auto": 0.8 * b, f"mase|{naive}": b} for b in (1.0, 2.0, 0.5, 3.0)]
    assert script.ratio_bootstrap_sd(same) == pytest.approx(0.0, abs=1e-12)
    # two clients, seasonal naive 1 each, auto 0 and 2; a draw of two gives the ratio 0 (p 1/4), 1 (p 1/2)
    # or 2 (p 1/4): s.d. sqrt(1/2) by hand
    two = [{"mase|auto": 0.0, f"mase|{naive}": 1.0}, {"mase|auto": 2.0, f"mase|{naive}": 1.0}]
    assert script.ratio_bootstrap_sd(two, draws=200_000) == pytest.approx(np.sqrt(0.5), rel=0.01)
    assert np.isnan(script.ratio_bootstrap_sd(two[:1]))
