"""`--engine spark`: the same histograms and straggler lists computed by PySpark as a distributed job."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import subprocess
import urllib.parse
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval, Notice
from latencymap.core.sanitize import StreamNames
from latencymap.plugins import SourceError, process_end

from .binning import (
    MAX_FINISH_MS,
    MAX_VALUE_MS,
    Columns,
    Streams,
    auto_interval_ms,
    intervals_from_cells,
    merge_in_time,
    metricless_reason,
    metrics_note,
    plausible,
    stream_for,
)
from .codecs import CodecError, codec_of, make_decoder
from .eventlog import EventLog
from .parse import (
    EVENT_PREFIX,
    LINE_ERRORS,
    TASK_END,
    TASK_END_PREFIX,
    TASK_START_PREFIX,
    TOLD_BAD_LINES,
    AppInfo,
    EventParser,
    ExecutorInfo,
    RunningTask,
    SparkTask,
    StageEnd,
    failure_cause,
    running_from_event,
    take_executor_event,
    task_from_event,
)
from .summary import (
    cold_tasks,
    explain_stragglers,
    find_task_stragglers,
    running_stragglers,
    stage_cores,
    stage_summary,
)

#: Modules whose functions run on executors, shipped by value. Not `parse`: its SparkTask is a msgspec Struct, which
#: cloudpickle cannot rebuild by value (its fields are lost), so executors import it (they import latencymap for
#: the straggler analysis already).
SHIPPED = ("codecs", "summary", "engine")

#: Spark SQL expression of each metric in ms (the same definitions as binning.METRICS).
METRIC_SQL = {
    "duration": "CAST(ti.`Finish Time` - ti.`Launch Time` AS DOUBLE)",
    "run": "CAST(tm.`Executor Run Time` AS DOUBLE)",
    "cpu": "tm.`Executor CPU Time` / 1e6",
    "gc": "CAST(tm.`JVM GC Time` AS DOUBLE)",
    "deserialize": "CAST(tm.`Executor Deserialize Time` AS DOUBLE)",
    "fetch-wait": "CAST(tm.`Shuffle Read Metrics`.`Fetch Wait Time` AS DOUBLE)",
    "shuffle-write": "tm.`Shuffle Write Metrics`.`Shuffle Write Time` / 1e6",
    "scheduler-delay": (
        "CAST(greatest(0, ti.`Finish Time` - ti.`Launch Time` - tm.`Executor Run Time`"
        " - tm.`Executor Deserialize Time` - coalesce(tm.`Result Serialization Time`, 0)"
        " - IF(ti.`Getting Result Time` > 0, ti.`Finish Time` - ti.`Getting Result Time`, 0)) AS DOUBLE)"
    ),
}

SCHEMA_DDL = (
    "Event STRING, `App Name` STRING, `App ID` STRING, `Stage ID` BIGINT, `Stage Attempt ID` BIGINT, "
    "Timestamp BIGINT, `Executor ID` STRING, `Executor Info` STRUCT<`Total Cores`: BIGINT>, "
    "`Task End Reason` STRUCT<Reason: STRING>, "
    "`Task Info` STRUCT<`Task ID`: BIGINT, `Index`: BIGINT, `Attempt`: BIGINT, `Launch Time`: BIGINT, "
    "`Finish Time`: BIGINT, `Getting Result Time`: BIGINT, `Executor ID`: STRING, `Host`: STRING, "
    "`Failed`: BOOLEAN, `Killed`: BOOLEAN, `Speculative`: BOOLEAN>, "
    "`Task Metrics` STRUCT<`Executor Run Time`: BIGINT, `Executor CPU Time`: BIGINT, `JVM GC Time`: BIGINT, "
    "`Executor Deserialize Time`: BIGINT, `Result Serialization Time`: BIGINT, "
    "`Shuffle Read Metrics`: STRUCT<`Fetch Wait Time`: BIGINT, `Remote Bytes Read`: BIGINT, "
    "`Local Bytes Read`: BIGINT>, "
    "`Shuffle Write Metrics`: STRUCT<`Shuffle Write Time`: BIGINT>, `Input Metrics`: STRUCT<`Bytes Read`: BIGINT>>, "
    "latencymap STRING"
)
#: The events besides TaskEnd that `_log_lines` hands Spark's JSON reader (the application's and executors').
READ_BY_SPARK = frozenset({"SparkListenerApplicationStart", "SparkListenerApplicationEnd", "SparkListenerExecutorAdded",
                           "SparkListenerExecutorRemoved"})
#: The line `_log_lines` adds for each file: what it held besides the lines Spark reads (its `latencymap` field).
READ_EVENT = "latencymap.FileRead"


@dataclass
class EngineResult:
    """What the Spark job found: intervals, analysis and application; the stages that have tasks; the lines the
    local reader would have skipped (count and where the first are) and tasks with a Finish Time never mapped; the
    stream of each stream key."""

    intervals: list[Interval]
    analysis: dict[str, Any]
    app: AppInfo
    stages: set[int] = field(default_factory=set)
    bad_lines: int = 0
    problems: list[str] = field(default_factory=list)
    implausible: int = 0
    streams: Streams = field(default_factory=dict)
    #: Each job's [submission, completion] (epoch ms), by job id; the log's last time (`last_time_ms`).
    jobs: dict[int, list[int | None]] = field(default_factory=dict)
    last_ms: int | None = None
    #: The note of the attempts the map leaves out for want of Task Metrics (`binning.without_metrics`), if any.
    metricless: Notice | None = None


def slot_of_value(value: float | None) -> int | None:
    """The log2 slot `bin_values` gives one value (None: dropped, like negative or non-finite values)."""
    if value is None or not math.isfinite(value) or value < 0:
        return None
    if value < 1.0:
        return 0
    return min(math.frexp(value)[1], NSLOTS - 1)


def _log_lines(item: tuple[str, bytes], names: dict[str, str]) -> list[str]:
    """The TaskEnd, application and executor (added, removed) lines of one event-log file that the local reader reads
    (runs on the executors), then a READ_EVENT line: the lines it could not read (named as it names them: `names` maps
    the file's path to the name the user gave), how its stage attempts ended, and a decoding error."""
    path, data = item
    where = names.get(urllib.parse.unquote(urllib.parse.urlparse(path).path), path)
    parser = EventParser()
    parser.begin(where)
    try:
        text = make_decoder(codec_of(where)).feed(bytes(data))  # a cut last block is left out, as locally
    except CodecError as err:
        return [_read_event(where, parser, str(err))]
    out = []
    for n, line in enumerate(text.split(b"\n"), 1):
        if line.startswith(TASK_END_PREFIX) or (not line.startswith(EVENT_PREFIX) and TASK_END in line):
            try:
                parser.started.pop(parser.parse_task(line).task_id, None)
            except LINE_ERRORS as err:
                parser.bad(n, "SparkListenerTaskEnd", err)
                continue
        elif line.startswith(TASK_START_PREFIX):
            parser.start(line)  # said in READ_EVENT while its task has no end in this file
            continue
        elif parser.other(line, n) not in READ_BY_SPARK:  # a stage's end or start is said in READ_EVENT
            continue
        out.append(line.decode("utf-8", "replace"))
    return [*out, _read_event(where, parser)]


def _read_event(where: str, parser: EventParser, error: str | None = None) -> str:
    """The READ_EVENT line of a file."""
    ends = [[e.stage, e.attempt, e.tasks, e.failure] for e in parser.stage_ends.values()]
    app = parser.app
    said = {"file": where, "bad": parser.bad_lines, "problems": parser.problems, "ends": ends,
            "names": [[stage, name] for stage, name in parser.stage_names.items()],
            "started": [line.decode("utf-8", "replace") for line in parser.started.values()],
            "app": [app.app_id, app.name, app.start_ms, app.end_ms], "error": error,
            "jobs": [[job, start, end] for job, (start, end) in parser.jobs.items()]}
    return json.dumps({"Event": READ_EVENT, "latencymap": json.dumps(said)})


def _task_of_row(row: Any) -> SparkTask:
    return task_from_event(row.asDict(recursive=True))


def _group_stragglers(members: Any, cold: set[int], cores: dict[tuple[int, int], int], running: list[RunningTask],
                      options: dict[str, Any]) -> list[dict[str, Any]]:
    return find_task_stragglers(list(members), cold, cores, running, include_warmup=True, **options)


def _group_summary(key: tuple[int, int], members: Any, cores: dict[tuple[int, int], int],
                   ends: dict[tuple[int, int], StageEnd], cold: set[int], slow: set[int], names: dict[int, str],
                   running: list[RunningTask] | None, now_ms: int | None,
                   executors: dict[str, ExecutorInfo]) -> dict[str, Any]:
    return stage_summary(key[0], key[1], list(members), cores.get(key), ends, cold, slow, names.get(key[0]), running,
                         now_ms, executors)


def _running(read: _Read, every_task: Any, task_events: Any, stages: frozenset[int] | None
             ) -> tuple[list[RunningTask], int | None]:
    """The tasks of the kept stages launched with no end in the log (none once the application ended), and the
    log's last time (`last_time_ms`), as the local reader finds them."""
    from pyspark.sql import functions as F

    starts: dict[int, RunningTask] = {}
    for line in read.started:
        r = running_from_event(json.loads(line))
        starts[r.task_id] = r
    wanted = set(starts)  # their end may be in a later file
    ended = set(every_task.filter(lambda t: t.task_id in wanted).map(lambda t: t.task_id).collect() if wanted else ())
    kept = [] if read.app.ended else [r for i, r in sorted(starts.items()) if i not in ended and
                                      (stages is None or r.stage in stages)]
    last = task_events.agg(F.max("`Task Info`.`Finish Time`")).first()[0]
    return kept, max(([int(last)] if last is not None else []) + [r.launch_ms for r in kept], default=None)


def _executor_cold(members: Any, executors: dict[str, ExecutorInfo]) -> list[int]:
    return sorted(cold_tasks(list(members), executors))


def ship_by_value() -> None:
    """Pickle this package's executor-side code by value (workers may not see `latencymap.sources`)."""
    import importlib

    from pyspark import cloudpickle

    for name in SHIPPED:
        cloudpickle.register_pickle_by_value(importlib.import_module(f"{__package__}.{name}"))


#: Where the JVM this process started writes its stdout and stderr (and so do its Python workers); None: none.
jvm_log: str | None = None


def spark_session(master: str | None = None) -> Any:
    """The active SparkSession, or a local one (`local[2]`) when there is none; workers run this Python.

    A JVM started here writes to a log file, not to our stdout/stderr: its log4j warnings and the tracebacks
    of workers cut short (pyspark's daemon, `BrokenPipeError`) say nothing a user of a successful run needs.
    `engine_failure` names the file when the job fails.
    """
    global jvm_log
    import sys
    import tempfile

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = (SparkConf().setAppName("latencymap").setMaster(master or "local[2]")
            .set("spark.ui.showConsoleProgress", "false"))
    if SparkContext._active_spark_context is None and SparkContext._gateway is None:
        fd, jvm_log = tempfile.mkstemp(prefix="latencymap-spark-", suffix=".log")
        os.close(fd)
        log_python_side(jvm_log)
        with open(jvm_log, "ab") as log:  # appending, as the Python side's lines are: neither overwrites the other
            SparkContext(conf=conf, gateway=launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log}))
    return SparkSession.builder.config(conf=conf).getOrCreate()


