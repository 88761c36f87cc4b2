"""Fast event-log line parsing: only TaskEnd (a Struct of the needed fields), application and executor events."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

TASK_END = b'"SparkListenerTaskEnd"'
TASK_END_PREFIX = b'{"Event":"SparkListenerTaskEnd"'
APP_PREFIX = b'{"Event":"SparkListenerApplication'
EXECUTOR_PREFIX = b'{"Event":"SparkListenerExecutorAdded"'
EVENT_PREFIX = b'{"Event":'


@dataclass(slots=True)
class SparkTask:
    """One finished task attempt (a SparkListenerTaskEnd event); times in epoch ms, metrics as Spark logs them.

    Not frozen: a frozen dataclass's `__init__` sets each field through `object.__setattr__`, which made
    building one cost as much as decoding its 3.6 KB line. Treat it as a value all the same.
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
    """An executor as SparkListenerExecutorAdded gives it: when it was added and how many cores it has."""

    executor: str
    added_ms: int | None = None
    cores: int | None = None


def executor_from_event(e: dict[str, Any]) -> ExecutorInfo:
    """An ExecutorInfo from a decoded ExecutorAdded event (a missing or odd field is unknown)."""
    cores = (e.get("Executor Info") or {}).get("Total Cores")
    known = cores if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0 else None
    return ExecutorInfo(str(e.get("Executor ID") or ""), _millis(e.get("Timestamp")), known)


def _millis(value: Any) -> int | None:
    """An epoch-ms field as an int; None when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value)


@functools.cache
def _msgspec_decoder() -> Callable[[bytes], SparkTask] | None:
    """A msgspec decoder of TaskEnd lines into SparkTask; None when msgspec is missing."""
    try:
        import msgspec
    except ImportError:
        return None
    from .taskend_struct import Metrics, TaskEnd

    decode = msgspec.json.Decoder(TaskEnd).decode
    empty = Metrics()

    def parse(line: bytes) -> SparkTask:
        e = decode(line)
        i, m = e.info, e.metrics or empty
        return SparkTask(
            e.stage, e.stage_attempt, i.task_id, i.index, i.attempt, i.launch, i.finish, i.executor, i.host,
            i.failed, i.killed, i.speculative, e.end_reason.reason if e.end_reason else "", i.getting,
            m.run, m.cpu, m.gc, m.deserialize, m.result_ser,
            m.read.fetch_wait if m.read else None, m.write.write_time if m.write else None,
        )

    return parse


def task_from_event(e: dict[str, Any]) -> SparkTask:
    """A SparkTask from a decoded TaskEnd event (the json/orjson fallback and the Spark engine use it)."""
    i = e["Task Info"]
    m = e.get("Task Metrics") or {}
    read = m.get("Shuffle Read Metrics") or {}
    write = m.get("Shuffle Write Metrics") or {}
    return SparkTask(
        int(e["Stage ID"]), int(e.get("Stage Attempt ID") or 0), int(i["Task ID"]), int(i["Index"]),
        int(i["Attempt"]), int(i["Launch Time"]), int(i["Finish Time"]), str(i.get("Executor ID") or ""),
        str(i.get("Host") or ""), bool(i.get("Failed")), bool(i.get("Killed")), bool(i.get("Speculative")),
        str((e.get("Task End Reason") or {}).get("Reason") or ""), int(i.get("Getting Result Time") or 0),
        m.get("Executor Run Time"), m.get("Executor CPU Time"), m.get("JVM GC Time"),
        m.get("Executor Deserialize Time"), m.get("Result Serialization Time"),
        read.get("Fetch Wait Time"), write.get("Shuffle Write Time"),
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
    """Turns complete event-log lines into SparkTasks, keeping the application's identity and end."""

    def __init__(self, prefer: str = "msgspec") -> None:
        self.app = AppInfo()
        self.executors: dict[str, ExecutorInfo] = {}
        self.task_end_lines = 0
        self.bad_lines = 0
        self._parse_task = task_parser(prefer)

    def parse(self, lines: Iterable[bytes]) -> list[SparkTask]:
        """SparkTasks of the TaskEnd lines among `lines`; application events update `app`."""
        tasks: list[SparkTask] = []
        parse_task, append = self._parse_task, tasks.append
        for line in lines:
            if line.startswith(TASK_END_PREFIX) or (not line.startswith(EVENT_PREFIX) and TASK_END in line):
                self.task_end_lines += 1
                try:
                    append(parse_task(line))
                except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                    self.bad_lines += 1
            elif line.startswith(APP_PREFIX):
                try:
                    self.app.update(_json_loads()(line))
                except (ValueError, AttributeError, RecursionError):
                    self.bad_lines += 1
            elif line.startswith(EXECUTOR_PREFIX):
                try:
                    info = executor_from_event(_json_loads()(line))
                except (ValueError, AttributeError, RecursionError):
                    self.bad_lines += 1
                else:
                    self.executors[info.executor] = info
        return tasks
