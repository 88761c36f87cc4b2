"""`--engine spark`: the same histograms and straggler lists computed by PySpark as a distributed job."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import subprocess
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from latencymap.core.buckets import NSLOTS
from latencymap.core.model import Interval
from latencymap.core.sanitize import clean_text
from latencymap.plugins import SourceError, process_end

from .binning import (
    MAX_FINISH_MS,
    MAX_VALUE_MS,
    Columns,
    auto_interval_ms,
    intervals_from_cells,
    merge_in_time,
    stream_for,
)
from .codecs import codec_of, decompress
from .eventlog import EventLog
from .parse import AppInfo, ExecutorInfo, SparkTask, executor_from_event, task_from_event
from .summary import cold_tasks, find_task_stragglers, stage_cores, stage_summary

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
    "`Shuffle Read Metrics`: STRUCT<`Fetch Wait Time`: BIGINT>, "
    "`Shuffle Write Metrics`: STRUCT<`Shuffle Write Time`: BIGINT>>"
)


def slot_of_value(value: float | None) -> int | None:
    """The log2 slot `bin_values` gives one value (None: dropped, like negative or non-finite values)."""
    if value is None or not math.isfinite(value) or value < 0:
        return None
    if value < 1.0:
        return 0
    return min(math.frexp(value)[1], NSLOTS - 1)


def _log_lines(item: tuple[str, bytes]) -> list[str]:
    """The TaskEnd and ApplicationStart lines of one event-log file (runs on the executors)."""
    path, data = item
    text = decompress(bytes(data), codec_of(path.split("/")[-1]))
    keep = (b'"SparkListenerTaskEnd"', b'"SparkListenerApplicationStart"', b'"SparkListenerExecutorAdded"')
    return [line.decode("utf-8") for line in text.split(b"\n") if any(k in line for k in keep)]


def _task_of_row(row: Any) -> SparkTask:
    return task_from_event(row.asDict(recursive=True))


def _group_stragglers(members: Any, cold: set[int], cores: dict[tuple[int, int], int],
                      options: dict[str, Any]) -> list[dict[str, Any]]:
    return find_task_stragglers(list(members), cold, cores, include_warmup=True, **options)


def _group_summary(key: tuple[int, int], members: Any, cores: dict[tuple[int, int], int]) -> dict[str, Any]:
    return stage_summary(key[0], key[1], list(members), cores.get(key))


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
                  straggler_options: dict[str, Any] | None = None) -> tuple[list[Interval], dict[str, Any], AppInfo]:
    """(Intervals, {"stragglers", "stages"}, app) of the logs, computed by Spark; same numbers as the local path.

    SourceError when Spark fails: its JVM died (how: exit code or signal) or the job failed (Spark's reason).
    """
    try:
        result = _engine_job(spark_session(master), logs, metric, stages, per_stage, width_ms, straggler_options)
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
    lines = str(err).strip().splitlines()
    reason = clean_text(lines[0], 300) if lines else type(err).__name__
    return SourceError(f"spark: the Spark job failed: {reason}{log}")


def _engine_job(spark: Any, logs: Sequence[EventLog], metric: str, stages: frozenset[int] | None, per_stage: bool,
                width_ms: int | None,
                straggler_options: dict[str, Any] | None) -> tuple[list[Interval], dict[str, Any], AppInfo]:
    """The Spark job behind `engine_report`."""
    from pyspark.sql import functions as F

    ship_by_value()
    files = ",".join(str(p.resolve()) for log in logs for p in log.files())
    lines = spark.sparkContext.binaryFiles(files).flatMap(_log_lines)
    events = spark.read.schema(SCHEMA_DDL).json(lines)
    app = AppInfo()
    for row in events.where("Event = 'SparkListenerApplicationStart'").limit(1).collect():
        app.app_id, app.name = row["App ID"] or "", row["App Name"] or ""
    executors = {}
    for row in events.where("Event = 'SparkListenerExecutorAdded'").collect():
        info = executor_from_event(row.asDict(recursive=True))
        executors[info.executor] = info
    task_events = events.where("Event = 'SparkListenerTaskEnd'").drop("App Name", "App ID")
    every_task = task_events.rdd.map(_task_of_row)
    cold = set(every_task.keyBy(lambda t: t.executor).groupByKey()
               .flatMap(lambda kv: _executor_cold(kv[1], executors)).collect())
    if stages is not None:
        task_events = task_events.where(F.col("`Stage ID`").isin(sorted(stages)))
    tasks = task_events.select(F.col("`Stage ID`").alias("stage"), F.col("`Task Info`").alias("ti"),
                               F.col("`Task Metrics`").alias("tm"))
    slot = F.udf(slot_of_value, "int", useArrow=False)
    values = (tasks.select("stage", F.col("ti.`Finish Time`").alias("finish"), F.expr(METRIC_SQL[metric]).alias("v"))
              .where(f"v < {MAX_VALUE_MS} AND finish >= 0 AND finish < {MAX_FINISH_MS}").withColumn("slot", slot("v"))
              .where("slot IS NOT NULL").cache())
    if width_ms is None:
        lo, hi = values.agg(F.min("finish"), F.max("finish")).first()
        width_ms = auto_interval_ms(int(lo), int(hi)) if lo is not None else 1000
    key = F.col("stage") if per_stage else F.lit(None).cast("bigint")
    cells = (values.withColumn("key", key).withColumn("col", F.expr(f"finish div {width_ms}"))
             .groupBy("key", "col", "slot").agg(F.count("*").alias("n"), F.sum("v").alias("s")).collect())
    values.unpersist()
    intervals = _intervals(cells, app.name or app.app_id, metric, width_ms)
    all_tasks = task_events.rdd.map(_task_of_row)
    used = all_tasks.map(lambda t: ((t.stage, t.stage_attempt), t.executor)).distinct().collect()
    cores = stage_cores([_placeholder(key, executor) for key, executor in used], executors)
    by_stage = all_tasks.keyBy(lambda t: (t.stage, t.stage_attempt)).groupByKey()
    opts = dict(straggler_options or {})
    include_warmup = bool(opts.pop("include_warmup", False))
    found = by_stage.flatMap(lambda kv: _group_stragglers(kv[1], cold, cores, opts)).collect()
    found.sort(key=lambda s: (s["warmup"], -(s["ratio"] if s["ratio"] is not None else math.inf)))
    summaries = sorted(by_stage.map(lambda kv: _group_summary(kv[0], kv[1], cores)).collect(),
                       key=lambda s: (s["stage"], s["attempt"]))
    return intervals, {"stragglers": [s for s in found if include_warmup or not s["warmup"]],
                       "warmup": [s for s in found if s["warmup"]], "stages": summaries}, app


def _placeholder(key: tuple[int, int], executor: str) -> SparkTask:
    """A stand-in task saying only that `executor` ran a task of stage attempt `key` (for `stage_cores`)."""
    return SparkTask(key[0], key[1], 0, 0, 0, 0, 0, executor, "")


def _intervals(rows: list[Any], app_name: str, metric: str, width_ms: int) -> list[Interval]:
    """Intervals from the (key, column, slot, count, sum) cells Spark aggregated."""
    by_key: dict[int | None, Columns] = defaultdict(dict)
    for r in rows:
        columns = by_key[r["key"]]
        if r["col"] not in columns:
            columns[r["col"]] = (np.zeros(NSLOTS, dtype=np.int64), np.zeros(NSLOTS, dtype=np.float64))
        counts, sums = columns[r["col"]]
        counts[r["slot"]] += r["n"]
        sums[r["slot"]] += r["s"]
    out = []
    for key in sorted(by_key, key=lambda k: -1 if k is None else k):
        out.append(intervals_from_cells(stream_for(app_name, metric, key), by_key[key], width_ms))
    return merge_in_time(out)
