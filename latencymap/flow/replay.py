"""Replay pacing a viewer can steer while it runs: speed, pause, seek ahead, and where the bursts are."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np

from latencymap.analysis.summary import stream_diagnosis
from latencymap.core.accumulator import Accumulator
from latencymap.core.model import ColumnFlow, Flow, Interval, StreamId
from latencymap.core.percentiles import median_of

#: The speeds `>` and `<` reach (each press doubles or halves): a press that would leave them does nothing, unless
#: `--speed` set one outside them and the press goes toward them.
SLOWEST, FASTEST = 0.125, 256.0
#: Longest single sleep: a change of speed, pause or seek takes effect at least this often.
SLICE_S = 0.05
#: A column whose time spent is this many times the stream's median column is a burst (when no episode says so).
BURST_FACTOR = 4.0


class ReplayClock:
    """Paces a flow by its interval end times; thread-safe controls for the viewer.

    `speed` None means as fast as possible. A seek ahead (`seek(t)`) lets the flow run unpaced
    up to the first interval that ends at or after `t`; pacing resumes after it.

    The pace follows the recording's clock, the latest end time let through (`position`), which never goes back:
    an interval that ends at or before it comes at once. A recording of several inputs read in turn holds their
    streams one after another, each over the same seconds; the first is paced, the later ones (back in time) then
    come at once, so the replay takes the recorded time over the speed, not that once per stream.
    """

    def __init__(self, speed: float | None = 1.0, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.speed = speed
        self.paused = False
        self.target: float | None = None
        self.position: float | None = None  # end time of the last interval let through
        self.first: float | None = None
        self._sleep = sleep
        self._clock = clock
        self._wake = threading.Condition()

    def pace(self, flow: Flow) -> Flow:
        """The flow, released at the recorded pace (scaled, paused, or fast-forwarded as asked)."""
        for item in flow:
            if isinstance(item, Interval):
                self._wait_for(item.end)
                self.first = item.start if self.first is None else self.first
                self.position = item.end if self.position is None else max(self.position, item.end)
            yield item

    def _wait_for(self, end: float) -> None:
        if self.position is None or end <= self.position:
            return
        due = end - self.position  # recorded seconds still to wait for
        while True:
            with self._wake:
                while self.paused and not self._seeking(end):
                    self._wake.wait(0.5)
                if self.target is not None:  # fast-forwarding; the interval that reaches the target comes at once too
                    if end >= self.target:
                        self.target = None  # arrived: pace again from the next one
                    return
                if self.speed is None or due <= 0:
                    return
                speed = self.speed
            step = min(due / speed, SLICE_S)
            started = self._clock()
            self._sleep(step)
            due -= max(step, self._clock() - started) * speed

    def _seeking(self, end: float) -> bool:
        return self.target is not None and end < self.target

    def set_speed(self, speed: float | None) -> None:
        with self._wake:
            self.speed = speed
            self._wake.notify_all()

    def faster(self, step: int = 1) -> float | None:
        """The speed doubled (step 1) or halved (-1), `step` times: ×5 goes to ×10 and ×20, and back to ×5 (the
        user's own speed, not a ladder's); a press that would leave SLOWEST to FASTEST leaves the speed as it is.
        As-fast-as-possible stays so."""
        if self.speed is None:
            return None
        speed = self.speed * 2.0 ** step  # exact: a power of two
        if _outside(speed) <= _outside(self.speed):
            self.set_speed(speed)
        return self.speed

    def toggle_pause(self) -> bool:
        with self._wake:
            self.paused = not self.paused
            self._wake.notify_all()
            return self.paused

    def seek(self, epoch: float) -> None:
        """Run unpaced until the replay reaches `epoch` (seconds since the epoch)."""
        with self._wake:
            self.target = epoch
            self._wake.notify_all()

    def describe(self) -> str:
        """A few words for a status line."""
        if self.target is not None and (self.position is None or self.position < self.target):
            return f"seeking {clock_text(self.target)}"
        if self.paused:
            return "replay paused"
        return "replay max" if self.speed is None else f"replay ×{self.speed:g}"


def _outside(speed: float) -> float:
    """How far a speed lies outside SLOWEST to FASTEST, as a factor (1.0 inside)."""
    return max(SLOWEST / speed, speed / FASTEST, 1.0)


def clock_text(epoch: float) -> str:
    """HH:MM:SS (local time, as the TUI shows times) of an epoch time."""
    return time.strftime("%H:%M:%S", time.localtime(epoch))


_OFFSET = re.compile(r"^([+-])?\s*(\d+(?:\.\d*)?)\s*(ms|s|m|min|h)?$")
_UNIT_S = {None: 1.0, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_seek(text: str, first: float, current: float) -> float:
    """A seek target as epoch seconds.

    `+30s` / `-5m`: relative to `current`; `90` or `90s`: from the start of the replay (`first`);
    `14:03` / `14:03:07`: that local time of day on the day of `current` (the TUI shows local times);
    an ISO date-time too (local unless it names its zone).
    """
    text = text.strip()
    m = _OFFSET.match(text)
    if m:
        seconds = float(m.group(2)) * _UNIT_S[m.group(3)]
        if m.group(1) == "+":
            return current + seconds
        if m.group(1) == "-":
            return current - seconds
        return first + seconds
    if re.fullmatch(r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?", text):
        day = datetime.fromtimestamp(current)
        parts = [float(p) for p in text.split(":")] + [0.0]
        midnight = day.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
        return midnight + parts[0] * 3600 + parts[1] * 60 + parts[2]
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"cannot read {text!r} as a time: use +30s, -5m, 90 (seconds from the start), "
                         "14:03:07 or 2024-05-01T14:03:07") from None
    return when.timestamp()


def stream_bursts(acc: Accumulator) -> dict[StreamId, list[float]]:
    """Start times (ascending) of each stream's episodes, or of its intensity bursts where it has none."""
    out: dict[StreamId, list[float]] = {}
    for hist in acc.streams.values():
        if hist.n == 0:
            continue
        episodes = stream_diagnosis(hist, acc.kept_source(hist)).episodes
        if episodes:
            out[hist.stream] = sorted({e.start for e in episodes})
            continue
        spent = hist.time.sum(axis=1) / np.maximum(hist.durations, 1e-9)
        typical = float(median_of(spent))
        hot = spent > max(typical * BURST_FACTOR, 0.0) if typical > 0 else spent > 0
        rising = hot & ~np.concatenate(([False], hot[:-1]))
        out[hist.stream] = sorted({float(t) for t in hist.start[rising]})
    return out


