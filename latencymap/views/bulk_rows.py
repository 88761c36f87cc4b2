"""The rows of many consecutive plain frames at once, as `row_range` with a `RowFit` decides them frame by frame.

Frame `j` of a batch shows history columns `[max(0, n_j - width), n_j)`. The window sums of counts come from
exact integer prefix sums. Those of time are float sums, which `_fit` compares with `NEGLIGIBLE`: prefix
sums give them to within a bound, and every window whose decision that bound could change is summed again
as `window_sums` sums it (and fitted by `_fit` itself), so every frame gets the rows the one-frame path gives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import NSLOTS
from latencymap.views.frame import (
    AUTO,
    AUTO_MAX,
    MIN_ROWS,
    NEGLIGIBLE,
    REFIT_SLACK,
    Folds,
    RowFit,
    fit_window,
    pinned_range,
)

_EPS = float(np.finfo(np.float64).eps)
#: Frames `_hysteresis` looks ahead at a time.
_AHEAD = 64


@dataclass(slots=True)
class Span:
    """History columns [first, first + len) of one stream, read once for a batch of frames."""

    first: int
    counts: np.ndarray  # (columns, 64) int64
    spent: np.ndarray   # (columns, 64) seconds
    dur: np.ndarray     # (columns,)
    flags: np.ndarray   # (columns,) uint8

    @classmethod
    def read(cls, hist: StreamHistory, first: int, stop: int) -> Span:
        cols = slice(first, stop)
        return cls(first, hist.counts_in(cols), hist.time_in(cols), hist.meta_in("dur", cols),
                   hist.meta_in("flags", cols))


def window_bounds(n0: int, frames: int, width: int, first: int) -> tuple[np.ndarray, np.ndarray]:
    """Local (in a span starting at history column `first`) start and stop of the windows of frames drawn at
    history lengths n0 + 1 .. n0 + frames."""
    stop = np.arange(n0 + 1, n0 + 1 + frames)
    return np.maximum(0, stop - width) - first, stop - first


def window_counts(span: Span, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """(frames, 64) int64: counts per slot summed over each window (exact)."""
    cum = np.zeros((len(span.counts) + 1, NSLOTS), dtype=np.int64)
    np.cumsum(span.counts, axis=0, out=cum[1:])
    out: np.ndarray = cum[stops] - cum[starts]
    return out


def _fit_many(ev_counts: np.ndarray, spent: np.ndarray) -> tuple[np.ndarray, ...]:
    """`_fit` of each row (window sums) at once: has events, need lo/hi, want lo/hi, and the cumulative shares
    (events, time; from below and from above) the decisions came from."""
    ev = np.clip(ev_counts.astype(np.float64), 0, None)
    tm = np.clip(np.nan_to_num(spent), 0, None)
    total_ev, total_tm = ev.sum(axis=1), tm.sum(axis=1)
    has = total_ev > 0
    share = ev / np.where(has, total_ev, 1.0)[:, None]
    tshare = np.zeros_like(tm)
    np.divide(tm, total_tm[:, None], out=tshare, where=(total_tm > 0)[:, None])
    cs_ev, cs_tm = np.cumsum(share, axis=1), np.cumsum(tshare, axis=1)
    rs_ev, rs_tm = np.cumsum(share[:, ::-1], axis=1), np.cumsum(tshare[:, ::-1], axis=1)
    a = np.argmax(np.maximum(cs_ev, cs_tm) > NEGLIGIBLE, axis=1)
    b = NSLOTS - 1 - np.argmax(np.maximum(rs_ev, rs_tm) > NEGLIGIBLE, axis=1)
    rows = np.arange(len(ev))
    held = np.cumsum(ev > 0, axis=1)  # slots holding events, up to each slot
    below = (a > 0) & (held[rows, np.maximum(a - 1, 0)] > 0)
    above = (b < NSLOTS - 1) & (held[rows, -1] - held[rows, b] > 0)
    lo, hi = np.where(below, a - 1, a), np.where(above, b + 1, b)
    short = MIN_ROWS - (hi - lo + 1)
    down = np.where(lo == a, np.minimum(1, lo), 0)
    up = np.minimum(NSLOTS - 1 - hi, short - down)
    want_lo = np.where(short > 0, np.maximum(0, lo - (short - up)), lo)
    want_hi = np.where(short > 0, hi + up, hi)
    return has, lo, hi, want_lo, want_hi, cs_ev, cs_tm, rs_ev, rs_tm, total_tm


def _unsure(cs_ev: np.ndarray, cs_tm: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Per row: could a time share within `tol` of its value be on the other side of NEGLIGIBLE where it decides?"""
    near = (cs_ev <= NEGLIGIBLE) & (np.abs(cs_tm - NEGLIGIBLE) <= tol[:, None])
    return np.asarray(near.any(axis=1))


