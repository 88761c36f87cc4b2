"""Intervals in columns (IntervalRuns, `column_flow`) accumulate exactly as the line reader's intervals one by one."""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from process_support import run_limited

from latencymap.core.accumulator import Accumulator, accumulate
from latencymap.core.deltas import Differ
from latencymap.core.errors import NothingReadable
from latencymap.core.model import Interval, IntervalRun, Notice, StreamId, unrolled
from latencymap.flow.pipeline import Reading, column_flow, gathered, input_flow, limited
from latencymap.flow.recording import Recorder
from latencymap.plugins import TextFormat, load_registry
from latencymap.protocol import ProtocolReader

REGISTRY = load_registry()


def held(acc: Accumulator) -> dict[str, Any]:
    """Everything an accumulator holds that a report or view reads."""
    out: dict[str, Any] = {"messages": list(acc.messages), "skipped": acc.skipped, "seen": acc.intervals_seen}
    for stream, h in acc.streams.items():
        out[repr(stream)] = (h.n, h.dropped, h.timed, h.dates, h.counts_in().tolist(), h.time_in().tolist(),
                             *(h.meta_in(name).tolist() for name in ("start", "end", "dur", "flags")))
    return out


def by_lines(path: Path) -> Iterator[Interval | Notice]:
    """The flow of `path` read by the protocol's line reader, record by record (what the bulk path must equal)."""
    return Differ(name=str(path)).run(ProtocolReader(str(path)).read(path.read_text().splitlines(True)))


