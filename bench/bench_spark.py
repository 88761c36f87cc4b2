"""Spark event-log ingest against baselines measured in the same run (issue 12 item 4, issue 23 item 5).

Run: .venv/bin/python bench/bench_spark.py [--tasks 200000] [--repeat 3] [--log PATH] [--keep]

Writes a large, deterministic event log (default 200,000 SparkListenerTaskEnd lines, each with its
TaskStart, plus stage, job, executor and application events) made from the real Spark 4.3 lines of
fixtures/spark/plain: every line is a real line with its ids, times and metrics changed, written in
Spark's compact JSON. Then reads that same file three ways (and ours without binning too):

- raw line reading: `for line in file` over the binary file, nothing else;
- orjson full parse: `orjson.loads` of every line;
- ours: `latencymap spark LOG`'s batch path (blocks, EventParser, binning into Intervals): on a log this big
  a worker process reads the second half of the file while this one reads the first (past 128 MiB);
- ours in one process (no worker), and ours without binning.

Readers take turns, round after round; prints lines/s (best wall time) for each, CPU seconds (the worker's
included: this process's and its waited-for children's), and the ratios (targets: ours >= 3x orjson, ours >= 40%
of raw reading) by wall time and by CPU time.
Needs msgspec and orjson (the `spark` extra). No assertions; no network.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import re
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_common import machine

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "spark" / "plain" / "local-1795225623494"
APP_ID = "app-20261121000000-0042"
EXECUTORS = 64
HOSTS = 16
TASKS_PER_STAGE = 200
STAGES_PER_JOB = 4
HOLE = re.compile(r'"@@(\d+)@@"')

KeyPath = tuple[str | int, ...]


class Template:
    """A real event line with some values left as holes, filled by position."""

    def __init__(self, event: dict[str, Any], holes: list[KeyPath]) -> None:
        event = json.loads(json.dumps(event))
        for k, path in enumerate(holes):
            node = event
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = f"@@{k}@@"
        text = json.dumps(event, separators=(",", ":"), ensure_ascii=False)  # Spark's (Jackson's) compact form
        parts = HOLE.split(text)
        self.pieces = parts[0::2]
        self.order = [int(k) for k in parts[1::2]]
        assert sorted(self.order) == list(range(len(holes))), "a hole is missing from the template"

    def fill(self, *values: Any) -> str:
        """The line with `values` (in hole order) written in place."""
        out = [self.pieces[0]]
        for piece, k in zip(self.pieces[1:], self.order, strict=True):
            v = values[k]
            out.append(json.dumps(v) if isinstance(v, str) else str(v))
            out.append(piece)
        return "".join(out)


def fixture_events() -> dict[str, list[dict[str, Any]]]:
    """The fixture's events by type, in file order."""
    by_type: dict[str, list[dict[str, Any]]] = {}
    with FIXTURE.open("rb") as fh:
        for line in fh:
            event = json.loads(line)
            by_type.setdefault(event["Event"], []).append(event)
    return by_type


def _accumulable(event: dict[str, Any], name: str) -> int:
    """Index of the named accumulable in a TaskEnd's Task Info."""
    for k, acc in enumerate(event["Task Info"]["Accumulables"]):
        if acc.get("Name") == name:
            return k
    raise KeyError(name)


def _task_end_template(events: dict[str, list[dict[str, Any]]]) -> Template:
    """A ShuffleMapTask TaskEnd with shuffle write metrics: Spark's common, large kind of TaskEnd line."""
    end = next(e for e in events["SparkListenerTaskEnd"] if e.get("Task Type") == "ShuffleMapTask")
    run = _accumulable(end, "internal.metrics.executorRunTime")
    cpu = _accumulable(end, "internal.metrics.executorCpuTime")
    info, metrics = ("Task Info",), ("Task Metrics",)
    return Template(end, [
        ("Stage ID",), (*info, "Task ID"), (*info, "Index"), (*info, "Partition ID"), (*info, "Launch Time"),
        (*info, "Finish Time"), (*info, "Executor ID"), (*info, "Host"), (*metrics, "Executor Run Time"),
        (*metrics, "Executor CPU Time"), (*metrics, "JVM GC Time"), (*metrics, "Executor Deserialize Time"),
        (*metrics, "Shuffle Read Metrics", "Fetch Wait Time"),
        (*metrics, "Shuffle Write Metrics", "Shuffle Write Time"),
        (*info, "Accumulables", run, "Update"), (*info, "Accumulables", run, "Value"),
        (*info, "Accumulables", cpu, "Update"), (*info, "Accumulables", cpu, "Value"),
    ])


