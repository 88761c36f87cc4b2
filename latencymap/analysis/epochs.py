"""Epoch start-up: how much of a training loop's wait for data its DataLoader's epochs starting take (`timed_iter`).

`timed_iter` times each epoch's start (`<phase>.epoch_start`: from `iter(loader)`, where a DataLoader starts its
workers, to the first batch, loaded with nothing prefetched), its other batches' waits (`<phase>`) and its end
(`<phase>.epoch_end`: the `next()` that raises StopIteration, where a DataLoader without persistent workers shuts them
down). Per writer and phase (`run/rank0/data_wait`) an `epoch_startup` finding is emitted when the epochs' starts hold
at least `epoch_start_share` (25%) of the time waiting for data (starts and batch waits), both with and without the
slowest start (the first epoch's, paid once even where workers persist), and what they repeat is at least
`epoch_min_wall_share` (1%) of the writer's wall time: a cost that matters, not a few ms in a long run.

Its why says the workers start anew every epoch, and that `persistent_workers=True` keeps them, only where the data
says so (`restart`): the epochs' ends take `epoch_shutdown_s` (1 ms) or more at the median (2 workers shut down: ~9 ms
here; an end that shuts nothing down: 50-200 µs), and their starts (the slowest left out) are at least
`epoch_restart_ratio` (4×) a batch wait. A start much slower than a batch wait alone says nothing of workers: with
persistent workers, each epoch's first batch still loads with nothing prefetched (items of 20 ms, 2 workers: starts of
46 ms against waits of 1.1 ms, ends of 0.2 ms). Where no epoch ran to its end (the loop left each early), whether the
workers start anew is not known, and said so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from latencymap.analysis.findings import Finding, dur, pct, times
from latencymap.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from latencymap.core.lean import dataclass
from latencymap.core.model import StreamId
from latencymap.core.units import plural

#: The instrument's datasource: only its streams are `timed_iter` phases.
DATASOURCE = "training"
START, END = ".epoch_start", ".epoch_end"
#: An epoch-start phase's label: the batch waits' label is it without `.epoch_start` (kept: a listener's ` [writer 2]`
#: after it).
_START_LABEL = re.compile(r"(?P<base>.+)\.epoch_start(?P<rest>(?: \[[^\]]*\])*)")


@dataclass(frozen=True)
class PhaseSums:
    """One phase's timings over the columns read: per log2 slot, its events and seconds (exact for the instrument's)."""

    counts: np.ndarray
    times: np.ndarray

    @property
    def events(self) -> int:
        return int(self.counts.sum())

    @property
    def time_s(self) -> float:
        return float(self.times.sum())

    def slowest_s(self) -> float:
        """The slowest event's time, as its slot's mean (exact where it is alone there); 0 without events."""
        used = np.flatnonzero(self.counts)
        return float(self.times[used[-1]] / self.counts[used[-1]]) if used.size else 0.0

    def median_s(self) -> float:
        """The middle event's time, as its slot's mean; 0 without events."""
        n = self.events
        if not n:
            return 0.0
        k = int(np.searchsorted(np.cumsum(self.counts), (n + 1) // 2))
        return float(self.times[k] / self.counts[k])


def epoch_labels(label: str) -> tuple[str, str] | None:
    """(batch waits' label, epoch ends' label) of an epoch-start phase's label; None for any other label."""
    m = _START_LABEL.fullmatch(label)
    if m is None:
        return None
    return m["base"] + m["rest"], m["base"] + END + m["rest"]


def starts_of(stream: StreamId) -> StreamId | None:
    """The epoch starts' stream of the `timed_iter` phase `stream` may be one of (its starts, batch waits or ends);
    None for a stream that is no instrument's."""
    if stream.datasource != DATASOURCE:
        return None
    m = re.fullmatch(r"(?P<base>.+?)(?P<end>\.epoch_start|\.epoch_end)?(?P<rest>(?: \[[^\]]*\])*)", stream.label)
    return None if m is None else StreamId(m["base"] + START + m["rest"], stream.datasource, stream.unit)


