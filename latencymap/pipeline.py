"""From inputs and sources to a flow of Intervals and Notices: diffing, limits, strict mode."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from latencymap.differ import Differ
from latencymap.inputs import InputError, read_input
from latencymap.model import Interval, Notice
from latencymap.plugins import Item, Registry, SourceError
from latencymap.sanitize import clean_text

Flow = Iterator[Interval | Notice]


class StrictError(Exception):
    """The first bad record under `--strict`."""


def diffed(items: Iterable[Item], name: str) -> Flow:
    """Snapshots diffed into Intervals (one differ per input)."""
    return Differ(name=name).run(items)


def input_flow(paths: Sequence[str], registry: Registry, forced_format: str | None = None,
               options: dict[str, Any] | None = None, stdin: IO[bytes] | None = None) -> Flow:
    """Intervals of every input in turn. Opening/identifying errors raise InputError up front."""
    readers = [(read_input(p, registry, forced_format, options, stdin, runs=True), p) for p in (paths or ["-"])]
    for items, path in readers:
        yield from diffed(items, path)


def guarded_source(items: Iterable[Item], name: str) -> Iterator[Item]:
    """A live source's items; an unexpected exception in it becomes a SourceError that names the source.

    Errors that already speak to the user (SourceError, InputError, click's) pass as they are.
    """
    import click

    try:
        yield from items
    except (SourceError, InputError, click.ClickException):
        raise
    except Exception as err:
        where = traceback.extract_tb(err.__traceback__)[-1]
        raise SourceError(f"{name}: the source failed: {type(err).__name__}: {clean_text(str(err))} "
                          f"(at {Path(where.filename).name}:{where.lineno})") from err


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
