"""From inputs and sources to a flow of Intervals and Notices: diffing, limits, strict mode."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from latencymap.core.deltas import Differ
from latencymap.core.errors import NothingReadable, StrictError
from latencymap.core.model import ColumnFlow, Flow, FlowItem, Interval, IntervalRun, Item, Notice, unrolled
from latencymap.flow.inputs import read_input
from latencymap.plugins import Registry, TextFormat


def diffed(items: Iterable[Item], name: str) -> Flow:
    """Snapshots diffed into Intervals (one differ per input)."""
    return Differ(name=name).run(items)


def input_flow(paths: Sequence[str], registry: Registry, forced_format: str | None = None,
               options: dict[str, Any] | None = None, stdin: IO[bytes] | None = None,
               readers: list[TextFormat] | None = None) -> Flow:
    """Intervals of every input in turn. Opening/identifying errors raise InputError up front; the formats that
    read them are appended to `readers`.

    When every record of an input was skipped, NothingReadable is raised after the last input (with each such
    input's first error), so what the others gave is shown first.
    """
    return unrolled(column_flow(paths, registry, forced_format, options, stdin, readers))


def column_flow(paths: Sequence[str], registry: Registry, forced_format: str | None = None,
                options: dict[str, Any] | None = None, stdin: IO[bytes] | None = None,
                readers: list[TextFormat] | None = None) -> ColumnFlow:
    """`input_flow` with runs of intervals kept in columns (IntervalRuns), for consumers that take them in bulk."""
    inputs = [(read_input(p, registry, forced_format, options, stdin, runs=True, readers=readers), p)
              for p in (paths or ["-"])]
    unreadable = []
    for items, path in inputs:
        tally = _Tally()
        yield from Differ(name=path).run_columns(tally.count(items))
        if tally.skipped and not tally.read:
            name = "<stdin>" if path in ("-", "") else path
            unreadable.append(f"{name}: no record could be read ({tally.skipped} skipped); the first: {tally.first}")
    if unreadable:
        raise NothingReadable("; ".join(unreadable))


class _Tally:
    """What one input's reader gave: data items, and records skipped (with the first message)."""

    def __init__(self) -> None:
        self.read = 0
        self.skipped = 0
        self.first = ""

    def count(self, items: Iterable[Item]) -> Iterator[Item]:
        for item in items:
            if not isinstance(item, Notice):
                self.read += 1
            elif item.skipped:
                self.skipped += item.skipped
                self.first = self.first or item.message
            yield item


def strict(flow: Iterator[FlowItem]) -> Iterator[FlowItem]:
    """Raise StrictError at the first Notice that skips something (notes that skip nothing pass)."""
    for item in flow:
        if isinstance(item, Notice) and item.skipped:
            raise StrictError(item.message)
        yield item


def limited(flow: Iterator[FlowItem], count: int | None = None, duration: float | None = None,
            clock: Callable[[], float] = time.monotonic) -> Iterator[FlowItem]:
    """Stop after `count` intervals or `duration` seconds of wall time, whichever comes first."""
    seen = 0
    deadline = None if duration is None else clock() + duration
    if count is not None and count <= 0:
        return
    for item in flow:
        if isinstance(item, IntervalRun) and count is not None and seen + len(item) > count:
            item = item.head(count - seen)
        yield item
        if isinstance(item, Interval | IntervalRun):
            seen += 1 if isinstance(item, Interval) else len(item)
            if count is not None and seen >= count:
                return
        if deadline is not None and clock() >= deadline:
            return
