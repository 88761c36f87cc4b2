"""From inputs and sources to a flow of Intervals and Notices: diffing, limits, strict mode."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

from latencymap.core.deltas import Differ
from latencymap.core.errors import StrictError
from latencymap.core.model import Flow, Interval, Item, Notice
from latencymap.flow.inputs import read_input
from latencymap.plugins import Registry


def diffed(items: Iterable[Item], name: str) -> Flow:
    """Snapshots diffed into Intervals (one differ per input)."""
    return Differ(name=name).run(items)


def input_flow(paths: Sequence[str], registry: Registry, forced_format: str | None = None,
               options: dict[str, Any] | None = None, stdin: IO[bytes] | None = None) -> Flow:
    """Intervals of every input in turn. Opening/identifying errors raise InputError up front."""
    readers = [(read_input(p, registry, forced_format, options, stdin, runs=True), p) for p in (paths or ["-"])]
    for items, path in readers:
        yield from diffed(items, path)


def strict(flow: Flow) -> Flow:
    """Raise StrictError at the first Notice."""
    for item in flow:
        if isinstance(item, Notice):
            raise StrictError(item.message)
        yield item


def limited(flow: Flow, count: int | None = None, duration: float | None = None,
            clock: Callable[[], float] = time.monotonic) -> Flow:
    """Stop after `count` intervals or `duration` seconds of wall time, whichever comes first."""
    seen = 0
    deadline = None if duration is None else clock() + duration
    if count is not None and count <= 0:
        return
    for item in flow:
        yield item
        if isinstance(item, Interval):
            seen += 1
            if count is not None and seen >= count:
                return
        if deadline is not None and clock() >= deadline:
            return
