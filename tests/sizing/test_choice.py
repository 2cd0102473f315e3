"""The automatic GPU choice equals a brute-force search, and orders its candidates as documented."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capplan.sizing.choice import SizedOption, choose_gpu

GPUS = ("A", "B", "C", "D")
DEGREES = (1, 2, 4, 8)

option = st.one_of(st.none(), st.tuples(st.integers(1, 60), st.floats(100, 1e5), st.floats(0.5, 20)))


@settings(max_examples=200, deadline=None)
@given(table=st.lists(option, min_size=len(GPUS) * len(DEGREES), max_size=len(GPUS) * len(DEGREES)),
       target=st.one_of(st.none(), st.floats(0.5, 20)))
def test_choice_equals_brute_force(table, target):
    cells = {(g, tp): table[i * len(DEGREES) + j] for i, g in enumerate(GPUS) for j, tp in enumerate(DEGREES)}
    if all(v is None for v in cells.values()):
        with pytest.raises(ValueError, match="fits on none"):
            choose_gpu(cells, lambda g, tp: None, lambda g, o: 0.0)
        return

    def size(g, tp):
        cell = cells[(g, tp)]
        return None if cell is None else SizedOption(gpus=cell[0], tensor_parallel=tp, binding="memory",
                                                     latency_s=cell[2])

    choice = choose_gpu(list(cells), size, lambda g, o: cells[(g, o.tensor_parallel)][1], latency_target_s=target)
    feasible = [(g, tp, v) for (g, tp), v in cells.items() if v is not None]
    meeting = [c for c in feasible if target is None or c[2][2] <= target]
    pool = meeting or feasible
    best = min(pool, key=lambda c: (c[2][1], c[2][0], c[0], c[1]))
    assert (choice.chosen.gpu, choice.chosen.tensor_parallel) == best[:2]
    assert choice.chosen.meets_latency == bool(meeting)
    assert len(choice.candidates) == len(feasible)
    if choice.next_best is not None:
        assert choice.saving_usd_per_month >= 0 and choice.next_best.meets_latency


def test_latency_target_overrules_price_and_the_saving_is_against_the_next_best():
    table = {("cheap", 1): (4, 100.0, 9.0), ("mid", 1): (6, 150.0, 2.0), ("dear", 2): (8, 400.0, 1.0)}
    choice = choose_gpu(list(table), lambda g, tp: SizedOption(table[(g, tp)][0], tp, "throughput", table[(g, tp)][2]),
                        lambda g, o: table[(g, o.tensor_parallel)][1], latency_target_s=3.0)
    assert [c.gpu for c in choice.candidates] == ["mid", "dear", "cheap"]  # cheap misses the target: last
    assert choice.saving_usd_per_month == 250.0
    assert [r["chosen"] for r in choice.rows()] == [True, False, False]