def log_python_side(path: str) -> logging.Handler:
    """Send this process's log records (py4j's, pyspark's) to the engine's log at `path`, not to stderr.

    When the JVM dies, py4j logs the broken connection with `logging.exception`, which with no handler installs
    one on stderr: a Python traceback under latencymap's own one-line message. Returns the handler installed."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    return handler


def _drop_jvm_log() -> None:
    """Remove the JVM's log after a successful job (the JVM may still write to it: that goes nowhere)."""
    if jvm_log is not None:
        with contextlib.suppress(OSError):
            os.unlink(jvm_log)


def engine_report(logs: Sequence[EventLog], metric: str = "duration", stages: frozenset[int] | None = None,
                  per_stage: bool = False, width_ms: int | None = None, master: str | None = None,
                  straggler_options: dict[str, Any] | None = None) -> EngineResult:
    """Intervals, {"stragglers", "warmup", "stages"} and app of the logs, computed by Spark; the same numbers and
    skipped lines as the local path.

    SourceError when Spark fails: its JVM died (how: exit code or signal) or the job failed (what the Python
    worker raised, or Spark's reason), or a file cannot be decoded (as the local reader says it).
    """
    try:
        result = _engine_job(spark_session(master), logs, metric, stages, per_stage, width_ms, straggler_options)
    except SourceError:
        _drop_jvm_log()
        raise
    except Exception as err:
        raise engine_failure(err) from err
    _drop_jvm_log()
    return result


