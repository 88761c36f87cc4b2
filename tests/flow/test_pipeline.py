"""`limited`: --count counts intervals of each stream, --duration wall time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

from latencymap.core.model import FlowItem, Interval, IntervalRun, Notice, StreamId
from latencymap.flow.pipeline import DurationCut, limited

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


@pytest.mark.timeout(60)  # before: waited for the source's next item
def test_duration_ends_on_time_while_the_source_gives_nothing() -> None:
    """A live source that nothing arrives at (`listen --otlp` without requests) yields nothing: the deadline, looked
    at per item, never came. The flow now ends on time, and the source is closed at its next item."""
    import threading
    import time

    arrive = threading.Event()
    closed = threading.Event()

    def quiet() -> Iterator[FlowItem]:
        try:
            yield interval(A, 1.0)
            arrive.wait(30)  # nothing arrives until the test says so
            yield interval(A, 2.0)
            yield interval(A, 3.0)
        finally:
            closed.set()

    started = time.monotonic()
    got = list(limited(quiet(), duration=0.5))
    assert 0.5 <= time.monotonic() - started < 1.5 and per_stream(got) == {"a": 1}
    arrive.set()
    assert closed.wait(5)


@pytest.mark.timeout(60)
def test_duration_reached_while_the_source_still_gives_ends_with_the_cut() -> None:
    """The deadline passes as an item arrives and the next is not there yet: the flow ends with the cut. It raised
    NameError (`queue`, imported for type checking only), losing the report of every `--duration` run whose input
    still flowed."""
    import time

    def flowing() -> Iterator[FlowItem]:
        for k in range(1, 1000):
            yield interval(A, float(k))
            time.sleep(0.05)

    now = iter([0.0, *([10.0] * 100_000)])
    got = list(limited(flowing(), duration=5, clock=lambda: next(now)))
    assert per_stream(got) == {"a": 1} and isinstance(got[-1], DurationCut)


def test_duration_passes_on_what_the_source_raises_and_its_end() -> None:
    def failing() -> Iterator[FlowItem]:
        yield interval(A, 1.0)
        raise RuntimeError("source died")

    got: list[FlowItem] = []
    try:
        got.extend(limited(failing(), duration=30))
    except RuntimeError as err:
        assert str(err) == "source died"
    else:
        raise AssertionError("not raised")
    assert per_stream(got) == {"a": 1}
    assert per_stream(list(limited(rounds([A, B], 3, []), 2, duration=30))) == {"a": 2, "b": 2}


def test_listen_otlp_with_duration_stops_on_time_without_requests() -> None:
    """`latencymap report listen --otlp ... --duration 1` ran until killed when no request came."""
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "latencymap", "report", "listen", "--otlp", f"127.0.0.1:{port}",
                           "--duration", "1"], capture_output=True, text=True, timeout=60)
    assert time.monotonic() - started < 15  # the interpreter's start and imports, then 1 s
    assert done.returncode == 0 and "receiving OpenTelemetry metrics" in done.stdout + done.stderr, done.stderr


def paced_records(fd: int, n: int, pace: float, written: list[int]) -> None:
    """`n` cumulative records of one stream written to pipe `fd`, one every `pace` seconds (a live producer); the
    pipe is closed at the end, or when its reader went away. `written` counts them."""
    import os
    import time

    from latencymap.protocol import format_record

    try:
        for k in range(1, n + 1):
            record = format_record(A, 1_700_000_000.0 + k, np.full(4, 10 * k, dtype=np.int64), date=f"r{k}")
            os.write(fd, record.encode())
            written.append(k)
            time.sleep(pace)
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


@pytest.mark.timeout(60)
def test_a_report_of_a_live_pipe_counts_records_as_they_arrive() -> None:
    """`producer | latencymap report --count 2` waited for 32 records (`gathered` held them for speed) and ended
    after 15.7 s at a 0.5 s pace: a pipe's records are no longer held back; a file's still are (`at_rest`)."""
    import os
    import threading

    from latencymap.flow.pipeline import column_flow
    from latencymap.plugins import load_registry

    read, write = os.pipe()
    written: list[int] = []
    producer = threading.Thread(target=paced_records, args=(write, 40, 0.05, written), daemon=True)
    producer.start()
    with os.fdopen(read, "rb") as stdin:
        got = list(limited(column_flow(["-"], load_registry(), stdin=stdin), count=2))
        sent = len(written)
    producer.join(10)
    assert per_stream(got) == {"a": 2} and sent <= 5  # 3 records give 2 intervals; before: 32 of them


def test_duration_runs_from_the_call_not_from_the_first_item() -> None:
    """The TUI waits for a silent pipe before it reads the flow: that wait is part of the run's `--duration`."""
    now = [0.0]
    flow = limited(rounds([A], 50, []), duration=5, clock=lambda: now[0])
    now[0] = 4.0  # the command did other things first
    got = []
    for item in flow:
        got.append(item)
        now[0] += 0.5
    assert per_stream(got) == {"a": 2}


