"""Sums read a chunk of rows at a time equal NumPy's over the whole array, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from latencymap.core import chunked

VALUES = [0.0, -0.0, 1e-6, 1 / 3, 0.1, 7.25, 3e5, 1e300, -2.5, float("nan"), float("inf")]


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    """(rows, width) float64 arrays: mostly random magnitudes (sums that depend on their order), some special."""
    rows, width = draw(st.integers(0, 300)), draw(st.integers(1, 70))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.random((rows, width)) * 10.0 ** rng.integers(-9, 6, (rows, width))
    a[rng.random((rows, width)) < draw(st.sampled_from([0.0, 0.5, 0.95]))] = 0.0  # a narrow window, as streams use
    if draw(st.booleans()) and a.size:
        a.flat[rng.integers(0, a.size, 3)] = draw(st.lists(st.sampled_from(VALUES), min_size=3, max_size=3))
    return a


def same(x: float | np.ndarray, y: float | np.ndarray) -> bool:
    return np.asarray(x, dtype=np.float64).tobytes() == np.asarray(y, dtype=np.float64).tobytes()


@settings(max_examples=300, deadline=None)
@given(a=arrays(), size=st.integers(1, 40))
def test_slot_sums_of_chunks_are_numpys_over_the_whole_array(a: np.ndarray, size: int) -> None:
    parts = [a[s] for s in chunked.spans(len(a), size)]
    assert same(chunked.slot_sums(parts, a.shape[1]), a.sum(axis=0))
    picked = np.arange(len(a)) % 3 != 1  # rows picked by a mask, as the baseline's columns are
    assert same(chunked.slot_sums((p[picked[s]] for p, s in zip(parts, chunked.spans(len(a), size), strict=True)),
                                  a.shape[1]), a[picked].sum(axis=0))


@settings(max_examples=300, deadline=None)
@given(a=arrays(), leaf=st.integers(1, 600))
def test_a_flat_sum_read_in_parts_is_numpys_over_the_whole_array(a: np.ndarray, leaf: int) -> None:
    reads: list[int] = []

    def read(i: int, j: int) -> np.ndarray:
        reads.append(j - i)
        return a[i:j]

    assert same(chunked.flat_sum(read, *a.shape, leaf=leaf), float(a.sum()))
    assert all(rows * a.shape[1] <= max(leaf, 128) + 2 * a.shape[1] for rows in reads)  # a part's rows at most


def test_a_day_of_columns_sums_the_same_in_chunks() -> None:
    rng = np.random.default_rng(7)
    a = np.zeros((86_400, 64))
    a[:, 9:15] = rng.random((86_400, 6)) * 1e-3
    a[::997, 40] = rng.random(len(a[::997]))
    assert same(chunked.flat_sum(lambda i, j: a[i:j], *a.shape), float(a.sum()))
    assert same(chunked.slot_sums((a[s] for s in chunked.spans(len(a))), 64), a.sum(axis=0))
