"""Rows' estimated times fitted to a column's exact time, each row's events kept inside their row.

A source that gives a column's counts per row and its exact time (bcc funclatency's summary line, a Prometheus
`_sum`, an OpenTelemetry `sum`) says how long the column's events took, not how that time splits among the rows. The
rows' midpoints estimate the split (`buckets.midpoints_seconds`); the exact time corrects it: every row's events move
the same fraction of the way from their midpoint toward the bound the time pulls them to (their row's lower bound when
the time is below the midpoints' estimate, its upper bound when above), the fraction at which the rows' times add up
to the exact time. With midpoints in the middle of their rows, that is every row's events at one same relative place
in their rows. A row's time so stays within `[events x low, events x high]` (its events lie in the row), and a row's
share of the correction goes with its events times its width: the zero row `[0, 1)`, whose midpoint says least about
its events, moves most. (Scaling every row by one factor instead can take a row's mean out of it: a Prometheus
histogram of 880 requests of 0.1 ms and 100 of 5 ms gave the 4-8 ms row a mean of 3.39 ms, 58% of the time where 85%
was true.)

An exact time the rows cannot hold (below every event at its row's lower bound, or above every one at its upper
bound: possible where the rows are an estimate themselves, a source's buckets spread over them) leaves every row at
that bound: its events as near the exact time as their rows allow; the rows' times then miss it, and the stream's own
totals keep it (`core.source_totals`). `fit_to_totals` says which columns' times were not reached. The open top row
has no upper bound: what a time holds past the midpoints' estimate is its own there.

A rebinned column's events lie not only in their rows but in their source's buckets, each in its bucket's part of
its row (its cell, `core.bucket_cells`): a row's events average between their cells' lower bounds and between their
upper ones (`source_covers`), and those are its bounds here, their middle its estimate (each event at its cell's
middle). (Prometheus' default buckets, 1000 requests of 4 ms and 10 of 9 ms: the rows of 4.1-8.19 and 8.19-16.4 ms,
the first 448 events of (0, 5] ms and 7 of (5, 10] ms, the second 3 of (5, 10] ms, took means of 5.55 and 11.1 ms
from their midpoints, past the 5.05 and 10 ms their buckets allow; within them, 4.75 and 9.42 ms.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from latencymap.core.bucket_cells import covered
from latencymap.core.buckets import TOP_SLOT
from latencymap.core.model import SourceBuckets
from latencymap.core.rebin import bucket_ranges

#: How far the rows' fitted times may add up from the exact time, relatively, and still reach it (float rounding).
_REACHED = 1e-9


def fit_to_totals(time: np.ndarray, counts: np.ndarray, low: np.ndarray, high: np.ndarray,
                  totals: Sequence[tuple[int, float]],
                  cover: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Fit in place the estimated row times `time[j]` (columns x slots) of each column `j` of `totals` ((j, exact time)
    pairs) to its exact time, as the module says; `counts` the columns' events per slot, `low` and `high` the slots'
    bounds, `cover` (low, high) per pair and slot the part of each row its column's events lie in (`source_covers`;
    None: the rows), all times in one unit. Per pair, whether the rows reach its time (False: every row at one
    bound)."""
    if not totals:
        return np.ones(0, dtype=bool)
    cols = np.fromiter((j for j, _ in totals), dtype=np.intp, count=len(totals))
    want = np.fromiter((t for _, t in totals), dtype=np.float64, count=len(totals))
    est = np.asarray(time[cols], dtype=np.float64)
    n = np.asarray(counts[cols], dtype=np.float64)
    if cover is not None:
        narrower = (cover[0] > low) | (cover[1] < high)
        est = np.where(narrower & (n > 0), n * (cover[0] + cover[1]) / 2, est)
        low, high = cover
    top = np.array(high, dtype=np.float64)
    top[..., TOP_SLOT] = math.inf  # open: its values may pass its nominal bound
    gap = want - est.sum(axis=1)
    with np.errstate(invalid="ignore"):  # 0 events x the open row's infinite bound
        bound = np.where((gap < 0)[:, None], n * low, np.where(n > 0, n * top, 0.0))
    room = bound - est
    opened = np.isinf(room)
    finite = np.where(opened, 0.0, room)
    reach = finite.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = np.clip(np.where(reach != 0, gap / reach, 0.0), 0.0, 1.0)
    is_open = opened.any(axis=1)
    fitted = est + np.where(is_open, 0.0, fraction)[:, None] * finite
    if is_open.any():
        share = np.where(opened, n, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            fitted += np.where(is_open, gap, 0.0)[:, None] * np.nan_to_num(share / share.sum(axis=1, keepdims=True))
    time[cols] = fitted
    # within _REACHED of the time, or of what float rounding of the rows' own sizes leaves (a time of 1e-84 ms fitted
    # from rows of 0.5 ms comes to 0.0: reached, as near as floats tell)
    rounding = 8 * np.finfo(np.float64).eps * np.abs(est).sum(axis=1)
    reached: np.ndarray = np.abs(fitted.sum(axis=1) - want) <= _REACHED * np.abs(want) + rounding
    return reached


def source_covers(sources: Sequence[SourceBuckets | None], unit_s: float, counts: np.ndarray, low: np.ndarray,
                  high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per column and row `[low, high)` (s), the column holding `counts[j]` events of `sources[j]`'s
    buckets: the least and the most each row's events' mean can be, inside the part of the row those buckets cover
    (`bucket_cells.covered`; bounds in the stream unit, `unit_s` seconds each); the rows where a column's source keeps
    none."""
    counts = np.asarray(counts)
    least, most = np.tile(low, (len(counts), 1)), np.tile(high, (len(counts), 1))
    alike: dict[tuple[float, ...], list[tuple[int, SourceBuckets]]] = {}
    for j, source in enumerate(sources):
        if source is not None and len(source.bounds):
            alike.setdefault(tuple(source.bounds), []).append((j, source))
    edges = np.append(low, high[-1])
    for bounds, group in alike.items():
        lows, uppers = bucket_ranges(np.asarray(bounds, dtype=np.float64) * unit_s)
        cols = [j for j, _ in group]
        held = np.stack([np.asarray(source.counts, dtype=np.float64) for _, source in group])
        least[cols], most[cols] = covered(lows, uppers, held, edges, counts[cols])
    return least, most


def unheld_note(label: str) -> str:
    """The note, said once (the first stream named: a fleet's streams alike would say it each), that a column's exact
    time is one its rows cannot hold (`fit_to_totals`)."""
    return (f"history: '{label}' (and any other stream so, said once): a column's exact time (its source's sum) lies "
            "outside what its rows can take, from every event at its row's lower bound to every one at its upper "
            "bound (its rows place its events as its buckets allow, its sum says otherwise): its rows' times are at "
            "the nearer of those bounds and miss the sum, which the stream's own totals keep")
