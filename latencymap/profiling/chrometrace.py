"""py-spy's `--format chrometrace` output, turned back into timed stack samples.

Verified on py-spy 0.4.3: the file is one JSON array of events `{"args": {"filename", "line"}, "cat":
"py-spy", "name": <function>, "ph": "B"|"E", "pid", "tid", "ts": <µs since the recorder started>}`.
py-spy writes events only when a thread's stack changes: at a sample whose stack differs from that
thread's previous one, it ends the frames that left ("E", leaf first) and begins the new ones ("B",
root first), all at that sample's `ts`; when the recording stops it ends every open frame at the
stop time. Newer py-spy versions also write `"ph": "M"` thread-name events and remap `tid` to small
integers; both are accepted. A stack therefore holds from one change to the next, and the samples
inside are reconstructed on the thread's sampling grid (`rate` per second from its first `ts`), so a
thread gets one sample per 1/rate of recorded time however often its stack changed.

py-spy keeps the previous stack per thread id alone, and the `E` events of a sample carry the pid of
the process sampled now, not of the one whose frames end. Children that a process forks keep its
thread ids, so under `--subprocesses` (which roots each stack in `process <pid>:"<cmdline>"` frames)
one event sequence weaves through several processes. The events are therefore replayed per `tid`, as
py-spy wrote them, and each run of events with one (tid, pid, ts) is one observation: after it, the
thread's open frames are that process's stack, held until that (pid, tid) is observed again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from latencymap.core.json_input import json_input
from latencymap.profiling.samples import Sample, clean_frame, frame_name, without_thread


class ChrometraceError(ValueError):
    """A file that is not py-spy chrometrace output."""


@dataclass(frozen=True, slots=True)
class Span:
    """One stack held by one thread over [start_us, end_us) of the recording."""

    start_us: int
    end_us: int
    pid: int
    tid: int
    stack: tuple[str, ...]


def load_events(data: str | bytes) -> list[dict[str, Any]]:
    """The event list of a chrometrace file (a bare array, or an object with `traceEvents`)."""
    try:
        doc = json_input(data)
    except ValueError as err:
        raise ChrometraceError(f"not JSON: {err}") from None
    if isinstance(doc, dict):
        doc = doc.get("traceEvents")
    if not isinstance(doc, list):
        raise ChrometraceError("expected a JSON array of trace events")
    return doc


def _frame(event: dict[str, Any]) -> str:
    args = event.get("args") or {}
    line = args.get("line")
    name = frame_name(str(event["name"]), str(args.get("filename", "")), line if isinstance(line, int) else None)
    return clean_frame(name)


def _stack_event(stack: list[str], event: dict[str, Any]) -> None:
    """Apply one B/E event to a thread's open frames; an `E` closes the innermost open frame it names."""
    if event["ph"] == "B":
        if "name" not in event:
            raise ChrometraceError(f"B event without a name: {event!r:.200}")
        stack.append(_frame(event))
        return
    if not stack:
        return
    if "name" not in event:
        stack.pop()
        return
    frame = _frame(event)
    for at in range(len(stack) - 1, -1, -1):
        if stack[at] == frame:
            del stack[at:]
            return


def spans(events: Iterable[dict[str, Any]]) -> Iterator[Span]:
    """Every stack span of every (pid, tid); a thread's spans come in time order."""
    open_frames: dict[int, list[str]] = {}
    observing: dict[int, tuple[int, int]] = {}
    held: dict[tuple[int, int], tuple[int, tuple[str, ...]]] = {}
    last = 0

    def observed(tid: int, pid: int, ts: int) -> Span | None:
        before = held.get((pid, tid))
        held[(pid, tid)] = (ts, tuple(open_frames[tid]))
        if before is not None and ts > before[0] and before[1]:
            return Span(before[0], ts, pid, tid, before[1])
        return None

    for event in events:
        if not isinstance(event, dict):
            raise ChrometraceError(f"expected an event object, got {type(event).__name__}")
        if event.get("ph") not in ("B", "E"):
            continue  # "M": thread names; nothing else is written by py-spy
        try:
            pid, tid, ts = int(event["pid"]), int(event["tid"]), int(event["ts"])
        except (KeyError, TypeError, ValueError):
            raise ChrometraceError(f"event without pid/tid/ts: {event!r:.200}") from None
        run = observing.get(tid)
        if run is not None and run != (pid, ts) and (span := observed(tid, *run)) is not None:
            yield span
        observing[tid] = (pid, ts)
        _stack_event(open_frames.setdefault(tid, []), event)
        last = max(last, ts)
    for tid, run in observing.items():
        if (span := observed(tid, *run)) is not None:
            yield span
    for (pid, tid), (since, stack) in held.items():
        if stack and last > since:  # a process that shared its tid: still open when the recording stopped
            yield Span(since, last, pid, tid, stack)


def samples_of(spans_: Iterable[Span], origin: float, rate: float) -> list[Sample]:
    """Samples on each thread's 1/rate grid (from its first span), at epoch `origin` + ts, time-ordered.

    A span gets the grid points inside it: none when it is shorter than a period and holds none, so
    a thread has one sample per period of its recorded time, however many short spans it went through.
    py-spy's `--threads` frame is left out of the samples' stacks (a stack of nothing else gives none).
    """
    period = 1.0 / rate
    period_us = 1e6 / rate
    anchors: dict[tuple[int, int], int] = {}
    out: list[Sample] = []
    for span in sorted(spans_, key=lambda s: s.start_us):
        anchor = anchors.setdefault((span.pid, span.tid), span.start_us)
        first = math.ceil((span.start_us - anchor) / period_us - 1e-6)
        stop = math.ceil((span.end_us - anchor) / period_us - 1e-6)
        start = origin + anchor / 1e6
        stack = without_thread(span.stack)
        if stack:
            out.extend(Sample(start + k * period, span.pid, span.tid, stack, period) for k in range(first, stop))
    out.sort(key=lambda s: s.time)
    return out


def final_ts(events: Iterable[dict[str, Any]]) -> int:
    """The largest `ts` (µs): when py-spy stopped and wrote the file; 0 for no events."""
    return max((int(e.get("ts", 0)) for e in events if isinstance(e, dict) and e.get("ph") in ("B", "E")), default=0)


def parse_chrometrace(data: str | bytes, origin: float, rate: float) -> list[Sample]:
    """Samples of a whole chrometrace file whose `ts` 0 is epoch `origin`."""
    return samples_of(spans(load_events(data)), origin, rate)
