"""Where a source's own buckets and the log2 rows meet.

An event of a source's bucket shown in a row lies in both: between the larger of their lower bounds and the smaller
of their upper ones, its *cell* (`cells`). A bucket `(a, b]` (Prometheus' `le`, inclusive) reaches the row that starts
at `b`, `[b, 2b)`, in one value: that row's cell of it is `[b, b]`.

Rows that keep only how many events each holds still say from which buckets they came: the buckets and the rows are
both ranges of values in order, so the smallest events are the first bucket's and the first row's, and so on up; the
events per bucket and row are those two orderings laid side by side (`split`), the only way the one set of events can
be in both. A row's events so lie, on average, between its cells' lower bounds and between their upper bounds, each
weighted by the events the cell holds (`covered`): within the part of the row its buckets cover. Where the rows are
not such a placement of the buckets (rounding carried events from column to column: their totals differ, or an event
falls in a row its bucket does not reach), a row's events lie somewhere in the cells of the buckets holding events
that reach it (`reached`); the row itself where none does.
"""

from __future__ import annotations

import numpy as np


def cells(lows: np.ndarray, highs: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, allowed) per bucket `[lows[b], highs[b]]` and row `[edges[s], edges[s + 1])`: the range of values
    an event of that bucket in that row can have, and whether the row holds any value of the bucket."""
    lows, highs = np.asarray(lows, dtype=np.float64)[:, None], np.asarray(highs, dtype=np.float64)[:, None]
    low = np.maximum(edges[None, :-1], lows)
    high = np.minimum(edges[None, 1:], highs)
    allowed = (edges[None, :-1] <= highs) & (edges[None, 1:] > lows)
    return low, high, allowed


def split(counts: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Events per bucket and row (... x buckets x rows) of events counted per bucket (`counts`, ... x buckets) and
    per row (`rows`, ... x rows), both in ascending order of value, as the module says (the same total of both)."""
    counts, rows = np.asarray(counts, dtype=np.float64), np.asarray(rows, dtype=np.float64)
    ends, row_ends = np.cumsum(counts, axis=-1), np.cumsum(rows, axis=-1)
    starts, row_starts = ends - counts, row_ends - rows
    whole: np.ndarray = np.clip(np.minimum(ends[..., :, None], row_ends[..., None, :])
                                - np.maximum(starts[..., :, None], row_starts[..., None, :]), 0.0, None)
    return whole


def reached(lows: np.ndarray, highs: np.ndarray, held: np.ndarray,
            edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per row `[edges[s], edges[s + 1])` (... x rows): the part of it the cells of the buckets `[lows,
    highs]` holding events (`held`, ... x buckets) that reach it cover, from the least of their lower bounds to the
    most of their upper ones; the row itself where none reaches it."""
    edges = np.asarray(edges, dtype=np.float64)
    low, high, allowed = cells(lows, highs, edges)
    allowed = allowed & np.asarray(held, dtype=bool)[..., :, None]
    some = allowed.any(axis=-2)
    least = np.where(allowed, low, np.inf).min(axis=-2, initial=np.inf)
    most = np.where(allowed, high, -np.inf).max(axis=-2, initial=-np.inf)
    return np.where(some, least, edges[:-1]), np.where(some, most, edges[1:])


def covered(lows: np.ndarray, highs: np.ndarray, counts: np.ndarray, edges: np.ndarray,
            rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per row `[edges[s], edges[s + 1])` holding `rows[..., s]` events of the buckets `[lows, highs]`
    holding `counts` (... x buckets): the least and the most its events' mean can be, as the module says (`reached`
    where the rows are no placement of the buckets); the row's bounds where it holds none."""
    edges = np.asarray(edges, dtype=np.float64)
    counts, rows = np.asarray(counts, dtype=np.float64), np.asarray(rows, dtype=np.float64)
    low, high, allowed = cells(lows, highs, edges)
    whole = split(counts, rows)
    placed = (counts.sum(axis=-1) == rows.sum(axis=-1)) & ~((whole > 0) & ~allowed).any(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):  # 0 events x an open row's infinite bound; no events
        least = (whole * low).sum(axis=-2) / rows
        most = np.where(whole > 0, whole * high, 0.0).sum(axis=-2) / rows
    if not placed.all():
        near_low, near_high = reached(lows, highs, counts > 0, edges)
        least = np.where(placed[..., None], least, near_low)
        most = np.where(placed[..., None], most, near_high)
    held = rows > 0
    return np.where(held, least, edges[:-1]), np.where(held, most, edges[1:])
