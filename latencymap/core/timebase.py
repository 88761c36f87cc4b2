"""Whether an input's columns are timed by the present: samples taken now (py-spy's) can be attached to them, and a
time of day can be given its date (the OpenMetrics end timestamp).

py-spy's samples are timed by the wall clock (epoch seconds); a column is timed by its input: the wall clock
when the input says no time, else the input's own timestamps. A live input with timestamps of its own ends each
column about when it arrives (a pipe's or a poll's delay later), and the samples fall in its columns. So do those
of a live input timed by the time of day (PyLatencyMap's Oracle scripts write microseconds since midnight UTC)
once they are moved back by the whole days between the epoch and today. A file or recording written earlier and
read (or replayed) now has columns of another time: samples taken now belong to none of them, and the session says
so once and stops sampling instead of attaching nothing without a word.
"""

from __future__ import annotations

import time

from latencymap.core.lean import dataclass

DAY_S = 86_400.0
#: How far from the clock a column's end may be when it arrives and still be live: a source that delivers late
#: (a log written in blocks, a scrape) or a host whose clock is a little off.
LIVE_SLACK_S = 300.0
#: Column ends below this are times of day (with the days a rollover added), not dates.
TIME_OF_DAY_BELOW_S = 7 * DAY_S


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the first column tells: `shift` (seconds) to add to sample times, or `not_now`, a message."""

    shift: float = 0.0
    not_now: str | None = None


def _age(seconds: float) -> str:
    seconds = abs(seconds)
    for unit, size in (("days", DAY_S), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def judge(end: float, now: float) -> Verdict:
    """The verdict on an input whose column ending at `end` (its time) arrived at `now` (the wall clock)."""
    lag = now - end
    if abs(lag) <= LIVE_SLACK_S:
        return Verdict()
    if 0 <= end < TIME_OF_DAY_BELOW_S:
        days = round(lag / DAY_S) * DAY_S
        if abs(lag - days) <= LIVE_SLACK_S:
            return Verdict(shift=-days)
    if 0 <= end < TIME_OF_DAY_BELOW_S:
        when = time.strftime("%H:%M:%S UTC, a time of day", time.gmtime(end % DAY_S))
    elif 0 <= end < 2**33:
        side = "before" if lag > 0 else "after"
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(end)) + f", {_age(lag)} {side} the clock"
    else:
        when = f"{end:.0f} s"
    return Verdict(not_now=(f"the input's columns are not timed by the present (its first column ends at {when}: "
                            "a recording or file of another time), so samples taken now cannot be attached to "
                            "them; profiling stopped"))
