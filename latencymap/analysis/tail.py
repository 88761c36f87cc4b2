"""Tail dominance: the slowest events that hold half of the time, and their share of the events.

"4% of reads take half of the time": walking down from the slowest non-empty bucket, whole buckets are taken while
their time is under `time_fraction` (0.5) of the total, then the part of the next bucket that brings it to exactly
that fraction: its slowest part, under the log-uniform density inside a bucket the rows assume elsewhere (the part
from `x` to the bucket's top holds `(high - x) / (high - low)` of its time and `ln(high / x) / ln(high / low)` of
its events; uniform in a bucket from 0, as percentiles are interpolated there). So `time_share` is `time_fraction`,
`threshold_s` is `x`, and the measure moves little when the input does (whole buckets made `events_share` jump, 31%
or 81% on samples of one distribution, when the slowest buckets held 49.8% or 50.2% of the time).

The tail *dominates* when it holds at most `max_events_share` (10%) of the events: for a lognormal the events above the
time median are 1 - Phi(sigma), 10% at sigma ~ 1.3 (about two octaves of spread), so "dominant" means a tail heavier
than an ordinary wide latency distribution.

A tail can hold much of the time without half of it: 1.3% of reads above 65 ms holding a third of the time
of a wide 2-16 ms distribution. `slowest_few` walks down from the slowest bucket while the buckets taken hold
at most `events_share` (2%) of the events; they are *heavy* when they hold at least `time_share` (30%) of the
time, more than a lognormal's slowest 2% hold below a spread of about 1.5 (22% at 1.3).
"""

from __future__ import annotations

import math
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
    """The slowest events, from `threshold_s` (inside the bucket `first_slot`) up, holding `time_fraction` of the time
    (`tail_dominance`); or the slowest whole buckets from `first_slot` up (`slowest_few`)."""

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
    goal = time_fraction * total_t
    from_top = np.cumsum(t[::-1])  # time of the k slowest slots
    k = min(int(np.searchsorted(from_top, goal)), len(t) - 1)  # the k slowest hold less than the goal
    first = len(t) - 1 - k
    above_c, above_t = float(c[first + 1:].sum()), float(from_top[k - 1]) if k else 0.0
    part = min(max((goal - above_t) / t[first], 0.0), 1.0) if t[first] > 0 else 0.0
    threshold, events_part = slowest_part(part, float(low_s[first]), float(high_s[first]))
    ev = above_c + float(events_part) * float(c[first])
    share = ev / total_c
    return Tail(first, float(threshold), ev, float(goal), share, time_fraction, share <= max_events_share)


def slowest_part(time_part: float, low: float, high: float) -> tuple[float, float]:
    """(where it starts, its share of the events) of the slowest part of a bucket [low, high) that holds `time_part`
    of its time: its values log-uniform inside it, uniform in a bucket from 0 (as percentiles are interpolated), the
    same as the time's where it has no finite top."""
    time_part = min(max(float(time_part), 0.0), 1.0)
    if not math.isfinite(high) or high <= low:
        return low, time_part
    if low <= 0:  # uniform on [0, high): [x, high) holds 1 - (x/high)^2 of the time, 1 - x/high of the events
        start = high * math.sqrt(1.0 - time_part)
        return start, 1.0 - start / high
    start = min(max(high - time_part * (high - low), low), high)
    return start, math.log(high / start) / math.log(high / low)


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
