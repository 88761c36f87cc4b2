"""HdrHistogram's own sub-buckets, kept beside the log2 rows as each column's source buckets.

A log2 row is a whole power of two; HdrHistogram splits each into 2**m sub-buckets (m = 7 at 2 significant digits,
10 at 3), so percentiles read from the rows are a guess inside a row (98% of the values at 140 µs and 2% at 250 µs
share the 131-262 µs row) where the library's `getValueAtPercentile` is exact to a sub-bucket. Each column keeps its
occupied sub-buckets (`Interval.source_buckets`): their bounds, in the stream's unit, and counts, listed contiguously
(an empty bucket bridges two that do not touch, and the first one starts at 0), so that the columns of a stream add
up exactly (`core.source_totals`) and percentiles come from them, linear inside a sub-bucket as `histogram_quantile`
reads a bucket: within one sub-bucket of what the library says (which takes the nearest whole rank: with a few
events the two may name neighbouring ones). The library gives a sub-bucket's highest equivalent value, so an integer
histogram's sub-bucket of the integers `[lo, hi)` is the bucket `(lo - 1, hi - 1]`, as `.hgrm` printouts are read; a
DoubleHistogram's, whose conversion ratio changes as it resizes, is `[lo, hi)` times the ratio (one unit of its
integers less would not nest from one ratio to the next).

Resolution is bounded, since every column carries its buckets (a recording writes them, in a `sourcebuckets` line the
record reader cuts at 64 KiB) and the stream's totals hold their union: a histogram of 3 digits has 1,024 sub-buckets
per power of two, of 5 digits 65,536, and a column of a few thousand values over a wide range occupies thousands. A
power of two with at most `SPARSE` occupied sub-buckets (a spike, a tail, two modes) keeps them at up to `FINE_BITS`
bits, the library's own precision up to 3 digits; a busier one is merged to `CELL_BITS` bits, 128 cells (the library's
own at 2 digits: a cell is at most 1/128, 0.8%, of its values wide), where many values fill a cell and linear
interpolation inside it is close to theirs. A column thus has at most 128 cells per power of two either way, and one
that still has more than `MAX_BOUNDS` bounds (busy over many powers of two) has its cells halved until it has fewer.
The cells of every histogram nest (sub-buckets are binary fractions of powers of two), so columns of other settings,
finer or coarser there, still add up exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Bits of a sub-bucket number kept in a sparse power of two: at most 1,024 cells (3 significant digits).
FINE_BITS = 10
#: Bits kept in a busy one: at most 128 cells (2 significant digits).
CELL_BITS = 7
#: Occupied cells (at FINE_BITS) past which a power of two of a column is busy: as many as a busy one keeps, so
#: that no power of two of a column has more than 2**CELL_BITS cells (and bounds for twice as many) either way.
SPARSE = 1 << CELL_BITS
#: Bounds of one column at most: its `sourcebuckets` line stays under the record reader's 64 KiB (24 characters a
#: bound at most, `1.2345678901234567e+18, `); a column past it has its cells halved until it fits.
MAX_BOUNDS = 2048


@dataclass(frozen=True, slots=True)
class OwnBuckets:
    """Every payload's buckets: `bounds` (ascending upper bounds, stream unit) and `counts`, payload `i`'s from
    `offsets[i]` to `offsets[i + 1]`."""

    bounds: np.ndarray
    counts: np.ndarray
    offsets: np.ndarray

    def of(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(bounds, counts) of payload `row` (empty when it holds no value)."""
        a, b = int(self.offsets[row]), int(self.offsets[row + 1])
        return self.bounds[a:b], self.counts[a:b]


