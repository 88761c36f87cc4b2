"""py-spy's `--format chrometrace` output, turned back into timed stack samples.

Verified on py-spy 0.4.3: the file is one JSON array of events `{"args": {"filename", "line"}, "cat":
"py-spy", "name": <function>, "ph": "B"|"E", "pid", "tid", "ts": <µs since the recorder started>}`.
py-spy writes events only when a thread's stack changes: at a sample whose stack differs from that
thread's previous one, it ends the frames that left ("E", leaf first) and begins the new ones ("B",
root first), all at that sample's `ts`; when the recording stops it ends every open frame at the
stop time. Newer py-spy versions also write `"ph": "M"` thread-name events and remap `tid` to small
integers; both are accepted. A stack therefore holds from one change to the next, and the samples
inside are reconstructed on the sampling grid (`rate` per second) from the start of that span.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from latencymap.profiling.samples import Sample, frame_name


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
        doc = json.loads(data)
    except json.JSONDecodeError as err:
        raise ChrometraceError(f"not JSON: {err}") from None
    if isinstance(doc, dict):
        doc = doc.get("traceEvents")
    if not isinstance(doc, list):
        raise ChrometraceError("expected a JSON array of trace events")
    return doc


def _frame(event: dict[str, Any]) -> str:
    args = event.get("args") or {}
    line = args.get("line")
    return frame_name(str(event["name"]), str(args.get("filename", "")), line if isinstance(line, int) else None)


def spans(events: Iterable[dict[str, Any]]) -> Iterator[Span]:
    """Every stack span, per thread, in the order the spans close."""
    open_frames: dict[tuple[int, int], list[str]] = {}
    since: dict[tuple[int, int], int] = {}
    for event in events:
        if not isinstance(event, dict):
            raise ChrometraceError(f"expected an event object, got {type(event).__name__}")
        phase = event.get("ph")
        if phase not in ("B", "E"):
            continue  # "M": thread names; nothing else is written by py-spy
        try:
            key = (int(event["pid"]), int(event["tid"]))
            ts = int(event["ts"])
        except (KeyError, TypeError, ValueError):
            raise ChrometraceError(f"event without pid/tid/ts: {event!r:.200}") from None
        stack = open_frames.setdefault(key, [])
        start = since.get(key, ts)
        if ts > start and stack:
            yield Span(start, ts, key[0], key[1], tuple(stack))
        since[key] = ts
        if phase == "B":
            if "name" not in event:
                raise ChrometraceError(f"B event without a name: {event!r:.200}")
            stack.append(_frame(event))
        elif stack:
            stack.pop()


def samples_of(spans_: Iterable[Span], origin: float, rate: float) -> list[Sample]:
    """Samples on the grid of each span (at least one per span), at epoch `origin` + ts, time-ordered."""
    period = 1.0 / rate
    out: list[Sample] = []
    for span in spans_:
        start = origin + span.start_us / 1e6
        n = max(1, round((span.end_us - span.start_us) / 1e6 * rate))
        out.extend(Sample(start + k * period, span.pid, span.tid, span.stack, period) for k in range(n))
    out.sort(key=lambda s: s.time)
    return out


def final_ts(events: Iterable[dict[str, Any]]) -> int:
    """The largest `ts` (µs): when py-spy stopped and wrote the file; 0 for no events."""
    return max((int(e.get("ts", 0)) for e in events if isinstance(e, dict) and e.get("ph") in ("B", "E")), default=0)


def parse_chrometrace(data: str | bytes, origin: float, rate: float) -> list[Sample]:
    """Samples of a whole chrometrace file whose `ts` 0 is epoch `origin`."""
    return samples_of(spans(load_events(data)), origin, rate)