def test_a_flow_cut_by_duration_ends_saying_so() -> None:
    """`report --duration 1 big.txt` reported the 19% of the file read in 1 s as if it were the whole, with no note
    (and a small file `No data.`): a flow the deadline ends before its own end now ends with a DurationCut."""
    ticks = iter(range(100))
    got = list(limited(rounds([A], 50, []), duration=5, clock=lambda: float(next(ticks))))
    assert per_stream(got) == {"a": 5}
    assert isinstance(got[-1], DurationCut) and got[-1].skipped == 0
    assert got[-1].message == ("--duration 5: reading stopped after 5 s (wall-clock time), before the input's end, "
                               "5 intervals in: what came after is not read (--count N stops at a number of "
                               "intervals)")
    # a flow that ends before its deadline says nothing
    assert not any(isinstance(i, Notice) for i in limited(rounds([A], 3, []), duration=30))


@pytest.mark.timeout(60)
def test_a_report_of_a_pipe_cut_by_duration_has_the_note() -> None:
    """The real command: a producer that keeps its pipe open past `--duration` (so its end never came)."""
    import subprocess
    import sys

    from latencymap.protocol import format_record

    records = "".join(format_record(A, 1_700_000_000.0 + k, np.full(4, 10 * k, dtype=np.int64), date=f"r{k}")
                      for k in range(1, 4))
    producer = subprocess.Popen([sys.executable, "-c", f"import sys, time; sys.stdout.write({records!r}); "
                                 "sys.stdout.flush(); time.sleep(20)"], stdout=subprocess.PIPE)
    try:
        done = subprocess.run([sys.executable, "-m", "latencymap", "report", "--duration", "1.5", "-"],
                              stdin=producer.stdout, capture_output=True, text=True, timeout=40)
    finally:
        producer.kill()
        producer.wait()
    assert done.returncode == 0, done.stderr
    assert "2 intervals over" in done.stdout
    assert ("Notes:\n   --duration 1.5: reading stopped after 1.5 s (wall-clock time), before the input's end, "
            "2 intervals in: what came after is not read") in done.stdout


def cumulative(streams: list[StreamId], n: int) -> str:
    """`n` intervals of each of `streams` as cumulative protocol records, one stream's whole history after the
    other's (`cat sda.txt sdb.txt`)."""
    from latencymap.protocol import format_record

    return "".join(format_record(s, 1_700_000_000.0 + k, np.full(4, 10 * k, dtype=np.int64), date=f"r{k}")
                   for s in streams for k in range(n + 1))


def test_a_file_whose_streams_come_one_after_another_keeps_count_of_each_and_says_what_it_left_out(
        tmp_path) -> None:
    """`report --count 10` of `cat sda.txt sdb.txt` ended the flow at sda's 11th interval: sdb was never read, and
    a gate passed on data it had not seen. Each stream now keeps its `count`; what it left out is said once."""
    from latencymap.flow.pipeline import CountCut, column_flow
    from latencymap.plugins import load_registry

    path = tmp_path / "seq.txt"
    path.write_text(cumulative([A, B], 20))
    got = list(limited(column_flow([str(path)], load_registry()), 10))
    assert per_stream(got) == {"a": 10, "b": 10}
    notes = [item.message for item in got if isinstance(item, Notice)]
    assert notes == ["--count 10: 'a' (bpf, microsec) had 10 more intervals after its first 10: left out",
                     "--count 10: 'b' (bpf, microsec) had 10 more intervals after its first 10: left out"]
    assert all(isinstance(item, CountCut) and not item.skipped for item in got if isinstance(item, Notice))