def event_lines(tasks: int, seed: int = 12) -> Iterator[str]:
    """A whole application's log: header events, jobs of stages of tasks (TaskStart, TaskEnd), end."""
    events = fixture_events()
    rng = random.Random(seed)
    start = Template(events["SparkListenerTaskStart"][0], [
        ("Stage ID",), ("Task Info", "Task ID"), ("Task Info", "Index"), ("Task Info", "Partition ID"),
        ("Task Info", "Launch Time"), ("Task Info", "Executor ID"), ("Task Info", "Host")])
    end = _task_end_template(events)
    submitted = Template(events["SparkListenerStageSubmitted"][0], [
        ("Stage Info", "Stage ID"), ("Stage Info", "Number of Tasks"), ("Stage Info", "Submission Time")])
    completed = Template(events["SparkListenerStageCompleted"][0], [
        ("Stage Info", "Stage ID"), ("Stage Info", "Number of Tasks"), ("Stage Info", "Submission Time"),
        ("Stage Info", "Completion Time")])
    job_start = Template(events["SparkListenerJobStart"][0], [("Job ID",), ("Submission Time",)])
    job_end = Template(events["SparkListenerJobEnd"][0], [("Job ID",), ("Completion Time",)])
    executor = Template(events["SparkListenerExecutorAdded"][0], [
        ("Timestamp",), ("Executor ID",), ("Executor Info", "Host")])
    app_start = dict(events["SparkListenerApplicationStart"][0], **{"App ID": APP_ID, "App Name": "bench-etl"})

    def dump(event: dict[str, Any]) -> str:
        return json.dumps(event, separators=(",", ":"), ensure_ascii=False)

    now = 1_795_000_000_000
    for name in ("SparkListenerLogStart", "SparkListenerResourceProfileAdded", "SparkListenerBlockManagerAdded",
                 "SparkListenerEnvironmentUpdate"):
        yield from (dump(e) for e in events[name])
    yield dump(app_start)
    hosts = [f"10.0.{h // 250}.{h % 250 + 1}" for h in range(HOSTS)]
    for e in range(EXECUTORS):
        yield executor.fill(now + e, str(e + 1), hosts[e % HOSTS])
    task_id, stage, job = 0, 0, 0
    while task_id < tasks:
        yield job_start.fill(job, now)
        for _ in range(STAGES_PER_JOB):
            if task_id >= tasks:
                break
            n = min(TASKS_PER_STAGE, tasks - task_id)
            median_ms = rng.choice((40, 120, 400, 1500, 6000))
            stage_start = now
            yield submitted.fill(stage, n, stage_start)
            free = [(stage_start, ex) for ex in range(EXECUTORS)]  # (free from, executor): one task at a time
            last = stage_start
            for index in range(n):
                ready, ex = heapq.heappop(free)
                launch = ready + rng.randint(1, 5)
                run = max(1, int(rng.lognormvariate(0, 0.5) * median_ms * (8 if rng.random() < 0.005 else 1)))
                deser = rng.randint(1, 30)
                finish = launch + deser + run + rng.randint(0, 10)
                heapq.heappush(free, (finish, ex))
                last = max(last, finish)
                cpu_ns = int(run * rng.uniform(0.3, 0.95) * 1e6)
                host = hosts[ex % HOSTS]
                yield start.fill(stage, task_id, index, index, launch, str(ex + 1), host)
                yield end.fill(stage, task_id, index, index, launch, finish, str(ex + 1), host, run, cpu_ns,
                               rng.randint(0, max(1, run // 20)), deser, rng.randint(0, max(1, run // 10)),
                               rng.randint(100_000, 5_000_000), run, run, cpu_ns, cpu_ns)
                task_id += 1
            now = last + 50
            yield completed.fill(stage, n, stage_start, now)
            stage += 1
        yield job_end.fill(job, now)
        job += 1
    yield dump(dict(events["SparkListenerApplicationEnd"][0], Timestamp=now + 1000))


def write_log(path: Path, tasks: int) -> tuple[int, int]:
    """Write the log; (lines, bytes)."""
    lines = 0
    with path.open("w", encoding="utf-8") as fh:
        for line in event_lines(tasks):
            fh.write(line)
            fh.write("\n")
            lines += 1
    return lines, path.stat().st_size


@dataclass
class Timing:
    """Best wall and CPU seconds of one reader over the rounds, and its last result."""

    wall: float = float("inf")
    cpu: float = float("inf")
    result: Any = None


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have been waited for (the reading worker)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def interleaved(readers: dict[str, Callable[[], Any]], repeat: int) -> dict[str, Timing]:
    """Every reader once per round, `repeat` rounds, so a change in the machine's load hits all of them alike."""
    out = {name: Timing() for name in readers}
    for _ in range(repeat):
        for name, fn in readers.items():
            c0, t0 = cpu_seconds(), time.perf_counter()
            result = fn()
            wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
            got = out[name]
            got.wall, got.cpu, got.result = min(got.wall, wall), min(got.cpu, cpu), result
    return out


def raw_read(path: Path) -> int:
    """Lines of the file, read in binary and nothing else done."""
    n = 0
    with path.open("rb") as fh:
        for _ in fh:
            n += 1
    return n


def orjson_parse(path: Path) -> int:
    """Every line parsed with orjson.loads."""
    import orjson

    loads, n = orjson.loads, 0
    with path.open("rb") as fh:
        for line in fh:
            loads(line)
            n += 1
    return n


def ours(path: Path, worker: bool = True) -> tuple[int, int]:
    """`latencymap spark LOG`'s batch ingest: (TaskEnd tasks read, Intervals made); `worker`: as it runs (a
    worker process reads half of a log this big), else all in this process."""
    from latencymap.core.model import Interval
    from latencymap.sources.spark.ingest import WORKER_ENV
    from latencymap.sources.spark.source import SparkSource

    before = os.environ.pop(WORKER_ENV, None)
    if not worker:
        os.environ[WORKER_ENV] = "0"
    try:
        source = SparkSource(target=str(path))
        intervals = sum(isinstance(item, Interval) for item in source.items())
    finally:
        os.environ.pop(WORKER_ENV, None)
        if before is not None:
            os.environ[WORKER_ENV] = before
    return len(source.tasks), intervals


def ours_parse_only(path: Path) -> int:
    """The same, without binning: blocks and EventParser only (with the worker)."""
    from latencymap.sources.spark.eventlog import find_event_log
    from latencymap.sources.spark.ingest import read_tasks
    from latencymap.sources.spark.parse import EventParser

    return len(read_tasks(find_event_log(path), EventParser()))


def main() -> None:
    """Write the log (unless --log), time the three readers, print the figures and ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=200_000, help="TaskEnd lines in the generated log")
    p.add_argument("--repeat", type=int, default=3, help="runs of each reader; the best is reported")
    p.add_argument("--log", type=Path, default=None, help="use (or, with --keep, write) this log file")
    p.add_argument("--keep", action="store_true", help="keep the generated log (at --log, or printed)")
    args = p.parse_args()
    try:
        import msgspec  # noqa: F401
        import orjson  # noqa: F401
    except ImportError as exc:
        sys.exit(f"bench_spark: {exc.name} is missing; install the spark extra: pip install -e '.[spark]'")
    print(f"machine: {machine()}")
    tmp = None
    if args.log is not None and args.log.exists():
        path = args.log
        print(f"log: {path} (reused; {path.stat().st_size / 1e6:,.0f} MB)")
    else:
        if args.log is None:
            tmp = tempfile.TemporaryDirectory(prefix="latencymap-bench-spark-")
            path = Path(tmp.name) / APP_ID
        else:
            path = args.log
        t0 = time.perf_counter()
        lines, size = write_log(path, args.tasks)
        print(f"log: {lines:,} lines, {size / 1e6:,.0f} MB, {args.tasks:,} TaskEnd lines "
              f"(generated in {time.perf_counter() - t0:.1f} s from {FIXTURE.relative_to(REPO)})")
    try:
        run(path, args.repeat)
    finally:
        if tmp is not None:
            if args.keep:
                kept = Path(tempfile.gettempdir()) / f"latencymap-bench-spark-{APP_ID}"
                os.replace(path, kept)
                print(f"kept the log at {kept} (reuse it with --log {kept})")
            tmp.cleanup()


def run(path: Path, repeat: int) -> None:
    """Time the readers on `path` and print."""
    raw_read(path)  # warm the page cache: every reader then reads from memory
    t = interleaved({"raw": lambda: raw_read(path), "orjson": lambda: orjson_parse(path),
                     "parse": lambda: ours_parse_only(path), "ours": lambda: ours(path),
                     "one": lambda: ours(path, worker=False)}, repeat)
    lines = t["raw"].result
    tasks, intervals = t["ours"].result
    assert t["parse"].result == tasks == t["one"].result[0], (t["parse"].result, tasks, t["one"].result)

    def rate(name: str) -> str:
        return f"{lines / t[name].wall / 1e3:,.0f}k lines/s ({t[name].wall:.2f} s wall, {t[name].cpu:.2f} s CPU)"

    print(f"raw line reading:   {rate('raw')}")
    print(f"orjson full parse:  {rate('orjson')}")
    print(f"ours, parse only:   {rate('parse')}")
    print(f"ours, one process:  {rate('one')}")
    print(f"ours, to Intervals: {rate('ours')}; {tasks:,} tasks, {intervals} intervals "
          f"({tasks / t['ours'].wall / 1e3:,.0f}k TaskEnd/s)")
    for name, what in (("ours", "ours"), ("one", "ours in one process")):
        mine, orjson_, raw_ = t[name], t["orjson"], t["raw"]
        print(f"spark ingest, {what}: {lines / mine.wall / 1e3:,.0f}k lines/s vs orjson "
              f"{lines / orjson_.wall / 1e3:,.0f}k lines/s: ratio {orjson_.wall / mine.wall:.1f}x (CPU: "
              f"{orjson_.cpu / mine.cpu:.1f}x; target >= 3x); {raw_.wall / mine.wall:.0%} of raw line reading at "
              f"{lines / raw_.wall / 1e3:,.0f}k lines/s (CPU: {raw_.cpu / mine.cpu:.0%}; target >= 40%)")


if __name__ == "__main__":
    main()