@dataclass
class EpochStartup:
    """The epochs of one writer's `timed_iter` phase: their starts against their batches' waits, and the finding."""

    label: str  # the batch waits' label: `run/rank0/data_wait`
    epochs: int
    start_s: float
    waits: int
    wait_s: float
    ends: int
    end_s: float
    end_median_s: float
    slowest_start_s: float
    wall_s: float
    #: Whether the data says the workers start anew every epoch, each start much slower than a batch wait (the
    #: finding then says `persistent_workers=True`); None where it cannot tell (one epoch, or none ran to its end).
    restart: bool | None
    finding: Finding | None

    @property
    def share(self) -> float:
        """The starts' share of the time waiting for data (starts and batch waits)."""
        total = self.start_s + self.wait_s
        return self.start_s / total if total > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """The report's object of it (`epochs` in the JSON report)."""
        return {"label": self.label, "epochs": self.epochs, "start_s": self.start_s, "waits": self.waits,
                "wait_s": self.wait_s, "ends": self.ends, "end_s": self.end_s, "share": self.share,
                "slowest_start_s": self.slowest_start_s, "end_median_s": self.end_median_s,
                "restart": self.restart, "finding": None if self.finding is None else self.finding.to_json()}

    def line(self) -> str | None:
        """`LABEL: what — why` of its finding; None without one."""
        return None if self.finding is None else f"{self.label}: {self.finding.line()}"


def epoch_startup(label: str, starts: PhaseSums, waits: PhaseSums | None, ends: PhaseSums | None, wall_s: float,
                  span: tuple[float, float] | None = None, thresholds: Thresholds = DEFAULT_THRESHOLDS
                  ) -> EpochStartup:
    """The epochs of the phase whose batch waits are `label` (see the module docstring): `starts`, `waits` and `ends`
    are its three phases' sums (None: not timed), `wall_s` the writer's wall time over them, `span` (epoch seconds)
    the starts' first column's start and last column's end."""
    none = PhaseSums(np.zeros(1, dtype=np.int64), np.zeros(1))
    waits, ends = waits or none, ends or none
    n, start_s, wait_s = starts.events, starts.time_s, waits.time_s
    slowest = starts.slowest_s()
    again = max(start_s - slowest, 0.0)  # what the epochs after the slowest start paid
    per_again = again / (n - 1) if n > 1 else 0.0
    per_wait = wait_s / waits.events if waits.events else 0.0
    end_median = ends.median_s()
    shut_down = end_median >= thresholds.epoch_shutdown_s
    much_slower = per_again >= thresholds.epoch_restart_ratio * per_wait
    out = EpochStartup(label, n, start_s, waits.events, wait_s, ends.events, ends.time_s, end_median, slowest,
                       wall_s, None if n < 2 or not ends.events else shut_down and much_slower, None)
    # the share of the slowest start's epochs after it is the smaller one: judged by it, the whole one said
    if n >= 2 and again >= thresholds.epoch_start_share * (again + wait_s) \
            and again >= thresholds.epoch_min_wall_share * wall_s:
        if out.restart:
            why = (f"each epoch's end took {dur(end_median)} too, the DataLoader shutting its workers down: its "
                   "workers start anew every epoch; persistent_workers=True keeps them")
        elif out.restart is None:
            why = ("no epoch ran to its end (the loop left each early), where a DataLoader shuts down workers that are "
                   "not persistent: whether they start anew every epoch is not known; each epoch's first batch is "
                   "loaded with nothing prefetched")
        elif not shut_down:
            why = (f"the epochs' ends shut no workers down ({dur(end_median)} each: they persist, or there are none): "
                   "each epoch's start is its first batch, loaded with nothing prefetched (the later ones came "
                   "prefetched); what that first load does is the cost to cut")
        else:
            why = (f"each epoch's end took {dur(end_median)}, the DataLoader shutting its workers down, but each start "
                   f"is only {times(per_again / per_wait)} a batch wait: most of it is its first batch's load, not "
                   "the workers' start")
        each = f"{dur(start_s / n)} each against " + \
            (f"{dur(per_wait)} per batch wait" if waits.events else "no batch wait (one batch an epoch)")
        what = (f"epoch start-up is {pct(out.share)} of the time waiting for data: {dur(start_s)} over "
                f"{plural(n, 'epoch')}, {each}")
        events = n + waits.events
        out.finding = Finding("epoch_startup", what, why, n, n / events, start_s, out.share,
                              start=span[0] if span else None, end=span[1] if span else None)
    return out


def epoch_groups(streams: Iterable[StreamId]) -> list[tuple[StreamId, StreamId, StreamId]]:
    """(epoch starts, batch waits, epoch ends) of each `timed_iter` phase whose starts are among `streams`."""
    out = []
    for s in streams:
        if s.datasource == DATASOURCE and START in s.label and (pair := epoch_labels(s.label)) is not None:
            out.append((s, StreamId(pair[0], s.datasource, s.unit), StreamId(pair[1], s.datasource, s.unit)))
    return out