def both(path: Path, cap: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """What accumulating `path` read line by line, and read in bulk in columns, holds."""
    out = []
    for flow in (by_lines, lambda p: column_flow([str(p)], REGISTRY)):
        acc = Accumulator() if cap is None else Accumulator(cap=cap)
        with contextlib.suppress(NothingReadable):  # raised after the last item: what was read is held
            accumulate(flow(path), acc)
        out.append(held(acc))
    return out[0], out[1]


RECORD = st.builds(
    lambda label, start, width, rows, flags, three, kind: (label, start, width, rows, flags, three, kind),
    st.sampled_from(["a", "b", "c"]), st.integers(0, 3), st.sampled_from([1_000_000, 250_000, 0, -5]),
    st.lists(st.tuples(st.sampled_from([0, 1, 2, 4, 64, 1 << 20]), st.integers(0, 99),
                       st.sampled_from([0.5, 0.0, 1e-7, 3.25])), max_size=4, unique_by=lambda r: r[0]),
    st.sampled_from(["", "flags, reset\n", "flags, gap\n", "flags, reset, gap\n"]), st.booleans(),
    st.sampled_from(["interval", "interval", "cumulative", "no start", "bad"]))


def text_of(records: list[tuple[Any, ...]]) -> str:
    """Interval records (with or without sums, start lines, flags), cumulative ones and broken ones, interleaved."""
    out, now = [], 1_700_000_000_000_000
    for label, start, width, rows, flags, three, kind in records:
        now += 1_000_000 * (start + 1)
        body = "".join(f"{v}, {c}, {s!r}\n" if three else f"{v}, {c}\n" for v, c, s in rows)
        head = f"<begin record>\ntimestamp, microsec, {now}, d{now}\n"
        if kind == "interval":
            head += f"counts, interval\nstart, microsec, {now - width}\n"
        elif kind == "no start":
            head += "counts, interval\n"
        elif kind == "bad":
            body += "x, 1\n"
        out.append(f"{head}latencyunit, microsec\nlabel, {label}\n{flags}{body}<end record>\n")
    return "".join(out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(RECORD, min_size=1, max_size=30), st.sampled_from([None, 1, 3]))
def test_any_records_accumulate_alike_in_columns_and_one_by_one(tmp_path: Path, records: list[Any],
                                                                cap: int | None) -> None:
    path = tmp_path / "mixed.txt"
    path.write_text(text_of(records))
    one, cols = both(path, cap)
    assert cols == one


def test_a_recording_accumulates_alike_and_in_runs(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    streams = [StreamId(f"disk{k}", "bpf", "microsec") for k in range(3)]
    path = tmp_path / "rec.txt"
    rec = Recorder(str(path))
    for c in range(400):
        for k, stream in enumerate(streams):
            counts = np.zeros(64, dtype=np.int64)
            counts[9:13] = rng.poisson(20, 4)
            time = counts * 1e-3 * rng.uniform(1, 2, 64) if k != 1 else None  # one stream without exact times
            rec.write(Interval(stream, 1e9 + c, 1e9 + c + 1, counts, time, reset=c % 97 == 5, gap=c % 89 == 3))
    rec.close()
    one, cols = both(path)
    assert cols == one and one["seen"] == 1200
    runs = [item for item in column_flow([str(path)], REGISTRY) if isinstance(item, IntervalRun)]
    assert runs and sum(len(r) for r in runs) == 1200


@pytest.mark.parametrize("count", [1, 7, 100, 1199, 1200, 5000])
def test_a_count_limit_cuts_a_run_where_it_cuts_intervals(tmp_path: Path, count: int) -> None:
    path = tmp_path / "rec.txt"
    rec = Recorder(str(path))
    for c in range(1200):
        rec.write(Interval(StreamId("x", "bpf", "microsec"), 1e9 + c, 1e9 + c + 1, np.arange(64, dtype=np.int64)))
    rec.close()
    whole = Reading()
    whole.live = False  # a file, as the column flow reads it: past the count, its intervals are left out, said once
    one = held(accumulate(limited(Reading.along(by_lines(path), reading=whole), count)))
    cols = held(accumulate(limited(column_flow([str(path)], REGISTRY), count)))
    assert cols == one and one["seen"] == min(count, 1200)


def test_cumulative_records_diff_into_runs(example_data: Path) -> None:
    items = list(column_flow([str(example_data)], REGISTRY))
    assert any(isinstance(item, IntervalRun) for item in items)
    one, cols = both(example_data)
    assert cols == one


def test_runs_are_appended_a_batch_of_columns_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch counts a run's rows: runs of a big recording never wait in memory for one huge append."""
    from latencymap.core import accumulator

    k = 1000
    stream = StreamId("x", "bpf", "microsec")

    def run(i: int) -> IntervalRun:
        start = 1e9 + i * k + np.arange(k, dtype=np.float64)
        return IntervalRun([stream] * k, start, start + 1, np.ones(k), np.ones((k, 64), dtype=np.int64), None,
                           np.zeros(k, dtype=bool), np.zeros(k, dtype=bool), [""] * k)

    sizes: list[int] = []
    add = Accumulator.add
    monkeypatch.setattr(Accumulator, "add", lambda self, items: sizes.append(sum(map(len, items))) or add(self, items))
    acc = accumulate(run(i) for i in range(20))
    assert acc.intervals_seen == 20 * k and sum(sizes) == 20 * k
    assert len(sizes) > 1 and max(sizes) <= accumulator.BATCH + k


def halves(path: Path, folder: Path) -> tuple[Path, Path]:
    """`path`'s records cut in two at the middle record: a log and its rotation."""
    text = path.read_text()
    cut = text.index("<begin record>", len(text) // 2)
    first, second = folder / "first.txt", folder / "second.txt"
    first.write_text(text[:cut])
    second.write_text(text[cut:])
    return first, second


def test_a_stream_going_back_into_an_earlier_inputs_time_is_shown_apart(example_data: Path, tmp_path: Path) -> None:
    """... and its input's reader says what it is shown as (a report places a source's findings by it)."""
    first, second = halves(example_data, tmp_path)
    readers: list[TextFormat] = []
    rotated = accumulate(column_flow([str(first), str(second)], REGISTRY, readers=readers))  # a log, its rotation
    (stream,) = rotated.streams
    assert not [m for m in rotated.messages if "shown apart" in m] and [r.shown_as for r in readers] == [{}, {}]
    readers = []
    twice = accumulate(column_flow([str(example_data), str(second)], REGISTRY, readers=readers))  # the 2nd half again
    assert [s.label for s in twice.streams] == [stream.label, f"{stream.label} [{second}]"]
    assert [r.shown_as for r in readers] == [{}, {stream: list(twice.streams)[1]}]
    alone = [accumulate(column_flow([str(p)], REGISTRY)).streams[stream].n for p in (example_data, second)]
    assert [h.n for h in twice.streams.values()] == alone
    (said,) = [m for m in twice.messages if "shown apart" in m]
    assert said == (f"{second}: '{stream.label}' goes back into the time of the same stream from {example_data}: "
                    f"shown apart, as '{stream.label} [{second}]'")
    one_by_one = [i for i in input_flow([str(example_data), str(second)], REGISTRY) if isinstance(i, Interval)]
    assert {i.stream.label for i in one_by_one} == {s.label for s in twice.streams}


@pytest.mark.parametrize("jhiccup_first", [False, True])
def test_what_a_stream_shown_apart_measures_stays_with_it(fixtures: Path, tmp_path: Path, jhiccup_first: bool) -> None:
    """Two logs named alike over the same seconds, one logged by jHiccup: its note (`Notice.measures`) comes before
    its stream's first column, so it named the stream before `_apart` showed it apart as `LABEL [INPUT]`: the other
    log's findings were worded as hiccups, and the jHiccup log's as requests'."""
    log = (fixtures / "hdrhistogram" / "jHiccup-2.0.7S.logV2.hlog").read_text()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    hiccups, plain = tmp_path / "a" / "x.hlog", tmp_path / "b" / "x.hlog"
    hiccups.write_text(log)
    plain.write_text("".join(line for line in log.splitlines(True) if "jHiccup" not in line))
    paths = [str(hiccups), str(plain)] if jhiccup_first else [str(plain), str(hiccups)]
    for flow in (column_flow, input_flow):
        acc = accumulate(flow(paths, REGISTRY))
        assert {s.label: h.measures for s, h in acc.streams.items()} == {
            "x.hlog": "jhiccup" if jhiccup_first else "", f"x.hlog [{paths[1]}]": "" if jhiccup_first else "jhiccup"}
        assert sum("logged by jHiccup" in m for m in acc.messages) == 1


def test_a_log_and_its_rotation_lose_no_interval_between_them(example_data: Path, tmp_path: Path) -> None:
    """The interval between the last record of one input and the first of the next was a baseline: lost."""
    first, second = halves(example_data, tmp_path)
    def data(acc: Accumulator) -> dict[str, Any]:
        return {k: v for k, v in held(acc).items() if k != "messages"}  # they name the files

    whole = data(accumulate(column_flow([str(example_data)], REGISTRY)))
    assert data(accumulate(column_flow([str(first), str(second)], REGISTRY))) == whole
    one_by_one = Accumulator()
    one_by_one.add(input_flow([str(first), str(second)], REGISTRY))
    assert data(one_by_one) == whole
    later = tmp_path / "later.txt"  # the same records an hour later: another run, not this one's next interval
    later.write_text(re.sub(r"(timestamp, microsec, )(\d+)", lambda m: f"{m[1]}{int(m[2]) + 3_600_000_000}",
                            second.read_text()))
    apart = accumulate(column_flow([str(first), str(later)], REGISTRY))
    (hist,) = apart.streams.values()
    assert hist.n == whole["seen"] - 1  # its first record is a baseline again


def _rotations(folder: Path, n: int) -> list[str]:
    """`n` inputs of one stream, each going on where the previous ended: one interval each."""
    folder.mkdir()
    paths = []
    for k in range(n):
        path = folder / f"part{k:04d}.txt"
        path.write_text("".join(f"<begin record>\ntimestamp, microsec, {(2 * k + i + 1) * 1_000_000}, t\n"
                                f"label, sda\n1, {5 * (i + 1)}\n<end record>\n" for i in range(2)))
        paths.append(str(path))
    return paths


def test_many_inputs_hold_few_files_open(tmp_path: Path) -> None:
    paths = _rotations(tmp_path / "parts", 300)

    # many desktops allow 1,024 open files; 300 inputs under 64 shows the same
    r = run_limited("RLIMIT_NOFILE", 64, [sys.executable, "-m", "latencymap", "report", "--format", "json", *paths],
                    capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (stream,) = json.loads(r.stdout)["streams"]
    # each input's first record continues the one before (its counters restarted: a reset column of its 5 events)
    assert stream["columns"] == 599 and stream["total"]["events"] == 300 * 5 + 299 * 5
    assert stream["resets"] == list(range(1, 599, 2))
    junk = tmp_path / "parts" / "zz-junk.txt"
    junk.write_text("hello\n")
    r = run_limited("RLIMIT_NOFILE", 64, [sys.executable, "-m", "latencymap", "report", *paths, str(junk)],
                    capture_output=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""  # still identified up front: nothing is read before the error
    assert "zz-junk.txt: unrecognised input format" in r.stderr


def interleaved_text(streams: int, records: int, seed: int) -> str:
    """Cumulative records of `streams` streams interleaved record by record (a fleet's collector): buckets missing
    now and then, a counter going down in one stream, a restart in another, a repeated timestamp in a third."""
    rng = np.random.default_rng(seed)
    totals = rng.integers(0, 1000, size=(streams, 6))
    out = []
    for r in range(records):
        for s in range(streams):
            totals[s] += rng.poisson(5, 6)
            rows = totals[s].copy()
            if s == 1 and r == records // 2:
                rows[2] -= 3  # a counter going down
            if s == 2 and r == records // 3:
                totals[s] = rows = rng.integers(0, 3, 6)  # a restart
            stamp = 1_700_000_000_000_000 + (r - (s == 3 and r == 4)) * 1_000_000
            keep = rng.random(6) > 0.1
            body = "".join(f"{16 << b}, {c}\n" for b, c in enumerate(rows) if keep[b])
            out.append(f"<begin record>\ntimestamp, microsec, {stamp}, t{r}\nlatencyunit, microsec\n"
                       f"label, node{s:04d}/sda\ndatasource, bpf\n{body}<end record>\n")
    return "".join(out)


def test_many_interleaved_streams_across_chunks_accumulate_alike(tmp_path: Path) -> None:
    path = tmp_path / "fleet.txt"
    path.write_text(interleaved_text(300, 24, 3))
    assert path.stat().st_size > 2 * 512 * 1024  # more than two of the reader's chunks
    one, cols = both(path)
    assert cols == one and len(one) == 3 + 300


def flow_facts(flow: Iterator[Interval | Notice]) -> list[Any]:
    return [item.message if isinstance(item, Notice) else
            (item.stream, item.start, item.end, item.duration, item.counts.tolist(), item.reset, item.date,
             item.start_date) for item in flow]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 12), st.integers(0, 99), st.integers(200, 5000), st.integers(1, 40),
       st.integers(1, 3000))
def test_runs_gathered_across_chunks_diff_as_records_one_by_one(streams: int, records: int, seed: int, chunk: int,
                                                                per_stream: int, most: int) -> None:
    text = interleaved_text(streams, records, seed)
    lines = Differ(name="x").run(ProtocolReader("x").read(text.splitlines(True)))
    chunks = [text[i:i + chunk] for i in range(0, len(text), chunk)]
    items = ProtocolReader("x").read_chunks(chunks, runs=True)
    bulk = unrolled(Differ(name="x").run_columns(gathered(items, per_stream, most)))
    assert flow_facts(bulk) == flow_facts(lines)


def test_cumulative_records_of_one_run_joined_to_itself_are_shown_apart(example_data: Path, tmp_path: Path) -> None:
    """`cat capture.txt capture.txt`: the second copy is another run of the stream in the same input, shown apart
    (in columns and one by one alike), each with the events of the capture read alone, never added together."""
    text = example_data.read_text()
    joined = tmp_path / "joined.txt"
    joined.write_text(text + text)
    alone = accumulate(column_flow([str(example_data)], REGISTRY))
    (stream,) = alone.streams
    twice = accumulate(column_flow([str(joined)], REGISTRY))
    line = text.count("\n") + 1
    assert [s.label for s in twice.streams] == [stream.label, f"{stream.label} [{joined}, from line {line}]"]
    events = [int(h.counts_in().sum()) for h in twice.streams.values()]
    assert events == [int(alone.streams[stream].counts_in().sum())] * 2
    assert [h.n for h in twice.streams.values()] == [alone.streams[stream].n] * 2
    one_by_one = accumulate(input_flow([str(joined)], REGISTRY))
    assert held(one_by_one) == held(twice)
