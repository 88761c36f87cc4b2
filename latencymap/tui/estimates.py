"""The one way the TUI estimates percentiles of its cells: the overview's numbers, its heat strips and the map's
percentile strip all read a bucket as the report and the inspector do, with its exact time spent where the source gave
it and the values seen in it, so that no panel shows a percentile past the largest value the data holds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import NSLOTS
from latencymap.core.percentiles import open_percentiles, overflow_bounds, percentile_estimates

#: A history and rows of its slots: counts (rows, NSLOTS), and the exact seconds spent per (row, slot), NaN where
#: not exact (None: none is)
Rows = tuple[StreamHistory, np.ndarray, np.ndarray | None]
#: Per row of a `Rows`: the events in its columns' overflow buckets (`+Inf`) whose values are not known, and those
#: buckets' smallest lower bound (s; NaN: none): `StreamHistory.overflow_in`
Overflow = tuple[np.ndarray, np.ndarray]


def cell_estimates(parts: Sequence[Rows], qs: tuple[float, ...]) -> np.ndarray:
    """Percentiles (seconds, (rows, len(qs))) of the rows of every part, stacked in order: histories of one unit and
    datasource (one set of buckets), each row bounded by the values its history saw in each slot; NaN for empty rows."""
    sizes = [len(counts) for _, counts, _ in parts]
    if not sum(sizes):
        return np.full((0, len(qs)), np.nan)
    counts = np.concatenate([counts for _, counts, _ in parts])
    times = np.concatenate([np.full((n, NSLOTS), np.nan) if spent is None else spent
                            for n, (_, _, spent) in zip(sizes, parts, strict=True)])
    seen = None
    if any(hist.seen is not None for hist, _, _ in parts):
        least, most = np.full(counts.shape, np.nan), np.full(counts.shape, np.nan)
        row = 0
        for n, (hist, _, _) in zip(sizes, parts, strict=True):
            if hist.seen is not None:
                least[row: row + n], most[row: row + n] = hist.seen
            row += n
        seen = (least, most)
    hist0 = parts[0][0]
    out: np.ndarray = percentile_estimates(counts, hist0.low, hist0.high, qs, times=times, seen=seen)
    return out


def bounded_estimates(parts: Sequence[Rows], overflow: Sequence[Overflow],
                      qs: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """`cell_estimates`, and which of them are a lower bound only (bool, same shape): in the rows' open top slot
    (`open_percentiles`), or past a rebinned source's largest finite bound, the value then that bound
    (`overflow_bounds`); `overflow` per part, in order."""
    values = cell_estimates(parts, qs)
    if not len(values):
        return values, np.zeros(values.shape, dtype=bool)
    at_least = np.concatenate([open_percentiles(counts, qs, seen=hist.seen) for hist, counts, _ in parts])
    events = np.concatenate([counts.sum(axis=1, dtype=np.float64) for _, counts, _ in parts])
    over, bound = (np.concatenate(side) for side in zip(*overflow, strict=True))
    bounded: tuple[np.ndarray, np.ndarray] = overflow_bounds(values, at_least, events, over, bound, qs)
    return bounded