def test_later_inputs_are_read_under_count(tmp_path) -> None:
    """`report --count 10 in_a.txt in_b.txt` reported in_a's `sda` alone."""
    from latencymap.flow.pipeline import column_flow
    from latencymap.plugins import load_registry

    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text(cumulative([A], 20))
    second.write_text(cumulative([B], 5))
    got = list(limited(column_flow([str(first), str(second)], load_registry()), 10))
    assert per_stream(got) == {"a": 10, "b": 5}


def test_a_live_flow_waits_for_a_new_stream_and_leaves_out_the_others_past_their_count() -> None:
    """A live flow (a source's, a pipe's) ended at the first stream's interval past `count`, so a stream that came
    in later got fewer. It now stops once every stream seen has `count` and an interval began after the newest
    stream's first ended; what it left out meanwhile is said."""
    def flow() -> Iterator[FlowItem]:
        for r in range(20):
            yield interval(A, 1.0 + r)
            if r >= 1:
                yield interval(B, 1.0 + r)

    got = list(limited(flow(), 3))
    assert per_stream(got) == {"a": 3, "b": 3}  # before: b 2
    # b's 3rd interval is in the round of r = 3, after a's 4th, which was read and left out
    assert [item.message for item in got if isinstance(item, Notice)] == [
        "--count 3: 'a' (bpf, microsec) had 1 more interval after its first 3: left out"]
    # a stream that first comes after every stream seen had its count and an interval began past the newest's
    # first is not waited for: a live flow must stop
    late = [interval(A, 1.0 + r) if r < 6 else interval(B, 1.0 + r) for r in range(10)]
    assert per_stream(list(limited(iter(late), 3))) == {"a": 3}


@pytest.mark.timeout(60)
def test_a_live_input_stopped_by_count_names_the_inputs_not_read(tmp_path) -> None:
    import os
    import threading

    from latencymap.flow.pipeline import column_flow
    from latencymap.plugins import load_registry

    later = tmp_path / "later.txt"
    later.write_text(cumulative([B], 3))
    read, write = os.pipe()
    producer = threading.Thread(target=paced_records, args=(write, 40, 0.01, []), daemon=True)
    producer.start()
    with os.fdopen(read, "rb") as stdin:
        got = list(limited(column_flow(["-", str(later)], load_registry(), stdin=stdin), count=2))
    producer.join(10)
    assert per_stream(got) == {"a": 2}
    assert [item.message for item in got if isinstance(item, Notice)] == [
        f"--count 2: every stream of <stdin> had 2 intervals and no new stream came for one interval, so reading "
        f"stopped there: {later} not read"]


def _records(*records: tuple[int, str, str]) -> str:
    """Per-interval protocol records of stream `svc`, each (second, body, flags)."""
    return "".join(f"<begin record>\ntimestamp, microsec, {(k + 2) * 1_000_000}, d\ncounts, interval\nlabel, svc\n"
                   f"latencyunit, microsec\n{'flags, ' + flags + chr(10) if flags else ''}{body}<end record>\n"
                   for k, body, flags in records)


@pytest.mark.parametrize(("text", "fails"), [
    (_records((0, "1; 5\n", ""), (1, "", "gap"), (2, "", "gap")), True),  # a skip; the rest empty gaps
    (_records((0, "1; 5\n", ""), (1, "1024, 100\n", "gap"), (2, "", "gap")), False),  # a gap holding events
    (_records((0, "1; 5\n", ""), (1, "1024, 100\n", ""), (2, "", "gap")), False),  # one column with data
    (_records((1, "", "gap"), (2, "", "gap")), False),  # nothing skipped: the source said its data was missing
], ids=["skipped-and-empty-gaps", "a-gap-holding-events", "a-column-with-data", "gaps-only"])
def test_an_input_that_skipped_records_and_gave_only_empty_gap_columns_is_nothing_readable(
        tmp_path, text: str, fails: bool) -> None:
    """An empty gap column is no data read (a reader leaves one for a record it could not decode, such as an
    HdrHistogram payload, or for a hole in the time line): an input of skipped records and such columns failed
    nothing, since they counted as read."""
    from latencymap.core.errors import NothingReadable
    from latencymap.flow.pipeline import column_flow, input_flow
    from latencymap.plugins import load_registry

    path = tmp_path / "gaps.txt"
    path.write_text(text)
    for flow in (input_flow, column_flow):
        if fails:
            with pytest.raises(NothingReadable, match=r"gaps\.txt: no record could be read \(1 skipped\)"):
                list(flow([str(path)], load_registry()))
        else:
            assert list(flow([str(path)], load_registry()))
