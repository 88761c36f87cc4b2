"""Run a blocking flow in a worker thread; the UI drains what it queued in bulk on a timer."""

from __future__ import annotations

import bisect
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

DRAIN_LIMIT = 50_000
_END = object()
#: The ingest rate is measured over the last second, or longer when that held fewer than RATE_ITEMS items (a slow
#: producer: one record every 2 s read 0/s and 1/s in turn), up to RATE_WINDOW_S seconds.
RATE_ITEMS = 10
RATE_WINDOW_S = 10.0


class Rate:
    """Items per second, as they arrive, over a window that grows with a slow producer (see RATE_ITEMS)."""

    def __init__(self, now: float) -> None:
        self.started = now
        self._times = [now]  # when items arrived (the first: the start, with none), oldest first
        self._totals = [0]  # items received by then

    def add(self, count: int, now: float) -> None:
        """`count` items arrived at `now`."""
        if count:
            self._times.append(now)
            self._totals.append(self._totals[-1] + count)
        keep = bisect.bisect_right(self._times, now - RATE_WINDOW_S) - 1  # the last one before the window, kept
        if keep > 0:
            del self._times[:keep], self._totals[:keep]

    def value(self, now: float) -> float:
        """Items per second at `now`: over 1 s, or over as long as it takes RATE_ITEMS items, up to RATE_WINDOW_S."""
        received = self._totals[-1]
        window = 1.0
        while True:
            since = bisect.bisect_right(self._times, now - window) - 1
            count = received - (self._totals[since] if since >= 0 else 0)
            if count >= RATE_ITEMS or window >= RATE_WINDOW_S:
                return count / max(1.0, min(window, now - self.started))
            window = min(RATE_WINDOW_S, window * 2)


class Ingest:
    """A daemon thread that puts every item of `flow` on a queue, then an end marker."""

    def __init__(self, flow: Iterator[Any]) -> None:
        self._flow = flow
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="latencymap-ingest", daemon=True)
        self.finished = False
        self.error: BaseException | None = None
        self.received = 0
        self._rate = Rate(time.monotonic())
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

    def wait(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the flow's end (the thread has queued every item, then the end)."""
        self._thread.join(max(0.0, timeout))

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
        now = time.monotonic()
        self._rate.add(len(items), now)
        self.rate = self._rate.value(now)
        return items
