"""What a heat map shows, computed once per frame with NumPy; shared by the plain view and the TUI."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from latencymap.core.accumulator import StreamHistory
from latencymap.core.buckets import NSLOTS, bounds_seconds, slot_of_bucket_value
from latencymap.core.units import fit_duration, format_duration

LEVELS = 6
#: PyLatencyMap's autotune, the fallback before any event: lowest bucket value exponent per unit; 12 rows.
AUTOTUNE_MIN_EXPONENT = {"millisec": 0, "microsec": 7, "nanosec": 17, "sec": 0}
AUTOTUNE_ROWS = 12
AUTO = -1
AUTO_MAX = 64
#: Share of the events and of the time that the rows fitted to the data may leave to a folded edge row.
NEGLIGIBLE = 0.001
#: Fewest rows fitted rows show (empty rows around a narrow distribution give it context).
MIN_ROWS = 8
#: Fitted rows are kept while the data stays inside them and they are at most this many rows too wide.
REFIT_SLACK = 3

Folds = tuple[bool, bool]
#: What a fit keeps when the data needs more rows than it may have: events and time ("both"), or one of them.
Weigh = Literal["both", "events", "time"]


@dataclass(frozen=True, slots=True)
class RowRange:
    """Slots `lo..hi` shown as rows; `folds`: whether the bottom/top row also holds slots below/above it.

    `folds` is None for a range pinned by `--min_bucket/--max_bucket`: its edge rows are labelled as folded
    whatever they hold, as before.
    """

    lo: int
    hi: int
    folds: Folds | None = None

    def row_of(self, slot: int | None) -> int | None:
        """The row (0 = lowest) showing `slot`; None when it is not one of these rows."""
        return slot - self.lo if slot is not None and self.lo <= slot <= self.hi else None


def fit_rows(counts: np.ndarray, spent: np.ndarray, max_rows: int | None = None,
             weigh: Weigh = "both") -> tuple[int, int] | None:
    """Rows (lo, hi) covering where the events and the time are; None when there are no events.

    From the lowest slot holding events to the highest, less edge slots holding together at most
    `NEGLIGIBLE` of the events and of the time (they go to a folded edge row, one row more). Past
    `max_rows`, the rows keep the densest slots (by `weigh`: the sum of the events and time shares, or
    one of them) and fold the rest. At least `MIN_ROWS` rows: one empty row below, the others above.
    """
    got = fit_window(counts, spent, max_rows, weigh)
    return None if got is None else got[1]


def _extent(counts: np.ndarray, spent: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int] | None:
    """(events, events share, time share, a, b): slots a..b hold all but `NEGLIGIBLE` of both; None: no events."""
    ev = np.clip(np.asarray(counts, dtype=np.float64), 0, None)
    tm = np.clip(np.nan_to_num(np.asarray(spent, dtype=np.float64)), 0, None)
    total_ev, total_tm = float(ev.sum()), float(tm.sum())
    if total_ev <= 0:
        return None
    share = ev / total_ev
    tshare = tm / total_tm if total_tm > 0 else np.zeros_like(share)
    below = np.maximum(np.cumsum(share), np.cumsum(tshare))
    above = np.maximum(np.cumsum(share[::-1]), np.cumsum(tshare[::-1]))
    return ev, share, tshare, int(np.argmax(below > NEGLIGIBLE)), NSLOTS - 1 - int(np.argmax(above > NEGLIGIBLE))


def _rest(ev: np.ndarray, a: int, b: int) -> tuple[bool, bool]:
    """Whether slots below `a` / above `b` hold events (they then need a folded edge row)."""
    return bool(a > 0 and ev[:a].any()), bool(b < NSLOTS - 1 and ev[b + 1:].any())


def _rows_needed(ev: np.ndarray, a: int, b: int) -> int:
    """Rows that slots a..b and the folded edge rows of what lies beyond them take."""
    return b - a + 1 + sum(_rest(ev, a, b))


def crowded(counts: np.ndarray, spent: np.ndarray, max_rows: int | None) -> bool:
    """Whether the data needs more than `max_rows` rows, so that a fit keeps only the densest slots."""
    got = _extent(counts, spent) if max_rows is not None else None
    if got is None or max_rows is None:
        return False
    ev, _, _, a, b = got
    return _rows_needed(ev, a, b) > max(3, max_rows)


def fit_window(counts: np.ndarray, spent: np.ndarray, max_rows: int | None,
               weigh: Weigh = "both") -> tuple[tuple[int, int], tuple[int, int]] | None:
    """(rows the data needs, the same padded to `MIN_ROWS`), as `fit_rows` says."""
    got = _extent(counts, spent)
    if got is None:
        return None
    ev, share, tshare, a, b = got
    target = MIN_ROWS
    if max_rows is not None:
        max_rows = max(3, max_rows)
        target = min(target, max_rows)
        if _rows_needed(ev, a, b) > max_rows:  # keep the densest slots, two rows left for folds
            room = max_rows - 2
            dense = share + tshare if weigh == "both" else share if weigh == "events" else tshare
            sums = np.cumsum(np.concatenate(([0.0], dense)))
            starts = np.arange(a, b - room + 2)
            x = int(starts[np.argmax(sums[starts + room] - sums[starts])])
            low, high = _rest(ev, x, x + room - 1)
            if not low:  # nothing below: its fold row goes to one more slot above
                a, b = x, min(b, x + room)
            elif not high:
                a, b = max(a, x - 1), x + room - 1
            else:
                a, b = x, x + room - 1
    low, high = _rest(ev, a, b)  # a folded edge row each
    lo, hi = a - low, b + high
    need = (lo, hi)
    short = target - (hi - lo + 1)
    if short > 0:
        down = min(1, lo) if lo == a else 0
        up = min(NSLOTS - 1 - hi, short - down)
        lo, hi = max(0, lo - (short - up)), hi + up
    return need, (lo, hi)


class RowFit:
    """The fitted rows of one stream in one view, re-fitted with hysteresis as the data moves.

    Re-fitted when the data needs a row outside the current ones, or when the current rows are more than
    `REFIT_SLACK` rows more than the fit (or more than `max_rows`); kept otherwise, so rows do not flicker
    as columns come and go.
    """

    def __init__(self) -> None:
        self.range: tuple[int, int] | None = None

    def update(self, counts: np.ndarray, spent: np.ndarray, max_rows: int | None = None,
               weigh: Weigh = "both") -> tuple[int, int] | None:
        """The rows for data whose per-slot sums are `counts` and `spent`."""
        got = fit_window(counts, spent, max_rows, weigh)
        cur = self.range
        if got is None:
            return cur
        need, want = got
        if (cur is None or need[0] < cur[0] or need[1] > cur[1]
                or (cur[1] - cur[0]) - (want[1] - want[0]) > REFIT_SLACK
                or (max_rows is not None and cur[1] - cur[0] + 1 > max(3, max_rows))):
            self.range = want
        return self.range


class MapFits:
    """The fitted rows of one stream's two maps: one fit while the data fits the rows, else one per map.

    When the data needs more rows than a map may have, the frequency map (`weigh="events"`) keeps where the
    events are and the intensity map (`"time"`) where the time is; otherwise both show the same rows.
    """

    def __init__(self) -> None:
        self.fits: dict[str, RowFit] = {}

    def update(self, counts: np.ndarray, spent: np.ndarray, max_rows: int | None = None,
               weigh: Weigh = "both") -> tuple[int, int] | None:
        """The rows of the map that weighs `weigh`, for data whose per-slot sums are `counts` and `spent`."""
        key: Weigh = weigh if crowded(counts, spent, max_rows) else "both"
        return self.fits.setdefault(key, RowFit()).update(counts, spent, max_rows, key)


def window_sums(hist: StreamHistory, first: int = 0, stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Counts and time per slot of history columns [first, stop)."""
    cols = slice(max(0, first), hist.n if stop is None else stop)
    return hist.counts_in(cols).sum(axis=0), hist.time_in(cols).sum(axis=0)