def engine_failure(err: Exception) -> SourceError:
    """What went wrong with the Spark engine, for the user: the JVM's end when it died, else the job's error."""
    from py4j.protocol import Py4JNetworkError
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    code = proc.poll() if proc is not None else None
    if code is None and proc is not None and isinstance(err, (ConnectionError, Py4JNetworkError)):
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = proc.wait(timeout=5)  # the connection broke first; the JVM is on its way out
    log = f" (Spark's log: {jvm_log})" if jvm_log is not None and os.path.exists(jvm_log) else ""
    if code is not None and proc is not None:
        return SourceError(f"spark: the Spark engine's JVM (pid {proc.pid}) {process_end(code)} during the job; "
                           f"no columns were made (--engine spark gives them all when its job ends){log}")
    reason = failure_cause(str(err)) if str(err).strip() else type(err).__name__
    return SourceError(f"spark: the Spark job failed: {reason}{log}")


def _engine_job(spark: Any, logs: Sequence[EventLog], metric: str, stages: frozenset[int] | None, per_stage: bool,
                width_ms: int | None, straggler_options: dict[str, Any] | None) -> EngineResult:
    """The Spark job behind `engine_report`."""
    from pyspark.sql import functions as F

    ship_by_value()
    paths = [p for log in logs for p in log.files()]
    names = {str(p.resolve()): str(p) for p in paths}
    lines = spark.sparkContext.binaryFiles(",".join(names)).flatMap(lambda item: _log_lines(item, names))
    events = spark.read.schema(SCHEMA_DDL).json(lines).cache()
    read = _files_read(events, [str(p) for p in paths])
    app = read.app
    executors: dict[str, ExecutorInfo] = {}
    for row in events.where("Event IN ('SparkListenerExecutorAdded', 'SparkListenerExecutorRemoved')").collect():
        take_executor_event(executors, row.asDict(recursive=True))
    task_events = events.where("Event = 'SparkListenerTaskEnd'").drop("App Name", "App ID", "latencymap")
    every_task = task_events.rdd.map(_task_of_row)
    cold = set(every_task.keyBy(lambda t: t.executor).groupByKey()
               .flatMap(lambda kv: _executor_cold(kv[1], executors)).collect())
    with_tasks = {int(r[0]) for r in task_events.select("`Stage ID`").distinct().collect() if r[0] is not None}
    running, now = _running(read, every_task, task_events, stages)
    if stages is not None:
        task_events = task_events.where(F.col("`Stage ID`").isin(sorted(stages)))
    tasks = task_events.select(F.col("`Stage ID`").alias("stage"), F.col("`Task Info`").alias("ti"),
                               F.col("`Task Metrics`").alias("tm"))
    finish = F.col("ti.`Finish Time`")
    implausible = tasks.where(~((finish >= 0) & (finish < MAX_FINISH_MS))).count()
    slot = F.udf(slot_of_value, "int", useArrow=False)
    values = (tasks.select("stage", F.col("ti.`Finish Time`").alias("finish"), F.expr(METRIC_SQL[metric]).alias("v"))
              .where(f"v < {MAX_VALUE_MS} AND finish >= 0 AND finish < {MAX_FINISH_MS}").withColumn("slot", slot("v"))
              .where("slot IS NOT NULL").cache())
    if width_ms is None:
        lo, hi = values.agg(F.min("finish"), F.max("finish")).first()
        width_ms = auto_interval_ms(int(lo), int(hi)) if lo is not None else 1000
    key = F.col("stage") if per_stage else F.lit(None).cast("bigint")
    cells = (values.withColumn("key", key).withColumn("col", F.expr(f"finish div {width_ms}"))
             .groupBy("key", "col", "slot").agg(F.count("*").alias("n"), F.sum("v").alias("s"), F.min("v").alias("lo"),
                                                    F.max("v").alias("hi")).collect())
    values.unpersist()
    made: Streams = {}
    intervals = _intervals(cells, app.name or app.app_id, metric, width_ms, made)
    all_tasks = task_events.rdd.map(_task_of_row)
    placed = all_tasks.filter(plausible).map(lambda t: metricless_reason(t, metric)).countByValue()
    metricless = metrics_note(metric, placed, sum(placed.values()))
    used = all_tasks.map(lambda t: ((t.stage, t.stage_attempt), t.executor)).distinct().collect()
    cores = stage_cores([_placeholder(key, executor) for key, executor in used], executors, running)
    by_stage = all_tasks.keyBy(lambda t: (t.stage, t.stage_attempt)).groupByKey()
    opts = dict(straggler_options or {})
    include_warmup = bool(opts.pop("include_warmup", False))
    found = by_stage.flatMap(lambda kv: _group_stragglers(kv[1], cold, cores, running, opts)).collect()
    if running and now is not None:
        groups = {(r.stage, r.stage_attempt) for r in running}
        found += running_stragglers(all_tasks.filter(lambda t: (t.stage, t.stage_attempt) in groups).collect(),
                                    running, now, cold, cores, **opts)
    found.sort(key=lambda s: (s["warmup"], -(s["ratio"] if s["ratio"] is not None else math.inf)))
    ends, stage_names = read.ends, read.names
    slow = {s["task_id"] for s in found if not s["warmup"] and not s["running"]}
    live: dict[tuple[int, int], list[RunningTask]] = defaultdict(list)
    for r in running:
        live[(r.stage, r.stage_attempt)].append(r)
    summaries = sorted(
        by_stage.map(lambda kv: _group_summary(kv[0], kv[1], cores, ends, cold, slow, stage_names,
                                               live.get(kv[0]), now, executors)).collect(),
        key=lambda s: (s["stage"], s["attempt"]))
    explain_stragglers(found, summaries)
    events.unpersist()
    analysis = {"stragglers": [s for s in found if include_warmup or not s["warmup"]],
                "warmup": [s for s in found if s["warmup"]], "stages": summaries}
    return EngineResult(intervals, analysis, app, with_tasks, read.bad, read.told, implausible, made, read.jobs, now,
                        metricless)


