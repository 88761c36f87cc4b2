"""Compact column storage of one stream: the occupied slot window only, narrow counts, cold chunks compressed.

A `Block` holds consecutive columns in memory: counts of the slots `lo .. lo + width - 1` (every other slot is
zero) in the narrowest integer type that holds them, the exact time spent per slot when a column carried it
(`None` for a block of estimated columns: time is then counts x the slots' midpoints, computed when read),
per-column start, end, duration and flags, and, for a rebinned source whose overflow bucket (`+Inf`) held events
whose values are not known, those events and the bucket's lower bound per column (`over`, `over_at`; `None` for a
block without). The newest block of a stream grows in place (window and integer type widen on demand); full blocks
are sealed into a `Chunk`: the block at its tightest window and types (times as float32 when every value survives
the round trip, overflow events as integers when they are, their bounds as runs: they change only with the bucket
layout), each array byte-shuffled and the whole compressed with zstd. Decoding gives the same numbers back, bit for bit.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from latencymap.core.lean import dataclass

#: Column flags: a counter reset, missing data, time exact (given by the source, or no events), time given.
RESET, GAP, EXACT, TIMED = 1, 2, 4, 8
#: Columns per sealed chunk.
CHUNK_COLUMNS = 1024
ZSTD_LEVEL = 3
_UNSIGNED = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32))
_SIGNED = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32))
_INT64 = np.dtype(np.int64)
_META = ("start", "end", "dur")
#: (min, max) of each integer type (np.iinfo is slow to ask on every append).
_LIMITS = {t: (int(np.iinfo(t).min), int(np.iinfo(t).max)) for t in (*_UNSIGNED, *_SIGNED, _INT64)}


def observed(dur: np.ndarray, flags: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per column, the seconds it covers with data: its duration, 0 for an empty gap column (data missing); a gap
    column holding events (a counter's increase across an outage) counted them over its whole span."""
    seen: np.ndarray = np.where(((flags & GAP) == 0) | counts.any(axis=1), dur, 0.0)
    return seen


def observed_s(dur: np.ndarray, flags: np.ndarray, counts: np.ndarray) -> float:
    """`observed` summed: the seconds the columns with data cover."""
    return float(observed(dur, flags, counts).sum())


def count_sums(counts: np.ndarray, axis: int = 0) -> np.ndarray:
    """Sums of integer counts along `axis`, exact: int64 where no sum can pass its range (the usual case: the largest
    count times their number says), else Python integers (an object array)."""
    if counts.size and magnitude(counts) * counts.shape[axis] > _LIMITS[_INT64][1]:
        return counts.astype(object).sum(axis=axis)  # type: ignore[no-any-return]
    return counts.sum(axis=axis, dtype=np.int64)  # type: ignore[no-any-return]


def plus(total: np.ndarray, part: np.ndarray, lo: int = 0) -> np.ndarray:
    """`total` with `part` added to its slots `lo ..`, exact: in place while int64 surely holds the sums, else in a
    new array of Python integers."""
    window = slice(lo, lo + len(part))
    if total.dtype == object or part.dtype == object or \
            (part.size and magnitude(total[window]) + magnitude(part) > _LIMITS[_INT64][1]):
        total = total.astype(object)
        total[window] = total[window] + part.astype(object)
        return total
    total[window] += part
    return total


def magnitude(counts: np.ndarray) -> int:
    """The largest absolute value of integer counts (0 when there are none)."""
    if not counts.size:
        return 0
    return max(int(counts.max()), -int(counts.min()))


def count_dtype(low: int, high: int) -> np.dtype:
    """The narrowest integer type holding every value in [low, high]."""
    for dtype in _UNSIGNED if low >= 0 else _SIGNED:
        tmin, tmax = _LIMITS[dtype]
        if tmin <= low and high <= tmax:
            return dtype
    return _INT64


def _wider(a: np.dtype, b: np.dtype) -> np.dtype:
    """A type holding every value of both integer types."""
    if a == b:
        return a
    (amin, amax), (bmin, bmax) = _LIMITS[a], _LIMITS[b]
    return count_dtype(min(amin, bmin), max(amax, bmax))


def occupied(counts: np.ndarray, time: np.ndarray | None) -> np.ndarray:
    """Per slot: does any column hold a count, or a time that is not +0.0 (-0.0 and NaN are kept as they are)."""
    used: np.ndarray = (counts != 0).any(axis=0)
    if time is not None:
        used |= ((time != 0) | np.signbit(time)).any(axis=0)
    return used