def edge_folds(counts: np.ndarray, lo: int, hi: int) -> Folds:
    """Whether slots below `lo` / above `hi` hold events (`counts` per slot)."""
    return bool(lo > 0 and counts[:lo].any()), bool(hi < NSLOTS - 1 and counts[hi + 1:].any())


def row_range(hist: StreamHistory, min_bucket: int = AUTO, max_bucket: int = AUTO_MAX, *, first: int = 0,
              stop: int | None = None, fit: RowFit | MapFits | None = None, max_rows: int | None = None,
              weigh: Weigh = "both") -> RowRange:
    """The rows a view shows for history columns [first, stop) (default: all): every view asks this.

    By default (`AUTO`/`AUTO_MAX`) the rows fit the data (`fit_rows`; with `fit`, re-fitted with hysteresis
    from frame to frame); before any event, PyLatencyMap's autotune. `min_bucket`/`max_bucket` pin the range
    (see `pinned_range`).
    """
    if min_bucket != AUTO or max_bucket < AUTO_MAX:
        return RowRange(*pinned_range(hist, min_bucket, max_bucket))
    counts, spent = window_sums(hist, first, stop)
    got = fit.update(counts, spent, max_rows, weigh) if fit is not None else fit_rows(counts, spent, max_rows, weigh)
    lo, hi = got if got is not None else pinned_range(hist, AUTO, AUTO_MAX)
    return RowRange(lo, hi, edge_folds(counts, lo, hi))


