"""Heat map frames for the TUI: `build_frame` plus time zoom (several columns merged per cell)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import NSLOTS
from latencymap.views.frame import Folds, MapFrame, build_frame, quantize


@dataclass(slots=True)
class Window:
    """Which history columns a map shows: `cells` groups of `zoom` columns ending at `stop`."""

    stop: int
    cells: int
    zoom: int

    @property
    def base(self) -> int:
        """History index of the first column of cell 0 (may be negative: empty cells on the left)."""
        return self.stop - self.cells * self.zoom

    def cell_of(self, column: int) -> int:
        """Cell index that shows history `column`."""
        return (column - self.base) // self.zoom

    def columns_of(self, cell: int) -> tuple[int, int]:
        """History columns [a, b) merged into `cell`."""
        a = self.base + cell * self.zoom
        return max(0, a), max(0, a + self.zoom)


    @property
    def first(self) -> int:
        """History index of the first column shown."""
        return max(0, self.base)

    def cell_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """History columns [a, b) of every cell (a == b: no column, left of the history's start)."""
        edges = np.clip(self.base + np.arange(self.cells + 1) * self.zoom, 0, None)
        return edges[:-1], edges[1:]

    def cell_ends(self, hist: StreamHistory) -> np.ndarray:
        """End time (epoch s) of each cell's last column; NaN for a cell with no column."""
        a, b = self.cell_bounds()
        ends = np.full(self.cells, np.nan)
        ok = b > a
        ends[ok] = hist.end[b[ok] - 1]
        return ends

    def cell_counts(self, hist: StreamHistory) -> np.ndarray:
        """Counts per (cell, slot), the columns of each cell summed."""
        a, b = self.cell_bounds()
        out = np.zeros((self.cells, NSLOTS), dtype=np.int64)
        ok = b > a
        if ok.any():
            starts = a[ok]
            out[ok] = np.add.reduceat(hist.counts_in(slice(starts[0], b[ok][-1])), starts - starts[0], axis=0)
        return out

    def cell_overflow(self, hist: StreamHistory) -> tuple[np.ndarray, np.ndarray]:
        """Per cell, the events of its columns in their sources' overflow buckets whose values are not known, and
        those buckets' smallest lower bound (s; NaN: none): `StreamHistory.overflow_in`."""
        a, b = self.cell_bounds()
        events, bound = np.zeros(self.cells), np.full(self.cells, np.nan)
        ok = b > a
        if ok.any():
            starts = a[ok]
            over, at = hist.overflow_in(slice(starts[0], b[ok][-1]))
            events[ok] = np.add.reduceat(over, starts - starts[0])
            bound[ok] = np.fmin.reduceat(at, starts - starts[0])
        return events, bound

    def cell_means(self, hist: StreamHistory) -> np.ndarray:
        """Time spent per (cell, slot) of the cells whose every column's time is exact; NaN for the others (their
        buckets' means say nothing: `percentile_estimates(times=...)`)."""
        a, b = self.cell_bounds()
        out = np.full((self.cells, NSLOTS), np.nan)
        ok = b > a
        if ok.any():
            starts, cols = a[ok], slice(a[ok][0], b[ok][-1])
            spent = np.add.reduceat(hist.time_in(cols), starts - starts[0], axis=0)
            exact = np.logical_and.reduceat(hist.exact_columns(cols), starts - starts[0])
            out[ok] = np.where(exact[:, None], spent, np.nan)
        return out


def zoomed_frame(hist: StreamHistory, kind: str, win: Window, lo: int, hi: int, *,
                 maxval: float | None = None, log: bool = False, folds: Folds | None = None) -> MapFrame:
    """`build_frame` over the window, with `zoom` columns merged into one duration-weighted cell."""
    frame = build_frame(hist, kind, win.cells * win.zoom, lo, hi, end=win.stop, maxval=maxval, log=log,
                        folds=folds)
    if win.zoom == 1 or frame.values.shape[1] == 0:
        return frame
    ncols = frame.values.shape[1]
    dur = hist.durations[frame.first_col: frame.first_col + ncols]
    pad = (-ncols) % win.zoom
    values = np.pad(frame.values, ((0, 0), (pad, 0)))
    weights = np.pad(dur, (pad, 0))
    groups = values.shape[1] // win.zoom
    num = (values * weights).reshape(values.shape[0], groups, win.zoom).sum(axis=2)
    den = weights.reshape(groups, win.zoom).sum(axis=1)
    merged = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    chart_max = float(merged.max()) if merged.size else 0.0
    scale = maxval if maxval and maxval > 0 else chart_max
    return MapFrame(kind, merged, quantize(merged, scale, log), scale, chart_max, frame.labels,
                    merged[:, -1], merged.sum(axis=0), frame.first_col - pad, frame.exact)