@dataclass
class _Read:
    """What the READ_EVENT lines of a log's files say, in file order."""

    bad: int = 0
    told: list[str] = field(default_factory=list)
    ends: dict[tuple[int, int], StageEnd] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    #: TaskStart lines of tasks with no end in their file (their end may be in a later file).
    started: list[str] = field(default_factory=list)
    app: AppInfo = field(default_factory=AppInfo)
    #: Each job's [submission, completion] (epoch ms), by job id.
    jobs: dict[int, list[int | None]] = field(default_factory=dict)


def _files_read(events: Any, order: list[str]) -> _Read:
    """The READ_EVENT lines of `events` merged in file `order`, as one local reader would have read the files;
    SourceError for a file that cannot be decoded, worded as the local reader's."""
    said = [json.loads(row[0]) for row in events.where(f"Event = '{READ_EVENT}'").select("latencymap").collect()]
    said.sort(key=lambda s: order.index(s["file"]) if s["file"] in order else len(order))
    parser, out = EventParser(), _Read()
    for s in said:
        if s["error"]:
            raise SourceError(f"spark: cannot read the Spark event log: {s['file']}: {s['error']}")
        out.bad += s["bad"]
        app_id, name, start_ms, end_ms = s["app"]
        app = out.app
        app.app_id, app.name = app_id or app.app_id, name or app.name
        app.start_ms = start_ms if start_ms is not None else app.start_ms
        app.end_ms = end_ms if end_ms is not None else app.end_ms
        parser.problems += [tuple(p) for p in s["problems"]]
        for stage, attempt, tasks, failure in s["ends"]:
            out.ends[(stage, attempt)] = StageEnd(stage, attempt, tasks, failure)
        out.names.update({stage: name for stage, name in s["names"]})
        for job, start, end in s.get("jobs", ()):
            said_job = out.jobs.setdefault(job, [None, None])
            said_job[:] = [start if start is not None else said_job[0], end if end is not None else said_job[1]]
        out.started += s["started"]
    parser.problems = parser.problems[:TOLD_BAD_LINES]
    out.told = parser.told()
    return out


