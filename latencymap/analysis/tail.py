"""Tail dominance: the slowest events that hold half of the time, and their share of the events.

"4% of reads take half of the time": walking down from the slowest non-empty bucket, whole buckets are taken while
their time is under `time_fraction` (0.5) of the total, then the part of the next bucket that brings it to exactly
that fraction: its slowest part, under the log-uniform density inside a bucket the rows assume elsewhere (the part
from `x` to the bucket's top holds `(high - x) / (high - low)` of its time and `ln(high / x) / ln(high / low)` of
its events; uniform in a bucket from 0, as percentiles are interpolated there). Where the source says the smallest
and the largest value seen in that bucket, it is read between them, as percentiles are: a log of 100 µs values and one
of 1 s put `x` at 778 ms in [537 ms, 1.07 s), below every slow value it holds; within them it is 1 s. So `time_share`
is `time_fraction`, `threshold_s` is `x`, and the measure moves little when the input does (whole buckets made
`events_share` jump, 31% or 81% on samples of one distribution, when the slowest buckets held 49.8% or 50.2% of the
time).

The tail *dominates* when it holds at most `max_events_share` (10%) of the events: for a lognormal the events above the
time median are 1 - Phi(sigma), 10% at sigma ~ 1.3 (about two octaves of spread), so "dominant" means a tail heavier
than an ordinary wide latency distribution.

A tail can hold much of the time without half of it: 1.3% of reads above 65 ms holding a third of the time
of a wide 2-16 ms distribution. `slowest_few` takes the slowest `events_share` (2%) of the events the same way
(whole buckets, then the slowest part of the next: whole buckets alone held 0.9% or 2.0% of the events and 25% or 40%
of the time on samples of one distribution); they are *heavy* when they hold at least `time_share` (30%) of the
time, more than a lognormal's slowest 2% hold below a spread of about 1.5 (22% at 1.3).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from latencymap.analysis.bands import counts_and_time
from latencymap.core.lean import dataclass
from latencymap.core.percentiles import seen_bucket

TIME_FRACTION = 0.5
MAX_EVENTS_SHARE = 0.10
FEW_EVENTS_SHARE = 0.02
FEW_TIME_SHARE = 0.30


@dataclass
class Tail:
    """The slowest events, from `threshold_s` (inside the bucket `first_slot`) up, holding `time_fraction` of the time
    (`tail_dominance`); or the slowest `events_share` of the events (`slowest_few`)."""

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
    seen: tuple[np.ndarray, np.ndarray] | None = None,
) -> Tail | None:
    """The tail of one histogram; None when it holds no time. `seen`: the smallest and the largest value seen per slot
    (s, NaN or infinite where not known), within which the bucket the threshold falls in is read."""
    c, t, total_c, total_t = counts_and_time(counts_1d, time_1d, low_s, high_s)
    if total_c <= 0 or total_t <= 0:
        return None
    goal = time_fraction * total_t
    first, part = slowest_to(t, goal)
    threshold, events_part = slowest_part(part, *seen_bucket(first, low_s, high_s, seen))
    ev = float(c[first + 1:].sum()) + events_part * float(c[first])
    share = ev / total_c
    return Tail(first, threshold, ev, float(goal), share, time_fraction, share <= max_events_share)


def slowest_to(held: np.ndarray, goal: float) -> tuple[int, float]:
    """(the slot, the part of what it holds) that brings what the slots from the slowest down hold to `goal`: the
    slowest non-empty slot whose own and slower slots' reach it (to within rounding)."""
    from_top = np.cumsum(held[::-1])
    k = min(int(np.searchsorted(from_top, goal * (1 - 1e-12))), len(held) - 1)  # the k slowest hold less
    first = len(held) - 1 - k
    above = float(from_top[k - 1]) if k else 0.0
    return first, min(max((goal - above) / held[first], 0.0), 1.0) if held[first] > 0 else 0.0


def slowest_part(part: float, low: float, high: float, *, of_events: bool = False) -> tuple[float, float]:
    """(where it starts, its share of the events) of the slowest part of a bucket [low, high) that holds `part` of its
    time, or with `of_events` (where it starts, its share of the time) of the one that holds `part` of its events:
    its values log-uniform inside it, uniform in a bucket from 0 (as percentiles are interpolated), the same shares
    where it has no finite top."""
    part = min(max(float(part), 0.0), 1.0)
    if not math.isfinite(high) or high <= low:
        return low, part
    if low <= 0:  # uniform on [0, high): [x, high) holds 1 - (x/high)^2 of the time, 1 - x/high of the events
        if of_events:
            start = high * (1.0 - part)
            return start, 1.0 - (start / high) ** 2
        start = high * math.sqrt(1.0 - part)
        return start, 1.0 - start / high
    if of_events:
        start = min(max(high * (low / high) ** part, low), high)
        return start, (high - start) / (high - low)
    start = min(max(high - part * (high - low), low), high)
    return start, math.log(high / start) / math.log(high / low)


def slowest_few(
    counts_1d: np.ndarray,
    time_1d: np.ndarray | None,
    low_s: np.ndarray,
    high_s: np.ndarray,
    *,
    events_share: float = FEW_EVENTS_SHARE,
    time_share: float = FEW_TIME_SHARE,
    seen: tuple[np.ndarray, np.ndarray] | None = None,
) -> Tail | None:
    """The slowest `events_share` of the events (the slowest buckets whole, then the slowest part of the next, as
    `tail_dominance` takes time), `dominant` (heavy) when they hold at least `time_share` of the time; None when
    there is no time or they are less than one event. `seen`: as `tail_dominance` takes it."""
    c, t, total_c, total_t = counts_and_time(counts_1d, time_1d, low_s, high_s)
    goal = events_share * total_c
    if goal < 1 or total_t <= 0:
        return None
    first, part = slowest_to(c, goal)
    threshold, time_part = slowest_part(part, *seen_bucket(first, low_s, high_s, seen), of_events=True)
    tm = float(t[first + 1:].sum()) + time_part * float(t[first])
    return Tail(first, threshold, goal, tm, events_share, tm / total_t, tm / total_t >= time_share)
