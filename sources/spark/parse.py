"""Fast event-log line parsing: only TaskEnd (a Struct of the needed fields), application and executor events."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from latencymap.core.lines import text_lines
from latencymap.core.sanitize import clean_text

from .blocks import Damage, Span, read_blocks

try:
    from msgspec import Struct
except ImportError:  # without the spark extra: a slotless dataclass stands in (same fields, same constructor)

    class Struct:  # type: ignore[no-redef]
        """Turns each subclass into a dataclass (what msgspec.Struct gives, slower to build)."""

        def __init_subclass__(cls, **_options: Any) -> None:
            dataclass(cls)

TASK_END = b'"SparkListenerTaskEnd"'
TASK_END_PREFIX = b'{"Event":"SparkListenerTaskEnd"'
TASK_START_PREFIX = b'{"Event":"SparkListenerTaskStart"'
APP_PREFIX = b'{"Event":"SparkListenerApplication'
EXECUTOR_PREFIX = b'{"Event":"SparkListenerExecutorAdded"'
EXECUTOR_REMOVED_PREFIX = b'{"Event":"SparkListenerExecutorRemoved"'
STAGE_END_PREFIX = b'{"Event":"SparkListenerStageCompleted"'
STAGE_START_PREFIX = b'{"Event":"SparkListenerStageSubmitted"'
JOB_PREFIX = b'{"Event":"SparkListenerJob'
#: How Spark opens every line (compact JSON, "Event" first): such a line is told by its prefix alone. A line in any
#: other layout (spaces after the colons, another key order) is decoded whole to find its event.
EVENT_PREFIX = b'{"Event":"'
#: The compact lines of the events read besides TaskEnd and TaskStart.
OTHER_PREFIXES = (APP_PREFIX, EXECUTOR_PREFIX, EXECUTOR_REMOVED_PREFIX, STAGE_END_PREFIX, STAGE_START_PREFIX,
                  JOB_PREFIX)
#: What each event read besides TaskEnd is called when one of its lines cannot be read.
OTHER_EVENTS = {
    "SparkListenerApplicationStart": "application event", "SparkListenerApplicationEnd": "application event",
    "SparkListenerExecutorAdded": "SparkListenerExecutorAdded",
    "SparkListenerExecutorRemoved": "SparkListenerExecutorRemoved",
    "SparkListenerStageSubmitted": "SparkListenerStageSubmitted",
    "SparkListenerStageCompleted": "SparkListenerStageCompleted", "SparkListenerTaskStart": "SparkListenerTaskStart",
    "SparkListenerJobStart": "SparkListenerJobStart", "SparkListenerJobEnd": "SparkListenerJobEnd",
}
TASK_ID = b'"Task ID":'
TASK_START = b'"SparkListenerTaskStart"'
#: Unreadable lines described (file and line) in the notice; the others are only counted.
TOLD_BAD_LINES = 3
#: What a bad line's decoder may raise (json, orjson, msgspec: ValueError subclasses; a field of the wrong kind).
LINE_ERRORS = (ValueError, KeyError, TypeError, AttributeError, RecursionError)


class SparkTask(Struct, gc=False, array_like=True):
    """One finished task attempt (a SparkListenerTaskEnd event); times in epoch ms, metrics as Spark logs them.

    A msgspec Struct (a dataclass without msgspec): building one costs a tenth of a slotted dataclass's
    `__init__`, `gc=False` keeps a whole log's tasks out of the cycle collector's work, and a worker process
    sends it as a msgpack array (`array_like`). Treat it as a value.
    """

    stage: int
    stage_attempt: int
    task_id: int
    index: int
    attempt: int
    launch_ms: int
    finish_ms: int
    executor: str
    host: str
    failed: bool = False
    killed: bool = False
    speculative: bool = False
    reason: str = "Success"
    getting_result_ms: int = 0
    run_ms: float | None = None
    cpu_ns: float | None = None
    gc_ms: float | None = None
    deserialize_ms: float | None = None
    result_serialize_ms: float | None = None
    fetch_wait_ms: float | None = None
    shuffle_write_ns: float | None = None
    #: Bytes the task read: its input (Input Metrics) and shuffle (remote and local), None when neither is logged.
    read_bytes: float | None = None

    @property
    def duration_ms(self) -> int:
        return self.finish_ms - self.launch_ms


@dataclass(slots=True)
class AppInfo:
    """What the application events say: identity, start, end."""

    app_id: str = ""
    name: str = ""
    start_ms: int | None = None
    end_ms: int | None = None

    @property
    def ended(self) -> bool:
        return self.end_ms is not None

    def update(self, event: dict[str, Any]) -> None:
        """Take in an ApplicationStart or ApplicationEnd event (a Timestamp that is no number counts as unknown)."""
        if event.get("Event") == "SparkListenerApplicationStart":
            self.app_id = str(event.get("App ID") or self.app_id)
            self.name = str(event.get("App Name") or self.name)
            self.start_ms = _millis(event.get("Timestamp")) or self.start_ms
        elif event.get("Event") == "SparkListenerApplicationEnd":
            self.end_ms = _millis(event.get("Timestamp")) or 0


@dataclass(slots=True)
class ExecutorInfo:
    """An executor as SparkListenerExecutorAdded gives it: when it was added and how many cores it has; when it was
    removed (SparkListenerExecutorRemoved; None: not said)."""

    executor: str
    added_ms: int | None = None
    cores: int | None = None
    removed_ms: int | None = None


@dataclass(slots=True)
class StageEnd:
    """How a stage attempt ended, as SparkListenerStageCompleted (or the REST API's status) says."""

    stage: int
    attempt: int
    #: Tasks the stage attempt had to run (None: not said).
    tasks: int | None = None
    #: Why it failed, one line; None when it completed.
    failure: str | None = None

    @property
    def completed(self) -> bool:
        return self.failure is None


@dataclass(slots=True)
class RunningTask:
    """A task attempt launched (SparkListenerTaskStart) with no end logged: still running when the log was read."""

    stage: int
    stage_attempt: int
    task_id: int
    index: int
    attempt: int
    launch_ms: int
    executor: str
    host: str
    speculative: bool = False


def running_from_event(e: dict[str, Any]) -> RunningTask:
    """A RunningTask from a decoded TaskStart event (KeyError/TypeError/ValueError when it is not one)."""
    i = e["Task Info"]
    return RunningTask(int(e["Stage ID"]), int(e.get("Stage Attempt ID") or 0), int(i["Task ID"]), int(i["Index"]),
                       int(i["Attempt"]), int(i["Launch Time"]), str(i.get("Executor ID") or ""),
                       str(i.get("Host") or ""), bool(i.get("Speculative")))


def stage_end_from_event(e: dict[str, Any]) -> StageEnd:
    """A StageEnd from a decoded StageCompleted event (KeyError/TypeError/ValueError when it is not one)."""
    info = e["Stage Info"]
    reason = info.get("Failure Reason")
    tasks = info.get("Number of Tasks")
    return StageEnd(int(info["Stage ID"]), int(info.get("Stage Attempt ID") or 0),
                    tasks if isinstance(tasks, int) and not isinstance(tasks, bool) else None,
                    failure_cause(str(reason)) if reason is not None else None)


#: An exception line at the end of a Python traceback: `module.Name: message` (or a bare `Name`).
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)(:.*)?$")


