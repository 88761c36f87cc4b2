"""HdrHistogram's compressed V2 encoding (the payload of `.hlog` lines), decoded without the library.

base64 → `cookie, length` (big-endian int32s; compressed cookie base 0x1c849304) → zlib → a 40-byte header
(encoding cookie base 0x1c849303, payload length, normalizing index offset, significant digits, lowest
discernible value, highest trackable value, integer-to-double conversion ratio as an IEEE double) → counts as
ZigZag LEB128 longs of at most 9 bytes (the 9th byte holds 8 bits), where a negative value -n is a run of n
zero counts. Counts are in logical index order, so the normalizing index offset does not change which value
an index stands for (Java decodes with it set before filling and reading alike).

Index → values follows HdrHistogram: `unit magnitude` u = floor(log2 lowest), sub-bucket count 2**m with
m = ceil(log2(2 * 10**digits)); index i lies in bucket b = (i >> (m-1)) - 1 at sub-bucket
s = (i & (2**(m-1) - 1)) + 2**(m-1) (for b < 0: b = 0, s = i) and holds the integers [s << (b+u), (s+1) << (b+u)).
Such a range never contains a power of two strictly inside it unless s = 0, i.e. index 0 when u > 0
([0, 2**u): the values HdrHistogram cannot tell from 0), so every other count folds into exactly one log2 slot.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
import zlib
from dataclasses import dataclass

import numpy as np

from latencymap.buckets import MAX_COUNT, NSLOTS

COMPRESSED_COOKIE = 0x1C849304
ENCODING_COOKIE = 0x1C849303
_OUTER = struct.Struct(">Ii")
_HEADER = struct.Struct(">Iiiiqqd")
#: Decoded counts bytes accepted per histogram (a 5-digit histogram over the whole 64-bit range needs ~56 MB).
MAX_PAYLOAD = 64 << 20
_ZERO_RUN_MAX = 2**31 - 1  # Java refuses longer runs


class PayloadError(ValueError):
    """A payload that is not a readable HdrHistogram; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class Decoded:
    """One interval histogram: its settings and its non-zero counts by counts-array index."""

    digits: int
    lowest: int
    highest: int
    ratio: float
    index: np.ndarray
    counts: np.ndarray

    @property
    def unit_magnitude(self) -> int:
        return self.lowest.bit_length() - 1

    @property
    def half_magnitude(self) -> int:
        """log2 of half the sub-bucket count."""
        return max(math.ceil(math.log2(2 * 10**self.digits)) - 1, 0)

    def value_ranges(self, index: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(lowest equivalent value, size of the equivalent range) of each index, as exact float64."""
        index = self.index if index is None else index
        half = 1 << self.half_magnitude
        bucket = (index >> self.half_magnitude) - 1
        sub = (index & (half - 1)) + half
        low_bucket = bucket < 0
        sub = np.where(low_bucket, sub - half, sub)
        shift = np.where(low_bucket, 0, bucket) + self.unit_magnitude
        return np.ldexp(sub.astype(np.float64), shift), np.ldexp(1.0, shift)

    def median_values(self) -> np.ndarray:
        """HdrHistogram's `medianEquivalentValue` of each index (the value its own mean uses)."""
        low, size = self.value_ranges()
        return low + np.where(size > 1, size / 2, 0.0)


def decode_payload(text: str) -> Decoded:
    """The histogram of one base64 payload; PayloadError says what is wrong with it."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise PayloadError("expected a base64 histogram payload; it is not valid base64") from None
    if len(raw) < _OUTER.size:
        raise PayloadError(f"expected at least {_OUTER.size} bytes (cookie and length), got {len(raw)}")
    cookie, length = _OUTER.unpack_from(raw)
    if cookie & ~0xF0 != COMPRESSED_COOKIE:
        raise PayloadError(f"expected a compressed V2 histogram (cookie 0x{COMPRESSED_COOKIE:08x}), got cookie "
                           f"0x{cookie:08x} (V0/V1 encodings and DoubleHistogram logs are not read)")
    body = raw[_OUTER.size:]
    if not 0 <= length <= len(body):
        raise PayloadError(f"payload truncated: its header says {length} compressed bytes, {len(body)} are present")
    return _decode_compressed(body[:length])


def _decode_compressed(data: bytes) -> Decoded:
    inflater = zlib.decompressobj()
    try:
        head = inflater.decompress(data, _HEADER.size)
        if len(head) < _HEADER.size:
            raise PayloadError(f"zlib stream truncated: expected a {_HEADER.size}-byte histogram header, "
                               f"got {len(head)} bytes")
        cookie, size, _offset, digits, lowest, highest, ratio = _HEADER.unpack(head)
        if cookie & ~0xF0 != ENCODING_COOKIE:
            raise PayloadError(f"expected a V2 encoding cookie 0x{ENCODING_COOKIE:08x} inside, got 0x{cookie:08x}")
        _check_settings(size, digits, lowest, highest, ratio)
        payload = inflater.decompress(inflater.unconsumed_tail, size + 1)
    except zlib.error as err:
        raise PayloadError(f"corrupt zlib stream ({err})") from None
    if len(payload) > size:
        raise PayloadError(f"expected {size} bytes of counts (the header's payload length), the stream holds more")
    if len(payload) < size or not inflater.eof:
        raise PayloadError(f"zlib stream truncated: expected {size} bytes of counts, got {len(payload)}")
    index, counts = _counts(_varints(payload), digits, lowest)
    return Decoded(digits, lowest, highest, ratio, index, counts)


def _check_settings(size: int, digits: int, lowest: int, highest: int, ratio: float) -> None:
    if not 0 <= size <= MAX_PAYLOAD:
        raise PayloadError(f"expected a payload length in [0, {MAX_PAYLOAD}], got {size}")
    if not 0 <= digits <= 5:
        raise PayloadError(f"expected 0 to 5 significant digits, got {digits}")
    if lowest < 1 or highest < 2 * lowest:
        raise PayloadError(f"expected 1 <= lowest discernible value <= highest trackable / 2, got {lowest} and "
                           f"{highest}")
    if lowest.bit_length() - 1 + math.ceil(math.log2(2 * 10**digits)) > 62:
        raise PayloadError(f"expected {digits} significant digits above {lowest} to fit in 62 bits")
    if not (math.isfinite(ratio) and ratio > 0):
        raise PayloadError(f"expected a positive integer-to-double conversion ratio, got {ratio!r}")


def _varints(data: bytes) -> np.ndarray:
    """ZigZag LEB128 longs, vectorized; values of 9 bytes (counts of 2**55 and more) take the slow path."""
    b = np.frombuffer(data, dtype=np.uint8)
    if not len(b):
        return np.zeros(0, dtype=np.int64)
    ends = np.flatnonzero(b < 0x80)
    if not len(ends) or ends[-1] != len(b) - 1:
        return _varints_slow(data)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if int(lengths.max()) > 8:
        return _varints_slow(data)
    group = np.repeat(np.arange(len(ends)), lengths)
    shift = ((np.arange(len(b)) - starts[group]) * 7).astype(np.uint64)
    raw = np.add.reduceat((b & 0x7F).astype(np.uint64) << shift, starts)
    return (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)


def _varints_slow(data: bytes) -> np.ndarray:
    out: list[int] = []
    i, n = 0, len(data)
    while i < n:
        value = 0
        for k in range(9):
            if i >= n:
                raise PayloadError("expected a complete LEB128 count, the counts end inside one")
            byte = data[i]
            i += 1
            if k == 8:
                value |= byte << 56
                break
            value |= (byte & 0x7F) << (7 * k)
            if byte < 0x80:
                break
        out.append((value >> 1) ^ -(value & 1))
    return np.array(out, dtype=np.int64)


def _counts(words: np.ndarray, digits: int, lowest: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and counts of the non-zero entries; a negative word is a run of zeros."""
    if len(words) and int(words.min()) < -_ZERO_RUN_MAX:
        raise PayloadError(f"expected runs of at most {_ZERO_RUN_MAX} zero counts, got {-int(words.min())}")
    steps = np.where(words < 0, -words, 1)
    index = np.cumsum(steps) - steps
    limit = _max_length(digits, lowest)
    if len(index) and int(index[-1]) + int(steps[-1]) > limit:
        raise PayloadError(f"expected at most {limit} counts (values up to 2**63), got "
                           f"{int(index[-1]) + int(steps[-1])}")
    keep = words > 0
    return index[keep], words[keep]


def _max_length(digits: int, lowest: int) -> int:
    """Counts-array length of a histogram with these settings that tracks values up to 2**63 - 1."""
    unit = lowest.bit_length() - 1
    count_magnitude = math.ceil(math.log2(2 * 10**digits))
    buckets = 64 - unit - count_magnitude + 1
    return (buckets + 1) << max(count_magnitude - 1, 0)


def slots_of(values: np.ndarray) -> np.ndarray:
    """Log2 slot of each value (in the stream unit), as `latencymap.buckets.bin_values` places it."""
    slots = np.zeros(values.shape, dtype=np.int64)
    big = values >= 1.0
    if big.any():
        _, exp = np.frexp(values[big])
        slots[big] = np.minimum(exp.astype(np.int64), NSLOTS - 1)
    return slots


@dataclass(frozen=True, slots=True)
class Folded:
    """A histogram on latencymap's slots: counts, Σ count x median value (stream unit), and the approximations."""

    counts: np.ndarray
    values: np.ndarray
    below_lowest: int
    straddling: int


def fold(hist: Decoded) -> Folded:
    """Counts and value sums per log2 slot.

    Each count is placed by its sub-bucket's median equivalent value, the value HdrHistogram's own mean uses
    (`getMean` sums count x medianEquivalentValue), so our time spent equals its count x mean; the median is
    within half a sub-bucket (1/2**m of the value) of every value the sub-bucket holds. Sub-buckets sit inside
    one slot, so the slot is the one of every value recorded there, except for index 0 when the lowest
    discernible value is above 1 (`below_lowest` counts) and, with a conversion ratio that is not a power of
    two, sub-buckets that cross a power of two (`straddling` counts).
    """
    counts = np.zeros(NSLOTS, dtype=np.int64)
    values = np.zeros(NSLOTS, dtype=np.float64)
    if not len(hist.index):
        return Folded(counts, values, 0, 0)
    if int(hist.counts.max()) > MAX_COUNT // len(hist.counts) and sum(int(c) for c in hist.counts) > MAX_COUNT:
        raise PayloadError(f"expected at most {MAX_COUNT} events in one histogram")
    low, size = hist.value_ranges()
    median = (low + np.where(size > 1, size / 2, 0.0)) * hist.ratio
    slots = slots_of(median)
    straddle = slots_of(low * hist.ratio) != slots_of((low + size - 1) * hist.ratio)
    below = int(hist.counts[hist.index == 0].sum()) if hist.unit_magnitude > 0 else 0
    starts = np.flatnonzero(np.concatenate(([True], slots[1:] != slots[:-1])))
    counts[slots[starts]] = np.add.reduceat(hist.counts, starts)
    values[slots[starts]] = np.add.reduceat(hist.counts * median, starts)
    straddling = int(hist.counts[straddle & (hist.index != 0)].sum()) if straddle.any() else 0
    return Folded(counts, values, below, straddling)
