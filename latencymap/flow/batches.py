"""A flow read ahead by a thread and handed over in lists: whatever was read since the last list."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator

from latencymap.core.model import Flow, Interval, Notice

#: Items read ahead at most (the reader waits for the consumer past it).
LIMIT = 4096


class _Reader:
    """Pulls the flow in a daemon thread into a deque; the consumer takes everything there at once."""

    def __init__(self, flow: Flow, limit: int) -> None:
        self.flow = flow
        self.limit = max(1, limit)
        self.items: deque[Interval | Notice] = deque()
        self.cond = threading.Condition()
        self.done = False
        self.stop = False
        self.error: BaseException | None = None

    def run(self) -> None:
        cond, items = self.cond, self.items
        try:
            for item in self.flow:
                with cond:
                    while len(items) >= self.limit and not self.stop:
                        cond.wait(0.1)
                    if self.stop:
                        return
                    items.append(item)
                    cond.notify()
        except BaseException as err:  # re-raised in the consumer's thread, after the items read before it
            self.error = err
        finally:
            close = getattr(self.flow, "close", None)
            if close is not None:
                close()
            with cond:
                self.done = True
                cond.notify()

    def batches(self) -> Iterator[list[Interval | Notice]]:
        cond, items = self.cond, self.items
        try:
            while True:
                with cond:
                    while not items and not self.done:
                        cond.wait()
                    batch = list(items)
                    items.clear()
                    finished = self.done
                    cond.notify()
                if batch:
                    yield batch
                if finished:
                    if self.error is not None:
                        raise self.error
                    return
        finally:
            with cond:
                self.stop = True
                cond.notify()


def ready_batches(flow: Flow, limit: int = LIMIT) -> Iterator[list[Interval | Notice]]:
    """The flow's items, in order, in lists of what a reader thread had read when the consumer asked (at least one
    item; at most `limit`): a consumer slower than the input gets big lists, one waiting for a live source gets
    each item as it comes. The flow's exception is raised after the items before it; closing the generator stops
    the thread at its next item."""
    reader = _Reader(flow, limit)
    threading.Thread(target=reader.run, name="latencymap-batches", daemon=True).start()
    return reader.batches()
