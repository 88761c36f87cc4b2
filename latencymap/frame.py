"""What a heat map shows, computed once per frame with NumPy; shared by the plain view and the TUI."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from latencymap.accumulator import EXACT, StreamHistory
from latencymap.buckets import NSLOTS, slot_of_bucket_value
from latencymap.units import format_duration

LEVELS = 6
#: PyLatencyMap's autotune: lowest bucket value exponent per unit; 12 rows from there.
AUTOTUNE_MIN_EXPONENT = {"millisec": 0, "microsec": 7, "nanosec": 17, "sec": 0}
AUTOTUNE_ROWS = 12
AUTO = -1
AUTO_MAX = 64


def display_range(hist: StreamHistory, min_bucket: int = AUTO, max_bucket: int = AUTO_MAX) -> tuple[int, int]:
    """(lowest, highest) slot shown, from PyLatencyMap-style bucket exponents of the input's bucket values.

    `min_bucket`/`max_bucket` are log2 of the bucket *value* as the source writes it (so Oracle's
    value 1 = 2**0 is its `[0.5, 1)` bucket), -1/64 meaning autotune as PyLatencyMap does.
    """
    ds = hist.stream.datasource
    kmin = AUTOTUNE_MIN_EXPONENT.get(hist.stream.unit, 0) if min_bucket == AUTO else min_bucket
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
    """(cols, hi-lo+1): slots below `lo` added into the first row, above `hi` into the last."""
    out = matrix[:, lo: hi + 1].astype(np.float64, copy=True)
    if lo > 0:
        out[:, 0] += matrix[:, :lo].sum(axis=1)
    if hi < NSLOTS - 1:
        out[:, -1] += matrix[:, hi + 1:].sum(axis=1)
    return out


def row_labels(hist: StreamHistory, lo: int, hi: int) -> list[str]:
    """Human labels bottom→top: `<high` for the folded bottom row, `≥low` for the folded top row."""
    labels = [format_duration(float(hist.low[s])) for s in range(lo, hi + 1)]
    if lo > 0 or hist.low[lo] == 0:
        labels[0] = "<" + format_duration(float(hist.high[lo]))
    if hi < NSLOTS - 1:
        labels[-1] = "≥" + format_duration(float(hist.low[hi]))
    return labels


def quantize(values: np.ndarray, maxval: float, log: bool = False, levels: int = LEVELS) -> np.ndarray:
    """Colour level per cell: 0 for no events, 1..levels scaled to `maxval` (linear like PyLatencyMap, or log)."""
    values = np.nan_to_num(values, nan=0.0)
    if maxval <= 0:
        return np.zeros(values.shape, dtype=np.uint8)
    if log:
        floor = maxval / 10 ** levels
        scaled = np.log10(np.maximum(values, floor) / floor) / levels
        level = np.floor(scaled * levels).astype(np.int64) + 1
    else:
        level = (values * levels / maxval).astype(np.int64) + 1
    level = np.clip(level, 1, levels)
    return np.where(values > 0, level, 0).astype(np.uint8)


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


def build_frame(hist: StreamHistory, kind: str, width: int, lo: int, hi: int, *,
                end: int | None = None, maxval: float | None = None, log: bool = False) -> MapFrame:
    """The `width` columns ending at history index `end` (default: the newest) of one map."""
    stop = hist.n if end is None else max(0, min(end, hist.n))
    first = max(0, stop - width)
    cols = slice(first, stop)
    rates = hist.frequency(cols) if kind == "frequency" else hist.intensity(cols)
    folded = fold_rows(rates, lo, hi).T if stop > first else np.zeros((hi - lo + 1, 0))
    chart_max = float(folded.max()) if folded.size else 0.0
    scale = maxval if maxval and maxval > 0 else chart_max
    latest = folded[:, -1] if folded.shape[1] else np.zeros(hi - lo + 1)
    exact = kind == "frequency" or bool(stop > first and np.all(hist.flags[cols] & EXACT))
    return MapFrame(kind, folded, quantize(folded, scale, log), scale, chart_max,
                    row_labels(hist, lo, hi), latest, folded.sum(axis=0), first, exact)
