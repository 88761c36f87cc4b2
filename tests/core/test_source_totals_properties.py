"""SourceTotals' merging, in array operations whose cost grows with a column's own buckets, gives what the plain
Python merging it replaced gave, on random bucket sets: the same layouts, counts, and cases it refuses.

The reference below is that merging as it was (a Python loop over every bucket of the stream's totals per column,
some 240 HdrHistogram log lines a second), kept here to compare with.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from properties_support import scaled

from latencymap.core.model import SourceBuckets
from latencymap.core.source_totals import SourceTotals, coarsen_buckets, combine_buckets, merge_buckets

# -- the reference: the merging as it was


def _old_holds(bounds: tuple[float, ...], counts: np.ndarray) -> list[tuple[float, float]]:
    lowers = [0.0 if bounds[0] > 0 else -math.inf, *bounds[:-1]]
    return [(low, high) for low, high, n in zip(lowers, bounds, counts.tolist(), strict=True) if n]


def _old_split(union: np.ndarray, bounds: tuple[float, ...], counts: np.ndarray) -> np.ndarray:
    held = _old_holds(bounds, counts)
    if not held:
        return np.zeros(len(union), dtype=bool)
    lows = np.array([low for low, _ in held])
    highs = np.array([high for _, high in held])
    i = np.minimum(np.searchsorted(highs, union, side="left"), len(highs) - 1)
    return (lows[i] < union) & (union < highs[i])


def _old_merge(bounds_a: tuple[float, ...], counts_a: np.ndarray, bounds_b: tuple[float, ...],
               counts_b: np.ndarray) -> tuple[tuple[float, ...], np.ndarray, np.ndarray] | None:
    if not bounds_a or not bounds_b or math.isinf(bounds_a[-1]) != math.isinf(bounds_b[-1]):
        return None
    union = np.array(sorted(set(bounds_a) | set(bounds_b)), dtype=np.float64)
    out = []
    for bounds, counts in ((bounds_a, counts_a), (bounds_b, counts_b)):
        if _old_split(union, bounds, counts).any():
            return None
        moved = np.zeros(len(union), dtype=np.int64)
        moved[np.searchsorted(union, np.asarray(bounds, dtype=np.float64))] = counts
        out.append(moved)
    return tuple(union.tolist()), out[0], out[1]


def _old_combine(bounds_a: tuple[float, ...], counts_a: np.ndarray, bounds_b: tuple[float, ...],
                 counts_b: np.ndarray) -> tuple[tuple[float, ...], np.ndarray] | None:
    if bounds_a == bounds_b:
        return bounds_a, counts_a + counts_b
    if not counts_b.any():
        return bounds_a, counts_a.copy()
    if not counts_a.any():
        return bounds_b, counts_b.copy()
    merged = _old_merge(bounds_a, counts_a, bounds_b, counts_b)
    return None if merged is None else (merged[0], merged[1] + merged[2])


def _old_every_bucket(bounds: tuple[float, ...]) -> set[tuple[float, float]]:
    return set(zip([0.0 if bounds[0] > 0 else -math.inf, *bounds[:-1]], bounds, strict=True))


def _old_coarsen(bounds_a: tuple[float, ...], counts_a: np.ndarray, bounds_b: tuple[float, ...],
                 counts_b: np.ndarray) -> tuple[tuple[float, ...], np.ndarray] | None:
    if not bounds_a or not bounds_b or math.isinf(bounds_a[-1]) != math.isinf(bounds_b[-1]):
        return None
    union = np.array(sorted(set(bounds_a) | set(bounds_b)), dtype=np.float64)
    kept = union[~(_old_split(union, bounds_a, counts_a) | _old_split(union, bounds_b, counts_b))]
    out = np.zeros(len(kept), dtype=np.int64)
    for bounds, counts in ((bounds_a, counts_a), (bounds_b, counts_b)):
        np.add.at(out, np.searchsorted(kept, np.asarray(bounds, dtype=np.float64), side="left"), counts)
    layout = tuple(kept.tolist())
    own = _old_every_bucket(bounds_a) | _old_every_bucket(bounds_b)
    if any(bucket not in own for bucket in _old_holds(layout, out)):
        return None
    return layout, out


class _OldTotals:
    """`SourceTotals.add`'s layouts and counts as they were made."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds, self.counts, self.mixed = bounds, np.zeros(len(bounds), dtype=np.int64), False

    def add(self, source: SourceBuckets) -> None:
        if not len(source.bounds):
            return
        counts = np.asarray(source.counts, dtype=np.int64)
        at = None if self.mixed else self._within(np.asarray(source.bounds, dtype=np.float64), counts)
        if at is not None:
            np.add.at(self.counts, at, counts)
            return
        bounds = tuple(map(float, source.bounds))
        if self.mixed and bounds != self.bounds:
            return
        combined = _old_combine(self.bounds, self.counts, bounds, counts) or \
            _old_coarsen(self.bounds, self.counts, bounds, counts)
        if combined is None:
            self.mixed = True
            return
        self.bounds, self.counts = combined

    def _within(self, highs: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
        if not self.bounds or math.isinf(highs[-1]) != math.isinf(self.bounds[-1]):
            return None
        ours = np.asarray(self.bounds, dtype=np.float64)
        our_lows = np.concatenate(([0.0 if ours[0] > 0 else -math.inf], ours[:-1]))
        at = np.searchsorted(ours, highs)
        held = counts > 0
        if int(at[held].max(initial=0)) >= len(ours):
            return None
        at = np.minimum(at, len(ours) - 1)
        low, our_low = np.concatenate(([0.0 if highs[0] > 0 else -math.inf], highs[:-1])), our_lows[at]
        same = (ours[at] == highs) & (our_low == low)
        inside = (our_low <= low) & (self.counts[at] > 0)
        return at if (same | inside | ~held).all() else None


# -- random bucket sets: layouts drawn from one grid (so that they share bounds, nest or cross), some with +Inf

#: Bounds a layout picks from: 0 and below (a first bucket from -inf), eighths, halves, whole numbers.
GRID = sorted({-2.0, -0.5, 0.0, *(i / 8 for i in range(1, 17)), *(i / 2 for i in range(1, 17)),
               *map(float, range(9, 40))})


@st.composite
def layouts(draw: st.DrawFn) -> SourceBuckets:
    """One column: rising bounds from the grid (an overflow bucket or not) and counts, many of them 0."""
    picked = draw(st.lists(st.sampled_from(GRID), min_size=1, max_size=14, unique=True))
    bounds = sorted(picked) + ([math.inf] if draw(st.booleans()) else [])
    counts = draw(st.lists(st.sampled_from([0, 0, 0, 1, 2, 7]), min_size=len(bounds), max_size=len(bounds)))
    return SourceBuckets(np.array(bounds), np.array(counts, dtype=np.int64), None)


def _same(new: tuple | None, old: tuple | None) -> None:
    """Results of a merge alike: both refused, or the same layout and counts."""
    assert (new is None) == (old is None)
    if new is not None and old is not None:
        assert tuple(new[0]) == tuple(old[0])
        for a, b in zip(new[1:], old[1:], strict=True):
            assert a.tolist() == b.tolist()


@given(layouts(), layouts())
@scaled(300)
def test_merging_two_bucket_sets_gives_what_the_python_merging_gave(a: SourceBuckets, b: SourceBuckets) -> None:
    pair = (tuple(a.bounds.tolist()), a.counts, tuple(b.bounds.tolist()), b.counts)
    _same(merge_buckets(*pair), _old_merge(*pair))
    _same(combine_buckets(*pair), _old_combine(*pair))
    _same(coarsen_buckets(*pair), _old_coarsen(*pair))


@given(st.lists(layouts(), min_size=1, max_size=10))
@scaled(300)
def test_a_stream_of_random_columns_adds_up_as_the_python_merging_added_it(columns: list[SourceBuckets]) -> None:
    first = tuple(map(float, columns[0].bounds))
    totals, old = SourceTotals(first), _OldTotals(first)
    for column in columns:
        totals.add(column)
        old.add(column)
        assert totals.mixed == old.mixed
        assert totals.bounds == old.bounds and totals.counts.tolist() == old.counts.tolist()
