"""Tests of capplan.profile.kernels: the compiled counting gives exactly what the numpy code gives."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as arrow
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from capplan import profile
from capplan.profile import kernels
from capplan.profile.counting import TIME_LIMIT_MS, WindowRollup, _time_bin_tables, log_bins

INV_LN_GAMMA = 1 / math.log(profile.HISTOGRAM_GAMMA)


def test_a_cell_is_narrower_than_a_bin():
    """The lookup takes a cell's bin or the next one: only right while no cell spans a whole bin
    (a cell: 2^-8 of its binade at most, 0.39 %; a bin: γ − 1 = 2 %)."""
    assert 1 + 2.0 ** -(52 - kernels.CELL_SHIFT) < profile.HISTOGRAM_GAMMA


def test_time_bins_equal_log_bins_around_every_edge():
    """Every edge γ^k of the bins that doubles below 2^63 reach, the 64 doubles either side of it and of
    each bin's first double as the tables hold it, every cell's first double, whole numbers to 2^20 and
    log-normal times: bit for bit ``log_bins``."""
    cell_bin, first = _time_bin_tables(INV_LN_GAMMA)
    edges = profile.HISTOGRAM_GAMMA ** np.arange(-5, 2200, dtype=float)
    around = np.concatenate([edges, first[np.isfinite(first)]]).view(np.int64)[:, None] + np.arange(-64, 65)
    cells = ((np.arange(len(cell_bin), dtype=np.int64) << kernels.CELL_SHIFT)
             + np.float64(1.0).view(np.int64)).view(np.float64)
    rng = np.random.default_rng(11)
    values = np.concatenate([around.ravel().view(np.float64), cells, np.arange(1 << 20, dtype=float),
                             rng.lognormal(6, 3, 200_000), [0.0, -0.0, 0.5, 0.999999, -3.0, -np.inf]])
    values = values[(values < TIME_LIMIT_MS) & ~np.isnan(values)]
    np.testing.assert_array_equal(kernels.time_bins(values, cell_bin, first), log_bins(values, INV_LN_GAMMA))


@settings(max_examples=300, deadline=None)
@given(x=st.floats(min_value=-1e6, max_value=TIME_LIMIT_MS, exclude_max=True, allow_nan=False))
@example(x=1.0)
@example(x=float(np.nextafter(1.0, 0)))
@example(x=float(np.nextafter(TIME_LIMIT_MS, 0)))
def test_time_bin_of_any_time_equals_log_bins(x):
    cell_bin, first = _time_bin_tables(INV_LN_GAMMA)
    values = np.array([x, np.nextafter(x, 0), np.nextafter(x, np.inf)])
    values = values[values < TIME_LIMIT_MS]
    np.testing.assert_array_equal(kernels.time_bins(values, cell_bin, first), log_bins(values, INV_LN_GAMMA))


def _batch(ts_us, tokens, ttft_ms, latency_ms, model=None) -> arrow.RecordBatch:
    n = len(ts_us)
    return arrow.record_batch({
        "ts_us": arrow.array(ts_us, arrow.int64()),
        "model_index": arrow.array(np.zeros(n, int) if model is None else model, arrow.int32()),
        "status_class": arrow.array(np.arange(n) % 3, arrow.uint8()),
        "input_tokens": arrow.array(tokens, arrow.int64()), "output_tokens": arrow.array(tokens[::-1], arrow.int64()),
        "ttft_ms": arrow.array(ttft_ms, arrow.float64()), "latency_ms": arrow.array(latency_ms, arrow.float64())})


def test_time_sums_are_numpys_to_the_last_bit():
    """Per batch from 0 in row order, then added to the window's: as ``np.bincount`` with weights, not
    just within a tolerance (two batches, one hour, one model; no time below 1 ms is special)."""
    rng = np.random.default_rng(2)
    batches = [rng.lognormal(5, 2, 1000) for _ in range(2)]
    rollup = WindowRollup(0, 1, ["m"], INV_LN_GAMMA, in_flight=False)
    for ms in batches:
        rollup.add(_batch(np.arange(len(ms)) * 1000, np.arange(len(ms)), ms, ms[::-1]))
    want = np.zeros(1)
    for ms in batches:
        want += np.bincount(np.zeros(len(ms), int), weights=ms)
    traffic = rollup.traffic("__all__")
    assert traffic["ttft_ms_sum"].to_pylist() == [want[0], want[0]]  # the model and all models: equal, not close


@pytest.mark.parametrize("odd", ["huge_time", "many_tokens", "negative_tokens"])
def test_values_beyond_the_compiled_range_are_counted_as_before(odd):
    """A batch with a time of 2^63 ms or more, or tokens outside the lookup table, is counted
    by the numpy passes: the same tables as the sparse path (numpy throughout)."""
    ms = np.array([0.4, 1.0, 250.0, np.nan, 3e4])
    tokens = np.array([0, 1, 70, 5000, 12])
    if odd == "huge_time":
        ms[2] = 2.0 ** 64
    elif odd == "many_tokens":
        tokens[1] = 1 << 23
    else:
        tokens[1] = -4
    batch = _batch(np.arange(5) * 10**6, tokens, ms, np.abs(np.nan_to_num(ms, nan=7.0)) + 1, model=[0, 1, 0, 1, 1])
    tables = []
    for dense in (True, False):
        rollup = WindowRollup(0, 1, ["a", "b"], INV_LN_GAMMA, in_flight=False, dense=dense)
        rollup.add(batch)
        tables.append([rollup.traffic("__all__").sort_by([("model", "ascending")]),
                       rollup.histogram("__all__").sort_by([(k, "ascending") for k in ("model", "metric", "bin")])])
    for dense, sparse in zip(*tables, strict=True):
        assert dense.equals(sparse)
