"""Rebinned rows moved, where they cannot hold their column's exact time, until they can.

`core.rebin` places each bucket's events on the rows by a rule (log-uniform, or over the widest part of the bucket
whose mean is the one the exact time proves for its lowest and highest bucket) and rounds them to whole events per
row. An event in a row lies in that row and in its bucket: between the larger of their lower bounds and the smaller
of their upper ones (its *cell*). The rows so bound the column's time, from every event at its cell's lower bound to
every one at its upper bound. Rounding (one event of a bucket spread over many rows goes whole into one of them), or
buckets the time leaves unmoved but wide (events of a decade-wide bucket spread over its rows, while the time needs
them near its top), can leave the exact time outside those bounds: the rows then say that no value the buckets allow
adds up to the time, a placement the time rules out. `hold_time` moves events a row at a time within their own
bucket until the rows hold the time, each step where it moves the rows' bound most, so that few events move: up,
where it raises their upper bound most, when the time is above; down, where it lowers their lower bound most, when
below. A step never passes the time: an event moved up one row raises the rows' lower bound by at most its old cell's
width, which their upper bound, below the time, already counted. A time the buckets themselves cannot hold (below
every event at its bucket's lower bound, above every one at its upper bound) moves nothing.
"""

from __future__ import annotations

import math

import numpy as np

from latencymap.core.bucket_cells import cells

#: How far, relatively, a time may pass what the buckets hold and still be held at their bound (float sums).
_ROUNDING = 1e-9


def time_range(whole: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(least, most) time of whole events per bucket and row (`whole`: ... x buckets x rows), each in its cell."""
    with np.errstate(invalid="ignore"):  # 0 events x an open row's infinite bound
        return (whole * low).sum(axis=(-2, -1)), np.where(whole > 0, whole * high, 0.0).sum(axis=(-2, -1))


def hold_time(whole: np.ndarray, lows: np.ndarray, highs: np.ndarray, edges: np.ndarray,
              time: float) -> np.ndarray:
    """One column's whole events per bucket and row (buckets x rows over `edges`) moved as the module says so that
    they hold `time` (the buckets `[lows, highs]`, all in one unit); the same events where they already do."""
    low, high, allowed = cells(lows, highs, edges)
    counts = whole.sum(axis=1).astype(np.float64)
    with np.errstate(invalid="ignore"):
        floor = float((counts * np.asarray(lows, dtype=np.float64)).sum())
        ceiling = float(np.where(counts > 0, counts * np.asarray(highs, dtype=np.float64), 0.0).sum())
    least, most = (float(t) for t in time_range(whole, low, high))
    if not math.isfinite(time) or least <= time <= most:
        return whole
    if not floor * (1 - _ROUNDING) <= time <= ceiling * (1 + _ROUNDING):
        return whole
    time = min(max(time, floor), ceiling)
    out = whole.copy()
    up = time > most
    bound = high if up else low
    # an event moved between rows s and s + 1 of its bucket changes the bound by the difference of their cells'
    steps = np.where(allowed[:, :-1] & allowed[:, 1:], bound[:, 1:] - bound[:, :-1], 0.0)
    missing = time - most if up else least - time
    while missing > 0:
        movable = (out[:, :-1] if up else out[:, 1:]) > 0
        gain = np.where(movable & (steps > 0), steps, 0.0)
        b, s = np.unravel_index(int(np.argmax(gain)), gain.shape)
        step = float(gain[b, s])
        if step <= 0:
            break
        source, target = (s, s + 1) if up else (s + 1, s)
        moved = 1 if math.isinf(step) else min(int(out[b, source]), math.ceil(missing / step))  # (the open top row)
        out[b, source] -= moved
        out[b, target] += moved
        missing -= moved * step
    return out
