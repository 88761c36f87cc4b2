"""The TaskEnd fast path (`parse._cut_decoder`: a line decoded without its accumulables) against the whole-line
decoder (`--strict-json`): the same SparkTasks, value for value, and the same unreadable lines named (file, line,
why), on every fixture layout, on the bench's generated log, and on generated TaskEnd lines: Spark's own events
with values of every kind, keys reordered or missing, nulls, reasons and stack traces holding quotes, braces and
look-alike keys, look-alike keys in nested objects, lines cut short and lines run into the next.
Also `--strict-json` itself: a corrupt byte in a field latencymap does not read is reported with it, read without.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import example, given
from hypothesis import strategies as st
from properties_support import QUICK
from spark_support import PLAIN, SPARK, task_end_lines, write_log

from latencymap.cli.main import main
from latencymap.sources.spark.blocks import Span
from latencymap.sources.spark.eventlog import find_event_log
from latencymap.sources.spark.ingest import read_tasks, split
from latencymap.sources.spark.parse import EventParser, SparkTask, _cut_decoder
from latencymap.sources.spark.source import SparkSource

REPO = Path(__file__).resolve().parents[3]
#: Spark's own TaskEnd events (keys in the order Spark writes them): successes, a failure, shuffle and result tasks.
SAMPLES = [json.loads(line) for line in task_end_lines()]
WHERE = [["Stage ID"], ["Stage Attempt ID"], ["Task End Reason"], ["Task End Reason", "Reason"], ["Task Info"],
         *(["Task Info", k] for k in ("Task ID", "Index", "Attempt", "Launch Time", "Finish Time", "Executor ID",
                                      "Host", "Getting Result Time", "Failed", "Killed", "Speculative",
                                      "Accumulables")),
         ["Task Metrics"], ["Task Executor Metrics"],
         *(["Task Metrics", k] for k in ("Executor Run Time", "Executor CPU Time", "JVM GC Time",
                                         "Executor Deserialize Time", "Result Serialization Time",
                                         "Shuffle Read Metrics", "Shuffle Write Metrics")),
         ["Task Metrics", "Shuffle Read Metrics", "Fetch Wait Time"],
         ["Task Metrics", "Shuffle Write Metrics", "Shuffle Write Time"]]
#: Strings that look like the structure the fast path finds: JSON escapes their quotes, never their braces.
LOOKALIKE = st.sampled_from(['"Task ID":7', ',"Task Metrics":{"Executor Run Time":1}', '"Accumulables":[', "}]}",
                             '{"Event":"SparkListenerTaskEnd","Stage ID":1', "\\", "[", "]", "{", "}", '\\"', "\n",
                             "\x00", "\u2028", "é", "\ud7ff"])
STRINGS = st.one_of(st.text(max_size=12), LOOKALIKE, st.lists(LOOKALIKE, max_size=4).map("".join))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from([0, -1, 2**63, 2**64]),
                    st.floats(allow_nan=False), STRINGS)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(STRINGS, inner, max_size=3)), max_leaves=6)
FAILURE = st.builds(lambda desc, trace: {"Reason": "ExceptionFailure", "Class Name": "java.lang.RuntimeException",
                                         "Description": desc, "Stack Trace": [{"Declaring Class": t} for t in trace],
                                         "Full Stack Trace": "\n\tat ".join(trace), "Accumulator Updates": []},
                    STRINGS, st.lists(STRINGS, max_size=3))
#: Real keys where the fast path does not look for them, inside objects it leaves out or reads.
NESTED = st.sampled_from([["Task Info", "Accumulables", 0], ["Task Executor Metrics"], ["Task End Reason"],
                          ["Task Metrics", "Shuffle Read Metrics", "Push Based Shuffle"], ["Task Metrics"]])
NESTED_KEYS = st.dictionaries(st.sampled_from(["Task ID", "Task Metrics", "Task Info", "Accumulables", "Stage ID",
                                               "Executor Run Time", "Reason", "Event"]), VALUES, min_size=1,
                              max_size=2)


def _node(event: dict[str, Any], path: list[Any]) -> Any:
    node: Any = event
    for key in path:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and len(node) > key:
            node = node[key]
        else:
            return None
    return node


@st.composite
def task_end_events(draw: st.DrawFn) -> dict[str, Any]:
    """A real TaskEnd event, changed: values, keys dropped or reordered, failures, look-alike keys."""
    event = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    for _ in range(draw(st.integers(0, 3))):
        *path, key = draw(st.sampled_from(WHERE))
        parent = _node(event, path)
        if not isinstance(parent, dict):
            continue
        change = draw(st.sampled_from(["value", "drop", "null", "move last"]))
        if change == "value":
            parent[key] = draw(VALUES)
        elif change == "drop":
            parent.pop(key, None)
        elif change == "null":
            parent[key] = None
        elif key in parent:
            parent[key] = parent.pop(key)
    if draw(st.booleans()):
        event["Task End Reason"] = draw(FAILURE)
    for _ in range(draw(st.integers(0, 2))):
        target = _node(event, draw(NESTED))
        if isinstance(target, dict):
            target.update(draw(NESTED_KEYS))
    if draw(st.integers(0, 5)) == 0:
        keys = list(event)
        order = draw(st.permutations(keys))
        event = {k: event[k] for k in order}
    return event


def line_of(event: dict[str, Any], ascii_only: bool = False) -> bytes:
    """The event as Spark (Jackson) writes it: compact, non-ASCII as UTF-8 unless `ascii_only`."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@st.composite
