"""``forecasting.api.select``: the combination chosen from backtest forecasts alone, as ``fit`` chooses it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from capplan.forecasting import MODELS, backtest, fit
from capplan.forecasting.api import default_candidates, select, selection_targets, selection_windows
from capplan.forecasting.prepare import steps_per_day


def _identity(v):
    return v


def _candidates(misses: dict[str, float], windows: int = 3, steps: int = 4) -> dict[str, np.ndarray]:
    """Backtest forecasts missing an all-zero actual by a constant per candidate (MASE = the miss at scale 1)."""
    return {c: np.full((windows, steps), miss) for c, miss in misses.items()}


def test_golden_sizes_tolerance_and_duplicates():
    # misses 0.25, 0.5, ..., 1.5 (exact in binary, so the ties below are exact) and "f2", equal to "f", which is
    # dropped before ranking. Cross-validated means: best 3 -> 0.5, best 5 -> 0.75, all 6 distinct -> 0.875.
    # Default tolerance 0.10: 0.75 > 1.1 x 0.5, so 3; tolerance 0.5 takes 5 (0.75 <= 1.5 x 0.5, a tie: a
    # larger size within the tolerance wins); 0.75 takes all 6 (0.875 <= 1.75 x 0.5, a tie).
    misses = {"a": 0.25, "b": 0.5, "c": 0.75, "d": 1.0, "e": 1.25, "f": 1.5}
    fc_z = {**_candidates(misses), "f2": np.full((3, 4), 1.5)}
    names = ("f", "e", "d", "c", "b", "a", "f2")
    actual = np.zeros((3, 4))
    components, scores, cv = select(names, fc_z, actual, _identity, 1.0, single_gain=0.0)
    assert components == ("a", "b", "c") and "f2" not in scores
    assert cv == {"3": 0.5, "5": 0.75, "all": 0.875, "1": 0.25}
    assert select(names, fc_z, actual, _identity, 1.0, tolerance=0.5, single_gain=0.0)[0] == ("a", "b", "c", "d", "e")
    assert len(select(names, fc_z, actual, _identity, 1.0, tolerance=0.75, single_gain=0.0)[0]) == 6
    # "a" alone (0.25) is exactly half the best combination (0.5): the default single gain 0.5 takes it alone,
    # a gain a little below half does not
    assert select(names, fc_z, actual, _identity, 1.0)[0] == ("a",)
    assert select(names, fc_z, actual, _identity, 1.0, single_gain=0.49)[0] == ("a", "b", "c")
    # one size asked for: that size, no cross-validation
    assert select(names, fc_z, actual, _identity, 1.0, sizes=(0,)) == (("a", "b", "c", "d", "e", "f"), scores, {})


@pytest.mark.parametrize("sizes", [(), (1, 3), (-1, 0)])
def test_sizes_that_are_not_combinations_are_refused(sizes):
    fc_z = _candidates({"a": 0.25, "b": 0.5, "c": 0.75, "d": 1.0})
    with pytest.raises(ValueError, match="sizes must be"):
        select(tuple(fc_z), fc_z, np.zeros((3, 4)), _identity, 1.0, sizes=sizes)


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
    y_act, scale = selection_targets(result.z, result.to_y, result.seasons, h_bt, cuts)
    components, scores, cv = select(names, fc_z, y_act, result.to_y, scale)
    assert components == result.components
    assert cv == result.info["combination"]["cross_validated_mase"]
    assert scores.items() <= result.info["backtest"]["scores"].items()


def test_golden_pool_choice_between_the_test_verdict_and_the_unconfirmed_day():
    from capplan.forecasting.api import select_pools

    actual = np.zeros((3, 4))
    # without the day: misses 0.5, 0.75, 1.0, 1.25 -> cross-validated best 3: 0.75, all 4: 0.875 (> 1.1 x 0.75),
    # alone 0.5 (> half of 0.75): 3 at 0.75. With the day: 0.375, 0.625, 0.875, 1.125 -> best 3 at 0.625, all
    # 0.75, alone 0.375: 3 at 0.625, lower, so the day is used. (Exact binary fractions: the ties are exact.)
    plain = {"a": 0.5, "b": 0.75, "c": 1.0, "d": 1.25}
    cycled = {f"{c}@24": miss - 0.125 for c, miss in plain.items()}
    fc_z = _candidates({**plain, **cycled})
    names = (*plain, *cycled)
    components, scores, cv, choice = select_pools(names, fc_z, actual, _identity, 1.0)
    assert components == ("a@24", "b@24", "c@24") and set(scores) == set(names)
    assert cv == {"3": 0.625, "all": 0.75, "1": 0.375}
    assert choice == {"steps": 24, "used": True, "cross_validated_mase": {"without": 0.75, "with": 0.625}}
    # equal scores: the test's verdict (no cycle) stands
    tie = _candidates({**plain, **{f"{c}@24": miss for c, miss in plain.items()}})
    components, _, _, choice = select_pools(names, tie, actual, _identity, 1.0)
    assert components == ("a", "b", "c") and choice["used"] is False
    # a cycle pool that failed in every window is never chosen
    failed = {**fc_z, **{c: np.full((3, 4), np.nan) for c in cycled}}
    components, _, _, choice = select_pools(names, failed, actual, _identity, 1.0)
    assert components == ("a", "b", "c") and choice["cross_validated_mase"]["with"] == float("inf")
    # no cycle pool: select's result and no choice
    assert select_pools(tuple(plain), fc_z, actual, _identity, 1.0) == (*select(tuple(plain), fc_z, actual,
                                                                                _identity, 1.0), None)


def test_pools_are_compared_on_left_out_windows_even_where_select_had_no_size_to_choose():
    from capplan.forecasting.api import select_pools

    # Two windows, one size (2), so select cross-validates nothing. Without the day: c (1, 1), a (0, 3),
    # b (3, 0), d (2, 2) per window -> c and a chosen, backtest MASE (0.5 + 2) / 2 = 1.25; left out, each
    # window gets the two best on the other window (b, c for the first: 2; a, c for the second: 2) -> 2.0.
    # With the day: 1.5 and 1.75 in both windows -> 1.625 either way. Compared in-sample, the day would
    # lose (1.625 > 1.25); on left-out windows it wins (1.625 < 2.0).
    misses = {"c": (1, 1), "a": (0, 3), "b": (3, 0), "d": (2, 2), "a@24": (1.5, 1.5), "b@24": (1.75, 1.75)}
    fc_z = {c: np.repeat(np.array(m, dtype=float)[:, None], 4, axis=1) for c, m in misses.items()}
    components, _, cv, choice = select_pools(tuple(misses), fc_z, np.zeros((2, 4)), _identity, 1.0, sizes=(2,))
    assert components == ("a@24", "b@24") and cv == {}
    assert choice["cross_validated_mase"] == {"without": 2.0, "with": 1.625} and choice["used"] is True
    # mixed periods are refused: one unconfirmed day per series
    with pytest.raises(ValueError, match="one period"):
        select_pools(("c", "a@24", "a@168"), {**fc_z, "a@168": fc_z["a"]}, np.zeros((2, 4)), _identity, 1.0)
