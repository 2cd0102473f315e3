"""``forecasting.api.select``: the combination chosen from backtest forecasts alone, as ``fit`` chooses it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from capplan.forecasting import MODELS, backtest, fit
from capplan.forecasting.api import default_candidates, select, selection_windows
from capplan.forecasting.metrics import mase_scale
from capplan.forecasting.prepare import steps_per_day


def _identity(v):
    return v


def _candidates(misses: dict[str, float], windows: int = 3, steps: int = 4) -> dict[str, np.ndarray]:
    """Backtest forecasts missing an all-zero actual by a constant per candidate (MASE = the miss at scale 1)."""
    return {c: np.full((windows, steps), miss) for c, miss in misses.items()}


def test_golden_sizes_tolerance_and_duplicates():
    # misses 0.2, 0.4, 0.6, 0.8, 1.0, 1.2 (a sixth, "f2", equal to "f"): the duplicate is dropped before ranking.
    # Cross-validated means: best 3 -> 0.4, best 5 -> 0.6, all 6 distinct -> 0.7 (= mean of 0.2..1.2).
    # Default tolerance 0.10: 0.6 > 1.1 x 0.4, so 3; tolerance 0.5 takes 5 (0.6 <= 0.6); 0.75 takes all 6.
    misses = {"a": 0.2, "b": 0.4, "c": 0.6, "d": 0.8, "e": 1.0, "f": 1.2}
    fc_z = {**_candidates(misses), "f2": np.full((3, 4), 1.2)}
    names = ("f", "e", "d", "c", "b", "a", "f2")
    actual = np.zeros((3, 4))
    components, scores, cv = select(names, fc_z, actual, _identity, 1.0, single_gain=0.0)
    assert components == ("a", "b", "c") and "f2" not in scores
    assert cv["3"] == pytest.approx(0.4) and cv["5"] == pytest.approx(0.6) and cv["all"] == pytest.approx(0.7)
    assert select(names, fc_z, actual, _identity, 1.0, tolerance=0.5, single_gain=0.0)[0] == ("a", "b", "c", "d", "e")
    assert len(select(names, fc_z, actual, _identity, 1.0, tolerance=0.75, single_gain=0.0)[0]) == 6
    # "a" alone (0.2) is half the best combination (0.4): the default single gain 0.5 takes it alone
    assert select(names, fc_z, actual, _identity, 1.0)[0] == ("a",)
    # one size asked for: that size, no cross-validation
    assert select(names, fc_z, actual, _identity, 1.0, sizes=(0,)) == (("a", "b", "c", "d", "e", "f"), scores, {})


def test_a_candidate_failing_in_a_window_is_not_ranked_and_all_failing_gives_none():
    fc_z = _candidates({"a": 0.2, "b": 0.4, "c": 0.6, "d": 0.8})
    fc_z["a"][1] = np.nan
    components, scores, _ = select(tuple(fc_z), fc_z, np.zeros((3, 4)), _identity, 1.0, sizes=(0,))
    assert components == ("b", "c", "d") and not np.isfinite(scores["a"]["mase"])
    failed = {c: np.full((3, 4), np.nan) for c in "ab"}
    assert select(("a", "b"), failed, np.zeros((3, 4)), _identity, 1.0)[0] == ()


def test_select_on_fits_backtests_is_fits_choice():
    """Replayed from the backtest forecasts ``fit`` ranks on, ``select`` returns ``fit``'s components."""
    rng = np.random.default_rng(3)
    t = np.arange(24 * 20)
    y = pd.Series(np.exp(3 + 0.4 * np.sin(2 * np.pi * t / 24) + np.repeat(rng.normal(0, 0.3, 20), 24)
                         + rng.normal(0, 0.1, t.size)), index=pd.date_range("2025-01-06", periods=t.size, freq="h"))
    result = fit(y, 48, (24,))
    names = default_candidates(result.seasons, len(result.z), steps_per_day(y.index))
    h_bt, _, _, cuts = selection_windows(len(result.z), 48, 3)
    assert cuts == result.info["backtest"]["train_lengths"]
    fc_z = backtest.run_backtest(result.z, {c: MODELS[c] for c in names}, h_bt, result.seasons, cuts)
    y_act = result.to_y(backtest.actuals(result.z, h_bt, cuts))
    scale = mase_scale(result.to_y(result.z), result.seasons[0])
    components, scores, cv = select(names, fc_z, y_act, result.to_y, scale)
    assert components == result.components
    assert cv == result.info["combination"]["cross_validated_mase"]
    assert scores.items() <= result.info["backtest"]["scores"].items()
