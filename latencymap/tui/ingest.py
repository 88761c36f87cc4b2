"""Run a blocking flow in a worker thread; the UI drains what it queued in bulk on a timer."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

DRAIN_LIMIT = 50_000
_END = object()


class Ingest:
    """A daemon thread that puts every item of `flow` on a queue, then an end marker."""

    def __init__(self, flow: Iterator[Any]) -> None:
        self._flow = flow
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="latencymap-ingest", daemon=True)
        self.finished = False
        self.error: BaseException | None = None
        self.received = 0
        self._rate_mark = (time.monotonic(), 0)
        self.rate = 0.0

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        put = self._queue.put
        try:
            for item in self._flow:
                put(item)
        except BaseException as err:  # reported to the UI, re-raised by run_tui
            self.error = err
        finally:
            put(_END)

    def drain(self, limit: int = DRAIN_LIMIT) -> list[Any]:
        """Up to `limit` queued items, without blocking."""
        items: list[Any] = []
        get = self._queue.get_nowait
        try:
            while len(items) < limit:
                item = get()
                if item is _END:
                    self.finished = True
                    break
                items.append(item)
        except queue.Empty:
            pass
        self.received += len(items)
        self._update_rate()
        return items

    def _update_rate(self) -> None:
        now = time.monotonic()
        then, count = self._rate_mark
        if now - then >= 1.0:
            self.rate = (self.received - count) / (now - then)
            self._rate_mark = (now, self.received)
