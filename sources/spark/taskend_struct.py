"""msgspec Structs of only the TaskEnd fields latencymap needs (imported when msgspec is installed).

`gc=False`: they hold only scalars and each other, never a cycle, so the cycle collector need not track
the millions decoded from a large log.
"""

from __future__ import annotations

import msgspec

f = msgspec.field

class Info(msgspec.Struct, kw_only=True, gc=False):
    task_id: int = f(name="Task ID")
    index: int = f(name="Index")
    attempt: int = f(name="Attempt")
    launch: int = f(name="Launch Time")
    finish: int = f(name="Finish Time")
    executor: str = f(name="Executor ID", default="")
    host: str = f(name="Host", default="")
    getting: int = f(name="Getting Result Time", default=0)
    failed: bool = f(name="Failed", default=False)
    killed: bool = f(name="Killed", default=False)
    speculative: bool = f(name="Speculative", default=False)

class ShuffleRead(msgspec.Struct, gc=False):
    fetch_wait: float | None = f(name="Fetch Wait Time", default=None)
    remote: float | None = f(name="Remote Bytes Read", default=None)
    local: float | None = f(name="Local Bytes Read", default=None)

class InputRead(msgspec.Struct, gc=False):
    read: float | None = f(name="Bytes Read", default=None)

class ShuffleWrite(msgspec.Struct, gc=False):
    write_time: float | None = f(name="Shuffle Write Time", default=None)

class Metrics(msgspec.Struct, gc=False):
    run: float | None = f(name="Executor Run Time", default=None)
    cpu: float | None = f(name="Executor CPU Time", default=None)
    gc: float | None = f(name="JVM GC Time", default=None)
    deserialize: float | None = f(name="Executor Deserialize Time", default=None)
    result_ser: float | None = f(name="Result Serialization Time", default=None)
    read: ShuffleRead | None = f(name="Shuffle Read Metrics", default=None)
    write: ShuffleWrite | None = f(name="Shuffle Write Metrics", default=None)
    input: InputRead | None = f(name="Input Metrics", default=None)

class Reason(msgspec.Struct, gc=False):
    reason: str = f(name="Reason", default="")

class TaskEnd(msgspec.Struct, kw_only=True, gc=False):
    stage: int = f(name="Stage ID")
    stage_attempt: int = f(name="Stage Attempt ID", default=0)
    info: Info = f(name="Task Info")
    metrics: Metrics | None = f(name="Task Metrics", default=None)
    end_reason: Reason | None = f(name="Task End Reason", default=None)


#: The metrics of a TaskEnd that has none.
NO_METRICS = Metrics()
