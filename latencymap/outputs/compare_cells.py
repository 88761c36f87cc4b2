"""What `diff` tests where a side's rows are placed, not observed: the events its source's own buckets hold.

A stream read from buckets of its source's own (a `.hgrm`'s percentile points, Prometheus' or OpenTelemetry's
bounds) has its rows filled by rule (`core.rebin`: log-uniform within each bucket, moved by exact sums): where a
bucket spans a row edge, how many of its events lie below the edge is an estimate. Where the two sides' buckets
differ, the rule places the same distribution differently on each: a `.hgrm`'s points lie where its values put them
(its minimum, 0.056 ms on one side and 0.062 ms on the other, up to its 10th percentile, 0.136 ms: 1.5% and 0.4% of
the events put in 32–64 µs, where 0.02% lie), and a G-test of the rows read that placement as events observed (two
samples of one distribution "changed", p = 1e-94).

So where a side's rows are placed (`placed`: its source's buckets, holding every event, span one of its row edges
with events), the test takes only what the buckets observe. At each edge of the baseline's rows, and at each bound
that both sides' buckets have (Prometheus' `le` set, shared by two scrapes of one exporter: each side's counts there
are exact), a side's events below the edge are at least those of its buckets wholly below it and at most those of its
buckets starting below it (narrowed to its values seen, where its source says them); a side read from its rows
(its source's buckets within them) is its rows. Each side's share below each edge is taken as near the other's as
that allows (`closest`: where their ranges overlap, the same share), and the G-test is of the events between the
edges so taken: what the sides differ by beyond where their buckets let their events lie. A shift of ×1.3, or a band
of 2% added, moves the shares below some edge far past that; the spread of one sample's points does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from latencymap.core.accumulator import StreamHistory
from latencymap.core.source_totals import SourceTotals, source_use
from latencymap.core.units import unit_seconds

#: Bounds closer than this (relative) are one: a bound in two units (25 ms as 25000 µs) after the product's rounding.
_SAME = 1e-12
#: Bounds both sides have are edges of the test's cells up to this many (a Prometheus or OpenTelemetry layout, a
#: `.hgrm`'s points that fall alike); a finer layout's (HdrHistogram's sub-buckets, thousands) would spread the test
#: over thousands of cells, and its events below a row edge are known within one narrow bucket already.
MOST_SHARED = 64


@dataclass(frozen=True)
class Buckets:
    """What one side observed: buckets `[low, high)` in seconds (`high` infinite: an overflow bucket) and the events
    of each; `placed` when they are its source's and its rows only an estimate within them."""

    low: np.ndarray
    high: np.ndarray
    events: np.ndarray
    placed: bool


@dataclass(frozen=True)
class Observed:
    """The test's table (`cells`, baseline and candidate: events between consecutive edges, fractions where a side's
    share below an edge is taken from its range), each side's events per row of the baseline's taken alike
    (`rows`), and which sides' rows are placed (`placed`: "baseline", "candidate")."""

    cells: tuple[list[float], list[float]]
    rows: tuple[np.ndarray, np.ndarray]
    placed: list[str]


def observed_buckets(hist: StreamHistory, source: SourceTotals | None) -> Buckets:
    """A side's buckets as observed: its source's own where they hold every event (`source_use`), narrowed to its
    values seen where known; else its rows. `placed` where a source bucket holding events spans a row edge."""
    rows = hist.counts.sum(axis=0)
    events = int(rows.sum())
    if source is None or not source_use(source, events, hist.n)[0]:
        return Buckets(hist.low, hist.high, rows, False)
    scale = unit_seconds(hist.stream.unit)
    high = np.asarray(source.bounds, dtype=np.float64)
    low = np.maximum(np.concatenate(([0.0], high[:-1])), 0.0)
    high = np.maximum(high, 0.0)  # a bucket up to 0 or below (OpenTelemetry's `(-inf, 0]`): values of 0
    if source.least is not None and source.most is not None:
        low, high = np.clip(low, source.least, source.most), np.clip(high, source.least, source.most)
    low, high = low * scale, high * scale
    held = source.counts > 0
    edges = hist.low[1:]
    above = np.minimum(np.searchsorted(edges * (1 - _SAME), low[held], side="right"), len(edges) - 1)
    spans = (edges[above] * (1 - _SAME) > low[held]) & (edges[above] * (1 + _SAME) < high[held])
    return Buckets(low, high, source.counts.astype(np.int64), bool(spans.any()))