def display_range(hist: StreamHistory, min_bucket: int = AUTO, max_bucket: int = AUTO_MAX) -> tuple[int, int]:
    """(lowest, highest) slot shown for the whole history: `row_range` without its folds."""
    rows = row_range(hist, min_bucket, max_bucket)
    return rows.lo, rows.hi


def pinned_range(hist: StreamHistory, min_bucket: int = AUTO, max_bucket: int = AUTO_MAX) -> tuple[int, int]:
    """(lowest, highest) slot from PyLatencyMap-style bucket exponents of the input's bucket values.

    `min_bucket`/`max_bucket` are log2 of the bucket *value* as the source writes it (so Oracle's
    value 1 = 2**0 is its `[0, 1)` bucket), -1/64 meaning PyLatencyMap's autotune for that side.
    A `max_bucket` alone below the autotuned lowest row (7 for microsec, 17 for nanosec: PyLatencyMap 1.3 stops
    there with an error) keeps the top row it pins and takes autotune's 12 rows down from it (not below 2**0).
    """
    ds = hist.stream.datasource
    kmin = AUTOTUNE_MIN_EXPONENT.get(hist.stream.unit, 0) if min_bucket == AUTO else min_bucket
    if min_bucket == AUTO and max_bucket < kmin:
        kmin = max(0, max_bucket - (AUTOTUNE_ROWS - 1))
    kmax = kmin + AUTOTUNE_ROWS - 1 if max_bucket >= AUTO_MAX else max_bucket
    lo = _slot(kmin, ds)
    hi = max(lo, _slot(kmax, ds))
    return lo, hi


def _slot(exponent: int, datasource: str) -> int:
    if exponent < 0:
        return 0
    slot = slot_of_bucket_value(1 << exponent, datasource)
    return NSLOTS - 1 if slot is None else slot


