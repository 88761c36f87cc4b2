"""Block reading and the worker process against today's line-by-line reading: the same tasks, values and intervals.

The reference is the reading as it was before blocks: `read_lines` (LineSplitter), `EventParser.parse` line by
line and task-by-task binning. Logs: every fixture layout, and a log of hostile lines (truncated TaskEnds, other
field orders, duplicate keys, wrong types, CRLF, NUL, non-UTF-8, a 3 MB line...), plain, rolled and zstd-compressed;
with the worker process (real, `python -m latencymap.sources.spark.worker`) and without.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from properties_support import QUICK
from spark_support import (
    SPARK,
    current,
    exact,
    hostile_log,
    notices,
    reference,
    same_reading,
    task_end_lines,
    totals,
    write_log,
)

from latencymap.sources.spark import blocks
from latencymap.sources.spark.binning import METRICS, _task_arrays, _task_lists
from latencymap.sources.spark.blocks import Span, read_blocks
from latencymap.sources.spark.codecs import CodecError, codec_of, cut_at
from latencymap.sources.spark.eventlog import find_event_log, read_lines
from latencymap.sources.spark.ingest import WORKER_ENV, read_tasks, split, take_in
from latencymap.sources.spark.parse import EventParser, SparkTask
from latencymap.sources.spark.source import SparkSource
from latencymap.sources.spark.worker import Answer, WorkerFailed, answers_for

LAYOUTS = ("plain", "rolling", "zstd", "lz4", "snappy")


@contextlib.contextmanager
def block_size(size: int) -> Iterator[None]:
    """Blocks of `size` bytes to start with (in this process)."""
    before, blocks.BLOCK = blocks.BLOCK, size
    try:
        yield
    finally:
        blocks.BLOCK = before


@pytest.fixture(params=["one process", "worker"])
def worker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Read in one process, or with a worker process reading the second part of any log."""
    monkeypatch.setenv(WORKER_ENV, "1" if request.param == "worker" else "0")
    return str(request.param)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_fixture_layout_reads_as_before(layout: str, worker: str, monkeypatch: pytest.MonkeyPatch) -> None:
    old, old_items = reference(SPARK / layout, monkeypatch)
    new, new_items = current(SPARK / layout)
    same_reading(old, new)
    assert exact(new_items) == exact(old_items) and len(new.all_tasks) == 85


