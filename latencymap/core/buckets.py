"""The log2 bucket scale shared by every stream.

Each stream has 64 slots. Slot `s` holds the bucket of exponent `e = s - 1` in the stream's unit:
`[2**e, 2**(e+1))`. Slot 0 (e = -1) is the zero bucket `[0, 1)`, for every source: the value 0 of
lower-bound sources (bpf, systemtap, dtrace, raw values), and Oracle's first bucket, labelled `1`
(upper bounds: "waits of duration < 1 that are not in any smaller bucket", and there is none).
Slot 0 is the only slot below 1 of the stream's unit, so all of that bucket's waits go there, and
its row reads `<1ms` (`<1µs`), as PyLatencyMap's bottom row reads `<1`. Its intensity stays
PyLatencyMap's estimate for Oracle, 0.75 x the value (`midpoints_seconds`). The top slot, `[2**62, 2**63)`, is
open: every longer value is counted in it too (`bin_values`), so reports write it `≥2**62` and the values seen in it
may pass its nominal upper bound; the sources that see each value say so once per stream (`past_top_note`). A
percentile there reaches the values seen in it; where they are not known it is `≥2**62`, a lower bound only
(`percentiles.open_percentiles`).
"""

from __future__ import annotations

import numpy as np

from latencymap.core.units import format_duration, unit_seconds

NSLOTS = 64
MIN_EXPONENT = -1
MAX_EXPONENT = NSLOTS - 2
#: The open top slot, and its nominal upper bound in the stream's unit (a value at or past it is counted there too).
TOP_SLOT = NSLOTS - 1
TOP_BOUND = 2.0 ** (MAX_EXPONENT + 1)

#: Datasources whose bucket value is the bucket's upper bound (`[v/2, v)`, and `[0, 1)` for 1).
UPPER_BOUND_SOURCES = frozenset({"oracle"})
#: Oracle's overflow bucket in gv$event_histogram: no finite range, so no slot; its counts are left out of the map and
#: totals, and said in a note (by the record reader and the live source).
ORACLE_OVERFLOW = 4294967295
#: Counts (and epoch microseconds) at or above this cannot be held, or summed, in 64-bit integers.
MAX_COUNT = 1 << 62


def slot_of_bucket_value(value: int, datasource: str) -> int | None:
    """Slot of a protocol bucket value under the datasource's convention; None when unusable.

    Oracle: value is the upper bound, a power of two, bucket `[v/2, v)` (`[0, 1)` for 1: slot 0).
    Others: value is the lower bound, a power of two or 0, bucket `[v, 2v)` (`[0, 1)` for 0).
    Values that are not powers of two raise ValueError; the Oracle overflow bucket gives None.
    """
    if datasource in UPPER_BOUND_SOURCES:
        if value == ORACLE_OVERFLOW:
            return None
        if value < 1 or value & (value - 1):
            raise ValueError(f"bucket value {value} is not a power of 2")
        exponent = value.bit_length() - 2
    else:
        if value == 0:
            return 0
        if value < 0 or value & (value - 1):
            raise ValueError(f"bucket value {value} is not 0 or a power of 2")
        exponent = value.bit_length() - 1
    return min(exponent - MIN_EXPONENT, NSLOTS - 1)


def bucket_value_of_slot(slot: int, datasource: str) -> int:
    """Inverse of `slot_of_bucket_value`: the value a PyLatencyMap record writes for a slot."""
    exponent = slot + MIN_EXPONENT
    if datasource in UPPER_BOUND_SOURCES:
        return 1 << (exponent + 1)
    return 0 if slot == 0 else 1 << exponent


def bounds_in_unit(datasource: str) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of every slot in the stream's own unit: the same for every datasource (slot 0 is `[0, 1)`)."""
    exponents = np.arange(MIN_EXPONENT, MIN_EXPONENT + NSLOTS, dtype=np.float64)
    low = np.exp2(exponents)
    high = low * 2.0
    low[0] = 0.0
    return low, high


