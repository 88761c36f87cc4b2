"""The event-log line parser on the real fixture log rewritten in other JSON layouts, and its tasks still running."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from spark_support import PLAIN, current, notices, write_log

from latencymap.cli.main import main
from latencymap.sources.spark import engine
from latencymap.sources.spark.eventlog import find_event_log
from latencymap.sources.spark.ingest import read_tasks
from latencymap.sources.spark.parse import EventParser, failure_cause


def relaid(path: Path, how: str) -> list[bytes]:
    """The fixture's events in another valid JSON layout: Python's `json.dumps` (a space after each colon and
    comma), keys in reverse order, or pretty-printed within the line (blanks around every token)."""
    out = []
    for line in PLAIN.read_text().splitlines():
        e = json.loads(line)
        if how == "dumps":
            out.append(json.dumps(e))
        elif how == "reordered":
            out.append(json.dumps(dict(reversed(list(e.items()))), separators=(",", ":")))
        else:
            out.append(" " + json.dumps(e, indent=1).replace("\n", " ") + " ")
    return [line.encode() for line in out]


def reading(path: Path, **options: object) -> tuple[list, dict, list[str]]:
    """What the source read: (tasks, analysis, notice texts)."""
    source, items = current(path, **options)
    return source.all_tasks, source.analysis(), notices(items)


@pytest.mark.parametrize("how", ["dumps", "reordered", "spaced"])
def test_every_json_layout_reads_as_spark_writes_it(tmp_path: Path, how: str) -> None:
    log = write_log(tmp_path / PLAIN.name, relaid(PLAIN, how))
    tasks, analysis, notes = reading(PLAIN)
    assert len(tasks) == sum(b'"SparkListenerTaskEnd"' in line for line in PLAIN.read_bytes().splitlines()) == 85
    assert reading(log) == (tasks, analysis, notes)


def test_other_layouts_read_the_same_in_a_worker_and_by_lines(tmp_path: Path) -> None:
    lines = relaid(PLAIN, "dumps")
    log = write_log(tmp_path / PLAIN.name, lines)
    whole = EventParser()
    expected = read_tasks(find_event_log(PLAIN), whole, worker=False)
    split, by_lines = EventParser(), EventParser()
    assert read_tasks(find_event_log(log), split, worker=True) == expected
    assert by_lines.parse(lines) == expected
    for parser in (split, by_lines):
        assert (parser.app, parser.executors, parser.stage_ends, parser.stage_names) == \
            (whole.app, whole.executors, whole.stage_ends, whole.stage_names)
        assert parser.started == {} and parser.bad_lines == 0


def test_other_layouts_go_to_the_spark_engine(tmp_path: Path) -> None:
    """`--engine spark` hands Spark's JSON reader the same events from a log in another layout."""
    data = b"\n".join(relaid(PLAIN, "dumps"))
    kept = engine._log_lines((str(tmp_path / "x"), data), {})
    assert [json.loads(line)["Event"] for line in kept[:-1]] == [
        json.loads(line)["Event"] for line in engine._log_lines((str(PLAIN), PLAIN.read_bytes()), {})[:-1]]
    assert len(kept) > 85


def test_a_dumped_log_under_strict_reports_its_tasks(tmp_path: Path) -> None:
    """The finding: `report --strict spark LOG` of a json.dumps log said "No data." and exited 0."""
    log = write_log(tmp_path / PLAIN.name, relaid(PLAIN, "dumps"))
    done = CliRunner().invoke(main, ["report", "--format", "json", "--strict", "spark", str(log)])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert [s["total"]["events"] for s in report["streams"]] == [85]
    assert len(report["source"]["stages"]) == 5 and report["source"]["stragglers"]


def test_tasks_launched_and_not_ended_are_running(tmp_path: Path) -> None:
    """TaskStarts whose TaskEnd is not in the log (cut in the middle of a straggler's TaskEnd): those tasks are
    running, in any layout and in a worker's part."""
    lines = PLAIN.read_bytes().splitlines()
    cut = next(k for k, line in enumerate(lines) if b'"SparkListenerTaskEnd"' in line and b'"Task ID":9,' in line)
    events = [json.loads(line) for line in lines[:cut]]
    ids = {e["Task Info"]["Task ID"]: e["Event"] for e in events if e["Event"].startswith("SparkListenerTask")}
    expected = sorted(i for i, what in ids.items() if what == "SparkListenerTaskStart")
    assert 9 in expected
    for layout in (lines, relaid(PLAIN, "dumps")):
        log = write_log(tmp_path / "cut", [*layout[:cut], layout[cut][:200]])
        for worker in (False, True):
            parser = EventParser()
            tasks = read_tasks(find_event_log(log), parser, worker=worker)
            assert [r.task_id for r in parser.running()] == expected
            assert len(tasks) == sum(what == "SparkListenerTaskEnd" for what in ids.values())


def test_a_shuffled_order_of_keys_in_a_few_lines(tmp_path: Path) -> None:
    """Lines of mixed layouts in one log (a tool rewrote some of them)."""
    rng = random.Random(7)
    mixed = [line if rng.random() < 0.5 else dumped for line, dumped in
             zip(PLAIN.read_bytes().splitlines(), relaid(PLAIN, "reordered"), strict=True)]
    log = write_log(tmp_path / PLAIN.name, mixed)
    assert reading(log) == reading(PLAIN)


def test_a_failure_message_is_cut_into_lines_at_newlines_only() -> None:
    """A Python worker's exception whose message held U+2028 (or `\\f`, ...) was cut there by `str.splitlines`."""
    for odd in "\f\v\x1c\x1d\x1e\x85\u2028\u2029":
        text = (f"Job aborted.\nTraceback (most recent call last):\n  File \"job.py\", line 3, in f\n"
                f"    raise RuntimeError('bad{odd}name')\nbuiltins.RuntimeError: bad{odd}name\n\tat org.apache.x\n")
        assert failure_cause(text) == "RuntimeError: bad?name", odd
        assert failure_cause(f"lost{odd}executor 3\nmore") == "lost?executor 3", odd


#: A real executor's lines (local-cluster[2,2,1024], its JVM SIGKILLed by a task; the added line's Log Urls and
#: Resources left out), as Spark wrote them.
ADDED = (b'{"Event":"SparkListenerExecutorAdded","Timestamp":1795878642734,"Executor ID":"1","Executor Info":'
         b'{"Host":"192.0.2.2","Total Cores":2}}')
REMOVED = (b'{"Event":"SparkListenerExecutorRemoved","Timestamp":1795878666611,"Executor ID":"1",'
           b'"Removed Reason":"Command exited with code 137"}')


@pytest.mark.parametrize("order", ["added first", "removed first"])
def test_an_executor_removed_says_when_by_lines_in_a_worker_and_in_blocks(tmp_path: Path, order: str) -> None:
    """An application read from the middle (a rolling log's later part) may give an executor's removal only, or
    before its addition: its cores and both times are kept."""
    lines = [ADDED, REMOVED] if order == "added first" else [REMOVED, ADDED]
    log = write_log(tmp_path / "app-1", [*PLAIN.read_bytes().splitlines()[:3], *lines])
    for worker in (False, True):
        parser = EventParser()
        read_tasks(find_event_log(log), parser, worker=worker)
        info = parser.executors["1"]
        assert (info.added_ms, info.cores, info.removed_ms) == (1795878642734, 2, 1795878666611), worker
    alone = EventParser()
    alone.parse([REMOVED])
    assert (alone.executors["1"].cores, alone.executors["1"].removed_ms) == (None, 1795878666611)