def own_buckets(owner: np.ndarray, sub: np.ndarray, shift: np.ndarray, counts: np.ndarray, ratios: np.ndarray,
                whole: np.ndarray, n: int) -> OwnBuckets:
    """The buckets of `n` payloads from their non-zero counts: entry k counts the values `[sub << shift,
    (sub + 1) << shift)` of payload `owner` (sorted by owner, then by value), times the payload's `ratios` entry;
    `whole`: per payload, whether its values are integers (bucket `(lo - 1, hi - 1]`)."""
    if len(sub) and int(sub.max()) >> (FINE_BITS + 1):  # more than 3 digits somewhere
        owner, sub, shift, counts = _merged(owner, sub, shift, counts, FINE_BITS)
    power = _bit_length(sub) + shift  # which power of two a cell is in (index 0's [0, 2**u) one of its own)
    first = np.ones(len(sub), dtype=bool)
    first[1:] = (owner[1:] != owner[:-1]) | (power[1:] != power[:-1])
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, len(sub)))
    if (sizes > SPARSE).any():
        busy = np.repeat(sizes > SPARSE, sizes)
        owner, sub, shift, counts = _merged(owner, sub, shift, counts, np.where(busy, CELL_BITS, FINE_BITS))
    bits = CELL_BITS
    while True:
        out = _listed(owner, sub, shift, counts, ratios, whole, n)
        over = np.diff(out.offsets) > MAX_BOUNDS
        if not over.any() or bits == 0:
            return out
        bits -= 1  # a column over a wide range of busy powers of two: halve its resolution until it fits
        pick = over[owner]
        merged = _merged(owner[pick], sub[pick], shift[pick], counts[pick], bits)
        order = np.argsort(np.concatenate((owner[~pick], merged[0])), kind="stable")
        owner, sub, shift, counts = (np.concatenate((a[~pick], b))[order]
                                     for a, b in zip((owner, sub, shift, counts), merged, strict=True))


def _listed(owner: np.ndarray, sub: np.ndarray, shift: np.ndarray, counts: np.ndarray, ratios: np.ndarray,
            whole: np.ndarray, n: int) -> OwnBuckets:
    """The cells as each payload's contiguous buckets: an empty one bridges two cells that do not touch."""
    key, less, ratio = sub.astype(np.float64), whole[owner].astype(np.float64), ratios[owner]
    low, high = (np.ldexp(key, shift) - less) * ratio, (np.ldexp(key + 1, shift) - less) * ratio
    first = np.ones(len(sub), dtype=bool)
    first[1:] = owner[1:] != owner[:-1]
    bridge = (low > 0) & (first | (low != np.concatenate(([np.nan], high[:-1]))))
    at = np.cumsum(1 + bridge) - 1  # each cell's own bound; an empty bucket up to its low, when needed, before it
    size = int(at[-1]) + 1 if len(at) else 0
    bounds, out, owners = np.empty(size), np.zeros(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    bounds[at], out[at], owners[at] = high, counts, owner
    bounds[at[bridge] - 1], owners[at[bridge] - 1] = low[bridge], owner[bridge]
    return OwnBuckets(bounds, out, np.searchsorted(owners, np.arange(n + 1)))


def _bit_length(values: np.ndarray) -> np.ndarray:
    """The bit length of each non-negative integer below 2**53 (0 for 0)."""
    return np.frexp(values)[1].astype(np.int64)


def _merged(owner: np.ndarray, sub: np.ndarray, shift: np.ndarray, counts: np.ndarray,
            bits: int | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cells `[sub << shift, (sub + 1) << shift)` with `sub` cut to `bits` bits below its leading one (the cell
    that holds it, 2**k times as wide), neighbours that become one cell of one owner merged and their counts added."""
    drop = np.maximum(_bit_length(sub) - 1 - bits, 0)
    sub, shift = np.right_shift(sub, drop), shift + drop
    new = np.ones(len(sub), dtype=bool)
    new[1:] = (owner[1:] != owner[:-1]) | (sub[1:] != sub[:-1]) | (shift[1:] != shift[:-1])
    if new.all():
        return owner, sub, shift, counts
    starts = np.flatnonzero(new)
    return owner[starts], sub[starts], shift[starts], np.add.reduceat(counts, starts)