def _placeholder(key: tuple[int, int], executor: str) -> SparkTask:
    """A stand-in task saying only that `executor` ran a task of stage attempt `key` (for `stage_cores`)."""
    return SparkTask(key[0], key[1], 0, 0, 0, 0, 0, executor, "")


def _intervals(rows: list[Any], app_name: str, metric: str, width_ms: int,
               made: Streams | None = None) -> list[Interval]:
    """Intervals from the (key, column, slot, count, sum) cells Spark aggregated; `made` gets the stream of each
    key."""
    by_key: dict[int | None, Columns] = defaultdict(dict)
    for r in rows:
        columns = by_key[r["key"]]
        if r["col"] not in columns:
            columns[r["col"]] = (np.zeros(NSLOTS, dtype=np.int64), np.zeros(NSLOTS, dtype=np.float64),
                                 np.full((2, NSLOTS), np.nan))
        counts, sums, extremes = columns[r["col"]]
        counts[r["slot"]] += r["n"]
        sums[r["slot"]] += r["s"]
        extremes[0, r["slot"]] = np.fmin(extremes[0, r["slot"]], r["lo"])
        extremes[1, r["slot"]] = np.fmax(extremes[1, r["slot"]], r["hi"])
    out, names = [], StreamNames()
    made = {} if made is None else made
    for key in sorted(by_key, key=lambda k: -1 if k is None else k):
        made[key] = stream_for(names, app_name, metric, key)
        out.append(intervals_from_cells(made[key], by_key[key], width_ms))
    return merge_in_time(out)
