"""Property tests of Spark event-log reading: line parsing (msgspec and json paths), line splitting, codecs, binning.

Entry points: `EventParser.parse` (TaskEnd and application lines → SparkTasks), `LineSplitter.feed`,
the codecs' `make_decoder(...).feed` / `decompress`, `read_lines`, and the binning of tasks into Intervals
(`batch_intervals`, `LiveBinner`), which an event log's times drive directly.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from msgspec.structs import replace
from properties_support import NUMBERS, QUICK, ROUNDTRIP, check_items, hostile_lines, spliced, totals

from latencymap.core.model import Interval, Notice
from latencymap.sources.spark.binning import METRICS, LiveBinner, batch_intervals, plausible
from latencymap.sources.spark.codecs import CodecError, decompress
from latencymap.sources.spark.eventlog import LineSplitter, find_event_log, read_lines
from latencymap.sources.spark.parse import EventParser, SparkTask
from latencymap.sources.spark.source import SparkSource

SPARK = Path(__file__).resolve().parents[3] / "fixtures" / "spark"
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBERS, st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=10,
)
MS = st.one_of(st.integers(0, 2**44), st.integers(-(2**63), 2**63 - 1), st.integers(1_795_225_600_000,
                                                                                     1_795_225_700_000))
TASKS = st.builds(
    SparkTask, stage=st.integers(0, 50), stage_attempt=st.integers(0, 3), task_id=st.integers(0, 10**6),
    index=st.integers(0, 1000), attempt=st.integers(0, 3), launch_ms=MS, finish_ms=MS,
    executor=st.text(max_size=6), host=st.text(max_size=8), failed=st.booleans(), killed=st.booleans(),
    speculative=st.booleans(), reason=st.sampled_from(["Success", "TaskKilled", "\x1b[2J"]),
    getting_result_ms=st.integers(0, 2**40),
    run_ms=st.one_of(st.none(), st.integers(0, 2**40).map(float), st.floats(0, 1e308)),
    cpu_ns=st.one_of(st.none(), st.integers(0, 2**50).map(float)),
    gc_ms=st.one_of(st.none(), st.integers(0, 2**30).map(float)),
    deserialize_ms=st.one_of(st.none(), st.integers(0, 2**30).map(float)),
    result_serialize_ms=st.one_of(st.none(), st.integers(0, 2**30).map(float)),
    fetch_wait_ms=st.one_of(st.none(), st.integers(0, 2**30).map(float)),
    shuffle_write_ns=st.one_of(st.none(), st.integers(0, 2**40).map(float)),
)
#: Tasks as a real log has them: finishing within a day of each other, after they launched.
PLAUSIBLE = st.builds(lambda t, launch, took: replace(t, launch_ms=launch, finish_ms=launch + took), TASKS,
                      st.integers(1_795_225_600_000, 1_795_225_600_000 + 86_400_000), st.integers(0, 600_000))


def event_of(t: SparkTask) -> dict:
    """The SparkListenerTaskEnd event Spark writes for a task (only the fields latencymap reads, plus noise)."""
    metrics: dict = {"Executor Run Time": t.run_ms, "Executor CPU Time": t.cpu_ns, "JVM GC Time": t.gc_ms,
                     "Executor Deserialize Time": t.deserialize_ms, "Result Serialization Time": t.result_serialize_ms,
                     "Shuffle Read Metrics": {"Fetch Wait Time": t.fetch_wait_ms},
                     "Shuffle Write Metrics": {"Shuffle Write Time": t.shuffle_write_ns}}
    return {"Event": "SparkListenerTaskEnd", "Stage ID": t.stage, "Stage Attempt ID": t.stage_attempt,
            "Task Type": "ResultTask", "Task End Reason": {"Reason": t.reason},
            "Task Info": {"Task ID": t.task_id, "Index": t.index, "Attempt": t.attempt, "Launch Time": t.launch_ms,
                          "Executor ID": t.executor, "Host": t.host, "Speculative": t.speculative,
                          "Getting Result Time": t.getting_result_ms, "Finish Time": t.finish_ms,
                          "Failed": t.failed, "Killed": t.killed, "Accumulables": []},
            "Task Metrics": {k: v for k, v in metrics.items() if v is not None}}


def line_of(event: dict) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode()


def _mangled(event: dict, path: list[str], value: object) -> dict:
    """`event` with the field at `path` replaced by `value` (or dropped when value is the marker)."""
    out = json.loads(json.dumps(event))
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node.get(key), dict) else node
    if value == "<drop>":
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return out


FIELDS = st.sampled_from([["Stage ID"], ["Stage Attempt ID"], ["Task Info"], ["Task Info", "Task ID"],
                          ["Task Info", "Launch Time"], ["Task Info", "Finish Time"], ["Task Info", "Host"],
                          ["Task Info", "Failed"], ["Task Metrics"], ["Task Metrics", "Executor Run Time"],
                          ["Task Metrics", "Shuffle Read Metrics"], ["Task End Reason"], ["Event"]])
MANGLED_TASKS = st.builds(lambda t, f, v: line_of(_mangled(event_of(t), f, v)), TASKS, FIELDS,
                          st.one_of(JSON_VALUES, st.just("<drop>")))
APP_LINES = st.builds(lambda kind, fields: line_of({"Event": f"SparkListenerApplication{kind}", **fields}),
                      st.sampled_from(["Start", "End"]),
                      st.dictionaries(st.sampled_from(["App ID", "App Name", "Timestamp"]), JSON_VALUES))
LINES = st.lists(st.one_of(st.builds(lambda t: line_of(event_of(t)), TASKS), MANGLED_TASKS, APP_LINES,
                           hostile_lines(st.just('{"Event":"SparkListenerTaskEnd"')).map(
                               lambda ls: "".join(ls).encode("utf-8", "surrogatepass")),
                           st.binary(max_size=60), st.builds(lambda b: b'x"SparkListenerTaskEnd"' + b, st.binary())),
                 max_size=30)


@pytest.mark.parametrize("prefer", ["msgspec", "json"])
@QUICK
@given(lines=LINES)
@example(lines=[b'{"Event":"SparkListenerApplicationEnd","Timestamp":[null]}'])
@example(lines=[line_of(_mangled(event_of(SparkTask(1, 0, 1, 1, 0, 5, 9, "1", "h")), ["Task Metrics"], [1]))])
def test_parsing_arbitrary_lines_never_raises(prefer: str, lines: list[bytes]) -> None:
    parser = EventParser(prefer)
    tasks = parser.parse(lines)
    assert all(isinstance(t, SparkTask) for t in tasks)
    assert len(tasks) + parser.bad_lines <= len(lines) and len(tasks) <= parser.task_end_lines
    assert parser.app.end_ms is None or isinstance(parser.app.end_ms, int)
    assert isinstance(parser.app.app_id, str) and isinstance(parser.app.name, str)
    for t in tasks:
        assert all(isinstance(getattr(t, f), int) for f in ("stage", "task_id", "launch_ms", "finish_ms"))


@ROUNDTRIP
@given(st.lists(TASKS, max_size=20))
def test_task_end_lines_round_trip_on_both_parsers(tasks: list[SparkTask]) -> None:
    lines = [line_of(event_of(t)) for t in tasks]
    fast, plain = EventParser("msgspec"), EventParser("json")
    assert fast.parse(lines) == tasks == plain.parse(lines)
    assert fast.bad_lines == plain.bad_lines == 0 and fast.task_end_lines == len(tasks)


@QUICK
@given(st.binary(max_size=3000), st.lists(st.integers(0, 3000), max_size=10))
def test_line_splitter_gives_the_same_lines_for_any_chunking(data: bytes, cuts: list[int]) -> None:
    split = LineSplitter()
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    lines = [line for a, b in pairwise(points) for line in split.feed(data[a:b])]
    lines += split.flush()
    expected = data.split(b"\n")
    if not expected[-1].strip():
        expected.pop()
    assert lines == expected


CODEC_BYTES = st.one_of(st.binary(max_size=400), st.builds(lambda b: b"LZ4Block" + b, st.binary(max_size=200)),
                        st.builds(lambda b: b"\x82SNAPPY\x00" + b, st.binary(max_size=200)),
                        st.builds(lambda b: b"\x28\xb5\x2f\xfd" + b, st.binary(max_size=200)))


@QUICK
@given(st.sampled_from([None, "zstd", "lz4", "snappy"]), CODEC_BYTES)
def test_decoders_raise_only_codec_errors(codec: str | None, data: bytes) -> None:
    try:
        out = decompress(data, codec)
    except CodecError as err:
        assert str(err)
    else:
        assert isinstance(out, bytes)


def test_corrupt_or_oversized_blocks_are_codec_errors() -> None:
    header = b"LZ4Block" + bytes([0x20 | 10]) + (5).to_bytes(4, "little") + (2**31 - 1).to_bytes(4, "little")
    with pytest.raises(CodecError, match="lz4-java writes at most"):
        decompress(header + b"\0" * 4 + b"\x10abcd", "lz4")
    header = b"LZ4Block" + bytes([0x20 | 10]) + (5).to_bytes(4, "little") + (64).to_bytes(4, "little")
    with pytest.raises(CodecError, match="lz4: corrupt block"):
        decompress(header + b"\0" * 4 + b"\xf0abcd", "lz4")
    with pytest.raises(CodecError, match="snappy: corrupt block"):
        decompress(b"\x82SNAPPY\x00" + b"\0" * 8 + (6).to_bytes(4, "big") + b"\xff\xff\xff\xff\x0f\x00", "snappy")


@ROUNDTRIP
@given(st.lists(TASKS, min_size=1, max_size=12), st.sampled_from(list(METRICS)),
       st.sampled_from([None, 1, 1000]), st.booleans())
@pytest.mark.timeout(120)
def test_binning_any_task_times_is_bounded_and_counts_every_value(tasks: list[SparkTask], metric: str,
                                                                  width_ms: int | None, per_stage: bool) -> None:
    intervals = check_items(batch_intervals(tasks, "app", metric, per_stage=per_stage, width_ms=width_ms))
    value_of = METRICS[metric][1]
    values = [v for t in tasks if plausible(t) and (v := value_of(t)) is not None and 0 <= v < 1e30]
    assert int(totals(intervals).sum()) == len(values)
    streams = {iv.stream for iv in intervals}
    assert len(intervals) <= len(streams) * (2 * len(tasks) * 1002 + 1)


@ROUNDTRIP
@given(st.lists(st.lists(TASKS, max_size=5), min_size=1, max_size=5), st.integers(0, 2**53))
@pytest.mark.timeout(120)
def test_live_binning_any_task_times_is_bounded_and_loses_nothing(batches: list[list[SparkTask]], now: int) -> None:
    binner = LiveBinner("app", "duration", width_ms=1000, grace_ms=3000)
    out: list[Interval] = []
    for tasks in batches:
        binner.add(tasks)
        out += binner.ready(float(now))
    out += binner.flush()
    check_items(out)
    expected = sum(1 for tasks in batches for t in tasks if t.duration_ms >= 0 and plausible(t))
    assert int(totals(out).sum()) == expected
    assert len(out) <= 2 * 1002 * (sum(len(b) for b in batches) + 1)


@ROUNDTRIP
@given(st.lists(PLAUSIBLE, min_size=1, max_size=30), st.one_of(st.just("demo"), spliced(st.text(max_size=10))))
def test_plausible_logs_round_trip_through_the_source(tmp_path_factory: pytest.TempPathFactory,
                                                       tasks: list[SparkTask], name: str) -> None:
    path = tmp_path_factory.mktemp("log") / "local-1"
    start = line_of({"Event": "SparkListenerApplicationStart", "App Name": name, "App ID": "local-1",
                     "Timestamp": 1})
    path.write_bytes(b"\n".join([start, *(line_of(event_of(t)) for t in tasks)]) + b"\n")
    items = check_items(SparkSource(target=str(path)).items())  # labels: no control characters
    assert int(totals(items).sum()) == len(tasks)
    if name == "demo":
        assert {i.stream.label for i in items if isinstance(i, Interval)} == {"spark demo task duration"}


@QUICK
@given(st.sampled_from(["", ".zstd", ".lz4", ".snappy"]), st.one_of(st.binary(max_size=500), LINES.map(b"\n".join)))
def test_reading_a_corrupt_log_raises_only_codec_errors(tmp_path_factory: pytest.TempPathFactory, suffix: str,
                                                        data: bytes) -> None:
    path = tmp_path_factory.mktemp("log") / f"local-1{suffix}"
    path.write_bytes(data)
    try:
        batches = list(read_lines(find_event_log(path)))
    except CodecError as err:
        assert str(err)
        return
    assert all(isinstance(line, bytes) for batch in batches for line in batch)


def test_a_log_with_a_task_at_epoch_zero_does_not_allocate_years_of_columns(tmp_path: Path) -> None:
    base = 1_795_225_600_000
    tasks = [SparkTask(1, 0, 1, 1, 0, base, base + 250, "1", "h"), SparkTask(1, 0, 2, 2, 0, 0, 0, "1", "h"),
             SparkTask(1, 0, 3, 3, 0, base + 900, base + 1900, "1", "h")]
    path = tmp_path / "local-1"
    path.write_bytes(b"\n".join(line_of(event_of(t)) for t in tasks) + b"\n")
    intervals = [i for i in SparkSource(target=str(path), interval=0.001).items() if isinstance(i, Interval)]
    assert int(totals(intervals).sum()) == 3 and len(intervals) < 5000
    bogus = replace(tasks[1], finish_ms=2**62)
    path.write_bytes(b"\n".join(line_of(event_of(t)) for t in [*tasks, bogus]) + b"\n")
    for follow in (False, True):  # a finished log, and the same log followed as it is written
        items = check_items(SparkSource(target=str(path), interval=0.001, follow=follow, poll=0.01).items())
        assert int(totals(items).sum()) == 3
        told = [i for i in items if isinstance(i, Notice) and "Finish Time outside 1970-2527" in i.message]
        assert [i.message for i in told] == ["spark: 1 tasks with a Finish Time outside 1970-2527 not mapped"]
