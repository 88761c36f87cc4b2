"""The overview's time axis over runs far apart (captures of years, or hours, ago read together): the silences between
them cut out (`cut_runs`), each run given cells in proportion to its length (`allot`), a mark in the cell of each
silence cut (`GAP`, in every strip), and each run's start written at its first cell: its date where the runs are on
different days (`axis.runs_strip`). Without that, the whole span (years) over the strip put each run in one cell."""

from __future__ import annotations

import math
import weakref

import numpy as np

from latencymap.core.accumulator import StreamHistory

#: What a cell of a silence cut out of the axis shows, in the strips and on the axis.
GAP = "┆"
#: A silence is cut out when it is longer than all the time with columns together, and than this many typical
#: intervals: a pause shorter than the runs around it stays on the axis as empty cells (it is data); two captures
#: hours or years apart each get a part of the strip.
SILENT_INTERVALS = 10
#: The fewest cells a run is given (more runs than the strip holds so: the shortest silences are kept, to scale).
RUN_CELLS = 2
#: Per history: (columns, dropped, stop, silence) and its runs as last found (`stream_runs`).
_RUNS: weakref.WeakKeyDictionary[StreamHistory, tuple[tuple[int, int, int, float], np.ndarray]] = \
    weakref.WeakKeyDictionary()

Runs = tuple[tuple[float, float], ...]


def _merge(spans: np.ndarray, silence: float) -> np.ndarray:
    """(k, 2) [start, end] spans joined where the next starts at most `silence` after the ones before it end."""
    if len(spans) == 0:
        return spans.reshape(0, 2)
    spans = spans[np.argsort(spans[:, 0], kind="stable")]
    reach = np.maximum.accumulate(spans[:, 1])
    breaks = np.flatnonzero(spans[1:, 0] - reach[:-1] > silence) + 1
    firsts, lasts = np.r_[0, breaks], np.r_[breaks - 1, len(spans) - 1]
    return np.column_stack((spans[firsts, 0], reach[lasts]))


def stream_runs(hist: StreamHistory, stop: int, silence: float) -> np.ndarray:
    """(k, 2) start and end of the runs of columns [0, `stop`) of `hist`: columns that follow one another, apart where
    nothing was read for more than `silence` seconds (a column longer than that, a counter's difference across
    a silence, counts as its last `silence` seconds: the axis puts it in the cell its end falls in); kept while the
    history and `stop` stay the same."""
    key = (hist.n, hist.dropped, stop, silence)
    kept = _RUNS.get(hist)
    if kept is not None and kept[0] == key:
        return kept[1]
    stop = min(stop, hist.n)
    ends = hist.end[:stop]
    runs = _merge(np.column_stack((np.maximum(hist.start[:stop], ends - silence), ends)), silence)
    _RUNS[hist] = (key, runs)
    return runs


def cut_runs(spans: list[np.ndarray], interval: float) -> Runs:
    """The runs of time with columns of any stream (`stream_runs` of each), oldest first, apart where the silence
    between two is cut out of the axis (longer than the time with columns, and `SILENT_INTERVALS` intervals); ()
    when no silence is."""
    merged = _merge(np.concatenate([s for s in spans if len(s)]) if any(len(s) for s in spans)
                    else np.zeros((0, 2)), 0.0)
    if len(merged) < 2:
        return ()
    busy = float((merged[:, 1] - merged[:, 0]).sum())
    gaps = merged[1:, 0] - merged[:-1, 1]
    cut = gaps > max(busy, SILENT_INTERVALS * (interval if math.isfinite(interval) else 0.0))
    if not cut.any():
        return ()
    firsts, lasts = np.r_[0, np.flatnonzero(cut) + 1], np.r_[np.flatnonzero(cut), len(merged) - 1]
    return tuple((float(merged[a, 0]), float(merged[b, 1])) for a, b in zip(firsts, lasts, strict=True))


def allot(runs: Runs, cells: int) -> tuple[Runs, tuple[int, ...]]:
    """The runs a strip of `cells` cells shows apart (runs joined across the shortest silences while they do not fit
    `RUN_CELLS` cells each and a cell for each silence), and the cells of each, in proportion to its length."""
    while len(runs) > 1 and len(runs) * (RUN_CELLS + 1) - 1 > cells:
        k = min(range(len(runs) - 1), key=lambda j: runs[j + 1][0] - runs[j][1])
        runs = (*runs[:k], (runs[k][0], runs[k + 1][1]), *runs[k + 2:])
    if len(runs) < 2:
        return runs, (cells,) if runs else ()
    lengths = np.array([max(b - a, 1e-9) for a, b in runs])
    spare = cells - (len(runs) - 1) - RUN_CELLS * len(runs)
    share = lengths / lengths.sum() * spare
    given = np.floor(share).astype(np.int64)
    given[np.argsort(given - share, kind="stable")[: spare - int(given.sum())]] += 1
    return runs, tuple(int(n) + RUN_CELLS for n in given)


def run_widths(runs: Runs, allotted: tuple[int, ...]) -> list[float]:
    """Seconds of a cell of each run: its last cell centred on its end, as a strip's last is on the newest column."""
    return [max(b - a, 1e-9) / (n - 0.5) for (a, b), n in zip(runs, allotted, strict=True)]


def run_edges(runs: Runs, allotted: tuple[int, ...]) -> np.ndarray:
    """(cells + 1) ascending times: each run's cells from its start, then the cell of the silence after it (up to the
    next run's start: no column ends there)."""
    parts = [a + w * np.arange(n + 1, dtype=np.float64)
             for (a, _), n, w in zip(runs, allotted, run_widths(runs, allotted), strict=True)]
    return np.concatenate(parts)


def run_cell_ends(runs: Runs, allotted: tuple[int, ...]) -> np.ndarray:
    """The time each cell stands for (NaN in the cells of the silences)."""
    out: list[float] = []
    for (a, _), n, w in zip(runs, allotted, run_widths(runs, allotted), strict=True):
        if out:
            out.append(math.nan)
        out += (a + w * np.arange(1, n + 1) - w / 2).tolist()
    return np.array(out)


def gap_cells(allotted: tuple[int, ...]) -> list[int]:
    """The cells of the silences cut out, between the runs' cells."""
    return [int(c) for c in np.cumsum([n + 1 for n in allotted])[:-1] - 1]