def _below(side: Buckets, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(least, most) of a side's events below each edge: its buckets wholly below it; those starting below it."""
    events = side.events.astype(np.float64)
    by_high, by_low = np.argsort(side.high, kind="stable"), np.argsort(side.low, kind="stable")
    ended = np.concatenate(([0.0], np.cumsum(events[by_high])))
    started = np.concatenate(([0.0], np.cumsum(events[by_low])))
    least = ended[np.searchsorted(side.high[by_high], edges * (1 + _SAME), side="right")]
    most = started[np.searchsorted(side.low[by_low], edges * (1 - _SAME), side="left")]
    return least, np.maximum(most, least)


def _shared(a: Buckets, b: Buckets) -> np.ndarray:
    """The finite bounds above 0 of both sides' buckets (`_SAME`: one bound in two units), the baseline's values;
    none where they are more than `MOST_SHARED`."""
    mine = np.unique(a.high[np.isfinite(a.high) & (a.high > 0)])
    theirs = np.unique(b.high[np.isfinite(b.high) & (b.high > 0)])
    if not mine.size or not theirs.size:
        return mine[:0]
    at = np.searchsorted(theirs, mine)
    left, right = theirs[np.clip(at - 1, 0, len(theirs) - 1)], theirs[np.clip(at, 0, len(theirs) - 1)]
    shared = mine[np.minimum(np.abs(left - mine), np.abs(right - mine)) <= mine * _SAME]
    return shared if len(shared) <= MOST_SHARED else shared[:0]


def closest(base: tuple[np.ndarray, np.ndarray], cand: tuple[np.ndarray, np.ndarray],
            totals: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Each side's events below each edge, within its (least, most), as near the other's share as that allows: the
    same share where their ranges overlap (the larger of their least), else each at its end nearer the other's.
    Both grow from edge to edge, as their least and most do."""
    nb, nc = totals
    return np.clip(cand[0] / nc * nb, base[0], base[1]), np.clip(base[0] / nb * nc, cand[0], cand[1])


def observed_test(base: StreamHistory, cand: StreamHistory,
                  sources: tuple[SourceTotals | None, SourceTotals | None]) -> Observed | None:
    """The table `diff` tests where a side's rows are placed (see the module docstring); None where neither's is:
    its rows, or its candidate's on the baseline's rows (`compare_rows`), are then what was observed."""
    sides = observed_buckets(base, sources[0]), observed_buckets(cand, sources[1])
    if not (sides[0].placed or sides[1].placed):
        return None
    totals = int(sides[0].events.sum()), int(sides[1].events.sum())
    if not (totals[0] and totals[1]):
        return None  # nothing to compare the other side with
    row_edges = base.low[1:]
    edges = np.unique(np.concatenate((row_edges, _shared(*sides))))
    b, c = closest(_below(sides[0], edges), _below(sides[1], edges), totals)
    cells = [np.diff(np.concatenate(([0.0], below, [float(n)]))) for below, n in ((b, totals[0]), (c, totals[1]))]
    at = np.searchsorted(edges, row_edges)  # each row edge's place among the edges
    rows = [np.diff(np.concatenate(([0.0], below[at], [float(n)]))) for below, n in ((b, totals[0]), (c, totals[1]))]
    tidy = [np.where(np.abs(x) < 1e-9 * max(n, 1), 0.0, x) for x, n in zip(cells, totals, strict=True)]
    return Observed((_whole(tidy[0]), _whole(tidy[1])), (rows[0], rows[1]), _names(sides))


def _whole(cells: np.ndarray) -> list[float]:
    """Cells as the G-test takes them: whole numbers where they are (each side's exact counts), floats elsewhere."""
    return [float(round(x)) if math.isclose(x, round(x), rel_tol=0, abs_tol=1e-9) else float(x) for x in cells]


def _names(sides: tuple[Buckets, Buckets]) -> list[str]:
    return [name for name, side in zip(("baseline", "candidate"), sides, strict=True) if side.placed]
