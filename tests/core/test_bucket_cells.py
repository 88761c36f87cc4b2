"""The events per bucket and row, and the part of each row a source's buckets cover."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.core.bucket_cells import covered, split

#: Rows [0, 1), [1, 2), [2, 4), [4, 8), [8, 16).
EDGES = np.array([0.0, 1.0, 2.0, 4.0, 8.0, 16.0])


def laid_out(counts: list[int], rows: list[int]) -> np.ndarray:
    """Events per bucket and row, each event by itself: the i-th smallest is in the bucket and the row it reaches."""
    buckets = [b for b, n in enumerate(counts) for _ in range(n)]
    at = [s for s, n in enumerate(rows) for _ in range(n)]
    out = np.zeros((len(counts), len(rows)))
    for b, s in zip(buckets, at, strict=True):
        out[b, s] += 1
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=6), st.data())
def test_the_split_is_the_events_in_order_in_both(counts: list[int], data: st.DataObject) -> None:
    total = sum(counts)
    cuts = sorted(data.draw(st.lists(st.integers(0, total), min_size=4, max_size=4)))
    rows = np.diff([0, *cuts, total]).tolist()
    assert split(np.array(counts), np.array(rows)).tolist() == laid_out(counts, rows).tolist()


def test_a_rows_events_average_within_the_cells_of_the_buckets_they_came_from() -> None:
    """Buckets (0, 5] and (5, 10] holding 6 and 4; rows [2, 4), [4, 8), [8, 16) holding 3, 5, 2: the row [4, 8)
    holds 3 of the first (4-5) and 2 of the second (5-8); the row [8, 16) only the second's, up to 10."""
    low, high = covered(np.array([0.0, 5.0]), np.array([5.0, 10.0]), np.array([6, 4]), EDGES,
                        np.array([0, 0, 3, 5, 2]))
    assert low.tolist() == [0.0, 1.0, 2.0, (3 * 4 + 2 * 5) / 5, 8.0]
    assert high.tolist() == [1.0, 2.0, 4.0, (3 * 5 + 2 * 8) / 5, 10.0]


def test_rows_that_are_no_placement_of_the_buckets_take_the_cells_of_the_buckets_holding_events() -> None:
    """Totals that differ (an event carried in from another column): each row within the cells of the buckets
    holding events that reach it, the row itself where none does; an overflow bucket from its bound."""
    low, high = covered(np.array([0.0, 5.0, 10.0]), np.array([5.0, 10.0, math.inf]), np.array([0.5, 0.0, 2.0]),
                        EDGES, np.array([1, 0, 0, 1, 2]))
    assert low.tolist() == [0.0, 1.0, 2.0, 4.0, 10.0]
    assert high.tolist() == [1.0, 2.0, 4.0, 5.0, 16.0]