def bounds_seconds(datasource: str, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of every slot in seconds."""
    low, high = bounds_in_unit(datasource)
    scale = unit_seconds(unit)
    return low * scale, high * scale


def midpoints_seconds(datasource: str, unit: str) -> np.ndarray:
    """Per-slot mean latency assumed when a source gives counts only.

    The arithmetic midpoint: 1.5 x lower bound (bpf/systemtap/dtrace) and 0.75 x upper bound
    (Oracle) — exactly PyLatencyMap's intensity factors. Oracle's first bucket, `[0, 1)`, keeps
    PyLatencyMap's 0.75 x 1, so that its intensity stays what PyLatencyMap draws.
    """
    low, high = bounds_seconds(datasource, unit)
    mid: np.ndarray = (low + high) / 2.0
    if datasource in UPPER_BOUND_SOURCES:
        mid[0] = 0.75 * high[0]
    return mid


def bin_values(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts and exact sums per slot for raw latencies in a stream unit (zero-floor scale).

    Values below 1 go to the zero bucket, values beyond the top slot to the top slot (which is open:
    `past_top` finds them); negative and non-finite values are dropped.
    """
    values, slots = _binned(values)
    counts = np.bincount(slots, minlength=NSLOTS).astype(np.int64)
    sums = np.bincount(slots, weights=values, minlength=NSLOTS)
    return counts, sums


def past_top(values: np.ndarray) -> int | None:
    """Index of the first of `values` (in the stream's unit) at or past TOP_BOUND, which `bin_values` counts in the
    open top slot; None when there is none."""
    past = np.asarray(values, dtype=np.float64) >= TOP_BOUND
    return int(np.argmax(past)) if past.any() else None


def past_top_note(value: float, unit: str, shown_unit: str | None = None) -> str:
    """What a reader says, once per stream, of a `value` (the stream's `unit`) past the top slot's nominal bound;
    the reader puts where it was read first. `shown_unit`: the unit the input gave it in, when not the stream's."""
    shown = shown_unit or unit
    scale = unit_seconds(unit) / unit_seconds(shown)
    low, top = (format_duration(edge * unit_seconds(unit), long_units=True) for edge in (TOP_BOUND / 2, TOP_BOUND))
    return (f"value {value * scale:g} {shown} is past the top bucket's nominal end, {TOP_BOUND * scale:g} {shown} "
            f"({top}): the top bucket is open (≥{low}) and counts it, with its exact time; percentiles there reach the "
            "values seen in it; said once per stream")


def range_text(low: float, high: float, slot: int, long_units: bool = False) -> str:
    """A bucket's range as reports write it (`format_duration` of its edges): `low–high`, and `≥low` for the open
    top slot."""
    if slot == TOP_SLOT:
        return open_text(low, long_units)
    return "–".join(format_duration(edge, long_units=long_units) for edge in (low, high))


def open_text(low: float, long_units: bool = False) -> str:
    """`≥low`: the open top bucket, or a percentile known only to lie in it (its values not seen), as reports write
    them."""
    return "≥" + format_duration(low, long_units=long_units)


def percentile_duration(value: float | None, at_least: bool, long_units: bool = False) -> str:
    """A percentile as reports and the TUI write it: `≥low` (`open_text`) where it is a lower bound only
    (`percentiles.open_percentiles`: in the open top slot, its values not known), else its duration."""
    return open_text(value, long_units) if at_least and value is not None else \
        format_duration(value, long_units=long_units)


def bin_extremes(values: np.ndarray) -> np.ndarray:
    """(2, NSLOTS): the smallest and largest of raw latencies (stream unit) in each slot `bin_values` puts them in;
    NaN in a slot that holds none."""
    values, slots = _binned(values)
    out = np.full((2, NSLOTS), np.nan)
    np.fmin.at(out[0], slots, values)
    np.fmax.at(out[1], slots, values)
    return out


def _binned(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The values `bin_values` counts, and the slot of each."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values) & (values >= 0)]
    slots = np.zeros(values.shape, dtype=np.int64)
    big = values >= 1.0
    if big.any():
        _, exp = np.frexp(values[big])  # v = m * 2**exp with m in [0.5, 1): floor(log2 v) = exp - 1
        slots[big] = np.minimum(exp.astype(np.int64), NSLOTS - 1)
    return values, slots