def task_end_lines_of(draw: st.DrawFn) -> bytes:
    """A TaskEnd line, sometimes cut short, run into the next, or ended by CRLF."""
    line = line_of(draw(task_end_events()), draw(st.booleans()))
    damage = draw(st.sampled_from(["none", "none", "none", "truncated", "run into", "crlf"]))
    cut = draw(st.integers(0, len(line)))
    if damage == "truncated":
        return line[:cut]
    if damage == "run into":
        return line[:cut] + line_of(draw(task_end_events()))
    return line + b"\r" if damage == "crlf" else line


def read_both(lines: list[bytes], where: str = "LOG") -> None:
    """Lines parsed in a block and one by one, fast and strict: the same tasks and the same problems."""
    block = bytearray(b"\n".join(lines))
    results = []
    for strict in (True, False):
        for by_block in (True, False):
            parser = EventParser(strict_json=strict)
            parser.begin(where)
            tasks = parser.parse_block(block, len(block)) if by_block else parser.parse(lines)
            results.append((tasks, parser.bad_lines, parser.task_end_lines, parser.problems))
    reference = results[0]
    for got in results[1:]:
        assert got == reference
        assert [_bits(t) for t in got[0]] == [_bits(t) for t in reference[0]]  # -0.0 and 0.0 apart


def _bits(task: SparkTask) -> tuple:
    """Every field with its type (a float's sign of zero included)."""
    return tuple((type(v), repr(v)) for v in (getattr(task, f) for f in task.__struct_fields__))


def test_the_fast_path_reads_spark_s_own_lines_as_the_whole_line_decoder() -> None:
    cut = _cut_decoder()
    assert cut is not None
    lines = task_end_lines()
    strict = EventParser(strict_json=True).parse(lines)
    fast = [cut(line, 0, len(line)) for line in lines]
    assert fast == strict and len(fast) == 85  # every one of them on the fast path, failed tasks included
    padded = bytearray(b"x\n" + lines[0] + b"\ny")
    assert cut(padded, 2, 2 + len(lines[0])) == strict[0]  # a line inside a block, found in place


@pytest.mark.parametrize("layout", ["plain", "rolling", "zstd", "lz4", "snappy"])
def test_every_fixture_layout_reads_the_same_fast_and_strict(layout: str) -> None:
    log = find_event_log(SPARK / layout)
    strict, fast = EventParser(strict_json=True), EventParser()
    expected = read_tasks(log, strict, worker=False)
    assert read_tasks(log, fast, worker=False) == expected and len(expected) == 85
    assert (fast.app, fast.executors, fast.bad_lines, fast.problems) == \
        (strict.app, strict.executors, strict.bad_lines, strict.problems)