def fitted_rows(hist: StreamHistory, span: Span, starts: np.ndarray, stops: np.ndarray, fit: RowFit,
                min_bucket: int = AUTO, max_bucket: int = AUTO_MAX) -> list[tuple[int, int, Folds | None]]:
    """(lo, hi, folds) of each frame's rows, as `row_range(..., fit=fit)` gives them frame after frame; `fit` ends
    as it would after the last frame."""
    frames = len(starts)
    if min_bucket != AUTO or max_bucket < AUTO_MAX:
        lo, hi = pinned_range(hist, min_bucket, max_bucket)
        return [(lo, hi, None)] * frames
    counts = window_counts(span, starts, stops)
    cum = np.zeros((len(span.spent) + 1, NSLOTS))
    np.cumsum(span.spent, axis=0, out=cum[1:])
    spent = cum[stops] - cum[starts]
    has, need_lo, need_hi, want_lo, want_hi, cs_ev, cs_tm, rs_ev, rs_tm, total_tm = _fit_many(counts, spent)
    # Prefix sums over at most len(span) nonnegative values are each within len * eps of their sum; a window's
    # time shares are then within `tol` of the sequential window sums' (with room to spare).
    if not (span.spent >= 0).all() or not np.isfinite(cum[-1]).all():
        unsure = has
    else:
        bound = 8.0 * (len(span.spent) + 1) * _EPS * float(cum[-1].sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            tol = np.where(total_tm > 4 * bound, 4 * bound / total_tm + 1e-12, np.inf)
        unsure = has & (_unsure(cs_ev, cs_tm, tol) | _unsure(rs_ev, rs_tm, tol))
    for j in np.flatnonzero(unsure).tolist():
        got = fit_window(counts[j], span.spent[starts[j]: stops[j]].sum(axis=0), None)
        has[j] = got is not None
        if got is not None:
            (need_lo[j], need_hi[j]), (want_lo[j], want_hi[j]) = got
    lows, highs = _hysteresis(fit, has, need_lo, need_hi, want_lo, want_hi, pinned_range(hist, AUTO, AUTO_MAX))
    held = np.cumsum(counts != 0, axis=1)
    rows = np.arange(frames)
    fold_lo = (lows > 0) & (held[rows, np.maximum(lows - 1, 0)] > 0)
    fold_hi = (highs < NSLOTS - 1) & (held[rows, -1] - held[rows, highs] > 0)
    return list(zip(lows.tolist(), highs.tolist(), zip(fold_lo.tolist(), fold_hi.tolist(), strict=True),
                    strict=True))


def _hysteresis(fit: RowFit, has: np.ndarray, need_lo: np.ndarray, need_hi: np.ndarray, want_lo: np.ndarray,
                want_hi: np.ndarray, fallback: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The rows `fit.update` keeps frame after frame (`RowFit`'s rule), for fits given per frame; `fit` ends as the
    last frame leaves it. Frames before any fit get `fallback`. Looks ahead `_AHEAD` frames at a time for the
    next re-fit, so a batch costs a few NumPy calls per re-fit."""
    frames = len(has)
    lo, hi = np.empty(frames, dtype=np.int64), np.empty(frames, dtype=np.int64)
    cur, j = fit.range, 0
    while j < frames:
        stop = min(frames, j + _AHEAD)
        window = slice(j, stop)
        if cur is None:
            refit = has[window]
        else:
            refit = has[window] & ((need_lo[window] < cur[0]) | (need_hi[window] > cur[1])
                                   | ((cur[1] - cur[0]) - (want_hi[window] - want_lo[window]) > REFIT_SLACK))
        at = stop if not refit.any() else j + int(np.argmax(refit))
        lo[j:at], hi[j:at] = cur if cur is not None else fallback
        if at < frames and at < stop:
            cur = (int(want_lo[at]), int(want_hi[at]))
            lo[at], hi[at] = cur
            at += 1
        j = at
    fit.range = cur
    return lo, hi


def window_max(values: np.ndarray, starts: np.ndarray, stops: np.ndarray, width: int) -> np.ndarray:
    """Max of `values` (columns,) over each window [start, stop): windows starting at 0 are prefixes, the others
    `width` long (van Herk: block prefix and suffix maxima, linear in the columns)."""
    out = np.empty(len(starts))
    prefix = starts == 0
    out[prefix] = np.maximum.accumulate(values)[stops[prefix] - 1]
    if not prefix.all():
        blocks = -(-len(values) // width)
        padded = np.full(blocks * width, -np.inf)
        padded[: len(values)] = values
        grid = padded.reshape(blocks, width)
        ahead = np.maximum.accumulate(grid, axis=1).reshape(-1)
        behind = np.maximum.accumulate(grid[:, ::-1], axis=1)[:, ::-1].reshape(-1)
        s = starts[~prefix]
        out[~prefix] = np.maximum(behind[s], ahead[s + width - 1])
    return out


def window_any(mask: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Whether `mask` (columns,) holds a True in each window."""
    cum = np.zeros(len(mask) + 1, dtype=np.int64)
    np.cumsum(mask, out=cum[1:])
    out: np.ndarray = cum[stops] > cum[starts]
    return out