class Block:
    """Columns in memory over a slot window; the newest block of a stream is appended to, decoded chunks are not."""

    __slots__ = ("counts", "dur", "end", "flags", "lo", "n", "over", "over_at", "start", "time")

    def __init__(self, capacity: int, lo: int = 0, width: int = 0,
                 dtype: np.dtype = _UNSIGNED[0]) -> None:
        self.n = 0
        self.lo = lo
        self.counts: np.ndarray = np.zeros((capacity, width), dtype=dtype)
        self.time: np.ndarray | None = None
        self.start: np.ndarray = np.zeros(capacity)
        self.end: np.ndarray = np.zeros(capacity)
        self.dur: np.ndarray = np.zeros(capacity)
        self.flags: np.ndarray = np.zeros(capacity, dtype=np.uint8)
        #: Per column: the events of its source's overflow bucket whose values are not known (0: none), and that
        #: bucket's lower bound (s; NaN where it held none); both None while no column of the block has any.
        self.over: np.ndarray | None = None
        self.over_at: np.ndarray | None = None

    @property
    def width(self) -> int:
        return int(self.counts.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (at their capacity)."""
        arrays = (self.counts, self.time, self.start, self.end, self.dur, self.flags, self.over, self.over_at)
        return sum(a.nbytes for a in arrays if a is not None)

    def append(self, counts: np.ndarray, time: np.ndarray | None, start: np.ndarray, end: np.ndarray,
               dur: np.ndarray, flags: np.ndarray, mid: np.ndarray, limit: int,
               over: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Add full-width (k, 64) columns; `time`, when given, holds every row's time (counts x `mid` if estimated);
        `over`, when given, their overflow events and bounds (`Block.over`, `Block.over_at`)."""
        k = len(counts)
        slots = None if self.n and self._fits(counts, time) else np.flatnonzero(occupied(counts, time))
        if slots is not None and slots.size:
            lo, hi = int(slots[0]), int(slots[-1]) + 1
            if self.width:
                lo, hi = min(lo, self.lo), max(hi, self.lo + self.width)
            window = counts[:, lo:hi]
            need = count_dtype(int(window.min()), int(window.max()))
            self._reshape(lo, hi - lo, _wider(self.counts.dtype, need) if self.n else need)
        self._grow(self.n + k, limit)
        rows = slice(self.n, self.n + k)
        lo, width = self.lo, self.width
        self.counts[rows] = counts[:, lo: lo + width]
        if time is not None and self.time is None:
            self.time = np.zeros(self.counts.shape)
            np.multiply(self.counts[: self.n], mid[lo: lo + width], out=self.time[: self.n])
        if self.time is not None:
            if time is None:
                np.multiply(self.counts[rows], mid[lo: lo + width], out=self.time[rows])
            else:
                self.time[rows] = time[:, lo: lo + width]
        self.start[rows], self.end[rows], self.dur[rows], self.flags[rows] = start, end, dur, flags
        if over is not None and self.over is None:
            self.over, self.over_at = np.zeros(len(self.start)), np.full(len(self.start), np.nan)
        if self.over is not None and self.over_at is not None:
            self.over[rows], self.over_at[rows] = (0.0, np.nan) if over is None else over
        self.n += k

    def _fits(self, counts: np.ndarray, time: np.ndarray | None) -> bool:
        """Whether columns hold nothing outside the window and counts within its type (the usual case)."""
        lo, hi = self.lo, self.lo + self.width
        if time is not None or np.count_nonzero(counts) != np.count_nonzero(counts[:, lo:hi]):
            return False
        if hi > lo:
            tmin, tmax = _LIMITS[self.counts.dtype]
            window = counts[:, lo:hi]
            return bool(tmin <= window.min() and window.max() <= tmax)
        return True

    def _reshape(self, lo: int, width: int, dtype: np.dtype) -> None:
        """Widen the window to [lo, lo + width) and the counts to `dtype` (a no-op when both already fit)."""
        if lo == self.lo and width == self.width and dtype == self.counts.dtype:
            return
        cap, at = len(self.counts), self.lo - lo
        counts = np.zeros((cap, width), dtype=dtype)
        counts[: self.n, at: at + self.width] = self.counts[: self.n]
        if self.time is not None:
            time = np.zeros((cap, width))
            time[: self.n, at: at + self.width] = self.time[: self.n]
            self.time = time
        self.counts, self.lo = counts, lo

    def _grow(self, need: int, limit: int) -> None:
        """Room for `need` columns (doubling, at most `limit`)."""
        cap = len(self.start)
        if need <= cap:
            return
        new = min(limit, max(need, 2 * cap, 16))
        for name in ("counts", "time", "start", "end", "dur", "flags", "over", "over_at"):
            arr = getattr(self, name)
            if arr is not None:
                grown = np.zeros((new, *arr.shape[1:]), dtype=arr.dtype)
                grown[: self.n] = arr[: self.n]
                setattr(self, name, grown)

    def dense_counts(self, rows: slice, out: np.ndarray) -> None:
        """Write rows' counts into `out` (rows, 64), zero outside the window (out must be zeroed)."""
        out[:, self.lo: self.lo + self.width] = self.counts[rows]

    def dense_time(self, rows: slice, out: np.ndarray, mid: np.ndarray) -> None:
        """Write rows' time into `out` (rows, 64): stored, or counts x midpoints as the whole history computes it."""
        window = slice(self.lo, self.lo + self.width)
        if self.time is not None:
            out[:, window] = self.time[rows]
        else:
            np.multiply(self.counts[rows], mid[window], out=out[:, window])


_LOCAL = threading.local()


def _codecs() -> tuple[Any, Any]:
    """This thread's zstd compressor and decompressor (neither may be shared between threads)."""
    pair = getattr(_LOCAL, "pair", None)
    if pair is None:
        import zstandard

        pair = _LOCAL.pair = (zstandard.ZstdCompressor(level=ZSTD_LEVEL), zstandard.ZstdDecompressor())
    return pair


def _compress(data: bytes) -> bytes:
    """zstd of `data`, in a bytes object of its own size (zstandard's keeps the worst-case allocation)."""
    return memoryview(_codecs()[0].compress(data)).tobytes()


def _shuffle(arr: np.ndarray) -> bytes:
    """The array's bytes grouped by byte position (all first bytes, then all second bytes...): zstd likes that."""
    size = arr.dtype.itemsize
    raw = np.ascontiguousarray(arr).view(np.uint8)
    return raw.tobytes() if size == 1 else raw.reshape(-1, size).T.tobytes()


def _unshuffle(buf: memoryview | bytes, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    size = dtype.itemsize
    raw = np.frombuffer(buf, dtype=np.uint8)
    if size > 1:
        raw = raw.reshape(size, -1).T.copy()
    return raw.view(dtype).reshape(shape)


@dataclass(slots=True, eq=False)
class Chunk:
    """A sealed block: its arrays compressed (counts, time, metadata: one zstd frame each, decoded separately), plus
    what totals need without decoding them."""

    n: int
    lo: int
    width: int
    count_type: np.dtype
    time_type: np.dtype | None
    counts_blob: bytes
    time_blob: bytes
    meta_blob: bytes
    #: Per slot of the window (`lo` to `lo + width`): counts and time spent summed over the chunk's columns, and
    #: whether any column's count is not zero.
    slot_counts: np.ndarray
    slot_time: np.ndarray
    used: np.ndarray
    #: Bitwise AND and OR of the columns' flags.
    flags_and: int
    flags_or: int
    #: Duration of the columns with data (`observed_s`), summed over the chunk (for quick totals).
    dur_total: float
    #: Arrival order among every chunk of an accumulator (oldest dropped first under a memory budget).
    seq: int = 0
    #: Whether the time blob is byte-shuffled (smaller for times with random mantissas, larger for regular ones).
    time_shuffled: bool = False
    #: Sizes of the counts blob's frames, one per slot of the window (each slot's counts apart compress better when
    #: slots hold counts of different sizes); empty when the blob is one frame of every slot.
    count_frames: tuple[int, ...] = ()
    #: The columns' overflow events and bounds (`Block.over`), compressed: the events (in `over_type`; None: no
    #: column has any), then where each of `over_runs` runs of one bound starts among the columns holding events
    #: (int64), then the runs' bounds (float64).
    over_blob: bytes = b""
    over_type: np.dtype | None = None
    over_runs: int = 0
    #: The overflow events summed over the chunk's columns, and their smallest bound (inf: none).
    over_events: float = 0.0
    over_least: float = float("inf")

    @property
    def nbytes(self) -> int:
        """Bytes this chunk keeps in memory (compressed data and summaries)."""
        blobs = len(self.counts_blob) + len(self.time_blob) + len(self.meta_blob) + 8 * len(self.count_frames)
        return blobs + len(self.over_blob) + self.slot_counts.nbytes + self.used.nbytes + self.slot_time.nbytes + 200

    @staticmethod
    def seal(block: Block, mid: np.ndarray) -> Chunk:
        """Compress a block's columns at their tightest window and types."""
        n = block.n
        counts, time = block.counts[:n], None if block.time is None else block.time[:n]
        used_window = occupied(counts, time)
        slots = np.flatnonzero(used_window)
        a, b = (int(slots[0]), int(slots[-1]) + 1) if slots.size else (0, 0)
        counts = counts[:, a:b]
        ctype = count_dtype(int(counts.min()), int(counts.max())) if counts.size else _UNSIGNED[0]
        counts = counts.astype(ctype)
        ttype = None
        if time is None:
            slot_time = (counts * mid[block.lo + a: block.lo + b]).sum(axis=0)
        else:
            time = time[:, a:b]
            slot_time = time.sum(axis=0)
            with np.errstate(over="ignore", invalid="ignore"):
                narrow = time.astype(np.float32)
                lossless = np.array_equal(narrow.astype(np.float64), time, equal_nan=True)
            time = narrow if lossless else np.ascontiguousarray(time)
            ttype = time.dtype
        time_blob, shuffled = b"", False
        if time is not None:  # whichever of plain and shuffled compresses better
            plain, mixed = _compress(time.tobytes()), _compress(_shuffle(time))
            time_blob, shuffled = (mixed, True) if len(mixed) < len(plain) else (plain, False)
        meta = b"".join([*(_shuffle(getattr(block, name)[:n]) for name in _META), block.flags[:n].tobytes()])
        slot_counts = count_sums(counts)
        used = (counts != 0).any(axis=0)
        flags = block.flags[:n]
        counts_blob, frames = _compress(_shuffle(counts)), tuple[int, ...]()
        if b - a > 1:  # whichever of one frame and a frame per slot is smaller
            apart = [_compress(_shuffle(counts[:, k])) for k in range(b - a)]
            if sum(map(len, apart)) + 8 * len(apart) < len(counts_blob):
                counts_blob, frames = b"".join(apart), tuple(map(len, apart))
        chunk = Chunk(n, block.lo + a, b - a, ctype, ttype, counts_blob, time_blob,
                      _compress(meta), slot_counts, slot_time, used, int(np.bitwise_and.reduce(flags)),
                      int(np.bitwise_or.reduce(flags)), observed_s(block.dur[:n], flags, counts),
                      time_shuffled=shuffled, count_frames=frames)
        if block.over is not None and block.over_at is not None:
            chunk.seal_overflow(block.over[:n], block.over_at[:n])
        return chunk

    def seal_overflow(self, events: np.ndarray, bound: np.ndarray) -> None:
        """Keep the columns' overflow events and bounds (`Block.over`, `Block.over_at`) compressed, if any has one."""
        held = events > 0
        if not held.any():
            return
        at = bound[held]
        starts = np.flatnonzero(np.r_[True, ~((at[1:] == at[:-1]) | (np.isnan(at[1:]) & np.isnan(at[:-1])))])
        whole = bool(np.all(events == np.floor(events))) and float(events.max()) < 2.0 ** 53
        kept = events.astype(count_dtype(0, int(events.max()))) if whole else events
        self.over_blob = _compress(_shuffle(kept) + _shuffle(starts.astype(np.int64)) + _shuffle(at[starts]))
        self.over_type, self.over_runs = kept.dtype, len(starts)
        self.over_events, self.over_least = float(events.sum()), float(at.min())

    def decode(self) -> Block:
        """The chunk's columns as a read-only block; each array is decompressed when first read."""
        return _Decoded(self)

    def decode_part(self, part: str) -> dict[str, np.ndarray | None]:
        """The arrays of one part (`counts`, `time` or the metadata), decompressed."""
        unzip = _codecs()[1]
        n, width = self.n, self.width
        if part == "counts":
            if not self.count_frames:
                return {"counts": _unshuffle(unzip.decompress(self.counts_blob), self.count_type, (n, width))}
            counts = np.empty((n, width), dtype=self.count_type)
            blob, at = memoryview(self.counts_blob), 0
            for k, size in enumerate(self.count_frames):
                counts[:, k] = _unshuffle(unzip.decompress(blob[at: at + size]), self.count_type, (n,))
                at += size
            return {"counts": counts}
        if part == "over":
            if self.over_type is None:
                return {"over": None, "over_at": None}
            data, size = unzip.decompress(self.over_blob), n * self.over_type.itemsize
            events = _unshuffle(data[:size], self.over_type, (n,)).astype(np.float64)
            starts = _unshuffle(data[size: size + 8 * self.over_runs], np.dtype(np.int64), (self.over_runs,))
            values = _unshuffle(data[size + 8 * self.over_runs:], np.dtype(np.float64), (self.over_runs,))
            held = events > 0
            bound = np.full(n, np.nan)
            bound[held] = np.repeat(values, np.diff(np.r_[starts, np.count_nonzero(held)]))
            return {"over": events, "over_at": bound}
        if part == "time":
            if self.time_type is None:
                return {"time": None}
            data = unzip.decompress(self.time_blob)
            raw = _unshuffle(data, self.time_type, (n, width)) if self.time_shuffled else \
                np.frombuffer(data, dtype=self.time_type).reshape(n, width)
            return {"time": raw.astype(np.float64)}
        data = memoryview(unzip.decompress(self.meta_blob))
        f64 = np.dtype(np.float64)
        out: dict[str, np.ndarray | None] = {
            name: _unshuffle(data[k * 8 * n: (k + 1) * 8 * n], f64, (n,)) for k, name in enumerate(_META)}
        out["flags"] = np.frombuffer(data[3 * 8 * n:], dtype=np.uint8)
        return out


_PART = {"counts": "counts", "time": "time", "start": "meta", "end": "meta", "dur": "meta", "flags": "meta",
         "over": "over", "over_at": "over"}


class _Decoded(Block):
    """A sealed chunk read back: `counts`, `time` and the metadata are decompressed when first used."""

    __slots__ = ("_chunk",)

    def __init__(self, chunk: Chunk) -> None:  # no Block.__init__: the arrays come from the chunk on demand
        self._chunk = chunk
        self.n, self.lo = chunk.n, chunk.lo

    @property
    def width(self) -> int:
        return self._chunk.width

    @property
    def nbytes(self) -> int:
        names = ("counts", "time", "start", "end", "dur", "flags", "over", "over_at")
        held = (getattr(self, name, None) for name in names if _is_set(self, name))
        return sum(a.nbytes for a in held if a is not None)

    def __getattr__(self, name: str) -> np.ndarray | None:
        part = _PART.get(name)
        if part is None:
            raise AttributeError(name)
        found = None
        for key, arr in self._chunk.decode_part(part).items():
            object.__setattr__(self, key, arr)
            if key == name:
                found = arr
        return found


def _is_set(block: Block, name: str) -> bool:
    """Whether a slot of the block holds a value (without decoding it)."""
    try:
        object.__getattribute__(block, name)
    except AttributeError:
        return False
    return True


class KeptMeta:
    """Per-column start, end, duration and flags of every kept column, decoded, appended to as columns arrive."""

    __slots__ = ("arrays", "n", "off")

    def __init__(self, parts: dict[str, np.ndarray]) -> None:
        self.arrays = parts
        self.n = len(parts["start"])
        self.off = 0

    def view(self, name: str) -> np.ndarray:
        return self.arrays[name][self.off: self.off + self.n]

    def append(self, parts: dict[str, np.ndarray]) -> None:
        k = len(parts["start"])
        cap = len(self.arrays["start"])
        if self.off + self.n + k > cap:
            keep = slice(self.off, self.off + self.n)
            size = max(2 * (self.n + k), 64)
            for name, arr in self.arrays.items():
                grown = np.zeros(size, dtype=arr.dtype)
                grown[: self.n] = arr[keep]
                self.arrays[name] = grown
            self.off = 0
        rows = slice(self.off + self.n, self.off + self.n + k)
        for name, arr in self.arrays.items():
            arr[rows] = parts[name]
        self.n += k

    def drop(self, k: int) -> None:
        self.off += k
        self.n -= k

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())
