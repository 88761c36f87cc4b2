"""Tail dominance: the smallest set of slowest buckets that holds at least half of the time.

"4% of reads take 61% of the time": walking down from the slowest non-empty bucket, whole buckets
are added until their time reaches `time_fraction` (0.5) of the total; the shares are those of the
buckets taken, so `time_share` is >= 0.5 (buckets are not split). The tail *dominates* when it
holds at most `max_events_share` (10%) of the events: for a lognormal the events above the time
median are 1 - Phi(sigma), 10% at sigma ~ 1.3 (about two octaves of spread), so "dominant" means
a tail heavier than an ordinary wide latency distribution.

A tail can hold much of the time without half of it: 1.3% of reads above 65 ms holding a third of the time
of a wide 2-16 ms distribution. `slowest_few` walks down from the slowest bucket while the buckets taken hold
at most `events_share` (2%) of the events; they are *heavy* when they hold at least `time_share` (30%) of the
time, more than a lognormal's slowest 2% hold below a spread of about 1.5 (22% at 1.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from latencymap.analysis.bands import counts_and_time

TIME_FRACTION = 0.5
MAX_EVENTS_SHARE = 0.10
FEW_EVENTS_SHARE = 0.02
FEW_TIME_SHARE = 0.30


@dataclass
class Tail:
    """The slowest buckets from `first_slot` up, holding at least `time_fraction` of the time."""

    first_slot: int
    threshold_s: float
    events: float
    time_s: float
    events_share: float
    time_share: float
    dominant: bool

    def to_json(self) -> dict[str, Any]:
        """The report's tail object."""
        return {"threshold_s": self.threshold_s, "events_share": self.events_share, "time_share": self.time_share,
                "events": self.events, "time_s": self.time_s, "dominant": self.dominant}


def tail_dominance(
    counts_1d: np.ndarray,
    time_1d: np.ndarray | None,
    low_s: np.ndarray,
    high_s: np.ndarray,
    *,
    time_fraction: float = TIME_FRACTION,
    max_events_share: float = MAX_EVENTS_SHARE,
) -> Tail | None:
    """The tail of one histogram; None when it holds no time."""
    c, t, total_c, total_t = counts_and_time(counts_1d, time_1d, low_s, high_s)
    if total_c <= 0 or total_t <= 0:
        return None
    from_top = np.cumsum(t[::-1])  # time of the k slowest slots
    k = int(np.searchsorted(from_top, time_fraction * total_t * (1 - 1e-12)))
    first = len(t) - 1 - k
    # Start at a non-empty slot (empty slots below the tail add nothing).
    nonzero = np.flatnonzero(c[first:] > 0)
    first += int(nonzero[0]) if nonzero.size else 0
    ev, tm = float(c[first:].sum()), float(t[first:].sum())
    share = ev / total_c
    return Tail(first, float(low_s[first]), ev, tm, share, tm / total_t, share <= max_events_share)


def slowest_few(
    counts_1d: np.ndarray,
    time_1d: np.ndarray | None,
    low_s: np.ndarray,
    high_s: np.ndarray,
    *,
    events_share: float = FEW_EVENTS_SHARE,
    time_share: float = FEW_TIME_SHARE,
) -> Tail | None:
    """The slowest whole buckets holding at most `events_share` of the events, `dominant` (heavy) when they hold at
    least `time_share` of the time; None when there is no time or the slowest bucket alone holds more events."""
    c, t, total_c, total_t = counts_and_time(counts_1d, time_1d, low_s, high_s)
    if total_c <= 0 or total_t <= 0:
        return None
    held = np.flatnonzero(c > 0)
    from_top = np.cumsum(c[held][::-1])  # events of the k slowest non-empty slots
    k = int(np.searchsorted(from_top, events_share * total_c * (1 + 1e-12), side="right"))
    if k == 0:
        return None
    first = int(held[len(held) - k])
    ev, tm = float(c[first:].sum()), float(t[first:].sum())
    return Tail(first, float(low_s[first]), ev, tm, ev / total_c, tm / total_t, tm / total_t >= time_share)
