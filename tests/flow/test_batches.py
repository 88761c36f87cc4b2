"""A flow read ahead by a thread comes out whole, in order, in lists of what was read, its error last."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from latencymap.core.model import Notice
from latencymap.flow.batches import ready_batches


def test_every_item_in_order_in_lists_a_slow_consumer_gets_big() -> None:
    items = [Notice(str(i), skipped=0) for i in range(20000)]
    seen, sizes = [], []
    for batch in ready_batches(iter(items), limit=5000):
        assert 1 <= len(batch) <= 5000
        seen += batch
        sizes.append(len(batch))
        time.sleep(0.005)  # a consumer slower than the reader
    assert seen == items
    assert max(sizes) > 100


def test_a_live_source_gets_each_item_as_it_comes() -> None:
    def live() -> Iterator[Notice]:
        for i in range(5):
            time.sleep(0.05)
            yield Notice(str(i), skipped=0)

    start = time.monotonic()
    got = []
    for batch in ready_batches(live()):
        got.append((len(batch), time.monotonic() - start))
    assert [n for n, _ in got] == [1] * 5  # nothing waits for a batch to fill


def test_the_flows_error_comes_after_its_items() -> None:
    class Broken(Exception):
        pass

    def flow() -> Iterator[Notice]:
        yield Notice("a", skipped=0)
        yield Notice("b", skipped=0)
        raise Broken

    seen = []
    with pytest.raises(Broken):
        for batch in ready_batches(flow()):
            seen += [n.message for n in batch]
    assert seen == ["a", "b"]


def test_closing_stops_the_reader() -> None:
    closed = threading.Event()

    def endless() -> Iterator[Notice]:
        try:
            while True:
                yield Notice("x", skipped=0)
        finally:
            closed.set()

    batches = ready_batches(endless(), limit=10)
    assert next(batches)
    batches.close()
    assert closed.wait(5)
