"""HdrHistogram's compressed encodings (the payload of `.hlog` lines), decoded without the library.

V2 (every current library): base64 → `cookie, length` (big-endian int32s; compressed cookie base 0x1c849304)
→ zlib → a 40-byte header (encoding cookie base 0x1c849303, payload length, normalizing index offset,
significant digits, lowest discernible value, highest trackable value, integer-to-double conversion ratio as
an IEEE double) → counts as ZigZag LEB128 longs of at most 9 bytes (the 9th byte holds 8 bits), where a
negative value -n is a run of n zero counts. Counts are in logical index order, so the normalizing index
offset does not change which value an index stands for (Java decodes with it set before filling and reading
alike).

The older encodings Java still reads (jHiccup logs of 2014-2015): V1 (compressed cookie base 0x1c849302,
encoding 0x1c849301) has V2's header but every count as a big-endian signed word, no runs; V0 (0x1c849309,
encoding 0x1c849308) has a 32-byte header (cookie, significant digits, lowest, highest, total count) and its
words fill the rest of the stream. Their word size, 2, 4 or 8 bytes, is bits 4-7 of the encoding cookie.

A DoubleHistogram (Java's floating-point histogram) payload is 16 bytes before an integer histogram's whole
compressed payload: its cookie 0x0c72124f, significant digits (int32) and the highest-to-lowest value ratio it was
configured with (int64). The integer histogram's conversion ratio turns its values into the doubles recorded, and
is the ratio `fold_payloads` already applies; it is grown with the range (auto-resizing), so it changes from
interval to interval.

Index → values follows HdrHistogram: `unit magnitude` u = floor(log2 lowest), sub-bucket count 2**m with
m = ceil(log2(2 * 10**digits)); index i lies in bucket b = (i >> (m-1)) - 1 at sub-bucket
s = (i & (2**(m-1) - 1)) + 2**(m-1) (for b < 0: b = 0, s = i) and holds the integers [s << (b+u), (s+1) << (b+u)).
Such a range never contains a power of two strictly inside it unless s = 0, i.e. index 0 when u > 0
([0, 2**u): the values HdrHistogram cannot tell from 0), so every other count folds into exactly one log2 slot.

Many payloads are decoded together (one NumPy pass over all their counts): a log has one per interval.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from latencymap.core.buckets import MAX_COUNT, NSLOTS
from latencymap.sources.hdrhistogram_buckets import OwnBuckets, own_buckets

COMPRESSED_COOKIE = 0x1C849304
ENCODING_COOKIE = 0x1C849303
#: Compressed cookie base → (version, encoding cookie base inside the zlib stream).
VERSIONS = {COMPRESSED_COOKIE: (2, ENCODING_COOKIE), 0x1C849302: (1, 0x1C849301), 0x1C849309: (0, 0x1C849308)}
#: `word` of a V2 payload: its counts are ZigZag LEB128, not fixed-width words.
LEB128 = 9
_OUTER = struct.Struct(">Ii")
#: Java's DoubleHistogram, compressed (what logs hold) and not: cookie, significant digits, configured value ratio.
DOUBLE_COOKIE, DOUBLE_RAW_COOKIE = 0x0C72124F, 0x0C72124E
_DOUBLE = struct.Struct(">Iiq")
_HEADER = struct.Struct(">Iiiiqqd")
_V0_HEADER = struct.Struct(">Iiqqq")
#: Decoded counts bytes accepted per histogram (a 5-digit histogram over the whole 64-bit range needs ~56 MB).
MAX_PAYLOAD = 64 << 20
_ZERO_RUN_MAX = 2**31 - 1  # Java refuses longer runs
_EXACT_FLOAT = 2**52  # counts summed as float64 below this are exact


class PayloadError(ValueError):
    """A payload that is not a readable HdrHistogram; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What a histogram's header says about its value scale; `double`: it is a DoubleHistogram's."""

    digits: int
    lowest: int
    highest: int
    ratio: float
    double: bool = False

    @property
    def unit_magnitude(self) -> int:
        return self.lowest.bit_length() - 1

    @property
    def half_magnitude(self) -> int:
        """log2 of half the sub-bucket count."""
        return max(math.ceil(math.log2(2 * 10**self.digits)) - 1, 0)

    @property
    def max_length(self) -> int:
        """Counts-array length of such a histogram tracking values up to 2**63 - 1."""
        buckets = 64 - self.unit_magnitude - (self.half_magnitude + 1) + 1
        return (buckets + 1) << self.half_magnitude


@dataclass(frozen=True, slots=True)
class Decoded:
    """One histogram: its settings and its non-zero counts by counts-array index."""

    settings: Settings
    index: np.ndarray
    counts: np.ndarray


@dataclass(frozen=True, slots=True)
class Folded:
    """Histograms on latencymap's slots, one row per payload (rows of failed payloads are zero).

    `values`: Σ count x median equivalent value per slot (the payload's value unit). `below_lowest`: counts of
    index 0 when the lowest discernible value is above 1; `straddling`: counts whose range crosses a power of
    two (only with a conversion ratio that is not a power of two); `errors`: None or what is wrong.
    `extremes` (rows, 2, NSLOTS): per slot, the lowest and the highest equivalent value (HdrHistogram's
    `lowestEquivalentValue`, `highestEquivalentValue`) of its occupied sub-buckets, clipped to the slot, NaN where
    none is (see `fold_payloads`). `own`: each payload's occupied sub-buckets (`hdrhistogram_buckets`).
    """

    counts: np.ndarray
    values: np.ndarray
    below_lowest: np.ndarray
    straddling: np.ndarray
    settings: list[Settings | None]
    errors: list[str | None]
    extremes: np.ndarray
    own: OwnBuckets


def inflate(text: str) -> tuple[Settings, bytes, int]:
    """The settings, counts bytes and word size (LEB128 for V2) of one base64 payload; PayloadError says what
    is wrong."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise PayloadError("expected a base64 histogram payload; it is not valid base64") from None
    if len(raw) < _OUTER.size:
        raise PayloadError(f"expected at least {_OUTER.size} bytes (cookie and length), got {len(raw)}")
    cookie, length = _OUTER.unpack_from(raw)
    double = cookie in (DOUBLE_COOKIE, DOUBLE_RAW_COOKIE)
    if double:
        raw = _double_body(raw)
        cookie, length = _OUTER.unpack_from(raw)
    if cookie & ~0xF0 not in VERSIONS:
        raise PayloadError(f"expected a compressed V2, V1 or V0 histogram (cookie 0x{COMPRESSED_COOKIE:08x}, "
                           f"0x1c849302 or 0x1c849309) or DoubleHistogram (0x{DOUBLE_COOKIE:08x}), got cookie "
                           f"0x{cookie:08x}")
    version, inner = VERSIONS[cookie & ~0xF0]
    body = raw[_OUTER.size:]
    if not 0 <= length <= len(body):
        raise PayloadError(f"payload truncated: its header says {length} compressed bytes, {len(body)} are present")
    header = _V0_HEADER if version == 0 else _HEADER
    inflater = zlib.decompressobj()
    try:
        head = inflater.decompress(body[:length], header.size)
        if len(head) < header.size:
            raise PayloadError(f"zlib stream truncated: expected a {header.size}-byte histogram header, "
                               f"got {len(head)} bytes")
        if version == 0:
            cookie, digits, lowest, highest, _total = header.unpack(head)
            size, ratio = MAX_PAYLOAD, 1.0  # V0 gives no length: its words run to the end of the stream
        else:
            cookie, size, _offset, digits, lowest, highest, ratio = header.unpack(head)
        if cookie & ~0xF0 != inner:
            raise PayloadError(f"expected a V{version} encoding cookie 0x{inner:08x} inside, got 0x{cookie:08x}")
        word = LEB128 if version == 2 else (cookie & 0xF0) >> 4
        if word not in (2, 4, 8, LEB128):
            raise PayloadError(f"expected counts of 2, 4 or 8 bytes (cookie bits 4-7), got {word}")
        _check_settings(size, digits, lowest, highest, ratio)
        payload = inflater.decompress(inflater.unconsumed_tail, size + 1)
    except zlib.error as err:
        raise PayloadError(f"corrupt zlib stream ({err})") from None
    if len(payload) > size:
        raise PayloadError(f"expected {size} bytes of counts (the header's payload length), the stream holds more")
    # HdrHistogram_c's V1 encoder counted its 40-byte header in the payload length (the stream itself is whole).
    c_quirk = version == 1 and len(payload) == size - _HEADER.size
    if (version > 0 and len(payload) < size and not c_quirk) or not inflater.eof:
        raise PayloadError(f"zlib stream truncated: expected {size} bytes of counts, got {len(payload)}")
    if word != LEB128 and len(payload) % word:
        raise PayloadError(f"expected counts of {word} bytes each, got {len(payload)} bytes")
    return Settings(digits, lowest, highest, ratio, double), payload, word


def _double_body(raw: bytes) -> bytes:
    """The integer histogram's payload inside a DoubleHistogram's (`raw`, decoded from base64)."""
    if len(raw) < _DOUBLE.size + _OUTER.size:
        raise PayloadError(f"expected a DoubleHistogram of at least {_DOUBLE.size + _OUTER.size} bytes (its header "
                           f"and an integer histogram's), got {len(raw)}")
    cookie, digits, ratio = _DOUBLE.unpack_from(raw)
    if cookie == DOUBLE_RAW_COOKIE:
        raise PayloadError(f"expected a compressed DoubleHistogram (cookie 0x{DOUBLE_COOKIE:08x}), got the "
                           f"uncompressed encoding 0x{cookie:08x}, which logs do not hold")
    if not 0 <= digits <= 5 or ratio < 2:
        raise PayloadError(f"expected a DoubleHistogram of 0 to 5 significant digits and a value ratio of 2 or "
                           f"more, got {digits} digits and ratio {ratio}")
    return raw[_DOUBLE.size:]


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


def _words(blobs: Sequence[tuple[int, bytes]], errors: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """The ZigZag LEB128 longs of many owners' counts bytes in one vectorized pass, and each one's owner.

    An owner whose bytes hold a 9-byte value (a count of 2**55 or more) or end inside a value is decoded on its
    own, the slow way; one that fails gets its error in `errors`.
    """
    fast = [(i, d) for i, d in blobs if d and d[-1] < 0x80]
    slow = [(i, d) for i, d in blobs if d and d[-1] >= 0x80]
    words, owner = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if fast:
        b = np.frombuffer(b"".join(d for _, d in fast), dtype=np.uint8)
        ends = np.flatnonzero(b < 0x80)  # every blob ends with a terminator: no value spans two blobs
        starts = np.concatenate(([0], ends[:-1] + 1))
        lengths = ends - starts + 1
        owner = np.repeat(np.array([i for i, _ in fast], dtype=np.int64), [len(d) for _, d in fast])[starts]
        position = np.arange(len(b)) - np.repeat(starts, lengths)
        shift = (np.minimum(position, 8) * 7).astype(np.uint64)
        raw = np.add.reduceat((b & 0x7F).astype(np.uint64) << shift, starts)
        words = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
        if int(lengths.max()) > 8:
            long = np.unique(owner[lengths > 8])
            keep = ~np.isin(owner, long)
            words, owner = words[keep], owner[keep]
            again = set(long.tolist())
            slow += [(i, d) for i, d in fast if i in again]
    if not slow:
        return words, owner
    parts, owners = [words], [owner]
    for i, data in slow:
        try:
            parts.append(_varints_slow(data))
        except PayloadError as err:
            errors[i] = str(err)
            continue
        owners.append(np.full(len(parts[-1]), i, dtype=np.int64))
    owner = np.concatenate(owners)
    order = np.argsort(owner, kind="stable")
    return np.concatenate(parts)[order], owner[order]


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


def _decode(texts: Sequence[str]) -> tuple[list[Settings | None], list[str | None], np.ndarray, np.ndarray,
                                           np.ndarray]:
    """Settings, errors, and the (owner, index, count) of every non-zero count of the payloads that decode."""
    n = len(texts)
    settings: list[Settings | None] = [None] * n
    errors: list[str | None] = [None] * n
    blobs: list[tuple[int, bytes]] = []
    fixed: list[tuple[int, bytes, int]] = []
    for i, text in enumerate(texts):
        try:
            settings[i], data, word = inflate(text)
        except PayloadError as err:
            errors[i] = str(err)
            continue
        if word == LEB128:
            blobs.append((i, data))
        else:
            fixed.append((i, data, word))
    words, owner = _words(blobs, errors)
    steps = np.where(words < 0, -np.maximum(words, -(2**40)), 1)  # capped: no int64 overflow on hostile runs
    long_runs = words < -_ZERO_RUN_MAX
    for i in np.unique(owner[long_runs]).tolist():
        errors[i] = (f"expected runs of at most {_ZERO_RUN_MAX} zero counts, got "
                     f"{-int(words[long_runs & (owner == i)].min())}")
    lengths = np.bincount(owner, weights=steps, minlength=n)
    for i, s in enumerate(settings):
        if s is not None and errors[i] is None and lengths[i] > s.max_length:
            errors[i] = f"expected at most {s.max_length} counts (values up to 2**63), got {int(lengths[i])}"
    ends = np.cumsum(steps)
    index = ends - steps - np.concatenate(([0], ends))[np.searchsorted(owner, np.arange(n))][owner]
    keep = (words > 0) & np.array([e is None for e in errors], dtype=bool)[owner]
    owner, index, words = owner[keep], index[keep], words[keep]
    if fixed:
        more = _fixed_words(fixed, settings, errors)
        owner, index, words = (np.concatenate((a, b)) for a, b in zip((owner, index, words), more, strict=True))
        order = np.argsort(owner, kind="stable")
        owner, index, words = owner[order], index[order], words[order]
    return settings, errors, owner, index, words


def _fixed_words(blobs: Sequence[tuple[int, bytes, int]], settings: list[Settings | None],
                 errors: list[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (owner, index, count) of the non-zero counts of V0/V1 payloads: big-endian words, one per index."""
    owners, indexes, counts = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0, np.int64)]
    for i, data, word in blobs:
        words = np.frombuffer(data, dtype=f">i{word}").astype(np.int64)
        limit = settings[i].max_length  # type: ignore[union-attr]  # set for every payload that inflated
        if len(words) > limit:
            errors[i] = f"expected at most {limit} counts (values up to 2**63), got {len(words)}"
        elif words.size and int(words.min()) < 0:
            errors[i] = f"expected counts of 0 or more, got {int(words.min())}"
        else:
            at = np.flatnonzero(words)
            owners.append(np.full(len(at), i, dtype=np.int64))
            indexes.append(at.astype(np.int64))
            counts.append(words[at])
    return np.concatenate(owners), np.concatenate(indexes), np.concatenate(counts)


def decode_payload(text: str) -> Decoded:
    """The non-zero counts of one base64 payload by index; PayloadError says what is wrong with it."""
    (settings,), (error,), _owner, index, counts = _decode([text])
    if error is not None or settings is None:
        raise PayloadError(error)
    return Decoded(settings, index, counts)


def slots_of(values: np.ndarray) -> np.ndarray:
    """Log2 slot of each value (in the stream unit), as `latencymap.core.buckets.bin_values` places it."""
    slots = np.zeros(values.shape, dtype=np.int64)
    big = values >= 1.0
    if big.any():
        _, exp = np.frexp(values[big])
        slots[big] = np.minimum(exp.astype(np.int64), NSLOTS - 1)
    return slots


def fold_payloads(texts: Sequence[str], scales: Sequence[float] | None = None) -> Folded:
    """Counts and value sums per log2 slot of many payloads at once, each payload's values times its `scales`
    entry (default 1: the payload's own value unit).

    Each count is placed by its sub-bucket's median equivalent value, the value HdrHistogram's own mean uses
    (`getMean` sums count x medianEquivalentValue), so our time spent equals its count x mean; the median is
    within half a sub-bucket (1/2**m of the value) of every value the sub-bucket holds. Sub-buckets sit inside
    one slot, so the slot is the one of every value recorded there (but see `Folded`).

    A slot's extremes are those of the sub-buckets counted in it, clipped to the slot: a count whose range crosses
    a power of two (index 0, `[0, 2**u)`, below the lowest discernible value: jHiccup's `[0, 16384)`; a conversion
    ratio that is not a power of two) is counted in its median's slot, so only the part of its range inside that
    slot is said: jHiccup's `[0, 16384)` count gives its slot `[8192, 16384)` the smallest value 8192, not 0.
    """
    given, errors, owner, index, counts = _decode(texts)
    n = len(texts)
    settings = [s or Settings(0, 1, 2, 1.0) for s in given]
    half_mag = np.array([s.half_magnitude for s in settings], dtype=np.int64)[owner]
    unit_mag = np.array([s.unit_magnitude for s in settings], dtype=np.int64)[owner]
    ratios = np.array([s.ratio for s in settings], dtype=np.float64)
    if scales is not None:
        ratios *= np.asarray(scales, dtype=np.float64)
    bucket = np.right_shift(index, half_mag) - 1
    half = np.left_shift(1, half_mag)
    sub = np.where(bucket < 0, index, (index & (half - 1)) + half)
    shift = np.maximum(bucket, 0) + unit_mag
    # The median of [sub << shift, (sub + 1) << shift) is (2 sub + 1) << (shift - 1), or sub when shift is 0.
    twice = (2 * sub + (shift > 0)).astype(np.float64)
    _, bits = np.frexp(twice)
    median = np.ldexp(twice, shift - 1) * ratios[owner]
    scale, power = np.frexp(ratios)
    if np.all(scale == 0.5):  # ratios are powers of two: slots by integer arithmetic, no range crosses one
        slot = np.clip(np.where(twice > 0, bits + shift - 1 + (power - 1)[owner], 0), 0, NSLOTS - 1)
        across = np.zeros(n, dtype=np.int64)
    else:
        slot = slots_of(median)
        low = np.ldexp(sub.astype(np.float64), shift) * ratios[owner]
        top = (np.ldexp(sub.astype(np.float64) + 1, shift) - 1) * ratios[owner]
        crossing = (slots_of(low) != slots_of(top)) & (index != 0)
        across = np.bincount(owner[crossing], weights=counts[crossing], minlength=n).astype(np.int64)
    cell = owner * NSLOTS + slot
    totals = np.bincount(owner, weights=counts.astype(np.float64), minlength=n)
    if float(totals.max(initial=0)) < _EXACT_FLOAT:
        flat = np.rint(np.bincount(cell, weights=counts.astype(np.float64), minlength=n * NSLOTS)).astype(np.int64)
    else:
        flat = _exact_counts(cell, counts, owner, totals, errors)
    values = np.bincount(cell, weights=counts * median, minlength=n * NSLOTS).reshape(n, NSLOTS)
    failed = np.array([e is not None for e in errors], dtype=bool)
    values[failed] = 0.0
    zero = (index == 0) & (unit_mag > 0)
    below = np.bincount(owner[zero], weights=counts[zero], minlength=n).astype(np.int64)
    extremes = _equivalent_extremes(cell, sub, shift, ratios[owner], n)
    extremes[failed] = np.nan
    if failed.any():
        ok = ~failed[owner]
        owner, sub, shift, counts = owner[ok], sub[ok], shift[ok], counts[ok]
    own = own_buckets(owner, sub, shift, counts, ratios, np.array([not s.double for s in settings]), n)
    return Folded(flat.reshape(n, NSLOTS), values, below, across, given, errors, extremes, own)


def _equivalent_extremes(cell: np.ndarray, sub: np.ndarray, shift: np.ndarray, ratio: np.ndarray,
                         n: int) -> np.ndarray:
    """(n, 2, NSLOTS): per cell, the least lowest and the greatest highest equivalent value of the sub-buckets
    `[sub << shift, (sub + 1) << shift)` (times `ratio`) counted in it, clipped to its slot (the top one is open
    above); NaN in a cell that holds none."""
    least = np.full(n * NSLOTS, np.nan)
    most = np.full(n * NSLOTS, np.nan)
    np.fmin.at(least, cell, np.ldexp(sub.astype(np.float64), shift) * ratio)
    np.fmax.at(most, cell, (np.ldexp(sub.astype(np.float64) + 1, shift) - 1) * ratio)
    slots = np.arange(NSLOTS)
    floor = np.where(slots > 0, np.ldexp(1.0, slots - 1), 0.0)
    ceiling = np.where(slots < NSLOTS - 1, np.ldexp(1.0, slots), np.inf)
    return np.stack((np.maximum(least.reshape(n, NSLOTS), floor), np.minimum(most.reshape(n, NSLOTS), ceiling)),
                    axis=1)


def _exact_counts(cell: np.ndarray, counts: np.ndarray, owner: np.ndarray, totals: np.ndarray,
                  errors: list[str | None]) -> np.ndarray:
    """Per-cell int64 sums when some histogram holds 2**52 events or more; past MAX_COUNT it is an error."""
    for i in np.flatnonzero(totals >= _EXACT_FLOAT):
        if sum(int(c) for c in counts[owner == i]) > MAX_COUNT:
            errors[i] = f"expected at most {MAX_COUNT} events in one histogram"
    ok = np.array([e is None for e in errors], dtype=bool)[owner]
    flat = np.zeros(len(errors) * NSLOTS, dtype=np.int64)
    np.add.at(flat, cell[ok], counts[ok])
    return flat