def _layouts(tmp_path: Path, lines: list[bytes]) -> dict[str, Path]:
    """The lines as one plain file, as a rolling directory of three plain files, and of three zstd files."""
    import zstandard

    plain = write_log(tmp_path / "app-1", lines, end=b"")  # the last line without its newline
    rolled = tmp_path / "eventlog_v2_app-2"
    squeezed = tmp_path / "eventlog_v2_app-3"
    for d in (rolled, squeezed):
        d.mkdir()
        (d / f"appstatus_{d.name[12:]}").write_bytes(b"")
    third = len(lines) // 3
    for k, part in enumerate((lines[:third], lines[third:2 * third], lines[2 * third:]), start=1):
        data = b"\n".join(part) + b"\n"
        (rolled / f"events_{k}_app-2").write_bytes(data)
        (squeezed / f"events_{k}_app-3.zstd").write_bytes(zstandard.ZstdCompressor().compress(data))
    return {"plain": plain, "rolled": rolled, "zstd": squeezed}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_hostile_lines_read_as_before_in_every_layout(tmp_path: Path, worker: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    lines = hostile_log()
    for name, target in _layouts(tmp_path, lines).items():
        for options in ({}, {"metric": "scheduler-delay", "per_stage": True}, {"metric": "cpu", "stages": (0, 2)}):
            old, old_items = reference(target, monkeypatch, **options)
            new, new_items = current(target, **options)
            same_reading(old, new)
            assert exact(new_items) == exact(old_items), (name, options)
            assert len(new.all_tasks) > 200 and any("could not be parsed" in m for m in notices(new_items))


def test_unreadable_lines_are_named_by_file_and_line_and_the_rest_is_read(tmp_path: Path, worker: str) -> None:
    good = task_end_lines()
    lines = [*good[:3], good[3][:500], *good[4:60], b'{"Event":"SparkListenerTaskEnd","Stage ID":"one"}', *good[60:]]
    path = write_log(tmp_path / "local-1", lines)
    source, items = current(path)
    assert int(totals(items).sum()) == len(good) - 1 == len(source.all_tasks)
    (told,) = [m for m in notices(items) if "could not be parsed" in m]
    assert told.startswith(f"spark: 2 event-log lines could not be parsed: {path} line 4: SparkListenerTaskEnd "
                           "not read (")
    assert f"{path} line 61: SparkListenerTaskEnd not read (Expected `int`, got `str`" in told


def test_following_a_rolled_log_names_the_file_and_line_of_what_it_cannot_read(tmp_path: Path) -> None:
    good = task_end_lines()
    log = tmp_path / "eventlog_v2_local-1"
    log.mkdir()
    first = write_log(log / "events_1_local-1", good[:10])
    second = write_log(log / "events_2_local-1", [*good[10:12], good[12][:99], *good[13:],
                                                   b'{"Event":"SparkListenerApplicationEnd","Timestamp":1}'])
    (log / "appstatus_local-1").write_bytes(b"")
    items = list(SparkSource(target=str(log), follow=True, poll=0.01).items())
    assert first.exists() and int(totals(items).sum()) == len(good) - 1
    assert notices(items) == [f"spark: 1 event-log lines could not be parsed: {second} line 3: "
                              "SparkListenerTaskEnd not read (Input data was truncated)"]


def test_only_the_first_unreadable_lines_are_described(tmp_path: Path) -> None:
    path = write_log(tmp_path / "local-1", [b'{"Event":"SparkListenerTaskEnd"} \x1b[2J'] * 7)
    (told,) = notices(current(path)[1])
    assert told.count(" not read (") == 3 and told.endswith("; 4 more") and "\x1b" not in told


def _read_alone(spans: list[Span]) -> tuple[EventParser, list[SparkTask]]:
    parser = EventParser()
    return parser, parser.read_spans(spans)


def _read_split(spans: list[Span], share: float, frame: int) -> tuple[EventParser, list[SparkTask]]:
    """The spans read by a parent and a worker (its answers made in this process), taken in as `read_tasks` does."""
    mine, theirs = split(spans, share)
    parser = EventParser()
    tasks = parser.read_spans(mine)
    return parser, tasks + (take_in(answers_for(theirs, frame), theirs, parser) if theirs else [])


def _same(a: tuple[EventParser, list[SparkTask]], b: tuple[EventParser, list[SparkTask]]) -> None:
    (pa, ta), (pb, tb) = a, b
    assert ta == tb
    assert (pa.app, pa.executors, pa.bad_lines, pa.task_end_lines, pa.problems) == \
        (pb.app, pb.executors, pb.bad_lines, pb.task_end_lines, pb.problems)


LINE = st.one_of(st.sampled_from(hostile_log(copies=1, long_line=300)), st.binary(max_size=50),
                 st.sampled_from([b"", b"\r", b'{"Event":"SparkListenerTaskStart"}']))


@QUICK
@given(st.lists(LINE, max_size=40), st.sampled_from([b"", b"\n", b"\r\n"]), st.integers(16, 5000),
       st.floats(0, 1), st.integers(1, 50))
@example([b"a", b"b"], b"", 16, 0.5, 1)
def test_any_lines_read_in_blocks_and_in_two_parts_as_line_by_line(tmp_path_factory: pytest.TempPathFactory,
                                                                   lines: list[bytes], end: bytes, size: int,
                                                                   share: float, frame: int) -> None:
    path = write_log(tmp_path_factory.mktemp("log") / "local-1", lines, end)
    old = EventParser()
    old.begin(str(path))
    old_tasks = [t for batch in read_lines(find_event_log(path)) for t in old.parse(batch)]
    with block_size(size):
        alone = _read_alone([Span(path)])
        _same(alone, (old, old_tasks))
        _same(_read_split([Span(path)], share, frame), alone)


@QUICK
@given(st.binary(max_size=3000).map(lambda b: b.replace(b"\r", b"\n")), st.lists(st.integers(0, 3000), max_size=4),
       st.integers(16, 600))
def test_spans_give_each_line_once(tmp_path_factory: pytest.TempPathFactory, data: bytes, cuts: list[int],
                                   size: int) -> None:
    path = tmp_path_factory.mktemp("log") / "f"
    path.write_bytes(data)
    points = sorted({0, *(c % (len(data) + 1) for c in cuts)})
    spans = [Span(path, a, b) for a, b in zip(points, [*points[1:], None], strict=True)]
    with block_size(size):
        whole = [bytes(block[:end]) for _, block, end in read_blocks([Span(path)])]
        parts = [bytes(block[:end]) for _, block, end in read_blocks(spans)]
    assert b"".join(parts) == b"".join(whole)
    cut = data.rfind(b"\n") + 1
    assert b"".join(whole) == (data if data[cut:].strip() else data[:cut])


def _compressed(tmp_path: Path) -> list[Path]:
    """Spark's own lz4, snappy and zstd fixture files, and the hostile log as one zstd file of many frames."""
    import zstandard

    ours = tmp_path / "app-1.zstd"
    with ours.open("wb") as fh, zstandard.ZstdCompressor().stream_writer(fh, closefd=False) as out:
        for k, line in enumerate(hostile_log(copies=2, long_line=300_000)):
            out.write(line + b"\n")
            if k % 7 == 0:
                out.flush(zstandard.FLUSH_FRAME)
    return [*sorted(p for layout in ("lz4", "snappy", "zstd") for p in (SPARK / layout).rglob("*.*")
                    if codec_of(p)), ours]


def test_compressed_files_cut_where_frames_start_give_each_line_once(tmp_path: Path) -> None:
    for path in _compressed(tmp_path):
        codec = codec_of(path)
        assert codec is not None
        size = path.stat().st_size
        whole = [bytes(block[:end]) for _, block, end in read_blocks([Span(path)])]
        cuts = {cut_at(path, codec, target) for target in range(0, size, max(1, size // 60))} - {None}
        assert len(cuts) > 2, path
        for at in sorted(c for c in cuts if c):
            with block_size(997):
                parts = [bytes(block[:end]) for _, block, end in read_blocks([Span(path, 0, at), Span(path, at)])]
            assert b"".join(parts) == b"".join(whole), (path, at)
        alone = _read_alone([Span(path)])
        for share in (0.1, 0.5, 0.9):
            _same(_read_split([Span(path)], share, 3), alone)


CORRUPT = st.one_of(st.binary(max_size=400), *(st.builds(lambda b, m=magic: m + b, st.binary(max_size=300))
                                                for magic in (b"LZ4Block", b"\x82SNAPPY\x00", b"\x28\xb5\x2f\xfd")))


@QUICK
@given(st.sampled_from(["", ".zstd", ".lz4", ".snappy"]), CORRUPT, st.floats(0, 1))
def test_a_corrupt_log_raises_only_codec_errors_whole_or_cut(tmp_path_factory: pytest.TempPathFactory,
                                                              suffix: str, data: bytes, part: float) -> None:
    path = tmp_path_factory.mktemp("log") / f"local-1{suffix}"
    path.write_bytes(data)
    for read in (lambda: _read_alone([Span(path)]), lambda: _read_split([Span(path)], part, 2)):
        try:
            _, tasks = read()
        except CodecError as err:
            assert str(err)
        else:
            assert all(isinstance(t, SparkTask) for t in tasks)


def test_a_failed_worker_leaves_nothing_out(tmp_path: Path) -> None:
    path = write_log(tmp_path / "local-1", task_end_lines() * 3)
    alone = _read_alone([Span(path)])
    mine, theirs = split([Span(path)], 0.5)

    def dies_after_one() -> Iterator[Answer]:
        yield next(answers_for(theirs, 10))
        raise WorkerFailed("killed")

    def ends_early() -> Iterator[Answer]:
        yield next(answers_for(theirs, 10))

    for answers in (dies_after_one(), ends_early(), iter(())):
        parser = EventParser()
        tasks = parser.read_spans(mine)
        _same((parser, tasks + take_in(answers, theirs, parser)), alone)


def test_the_worker_process_reads_the_second_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_log(tmp_path / "local-1", hostile_log(copies=2, long_line=300))
    log = find_event_log(path)
    alone = EventParser()
    expected = read_tasks(log, alone, worker=False)
    both = EventParser()
    assert read_tasks(log, both, worker=True) == expected
    assert (both.app, both.executors, both.bad_lines, both.problems) == \
        (alone.app, alone.executors, alone.bad_lines, alone.problems)
    monkeypatch.setattr("latencymap.sources.spark.worker.sys.executable", shutil.which("false"))
    failed = EventParser()
    assert read_tasks(log, failed, worker=True) == expected and failed.problems == alone.problems


TASKS = st.builds(
    SparkTask, stage=st.integers(0, 5), stage_attempt=st.just(0), task_id=st.integers(0, 100), index=st.just(0),
    attempt=st.just(0), launch_ms=st.integers(-5, 2**44), finish_ms=st.integers(-(2**63), 2**63 - 1) | st.integers(
        0, 2**44), executor=st.just("1"), host=st.just("h"),
    run_ms=st.none() | st.floats(allow_nan=True) | st.integers(-(2**70), 2**70),
    cpu_ns=st.none() | st.floats(0, 1e40), deserialize_ms=st.none() | st.floats(0, 10),
    getting_result_ms=st.integers(0, 2**44),
)


@QUICK
@given(st.lists(TASKS, max_size=30), st.sampled_from(list(METRICS)),
       st.none() | st.frozensets(st.integers(0, 5), max_size=3), st.booleans())
def test_binning_with_numpy_selects_what_task_by_task_does(tasks: list[SparkTask], metric: str,
                                                           stages: frozenset[int] | None, per_stage: bool) -> None:
    try:
        fast = _task_arrays(tasks, metric, stages, per_stage)
    except (OverflowError, TypeError, ValueError):
        return  # task_values falls back to _task_lists
    slow = _task_lists(tasks, metric, stages, per_stage)
    assert sorted(fast, key=str) == sorted(slow, key=str)
    for key, (finish, values) in slow.items():
        assert fast[key][0].tolist() == finish.tolist() and fast[key][1].tolist() == values.tolist()