def burst_starts(acc: Accumulator) -> list[float]:
    """Start times of the bursts of every stream (`stream_bursts`), ascending."""
    return sorted({t for starts in stream_bursts(acc).values() for t in starts})


def next_burst(bursts: Sequence[float], after: float) -> float | None:
    """The first burst that starts after `after`."""
    i = int(np.searchsorted(np.asarray(bursts), after, side="right"))
    return float(bursts[i]) if i < len(bursts) else None


class BurstScan:
    """Reads a whole input in a background thread to find its bursts before the replay gets there."""

    def __init__(self, make_flow: Callable[[], ColumnFlow]) -> None:
        self.bursts: list[float] | None = None
        #: The bursts of each stream (`stream_bursts`), set before `bursts`
        self.by_stream: dict[StreamId, list[float]] | None = None
        self.error: str | None = None
        self._make_flow = make_flow
        self._thread = threading.Thread(target=self._run, name="latencymap-bursts", daemon=True)

    def start(self) -> BurstScan:
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            acc = Accumulator()
            acc.add(item for item in self._make_flow())
            self.by_stream = stream_bursts(acc)
            self.bursts = sorted({t for starts in self.by_stream.values() for t in starts})
        except Exception as err:  # the replay goes on without burst jumps
            self.error = f"{type(err).__name__}: {err}"