def failure_cause(text: str, limit: int = 300) -> str:
    """The line of a Spark failure message that says what went wrong: the exception a Python worker raised
    (`RuntimeError: boom`, module path dropped) when the message carries its traceback, else its first line."""
    lines = text_lines(text)
    marks = [k for k, line in enumerate(lines) if "Traceback (most recent call last):" in line]
    for line in lines[marks[-1] + 1:] if marks else ():
        if line.strip() and not line[0].isspace():
            m = _EXCEPTION_LINE.match(line.strip())
            cause = m.group(1) + (m.group(2) or "") if m else line.strip()
            return clean_text(cause, limit)
    first = next((line.strip() for line in lines if line.strip()), "")
    return clean_text(first, limit) or "(no reason given)"


def executor_from_event(e: dict[str, Any]) -> ExecutorInfo:
    """An ExecutorInfo from a decoded ExecutorAdded event (a missing or odd field is unknown)."""
    cores = (e.get("Executor Info") or {}).get("Total Cores")
    known = cores if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0 else None
    return ExecutorInfo(str(e.get("Executor ID") or ""), _millis(e.get("Timestamp")), known)


def take_executor_event(executors: dict[str, ExecutorInfo], event: dict[str, Any]) -> None:
    """Take a decoded ExecutorAdded or ExecutorRemoved event into `executors` (by id); a removal read before its
    executor's addition (an application read from the middle) makes an executor of unknown cores."""
    if event.get("Event") == "SparkListenerExecutorAdded":
        info = executor_from_event(event)
        if info.executor in executors:  # its removal was read first
            info.removed_ms = executors[info.executor].removed_ms
        executors[info.executor] = info
    elif event.get("Event") == "SparkListenerExecutorRemoved":
        name = str(event.get("Executor ID") or "")
        executors.setdefault(name, ExecutorInfo(name)).removed_ms = _millis(event.get("Timestamp"))


