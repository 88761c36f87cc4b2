"""The overview's heat strips: the p99 of every cell of each stream on the shared time axis, on one colour scale.
A cell whose p99 is a lower bound only (past a rebinned source's largest finite bound, or in the rows' open top slot:
`bounded_estimates`) is coloured as that bound and marked open, as its figures are written `≥low`."""

from __future__ import annotations

import math

import numpy as np

from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import NSLOTS
from latencymap.core.model import StreamId
from latencymap.tui.estimates import Overflow, bounded_estimates
from latencymap.tui.window import Window

#: A heat strip's p99 (seconds) per cell, NaN where a cell has no events, and which of them are a lower bound only.
P99Strip = tuple[np.ndarray, np.ndarray]


def strip_p99(hist: StreamHistory, stop: int, cells: int, zoom: int = 1) -> P99Strip:
    """p99 of each of the `cells` cells ending at history index `stop` (`P99Strip`)."""
    win = Window(min(stop, hist.n), cells, zoom)
    values, at_least = bounded_estimates([(hist, win.cell_counts(hist), win.cell_means(hist))],
                                         [win.cell_overflow(hist)], (0.99,))
    return values[:, 0], at_least[:, 0]


def cells_by_time(hist: StreamHistory, stop: int, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, Overflow]:
    """Counts and seconds spent per (cell, slot) of the columns before history index `stop` whose end falls in
    (edges[k], edges[k+1]] (seconds NaN in a cell with a column whose time is not exact, as `Window.cell_means`), and
    per cell those columns' overflow (`Window.cell_overflow`); a cell no column ends in takes the column whose time
    covers its middle, if any (a stream whose columns are a little longer than the cells: no false gap). Only the
    columns on the axis are read."""
    cells = len(edges) - 1
    stop = min(stop, hist.n)
    ends = hist.end[:stop]
    idx = np.searchsorted(ends, edges, side="right")
    middles = (edges[:-1] + edges[1:]) / 2
    cover = np.searchsorted(ends, middles, side="left")  # the first column ending at or after each cell's middle
    empty = idx[1:] == idx[:-1]
    inside = cover < stop
    covered = empty & inside
    covered[covered] = hist.start[cover[covered]] < middles[covered]
    first, last = int(idx[0]), int(idx[-1])
    if covered.any():
        first, last = min(first, int(cover[covered].min())), max(last, int(cover[covered].max()) + 1)
    counts, spent = np.zeros((cells, NSLOTS), dtype=np.int64), np.full((cells, NSLOTS), np.nan)
    over, bound = np.zeros(cells), np.full(cells, np.nan)
    if last <= first:
        return counts, spent, (over, bound)
    cols = slice(first, last)
    read, times, exact = hist.counts_in(cols), hist.time_in(cols), hist.exact_columns(cols)
    events, at = hist.overflow_in(cols)
    filled = ~empty
    if filled.any():  # the filled cells' columns follow one another: cell k's are [idx[k], idx[k + 1])
        starts, upto = idx[:-1][filled] - first, int(idx[-1]) - first
        counts[filled] = np.add.reduceat(read[:upto], starts, axis=0)
        whole = np.logical_and.reduceat(exact[:upto], starts)
        spent[filled] = np.where(whole[:, None], np.add.reduceat(times[:upto], starts, axis=0), np.nan)
        over[filled], bound[filled] = np.add.reduceat(events[:upto], starts), np.fmin.reduceat(at[:upto], starts)
    if covered.any():
        k = cover[covered] - first
        counts[covered] = read[k]
        spent[covered] = np.where(exact[k][:, None], times[k], np.nan)
        over[covered], bound[covered] = events[k], at[k]
    return counts, spent, (over, bound)


def strips_p99(wanted: list[tuple[StreamHistory, int]], edges: np.ndarray) -> list[P99Strip]:
    """p99 per cell of the shared time axis `edges` (`cells_by_time`) of several (history, stop) (`P99Strip`), with
    one percentile call per unit and datasource."""
    cells = len(edges) - 1
    out: list[P99Strip] = [(np.zeros(0), np.zeros(0, dtype=bool))] * len(wanted)
    groups: dict[tuple[str, str], list[int]] = {}
    for k, (hist, _) in enumerate(wanted):
        groups.setdefault((hist.stream.datasource, hist.stream.unit), []).append(k)
    for members in groups.values():
        placed = [(hist, *cells_by_time(hist, stop, edges)) for hist, stop in (wanted[k] for k in members)]
        values, at_least = bounded_estimates([(hist, counts, spent) for hist, counts, spent, _ in placed],
                                             [over for *_, over in placed], (0.99,))
        p99, bound = values[:, 0].reshape(len(members), cells), at_least[:, 0].reshape(len(members), cells)
        for j, k in enumerate(members):
            out[k] = (p99[j], bound[j])
    return out


class StripCache:
    """Per-cell p99 of the streams on screen, computed again only for those whose columns or window changed."""

    def __init__(self) -> None:
        self._kept: dict[StreamId, tuple[tuple[float, ...], P99Strip]] = {}

    def get(self, histories: list[StreamHistory], stops: list[int], edges: np.ndarray) -> list[P99Strip]:
        """`strips_p99` of each history up to its stop on the time axis `edges`; only these are kept for the next
        call."""
        axis = (len(edges), float(edges[0]), float(edges[-1]))
        keys: list[tuple[float, ...]] = [(h.n, h.dropped, stop, *axis)
                                         for h, stop in zip(histories, stops, strict=True)]
        kept = {h.stream: self._kept[h.stream] for h, key in zip(histories, keys, strict=True)
                if self._kept.get(h.stream, ((), None))[0] == key}
        stale = [k for k, h in enumerate(histories) if h.stream not in kept]
        fresh = strips_p99([(histories[k], stops[k]) for k in stale], edges)
        for k, p99 in zip(stale, fresh, strict=True):
            kept[histories[k].stream] = (keys[k], p99)
        self._kept = kept
        return [kept[h.stream][1] for h in histories]


def p99_levels(values: list[np.ndarray], levels: int,
               also: np.ndarray | None = None) -> tuple[list[np.ndarray], float, float]:
    """Colour level (0 none, 1..levels) of every cell of every strip on one shared log scale; the scale's ends. The
    scale spans the cells and `also` (every stream's p99 now and overall: the lines off screen), so that a colour
    means the same on every page of a long list as long as no cell on screen reaches past the fleet's p99s."""
    finite = [v[np.isfinite(v) & (v > 0)] for v in (*values, *(() if also is None else (np.asarray(also),)))]
    pool = np.concatenate(finite) if finite else np.zeros(0)
    if pool.size == 0:
        return [np.zeros(v.shape, dtype=np.uint8) for v in values], math.nan, math.nan
    low, high = float(np.log10(pool.min())), float(np.log10(pool.max()))
    span = max(high - low, 1e-9)
    out = []
    for v in values:
        ok = np.isfinite(v) & (v > 0)
        lv = np.zeros(v.shape, dtype=np.uint8)
        scaled = (np.log10(np.where(ok, v, 10**low)) - low) / span
        lv[ok] = np.clip(1 + np.floor(scaled[ok] * levels), 1, levels).astype(np.uint8)
        out.append(lv)
    return out, 10**low, 10**high
