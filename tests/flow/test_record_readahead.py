"""`--record` is not paced by the view: a record that reached latencymap's stdin is in the recording at once."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from latencymap.core.model import Interval, StreamId
from latencymap.flow.recording import Recorder, read_ahead, recorded

N = 400
PRODUCER = r"""
import sys
import numpy as np
from latencymap.core.model import StreamId
from latencymap.protocol import format_record

stream = StreamId("fast", "bpf", "nanosec")
for i in range(int(sys.argv[1])):
    counts = np.zeros(64, dtype=np.int64)
    counts[10 + i % 7] = i + 1
    sys.stdout.write(format_record(stream, 1_700_000_001.0 + i, counts, start=1_700_000_000.0 + i, per_interval=True))
sys.stdout.flush()
"""


@pytest.mark.slow
def test_sigkill_after_a_fast_producer_finished_loses_no_record(tmp_path: Path) -> None:
    rec, frames = tmp_path / "fast.txt", tmp_path / "frames.txt"
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER, str(N)], stdout=subprocess.PIPE)
    with frames.open("w") as out:  # default --screen_delay (0.1 s): drawing all N frames takes N / 10 s at least
        viewer = subprocess.Popen([sys.executable, "-m", "latencymap", "--plain", "--record", str(rec)],
                                  stdin=producer.stdout, stdout=out, stderr=subprocess.PIPE)
    assert producer.stdout is not None
    producer.stdout.close()
    try:
        assert producer.wait(30) == 0  # every record is written into the pipe
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not rec.exists() or rec.read_text().count("<end record>") < N):
            time.sleep(0.05)
        viewer.send_signal(signal.SIGKILL)
        assert viewer.wait(10) == -signal.SIGKILL
    finally:
        producer.kill()
        viewer.kill()
    drawn = frames.read_text().count("Frequency heat map")
    assert drawn < N, "the view drew every frame: the test did not catch it lagging"
    assert rec.read_text().count("<end record>") == N
    rep = subprocess.run([sys.executable, "-m", "latencymap", "report", "--format", "json", str(rec)],
                         capture_output=True, text=True, timeout=60)
    (stream,) = json.loads(rep.stdout)["streams"]
    assert stream["columns"] == N and stream["total"]["events"] == N * (N + 1) // 2


def _intervals(n: int) -> list[Interval]:
    stream = StreamId("s", "bpf", "microsec")
    return [Interval(stream, float(i), float(i + 1), np.full(64, i, dtype=np.int64)) for i in range(n)]


def test_read_ahead_records_before_the_consumer_asks(tmp_path: Path) -> None:
    rec = tmp_path / "r.txt"
    flow = read_ahead(recorded(iter(_intervals(50)), Recorder(str(rec))))
    first = next(flow)
    deadline = time.monotonic() + 10
    while rec.read_text().count("<end record>") < 50 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rec.read_text().count("<end record>") == 50
    assert [iv.start for iv in [first, *flow]] == [float(i) for i in range(50)]


def test_read_ahead_keeps_order_and_raises_the_source_error() -> None:
    def failing():
        yield from _intervals(3)
        raise RuntimeError("source broke")

    got = []
    with pytest.raises(RuntimeError, match="source broke"):
        for item in read_ahead(failing()):
            got.append(item)
    assert [iv.start for iv in got] == [0.0, 1.0, 2.0]


def test_read_ahead_closed_early_closes_the_flow(tmp_path: Path) -> None:
    closed = []

    def source():
        stream = StreamId("s", "bpf", "microsec")
        try:
            for i in itertools.count():
                yield Interval(stream, float(i), float(i + 1), np.zeros(64, dtype=np.int64))
        finally:
            closed.append(True)

    flow = read_ahead(source(), limit=16)
    assert next(flow).start == 0.0
    flow.close()
    deadline = time.monotonic() + 10
    while not closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert closed == [True]


def test_read_ahead_with_keep_records_what_the_flow_gives_after_its_consumer_left(tmp_path: Path) -> None:
    """A listener passes on what its writers had sent after the view has gone (SIGTERM): the recording takes it
    until the command closes it; without `keep` the flow was closed at its next item."""
    rec, closed = Recorder(str(tmp_path / "r.txt")), []
    gone, more = threading.Event(), threading.Event()

    def source():
        try:
            yield from _intervals(1)
            more.wait(10)  # the consumer has gone: what comes now is recorded, not queued
            yield from _intervals(5)[1:]
            gone.wait(10)
            yield from _intervals(6)[5:]
        finally:
            closed.append(True)

    flow = read_ahead(recorded(source(), rec), keep=lambda: not rec.closed)
    assert next(flow).start == 0.0
    flow.close()
    more.set()
    wait = time.monotonic() + 10
    while rec.written < 5 and time.monotonic() < wait:
        time.sleep(0.01)
    rec.close()
    gone.set()
    while not closed and time.monotonic() < wait:
        time.sleep(0.01)
    assert closed == [True]
    assert (tmp_path / "r.txt").read_text().count("<end record>") == 5
