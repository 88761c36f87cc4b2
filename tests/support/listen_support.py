"""A `listen` source run in-process in a test."""

from __future__ import annotations

import stat
import threading
import time
from pathlib import Path
from typing import Any

from latencymap.instrument import Timings
from latencymap.sinks import SocketSink
from latencymap.sources.listen import ListenSource


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    """Wait until `predicate()` holds; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def is_socket(path: Path) -> bool:
    """Whether `path` is a socket now."""
    return path.exists() and stat.S_ISSOCK(path.stat().st_mode)


def listening(source: ListenSource, path: Path) -> tuple[threading.Thread, list[Any]]:
    """`source` run in a thread (its items collected), once its socket is there."""
    items: list[Any] = []
    thread = threading.Thread(target=lambda: items.extend(source.items()), daemon=True)  # no writer: pytest ends
    thread.start()
    wait_for(lambda: is_socket(path))
    return thread, items


def writer_before_listener(path: Path, run: str) -> tuple[SocketSink, Timings]:
    """A rank-0 writer of `run` that timed 5 steps before any listener was there: its small buffer kept only the
    newest record and counts the others dropped."""
    sink = SocketSink(str(path), hello={"run": run, "rank": 0}, buffer_bytes=600)
    timings = Timings(sink, run=run, rank=0, interval=0.0)
    for _ in range(5):
        timings.record("step", 0.001)
    assert sink.dropped_intervals >= 3
    return sink, timings