def _millis(value: Any) -> int | None:
    """An epoch-ms field as an int; None when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value)


@functools.cache
def _msgspec_decoder() -> Callable[[bytes | memoryview], SparkTask] | None:
    """A msgspec decoder of TaskEnd lines (bytes, or a view into a block) into SparkTask; None without msgspec."""
    try:
        import msgspec
    except ImportError:
        return None
    from .taskend_struct import NO_METRICS, TaskEnd

    decode = msgspec.json.Decoder(TaskEnd).decode

    def parse(line: bytes | memoryview) -> SparkTask:
        return task_of(decode(line), NO_METRICS)

    return parse


def task_of(e: Any, no_metrics: Any) -> SparkTask:
    """A SparkTask from a TaskEnd decoded into `taskend_struct`'s Structs (or Structs with the same fields);
    `no_metrics` stands for a TaskEnd without metrics (`taskend_struct.NO_METRICS`)."""
    i, m = e.info, e.metrics or no_metrics
    read, write, given = m.read, m.write, m.input
    return SparkTask(
        e.stage, e.stage_attempt, i.task_id, i.index, i.attempt, i.launch, i.finish, i.executor, i.host,
        i.failed, i.killed, i.speculative, e.end_reason.reason if e.end_reason else "", i.getting,
        m.run, m.cpu, m.gc, m.deserialize, m.result_ser,
        read.fetch_wait if read else None, write.write_time if write else None,
        bytes_read(given.read if given else None, read.remote if read else None, read.local if read else None),
    )


def bytes_read(*parts: float | None) -> float | None:
    """The bytes a task read (its input and shuffle reads): the sum of those logged, None when none is."""
    known = [p for p in parts if isinstance(p, int | float) and not isinstance(p, bool) and math.isfinite(p)]
    return float(sum(known)) if known else None


def task_from_event(e: dict[str, Any]) -> SparkTask:
    """A SparkTask from a decoded TaskEnd event (the json/orjson fallback and the Spark engine use it)."""
    i = e["Task Info"]
    m = e.get("Task Metrics") or {}
    read = m.get("Shuffle Read Metrics") or {}
    write = m.get("Shuffle Write Metrics") or {}
    given = m.get("Input Metrics") or {}
    return SparkTask(
        int(e["Stage ID"]), int(e.get("Stage Attempt ID") or 0), int(i["Task ID"]), int(i["Index"]),
        int(i["Attempt"]), int(i["Launch Time"]), int(i["Finish Time"]), str(i.get("Executor ID") or ""),
        str(i.get("Host") or ""), bool(i.get("Failed")), bool(i.get("Killed")), bool(i.get("Speculative")),
        str((e.get("Task End Reason") or {}).get("Reason") or ""), int(i.get("Getting Result Time") or 0),
        m.get("Executor Run Time"), m.get("Executor CPU Time"), m.get("JVM GC Time"),
        m.get("Executor Deserialize Time"), m.get("Result Serialization Time"),
        read.get("Fetch Wait Time"), write.get("Shuffle Write Time"),
        bytes_read(given.get("Bytes Read"), read.get("Remote Bytes Read"), read.get("Local Bytes Read")),
    )


@functools.cache
def _json_loads() -> Callable[[bytes], Any]:
    """orjson.loads when installed, else json.loads."""
    try:
        import orjson

        return orjson.loads
    except ImportError:
        return json.loads


def task_parser(prefer: str = "msgspec") -> Callable[[bytes], SparkTask]:
    """The fastest available TaskEnd line parser ("msgspec", else orjson/json)."""
    fast = _msgspec_decoder() if prefer == "msgspec" else None
    if fast is not None:
        return fast
    loads = _json_loads()
    return lambda line: task_from_event(loads(line))


class EventParser:
    """Turns complete event-log lines into SparkTasks, keeping the application's identity and end.

    It counts the lines it is given (`begin` starts a file): an unreadable line is counted in `bad_lines`, and
    the first TOLD_BAD_LINES are described in `problems` with their file and line number.
    """

    def __init__(self, prefer: str = "msgspec") -> None:
        self.app = AppInfo()
        self.executors: dict[str, ExecutorInfo] = {}
        #: How each stage attempt ended (StageCompleted events), by (stage, attempt).
        self.stage_ends: dict[tuple[int, int], StageEnd] = {}
        #: Each stage's name (StageSubmitted, StageCompleted), as the log gives it.
        self.stage_names: dict[int, str] = {}
        #: The TaskStart lines of the tasks whose TaskEnd has not been read, by task id (decoded by `running`). Block
        #: reading (`parse_block`) only counts them: `find_running` finds those of a log where fewer tasks ended.
        self.started: dict[int, bytes] = {}
        self.task_start_lines = 0
        self.task_end_lines = 0
        self.bad_lines = 0
        #: The first TOLD_BAD_LINES unreadable lines: (file, line number, what, why).
        self.problems: list[tuple[str, int, str, str]] = []
        #: The stretches of compressed files skipped as they could not be decoded (what they held is lost).
        self.damage: list[Damage] = []
        #: Each job's [submission, completion] (JobStart, JobEnd; epoch ms, None where not logged), by job id.
        self.jobs: dict[int, list[int | None]] = {}
        #: The file where each stage was submitted (StageSubmitted), by stage id.
        self.stage_files: dict[int, str] = {}
        #: When a list: every application and executor line read, as (file, line number, line), for a parent.
        self.kept: list[tuple[str, int, bytes]] | None = None
        self.where = "event log"
        self.line_no = 0
        fast = _msgspec_decoder() if prefer == "msgspec" else None
        self._parse_task: Callable[[Any], SparkTask] = fast or task_parser(prefer)
        self._takes_views = fast is not None

    def parse_task(self, line: bytes) -> SparkTask:
        """One TaskEnd line as a SparkTask (one of LINE_ERRORS when it cannot be read)."""
        return self._parse_task(line)

    def begin(self, where: str) -> None:
        """Lines from now on are those of `where` (a file), counted from 1."""
        self.where, self.line_no = where, 0

    def bad(self, line_no: int, what: str, err: BaseException) -> None:
        """Count an unreadable line; describe it while fewer than TOLD_BAD_LINES have been."""
        self.bad_lines += 1
        if len(self.problems) < TOLD_BAD_LINES:
            reason = str(err).splitlines()[0] if str(err).strip() else type(err).__name__
            self.problems.append((self.where, line_no, what, reason))

    def told(self) -> list[str]:
        """The described problems as text: `FILE line N: WHAT not read (WHY)`."""
        return [f"{clean_text(where, 200)} line {n}: {what} not read ({clean_text(why, 160)})"
                for where, n, what, why in self.problems]

    def parse(self, lines: Iterable[bytes]) -> list[SparkTask]:
        """SparkTasks of the TaskEnd lines among `lines`; application events update `app`."""
        tasks: list[SparkTask] = []
        parse_task, append, ended = self._parse_task, tasks.append, self.started.pop
        for line in lines:
            self.line_no += 1
            if line.startswith(TASK_END_PREFIX) or (not line.startswith(EVENT_PREFIX) and TASK_END in line):
                self.task_end_lines += 1
                try:
                    task = parse_task(line)
                except LINE_ERRORS as err:
                    self.bad(self.line_no, "SparkListenerTaskEnd", err)
                    continue
                ended(task.task_id, None)
                append(task)
            elif line.startswith(TASK_START_PREFIX):
                self.start(line)
            else:
                self.other(line, self.line_no)
        return tasks

    def parse_block(self, block: bytes | bytearray, end: int) -> list[SparkTask]:
        """`parse` of the lines of `block[:end]` (the last one may lack its newline), found in place: TaskEnd
        lines are decoded from views into the block, TaskStart lines only counted (see `started`)."""
        tasks: list[SparkTask] = []
        parse_task, append = self._parse_task, tasks.append
        find, starts = block.find, block.startswith
        line_no, pos, ends, begun = self.line_no, 0, 0, 0
        with memoryview(block) as view:
            source = view if self._takes_views else block
            while pos < end:
                stop = find(b"\n", pos, end)
                if stop < 0:
                    stop = end
                line_no += 1
                if starts(TASK_END_PREFIX, pos):
                    task_end = True
                elif starts(TASK_START_PREFIX, pos):
                    task_end = False
                    begun += 1
                elif starts(EVENT_PREFIX, pos):
                    task_end = False
                    if starts(OTHER_PREFIXES, pos):
                        self.other(bytes(view[pos:stop]), line_no)
                else:
                    task_end = find(TASK_END, pos, stop) >= 0
                    if not task_end:
                        self.other(bytes(view[pos:stop]), line_no)
                if task_end:
                    ends += 1
                    try:
                        append(parse_task(source[pos:stop]))
                    except LINE_ERRORS as err:
                        self.bad(line_no, "SparkListenerTaskEnd", err)
                pos = stop + 1
        self.line_no, self.task_end_lines = line_no, self.task_end_lines + ends
        self.task_start_lines += begun
        return tasks

    def find_running(self, spans: Iterable[Span], ended: set[int]) -> None:
        """`started`: the TaskStart lines of `spans` (a whole log read by `parse_block`) whose task is not in `ended`
        (the ids of its tasks read); a second reading, for a log in which fewer tasks ended than started."""
        self.started = {}
        for _span, block, end in read_blocks(spans, damage=[]):  # (the damage was told by the first reading)
            find = block.find
            at = find(TASK_START, 0, end)
            while at >= 0:
                pos, stop = block.rfind(b"\n", 0, at) + 1, find(b"\n", at, end)
                stop = end if stop < 0 else stop
                line = bytes(block[pos:stop])
                try:
                    event = _json_loads()(line)
                    task = running_from_event(event) if event.get("Event") == "SparkListenerTaskStart" else None
                except LINE_ERRORS:
                    task = None  # counted as unreadable in the first reading
                if task is not None and task.task_id not in ended:
                    self.started[task.task_id] = line
                at = find(TASK_START, stop, end)

    def read_spans(self, spans: Iterable[Span]) -> list[SparkTask]:
        """The tasks of the lines of `spans` (see `iter_spans`)."""
        return [t for tasks in self.iter_spans(spans) for t in tasks]

    def iter_spans(self, spans: Iterable[Span]) -> Iterator[list[SparkTask]]:
        """The tasks of the lines of `spans`, block after block; lines are counted per file (a span that starts
        inside a file not read so far counts from its own first line: a parent adds the lines before it)."""
        current = None
        for span, block, end in read_blocks(spans, damage=self.damage):
            if span.path != current:
                if span.start == 0 or current is not None:
                    self.begin(str(span.path))
                else:
                    self.where = str(span.path)
                current = span.path
            yield self.parse_block(block, end)

    def start(self, line: bytes) -> None:
        """A TaskStart line as Spark writes it: kept by its task id until the task's end is read."""
        self.task_start_lines += 1
        try:
            self.started[running_from_event(_json_loads()(line)).task_id] = line
        except LINE_ERRORS:  # not counted, as block reading does not decode Spark's TaskStart lines
            return

    def running(self) -> list[RunningTask]:
        """The tasks launched whose end has not been read (their TaskStart lines decoded now), by task id."""
        out = []
        for task_id in sorted(self.started):
            try:
                out.append(running_from_event(_json_loads()(self.started[task_id])))
            except LINE_ERRORS:  # read once already: `start`, or the compact prefix and its id
                continue
        return out

    def other(self, line: bytes, line_no: int) -> str | None:
        """Application, executor and stage events, and in another layout than Spark's also TaskStart (any other
        line is not read); the event read, None when none was."""
        if line.startswith(EVENT_PREFIX) and not line.startswith(OTHER_PREFIXES):
            return None
        try:
            event = _json_loads()(line)
            name = event.get("Event") if isinstance(event, dict) else None
        except LINE_ERRORS as err:
            what = next((w for n, w in OTHER_EVENTS.items() if n.encode() in line), None)
            if what is not None:
                self.bad(line_no, what, err)
            elif line.strip():
                self.bad(line_no, "non-JSON line", err)
            return None
        if not isinstance(name, str) or name not in OTHER_EVENTS:
            return None
        try:
            self._take(name, event, line)
        except LINE_ERRORS as err:
            self.bad(line_no, OTHER_EVENTS[name], err)
            return None
        if self.kept is not None and name != "SparkListenerTaskStart":
            self.kept.append((self.where, line_no, line))
        return str(name)

    def _take(self, name: str, event: dict[str, Any], line: bytes) -> None:
        """Take in a decoded event of OTHER_EVENTS (one of LINE_ERRORS when its fields are not what Spark writes)."""
        if name.startswith("SparkListenerApplication"):
            self.app.update(event)
        elif name.startswith("SparkListenerExecutor"):
            take_executor_event(self.executors, event)
        elif name == "SparkListenerTaskStart":
            self.task_start_lines += 1
            self.started[running_from_event(event).task_id] = line
        elif name.startswith("SparkListenerJob"):
            job = self.jobs.setdefault(int(event["Job ID"]), [None, None])
            start = name == "SparkListenerJobStart"
            job[0 if start else 1] = _millis(event.get("Submission Time" if start else "Completion Time"))
        else:
            stage = event["Stage Info"]
            if name == "SparkListenerStageSubmitted":
                self.stage_files.setdefault(int(stage["Stage ID"]), self.where)
            if stage.get("Stage Name") is not None:
                self.stage_names[int(stage["Stage ID"])] = str(stage["Stage Name"])
            if name == "SparkListenerStageCompleted":
                end = stage_end_from_event(event)
                self.stage_ends[(end.stage, end.attempt)] = end
