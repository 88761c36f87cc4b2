"""`limited`: --count counts intervals of each stream, --duration wall time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np

from latencymap.core.model import FlowItem, Interval, IntervalRun, Notice, StreamId
from latencymap.flow.pipeline import limited

A, B, C = (StreamId(name, "bpf", "microsec") for name in "abc")


def interval(stream: StreamId, t: float) -> Interval:
    """One interval of `stream` ending at `t`."""
    return Interval(stream, t - 1, t, np.ones(64, dtype=np.int64))


def rounds(streams: list[StreamId], n: int, taken: list[int]) -> Iterator[FlowItem]:
    """`n` rounds of one interval per stream; `taken` counts the intervals the consumer pulled."""
    for r in range(n):
        for stream in streams:
            taken.append(1)
            yield interval(stream, 1.0 + r)


def per_stream(items: list[FlowItem]) -> Counter[str]:
    """Intervals per stream name, runs unrolled."""
    out: Counter[str] = Counter()
    for item in items:
        if isinstance(item, Interval):
            out[item.stream.label] += 1
        elif isinstance(item, IntervalRun):
            out.update(s.label for s in item.streams)
    return out


def test_every_stream_of_a_round_gets_count_columns() -> None:
    for count in (1, 2, 5):
        taken: list[int] = []
        got = list(limited(rounds([A, B, C], 10, taken), count))
        assert per_stream(got) == {"a": count, "b": count, "c": count}
        # a round is whole once a stream comes back, so from count 2 on nothing past the last round is read
        assert len(taken) == 3 * count + (count == 1)


def test_one_stream_stops_at_its_count_without_reading_another() -> None:
    taken: list[int] = []
    got = list(limited(rounds([A], 10, taken), 4))
    assert per_stream(got) == {"a": 4} and len(taken) == 4


def test_a_run_is_cut_where_a_stream_would_pass_its_count() -> None:
    streams = [A, B] * 6
    k = len(streams)
    start = np.repeat(np.arange(6, dtype=np.float64), 2)
    run = IntervalRun(streams, start, start + 1, np.ones(k), np.ones((k, 64), dtype=np.int64), None,
                      np.zeros(k, dtype=bool), np.zeros(k, dtype=bool), [""] * k)
    got = list(limited(iter([Notice("hello", 0), run]), 3))
    assert isinstance(got[1], IntervalRun) and len(got[1]) == 6
    assert per_stream(got) == {"a": 3, "b": 3}


def test_duration_stops_on_the_clock() -> None:
    ticks = iter(range(100))
    got = list(limited(rounds([A], 50, []), duration=5, clock=lambda: float(next(ticks))))
    assert per_stream(got) == {"a": 5}