def test_the_bench_log_reads_the_same_fast_and_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    from bench_spark import event_lines  # type: ignore[import-not-found]

    lines = [line.encode() for line in event_lines(3000)]
    assert sum(b'"SparkListenerTaskEnd"' in line for line in lines) == 3000
    cut = _cut_decoder()
    assert cut is not None and all(cut(line, 0, len(line)) for line in lines if line.startswith(
        b'{"Event":"SparkListenerTaskEnd"'))
    read_both(lines)


@QUICK
@given(st.lists(task_end_lines_of(), max_size=8))
@example([line_of(dict(SAMPLES[0], **{"Task End Reason": {
    "Reason": "ExceptionFailure", "Full Stack Trace": '"Task ID":9,"Accumulables":[{"Task Metrics":{}}]'}}))])
@example([task_end_lines()[1][:1200] + task_end_lines()[2]])  # cut in its accumulables, run into the next
@example([task_end_lines()[1][:-3] + b"}"])
def test_generated_task_end_lines_read_the_same_fast_and_strict(lines: list[bytes]) -> None:
    read_both(lines)


def _corrupt(line: bytes) -> bytes:
    """`line` with one byte of an accumulable (a field latencymap does not read) broken: not JSON any more."""
    at = line.index(b'"Internal":true') + len(b'"Internal":tr')
    return line[:at] + b"#" + line[at + 1:]


def _log_with_a_corrupt_line(tmp_path: Path, near_end: bool) -> tuple[Path, int]:
    """The plain fixture with one TaskEnd line corrupted in its accumulables; (log, that line's number)."""
    lines = PLAIN.read_bytes().splitlines()
    ends = [n for n, line in enumerate(lines) if line.startswith(b'{"Event":"SparkListenerTaskEnd"')]
    n = ends[-3] if near_end else ends[3]
    lines[n] = _corrupt(lines[n])
    return write_log(tmp_path / "local-1", lines), n + 1


def _cli(*args: str) -> dict[str, Any]:
    r = CliRunner().invoke(main, ["report", "--format", "json", "spark", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_strict_json_reports_a_corrupt_byte_outside_the_fields_read(tmp_path: Path) -> None:
    log, n = _log_with_a_corrupt_line(tmp_path, near_end=False)
    with pytest.raises(ValueError):
        json.loads(_corrupt(task_end_lines()[0]))
    strict = _cli(str(log), "--strict-json")
    fast = _cli(str(log))
    assert strict["errors"]["skipped_records"] == 1 and fast["errors"]["skipped_records"] == 0
    source = SparkSource(target=str(log), strict_json=True)
    told = [i.message for i in source.items() if not hasattr(i, "counts")]
    assert len(source.all_tasks) == 84 and len(told) == 1
    assert told[0].startswith(f"spark: 1 event-log lines could not be parsed: {log} line {n}: SparkListenerTaskEnd "
                              "not read (JSON is malformed: invalid character")
    read = SparkSource(target=str(log))
    assert not [i for i in read.items() if not hasattr(i, "counts")] and len(read.all_tasks) == 85


@pytest.mark.parametrize("strict", [True, False])
def test_the_worker_process_reads_with_the_parent_s_parser(tmp_path: Path, strict: bool) -> None:
    log, n = _log_with_a_corrupt_line(tmp_path, near_end=True)
    (_, theirs) = split([Span(log)])
    assert sum(len(line) + 1 for line in log.read_bytes().splitlines()[:n - 1]) > theirs[0].start
    alone, both = EventParser(strict_json=strict), EventParser(strict_json=strict)
    expected = read_tasks(find_event_log(log), alone, worker=False)
    assert read_tasks(find_event_log(log), both, worker=True) == expected  # a real worker reads the second half
    assert (both.bad_lines, both.problems) == (alone.bad_lines, alone.problems)
    assert len(expected) == (84 if strict else 85)
    assert [(where, line) for where, line, *_ in both.problems] == ([(str(log), n)] if strict else [])