def fold_rows(matrix: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """(cols, hi-lo+1): slots below `lo` added into the first row, above `hi` into the last. Counts stay int64 (exact
    past 2**53, where float64 would round them: tooltips and the inspector show them); anything else is float64."""
    out = matrix[:, lo: hi + 1].astype(np.int64 if matrix.dtype.kind in "iu" else np.float64, copy=True)
    if lo > 0:
        out[:, 0] += matrix[:, :lo].sum(axis=1)
    if hi < NSLOTS - 1:
        out[:, -1] += matrix[:, hi + 1:].sum(axis=1)
    return out


def row_labels(hist: StreamHistory, lo: int, hi: int, folds: Folds | None = None,
               width: int | None = None) -> list[str]:
    """Human labels bottom→top: a row's lower bound; `<high` for a folded bottom row, `≥low` for a folded top, and
    `all` for one row that is both (it holds every bucket).

    `folds` says which edge rows hold slots beyond them; None labels both edges as folded (a pinned range). With
    `width`, each label is at most that many cells, its duration as the report writes it (`fit_duration`: `12.7 days`,
    `≥13d`) rather than cut.
    """
    return list(_row_labels(hist.stream.datasource, hist.stream.unit, lo, hi, folds, width))


@lru_cache(maxsize=1024)
def _row_labels(datasource: str, unit: str, lo: int, hi: int, folds: Folds | None,
                width: int | None = None) -> tuple[str, ...]:
    """`row_labels` for one scale and range, computed once (it depends on nothing else)."""
    low, high = bounds_seconds(datasource, unit)
    fold_low, fold_high = (lo > 0, hi < NSLOTS - 1) if folds is None else folds

    def text(seconds: float, prefix: str = "") -> str:
        return prefix + (format_duration(seconds) if width is None else fit_duration(seconds, width - len(prefix)))

    labels = [text(float(low[s])) for s in range(lo, hi + 1)]
    if fold_low or low[lo] == 0:
        labels[0] = text(float(high[lo]), "<")
    if fold_high:
        labels[-1] = text(float(low[hi]), "≥")
    if lo == hi and fold_high and (fold_low or low[lo] == 0):
        labels[0] = "all"  # neither `<high` nor `≥low` alone would be true
    return tuple(labels)


def quantize(values: np.ndarray, maxval: float, log: bool = False, levels: int = LEVELS) -> np.ndarray:
    """Colour level per cell: 0 for no events, 1..levels scaled to `maxval` (linear like PyLatencyMap, or log)."""
    values = np.asarray(values)
    if not np.isfinite(values).all():  # the check is cheaper than nan_to_num on every frame
        values = np.nan_to_num(values, nan=0.0)
    if maxval <= 0:
        return np.zeros(values.shape, dtype=np.uint8)
    if log:
        floor = maxval / 10 ** levels
        scaled = np.log10(np.maximum(values, floor) / floor) / levels
        level = np.floor(scaled * levels).astype(np.int64)
    else:
        level = (values * levels / maxval).astype(np.int64)
    level += 1
    np.maximum(level, 1, out=level)  # np.clip, without its Python-level overhead
    np.minimum(level, levels, out=level)
    level *= values > 0
    return level.astype(np.uint8)


@dataclass(slots=True)
class MapFrame:
    """One heat map ready to draw: rows bottom→top (row 0 = fastest), columns oldest→newest."""

    kind: str
    values: np.ndarray      # (rows, cols) rate per cell
    levels: np.ndarray      # (rows, cols) 0..LEVELS
    maxval: float           # value of the top colour level
    chart_max: float        # largest cell in the window
    labels: list[str]
    latest: np.ndarray      # (rows,) the newest column
    col_sums: np.ndarray    # (cols,)
    first_col: int          # history index of the first column shown
    exact: bool


def build_frame(hist: StreamHistory, kind: str, width: int, lo: int, hi: int, *, end: int | None = None,
                maxval: float | None = None, log: bool = False, folds: Folds | None = None) -> MapFrame:
    """The `width` columns ending at history index `end` (default: the newest) of one map."""
    stop = hist.n if end is None else max(0, min(end, hist.n))
    first = max(0, stop - width)
    cols = slice(first, stop)
    rates = hist.frequency(cols) if kind == "frequency" else hist.intensity(cols)
    folded = fold_rows(rates, lo, hi).T if stop > first else np.zeros((hi - lo + 1, 0))
    chart_max = float(folded.max()) if folded.size else 0.0
    scale = maxval if maxval and maxval > 0 else chart_max
    latest = folded[:, -1] if folded.shape[1] else np.zeros(hi - lo + 1)
    exact = kind == "frequency" or hist.exact_in(cols)
    return MapFrame(kind, folded, quantize(folded, scale, log), scale, chart_max,
                    row_labels(hist, lo, hi, folds), latest, folded.sum(axis=0), first, exact)


def _fold_both(hist: StreamHistory, cols: slice, lo: int, hi: int, out: np.ndarray | None = None) -> np.ndarray:
    """`fold_rows` of the frequency and intensity rates of history columns `cols`: (map, column, row)."""
    return fold_rates(hist.counts_in(cols), hist.time_in(cols), hist.meta_in("dur", cols), lo, hi, out)


def fold_rates(counts: np.ndarray, spent: np.ndarray, dur: np.ndarray, lo: int, hi: int,
               out: np.ndarray | None = None) -> np.ndarray:
    """(map, column, row): events and time per second of columns (`counts`, `spent`: (columns, 64); `dur`) folded
    into rows lo..hi. Each column's values come from its own numbers only, whatever the other columns."""
    dur = dur[:, None]
    rates = np.empty((2, dur.shape[0], NSLOTS))
    np.divide(counts, dur, out=rates[0])
    np.divide(spent, dur, out=rates[1])
    if out is None:
        out = rates[:, :, lo: hi + 1].copy()
    else:
        out[...] = rates[:, :, lo: hi + 1]
    if lo > 0:
        out[:, :, 0] += rates[:, :, :lo].sum(axis=2)
    if hi < NSLOTS - 1:
        out[:, :, -1] += rates[:, :, hi + 1:].sum(axis=2)
    return out


class FoldCache:
    """Folded rates of a stream's newest columns, kept from frame to frame: a new frame folds only new columns.

    Columns are keyed by their absolute index (history index + columns dropped), so the history may
    drop its oldest columns in between. Each column is folded by the same operations as a whole
    window, row by row, so the values are the same.
    """

    def __init__(self, hist: StreamHistory, lo: int, hi: int, width: int) -> None:
        self.hist, self.lo, self.hi = hist, lo, hi
        self._buf = np.empty((2, 2 * max(1, width) + 64, hi - lo + 1))
        self._start = self._end = 0  # absolute indexes of the buffer's first column and past its last filled one

    def window(self, first: int, stop: int) -> np.ndarray:
        """(map, column, row) of history columns [first, stop); a view, valid until the next call."""
        hist, buf = self.hist, self._buf
        a_first, a_stop = first + hist.dropped, stop + hist.dropped
        if not self._start <= a_first <= self._end or a_stop < self._end:
            self._start = self._end = a_first
        if a_stop - self._start > buf.shape[1]:  # full: move the columns still needed to the front
            keep = self._end - a_first
            buf[:, :keep] = buf[:, a_first - self._start: self._end - self._start]
            self._start = a_first
        if self._end < a_stop:
            _fold_both(hist, slice(self._end - hist.dropped, stop), self.lo, self.hi,
                       out=buf[:, self._end - self._start: a_stop - self._start])
            self._end = a_stop
        return buf[:, a_first - self._start: a_stop - self._start]


def both_frames(hist: StreamHistory, width: int, lo: int, hi: int, frequency_maxval: float = -1,
                intensity_maxval: float = -1, cache: FoldCache | None = None,
                folds: Folds | None = None) -> tuple[MapFrame, MapFrame, np.ndarray]:
    """`build_frame` of the newest `width` columns for both maps, and their levels stacked (map, row, column).

    A maxval <= 0 scales a map to its window's maximum. Both maps go through each NumPy call together,
    and every value comes from the same operations on the same numbers as in `build_frame`, so the
    frames are the same, for about half the NumPy calls. A `cache` for this stream and range folds
    only the columns it has not seen.
    """
    fmax = frequency_maxval if frequency_maxval > 0 else None
    imax = intensity_maxval if intensity_maxval > 0 else None
    stop = hist.n
    first = max(0, stop - width)
    if stop <= first:
        freq = build_frame(hist, "frequency", width, lo, hi, maxval=fmax, folds=folds)
        inten = build_frame(hist, "intensity", width, lo, hi, maxval=imax, folds=folds)
        return freq, inten, np.stack((freq.levels, inten.levels))
    cols = slice(first, stop)
    if cache is not None and cache.hist is hist and (cache.lo, cache.hi) == (lo, hi):
        folded = cache.window(first, stop).copy()  # the frames outlive the cache's next update
    else:
        folded = _fold_both(hist, cols, lo, hi)
    chart_max = folded.max(axis=(1, 2)).tolist()
    scale = [fmax or chart_max[0], imax or chart_max[1]]
    values = folded.transpose(0, 2, 1)  # (map, row, column), as build_frame's
    if min(scale) > 0 and np.isfinite(folded).all():  # quantize, both maps at once
        level = (values * LEVELS / np.array(scale)[:, None, None]).astype(np.int64)
        level += 1
        np.maximum(level, 1, out=level)
        np.minimum(level, LEVELS, out=level)
        level *= values > 0
        levels = level.astype(np.uint8)
    else:
        levels = np.stack([quantize(values[0], scale[0]), quantize(values[1], scale[1])])
    sums = folded.sum(axis=2)
    labels = row_labels(hist, lo, hi, folds)
    exact = hist.exact_in(cols)
    return (MapFrame("frequency", values[0], levels[0], scale[0], chart_max[0], labels, values[0, :, -1], sums[0],
                     first, True),
            MapFrame("intensity", values[1], levels[1], scale[1], chart_max[1], labels, values[1, :, -1], sums[1],
                     first, exact),
            levels)
